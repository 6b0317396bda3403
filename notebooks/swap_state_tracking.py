# %% [markdown]
# # Claim 5: tracking swaps of n objects — Transformer vs DeltaFormer (and DeltaNet)
#
# **Claim** (Zhong, Xu, Ao, Shi 2025, arXiv 2505.19488, Sec. 3.2): a standard Transformer tracks the
# exchanges of at most about 5 objects, while DeltaFormer tracks up to 128, because DeltaFormer reaches NC¹
# while a fixed-depth Transformer stays in TC⁰. Tracking swaps of n objects is the word problem of the
# symmetric group S_n, solvable (in TC⁰) for n ≤ 4 and NC¹-complete for n ≥ 5, so the expected boundary is
# between n = 4 and n = 5, visible as a failure to generalize to longer sequences.
#
# **Protocol (this project's; the paper's exact task format and sizes are not available):**
#
# * n boxes, object i starts in box i; each step is a uniformly random swap (a, b), a ≠ b, written as two
#   tokens `a` and `n + b` (separate token ids for the first and second box, so models without positional
#   information — DeltaNet — can tell them apart). After each swap the target, at the second token, is the
#   object now in box a (n-way classification). Every training sequence also ends with a final query
#   token `2n + c` whose target is the object in box c; that final-query variant is reported separately.
# * Models: pre-LayerNorm blocks [mixer, 4× MLP], rotary embeddings on q and k for the softmax mixers
#   (Transformer, DeltaFormer), no positional signal for DeltaNet. Mixers: the Transformer (causal softmax
#   attention); DeltaFormer, U = (I + diag(β)P)⁻¹V with P the strictly causal row-softmax of k·k scores
#   (κ1 = exp), read out by causal softmax attention (one triangular solve per head); DeltaNet with
#   β ∈ (0, 2) (a swap is exactly the reflection I − 2kkᵀ). β is a per-token, per-head projection
#   β_max·sigmoid(w·x + b); DeltaFormer uses β ∈ (0, 1) (with the exp kernel β ≥ 1 lets ‖u_t‖ grow
#   geometrically; the largest ‖u_t‖ is logged).
# * Training: AdamW, linear warm-up then cosine decay to 10 % of the peak rate, weight decay 0.1,
#   per-model gradient clipping at 1.0, a fresh batch every step; the loss is the mean cross-entropy over
#   all per-step targets and the final query. Models of one n share a model axis; models with the same
#   seed see the same data and start from the same weights (paired comparisons).
# * Evaluation: fresh sequences of 4·T_train swaps. The models are causal, so the per-step accuracy at
#   swap t ≤ L is the same as on a sequence of L swaps: one long evaluation gives T_train, 2·T_train and
#   4·T_train. **Accuracy at test length L** (`acc`, used by every verdict) is the mean per-step accuracy
#   over the last quarter of the swaps, (3L/4, L] — i.e. entirely beyond the training length for 2T and 4T,
#   so in-distribution early steps do not dilute a length-generalization failure. The final-query variant
#   appends one query after the first L swaps of the same sequences.
# * "Solved" means `acc` ≥ 0.95 at 4·T_train.
#
# **Choices where the spec left room** (default tier, sized for about an hour on 2 CPU cores): d_model 32,
# 2 layers, 4 heads (d_head 8 ≥ every n trained, as DeltaNet's construction needs), batch 64, 2000 steps,
# peak learning rate 1e-2 (a 400-step probe at n = 3, T_train = 8 learned faster at 1e-2 than at 3e-3 or
# 1e-3), 200 warm-up steps, cosine decay to 1e-3, 8 × 64 evaluation sequences per test length. S2 (the κ1
# ablation) is trained at n = 5, the first n past the S_4/S_5 boundary. The smoke tier only exercises the
# code (n = 3, T_train = 8, 200 steps); its verdicts mean nothing. The paper tier (GPU) spans
# n = 3…128 with d_model 256, 4 layers, 2 heads (d_head 128) and 20 000 steps of batch 256.

