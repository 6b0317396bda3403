"""Run a claim's verdict functions on its run CSVs and write the JSON document and summary CSV."""
from __future__ import annotations

import importlib
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from attncap.claims import claim_document
from attncap.runtime import read_run_csv, write_csv, write_json


class TableError(RuntimeError):
    """A run table that cannot be read, or that does not cover the configured grid (names the file)."""


def read_table(path) -> pd.DataFrame:
    """One run CSV; any failure to parse it, or a table without rows, is a TableError naming the file."""
    try:
        frame = read_run_csv(path)
    except (OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise TableError(f"{path}: cannot read this run table ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else 'no detail'}); delete it and rerun its job") from exc
    if frame.empty:
        raise TableError(f"{path}: the run table has no rows (columns: {', '.join(map(str, frame.columns[:8]))}); "
                         "delete it and rerun its job")
    return frame


def load_tables(paths) -> dict[str, pd.DataFrame]:
    """Run CSVs keyed by file stem; several files of one experiment (E5_d16, E5_d32) are concatenated
    under the experiment id (the part before the first underscore)."""
    tables: dict[str, list[pd.DataFrame]] = {}
    for path in map(Path, paths):
        tables.setdefault(path.stem.split("_")[0], []).append(read_table(path))
    return {k: pd.concat(v, ignore_index=True) for k, v in tables.items()}


# ---- coverage: do the run tables hold every cell the config asks for? ------------------------------

def _norm(value):
    """Compare CSV values with config values: numbers (and booleans) as floats, anything else as text."""
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return round(number, 9)


def _cell_text(cell: dict) -> str:
    rows = cell.get(ROWS, 1)
    text = " ".join(f"{k}={v}" for k, v in cell.items() if k != ROWS)
    return text + (f" (x{rows} rows)" if rows > 1 else "")


ROWS = "_rows"
"""Key of an expected cell giving how many rows it needs (default 1), for cells told apart only by count."""


def missing_cells(frame: pd.DataFrame, cells: list[dict]) -> list[dict]:
    """The expected cells (dicts of column -> value; `_rows` = rows needed) that `frame` lacks."""
    counts: dict[tuple, dict] = {}
    missing = []
    for cell in cells:
        keys = tuple(sorted(k for k in cell if k != ROWS))
        if any(k not in frame.columns for k in keys):
            missing.append(cell)
            continue
        if keys not in counts:
            values = zip(*(frame[k].map(_norm) for k in keys)) if keys else [()] * len(frame)
            counts[keys] = Counter(values)
        if counts[keys][tuple(_norm(cell[k]) for k in keys)] < cell.get(ROWS, 1):
            missing.append(cell)
    return missing


def coverage_problems(claim: str, paths, section: dict) -> list[str]:
    """Every way the given run tables fall short of the grid the claim's config section asks for: a
    table that is missing, unreadable, not part of the grid, or lacking configured cells (named)."""
    experiments = importlib.import_module(f"attncap.experiments.{claim}")
    expected = experiments.expected_cells(section)
    given = {Path(p).stem: Path(p) for p in paths}
    problems = [f"missing run table {stem}.csv: the config's grid needs it" for stem in expected if stem not in given]
    for stem, path in given.items():
        if stem not in expected:
            problems.append(f"{path}: not a run table of the configured grid (expected: {', '.join(expected)})")
            continue
        try:
            frame = read_table(path)
        except TableError as exc:
            problems.append(str(exc))
            continue
        cells = expected[stem]
        missing = missing_cells(frame, cells)
        if missing:
            absent = sorted({k for c in missing for k in c if k != ROWS and k not in frame.columns})
            listed = "; ".join(_cell_text(c) for c in missing[:8]) + (f"; and {len(missing) - 8} more" if len(missing) > 8 else "")
            problems.append(f"{path}: {len(frame)} rows cover {len(cells) - len(missing)} of the {len(cells)} configured "
                            f"cells{' (no column ' + ', '.join(absent) + ')' if absent else ''}; missing: {listed}")
    return problems


def check_coverage(claim: str, paths, section: dict) -> None:
    """Raise a TableError listing every shortfall; analysis must never see a partial grid."""
    problems = coverage_problems(claim, paths, section)
    if problems:
        raise TableError(f"{claim}: the run tables do not cover the configured grid, so no verdict is computed:\n  "
                         + "\n  ".join(problems))


def evaluate_claim(claim: str, paths, *, tier: str, json_path, summary_path, section: dict | None = None) -> dict:
    """Verdicts of one claim. With the claim's config `section`, the tables must first cover its grid
    (TableError otherwise); without it (tests, notebooks) the tables are taken as they are."""
    module = importlib.import_module(f"attncap.claims.{claim}")
    if section is not None:
        check_coverage(claim, paths, section)
    tables = load_tables(paths)
    checks = module.checks(tables)
    provenance = {}
    for frame in tables.values():
        if "git_revision" in frame:
            provenance = {k: str(frame[k].iloc[0]) for k in frame.columns
                          if k in ("git_revision", "device", "python") or k.startswith("version_")}
            break
    # tables re-run at a later commit (a partial re-run) carry their own revision: name every one
    revisions = sorted({str(r) for frame in tables.values() if "git_revision" in frame for r in frame["git_revision"]})
    if revisions:
        provenance["git_revision"] = ", ".join(revisions)
    document = claim_document(claim, module.TITLE, tier, checks, provenance)
    write_json(document, json_path)
    write_csv(pd.DataFrame(document["checks"]).astype({"measured": str}), summary_path)
    return document
