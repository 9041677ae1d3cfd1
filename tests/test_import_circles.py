"""The compiler's import graph has no circles through its front doors (issue 26): the grammar exporters read a
template through ``compiler/source.py``, never ``api`` (which imports the grammar); ``detect`` reads the
catalogue through ``compiler/catalogue.py``, never ``load`` (which imports ``detect``)."""

from __future__ import annotations

import ast
import pathlib

COMPILER = pathlib.Path(__file__).resolve().parent.parent / "compiler"


def _imports(name: str) -> set[str]:
    """Every module a compiler module imports from its own package, at any depth of its code."""
    tree = ast.parse((COMPILER / f"{name}.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("respc.compiler."):
            found.add(node.module.split(".")[2])
    return found


def _reaches(start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name in seen or not (COMPILER / f"{name}.py").is_file():
            continue
        seen.add(name)
        if goal in _imports(name):
            return True
        todo += _imports(name)
    return False


def test_grammar_exporters_do_not_import_api():
    assert "api" not in _imports("grammar_render") | _imports("grammar_structural") | _imports("grammar")
    assert not _reaches("grammar", "api")


def test_detect_does_not_import_load():
    assert not _reaches("detect", "load")
    assert "catalogue" in _imports("detect")
