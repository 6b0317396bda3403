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
# Fits that decide a verdict need ≥ 4 points (≥ 3 values of d for the per-d laws) and runs of ≥ 1000
# steps; otherwise the verdict is "inconclusive".

# %% tags=["parameters"]
results_dir = "results"
tier = "default"
runs = ""  # the rule's run CSVs (JSON list); empty: every CSV under results/aot_memorization/runs

# %%
import json

import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import display
from matplotlib.ticker import NullFormatter, ScalarFormatter

from attncap import plotting
from attncap.claims import linear_fit
from attncap.claims import aot_memorization as verdicts_module
from attncap.notebook import open_claim
from attncap.tasks.aot_memorization import accuracy_bound

CLAIM = "aot_memorization"
claim = open_claim(CLAIM, results_dir, runs)
tables, verdicts, missing = claim.tables, claim.verdicts, claim.missing
figures_dir, tables_dir = claim.figures_dir, claim.tables_dir
means = {k: verdicts_module.seed_means(v) for k, v in tables.items()}
claim.checks()

# %% [markdown]
# ## A1 — accuracy grows linearly in the number of heads (Fig. 1a)
# One panel per d = d_h. Solid: running accuracy (mean over seeds, bars = min–max over seeds);
# dashed: full-table accuracy. The two bounds are the paper's φ(H·d_h + d) and the earlier multi-head
# bound φ(H(d_h − 1) + 1); crosses are the published accuracies where the spec lists them.

# %%
a1 = tables["A1"]
dims = sorted(a1["d"].unique())
ncols = min(3, len(dims))
nrows = int(np.ceil(len(dims) / ncols))
fig, axes = plotting.figure(ncols, nrows, width=4.6, height=3.6, sharey=True)
axes = np.atleast_1d(axes)
for ax, d in zip(axes.flat, dims):
    runs_d = a1[a1["d"] == d]
    n = int(runs_d["N"].iloc[0])
    cell = runs_d.groupby("heads")["acc_running"].agg(["mean", "min", "max"])
    ax.errorbar(cell.index, cell["mean"], yerr=[cell["mean"] - cell["min"], cell["max"] - cell["mean"]],
                marker="o", lw=1.8, capsize=3, label="running acc (paper's metric)")
    table = runs_d.groupby("heads")["acc_table"].mean()
    ax.plot(table.index, table, ls="--", marker="s", ms=4, label="full-table acc")
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
    ax.get_legend().remove()
for ax in list(axes.flat)[len(dims):]:
    ax.set_visible(False)
legend = {}
for ax in axes.flat:  # union over panels: not every panel has published points
    for handle, text in zip(*ax.get_legend_handles_labels()):
        legend.setdefault(text, handle)
fig.legend(list(legend.values()), list(legend), loc="upper center", ncol=3, bbox_to_anchor=(0.5, 0.0), fontsize="small")
fig.suptitle("A1: accuracy vs number of heads (seed mean, bars = seed range)", fontweight="bold", y=1.02)
fig.tight_layout()
plotting.save(fig, figures_dir, CLAIM, "accuracy_vs_heads")

# %%
cells_a1 = means["A1"][["d", "heads", "n_seeds", "acc_running", "acc_table", "X_running", "X_table", "bound_X"]]
plotting.save_table(cells_a1, tables_dir, CLAIM, "accuracy_vs_heads")
cells_a1.round(3)

# %% [markdown]
# ### Published values at matching configurations
# The spec lists the authors' accuracies for d = 6, 8, 10 (N = 50) and for the d = 2 experiment (A6).
# Ours are seed means of the same running metric; the tolerance is 0.03 (A1) and 0.06 (A6).

# %%
rows = []
for name, frame, table in (("A1", means.get("A1"), verdicts_module.PUBLISHED_A1),
                           ("A6", means.get("A6"), {2: verdicts_module.PUBLISHED_A6})):
    if frame is None:
        continue
    for _, r in frame.iterrows():
        pub = table.get(int(r["d"]), {}).get(int(r["heads"]))
        if pub is not None and int(r["N"]) == (50 if name == "A1" else 10):
            rows.append({"experiment": name, "N": int(r["N"]), "d": int(r["d"]), "H": int(r["heads"]),
                         "published": pub, "ours_running": r["acc_running"], "ours_table": r["acc_table"],
                         "difference": r["acc_running"] - pub, "seeds": int(r["n_seeds"])})
