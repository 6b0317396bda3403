"""Carry a claim's re-run that is too long for one session over to the next one: `keep` copies the run tables it
has finished (and their benchmark files) from results/ into reference/<tier>/partial/<claim>/, which is committed;
`restore` puts them back under results/ in a fresh checkout, so that `snakemake --rerun-triggers mtime` trains only
the jobs still missing. `restore` refuses a table unless the code that trains it (src/attncap outside claims/ and
the other claims' experiment modules, scripts/run_experiment.py) and the claim's config section are the same at the
table's revision as in this checkout: a finished re-run is then one run of one code, whichever sessions ran it.
The one exception is named on the command line: `--granted COMMIT` accepts a table written before COMMIT when COMMIT
is the only change to its training code since (a fix of a path the table never took, say a crash), and the
commit's message must say why its numbers are the same.

    python scripts/partial_rerun.py keep reference/default swap_state_tracking
    python scripts/partial_rerun.py restore reference/default swap_state_tracking --configfile config/config.yaml
    python scripts/partial_rerun.py restore reference/default swap_state_tracking --granted 5f1c235
"""
import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from attncap.config import CLAIMS, ConfigError, run_config
from attncap.runtime import read_run_csv

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def training_code_paths(claim: str) -> list[str]:
    """The pathspec of the code whose change would change `claim`'s run tables."""
    others = [f":(exclude)src/attncap/experiments/{c}.py" for c in CLAIMS if c != claim]
    return ["src/attncap", ":(exclude)src/attncap/claims", *others, "scripts/run_experiment.py"]


def same_training_code(revision: str, claim: str, granted: str | None = None) -> str | None:
    """None when `revision` trains `claim` with this checkout's code, or differs from it only by the commit
    `granted` (the code at `revision` is that of the commit's parent, and the working tree that of the commit),
    else why not."""
    if revision.endswith("+dirty"):
        return f"its revision {revision} had uncommitted changes"
    paths = training_code_paths(claim)
    diff = _git("diff", "--quiet", revision, "--", *paths)  # against the working tree
    if diff.returncode == 1 and granted:
        before = _git("diff", "--quiet", revision, f"{granted}^", "--", *paths)
        after = _git("diff", "--quiet", granted, "--", *paths)
        if before.returncode == 0 and after.returncode == 0:
            return None
    if diff.returncode == 1:
        return f"the training code changed since {revision} (git diff {revision} -- src/attncap)"
    if diff.returncode != 0:
        return f"revision {revision} is not in this checkout's history ({diff.stderr.strip()})"
    return None


def same_config(revision: str, claim: str, configfile: Path) -> str | None:
    """None when the claim's section of `configfile` is the same at `revision` as now, else why not."""
    shown = _git("show", f"{revision}:{configfile.as_posix()}")
    if shown.returncode != 0:
        return f"{configfile} is not at {revision} ({shown.stderr.strip()})"
    with tempfile.TemporaryDirectory() as scratch:
        old_file = Path(scratch) / configfile.name
        old_file.write_text(shown.stdout)
        try:
            old = run_config([old_file])
        except ConfigError as err:
            return f"{configfile} at {revision} does not validate now ({err})"
    if old.get(claim) != run_config([ROOT / configfile]).get(claim):
        return f"the {claim} section of {configfile} changed since {revision}"
    return None


def _folders(reference: Path, claim: str, results: Path) -> tuple[Path, Path, Path, Path]:
    kept = reference / "partial" / claim
    return results / claim / "runs", results / "benchmarks" / claim, kept / "runs", kept / "benchmarks"


def _copy(tables, benchmarks_from: Path, runs_to: Path, benchmarks_to: Path, copy) -> None:
    """Copy each run table and, where there is one, its benchmark file."""
    runs_to.mkdir(parents=True, exist_ok=True)
    benchmarks_to.mkdir(parents=True, exist_ok=True)
    for table in tables:
        copy(table, runs_to / table.name)
        bench = benchmarks_from / f"{table.stem}.tsv"
        if bench.exists():
            copy(bench, benchmarks_to / bench.name)


def keep(reference: Path, claim: str, results: Path) -> int:
    runs, benchmarks, kept_runs, kept_benchmarks = _folders(reference, claim, results)
    tables = sorted(runs.glob("*.csv"))
    if not tables:
        print(f"error: {runs} holds no finished run tables", file=sys.stderr)
        return 1
    _copy(tables, benchmarks, kept_runs, kept_benchmarks, shutil.copy2)
    print(f"kept {len(tables)} run tables of {claim} in {kept_runs}")
    return 0


def granted_commit_error(granted: str | None) -> str | None:
    """None when `granted` is unset or names a commit with a parent in this checkout's history, else why not
    (without this check an unknown commit reads as the generic "training code changed" refusal)."""
    if granted is None:
        return None
    if _git("rev-parse", "--verify", "--quiet", f"{granted}^{{commit}}").returncode != 0:
        return f"--granted {granted} is not a commit in this checkout's history"
    if _git("rev-parse", "--verify", "--quiet", f"{granted}^").returncode != 0:
        return f"--granted {granted} has no parent: there is no code before it to grant"
    return None


def restore(reference: Path, claim: str, configfile: Path, results: Path, granted: str | None = None) -> int:
    runs, benchmarks, kept_runs, kept_benchmarks = _folders(reference, claim, results)
    bad_grant = granted_commit_error(granted)
    if bad_grant:
        print(f"error: {bad_grant}", file=sys.stderr)
        return 1
    tables = sorted(kept_runs.glob("*.csv"))
    if not tables:
        print(f"error: {kept_runs} keeps no run tables", file=sys.stderr)
        return 1
    revisions = {table: sorted(set(read_run_csv(table)["git_revision"].astype(str))) for table in tables}
    # one verdict per revision (a re-run's tables share one or two), not one git diff and config load per table
    why_not = {rev: [r for r in (same_training_code(rev, claim, granted), same_config(rev, claim, configfile)) if r]
               for rev in sorted({rev for revs in revisions.values() for rev in revs})}
    refused = [f"{table.name}: {'; '.join(r for rev in revs for r in why_not[rev])}"
               for table, revs in revisions.items() if any(why_not[rev] for rev in revs)]
    if refused:
        print("error: not restored (train these again instead):\n  " + "\n  ".join(refused), file=sys.stderr)
        return 1
    # copyfile, not copy2: a fresh mtime, newer than anything Snakemake compares the table with
    _copy(tables, kept_benchmarks, runs, benchmarks, shutil.copyfile)
    print(f"restored {len(tables)} run tables of {claim}; now: "
          f"snakemake --cores 2 --rerun-triggers mtime results/claims/{claim}.json")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["keep", "restore"])
    parser.add_argument("reference", type=Path, help="a reference folder, e.g. reference/default")
    parser.add_argument("claim", choices=CLAIMS)
    parser.add_argument("--configfile", type=Path, default=Path("config/config.yaml"),
                        help="the tier's config file, relative to the checkout (restore compares the claim's section)")
    parser.add_argument("--results", type=Path, default=ROOT / "results",
                        help="the results folder to keep from or restore into (default: the checkout's)")
    parser.add_argument("--granted", metavar="COMMIT",
                        help="restore: accept tables written before COMMIT when it is the only training-code change since")
    args = parser.parse_args(argv)
    if args.action == "keep":
        return keep(args.reference, args.claim, args.results)
    return restore(args.reference, args.claim, args.configfile, args.results, args.granted)


if __name__ == "__main__":
    sys.exit(main())
