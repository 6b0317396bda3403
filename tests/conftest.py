"""Shared test fixtures: repository paths and config loading."""
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def smoke_config():
    """A fresh copy of config/smoke.yaml (tests mutate it)."""
    return yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text())
