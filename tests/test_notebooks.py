"""Claim notebooks: each percent source is one valid notebook with one parameters cell, and the shared
set-up (`notebook.open_claim`) reads exactly the run tables it is given."""
import json

import pandas as pd
import pytest

from attncap.notebook import open_claim, read_source

from conftest import ROOT

SOURCES = sorted((ROOT / "notebooks").glob("*.py"))


@pytest.mark.parametrize("source", SOURCES, ids=[s.stem for s in SOURCES])
def test_source_has_one_parameters_cell(source):
    notebook = read_source(source)
    tagged = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    for name in ("results_dir", "tier", "runs"):
        assert f"{name} =" in tagged[0].source, f"{source.name}: parameter {name!r} missing"
    assert notebook.cells[0].cell_type == "markdown"


def test_open_claim_reads_only_the_given_tables(tmp_path):
    runs = tmp_path / "demo" / "runs"
    runs.mkdir(parents=True)
    pd.DataFrame({"x": [1, 2]}).to_csv(runs / "E1.csv", index=False)
    pd.DataFrame({"x": [3]}).to_csv(runs / "E2.csv", index=False)  # a leftover from an earlier grid
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "demo.json").write_text(json.dumps({"checks": [
        {"id": "a", "statement": "s", "measured": 1, "expected": "e", "verdict": "inconclusive", "reason": "why"}]}))
    claim = open_claim("demo", tmp_path, json.dumps([str(runs / "E1.csv")]))
    assert sorted(claim.tables) == ["E1"] and len(claim.tables["E1"]) == 2
    assert list(claim.checks()["reason"]) == ["why"]
    assert sorted(open_claim("demo", tmp_path).tables) == ["E1", "E2"]  # by hand: every CSV
    assert claim.missing("E9", "placeholder") and (tmp_path / "figures" / "demo_placeholder.png").exists()
