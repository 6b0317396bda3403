"""Claim 1 experiments: Monte Carlo of linear/softmax retrieval (E1–E4) and trained MQAR models (E5)."""
from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from attncap import theory
from attncap.experiments.context import RunContext
from attncap.models.lm import BatchedLM, masked_accuracy, masked_token_loss, scored_positions
from attncap.tasks.retrieval_capacity import DotStream, mqar_batch, mqar_curriculum_batch, sample_unit_dots, unit_vectors
from attncap.train import TrainSettings, generators, train_batched

_MAX_ELEMENTS = 1 << 22  # memory chunk for explicit-vector Monte Carlo (32 MiB of float64)


def check_config(section: dict) -> list[str]:
    problems = []
    e5 = section["E5"]
    if 3 * max(e5["kv_pairs"]) > e5["seq_len"]:
        problems.append(f"E5.kv_pairs: {max(e5['kv_pairs'])} pairs need seq_len >= 3*kv = "
                        f"{3 * max(e5['kv_pairs'])}, got seq_len={e5['seq_len']}")
    if max(e5["kv_pairs"]) > e5["vocab"] // 2 - 1:
        problems.append(f"E5.kv_pairs: {max(e5['kv_pairs'])} distinct keys do not fit in vocab/2-1 = {e5['vocab'] // 2 - 1}")
    bad = [d for d in e5["d_model"] if d % e5["heads"]]
    if bad:
        problems.append(f"E5.d_model: {bad} not divisible by heads={e5['heads']}")
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
                     for kernel, s in [("linear", None)] + [("exp", s) for s in e2["scales"]]]
    if "E3" in section:
        e3 = section["E3"]
        out["E3"] = ([{"kind": "capacity", "d": d, "beta_name": b, "epsilon": eps}
                      for d in e3["dims"] for b in e3["betas"] for eps in e3["epsilons"]]
                     + [{"kind": "validation", "d": d, "_rows": 3} for d in e3["dims"][:3]])
    if "E4" in section:
        out["E4"] = [{"log10_n": x} for x in section["E4"]["log10_n"]]
    if "E5" in section:
        # E5's grid is being redesigned (short-convolution flag, curricula, ...): every key the config
        # crosses (here mixers x kv_pairs x seeds, one table per d_model) must appear as a column of the
        # rows; when the grid gains a key, add it to this dict and to mqar_grid together.
        e5 = section["E5"]
        for d in e5["d_model"]:
            out[f"E5_d{d}"] = [{"mixer": m, "kv_pairs": kv, "d_model": d, "seed": s}
                               for m in e5["mixers"] for kv in e5["kv_pairs"] for s in e5["seeds"]]
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
            # enough queries for a ~0.75% standard error of the mean (relative variance ≈ 2/(N−1))
            queries = spec["min_queries"] if n == 1 else max(spec["min_queries"], math.ceil(36_000 / (n - 1)))
            err = linear_error2(rng, int(n), d, queries)
            rows.append({"kind": "grid", "d": d, "n": int(n), "epsilon": np.nan, "queries": len(err),
                         "mean_error2": err.mean(), "se_error2": err.std(ddof=1) / math.sqrt(len(err)),
                         "theory_error2": float(theory.linear_mean_error2(n, d)),
                         "wall_time_s": time.perf_counter() - started})
        for eps in spec["epsilons"]:
            started = time.perf_counter()
            n_star = largest_n(lambda n: mean_error2_below(rng, n, d, eps**2, spec["min_queries"]), 4 * d)
            rows.append({"kind": "capacity", "d": d, "n": n_star, "epsilon": eps, "queries": spec["min_queries"],
                         "theory_capacity": int(theory.linear_capacity(eps, d)),
                         "wall_time_s": time.perf_counter() - started})
    return pd.DataFrame(rows)


def mean_error2_below(rng, n: int, d: int, threshold: float, min_queries: int) -> bool:
    """Is the mean squared linear-retrieval error at N below `threshold`? A sequential test: a first
    estimate decides unless it lies within 4 standard errors of the threshold; then the estimate is
    redone with 40·(N−1) queries, enough to resolve N from N ± 1 (their means differ by 1/d, the
    standard error is then ≈ 1/(4.5·d))."""
    err = linear_error2(rng, n, d, min_queries)
    mean, se = err.mean(), err.std(ddof=1) / math.sqrt(len(err)) if len(err) > 1 else 0.0
    if abs(mean - threshold) > 4 * se or n == 1:
        return mean <= threshold
    return linear_error2(rng, n, d, max(min_queries, 40 * (n - 1))).mean() <= threshold


