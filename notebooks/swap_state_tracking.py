# %% [markdown]
# # Claim 5: tracking swaps of n objects — Transformer vs DeltaFormer (and DeltaNet)
#
# **Claim** (Zhong, Xu, Ao, Shi 2025, arXiv 2505.19488, Sec. 3.2): a standard Transformer tracks the
# exchanges of at most about 5 objects, while DeltaFormer tracks up to 128, because DeltaFormer reaches NC¹
# while a fixed-depth Transformer stays in TC⁰. Tracking swaps of n objects is the word problem of the
# symmetric group S_n, solvable (in TC⁰) for n ≤ 4 and NC¹-complete for n ≥ 5, so the expected boundary is
# between n = 4 and n = 5, visible as a failure to generalize to longer sequences. What the paper reports:
# a 1-layer DeltaFormer tracks the swaps of 5 objects (per-step labels, sequences of 16 swaps) where more
# Transformer layers did not help; the softmax normalisation of an exp κ1 "negatively impacts" tracking
# while "a suitable choice of κ1 can still achieve 100%"; its length-curriculum runs (32 → 256 swaps) use
# the rounded linear kernel ⌊xᵀy⌋, and up to 128 objects are tracked with fixed near-orthogonal keys
# (App. B.1). Model sizes and training settings are not published, so the protocol below is this project's.
#
# **Protocol:**
#
# * n boxes, object i starts in box i; each step is a uniformly random swap (a, b), a ≠ b, written as **one
#   token, id a·n + b** (the two-token form `a`, `n + b` is kept as the option `tokens_per_swap: 2`; a
#   2-layer model spends its first layer pairing the two tokens and learns it more slowly). After each swap
#   the target is the object now in box a (n-way classification). Every training sequence ends with a final
#   query token (id n² + c, "which object is in box c?"), reported separately.
# * Models: pre-LayerNorm blocks [mixer, 4× MLP], rotary embeddings on q and k for the softmax mixers
#   (Transformer, DeltaFormer), no positional signal for DeltaNet. The paper writes DeltaFormer's kernels,
#   κ1(k_i, k_t) and the readout κ2(k_i, q_t), on content alone and names no positional scheme: the readout
#   without positions (and with a learned temperature) is S5's ablation, see "DeltaFormer's readout" below. The Transformer is causal softmax
#   attention; DeltaFormer computes U = (I + diag(β)P)⁻¹V with P the strictly causal κ1 scores of the keys,
#   read out by causal softmax attention (one triangular solve per head). **DeltaFormer's κ1 is linear on
#   L2-normalised keys** (the kernel the paper's finding points to; its curriculum runs use a rounded
#   linear kernel, whose gradient is zero: S1 keeps it unrounded, S2 trains the rounded one with a
#   straight-through gradient); κ1 = exp, the strictly causal
#   row-softmax of k·k/√d (flash-linear-attention's DeltaFormer), is the S2 ablation. DeltaNet has
#   L2-normalised q, k. β is a per-token, per-head projection β_max·sigmoid(w·x + b) with **β ∈ (0, 2) for
#   DeltaNet and DeltaFormer**: a swap is a reflection I − 2kkᵀ (eigenvalue −1), which the delta rule can
#   apply only with β up to 2. β ∈ (0, 1) is an ablation row (`deltaformer_linear_01`). With β > 1 and a
#   concentrated κ1 row, ‖u_t‖ can grow like β^t, so the largest ‖u_t‖ is logged and a non-finite loss is
#   recorded as `diverged`.
# * Recipe (default tier; issue 14): d_model 64, 2 layers, 4 heads (d_head 16 ≥ every n trained, as
#   DeltaNet's construction needs), AdamW with lr 3·10⁻³, betas (0.9, 0.98), weight decay 0.01, 100
#   warm-up steps then cosine decay to 10 % of the peak over the maximum number of steps, per-model gradient
#   clipping at 1.0, batch 64, a fresh batch every step. These are the spec's settings and those of the
#   independent implementation in issue 14; flash-linear-attention's DeltaNet layer uses the same
#   ingredients (L2-normalised q/k, β = sigmoid, × 2 when negative eigenvalues are allowed) plus a short
#   convolution, which we leave out here (the swap token carries everything a step needs).
# * **Length curriculum** (every model): training starts on sequences of 8 swaps and doubles (8 → 16 → 32 =
#   T_train) each time a held-out check (2 × 64 fresh sequences, every 50 steps) finds the mean per-step
#   accuracy over the last quarter of the current length ≥ 0.95. **Early stopping per model**: at T_train a
#   model stops once that check reaches ≥ 0.99; its parameters are held fixed while the others keep training,
#   and its job ends when all its models have stopped (one job per n and model, so the time saved is real).
#   Otherwise it trains the maximum number of steps.
# * **Positive control (S3)**: the Transformer trained at T_train = 4, where no length curriculum is needed;
#   it shows the recipe can train a Transformer on the task at all. (At T_train = 8 the same Transformer
#   reached only 0.49 at n = 3 and 0.66 at n = 5 after 6000 steps; 4 layers instead of 2 gave 0.54 at
#   n = 3 after 3000 steps: it learns the swaps position by position, about one position per 1000 steps.)
# * Evaluation: fresh sequences of 4·T_train swaps. The models are causal, so the per-step accuracy at swap
#   t ≤ L is the same as on a sequence of L swaps: one long evaluation gives T_train, 2·T_train and
#   4·T_train. **Accuracy at test length L** (`acc`, used by every verdict) is the mean per-step accuracy over
#   the last quarter of the swaps, (3L/4, L], i.e. entirely beyond the training length for 2T and 4T.
# * **Learning certificate** per run (CSV columns): `final_train_loss` (mean of the last 10 losses),
#   `loss_curve` (6 checkpoints), `train_accuracy` (= `acc` at T_train on held-out sequences), `status`
#   (`learned` ≥ 0.9, `under-trained`, `diverged`), `steps_run` of `max_steps`, the curriculum reached
#   (`curriculum`, length@step), and **why the run stopped** (`stop_reason`: `solved` = early stop after
#   the held-out passes, `followed` = after those passes it trained on, checked at 4·T_train every 50 steps
#   (`follow_checks_run` checks), until that accuracy settled (10 checks ≥ 0.99, or the best of the last 10
#   no more than 0.01 above the best before them; S1 at every tier), `plateau` = the step limit with the loss settled at its final length, i.e. a
#   fall ≤ 5 % over the last 10 % of the run per unit of learning rate (`loss_drop` / `lr_last10`; the
#   cosine schedule ends at 10 % of the peak), `max_steps` = still improving at the limit, `diverged`).
#   Every trained cell is withheld only on the runs it depends on: DeltaFormer's own length
#   generalization (`published_deltaformer`) on DeltaFormer's certificate alone; the comparisons with the
#   Transformer (`main`, `boundary`, `published_transformer`) also on the Transformer's, and when the
#   Transformer did not learn T_train they are inconclusive, naming the verdict the comparison at equal
#   training budget would give (the numbers stay in `measured`). The positive control and the linear half of
#   `kernel` are not gates: a settled run below its threshold reads "not reproduced", one still improving is
#   withheld. A length check (`published_deltaformer`, `construction`) counts a cell below its threshold
#   only on runs whose accuracy beyond T_train settled (`followed` runs count): a run stopped the moment it
#   solved T_train had that accuracy measured then, and one still following it at its step limit (`follow_cap`
#   budgets) had not settled either. `protocol` counts a Transformer depth
#   that fails n = 5 at length 16 only if the same depth learned some n ≤ 4 at that length (else its
#   failure is the recipe's at that length, whatever n is).
# * **Decisions.** Each check names its law and the most plausible rival (the verdict table's `rival`).
#   In-distribution thresholds are judged run by run inside the evaluation's binomial noise; length
#   generalization and comparisons per cell on the **seed spread**: the model's within-cell seed SD at that
#   test length, pooled over the cells with ≥ 2 seeds (default tier: 2 seeds at n = 3, 4, 5 and 8, so 4 degrees of freedom; DeltaNet's 3 seeds give 8),
#   with Student-t intervals; a law that must hold in every cell is also refuted by the mean over the cells.
#   Measured for issue 21 (DeltaFormer, n = 3, seeds 0–2 on this recipe): seed SD 0.0001 at T_train,
#   0.21 at 2·T_train, 0.15 at 4·T_train, so with 2 seeds per cell many comparisons are "not resolved".
# * S2: the ablations at n = 5 (the first n past the S_4/S_5 boundary): κ1 = exp, and DeltaFormer (κ1 =
#   linear) with β ∈ (0, 1). They share seed and initial weights with S1's models at n = 5, seed 0;
#   κ1 = linear is S1's DeltaFormer and κ1 = zero is exactly S1's Transformer (U = V; a unit test checks the
#   identity), so the kernel ablation reads those two rows from S1 instead of training them twice.
# * The smoke tier only exercises the code (n = 3, T_train = 8, ≤ 200 steps); its verdicts mean nothing
#   and may be inconclusive through the certificate. The paper tier (GPU) spans n = 3…128 with d_model 256,
#   4 layers, 2 heads (d_head 128), up to 20 000 steps of batch 256.

