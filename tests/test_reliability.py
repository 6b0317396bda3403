"""Determinism (same config and seed → identical numbers) and resuming a killed run (issue 8)."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from conftest import ROOT
from test_pipeline import copy_workflow, snakemake

TINY_MQAR = {"vocab": 32, "seq_len": 16, "kv_pairs": [2, 4], "d_model": [16], "mixers": ["softmax", "linear_elu"],
             "layers": 1, "heads": 1, "seeds": [0, 1], "steps": 25, "batch": 8, "lr": 0.003, "weight_decay": 0.1,
             "warmup_steps": 5, "eval_batches": 2, "curriculum": True, "positional": "learned",
             "short_conv": [True, False], "short_conv_width": 4, "short_conv_on": "qkv", "mlp_ratio": 0,
             "tie_embeddings": True, "target_accuracy": 0.99, "eval_every": 5, "check_batches": 1,
             "plateau_steps": 10, "plateau_delta": 0.01}
PROVENANCE = {"wall_time_s", "job_wall_time_s", "eval_time_s", "git_revision"}


def run_job(claim, experiment, spec, out, part="all"):
    subprocess.run([sys.executable, str(ROOT / "scripts" / "run_experiment.py"), claim, experiment, "--spec",
                    json.dumps(spec), "--part", part, "--threads", "1", "--device", "cpu", "--tier", "test",
                    "--out", str(out)], check=True, capture_output=True, timeout=600)
    return pd.read_csv(out)


@pytest.mark.parametrize("experiment,spec,part", [
    ("E5", TINY_MQAR, "d16"),
    ("E3", {"dims": [4, 8], "betas": ["sqrt_d", "d"], "epsilons": [0.3], "max_log2_n": 12, "min_queries": 16,
            "max_queries": 4096, "sample_budget": 65536, "validation_queries": 100}, "all"),
])
def test_same_config_and_seed_give_identical_numbers(tmp_path, experiment, spec, part):
    first = run_job("retrieval_capacity", experiment, spec, tmp_path / "a.csv", part)
    second = run_job("retrieval_capacity", experiment, spec, tmp_path / "b.csv", part)
    metrics = [c for c in first.columns if c not in PROVENANCE and not c.endswith("per_s")]
    pd.testing.assert_frame_equal(first[metrics], second[metrics], check_exact=True)


@pytest.mark.slow
def test_killed_run_resumes_without_redoing_finished_jobs(tmp_path):
    workdir = copy_workflow(tmp_path)
    # claim 1's smoke branch: several jobs of mixed length, enough to kill one mid-flight
    only_claim_1 = ["--config", 'claims=["retrieval_capacity"]']
    command = [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", "config/smoke.yaml", *only_claim_1]
    runs = workdir / "results" / "retrieval_capacity" / "runs"
    log = tmp_path / "first_run.log"
    with log.open("w") as sink:
        process = subprocess.Popen(command, cwd=workdir, stdout=sink, stderr=subprocess.STDOUT)
        deadline = time.time() + 600
        while time.time() < deadline and "Finished jobid" not in log.read_text():  # Snakemake recorded a job
            time.sleep(0.2)
        os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not (workdir / "results" / "claims.md").exists(), "run finished before it could be killed"
    # what Snakemake itself counts as done: outputs present and not scheduled again by a dry run
    plan = snakemake("-n", "--cores", "2", "--configfile", "config/smoke.yaml", *only_claim_1, cwd=workdir)
    scheduled = {path.strip() for line in re.findall(r"output: (.+)", plan.stdout + plan.stderr) for path in line.split(",")}
    finished = {p.name: p.stat().st_mtime_ns for p in runs.glob("E*.csv")
                if f"results/retrieval_capacity/runs/{p.name}" not in scheduled}
    assert finished, "no job had finished before the kill"

    # the SIGKILLed run could not release Snakemake's directory locks: clear them the documented way
    locked = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=600)
    assert locked.returncode != 0 and "cannot be locked" in locked.stdout + locked.stderr
    unlock = snakemake("--unlock", "--cores", "1", "--configfile", "config/smoke.yaml", *only_claim_1, cwd=workdir)
    assert unlock.returncode == 0, unlock.stderr[-2000:]
    resumed = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=1800)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    for name, mtime in finished.items():
        assert (runs / name).stat().st_mtime_ns == mtime, f"{name} was recomputed"
    assert json.loads((workdir / "results" / "claims" / "retrieval_capacity.json").read_text())["checks"]
    assert not list((workdir / "results").rglob("*.tmp")), "a partial temporary file was left behind"
    dry = snakemake("-n", "--cores", "2", "--configfile", "config/smoke.yaml", *only_claim_1, cwd=workdir)
    assert "Nothing to be done" in dry.stdout + dry.stderr