def first_failure(ok, start: int, limit: int) -> int | None:
    """Smallest x in [start, limit] with ok(x) false, for a monotone ok (true, then false) taken as true
    at start − 1; None when ok holds on all of [start, limit].

    Doubling from `start` finds a bracket, bisection closes it; no x is evaluated twice.
    """
    lo, hi = start - 1, start
    while hi <= limit and ok(hi):
        lo, hi = hi, hi * 2
    if hi > limit:
        if lo == limit or ok(limit):
            return None
        hi = limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return hi


def largest_n(ok, n_max: int) -> int:
    """Largest N in [1, n_max] with ok(N), assuming ok is monotone (true then false); ok(1) assumed."""
    failure = first_failure(ok, 2, n_max)
    return n_max if failure is None else failure - 1


# ------------------------------------------------------------------------------- E2 ----------
def snr_inverse_samples(rng, n: int, d: int, queries: int, scales: list[float]) -> dict[str, np.ndarray]:
    """Per-query ||r||²/(c²||v_i||²) with explicit Gaussian keys and values, linear and exp kernels."""
    memories = max(1, math.ceil(queries / min(n, 64)))
    per_memory = math.ceil(queries / memories)
    out = {"linear": []} | {f"exp_{s}": [] for s in scales}
    for _ in range(memories):
        keys, values = rng.standard_normal((n, d)), rng.standard_normal((n, d))
        q = min(per_memory, n)
        scores = keys @ keys[:q].T  # (n, q); column i holds k_j·k_i
        self_score = scores[np.arange(q), np.arange(q)]
        v_norm2 = (values[:q] ** 2).sum(-1)
        kernels = {"linear": scores / self_score}
        for s in scales:
            kernels[f"exp_{s}"] = np.exp(s * (scores - self_score) / math.sqrt(d))
        for name, weight in kernels.items():  # weight = κ_j / c, so r/c = Σ_j weight_j v_j − v_i
            residual = weight.T @ values - values[:q]
            out[name].append((residual**2).sum(-1) / v_norm2)
    return {k: np.concatenate(v) for k, v in out.items()}


