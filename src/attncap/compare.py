"""Compare a run's verdicts and measured numbers with a reference run, each number within its precision.

    python -m attncap.compare results/ reference/default/      (exit status 1 on any difference)

A run directory (`results/`) and a reference directory (`reference/<tier>/`, written from a run by
`write_reference`) both hold `claims/<claim>.json`, the verdict documents of `attncap.claims.evaluate`.

Precision of a number, by what produced it:
- an estimate that sits beside its 95% interval (`{"slope"|"difference": x, "interval": [lo, hi]}`, as
  `attncap.claims.laws` writes them) must lie inside the reference's interval: the seed spread is its
  precision, whatever the check;
- any other number of a trained check (one with a precondition: its numbers come from trained models,
  whose float kernels differ between machines) within TRAINED_REL of the reference;
- any other number of an untrained check (closed forms, constructions, Monte Carlo with fixed seeds)
  within EXACT_REL: the same everywhere up to float rounding;
- none of a trained check that is inconclusive in both: its gate withheld it because the models it reads
  are not certified (too short, still moving), so its numbers are not measurements; on another machine's
  float kernels a model caught mid-training fits a different handful of labels (the smoke tier's 1-head
  run fits 1 of 4 on one Xeon, 2 of 4 on another). Its verdict is still compared.
Verdicts must be equal. Strings and booleans are not compared (the verdict carries the decision).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import platform
import shutil
import sys
import tempfile
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from attncap.claims import INCONCLUSIVE, revisions_of

EXACT_REL = 1e-6
TRAINED_REL = 0.05
ABS_TOL = 1e-9
ESTIMATE_KEYS = ("slope", "difference", "estimate", "mean")
"""Keys of a point estimate whose sibling `interval` is its precision."""


@dataclasses.dataclass
class Number:
    path: str
    value: float
    interval: tuple[float, float] | None = None  # the 95% interval this estimate came with, if any


def numbers(measured, prefix: str = "") -> dict[str, Number]:
    """The numeric leaves of a check's `measured` field by path; an estimate keeps its interval."""
    if isinstance(measured, bool) or measured is None:
        return {}
    if isinstance(measured, (int, float)):
        path = prefix or "value"
        return {path: Number(path, float(measured))}
    out: dict[str, Number] = {}
    if isinstance(measured, dict):
        interval = measured.get("interval")
        has_interval = (isinstance(interval, list) and len(interval) == 2
                        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in interval))
        for key, item in measured.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if has_interval and key == "interval":
                continue  # its width varies with the seeds; it is the precision of the estimate beside it
            found = numbers(item, path)
            if has_interval and key in ESTIMATE_KEYS and path in found:
                found[path].interval = (float(interval[0]), float(interval[1]))
            out.update(found)
    elif isinstance(measured, list):
        for i, item in enumerate(measured):
            out.update(numbers(item, f"{prefix}[{i}]"))
    return out


def within(run: Number, ref: Number, trained: bool) -> tuple[bool, str]:
    """Is the run's number within the reference's precision? Returns (ok, the rule applied)."""
    a, b = run.value, ref.value
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b), "NaN on both sides"
    if ref.interval is not None and all(math.isfinite(v) for v in ref.interval):
        lo, hi = ref.interval
        slack = ABS_TOL + EXACT_REL * max(abs(lo), abs(hi))
        return lo - slack <= a <= hi + slack, f"inside the reference's 95% interval [{lo:.4g}, {hi:.4g}]"
    rel = TRAINED_REL if trained else EXACT_REL
    if math.isinf(a) or math.isinf(b):
        return a == b, "infinite on both sides"
    return math.isclose(a, b, rel_tol=rel, abs_tol=ABS_TOL), f"within {rel:g} relative"


def load(directory) -> dict[str, dict]:
    """The verdict documents of a run or reference directory, by claim."""
    folder = Path(directory) / "claims"
    if not folder.is_dir():
        raise FileNotFoundError(f"{directory}: no claims/ folder with verdict JSON (run the pipeline first)")
    return {doc["claim"]: doc for doc in (json.loads(p.read_text()) for p in sorted(folder.glob("*.json")))}


