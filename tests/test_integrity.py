"""Issue 15, sections 3-5: no verdict from incomplete tables, constrained and quoted wildcards, Snakemake's
own lock between concurrent runs, umask-following outputs, signal-killed jobs that say so, the report."""
import json
import os
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
import yaml

from attncap.claims import render_checks, render_landing
from attncap.claims.evaluate import TableError, check_coverage, coverage_problems, evaluate_claim, read_table
from attncap.jobrun import describe_signal
from attncap.runtime import atomic_path, write_csv
from attncap.workflow import Rules, alternation, shell_arg

from conftest import ROOT
from test_pipeline import copy_workflow, snakemake

SMOKE = ["--configfile", "config/smoke.yaml"]
CLAIM_1 = ["--config", 'claims=["retrieval_capacity"]']


# ---- section 3: coverage of the configured grid ------------------------------------------------------

def e2_table(spec: dict) -> pd.DataFrame:
    """A well-formed E2 table for `spec` (numbers irrelevant to coverage)."""
    rows = [{"kernel": k, "scale": s, "d": d, "n": 2**l, "mean_snr_inv": 0.1}
            for d in spec["dims"] for l in spec["log2_n"]
            for k, s in [("linear", np.nan), ("relu", np.nan), ("relu_centred", np.nan)]
            + [("exp", x) for x in spec["scales"]]]
    return pd.DataFrame(rows)


@pytest.fixture
def e2_section(smoke_config):
    return {"E2": smoke_config["retrieval_capacity"]["E2"]}


def test_full_table_covers_the_grid(tmp_path, e2_section):
    path = tmp_path / "E2.csv"
    e2_table(e2_section["E2"]).to_csv(path, index=False)
    assert coverage_problems("retrieval_capacity", [path], e2_section) == []


def test_truncated_table_is_refused_naming_file_and_cells(tmp_path, e2_section):
    path = tmp_path / "E2.csv"
    e2_table(e2_section["E2"]).head(3).to_csv(path, index=False)
    with pytest.raises(TableError) as err:
        check_coverage("retrieval_capacity", [path], e2_section)
    message = str(err.value)
    assert str(path) in message and "3 rows cover 3 of the 32 configured cells" in message
    assert "kernel=exp scale=1.0 d=16 n=1024" in message or "and 21 more" in message


def test_missing_and_foreign_tables_are_refused(tmp_path, smoke_config):
    section = smoke_config["retrieval_capacity"]
    stray = tmp_path / "E5_d48.csv"
    pd.DataFrame({"mixer": ["softmax"]}).to_csv(stray, index=False)
    problems = coverage_problems("retrieval_capacity", [stray], section)
    assert any("missing run table E1.csv" in p for p in problems)
    assert any("missing run table E5_d32-softmax.csv" in p for p in problems)
    assert any(str(stray) in p and "not a run table of the configured grid" in p for p in problems)


@pytest.mark.parametrize("content", [os.urandom(2048), b"kernel,scale,d,n,mean_snr_inv\n", b"", b"\xff\xfe\x00garbage\x00\n\x01"])
def test_unreadable_tables_fail_with_the_path(tmp_path, e2_section, content):
    path = tmp_path / "E2.csv"
    path.write_bytes(content)
    with pytest.raises(TableError) as err:
        check_coverage("retrieval_capacity", [path], e2_section)
    assert str(path) in str(err.value)
    with pytest.raises(TableError, match=str(path)):
        read_table(path)


