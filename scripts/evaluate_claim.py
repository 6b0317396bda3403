"""Compute one claim's verdicts from its run CSVs; write the claims JSON and a one-row-per-check CSV."""
import argparse
import json
import sys

from attncap.claims.evaluate import TableError, evaluate_claim


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("claim")
    parser.add_argument("runs", nargs="+", help="run CSVs; the file stem is the table name")
    parser.add_argument("--spec", required=True, help="JSON of the claim's config section: the tables must cover its grid")
    parser.add_argument("--tier", required=True)
    parser.add_argument("--json", required=True)
    parser.add_argument("--summary", required=True)
    args = parser.parse_args(argv)
    try:
        evaluate_claim(args.claim, args.runs, tier=args.tier, json_path=args.json, summary_path=args.summary,
                       section=json.loads(args.spec))
    except TableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
