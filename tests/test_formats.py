"""The content-format table (runtime/formats, docs/formats.md): one Format per format, its load-time checks, and
the plan each format decides at compile time and the emitter writes into every region record (issue 26)."""

from __future__ import annotations

import importlib
import pathlib

import pytest

from respc.compiler.load import load_template
from respc.compiler.validate import validate
from respc.runtime import Plan
from respc.runtime.formats import FORMATS, content_args_problems, plan_of

REPO = pathlib.Path(__file__).resolve().parent.parent
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


# --- the json format's argument reader (runtime/formats/json_.py ArgumentReader) -----------------------------

def _read_arguments(mode, keys, pieces):
    from respc.runtime.formats.json_ import ArgumentReader

    got = []
    reader = ArgumentReader(mode, keys, lambda kind, n, payload: got.append((kind, n, payload)),
                            lambda n, key: False, lambda n, key, raw: raw)
    for piece in pieces:
        reader.feed(piece)
    args = "".join(p for kind, _, p in got if kind == "args")
    return reader, [(k, n, p) for k, n, p in got if k != "args"], args


def _chunkings(text):
    return {"whole": [text], "ones": list(text), "threes": [text[i:i + 3] for i in range(0, len(text), 3)]}


@pytest.mark.parametrize("how", ["whole", "ones", "threes"])
def test_json_argument_reader_gives_end_completeness_and_pieces(how):
    """One reader gives where the value ends, whether it is complete, and the argument pieces, on every
    chunking: a call object followed by other text ends after its ``}``; a list of calls after its ``]``; a
    cut body is not complete; an arguments body (``"args"``) ends at its own ``}``."""
    body = '{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}  trailing text'
    reader, marks, args = _read_arguments("object", ("name", ("arguments",)), _chunkings(body)[how])
    assert reader.complete and reader.end == body.index("}}") + 2
    assert marks == [("call", 0, ""), ("name", 0, "get_weather"), ("start", 0, ""), ("end", 0, "")]
    assert args == '{"city": "Paris", "days": [1, 2]}'

    body = '[{"name": "f", "arguments": {}}, {"name": "g", "arguments": {"x": "a,b"}}] after'
    reader, marks, args = _read_arguments("object", ("name", ("arguments",)), _chunkings(body)[how])
    assert reader.complete and reader.end == body.index("]") + 1
    assert [m for m in marks if m[0] == "name"] == [("name", 0, "f"), ("name", 1, "g")]

    cut = '{"name": "f", "arguments": {"city": "Par'
    reader, marks, args = _read_arguments("object", ("name", ("arguments",)), _chunkings(cut)[how])
    assert not reader.complete and reader.end == -1 and not reader.dead
    assert args == '{"city": "Par'

    body = '{"city": "Paris"}<|call|>'
    reader, marks, args = _read_arguments("args", (), _chunkings(body)[how])
    assert reader.complete and reader.end == len('{"city": "Paris"}') and args == '{"city": "Paris"}'


def test_old_import_paths_name_the_formats_readers():
    """``respc.runtime.decoders``, ``respc.openai_dialects`` and ``respc.openai_pythonic`` moved into the formats
    (issue 26); their old import paths give the same objects."""
    from respc import openai_dialects, openai_pythonic
    from respc.runtime import decoders
    from respc.runtime.formats import json_, pythonic, text, xml_inline

    assert decoders.JsonBoundary is json_.JsonBoundary and decoders.PythonicBoundary is pythonic.PythonicBoundary
    assert openai_dialects.DialectJson is json_.DialectJson and openai_dialects.TextArgs is text.TextArgs
    assert openai_dialects.XmlTree is xml_inline.XmlTree and openai_pythonic.PythonicArgs is pythonic.PythonicArgs


@pytest.mark.parametrize("body", [
    '{"name": "f", "arguments": {"s": "a}]\\"", "n": [1, {"x": null}]}} tail',
    '[{"name": "f", "arguments": {}}, {"name": "g", "arguments": {"q": "[{"}}]</tool_call>',
    '{"name": "f", "parameters": {"a": "\\\\"}}\n\nmore',
    '{"name": "f", "arguments": {"a": 1}',
    '  {"name": "f", "arguments": {"u": "\\u00e9}"}}{"again": 1}',
])
def test_json_readers_agree_on_the_end(body):
    """The json format's two incremental readers (the core's boundary reader and the adapter's argument reader,
    both in ``runtime/formats/json_.py``) find the same end of the value, on every chunking; a body cut before
    it is incomplete for both."""
    from respc.runtime.formats.json_ import JsonBoundary

    for how, pieces in _chunkings(body).items():
        boundary, at, end = JsonBoundary(), 0, -1
        for piece in pieces:
            got = boundary.feed(piece)
            if got >= 0:
                end = at + got
                break
            at += len(piece)
        reader, _, _ = _read_arguments("object", ("name", ("arguments", "parameters")), pieces)
        assert reader.end == end, how