# %% tags=["parameters"]
results_dir = "results"
tier = "default"
runs = ""  # the rule's run CSVs (JSON list); empty: every CSV under results/swap_state_tracking/runs

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch

from attncap import plotting
from attncap.claims import swap_state_tracking as verdict_rules
from attncap.notebook import open_claim

CLAIM = "swap_state_tracking"
results = Path(results_dir)
claim = open_claim(CLAIM, results_dir, runs)
figures, tables_dir = claim.figures_dir, claim.tables_dir
s1, s2, s3, s4, s5 = (claim.tables.get(e, pd.DataFrame()) for e in ("S1", "S2", "S3", "S4", "S5"))
print(f"tier={tier}; S1: {len(s1)} rows, S2: {len(s2)} rows, S3: {len(s3)} rows, S4: {len(s4)} rows, S5: {len(s5)} rows")


def length_label(frame):
    return frame["test_multiplier"].map(lambda m: "T_train" if m == 1 else f"{m}·T_train")


def one_legend(axes, title="model"):
    """Keep a single legend, outside the last panel, so no curve is hidden under it."""
    axes = list(np.atleast_1d(axes))
    for ax in axes[:-1]:
        if ax.get_legend():
            ax.get_legend().remove()
    handles, labels = axes[-1].get_legend_handles_labels()
    axes[-1].legend(handles, labels, title=title, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                    fontsize="small", title_fontsize="small")


