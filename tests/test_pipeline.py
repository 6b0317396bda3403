"""End to end: the smoke tier of the whole DAG in a scratch copy, the report, and `snakemake --lint`."""
import json
import shutil
import subprocess
import sys

import pytest
import yaml

from attncap.claims import VERDICTS

from conftest import ROOT

pytestmark = pytest.mark.slow
WORKFLOW_FILES = ["Snakefile", "workflow", "profiles", "envs", "config", "notebooks", "scripts", "reference"]


def snakemake(*args, cwd):
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=1800)


def copy_workflow(target):
    for name in WORKFLOW_FILES:
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, target / name)
    return target


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """Run the whole smoke tier once in a scratch copy of the workflow; shared by the tests below."""
    workdir = copy_workflow(tmp_path_factory.mktemp("smoke"))
    result = snakemake("--cores", "2", "--configfile", "config/smoke.yaml", cwd=workdir)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return workdir


def test_every_artifact_exists_and_nothing_is_left_to_do(smoke_run):
    config = yaml.safe_load((smoke_run / "config" / "smoke.yaml").read_text())
    results = smoke_run / "results"
    for claim in config["claims"]:
        document = json.loads((results / "claims" / f"{claim}.json").read_text())
        assert document["tier"] == "smoke" and document["checks"]
        assert all(check["verdict"] in VERDICTS for check in document["checks"])
        assert (results / "notebooks" / f"{claim}.html").stat().st_size > 10_000
        assert any(results.joinpath("figures").glob(f"{claim}_*.png"))
        assert claim in (results / "claims.md").read_text()
    for png in results.joinpath("figures").glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the smoke tier's warm interpreter (config warm_start) served every job it was up for: none was refused
    refused = [log.name for log in results.joinpath("logs").rglob("*.log")
               if "started in a fresh interpreter" in log.read_text()]
    assert config["warm_start"] and not refused, refused
    dry = snakemake("-n", "--cores", "2", "--configfile", "config/smoke.yaml", cwd=smoke_run)
    assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr


def test_report_renders_with_captions(smoke_run):
    result = snakemake("--cores", "1", "--configfile", "config/smoke.yaml", "--report", "results/report.html",
                       cwd=smoke_run)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (smoke_run / "results" / "report.html").stat().st_size > 50_000
    # the report opens on the landing page (the verdict totals per claim); every claim's checks are on its
    # page of every check, in category verdicts
    landing = (smoke_run / "results" / "claims_landing.rst").read_text()
    assert "Verdicts per claim" in landing
    checks = (smoke_run / "results" / "claims.html").read_text()
    for path in (smoke_run / "results" / "claims").glob("*.json"):
        document = json.loads(path.read_text())
        assert f"Checks of {document['claim']}" in checks
        assert all(f">{c['id']}<" in checks for c in document["checks"])


def test_run_rows_carry_provenance(smoke_run):
    import pandas as pd

    for csv in (smoke_run / "results").glob("*/runs/*.csv"):
        frame = pd.read_csv(csv)
        for column in ("claim", "experiment", "seed", "wall_time_s", "device", "git_revision", "version_torch", "tier"):
            assert column in frame, f"{csv.name} lacks {column}"


def test_lint_is_clean():
    result = snakemake("--lint", cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_smoke_run_matches_the_committed_reference(smoke_run):
    """`snakemake compare` (attncap.compare) against reference/smoke/: every verdict equal and every number
    within its precision. If a change is meant to move them, refresh the reference with
    `snakemake reference --cores 2 --configfile config/smoke.yaml` and review its diff."""
    result = snakemake("compare", "--cores", "2", "--configfile", "config/smoke.yaml", cwd=smoke_run)
    log = smoke_run / "results" / "logs" / "compare.log"
    assert result.returncode == 0, "smoke results differ from reference/smoke:\n" + (
        log.read_text()[-6000:] if log.exists() else result.stdout[-3000:] + result.stderr[-3000:])
