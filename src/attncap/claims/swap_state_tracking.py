"""Claim 5 verdicts: can a Transformer, DeltaFormer and DeltaNet track swaps of n objects beyond the
training length? Reads the S1 grid (models × n); accuracy is the mean per-step accuracy over the last
quarter of the steps of a test sequence (column `acc`), averaged over seeds.
"""
from __future__ import annotations

import pandas as pd

from attncap.claims import INCONCLUSIVE, Check, fraction_verdict, verdict_from

TITLE = "Swap-task state tracking: Transformer vs DeltaFormer (and DeltaNet)"
PAPER = "Zhong, Xu, Ao, Shi 2025, 'Understanding Transformer from the Perspective of Associative Memory' (arXiv 2505.19488)"
SUCCESS = 0.95
TRANSFORMER, DELTAFORMER, DELTANET_NEG = "softmax", "deltaformer_exp", "deltanet_02"


def _cells(frame: pd.DataFrame | None, mixer: str, multiplier: int) -> pd.Series:
    """Seed-mean accuracy per n for one mixer at T_test = multiplier·T_train (empty when absent)."""
    if frame is None or frame.empty:
        return pd.Series(dtype=float)
    rows = frame[(frame["mixer"] == mixer) & (frame["test_multiplier"] == multiplier)]
    return rows.groupby("n_objects")["acc"].mean().sort_index()


def sanity(frame: pd.DataFrame | None) -> Check:
    """Every model ≥ 0.95 at n = 3, T_test = T_train."""
    measured, passes = {}, []
    if frame is not None and not frame.empty:
        for mixer in sorted(frame["mixer"].unique()):
            acc = _cells(frame, mixer, 1)
            if 3 in acc.index:
                measured[mixer] = float(acc[3])
                passes.append(acc[3] >= SUCCESS)
    return Check("sanity", "Every model learns the swap task at n = 3 on the training length.",
                 f"{PAPER}, Sec. 3.2 (protocol of this project, spec 05)", measured,
                 f"accuracy ≥ {SUCCESS} for every model at n = 3, T_test = T_train", "none (threshold)",
                 fraction_verdict(passes))


def construction(frame: pd.DataFrame | None) -> Check:
    """DeltaNet with β ∈ (0, 2) ≥ 0.95 at every n ≤ d_head with T_test = 4·T_train."""
    measured, passes = {}, []
    if frame is not None and not frame.empty:
        rows = frame[frame["mixer"] == DELTANET_NEG]
        d_head = int(rows["d_head"].iloc[0]) if len(rows) else 0
        for n, acc in _cells(frame, DELTANET_NEG, 4).items():
            if n <= d_head:
                measured[f"n={n}"] = float(acc)
                passes.append(acc >= SUCCESS)
    return Check("construction", "DeltaNet with β ∈ (0, 2) (a swap is one reflection I − 2kkᵀ) tracks n ≤ d_head "
                 "objects and generalizes to 4× the training length.",
                 "DeltaNet reflection construction (spec 05); negative-eigenvalue delta rule", measured,
                 f"accuracy ≥ {SUCCESS} at T_test = 4·T_train for every trained n ≤ d_head", "none (threshold)",
                 fraction_verdict(passes))


def main_claim(frame: pd.DataFrame | None) -> Check:
    """DeltaFormer − Transformer ≥ 0.20 at n ∈ {5, 8} for T_test ∈ {2T, 4T}; every cell must be measured."""
    measured, passes = {}, []
    complete = True
    for mult in (2, 4):
        former, transformer = _cells(frame, DELTAFORMER, mult), _cells(frame, TRANSFORMER, mult)
        for n in (5, 8):
            if n not in former.index or n not in transformer.index:
                complete = False
                continue
            gap = float(former[n] - transformer[n])
            measured[f"n={n},{mult}T"] = {"deltaformer": float(former[n]), "transformer": float(transformer[n]),
                                          "gap": gap}
            passes.append(gap >= 0.20)
    verdict = fraction_verdict(passes) if complete else INCONCLUSIVE
    return Check("main", "DeltaFormer tracks swaps of n ≥ 5 objects beyond the training length where the "
                 "Transformer cannot (paper: Transformer ≤ 5 objects, DeltaFormer up to 128).",
                 f"{PAPER}, Sec. 3.2 and Fig. 4", measured,
                 "DeltaFormer − Transformer ≥ 0.20 at n ∈ {5, 8}, T_test ∈ {2T, 4T}", "gap threshold 0.20",
                 verdict)


def boundary(frame: pd.DataFrame | None) -> Check:
    """Transformer at 4T: worst n ≤ 4 minus best n ≥ 5 ≥ 0.2 (a clean break between S_4 and S_5).

    Accuracies are chance-corrected, (acc − 1/n)/(1 − 1/n), so two models both at chance (1/3 vs 1/5)
    cannot show a "drop" just because chance itself falls with n.
    """
    acc = _cells(frame, TRANSFORMER, 4)
    above = (acc - 1 / acc.index) / (1 - 1 / acc.index)
    low, high = above[above.index <= 4], above[above.index >= 5]
    passed = None
    measured = {f"n={n}": float(a) for n, a in acc.items()}
    if len(low) and len(high):
        drop = float(low.min() - high.max())
        measured["drop_above_chance"] = drop
        passed = drop >= 0.2
    return Check("boundary", "The Transformer's length generalization breaks between n = 4 (S_4 solvable, TC⁰) "
                 "and n = 5 (S_5 not solvable, NC¹-complete).", f"{PAPER}, Sec. 3.2 (the '5 objects' limit)",
                 measured, "min over n ≤ 4 minus max over n ≥ 5 of the Transformer's chance-corrected accuracy "
                 "(acc − 1/n)/(1 − 1/n) at 4·T_train ≥ 0.2", "drop threshold 0.2", verdict_from(passed))


def checks(tables: dict[str, pd.DataFrame]) -> list[Check]:
    frame = tables.get("S1")
    return [sanity(frame), construction(frame), main_claim(frame), boundary(frame)]
