"""Machine-checked verdicts: each claim module turns result tables into a list of `Check`s.

A check names the claim's law (`expected`) and its most plausible rival (`rival`) and decides by comparing
them on the same points (`attncap.claims.laws`); a pass the rival would also get is no evidence. A check
is only "reproduced" when the numbers it needs were measured; missing inputs give "inconclusive", never a
pass. A trained check also states its precondition and is gated on the runs' learning `Certificate`
(`certify`: judged per run, typed by kind); when the runs it depends on failed it, the verdict is
"inconclusive" with the reason (`gate`), because a model that never learned cannot refute a claim.
Sanity checks (kind `sanity`) test the machinery and are counted apart from claim checks.
`render_markdown` turns all claims' JSON into `results/claims.md`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Iterable, Sequence

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
"""A memorization run counts as converged when its loss changed (either way) by less than this fraction over the last
10% of training *per unit of learning rate*: the raw fall (`attncap.train.plateau_drop`) divided by the
mean learning-rate factor of that window (`attncap.train.tail_lr_fraction`, peak = 1). A decayed schedule
cannot fake a plateau: a run losing 30% per tenth at full rate still shows 30% however small its last
learning rate is."""

MIN_LR_FRACTION = 0.01
"""Below this mean learning-rate factor in the last 10% of training a plateau cannot be told from a
stopped schedule: such a run is 'still moving' (not certified), whatever its loss did."""

# Kinds of a learning certificate (one run's, or a set of runs'). `status` in a run's CSV row is one of
# these; a Certificate of several runs lists its failures, each with its kind and the runs concerned.
LEARNED = "learned"
UNDER_TRAINED = "under-trained"  # finite, but below the in-distribution accuracy it must reach
STILL_MOVING = "still moving"  # loss still changing per unit of learning rate, either way (or the rate vanished)
DIVERGED = "diverged"  # non-finite loss
TOO_SHORT = "too short"  # trained for fewer steps than the check needs
MISSING = "missing"  # no certificate columns (or no runs) in the table: never invented
SOFT_KINDS = frozenset({UNDER_TRAINED, STILL_MOVING})
"""Failures after which a *lower-bound* pass may stand: the runs trained, finitely, and could only
improve. Any other failure withholds every verdict."""
_SEVERITY = (MISSING, DIVERGED, TOO_SHORT, STILL_MOVING, UNDER_TRAINED)

NOT_DECIDED = "not resolved"
"""The cause of an inconclusive verdict whose runs are certified (or that trains nothing): the evidence's own
precision (seed spread, search bracket, Monte Carlo interval, a bound without a proof) leaves both the law and
its rival open. The other causes are the certificate's failure kinds (`gate`)."""
WITHHELD_BECAUSE = {
    STILL_MOVING: "loss not settled when training stopped, at its cap (still falling, or rising)",
    UNDER_TRAINED: "a model did not learn its task in distribution (the recipe's failure, no evidence either way)",
    NOT_DECIDED: "not resolved at the evidence's precision (seed spread, search bracket, Monte Carlo interval, or a "
                 "bound without a proof)",
    TOO_SHORT: "trained too briefly to measure",
    DIVERGED: "a run diverged",
    MISSING: "runs or their certificate missing",
}
"""Each cause of an inconclusive verdict, as the summary's table names it (`render_withheld`)."""

CLAIM, SANITY = "claim", "sanity"
"""Kinds of check: a `claim` check tests a paper's statement against a rival law; a `sanity` check tests
that the machinery behaves (a model beats its initialisation, a construction works). Totals count them
apart."""


def _items(text: str) -> list[str]:
    """The comma-separated items of a failure's listing, commas inside parentheses kept."""
    items, depth, current = [], 0, []
    for char in text:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    items.append("".join(current).strip())
    return [i for i in items if i]


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
    rival: str = ""  # the most plausible rival law, which the check must tell apart from `expected`
    kind: str = CLAIM  # CLAIM or SANITY
    withheld: str = ""  # why an inconclusive verdict is withheld: a certificate failure kind (`gate`) or NOT_DECIDED

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")
        if self.kind not in (CLAIM, SANITY):
            raise ValueError(f"unknown check kind {self.kind!r}")

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Failure:
    """One way a set of runs fails its learning certificate: the kind, the runs concerned (labels such
    as 'mixer=softmax d_model=32 seed=1') and a sentence saying what was measured."""
    kind: str
    runs: tuple[str, ...]
    text: str


