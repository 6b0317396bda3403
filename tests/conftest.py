"""Shared test fixtures: repository paths, config loading, a fixed code revision for resume tests."""
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def smoke_config():
    """A fresh copy of config/smoke.yaml (tests mutate it)."""
    return yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())


@pytest.fixture
def fixed_revision(monkeypatch):
    """Pin the code revision that names a job's resumable state (`RunContext._state_path`): a resume test
    makes two contexts, and a commit or an edit between them (a developer working beside the test run) would
    otherwise change the revision and, with it, the state files the second one looks for."""
    monkeypatch.setattr("attncap.experiments.context.git_revision", lambda: "test-revision")
