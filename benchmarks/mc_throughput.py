"""Monte Carlo capacity-search throughput (claim 1, E3) against this machine's float64 matmul rate.

    python benchmarks/mc_throughput.py [--threads 2]

Prints Beta-law samples per second for the full capacity searches of one d (all four β share the
stream; each search is doubling + bisection with a sequential test to 3 standard errors at every N,
as E3 runs it at the default tier), the float64 matmul rate, and the search's arithmetic rate as a
fraction of that limit. Arithmetic per
sample is counted as 1 (Beta draw → t) + per β: 2 (β(t−1)) + 1 (exp) + 1 (square) + 2 (two sums) = 25
for four β; the Beta draw itself costs tens of flops, so the fraction understates the sampler's work.
"""
import argparse
import time

import numpy as np
import torch
import yaml

from attncap import theory
from attncap.runtime import matmul_gflops  # noqa: F401 (compile_speed and swap_throughput import it from here)
from attncap.experiments.retrieval_capacity import capacity_columns, softmax_capacity_search
from attncap.tasks.retrieval_capacity import GrowingDotStream

FLOPS_PER_SAMPLE_PER_BETA = 6


def search_throughput(d: int, max_log2_n: int, spec: dict) -> dict:
    names = ["sqrt_d", "half_d", "d", "two_d"]
    betas = [theory.beta_value(n, d) for n in names]
    stream = GrowingDotStream(d, betas, seed=0, first=spec["min_queries"])
    start = time.perf_counter()
    found = []
    for b in range(len(betas)):
        row = capacity_columns(softmax_capacity_search(stream, b, 0.1, spec, 2**max_log2_n), 0.01, 2**max_log2_n)
        found.append(row["n_star"] if row["n_lo"] == row["n_hi"] else f"{row['n_lo']}..{row['n_hi']}")
    elapsed = time.perf_counter() - start
    return {"d": d, "n_star": found, "samples": stream.samples_drawn, "seconds": elapsed,
            "samples_per_s": stream.samples_drawn / elapsed, "betas": len(betas)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dims", type=int, nargs="+", default=[12, 24])
    parser.add_argument("--max-log2-n", type=int, default=24)
    parser.add_argument("--config", default="config/config.yaml", help="E3's query budget comes from here")
    args = parser.parse_args()
    spec = yaml.safe_load(open(args.config))["retrieval_capacity"]["E3"]
    torch.set_num_threads(args.threads)
    gflops = matmul_gflops()
    print(f"float64 matmul (1024², {args.threads} threads): {gflops:.1f} GFLOP/s")
    print(f"{'d':>4} {'N* or interval per β (ε=0.1)':>36} {'samples':>12} {'seconds':>8} {'Msamples/s':>11} {'fraction of matmul':>19}")
    for d in args.dims:
        r = search_throughput(d, args.max_log2_n, spec)
        flops = r["samples_per_s"] * (1 + FLOPS_PER_SAMPLE_PER_BETA * r["betas"])
        print(f"{d:>4} {str(r['n_star']):>36} {r['samples']:>12,} {r['seconds']:>8.2f} "
              f"{r['samples_per_s'] / 1e6:>11.2f} {flops / (gflops * 1e9):>19.4f}")


if __name__ == "__main__":
    main()
