"""Freshness of the checked-in catalogue parsers (STYLE: tree-sitter's lesson).

Every ``templates/<name>.json`` must have ``generated/<name>.py`` byte-identical to what the
compiler emits now, and every generated module must have its template (no orphans either way).
"""

from __future__ import annotations

import difflib
import importlib
from pathlib import Path

import pytest

from respc.compiler.api import compile_source

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = sorted(p.stem for p in (REPO / "templates").glob("*.json"))
GENERATED = sorted(p.stem for p in (REPO / "generated").glob("*.py") if p.stem != "__init__")


def _command(name: str) -> str:
    return f"respc compile templates/{name}.json -o generated/{name}.py"


def test_catalogue_is_not_empty():
    assert "qwen3" in TEMPLATES and len(TEMPLATES) >= 6


def test_no_orphans():
    assert sorted(set(TEMPLATES) - set(GENERATED)) == [], "templates without a generated parser"
    assert sorted(set(GENERATED) - set(TEMPLATES)) == [], "generated parsers without a template"


@pytest.mark.parametrize("name", TEMPLATES)
def test_generated_parser_is_fresh(name):
    expected = compile_source(REPO / "templates" / f"{name}.json", source_name=f"templates/{name}.json",
                              command=_command(name)).source
    path = REPO / "generated" / f"{name}.py"
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    if current != expected:
        diff = "".join(difflib.unified_diff(current.splitlines(True), expected.splitlines(True),
                                            f"generated/{name}.py (checked in)", f"generated/{name}.py (now)"))
        pytest.fail(f"generated/{name}.py is stale; run from the repository root:\n  {_command(name)}\n{diff[:4000]}")


@pytest.mark.parametrize("name", TEMPLATES)
def test_installed_generated_module_imports(name):
    module = importlib.import_module(f"respc.generated.{name}")
    assert module.SOURCE == f"templates/{name}.json"
    assert callable(module.parse_response) and module.ResponseParser.__mro__[1].__name__ == "StreamParser"