# %% tags=["parameters"]
results_dir = "results"
tier = "default"

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from attncap import plotting
from attncap.claims.evaluate import load_tables

CLAIM = "swap_state_tracking"
results = Path(results_dir)
figures, tables_dir = results / "figures", results / "tables"
plotting.setup()
runs = sorted((results / CLAIM / "runs").glob("*.csv"))
tables = load_tables(runs)
s1, s2 = tables.get("S1", pd.DataFrame()), tables.get("S2", pd.DataFrame())
print(f"tier={tier}; run files: {[p.name for p in runs]}")
print(f"S1: {len(s1)} rows, S2: {len(s2)} rows")


def length_label(frame):
    return frame["test_multiplier"].map(lambda m: "T_train" if m == 1 else f"{m}·T_train")


def one_legend(axes):
    """Keep a single legend, outside the last panel, so no curve is hidden under it."""
    axes = list(np.atleast_1d(axes))
    for ax in axes[:-1]:
        if ax.get_legend():
            ax.get_legend().remove()
    handles, labels = axes[-1].get_legend_handles_labels()
    axes[-1].legend(handles, labels, title="model", loc="upper left", bbox_to_anchor=(1.02, 1.0),
                    fontsize="small", title_fontsize="small")


for frame in (s1, s2):
    if len(frame):
        frame["test length"] = length_label(frame) + " = " + frame["T_test"].astype(str) + " swaps"

# %% [markdown]
# ## Settings of this tier
# One row per experiment: what was trained, for how long, and how long it took (training time is per model).

# %%
keys = ["T_train", "d_model", "layers", "heads", "d_head", "mlp_ratio", "steps", "batch", "lr", "weight_decay",
        "warmup_steps", "eval_batches"]
settings = pd.concat([f.assign(experiment=e) for e, f in (("S1", s1), ("S2", s2)) if len(f)], ignore_index=True)
if len(settings):
    summary = settings.groupby("experiment").agg(
        **{k: (k, "first") for k in keys}, models=("mixer", lambda s: ", ".join(sorted(s.unique()))),
        n_objects=("n_objects", lambda s: ", ".join(map(str, sorted(s.unique())))),
        train_time_per_model_s=("train_time_s", "mean"))
    display(summary.T)

# %% [markdown]
# ## Accuracy against the number of objects
# Each panel is one test length. A model that learned the group operation stays near 1 at every length;
# one that learned a length-bound shortcut falls toward chance (dotted, 1/n) at 2·T_train and 4·T_train.
# The claim predicts the Transformer falls from n = 5 on while DeltaFormer does not. Lines are seed means;
# where there are two seeds each seed is drawn as a point.

# %%
if len(s1):
    lengths = sorted(s1["test_multiplier"].unique())
    fig, axes = plotting.figure(ncols=len(lengths), width=4.6, sharey=True)
    ns = np.array(sorted(s1["n_objects"].unique()))
    for ax, mult in zip(np.atleast_1d(axes), lengths):
        part = s1[s1["test_multiplier"] == mult]
        sns.lineplot(data=part, x="n_objects", y="acc", hue="model", style="model", markers=True, dashes=False,
                     errorbar=None, ax=ax)
        sns.scatterplot(data=part, x="n_objects", y="acc", hue="model", ax=ax, legend=False, alpha=0.4, s=18)
        ax.plot(ns, 1 / ns, ":", marker="_", markersize=16, color="grey", label="chance 1/n")
        if ns.max() >= 5:
            ax.axvspan(4.5, ns.max() + 0.5, color="tab:red", alpha=0.06, label="S_n not solvable (n ≥ 5)")
        ax.set_ylim(0, 1.05)
        ax.set_xticks(ns)
        plotting.label(ax, f"test length {part['test length'].iloc[0]}", "number of objects n",
                       "per-step accuracy (last quarter of swaps)", legend_title="model")
    one_legend(axes)
    fig.suptitle("Swap task: accuracy vs number of objects", y=1.08)
    plotting.save(fig, figures, CLAIM, "accuracy_vs_n")
    plt.show()

