"""Batched vs one-at-a-time training of claim 5's largest swap-task group (every model × seed of one n).

    python benchmarks/swap_throughput.py [--config config/config.yaml] [--steps 30] [--n 5]

Trains the S1 group of n objects for a few steps as one stack on the model axis (equal mixers run
together, different mixers one after the other inside each block), then each model alone with the same
code, and prints training models·steps per second and the speed-up. Evaluation is left out of the timing.

It also counts the floating-point work of one training step (torch's FlopCounterMode, matmuls only) and
prints the one-at-a-time arithmetic rate as a fraction of this core's float32 matmul rate: where one
model alone already keeps the core that busy, stacking models cannot multiply throughput on a CPU.
"""
from __future__ import annotations

import argparse

import torch
import yaml
from mc_throughput import matmul_gflops
from torch.utils.flop_counter import FlopCounterMode

from attncap.experiments import swap_state_tracking
from attncap.experiments.context import RunContext
from attncap.models.lm import BatchedLM, masked_token_loss
from attncap.tasks.swap_state_tracking import sample, vocab_size


def train_seconds(spec: dict, n: int, threads: int) -> tuple[float, int]:
    """Training wall time of the whole group of `spec` at n objects, and its number of models."""
    context = RunContext.create(claim="swap_state_tracking", experiment="S1", threads=threads, part=f"n{n}",
                                device="cpu")
    frame = swap_state_tracking.run("S1", spec, context)
    first = frame.iloc[0]
    return float(first["train_time_s"] * first["models_in_job"]), int(first["models_in_job"])


def step_flops(spec: dict, n: int, mixers: list[str]) -> float:
    """Matmul FLOPs of one forward + backward step of the models `mixers` (one seed each)."""
    model = BatchedLM(list(range(len(mixers))), mixers, vocab=vocab_size(n), d_model=spec["d_model"],
                      n_layers=spec["layers"], n_heads=spec["heads"], mlp_ratio=spec["mlp_ratio"], positional="rotary")
    batches = [sample(n, spec["T_train"], spec["batch"], torch.Generator().manual_seed(0)) for _ in mixers]
    tokens, targets = torch.stack([b.tokens for b in batches]), torch.stack([b.targets for b in batches])
    with FlopCounterMode(display=False) as counter:
        masked_token_loss(model(tokens), targets).sum().backward()
    return float(counter.get_total_flops())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--n", type=int, default=5, help="number of objects (a boundary n has the most models)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    spec = yaml.safe_load(open(args.config))["swap_state_tracking"]["S1"]
    spec = spec | {"steps": args.steps, "warmup_steps": min(spec["warmup_steps"], args.steps - 1),
                   "eval_batches": 1, "n_objects": [args.n]}
    batched_s, models = train_seconds(spec, args.n, args.threads)
    seeds = spec["boundary_seeds"] if args.n in spec.get("boundary_n", []) else spec["seeds"]
    single_s = 0.0
    for mixer in spec["models"]:
        for seed in seeds:
            alone = spec | {"models": [mixer], "seeds": [seed], "boundary_seeds": [seed]}
            single_s += train_seconds(alone, args.n, args.threads)[0]
    rate = lambda s: models * args.steps / s  # noqa: E731
    print(f"swap S1 group n={args.n}: {models} models × {args.steps} steps, {args.threads} thread(s)")
    print(f"{'mode':<16}{'seconds':>10}{'models·steps/s':>16}")
    print(f"{'batched':<16}{batched_s:>10.2f}{rate(batched_s):>16.1f}")
    print(f"{'one at a time':<16}{single_s:>10.2f}{rate(single_s):>16.1f}")
    print(f"speed-up: {single_s / batched_s:.2f}×")
    flops = sum(step_flops(spec, args.n, [mixer]) * len(seeds) for mixer in spec["models"]) * args.steps
    peak = matmul_gflops(dtype=torch.float32) * 1e9
    print(f"float32 matmul rate: {peak / 1e9:.1f} GFLOP/s; one at a time runs at {flops / single_s / 1e9:.2f} "
          f"GFLOP/s = {flops / single_s / peak:.0%} of it")


if __name__ == "__main__":
    main()
