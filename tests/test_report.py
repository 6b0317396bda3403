"""The report's captions: every figure's caption names the checks it supports, by ids the claim really has."""
import json
import re

import pytest

from conftest import ROOT

CLAIMS = sorted(p.stem for p in (ROOT / "reference" / "smoke" / "claims").glob("*.json"))


def test_the_smoke_reference_holds_every_claim():
    assert CLAIMS == sorted(p.stem for p in (ROOT / "src" / "attncap" / "claims").glob("*.py")
                            if p.stem not in ("__init__", "evaluate", "laws"))


@pytest.mark.parametrize("claim", CLAIMS)
def test_every_caption_names_existing_checks(claim):
    ids = {c["id"] for c in json.loads((ROOT / "reference" / "smoke" / "claims" / f"{claim}.json").read_text())["checks"]}
    captions = sorted((ROOT / "workflow" / "report" / claim).glob("*.rst"))
    assert captions
    for caption in captions:
        text = caption.read_text()
        line = next((l for l in text.splitlines() if l.startswith("Checks:")), None)
        assert line is not None, f"{caption.relative_to(ROOT)} names no checks (add a 'Checks:' line)"
        named = set(re.findall(r"``([^`]+)``", line))
        assert named <= ids, f"{caption.relative_to(ROOT)} names unknown checks {sorted(named - ids)}"
        assert named or "none" in line, f"{caption.relative_to(ROOT)}: name the checks, or say none and why"
