# %% [markdown]
# # Claim 2 — attention-only transformers memorize H·d_h + d associations
#
# Dana, Pydi & Chevaleyre (arXiv 2411.10115) prove that a one-layer attention-only transformer (AoT)
# with H heads of dimension d_h and embedding dimension d can memorise H·d_h + d associations, and
# train such models on random look-up tables t3 = f(t1, t2) over a vocabulary of N tokens to show
# accuracy linear in H, roughly quadratic in d_h, and better parameter scaling than an MLP.
# Every number below was computed by this run's pipeline (`results/aot_memorization/runs/*.csv`);
# this notebook only reads and plots.
#
# **Protocol (following the authors' public code where the paper is silent):** one random table and
# one fixed i.i.d. sample (2^14 sequences for N = 50) per experiment, reshuffled every epoch with the
# model seed's generator; Adam, batch 256, 64 epochs of 64 batches; the learning rate decays once per
# epoch as torch's `LinearLR(total_iters=64)` does in the reference code, i.e. 10⁻²·(1 − 0.95·e/64) in
# epoch e (the last epoch runs at 6.5·10⁻⁴, one step short of 5·10⁻⁴). Loss on the last position only.
# No LayerNorm, no biases; positions are added to the attention input only. When d ≠ d_h a shared
# matrix projects d → d_h before the heads and another maps the summed heads back (the reference
# layout); `per_head` (W_O^h ∈ R^{d×d_h} per head, the paper's formalism) is an ablation in A2.
# Initialisation is PyTorch's default for the corresponding modules (nn.Linear tables, Xavier q/k/v).
#
# **Two accuracies.** `acc_running` is what the paper reports: the mean training-batch accuracy over
# the last 100 batches (measured before each update, so it favours frequently sampled pairs).
# `acc_table` is the accuracy over all N² pairs after training. Associations: X_running =
# (acc − 1/N)·N²/(1 − 1/N); X_table = number of pairs whose argmax is right (raw count).
# Bound curves: φ(X) = 1/N + (1 − 1/N)·min(X, N²)/N².
#
# **Choices this project made where the spec is silent.** The block seed is `seed·1000 + experiment
# number`, so A1 and A2 use different tables. The running accuracy averages the last 100 batches (the
# authors' script averages the 100 before the last; the difference is far below seed noise). The MLP
# baseline is r ← r + W2·GELU(W1·r + b1) with no LayerNorm (its bias adds w parameters on top of 4d²H).
# The per-head ablation layout requires d_h ≤ d (W_O^h W_V^h has rank ≤ d), so config validation
# rejects d_h > d there. On a CPU every (d, H) gets its own stack of seeds (`group_heads: false`):
# padding heads to the largest H costs compute in proportion and buys nothing on one core; the padded
# stacks give the same numbers (tests check batched = alone within float tolerance) and are used on GPU.
# Fits that decide a verdict need ≥ 4 configurations (≥ 3 values of d for the per-d laws) and runs of
# ≥ 1000 steps; otherwise the verdict is "inconclusive". Each check fits the paper's law and its rival to
# the same runs (one point per run) and decides by the comparison (`attncap.claims.aot_memorization`);
# every fit drawn below is one a check made, computed by the claim module's own functions.
#
# **Certified runs.** Every run is judged on its own (`status` column): finite, ≥ 1000 steps, and a loss
# that changed < 5 % over the last 10 % of training *per unit of learning rate* (the schedule ends at ≈ 10 %
# of its peak, `lr_last10`), unless its accuracy is ≥ 0.95. Filled markers are certified runs; **hollow
# markers are runs that failed their certificate** (mostly: loss still falling when training ended).
# The checks that depend on such runs are inconclusive; lower bounds that pass stand.
#
# **Two arms from one training.** Under the authors' 64-epoch protocol the larger models are still
# learning when the schedule ends. Each run therefore gives two rows (`arm` column): **protocol**, read at
# exactly the 64-epoch budget (running accuracy over the last 100 batches before it, full-table accuracy
# of the parameters at that step), and **converged**, the same model continued at the schedule's final
# learning rate (5·10⁻⁴; the MLP's 10⁻⁴) until its own certificate holds or it reaches the stated cap
# (`continue_cap` × the budget; `capped` marks such runs, and the checks' reasons name them with the cap).
# A run already certified at the budget stops there, so its two rows agree; the continuation never
# changes the first 64 epochs, so the protocol rows are bit for bit those of a run without it (tested).
# `published_match` compares the protocol arm with the authors' numbers (same schedule); every law check
# decides on the converged arm. Figures draw both: **circles = converged arm, triangles = protocol arm**
# (lighter), crosses = the authors' published points.

