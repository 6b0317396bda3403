"""Decide a claimed law against its most plausible rival on the same points, at a stated error rate.

Three decisions, each returning numbers a check can put in `measured` and a `preferred` outcome:

* `compare_laws`: two least-squares laws for the same response (e.g. log N* against d, exponential
  growth, vs log N* against log d, polynomial growth). Decided by the small-sample Akaike weight: the
  claimed law wins when its weight is ≥ `LAW_WEIGHT` (it is ≥ 19× more plausible than the rival, given
  Gaussian residuals), the rival when its weight is, otherwise the comparison is not resolved.
* `exponent_interval`: a fitted power (log-log slope) with its Student-t interval; the claimed exponent
  must lie inside it and the rival's outside.
* `compare_groups`: two noisy measurements (e.g. seeds of two arms); their difference is resolved only
  when its Student-t interval (Welch, or paired over seeds) excludes 0.

"Not resolved" is a result: the check says so (`INCONCLUSIVE` with the numbers, `not_resolved_reason`),
never a pass.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from attncap.claims import INCONCLUSIVE, NOT_REPRODUCED, PARTIALLY, REPRODUCED

CLAIMED, RIVAL, NOT_RESOLVED = "claimed", "rival", "not resolved"
LAW_WEIGHT = 0.95
"""Akaike weight at which one of two laws is decided (posterior odds 19:1 under equal priors)."""
LEVEL = 0.95
"""Confidence level of exponent intervals and of group differences (two-sided; each side errs ≤ 2.5%)."""


def family_level(count: int, level: float = LEVEL) -> float:
    """Two-sided confidence level of each of `count` intervals read together (Bonferroni): a wrong side
    anywhere among them has probability ≤ 1 − `level`, e.g. a false "rival" in some cell of a check that
    decides "rival" when any cell is."""
    return 1.0 - (1.0 - level) / max(1, int(count))


@dataclasses.dataclass(frozen=True)
class LawComparison:
    """Two laws fitted to the same points: residual sums of squares, parameters, small-sample AIC, the
    claimed law's Akaike weight and the decision."""
    claimed: str
    rival: str
    n: int
    rss_claimed: float
    rss_rival: float
    params_claimed: tuple[float, ...]
    params_rival: tuple[float, ...]
    aicc_claimed: float
    aicc_rival: float
    weight_claimed: float
    preferred: str

    def measured(self) -> dict:
        return {"points": self.n, "rss_claimed": self.rss_claimed, "rss_rival": self.rss_rival,
                "akaike_weight_claimed": self.weight_claimed, "preferred": self.preferred}

    def describe(self) -> str:
        return (f"{self.claimed} vs {self.rival} on {self.n} points: RSS {self.rss_claimed:.3g} vs "
                f"{self.rss_rival:.3g}, Akaike weight of the claimed law {self.weight_claimed:.3f}")


def _design(features) -> np.ndarray:
    matrix = np.asarray(features, dtype=float)
    return matrix[:, None] if matrix.ndim == 1 else matrix


def _aicc(rss: float, n: int, k: int) -> float:
    """Small-sample AIC of a Gaussian least-squares fit with k coefficients (+1 for the variance)."""
    params = k + 1
    rss = max(rss, 1e-300 * n)  # an exact fit: finite, and the law with fewer parameters still wins ties
    correction = 2 * params * (params + 1) / (n - params - 1) if n - params - 1 > 0 else math.inf
    return n * math.log(rss / n) + 2 * params + correction


def compare_laws(y, claimed_features, rival_features, *, claimed: str, rival: str,
                 weight: float = LAW_WEIGHT, offsets=(None, None)) -> LawComparison:
    """Fit y ≈ X·β by least squares for each law's design matrix X (columns: the law's regressors, an
    intercept column included by the caller where the law has one), on the points where every value is
    finite, and decide by the Akaike weight of the claimed law (AICc: fair to laws with different numbers
    of coefficients, and to few points). Fewer points than either law needs → NOT_RESOLVED.

    `offsets` (claimed, rival) are terms a law fixes without a coefficient (e.g. a Θ(·) law's exponent): that
    law fits y − offset, so its parameters are the remaining coefficients alone."""
    y = np.asarray(y, dtype=float)
    a, b = _design(claimed_features), _design(rival_features)
    shifts = [np.zeros_like(y) if o is None else np.asarray(o, dtype=float) for o in offsets]
    keep = np.isfinite(y) & np.isfinite(a).all(1) & np.isfinite(b).all(1) & np.isfinite(shifts).all(0)
    y, a, b, shifts = y[keep], a[keep], b[keep], [o[keep] for o in shifts]
    n = len(y)
    fits = []
    for matrix, shift in zip((a, b), shifts):
        if n < matrix.shape[1] + 3:  # AICc needs n > k + 2
            fits.append((math.nan, (), math.inf))
            continue
        beta, *_ = np.linalg.lstsq(matrix, y - shift, rcond=None)
        rss = float(np.sum((y - shift - matrix @ beta) ** 2))
        fits.append((rss, tuple(float(v) for v in beta), _aicc(rss, n, matrix.shape[1])))
    (rss_a, beta_a, aic_a), (rss_b, beta_b, aic_b) = fits
    if math.isinf(aic_a) or math.isinf(aic_b):
        return LawComparison(claimed, rival, n, rss_a, rss_b, beta_a, beta_b, aic_a, aic_b, math.nan, NOT_RESOLVED)
    delta = aic_b - aic_a  # > 0 favours the claimed law
    # Akaike weight of the claimed law: exp(−AIC/2) normalised over the two laws
    w = 1.0 / (1.0 + math.exp(-delta / 2)) if delta > -1400 else 0.0
    return LawComparison(claimed, rival, n, rss_a, rss_b, beta_a, beta_b, aic_a, aic_b, w,
                         preferred_by_weight(w, weight=weight))