for frame in (s1, s2, s3, s4, s5):
    if len(frame):
        frame["test length"] = length_label(frame) + " = " + frame["T_test"].astype(str) + " swaps"
        # each run's learning certificate as the verdicts judge it (what the figures mark)
        frame["certificate"] = verdict_rules.run_status(frame)

# %% [markdown]
# ## Settings of this tier
# One row per experiment: what was trained, for how long at most, and how long it took (per model).

# %%
keys = ["T_train", "tokens_per_swap", "d_model", "layers", "heads", "d_head", "mlp_ratio", "max_steps", "batch",
        "lr", "adam_betas", "weight_decay", "warmup_steps", "curriculum_start", "promote_accuracy",
        "stop_accuracy", "eval_batches"]
frames = [f.assign(experiment=e) for e, f in (("S1", s1), ("S2", s2), ("S3", s3)) if len(f)]
settings = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
if len(settings):
    summary = settings.groupby("experiment").agg(
        **{k: (k, "first") for k in keys if k in settings}, models=("mixer", lambda s: ", ".join(sorted(s.unique()))),
        n_objects=("n_objects", lambda s: ", ".join(map(str, sorted(s.unique())))),
        train_time_per_model_s=("train_time_s", "mean"))
    display(summary.T)

# %% [markdown]
# ## Learning certificate and early stopping
# One row per trained model: whether it learned its training length (held-out accuracy over the last
# quarter of T_train), its final loss, the loss at six checkpoints (a plateau is visible as repeated
# values), the curriculum lengths it reached (length@step) and the steps it ran out of the maximum. A model
# that stopped early has `stopped_early` true. The second table sums what early stopping saved.

# %%
if len(settings):
    runs_only = settings[settings["test_multiplier"] == 1]
    certificate = runs_only[["experiment", "model", "n_objects", "seed", "status", "train_accuracy",
                             "final_train_loss", "steps_run", "max_steps", "stopped_early",
                             *[c for c in ("stop_reason", "loss_drop", "lr_last10") if c in runs_only], "curriculum",
                             "max_train_value_norm", "train_time_s", "loss_curve"]].sort_values(
        ["experiment", "model", "n_objects", "seed"]).reset_index(drop=True)
    plotting.save_table(certificate, tables_dir, CLAIM, "certificate")
    with pd.option_context("display.max_colwidth", 80):
        display(certificate.round(3))
    saved = runs_only.groupby("experiment").agg(models=("steps_run", "size"), steps_run=("steps_run", "sum"),
                                                max_steps=("max_steps", "sum"),
                                                stopped_early=("stopped_early", "sum"),
                                                train_time_s=("train_time_s", "sum"))
    saved.loc["all"] = saved.sum()
    saved["fraction_of_max"] = saved["steps_run"] / saved["max_steps"]
    plotting.save_table(saved.reset_index(), tables_dir, CLAIM, "early_stopping")
    display(saved.round(3))
else:
    certificate = pd.DataFrame()

# %% [markdown]
# ## Accuracy against the number of objects
# Each panel is one test length. A model that learned the group operation stays near 1 at every length;
# one that learned a length-bound shortcut falls toward chance (dotted, 1/n) at 2·T_train and 4·T_train.
# The claim predicts the Transformer falls from n = 5 on while DeltaFormer does not. Lines are seed means;
# where there are two seeds each seed is drawn as a point. Hollow markers are runs that did not learn
# T_train (their points at 2T and 4T cannot test the claim).

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
        bad = part[part["certificate"] != "learned"]
        ax.scatter(bad["n_objects"], bad["acc"], s=90, facecolors="none", edgecolors="black", linewidths=0.8,
                   label="did not learn T_train")
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
    first = s1[s1["test_multiplier"] == 1]
    extra = first.groupby(["model", "n_objects"]).agg(
        seeds=("seed", "nunique"), status=("status", lambda s: "/".join(sorted(set(s)))),
        steps_run=("steps_run", lambda s: "/".join(map(str, s))), max_steps=("max_steps", "first"),
        final_train_loss=("final_train_loss", "mean"), max_train_value_norm=("max_train_value_norm", "max"))
    accuracy = pd.concat([acc_table, fq, extra], axis=1).reset_index()
    plotting.save_table(accuracy, tables_dir, CLAIM, "accuracy")
    display(accuracy.round(3))

# %% [markdown]
# ## The learning front: accuracy against the position in the sequence
# Per-step accuracy at every swap index on held-out sequences of 4·T_train swaps, one row per run
# (model, n, seed), as a heat map: a model that learns position by position shows a front, accurate up to
# some swap index and at chance after it. The black line marks T_train and the white ticks the curriculum
# lengths each run reached. Below, the same curves per n (seed means).

