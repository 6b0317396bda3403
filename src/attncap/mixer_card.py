"""The mixer card: every attention mixer on every probe, one row per mixer (issue 23 §3).

Read off the run tables the claims already make, nothing is trained here:
- MQAR (claim 1, E5): held-out accuracy at the largest kv of each width, mean over seeds, with the short
  convolution when the table has that arm (the arm claim 1's verdicts compare); `mqar_settled` counts the
  runs behind those cells that passed their stopping rule (solved or plateau) — a run still moving at the
  step limit, as at the smoke tier, is shown but is not evidence;
- swap (claim 5, S1): per-step accuracy over the last quarter of the test sequence at T_train, 2·T_train
  and 4·T_train, mean over seeds, at n = 5 objects (or, when S1 did not train n = 5, at the largest n it
  did: `swap_n` says which);
- retrieval SNR⁻¹ (claim 1, E2): the median SNR⁻¹ of the mixer's retrieval kernel (models.mixers.
  RETRIEVAL_KERNELS) on Gaussian keys at the largest d and the largest N measured there (`snr_d`, `snr_N`;
  the exp kernel at scale 1). E2 kernels that no mixer on the card reads (ReLU today) get a row of their own,
  named `kernel:<name>`, with only the SNR filled.

A missing table leaves its columns empty. Run by the `mixer_card` rule (workflow/rules/mixer_card.smk):
    python -m attncap.mixer_card --results results --e5 E5_d32-softmax.csv ... --s1 S1_n5-softmax.csv ... --e2 E2.csv
writes results/tables/mixer_card.csv and results/figures/mixer_card.png.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from attncap.models.mixers import MIXERS, RETRIEVAL_KERNELS
from attncap.runtime import read_run_csv

SWAP_N = 5
SWAP_MULTIPLIERS = (1, 2, 4)
SNR_KERNELS = ("linear", "relu", "exp")  # the kernels of the paper's SNR section, as E2 names them
EXP_SCALE = 1.0
SETTLED = ("solved", "plateau")


def _order(names) -> list[str]:
    """Registry order (models.mixers.MIXERS), then any name the registry does not know."""
    names = list(dict.fromkeys(str(n) for n in names))
    known = [m for m in MIXERS if m in names]
    return known + [n for n in names if n not in known]


def mqar_columns(e5: pd.DataFrame | None) -> pd.DataFrame:
    """mixer → mqar_d<d>_kv<kv> (mean accuracy at the largest kv of width d), mqar_short_conv, mqar_settled."""
    if e5 is None or not len(e5):
        return pd.DataFrame(index=pd.Index([], name="mixer"))
    e5 = e5.copy()
    e5["mixer"] = e5["mixer"].astype(str)
    arm = int(e5["short_conv"].max()) if "short_conv" in e5 else 0
    if "short_conv" in e5:
        e5 = e5[e5["short_conv"] == arm]
    cells = []
    for d, width in e5.groupby("d_model"):
        kv = int(width["kv_pairs"].max())
        cells.append((f"mqar_d{int(d)}_kv{kv}", width[width["kv_pairs"] == kv]))
    out = pd.DataFrame({name: cell.groupby("mixer")["accuracy"].mean() for name, cell in cells})
    runs = pd.concat([cell for _, cell in cells])
    settled = runs.groupby("mixer")["stop_reason"].agg(lambda r: f"{int(r.isin(SETTLED).sum())}/{len(r)}")
    out["mqar_short_conv"] = arm
    out["mqar_settled"] = settled
    out.index.name = "mixer"
    return out


def swap_columns(s1: pd.DataFrame | None, n: int = SWAP_N) -> pd.DataFrame:
    """mixer → swap_n, swap_T_train, swap_1T, swap_2T, swap_4T (mean over seeds of `acc`)."""
    if s1 is None or not len(s1):
        return pd.DataFrame(index=pd.Index([], name="mixer"))
    s1 = s1.copy()
    s1["mixer"] = s1["mixer"].astype(str)
    trained = sorted(int(x) for x in s1["n_objects"].unique())
    chosen = n if n in trained else trained[-1]
    at_n = s1[s1["n_objects"] == chosen]
    out = pd.DataFrame({f"swap_{m}T": at_n[at_n["test_multiplier"] == m].groupby("mixer")["acc"].mean()
                        for m in SWAP_MULTIPLIERS})
    out.insert(0, "swap_T_train", at_n.groupby("mixer")["T_train"].first().astype(int))
    out.insert(0, "swap_n", chosen)
    out.index.name = "mixer"
    return out


def snr_points(e2: pd.DataFrame | None) -> pd.DataFrame:
    """kernel → snr_inv (median), snr_N, snr_d: each kernel at the largest d, at the largest N there."""
    if e2 is None or not len(e2):
        return pd.DataFrame(columns=["snr_inv", "snr_N", "snr_d"], index=pd.Index([], name="kernel"))
    e2 = e2[e2["kernel"].isin(SNR_KERNELS)]
    if "scale" in e2:  # the exp kernel at scale 1 (the others have no scale)
        e2 = e2[(e2["kernel"] != "exp") | np.isclose(e2["scale"].astype(float), EXP_SCALE)]
    rows = {}
    for kernel, runs in e2.groupby("kernel"):
        d = int(runs["d"].max())
        at_d = runs[runs["d"] == d]
        top = at_d[at_d["n"] == at_d["n"].max()].iloc[0]
        rows[kernel] = {"snr_inv": float(top["median_snr_inv"]), "snr_N": int(top["n"]), "snr_d": d}
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["snr_inv", "snr_N", "snr_d"])
    out.index.name = "kernel"
    return out


def build_card(e5: pd.DataFrame | None = None, s1: pd.DataFrame | None = None, e2: pd.DataFrame | None = None,
               swap_n: int = SWAP_N) -> pd.DataFrame:
    """One row per mixer trained in E5 or S1 (registry order), then one per E2 kernel no such mixer reads."""
    mqar, swap, snr = mqar_columns(e5), swap_columns(s1, swap_n), snr_points(e2)
    mixers = _order(list(mqar.index) + list(swap.index))
    card = pd.DataFrame({"mixer": pd.Series(mixers, dtype=object),
                         "kernel": pd.Series([RETRIEVAL_KERNELS.get(m, "") for m in mixers], dtype=object)})
    for columns in (mqar, swap):
        if len(columns):
            card = card.join(columns, on="mixer")
    read = set(card["kernel"])
    extra = pd.DataFrame({"mixer": [f"kernel:{k}" for k in snr.index if k not in read],
                          "kernel": [k for k in snr.index if k not in read]})
    card = pd.concat([card, extra], ignore_index=True) if len(extra) else card
    card = card.join(snr, on="kernel")
    for column in ("mqar_short_conv", "swap_n", "swap_T_train", "snr_N", "snr_d"):
        if column in card:  # whole numbers, left empty where the row has none
            card[column] = card[column].astype("Int64")
    return card.reset_index(drop=True)


def plot_card(card: pd.DataFrame):
    """Left: accuracies (MQAR per width, swap at T/2T/4T) as an annotated heatmap; right: SNR⁻¹ per row."""
    import matplotlib.pyplot as plt

    from attncap import plotting

    plotting.setup()
    acc_cols = [c for c in card if c.startswith("mqar_d")] + [c for c in card if c.startswith("swap_") and c.endswith("T")]
    rows = max(len(card), 1)
    fig, (left, right) = plotting.figure(ncols=2, width=max(4.0, 1.0 + 0.9 * len(acc_cols)), height=1.0 + 0.45 * rows,
                                         gridspec_kw={"width_ratios": [max(len(acc_cols), 1), 2]})
    if acc_cols and len(card):
        import seaborn as sns

        grid = card.set_index("mixer")[acc_cols].astype(float)
        labels = [c.replace("mqar_", "MQAR ").replace("_kv", ", kv=").replace("swap_1T", "swap T")
                  .replace("swap_", "swap ") for c in acc_cols]
        sns.heatmap(grid, ax=left, vmin=0, vmax=1, cmap="viridis", annot=True, fmt=".2f", cbar=False,
                    xticklabels=labels, linewidths=0.5, linecolor="white", mask=grid.isna())
        left.tick_params(axis="x", rotation=30)
        left.grid(False)
        empty = pd.Series(dtype=float)
        swap_n = card["swap_n"].dropna() if "swap_n" in card else empty
        conv = card["mqar_short_conv"].dropna() if "mqar_short_conv" in card else empty
        note = ", ".join(filter(None, [f"MQAR with short conv {int(conv.iloc[0])}" if len(conv) else "",
                                       f"swap at n = {int(swap_n.iloc[0])}" if len(swap_n) else ""]))
        plotting.label(left, "held-out accuracy", note, "")
    else:
        left.text(0.5, 0.5, "no E5 or S1 table", ha="center", va="center", transform=left.transAxes)
        left.set_axis_off()
    snr = card.dropna(subset=["snr_inv"]) if "snr_inv" in card else card.iloc[:0]
    if len(snr):
        positions = [list(card["mixer"]).index(m) + 0.5 for m in snr["mixer"]]
        right.barh(positions, snr["snr_inv"].astype(float), color="tab:blue", height=0.6)
        for y, (_, row) in zip(positions, snr.iterrows()):
            right.text(float(row["snr_inv"]), y, f" {row['kernel']} {row['snr_inv']:.3g}", va="center", fontsize="small")
        right.set_ylim(rows, 0)
        right.set_yticks([])
        right.set_xscale("log")
        point = snr.iloc[0]
        plotting.label(right, "retrieval SNR⁻¹ (E2)",
                       f"median SNR⁻¹ at N = {int(point['snr_N'])}, d = {int(point['snr_d'])}", "")
    else:
        right.text(0.5, 0.5, "no E2 table, or no\nmixer with a kernel", ha="center", va="center",
                   transform=right.transAxes)
        right.set_axis_off()
    fig.suptitle("Mixer card: every mixer on every probe")
    plt.setp(left.get_yticklabels(), rotation=0)
    return fig


def _read(paths) -> pd.DataFrame | None:
    frames = [read_run_csv(p) for p in paths or ()]
    return pd.concat(frames, ignore_index=True) if frames else None


def write_card(results: str | Path, e5_paths=(), s1_paths=(), e2_paths=(), swap_n: int = SWAP_N) -> pd.DataFrame:
    """Build the card from run CSVs and write results/tables/mixer_card.csv and results/figures/mixer_card.png."""
    from attncap import plotting

    card = build_card(_read(e5_paths), _read(s1_paths), _read(e2_paths), swap_n)
    results = Path(results)
    plotting.save_table(card, results / "tables", "mixer", "card")
    plotting.save(plot_card(card), results / "figures", "mixer", "card")
    return card


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", default="results")
    parser.add_argument("--e5", nargs="*", default=[], help="claim 1's E5 run tables")
    parser.add_argument("--s1", nargs="*", default=[], help="claim 5's S1 run tables")
    parser.add_argument("--e2", nargs="*", default=[], help="claim 1's E2 run table")
    parser.add_argument("--swap-n", type=int, default=SWAP_N)
    args = parser.parse_args(argv)
    card = write_card(args.results, args.e5, args.s1, args.e2, args.swap_n)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(card.to_string(index=False, float_format=lambda x: "" if math.isnan(x) else f"{x:.3g}"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
