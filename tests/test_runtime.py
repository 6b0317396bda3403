"""Atomic outputs and provenance."""
import pandas as pd
import pytest

from attncap.runtime import atomic_path, provenance, write_csv


def test_atomic_path_leaves_nothing_when_the_writer_fails(tmp_path):
    target = tmp_path / "out.csv"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("partial")
            raise RuntimeError("killed")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_atomic_path_replaces_on_success(tmp_path):
    target = tmp_path / "sub" / "out.csv"
    write_csv(pd.DataFrame({"a": [1, 2]}), target)
    assert pd.read_csv(target)["a"].tolist() == [1, 2]
    assert [p.name for p in target.parent.iterdir()] == ["out.csv"]


def test_provenance_names_revision_versions_and_device():
    stamp = provenance("cpu", "smoke")
    assert stamp["device"] == "cpu" and stamp["tier"] == "smoke"
    assert stamp["version_torch"].startswith("2.13")
    assert stamp["git_revision"]