@dataclasses.dataclass(frozen=True)
class Certificate:
    """The learning certificate of the runs a check compares: learned when `failures` is empty.

    A small typed result, so that gates decide on kinds (`soft`, `only`, `without`), never by matching
    reason strings; `text` is the human-readable reason."""
    failures: tuple[Failure, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def kind(self) -> str:
        """LEARNED, or the most severe failure kind."""
        kinds = {f.kind for f in self.failures}
        return next((k for k in _SEVERITY if k in kinds), LEARNED)

    @property
    def kinds(self) -> set[str]:
        return {f.kind for f in self.failures}

    @property
    def soft(self) -> bool:
        """Failed, but only by runs that are finite and could still improve (SOFT_KINDS)."""
        return bool(self.failures) and self.kinds <= SOFT_KINDS

    @property
    def runs(self) -> tuple[str, ...]:
        return tuple(r for f in self.failures for r in f.runs)

    @property
    def text(self) -> str:
        return "; ".join(f.text for f in self.failures)

    def __add__(self, other: "Certificate") -> "Certificate":
        return Certificate(self.failures + other.failures)

    def only(self, *kinds: str) -> "Certificate":
        return Certificate(tuple(f for f in self.failures if f.kind in kinds))

    def without(self, *kinds: str) -> "Certificate":
        return Certificate(tuple(f for f in self.failures if f.kind not in kinds))

    def merged(self) -> "Certificate":
        """The same failures, one per kind and sentence: failures whose texts share the part before ': '
        (e.g. 'still improving at the step limit (not settled)') become one, their items listed once each, so
        a reason gathered over many cells reads once."""
        groups: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
        for failure in self.failures:
            head, sep, tail = failure.text.partition(": ")
            items, runs = groups.setdefault((failure.kind, head if sep else failure.text), ([], []))
            if sep:
                items.extend(t for t in _items(tail) if t not in items)
            runs.extend(r for r in failure.runs if r not in runs)
        return Certificate(tuple(Failure(kind, tuple(runs), f"{head}: {', '.join(items)}" if items else head)
                                 for (kind, head), (items, runs) in groups.items()))

    def annotated(self, note: str) -> "Certificate":
        """The same failures with `note` appended to the last one's text (e.g. where a curriculum stopped)."""
        if not self.failures or not note:
            return self
        *head, last = self.failures
        return Certificate((*head, dataclasses.replace(last, text=f"{last.text} ({note})")))

    @classmethod
    def fail(cls, kind: str, text: str, runs: Sequence[str] = ()) -> "Certificate":
        if kind not in _SEVERITY:
            raise ValueError(f"unknown certificate failure kind {kind!r}")
        return cls((Failure(kind, tuple(runs), text),))

    @classmethod
    def combine(cls, certificates: Iterable["Certificate"]) -> "Certificate":
        return cls(tuple(f for c in certificates for f in c.failures))


CERTIFIED = Certificate()


def learning_status(final_loss: float, accuracy: float | None = None, threshold: float = LEARNED_ACCURACY,
                    loss_drop: float | None = None, lr_fraction: float | None = None,
                    saturated: float | None = None) -> str:
    """One run's certificate kind: DIVERGED (non-finite loss), UNDER_TRAINED (accuracy < threshold),
    STILL_MOVING (loss changed, either way, by > PLATEAU_DROP per unit of learning rate in the last 10% of training, or the
    rate vanished), else LEARNED. The same rule as `certify`, which the checks use, so a run's `status`
    column and the gate agree.

    `accuracy` is for tasks the model can solve. `loss_drop` + `lr_fraction` are for memorization beyond
    capacity, where accuracy < 1 is the measurement; with `saturated`, a run whose accuracy reaches it is
    not held to the plateau (a model that stores everything keeps sharpening its margins)."""
    if final_loss is None or not math.isfinite(float(final_loss)):
        return DIVERGED
    if accuracy is not None and threshold is not None and not float(accuracy) >= threshold:
        return UNDER_TRAINED
    if loss_drop is not None:
        if saturated is not None and accuracy is not None and float(accuracy) >= saturated:
            return LEARNED
        if still_moving(loss_drop, lr_fraction):
            return STILL_MOVING
    return LEARNED


def still_moving(loss_drop, lr_fraction, drop: float = PLATEAU_DROP, min_lr_fraction: float = MIN_LR_FRACTION) -> bool:
    """The STILL_MOVING rule, one copy for the certificate and for `attncap.train.plateau_certified`: the
    loss changed by more than `drop` per unit of learning rate over the last 10% of training, either way
    (a loss that *rose* that much has not settled either: it oscillates or drifts up), or the rate fell
    below `min_lr_fraction` of its peak, or the history is too short to tell (NaN)."""
    change = float(loss_drop)
    if not math.isfinite(change):
        return True
    fraction = 1.0 if lr_fraction is None else float(lr_fraction)
    if not fraction >= min_lr_fraction:
        return True
    return abs(change) / fraction > drop


def certify(frame, label: Sequence[str], *, accuracy: str | None = "train_accuracy",
            loss: str = "final_train_loss", threshold: float | None = LEARNED_ACCURACY,
            loss_drop: str | None = None, lr_fraction: str = "lr_last10", saturated: float | None = None,
            min_steps: int | None = None, steps: str = "steps", run: Sequence[str] = ("seed",)) -> Certificate:
    """The learning certificate of every run (row) of `frame`, judged one run at a time.

    A run fails if its loss is not finite (DIVERGED); if its accuracy is below `threshold` (UNDER_TRAINED);
    with a `loss_drop` column (memorization runs), if its loss still changed (either way) by more than PLATEAU_DROP per unit
    of learning rate in the last 10% of training (the `lr_fraction` column, mean learning-rate factor of
    that window; required) unless its accuracy reaches `saturated` (STILL_MOVING); with `min_steps`, if it
    trained for fewer steps (TOO_SHORT). A table without the columns, or without runs, is MISSING: a
    certificate is never invented. Runs are named by `label` and `run` columns (e.g. seed)."""
    if frame is None or len(frame) == 0:
        return Certificate.fail(MISSING, "no trained runs")
    needed = [c for c in (accuracy, loss, loss_drop) if c is not None]
    if loss_drop is not None:
        needed.append(lr_fraction)
    absent = [c for c in needed if c not in frame]
    if absent:
        return Certificate.fail(MISSING, f"no learning certificate in the table (columns {absent} missing)")
    names = [c for c in list(label) + list(run) if c in frame]
    failures = {kind: [] for kind in _SEVERITY}
    for _, row in frame.iterrows():
        name = " ".join(f"{c}={_short(row[c])}" for c in names) or "run"
        if min_steps is not None and steps in frame and float(row[steps]) < min_steps:
            failures[TOO_SHORT].append((name, f"{name} ({int(row[steps])} steps)"))
            continue
        final = float(row[loss]) if row[loss] is not None else math.nan
        if not math.isfinite(final):
            failures[DIVERGED].append((name, name))
            continue
        acc = float(row[accuracy]) if accuracy is not None else math.nan
        if accuracy is not None and threshold is not None and not acc >= threshold:
            failures[UNDER_TRAINED].append((name, f"{name} reached {acc:.2f}"))
        if loss_drop is not None and not (saturated is not None and acc >= saturated):
            drop, fraction = float(row[loss_drop]), float(row[lr_fraction])
            if still_moving(drop, fraction):
                rate = f"{abs(drop) / fraction:.1%}" if fraction >= MIN_LR_FRACTION and math.isfinite(drop) else "n/a"
                way = "rose" if drop < 0 else "fell"
                failures[STILL_MOVING].append(
                    (name, f"{name} (loss {way} {abs(drop):.1%} at {fraction:.0%} of the peak rate: {rate} per unit rate)"))
    heads = {
        TOO_SHORT: f"trained fewer than {min_steps} steps, too short to measure",
        DIVERGED: "diverged",
        STILL_MOVING: f"loss not settled (changed > {PLATEAU_DROP:.0%} in the last 10% of training per unit of learning "
                      f"rate, or the rate fell below {MIN_LR_FRACTION:.0%} of its peak)",
        UNDER_TRAINED: f"under-trained (< {threshold:g} in distribution)" if threshold is not None else "under-trained",
    }
    parts = [Failure(kind, tuple(n for n, _ in items), f"{heads[kind]}: " + listing([t for _, t in items]))
             for kind, items in failures.items() if items]
    return Certificate(tuple(parts))


def gate(check: Check, precondition: str, certificate: Certificate, *, stands: str | None = None) -> Check:
    """Record a trained check's precondition; if the `certificate` failed, the verdict becomes
    inconclusive with its text as the reason (the measured numbers stay).

    `stands` names the one verdict that more training of the failing runs can only strengthen, when that is
    known: REPRODUCED for checks of the form "trained models reach at least X" (not slopes, not comparisons:
    more training can only raise the measurement), NOT_REPRODUCED for a comparison whose uncertified runs are
    all on the side already ahead. That verdict stands when every failure is soft (under-trained, still
    moving), its reason saying so; any other verdict is withheld.
    """
    if not isinstance(certificate, Certificate):
        raise TypeError(f"gate() takes a Certificate, not {type(certificate).__name__}")
    check.precondition = precondition
    if certificate.ok:
        return check
    certificate = certificate.merged()
    if stands is not None and certificate.soft and check.verdict == stands:
        check.reason = f"{'passes' if stands == REPRODUCED else 'stands'} although {certificate.text}"
    else:
        check.verdict = INCONCLUSIVE
        check.reason = certificate.text
        check.withheld = certificate.kind
    return check


def gate_certified_part(check: Check, decide: Callable[[pd.DataFrame], Check], frame: pd.DataFrame | None,
                        precondition: str, certificate: Certificate, passed: pd.Series | None,
                        keys: Sequence[str]) -> Check:
    """`gate(check, precondition, certificate)` for `check` = `decide(frame)`, withholding only the part that
    depends on an uncertified run: when some runs fail their certificate (`passed`, per row of `frame`), the
    check is decided again (`decide`) on the configurations (rows grouped by `keys`) whose every run passed, and that decision stands
    when it is one, its reason naming the withheld configurations and why. Whole configurations are withheld
    (not single seeds), so a configuration's mean never rests on its faster-converging seeds. When the
    certified part cannot decide (too few points, a missing arm), or a run failed for a reason more training
    cannot mend (diverged, missing, too short: not SOFT_KINDS), the whole check is withheld as by `gate`."""
    full = gate(check, precondition, certificate)
    if (certificate.ok or not certificate.soft or full.verdict != INCONCLUSIVE or frame is None or passed is None
            or frame.empty):
        return full  # a diverged or missing run is a fault of the pipeline, not a part to set aside
    keys = [k for k in keys if k in frame]
    config_ok = certified_configurations(frame, passed, keys)
    withheld = frame[~config_ok].drop_duplicates(keys)
    if withheld.empty or bool((~config_ok).all()):
        return full
    part = decide(frame[config_ok])
    kept = len(frame[config_ok].drop_duplicates(keys))
    labels = [" ".join(f"{k}={_short(r[k])}" for k in keys) for _, r in withheld.iterrows()]
    if part.verdict == INCONCLUSIVE:
        if part.reason:
            full.reason += (f"; the {kept} configurations whose every run is certified do not decide it either "
                            f"({part.reason})")
        return full
    part.precondition = precondition
    part.reason = (f"decided on the {kept} configurations whose every run is certified; {len(labels)} withheld: "
                   f"{listing(labels)} ({certificate.merged().text})")
    if isinstance(part.measured, dict):
        part.measured = {**part.measured, "withheld_configurations": len(labels)}
    return part


def certified_configurations(frame: pd.DataFrame, passed: pd.Series, keys: Sequence[str]) -> pd.Series:
    """Per row of `frame`: True when every run of its configuration (rows sharing `keys`) passed (`passed`, per
    row; a row it does not cover fails) — the part `gate_certified_part` decides on."""
    keys = [k for k in keys if k in frame]
    ok = passed.reindex(frame.index, fill_value=False).astype(bool)
    return ok.groupby([frame[k] for k in keys]).transform("all") if keys else ok


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
        # only an inconclusive verdict is withheld; one a gate withheld says which certificate failure
        check["withheld"] = (check["withheld"] or NOT_DECIDED) if check["verdict"] == INCONCLUSIVE else ""
    return {"claim": claim, "title": title, "tier": tier, "provenance": provenance, "checks": checks}


def revisions_of(documents: Iterable[dict]) -> list[str]:
    """The code revisions verdict documents were built from, each once: a document built from tables of
    several revisions names them all in one string ("a, b"), and claims share revisions."""
    return sorted({r.strip() for d in documents
                   for r in str(d.get("provenance", {}).get("git_revision", "unknown")).split(",")})


def render_markdown(documents: Sequence[dict]) -> str:
    """One table for all claims, with the tier and revision it was built from."""
    tiers = sorted({d["tier"] for d in documents})
    revisions = revisions_of(documents)
    lines = [
        "# attncap: verdicts",
        "",
        f"Tier: {', '.join(tiers)}. Built from revision: {', '.join(revisions)}.",
        "",
        "| claim | check | statement | measured | expected | rival | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for doc in documents:
        for c in doc["checks"]:
            check_id = c["id"] + _sanity_mark(c)
            measured = _cell(c["measured"])
            verdict = f"**{c['verdict']}**"
            if c.get("reason"):
                verdict += f" ({_cell(c['reason'])})"
            lines.append(
                f"| {doc['claim']} | {check_id} | {_cell(c['statement'])} | {measured} | "
                f"{_cell(c['expected'])} | {_cell(c.get('rival', ''))} | {verdict} |"
            )
    counts, sanity = verdict_totals(documents), verdict_totals(documents, SANITY)
    lines += ["", "Totals (claim checks): " + ", ".join(f"{k}: {v}" for k, v in counts.items()),
              "", "Sanity checks (counted apart): " + ", ".join(f"{k}: {v}" for k, v in sanity.items()), ""]
    withheld = render_withheld(documents)
    if withheld:
        lines += ["Why the inconclusive claim checks are withheld:", "", withheld]
    return "\n".join(lines)


def render_rivals(documents: Sequence[dict]) -> str:
    """The table of every check with its law and the rival it must beat (docs/verdicts.md), from the checks' own
    `expected` and `rival` fields (`python scripts/render_claims.py results/claims/*.json --rivals`)."""
    lines = ["| claim | check | law (expected) | rival it must beat |", "|---|---|---|---|"]
    for doc in sorted(documents, key=lambda d: d["claim"]):
        for c in doc["checks"]:
            check_id = f"`{c['id']}`" + _sanity_mark(c)
            lines.append(f"| {doc['claim']} | {check_id} | {_cell(c['expected'])} | {_cell(c.get('rival', ''))} |")
    return "\n".join(lines) + "\n"


def verdict_totals(documents: Sequence[dict], kind: str = CLAIM) -> dict[str, int]:
    """Verdict counts over the checks of one kind (claim checks by default; sanity checks apart)."""
    checks = [c for d in documents for c in d["checks"] if c.get("kind", CLAIM) == kind]
    return {v: sum(c["verdict"] == v for c in checks) for v in VERDICTS}


def render_summary(documents: Sequence[dict]) -> str:
    """The results table of the README (markdown): claim checks per verdict for each claim, sanity checks
    apart, and the totals."""
    order = (REPRODUCED, PARTIALLY, NOT_REPRODUCED, INCONCLUSIVE)
    lines = ["| claim | " + " | ".join(order) + " | sanity checks passed |", "|---" * (len(order) + 2) + "|"]
    for doc in documents:
        counts, sanity = verdict_totals([doc]), verdict_totals([doc], SANITY)
        lines.append(f"| {doc['claim']} | " + " | ".join(str(counts[v]) for v in order)
                     + f" | {sanity[REPRODUCED]} of {sum(sanity.values())} |")
    counts, sanity = verdict_totals(documents), verdict_totals(documents, SANITY)
    lines.append("| **all** | " + " | ".join(f"**{counts[v]}**" for v in order)
                 + f" | {sanity[REPRODUCED]} of {sum(sanity.values())} |")
    withheld = render_withheld(documents)
    return "\n".join(lines) + "\n" + (f"\n{withheld}" if withheld else "")


def render_withheld(documents: Sequence[dict]) -> str:
    """Why the inconclusive claim checks are withheld (markdown): one row per cause (`WITHHELD_BECAUSE`), with
    the checks it holds back; empty when no claim check is inconclusive."""
    causes = withheld_causes(documents)
    if not causes:
        return ""
    lines = ["| inconclusive because | checks | count |", "|---|---|---|"]
    for cause, ids in causes.items():
        lines.append(f"| {WITHHELD_BECAUSE.get(cause, cause)} | {', '.join(ids)} | {len(ids)} |")
    return "\n".join(lines) + "\n"


def withheld_causes(documents: Sequence[dict]) -> dict[str, list[str]]:
    """The inconclusive claim checks by cause (`withheld`), causes in `WITHHELD_BECAUSE` order:
    {cause: ['claim `id`', …]}."""
    causes: dict[str, list[str]] = {}
    for doc in documents:
        for c in doc["checks"]:
            if c.get("kind", CLAIM) == CLAIM and c["verdict"] == INCONCLUSIVE:
                causes.setdefault(c.get("withheld") or NOT_DECIDED, []).append(f"{doc['claim']} `{c['id']}`")
    order = list(WITHHELD_BECAUSE)
    return {k: causes[k] for k in sorted(causes, key=lambda k: (order.index(k) if k in order else len(order), k))}


LANDING_DESCRIPTION = ("Published claims about how much attention can memorize, re-derived by real computation; "
                       "a claim that does not reproduce at this scale says so, with its numbers.")


def render_landing(documents: Sequence[dict]) -> str:
    """The Snakemake report's landing page (reStructuredText): the tier and revision the verdicts were built
    from and the verdict totals, overall, per claim and per withheld cause. It stays short: the report centres
    it beside the rule graph in a column that does not scroll up, so a page taller than the window loses its
    top (the title and the totals). Every check's verdict, numbers and reason is on `render_checks`' page."""
    tiers = ", ".join(sorted({d["tier"] for d in documents})) or "none"
    revisions = ", ".join(revisions_of(documents))
    totals = verdict_totals(documents)
    title = "attncap: verdicts"
    lines = [
        title, "=" * len(title), "", LANDING_DESCRIPTION, "",
        f":Tier: {tiers}",
        f":Revision: {revisions}",
        ":Verdicts: " + ", ".join(f"{k}: {v}" for k, v in totals.items()),
        ":Sanity checks: " + ", ".join(f"{k}: {v}" for k, v in verdict_totals(documents, SANITY).items()),
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
    causes = withheld_causes(documents)
    if causes:
        lines += ["", "Inconclusive, by why they are withheld:", ""]
        lines += [f"- {len(ids)}: {WITHHELD_BECAUSE.get(cause, cause)}" for cause, ids in causes.items()]
    lines += ["", "Every check, with its verdict, measured numbers and reason: ``results/claims.html`` (category "
              "*verdicts*). Each claim's figures and executed notebook are under the claim's own category.", ""]
    return "\n".join(lines)


def render_checks(documents: Sequence[dict]) -> str:
    """Every check of every claim as one HTML page for the report (category *verdicts*): per claim its
    checks with verdict, measured numbers and, when withheld, the reason; and the withheld checks by cause."""
    from docutils.core import publish_string

    title = "attncap: every check"
    lines = [title, "=" * len(title), ""]
    causes = withheld_causes(documents)
    if causes:
        lines += ["Why the inconclusive claim checks are withheld:", ""]
        lines += [f"- {WITHHELD_BECAUSE.get(cause, cause)} ({len(ids)}): {_rst(', '.join(ids))}"
                  for cause, ids in causes.items()]
        lines.append("")
    for doc in documents:
        heading = f"{doc['claim']}: {doc.get('title', '')}".rstrip(": ")
        lines += [heading, "-" * len(heading), "", f"Checks of {doc['claim']} (verdict, measured, and why when withheld):", ""]
        for c in doc["checks"]:
            item = f"- ``{c['id']}``{_sanity_mark(c)}: **{c['verdict']}**. Measured: {_rst(_brief(c['measured'], 400))}"
            if c.get("reason"):
                item += f". Reason: {_rst(_brief(c['reason'], 600))}"
            lines.append(item)
        lines.append("")
    settings = {"report_level": 5, "halt_level": 5, "embed_stylesheet": True}
    return publish_string("\n".join(lines), writer_name="html5", settings_overrides=settings).decode("utf-8")


def _sanity_mark(check: dict) -> str:
    """' (sanity)' after a sanity check's id in every rendered table, so the two kinds are told apart."""
    return " (sanity)" if check.get("kind", CLAIM) == SANITY else ""


def _brief(value, limit: int) -> str:
    text = _plain(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _rst(text: str) -> str:
    """Plain text safe inside reStructuredText (no inline markup, no substitutions)."""
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("`", "'").replace("|", "\\|").replace("_", "\\_")


def _plain(value) -> str:
    """A measured value as one line of plain text (dicts as k=v; lists cut at 12 items)."""
    if isinstance(value, dict):
        text = "; ".join(f"{k}={_plain(v)}" for k, v in value.items())
    elif isinstance(value, list):
        text = ", ".join(_plain(v) for v in value[:12]) + (" …" if len(value) > 12 else "")
    else:
        text = str(value)
    return text.replace("\n", " ")


def _cell(value) -> str:
    """A value inside a markdown table cell."""
    return _plain(value).replace("|", "\\|")
