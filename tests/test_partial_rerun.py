"""scripts/partial_rerun.py: a re-run's finished tables carried to the next session come back byte for byte, and
only when the code and config that train them are unchanged since their revision."""
import importlib.util
import subprocess
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
CLAIM = "swap_state_tracking"


@pytest.fixture(scope="module")
def partial():
    spec = importlib.util.spec_from_file_location("partial_rerun", ROOT / "scripts" / "partial_rerun.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _head() -> str:
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    return head.stdout.strip()


def _results_with_table(tmp_path: Path, revision: str) -> Path:
    results = tmp_path / "results"
    (results / CLAIM / "runs").mkdir(parents=True)
    (results / "benchmarks" / CLAIM).mkdir(parents=True)
    pd.DataFrame({"acc": [0.25, 0.5], "git_revision": [revision] * 2}).to_csv(
        results / CLAIM / "runs" / "S4_n5-softmax-L4.csv", index=False)
    (results / "benchmarks" / CLAIM / "S4_n5-softmax-L4.tsv").write_text("s\tcpu_time\n12.5\t11.0\n")
    return results


def test_kept_tables_come_back_byte_for_byte(partial, tmp_path):
    source = _results_with_table(tmp_path, _head())
    reference = tmp_path / "reference" / "default"
    assert partial.keep(reference, CLAIM, source) == 0
    fresh = tmp_path / "fresh"
    assert partial.restore(reference, CLAIM, Path("config/config.yaml"), fresh) == 0
    for sub in (f"{CLAIM}/runs/S4_n5-softmax-L4.csv", f"benchmarks/{CLAIM}/S4_n5-softmax-L4.tsv"):
        assert (fresh / sub).read_bytes() == (source / sub).read_bytes()


@pytest.mark.parametrize("revision", ["+dirty", "0123456789ab"])
def test_a_table_from_an_unknown_or_dirty_revision_is_refused(partial, tmp_path, capsys, revision):
    revision = _head() + revision if revision == "+dirty" else revision
    reference = tmp_path / "reference" / "default"
    partial.keep(reference, CLAIM, _results_with_table(tmp_path, revision))
    fresh = tmp_path / "fresh"
    assert partial.restore(reference, CLAIM, Path("config/config.yaml"), fresh) == 1
    assert "S4_n5-softmax-L4.csv" in capsys.readouterr().err
    assert not (fresh / CLAIM / "runs").exists()


def test_a_revision_whose_training_code_differs_is_refused(partial):
    _head()
    last = subprocess.run(["git", "log", "-1", "--format=%H", "--", "src/attncap/train.py"], cwd=ROOT,
                          capture_output=True, text=True).stdout.strip()
    before = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{last}^"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    if not before:
        pytest.skip("the checkout's history does not reach a change of train.py")
    assert "training code changed" in partial.same_training_code(before, CLAIM)
    assert partial.same_training_code(_head(), CLAIM) is None


def test_a_changed_config_section_is_refused(partial, monkeypatch):
    head = _head()
    assert partial.same_config(head, CLAIM, Path("config/config.yaml")) is None
    calls = iter([{CLAIM: {"S4": {"steps": 36000}}}, {CLAIM: {"S4": {"steps": 18000}}}])
    monkeypatch.setattr(partial, "run_config", lambda files: next(calls))
    assert "section of config/config.yaml changed" in partial.same_config(head, CLAIM, Path("config/config.yaml"))


def test_only_the_claims_own_experiment_module_counts(partial):
    paths = partial.training_code_paths(CLAIM)
    assert ":(exclude)src/attncap/experiments/rgr_capacity.py" in paths
    assert not any(p.endswith(f"experiments/{CLAIM}.py") for p in paths)
    assert ":(exclude)src/attncap/claims" in paths


def test_a_granted_commit_is_the_only_change_it_excuses(partial, tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "src" / "attncap").mkdir(parents=True)

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                              capture_output=True, text=True)

    def commit(code):
        (repo / "src" / "attncap" / "train.py").write_text(code)
        git("add", "-A"), git("commit", "-qm", code)
        return git("rev-parse", "HEAD").stdout.strip()

    git("init", "-q")
    table, fix = commit("v1"), commit("v2: a crash fixed")
    monkeypatch.setattr(partial, "_git", lambda *args: git(*args))
    assert "training code changed" in partial.same_training_code(table, CLAIM)
    assert partial.same_training_code(table, CLAIM, granted=fix) is None
    later = commit("v3: a change of numbers")
    assert "training code changed" in partial.same_training_code(table, CLAIM, granted=fix)
    assert "training code changed" in partial.same_training_code(table, CLAIM, granted=later)  # two changes since
    # a granted commit that is not in the history, or has no parent, is named as such, not as a code change
    assert partial.granted_commit_error(None) is None and partial.granted_commit_error(fix) is None
    assert "not a commit" in partial.granted_commit_error("0" * 40)
    assert "has no parent" in partial.granted_commit_error(table)
