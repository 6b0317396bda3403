"""Decide claims again from the run tables a reference keeps (reference/<tier>/runs/<claim>/), with this
checkout's checks: a changed check is re-decided on the committed evidence in seconds, nothing trained.

    python scripts/redecide_reference.py reference/default --configfile config/config.yaml aot_memorization
    python scripts/redecide_reference.py reference/smoke --configfile config/smoke.yaml      (every kept claim)
"""
import argparse
import subprocess
import sys
from pathlib import Path

from attncap.claims.evaluate import TableError
from attncap.compare import redecide
from attncap.config import ConfigError, run_config


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reference", help="a reference folder, e.g. reference/default")
    parser.add_argument("claims", nargs="*", help="claims to decide again (default: every claim with kept tables)")
    parser.add_argument("--configfile", required=True, help="the tier's config file the reference was run with")
    args = parser.parse_intermixed_args(argv)  # the claims may follow --configfile
    try:
        config = run_config([args.configfile])
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    runs = Path(args.reference) / "runs"
    claims = args.claims or (sorted(p.name for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else [])
    if not claims:
        print(f"error: {args.reference} keeps no run tables (runs/<claim>/); re-run the tier instead", file=sys.stderr)
        return 1
    revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    try:
        changed = redecide(args.reference, claims, config, revision or "unknown")
    except (FileNotFoundError, KeyError, TableError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for claim, (old, new) in changed.items():
        print(f"{claim}: {old} -> {new}" if old != new else f"{claim}: {new} (unchanged)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
