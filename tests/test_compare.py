"""attncap.compare: a run against a reference, verdict by verdict and number by number within its precision."""
import copy
import json
import shutil
from pathlib import Path

import pytest

from attncap.compare import TRAINED_REL, compare, load, main, numbers, redecide, render, write_reference
from attncap.config import run_config


def _doc(claim="c"):
    return {"claim": claim, "tier": "smoke", "provenance": {"git_revision": "abc"}, "checks": [
        {"id": "law", "verdict": "reproduced", "precondition": "", "reason": "",
         "measured": {"slope": {"slope": 1.02, "interval": [0.9, 1.1], "level": 0.95}, "rss": 0.5, "exact": 4}},
        {"id": "trained", "verdict": "reproduced", "precondition": "every run learned", "reason": "",
         "measured": {"accuracy": 0.80, "gap": {"difference": 0.3, "interval": [0.25, 0.35]}, "label": "x"}},
    ]}


def _write(tmp_path, name, docs):
    folder = tmp_path / name / "claims"
    folder.mkdir(parents=True)
    for doc in docs:
        (folder / f"{doc['claim']}.json").write_text(json.dumps(doc))
    return tmp_path / name


def _problems(run, reference):
    return [p for row in compare({d["claim"]: d for d in run}, {d["claim"]: d for d in reference}) for p in row.problems]


def test_identical_runs_agree(tmp_path):
    ref, run = _write(tmp_path, "ref", [_doc()]), _write(tmp_path, "run", [_doc()])
    assert main([str(run), str(ref)]) == 0
    assert not _problems([_doc()], [_doc()])


def test_a_flipped_verdict_fails_naming_the_check():
    run = _doc()
    run["checks"][0]["verdict"] = "not reproduced"
    (problem,) = _problems([run], [_doc()])
    assert "c.law" in problem and "'reproduced' in the reference" in problem and "'not reproduced' in the run" in problem


def test_an_exact_number_must_match_and_a_trained_one_within_its_tolerance():
    run = _doc()
    run["checks"][0]["measured"]["rss"] = 0.5 * (1 + 1e-4)  # an untrained check: exact up to rounding
    run["checks"][1]["measured"]["accuracy"] = 0.80 * (1 + TRAINED_REL / 2)  # trained: within 5%
    (problem,) = _problems([run], [_doc()])
    assert problem.startswith("c.law.rss:") and "within 1e-06 relative" in problem
    run["checks"][1]["measured"]["accuracy"] = 0.80 * (1 + 2 * TRAINED_REL)
    assert any(p.startswith("c.trained.accuracy:") for p in _problems([run], [_doc()]))


def test_a_trained_check_withheld_on_both_sides_compares_its_verdict_not_its_numbers():
    """Its models are uncertified, so its numbers are not measurements (they differ between machines' float
    kernels); the verdict still must match, and an untrained inconclusive check keeps its exact numbers."""
    ref = _doc()
    ref["checks"][1].update(verdict="inconclusive", reason="trained fewer than 1000 steps")
    run = copy.deepcopy(ref)
    run["checks"][1]["measured"]["accuracy"] = 0.25
    assert not _problems([run], [ref])
    run["checks"][1]["verdict"] = "reproduced"
    problems = _problems([run], [ref])
    assert any("verdict 'inconclusive' in the reference" in p for p in problems)
    assert any(p.startswith("c.trained.accuracy:") for p in problems)
    ref["checks"][0]["verdict"] = "inconclusive"
    run = copy.deepcopy(ref)
    run["checks"][0]["measured"]["rss"] = 0.6
    assert any(p.startswith("c.law.rss:") for p in _problems([run], [ref]))


