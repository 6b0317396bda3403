"""Claim 1's E4: what a query's conditional probability buys over a 0/1 indicator, in CPU time per precision.

    python benchmarks/e4_estimator.py [--queries 64] [--n 100 10000 1000000]

At each N, at the d where P(SNR⁻¹ ≤ 1) crosses 1/2 (the default tier's d*, rounded), it times and measures
the spread of two unbiased per-query estimates of that fraction, both from the same exact scalar reduction
(ln SNR⁻¹ = L(a) − 2ρ/√d + ln(ν/ν'), `SnrProbabilities`'s docstring):
  * indicator: draw ρ, ν, ν' and the crosstalk z, report 1[SNR⁻¹ ≤ 1] (one logsumexp over N − 1 normals per
    query and per d; what E4 measured before);
  * conditional: `SnrProbabilities`, the crosstalk z drawn once per query and ρ, ν, ν' integrated out (L on a
    grid of a, paid once per query for every d; then a χ²_d quadrature per d).
It prints seconds per query (for one d, and the grid's share for a second d), the SD per query, and the CPU
seconds each needs for a standard error of 0.001 on the fraction (SD² / 0.001² queries), the ratio of the two,
and the exponentials per second of the conditional's grid against the float64 matmul rate measured here.
"""
import argparse
import math
import time

import numpy as np
from scipy import special

from attncap.experiments.retrieval_capacity import SnrProbabilities
from attncap.runtime import matmul_gflops

CROSSING_D = {100: 11, 316: 16, 1000: 21, 3162: 26, 10_000: 32, 31_623: 39, 100_000: 47, 316_228: 55, 1_000_000: 64}


def indicators(n: int, d: int, queries: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rho, num, den = rng.chisquare(d, size=(3, queries))
    out = np.empty(queries)
    for q in range(queries):
        z = rng.standard_normal(n - 1)
        log_sum = special.logsumexp(2.0 * math.sqrt(rho[q] / d) * z) - 2.0 * rho[q] / math.sqrt(d)
        out[q] = log_sum + math.log(num[q] / den[q]) <= 0.0
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=64)
    parser.add_argument("--n", type=int, nargs="+", default=[100, 10_000, 1_000_000])
    args = parser.parse_args(argv)
    rate = matmul_gflops()  # float64
    print(f"float64 matmul: {rate:.1f} GFLOP/s (torch's thread setting as found)")
    print(f"{'N':>9} {'d':>4} | {'indicator s/q':>13} {'SD':>6} {'s to SE .001':>12} | {'conditional s/q':>15} "
          f"{'+d s/q':>8} {'SD':>7} {'s to SE .001':>12} | {'speed-up':>8} {'exp/s':>9}")
    SnrProbabilities(10, seed=0, block=2)(5, 2)  # scipy's stats and interpolate imported before the clock runs
    for n in args.n:
        d = CROSSING_D.get(n) or round(float((1 + math.log(n - 1) / 2) ** 2))
        queries = args.queries if n <= 100_000 else max(8, args.queries // 4)
        start = time.perf_counter()
        ind = indicators(n, d, queries)
        t_ind = (time.perf_counter() - start) / queries
        probs = SnrProbabilities(n, seed=0, block=queries)
        start = time.perf_counter()
        cond = probs(d, queries)
        t_cond = (time.perf_counter() - start) / queries
        start = time.perf_counter()
        probs(d + 1, queries)  # the grid is mostly shared: a second d costs the quadrature and a few grid points
        t_next = (time.perf_counter() - start) / queries
        grid = len(probs.nodes(d)[2])
        sd_ind = max(float(ind.std(ddof=1)), 1e-12)
        sd_cond = float(cond.std(ddof=1))
        need_ind, need_cond = t_ind * sd_ind**2 / 1e-6, t_cond * sd_cond**2 / 1e-6
        print(f"{n:>9} {d:>4} | {t_ind:>13.2e} {sd_ind:>6.3f} {need_ind:>12.1f} | {t_cond:>15.2e} {t_next:>8.1e} "
              f"{sd_cond:>7.4f} {need_cond:>12.2f} | {need_ind / need_cond:>8.0f}× {grid * (n - 1) / t_cond:>9.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