@dataclasses.dataclass
class Row:
    claim: str
    check: str
    reference: str
    run: str
    compared: int
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def compare(run: dict[str, dict], reference: dict[str, dict]) -> list[Row]:
    """One row per check of the reference (plus checks only the run has): verdicts and numbers compared."""
    rows = []
    for claim in sorted(set(reference) | set(run)):
        if claim not in run:
            rows.append(Row(claim, "*", "present", "missing", 0, [f"{claim}: claim missing from the run"]))
            continue
        if claim not in reference:
            rows.append(Row(claim, "*", "missing", "present", 0, [f"{claim}: claim not in the reference"]))
            continue
        mine = {c["id"]: c for c in run[claim]["checks"]}
        theirs = {c["id"]: c for c in reference[claim]["checks"]}
        for check_id in list(theirs) + [c for c in mine if c not in theirs]:
            ref, got = theirs.get(check_id), mine.get(check_id)
            if got is None or ref is None:
                where = "run" if got is None else "reference"
                rows.append(Row(claim, check_id, ref["verdict"] if ref else "—", got["verdict"] if got else "—", 0,
                                [f"{claim}.{check_id}: check missing from the {where}"]))
                continue
            problems = []
            if got["verdict"] != ref["verdict"]:
                problems.append(f"{claim}.{check_id}: verdict {ref['verdict']!r} in the reference, "
                                f"{got['verdict']!r} in the run" + (f" ({got['reason']})" if got.get("reason") else ""))
            trained = bool(ref.get("precondition"))
            # withheld on both sides: its uncertified models' numbers are not measurements, only the verdict counts
            withheld = trained and ref["verdict"] == got["verdict"] == INCONCLUSIVE
            want = {} if withheld else numbers(ref["measured"])
            have = numbers(got["measured"])
            for path, number in want.items():
                if path not in have:
                    problems.append(f"{claim}.{check_id}.{path}: missing from the run (reference {number.value:.6g})")
                    continue
                ok, rule = within(have[path], number, trained)
                if not ok:
                    problems.append(f"{claim}.{check_id}.{path}: {have[path].value:.6g} in the run, "
                                    f"{number.value:.6g} in the reference, not {rule}")
            rows.append(Row(claim, check_id, ref["verdict"], got["verdict"], len(want), problems))
    return rows


def render(rows: list[Row]) -> str:
    """A markdown table of the comparison, then every problem on its own line."""
    lines = ["| claim | check | reference | this run | numbers compared | result |", "|---|---|---|---|---|---|"]
    for r in rows:
        result = "same" if r.ok else f"**{len(r.problems)} difference{'s' if len(r.problems) > 1 else ''}**"
        lines.append(f"| {r.claim} | {r.check} | {r.reference} | {r.run} | {r.compared} | {result} |")
    bad = [p for r in rows for p in r.problems]
    lines += ["", f"{sum(r.ok for r in rows)} of {len(rows)} checks agree with the reference"
              + (f"; {len(bad)} difference{'s' if len(bad) > 1 else ''}:" if bad else ".")]
    lines += [f"- {p}" for p in bad]
    return "\n".join(lines) + "\n"


def _job_seconds(benchmark: Path, measure: str) -> float:
    """One job's time from its Snakemake `benchmark:` table (a header, then a row per repeat): the `measure`
    column of the first row, `cpu_time` or `s` (wall). `cpu_time` reads NA for a job that ended before the first
    resource sample; that job counts its wall time. An empty table counts 0."""
    lines = [line.split("\t") for line in benchmark.read_text().splitlines() if line.strip()]
    if len(lines) < 2:
        return 0.0
    row = dict(zip(lines[0], lines[1]))
    for column in (measure, "s"):
        try:
            return float(row[column])
        except (KeyError, ValueError):
            continue
    return 0.0


