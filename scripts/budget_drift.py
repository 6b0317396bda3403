"""How claim 2's measurements and shape laws move with the training budget: train an experiment's stacks to K
budgets with no early stop, then read every model and every shape law at 1, 2, 4, ... budgets.

The converged arm stops a run when its loss has settled (the learning certificate). This script asks what the
certificate cannot: does the running accuracy still move after it, and would a check decide differently on a
longer budget? It writes one row per (model, budget multiple) to `--out` and prints, per multiple, each law's
verdict on every run (ungated) and on the certified runs only (as the pipeline decides), e.g.

    python scripts/budget_drift.py --experiment A3 --cap 8 --out results/budget_drift/A3.csv

Beyond the budget the rate is the schedule's final one (5% of the peak), as in the converged arm.
"""
from __future__ import annotations

import argparse
import math
import pathlib

import pandas as pd
import torch

from attncap.claims import aot_memorization as rules
from attncap.config import run_config
from attncap.experiments import aot_memorization as exp
from attncap.theory import associations_from_accuracy
from attncap.train import final_loss, plateau_certified, plateau_drop, tail_lr_fraction

LAWS = {"A1": (rules.linear_in_heads, rules.per_head_gain, rules.slope_exponent),
        "A2": (rules.head_dim_scaling,), "A3": (rules.two_regimes,), "A5": (rules.aot_linear_in_parameters,),
        "A6": (rules.d2_slope,)}


def readings(rows: pd.DataFrame, history: dict, spec: dict, multiples: list[float]) -> pd.DataFrame:
    """Per model and multiple k: running accuracy over the last `last_batches` steps before k budgets, the loss
    change over the last tenth per unit of learning rate, the certificate's status there, and the step at which
    the converged arm's rule (`plateau_certified`: one read at the budget, two at each later tenth; or a saturated
    running accuracy) first certifies the run."""
    settings, budget, last = history["settings"], exp.steps_of(spec), spec["last_batches"]
    accuracies, losses = history["accuracies"], history["losses"].double()
    base = rows[rows["arm"] == rules.CONVERGED_ARM].reset_index(drop=True)
    settled = plateau_certified(settings)  # the converged arm's own rule, looked at where its loop looks
    first = [None] * len(base)
    for end in range(budget, len(losses) + 1, math.ceil(budget / 10)):
        saturated = accuracies[end - last:end].mean(0) >= rules.SATURATION
        for m in torch.nonzero(settled(losses[:end], torch.full((len(base),), end)) | saturated).flatten().tolist():
            first[m] = first[m] or end
    out = []
    for m, row in base.iterrows():
        own = losses[:, m].tolist()
        for k in multiples:
            end = int(round(k * budget))
            if end > len(own):
                continue
            acc = float(accuracies[end - last:end, m].mean())
            drop, lr_tail, final = plateau_drop(own[:end]), tail_lr_fraction(settings, end), final_loss(own[:end])
            out.append({**row.to_dict(), "budget_multiple": k, "steps_run": end, "acc_running": acc,
                        "X_running": float(associations_from_accuracy(acc, spec["N"])),
                        "final_loss": final, "loss_drop_last10": drop, "lr_last10": lr_tail,
                        "status": rules.run_status(final, acc, drop, lr_tail), "certified_at_step": first[m]})
    return pd.DataFrame(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", required=True, choices=sorted(LAWS))
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--cap", type=float, default=8.0, help="budgets to train every model (default 8)")
    parser.add_argument("--multiples", type=float, nargs="+", default=None, help="read at these budgets (default 1, 2, 4, ... up to the cap)")
    parser.add_argument("--d", type=int, nargs="*", default=None, help="only these d (default: every stack)")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    spec = dict(run_config([args.config], [])["aot_memorization"][args.experiment], continue_cap=args.cap)
    multiples = args.multiples or [2.0 ** i for i in range(int(math.log2(args.cap)) + 1)]
    table, sample = exp.make_block(spec["N"], spec["n_sequences"], 0, exp._BLOCK_SALT[args.experiment])
    frames = []
    for stack in exp.stacks(args.experiment, spec):
        if stack.layout != "shared" or (args.d and stack.d not in args.d):
            continue
        history: dict = {}
        rows = exp.train_stack(stack, spec, table, sample, certify=False, history=history)
        frames.append(readings(rows, history, spec, multiples))
    frame = pd.concat(frames, ignore_index=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out, index=False)
    for k, at_k in frame.groupby("budget_multiple"):
        learned = (at_k["status"] == "learned").sum()
        print(f"\n{k:g}× budget ({int(at_k['steps_run'].iloc[0])} steps): {learned} of {len(at_k)} runs certified")
        for law in LAWS[args.experiment]:
            every = law(at_k)
            part = rules.decided_on_certified(law, at_k)
            print(f"  {every.id}: every run {every.verdict} {_brief(every.measured)} | certified runs only: "
                  f"{part.verdict}")


def _brief(measured) -> str:
    if not isinstance(measured, dict):
        return str(measured)[:120]
    keys = [k for k in ("ratio", "interval", "b1_minus_5b2", "akaike_weight_claimed", "slope", "ratio_to_bound",
                        "ratio_interval", "exponent_with_intercept") if k in measured]
    return "(" + ", ".join(f"{k}={measured[k]}" for k in keys) + ")"


if __name__ == "__main__":
    main()
