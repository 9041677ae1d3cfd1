"""The content-format table (runtime/formats, docs/formats.md): one Format per format, its load-time checks, and
the plan each format decides at compile time and the emitter writes into every region record (issue 26), and the
per-parameter reader the formats share (runtime/formats/base.py). Each format's own readers have their own module:
tests/test_formats_json.py, test_formats_pythonic.py, test_formats_xml_inline.py, test_formats_xml_tree.py.

Last section, the quick body readers end to end (issue 14): on the cases of every catalogue template with a pythonic
or xml-tree body (whole, cut short, halved), the shared corpus and peer vectors of those templates, and random
splices of their delimiters, ``parse_response`` and the streaming path give the same message, error and diagnostics,
in strict and recover mode, with the shortcuts (``runtime/pythonic.py`` ``_quick_calls``,
``runtime/formats/xml_tree.py``'s tree pass) on and off. (No conformance vector has such a body;
``tests/test_conformance.py`` runs them all.) Each reader against its general one: tests/test_formats_pythonic.py,
tests/test_formats_xml_tree.py."""

from __future__ import annotations

import importlib
import json
import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from respc.compiler.load import load_template
from respc.compiler.validate import validate
from respc.runtime import Plan, pythonic
from respc.runtime.formats import FORMATS, content_args_problems, plan_of
from respc.runtime.formats import xml_tree as xml_tree_format
from support import (CATALOGUE_NAMES, CORPUS, SHARED, catalogue_parser, delimiter_pieces, family_cases, load_jsonl,
                     params, whole_outcome)

REPO = pathlib.Path(__file__).resolve().parent.parent
PEER = SHARED / "corpus" / "peer_vectors.jsonl"
TEMPLATES = sorted(p.stem for p in (REPO / "templates").glob("*.json"))


def test_one_module_per_format():
    for name, fmt in FORMATS.items():
        stem = name.replace("-", "_") + ("_" if name in ("int", "float", "bool", "json") else "")
        module = importlib.import_module("respc.runtime.formats." + stem)
        assert module.FORMAT is fmt and fmt.name == name


def test_checks_name_the_argument():
    assert content_args_problems("json", {"accept": "x"}) == [
        ("", "json 'accept' names ['x'], which cannot start a JSON value (allowed: '{[\"-0123456789tfn'; a "
             "string_delims opener counts as '\"')")]
    assert content_args_problems("kv-lines", []) == [("", "'content_args' must be a dict, got list")]


@pytest.mark.parametrize("name", TEMPLATES)
def test_emitted_plan_is_the_formats_plan(name):
    """Every region record of every catalogue module carries its format's plan, built by keyword."""
    template = validate(load_template(REPO / "templates" / f"{name}.json"))
    module = importlib.import_module(f"respc.generated.{name}")
    plans = [region.plan for region in module.ResponseParser.REGIONS]
    assert plans == [plan_of(f) for f in template.fields]
    assert all(isinstance(p, Plan) for p in plans)


@pytest.mark.parametrize("name, region, expected", [
    ("qwen3_coder", "tool_calls", Plan("xml-inline", arguments="xml-parameters", call="args", name_group="name")),
    ("minimax_m3", "tool_calls", Plan("xml-inline", arguments="xml-tree", call="args", name_group="name")),
    ("apertus", "tool_calls", Plan("json", ends_itself=True, can_reject=True, empty_none=True, arguments="name-keyed",
                                   call="object", name_key="name", arg_keys=("arguments",))),
    ("hermes2pro", "tool_calls", Plan("json", ends_itself=True, can_reject=True, empty_none=True, arguments="json",
                                      call="object", name_key="name", arg_keys=("arguments",))),
    ("llama4_pythonic", "tool_calls", Plan("pythonic", ends_itself=True, can_reject=True, empty_none=True,
                                           arguments="pythonic", call="object", name_key="name",
                                           arg_keys=("arguments",))),
    ("qwen3", "content", Plan("text", dirty=False, text="strip")),
])
def test_catalogue_plans(name, region, expected):
    module = importlib.import_module(f"respc.generated.{name}")
    got = {r.name: r.plan for r in module.ResponseParser.REGIONS}
    assert got[region] == expected


def test_plan_follows_the_transform():
    """The call shape is read off the transform: a name taken from a key the adapter cannot stream from, or
    a transform that changes the arguments, sends them at the close (``arguments`` None)."""

    from respc.compiler.ir import Field
    base = dict(name="tool_calls", open=None, close=None, content="json", content_args={}, repeats=False,
                join=None, optional=True, transform_each=False, group_names=("name",), slot="tool_calls")
    call = {"type": "function", "function": {"name": "{content.name}", "arguments": "{content.arguments}"}}
    assert plan_of(Field(transform=call, **base)).arguments == "json"
    renamed = {"type": "function", "function": {"name": "{content.fn}", "arguments": "{content.arguments}"}}
    assert plan_of(Field(transform=renamed, **base)).arguments is None
    wrapped = {"type": "function", "function": {"name": "{name}", "arguments": {"x": "{content}"}}}
    assert plan_of(Field(transform=wrapped, **base)).arguments is None
    by_group = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}
    assert plan_of(Field(transform=by_group, **base)) == Plan("json", ends_itself=True, can_reject=True,
                                                             empty_none=True, arguments="json", call="args",
                                                             name_group="name")
    lax = dict(base, content_args={"python_literals": True})
    assert plan_of(Field(transform=by_group, **lax)).arguments is None


