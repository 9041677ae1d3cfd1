"""Load-time checks beyond the template keys' own rules (issue 7;
docs/template-language.md "Load-time checks"): defaults that cannot grow, templates that would hang,
delimiters that lose text, placeholders that can never resolve, ``join`` on values that are never
strings. Hard errors are ``TemplateError``s naming the source, field and key; the rules a v1
template must keep for the reference's sake are warnings in v1 and errors in v2.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import respc
from respc.compiler.api import compile_source
from respc.compiler.load import load_template
from respc.compiler.validate import check_template, may_match_empty, validate
from respc.runtime.errors import TemplateError

ANCHOR = "<|assistant|>"


def doc(fields: dict, **top) -> dict:
    return {"start_anchor": ANCHOR, "fields": fields, **top}


def x_field(**spec) -> dict:
    """A template with one explicit field ``x`` (``<x>``...``</x>`` unless overridden) and ``content``."""
    base = {"open": "<x>", "close": "</x>"}
    base.update(spec)
    for key in ("open_pattern", "close_pattern"):
        if key in spec:
            base.pop(key.split("_")[0], None)
    return {"x": base, "content": {}}


def ir(template: dict):
    return validate(load_template(template))


# -- hard errors in every version ------------------------------------------------------------------
# (id, template, field, key, exact detail)
HARD = [
    ("repeats-default-dict", doc(x_field(repeats=True), defaults={"x": {}}), "x", "defaults",
     "the default {} of a 'repeats' field must be a list (each match is appended to it), got dict"),
    ("repeats-default-empty-str", doc(x_field(repeats=True), defaults={"x": ""}), "x", "defaults",
     "the default '' of a 'repeats' field must be a list (each match is appended to it), got str"),
    ("repeats-default-null", doc(x_field(repeats=True), defaults={"x": None}), "x", "defaults",
     "the default None of a 'repeats' field must be a list (each match is appended to it), got NoneType"),
    ("join-default-int", doc(x_field(repeats=True, join=","), defaults={"x": 5}), "x", "defaults",
     "the default 5 of a 'join' field must be a string (each match is appended to it after the separator) "
     "or null, got int"),
    ("join-default-list", doc(x_field(repeats=True, join=","), defaults={"x": []}), "x", "defaults",
     "the default [] of a 'join' field must be a string (each match is appended to it after the separator) "
     "or null, got list"),
    ("open-and-close-both-empty", doc(x_field(open_pattern="\\b", close_pattern="x?")), "x", "close_pattern",
     "open_pattern '\\\\b' and close_pattern 'x?' can both match the empty string: the parser would open and "
     "close this region at the same offset forever; make one of them consume at least one character"),
    ("open-and-close-end-anchors", doc(x_field(open_pattern="$", close_pattern="\\Z")), "x", "close_pattern",
     "open_pattern '$' and close_pattern '\\\\Z' can both match the empty string"),
    ("lookahead-open-and-lookbehind-close", doc(x_field(open_pattern="(?=<)", close_pattern="(?<=>)")), "x",
     "close_pattern", "can both match the empty string"),
]


@pytest.mark.parametrize("case", HARD, ids=[c[0] for c in HARD])
def test_hard_error(case):
    _, template, field, key, detail = case
    with pytest.raises(TemplateError) as info:
        compile_source(template)
    error = info.value
    assert (error.source, error.field, error.key) == ("<dict>", field, key)
    assert str(error).startswith(f"<dict>, field {field!r}, key {key!r}: ")
    assert detail in error.detail


def test_hang_repro_is_refused_not_run(tmp_path):
    """Issue 7's repro (open ``\\b``, close ``x?``, text ``ab``) used to loop forever; now the CLI
    refuses it at once, naming the file, field and key."""
    path = tmp_path / "loop.json"
    path.write_text(json.dumps(doc(x_field(open_pattern="\\b", close_pattern="x?"))), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "respc", "check", str(path)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0
    assert f"{path}, field 'x', key 'close_pattern': open_pattern '\\\\b' and close_pattern 'x?' can both" in out.stderr


@pytest.mark.parametrize("template, text, message", [
    # legal defaults keep working: a list for repeats, a string or null for join
    (doc(x_field(repeats=True), defaults={"x": ["seed"]}), "<x>a</x><x>b</x>", {"x": ["seed", "a", "b"]}),
    (doc(x_field(repeats=True, join="|"), defaults={"x": "seed"}), "<x>a</x><x>b</x>", {"x": "seed|a|b"}),
    (doc(x_field(repeats=True, join="|"), defaults={"x": None}), "<x>a</x><x>b</x>", {"x": "a|b"}),
    (doc(x_field(repeats=True, join="|"), defaults={"x": None}), "plain", {"x": None, "content": "plain"}),
    # a zero-width open followed by a consuming close is fine (llama3_json opens with a lookahead)
    (doc(x_field(open_pattern="(?=<)", close=">")), "a<b>c", {"x": "<b", "content": "c"}),
    # a consuming open followed by a zero-width close is fine too
    (doc(x_field(close_pattern="(?=<)")), "<x>b<c", {"x": "b", "content": "<c"}),
])
def test_legal_templates_still_parse(template, text, message):
    assert respc.parse_response(text, template, prefix="") == message


@pytest.mark.parametrize("pattern, expected", [
    ("\\b", True), ("x?", True), ("(?=x)", True), ("(?<=</x>)", True), ("$", True), ("\\Z", True), ("^", True),
    ("(?!a)", True), ("a|", True), ("(?:abc){e<=3}", True), ("\\p{L}*", True),
    ('(?=\\{\\s*"(?:name|parameters)"\\s*:)', True),
    ("a", False), ("<\\|im_end\\|>", False), ("(?i)abc", False), ("(?x) a  # comment", False),
    ("[[:alpha:]]+\\(", False), ("\\p{L}+", False), ("</tool_call>\\s*", False),
])
def test_may_match_empty(pattern, expected):
    assert may_match_empty(pattern) is expected


def test_catalogue_and_conformance_templates_still_load():
    from support import CONFORMANCE, load_jsonl
    from respc.compiler.load import catalogue_names
    for name in catalogue_names():
        check_template(ir(name))
    for vector in load_jsonl(CONFORMANCE):
        if vector["expect"].get("stage") != "load":
            check_template(ir(vector["template"]))


# -- v1 warnings that are v2 errors ------------------------------------------------------------------
# (id, template, field, key, exact detail)
SOFT = [
    ("unknown-placeholder-root", doc(x_field(content="json", transform={"name": "{nmae}"})), "x", "transform",
     "placeholder root 'nmae' is neither 'content' nor a named group of the field's patterns (which have no "
     "named groups); it would fail at the first region close"),
    ("unknown-root-lists-groups",
     doc(x_field(open_pattern="<x (?P<name>\\w+)>", content="json",
                 transform={"name": "{nmae}", "arguments": "{content}"})), "x", "transform",
     "placeholder root 'nmae' is neither 'content' nor a named group of the field's patterns (which have "
     "named groups ['name']); it would fail at the first region close"),
    ("join-int", doc(x_field(content="int", repeats=True, join=",")), "x", "join",
     "'join' needs every block to parse to a string, but content parser 'int' always gives an int; use "
     "'repeats' without 'join', or a transform that gives a string"),
    ("join-bool", doc(x_field(content="bool", repeats=True, join=",")), "x", "join",
     "but content parser 'bool' always gives a bool;"),
    ("join-kv-lines", doc(x_field(content="kv-lines", repeats=True, join=",")), "x", "join",
     "but content parser 'kv-lines' always gives a dict;"),
    ("join-xml-inline-content-placeholder",
     doc(x_field(content="xml-inline", content_args={"tag_pattern": "<(?P<key>\\w+)>(?P<value>.*?)</\\w+>"},
                 repeats=True, join=",", transform="{content}")), "x", "join",
     "but the transform never gives a string;"),
    ("join-dict-transform", doc(x_field(repeats=True, join=",", transform={"t": "{content}"})), "x", "join",
     "but the transform never gives a string;"),
    ("join-int-literal-transform", doc(x_field(repeats=True, join=",", transform=3)), "x", "join",
     "but the transform never gives a string;"),
    ("join-transform-each", doc(x_field(content="json", repeats=True, join=",", transform="{a}",
                                        transform_each=True)), "x", "join",
     "but with 'transform_each' every block is a list;"),
    ("implicit-close-swallows", doc({"content": {"close_pattern": "(?=c)"}}), "content", "close_pattern",
     "'(?=c)' can match the empty string before more text (e.g. between '' and 'c'); the implicit field then "
     "closes there with nothing and everything after it is never parsed (silently lost); make it consume "
     "text or use an end anchor ($, \\Z)"),
]


@pytest.mark.parametrize("case", SOFT, ids=[c[0] for c in SOFT])
def test_v1_warns(case):
    _, template, field, key, detail = case
    warnings = check_template(ir(template))
    assert len(warnings) == 1
    assert warnings[0].startswith(f"field {field!r} key {key!r}: ")
    assert detail in warnings[0]
    respc.compile_template(template)  # v1: still loads, as the reference does


@pytest.mark.parametrize("case", SOFT, ids=[c[0] for c in SOFT])
def test_v2_refuses(case):
    _, template, field, key, detail = case
    with pytest.raises(TemplateError) as info:
        check_template(ir(template), v2=True)
    assert (info.value.source, info.value.field, info.value.key) == ("<dict>", field, key)
    assert detail in info.value.detail


def test_implicit_close_swallow_is_real():
    """What the warning is about: everything after the zero-width close is lost."""
    template = doc({"content": {"close_pattern": "(?=c)"}})
    assert respc.parse_response("ab <bc> cd", template, prefix="") == {"content": "ab <b"}


def test_v1_unknown_root_still_fails_at_run_time_as_reference():
    template = doc(x_field(content="json", transform={"name": "{nmae}"}))
    with pytest.raises(KeyError, match="transform placeholder '\\{nmae\\}' is not defined"):
        respc.parse_response('<x>{"name": "f"}</x>', template, prefix="")


@pytest.mark.parametrize("template", [
    doc({"content": {"close_pattern": "$"}}),   # an end anchor loses nothing
    doc({"content": {"close_pattern": "\\Z"}}),
    doc(x_field(repeats=True, join=",", content="json")),  # json may give a string
    doc(x_field(repeats=True, join=",", content="kv-lines", transform="{content.a}")),
    doc(x_field(open_pattern="<x (?P<n>\\w+)>", repeats=True, join=",", content="int", transform="{n}")),
    doc(x_field(repeats=True, join=",", content="int", transform="literal")),
    doc(x_field(content="json", transform={"a": "{a}"}, transform_each=True)),  # element keys: unknowable
    doc(x_field(close_pattern="</(?P<tag>x)>", transform={"t": "{tag}", "c": "{content}"})),
])
def test_no_warning(template):
    assert check_template(ir(template)) == []
    check_template(ir(template), v2=True)


def test_v2_first_can_give_a_string_for_join():
    ok = doc(x_field(repeats=True, join=",", content="int", transform={"$first": [{}, "{content.k}"]}))
    check_template(ir(ok), v2=True)
    bad = doc(x_field(repeats=True, join=",", content="int", transform={"$first": [{}, 1, "{content}"]}))
    with pytest.raises(TemplateError, match="the transform never gives a string"):
        check_template(ir(bad), v2=True)
    # in v1 a {"$first": ...} dict is a literal dict: never a string
    assert check_template(ir(ok))[0].startswith("field 'x' key 'join': ")


def test_close_that_is_always_empty_warns():
    template = doc(x_field(close_pattern="x?"))
    assert check_template(ir(template)) == [
        "field 'x' key 'close_pattern': 'x?' matches the empty string wherever the region starts, so the "
        "region never receives text"]
    assert respc.parse_response("<x>abc", template, prefix="") == {"content": "abc"}


def test_respc_check_prints_load_warnings(tmp_path, capsys):
    from respc.compiler.cli import main
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(doc(x_field(content="json", transform={"name": "{nmae}"}))), encoding="utf-8")
    # an unknown placeholder root fails every call at parse time: an error of check (printed once,
    # not also as the load-time warning), while compile still accepts the v1 template
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().out == (
        "warning: [payload-delimiter] field 'x' key 'close': a JSON string value can hold '</x>', which ends the "
        "region early (the model need not escape it) (example: '<x>{\"code\": \"x = \\'</x>\\'\"}</x>')\n"
        "error: [placeholder] field 'x' key 'transform': placeholder root 'nmae' is neither 'content' nor a "
        "named group of the field's patterns (which have no named groups), so every region of this field fails "
        "at its close (a v1 template still compiles, as the reference accepts it) (example: '{nmae}')\n"
        f"{path}: 1 error, 1 warning\n")
    assert main(["compile", str(path), "-o", str(tmp_path / "typo.py")]) == 0
    assert (tmp_path / "typo.py").is_file()


def test_start_anchor_pattern_that_is_always_empty_warns():
    template = {"start_anchor_pattern": "(?:<s>)?", "fields": {"r": {"open": "<r>", "close": "</r>"}, "content": {}}}
    assert check_template(ir(template)) == [
        "key 'start_anchor_pattern': '(?:<s>)?' matches the empty string everywhere, so its last match is at "
        "the end of the prefix and no prefix text is ever parsed"]
    # what it warns about: the prefill "<r>" is never seen, so "why</r>" is content
    assert respc.parse_response("why</r>answer", template, prefix="<s><r>") == {"content": "why</r>answer"}
    assert check_template(ir({**template, "start_anchor_pattern": "<s>"})) == []