def snr_explicit(spec: dict, context: RunContext) -> pd.DataFrame:
    rows = []
    for d in tqdm(spec["dims"], desc="E2 snr", ascii=True, mininterval=5):
        for log2_n in spec["log2_n"]:
            n = 2**log2_n
            started = time.perf_counter()
            rng = np.random.default_rng([context.seed, 2, d, log2_n])
            samples = snr_inverse_samples(rng, n, d, spec["queries"], spec["scales"])
            elapsed = time.perf_counter() - started
            for name, values in samples.items():
                kernel, scale = ("linear", np.nan) if name == "linear" else ("exp", float(name.split("_")[1]))
                closed = theory.snr_inv_linear(n, d) if kernel == "linear" else theory.snr_inv_exp(n, d, scale)
                rows.append({"kernel": kernel, "scale": scale, "d": d, "n": n, "queries": len(values),
                             "mean_snr_inv": values.mean(), "median_snr_inv": np.median(values),
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
    for d in tqdm(spec["dims"], desc="E3 softmax", ascii=True, mininterval=5):
        betas = [theory.beta_value(name, d) for name in spec["betas"]]
        stream = DotStream(d, betas, spec["queries"], seed=context.seed)
        started = time.perf_counter()
        for b, (beta_name, beta) in enumerate(zip(spec["betas"], betas)):
            for eps in spec["epsilons"]:
                failure = first_failure(lambda n: stream.error2(n)[b].mean() <= eps**2, 2, n_max)
                n_star, censored = (n_max, True) if failure is None else (failure - 1, False)
                rows.append({"kind": "capacity", "d": d, "beta_name": beta_name, "beta": beta, "epsilon": eps,
                             "n_star": n_star, "censored": bool(censored), "n_max": n_max,
                             "queries": spec["queries"],
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
def median_snr_inv_exp(n: int, d: int, queries: int, seed: int) -> float:
    """Median over queries of SNR⁻¹ for κ = exp(q·k/√d), Gaussian keys/values, via the exact scalar
    reduction: given k_i, k_j·k_i ~ N(0, ||k_i||²) and Σ_j κ_j v_j ~ N(0, Σκ_j² I)."""
    rng = np.random.default_rng([seed, 4, n])  # same draws for every d: common random numbers
    values = np.empty(queries)
    for q in range(queries):
        z = rng.standard_normal(n - 1)
        rng_q = np.random.default_rng([seed, 4, n, q, d])
        rho = rng_q.chisquare(d)
        log_ratio = 2.0 * math.sqrt(rho) * z / math.sqrt(d) - 2.0 * rho / math.sqrt(d)  # log(κ_j²/c²)
        peak = log_ratio.max()
        log_sum = peak + math.log(np.exp(log_ratio - peak).sum())
        values[q] = math.exp(log_sum) * rng_q.chisquare(d) / rng_q.chisquare(d)
    return float(np.median(values))


def log2_law(spec: dict, context: RunContext) -> pd.DataFrame:
    rows = []
    for log10_n in tqdm(spec["log10_n"], desc="E4 log2", ascii=True, mininterval=5):
        n = int(round(10**log10_n))
        started = time.perf_counter()
        ok = lambda d: median_snr_inv_exp(n, d, spec["queries"], context.seed) <= 1.0  # noqa: E731
        d_min = first_failure(lambda d: not ok(d), 3, spec["max_dim"])  # smallest d in [3, max_dim] with ok(d)
        rows.append({"n": n, "log10_n": log10_n, "ln_n_squared": math.log(n) ** 2,
                     "d_min": np.nan if d_min is None else d_min, "censored": d_min is None, "theory_typical_d_min": int(theory.exp_kernel_min_dim(n)),
                     "queries": spec["queries"], "wall_time_s": time.perf_counter() - started})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------- E5 ----------
def mqar_grid(spec: dict) -> tuple[list[tuple[str, int, int]], list[int]]:
    """The (mixer, kv, seed) models that one E5 job (one d_model) trains together, and their init seeds."""
    configs = [(mixer, kv, seed) for mixer in spec["mixers"] for kv in spec["kv_pairs"] for seed in spec["seeds"]]
    return configs, [1000 * seed + 17 * i for i, (_, _, seed) in enumerate(configs)]


def mqar_model(spec: dict, d_model: int) -> BatchedLM:
    configs, model_seeds = mqar_grid(spec)
    return BatchedLM(model_seeds, [c[0] for c in configs], vocab=spec["vocab"], d_model=d_model,
                     n_layers=spec["layers"], n_heads=spec["heads"], max_len=spec["seq_len"], mlp_ratio=4,
                     positional=spec["positional"])


def mqar_batch_stack(spec: dict, gens, batch: int, sampler=mqar_batch):
    """Tokens (M, B, T), query positions (M, B, max kv) and their targets (−100 on padding), on the CPU."""
    configs, _ = mqar_grid(spec)
    pairs = [sampler(g, batch, spec["seq_len"], spec["vocab"], kv) for g, (_, kv, _) in zip(gens, configs)]
    tokens, targets = torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])
    positions = scored_positions(targets, max(spec["kv_pairs"]))
    return tokens, positions, targets.gather(2, positions)


def mqar(spec: dict, context: RunContext) -> pd.DataFrame:
    """Train every (mixer, kv, seed) model of one d_model together; report held-out accuracy."""
    d_model = int(context.part.removeprefix("d")) if context.part != "all" else spec["d_model"][0]
    configs, model_seeds = mqar_grid(spec)
    model = mqar_model(spec, d_model).to(context.device)
    train_gens = generators([s + context.seed for s in model_seeds], offset=1)
    eval_gens = generators([s + context.seed for s in model_seeds], offset=2)
    train_sampler = mqar_curriculum_batch if spec["curriculum"] else mqar_batch

    def batch(gens, sampler):
        return tuple(x.to(context.device) for x in mqar_batch_stack(spec, gens, spec["batch"], sampler))

    def loss(m, b):
        return masked_token_loss(m(b[0], b[1]), b[2])

    settings = TrainSettings(steps=spec["steps"], lr=spec["lr"], optimizer="adamw", weight_decay=spec["weight_decay"],
                             warmup_steps=spec["warmup_steps"], schedule="cosine", clip_norm=1.0)
    started = time.perf_counter()
    result = train_batched(model, lambda step: batch(train_gens, train_sampler), loss, settings, desc=f"E5 d={d_model}")
    train_time = time.perf_counter() - started
    model.eval()
    with torch.no_grad():
        accuracy = torch.stack([masked_accuracy(model(t, p), y) for t, p, y in
                                (batch(eval_gens, mqar_batch) for _ in range(spec["eval_batches"]))]).mean(0)
    return pd.DataFrame([
        {"mixer": mixer, "kv_pairs": kv, "d_model": d_model, "seed": seed, "model_seed": ms, "vocab": spec["vocab"],
         "seq_len": spec["seq_len"], "layers": spec["layers"], "heads": spec["heads"], "steps": result["steps_run"],
         "batch": spec["batch"], "lr": spec["lr"], "weight_decay": spec["weight_decay"],
         "accuracy": float(accuracy[i]), "final_train_loss": result["loss_history"][-1],
         "models_in_group": len(configs), "wall_time_s": train_time}
        for i, ((mixer, kv, seed), ms) in enumerate(zip(configs, model_seeds))
    ])
