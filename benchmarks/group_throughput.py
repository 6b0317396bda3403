"""Throughput of the batched trainer against one-model-at-a-time training on the largest training group
of claim 3 (mha_memorization) and claim 4 (rgr_capacity).

Claim 3: the costliest multi-seed group of M2–M6 in the default config (by `group_cost`; M5's H=8, T=512
non-shared cell), trained through `train_group` exactly as a pipeline job does: all seeds on one model
axis, against each seed alone. Claim 4: the first D_K* search round of the costliest cell (R4's
m=256, d_model=32): every (h, seed) at the start budget on one `ScorerBank`, against each model alone,
through `train_requests`. Both run a fixed number of steps (`--steps`, early stopping cannot trigger
that early at these sizes) and print wall time, models·steps per second and the speed-up.

    python benchmarks/group_throughput.py [--claim mha_memorization rgr_capacity] [--steps 100]
                                          [--exp M2] [--device cpu] [--threads 1]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import time

import pandas as pd
import torch
import yaml

from attncap.experiments import mha_memorization as mha
from attncap.experiments import rgr_capacity as rgr
from attncap.experiments.context import RunContext
from attncap.runtime import resolve_device


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _timed(fn, device: str) -> float:
    started = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):  # progress bars
        fn()
    _sync(device)
    return time.perf_counter() - started


def mha_runs(section: dict, steps: int, exp: str | None, device: str, threads: int):
    experiments = [exp] if exp else list(mha.TRAINED)
    candidates = []
    for name in experiments:
        spec = {**section[name], "steps": steps}
        candidates += [(mha.group_cost(spec, g), name, spec, g) for g in mha.trained_groups(spec) if len(g["seeds"]) > 1]
    _, name, spec, group = max(candidates, key=lambda c: c[0])
    context = RunContext.create(claim="mha_memorization", experiment=name, device=device, threads=threads)
    label = f"{name} H={group['heads']} n={group['n']} d_h={group['d_head']} T={group['T']}"
    batched = lambda: mha.train_group(spec, name, group, context)  # noqa: E731
    alone = lambda: [mha.train_group(spec, name, {**group, "seeds": [s]}, context) for s in group["seeds"]]  # noqa: E731
    warm = lambda: mha.train_group({**spec, "steps": 2}, name, {**group, "seeds": group["seeds"][:1]}, context)  # noqa: E731
    return label, len(group["seeds"]), batched, alone, warm


def rgr_runs(section: dict, steps: int, exp: str | None, device: str, threads: int):
    RunContext.create(claim="rgr_capacity", experiment=exp or "R4", device=device, threads=threads)  # threads, seed
    candidates = []
    for name in ([exp] if exp else list(rgr.SEARCH_EXPERIMENTS)):
        spec = {**section[name], "train": {**section[name]["train"], "steps": steps, "max_steps": None}}
        candidates += [(c["m"] ** 2 * c["d_model"], name, spec, c) for c in rgr.cells(name, spec)]
    _, name, spec, cell = max(candidates, key=lambda c: c[0])
    datas = {s: rgr.cell_data(cell, s, spec) for s in spec["seeds"]}
    start = spec["search"]["start_d_k_total"]
    requests = [(h, h * max(1, -(-start // h)), s) for h in spec["heads"] for s in spec["seeds"]]
    label = f"{name} {rgr.cell_name(cell)} first search round (D_K={start})"
    batched = lambda: rgr.train_requests(cell, requests, spec, datas, device)  # noqa: E731
    alone = lambda: [rgr.train_requests(cell, [r], spec, datas, device) for r in requests]  # noqa: E731
    warm = lambda: rgr.train_requests(cell, requests[:1], {**spec, "train": {**spec["train"], "steps": 2}},  # noqa: E731
                                      datas, device)
    return label, len(requests), batched, alone, warm


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--claim", nargs="*", default=["mha_memorization", "rgr_capacity"],
                        choices=["mha_memorization", "rgr_capacity"])
    parser.add_argument("--steps", type=int, default=100, help="training steps per model")
    parser.add_argument("--exp", help="restrict the group search to one experiment (e.g. M2, R2)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    config = yaml.safe_load(open(args.config))
    rows = []
    for claim in args.claim:
        make = mha_runs if claim == "mha_memorization" else rgr_runs
        exp = args.exp if args.exp and args.exp[0] == ("M" if claim == "mha_memorization" else "R") else None
        label, models, batched, alone, warm = make(config[claim], args.steps, exp, device, args.threads)
        _timed(warm, device)  # allocator, kernels
        results = {"one at a time": _timed(alone, device), "batched": _timed(batched, device)}
        for mode, seconds in results.items():
            rows.append({"claim": claim, "group": label, "mode": mode, "models": models, "steps": args.steps,
                         "wall_s": seconds, "models_steps_per_s": models * args.steps / seconds,
                         "speedup": results["one at a time"] / seconds})
    pd.set_option("display.width", 160)
    print(f"device={device} threads={args.threads} steps per model={args.steps}")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