def test_an_estimate_is_compared_with_the_reference_interval():
    run = _doc()
    run["checks"][0]["measured"]["slope"] = {"slope": 1.09, "interval": [0.95, 1.23], "level": 0.95}  # 7% off, inside
    run["checks"][1]["measured"]["gap"] = {"difference": 0.34, "interval": [0.2, 0.5]}
    assert not _problems([run], [_doc()])
    run["checks"][1]["measured"]["gap"]["difference"] = 0.37  # outside [0.25, 0.35]
    (problem,) = _problems([run], [_doc()])
    assert "gap.difference" in problem and "95% interval [0.25, 0.35]" in problem


def test_missing_claims_checks_and_numbers_fail():
    assert _problems([], [_doc()]) == ["c: claim missing from the run"]
    run = _doc()
    del run["checks"][1]
    assert _problems([run], [_doc()]) == ["c.trained: check missing from the run"]
    run = _doc()
    del run["checks"][0]["measured"]["exact"]
    assert _problems([run], [_doc()])[0].startswith("c.law.exact: missing from the run")


def test_numbers_keep_intervals_and_skip_strings_and_booleans():
    found = numbers({"a": {"slope": 2.0, "interval": [1.0, 3.0]}, "b": [1, True, "x"], "c": None})
    assert set(found) == {"a.slope", "b[0]"} and found["a.slope"].interval == (1.0, 3.0)


def test_a_written_reference_compares_equal_to_its_run(tmp_path, capsys):
    results = _write(tmp_path, "results", [_doc("c"), _doc("d")])
    (results / "claims.md").write_text("# verdicts\n")
    figure = tmp_path / "c_law.png"
    figure.write_bytes(b"png")
    (results / "c" / "runs").mkdir(parents=True)
    (results / "c" / "runs" / "E1.csv").write_text("seed,accuracy\n0,0.5\n")
    target = write_reference(results, tmp_path / "reference" / "smoke", figures=[str(figure)])
    assert (target / "claims.md").exists() and (target / "figures" / "c_law.png").exists()
    # the run tables are kept beside the verdicts, so that a changed check can be decided again on them
    assert (target / "runs" / "c" / "E1.csv").read_text() == "seed,accuracy\n0,0.5\n"
    assert not (target / "runs" / "d").exists()
    summary = (target / "summary.md").read_text().splitlines()
    assert summary[2] == "| c | 2 | 0 | 0 | 0 | 0 of 0 |" and summary[-1].startswith("| **all** | **4** |")
    provenance = json.loads((target / "provenance.json").read_text())
    assert provenance["tier"] == "smoke" and provenance["git_revision"] == "abc" and provenance["machine"]["cores"] >= 1
    assert set(load(target)) == {"c", "d"} and main([str(results), str(target)]) == 0
    changed = copy.deepcopy(_doc("d"))
    changed["checks"][0]["verdict"] = "partially"
    (results / "claims" / "d.json").write_text(json.dumps(changed))
    assert main([str(results), str(target)]) == 1
    out = capsys.readouterr().out
    assert "| d | law | reproduced | partially |" in out and "1 of 4 checks" not in out and "1 difference:" in out


def test_a_folder_without_verdicts_is_a_clear_error(tmp_path, capsys):
    assert main([str(tmp_path), str(tmp_path)]) == 2
    assert "no claims/ folder" in capsys.readouterr().err


def test_a_reference_names_every_revision_its_tables_were_run_at(tmp_path):
    """A partial re-run leaves tables from two commits: the claim documents list both, and the reference
    names each revision once."""
    later = copy.deepcopy(_doc("d"))
    later["provenance"]["git_revision"] = "abc, def"
    results = _write(tmp_path, "results", [_doc("c"), later])
    target = write_reference(results, tmp_path / "reference" / "smoke", figures=[])
    assert json.loads((target / "provenance.json").read_text())["git_revision"] == "abc, def"