# %% tags=["parameters"]
results_dir = "results"
tier = "default"
runs = ""  # the rule's run CSVs (JSON list); empty: every CSV under results/aot_memorization/runs

# %%
import json

import numpy as np
import pandas as pd
from IPython.display import display
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter, ScalarFormatter

from attncap import plotting
from attncap.claims import aot_memorization as verdicts_module
from attncap.notebook import open_claim
from attncap.theory import accuracy_bound

CLAIM = "aot_memorization"
claim = open_claim(CLAIM, results_dir, runs)
all_runs, verdicts, missing = claim.tables, claim.verdicts, claim.missing
figures_dir, tables_dir = claim.figures_dir, claim.tables_dir
PROTOCOL, CONVERGED = verdicts_module.PROTOCOL_ARM, verdicts_module.CONVERGED_ARM
# the law checks read the converged arm, published_match the protocol arm (verdicts_module.checks)
tables = {k: verdicts_module.arm(v, CONVERGED) for k, v in all_runs.items()}
protocol = {k: verdicts_module.arm(v, PROTOCOL) for k, v in all_runs.items()}
means = {k: verdicts_module.seed_means(v) for k, v in tables.items() if v is not None}
by_id = {c["id"]: c for c in verdicts["checks"]}
claim.checks()


def verdict(check_id):
    return by_id[check_id]["verdict"] if check_id in by_id else "not evaluated"


def decided_on(check_id, frame):
    """The runs a check decided on: the certified part of `frame` when it withheld the configurations with an
    uncertified run (`withheld_configurations` in its measured numbers), else `frame`; figures draw its fits."""
    measured = by_id.get(check_id, {}).get("measured")
    withheld = isinstance(measured, dict) and "withheld_configurations" in measured
    return verdicts_module.certified_part(frame) if withheld else frame


RUN_HANDLES = [Line2D([], [], ls="", marker="o", color="gray", label="converged arm, certified"),
               Line2D([], [], ls="", marker="o", mfc="none", color="gray", label="run NOT certified (hollow)"),
               Line2D([], [], ls=":", marker="^", color="gray", alpha=0.5, label="protocol arm (the authors' epoch budget)")]


def draw_runs(ax, frame, x, y="acc_running", color="C0", jitter=0.0, size=16, marker="o", alpha=0.7):
    """One marker per run: filled when it passed its learning certificate, hollow when it failed it."""
    ok = verdicts_module.certified(frame).to_numpy()
    xs = frame[x].to_numpy(dtype=float)
    if jitter:
        xs = xs + np.random.default_rng(0).uniform(-jitter, jitter, len(xs))
    ys = frame[y].to_numpy(dtype=float)
    ax.scatter(xs[ok], ys[ok], s=size, color=color, alpha=alpha, zorder=3, lw=0.8, marker=marker)
    ax.scatter(xs[~ok], ys[~ok], s=size, facecolors="none", edgecolors=color, alpha=min(1.0, alpha + 0.2), zorder=3,
               lw=0.8, marker=marker)


def draw_protocol(ax, frame, x, color="C0", jitter=0.0, size=16, line=True):
    """The protocol arm of the same runs (triangles, lighter; dotted seed-mean line)."""
    if frame is None or frame.empty:
        return
    draw_runs(ax, frame, x, color=color, jitter=jitter, size=size, marker="^", alpha=0.35)
    if line:
        cell = frame.groupby(x)["acc_running"].mean()
        ax.plot(cell.index, cell, color=color, lw=1.0, ls=":", alpha=0.6)


