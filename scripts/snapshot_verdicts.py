"""Freeze the smoke tier's verdicts and key numbers as the expected file CI compares against.

    snakemake --cores 2 --configfile config/smoke.yaml && python scripts/snapshot_verdicts.py

Writes tests/expected/smoke_claims.json. Review the diff before committing: a change there is a
change in a reproduced result.
"""
import json
import sys
from pathlib import Path

from attncap.claims.snapshot import snapshot


def main() -> int:
    results = Path(sys.argv[1] if len(sys.argv) > 1 else "results")
    target = Path(__file__).resolve().parents[1] / "tests" / "expected" / "smoke_claims.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(snapshot(results / "claims"), indent=1, sort_keys=True) + "\n")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
