"""Throughput of the batched trainer against one-model-at-a-time training on the A1 grid (claim 2).

For each d = d_h of the A1 config, the same models (every H × seed) are trained for a fixed number of
steps three ways: all in one padded stack (group_heads), one stack per H (seeds batched), and each
model alone. Printed: wall time, models·steps per second and the speed-up over one-at-a-time.

    python benchmarks/train_throughput.py [--config config/config.yaml] [--epochs 1] [--dims 5 8]
"""
from __future__ import annotations

import argparse
import time

import pandas as pd
import torch
import yaml

from attncap.experiments.aot_memorization import Stack, train_stack
from attncap.runtime import configure_torch, resolve_device
from attncap.tasks.aot_memorization import make_block


def timed(stack_list, spec, table, sample, device) -> float:
    started = time.perf_counter()
    for stack in stack_list:
        train_stack(stack, spec, table, sample, device, desc="bench")
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--epochs", type=int, default=1, help="epochs per run (64 steps each at default)")
    parser.add_argument("--dims", type=int, nargs="*", help="subset of the A1 d values")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    configure_torch(args.threads, 0)
    device = resolve_device(args.device)
    spec = dict(yaml.safe_load(open(args.config))["aot_memorization"]["A1"])
    spec["epochs"] = args.epochs
    spec["last_batches"] = min(spec["last_batches"], args.epochs)
    table, sample = make_block(spec["N"], spec["n_sequences"], 1)
    steps = args.epochs * -(-spec["n_sequences"] // spec["batch"])
    rows = []
    for d in args.dims or spec["d"]:
        models = [(h, s) for h in spec["heads"] for s in spec["seeds"]]
        grouped = [Stack("aot", d, d, "shared", [h for h, _ in models], [0] * len(models),
                         [s for _, s in models], spec["final_lr"])]
        per_h = [Stack("aot", d, d, "shared", [h] * len(spec["seeds"]), [0] * len(spec["seeds"]), spec["seeds"],
                       spec["final_lr"]) for h in spec["heads"]]
        alone = [Stack("aot", d, d, "shared", [h], [0], [s], spec["final_lr"]) for h, s in models]
        timed(alone[:1], {**spec, "epochs": 1}, table, sample, device)  # warm-up (allocator, kernels)
        results = {name: timed(stacks, spec, table, sample, device)
                   for name, stacks in (("one at a time", alone), ("batched: stack per H", per_h),
                                        ("batched: all H padded", grouped))}
        for name, seconds in results.items():
            rows.append({"d": d, "mode": name, "models": len(models), "steps": steps, "wall_s": seconds,
                         "models_steps_per_s": len(models) * steps / seconds,
                         "speedup": results["one at a time"] / seconds})
    frame = pd.DataFrame(rows)
    total = frame.groupby("mode", sort=False)[["wall_s"]].sum()
    total["speedup"] = total.loc["one at a time", "wall_s"] / total["wall_s"]
    pd.set_option("display.width", 140)
    print(f"device={device} threads={args.threads} steps per run={steps} (A1 grid: H={spec['heads']}, "
          f"seeds={spec['seeds']})")
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print("\nall d:")
    print(total.to_string(float_format=lambda v: f"{v:.2f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
