"""Claim 1 experiments: Monte Carlo of linear/softmax retrieval (E1–E4) and trained MQAR models (E5)."""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import pandas as pd
import torch
from scipy import special
from tqdm import tqdm

from attncap import theory
from attncap.precision import (ALPHA_FAMILY, Crossing, find_crossing, first_failure, interpolated_crossing,
                               point_alpha, query_budget, sequential_test)
from attncap.experiments.context import RunContext
from attncap.models.lm import BatchedLM, masked_accuracy, masked_token_loss, scored_positions
from attncap.models.mixers import MIXERS
from attncap.tasks.retrieval_capacity import GrowingDotStream, mqar_batch, mqar_curriculum_batch, sample_unit_dots, unit_vectors
from attncap.claims import DIVERGED, STILL_MOVING, learning_status, still_moving
from attncap.claims.retrieval_capacity import at_chance, below_its_own_control
from attncap.seeding import seed_of
from attncap.train import TrainSettings, final_loss, generators, loss_curve, tail_lr_fraction, train_batched

_MAX_ELEMENTS = 1 << 22  # memory chunk for explicit-vector Monte Carlo (32 MiB of float64)


def check_config(section: dict) -> list[str]:
    problems = []
    e5 = section["E5"]
    if 3 * max(e5["kv_pairs"]) > e5["seq_len"]:
        problems.append(f"E5.kv_pairs: {max(e5['kv_pairs'])} pairs need seq_len >= 3*kv = "
                        f"{3 * max(e5['kv_pairs'])}, got seq_len={e5['seq_len']}")
    if max(e5["kv_pairs"]) > e5["vocab"] // 2 - 1:
        problems.append(f"E5.kv_pairs: {max(e5['kv_pairs'])} distinct keys do not fit in vocab/2-1 = {e5['vocab'] // 2 - 1}")
    if e5.get("curriculum_kv", "own") == "largest" and not e5["curriculum"]:
        problems.append("E5.curriculum_kv: 'largest' mixes kv values in training, which needs E5.curriculum: true")
    if e5.get("continue_cap", 1) > 1 and "continue_lr" not in e5:
        problems.append("E5.continue_cap: a continued run needs E5.continue_lr (the cosine ends at 0, where it could "
                        "neither learn nor be judged settled)")
    bad = [d for d in e5["d_model"] if d % e5["heads"]]
    if bad:
        problems.append(f"E5.d_model: {bad} not divisible by heads={e5['heads']}")
    for i, name in enumerate(e5["mixers"]):  # any registered mixer trains here (docs/adding-a-mixer.md)
        if name not in MIXERS:
            problems.append(f"E5.mixers[{i}]: unknown mixer {name!r}; known: {sorted(MIXERS)}")
    # mixers named beside the grid's list need only be registered: the ablation runs where no_conv and the grid
    # meet, so overriding E5.mixers alone stays valid; a typo (which would silently drop its runs) is refused
    for key, names in (("lr_by_mixer", e5.get("lr_by_mixer", {})), ("no_conv.mixers", (e5.get("no_conv") or {}).get("mixers", []))):
        unknown = [m for m in names if m not in MIXERS]
        if unknown:
            problems.append(f"E5.{key}: unknown mixers {unknown}; known: {sorted(MIXERS)}")
    return problems


def expected_cells(section: dict) -> dict[str, list[dict]]:
    """Run table (file stem) -> the cells the config asks it to hold, as {column: value} dicts that some
    row must match (`_rows`: how many rows, when more than one). attncap.claims.evaluate refuses to
    compute verdicts from tables that lack any of them."""
    out = {}
    if "E1" in section:
        e1 = section["E1"]
        out["E1"] = [cell for d in e1["dims"] for cell in (
            [{"kind": "grid", "d": d, "n": int(n)} for n in np.unique(np.round(np.geomspace(1, 4 * d, e1["n_points"])).astype(int))]
            + [{"kind": "capacity", "d": d, "epsilon": eps} for eps in e1["epsilons"]])]
    if "E2" in section:
        e2 = section["E2"]
        out["E2"] = [{"kernel": kernel, **({"scale": s} if kernel == "exp" else {}), "d": d, "n": 2**l}
                     for d in e2["dims"] for l in e2["log2_n"]
                     for kernel, s in [("linear", None), ("relu", None), ("relu_centred", None)]
                     + [("exp", s) for s in e2["scales"]]]
    if "E3" in section:
        e3 = section["E3"]
        out["E3"] = ([{"kind": "capacity", "d": d, "beta_name": b, "epsilon": eps}
                      for d in e3["dims"] for b in e3["betas"] for eps in e3["epsilons"]]
                     + [{"kind": "validation", "d": d, "_rows": 3} for d in e3["dims"][:3]])
    if "E4" in section:
        out["E4"] = [{"log10_n": x} for x in section["E4"]["log10_n"]]
    if "E5" in section:
        # every key the grid crosses must appear as a column of the rows (mqar_grid names them)
        e5 = section["E5"]
        for part in mqar_parts(e5):
            out[f"E5_{part}"] = [{"mixer": m, "short_conv": w, "kv_pairs": kv, "d_model": d, "seed": s}
                                 for m, w, kv, s, d in mqar_grid(e5, part)[0]]
    return out


def run(experiment: str, spec: dict, context: RunContext) -> pd.DataFrame:
    runners = {"E1": linear_explicit, "E2": snr_explicit, "E3": softmax_capacity, "E4": log2_law, "E5": mqar}
    return runners[experiment](spec, context)


