"""Compute one claim's verdicts from its run CSVs; write the claims JSON and a one-row-per-check CSV."""
import argparse
import sys

from attncap.claims.evaluate import evaluate_claim


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("claim")
    parser.add_argument("runs", nargs="+", help="run CSVs; the file stem is the table name")
    parser.add_argument("--tier", required=True)
    parser.add_argument("--json", required=True)
    parser.add_argument("--summary", required=True)
    args = parser.parse_args(argv)
    evaluate_claim(args.claim, args.runs, tier=args.tier, json_path=args.json, summary_path=args.summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
