"""Execute a claim notebook with papermill, keep the executed copy, and render it to HTML."""
import argparse
import sys

from attncap.notebook import execute_notebook


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("notebook")
    parser.add_argument("--executed", required=True)
    parser.add_argument("--html", required=True)
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    args = parser.parse_args(argv)
    execute_notebook(args.notebook, args.executed, args.html, dict(args.parameter))
    return 0


if __name__ == "__main__":
    sys.exit(main())
