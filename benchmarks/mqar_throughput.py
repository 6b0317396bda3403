"""Batched vs one-at-a-time training of claim 1's MQAR models of one d_model (all mixers × kv, or one mixer's
group with the short convolution: a default-tier job).

    python benchmarks/mqar_throughput.py [--config config/config.yaml] [--steps 40] [--d-model 64] [--mixer M]

Trains the group for a few steps as one stack on the model axis, then each model alone with the same
code (a stack of one), and prints models·steps per second and the speed-up. The ratio also prices a model
that has stopped early: the trainer holds its parameters but still steps it with the others.
"""
from __future__ import annotations

import argparse
import time

import yaml

from attncap.experiments import retrieval_capacity
from attncap.experiments.context import RunContext


def throughput(spec: dict, d_model: int, threads: int) -> tuple[float, int]:
    context = RunContext.create(claim="retrieval_capacity", experiment="E5", threads=threads, part=f"d{d_model}",
                                device="cpu")
    started = time.perf_counter()
    frame = retrieval_capacity.mqar(spec, context)
    return time.perf_counter() - started, len(frame)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--mixer", help="one mixer's group (with the short convolution), as one default-tier job")
    args = parser.parse_args()
    spec = yaml.safe_load(open(args.config))["retrieval_capacity"]["E5"] | {
        "steps": args.steps, "eval_batches": 1, "target_accuracy": 2.0,  # no early stop
        "continue_cap": 1, "restarts": 0}  # exactly `steps` steps: no continuation, no restart
    if args.mixer:
        spec |= {"mixers": [args.mixer], "short_conv": [True]}
    batched_s, models = throughput(spec, args.d_model, args.threads)
    single_s = 0.0
    for mixer in spec["mixers"]:
        for conv in spec.get("short_conv", [False]):
            for kv in spec["kv_pairs"]:
                for seed in spec["seeds"]:
                    alone = spec | {"mixers": [mixer], "short_conv": [conv], "kv_pairs": [kv], "seeds": [seed]}
                    single_s += throughput(alone, args.d_model, args.threads)[0]
    rate = lambda s: models * args.steps / s  # noqa: E731
    print(f"MQAR group d_model={args.d_model}: {models} models × {args.steps} steps, {args.threads} thread(s)")
    print(f"{'mode':<16}{'seconds':>10}{'models·steps/s':>16}")
    print(f"{'batched':<16}{batched_s:>10.2f}{rate(batched_s):>16.1f}")
    print(f"{'one at a time':<16}{single_s:>10.2f}{rate(single_s):>16.1f}")
    print(f"speed-up: {single_s / batched_s:.2f}×")


if __name__ == "__main__":
    main()
