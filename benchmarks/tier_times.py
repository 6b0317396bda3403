"""Wall time per claim and per rule from Snakemake's `benchmark:` files of the last run.

    python benchmarks/tier_times.py [results/benchmarks]

Run after `snakemake --cores 2` (or any tier); prints one row per job and the sum per claim. Jobs run
two at a time on two cores, so the per-claim sum is core-time, not elapsed time. Under `warm_start` (the smoke
tier) a job is forked from the run's warm interpreter, outside its process tree: its seconds are right, its
max_rss_mb is only the wrapper's.
"""
import sys
from pathlib import Path

import pandas as pd


def collect(root: Path) -> pd.DataFrame:
    rows = []
    for tsv in sorted(root.glob("*/*.tsv")):
        frame = pd.read_csv(tsv, sep="\t")
        rows.append({"claim": tsv.parent.name, "job": tsv.stem, "seconds": float(frame["s"].iloc[-1]),
                     "max_rss_mb": float(frame["max_rss"].iloc[-1]) if "max_rss" in frame else float("nan")})
    return pd.DataFrame(rows)


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "results/benchmarks")
    jobs = collect(root)
    if jobs.empty:
        sys.exit(f"no benchmark files under {root}; run snakemake first")
    pd.set_option("display.width", 160)
    print(jobs.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    per_claim = jobs.groupby("claim")["seconds"].agg(["sum", "max", "count"]).rename(
        columns={"sum": "core_seconds", "max": "longest_job_s", "count": "jobs"})
    print()
    print(per_claim.to_string(float_format=lambda v: f"{v:.1f}"))
    print(f"\ntotal core-minutes: {jobs['seconds'].sum() / 60:.1f}")
    from attncap.runtime import machine_rates_line

    print(machine_rates_line())


if __name__ == "__main__":
    main()
