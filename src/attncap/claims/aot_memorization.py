"""Claim 2 verdicts: a one-layer attention-only transformer memorises ≥ H·d_h + d associations, with
accuracy linear in H, about quadratic in d_h, and better parameter scaling than an MLP (spec 02)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from scipy.optimize import curve_fit

from attncap.claims import (PLATEAU_DROP, Check, certificate_failures, fraction_verdict, gate,
                            linear_fit, missing_check, verdict_from)
from attncap.tasks.aot_memorization import accuracy_bound

TITLE = "Attention-only transformers memorize H·d_h + d associations"
PAPER = "Dana, Pydi & Chevaleyre 2024 (arXiv 2411.10115)"
SATURATION = 0.95  # points above this accuracy are left out of linear fits (as the authors' scripts do)
R2_MIN = 0.98
REGIME_RATIO = 5.0
PUBLISHED_TOL = {"A1": 0.03, "A6": 0.06, "A5": 0.05}
D2_SLOPE_RANGE = (1.2, 1.6)  # the paper: "about 1.3–1.5×" the bound's slope, ±0.1
# Published accuracies (spec 02): (d = d_h, H) → accuracy at N = 50; A6: H → accuracy at N = 10, d = 2
PUBLISHED_A1 = {
    6: dict(zip([1, 6, 11, 16, 21], [.086, .154, .210, .266, .314])),
    8: dict(zip([1, 6, 11, 16, 21], [.112, .231, .335, .445, .560])),
    10: dict(zip([1, 6, 11, 16, 21], [.130, .324, .506, .685, .861])),
}
PUBLISHED_A6 = dict(zip([1, 5, 9, 13, 17, 21], [.330, .497, .633, .734, .857, .858]))
MIN_POINTS = 4  # fewer points per fit: the grid is too small to test a law → inconclusive
MIN_DIMS = 3  # per-d laws need this many evaluable d values, else inconclusive
MIN_STEPS = 1000  # shorter training cannot test memorisation capacity (smoke tier) → inconclusive
KEYS = ["model", "layout", "N", "d", "d_head", "heads", "mlp_width"]
# The authors' experiment-5 data (issue 13, from their published data files): d = 10, H = 16, N = 70
PUBLISHED_A5_H16 = {"aot": 0.30, "mlp": 0.50}
PRECONDITION = (f"every run finite, trained ≥ {MIN_STEPS} steps, and its loss plateaued (fell < {PLATEAU_DROP:.0%} "
                f"over the last 10% of training) unless its accuracy is ≥ {SATURATION}")


def certificate(*frames: pd.DataFrame | None) -> str:
    """Why these runs cannot decide a check ('' when they can): the learning certificate of claim 2.

    Memorization beyond capacity is measured by accuracy < 1, so the certificate asks for a converged
    loss, not for high accuracy."""
    frames = [f for f in frames if f is not None and not f.empty]
    if not frames:
        return "no trained runs"
    runs = pd.concat(frames, ignore_index=True)
    return certificate_failures(runs, KEYS, accuracy="acc_running", loss="final_loss", threshold=None,
                                loss_drop="loss_drop_last10", saturated=SATURATION, min_steps=MIN_STEPS)


def too_short(*frames: pd.DataFrame | None) -> str:
    steps = [int(f["steps"].min()) for f in frames if f is not None and not f.empty and "steps" in f]
    return f"trained {min(steps)} steps (< {MIN_STEPS}): too short to measure" if steps and min(steps) < MIN_STEPS else ""


def checks(tables: dict[str, pd.DataFrame]) -> list[Check]:
    a1, a2, a3, a5, a6 = (trained(tables.get(k)) for k in ("A1", "A2", "A3", "A5", "A6"))
    bound_runs = [t for t in (a1, shared(a2), shared(a3), a6) if t is not None]
    aot_a5 = a5[a5["model"] == "aot"] if a5 is not None and "model" in a5 else a5
    return [
        # lower bounds: a pass by runs that could still improve stands; only a failure is withheld
        gate(above_bound(pd.concat(bound_runs, ignore_index=True) if bound_runs else None), PRECONDITION,
             certificate(*bound_runs), lower_bound=True),
        gate(linear_in_heads(a1), PRECONDITION, certificate(a1)),
        gate(per_head_gain(a1), PRECONDITION, certificate(a1), lower_bound=True),
        gate(head_dim_scaling(a2), PRECONDITION, certificate(shared(a2))),
        gate(two_regimes(a3), PRECONDITION, certificate(shared(a3))),
        gate(slope_exponent(a1), PRECONDITION, certificate(a1)),
        gate(d2_bound(a6), PRECONDITION, certificate(a6), lower_bound=True),
        gate(d2_slope(a6), PRECONDITION, certificate(a6)),
        gate(aot_linear_in_parameters(a5), PRECONDITION, certificate(aot_a5)),
        gate(aot_vs_mlp(a5), PRECONDITION, certificate(a5)),
        # our training follows the authors' protocol; matching their numbers is its positive control
        gate(published_match(a1, a6, a5), f"trained ≥ {MIN_STEPS} steps (the authors' protocol)",
             too_short(a1, a6, a5)),
    ]


# --------------------------------------------------------------------------- helpers ---------
def trained(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    """The table, or None when it has no rows (→ inconclusive)."""
    if frame is None or frame.empty:
        return None
    return frame


def enough(fit: dict) -> bool:
    return fit["n"] >= MIN_POINTS and math.isfinite(fit["r2"])


def shared(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    """Rows of the reference (shared-projection) layout only."""
    if frame is None or "layout" not in frame:
        return frame
    return frame[frame["layout"] == "shared"]


def seed_means(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean (and seed count) of the accuracy and association columns per configuration."""
    keys = [k for k in KEYS if k in frame]
    cols = [c for c in ("acc_running", "acc_table", "X_running", "X_table", "bound_X", "params_nonembedding")
            if c in frame]
    out = frame.groupby(keys, as_index=False)[cols].mean()
    out["n_seeds"] = frame.groupby(keys)["seed"].nunique().to_numpy() if "seed" in frame else 1
    return out