published_cmp = pd.DataFrame(rows, columns=["experiment", "N", "d", "H", "published", "ours_running",
                                            "ours_table", "difference", "seeds"])
plotting.save_table(published_cmp, tables_dir, CLAIM, "published_comparison")
published_cmp.round(3)

# %% [markdown]
# ## A2 — accuracy vs head dimension d_h (Fig. 1b)
# d = 10, H = 20. Both layouts are shown; fits (on the reference `shared` layout) compare
# acc ~ a + b·d_h with acc ~ a + c·d_h². Points are seed means, bars the seed range.
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
        cell = grp.groupby("d_head")["acc_running"].agg(["mean", "min", "max"])
        ax.errorbar(cell.index, cell["mean"], yerr=[cell["mean"] - cell["min"], cell["max"] - cell["mean"]],
                    marker="o", capsize=3, color=f"C{i}", label=f"{layout} layout (running acc)")
    shared = means["A2"][means["A2"]["layout"] == "shared"]
    x = np.linspace(shared["d_head"].min(), shared["d_head"].max(), 100)
    lin = linear_fit(shared["d_head"], shared["acc_running"])
    quad = linear_fit(shared["d_head"] ** 2, shared["acc_running"])
    if np.isfinite(lin["slope"]):
        ax.plot(x, lin["intercept"] + lin["slope"] * x, color="gray", ls="--", label=f"linear fit (R²={lin['r2']:.3f})")
        ax.plot(x, quad["intercept"] + quad["slope"] * x**2, color="black", ls=":",
                label=f"quadratic fit a+c·d_h² (R²={quad['r2']:.3f})")
    n, d, heads = int(a2["N"].iloc[0]), int(a2["d"].iloc[0]), int(a2["heads"].iloc[0])
    ax.plot(x, accuracy_bound(heads * x + d, n), color="C2", lw=1.2, label="bound φ(H·d_h + d)")
    ax.axhline(1 / n, color="black", lw=1, ls="-.", label="chance 1/N")
    plotting.label(ax, f"A2: accuracy vs head dimension (N={n}, d={d}, H={heads})", "head dimension d_h", "accuracy")
    ax.legend(loc="lower right", fontsize="small")
    plotting.save(fig, figures_dir, CLAIM, "accuracy_vs_dhead")

# %% [markdown]
# ## A3 — accuracy vs embedding dimension at fixed d_h (Fig. 2a)
# d_h = 10, H = 20. The dotted vertical line marks d = d_h; separate lines are fitted to d ≤ d_h and
# d ≥ d_h (the "two regimes" the paper describes). For d < d_h the shared projection maps d up to d_h;
# d = d_h is the only point without the shared projections (see A2), which is why it can stand above
# its neighbours.

# %%
if not missing("A3", "accuracy_vs_d"):
    a3 = tables["A3"]
    a3s = a3[a3["layout"] == "shared"]
    cell = a3s.groupby("d")["acc_running"].agg(["mean", "min", "max"])
    fig, ax = plotting.figure(width=6.0, height=4.3)
    ax.errorbar(cell.index, cell["mean"], yerr=[cell["mean"] - cell["min"], cell["max"] - cell["mean"]],
                marker="o", capsize=3, label="running acc")
    ax.plot(a3s.groupby("d")["acc_table"].mean(), ls="--", marker="s", ms=4, label="full-table acc")
    d_head, n, heads = int(a3["d_head"].iloc[0]), int(a3["N"].iloc[0]), int(a3["heads"].iloc[0])
    for side, sel, color in (("d ≤ d_h", cell.index <= d_head, "C2"), ("d ≥ d_h", cell.index >= d_head, "C3")):
        fit = linear_fit(cell.index[sel], cell["mean"][sel])
        if np.isfinite(fit["slope"]):
            xs = np.array([cell.index[sel].min(), cell.index[sel].max()])
            ax.plot(xs, fit["intercept"] + fit["slope"] * xs, color=color, ls=":", lw=2,
                    label=f"fit {side}: slope {fit['slope']:.4f}/dim")
    ax.axvline(d_head, color="gray", ls=":", lw=1, label=f"d = d_h = {d_head}")
    ax.axhline(1 / n, color="black", lw=1, ls="-.", label="chance 1/N")
    plotting.label(ax, f"A3: accuracy vs embedding dimension (N={n}, d_h={d_head}, H={heads})",
                   "embedding dimension d", "accuracy")
    plotting.save(fig, figures_dir, CLAIM, "accuracy_vs_d")

