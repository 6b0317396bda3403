"""Notebook sources (percent format) and the committed .ipynb files stay in sync."""
import nbformat
import pytest

from attncap.notebook import percent_to_notebook

from conftest import ROOT

SOURCES = sorted((ROOT / "notebooks").glob("*.py"))


@pytest.mark.parametrize("source", SOURCES, ids=[s.stem for s in SOURCES])
def test_ipynb_matches_its_source(source):
    built = percent_to_notebook(source.read_text())
    committed = nbformat.read(str(source.with_suffix(".ipynb")), as_version=4)
    assert [c.source for c in committed.cells] == [c.source for c in built.cells], (
        f"rebuild with: python -m attncap.notebook {source.relative_to(ROOT)}")
    tagged = [c for c in committed.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and "results_dir" in tagged[0].source


def test_percent_parser_handles_markdown_and_tags():
    nb = percent_to_notebook('# %% [markdown]\n# # Title\n# text\n\n# %% tags=["parameters"]\nx = 1\n\n# %%\nprint(x)\n')
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "code"]
    assert nb.cells[0].source == "# Title\ntext"
    assert nb.cells[1].metadata["tags"] == ["parameters"]