def matching(frame, rows):
    """The rows of `frame` (another arm) for the same runs as `rows`."""
    if frame is None:
        return None
    keys = [k for k in verdicts_module.KEYS + ["seed"] if k in rows and k in frame]
    return frame.merge(rows[keys].drop_duplicates(), on=keys)


def arm_counts(name, arm_name, frame):
    certified = verdicts_module.certified(frame)
    row = {"experiment": name, "arm": arm_name, "runs": len(frame), "certified": int(certified.sum())}
    if "continued_steps" in frame:
        continued = frame["continued_steps"] > 0
        row.update({"budget_steps": int(frame["steps"].max()), "continued": int(continued.sum()),
                    "certified_after_continuing": int((continued & certified).sum()),
                    "capped": int(frame["capped"].astype(bool).sum()),
                    "continued_steps_total": int(frame["continued_steps"].sum()),
                    "added_steps_fraction": float(frame["continued_steps"].sum() / frame["steps"].sum())})
    return {**row, **frame["status"].value_counts().to_dict()}


certified_counts = pd.DataFrame([arm_counts(k, arm_name, frames[k]) for k in all_runs
                                 for arm_name, frames in ((PROTOCOL, protocol), (CONVERGED, tables))
                                 if frames.get(k) is not None and "status" in frames[k]])
plotting.save_table(certified_counts, tables_dir, CLAIM, "converged_arm")
certified_counts

# %% [markdown]
# ## A1 — accuracy grows linearly in the number of heads (Fig. 1a)
# One panel per d = d_h: every run of the converged arm (circles; filled = certified, hollow = not), its
# seed mean (line) and full-table accuracy (dashed); the same runs at the 64-epoch budget (protocol arm,
# triangles, dotted seed mean). The dotted black line is the check's fit of the paper's law a + b·H on the
# unsaturated configurations it decided on (drawn where it had ≥ 4 H; when configurations with an
# uncertified run were withheld, without them); `linear_in_H` decides it against the rival a + c·√H on the
# same runs. The
# two bounds are the paper's φ(H·d_h + d) and the earlier multi-head bound φ(H(d_h − 1) + 1); crosses
# are the published accuracies where the spec lists them (the authors' 64-epoch protocol: compare them with
# the triangles).

# %%
a1 = tables["A1"]
fits_a1 = verdicts_module.heads_fits(a1)
decided_a1 = decided_on("linear_in_H", a1)
fits_linear = verdicts_module.heads_fits(decided_a1)  # the fits linear_in_H decided on
dims = sorted(a1["d"].unique())
ncols = min(3, len(dims))
nrows = int(np.ceil(len(dims) / ncols))
fig, axes = plotting.figure(ncols, nrows, width=4.6, height=3.6, sharey=True)
axes = np.atleast_1d(axes)
for ax, d in zip(axes.flat, dims):
    runs_d = a1[a1["d"] == d]
    n = int(runs_d["N"].iloc[0])
    draw_protocol(ax, matching(protocol.get("A1"), runs_d), "heads", color="C0")
    draw_runs(ax, runs_d, "heads", color="C0")
    cell = runs_d.groupby("heads")["acc_running"].mean()
    ax.plot(cell.index, cell, lw=1.5, color="C0", label="running acc (paper's metric), converged arm, seed mean")
    table = runs_d.groupby("heads")["acc_table"].mean()
    ax.plot(table.index, table, ls="--", marker="s", ms=4, color="C1", label="full-table acc")
    fit = fits_linear.get(int(d))
    if fit is not None and fit.configs >= verdicts_module.MIN_POINTS and np.isfinite(fit.acc_slope):
        used = verdicts_module.unsaturated(decided_a1[decided_a1["d"] == d])["heads"]
        hs = np.array([used.min(), used.max()], dtype=float)
        ax.plot(hs, fit.acc_intercept + fit.acc_slope * hs, color="black", ls=":", lw=2,
                label=f"check's fit a + b·H (linear_in_H: {verdict('linear_in_H')})")
    h = np.linspace(cell.index.min(), cell.index.max(), 100)
    ax.plot(h, accuracy_bound(h * d + d, n), color="C2", lw=1.2, label="bound φ(H·d_h + d)")
    ax.plot(h, accuracy_bound(h * (d - 1) + 1, n), color="gray", lw=1.2, ls=":", label="earlier bound φ(H(d_h−1)+1)")
    ax.axhline(1 / n, color="black", lw=1, ls="-.", label="chance 1/N")
    published = verdicts_module.PUBLISHED_A1.get(int(d)) if n == 50 else None
    if published:
        ax.scatter(list(published), list(published.values()), marker="x", color="black", s=40, zorder=5,
                   label="published")
    plotting.label(ax, f"d = d_h = {d}, N = {n}", "number of heads H", "accuracy")
    ax.set_xlim(0, max(a1["heads"]) + 1)
    if ax.get_legend():
        ax.get_legend().remove()
