"""Machine-checked verdicts: each claim module turns result tables into a list of `Check`s.

A check is only "reproduced" when the numbers it needs were measured; missing inputs give
"inconclusive", never a pass. `render_markdown` turns all claims' JSON into `results/claims.md`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Iterable, Sequence

import numpy as np

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
PARTIALLY = "partially"
INCONCLUSIVE = "inconclusive"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, PARTIALLY, INCONCLUSIVE)


@dataclasses.dataclass
class Check:
    id: str
    statement: str
    source: str
    measured: object
    expected: str
    tolerance: str
    verdict: str
    tier: str = "unknown"

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def verdict_from(passed: bool | None) -> str:
    """True → reproduced, False → not reproduced, None (not measurable) → inconclusive."""
    if passed is None:
        return INCONCLUSIVE
    return REPRODUCED if passed else NOT_REPRODUCED


def every_cell_verdict(passes: Sequence[bool]) -> str:
    """For laws that must hold in every cell: all pass → reproduced, any failure → not reproduced,
    no cells → inconclusive."""
    passes = list(passes)
    if not passes:
        return INCONCLUSIVE
    return REPRODUCED if all(passes) else NOT_REPRODUCED


def fraction_verdict(passes: Sequence[bool]) -> str:
    """All cells pass → reproduced; none → not reproduced; some → partially; no cells → inconclusive."""
    passes = list(passes)
    if not passes:
        return INCONCLUSIVE
    if all(passes):
        return REPRODUCED
    return NOT_REPRODUCED if not any(passes) else PARTIALLY


def linear_fit(x, y) -> dict:
    """Least-squares line y = a + b x with R²; NaN fields when fewer than 3 finite points."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if len(x) < 3 or np.ptp(x) == 0:
        return {"slope": math.nan, "intercept": math.nan, "r2": math.nan, "n": int(len(x))}
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (intercept + slope * x)
    total = np.sum((y - y.mean()) ** 2)
    r2 = 1.0 - np.sum(residual**2) / total if total > 0 else 1.0
    return {"slope": float(slope), "intercept": float(intercept), "r2": float(r2), "n": int(len(x))}


def rounded(value, digits: int = 4):
    """Round floats (recursively) so JSON stays readable and diffable."""
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v, digits) for v in value]
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if not math.isfinite(value):
            return None
        return float(f"{value:.{digits}g}")
    if isinstance(value, np.integer):
        return int(value)
    return value


def claim_document(claim: str, title: str, tier: str, checks: Iterable[Check], provenance: dict) -> dict:
    checks = [c.as_dict() for c in checks]
    for check in checks:
        check["measured"] = rounded(check["measured"])
        check["tier"] = tier
    return {"claim": claim, "title": title, "tier": tier, "provenance": provenance, "checks": checks}


def render_markdown(documents: Sequence[dict]) -> str:
    """One table for all claims, with the tier and revision it was built from."""
    tiers = sorted({d["tier"] for d in documents})
    revisions = sorted({d.get("provenance", {}).get("git_revision", "unknown") for d in documents})
    lines = [
        "# attncap: verdicts",
        "",
        f"Tier: {', '.join(tiers)}. Built from revision: {', '.join(revisions)}.",
        "",
        "| claim | check | statement | measured | expected | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for doc in documents:
        for c in doc["checks"]:
            measured = _cell(c["measured"])
            lines.append(
                f"| {doc['claim']} | {c['id']} | {_cell(c['statement'])} | {measured} | "
                f"{_cell(c['expected'])} | **{c['verdict']}** |"
            )
    counts = {v: sum(c["verdict"] == v for d in documents for c in d["checks"]) for v in VERDICTS}
    lines += ["", "Totals: " + ", ".join(f"{k}: {v}" for k, v in counts.items()), ""]
    return "\n".join(lines)


def _cell(value) -> str:
    if isinstance(value, dict):
        text = "; ".join(f"{k}={_cell(v)}" for k, v in value.items())
    elif isinstance(value, list):
        text = ", ".join(_cell(v) for v in value[:12]) + (" …" if len(value) > 12 else "")
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")
