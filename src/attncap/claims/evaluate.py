"""Run a claim's verdict functions on its run CSVs and write the JSON document and summary CSV."""
from __future__ import annotations

import importlib
from pathlib import Path

import pandas as pd

from attncap.claims import claim_document
from attncap.runtime import write_csv, write_json


def load_tables(paths) -> dict[str, pd.DataFrame]:
    """Run CSVs keyed by file stem; several files of one experiment (E5_d16, E5_d32) are concatenated
    under the experiment id (the part before the first underscore)."""
    tables: dict[str, list[pd.DataFrame]] = {}
    for path in map(Path, paths):
        tables.setdefault(path.stem.split("_")[0], []).append(pd.read_csv(path))
    return {k: pd.concat(v, ignore_index=True) for k, v in tables.items()}


def evaluate_claim(claim: str, paths, *, tier: str, json_path, summary_path) -> dict:
    module = importlib.import_module(f"attncap.claims.{claim}")
    tables = load_tables(paths)
    checks = module.checks(tables)
    provenance = {}
    for frame in tables.values():
        if "git_revision" in frame:
            provenance = {k: str(frame[k].iloc[0]) for k in frame.columns
                          if k in ("git_revision", "device", "python") or k.startswith("version_")}
            break
    document = claim_document(claim, module.TITLE, tier, checks, provenance)
    write_json(document, json_path)
    write_csv(pd.DataFrame(document["checks"]).astype({"measured": str}), summary_path)
    return document