# %%
if len(s1):
    longest = s1[s1["test_multiplier"] == s1["test_multiplier"].max()].sort_values(["model", "n_objects", "seed"])
    t_train = int(longest["T_train"].iloc[0])
    models = list(dict.fromkeys(longest["model"]))
    fig, axes = plotting.figure(ncols=len(models), width=4.4, height=3.6, sharey=False)
    for ax, model in zip(np.atleast_1d(axes), models):
        rows = longest[longest["model"] == model]
        matrix = np.array([np.array(r.split(), dtype=float) for r in rows["acc_by_position"]])
        chance = (1 / rows["n_objects"].to_numpy())[:, None]
        above = (matrix - chance) / (1 - chance)  # chance-corrected: 0 = chance, 1 = perfect
        image = ax.imshow(above, aspect="auto", cmap="viridis", vmin=0, vmax=1, interpolation="nearest",
                          extent=(0.5, matrix.shape[1] + 0.5, len(rows) - 0.5, -0.5))
        ax.grid(False)
        ax.axvline(t_train + 0.5, color="black", lw=1.2)
        for y, stages in enumerate(rows["curriculum"]):
            for stage in str(stages).split():
                ax.plot(int(stage.split("@")[0]) + 0.5, y, "|", color="white", ms=8, mew=1.5)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([f"n={n} s{s} ({st[:5]})" for n, s, st in zip(rows["n_objects"], rows["seed"], rows["status"])],
                           fontsize="x-small")
        ax.set_title(model, fontsize="small")
        ax.set_xlabel("swap index t")
    fig.colorbar(image, ax=np.atleast_1d(axes).tolist(), label="(acc − 1/n)/(1 − 1/n) at swap t", shrink=0.9)
    fig.suptitle(f"Swap task: the learning front (held-out, 4·T_train = {4 * t_train} swaps; line: T_train)", y=1.07)
    plotting.save(fig, figures, CLAIM, "learning_front")
    plt.show()

# %%
if len(s1):
    curves = []
    for _, row in longest.iterrows():
        acc = np.array(row["acc_by_position"].split(), dtype=float)
        curves.append(pd.DataFrame({"model": row["model"], "n_objects": row["n_objects"], "seed": row["seed"],
                                    "swap index": np.arange(1, len(acc) + 1), "accuracy": acc}))
    curves = pd.concat(curves, ignore_index=True)
    ns = sorted(curves["n_objects"].unique())
    fig, axes = plotting.figure(ncols=min(4, len(ns)), nrows=int(np.ceil(len(ns) / 4)), width=4.4, sharey=True)
    axes = np.atleast_1d(axes).ravel()
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
# ## Positive control (S3): the Transformer at a short training length
# If the recipe can train a Transformer on the swap task at all, it does so here, where sequences are
# short. Accuracy at T_train (the control) and beyond it (2T, 4T: length generalization from 8 swaps).