def test_truncated_table_gives_no_verdict_through_the_cli(tmp_path, e2_section):
    """The analyze rule's command: exit 1, the file and cells on stderr, no claims JSON written."""
    spec = {"E1": {"dims": [16], "n_points": 3, "min_queries": 16, "epsilons": [0.5]}, **e2_section}
    runs = tmp_path / "runs"
    runs.mkdir()
    pd.DataFrame([{"kind": "grid", "d": 16, "n": 1}]).to_csv(runs / "E1.csv", index=False)
    e2_table(e2_section["E2"]).head(3).to_csv(runs / "E2.csv", index=False)
    out = tmp_path / "claim.json"
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "evaluate_claim.py"), "retrieval_capacity",
                             str(runs / "E1.csv"), str(runs / "E2.csv"), "--spec", json.dumps(spec), "--tier", "test",
                             "--json", str(out), "--summary", str(tmp_path / "summary.csv")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{runs / 'E2.csv'}: 3 rows cover 3 of the 32" in result.stderr
    assert f"{runs / 'E1.csv'}: 1 rows cover 1 of the" in result.stderr and "kind=capacity d=16 epsilon=0.5" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("config_name", ["smoke.yaml", "config.yaml", "paper.yaml"])
def test_every_claim_names_the_cells_of_its_tables(config_name):
    """expected_cells is defined for every claim at every tier, and its tables match the analyze rules' inputs."""
    import importlib

    config = yaml.safe_load((ROOT / "config" / config_name).read_text())
    for claim in config["claims"]:
        module = importlib.import_module(f"attncap.experiments.{claim}")
        try:
            expected = module.expected_cells(config[claim])
        except KeyError as exc:  # a grid being redesigned while its config catches up
            pytest.skip(f"{claim}: config and experiment module disagree ({exc})")
        assert expected and all(expected.values()), claim
        for stem, cells in expected.items():
            assert all(isinstance(c, dict) and c for c in cells), stem


def test_analyze_rule_removes_the_verdict_table_first():
    """While a claim's verdicts are recomputed (and after that fails) results/claims.md is gone, not stale."""
    command = Rules({"tier": "smoke", "seed": 0, "device": "cpu"}).analyze_command("retrieval_capacity")
    assert command.startswith("rm -f results/claims.md results/claims_landing.rst results/claims.html && ")
    assert "--spec {params.spec:q}" in command and "{input:q}" in command


# ---- section 4: wildcards, quoting, locks ------------------------------------------------------------

def test_wildcard_helpers_quote_and_constrain():
    assert shell_arg("{wildcards.part}") == "{wildcards.part:q}"
    assert shell_arg("x; rm -rf /") == "'x; rm -rf /'"
    assert alternation(["d32", "d16"]) == "d16|d32"
    assert alternation([]) == "(?!)"
    rules = Rules({"tier": "smoke", "seed": 0, "device": "cpu"})
    command = rules.experiment_command("retrieval_capacity", "{wildcards.experiment}", "{wildcards.part}")
    assert "{wildcards.experiment:q}" in command and "--part {wildcards.part:q}" in command
    assert "--out {output:q}" in command and "{log:q}" in command


def test_every_shell_wildcard_is_quoted():
    """No `{wildcards.x}`, `{output}`, `{input}` or `{log}` left unquoted in the rule files' commands
    (experiment_command's arguments are quoted by shell_arg, tested above)."""
    import re

    lines = [line for p in (ROOT / "workflow" / "rules").glob("*.smk") for line in p.read_text().splitlines()
             if "experiment_command(" not in line]
    lines += [line for line in (ROOT / "src" / "attncap" / "workflow.py").read_text().splitlines()
              if not line.strip().startswith(('"""', "#"))]
    bare = [line for line in lines if re.search(r"\{\{?(?:wildcards\.\w+|output(?:\.\w+)?|input(?:\.\w+)?|log)\}", line)]
    assert not bare, bare


@pytest.fixture(scope="module")
def scratch_workflow(tmp_path_factory):
    return copy_workflow(tmp_path_factory.mktemp("integrity"))