def test_old_import_paths_name_the_formats_readers():
    """``respc.runtime.decoders``, ``respc.openai_dialects`` and ``respc.openai_pythonic`` moved into the formats
    (issue 26); their old import paths give the same objects."""
    from respc import openai_dialects, openai_pythonic
    from respc.runtime import decoders
    from respc.runtime.formats import json_, pythonic, text, xml_inline

    assert decoders.JsonBoundary is json_.JsonBoundary and decoders.PythonicBoundary is pythonic.PythonicBoundary
    assert openai_dialects.DialectJson is json_.DialectJson and openai_dialects.TextArgs is text.TextArgs
    assert openai_dialects.XmlTree is xml_inline.XmlTree and openai_pythonic.PythonicArgs is pythonic.PythonicArgs


# --- the per-parameter argument reader (runtime/formats/base.py) ---------------------------------

def test_per_parameter_reader_settles_all_but_the_last():
    from respc.runtime.formats.base import PerParameterReader

    reader = PerParameterReader()
    reader.feed("a: 1\nb: 2\n")
    assert not reader.due()  # (read again once grown by 16 characters, then by an eighth)
    reader.feed("c: 3 and more")
    assert reader.due() and reader.body() == "a: 1\nb: 2\nc: 3 and more" and not reader.due()
    assert reader.settle({"a": 1, "b": 2, "c": 3}) == '{"a": 1, "b": 2'
    assert reader.settle({"a": 1, "b": 2, "c": 3}) == ""
    assert reader.finish({"a": 1, "b": 2, "c": 3}) == ', "c": 3}'
    assert reader.finish({"a": 9, "b": 2}) is None  # differs from what was sent: the caller's check reports it


# --- the quick body readers end to end: whole text and streaming, shortcuts on and off -----------

def _content_kinds(doc: dict) -> set[str]:
    """Every content parser a template's fields name, value parsers included."""
    kinds = set()
    for spec in doc.get("fields", {}).values():
        kinds.add(spec.get("content"))
        vp = (spec.get("content_args") or {}).get("value_parser")
        if isinstance(vp, dict):
            kinds.add(vp.get("name"))
            for case in list((vp.get("cases") or {}).values()) + [vp.get("default")]:
                if isinstance(case, dict):
                    kinds.add(case.get("name"))
    return kinds


def _doc(name: str) -> dict:
    return json.loads((REPO / "templates" / f"{name}.json").read_text(encoding="utf-8"))


#: the catalogue templates whose bodies go through a quick reader
QUICK_NAMES = [n for n in CATALOGUE_NAMES if _content_kinds(_doc(n)) & {"pythonic", "xml-tree"}]


def _both_paths(parser_class, prefix, text, tools=None):
    out = []
    for errors in ("strict", "recover"):
        for single in (True, False):
            out.append(whole_outcome(parser_class, prefix, text, tools, errors, single))
    return out


def _compare(monkeypatch, parser_class, prefix, text, tools=None):
    with_quick = _both_paths(parser_class, prefix, text, tools)
    with monkeypatch.context() as m:
        m.setattr(pythonic, "_quick_calls", lambda *args: None)
        m.setattr(xml_tree_format, "_QUICK_DEPTH", -1)  # the tree pass gives up at its first element
        general = _both_paths(parser_class, prefix, text, tools)
    assert repr(with_quick) == repr(general), text[:300]
    assert with_quick[0] == with_quick[1] and with_quick[2] == with_quick[3], text[:300]


@pytest.mark.parametrize("name", QUICK_NAMES)
def test_catalogue_cases_with_and_without_quick(monkeypatch, name):
    cases = family_cases(name)
    assert cases, name
    for case in cases:
        for text in (case["text"], case["text"][:-3], case["text"][: len(case["text"]) // 2]):
            _compare(monkeypatch, catalogue_parser(name), case["prefix"], text, case.get("tools"))


@pytest.mark.parametrize("vector", params([v for v in load_jsonl(CORPUS) if v["family"] in QUICK_NAMES]
                                          + ([v for v in load_jsonl(PEER) if v["family"] in QUICK_NAMES]
                                             if PEER.is_file() else []), CORPUS, lambda v: v["id"]))
def test_vectors_with_and_without_quick(monkeypatch, vector):
    _compare(monkeypatch, catalogue_parser(vector["family"]), vector["prefix"], vector["text"], vector.get("tools"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize("name", QUICK_NAMES)
def test_random_splices_with_and_without_quick(monkeypatch, name, data):
    parts = data.draw(st.lists(st.sampled_from(delimiter_pieces(name)), min_size=1, max_size=25))
    prefix = data.draw(st.sampled_from([c["prefix"] for c in family_cases(name)] or [""]))
    _compare(monkeypatch, catalogue_parser(name), prefix, "".join(parts))
