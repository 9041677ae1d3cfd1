"""``respc detect`` over every chat template llama.cpp's tests ship (issue 28, "detect").

llama.cpp's ``tests/test-chat.cpp`` runs the chat templates in its ``models/templates/``; the 70 of
llama-cpp-python 0.3.36's vendored llama.cpp are listed in ``tests/cases/detect/llama_cpp.json``
with the model's catalogue family (the family of its format where the model has none of its own, with
a note) and where the exact bytes live: the shared corpus or this repository's own chat templates
when they are the same file, else ``tests/cases/detect/llama_cpp/`` (sources in its SOURCES.md).

Each template must either name its family (the family is among the tied best exact fits, the rule of
``tests/test_detect.py``: families whose formats the rendered samples cannot tell apart tie) or be
refused with the nearest fits named (``respc detect`` exits 1; issue 24: an inexact fit is never
named). A template whose file is a catalogue family's own chat template (``<family>.jinja``) is
detected by ``tests/test_detect.py::test_corpus_chat_template_detects_its_family`` with the same
assertion; here only its bytes and family are checked, so the sweep stays a few seconds. Known misses
are strict xfails, each with its reason.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from respc.compiler.detect import detect, read_chat_template

from support import REPO, SHARED, missing

MANIFEST = json.loads((REPO / "tests" / "cases" / "detect" / "llama_cpp.json").read_text(encoding="utf-8"))

#: llama.cpp file -> why detect does not name the model's family (strict: a fix shows as XPASS)
MISSES: dict[str, str] = {
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": (
        "llama.cpp's copy adds a thinking switch the model's own template lacks ('{% if not enable_thinking %}"
        "</think>'); cogito has deepseek_r1's format (the same catalogue template) with enable_thinking as its "
        "switch, so the tie rule's thinking-switch criterion names cogito, deepseek_r1 an exact fit behind it"),
}


def _path(entry: dict) -> Path:
    where = entry["path"]
    return SHARED / where.removeprefix("shared/") if where.startswith("shared/") else REPO / where


def _covered(entry: dict) -> bool:
    """Whether tests/test_detect.py already detects this file as its family's own chat template."""
    path = _path(entry)
    return path.parent.name == "chat_templates" and path.stem == entry["family"]


def _params():
    out = []
    for name, entry in MANIFEST.items():
        marks = [pytest.mark.xfail(strict=True, reason=MISSES[name])] if name in MISSES else []
        out.append(pytest.param(name, entry, marks=marks, id=name.removesuffix(".jinja")))
    return out


def test_manifest_is_the_70_templates():
    assert len(MANIFEST) == 70
    assert sorted(MISSES) == sorted(set(MISSES) & set(MANIFEST))
    stored = {p.name for p in (REPO / "tests" / "cases" / "detect" / "llama_cpp").glob("*.jinja")}
    assert stored == {n for n, e in MANIFEST.items() if e["path"].startswith("tests/cases/detect/llama_cpp/")}


@pytest.mark.parametrize("name,entry", _params())
def test_llama_cpp_template_names_its_family_or_the_nearest(name: str, entry: dict):
    path = _path(entry)
    if not path.is_file():
        pytest.skip(missing(path))
    assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"], f"{path} is not llama.cpp's {name}"
    if _covered(entry):
        return  # detected by tests/test_detect.py::test_corpus_chat_template_detects_its_family
    found = detect(read_chat_template(path))
    if found.family is None:
        assert found.nearest, f"{name}: refused without naming the nearest fits ({found.reason})"
        assert all(n in found.reason for n in found.nearest)
    else:
        assert entry["family"] in found.tied, f"{name}: named {found.tied}, not {entry['family']} ({found.reason})"
        assert found.failed[found.family] == ()
