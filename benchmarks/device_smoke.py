"""The smoke tier's training jobs and verdicts on another device (a GPU), compared with reference/smoke/.

    python benchmarks/device_smoke.py --device cuda            # one GPU: ~2 minutes, 6 jobs at a time
    python benchmarks/device_smoke.py --device cpu --claims aot_memorization

For a machine without Snakemake (a lent GPU whose image has torch, pandas, scipy, scikit-learn and PyYAML):
every training job of `config/smoke.yaml` runs as the Snakefile runs it (`scripts/run_experiment.py`, the
experiment list of `attncap.workflow.Rules.table_parts`), with `--device` in place of the tier's, several at a
time; then each claim's verdicts (`scripts/evaluate_claim.py`). The verdicts are compared with
`reference/smoke/` (computed on a CPU): the exit status is 1 when a job fails or a verdict differs. The
measured numbers are compared too (`attncap.compare`) and printed, not judged: a GPU's float32 sums need
not match a CPU's bit for bit, and trained numbers move within their seed spread.

Outputs go to `results/device-<device>/` (ignored by git). Measured on an H100 (2026-11-28): 38 jobs in 100 s,
all 57 verdicts as in the reference (docs/performance.md).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import importlib
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from attncap.compare import compare, load, render  # noqa: E402
from attncap.workflow import Rules  # noqa: E402

# the jobs import attncap from this checkout, installed or not
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}


def training_jobs(config: dict, device: str, results: Path) -> list[tuple[str, str, list[str]]]:
    """(claim, run table, command) of every training job of `config`, as the Snakefile's rules would run it."""
    jobs, rules = [], Rules(config)
    for claim in config["claims"]:
        module = importlib.import_module(f"attncap.experiments.{claim}")
        for name in module.expected_cells(config[claim]):
            experiment, _, part = name.partition("_")
            out = results / claim / "runs" / f"{name}.csv"
            command = [sys.executable, "scripts/run_experiment.py", claim, experiment, "--part", part or "all",
                       "--spec", rules.spec_json(claim, experiment, part), "--seed", str(config["seed"]),
                       "--device", device, "--threads", "1", "--tier", config["tier"], "--out", str(out)]
            if claim in config.get("compile", []):
                command.append("--compile")
            jobs.append((claim, str(out), command))
    return jobs


def run_logged(command: list[str], log: Path, timeout: float, out: Path) -> tuple[int | str, float]:
    """Run `command` with its output in `log`; `out`, the file it writes, is removed first (no stale result)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    started = time.perf_counter()
    with log.open("w") as sink:
        try:
            status: int | str = subprocess.run(command, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT,
                                               timeout=timeout, env=CHILD_ENV).returncode
        except subprocess.TimeoutExpired:
            status = "timeout"
    return status, time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--config", default=str(ROOT / "config" / "smoke.yaml"))
    parser.add_argument("--reference", default=str(ROOT / "reference" / "smoke"))
    parser.add_argument("--claims", nargs="*", help="only these claims (default: the config's)")
    parser.add_argument("--jobs", type=int, default=6, help="training jobs at a time")
    parser.add_argument("--timeout", type=float, default=300, help="seconds a job may take")
    parser.add_argument("--results", help="output folder (default results/device-<device>)")
    args = parser.parse_args(argv)

    try:  # the schema check of the Snakefile, where jsonschema is installed (a GPU image may lack it)
        from attncap.config import load_config
        config = load_config(args.config)
    except ImportError:
        config = yaml.safe_load(Path(args.config).read_text())
    if args.claims:
        config["claims"] = [c for c in config["claims"] if c in args.claims]
    results = Path(args.results).resolve() if args.results else ROOT / "results" / f"device-{args.device}"
    jobs = training_jobs(config, args.device, results)
    started = time.perf_counter()
    failed = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        logs = {out: results / "logs" / (Path(out).stem + ".log") for _, out, _ in jobs}
        futures = {pool.submit(run_logged, command, logs[out], args.timeout, Path(out)): out for _, out, command in jobs}
        for future in concurrent.futures.as_completed(futures):
            status, seconds = future.result()
            out = futures[future]
            print(f"{'ok' if status == 0 else 'FAILED (' + str(status) + ')':>12}  {seconds:6.1f} s  {out}", flush=True)
            if status != 0:
                failed.append(f"{out}: exit {status}, log {logs[out]}")
    print(f"{len(jobs)} training jobs in {time.perf_counter() - started:.0f} s on {args.device}", flush=True)

    rules = Rules(config)
    for claim in config["claims"]:
        tables = [out for owner, out, _ in jobs if owner == claim]
        command = [sys.executable, "scripts/evaluate_claim.py", claim, *tables,
                   "--spec", rules.claim_json(claim), "--tier", config["tier"],
                   "--json", str(results / "claims" / f"{claim}.json"),
                   "--summary", str(results / claim / "summary.csv")]
        (results / "claims").mkdir(parents=True, exist_ok=True)
        status, _ = run_logged(command, results / "logs" / f"{claim}_analyze.log", args.timeout,
                               results / "claims" / f"{claim}.json")
        if status != 0:
            failed.append(f"{claim} verdicts: exit {status}, log {results / 'logs' / f'{claim}_analyze.log'}")

    reference = {claim: doc for claim, doc in load(args.reference).items() if claim in config["claims"]}
    run = {claim: doc for claim, doc in load(results).items() if claim in config["claims"]}
    rows = compare(run, reference)
    print(render(rows))
    changed = [row for row in rows if row.reference != row.run]
    print(f"{len(rows) - len(changed)} of {len(rows)} verdicts as in {args.reference} (the numbers above are "
          f"shown, not judged); "
          f"{len(failed)} job(s) failed" + "".join(f"\n  {line}" for line in failed))
    return 1 if failed or changed else 0


if __name__ == "__main__":
    sys.exit(main())
