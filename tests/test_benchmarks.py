"""The paper-tier cost benchmark (benchmarks/paper_cost.py): the job it times is the job it counted."""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]


def benchmark(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def paper_cost():
    return benchmark("paper_cost")


@pytest.fixture(scope="module")
def device_smoke():
    return benchmark("device_smoke")


@pytest.fixture(scope="module")
def smoke_rows(paper_cost):
    config = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    claims = ("retrieval_capacity", "mha_memorization", "swap_state_tracking")
    return [row for claim in claims for row in paper_cost.COUNTERS[claim](config[claim])]


def test_every_timed_job_is_the_job_counted(paper_cost, smoke_rows):
    """Each measurable row's `make` builds, with real CPU tensors, a step of exactly the FLOPs counted on meta
    (a closure that bound a later loop iteration's model or batch, or a batch of another size, fails)."""
    assert {row[0] for row in smoke_rows} >= {"E5", "M2", "S1"}
    for exp, label, flops, (make, steps) in smoke_rows:
        model, loss_fn, batch = make(torch.device("cpu"))
        assert paper_cost.step_flops(model, loss_fn, batch) * steps == flops, (exp, label)


def test_measure_projects_each_experiment_at_its_costliest_jobs_rate(paper_cost, smoke_rows):
    rows = [row for row in smoke_rows if row[0] in ("E5", "S3")]
    table = paper_cost.measure(rows, torch.device("cpu"), top=1)
    assert [r["experiment"] for r in table] == ["E5", "S3"]
    for record in table:
        costliest = max((r for r in rows if r[0] == record["experiment"]), key=lambda r: r[2])
        assert record["job"] == costliest[1]
        rate = record["fp32_tflops"] * 1e12
        assert math.isfinite(rate) and rate > 0
        # the rate is one step's FLOPs over one step's time, the hours the experiment's FLOPs at that rate
        assert record["step_gflop"] == pytest.approx(costliest[2] / costliest[3][1] / 1e9)
        assert rate == pytest.approx(record["step_gflop"] * 1e9 / (record["fp32_ms_per_step"] / 1e3))
        assert record["experiment_flop"] == sum(r[2] for r in rows if r[0] == record["experiment"])
        assert record["fp32_experiment_hours"] == pytest.approx(record["experiment_flop"] / rate / 3600)


def test_device_smoke_runs_the_smoke_jobs_and_refuses_a_changed_verdict(device_smoke, tmp_path, capsys):
    """benchmarks/device_smoke.py (the smoke tier on a lent GPU, without Snakemake), here on the CPU for one claim:
    its jobs reproduce reference/smoke's verdicts, and a reference with one verdict flipped makes it exit 1."""
    import json
    import shutil

    reference = tmp_path / "reference"
    shutil.copytree(ROOT / "reference" / "smoke" / "claims", reference / "claims")
    document = json.loads((reference / "claims" / "aot_memorization.json").read_text())
    flipped = document["checks"][0]
    flipped["verdict"] = "reproduced" if flipped["verdict"] != "reproduced" else "not reproduced"
    (reference / "claims" / "aot_memorization.json").write_text(json.dumps(document))

    results = tmp_path / "results"
    status = device_smoke.main(["--device", "cpu", "--claims", "aot_memorization", "--jobs", "2",
                                "--reference", str(reference), "--results", str(results)])
    out = capsys.readouterr().out
    assert status == 1 and "0 job(s) failed" in out
    assert f"{len(document['checks']) - 1} of {len(document['checks'])} verdicts as in" in out
    from attncap.compare import compare, load
    rows = compare(load(results), {"aot_memorization": load(ROOT / "reference" / "smoke")["aot_memorization"]})
    assert rows and all(row.reference == row.run for row in rows)


def test_device_smoke_gives_each_job_the_spec_the_snakefile_gives_it(device_smoke, tmp_path):
    """Claim 3's trained jobs get the M7 saturation settings beside their own section (`Rules.spec_json` with a
    part), its untrained ones do not; every job runs on the requested device with the tier's seed."""
    import json

    config = yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
    jobs = device_smoke.training_jobs(config, "cuda", tmp_path)
    assert any(claim == "mha_memorization" and "_" in Path(out).stem for claim, out, _ in jobs)  # a trained claim-3 job
    for claim, out, command in jobs:
        assert command[command.index("--device") + 1] == "cuda"
        assert command[command.index("--seed") + 1] == str(config["seed"])
        section = json.loads(command[command.index("--spec") + 1])
        experiment, _, part = Path(out).stem.partition("_")
        expected = {**config[claim][experiment]}
        if claim == "mha_memorization" and part:
            expected["saturation"] = config["mha_memorization"]["M7"]
        assert section == expected, out