@pytest.mark.parametrize("target", [
    "results/retrieval_capacity/runs/E5_x||touch PWNED||.csv",
    "results/retrieval_capacity/runs/E5_x;touch PWNED;.csv",
    "results/retrieval_capacity/runs/E5_d48-softmax.csv",  # a width the config does not list
    "results/retrieval_capacity/runs/E9.csv",
    "results/aot_memorization/runs/A1_p7.csv",
    "results/swap_state_tracking/runs/S1_n99.csv",
])
def test_targets_outside_the_config_are_refused(scratch_workflow, target):
    result = snakemake("-n", "--cores", "1", target, *SMOKE, cwd=scratch_workflow)
    assert result.returncode != 0
    assert "No rule to produce" in result.stdout + result.stderr
    assert not (scratch_workflow / "PWNED").exists()


def test_configured_target_is_planned(scratch_workflow):
    result = snakemake("-n", "--cores", "1", "results/retrieval_capacity/runs/E5_d32-softmax.csv", *SMOKE, cwd=scratch_workflow)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "train_retrieval_capacity" in result.stdout + result.stderr


def test_parsing_the_snakefile_touches_no_lock(scratch_workflow):
    """A dry run next to a live run's locks (here: planted ones) leaves them alone; nothing is cleared."""
    locks = scratch_workflow / ".snakemake" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    planted = locks / "0.output.lock"
    planted.write_text(str(scratch_workflow / "results" / "claims.md") + "\n")
    try:
        snakemake("-n", "--cores", "1", *SMOKE, cwd=scratch_workflow)
        assert planted.exists()
    finally:
        planted.unlink()


@pytest.mark.slow
def test_two_runs_at_once_lose_nothing(tmp_path):
    """A second invocation while the first runs is refused by Snakemake's lock; the first completes."""
    workdir = copy_workflow(tmp_path)
    target = ["results/retrieval_capacity/runs/E5_d32-softmax.csv", "results/retrieval_capacity/runs/E1.csv"]
    command = [sys.executable, "-m", "snakemake", "--cores", "2", *target, *SMOKE]
    log = tmp_path / "first.log"
    with log.open("w") as sink:
        first = subprocess.Popen(command, cwd=workdir, stdout=sink, stderr=subprocess.STDOUT)
        deadline = time.time() + 300
        while time.time() < deadline and "rule train_retrieval_capacity" not in log.read_text():
            time.sleep(0.2)
        assert first.poll() is None, "first run ended before the second could start: " + log.read_text()[-2000:]
        second = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=600)
        first_rc = first.wait(timeout=900)
    assert second.returncode != 0
    assert "cannot be locked" in second.stdout + second.stderr
    assert first_rc == 0, log.read_text()[-3000:]
    runs = workdir / "results" / "retrieval_capacity" / "runs"
    for name in ("E5_d32-softmax.csv", "E1.csv"):
        assert len(pd.read_csv(runs / name)) > 0
    locks = workdir / ".snakemake" / "locks"
    assert not locks.exists() or not list(locks.iterdir()), "the first run left its locks"
    dry = snakemake("-n", "--cores", "2", *target, *SMOKE, cwd=workdir)
    assert "Nothing to be done" in dry.stdout + dry.stderr


# ---- section 5: umask, signals, report landing ------------------------------------------------------

def test_outputs_follow_the_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        write_csv(pd.DataFrame({"a": [1]}), tmp_path / "a.csv")
        assert stat.S_IMODE((tmp_path / "a.csv").stat().st_mode) == 0o644
        os.umask(0o027)
        with atomic_path(tmp_path / "b.txt") as tmp:
            tmp.write_text("x")
        assert stat.S_IMODE((tmp_path / "b.txt").stat().st_mode) == 0o640
    finally:
        os.umask(previous)


@pytest.mark.parametrize("signum,words", [(signal.SIGKILL, ["SIGKILL", "out-of-memory", "memory"]),
                                          (signal.SIGTERM, ["SIGTERM", "stopped"])])
