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
    args = parser.parse_args(argv)
    print(f"wrote {write_reference(args.results, args.target, figures=args.figures)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
