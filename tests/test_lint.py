"""``respc check`` linter (issue 10;
docs/writing-a-template.md "4. Check it"): one small template per defect, each finding names the field,
the key and an example; the exit status is 1 only when a finding is an error."""

from __future__ import annotations

import json

import pytest

from respc.compiler.api import compile_source
from respc.compiler.cli import main
from respc.compiler.lint import lint
from respc.runtime.errors import TemplateError


def _findings(fields: dict, **top) -> list:
    compiled = compile_source({"start_anchor": "A", "fields": fields, **top})
    return lint(compiled.template, compiled.automaton)


def _only(findings, check):
    hits = [f for f in findings if f.check == check]
    assert len(hits) == 1, findings
    return hits[0]


def test_closer_inside_a_json_string_value():
    f = _only(_findings({"tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "content": "json"},
                         "content": {}}), "payload-delimiter")
    assert (f.level, f.field, f.key) == ("warning", "tool_calls", "close")
    assert f.example == '<tool_call>{"code": "x = \'</tool_call>\'"}</tool_call>'


def test_self_delimiting_value_is_not_flagged():
    v2 = {"respc_version": 2}
    findings = _findings({"tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "content": "json",
                                         "end": "value"}, "content": {}}, **v2)
    assert [f for f in findings if f.check == "payload-delimiter"] == []


def test_unreachable_field():
    # each opens only inside the other, and neither is watched outside
    findings = _findings({"a": {"open": "<a>", "close": "</a>", "outside": False, "inside": {"b": "nest"}},
                          "b": {"open": "<b>", "close": "</b>", "outside": False, "inside": {"a": "nest"}},
                          "content": {}}, respc_version=2)
    hits = [f for f in findings if f.check == "unreachable"]
    assert [(f.level, f.field, f.key, f.example) for f in hits] == [
        ("error", "a", "outside", "<a>"), ("error", "b", "outside", "<b>")]


def test_opens_that_shadow_each_other():
    f = _only(_findings({"a": {"open": "<x>", "close": "</x>"}, "b": {"open": "<x>", "close": "</y>"},
                         "content": {}}), "shadowed-open")
    assert (f.level, f.field, f.key, f.example) == ("error", "b", "open", "<x>")


def test_catastrophic_backtracking():
    # refused at load since issue 23 (compiler/backtracking.py); the lint check remains for an IR
    # built without validate
    with pytest.raises(TemplateError, match="open_pattern.*exponential"):
        _findings({"a": {"open_pattern": "<(?:\\w+\\s*)+>", "close": "</a>"}, "content": {}})


def test_pattern_that_matches_empty():
    f = _only(_findings({"a": {"open": "<a>", "close_pattern": "\\s*"}, "content": {}}), "empty-match")
    assert (f.level, f.field, f.key, f.example) == ("warning", "a", "close_pattern", "")


def test_placeholder_that_cannot_resolve():
    f = _only(_findings({"a": {"open": "<a>", "close": "</a>", "content": "text",
                               "transform": {"x": "{content.name}"}}, "content": {}}), "placeholder")
    assert (f.level, f.field, f.key) == ("warning", "a", "transform")
    assert "{content.name}" in f.example


@pytest.mark.parametrize("content", ["json", "text"])
def test_unknown_placeholder_root_is_an_error(content):
    """``{contnt}`` fails every region at its close, whatever the body (the runtime's scope is
    ``content`` and the groups): an error with field, key and the placeholder."""
    f = _only(_findings({"a": {"open": "<a>", "close": "</a>", "content": content,
                               "transform": {"f": "{contnt}"}}, "content": {}}), "placeholder")
    assert (f.level, f.field, f.key, f.example) == ("error", "a", "transform", "{contnt}")
    assert f.message.startswith("placeholder root 'contnt' is neither 'content' nor a named group")


def test_placeholder_root_that_is_a_group_is_fine():
    assert [f for f in _findings({"a": {"open_pattern": "<a (?P<n>\\w+)>", "close": "</a>", "content": "json",
                                        "transform": {"f": "{n}"}}, "content": {}}) if f.check == "placeholder"] == []


def test_reasoning_field_not_named_reasoning_content():
    f = _only(_findings({"thinking": {"open": "<think>", "close": "</think>"}, "content": {}}), "reasoning-name")
    assert (f.level, f.field, f.example) == ("warning", "thinking", "thinking")


def test_catalogue_templates_have_no_errors():
    from support import REPO
    for path in sorted((REPO / "templates").glob("*.json")):
        compiled = compile_source(path)
        errors = [str(f) for f in lint(compiled.template, compiled.automaton) if f.level == "error"]
        assert errors == [], path.stem


@pytest.mark.parametrize("fields,status", [
    ({"a": {"open": "<x>", "close": "</x>"}, "b": {"open": "<x>", "close": "</y>"}, "content": {}}, 1),
    ({"thinking": {"open": "<think>", "close": "</think>"}, "content": {}}, 0),
])
def test_exit_status_errors_vs_warnings(tmp_path, capsys, fields, status):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"start_anchor": "A", "fields": fields}), encoding="utf-8")
    assert main(["check", str(path)]) == status
    out = capsys.readouterr().out
    assert ("error: [shadowed-open] field 'b' key 'open'" in out) == (status == 1)
