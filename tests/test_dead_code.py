"""Generated modules carry no dead branches and no unused data (issue 7; STYLE "pegen decides before
it prints").

Every module in ``generated/`` and a few compiled templates that reach the other scanner shapes
(a regex delimiter that must always ask its probe, one without a probe, a ``\\G`` pattern, literals
with several first characters) are parsed with ``ast`` and checked for:

* a guard that is always true or always false where it stands: an ``if`` (or one conjunct of an
  ``and``) that repeats, or negates, a condition that an enclosing ``if`` already decided, with no
  assignment to its names in between; a constant test; a test on a local that only ever holds one
  constant;
* a local variable that is assigned and never read;
* a private module-level name, or an imported name, that nothing reads.
"""

from __future__ import annotations

import ast

import pytest

from respc.compiler.api import compile_source
from support import REPO

GENERATED = sorted((REPO / "generated").glob("*.py"))
GENERATED = [p for p in GENERATED if p.name != "__init__.py"]

EXTRA = {
    "probe-always": {"start_anchor": "A", "fields": {
        "t": {"open_pattern": r"<t>\b", "close_pattern": r"</t>$|;"}, "content": {"close": ["<|a|>", "[b]"]}}},
    "no-probe": {"start_anchor": "A", "fields": {"t": {"open_pattern": r"x\Ky", "close": "!"}, "content": {}}},
    "search-anchor": {"start_anchor": "A", "fields": {"t": {"open_pattern": r"\G<t>", "close": "</t>"}, "content": {}}},
    "no-delimiters": {"start_anchor": "A", "fields": {"t": {"open": "<t>"}}},
}


def _sources():
    for path in GENERATED:
        yield path.stem, path.read_text(encoding="utf-8")
    for name, template in EXTRA.items():
        yield name, compile_source(template).source


SOURCES = dict(_sources())


def _names(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _fact(test):
    """(ast dump of the condition, polarity) for one conjunct."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return ast.dump(test.operand), False, test.operand
    return ast.dump(test), True, test


def _conjuncts(test):
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [c for v in test.values for c in _conjuncts(v)]
    return [test]


def _is_constant(test) -> bool:
    if isinstance(test, ast.Constant):
        return True
    if isinstance(test, ast.Compare):
        return all(isinstance(x, ast.Constant) for x in [test.left, *test.comparators])
    if isinstance(test, ast.UnaryOp):
        return _is_constant(test.operand)
    return False


def _guard_problems(body, facts, where, out):
    """Walk statements in order; ``facts`` maps a condition's dump to (polarity, names)."""
    facts = dict(facts)
    for stmt in body:
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
            assigned = _names(stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target)
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets[1:]:
                    assigned |= _names(target)
            facts = {d: f for d, f in facts.items() if not f[1] & assigned}
        if isinstance(stmt, (ast.If, ast.While)):
            conjuncts = _conjuncts(stmt.test)
            for c in conjuncts:
                for sub in ast.walk(c):
                    if isinstance(sub, ast.BoolOp):
                        for v in sub.values:
                            if _is_constant(v):
                                out.append(f"{where}: line {stmt.lineno}: constant operand {ast.unparse(v)}")
                if _is_constant(c):
                    out.append(f"{where}: line {stmt.lineno}: constant test {ast.unparse(c)}")
                dump, polarity, _ = _fact(c)
                if dump in facts:
                    kind = "always true" if facts[dump][0] == polarity else "always false"
                    out.append(f"{where}: line {stmt.lineno}: {ast.unparse(c)} is {kind} here")
            inner = dict(facts)
            for c in conjuncts:
                dump, polarity, expr = _fact(c)
                inner[dump] = (polarity, _names(expr))
            _guard_problems(stmt.body, inner, where, out)
            other = dict(facts)
            if len(conjuncts) == 1 and isinstance(stmt, ast.If):
                dump, polarity, expr = _fact(conjuncts[0])
                other[dump] = (not polarity, _names(expr))
            _guard_problems(stmt.orelse, other, where, out)
            # after the statement nothing more is known about names it assigns
            assigned = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            facts = {d: f for d, f in facts.items() if not f[1] & assigned}


def _function_problems(func: ast.FunctionDef, out: list[str]) -> None:
    where = func.name
    _guard_problems(func.body, {}, where, out)
    stores: dict[str, list] = {}
    loads: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                stores.setdefault(node.id, []).append(node)
            else:
                loads.add(node.id)
    for name in sorted(set(stores) - loads):
        out.append(f"{where}: local {name!r} is assigned and never read")
    # a local that only ever holds one constant, tested: the test is decided before it runs
    values: dict[str, set] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for t in ast.walk(target):
                    if isinstance(t, ast.Name):
                        values.setdefault(t.id, set()).add(
                            repr(node.value.value) if isinstance(node.value, ast.Constant) else None)
    for node in ast.walk(func):
        if isinstance(node, (ast.If, ast.While)):
            for name in _names(node.test):
                held = values.get(name)
                if held and len(held) == 1 and None not in held:
                    out.append(f"{where}: line {node.lineno}: {name!r} only ever holds {next(iter(held))}")


def problems(source: str) -> list[str]:
    """Every dead guard, unused local and unread private name of one generated module."""
    tree = ast.parse(source)
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            _function_problems(node, out)
    loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for node in tree.body:
        bound = []
        if isinstance(node, ast.Assign):
            bound = [t.id for t in node.targets if isinstance(t, ast.Name) and t.id.startswith("_")
                     and not t.id.startswith("__")]
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("_"):
            bound = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and getattr(node, "module", None) != "__future__":
            bound = [(a.asname or a.name).split(".")[0] for a in node.names]
        out += [f"module: {name!r} is never read" for name in bound if name not in loads]
    return out


def test_the_checker_finds_dead_code():
    source = '''
import os
_UNUSED = 1
def f(eos, x):
    m2 = False
    y = 3
    if not eos:
        if m2:
            pass
        if not eos:
            pass
    if x:
        pass
    elif x:
        pass
    if eos and True:
        return 1
    return 0
'''
    assert problems(source) == [
        "f: line 10: not eos is always true here",
        "f: line 14: x is always false here",
        "f: line 16: constant test True",
        "f: local 'y' is assigned and never read",
        "f: line 8: 'm2' only ever holds False",
        "module: 'os' is never read",
        "module: '_UNUSED' is never read",
    ]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_generated_module_has_no_dead_code(name):
    assert problems(SOURCES[name]) == []