def write_reference(results, target, *, figures: list[str] = (), wall_time_s: float | None = None,
                    job_time: str = "cpu_time") -> Path:
    """Copy a finished run's verdicts, `claims.md` and headline figures into `target` (reference/<tier>/),
    with `summary.md` (the README's results table) and `provenance.json` (tier, revision, date, machine,
    torch version, job times). The folder is replaced as a whole, so a reference never mixes two runs."""
    import torch

    from attncap.claims import render_summary
    from attncap.runtime import machine_rates

    results, target = Path(results), Path(target)
    documents = load(results)
    staging = target.with_name(target.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "claims").mkdir(parents=True)
    for claim, doc in documents.items():
        _write_document(staging / "claims" / f"{claim}.json", doc)
    (staging / "summary.md").write_text(render_summary(list(documents.values())))
    if (results / "claims.md").exists():
        shutil.copy2(results / "claims.md", staging / "claims.md")
    for figure in figures:
        (staging / "figures").mkdir(exist_ok=True)
        shutil.copy2(figure, staging / "figures" / Path(figure).name)
    for claim in documents:
        # the run tables the verdicts were computed from (tens of kB each), so that a changed check can be decided
        # again on them (scripts/redecide_reference.py) without training anything
        for table in sorted((results / claim / "runs").glob("*.csv")):
            (staging / "runs" / claim).mkdir(parents=True, exist_ok=True)
            shutil.copy2(table, staging / "runs" / claim / table.name)
    benchmarks = sorted((results / "benchmarks").rglob("*.tsv")) if (results / "benchmarks").is_dir() else []
    # the jobs' CPU time (`cpu_time`, what the README's timing table states), or their wall time (`s`) where the
    # work ran in a forked warm interpreter that the benchmark does not see (warm_start, attncap.warmstart)
    job_seconds = sum(_job_seconds(path, job_time) for path in benchmarks)
    tiers = sorted({d["tier"] for d in documents.values()})
    revisions = revisions_of(documents.values())
    provenance = {
        "tier": ", ".join(tiers), "git_revision": ", ".join(revisions),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "machine": {"cores": _cores(), "platform": platform.platform(), "processor": platform.machine(),
                    "torch": torch.__version__, "device": "cuda" if torch.cuda.is_available() else "cpu",
                    # measured when the reference is written, so its timings can be read against them
                    **machine_rates()},
        "job_core_seconds": round(job_seconds, 1),
        "job_core_seconds_measure": job_time,
        "wall_time_s": wall_time_s,
    }
    (staging / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


def _write_document(path: Path, doc: dict) -> None:
    """A reference's verdict JSON: sorted keys, one space of indent (what `load` reads back)."""
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


def redecide(target, claims: list[str], config: dict, revision: str) -> dict[str, tuple[str, str]]:
    """Decide `claims` again from the run tables kept in reference `target` (`write_reference` keeps them under
    runs/<claim>/) with the checks of this checkout and the claim's section of `config`; rewrite their verdict
    JSON, `claims.md` and `summary.md` over every claim of the reference, and record in `provenance.json` the
    revision each claim was decided at (`decided_at`). Returns {claim: (old verdict counts, new)} per claim. The
    tables, their revision and the job times stay as they are: nothing is trained."""
    from attncap.claims import render_markdown, render_summary
    from attncap.claims.evaluate import evaluate_claim

    target = Path(target)
    documents = load(target)
    changed = {}
    for claim in claims:
        tables = sorted((target / "runs" / claim).glob("*.csv"))
        if not tables:
            raise FileNotFoundError(f"{target}: no run tables kept for {claim} (runs/{claim}/*.csv); re-run it instead")
        old = documents.get(claim)
        path = target / "claims" / f"{claim}.json"
        with tempfile.TemporaryDirectory() as scratch:
            doc = evaluate_claim(claim, tables, tier=old["tier"] if old else config.get("tier", "unknown"),
                                 json_path=Path(scratch) / "claim.json", summary_path=Path(scratch) / "summary.csv",
                                 section=config[claim])
        _write_document(path, doc)
        documents[claim] = doc
        changed[claim] = (_counts(old), _counts(doc))
    (target / "summary.md").write_text(render_summary(list(documents.values())))  # write_reference's order
    order = list(config.get("claims", [])) + sorted(set(documents) - set(config.get("claims", [])))
    table = render_markdown([documents[c] for c in order if c in documents]).splitlines()  # render_claims' order
    if (target / "claims.md").exists():
        # the rows of the claims not decided again stay as they were written (from the run's own documents, whose
        # measured numbers are in the order the checks gave them, not the sorted order of the stored JSON)
        kept = (target / "claims.md").read_text().splitlines()
        for claim in set(documents) - set(claims):
            old_rows = [line for line in kept if line.startswith(f"| {claim} | ")]
            at = [i for i, line in enumerate(table) if line.startswith(f"| {claim} | ")]
            if old_rows and len(old_rows) == len(at):
                for i, line in zip(at, old_rows):
                    table[i] = line
    (target / "claims.md").write_text("\n".join(table) + "\n")
    provenance_path = target / "provenance.json"
    provenance = json.loads(provenance_path.read_text()) if provenance_path.exists() else {}
    provenance.setdefault("decided_at", {}).update({claim: revision for claim in claims})
    provenance_path.write_text(json.dumps(provenance, indent=1) + "\n")
    return changed


def _counts(document: dict | None) -> str:
    if not document:
        return "none"
    counts = Counter(c["verdict"] for c in document["checks"])
    return ", ".join(f"{k} {counts[k]}" for k in sorted(counts))


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="a run's results/ folder (or another reference)")
    parser.add_argument("reference", help="a reference folder, e.g. reference/default/")
    parser.add_argument("--markdown", help="also write the table here (markdown)")
    args = parser.parse_args(argv)
    try:
        rows = compare(load(args.run), load(args.reference))
    except FileNotFoundError as err:
        print(f"attncap.compare: {err}", file=sys.stderr)
        return 2
    text = render(rows)
    sys.stdout.write(text)
    if args.markdown:
        from attncap.runtime import atomic_path

        with atomic_path(args.markdown) as tmp:
            tmp.write_text(text)
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