def test_a_reference_sums_the_jobs_cpu_time_not_their_wall_time(tmp_path):
    """provenance.json's job_core_seconds is the `cpu_time` column of Snakemake's benchmark files (the first
    column, `s`, is wall time: a job waiting on a busy core would count its wait)."""
    results = _write(tmp_path, "results", [_doc("c")])
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    for name, wall, cpu in (("E1", 97.2, 74.9), ("E2", 19.74, 10.64)):
        path = results / "benchmarks" / "c" / f"{name}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + f"{wall}\t0:01:37\t525\t1083\t429\t459\t1.27\t0.01\t76.57\t{cpu}\n")
    target = write_reference(results, tmp_path / "reference" / "smoke", figures=[])
    provenance = json.loads((target / "provenance.json").read_text())
    assert provenance["job_core_seconds"] == 85.5 and provenance["job_core_seconds_measure"] == "cpu_time"
    # warm-started jobs (their work in a forked interpreter the benchmark does not see) count their wall time
    target = write_reference(results, tmp_path / "reference" / "smoke", figures=[], job_time="s")
    assert json.loads((target / "provenance.json").read_text())["job_core_seconds"] == 116.9
    # a job that ended before the first sample (cpu_time NA) counts its wall time; an empty table counts nothing
    (results / "benchmarks" / "c" / "E3.tsv").write_text(header + "2.5\t0:00:02\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\n")
    (results / "benchmarks" / "c" / "E4.tsv").write_text("")
    target = write_reference(results, tmp_path / "reference" / "smoke", figures=[])
    assert json.loads((target / "provenance.json").read_text())["job_core_seconds"] == 88.0


ROOT = Path(__file__).resolve().parents[1]
TIER_CONFIGS = {"smoke": "config/smoke.yaml", "default": "config/config.yaml"}


@pytest.mark.parametrize("tier", sorted(TIER_CONFIGS))
def test_the_committed_verdicts_follow_from_the_committed_tables(tier, tmp_path):
    """Every claim whose run tables reference/<tier>/ keeps is decided again with this checkout's checks and must
    give the committed verdicts and numbers: a change to a check that moves a committed verdict fails here until the
    reference is re-decided (scripts/redecide_reference.py) and its diff reviewed. Claims without kept tables
    (written before the tables were kept) are not read."""

    reference = ROOT / "reference" / tier
    kept = sorted(p.name for p in (reference / "runs").iterdir() if p.is_dir()) if (reference / "runs").is_dir() else []
    if tier == "smoke":
        assert kept, "reference/smoke keeps no run tables: write it again with `snakemake reference`"
    if not kept:
        pytest.skip(f"reference/{tier} keeps no run tables")
    copy_of = tmp_path / tier
    shutil.copytree(reference, copy_of)
    redecide(copy_of, kept, run_config([ROOT / TIER_CONFIGS[tier]]), "test")
    committed = load(reference)
    problems = [p for row in compare({c: load(copy_of)[c] for c in kept}, {c: committed[c] for c in kept})
                for p in row.problems]
    assert not problems, "\n".join(problems)


def test_redecide_rewrites_the_verdicts_and_names_the_revision(tmp_path):
    """scripts/redecide_reference.py on a reference whose kept tables are the smoke tier's: the documents are
    written again (a verdict edited by hand is put back), and provenance.json records the deciding revision."""
    reference = tmp_path / "smoke"
    shutil.copytree(ROOT / "reference" / "smoke", reference)
    claim = "rgr_capacity"
    path = reference / "claims" / f"{claim}.json"
    doc = json.loads(path.read_text())
    doc["checks"][0]["verdict"] = "partially" if doc["checks"][0]["verdict"] != "partially" else "reproduced"
    path.write_text(json.dumps(doc))
    changed = redecide(reference, [claim], run_config([ROOT / "config" / "smoke.yaml"]), "abc1234")
    assert changed[claim][0] != changed[claim][1]
    assert load(reference)[claim] == load(ROOT / "reference" / "smoke")[claim]
    assert json.loads((reference / "provenance.json").read_text())["decided_at"][claim] == "abc1234"
    assert "rgr_capacity" in (reference / "claims.md").read_text()
    with pytest.raises(FileNotFoundError, match="no run tables kept"):
        redecide(reference, ["no_such_claim"], {}, "x")