def against_threshold(claimed: "Difference", family: "Difference", threshold: float, *, above: bool = True) -> str:
    """A difference against `threshold` in a check that any one rival item decides: CLAIMED when its 95% interval
    (`claimed`) lies wholly on the claimed side (above it, or below it with `above=False`); RIVAL when its
    family-wise interval (`family`: `compare_groups` at `family_level` over every item the check reads) lies
    wholly on the other side, so a false rival anywhere is ≤ 2.5% per check; else NOT_RESOLVED."""
    if above:
        return RIVAL if family.high < threshold else CLAIMED if claimed.low > threshold else NOT_RESOLVED
    return RIVAL if family.low > threshold else CLAIMED if claimed.high < threshold else NOT_RESOLVED


def preferred_by_weight(low: float, high: float | None = None, *, weight: float = LAW_WEIGHT) -> str:
    """The decision on the claimed law's Akaike weight, known exactly (`low` alone) or only to a range [low, high]
    (`weight_range`): CLAIMED when all of it is ≥ weight, RIVAL when all of it is ≤ 1 − weight, else NOT_RESOLVED
    (a NaN weight decides nothing)."""
    high = low if high is None else high
    return CLAIMED if low >= weight else RIVAL if 1.0 - high >= weight else NOT_RESOLVED


def weight_range(y_low, y_high, claimed_features, rival_features, offsets=(None, None)) -> tuple[float, float]:
    """The least and greatest Akaike weight of the claimed law (`compare_laws`) over every y with y_low ≤ y ≤ y_high
    point by point: the comparison resolved at the measurements' own precision (each y known only to an interval,
    e.g. a search bracket) decides only if the whole range lies on one side. The AICc difference is minimised and
    maximised by bounded quasi-Newton from the midpoint, both ends and the two tilts between them (a local optimum
    that misses the global one can only narrow the range, so a decision could then still be too bold by the
    optimiser's slack; the tests check it against a grid over small boxes). `offsets` as in `compare_laws`."""
    from scipy.optimize import minimize

    low, high = np.asarray(y_low, dtype=float), np.asarray(y_high, dtype=float)
    a, b = _design(claimed_features), _design(rival_features)
    shifts = [np.zeros_like(low) if o is None else np.asarray(o, dtype=float) for o in offsets]
    n = len(low)
    if n < max(a.shape[1], b.shape[1]) + 3:
        return math.nan, math.nan

    def delta(y):  # AICc(rival) − AICc(claimed): > 0 favours the claimed law
        rss = [float(np.sum((y - o - m @ np.linalg.lstsq(m, y - o, rcond=None)[0]) ** 2))
               for m, o in zip((a, b), shifts)]
        return _aicc(max(rss[1], 1e-300), n, b.shape[1]) - _aicc(max(rss[0], 1e-300), n, a.shape[1])

    first = np.arange(n) < n // 2  # y in the order of the points (e.g. by N)
    starts = [(low + high) / 2, low, high, np.where(first, low, high), np.where(first, high, low)]
    bounds = list(zip(low, high))
    ends = []
    for sign in (1.0, -1.0):
        best = min((minimize(lambda y: sign * delta(y), x0, method="L-BFGS-B", bounds=bounds) for x0 in starts),
                   key=lambda r: r.fun)
        ends.append(sign * float(best.fun))
    return tuple(1.0 / (1.0 + math.exp(-max(min(d, 1400.0), -1400.0) / 2)) for d in ends)