for ax in list(axes.flat)[len(dims):]:
    ax.set_visible(False)
legend = {h.get_label(): h for h in RUN_HANDLES}
for ax in axes.flat:  # union over panels: not every panel has published points
    for handle, text in zip(*ax.get_legend_handles_labels()):
        legend.setdefault(text, handle)
fig.legend(list(legend.values()), list(legend), loc="upper center", ncol=3, bbox_to_anchor=(0.5, 0.0), fontsize="small")
fig.suptitle("A1: accuracy vs number of heads (circles = converged arm, triangles = protocol arm at the budget; "
             "hollow = not certified)", fontweight="bold")
plotting.save(fig, figures_dir, CLAIM, "accuracy_vs_heads")

# %%
cells_a1 = means["A1"][["d", "heads", "n_seeds", "acc_running", "acc_table", "X_running", "X_table", "bound_X"]]
if protocol.get("A1") is not None:  # beside it, the protocol arm's seed means
    cells_a1 = cells_a1.merge(verdicts_module.seed_means(protocol["A1"])[["d", "heads", "acc_running", "acc_table"]],
                              on=["d", "heads"], suffixes=("", "_protocol"))
plotting.save_table(cells_a1, tables_dir, CLAIM, "accuracy_vs_heads")
cells_a1.round(3)

# %% [markdown]
# ### Published values at matching configurations
# The spec lists the authors' accuracies for d = 6, 8, 10 (N = 50), the d = 2 experiment (A6) and one
# A5 budget. Ours are seed means of the same running metric on the protocol arm (the authors' schedule),
# paired by `published_match` itself; its
# tolerance (0.03 for A1, 0.10 for A6, 0.05 for A5) is reasoned from the seed spread in the check's
# `tolerance` field.

# %%
published_cmp = pd.DataFrame(
    [{"configuration": name, "experiment": exp, "published": pub, "ours_running": ours, "difference": ours - pub,
      "tolerance": verdicts_module.PUBLISHED_TOL[exp], "within": abs(ours - pub) <= verdicts_module.PUBLISHED_TOL[exp]}
     for name, exp, pub, ours in verdicts_module.published_pairs(protocol.get("A1"), protocol.get("A6"), protocol.get("A5"))],
    columns=["configuration", "experiment", "published", "ours_running", "difference", "tolerance", "within"])
plotting.save_table(published_cmp, tables_dir, CLAIM, "published_comparison")
published_cmp.round(3)

