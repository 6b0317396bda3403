"""Machine-checked verdicts: each claim module turns result tables into a list of `Check`s.

A check is only "reproduced" when the numbers it needs were measured; missing inputs give
"inconclusive", never a pass. A trained check also states its precondition (the learning
certificate: every compared run finite and at least `LEARNED_ACCURACY` in distribution); when the
runs do not meet it the verdict is "inconclusive" with the reason (`gate`), because a model that never
learned its training distribution cannot refute a claim. `render_markdown` turns all claims' JSON
into `results/claims.md`.
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

LEARNED_ACCURACY = 0.9
"""In-distribution accuracy (at the training length / on the training set) a trained run must reach
before it may count as evidence about capacity or generalization."""

PLATEAU_DROP = 0.05
"""A memorization run counts as converged when its loss fell by less than this fraction over the last
10% of training (`attncap.train.plateau_drop`): its accuracy is then what training can reach."""

# Learning status of one trained run, recorded in its CSV row as `status`.
LEARNED = "learned"
UNDER_TRAINED = "under-trained"
DIVERGED = "diverged"


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
    precondition: str = ""  # what the runs must satisfy before the check may decide (trained checks)
    reason: str = ""  # why the verdict is inconclusive, when it is

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def learning_status(final_loss: float, accuracy: float | None = None, threshold: float = LEARNED_ACCURACY,
                    loss_drop: float | None = None) -> str:
    """One run's certificate: `diverged` (non-finite loss), `learned` or `under-trained`.

    With `accuracy`, learned means accuracy ≥ threshold (tasks the model can solve). With `loss_drop`
    (memorization beyond capacity, where accuracy < 1 is the measurement), learned means the loss
    has plateaued: it fell by less than PLATEAU_DROP over the last 10% of training.
    """
    if final_loss is None or not math.isfinite(float(final_loss)):
        return DIVERGED
    if accuracy is not None and not float(accuracy) >= threshold:
        return UNDER_TRAINED
    if loss_drop is not None and math.isfinite(float(loss_drop)) and float(loss_drop) > PLATEAU_DROP:
        return UNDER_TRAINED
    return LEARNED


def certificate_failures(frame, label: Sequence[str], *, accuracy: str | None = "train_accuracy",
                         loss: str = "final_train_loss", threshold: float | None = LEARNED_ACCURACY,
                         loss_drop: str | None = None, saturated: float | None = None,
                         min_steps: int | None = None, steps: str = "steps") -> str:
    """'' when every run of `frame` is finite and ≥ threshold in distribution, else the reason, e.g.
    'under-trained (< 0.9 in distribution): mixer=softmax d_model=32 kv_pairs=8 reached 0.22; diverged: …'.

    Runs are grouped by `label` (seeds averaged); a group fails if any of its runs diverged or its
    mean accuracy is below the threshold. With `accuracy=None` and a `loss_drop` column (memorization
    runs), a group fails instead if its loss had not plateaued (mean drop > PLATEAU_DROP), unless its
    mean accuracy is at least `saturated` (a model that stores everything keeps sharpening its
    margins; its loss never plateaus, and its accuracy cannot rise). `min_steps` fails every run
    trained for fewer steps (column `steps`): too short to say anything.
    """
    if frame is None or len(frame) == 0:
        return "no trained runs"
    needed = [c for c in (accuracy, loss, loss_drop) if c is not None]
    if any(c not in frame for c in needed):
        return f"no learning certificate in the table (columns {needed})"
    if min_steps is not None and steps in frame and float(frame[steps].min()) < min_steps:
        return f"trained {int(frame[steps].min())} steps (< {min_steps}): too short to measure"
    label = [c for c in label if c in frame]
    diverged, under, moving = [], [], []
    groups = frame.groupby(label, sort=True) if label else [((), frame)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        name = " ".join(f"{c}={_short(v)}" for c, v in zip(label, key)) or "all runs"
        losses = _floats(group[loss])
        if not np.isfinite(losses).all():
            diverged.append(name)
            continue
        mean_acc = float(_floats(group[accuracy]).mean()) if accuracy is not None else math.nan
        if accuracy is not None and threshold is not None and not mean_acc >= threshold:
            under.append(f"{name} reached {mean_acc:.2f}")
        if loss_drop is not None:
            drop = float(np.nanmean(_floats(group[loss_drop])))
            if drop > PLATEAU_DROP and not (saturated is not None and mean_acc >= saturated):
                moving.append(f"{name} (loss fell {drop:.0%} in the last 10% of training)")
    parts = []
    if moving:
        parts.append("loss not plateaued: " + listing(moving))
    if under:
        parts.append(f"under-trained (< {threshold:g} in distribution): " + listing(under))
    if diverged:
        parts.append("diverged: " + listing(diverged))
    return "; ".join(parts)


SOFT_FAILURES = ("under-trained", "loss not plateaued")
"""Certificate failures after which a lower-bound pass may stand (the runs trained, finitely, but could
still improve); a missing certificate, too-short training or divergence withholds every verdict."""


def gate(check: Check, precondition: str, failure: str, *, lower_bound: bool = False) -> Check:
    """Record a trained check's precondition; if `failure` is non-empty the verdict becomes
    inconclusive with that reason (the measured numbers stay).

    lower_bound=True is for checks of the form "trained models reach at least X": more training can
    only raise the measurement, so a pass by under-trained runs stands and only a failure (not
    reproduced, partially) is withheld.
    """
    check.precondition = precondition
    soft = failure.startswith(SOFT_FAILURES) and "diverged" not in failure
    if failure and not (lower_bound and soft and check.verdict == REPRODUCED):
        check.verdict = INCONCLUSIVE
        check.reason = failure
    elif failure:
        check.reason = f"passes although {failure}"
    return check


def listing(items: Sequence[str], most: int = 6) -> str:
    """'a, b, c and 4 more': the first `most` items of a reason, and how many were left out."""
    items = list(items)
    more = f" and {len(items) - most} more" if len(items) > most else ""
    return ", ".join(items[:most]) + more


def missing_check(check_id: str, statement: str, source: str, expected: str, tolerance: str = "") -> Check:
    """The inconclusive check of a claim whose required results are absent."""
    return Check(check_id, statement, source, "required results missing", expected, tolerance, INCONCLUSIVE)


def _floats(series) -> np.ndarray:
    return np.asarray(series, dtype=float)


def _short(value) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


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
            verdict = f"**{c['verdict']}**"
            if c.get("reason"):
                verdict += f" ({_cell(c['reason'])})"
            lines.append(
                f"| {doc['claim']} | {c['id']} | {_cell(c['statement'])} | {measured} | "
                f"{_cell(c['expected'])} | {verdict} |"
            )
    counts = verdict_totals(documents)
    lines += ["", "Totals: " + ", ".join(f"{k}: {v}" for k, v in counts.items()), ""]
    return "\n".join(lines)


def verdict_totals(documents: Sequence[dict]) -> dict[str, int]:
    return {v: sum(c["verdict"] == v for d in documents for c in d["checks"]) for v in VERDICTS}


def render_landing(documents: Sequence[dict]) -> str:
    """The Snakemake report's landing page (reStructuredText): what the pipeline is, the tier and
    revision the verdicts were built from, and the verdict totals, overall and per claim."""
    tiers = ", ".join(sorted({d["tier"] for d in documents})) or "none"
    revisions = ", ".join(sorted({d.get("provenance", {}).get("git_revision", "unknown") for d in documents})) or "unknown"
    totals = verdict_totals(documents)
    title = "attncap: how much can an attention layer memorize?"
    lines = [
        title, "=" * len(title), "",
        "attncap is a Snakemake + PyTorch pipeline that re-derives, by real computation, published claims about "
        "the memorization capacity of attention (linear vs softmax retrieval, attention-only transformers, "
        "multi-head memorization, relational graph recognition, swap-task state tracking). Every run table, "
        "figure and verdict in this report was regenerated from the configuration; a claim that does not "
        "reproduce at this scale is reported as such, with the measured numbers.", "",
        f":Tier: {tiers}",
        f":Revision: {revisions}",
        f":Claims: {', '.join(d['claim'] for d in documents) or 'none'}",
        ":Verdicts: " + ", ".join(f"{k}: {v}" for k, v in totals.items()),
        "",
        ".. list-table:: Verdicts per claim",
        "   :header-rows: 1",
        "",
        "   * - claim",
        *[f"     - {v}" for v in VERDICTS],
    ]
    for doc in documents:
        lines.append(f"   * - {doc['claim']}")
        lines += [f"     - {verdict_totals([doc])[v]}" for v in VERDICTS]
    lines += ["", "The verdict of every check is in ``results/claims.md`` (category *verdicts*); each claim's "
              "figures and its executed notebook are under the claim's own category.", ""]
    return "\n".join(lines)


def _cell(value) -> str:
    if isinstance(value, dict):
        text = "; ".join(f"{k}={_cell(v)}" for k, v in value.items())
    elif isinstance(value, list):
        text = ", ".join(_cell(v) for v in value[:12]) + (" …" if len(value) > 12 else "")
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")