# %%
if len(s3):
    fig, ax = plotting.figure(width=5.6)
    sns.lineplot(data=s3, x="n_objects", y="acc", hue="test length", style="test length", markers=True,
                 dashes=False, errorbar=None, ax=ax)
    ns3 = np.array(sorted(s3["n_objects"].unique()))
    ax.plot(ns3, 1 / ns3, ":", color="grey", label="chance 1/n")
    ax.axhline(0.9, ls="--", color="tab:red", lw=0.8, label="control threshold 0.9")
    runs3 = s3[s3["test_multiplier"] == 1]
    settled = runs3["stop_reason"].isin(verdict_rules.SETTLED) if "stop_reason" in runs3 else runs3["acc"] < 0
    ax.scatter(runs3.loc[settled, "n_objects"], runs3.loc[settled, "acc"], s=30, color="black", zorder=3,
               label="run at T_train, settled (solved / plateau)")
    ax.scatter(runs3.loc[~settled, "n_objects"], runs3.loc[~settled, "acc"], s=60, facecolors="none",
               edgecolors="black", zorder=3, label="run at T_train, not settled (still improving / no record)")
    ax.set_ylim(0, 1.05)
    ax.set_xticks(ns3)
    plotting.label(ax, f"Transformer control, T_train = {int(s3['T_train'].iloc[0])}", "number of objects n",
                   "per-step accuracy (last quarter of swaps)", legend_title="test length")
    ax.legend(title="test length", loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", title_fontsize="small")
    plotting.save(fig, figures, CLAIM, "control")
    plt.show()
    display(s3[s3["test_multiplier"] == 1][["n_objects", "seed", "acc", "status", "steps_run", "max_steps",
                                            *[c for c in ("stop_reason",) if c in s3]]].round(3))

# %% [markdown]
# ## Kernel ablation and β ablation (n = 5, seed 0)
# κ1 ∈ {linear on L2-normalised keys (DeltaFormer, from S1), exp (S2), the paper's rounded linear kernel
# round(k̂_t·k̂_i) with a straight-through gradient (S2), zero (= the Transformer, S1's row)},
# all with β ∈ (0, 2); and DeltaFormer (κ1 = linear) with β ∈ (0, 2) against β ∈ (0, 1) (S2), with DeltaNet
# β ∈ (0, 2) from S1 for reference. Same initial weights and data stream within each comparison. Hatched
# bars are runs that did not learn T_train. An S2 run that has not learned T_train by its 3000-step budget goes
# on at the final rate while its loss at its length still falls, up to 8 budgets (`continue_cap`), so a failure
# is read only once it has settled; the table's stop_reason and steps_run say where each run stopped.

# %%
ABLATION_N = int(s2["n_objects"].min()) if len(s2) else None
KERNEL_ROWS = {"deltaformer_linear": "linear (DeltaFormer)", "deltaformer_exp": "exp",
               "deltaformer_round": "round (straight-through)", "softmax": "zero (= Transformer)"}
BETA_ROWS = {"deltaformer_linear": "DeltaFormer β∈(0,2)", "deltaformer_linear_01": "DeltaFormer β∈(0,1)",
             "deltanet_02": "DeltaNet β∈(0,2) (reference)"}


def ablation_rows(mapping):
    both = pd.concat([s1, s2], ignore_index=True) if len(s2) else s1
    rows = both[(both["n_objects"] == ABLATION_N) & (both["seed"] == 0) & both["mixer"].isin(list(mapping))].copy()
    rows["variant"] = rows["mixer"].map(mapping)
    rows["length"] = length_label(rows) + "\n(" + rows["T_test"].astype(str) + " swaps)"
    return rows


def ablation_plot(rows, order, title, name):
    fig, ax = plotting.figure(width=6.4)
    sns.barplot(data=rows, x="length", y="acc", hue="variant", hue_order=order, ax=ax, errorbar=None)
    for container, variant in zip(ax.containers, order):
        learned = rows[(rows["variant"] == variant) & (rows["test_multiplier"] == 1)]["status"]
        if len(learned) and (learned != "learned").any():
            for bar in container:
                bar.set_hatch("//")
    ax.axhline(1 / ABLATION_N, ls=":", color="grey", label=f"chance 1/n (n = {ABLATION_N})")
    ax.set_ylim(0, 1.05)
    plotting.label(ax, title, "test length", "per-step accuracy (last quarter of swaps)", legend_title="variant")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", title_fontsize="small")
    plotting.save(fig, figures, CLAIM, name)
    plt.show()


def ablation_table(rows):
    table = rows.pivot_table(index="variant", columns="test_multiplier", values="acc").rename(columns=lambda m: f"acc@{m}T")
    first = rows[rows["test_multiplier"] == 1].set_index("variant")
    return table.join(first[["mixer", "beta_max", "status", "steps_run", "max_steps", "final_train_loss",
                             "max_train_value_norm", "curriculum"]]).reset_index()


if ABLATION_N is not None and len(s1):
    kernel_rows = ablation_rows(KERNEL_ROWS)
    ablation_plot(kernel_rows, [v for v in KERNEL_ROWS.values() if v in set(kernel_rows["variant"])],
                  f"DeltaFormer κ1 ablation, n = {ABLATION_N}", "kernel_ablation")
    kernel_table = ablation_table(kernel_rows)
    beta_rows = ablation_rows(BETA_ROWS)
    ablation_plot(beta_rows, [v for v in BETA_ROWS.values() if v in set(beta_rows["variant"])],
                  f"β range ablation, n = {ABLATION_N}", "beta_ablation")
    beta_table = ablation_table(beta_rows)
else:
    kernel_table = beta_table = pd.DataFrame(columns=["variant"])
plotting.save_table(kernel_table, tables_dir, CLAIM, "kernel_ablation")
plotting.save_table(beta_table, tables_dir, CLAIM, "beta_ablation")
display(kernel_table.round(3))
display(beta_table.round(3))

# %% [markdown]
# ## Final-query variant
# One query after the last swap ("which object is in box c?"); trained at the end of each training
# sequence (at the curriculum's current length), asked after T_train, 2·T_train and 4·T_train swaps.
# Reported separately from the per-step accuracy, as the spec asks.

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
# ## Largest n solved, beside the paper's numbers
# Largest trained n with seed-mean accuracy ≥ 0.95 (and every smaller trained n solved too) at each test
# length — the spec's criterion is the 4·T_train column — beside the paper's published limits (Transformer
# ≈ 5, DeltaFormer 128). "none" means not even the smallest trained n was solved. Our range stops at
# n = 8, so the paper's 128 can only be checked as "every trained n"; the paper's values come from far
# larger models and longer training. `all_learned` says whether every run of that model learned T_train:
# where it did not, "not solved" means "not learned", not "cannot generalize".

# %%
from attncap.claims.swap_state_tracking import largest_solved

PAPER_N = {"Transformer": "≈5", "DeltaFormer (κ1=linear)": "128"}
rows = []
if len(s1):
    means = s1.groupby(["model", "test_multiplier", "n_objects"])["acc"].mean().reset_index()
    for model, part in means.groupby("model"):
        row = {"model": model}
        for mult in sorted(part["test_multiplier"].unique()):
            solved = largest_solved(part[part["test_multiplier"] == mult].set_index("n_objects")["acc"])
            row[f"largest_n_solved@{mult}T"] = "none" if solved is None else solved
        statuses = s1[(s1["model"] == model) & (s1["test_multiplier"] == 1)]["status"]
        row.update(largest_n_trained=int(part["n_objects"].max()), all_learned=bool((statuses == "learned").all()),
                   paper=PAPER_N.get(model, "—"), tier=tier)
        rows.append(row)
largest = pd.DataFrame(rows)
plotting.save_table(largest, tables_dir, CLAIM, "largest_n_solved")
display(largest)

# %% [markdown]
# ## The paper's protocol and the Transformer's in-distribution frontier (S4, issue 22)
# The paper (Sec. 3.2): *a 1-layer DeltaFormer tracks the swaps of 5 objects with per-step labels on sequences
# of 16 swaps, where more Transformer layers did not help.* S4 runs it as written: T_train = 16, n ∈ {3, 4, 5},
# DeltaFormer (κ1 = linear) with 1 layer, Transformers with 1, 2 and 4 layers at the same width and step
# budget. Both get a recipe that lets the Transformer learn rather than S1's: learned absolute positions,
# N(0, 1) token and position tables (at the LM's default 0.02·√d the Transformer never got past swap 4, where a
# plain `nn.TransformerEncoder` does), warm-up then a constant lr of 3e-3, and a curriculum 4 → 8 → 16 with a
# budget per length (`stage_steps`, 8000 at the default tier): a length not learned within it ends the run, unless
# its loss still falls (the plateau rule over its steps at that length); then it goes on up to `stage_cap` (16000)
# and ends there, its stop reason `max_steps` if still falling. At the last length, 16, it may go on to the end of
# the run's budget (36000 steps in all): nothing follows it, and the cap had stopped a seed that reached 16 swaps
# early at 20 100 steps while its other seed, once past 0.95 there and so free of the length rule, ran all 36 000.
# The word-problem literature's
# batches mixing every length ≤ the current one kept the Transformer at chance beyond swap 4 here, so S4 trains
# on whole sequences (the config records both measurements). The **frontier** is the longest curriculum length a held-out check passed
# at 0.95 (last quarter of the swaps) and a confirmation on 2048 fresh sequences passed again (a check of 128
# sequences asked every 50 steps gives a model hovering just below 0.95 many chances to pass once; the verdict
# table states the chance that any confirmation passed a model at ≤ 0.92), a range over the seeds (`learned_T_min`–`learned_T_max`; the figure's
# dot is the best seed, its bar reaches down to the worst); `front` the number of leading swaps at ≥ 0.95 in
# the final evaluation. The shaded band is the curriculum's first length: every n learns it (S3's control learns
# n = 5 at 4 swaps) and the S_4/S_5 line predicts nothing there, so `boundary` decides only a depth whose n ≤ 4
# frontier got past it.
# Learned positions are never trained beyond T_train, so S4's 2T/4T columns are not read by any check.

# %%
def front(positions: str, level: float = 0.95) -> int:
    """Leading swaps with per-step accuracy ≥ level (the per-position front)."""
    count = 0
    for value in map(float, str(positions).split()):
        if value < level:
            break
        count += 1
    return count


if len(s4):
    frontier = verdict_rules.frontier_table(s4)
    fronts = s4[s4["test_multiplier"] == 1].groupby(["mixer", "layers", "n_objects"])["acc_by_position"].first()
    frontier = frontier.merge(fronts.map(front).rename("front").reset_index(), on=["mixer", "layers", "n_objects"])
    frontier["model"] = frontier["mixer"].map(lambda m: "Transformer" if m == "softmax" else "DeltaFormer") + \
        " L" + frontier["layers"].astype(int).astype(str)
    protocol = frontier.pivot_table(index="model", columns="n_objects", values="acc").rename(
        columns=lambda n: f"acc n={n}")
    frontier["learned_T"] = [str(lo) if lo == hi else f"{lo}–{hi}"
                             for lo, hi in zip(frontier["learned_T_min"], frontier["learned_T_max"])]
    protocol = protocol.join(frontier.pivot_table(index="model", columns="n_objects", values="learned_T",
                                                  aggfunc="first").rename(columns=lambda n: f"frontier n={n}"))
    fig, ax = plotting.figure(width=6.4)
    models = list(frontier.groupby("model"))
    learned = frontier[["learned_T_min", "learned_T_max"]].to_numpy()
    floor = 0.5 * learned[learned > 0].min() if (learned > 0).any() else 1  # "learned nothing" drawn below the axis' data
    for i, (model, rows) in enumerate(models):
        dodge = (i - (len(models) - 1) / 2) * 0.05  # equal frontiers of several models stay visible side by side
        low, high = rows["learned_T_min"].clip(lower=floor), rows["learned_T_max"].clip(lower=floor)
        line, = ax.plot(rows["n_objects"] + dodge, high, marker="o", label=model)
        ax.vlines(rows["n_objects"] + dodge, low, high, color=line.get_color(), lw=2.5, alpha=0.6)
        ax.plot(rows["n_objects"] + dodge, low, ls="none", marker="_", ms=9, color=line.get_color())
    ax.set_yscale("log", base=2)
    ax.set_xticks(sorted(frontier["n_objects"].unique()))
    ax.axvline(4.5, ls=":", color="grey", label="S_4 / S_5")
    if "curriculum_start" in s4:
        # every n learns the first length (S3), so `boundary` decides only a depth whose n ≤ 4 got past it
        ax.axhspan(floor, float(s4["curriculum_start"].min()) * 1.15, color="grey", alpha=0.12,
                   label="first length: no evidence")
    plotting.label(ax, "In-distribution frontier\n(dot: best seed; bar down to the worst seed; bottom: none)",
                   "objects n",
                   "longest training length learned", legend_title="model")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", title_fontsize="small")
    plotting.save(fig, figures, CLAIM, "frontier")
    plt.show()
else:
    frontier = pd.DataFrame(columns=["mixer", "layers", "n_objects", "learned_T_min", "learned_T_max"])
    protocol = pd.DataFrame(columns=["model"])
plotting.save_table(frontier, tables_dir, CLAIM, "frontier")
plotting.save_table(protocol.reset_index() if len(protocol) else protocol, tables_dir, CLAIM, "protocol")
display(frontier)
display(protocol.round(3))

# %% [markdown]
# ### How many swaps a target depends on, by n
# The target of swap t is what box b_t held just before it. If an earlier swap last touched b_t, that is what
# that swap's other box held then, and so on back to a box no swap has touched, whose object is its own index
# (`dependency_depth`). A model has to compose that chain. Its mean length at swap t (counting from 0) is exactly
# 2t/n: each swap adds 2 to the sum of the n boxes' chain lengths, and b_t is a uniform box. So at equal length
# the chains are longer at small n, and the S_4/S_5 line is not the only thing that changes with n: a frontier
# lower at n = 3 than at n = 5 need not contradict it. The table gives the mean chain
# over the last quarter of the swaps (what the checks read): exact, and measured on 4096 random sequences with
# its 95% interval (one mean per sequence). Beside them, the measured share of those targets whose chain is at
# most 2 or 4 swaps long.

# %%
from attncap.experiments.swap_state_tracking import curriculum, last_quarter
from attncap.tasks.swap_state_tracking import dependency_depth, sample_swaps

trained = [f for f in (s1, s4) if len(f)]
chain_n = sorted({int(n) for f in trained for n in f["n_objects"].unique()})
chain_lengths = {int(t) for f in trained for t in f["T_train"].unique()}
if len(s4):  # S4's curriculum lengths as it trains them
    chain_lengths |= set(curriculum({"curriculum_start": int(s4["curriculum_start"].min()),
                                     "T_train": int(s4["T_train"].max())}))
chain_rows = []
for L in sorted(chain_lengths):
    for n in chain_n:
        a, b = sample_swaps(n, L, 4096, torch.Generator().manual_seed(1000 * n + L))  # the same draw in every run
        depth = dependency_depth(a, b, n).double()
        per_sequence = last_quarter(depth, L)  # the positions the checks' accuracy reads
        chain_rows.append({"T": L, "n_objects": n,
                           "mean_chain_exact": float(last_quarter(2 * torch.arange(L, dtype=torch.float64) / n, L)),
                           "mean_chain_measured": float(per_sequence.mean()),
                           "ci95": 1.96 * float(per_sequence.std()) / np.sqrt(len(per_sequence)),
                           "share_le_2": float(last_quarter((depth <= 2).double(), L).mean()),
                           "share_le_4": float(last_quarter((depth <= 4).double(), L).mean())})
chain = pd.DataFrame(chain_rows)
plotting.save_table(chain, tables_dir, CLAIM, "chain_depth")
if len(chain):
    display(chain.pivot(index="n_objects", columns="T", values="mean_chain_exact").round(2)
            .rename(columns=lambda t: f"mean chain, T = {t}").rename_axis(columns=None))
    display(chain.round(3))

# %% [markdown]
# ## DeltaFormer's readout beyond the training length (S5, issue 22 §4)
# DeltaFormer (κ1 = linear) learns T_train but loses accuracy at 2·T_train and 4·T_train where DeltaNet does
# not. Its readout is a softmax over all earlier keys: at 4·T_train it spreads over 4× more keys, and with
# rotary positions it meets relative distances never seen in training. S5 trains the same model (S1's
# settings, seed 0) with other readouts: **nope**, no positions on q and k (κ1(k_i, k_t) and the readout
# softmax(q_t·k_i/√d) then depend on content only, which is how the paper writes both kernels: it names no
# positional scheme); **rotary_temp** (and **nope_temp** at the paper tier), a learned inverse temperature per
# head on the readout logits (the paper's exp(xᵀy/τ) has a fixed τ; a learned one is not in the paper). S1's
# own DeltaFormer (rotary) is listed beside them. The table is the mean per-step accuracy over the last
# quarter of the swaps at each test length; no check reads S5 (an ablation). S1 keeps rotary positions:
# issue 22's one-seed probe at n = 3, 5, 8 ranked the variants differently at each n (at 4·T_train rotary
# 0.57 / 0.58 / 0.82, nope 0.85 / 0.66 / 0.41, rotary_temp 0.77 / 0.59 / 0.76, nope_temp 0.88 / 0.66 / 0.78),
# none reached 0.95, and the gaps are as large as the run-to-run spread, so none is the best.

# %%
def readout_name(frame):
    positional = frame["positional"].fillna("rotary").astype(str).replace({"none": "nope"}) if "positional" in frame \
        else pd.Series("rotary", index=frame.index)
    learned = frame["readout_temperature"].fillna(False).astype(bool) if "readout_temperature" in frame \
        else pd.Series(False, index=frame.index)
    return positional + np.where(learned, "_temp", "")


readout_frames = []
if len(s1):
    former = s1[(s1["mixer"] == "deltaformer_linear") & (s1["seed"] == 0)]
    readout_frames.append(former.assign(readout=readout_name(former), source="S1"))
if len(s5):
    readout_frames.append(s5.assign(readout=readout_name(s5), source="S5"))
readouts = pd.concat(readout_frames, ignore_index=True) if readout_frames else pd.DataFrame()
if len(readouts) and len(s5):
    readouts = readouts[readouts["n_objects"].isin(s5["n_objects"].unique())]
    readout_table = readouts.pivot_table(index=["readout", "source"], columns=["n_objects", "test_multiplier"],
                                         values="acc")
    readout_table.columns = [f"n={n} {'T' if m == 1 else f'{m}T'}" for n, m in readout_table.columns]
    readout_table = readout_table.join(readouts[readouts["test_multiplier"] == 1].groupby(["readout", "source"])[
        "steps_run"].sum().rename("steps (all n)")).reset_index()
    fig, axes = plotting.figure(ncols=readouts["n_objects"].nunique(), width=3.4)
    axes = np.atleast_1d(axes)
    for ax, (n, rows) in zip(axes, readouts.groupby("n_objects")):
        sns.lineplot(data=rows, x="T_test", y="acc", hue="readout", style="source", marker="o", ax=ax)
        ax.set_xscale("log", base=2)
        ax.axhline(0.95, ls=":", color="grey")
        plotting.label(ax, f"n = {n}", "test length (swaps)", "accuracy (last quarter)")
    one_legend(axes, None)  # seaborn already heads its two sections, "readout" and "source"
    plotting.save(fig, figures, CLAIM, "readout_length")
    plt.show()
else:
    readout_table = pd.DataFrame(columns=["readout", "source"])
plotting.save_table(readout_table, tables_dir, CLAIM, "readout_ablation")
display(readout_table.round(3))

# %% [markdown]
# ## Verdicts
# Computed by `attncap.claims.swap_state_tracking` from the same run tables (written to
# `results/claims/swap_state_tracking.json`). Each trained check states its precondition; `reason` says
# why a check is inconclusive.
#
# What each check tests (law / rival): **main** — DeltaFormer beats the Transformer by ≥ 0.20 at n ∈ {5, 8}
# beyond T_train / no advantage beyond the seed spread; **boundary** — the Transformer's chance-corrected
# accuracy at 4T drops by ≥ 0.2 from every n ≤ 4 to every n ≥ 5 / no break at S_4/S_5 (a stricter reading the
# TC⁰/NC¹ argument suggests); **published_deltaformer** — DeltaFormer ≥ 0.95 at 4T at every trained n (the
# paper's "up to 128", decided on DeltaFormer's certificate alone) / its solution is length-bound;
# **published_transformer** — the Transformer's largest n solved at 4T ≤ 5 / it solves every trained n;
# **kernel** — κ1 = linear tracks and beats κ1 = exp by ≥ 0.20 at n = 5, T_train / both kernels the same;
# **construction** — DeltaNet β ∈ (0, 2) ≥ 0.95 at 4T for n ≤ d_head / length-bound; **protocol** — on the
# paper's protocol (S4, T = 16, n = 5) the 1-layer DeltaFormer ≥ 0.95 and no Transformer depth reaches it
# within the same budget / some depth does (depth helps), or DeltaFormer settles below, each model (the DeltaFormer,
# each depth) decided only where all its seeds agree; **boundary**, where S1's
# Transformer never learned T_train, is decided in distribution on S4: at the longest length T* each depth
# learns for every n ≤ 4, n = 5 is not learned / it is, at every depth (a rival at any depth → not reproduced,
# as S1's reading needs the drop at every pair). A depth decides only where every choice of seeds gives the
# same outcome, so which seed left a plateau cannot decide it, and where no run still improving at its length
# budget could overturn the outcome; the others are named in the reason. **control** (the recipe
# trains a Transformer at T_train = 4) and **sanity** (every model learns n = 3) are sanity checks of this
# project's set-up, counted apart from the claim checks.

# %%
with pd.option_context("display.max_colwidth", 200):
    display(claim.checks())