# %% [markdown]
# ## A2 — accuracy vs head dimension d_h (Fig. 1b)
# d = 10, H = 20. Both layouts are shown, one marker per run (hollow = not certified). The two curves
# are the check's fits on the reference `shared` layout, one point per run (when it withheld the
# configurations with an uncertified run, on the rest, over their range of d_h): the paper's law a + c·d_h²
# and the rival a + b·d_h; `dh_quadratic` decides by their Akaike weight.
# Note the layout switch at d_h = d = 10: there the heads act on the embedding directly, while every
# d_h < d goes through the shared d → d_h → d projections (the reference layout), so the last point
# is not from quite the same architecture as the others. The verdict also reports the best exponent
# with and without an intercept, because "quadratic" depends strongly on how the fit is set up.
# Compare the two layouts: the convex (≈ quadratic) rise belongs to the shared-projection layout, whose
# summed attention update has rank ≤ d_h; with a per-head output projection the accuracy rises fast and
# saturates in d_h instead, so the d_h² law is a property of the reference code's layout.

# %%
if not missing("A2", "accuracy_vs_dhead"):
    a2 = tables["A2"]
    fig, ax = plotting.figure(width=6.0, height=4.3)
    for i, layout in enumerate([x for x in ("shared", "per_head") if x in set(a2["layout"])]):
        grp = a2[a2["layout"] == layout]
        draw_protocol(ax, matching(protocol.get("A2"), grp), "d_head", color=f"C{i}")
        draw_runs(ax, grp, "d_head", color=f"C{i}")
        cell = grp.groupby("d_head")["acc_running"].mean()
        ax.plot(cell.index, cell, color=f"C{i}", lw=1.5, label=f"{layout} layout (seed mean)")
    decided_a2 = decided_on("dh_quadratic", a2)
    laws = verdicts_module.head_dim_laws(decided_a2)  # the fits dh_quadratic decided on
    shared_runs = verdicts_module.shared(decided_a2)
    x = np.linspace(shared_runs["d_head"].min(), shared_runs["d_head"].max(), 100)
    if laws is not None and len(laws.params_claimed) == 2:
        (a, c), (a_lin, b) = laws.params_claimed, laws.params_rival
        ax.plot(x, a + c * x**2, color="black", ls=":", lw=2, label=f"paper's law a + c·d_h² (weight {laws.weight_claimed:.2f})")
        ax.plot(x, a_lin + b * x, color="gray", ls="--", label="rival a + b·d_h")
    n, d, heads = int(a2["N"].iloc[0]), int(a2["d"].iloc[0]), int(a2["heads"].iloc[0])
    x_all = np.linspace(a2["d_head"].min(), a2["d_head"].max(), 100)
    ax.plot(x_all, accuracy_bound(heads * x_all + d, n), color="C2", lw=1.2, label="bound φ(H·d_h + d)")
    ax.axhline(1 / n, color="black", lw=1, ls="-.", label="chance 1/N")
    plotting.label(ax, f"A2: accuracy vs head dimension (N={n}, d={d}, H={heads}); dh_quadratic: {verdict('dh_quadratic')}",
                   "head dimension d_h", "accuracy")
    ax.legend(handles=RUN_HANDLES + ax.get_legend_handles_labels()[0], loc="upper left", fontsize="small")
    plotting.save(fig, figures_dir, CLAIM, "accuracy_vs_dhead")

# %% [markdown]
# ## A3 — accuracy vs embedding dimension at fixed d_h (Fig. 2a)
# d_h = 10, H = 20, one marker per run (hollow = not certified). The dotted vertical line marks d = d_h.
# The check `two_regimes_d` fits one broken line with its knee at d = d_h (slopes b₁ below, b₂ above)
# and decides on the interval of b₁ − 5·b₂; the one-line rival a + b·d is drawn beside it. For d < d_h
# the shared projection maps d up to d_h; d = d_h is the only point without the shared projections
# (see A2), which is why it can stand above its neighbours.