# ------------------------------------------------------------------------------- E1 ----------
def linear_error2(rng: np.random.Generator, n: int, d: int, queries: int) -> np.ndarray:
    """Squared retrieval errors of linear attention over ≥ `queries` queries (each stored key queried)."""
    memories = max(1, math.ceil(queries / n))
    per_chunk = max(1, _MAX_ELEMENTS // (n * max(n, d)))
    errors = []
    for start in range(0, memories, per_chunk):
        r = min(per_chunk, memories - start)
        keys, values = unit_vectors(rng, (r, n), d), unit_vectors(rng, (r, n), d)
        retrieved = (keys @ keys.transpose(0, 2, 1)) @ values  # row i: Σ_j (k_j·k_i) v_j
        errors.append(((retrieved - values) ** 2).sum(-1).ravel())
    return np.concatenate(errors)


def linear_explicit(spec: dict, context: RunContext) -> pd.DataFrame:
    rows = []
    for d in tqdm(spec["dims"], desc="E1 linear", ascii=True, mininterval=5):
        rng = np.random.default_rng([context.seed, 1, d])
        grid = np.unique(np.round(np.geomspace(1, 4 * d, spec["n_points"])).astype(int))
        for n in grid:
            started = time.perf_counter()
            # enough queries for a ~0.75% standard error of the mean: a query's relative variance is ≈ 2/(N−1), and
            # the N queries of one memory share its pairs, which widens the error of their mean ≈ 1.35× (variance
            # 1.8×, measured): 72 000/(N−1) queries, and the standard error taken over memories, the independent unit
            # (at least 8 of them, so that the largest N has a standard error at all)
            queries = spec["min_queries"] if n == 1 else max(spec["min_queries"], math.ceil(72_000 / (n - 1)), 8 * n)
            err = linear_error2(rng, int(n), d, queries)
            per_memory = err.reshape(-1, int(n)).mean(1)
            se = per_memory.std(ddof=1) / math.sqrt(len(per_memory)) if len(per_memory) > 1 else math.nan
            rows.append({"kind": "grid", "d": d, "n": int(n), "epsilon": np.nan, "queries": len(err),
                         "memories": len(per_memory), "mean_error2": err.mean(), "se_error2": se,
                         "theory_error2": float(theory.linear_mean_error2(n, d)),
                         "wall_time_s": time.perf_counter() - started})
        samples = LinearSamples(d, context.seed)  # per-N errors, shared by every ε
        alpha = point_alpha([(2, 4 * dim) for dim in spec["dims"] for _ in spec["epsilons"]])  # table: ALPHA_FAMILY
        for eps in spec["epsilons"]:
            started = time.perf_counter()
            crossing = linear_capacity_search(samples, eps, spec, 4 * d, alpha)
            rows.append({"kind": "capacity", "d": d, "epsilon": eps, "theory_capacity": int(theory.linear_capacity(eps, d)),
                         **capacity_columns(crossing, eps**2, 4 * d, "n", alpha),
                         "wall_time_s": time.perf_counter() - started})
    return pd.DataFrame(rows)


class LinearSamples:
    """Per-memory mean squared linear-retrieval errors per N (a memory of N pairs queried at every stored
    key: its N errors share keys and values, so the memory, not the query, is the independent unit of
    the test), extended on demand: asking for more keeps the memories drawn, and each extension has its
    own seed, so the numbers do not depend on the search order."""

    def __init__(self, d: int, seed: int):
        self.d, self.seed, self.means = d, seed, {}

    def __call__(self, n: int, memories: int) -> np.ndarray:
        have = self.means.get(n, np.empty(0))
        if len(have) < memories:
            rng = np.random.default_rng([self.seed, 1, self.d, n, len(have)])
            errors = linear_error2(rng, n, self.d, (memories - len(have)) * n)
            have = np.concatenate([have, errors.reshape(-1, n).mean(1)])
            self.means[n] = have
        return have


def linear_capacity_search(samples: LinearSamples, eps: float, spec: dict, n_max: int,
                           alpha: float | None = None) -> Crossing:
    """Band of N where "mean error² ≤ ε²" is not resolved at the per-point error rate `alpha` (E1;
    default: the search alone spends ALPHA_FAMILY); the budget is in queries (memories × N), the test's
    sample size (its independent units, hence its degrees of freedom) in memories."""
    alpha = point_alpha([(2, n_max)]) if alpha is None else alpha

    def decide(n: int):
        limit = query_budget(n - 1, spec["sample_budget"], spec["min_queries"], spec["max_queries"])
        first, most = math.ceil(first_stage(limit, spec) / n), max(2, math.ceil(limit / n))
        decision = sequential_test(lambda m: samples(n, m), eps**2, max(2, first), most, alpha=alpha, x=n)
        return dataclasses.replace(decision, queries=decision.queries * n)  # units stay memories
    return find_crossing(decide, eps**2, 2, n_max)


def first_stage(limit: int, spec: dict) -> int:
    """Queries of a sequential test's first look: 1/16 of the point's budget, at least min_queries
    (cheap at small N, where errors are most skewed; min_queries at the largest N)."""
    return max(spec["min_queries"], limit // 16)


def capacity_columns(crossing: Crossing, threshold: float, n_max: int, name: str = "n_star",
                     alpha: float | None = None) -> dict:
    """CSV columns of a capacity: point estimate `name`, its interval [n_lo, n_hi] (the N over which
    "mean ≤ threshold" is not resolved, plus the last resolved N below), and the two decisions that
    bound it: at n_lo (resolved ≤) and at n_hi + 1 (resolved >), with their queries, independent units,
    observed z-scores, the t critical value each needed and the route that resolved it. `alpha`: the
    per-point error rate the search used (default: the search alone spends ALPHA_FAMILY); `alpha_look`
    is the per-look level at n_lo. Decisions not monotone in N (`monotone` false: some decision is
    wrong) give status "non-monotone", never resolved, with n_hi widened to the largest N resolved ≤."""
    decisions = crossing.decisions
    alpha = point_alpha([(2, n_max)]) if alpha is None else alpha
    if crossing.first_not_below is None:  # resolved ≤ up to n_max: capacity censored at n_max
        n_lo = n_hi = n_max
        status = "censored"
    else:
        n_lo = crossing.first_not_below - 1
        n_hi = n_max if crossing.first_above is None else crossing.first_above - 1
        status = "resolved" if crossing.resolved else "unresolved"
    if crossing.conflict is not None:  # an N resolved > below an N resolved ≤: the band is what they leave open
        n_hi, status = max(n_hi, crossing.conflict[1]), "non-monotone"
    n_star = int(min(n_hi, max(n_lo, math.floor(crossing.estimate))))
    low, high = decisions.get(n_lo), decisions.get(n_hi + 1)
    z = lambda dec: (threshold - dec.mean) / dec.se if dec is not None and dec.se > 0 else math.nan  # noqa: E731
    at = lambda dec, field: getattr(dec, field) if dec is not None else np.nan  # noqa: E731
    return {name: n_star, "n_lo": n_lo, "n_hi": n_hi, "status": status, "resolved": status == "resolved",
            "censored": crossing.first_above is None, "monotone": crossing.monotone, "n_max": n_max,
            "alpha_family": ALPHA_FAMILY, "alpha_point": alpha, "alpha_look": at(low, "alpha_look"),
            "queries_at_lo": at(low, "queries"), "units_at_lo": at(low, "units"), "z_at_lo": z(low),
            "critical_at_lo": at(low, "critical"), "route_at_lo": at(low, "route"),
            "queries_at_hi_next": at(high, "queries"), "units_at_hi_next": at(high, "units"),
            "z_at_hi_next": z(high), "critical_at_hi_next": at(high, "critical"), "route_at_hi_next": at(high, "route"),
            "queries": max(dec.queries for dec in decisions.values()) if decisions else 0,
            "evaluations": len(decisions)}


def largest_n(ok, n_max: int) -> int:
    """Largest N in [1, n_max] with ok(N), assuming ok is monotone (true then false); ok(1) assumed."""
    failure = first_failure(ok, 2, n_max)
    return n_max if failure is None else failure - 1


# ------------------------------------------------------------------------------- E2 ----------
SNR_QUERIES_PER_MEMORY = 64  # queries answered by one stored memory (amortizes drawing its N keys and values)


def snr_memory_ids(n: int, queries: int) -> np.ndarray:
    """Which memory each of `snr_inverse_samples`'s queries came from (queries of one memory share its
    crosstalk keys and values, so the memory is the independent unit of an interval)."""
    memories = max(1, math.ceil(queries / min(n, SNR_QUERIES_PER_MEMORY)))
    return np.repeat(np.arange(memories), min(math.ceil(queries / memories), n))


def snr_inverse_samples(rng, n: int, d: int, queries: int, scales: list[float]) -> dict[str, np.ndarray]:
    """Per-query ||r||²/(c²||v_i||²) with explicit Gaussian keys and values for the linear kernel q·k, the
    exponential kernels exp(γ·q·k/√d), and the ReLU feature map φ(x) = max(x, 0) (κ = φ(q)·φ(k); `relu`)
    and its centred form (φ − E φ, E φ = 1/√(2π); `relu_centred`, a diagnostic: is the feature mean what
    sets the ReLU's noise?). Every kernel sees the same keys and values (the ReLU ones draw nothing extra).

    A query whose ReLU features are all zero (every coordinate of k_i negative, probability 2^{−d}) has no
    signal (c = 0) and no crosstalk: its SNR⁻¹ is +inf (nothing can be retrieved)."""
    memories = max(1, math.ceil(queries / min(n, SNR_QUERIES_PER_MEMORY)))
    per_memory = math.ceil(queries / memories)
    out = {"linear": []} | {f"exp_{s}": [] for s in scales} | {"relu": [], "relu_centred": []}
    for _ in range(memories):
        keys, values = rng.standard_normal((n, d)), rng.standard_normal((n, d))
        q = min(per_memory, n)
        scores = keys @ keys[:q].T  # (n, q); column i holds k_j·k_i
        self_score = scores[np.arange(q), np.arange(q)]
        v_norm2 = (values[:q] ** 2).sum(-1)
        kernels = {"linear": scores / self_score}
        for s in scales:
            kernels[f"exp_{s}"] = np.exp(s * (scores - self_score) / math.sqrt(d))
        for name, features in (("relu", np.maximum(keys, 0.0)),
                               ("relu_centred", np.maximum(keys, 0.0) - theory.RELU_MEAN)):
            feature_scores = features @ features[:q].T  # column i holds φ(k_j)·φ(k_i)
            signal = feature_scores[np.arange(q), np.arange(q)]
            with np.errstate(divide="ignore", invalid="ignore"):
                kernels[name] = np.where(signal > 0, feature_scores / np.where(signal > 0, signal, 1.0), np.nan)
        for name, weight in kernels.items():  # weight = κ_j / c, so r/c = Σ_j weight_j v_j − v_i
            residual = weight.T @ values - values[:q]
            ratio = (residual**2).sum(-1) / v_norm2
            out[name].append(np.where(np.isnan(ratio), np.inf, ratio))  # NaN only where c = 0 (ReLU)
    return {k: np.concatenate(v) for k, v in out.items()}


def median_interval(values: np.ndarray, units: np.ndarray, seed, level: float = 0.95,
                    resamples: int = 400) -> tuple[float, float]:
    """Percentile interval of the median of `values` by a bootstrap over independent `units` (memories:
    their queries share crosstalk, so queries are not independent). Deterministic given `seed`; with few
    units (< 10) it is indicative only. One unit: no interval (NaN, NaN)."""
    ids = np.unique(units)
    if len(ids) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(ids), size=(resamples, len(ids)))
    sizes = {int((units == u).sum()) for u in ids}
    if len(sizes) == 1:  # equal memories (snr_memory_ids): one vectorized median per resample
        table = np.stack([values[units == u] for u in ids])
        medians = np.median(table[draws].reshape(resamples, -1), axis=1)
    else:
        groups = [values[units == u] for u in ids]
        medians = np.array([np.median(np.concatenate([groups[g] for g in row])) for row in draws])
    tail = (1.0 - level) / 2.0
    return float(np.quantile(medians, tail)), float(np.quantile(medians, 1.0 - tail))


def _snr_kernel(name: str) -> tuple[str, float]:
    return ("exp", float(name.split("_")[1])) if name.startswith("exp_") else (name, np.nan)


def _snr_closed_forms(kernel: str, n: int, d: int, scale: float) -> dict:
    if kernel == "linear":
        return theory.snr_inv_linear(n, d)
    if kernel == "exp":
        return theory.snr_inv_exp(n, d, scale)
    return theory.snr_inv_relu(n, d, centred=kernel == "relu_centred")


def snr_explicit(spec: dict, context: RunContext) -> pd.DataFrame:
    rows = []
    for d in tqdm(spec["dims"], desc="E2 snr", ascii=True, mininterval=5):
        for log2_n in spec["log2_n"]:
            n = 2**log2_n
            started = time.perf_counter()
            rng = np.random.default_rng([context.seed, 2, d, log2_n])
            samples = snr_inverse_samples(rng, n, d, spec["queries"], spec["scales"])
            units = snr_memory_ids(n, spec["queries"])
            elapsed = time.perf_counter() - started
            for k, (name, values) in enumerate(samples.items()):
                kernel, scale = _snr_kernel(name)
                closed = _snr_closed_forms(kernel, n, d, scale)
                lo, hi = median_interval(values, units, [context.seed, 2, d, log2_n, k])
                rows.append({"kernel": kernel, "scale": scale, "d": d, "n": n, "queries": len(values),
                             "memories": len(np.unique(units)), "mean_snr_inv": values.mean(),
                             "median_snr_inv": np.median(values), "median_lo": lo, "median_hi": hi,
                             "zero_signal": int(np.isinf(values).sum()),
                             "theory_mean": float(closed["mean"]), "theory_typical": float(closed["typical"]),
                             "wall_time_s": elapsed})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------- E3 ----------
def softmax_error2_explicit(rng, n: int, d: int, beta: float, queries: int) -> np.ndarray:
    """Squared errors of softmax retrieval (logits β·q·k, q = k_i) with explicit unit vectors."""
    memories = max(1, math.ceil(queries / n))
    keys, values = unit_vectors(rng, (memories, n), d), unit_vectors(rng, (memories, n), d)
    weights = torch.from_numpy(beta * keys @ keys.transpose(0, 2, 1)).softmax(-1).numpy()
    return (((weights @ values) - values) ** 2).sum(-1).ravel()


def softmax_capacity(spec: dict, context: RunContext) -> pd.DataFrame:
    rows = []
    n_max = 2 ** spec["max_log2_n"]
    alpha = point_alpha([(2, n_max)] * (len(spec["dims"]) * len(spec["betas"]) * len(spec["epsilons"])))
    for d in tqdm(spec["dims"], desc="E3 softmax", ascii=True, mininterval=5):
        betas = [theory.beta_value(name, d) for name in spec["betas"]]
        stream = GrowingDotStream(d, betas, seed=context.seed, first=spec["min_queries"])
        started = time.perf_counter()
        for b, (beta_name, beta) in enumerate(zip(spec["betas"], betas)):
            for eps in spec["epsilons"]:
                crossing = softmax_capacity_search(stream, b, eps, spec, n_max, alpha)
                rows.append({"kind": "capacity", "d": d, "beta_name": beta_name, "beta": beta, "epsilon": eps,
                             **capacity_columns(crossing, eps**2, n_max, alpha=alpha),
                             "bound_gaussian": float(theory.softmax_capacity_bound(eps, d, beta, "gaussian")),
                             "bound_exact": float(theory.softmax_capacity_bound(eps, d, beta, "exact")),
                             "blog_formula": float(theory.blog_softmax_capacity(eps, d)),
                             "linear_capacity": int(theory.linear_capacity(eps, d))})
        elapsed = time.perf_counter() - started
        for row in rows:
            if row["d"] == d:
                row.update(samples_drawn=stream.samples_drawn, wall_time_s=elapsed,
                           samples_per_s=stream.samples_drawn / max(elapsed, 1e-9))
    rows += shortcut_validation(spec, context)
    return pd.DataFrame(rows)


def softmax_capacity_search(stream: GrowingDotStream, b: int, eps: float, spec: dict, n_max: int,
                            alpha: float | None = None) -> Crossing:
    """Band of N where "mean error² ≤ ε²" is not resolved at the per-point error rate `alpha` (default:
    the search alone spends ALPHA_FAMILY), for the stream's b-th β. Queries (independent: each draws its
    own crosstalk) per N: from min_queries, doubling up to sample_budget/(N−1) (at most max_queries)."""
    alpha = point_alpha([(2, n_max)]) if alpha is None else alpha

    def decide(n: int):
        limit = query_budget(n - 1, spec["sample_budget"], spec["min_queries"], spec["max_queries"])
        return sequential_test(lambda q: stream.error2(n, q)[b], eps**2, first_stage(limit, spec), limit,
                               alpha=alpha, x=n, bounded=(0.0, 1.0))  # (s1² + s2)/(1 + s1)² < 1 since s2 ≤ s1
    return find_crossing(decide, eps**2, 2, n_max)


def shortcut_validation(spec: dict, context: RunContext) -> list[dict]:
    """Beta-law shortcut vs explicit vectors at small N (same d, β = d): both mean errors with SEs."""
    rows = []
    for d in spec["dims"][:3]:
        for n in (4, 16, 64):
            rng = np.random.default_rng([context.seed, 3, d, n])
            explicit = softmax_error2_explicit(rng, n, d, float(d), spec["validation_queries"])
            shortcut = theory.softmax_error2_given_dots(
                sample_unit_dots(rng, (spec["validation_queries"], n - 1), d), float(d))
            se = math.hypot(explicit.std(ddof=1) / math.sqrt(len(explicit)),
                            shortcut.std(ddof=1) / math.sqrt(len(shortcut)))
            rows.append({"kind": "validation", "d": d, "n_star": n, "beta_name": "d", "beta": float(d),
                         "explicit_error2": explicit.mean(), "shortcut_error2": shortcut.mean(),
                         "z_score": (explicit.mean() - shortcut.mean()) / se if se > 0 else 0.0})
    return rows


# ------------------------------------------------------------------------------- E4 ----------
class SnrProbabilities:
    """Per-query P(SNR⁻¹ ≤ 1 | crosstalk) for κ = exp(q·k/√d) with Gaussian keys and values, at one N and any d.

    The exact scalar reduction: given ρ = ||k_i||², k_j·k_i = √ρ·z_j with z_j iid N(0, 1), so
    ln SNR⁻¹ = L(a) − 2ρ/√d + ln(ν/ν'), L(a) = ln Σ_j exp(a·z_j), a = 2√(ρ/d), and ν, ν' ~ χ²_d the two value
    norms (ν/ν' ~ F(d, d)). A query's value is the probability over ρ, ν and ν' given its crosstalk z:
    ∫ I_{expit(2ρ/√d − L(a))}(d/2, d/2) dχ²_d(ρ) (the regularised incomplete beta is F(d, d)'s cdf), by the
    midpoint rule on RHO_NODES quantiles of χ²_d, with L on a grid of a (step A_STEP) and a cubic spline
    between (both errors below 1e-7 against adaptive quadrature; tests). The values lie in [0, 1] and average to
    P(SNR⁻¹ ≤ 1); integrating ρ and the value norms out leaves only the crosstalk's variance (SD per query
    0.07 at N = 100, 0.001 at N = 10⁶, against 0.5 for a 0/1 indicator), so the fraction is known to a
    thousandth at a few dozen queries and d_min can be located between integers.

    Queries come in blocks of `block`; block k's crosstalk z comes from one stream shared by every d (common
    random numbers). Only L at the grid points a block has needed so far is kept; z is drawn again from its
    stream when a new d needs more of the grid."""

    RHO_NODES = 256
    A_STEP = 0.1

    def __init__(self, n: int, seed: int, block: int = 16):
        self.n, self.seed, self.block = n, seed, block
        self._log_sums: dict[int, dict[int, np.ndarray]] = {}  # block → grid index → L of its queries
        self._values: dict[int, list[np.ndarray]] = {}
        self._nodes: dict[int, tuple[np.ndarray, np.ndarray, range]] = {}

    def nodes(self, d: int) -> tuple[np.ndarray, np.ndarray, range]:
        """The quadrature nodes ρ (χ²_d quantiles), their a = 2√(ρ/d), and the grid indices of a the spline needs."""
        if d not in self._nodes:
            from scipy import stats

            rho = stats.chi2.ppf((np.arange(self.RHO_NODES) + 0.5) / self.RHO_NODES, d)
            a = 2.0 * np.sqrt(rho / d)
            grid = range(max(0, math.floor(a.min() / self.A_STEP) - 1), math.ceil(a.max() / self.A_STEP) + 2)
            self._nodes[d] = rho, a, grid
        return self._nodes[d]

    def _grid_values(self, k: int, grid: range) -> np.ndarray:
        """L(a) at the grid points `grid` for block k's queries: (len(grid), block)."""
        cached = self._log_sums.setdefault(k, {})
        missing = [i for i in grid if i not in cached]
        if missing:
            m = self.n - 1
            rng = np.random.default_rng([self.seed, 4, self.n, k])
            rows = max(1, _MAX_ELEMENTS // m)
            out = np.empty((len(missing), self.block))
            for r0 in range(0, self.block, rows):
                r1 = min(self.block, r0 + rows)
                z = rng.standard_normal((r1 - r0, m))
                top = z.max(axis=1)
                z -= top[:, None]  # ≤ 0: exp(a·z) never overflows
                for j, i in enumerate(missing):
                    a = i * self.A_STEP
                    out[j, r0:r1] = a * top + np.log(np.exp(a * z).sum(axis=1))
            cached.update(zip(missing, out))
        return np.stack([cached[i] for i in grid])

    def _block_values(self, k: int, d: int) -> np.ndarray:
        from scipy.interpolate import CubicSpline

        rho, a, grid = self.nodes(d)
        spline = CubicSpline(np.asarray(grid) * self.A_STEP, self._grid_values(k, grid), axis=0)
        log_f = (2.0 * rho / math.sqrt(d))[:, None] - spline(a)  # (nodes, block): ln of the F(d, d) point
        return special.betainc(d / 2.0, d / 2.0, special.expit(log_f)).mean(axis=0)

    def __call__(self, d: int, queries: int) -> np.ndarray:
        values = self._values.setdefault(d, [])
        while len(values) * self.block < queries:
            values.append(self._block_values(len(values), d))
        return np.concatenate(values)


BAND_POINTS = 8
"""Most dimensions whose P(SNR⁻¹ ≤ 1) bounds E4 interpolates across a crossing (fixed in advance: its error
rate is spent over them)."""


def log2_law(spec: dict, context: RunContext) -> pd.DataFrame:
    """Smallest d with median SNR⁻¹ ≤ 1, i.e. P(SNR⁻¹ ≤ 1) ≥ 1/2, from per-query conditional probabilities
    (`SnrProbabilities`): a sequential test of their mean against 1/2 at every d the search visits gives the
    integer d_min with the band [d_lo, d_hi] of d where it is not resolved; then d_star, where the fraction
    interpolated linearly between integer d crosses 1/2, with its interval from the fraction's confidence
    bounds at every d of the band (`attncap.precision.interpolated_crossing`). Half the table's error rate ALPHA_FAMILY is spent over the
    searches' points, half over the band's bounds."""
    rows = []
    cells = len(spec["log10_n"])
    alpha = point_alpha([(3, spec["max_dim"])] * cells, alpha_family=ALPHA_FAMILY / 2)
    alpha_band = ALPHA_FAMILY / 2 / (cells * BAND_POINTS * 2)  # every band point, both sides, every cell
    for log10_n in tqdm(spec["log10_n"], desc="E4 log2", ascii=True, mininterval=5):
        n = int(round(10**log10_n))
        started = time.perf_counter()
        limit = query_budget(n - 1, spec["sample_budget"], spec["min_queries"], spec["max_queries"])
        probabilities = SnrProbabilities(n, context.seed, block=spec["min_queries"])

        def decide(d: int):
            return sequential_test(lambda q: probabilities(d, q), 0.5, spec["min_queries"], limit, alpha=alpha, x=d,
                                   bounded=(0.0, 1.0))
        crossing = find_crossing(decide, 0.5, 3, spec["max_dim"])
        band = {"d_star": np.nan, "d_star_lo": np.nan, "d_star_hi": np.nan, "band": "", "band_queries": np.nan,
                "band_fractions": ""}
        if crossing.first_not_below is None:  # median SNR⁻¹ > 1 resolved up to max_dim
            d_lo, d_hi, d_min, status = spec["max_dim"] + 1, np.nan, np.nan, "censored"
        else:
            d_lo = crossing.first_not_below
            d_hi = np.nan if crossing.first_above is None else crossing.first_above
            d_min = min(d_hi, max(d_lo, math.ceil(crossing.estimate))) if crossing.first_above else d_lo
            status = "resolved" if crossing.resolved else "unresolved"
            if crossing.first_above is not None:
                found = interpolated_crossing(lambda d: probabilities(d, limit), max(3, d_lo - 1), int(d_hi), 0.5,
                                              alpha_band, (3, spec["max_dim"]), BAND_POINTS)
                band = {"d_star": found.estimate, "d_star_lo": found.low, "d_star_hi": found.high,
                        "band": f"{found.points[0]}-{found.points[-1]}", "band_queries": found.units,
                        "band_fractions": " ".join(f"{x}:{m:.4f}" for x, m in zip(found.points, found.means))}
        if crossing.conflict is not None:  # a d resolved above below a d resolved below: widen to both
            d_hi, status = max(d_hi, crossing.conflict[1] + 1) if np.isfinite(d_hi) else crossing.conflict[1] + 1, "non-monotone"
        high = crossing.decisions.get(d_hi) if np.isfinite(d_hi) else None
        low = crossing.decisions.get(d_lo - 1)
        rows.append({"n": n, "log10_n": log10_n, "ln_n_squared": math.log(n) ** 2, "d_min": d_min,
                     "d_lo": d_lo, "d_hi": d_hi, "status": status, "resolved": status == "resolved",
                     "censored": status == "censored" or crossing.first_above is None, **band,
                     "theory_typical_d": float(theory.exp_kernel_typical_dim(n)),
                     "theory_typical_d_min": int(theory.exp_kernel_min_dim(n)), "monotone": crossing.monotone,
                     "alpha_family": ALPHA_FAMILY, "alpha_point": alpha, "alpha_band": alpha_band,
                     "alpha_look": low.alpha_look if low else (high.alpha_look if high else np.nan),
                     "fraction_at_d_hi": high.mean if high else np.nan, "queries_at_d_hi": high.queries if high else np.nan,
                     "fraction_below_d_lo": low.mean if low else np.nan,
                     "queries_below_d_lo": low.queries if low else np.nan,
                     "queries": max(dec.queries for dec in crossing.decisions.values()),
                     "evaluations": len(crossing.decisions), "wall_time_s": time.perf_counter() - started})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------- E5 ----------
NO_CONV = "noconv"
"""The suffix of an E5 part whose runs have no short convolution (the ablation arm)."""


def mqar_parts(spec: dict) -> list[str]:
    """E5's jobs, one per (d_model, mixer, arm): "d32-softmax" (with the short convolution) and
    "d32-softmax-noconv" (the ablation without it). A job ends when its own models have settled, so a
    mixer that solves in 300 steps does not wait for one that plateaus at 1500. The ablation runs only at
    the widths and mixers of `no_conv` that the grid also lists, when the config restricts it (the plateau
    it shows is the same at every width)."""
    arms = spec.get("short_conv", [False])
    restrict = spec.get("no_conv") or {}
    parts = []
    for d in spec["d_model"]:
        for mixer in spec["mixers"]:
            if True in arms:
                parts.append(f"d{d}-{mixer}")
            if False in arms and d in restrict.get("d_model", [d]) and mixer in restrict.get("mixers", [mixer]):
                parts.append(f"d{d}-{mixer}-{NO_CONV}")
    return parts


def parse_mqar_part(part: str) -> tuple[int, str | None, bool | None]:
    """'d32-softmax-noconv' → (32, 'softmax', False); 'd32-softmax' → (32, 'softmax', True); 'd32' → (32, None,
    None): every mixer and arm of that width in one job (a device where batching pays)."""
    head, *rest = part.split("-")
    if not head.startswith("d") or not head[1:].isdigit() or len(rest) > 2 or rest[1:] not in ([], [NO_CONV]):
        raise ValueError(f"E5 part {part!r}: expected 'd<d_model>[-<mixer>[-{NO_CONV}]]'")
    return int(head[1:]), (rest[0] if rest else None), (len(rest) == 1 if rest else None)


def mqar_grid(spec: dict, part: str) -> tuple[list[tuple[str, int, int, int, int]], list[int]]:
    """The (mixer, short_conv width (0: none), kv, seed, d_model) models that one E5 job trains together,
    and their init seeds. A model's seed is named by its own cell (`seed_of`), so it does not depend on
    which other mixers or widths the config lists, nor on how they are split into jobs."""
    d_model, mixer, conv = parse_mqar_part(part)
    if mixer is None:
        members = [q for q in map(parse_mqar_part, mqar_parts(spec)) if q[0] == d_model]
    else:
        members = [(d_model, mixer, conv)]
    width = int(spec.get("short_conv_width", 4))
    configs = [(m, width if c else 0, kv, seed, d_model) for _, m, c in members
               for kv in spec["kv_pairs"] for seed in spec["seeds"]]
    return configs, [mqar_init_seed(c, 1) for c in configs]


def mqar_init_seed(config: tuple, attempt: int) -> int:
    """The init (and data-stream) seed of one E5 model's `attempt`-th training: named by its cell and, after the
    first, by the attempt (a restart from the copy-a-value plateau starts from a fresh draw)."""
    mixer, width, kv, seed, d_model = config
    keys = ("E5", mixer, width, d_model, kv, seed) + (() if attempt == 1 else ("restart", attempt))
    return seed_of(*keys) % (2**31)


def mqar_training_kv(spec: dict, kv: int) -> int:
    """The largest kv in the training batches of a model evaluated at `kv`: its own kv (`curriculum_kv: own`, the
    default, and always without a curriculum) or the grid's largest (`largest`: one mix for every model, as
    Zoology trains on mixed MQAR configurations)."""
    if spec["curriculum"] and spec.get("curriculum_kv", "own") == "largest":
        return max(spec["kv_pairs"])
    return kv


def mqar_step_cap(spec: dict) -> int:
    """The most steps an E5 run may take: `continue_cap` budgets (1, the default: no continuation)."""
    return math.ceil(float(spec.get("continue_cap", 1)) * spec["steps"])


def mqar_lr(spec: dict, mixers: list[str]) -> float:
    """The peak learning rate of one E5 job: `lr`, or the mixer's entry in `lr_by_mixer` (one optimizer per job,
    so a job whose mixers would need different rates is refused)."""
    rates = {spec.get("lr_by_mixer", {}).get(m, spec["lr"]) for m in mixers}
    if len(rates) > 1:
        raise ValueError(f"E5: one job trains mixers {sorted(set(mixers))} at different rates {sorted(rates)}; "
                         "run them as separate parts (d<d>-<mixer>)")
    return float(rates.pop())


def mqar_model(spec: dict, configs, model_seeds) -> BatchedLM:
    """The E5 models `configs` (as `mqar_grid` lists them) from their init seeds `model_seeds`, batched."""
    width = max(c[1] for c in configs)
    return BatchedLM(model_seeds, [c[0] for c in configs], vocab=spec["vocab"], d_model=configs[0][4],
                     n_layers=spec["layers"], n_heads=spec["heads"], max_len=spec["seq_len"],
                     mlp_ratio=spec.get("mlp_ratio", 4), positional=spec["positional"], short_conv=width,
                     short_conv_on=spec.get("short_conv_on", "qkv"), conv_models=[c[1] > 0 for c in configs],
                     tie_embeddings=spec.get("tie_embeddings", False))


def mqar_batch_stack(spec: dict, configs, gens, batch: int, sampler=mqar_batch):
    """Tokens (M, B, T), query positions (M, B, max kv) and their targets (−100 on padding), on the CPU."""
    pairs = [sampler(g, batch, spec["seq_len"], spec["vocab"], c[2]) for g, c in zip(gens, configs)]
    tokens, targets = torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])
    positions = scored_positions(targets, max(spec["kv_pairs"]))
    return tokens, positions, targets.gather(2, positions)


