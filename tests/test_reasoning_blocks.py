"""A second reasoning block never erases the first (issue 7): every catalogue family whose
reasoning has literal delimiters keeps both blocks, joined by a blank line, on every chunking; each
family file says why (``reasoning_blocks``)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from support import chunkings, run_stream

REPO = Path(__file__).resolve().parent.parent


def _literal(value):
    return value if isinstance(value, str) else value[0] if isinstance(value, list) else None


def _families():
    out = []
    for path in sorted((REPO / "templates").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        spec = doc["fields"].get("reasoning_content")
        if spec is None:
            continue
        opener, closer = _literal(spec.get("open")), _literal(spec.get("close"))
        if opener and closer:
            out.append((path.stem, opener, closer))
    return out


FAMILIES = _families()


def test_most_families_are_covered():
    assert len(FAMILIES) >= 25


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
@pytest.mark.parametrize("name, opener, closer", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_two_reasoning_blocks_are_both_kept(name, opener, closer, how):
    module = importlib.import_module(f"respc.generated.{name}")
    text = f"{opener}first thought{closer}Some text.{opener}second thought{closer}Done."
    message, _ = run_stream(module, "", chunkings(text, name)[how])
    join = "\n" if name == "gpt_oss" else "\n\n"
    assert message["reasoning_content"] == f"first thought{join}second thought"


@pytest.mark.parametrize("name", sorted({f[0] for f in FAMILIES}))
def test_family_file_says_why(name):
    family = json.loads((REPO / "tests" / "cases" / "families" / f"{name}.json").read_text(encoding="utf-8"))
    assert family["reasoning_blocks"].strip()
