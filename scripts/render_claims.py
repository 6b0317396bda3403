"""Gather every claim's verdict JSON into results/claims.md, and for the report its landing page and a page of
every check (with --rivals: print docs/verdicts.md's table of checks and the rivals they beat instead)."""
import argparse
import json
import sys
from pathlib import Path

from attncap.claims import render_checks, render_landing, render_markdown, render_rivals
from attncap.runtime import atomic_path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("claims", nargs="+")
    parser.add_argument("--out")
    parser.add_argument("--rivals", action="store_true", help="print the checks-and-rivals table to stdout")
    parser.add_argument("--landing", help="also write the report's landing page (reStructuredText) here")
    parser.add_argument("--checks", help="also write the report's page of every check (HTML) here")
    args = parser.parse_args(argv)
    documents = [json.loads(Path(p).read_text()) for p in args.claims]
    if args.rivals:
        sys.stdout.write(render_rivals(documents))
        return 0
    if not args.out:
        parser.error("--out is required (unless --rivals)")
    with atomic_path(args.out) as tmp:
        tmp.write_text(render_markdown(documents))
    if args.landing:
        with atomic_path(args.landing) as tmp:
            tmp.write_text(render_landing(documents))
    if args.checks:
        with atomic_path(args.checks) as tmp:
            tmp.write_text(render_checks(documents))
    return 0


if __name__ == "__main__":
    sys.exit(main())