def test_job_killed_by_a_signal_says_which_and_points_at_memory(tmp_path, signum, words):
    log = tmp_path / "job.log"
    child = f"import os, sys; print('working', file=sys.stderr, flush=True); os.kill(os.getpid(), {int(signum)})"
    result = subprocess.run([sys.executable, "-m", "attncap.jobrun", "--log", str(log), "--", sys.executable, "-c", child],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 128 + signum
    text = log.read_text()
    assert text.startswith("working")
    for word in words:
        assert word in text and word in result.stderr
    assert f"signal {int(signum)}" in text


def test_jobrun_passes_exit_status_and_output_through(tmp_path):
    log = tmp_path / "job.log"
    child = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    result = subprocess.run([sys.executable, "-m", "attncap.jobrun", "--log", str(log), "--merge-stdout", "--",
                             sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert result.returncode == 3
    assert sorted(log.read_text().split()) == ["err", "out"]
    assert "signal" not in result.stderr


def test_describe_signal_for_an_unusual_signal():
    assert "signal 6 (SIGABRT)" in describe_signal(6, 1.0, None)


def test_landing_page_states_tier_revision_and_totals():
    documents = [{"claim": "retrieval_capacity", "tier": "smoke", "provenance": {"git_revision": "abc123"},
                  "checks": [{"id": "law_a", "verdict": "reproduced", "measured": {"slope": 1.0}},
                             {"id": "law_b", "verdict": "inconclusive", "measured": "x|y", "reason": "not resolved: *a*"}]},
                 {"claim": "rgr_capacity", "tier": "smoke", "provenance": {"git_revision": "abc123"},
                  "checks": [{"id": "c", "verdict": "not reproduced", "measured": 3}]}]
    text = render_landing(documents)
    assert ":Tier: smoke" in text and ":Revision: abc123" in text
    assert ":Verdicts: reproduced: 1, not reproduced: 1, partially: 0, inconclusive: 1" in text
    from docutils.core import publish_parts

    html = publish_parts(text, writer="html")["html_body"]
    assert "Verdicts per claim" in html and "system-message" not in html
    # the landing stays short (the report loses the top of a page taller than the window): no check is listed
    assert "law_b" not in html and "law_a" not in html
    checks = render_checks(documents)
    assert "Checks of retrieval_capacity" in checks and "law_b" in checks and "not resolved: *a*" in checks
    assert 'class="system-message"' not in checks and "Checks of rgr_capacity" in checks


def test_landing_page_stays_short_at_the_default_tier():
    """The landing's length does not grow with the checks: on the default reference's 57 checks it is as long
    as on the same claims with one check each, bar one line per withheld cause (the report cuts the top of a
    page taller than its window). A revision shared by several claims is listed once."""
    documents = [json.loads(p.read_text()) for p in sorted((ROOT / "reference" / "default" / "claims").glob("*.json"))]
    assert len(documents) == 5
    one_each = [dict(d, checks=d["checks"][:1]) for d in documents]
    full, short = render_landing(documents), render_landing(one_each)
    causes = len({c.get("withheld") for d in documents for c in d["checks"] if c.get("withheld")})
    assert len(full.splitlines()) <= len(short.splitlines()) + causes + 2
    revisions = next(line for line in full.splitlines() if line.startswith(":Revision:"))
    listed = [r.strip() for r in revisions.removeprefix(":Revision:").split(",")]
    assert len(listed) == len(set(listed))


def test_provenance_columns_stay_text(tmp_path, e2_section):
    """A revision such as 92862176e600 (this repository had one) is a float to pandas (9.3e607, read as inf),
    and a version 1.10 would read 1.1: run tables keep their provenance columns as written."""
    path = tmp_path / "E2.csv"
    table = e2_table(e2_section["E2"])
    table["git_revision"], table["version_scipy"], table["python"] = "92862176e600", "1.10", "3.11"
    table.to_csv(path, index=False)
    frame = read_table(path)
    assert (frame["git_revision"] == "92862176e600").all() and (frame["version_scipy"] == "1.10").all()
    assert (frame["python"] == "3.11").all() and pd.api.types.is_numeric_dtype(frame["d"])
