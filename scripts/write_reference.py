"""Write a finished run's verdicts, claims.md and headline figures to reference/<tier>/ (attncap.compare).

    snakemake reference --cores 2            (the Snakemake target; runs whatever is not built yet first)
"""
import argparse
import sys

from attncap.compare import write_reference


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results")
    parser.add_argument("target")
    parser.add_argument("--figures", nargs="*", default=[])
    parser.add_argument("--job-time", choices=("cpu_time", "s"), default="cpu_time",
                        help="the benchmark column summed into job_core_seconds: CPU time, or wall time (s) for "
                             "warm-started jobs, whose work the benchmark does not see")
    args = parser.parse_args(argv)
    print(f"wrote {write_reference(args.results, args.target, figures=args.figures, job_time=args.job_time)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
