"""Compare a run's verdicts and key numbers with a committed snapshot, with tolerances.

Used by CI: a change that silently alters a smoke-tier result fails with a readable diff.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

REL_TOL, ABS_TOL = 0.05, 1e-6


def _numbers(value, prefix=""):
    """Flatten the numeric leaves of a check's `measured` field into {path: number}."""
    if isinstance(value, bool):
        return {}
    if isinstance(value, (int, float)):
        return {prefix or "value": float(value)}
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(_numbers(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list):
        out = {}
        for i, item in enumerate(value):
            out.update(_numbers(item, f"{prefix}[{i}]"))
        return out
    return {}


def snapshot(claims_dir: str | Path) -> dict:
    out = {}
    for path in sorted(Path(claims_dir).glob("*.json")):
        document = json.loads(path.read_text())
        out[document["claim"]] = {c["id"]: {"verdict": c["verdict"], "numbers": _numbers(c["measured"])}
                                  for c in document["checks"]}
    return out


def differences(expected: dict, actual: dict) -> list[str]:
    """Readable lines for every verdict that changed and every number outside tolerance."""
    lines = []
    for claim, checks in expected.items():
        if claim not in actual:
            lines.append(f"{claim}: claim missing from this run")
            continue
        for check_id, want in checks.items():
            got = actual[claim].get(check_id)
            if got is None:
                lines.append(f"{claim}.{check_id}: check missing from this run")
                continue
            if got["verdict"] != want["verdict"]:
                lines.append(f"{claim}.{check_id}: verdict {want['verdict']!r} -> {got['verdict']!r}")
            for key, value in want["numbers"].items():
                new = got["numbers"].get(key)
                if new is None:
                    lines.append(f"{claim}.{check_id}.{key}: missing (expected {value})")
                elif not math.isclose(new, value, rel_tol=REL_TOL, abs_tol=ABS_TOL):
                    lines.append(f"{claim}.{check_id}.{key}: {value} -> {new}")
    return lines