def with_intercept(*columns) -> np.ndarray:
    """Design matrix [1, c1, c2, …] for `compare_laws`."""
    columns = [np.asarray(c, dtype=float) for c in columns]
    return np.column_stack([np.ones_like(columns[0])] + columns)


@dataclasses.dataclass(frozen=True)
class Exponent:
    """A fitted slope (a power, when x and y are logs) with its two-sided Student-t interval."""
    slope: float
    low: float
    high: float
    intercept: float
    r2: float
    n: int
    level: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def decide(self, claimed: float, rival: float) -> str:
        """CLAIMED when the interval holds the claimed value and not the rival's, RIVAL for the mirror
        image, NOT_RESOLVED when it holds both or neither."""
        c, r = self.contains(claimed), self.contains(rival)
        return CLAIMED if c and not r else RIVAL if r and not c else NOT_RESOLVED

    def measured(self) -> dict:
        return {"slope": self.slope, "interval": [self.low, self.high], "level": self.level, "r2": self.r2,
                "points": self.n}


def exponent_interval(x, y, *, log: bool = True, level: float = LEVEL) -> Exponent:
    """Least-squares slope of y on x (of log y on log x with `log`) with its Student-t interval on n − 2
    degrees of freedom. Fewer than 3 finite points: NaN slope and an infinite interval."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if log:
        with np.errstate(divide="ignore", invalid="ignore"):
            x, y = np.log(x), np.log(y)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = len(x)
    if n < 3 or np.ptp(x) == 0:
        return Exponent(math.nan, -math.inf, math.inf, math.nan, math.nan, n, level)
    from scipy import stats  # here, not at the top: every training job imports this module

    fit = stats.linregress(x, y)
    half = float(stats.t.ppf(0.5 + level / 2, n - 2)) * float(fit.stderr)
    return Exponent(float(fit.slope), float(fit.slope) - half, float(fit.slope) + half, float(fit.intercept),
                    float(fit.rvalue**2), n, level)


@dataclasses.dataclass(frozen=True)
class Difference:
    """mean(a) − mean(b) with its Student-t interval; `preferred` is 'a', 'b' or NOT_RESOLVED."""
    difference: float
    low: float
    high: float
    n_a: int
    n_b: int
    paired: bool
    level: float
    preferred: str

    def measured(self) -> dict:
        return {"difference": self.difference, "interval": [self.low, self.high], "level": self.level,
                "seeds": [self.n_a, self.n_b], "paired": self.paired, "preferred": self.preferred}


def compare_groups(a: Sequence[float], b: Sequence[float], *, paired: bool = False, level: float = LEVEL,
                   margin: float = 0.0) -> Difference:
    """Is mean(a) > mean(b) + margin, or below mean(b) − margin, beyond the seed spread? Welch's interval
    (or the paired one, seed by seed); one value per side (no spread) cannot resolve anything."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = (a[np.isfinite(a) & np.isfinite(b)], b[np.isfinite(a) & np.isfinite(b)]) if paired else (
        a[np.isfinite(a)], b[np.isfinite(b)])
    diff = float(a.mean() - b.mean()) if len(a) and len(b) else math.nan
    q = 0.5 + level / 2
    if paired and len(a) >= 2:
        d = a - b
        se, dof = float(d.std(ddof=1) / math.sqrt(len(d))), len(d) - 1
    elif not paired and len(a) >= 2 and len(b) >= 2:
        va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
        se = math.sqrt(va + vb)
        dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if va + vb > 0 else math.inf
    else:
        return Difference(diff, -math.inf, math.inf, len(a), len(b), paired, level, NOT_RESOLVED)
    from scipy import stats

    half = float(stats.t.ppf(q, dof)) * se if se > 0 else 0.0
    low, high = diff - half, diff + half
    preferred = "a" if low > margin else "b" if high < -margin else NOT_RESOLVED
    return Difference(diff, low, high, len(a), len(b), paired, level, preferred)


def not_resolved_reason(what: str, detail: str) -> str:
    """The reason of a check whose comparison the data cannot decide."""
    return f"not resolved: {what} ({detail})"


def tally(outcomes: dict[str, str], *, every: bool = False) -> str:
    """The verdict of several claimed-vs-rival decisions (CLAIMED / RIVAL / NOT_RESOLVED per item): all
    claimed → reproduced; any rival → not reproduced (`every`: a law that must hold in every item, or
    when no item is claimed) or partially; otherwise (some not resolved, or no items) inconclusive."""
    values = list(outcomes.values())
    if RIVAL in values:
        return NOT_REPRODUCED if every or CLAIMED not in values else PARTIALLY
    if values and all(v == CLAIMED for v in values):
        return REPRODUCED
    return INCONCLUSIVE
