"""Notebook plumbing: run a claim's percent-format source with papermill, and the set-up every claim
notebook shares.

Each claim's notebook is written as `notebooks/<claim>.py` in jupytext's percent format (cells
separated by `# %%`, markdown cells `# %% [markdown]`, the parameters cell `# %% tags=["parameters"]`).
The notebook rule converts it with jupytext and executes it with papermill, so the source is the only
copy and editing it reruns the rule. Inside a notebook, `open_claim` loads exactly the run tables the
rule declared as inputs and the verdict JSON computed from the same tables, so a figure and its
verdict cannot disagree about their inputs.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from pathlib import Path

import pandas as pd

from attncap.runtime import atomic_path


def read_source(path: str | Path):
    """The notebook (nbformat node) of a percent-format source, via jupytext."""
    import jupytext

    notebook = jupytext.read(str(path), fmt="py:percent")
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return notebook


def execute_notebook(source: str, executed: str, html: str, parameters: dict[str, str]) -> None:
    """Convert `source` (percent .py, or an .ipynb) and run it with papermill (kernel python3, cwd =
    repository root), keep the executed copy and export HTML; every output written atomically."""
    import nbformat
    import papermill
    from nbconvert import HTMLExporter

    with atomic_path(executed) as tmp_nb, tempfile.TemporaryDirectory() as scratch:
        if str(source).endswith(".py"):
            converted = Path(scratch) / (Path(source).stem + ".ipynb")
            nbformat.write(read_source(source), str(converted))
            source = str(converted)
        papermill.execute_notebook(source, str(tmp_nb), parameters=parameters, kernel_name="python3",
                                   cwd=str(Path.cwd()), progress_bar=False, log_output=True)
        body, _ = HTMLExporter().from_filename(str(tmp_nb))
        with atomic_path(html) as tmp_html:
            tmp_html.write_text(body)


@dataclasses.dataclass
class ClaimNotebook:
    """What every claim notebook starts from: its run tables (keyed by experiment id), its verdict
    document, and where figures and tables go."""

    claim: str
    tables: dict[str, pd.DataFrame]
    verdicts: dict
    figures_dir: Path
    tables_dir: Path

    def checks(self) -> pd.DataFrame:
        """The verdict table (with the reason for every inconclusive check)."""
        frame = pd.DataFrame(self.verdicts["checks"])
        columns = [c for c in ("id", "statement", "measured", "expected", "verdict", "reason") if c in frame]
        return frame[columns]

    def missing(self, experiment: str, figure: str) -> bool:
        """True (after saving a labelled placeholder figure `figure`) when `experiment` was not run."""
        from attncap import plotting

        if experiment in self.tables and len(self.tables[experiment]):
            return False
        fig, ax = plotting.figure()
        ax.text(0.5, 0.5, f"{experiment} was not run in this build", ha="center", va="center")
        ax.set_axis_off()
        plotting.save(fig, self.figures_dir, self.claim, figure)
        return True


def open_claim(claim: str, results_dir: str | Path = "results", runs: str | list | None = None) -> ClaimNotebook:
    """Set up a claim notebook: plotting style, the run tables and the verdicts.

    `runs` is the rule's list of run CSVs (a JSON string when it comes through papermill); run by hand
    without it, the notebook reads every CSV under `results/<claim>/runs/` and says so.
    """
    from attncap import plotting
    from attncap.claims.evaluate import load_tables

    results_dir = Path(results_dir)
    if isinstance(runs, str):
        runs = json.loads(runs) if runs.strip() else None
    if not runs:
        runs = sorted((results_dir / claim / "runs").glob("*.csv"))
        print(f"no run list given: reading all {len(runs)} CSVs under {results_dir / claim / 'runs'}", file=sys.stderr)
    plotting.setup()
    verdicts = json.loads((results_dir / "claims" / f"{claim}.json").read_text())
    return ClaimNotebook(claim=claim, tables=load_tables(runs), verdicts=verdicts,
                         figures_dir=results_dir / "figures", tables_dir=results_dir / "tables")