# %%
if not missing("A3", "accuracy_vs_d"):
    a3 = tables["A3"]
    a3s = verdicts_module.shared(a3)
    fig, ax = plotting.figure(width=6.0, height=4.3)
    draw_protocol(ax, matching(protocol.get("A3"), a3s), "d", color="C0")
    draw_runs(ax, a3s, "d", color="C0")
    ax.plot(a3s.groupby("d")["acc_running"].mean(), color="C0", lw=1.5, label="running acc, converged arm (seed mean)")
    ax.plot(a3s.groupby("d")["acc_table"].mean(), ls="--", marker="s", ms=4, color="C1", label="full-table acc")
    d_head, n, heads = int(a3["d_head"].iloc[0]), int(a3["N"].iloc[0]), int(a3["heads"].iloc[0])
    fits = verdicts_module.regimes(a3)
    xs = np.linspace(a3s["d"].min(), a3s["d"].max(), 100)
    if fits is not None and fits[0].coefficients:
        (a, b1, b2), line = fits[0].coefficients, fits[1]
        ax.plot(xs, a + b1 * np.minimum(xs, d_head) + b2 * np.maximum(xs - d_head, 0), color="black", ls=":", lw=2,
                label=f"two regimes: slopes {b1:.4f} / {b2:.4f} per dim")
        if len(line.params_rival) == 2:
            ax.plot(xs, line.params_rival[0] + line.params_rival[1] * xs, color="gray", ls="--", label="rival: one line")
    ax.axvline(d_head, color="gray", ls=":", lw=1, label=f"d = d_h = {d_head}")
    ax.axhline(1 / n, color="black", lw=1, ls="-.", label="chance 1/N")
    plotting.label(ax, f"A3: accuracy vs d (N={n}, d_h={d_head}, H={heads}); two_regimes_d: {verdict('two_regimes_d')}",
                   "embedding dimension d", "accuracy")
    ax.legend(handles=RUN_HANDLES + ax.get_legend_handles_labels()[0], loc="lower right", fontsize="small")
    plotting.save(fig, figures_dir, CLAIM, "accuracy_vs_d")

# %% [markdown]
# ## A4 — gain per head vs d = d_h (Fig. 2b, derived from A1)
# For each d the check's slope of accuracy in H (unsaturated configurations, one point per run) is
# converted into associations per head, ΔX/ΔH = slope·N²/(1 − 1/N), and plotted log-log against d with
# the fitted power law of `slope_exponent` (its exponent and 95 % interval). The rival, ΔX/ΔH ∝ d_h
# (exponent 1, the bound's slope d_h), is drawn as the bound's slope itself. A d is hollow when a run it
# rests on failed the certificate; when the check withheld the configurations with such a run, each d it
# used is drawn from (and filled on) the rest, and the others are hollow and left out of the fit.

# %%
decided_a4 = decided_on("slope_exponent", a1)
fits_a4 = verdicts_module.heads_fits(decided_a4)  # the fits slope_exponent decided on
exponent, acc_slopes = verdicts_module.gain_exponent(fits_a4)


def a4_point(d, full):
    """One d's ΔX/ΔH: the check's own fit where it used this d, else the fit on every run (marked by its runs)."""
    used = fits_a4.get(d)
    f, runs_d = (used, decided_a4) if used is not None and used.configs >= verdicts_module.MIN_POINTS else (full, a1)
    return {"d": d, "associations_per_head": f.gain.slope, "interval_low": f.gain.low, "interval_high": f.gain.high,
            "acc_slope": f.acc_slope, "configs": f.configs,
            "certified": bool(verdicts_module.certified(runs_d[runs_d["d"] == d]).all())}


slopes = pd.DataFrame([a4_point(d, f) for d, f in fits_a1.items()])
fig, ax = plotting.figure(width=5.6, height=4.2)
good = slopes[np.isfinite(slopes["associations_per_head"]) & (slopes["associations_per_head"] > 0)]
for ok, grp in good.groupby("certified"):
    ax.errorbar(grp["d"], grp["associations_per_head"],
                yerr=[grp["associations_per_head"] - grp["interval_low"], grp["interval_high"] - grp["associations_per_head"]],
                ls="", marker="o", capsize=3, color="C0", mfc="C0" if ok else "none",
                label="measured ΔX/ΔH (95 % interval)" + ("" if ok else ", runs NOT certified"))