# %%
if len(s1):
    acc_table = s1.pivot_table(index=["model", "n_objects"], columns="test_multiplier", values="acc",
                               aggfunc="mean").rename(columns=lambda m: f"acc@{m}T")
    fq = s1.pivot_table(index=["model", "n_objects"], columns="test_multiplier", values="acc_final_query",
                        aggfunc="mean").rename(columns=lambda m: f"final_query@{m}T")
    norms = s1.groupby(["model", "n_objects"])[["max_train_value_norm", "final_train_loss"]].mean()
    seeds = s1.groupby(["model", "n_objects"])["seed"].nunique().rename("seeds")
    accuracy = pd.concat([acc_table, fq, norms, seeds], axis=1).reset_index()
    plotting.save_table(accuracy, tables_dir, CLAIM, "accuracy")
    display(accuracy.round(3))

# %% [markdown]
# ## Accuracy against the position in the sequence
# Per-step accuracy at each swap index on sequences of 4·T_train swaps (seed mean), one panel per n. The
# shaded band is the training length: what happens right of it is length generalization.

# %%
if len(s1):
    longest = s1[s1["test_multiplier"] == s1["test_multiplier"].max()]
    curves = []
    for _, row in longest.iterrows():
        acc = np.array(row["acc_by_position"].split(), dtype=float)
        curves.append(pd.DataFrame({"model": row["model"], "n_objects": row["n_objects"], "seed": row["seed"],
                                    "swap index": np.arange(1, len(acc) + 1), "accuracy": acc}))
    curves = pd.concat(curves, ignore_index=True)
    ns = sorted(curves["n_objects"].unique())
    fig, axes = plotting.figure(ncols=min(4, len(ns)), nrows=int(np.ceil(len(ns) / 4)), width=4.4, sharey=True)
    axes = np.atleast_1d(axes).ravel()
    t_train = int(longest["T_train"].iloc[0])
    for ax, n in zip(axes, ns):
        sns.lineplot(data=curves[curves["n_objects"] == n], x="swap index", y="accuracy", hue="model",
                     errorbar=None, ax=ax, linewidth=1.2)
        ax.axvspan(0.5, t_train + 0.5, color="grey", alpha=0.12, label=f"training length ({t_train})")
        ax.axhline(1 / n, ls=":", color="grey", label="chance 1/n")
        ax.set_ylim(0, 1.05)
        plotting.label(ax, f"n = {n} objects", "swap index t", "per-step accuracy at t", legend_title="model")
    for ax in axes[len(ns):]:
        ax.set_visible(False)
    one_legend(axes[: len(ns)])
    fig.suptitle("Swap task: accuracy vs position (test at 4·T_train)", y=1.08)
    plotting.save(fig, figures, CLAIM, "accuracy_vs_position")
    plt.show()

# %% [markdown]
# ## Kernel ablation (S2)
# DeltaFormer with κ1 = exp (softmax over earlier keys), κ1 = linear on L2-normalised keys, and κ1 = 0,
# which is exactly the Transformer (U = V; a unit test checks the identity), trained at the same n with the
# same data and initial weights.