# %% [markdown]
# ## A4 — gain per head vs d = d_h (Fig. 2b, derived from A1)
# For each d the slope of accuracy in H (unsaturated points) is converted into associations per head,
# ΔX/ΔH = slope·N²/(1 − 1/N), and plotted log-log against d with the fitted power law. The bound's
# slope is d_h, drawn for reference.

# %%
slopes = []
for d, grp in means["A1"].groupby("d"):
    fit = verdicts_module.heads_slope(verdicts_module.unsaturated(grp))
    slopes.append({"d": d, "associations_per_head": fit["associations_per_head"], "acc_slope": fit["slope"],
                   "r2": fit["r2"], "points": fit["n"]})
slopes = pd.DataFrame(slopes)
good = slopes[np.isfinite(slopes["associations_per_head"]) & (slopes["associations_per_head"] > 0)]
fig, ax = plotting.figure(width=5.6, height=4.2)
ax.plot(good["d"], good["associations_per_head"], marker="o", label="measured ΔX/ΔH")
power = verdicts_module.power_fit(good["d"], good["associations_per_head"], intercept=False)
if np.isfinite(power["exponent"]):
    c = np.exp(np.mean(np.log(good["associations_per_head"]) - power["exponent"] * np.log(good["d"])))
    xs = np.linspace(good["d"].min(), good["d"].max(), 50)
    ax.plot(xs, c * xs ** power["exponent"], ls="--", color="black",
            label=f"fit ∝ d^{power['exponent']:.2f} (R²={power['r2']:.3f})")
ax.plot(slopes["d"], slopes["d"], color="C2", lw=1.2, label="bound's slope d_h")
plotting.label(ax, "A4: associations gained per head", "d = d_h", "associations per head ΔX/ΔH",
               logx=True, logy=True)
ax.xaxis.set_major_formatter(ScalarFormatter())  # plain numbers on the log axes
ax.xaxis.set_minor_formatter(NullFormatter())
ax.set_xticks(sorted(slopes["d"]))
ax.yaxis.set_major_formatter(ScalarFormatter())
ax.yaxis.set_minor_formatter(NullFormatter())
plotting.save(fig, figures_dir, CLAIM, "slope_vs_d")
slopes.round(3)

# %% [markdown]
# ## A5 — AoT vs one head + MLP at equal parameter count (Fig. 3)
# The AoT has H heads (4d²H non-embedding parameters); the baseline has one head and an MLP of width
# 2d(H − 1), so both have the same weight count (the MLP points sit w parameters further right: its
# hidden bias). Same data budget for both; the MLP's learning rate decays to 10⁻⁴ as in the reference code.
#
# What the check `aot_beats_mlp` tests: the paper's *sentence* that AoTs are better optimized for
# memorization than an MLP at equal parameters. The authors' own experiment-5 data has the MLP ahead
# (crosses: d = 10, H = 16, AoT ≈ 0.30, MLP ≈ 0.50), and so do our runs; a "not reproduced" there
# agrees with the authors' measurements and disagrees only with their sentence. `published_match`
# compares our numbers with that data.