class MqarMonitor:
    """The `on_step` of E5: every `eval_every` steps, held-out accuracy of every model on a fixed check
    set (fresh sequences from the evaluation distribution, drawn once), and per-model stopping.

    A model stops (its parameters are held from then on) when it is *solved* (check accuracy ≥
    `target_accuracy`), *diverged* (non-finite training loss) or on a *plateau*: its best check accuracy
    over the last `plateau_steps` improved on the best before them by less than `plateau_delta`, AND its
    training loss has stopped falling by the certificate's rule (`claims.still_moving`: over that window,
    a relative change of at most PLATEAU_DROP per unit of learning rate per 10% of the step budget).
    Accuracy alone is not enough: on the copy-a-value plateau (accuracy ≈ 1/kv) the loss keeps falling
    while the recall circuit forms, and a softmax run cut there at step 450 solves by step 650. A model
    still improving at the last step is `max_steps` (not settled). The traces (step, check accuracy, mean
    training loss over the preceding window) are kept for the certificate and the loss-curve figure.
    """

    def __init__(self, model, check_set, spec: dict, steps: int, settings: TrainSettings | None = None):
        self.model, self.check_set, self.steps = model, check_set, steps
        self.settings = settings  # the schedule the loss rule reads its learning-rate factor from (None: constant)
        self.every = max(1, int(spec.get("eval_every", 50)))
        self.target = float(spec.get("target_accuracy", 0.99))
        self.window = max(1, int(spec.get("plateau_steps", 1000)) // self.every)
        self.delta = float(spec.get("plateau_delta", 0.01))
        m = len(model.embed.weight)
        self.done = torch.zeros(m, dtype=torch.bool)
        self.reason = ["max_steps"] * m
        self.stop_step = [steps] * m
        self.accuracy: list[list[float]] = [[] for _ in range(m)]
        self.trace_steps: list[list[int]] = [[] for _ in range(m)]
        self.losses: list[list[float]] = [[] for _ in range(m)]
        self._window_loss = torch.zeros(m)
        self._window_count = 0
        self.eval_seconds = 0.0
        self.rows = torch.arange(m)  # the models on the axis (`keep_models`: stopped ones are dropped)

    def keep_models(self, rows: torch.Tensor) -> None:
        """Check only the models `rows` of the original axis, the ones `train_batched` left on it."""
        self.rows = rows

    def check_accuracy(self) -> torch.Tensor:
        """Check-set accuracy of every model on the original axis (NaN for one dropped from it)."""
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad():
            acc = torch.stack([masked_accuracy(self.model(t[rows], p[rows]), y[rows]) for t, p, y in self.check_set
                               for rows in [self.rows.to(t.device)]]).mean(0).cpu()
        self.model.train(was_training)
        full = torch.full((len(self.done),), math.nan, dtype=acc.dtype)
        full[self.rows] = acc
        return full

    def __call__(self, step: int, losses: torch.Tensor, batch) -> torch.Tensor | None:
        losses = losses.detach().float().cpu()
        self._window_loss += losses
        self._window_count += 1
        newly = torch.zeros_like(self.done)
        for m in torch.nonzero(~self.done & ~torch.isfinite(losses)).flatten().tolist():
            self.done[m], self.reason[m], self.stop_step[m] = True, "diverged", step + 1
            newly[m] = True
        if (step + 1) % self.every and step + 1 != self.steps:  # every `every` steps, and at the budget
            return self.done.clone() if bool(newly.any()) else None
        started = time.perf_counter()
        acc = self.check_accuracy()
        self.eval_seconds += time.perf_counter() - started
        mean_loss = self._window_loss / self._window_count
        self._window_loss.zero_()
        self._window_count = 0
        for m in range(len(acc)):
            if self.done[m] and not newly[m]:
                continue
            history = self.accuracy[m]
            history.append(float(acc[m]))
            self.trace_steps[m].append(step + 1)
            self.losses[m].append(float(mean_loss[m]))
            if self.done[m]:
                continue
            if history[-1] >= self.target:
                self.done[m], self.reason[m], self.stop_step[m] = True, "solved", step + 1
            elif (len(history) > self.window and max(history[-self.window:]) < max(history[:-self.window]) + self.delta
                  and self.loss_settled(m, step)):
                self.done[m], self.reason[m], self.stop_step[m] = True, "plateau", step + 1
        return self.done.clone()

    def loss_settled(self, m: int, step: int) -> bool:
        """The loss half of the plateau rule, read twice as every continuation reads it
        (`attncap.train.plateau_settled`): no fall beyond the certificate's rate between the last two checks one
        plateau window apart, nor between the two before them. This monitor looks every `eval_every` steps, and
        one pair of window-mean losses can look flat by batch noise while the loss still falls."""
        return len(self.losses[m]) > 2 * self.window and not any(self.loss_moving(m, step, back) for back in (0, 1))

    def loss_moving(self, m: int, step: int, back: int = 0) -> bool:
        """`claims.still_moving` on model m's training loss over one plateau window (ending `back` windows before
        the last check), its drop scaled to 10% of the step budget (the certificate's window) and judged at the
        mean learning-rate factor of that window."""
        losses = self.losses[m]
        end = len(losses) - 1 - back * self.window
        before, now = losses[end - self.window], losses[end]
        change = (before - now) / abs(before) if before else math.nan
        span = self.window * self.every
        scale = span / max(1.0, 0.1 * self.steps)  # how many certificate windows the plateau window spans
        fraction = 1.0 if self.settings is None else tail_lr_fraction(self.settings, step + 1 - back * span, window=span)
        return still_moving(change / scale, fraction)

    def trace(self, m: int, values) -> str:
        return " ".join(f"{s}:{v:.4g}" for s, v in zip(self.trace_steps[m], values))


def mqar(spec: dict, context: RunContext) -> pd.DataFrame:
    """Train every (mixer, short conv, kv, seed) model of one d_model together, each until it is solved
    (held-out accuracy ≥ target), on a plateau, diverged, or at `steps`; report held-out accuracy and
    the learning certificate of each run.

    A run that settles on the copy-a-value plateau (`at_chance`: the claim's rule, on the same held-out
    accuracy), or on any plateau short of a kv its own mixer and width solved (`below_its_own_control`),
    is trained again from a fresh initialization and data stream, up to `restarts` times (the
    field's practice: Zoology reports the best run of a learning-rate sweep; here the rate is kept and the
    draw changes). The row reports its last attempt (`attempt`) and the accuracies of those before it; a run
    still at chance after every attempt is reported at chance. Each attempt is kept (`RunContext.memo`), so a
    killed job does not redo the finished ones."""
    part = context.part if context.part != "all" else mqar_parts(spec)[0]
    configs, model_seeds = mqar_grid(spec, part)
    rows = context.memo(("E5", spec, part, 1), lambda: _mqar_attempt(spec, context, part, configs, model_seeds))
    for row in rows:
        row.update(attempt=1, earlier_accuracies="")
    for attempt in range(2, int(spec.get("restarts", 0)) + 2):
        frame = pd.DataFrame(rows)
        stuck = np.flatnonzero(((frame["stop_reason"] == "plateau") & at_chance(frame))
                               | below_its_own_control(frame)).tolist()
        if not stuck:
            break
        again_configs = [configs[i] for i in stuck]
        again_seeds = [mqar_init_seed(c, attempt) for c in again_configs]
        again = context.memo(("E5", spec, part, attempt, again_seeds), lambda: _mqar_attempt(
            spec, context, f"{part} restart {attempt - 1}", again_configs, again_seeds))
        for i, row in zip(stuck, again):
            before = rows[i]
            earlier = " ".join(filter(None, [before["earlier_accuracies"], f"{before['accuracy']:.4g}"]))
            rows[i] = dict(row, attempt=attempt, earlier_accuracies=earlier,
                           wall_time_s=before["wall_time_s"] + row["wall_time_s"],
                           eval_time_s=before["eval_time_s"] + row["eval_time_s"])
    return pd.DataFrame(rows)


def _mqar_attempt(spec: dict, context: RunContext, desc: str, configs, model_seeds) -> list[dict]:
    """One batched training of the E5 models `configs` from the init seeds `model_seeds`: their rows."""
    d_model = configs[0][4]
    model = mqar_model(spec, configs, model_seeds).to(context.device)
    train_gens = generators([s + context.seed for s in model_seeds], offset=1)
    eval_gens = generators([s + context.seed for s in model_seeds], offset=2)
    check_gens = generators([s + context.seed for s in model_seeds], offset=3)
    def train_sampler(generator, rows, seq_len, vocab, kv):
        # a model evaluated at kv trains on the mix kv_max, kv_max/2, ... >= 1 pairs (kv_max: mqar_training_kv)
        if not spec["curriculum"]:
            return mqar_batch(generator, rows, seq_len, vocab, kv)
        return mqar_curriculum_batch(generator, rows, seq_len, vocab, mqar_training_kv(spec, kv))

    rows = list(range(len(configs)))  # the models training (stopped ones are dropped from the axis)

    def batch(gens, sampler, rows=None):
        picked = range(len(configs)) if rows is None else rows
        return tuple(x.to(context.device) for x in mqar_batch_stack(
            spec, [configs[i] for i in picked], [gens[i] for i in picked], spec["batch"], sampler))

    def narrow(kept: torch.Tensor) -> None:
        rows[:] = kept.tolist()
        model.keep_models(kept)
        monitor.keep_models(kept)

    def loss(m, b):
        return masked_token_loss(m(b[0], b[1]), b[2])

    lr = mqar_lr(spec, [c[0] for c in configs])
    cap = mqar_step_cap(spec)
    # The cosine decays to 0 at the budget; a run still improving there goes on at `continue_lr` of the peak
    # rate, a rate at which the plateau rule can judge it (the in-budget schedule, and so every run settled
    # within the budget, is unchanged bit for bit).
    settings = TrainSettings(steps=spec["steps"], lr=lr, optimizer="adamw", weight_decay=spec["weight_decay"],
                             warmup_steps=spec["warmup_steps"], schedule="cosine", clip_norm=1.0,
                             continue_lr_fraction=spec.get("continue_lr") if cap > spec["steps"] else None)
    monitor = MqarMonitor(model, [batch(check_gens, mqar_batch) for _ in range(int(spec.get("check_batches", 1)))],
                          spec, spec["steps"], settings)
    continuation = {} if cap <= spec["steps"] else dict(
        until_certified=lambda history, model_steps: monitor.done.clone(), max_steps=cap,
        check_every=monitor.every)
    started = time.perf_counter()
    # A stopped model is dropped from the model axis (its numbers are unchanged, test_short_conv checks it):
    # the step then costs only the models still training, which matters in the long-tailed jobs.
    result = train_batched(model, lambda step: batch(train_gens, train_sampler, rows), loss, settings,
                           desc=f"E5 {desc}", on_step=monitor, narrow=narrow, **continuation)
    train_time = time.perf_counter() - started
    model.eval()
    with torch.no_grad():
        accuracy = torch.stack([masked_accuracy(model(t, p), y) for t, p, y in
                                (batch(eval_gens, mqar_batch) for _ in range(spec["eval_batches"]))]).mean(0)
    history = result["model_loss_history"]
    rows = []
    for i, ((mixer, width, kv, seed, _), ms) in enumerate(zip(configs, model_seeds)):
        own = history[: result["model_steps"][i], i].tolist()  # this model's own updates only
        final = final_loss(own)
        acc = float(accuracy[i])
        # the rule of claim 1's E5 certificate (attncap.claims.retrieval_capacity.mqar_certificate): a finite
        # loss (held-out accuracy is the measurement, no threshold) and settled (solved or plateau)
        status = learning_status(final, acc, threshold=None)
        if monitor.reason[i] == "diverged":
            status = DIVERGED
        elif status != DIVERGED and monitor.reason[i] not in ("solved", "plateau"):
            status = STILL_MOVING
        if status == DIVERGED:
            acc = math.nan  # a diverged run has no accuracy to report, and is never counted as 0
        rows.append({
            "mixer": mixer, "short_conv": width, "kv_pairs": kv, "d_model": d_model, "seed": seed, "model_seed": ms,
            "vocab": spec["vocab"], "seq_len": spec["seq_len"], "layers": spec["layers"], "heads": spec["heads"],
            "mlp_ratio": spec.get("mlp_ratio", 4), "short_conv_on": spec.get("short_conv_on", "qkv") if width else "",
            "train_kv_max": mqar_training_kv(spec, kv),
            "max_steps": spec["steps"], "step_cap": cap, "steps": result["steps_run"],
            "steps_run": int(result["model_steps"][i]),
            "stop_reason": monitor.reason[i], "batch": spec["batch"], "lr": lr,
            "weight_decay": spec["weight_decay"], "accuracy": acc,
            # held-out sequences of the training length and kv: the in-distribution accuracy of the certificate
            "train_accuracy": acc, "check_accuracy": monitor.accuracy[i][-1] if monitor.accuracy[i] else math.nan,
            "final_train_loss": final, "loss_curve": loss_curve(own), "status": status,
            "accuracy_trace": monitor.trace(i, monitor.accuracy[i]), "loss_trace": monitor.trace(i, monitor.losses[i]),
            "models_in_group": len(configs), "wall_time_s": train_time, "eval_time_s": monitor.eval_seconds,
        })
    return rows