def unsaturated(frame: pd.DataFrame, column: str = "acc_running") -> pd.DataFrame:
    return frame[frame[column] <= SATURATION]


def heads_slope(cells: pd.DataFrame) -> dict:
    """Fit of seed-mean running accuracy against H on the unsaturated points, and the slope in
    associations per head, ΔX/ΔH = slope·N²/(1 − 1/N)."""
    fit = linear_fit(cells["heads"], cells["acc_running"])
    n = int(cells["N"].iloc[0]) if len(cells) else 0
    per_head = fit["slope"] * n**2 / (1 - 1 / n) if n else math.nan
    return {**fit, "associations_per_head": per_head}


def power_fit(x, y, intercept: bool) -> dict:
    """Best exponent p of y ≈ c·x^p (log-log least squares) or y ≈ a + c·x^p (nonlinear least squares)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0)
    x, y = x[keep], y[keep]
    if len(x) < 3 or np.ptp(x) == 0:
        return {"exponent": math.nan, "r2": math.nan}
    if not intercept:
        if np.any(y <= 0):
            return {"exponent": math.nan, "r2": math.nan}
        fit = linear_fit(np.log(x), np.log(y))
        return {"exponent": fit["slope"], "r2": fit["r2"]}
    try:
        with warnings.catch_warnings():  # a flat covariance estimate is fine: only the exponent is used
            warnings.simplefilter("ignore")
            (a, c, p), _ = curve_fit(lambda t, a, c, p: a + c * t**p, x, y, p0=(y.min(), 1e-3, 2.0),
                                     maxfev=20000)
    except (RuntimeError, ValueError):
        return {"exponent": math.nan, "r2": math.nan}
    residual = y - (a + c * x**p)
    total = np.sum((y - y.mean()) ** 2)
    return {"exponent": float(p), "r2": float(1 - np.sum(residual**2) / total) if total > 0 else 1.0}


# ---------------------------------------------------------------------------- checks ---------
def above_bound(runs: pd.DataFrame | None) -> Check:
    statement = "Trained AoTs store at least H·d_h + d associations (Theorem / Corollary 1)"
    source = f"{PAPER}, Sec. 4 Corollary 1 and Sec. 5 Figs. 1–2"
    expected = "seed-mean X_running ≥ H·d_h + d and X_table ≥ H·d_h + d at every configuration"
    if runs is None or runs.empty or "X_running" not in runs:
        return missing_check("above_bound", statement, source, expected)
    cells = seed_means(runs[runs["model"] == "aot"])
    ok_running = cells["X_running"] >= cells["bound_X"]
    ok_table = cells["X_table"] >= cells["bound_X"]
    passes = list(ok_running & ok_table) if len(cells) >= MIN_POINTS else []
    worst = (cells["X_running"] / cells["bound_X"]).min()
    return Check("above_bound", statement, source,
                 {"configs": len(cells), "configs_passing": int(sum(passes)),
                  "min_X_running_over_bound": float(worst),
                  "min_X_table_over_bound": float((cells["X_table"] / cells["bound_X"]).min())},
                 expected, "none", fraction_verdict(passes))


def linear_in_heads(a1: pd.DataFrame | None) -> Check:
    statement = "Accuracy grows linearly in H before saturation (d = d_h)"
    source = f"{PAPER}, Sec. 5 Fig. 1a"
    expected = f"per d: R² ≥ {R2_MIN} of acc ~ H on points with acc ≤ {SATURATION}, slope > 0"
    if a1 is None or a1.empty:
        return missing_check("linear_in_H", statement, source, expected)
    cells = seed_means(a1)
    fits, passes = {}, []
    for d, group in cells.groupby("d"):
        fit = heads_slope(unsaturated(group))
        fits[f"d={d}"] = {"r2": fit["r2"], "slope": fit["slope"], "points": fit["n"]}
        if enough(fit):
            passes.append(fit["r2"] >= R2_MIN and fit["slope"] > 0)
    return Check("linear_in_H", statement, source, fits, expected, f"R² ≥ {R2_MIN}",
                 fraction_verdict(passes if len(passes) >= MIN_DIMS else []))


def per_head_gain(a1: pd.DataFrame | None) -> Check:
    statement = "Each extra head adds at least d_h associations (the bound's slope)"
    source = f"{PAPER}, Sec. 5 Fig. 1a vs Corollary 1"
    expected = "per d: fitted ΔX/ΔH ≥ d_h"
    if a1 is None or a1.empty:
        return missing_check("per_head_gain", statement, source, expected)
    cells = seed_means(a1)
    measured, passes = {}, []
    for d, group in cells.groupby("d"):
        fit = heads_slope(unsaturated(group))
        measured[f"d={d}"] = fit["associations_per_head"]
        if enough(fit):
            passes.append(fit["associations_per_head"] >= group["d_head"].iloc[0])
    return Check("per_head_gain", statement, source, measured, expected, "none",
                 fraction_verdict(passes if len(passes) >= MIN_DIMS else []))


def head_dim_scaling(a2: pd.DataFrame | None) -> Check:
    statement = "Accuracy grows about quadratically in d_h (d = 10, H = 20, shared layout)"
    source = f"{PAPER}, Sec. 5 Fig. 1b"
    expected = f"acc ~ d_h² fits better than acc ~ d_h and has R² ≥ {R2_MIN}"
    a2 = shared(a2)
    if a2 is None or a2.empty:
        return missing_check("dh_quadratic", statement, source, expected)
    cells = seed_means(a2)
    linear = linear_fit(cells["d_head"], cells["acc_running"])
    quadratic = linear_fit(cells["d_head"] ** 2, cells["acc_running"])
    chance = 1 / cells["N"].iloc[0]
    free = power_fit(cells["d_head"], cells["acc_running"] - chance, intercept=False)
    with_intercept = power_fit(cells["d_head"], cells["acc_running"], intercept=True)
    passed = None
    if enough(linear) and enough(quadratic):
        passed = quadratic["r2"] > linear["r2"] and quadratic["r2"] >= R2_MIN
    return Check("dh_quadratic", statement, source,
                 {"r2_linear": linear["r2"], "r2_quadratic": quadratic["r2"], "points": linear["n"],
                  "exponent_through_chance": free["exponent"], "exponent_with_intercept": with_intercept["exponent"]},
                 expected, f"R² ≥ {R2_MIN}", verdict_from(passed))


def two_regimes(a3: pd.DataFrame | None) -> Check:
    statement = "Accuracy rises steeply in d while d ≤ d_h and flattens for d ≥ d_h (d_h = 10, H = 20)"
    source = f"{PAPER}, Sec. 5 Fig. 2a"
    expected = f"slope for d ≤ d_h ≥ {REGIME_RATIO:g}× slope for d ≥ d_h"
    a3 = shared(a3)
    if a3 is None or a3.empty:
        return missing_check("two_regimes_d", statement, source, expected)
    cells = seed_means(a3)
    d_head = cells["d_head"].iloc[0]
    low = linear_fit(cells.loc[cells["d"] <= d_head, "d"], cells.loc[cells["d"] <= d_head, "acc_running"])
    high = linear_fit(cells.loc[cells["d"] >= d_head, "d"], cells.loc[cells["d"] >= d_head, "acc_running"])
    ratio = low["slope"] / high["slope"] if high["slope"] not in (0.0,) else math.inf
    passed = None
    if low["n"] >= 3 and high["n"] >= 3 and math.isfinite(low["slope"]) and math.isfinite(high["slope"]):
        passed = low["slope"] > 0 and (high["slope"] <= 0 or ratio >= REGIME_RATIO)
    return Check("two_regimes_d", statement, source,
                 {"slope_d_le_dh": low["slope"], "slope_d_ge_dh": high["slope"], "ratio": ratio},
                 expected, "none", verdict_from(passed))


def slope_exponent(a1: pd.DataFrame | None) -> Check:
    statement = "The per-head accuracy slope grows like a power of d = d_h (A4; the text says quadratic in d_h, the authors' Exp. 4 script fits cubic)"
    source = f"{PAPER}, Sec. 5 Fig. 2b"
    expected = "fitted log-log exponent between 2 and 3 (±0.5)"
    if a1 is None or a1.empty:
        return missing_check("slope_exponent", statement, source, expected)
    cells = seed_means(a1)
    rows = [(d, heads_slope(unsaturated(g))["slope"]) for d, g in cells.groupby("d")]
    rows = [(d, s) for d, s in rows if math.isfinite(s) and s > 0]
    fit = power_fit([d for d, _ in rows], [s for _, s in rows], intercept=False)
    passed = None if len(rows) < MIN_POINTS or not math.isfinite(fit["exponent"]) else 1.5 <= fit["exponent"] <= 3.5
    return Check("slope_exponent", statement, source,
                 {"exponent": fit["exponent"], "r2_loglog": fit["r2"], "dims": len(rows)},
                 expected, "±0.5", verdict_from(passed))


def d2_bound(a6: pd.DataFrame | None) -> Check:
    statement = "At d = d_h = 2 the accuracy stays above φ(2H + 2)"
    source = f"{PAPER}, Appendix (d = 2 experiment)"
    expected = "seed-mean running accuracy ≥ φ(2H + 2) at every H"
    if a6 is None or a6.empty:
        return missing_check("d2_bound", statement, source, expected)
    cells = seed_means(a6)
    bound = accuracy_bound(cells["bound_X"], int(cells["N"].iloc[0]))
    passes = list(cells["acc_running"].to_numpy() >= bound)
    return Check("d2_bound", statement, source,
                 {"H": cells["heads"].tolist(), "accuracy": cells["acc_running"].round(4).tolist(),
                  "bound": np.round(bound, 4).tolist()},
                 expected, "none", fraction_verdict(passes))


def d2_slope(a6: pd.DataFrame | None) -> Check:
    statement = "At d = 2 the fitted gain per head is about 1.3–1.5× the bound's d_h = 2"
    source = f"{PAPER}, Appendix (d = 2 experiment)"
    expected = f"(ΔX/ΔH) / d_h in [{D2_SLOPE_RANGE[0]}, {D2_SLOPE_RANGE[1]}]"
    if a6 is None or a6.empty:
        return missing_check("d2_slope_ratio", statement, source, expected)
    cells = seed_means(a6)
    fit = heads_slope(unsaturated(cells))
    ratio = fit["associations_per_head"] / cells["d_head"].iloc[0]
    passed = None if not enough(fit) else D2_SLOPE_RANGE[0] <= ratio <= D2_SLOPE_RANGE[1]
    return Check("d2_slope_ratio", statement, source,
                 {"associations_per_head": fit["associations_per_head"], "ratio_to_bound": ratio,
                  "r2": fit["r2"], "points": fit["n"]},
                 expected, "±0.1 around the paper's range", verdict_from(passed))


def aot_linear_in_parameters(a5: pd.DataFrame | None) -> Check:
    statement = "AoT accuracy grows linearly with its parameter count"
    source = f"{PAPER}, Sec. 5 Fig. 3"
    expected = f"per d: R² ≥ {R2_MIN} of acc ~ parameters (unsaturated points)"
    if a5 is None or a5.empty:
        return missing_check("aot_linear_params", statement, source, expected)
    cells = seed_means(a5[a5["model"] == "aot"])
    fits, passes = {}, []
    for d, group in cells.groupby("d"):
        group = unsaturated(group)
        fit = linear_fit(group["params_nonembedding"], group["acc_running"])
        fits[f"d={d}"] = {"r2": fit["r2"], "slope_per_param": fit["slope"], "points": fit["n"]}
        if enough(fit):
            passes.append(fit["r2"] >= R2_MIN)
    return Check("aot_linear_params", statement, source, fits, expected, f"R² ≥ {R2_MIN}", fraction_verdict(passes))


def aot_vs_mlp(a5: pd.DataFrame | None) -> Check:
    """The paper's sentence ("AoTs are better optimized for memorization" than an MLP at equal
    parameters). The authors' own experiment-5 data has the MLP ahead (H = 16: AoT ≈ 0.30, MLP ≈ 0.50),
    so a "not reproduced" here agrees with their measurements and disagrees with their sentence;
    `published_match` compares our numbers with that data."""
    statement = ("The paper's sentence: at equal non-embedding parameters (4d²H) the AoT memorises at least as "
                 "well as one head + MLP (the authors' own data has the MLP ahead: H = 16, AoT ≈ 0.30 vs MLP ≈ 0.50)")
    source = f"{PAPER}, Sec. 5 Fig. 3"
    expected = "AoT running accuracy ≥ MLP running accuracy at every budget with H > 1"
    if a5 is None or a5.empty or not {"aot", "mlp"} <= set(a5["model"]):
        return missing_check("aot_beats_mlp", statement, source, expected)
    cells = seed_means(a5)
    aot = cells[cells["model"] == "aot"].set_index(["d", "heads"])["acc_running"]
    mlp = cells[cells["model"] == "mlp"].copy()
    mlp["heads"] = mlp["mlp_width"] // (2 * mlp["d"]) + 1  # the AoT with the same parameter count
    mlp = mlp.set_index(["d", "heads"])["acc_running"]
    budgets = [k for k in aot.index if k in mlp.index and k[1] > 1]
    winners = {f"d={d},H={h}": ("AoT" if aot[(d, h)] >= mlp[(d, h)] else "MLP") +
               f" ({aot[(d, h)]:.3f} vs {mlp[(d, h)]:.3f})" for d, h in budgets}
    passes = [aot[k] >= mlp[k] for k in budgets] if len(budgets) >= 3 else []
    return Check("aot_beats_mlp", statement, source, winners, expected, "none", fraction_verdict(passes))


def published_match(a1: pd.DataFrame | None, a6: pd.DataFrame | None, a5: pd.DataFrame | None = None) -> Check:
    statement = "Running accuracies match the authors' published measurements at matching configurations"
    source = f"{PAPER}, Figs. 1a, 3 and appendix (values from the authors' data files)"
    expected = (f"|ours − published| ≤ {PUBLISHED_TOL['A1']} (A1, N = 50), ≤ {PUBLISHED_TOL['A6']} (A6), "
                f"≤ {PUBLISHED_TOL['A5']} (A5, d = 10, H = 16, approximate published values)")
    diffs, passes = {}, []
    if a5 is not None and not a5.empty and {"aot", "mlp"} <= set(a5["model"]):
        cells = seed_means(a5)
        for model, published in PUBLISHED_A5_H16.items():
            rows = cells[(cells["model"] == model) & (cells["d"] == 10) & (cells["N"] == 70)]
            rows = rows[rows["heads"] == 16] if model == "aot" else rows[rows["mlp_width"] == 2 * 10 * 15]
            if len(rows):
                diff = float(rows["acc_running"].iloc[0]) - published
                diffs[f"A5 {model} d=10 H=16"] = round(diff, 4)
                passes.append(abs(diff) <= PUBLISHED_TOL["A5"])
    for name, frame, table in (("A1", a1, PUBLISHED_A1), ("A6", a6, {2: PUBLISHED_A6})):
        if frame is None or frame.empty:
            continue
        cells = seed_means(frame)
        for _, row in cells.iterrows():
            published = table.get(int(row["d"]), {}).get(int(row["heads"]))
            if published is None or (name == "A1" and int(row["N"]) != 50) or (name == "A6" and int(row["N"]) != 10):
                continue
            diff = float(row["acc_running"]) - published
            diffs[f"{name} d={int(row['d'])} H={int(row['heads'])}"] = round(diff, 4)
            passes.append(abs(diff) <= PUBLISHED_TOL[name])
    return Check("published_match", statement, source,
                 {"matched_configs": len(passes), "max_abs_diff": max(map(abs, diffs.values()), default=math.nan),
                  "differences": diffs},
                 expected, "0.03 / 0.06 / 0.05", fraction_verdict(passes))
