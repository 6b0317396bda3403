"""Monte Carlo decisions at a stated error rate: a sequential test of "mean ≤ threshold" and the search
for the threshold crossing of a monotone quantity (claim 1's capacities N* and d_min), and confidence bounds on a
mean (`mean_bounds`) and the crossing they give between integers (`interpolated_crossing`, claim 1's d*).

**What is sampled.** A test's sample is a vector of *independent units*, one value per unit: per-query
values where queries are independent (E3's Beta-law streams), per-memory means where the queries of one
memory share its keys and values (E1: `LinearSamples` averages the N errors of each memory, so a look
at 4 memories has 3 degrees of freedom, however many queries they hold), per-query probabilities in [0, 1]
(E4: P(SNR⁻¹ ≤ 1) given the query's crosstalk), or 0/1 indicators tested as a proportion (exact binomial
tails). The number of units, not of queries, sets the degrees of freedom.

**One look.** A look resolves the side of the threshold when a test rejects "mean = threshold" in that
direction at the per-look level α_look (each direction): Student's t with the sample SE and
units − 1 degrees of freedom (`critical_value`, scipy.stats.t; exact for normal units, approximate
otherwise), trusted only from n ≥ CLT_FACTOR·skewness² units (skewed retrieval errors: a small sample
that misses the tail has a small mean and a small SE); or, for values known to lie in [low, high], the distribution-free
Chernoff–Hoeffding bound (`chernoff_rejects`); or, for 0/1 indicators, the exact binomial tail
(`binomial_side`). Two routes at one look each get α_look/2.

**One point.** The sample starts at `min_queries` units and doubles (extended, never redrawn) until a
look resolves or `max_queries` are used; then the point is UNRESOLVED. There are at most
`looks(min, max)` = ⌈log2(max/min)⌉ + 1 looks, and α_look = α_point / looks (Bonferroni over the looks,
valid under optional stopping): whatever the true mean, the point is resolved on the wrong side with
probability ≤ α_point (at an exact tie, mean = threshold, BELOW is right and ABOVE wrong; resolving at
all has probability ≤ 2·α_point there).

**One search, one experiment table.** `find_crossing` on [start, limit] evaluates at most
`max_evaluations(start, limit)` points. One family-wise rate, ALPHA_FAMILY = 1%, bounds the probability
that *any* decision behind an experiment's capacity table (E1, E3, E4: every cell, every point, every
look) is wrong: `point_alpha` gives each point α_point = ALPHA_FAMILY / Σ_cells max_evaluations
(Bonferroni, i.e. the union bound). The table is the family because claim 1's verdicts are made per
table (e.g. `every_cell_verdict` over E1's cells: one wrong cell reads "not reproduced"); 1% per table
keeps the chance that Monte Carlo luck spoils any of the three tables ≤ 3%. The price: critical
values of ≈ 4.6 (E1) to 5.2 (E3, two routes) SEs at many units, more at few (E1's 4 memories: t₃ needs
72), instead of the old fixed 3, so points near the crossing use more of their (unchanged) query budget
and some resolve later or stay unresolved. (The old rule erred at an exact tie with 4 → 32 normal units
2.2% of the time, against a stated 0.13% per look; tests/test_precision.py.)

A wrong decision breaks the monotone picture; `find_crossing` reports whether its decisions are
monotone in x (no x resolved ABOVE below an x resolved BELOW), and with a truth that is monotone the
unresolved points form a band around the crossing: the capacity is reported as that band [lo, hi].
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
from scipy import special  # scipy.stats is imported where used: it costs every training job ~0.5 s

ALPHA_FAMILY = 0.01  # probability of any wrong resolved decision in one experiment table (see above)
CLT_FACTOR = 25.0  # a mean is trusted only from n ≥ 25·skewness² units (Boos & Hughes-Oliver 2000)
DECISION_Z = 3.0  # legacy: the old fixed rule (3 sample SEs); no longer used by any decision here
DECISION_RULE = (f"each decision a sequential t (or Chernoff–Hoeffding, or exact binomial) test on independent "
                 f"units, its error rate spent over looks, points and cells: ≤ {ALPHA_FAMILY:.0%} of any wrong "
                 f"decision per experiment table (attncap.precision)")
BELOW, UNRESOLVED, ABOVE = -1, 0, 1


@dataclass(frozen=True)
class Decision:
    """Outcome of a sequential test at one grid point x: side is BELOW (mean ≤ threshold resolved),
    ABOVE (mean > threshold resolved) or UNRESOLVED (query budget spent). At the last look: `units`
    independent units (0: unknown), `critical` the t route's critical value in SEs, `alpha_look` the
    per-direction level of each look, `route` what resolved it ("t", "chernoff", "binomial"; "" if
    unresolved)."""
    x: int
    side: int
    mean: float
    se: float
    queries: int
    units: int = 0
    critical: float = math.nan
    alpha_look: float = math.nan
    route: str = ""


def mean_and_se(values: np.ndarray) -> tuple[float, float]:
    """Sample mean and its standard error (ddof = 1, as scipy.stats.sem)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf


def query_budget(cost_per_query: float, sample_budget: int, min_queries: int, max_queries: int) -> int:
    """Most queries one point may use: sample_budget / cost_per_query, clipped to [min, max]."""
    return int(min(max_queries, max(min_queries, sample_budget // max(1, int(cost_per_query)))))


def looks(min_queries: int, max_queries: int) -> int:
    """Most looks of a sequential test doubling from min_queries up to max_queries: ⌈log2(max/min)⌉ + 1
    (a sample that returns more than asked only skips looks)."""
    min_queries = max(1, int(min_queries))
    return 1 if max_queries <= min_queries else math.ceil(math.log2(max_queries / min_queries) - 1e-12) + 1


@functools.lru_cache(maxsize=4096)
def critical_value(alpha: float, dof: float) -> float:
    """One-sided critical value, in standard errors, of a mean whose SE has `dof` degrees of freedom:
    Student's t (scipy.stats.t.isf), the normal quantile for dof = ∞, ∞ for dof < 1 (no SE)."""
    if dof < 1:
        return math.inf
    from scipy import stats

    return float(stats.norm.isf(alpha) if math.isinf(dof) else stats.t.isf(alpha, dof))


def max_evaluations(start: int, limit: int) -> int:
    """Most points `find_crossing` evaluates on [start, limit]: each of its two `first_failure` calls
    makes ≤ L + 1 doubling (or galloping) steps, one look at `limit` and ≤ L bisection steps, with
    L = ⌈log2(limit − start + 1)⌉; and never more than the limit − start + 1 points there are."""
    span = max(1, limit - start + 1)
    return min(span, 4 * math.ceil(math.log2(span)) + 4)


def point_alpha(searches: Iterable[tuple[int, int]], alpha_family: float = ALPHA_FAMILY) -> float:
    """Per-point error rate that spends `alpha_family` over every point the searches (start, limit) of
    one table may evaluate (Bonferroni): alpha_family / Σ max_evaluations."""
    total = sum(max_evaluations(start, limit) for start, limit in searches)
    return alpha_family / max(1, total)


def chernoff_rejects(values: np.ndarray, low: float, high: float, threshold: float, alpha: float) -> bool:
    """Does the Chernoff–Hoeffding bound for values in [low, high] reject "mean = threshold" at the
    one-sided level alpha? P(mean of n ≤ x̄ | μ) ≤ exp(−n·kl(x̄, μ)) for x̄ < μ (and the mirror image
    above), kl the Bernoulli relative entropy (Hoeffding 1963, Thm 1, via scipy.special.rel_entr).
    Distribution-free, so it stays valid however skewed the values are, and it is tight for rare large
    values: a sample of n near-zero errors rejects μ ≥ ε² once (1 − ε²)^n ≤ alpha."""
    n = len(values)
    if n == 0 or high <= low:
        return False
    return _chernoff_exponent(float(np.mean(values)), n, low, high, threshold) >= -math.log(alpha)


def _chernoff_exponent(mean: float, n: int, low: float, high: float, mu: float) -> float:
    """n·kl(x̄, μ) for n values in [low, high] with sample mean x̄, both rescaled to [0, 1]: minus the log of the
    Chernoff–Hoeffding tail bound on seeing x̄ when the true mean is μ (`chernoff_rejects`, `mean_bounds`)."""
    p = float(np.clip((mean - low) / (high - low), 0.0, 1.0))
    q = float(np.clip((mu - low) / (high - low), 1e-300, 1.0 - 1e-16))
    return n * float(special.rel_entr(p, q) + special.rel_entr(1.0 - p, 1.0 - q))


def mean_bounds(values: np.ndarray, alpha: float, low: float = 0.0, high: float = 1.0) -> tuple[float, float]:
    """Lower and upper confidence bounds on the mean of independent values in [low, high], each one-sided at
    level alpha: Student's t on the sample SE where the CLT is trusted (`clt_holds`), else the
    Chernoff–Hoeffding bound inverted (the means `chernoff_rejects` would not reject), and never outside
    [low, high]. The bounds of an interval rather than the side of one threshold: claim 1's E4 interpolates
    them across its crossing."""
    from scipy import optimize

    values = np.asarray(values, dtype=float)
    n = len(values)
    if n == 0:
        return low, high
    mean, se = mean_and_se(values)
    if n > 1 and se > 0 and clt_holds(values):
        half = critical_value(alpha, n - 1) * se
        return max(low, mean - half), min(high, mean + half)

    def rejects(mu: float) -> float:  # > 0 where the bound rejects a true mean mu
        return _chernoff_exponent(mean, n, low, high, mu) + math.log(alpha)

    lower = low if rejects(low) <= 0 or mean <= low else optimize.brentq(rejects, low, mean)
    upper = high if rejects(high) <= 0 or mean >= high else optimize.brentq(rejects, mean, high)
    return float(lower), float(upper)


@dataclass(frozen=True)
class InterpolatedCrossing:
    """Where a rising mean, interpolated linearly between integers, crosses a threshold (`estimate`), and the
    interval [low, high] its confidence bounds give; NaN where not bracketed. `points`: the integers used,
    `means` their sample means, `units` the fewest units any of them had."""
    estimate: float
    low: float
    high: float
    points: tuple[int, ...]
    means: tuple[float, ...]
    units: int


def interpolated_crossing(values_at: Callable[[int], np.ndarray], start: int, stop: int, threshold: float,
                          alpha: float, within: tuple[int, int], max_points: int) -> InterpolatedCrossing:
    """The crossing of `threshold` by the piecewise-linear interpolation of a rising mean over the integers, with
    an interval: the crossings of its upper and lower confidence bounds (`mean_bounds`, each at `alpha` per side
    and point; so ≤ 2·max_points·alpha in all). If every true mean lies inside its bounds, the true interpolated
    crossing lies in [crossing of the upper bound, crossing of the lower bound]: each is a first crossing, and a
    curve below another first reaches the threshold no earlier, so no monotonicity is needed. `values_at(x)`
    gives independent values of unit x (values in [0, 1]). The points run from `start` to `stop`, widened within
    `within` (at most `max_points` in all) until the upper bound starts below the threshold and the lower bound
    ends at or above it; an end that cannot be bracketed so is NaN, not a guess."""
    xs = list(range(start, stop + 1))
    stats: dict[int, tuple[float, float, float, int]] = {}

    def at(x: int) -> tuple[float, float, float, int]:  # mean, lower bound, upper bound, units
        if x not in stats:
            values = np.asarray(values_at(x), dtype=float)
            stats[x] = (float(values.mean()), *mean_bounds(values, alpha), len(values))
        return stats[x]

    while len(xs) < max_points and xs[0] > within[0] and at(xs[0])[2] >= threshold:
        xs.insert(0, xs[0] - 1)
    while len(xs) < max_points and xs[-1] < within[1] and at(xs[-1])[1] < threshold:
        xs.append(xs[-1] + 1)
    columns = np.array([at(x)[:3] for x in xs])

    def first_crossing(ys: np.ndarray) -> float:
        if ys[0] >= threshold:
            return math.nan  # at or before the first point: not bracketed
        for j in range(1, len(xs)):
            if ys[j] >= threshold:
                return xs[j - 1] + (threshold - ys[j - 1]) / (ys[j] - ys[j - 1])
        return math.nan

    return InterpolatedCrossing(first_crossing(columns[:, 0]), first_crossing(columns[:, 2]),
                                first_crossing(columns[:, 1]), tuple(xs), tuple(columns[:, 0].tolist()),
                                min(at(x)[3] for x in xs))


def binomial_side(values: np.ndarray, threshold: float, alpha: float) -> int:
    """Exact one-sided binomial tests of "P(1) = threshold" for independent 0/1 values at level alpha
    each way (binomial tails by scipy.special.bdtr/bdtrc): BELOW if P(X ≤ k) ≤ alpha, ABOVE if
    P(X ≥ k) ≤ alpha, else UNRESOLVED."""
    n, k = len(values), int(round(float(np.sum(values))))
    if n == 0:
        return UNRESOLVED
    if special.bdtr(k, n, threshold) <= alpha:
        return BELOW
    if k > 0 and special.bdtrc(k - 1, n, threshold) <= alpha:
        return ABOVE
    return UNRESOLVED


def sequential_test(sample: Callable[[int], np.ndarray], threshold: float, min_queries: int, max_queries: int,
                    alpha: float = ALPHA_FAMILY, x: int = 0, bounded: tuple[float, float] | None = None,
                    proportion: bool = False) -> Decision:
    """Is E[value] ≤ threshold, with probability ≤ `alpha` of resolving the wrong side? `sample(q)`
    returns the first ≥ q values, one per independent unit (a nested sample: asking for more extends
    it). Units double from min_queries until a look resolves or max_queries are used; each of the
    ≤ `looks(min_queries, max_queries)` looks tests at α_look = alpha / looks per direction.

    Routes (module docstring): Student's t on the sample SE with units − 1 degrees of freedom, only
    from n ≥ CLT_FACTOR·skewness² (`clt_holds`) and never on a constant sample (it says nothing
    about a tail it has not seen); values known to lie in `bounded` = (low, high) may also be decided by
    the Chernoff–Hoeffding bound (each route then at α_look/2). `proportion`: the values are 0/1
    indicators, decided by the exact binomial tail alone (the reported se is the null SE
    √(p(1 − p)/n), p = threshold)."""
    alpha_look = alpha / looks(min_queries, max_queries)
    queries = max(1, min_queries)
    while True:
        values = np.asarray(sample(queries), dtype=float)
        n = len(values)
        mean, se = mean_and_se(values)
        gap = mean - threshold
        side, route, critical = UNRESOLVED, "", math.nan
        if proportion:
            se = math.sqrt(threshold * (1.0 - threshold) / n) if n else math.inf
            side = binomial_side(values, threshold, alpha_look)
            route = "binomial"
        else:
            level = alpha_look / 2 if bounded is not None else alpha_look
            critical = critical_value(level, n - 1)
            if se > 0 and abs(gap) >= critical * se and clt_holds(values):
                side, route = (BELOW if gap <= 0 else ABOVE), "t"
            elif bounded is not None and chernoff_rejects(values, bounded[0], bounded[1], threshold, level):
                side, route = (BELOW if gap <= 0 else ABOVE), "chernoff"
        if side != UNRESOLVED or n >= max_queries:
            return Decision(x, side, mean, se, n, n, critical, alpha_look, route if side != UNRESOLVED else "")
        queries = min(2 * n, max_queries)


def clt_holds(values: np.ndarray) -> bool:
    """n ≥ CLT_FACTOR·skewness² (the moment skewness m3/m2^1.5, as scipy.stats.skew); a constant
    sample has no skewness and fails."""
    n = len(values)
    if n < 3:
        return False
    centred = values - values.mean()
    m2 = float(np.mean(centred**2))
    if not m2 > 1e-28 * max(1.0, float(np.mean(values**2))):  # constant up to rounding
        return False
    skew = float(np.mean(centred**3)) / m2**1.5
    return n >= CLT_FACTOR * skew**2


def first_failure(ok, start: int, limit: int, gallop: bool = False) -> int | None:
    """Smallest x in [start, limit] with ok(x) false, for a monotone ok (true, then false) taken as true
    at start − 1; None when ok holds on all of [start, limit].

    Doubling from `start` (x = start, 2·start, 4·start, …; with gallop=True the steps from start double
    instead: start, start + 1, start + 3, start + 7, …, for a flip expected near start) finds a bracket,
    bisection closes it; no x is evaluated twice.
    """
    lo, hi = start - 1, start
    while hi <= limit and ok(hi):
        lo, hi = hi, (start + 2 * (hi - start + 1) - 1 if gallop else hi * 2)
    if hi > limit:
        if lo == limit or ok(limit):
            return None
        hi = limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return hi


@dataclass(frozen=True)
class Crossing:
    """Where a monotone three-way test turns from BELOW to ABOVE on [start, limit].

    first_not_below: smallest x that is not resolved BELOW (None: BELOW everywhere, censored);
    first_above: smallest x resolved ABOVE (None: never, the band reaches the limit);
    estimate: the point estimate of the last x whose mean is ≤ threshold (linear interpolation of the
    evaluated means across the threshold inside the band); decisions: every evaluated point;
    monotone: no evaluated x is resolved ABOVE below an evaluated x resolved BELOW (False: some
    decision is wrong, and the band is not to be trusted; `conflict` is then the smallest x resolved
    ABOVE and the largest resolved BELOW)."""
    first_not_below: int | None
    first_above: int | None
    estimate: float
    decisions: dict
    monotone: bool = True

    @property
    def resolved(self) -> bool:
        return self.monotone and self.first_not_below is not None and self.first_above == self.first_not_below

    @property
    def conflict(self) -> tuple[int, int] | None:
        return decision_conflict(self.decisions)


def decision_conflict(decisions: dict) -> tuple[int, int] | None:
    """(smallest x resolved ABOVE, largest x resolved BELOW) when the first is the smaller, i.e. the
    decisions are not monotone in x (UNRESOLVED points are free); None when they are monotone."""
    above = [x for x, d in decisions.items() if d.side == ABOVE]
    below = [x for x, d in decisions.items() if d.side == BELOW]
    if above and below and min(above) < max(below):
        return min(above), max(below)
    return None


def find_crossing(decide: Callable[[int], Decision], threshold: float, start: int, limit: int) -> Crossing:
    """Locate the crossing of a monotone mean through `threshold` on the integers [start, limit],
    `decide(x)` giving a Decision (memoized here: no point is evaluated twice; at most
    `max_evaluations(start, limit)` points). The search trusts monotone decisions; whether the evaluated
    ones are is checked afterwards (`Crossing.monotone`)."""
    decisions: dict[int, Decision] = {}

    def side(x: int) -> int:
        if x not in decisions:
            decisions[x] = decide(x)
        return decisions[x].side

    first_not_below = first_failure(lambda x: side(x) == BELOW, start, limit)
    if first_not_below is None:
        return Crossing(None, None, float(limit), decisions, decision_conflict(decisions) is None)
    first_above = first_failure(lambda x: side(x) != ABOVE, first_not_below, limit, gallop=True)
    # point estimate: interpolate between the largest evaluated mean ≤ threshold and the next one above
    points = sorted((x, d.mean) for x, d in decisions.items())
    below = [(x, m) for x, m in points if m <= threshold]
    x_a, m_a = below[-1] if below else (start - 1, -math.inf)
    above = [(x, m) for x, m in points if x > x_a and m > threshold]
    if above and np.isfinite(m_a):
        x_b, m_b = above[0]
        estimate = x_a + (threshold - m_a) / (m_b - m_a) * (x_b - x_a)
    else:
        estimate = float(x_a)
    return Crossing(first_not_below, first_above, estimate, decisions, decision_conflict(decisions) is None)