if np.isfinite(exponent.slope) and len(acc_slopes):
    n_tok = int(a1["N"].iloc[0])
    xs = np.linspace(min(acc_slopes), max(acc_slopes), 50)
    ax.plot(xs, np.exp(exponent.intercept) * xs**exponent.slope * verdicts_module.per_head(n_tok), ls="--",
            color="black", label=f"check's fit ∝ d^{exponent.slope:.2f} [{exponent.low:.2f}, {exponent.high:.2f}]")
ax.plot(slopes["d"], slopes["d"], color="C2", lw=1.2, label="bound's slope d_h (rival exponent 1)")
plotting.label(ax, f"A4: associations gained per head; slope_exponent: {verdict('slope_exponent')}", "d = d_h",
               "associations per head ΔX/ΔH", logx=True, logy=True)
ax.xaxis.set_major_formatter(ScalarFormatter())  # plain numbers on the log axes
ax.xaxis.set_minor_formatter(NullFormatter())
ax.set_xticks(sorted(slopes["d"]))
ax.yaxis.set_major_formatter(ScalarFormatter())
ax.yaxis.set_minor_formatter(NullFormatter())
ax.legend(fontsize="small")
plotting.save(fig, figures_dir, CLAIM, "slope_vs_d")
slopes.round(3)

# %% [markdown]
# ## A5 — AoT vs one head + MLP at equal parameter count (Fig. 3)
# The AoT has H heads (4d²H non-embedding parameters); the baseline has one head and an MLP of width
# 2d(H − 1), so both have the same weight count (the MLP points sit w parameters further right: its
# hidden bias). Same data budget for both; the MLP's learning rate decays to 10⁻⁴ as in the reference code.
# One marker per run (hollow = not certified), lines through the seed means.
#
# What the check `aot_beats_mlp` tests: the paper's *sentence* that AoTs are better optimized for
# memorization than an MLP at equal parameters, per budget by the interval of the difference over seeds.
# The authors' own experiment-5 data has the MLP ahead (crosses: d = 10, H = 16, AoT ≈ 0.30, MLP ≈ 0.50),
# and so do our runs; a "not reproduced" there agrees with the authors' measurements and disagrees only
# with their sentence. `published_match` compares our numbers with that data.

# %%
if not missing("A5", "aot_vs_mlp"):
    a5_runs = tables["A5"]
    a5 = means["A5"]
    fig, ax = plotting.figure(width=6.0, height=4.3)
    for i, ((model, d), grp) in enumerate(a5.groupby(["model", "d"])):
        mine = a5_runs[(a5_runs["model"] == model) & (a5_runs["d"] == d)]
        draw_protocol(ax, matching(protocol.get("A5"), mine), "params_nonembedding", color=f"C{i}")
        draw_runs(ax, mine, "params_nonembedding", color=f"C{i}")
        ax.plot(grp["params_nonembedding"], grp["acc_running"], color=f"C{i}", ls="-" if model == "aot" else "--",
                label=f"{'AoT (H heads)' if model == 'aot' else 'one head + MLP'}, d={d}")
    n = int(a5["N"].iloc[0])
    if n == 70 and (a5["d"] == 10).any():  # the authors' published pair is for N = 70, d = 10, H = 16
        budget = 4 * 10**2 * 16
        for model, marker in (("aot", "x"), ("mlp", "+")):
            ax.scatter([budget], [verdicts_module.PUBLISHED_A5_H16[model]], marker=marker, s=80, color="black",
                       zorder=5, label=f"authors' data, {'AoT' if model == 'aot' else 'MLP'} (d=10, H=16)")
    ax.axhline(1 / n, color="black", lw=1, ls="-.", label="chance 1/N")
    plotting.label(ax, f"A5: memorisation vs parameters (N={n}); aot_beats_mlp: {verdict('aot_beats_mlp')}",
                   "non-embedding parameters", "running accuracy")
    ax.legend(handles=RUN_HANDLES + ax.get_legend_handles_labels()[0], fontsize="small")
    plotting.save(fig, figures_dir, CLAIM, "aot_vs_mlp")
    mlp_table = a5[["model", "d", "heads", "mlp_width", "params_nonembedding", "acc_running", "acc_table", "n_seeds"]]
    plotting.save_table(mlp_table, tables_dir, CLAIM, "aot_vs_mlp")
    display(mlp_table.round(3))

