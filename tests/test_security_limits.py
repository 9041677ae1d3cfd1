"""Template size limits and linear tables (issue 23 item 3; docs/security.md, "Limits").

The attack: one literal delimiter of n characters wrote every proper prefix into the module
(about n²/2 characters: 32 MB at n = 8,000, 5 GB at n = 100,000). Now a state whose prefixes
would total more than ``PREFIX_TABLE_BUDGET`` characters keeps its literals only
(``runtime.LiteralPrefixes``), and a template over a documented limit is refused at load.
"""

from __future__ import annotations

import json
import sys
import time

import pytest

from respc.compiler import load, validate
from respc.compiler.api import compile_source
from respc.compiler.cli import main as cli_main
from respc.runtime import LiteralPrefixes, scanners
from respc.runtime.errors import TemplateError

sys.path.insert(0, __import__("os").path.dirname(__file__))
from support import best_time, chunkings, exec_module, outcome  # noqa: E402


def _long_literal(n: int) -> dict:
    """A template with one literal delimiter of n characters (the issue's attack)."""
    return {"start_anchor_pattern": "^",
            "fields": {"t": {"open": "<" + "a" * (n - 2) + ">", "close": "</t>", "content": "json"},
                       "content": {"content": "text"}}}


def test_literal_of_8000_characters_gives_a_linear_module():
    # before: 32 MB of prefixes; now the literal is written a fixed number of times
    source = compile_source(_long_literal(8000)).source
    assert len(source) < 200_000
    # its state watches literals only: the runtime builds the prefix test, in linear space too
    # (runtime/scanners.py, issue 31)
    namespace: dict = {}
    exec(compile(source, "<long literal>", "exec"), namespace)
    tables = [h for h in namespace["ResponseParser"].HOLD_LITERALS if h is not None]
    assert tables and any(isinstance(h.prefixes, LiteralPrefixes) for h in tables)


def test_module_size_and_compile_time_grow_linearly():
    sizes, times = {}, {}
    for n in (4000, 8000):
        sizes[n] = len(compile_source(_long_literal(n)).source)
        times[n] = best_time(lambda n=n: compile_source(_long_literal(n)))
    assert sizes[8000] <= 2.5 * sizes[4000]
    assert times[8000] <= 2.5 * times[4000]


def test_literal_of_100000_characters_is_refused_quickly(tmp_path):
    t0 = time.perf_counter()
    with pytest.raises(TemplateError) as info:
        compile_source(_long_literal(100_000))
    assert time.perf_counter() - t0 < 5
    message = str(info.value)
    assert "'open'" in message and "field 't'" in message
    assert "100,000 characters" in message and f"{validate.MAX_LITERAL_CHARS:,}" in message
    # the same through the CLI, from a 100 kB template file
    path = tmp_path / "big.json"
    path.write_text(json.dumps(_long_literal(100_000)), encoding="utf-8")
    assert cli_main(["compile", str(path), "-o", str(tmp_path / "out.py")]) != 0
    assert not (tmp_path / "out.py").exists()


def test_long_literals_parse_as_the_prefix_table_does(monkeypatch):
    # the same template with its prefixes written out and with LiteralPrefixes: same events in
    # every chunking (whole, one character at a time, random pieces)
    lit = "<" + "ab" * 40 + ">"
    template = {"start_anchor_pattern": "^",
                "fields": {"t": {"open": [lit, "<x>"], "close": ["</t>", "</" + "t" * 40 + ">"], "content": "text"},
                           "content": {"content": "text"}}}
    text = ("hi <ab" + lit + "inner <" + "ab" * 39 + " </t" + "t" * 38 + " ok </" + "t" * 40 + "> tail "
            + lit[:-1])
    # its states watch literals only: the runtime builds their prefix tests when the class is
    # created (runtime/scanners.py, issue 31), so the budget is the runtime's
    source = compile_source(template).source
    a = exec_module(source, "prefix_table")
    monkeypatch.setattr(scanners, "PREFIX_TABLE_BUDGET", 0)
    b = exec_module(source, "prefix_linear")
    kinds = {name: {type(h.prefixes) for h in m.ResponseParser.HOLD_LITERALS if h is not None}
             for name, m in (("table", a), ("linear", b))}
    assert kinds == {"table": {frozenset}, "linear": {LiteralPrefixes}}
    for name, chunks in chunkings(text, "limits").items():
        assert outcome(a, "", chunks) == outcome(b, "", chunks), name


def test_literal_prefixes_contains():
    prefixes = LiteralPrefixes(("<abc>", "</t>", "x"))
    assert {"<", "<a", "<abc", "</", "</t"} <= {p for p in ("<", "<a", "<abc", "</", "</t") if p in prefixes}
    for no in ("", "<abc>", "</t>", "x", "a", "<b", 3, None):
        assert no not in prefixes


def _refused(template: dict, *words: str) -> str:
    with pytest.raises(TemplateError) as info:
        compile_source(template)
    message = str(info.value)
    for word in words:
        assert word in message, message
    return message


def test_each_limit_is_refused_with_a_clear_error():
    base = {"start_anchor_pattern": "^", "fields": {"content": {"content": "text"}}}
    many = dict(base, fields={f"f{i}": {"open": f"<{i}>", "close": f"</{i}>"} for i in range(validate.MAX_FIELDS + 1)})
    _refused(many, "'fields'", f"{validate.MAX_FIELDS + 1} fields", f"limit is {validate.MAX_FIELDS}")
    alts = dict(base, fields={"t": {"open": [f"<{i}>" for i in range(validate.MAX_LITERALS + 1)], "close": "</t>"},
                              "content": {"content": "text"}})
    _refused(alts, "field 't'", "'open'", f"limit is {validate.MAX_LITERALS}")
    pattern = dict(base, fields={"t": {"open_pattern": "<" + "a" * validate.MAX_PATTERN_CHARS, "close": "</t>"},
                                 "content": {"content": "text"}})
    _refused(pattern, "field 't'", "'open_pattern'", f"limit is {validate.MAX_PATTERN_CHARS:,}")
    big = dict(base, defaults={"x": "y" * validate.MAX_TEMPLATE_CHARS})
    _refused(big, "characters of JSON", f"limit is {validate.MAX_TEMPLATE_CHARS:,}")
    anchor = dict(base, start_anchor="a" * (validate.MAX_LITERAL_CHARS + 1))
    del anchor["start_anchor_pattern"]
    _refused(anchor, "'start_anchor'", f"limit is {validate.MAX_LITERAL_CHARS:,}")


def test_limits_themselves_are_accepted():
    compile_source(_long_literal(validate.MAX_LITERAL_CHARS))
    fields = {f"f{i}": {"open": f"<{i}>", "close": f"</{i}>"} for i in range(validate.MAX_FIELDS - 1)}
    fields["content"] = {"content": "text"}
    validate.validate(load.load_template({"start_anchor_pattern": "^", "fields": fields}))


def test_file_over_the_size_limit_is_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_long_literal(100)), encoding="utf-8")
    monkeypatch.setattr(load, "MAX_FILE_BYTES", 100)
    with pytest.raises(TemplateError) as info:
        load.load_template(str(path))
    assert str(path) in str(info.value) and "limit is 100" in str(info.value)
