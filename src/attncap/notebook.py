"""Notebook plumbing: build .ipynb files from percent-format sources, execute them with papermill.

Each claim's notebook is written as `notebooks/<claim>.py` (cells separated by `# %%`, markdown cells
as `# %% [markdown]`, the parameters cell as `# %% tags=["parameters"]`) and built into
`notebooks/<claim>.ipynb` with `python -m attncap.notebook notebooks/<claim>.py`; a test keeps both in sync.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

from attncap.runtime import atomic_path

_HEADER = re.compile(r"^# %%(?P<rest>.*)$")


def percent_to_notebook(source: str) -> nbformat.NotebookNode:
    cells, kind, tags, lines = [], None, [], []

    def flush():
        if kind is None:
            return
        text = "\n".join(lines).strip("\n")
        if kind == "markdown":
            text = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in text.splitlines())
            cell = nbformat.v4.new_markdown_cell(text)
        else:
            cell = nbformat.v4.new_code_cell(text)
        if tags:
            cell.metadata["tags"] = list(tags)
        cells.append(cell)

    for line in source.splitlines():
        match = _HEADER.match(line)
        if match:
            flush()
            rest = match.group("rest")
            kind = "markdown" if "[markdown]" in rest else "code"
            tags = re.findall(r'"([^"]+)"', rest.split("tags=", 1)[1]) if "tags=" in rest else []
            lines = []
        elif kind is not None:
            lines.append(line)
    flush()
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["language_info"] = {"name": "python"}
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index}"
    return notebook


def build(source_path: str | Path) -> Path:
    source_path = Path(source_path)
    target = source_path.with_suffix(".ipynb")
    notebook = percent_to_notebook(source_path.read_text())
    with atomic_path(target) as tmp:
        nbformat.write(notebook, str(tmp))
    return target


def execute_notebook(notebook: str, executed: str, html: str, parameters: dict[str, str]) -> None:
    """Run with papermill (kernel python3, cwd = repository root), then export HTML; both atomic."""
    import papermill
    from nbconvert import HTMLExporter

    with atomic_path(executed) as tmp_nb:
        papermill.execute_notebook(notebook, str(tmp_nb), parameters=parameters, kernel_name="python3",
                                   cwd=str(Path.cwd()), progress_bar=False, log_output=True)
        body, _ = HTMLExporter().from_filename(str(tmp_nb))
        with atomic_path(html) as tmp_html:
            tmp_html.write_text(body)


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print(build(path))