# %% [markdown]
# ## A6 — d = d_h = 2 against the bound (appendix)
# N = 10, one marker per run (jittered; hollow = not certified) and the seed mean (line). The paper
# reports a slope about 1.3–1.5× the bound's; `d2_slope_ratio` decides on the slope's interval.

# %%
if not missing("A6", "d2_bound"):
    a6 = tables["A6"]
    n = int(a6["N"].iloc[0])
    fig, ax = plotting.figure(width=6.0, height=4.3)
    draw_protocol(ax, protocol.get("A6"), "heads", color="C0", jitter=0.4, size=10)
    draw_runs(ax, a6, "heads", color="C0", jitter=0.4, size=10)
    cell = a6.groupby("heads")["acc_running"].mean()
    ax.plot(cell.index, cell, marker="o", color="C0", label="running acc, converged arm (seed mean)")
    ax.plot(a6.groupby("heads")["acc_table"].mean(), ls="--", marker="s", ms=4, color="C1", label="full-table acc")
    h = np.linspace(cell.index.min(), cell.index.max(), 100)
    d = int(a6["d"].iloc[0])
    ax.plot(h, accuracy_bound(h * d + d, n), color="C2", label="bound φ(H·d_h + d)")
    ax.plot(h, accuracy_bound(h * (d - 1) + 1, n), color="gray", ls=":", label="earlier bound φ(H(d_h−1)+1)")
    ax.scatter(list(verdicts_module.PUBLISHED_A6), list(verdicts_module.PUBLISHED_A6.values()), marker="x",
               color="black", zorder=5, label="published")
    ax.axhline(1 / n, color="black", lw=1, ls="-.", label="chance 1/N")
    plotting.label(ax, f"A6: d = d_h = {d}, N = {n}; d2_bound: {verdict('d2_bound')}, d2_slope_ratio: "
                   f"{verdict('d2_slope_ratio')}", "number of heads H", "accuracy")
    ax.legend(handles=RUN_HANDLES + ax.get_legend_handles_labels()[0], fontsize="small")
    plotting.save(fig, figures_dir, CLAIM, "d2_bound")

# %% [markdown]
# ## Laws beside the paper's statements and their rivals
# Each row restates a law, the rival it must beat, what the check measured on this run and its verdict
# (from the verdict JSON, so the table and `results/claims.md` agree).

# %%
statements = {
    "above_bound": "stores ≥ H·d_h + d associations",
    "linear_in_H": "accuracy linear in H before saturation",
    "per_head_gain": "each head adds ≥ d_h associations",
    "dh_quadratic": "accuracy ≈ quadratic in d_h",
    "two_regimes_d": "steep in d for d ≤ d_h, flat after",
    "slope_exponent": "per-head slope grows like d^p (text: quadratic; script: cubic)",
    "d2_bound": "d = 2 accuracy ≥ φ(2H + 2)",
    "d2_slope_ratio": "d = 2 slope ≈ 1.3–1.5× the bound's",
    "aot_linear_params": "AoT accuracy linear in parameters",
    "aot_beats_mlp": "AoT ≥ MLP at equal parameters",
    "published_match": "our accuracies match the authors'",
}
laws = pd.DataFrame([{"check": c["id"], "paper": statements[c["id"]], "rival": c.get("rival", ""),
                      "measured": json.dumps(c["measured"]), "verdict": c["verdict"], "reason": c.get("reason", "")}
                     for c in verdicts["checks"] if c["id"] in statements])
plotting.save_table(laws, tables_dir, CLAIM, "fitted_laws")
laws