def _boundary_end(decoder, pieces):
    at = 0
    for piece in pieces:
        got = decoder.feed(piece)
        if got >= 0:
            return at + got
        at += len(piece)
    return -1


@pytest.mark.parametrize("mode", ["object", "args"])
@pytest.mark.parametrize("body", [
    '{"name": "f", "arguments": {"s": "a}]\\"", "n": [1, {"x": null}]}} tail',
    '[{"name": "f", "arguments": {}}, {"name": "g", "arguments": {"q": "[{"}}]</tool_call>',
    '{"name": "f", "parameters": {"a": "\\\\"}}\n\nmore',
    '{"name": "f", "arguments": {"a": 1}',
    '  {"name": "f", "arguments": {"u": "\\u00e9}"}}{"again": 1}',
    '{"city": "Paris"}<|call|>{"x": 1}',
    # where the argument reader stops (damage, shapes it does not forward), the boundary reader goes on
    '{"name": "f", "name": "g", "arguments": {"a": "}"}} tail',
    '{"name": 3, "arguments": {"a": ["]"]}} tail',
    '{"name": "f", "arguments": {"a": [}]}}} tail',
    '{"name": "f", "arguments": {"a": nope, "b": "}"}} tail',
    '{"name": "f", "arguments": {"a": 1 ] "}"}} tail',
    '{"name": "\\x", "arguments": {"s": "}"}} tail',
    '{"name": "f", "arguments": {"a": 1}, "arguments": {"b": "]"}} tail',
    '[1, {"a": "]"}] tail',
    '"a string"',
    'not json',
    '\f{"a": 1}',
])
def test_reader_boundary_finds_the_boundary_end(mode, body):
    """The json argument reader serving as the core's boundary decoder (``ReaderBoundary``: the body read
    once) finds the end ``JsonBoundary`` finds, on every chunking, also where the argument reader stops
    (a repeated key, a name that is not a string, a mismatched bracket, a bare word, a key that does not
    decode), and stops reading at that end."""
    from respc.runtime.formats.json_ import ArgumentReader, JsonBoundary, ReaderBoundary

    for how, pieces in _chunkings(body).items():
        want = _boundary_end(JsonBoundary(), pieces)
        got = []
        reader = ArgumentReader(mode, ("name", ("arguments", "parameters")) if mode == "object" else (),
                                lambda kind, n, payload: got.append((kind, n)), lambda n, key: False,
                                lambda n, key, raw: raw)
        decoder = ReaderBoundary(reader, JsonBoundary())
        assert _boundary_end(decoder, pieces) == want, how
        if want >= 0 and not reader.dead:
            assert reader.end == want, how
        assert all(n <= 1 for _, n in got), how  # (nothing after the end was read as a call)


# --- the xml-inline and per-parameter argument readers -----------------------------------------------------

@pytest.mark.parametrize("how", ["whole", "ones", "threes"])
def test_xml_inline_argument_reader_converts_as_written(how):
    """xml-inline's reader (plan ``"xml-parameters"``) turns each parameter into JSON text as it is written: a
    string value character by character (its stripped whitespace held), a typed one once its closing tag is
    complete; a body cut inside a parameter leaves it open (``cur``: truncated); ``finish`` closes the object."""
    from respc.runtime.formats.xml_inline import ArgumentReader, stream_plan, string_strip

    plan = stream_plan({"tag_pattern": r"<parameter=(?P<key>[^>\s]+)>\n?(?P<value>.*?)\n?</parameter>"})
    types = {"days": int}

    def value(key, selector, raw):
        return types.get(key, str)(raw)

    def strip(key, selector):
        return string_strip(lambda raw: value(key, selector, raw))

    body = "\n<parameter=city>\nNew York\n</parameter>\n<parameter=days>\n7\n</parameter>\n"
    reader = ArgumentReader(plan, value, strip)
    sent = []
    for piece in _chunkings(body)[how]:
        reader.feed(piece)
        sent.append(reader.scan())
    rest, closed = reader.finish({"city": "New York", "days": 7})
    assert closed and "".join(sent) + rest == '{"city": "New York", "days": 7}'
    if how == "ones":
        assert '{"city": "New' in "".join(sent[:body.index("York")])  # streamed before its closing tag

    cut = ArgumentReader(plan, value, strip)
    for piece in _chunkings("<parameter=city>\nNew Yo")[how]:
        cut.feed(piece)
        cut.scan()
    assert cut.cur is not None and cut.cur.key == "city"


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