# %%
if not missing("A5", "aot_vs_mlp"):
    a5 = means["A5"]
    fig, ax = plotting.figure(width=6.0, height=4.3)
    for (model, d), grp in a5.groupby(["model", "d"]):
        ax.plot(grp["params_nonembedding"], grp["acc_running"], marker="o" if model == "aot" else "s",
                ls="-" if model == "aot" else "--", label=f"{'AoT (H heads)' if model == 'aot' else 'one head + MLP'}, d={d}")
    n = int(a5["N"].iloc[0])
    if n == 70 and (a5["d"] == 10).any():  # the authors' published pair is for N = 70, d = 10, H = 16
        budget = 4 * 10**2 * 16
        for model, marker in (("aot", "x"), ("mlp", "+")):
            ax.scatter([budget], [verdicts_module.PUBLISHED_A5_H16[model]], marker=marker, s=80, color="black",
                       zorder=5, label=f"authors' data, {'AoT' if model == 'aot' else 'MLP'} (d=10, H=16)")
    ax.axhline(1 / n, color="black", lw=1, ls="-.", label="chance 1/N")
    plotting.label(ax, f"A5: memorisation vs parameters (N={n})", "non-embedding parameters", "running accuracy")
    plotting.save(fig, figures_dir, CLAIM, "aot_vs_mlp")
    mlp_table = a5[["model", "d", "heads", "mlp_width", "params_nonembedding", "acc_running", "acc_table", "n_seeds"]]
    plotting.save_table(mlp_table, tables_dir, CLAIM, "aot_vs_mlp")
    display(mlp_table.round(3))

# %% [markdown]
# ## A6 — d = d_h = 2 against the bound (appendix)
# N = 10, one point per seed (light) and the seed mean (line). The paper reports a slope about
# 1.3–1.5× the bound's.

# %%
if not missing("A6", "d2_bound"):
    a6 = tables["A6"]
    n = int(a6["N"].iloc[0])
    fig, ax = plotting.figure(width=6.0, height=4.3)
    sns.stripplot(data=a6, x="heads", y="acc_running", native_scale=True, color="C0", alpha=0.35, size=4, ax=ax,
                  jitter=0.3)
    cell = a6.groupby("heads")["acc_running"].mean()
    ax.plot(cell.index, cell, marker="o", color="C0", label="running acc (seed mean)")
    ax.plot(a6.groupby("heads")["acc_table"].mean(), ls="--", marker="s", ms=4, color="C1", label="full-table acc")
    h = np.linspace(cell.index.min(), cell.index.max(), 100)
    d = int(a6["d"].iloc[0])
    ax.plot(h, accuracy_bound(h * d + d, n), color="C2", label="bound φ(H·d_h + d)")
    ax.plot(h, accuracy_bound(h * (d - 1) + 1, n), color="gray", ls=":", label="earlier bound φ(H(d_h−1)+1)")
    ax.scatter(list(verdicts_module.PUBLISHED_A6), list(verdicts_module.PUBLISHED_A6.values()), marker="x",
               color="black", zorder=5, label="published")
    ax.axhline(1 / n, color="black", lw=1, ls="-.", label="chance 1/N")
    plotting.label(ax, f"A6: d = d_h = {d}, N = {n}", "number of heads H", "accuracy")
    plotting.save(fig, figures_dir, CLAIM, "d2_bound")

# %% [markdown]
# ## Fitted laws beside the paper's statements
# Each row restates a law, the paper's wording and what the fit measured on this run (from the
# verdict JSON, so the table and `results/claims.md` agree).

# %%
statements = {
    "linear_in_H": "accuracy linear in H before saturation",
    "per_head_gain": "each head adds ≥ d_h associations",
    "dh_quadratic": "accuracy ≈ quadratic in d_h",
    "two_regimes_d": "steep in d for d ≤ d_h, flat after",
    "slope_exponent": "per-head slope grows like d^p (text: quadratic; script: cubic)",
    "d2_slope_ratio": "d = 2 slope ≈ 1.3–1.5× the bound's",
    "aot_linear_params": "AoT accuracy linear in parameters",
    "aot_beats_mlp": "AoT ≥ MLP at equal parameters",
}
laws = pd.DataFrame([{"check": c["id"], "paper": statements[c["id"]], "measured": json.dumps(c["measured"]),
                      "verdict": c["verdict"]} for c in verdicts["checks"] if c["id"] in statements])
plotting.save_table(laws, tables_dir, CLAIM, "fitted_laws")
laws