# %%
if len(s2):
    fig, ax = plotting.figure(width=6.0)
    s2["κ1"] = s2["kernel"].map({"exp": "exp (DeltaFormer)", "linear": "linear", "zero": "zero (= Transformer)"})
    s2["length"] = length_label(s2) + "\n(" + s2["T_test"].astype(str) + " swaps)"
    sns.barplot(data=s2, x="length", y="acc", hue="κ1", ax=ax, errorbar=None)
    n_values = sorted(s2["n_objects"].unique())
    ax.axhline(1 / min(n_values), ls=":", color="grey", label=f"chance 1/n (n = {min(n_values)})")
    ax.set_ylim(0, 1.05)
    plotting.label(ax, f"DeltaFormer κ1 ablation, n = {', '.join(map(str, n_values))}", "test length",
                   "per-step accuracy (last quarter of swaps)", legend_title="κ1")
    ax.legend(title="κ1", loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", title_fontsize="small")
    plotting.save(fig, figures, CLAIM, "kernel_ablation")
    plt.show()
    ablation = s2.pivot_table(index=["kernel", "n_objects"], columns="test_multiplier", values="acc",
                              aggfunc="mean").rename(columns=lambda m: f"acc@{m}T").reset_index()
    ablation = ablation.merge(s2.groupby(["kernel", "n_objects"])[["max_train_value_norm", "final_train_loss"]]
                              .mean().reset_index())
else:
    ablation = pd.DataFrame(columns=["kernel", "n_objects"])
plotting.save_table(ablation, tables_dir, CLAIM, "kernel_ablation")
display(ablation.round(3))

# %% [markdown]
# ## Final-query variant
# One query after the last swap ("which object is in box c?"); trained only at T_train, asked at each
# test length. Reported separately from the per-step accuracy, as the spec asks.

# %%
if len(s1):
    lengths = sorted(s1["test_multiplier"].unique())
    fig, axes = plotting.figure(ncols=len(lengths), width=4.6, sharey=True)
    for ax, mult in zip(np.atleast_1d(axes), lengths):
        part = s1[s1["test_multiplier"] == mult]
        sns.lineplot(data=part, x="n_objects", y="acc_final_query", hue="model", style="model", markers=True,
                     dashes=False, errorbar=None, ax=ax)
        ns = np.array(sorted(part["n_objects"].unique()))
        ax.plot(ns, 1 / ns, ":", marker="_", markersize=16, color="grey", label="chance 1/n")
        ax.set_ylim(0, 1.05)
        ax.set_xticks(ns)
        plotting.label(ax, f"query after {part['test length'].iloc[0]}", "number of objects n",
                       "final-query accuracy", legend_title="model")
    one_legend(axes)
    fig.suptitle("Swap task, final-query variant", y=1.08)
    plotting.save(fig, figures, CLAIM, "final_query")
    plt.show()

# %% [markdown]
# ## Largest n solved
# Largest trained n with seed-mean accuracy ≥ 0.95 (and every smaller trained n solved too) at each test
# length — the spec's criterion is the 4·T_train column — beside the paper's numbers (Transformer ≈ 5, DeltaFormer 128). "none" means not even the smallest
# trained n was solved; the paper's values come from far larger models and longer training.

# %%
PAPER_N = {"Transformer": "≈5", "DeltaFormer (κ1=exp)": "128"}


def largest_solved(part):
    """Largest n with accuracy ≥ 0.95 such that every smaller trained n is solved too (None if none)."""
    solved = None
    for n, acc in zip(part["n_objects"], part["acc"]):
        if acc < 0.95:
            break
        solved = int(n)
    return solved


rows = []
if len(s1):
    means = s1.groupby(["model", "test_multiplier", "n_objects"])["acc"].mean().reset_index()
    for model, part in means.groupby("model"):
        row = {"model": model}
        for mult in sorted(part["test_multiplier"].unique()):
            solved = largest_solved(part[part["test_multiplier"] == mult].sort_values("n_objects"))
            row[f"largest_n_solved@{mult}T"] = "none" if solved is None else solved
        row.update(largest_n_trained=int(part["n_objects"].max()), paper=PAPER_N.get(model, "—"), tier=tier)
        rows.append(row)
largest = pd.DataFrame(rows)
plotting.save_table(largest, tables_dir, CLAIM, "largest_n_solved")
display(largest)

# %% [markdown]
# ## Verdicts
# Computed by `attncap.claims.swap_state_tracking` from the same run tables (written to
# `results/claims/swap_state_tracking.json`).

# %%
import json

verdicts = json.loads((results / "claims" / f"{CLAIM}.json").read_text())
display(pd.DataFrame(verdicts["checks"])[["id", "statement", "measured", "expected", "verdict"]])
