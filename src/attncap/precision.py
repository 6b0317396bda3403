"""Monte Carlo decisions to a stated precision: a sequential test of "mean ≤ threshold" and the
search for the threshold crossing of a monotone quantity (claim 1's capacities N* and d_min).

A decision is *resolved* when the estimate lies at least `DECISION_Z` standard errors from the
threshold. The number of queries adapts: it starts at `min_queries` and doubles (the sample is
extended, never redrawn) until the decision resolves or the query budget for that point is spent;
then the point is *unresolved*. With a monotone truth, the unresolved points form a band around the
crossing, and the capacity is reported as that band [lo, hi] (lo = hi when resolved).

Doubling gives at most log2(max/min) + 1 looks at the data; each look at 3 standard errors errs
with probability ≈ 0.13% in the wrong direction (normal approximation), so a wrong resolved decision
is rare but not impossible; the property tests in tests/test_precision.py check the search on cases
whose answer is known.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import special, stats

DECISION_Z = 3.0  # standard errors between estimate and threshold for a resolved decision
CLT_FACTOR = 25.0  # a mean is trusted only from n ≥ 25·skewness² draws (Boos & Hughes-Oliver 2000)
BELOW, UNRESOLVED, ABOVE = -1, 0, 1


@dataclass(frozen=True)
class Decision:
    """Outcome of a sequential test at one grid point x: side is BELOW (mean ≤ threshold resolved),
    ABOVE (mean > threshold resolved) or UNRESOLVED (query budget spent)."""
    x: int
    side: int
    mean: float
    se: float
    queries: int


def mean_and_se(values: np.ndarray) -> tuple[float, float]:
    """Sample mean and its standard error (scipy.stats.sem, ddof = 1)."""
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(stats.sem(values)) if len(values) > 1 else math.inf


def query_budget(cost_per_query: float, sample_budget: int, min_queries: int, max_queries: int) -> int:
    """Most queries one point may use: sample_budget / cost_per_query, clipped to [min, max]."""
    return int(min(max_queries, max(min_queries, sample_budget // max(1, int(cost_per_query)))))


def chernoff_rejects(values: np.ndarray, low: float, high: float, threshold: float, z: float = DECISION_Z) -> bool:
    """Does the Chernoff–Hoeffding bound for values in [low, high] reject "mean = threshold" at the
    one-sided level of z normal standard errors? P(mean of n ≤ x̄ | μ) ≤ exp(−n·kl(x̄, μ)) for x̄ < μ
    (and the mirror image above), kl the Bernoulli relative entropy (Hoeffding 1963, Thm 1, via
    scipy.special.rel_entr). Distribution-free, so it stays valid however skewed the values are, and it
    is tight for rare large values: a sample of n near-zero errors rejects μ ≥ ε² once (1 − ε²)^n ≤ δ."""
    n = len(values)
    if n == 0 or high <= low:
        return False
    p = float(np.clip((np.mean(values) - low) / (high - low), 0.0, 1.0))
    q = float(np.clip((threshold - low) / (high - low), 1e-300, 1.0 - 1e-16))
    kl = float(special.rel_entr(p, q) + special.rel_entr(1.0 - p, 1.0 - q))
    return n * kl >= -math.log(stats.norm.sf(z))


def sequential_test(sample: Callable[[int], np.ndarray], threshold: float, min_queries: int, max_queries: int,
                    z: float = DECISION_Z, x: int = 0, null_se: Callable[[int], float] | None = None,
                    bounded: tuple[float, float] | None = None) -> Decision:
    """Is E[value] ≤ threshold? `sample(q)` returns the first ≥ q per-query values (a nested sample:
    asking for more extends it). Queries double from min_queries until |mean − threshold| ≥ z·SE or
    max_queries are used. `null_se(q)` replaces the sample SE (e.g. 0.5/√q for a proportion tested
    against 1/2, which stays honest when every draw agrees).

    Retrieval errors are strongly right-skewed (rare near-duplicate keys dominate the mean), and a small
    sample that misses the tail has both a low mean and a low SE; so with the sample SE a decision also
    needs n ≥ CLT_FACTOR·skewness² (scipy.stats.skew), the usual condition for the normal approximation.
    Values known to lie in `bounded` = (low, high) may also be decided by the distribution-free
    Chernoff–Hoeffding bound at the same level (`chernoff_rejects`): it resolves a mean far from the
    threshold even when a rare tail makes the skewness huge. (Two tests at one level: a wrong decision
    is at most twice as likely as one test's, ≤ 2·P(Z > z) per look.)"""
    queries = max(1, min_queries)
    while True:
        values = sample(queries)
        mean, se = mean_and_se(values)
        clt = True
        if null_se is not None:
            se = null_se(len(values))
        elif se > 0:
            with warnings.catch_warnings():  # nearly constant samples: scipy warns (and may return nan)
                warnings.simplefilter("ignore", RuntimeWarning)
                skew = float(stats.skew(values)) if len(values) > 2 else math.inf
            skew = math.inf if math.isnan(skew) else skew
            clt = len(values) >= CLT_FACTOR * skew**2
        gap = mean - threshold
        chernoff = bounded is not None and chernoff_rejects(values, bounded[0], bounded[1], threshold, z)
        # a constant sample (se = 0) says nothing about a tail it has not seen: only the bound decides it
        if (clt and se > 0 and abs(gap) >= z * se) or chernoff:
            return Decision(x, BELOW if gap <= 0 else ABOVE, mean, se, len(values))
        if len(values) >= max_queries:
            return Decision(x, UNRESOLVED, mean, se, len(values))
        queries = min(2 * len(values), max_queries)


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
    evaluated means across the threshold inside the band); decisions: every evaluated point."""
    first_not_below: int | None
    first_above: int | None
    estimate: float
    decisions: dict

    @property
    def resolved(self) -> bool:
        return self.first_not_below is not None and self.first_above == self.first_not_below


def find_crossing(decide: Callable[[int], Decision], threshold: float, start: int, limit: int) -> Crossing:
    """Locate the crossing of a monotone mean through `threshold` on the integers [start, limit],
    `decide(x)` giving a Decision (memoized here: no point is evaluated twice)."""
    decisions: dict[int, Decision] = {}

    def side(x: int) -> int:
        if x not in decisions:
            decisions[x] = decide(x)
        return decisions[x].side

    first_not_below = first_failure(lambda x: side(x) == BELOW, start, limit)
    if first_not_below is None:
        return Crossing(None, None, float(limit), decisions)
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
    return Crossing(first_not_below, first_above, estimate, decisions)
