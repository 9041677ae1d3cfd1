"""What the hostile-template tests share (docs/security.md, "Generated code"): the check that a
generated module's source is inert (only the names and calls a module may have, none of a
template's text as code), used by ``tests/test_hostile_templates.py`` and
``tests/test_hostile_fuzz.py``, and the check that no codec declaration changes what a module
means, used by ``tests/test_generated_encoding.py`` and ``tests/test_hostile_fuzz.py``.
"""

from __future__ import annotations

import ast
import codecs
import encodings
import encodings.aliases
import pkgutil
import re
import warnings


# Top-level names a generated module may define; numbered families depend on the template size.
KNOWN_NAMES = {
    "annotations", "regex", "_rt", "SOURCE", "TEMPLATE_SHA256", "FIELD_NAMES", "DEFAULTS",
    "_REGIONS", "_REQUIRED", "_START_ANCHOR", "_TRANSITIONS",
    "ResponseParser", "get_response_parser", "parse_response", "GRAMMAR", "__all__",
}
NUMBERED = re.compile(r"S_[A-Z0-9_]+|(_D|_P|_B|S|_DELIMITERS_)\d+|_D\d+L")
FORBIDDEN_IDENTIFIERS = {"__import__", "os", "system", "exec", "eval", "open", "touch", "PWNED",
                         "bos_token", "field", "raw", "generation"}


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Expr):
            assert isinstance(node.value, (ast.Constant, ast.Call)), ast.dump(node)
            if isinstance(node.value, ast.Call):  # the only bare call: the runtime ABI check
                assert ast.unparse(node.value.func) == "_rt.check_abi"
        else:
            raise AssertionError(f"unexpected top-level statement: {ast.dump(node)[:200]}")
    return names


def assert_inert(source: str) -> None:
    """Assert that the generated module ``source`` (str) defines only the names a module may have,
    names no forbidden identifier, uses ``globals()`` only as a ``_D<k>`` delimiter's scope and calls
    only the runtime's records and factories (docs/security.md, "Generated module skeleton and the
    compiled-scanner cache"). Raises ``AssertionError`` naming what is not."""
    tree = ast.parse(source)
    names = _top_level_names(tree)
    unknown = {n for n in names - KNOWN_NAMES if not NUMBERED.fullmatch(n)}
    assert unknown == set()
    identifiers = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    identifiers |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert identifiers & FORBIDDEN_IDENTIFIERS == set()
    # globals() only as the scope of a lazy delimiter bound to the compiler's own _D<k> name
    scoped = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "_rt.LazyPattern"
              and any(k.arg == "scope" for k in n.keywords)]
    for call in scoped:
        keywords = {k.arg: k.value for k in call.keywords}
        assert ast.unparse(keywords["scope"]) == "globals()" and set(keywords) == {"scope", "name"}
        assert isinstance(keywords["name"], ast.Constant) and re.fullmatch(r"_D\d+", keywords["name"].value)
    assert sum(1 for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "globals") == len(scoped)
    # every call in the module is to a known function
    callees = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert callees <= {"_rt.check_abi", "_rt.make_field_processor", "_rt.Region", "_rt.Plan", "_rt.Edge", "_rt.make_boundary",
                       "regex.compile", "frozenset", "float", "_rt.module_api",
                       "_rt.LazyPattern", "globals", "_rt.FastPath", "_rt.HoldRun",
                       "_rt.StrayCloser", "_rt.HeldAutomaton", "_rt.Literal", "_rt.Pattern"}, callees


def _codecs() -> list[str]:
    """Every text codec this Python has (one name each)."""
    names = set(encodings.aliases.aliases.values()) | {m.name for m in pkgutil.iter_modules(encodings.__path__)}
    found = []
    for name in sorted(names):
        try:
            info = codecs.lookup(name)
        except LookupError:
            continue
        if getattr(info, "_is_text_encoding", True):
            found.append(name)
    return found


def read_as_every_codec(source: str) -> list[str]:
    """Replace line 1 of ``source`` with a declaration of each codec in turn; assert that the module
    either does not compile or compiles to the same code (same AST, constants included). Returns the
    codecs it compiled under."""
    reference = ast.dump(ast.parse(source))
    rest = source.split("\n", 1)[1].encode("ascii")
    compiled = []
    for name in _codecs():
        try:
            with warnings.catch_warnings():
                # a codec that turns the module into other text may leave escapes Python warns about
                # (invalid escape sequence): that reading is refused or compared below, not imported
                warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
                tree = ast.parse(f"# -*- coding: {name} -*-\n".encode("ascii") + rest)
        except (SyntaxError, ValueError, UnicodeError, LookupError):
            continue
        assert ast.dump(tree) == reference, f"read as {name}, the module means something else"
        compiled.append(name)
    return compiled
