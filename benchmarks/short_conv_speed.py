"""The short convolution's in-place form against its padded form: the op alone at E5's shapes, then one E5 job.

    python benchmarks/short_conv_speed.py [--mixer linear_elu] [--d-model 64] [--steps 60] [--repeats 20]

The op is memory-bound (a few multiply-adds per element of a (models, batch, T, 3·d) tensor), so the script
prints the machine's one-thread memory-copy rate and float32 matmul rate beside the times, and the bytes the
op's input holds. The E5 job (one default-tier (width, mixer) job with the convolution, `steps` steps, no
early stop) runs once with each form; its rows must be equal in every column but the times, since the
in-place form is bitwise the padded one (tests/test_short_conv.py).
"""
from __future__ import annotations

import argparse
import time

import pandas as pd
import torch
import yaml

import attncap.models.layers as layers
from attncap.experiments import retrieval_capacity
from attncap.experiments.context import RunContext
from attncap.models.mixers import padded_short_convolution, short_convolution
from attncap.runtime import machine_rates_line

FORMS = {"in place": short_convolution, "padded": padded_short_convolution}


def op_ms(conv, shape: tuple, width: int, repeats: int) -> float:
    """Median milliseconds of one forward and backward of `conv` on x of `shape`."""
    x = torch.randn(*shape, requires_grad=True)
    w = torch.randn(shape[0], shape[-1], width, requires_grad=True)
    times = []
    for _ in range(repeats + 3):
        started = time.perf_counter()
        conv(x, w).sum().backward()
        times.append(time.perf_counter() - started)
    return 1e3 * sorted(times[3:])[len(times[3:]) // 2]


def job(spec: dict, d_model: int, conv) -> tuple[float, pd.DataFrame]:
    layers.short_convolution = conv  # the blocks call it through the layers module
    context = RunContext.create(claim="retrieval_capacity", experiment="E5", threads=1, part=f"d{d_model}",
                                device="cpu")
    started = time.perf_counter()
    rows = retrieval_capacity.mqar(spec, context)
    return time.perf_counter() - started, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--mixer", default="linear_elu")
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(machine_rates_line())
    spec = yaml.safe_load(open(args.config))["retrieval_capacity"]["E5"]
    models = len(spec["kv_pairs"]) * len(spec["seeds"])
    shape = (models, spec["batch"], spec["seq_len"], 3 * args.d_model)  # short_conv_on: qkv
    megabytes = torch.Size(shape).numel() * 4 / 2**20
    print(f"op alone, x of {shape} ({megabytes:.1f} MiB), width {spec['short_conv_width']}, forward + backward:")
    for name, conv in FORMS.items():
        print(f"  {name:<9} {op_ms(conv, shape, spec['short_conv_width'], args.repeats):7.1f} ms")
    spec = spec | {"steps": args.steps, "target_accuracy": 2.0, "continue_cap": 1, "restarts": 0,  # exactly `steps`
                   "mixers": [args.mixer], "short_conv": [True], "d_model": [args.d_model]}
    results = {name: job(spec, args.d_model, conv) for name, conv in FORMS.items()}
    layers.short_convolution = short_convolution
    columns = [c for c in results["padded"][1] if not c.endswith("time_s")]
    same = results["in place"][1][columns].equals(results["padded"][1][columns])
    print(f"E5 job {args.mixer} d_model={args.d_model}, {models} models × {args.steps} steps:")
    for name, (seconds, _) in results.items():
        print(f"  {name:<9} {seconds:7.1f} s")
    print(f"  speed-up {results['padded'][0] / results['in place'][0]:.2f}×; rows equal in every column but the times: {same}")


if __name__ == "__main__":
    main()
