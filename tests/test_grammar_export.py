"""Grammar export (issue 10; docs/grammar.md "How it is verified"), checked with the engines' own matchers.

* every corpus and peer vector's output is accepted by its template's grammar, with the vector's
  tools (or, when it names none, tools read off its expected message: every argument given is
  required and typed by its value) -- llguidance and xgrammar, byte by byte;
* outputs broken on purpose are rejected by llguidance, xgrammar and the Lark rendering;
* strings sampled from a grammar parse, with the generated parser, to the calls sampled;
* the xgrammar structural tag (``--format xgrammar-structural-tag``), compiled by xgrammar's
  ``Grammar.from_structural_tag``: conforming vector outputs accepted for the templates it can
  express (known gaps: ``tests/cases/structural_tag_gaps.json``), broken ones rejected, a clear
  error for the templates it cannot express.

The engines are the ``grammar`` extra (``pip install -e .[grammar]``); without them the engine
tests skip (the Lark ones still run).
"""

from __future__ import annotations

import importlib
import json
import random

import pytest

from grammar_engines import ACCEPTS, accepts_structural_tag
from grammar_walks import RICH_TOOLS
from respc.compiler.api import compile_source
from respc.compiler.cli import main
from respc.compiler.grammar_ir import GrammarExportError, build_grammar_ir, sample, tools_from_message
from respc.compiler.grammar_render import FORMATS, STRUCTURAL_TAG, export_grammar, render
from respc.compiler.grammar_structural import StructuralTagError, build_structural_tag, export_structural_tag
from support import CORPUS, REPO, SHARED, load_jsonl, missing

try:
    import llguidance  # noqa: F401
    import xgrammar  # noqa: F401
    ENGINES = ("llguidance", "xgrammar")
except ImportError:  # pragma: no cover - the grammar extra is not installed
    ENGINES = ()

needs_engines = pytest.mark.skipif(not ENGINES, reason="the grammar extra is not installed: the engines check the "
                                   "exported grammars after pip install -e .[grammar] (xgrammar, llguidance; "
                                   "CI runs them)")

PEER_XFAIL = json.loads((REPO / "tests" / "cases" / "peer_xfail.json").read_text(encoding="utf-8"))
#: vector id -> why its grammar rejects an output the parser reads (known gaps of the export)
GAPS: dict[str, str] = json.loads((REPO / "tests" / "cases" / "grammar_gaps.json").read_text(encoding="utf-8"))
TEMPLATES = {p.stem for p in (REPO / "templates").glob("*.json")}


def _vectors():
    vectors = load_jsonl(CORPUS) + [
        v for v in load_jsonl(SHARED / "corpus" / "peer_vectors.jsonl")
        if v["id"] not in PEER_XFAIL and not (v.get("note") or "").startswith("malformed output")]
    return [v for v in vectors if v["family"] in TEMPLATES]


VECTORS = _vectors()
_COMPILED: dict = {}


def _compiled(family: str):
    if family not in _COMPILED:
        _COMPILED[family] = compile_source(REPO / "templates" / f"{family}.json")
    return _COMPILED[family]


def _consumed(family: str, prefix: str, text: str) -> str:
    module = importlib.import_module(f"respc.generated.{family}")
    last = None
    for match in module.ResponseParser.START_ANCHOR.finditer(prefix):
        last = match.end()
    return (prefix if last is None else prefix[last:]) + text


@needs_engines
@pytest.mark.parametrize("vector", [
    pytest.param(v, marks=[pytest.mark.xfail(strict=True, reason=GAPS[v["id"]])] if v["id"] in GAPS else [],
                 id=v["id"]) for v in VECTORS])
def test_vector_output_is_accepted(vector):
    tools = vector.get("tools") or tools_from_message(vector["expect"]["message"])
    g = build_grammar_ir(_compiled(vector["family"]).template, tools)
    text = _consumed(vector["family"], vector["prefix"], vector["text"])
    verdicts = {fmt: ACCEPTS[fmt](render(g, fmt), text) for fmt in ENGINES}
    assert verdicts == {fmt: True for fmt in ENGINES}


PEER2 = SHARED / "corpus" / "peer_vectors2.jsonl"
PEER2_XFAIL = json.loads((REPO / "tests" / "cases" / "peer2_xfail.json").read_text(encoding="utf-8"))
#: the engine-test outputs of peer_vectors2 (llama.cpp test-chat.cpp, vLLM, SGLang, ollama tests), without the
#: ones damaged on purpose (notes "malformed output") and the known parser gaps
PEER2_VECTORS = [v for v in load_jsonl(PEER2) if v["family"] in TEMPLATES and v["id"] not in PEER2_XFAIL
                 and not (v.get("note") or "").startswith("malformed output")]


@needs_engines
@pytest.mark.parametrize("vector", [
    pytest.param(v, marks=[pytest.mark.xfail(strict=True, reason=GAPS[v["id"]])] if v["id"] in GAPS else [],
                 id=v["id"]) for v in PEER2_VECTORS])
def test_engine_output_the_reader_parses_is_accepted(vector):
    """Issue 26, "grammar and reader agree in both directions": an engine-test output the reader parses
    cleanly (strict mode, the vector's tools) is allowed by the xgrammar and llguidance exports, with
    the vector's tools (or tools read off the parsed message)."""
    from support import PEER_PREFIX

    prefix = PEER_PREFIX.get(vector["id"], vector["prefix"])
    module = importlib.import_module(f"respc.generated.{vector['family']}")
    try:
        message = module.parse_response(vector["text"], prefix=prefix, tools=vector.get("tools"))
    except Exception as exc:  # noqa: BLE001 - not read cleanly: no claim on the grammar
        pytest.skip(f"the reader does not parse this output cleanly ({type(exc).__name__})")
    tools = vector.get("tools") or tools_from_message(message)
    g = build_grammar_ir(_compiled(vector["family"]).template, tools)
    text = _consumed(vector["family"], prefix, vector["text"])
    verdicts = {fmt: ACCEPTS[fmt](render(g, fmt), text) for fmt in ENGINES}
    assert verdicts == {fmt: True for fmt in ENGINES}


def _needs_vectors() -> None:
    """The gap lists name vectors of ../shared: without it there is nothing to check them against."""
    for path in (CORPUS, SHARED / "corpus" / "peer_vectors.jsonl"):
        if not path.is_file():
            pytest.skip(missing(path))


def test_gaps_name_real_vectors():
    _needs_vectors()
    if not PEER2.is_file():
        pytest.skip(missing(PEER2))
    ids = {v["id"] for v in VECTORS} | {v["id"] for v in PEER2_VECTORS}
    assert sorted(set(GAPS) - ids) == []


# --- outputs broken on purpose ----------------------------------------------------------

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"zone": {"type": "string"}}, "required": []}}}
TOOLS = [WEATHER, TIME]

QWEN3_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>'
QWEN3_CODER_CALL = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
                    "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>")
PYTHONIC_CALL = "<|python_start|>[get_weather(city='Paris', days=2)]<|python_end|>"

# (template, text, tool_choice, parallel, accepted)
CASES = {
    "qwen3/ok": ("qwen3", "<think>hm</think>Sure. " + QWEN3_CALL, "auto", True, True),
    "qwen3/text_only": ("qwen3", "<think>hm</think>Hello.", "auto", True, True),
    "qwen3/two_calls": ("qwen3", QWEN3_CALL + "\n" + QWEN3_CALL, "auto", True, True),
    "qwen3/name_not_offered": ("qwen3", QWEN3_CALL.replace("get_weather", "get_wether"), "auto", True, False),
    "qwen3/wrong_type": ("qwen3", QWEN3_CALL.replace('"days": 2', '"days": "2"'), "auto", True, False),
    "qwen3/missing_required": ("qwen3", QWEN3_CALL.replace('"city": "Paris", ', ""), "auto", True, False),
    "qwen3/unknown_argument": ("qwen3", QWEN3_CALL.replace('"days"', '"weeks"'), "auto", True, False),
    "qwen3/unbalanced_braces": ("qwen3", QWEN3_CALL.replace("}}", "}"), "auto", True, False),
    "qwen3/unclosed_call_then_text": ("qwen3", QWEN3_CALL.replace("</tool_call>", "") + "More.", "auto", True,
                                      False),
    "qwen3/call_cut_by_end_of_stream": ("qwen3", QWEN3_CALL.replace("</tool_call>", ""), "auto", True, True),
    "qwen3/stray_close": ("qwen3", "Hello </tool_call>", "auto", True, True),  # plain content text
    "qwen3/required_without_call": ("qwen3", "<think>hm</think>Hello.", "required", True, False),
    "qwen3/required_with_call": ("qwen3", QWEN3_CALL, "required", True, True),
    "qwen3/named_other_tool": ("qwen3", QWEN3_CALL, "get_time", True, False),
    "qwen3/named_tool": ("qwen3", QWEN3_CALL, "get_weather", True, True),
    "qwen3/none_with_call": ("qwen3", QWEN3_CALL, "none", True, False),
    "qwen3/no_parallel_two_calls": ("qwen3", QWEN3_CALL + QWEN3_CALL, "auto", False, False),
    "qwen3/no_parallel_one_call": ("qwen3", QWEN3_CALL, "auto", False, True),
    "qwen3/arguments_in_any_order": ("qwen3", QWEN3_CALL.replace('"city": "Paris", "days": 2', '"days": 2, "city": '
                                                                 '"Paris"'), "auto", True, True),
    "qwen3/duplicate_argument": ("qwen3", QWEN3_CALL.replace('"days": 2', '"city": "Rome"'), "auto", True, False),
    "qwen3_coder/ok": ("qwen3_coder", QWEN3_CODER_CALL, "auto", True, True),
    "qwen3_coder/parameters_in_any_order": ("qwen3_coder", QWEN3_CODER_CALL.replace(
        "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n</parameter>",
        "<parameter=days>\n2\n</parameter>\n<parameter=city>\nParis\n</parameter>"), "auto", True, True),
    "llama4_pythonic/keywords_in_any_order": ("llama4_pythonic", PYTHONIC_CALL.replace("city='Paris', days=2",
                                                                                    "days=2, city='Paris'"),
                                              "auto", True, True),
    "qwen3_coder/name_not_offered": ("qwen3_coder", QWEN3_CODER_CALL.replace("=get_weather", "=get_wether"),
                                     "auto", True, False),
    "qwen3_coder/wrong_type": ("qwen3_coder", QWEN3_CODER_CALL.replace("\n2\n", "\ntwo\n"), "auto", True, False),
    "qwen3_coder/missing_required": ("qwen3_coder", QWEN3_CODER_CALL.replace(
        "<parameter=city>\nParis\n</parameter>\n", ""), "auto", True, False),
    "llama4_pythonic/ok": ("llama4_pythonic", PYTHONIC_CALL, "auto", True, True),
    "llama4_pythonic/wrong_type": ("llama4_pythonic", PYTHONIC_CALL.replace("days=2", "days='2'"), "auto", True,
                                   False),
    "llama4_pythonic/unbalanced": ("llama4_pythonic", PYTHONIC_CALL.replace("2)]", "2]"), "auto", True, False),
    "llama4_pythonic/name_not_offered": ("llama4_pythonic", PYTHONIC_CALL.replace("get_weather", "weather"),
                                         "auto", True, False),
}
CASE_FORMATS = ("lark",) + ENGINES


@pytest.mark.parametrize("fmt", CASE_FORMATS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_broken_outputs_are_rejected(case, fmt):
    family, text, choice, parallel, accepted = CASES[case]
    grammar = export_grammar(REPO / "templates" / f"{family}.json", fmt, tools=TOOLS, tool_choice=choice,
                             parallel=parallel)
    assert ACCEPTS[fmt](grammar, text) is accepted


def test_unknown_tool_choice_is_refused():
    with pytest.raises(GrammarExportError, match="'get_wether' is not 'auto'.*get_weather, get_time"):
        export_grammar(REPO / "templates" / "qwen3.json", tools=TOOLS, tool_choice="get_wether")


def test_required_needs_a_tool_field():
    with pytest.raises(GrammarExportError, match="no tool-call field"):
        export_grammar({"start_anchor": "A", "fields": {"content": {}}}, tool_choice="required")


def test_every_catalogue_template_renders_every_format():
    for path in sorted((REPO / "templates").glob("*.json")):
        for fmt in FORMATS:
            text = export_grammar(path, fmt, tools=TOOLS)
            assert ("root ::= " if fmt in ("gbnf", "xgrammar") else "start: ") in text, (path.stem, fmt)


def test_gbnf_shape_for_qwen3():
    text = export_grammar(REPO / "templates" / "qwen3.json", "gbnf", tools=[WEATHER])
    assert text.splitlines()[0] == (
        "root ::= text ((region-0 | implicit-close) text)* (region-1 text ((region-0 | implicit-close | region-1) "
        "text)* (open-region-0 | open-region-1)? | open-region-1 | open-region-0?)")
    assert 'region-0 ::= "<think>" except-1 "</think>" | "<think>" except-2 region-1' in text.splitlines()


def test_reasoning_can_be_left_out():
    template = REPO / "templates" / "qwen3.json"
    assert ACCEPTS["lark"](export_grammar(template, tools=TOOLS, reasoning=False), "<think>x</think>hi") is False
    assert ACCEPTS["lark"](export_grammar(template, tools=TOOLS), "<think>x</think>hi") is True


# --- property: the parser reads what the grammar produced ----------------------------------

@pytest.mark.parametrize("family", ["qwen3", "hermes2pro", "qwen3_coder", "llama4_pythonic", "mistral_small_3_2",
                                    "kimi_k2", "deepseek_v3"])
def test_sampled_strings_parse_to_the_sampled_calls(family):
    compiled = _compiled(family)
    module = importlib.import_module(f"respc.generated.{family}")
    g = build_grammar_ir(compiled.template, TOOLS)
    rng = random.Random(family)
    offered = {"get_weather", "get_time"}
    for _ in range(40):
        text = sample(g, rng)
        message = module.parse_response(text, prefix="")
        for call in message.get("tool_calls") or []:
            fn = call["function"]
            assert fn["name"] in offered, (text, message)
            args = fn["arguments"] if isinstance(fn["arguments"], dict) else json.loads(fn["arguments"])
            if fn["name"] == "get_weather":
                assert isinstance(args.get("city"), str), (text, message)
        if ENGINES:
            assert ACCEPTS[ENGINES[0]](render(g, ENGINES[0]), text), text


# --- the xgrammar structural tag --------------------------------------------------------------

#: catalogue templates the structural tag cannot express -> a word of the reason the error gives
ST_CANNOT = {"kimi_vl": "no tool-call field", "olmo3_think": "no tool-call field", "gemma2": "no tool-call field"}
#: vector id -> why the structural tag rejects an output the parser reads
ST_GAPS: dict[str, str] = json.loads((REPO / "tests" / "cases" / "structural_tag_gaps.json").read_text(encoding="utf-8"))
ST_VECTORS = [v for v in VECTORS if v["family"] not in ST_CANNOT]


def test_catalogue_structural_tags():
    for path in sorted((REPO / "templates").glob("*.json")):
        if path.stem in ST_CANNOT:
            with pytest.raises(StructuralTagError, match=f"{path.stem}.json.*{ST_CANNOT[path.stem]}"):
                export_structural_tag(path, tools=TOOLS)
            continue
        tag, notes = export_structural_tag(path, tools=TOOLS)
        assert tag["type"] == "structural_tag" and tag["format"]["type"] in ("sequence", "or", "triggered_tags"), path
        assert all(isinstance(note, str) and note for note in notes)


@needs_engines
@pytest.mark.parametrize("vector", [
    pytest.param(v, marks=[pytest.mark.xfail(strict=True, reason=ST_GAPS[v["id"]])] if v["id"] in ST_GAPS else [],
                 id=v["id"]) for v in ST_VECTORS])
def test_vector_output_is_accepted_by_the_structural_tag(vector):
    tools = vector.get("tools") or tools_from_message(vector["expect"]["message"])
    tag, _notes = build_structural_tag(_compiled(vector["family"]).template, tools)
    assert accepts_structural_tag(json.dumps(tag), _consumed(vector["family"], vector["prefix"], vector["text"]))


def test_structural_tag_gaps_name_real_vectors():
    _needs_vectors()
    assert sorted(set(ST_GAPS) - {v["id"] for v in ST_VECTORS}) == []


MISTRAL_CALL = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 2}'
KIMI_CALL = ('<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>'
             '{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>')
GPT_OSS_CALL = ('<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|channel|>commentary '
                'to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": 2}<|call|>')
APERTUS_CALL = '<|tools_prefix|>[{"get_weather": {"city": "Paris"}}]<|tools_suffix|>'
GEMMA4_CALL = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2}<tool_call|>'  # the dialect: an EBNF element

#: the qwen3 cases above hold for the structural tag too, but for a call cut off by the end of the
#: stream (a tag needs its end; tests/cases/structural_tag_gaps.json), plus these
#: (template, text, tool_choice, parallel, accepted)
ST_CASES = {k: v for k, v in CASES.items() if v[0] == "qwen3" and k not in ("qwen3/call_cut_by_end_of_stream",)}
ST_CASES.update({
    "qwen3/tool_open_inside_reasoning": ("qwen3", "<think>hm <tool_call> is text here</think>" + QWEN3_CALL, "auto",
                                         True, True),
    "qwen3/arguments_first": ("qwen3", QWEN3_CALL.replace('"name": "get_weather", "arguments": {"city": "Paris", '
                                                          '"days": 2}', '"arguments": {"city": "Paris"}, "name": '
                                                          '"get_weather"'), "auto", True, True),
    "qwen3/none_text": ("qwen3", "<think>hm</think>Hello.", "none", True, True),
    "qwen3/no_parallel_call_then_text": ("qwen3", QWEN3_CALL + " Done.", "auto", False, True),
    "qwen3/no_reasoning": ("qwen3", "<think>hm</think>Hello.", "auto", True, False),
    "qwen3/unclosed_reasoning": ("qwen3", "<think>hm, still thinking", "auto", True, True),
    "qwen3/required_unclosed_reasoning": ("qwen3", "<think>hm, still thinking", "required", True, False),
    "mistral_small_3_2/ok": ("mistral_small_3_2", "Sure." + MISTRAL_CALL, "auto", True, True),
    "mistral_small_3_2/two_calls": ("mistral_small_3_2", MISTRAL_CALL + MISTRAL_CALL, "auto", True, True),
    "mistral_small_3_2/name_not_offered": ("mistral_small_3_2", MISTRAL_CALL.replace("get_weather", "get_wether"),
                                           "auto", True, False),
    "mistral_small_3_2/wrong_type": ("mistral_small_3_2", MISTRAL_CALL.replace("2}", "true}"), "auto", True, False),
    "mistral_small_3_2/required_without_call": ("mistral_small_3_2", "Hello.", "required", True, False),
    "mistral_small_3_2/no_parallel_two_calls": ("mistral_small_3_2", MISTRAL_CALL + MISTRAL_CALL, "auto", False,
                                                False),
    "kimi_k2/ok": ("kimi_k2", "Let me look. " + KIMI_CALL, "auto", True, True),
    "kimi_k2/name_not_offered": ("kimi_k2", KIMI_CALL.replace("get_weather", "get_wether"), "auto", True, False),
    "kimi_k2/wrong_type": ("kimi_k2", KIMI_CALL.replace('"Paris"', "7"), "auto", True, False),
    "gpt_oss/ok": ("gpt_oss", GPT_OSS_CALL, "auto", True, True),
    "gpt_oss/wrong_type": ("gpt_oss", GPT_OSS_CALL.replace('"days": 2', '"days": 2.5'), "auto", True, False),
    "gpt_oss/name_not_offered": ("gpt_oss", GPT_OSS_CALL.replace("=functions.get_weather", "=functions.x"), "auto",
                                 True, False),
    "apertus/ok": ("apertus", APERTUS_CALL, "auto", True, True),
    "apertus/wrong_type": ("apertus", APERTUS_CALL.replace('"Paris"', "false"), "auto", True, False),
    "apertus/name_not_offered": ("apertus", APERTUS_CALL.replace("get_weather", "get_wether"), "auto", True, False),
    "gemma4/ok": ("gemma4", "Checking. " + GEMMA4_CALL, "auto", True, True),
    "gemma4/any_order": ("gemma4", GEMMA4_CALL.replace('city:<|"|>Paris<|"|>,days:2', 'days:2,city:<|"|>Paris<|"|>'),
                         "auto", True, True),
    "gemma4/wrong_type": ("gemma4", GEMMA4_CALL.replace("days:2", 'days:<|"|>2<|"|>'), "auto", True, False),
    "gemma4/name_not_offered": ("gemma4", GEMMA4_CALL.replace("get_weather", "get_wether"), "auto", True, False),
    "gemma4/required_without_call": ("gemma4", "Hello.", "required", True, False),
})


@needs_engines
@pytest.mark.parametrize("case", sorted(ST_CASES))
def test_structural_tag_rejects_broken_outputs(case):
    family, text, choice, parallel, accepted = ST_CASES[case]
    tag = export_grammar(REPO / "templates" / f"{family}.json", STRUCTURAL_TAG, tools=TOOLS, tool_choice=choice,
                         parallel=parallel, reasoning=not case.endswith("no_reasoning"))
    assert accepts_structural_tag(tag, text) is accepted


def test_structural_tag_shape_for_qwen3():
    tag, notes = export_structural_tag(REPO / "templates" / "qwen3.json", tools=[WEATHER], tool_choice="required")
    # required: no alternative of reasoning cut off by the end of the output (it must close first)
    assert tag["format"]["type"] == "sequence"
    reasoning, calls = tag["format"]["elements"]
    assert reasoning == {"type": "optional", "content": {"type": "tag", "begin": "<think>",
                                                         "content": {"type": "any_text"}, "end": "</think>"}}
    assert (calls["type"], calls["triggers"], calls["at_least_one"], calls["excludes"]) == (
        "triggered_tags", ["<tool_call>"], True, ["<think>"])
    (call,) = calls["tags"]
    assert (call["begin"], call["end"]) == ("<tool_call>", "</tool_call>")
    # the body is the grammar's own rule (issue 27: strings without the watched close, the
    # call's name and arguments once each), an EBNF element
    body = call["content"]["elements"][1]
    assert body["type"] == "grammar" and "get_weather" in body["grammar"]
    assert "field 'reasoning_content': reasoning only at the start of the output" in notes


def test_structural_tag_name_in_the_open_for_gpt_oss():
    tag, _notes = export_structural_tag(REPO / "templates" / "gpt_oss.json", tools=TOOLS)
    calls = tag["format"]["elements"][0]["elements"][1]
    assert calls["type"] == "triggered_tags" and calls["triggers"] == ["to=functions."]
    # one tag per trigger: its content, one EBNF element, names the tool (the open's rest after the
    # trigger), then the open's rest after the name, then the arguments (docs/grammar.md "Cost")
    assert [t["begin"] for t in calls["tags"]] == ["to=functions."]
    assert [t["end"] for t in calls["tags"]] == [["<|call|>", "<|end|>"]]
    grammar = calls["tags"][0]["content"]["elements"][0]["grammar"]
    assert '"get_weather"' in grammar and '"get_time"' in grammar and '"<|constrain|>"' in grammar


def test_structural_tag_refuses_nested_calls_naming_template_field_and_section(tmp_path, capsys):
    """A call field nested in a section a tag cannot write: the error names the template, the field,
    the section and why (here muse_glimmer's section with a close that is not literal text)."""
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    template = json.loads((REPO / "templates" / "muse_glimmer.json").read_text(encoding="utf-8"))
    section = template["fields"]["tool_message"]
    del section["close"]
    section["close_pattern"] = "</atem:function_calls>|</atem:calls\\s*>"
    (tmp_path / "muse_closes.json").write_text(json.dumps(template), encoding="utf-8")
    code = main(["grammar", str(tmp_path / "muse_closes.json"), "--format", STRUCTURAL_TAG,
                 "--tools", str(tmp_path / "tools.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert "muse_closes.json: cannot be written as an xgrammar structural tag: field 'tool_calls': it is nested in a " \
           "region no tag can write (section 'tool_message': its close is not literal text (a tag's end))" in err
    # the catalogue's muse_glimmer (literal close) is written: one tag per section open, begun by ``to=``
    code = main(["grammar", "muse_glimmer", "--format", STRUCTURAL_TAG, "--tools", str(tmp_path / "tools.json")])
    out, _err = capsys.readouterr()
    assert code == 0 and json.loads(out)["format"]["triggers"] == ["to="]


@needs_engines
def test_structural_tag_writes_xml_parameters_per_tool():
    """An xml-inline body whose open names the tool: the tag's content is the format's own rule for
    each tool's parameters (any order, required ones present, values typed), as in the EBNF export."""
    tag, _notes = export_structural_tag(REPO / "templates" / "qwen3_coder.json", tools=[WEATHER])
    text = json.dumps(tag)
    call = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
    assert accepts_structural_tag(text, "Sure. " + call)
    assert not accepts_structural_tag(text, call.replace("get_weather", "get_time"))  # not an offered tool
    assert not accepts_structural_tag(text, call.replace("city", "town"))  # not a declared parameter


def test_structural_tag_cli_prints_json_and_notes(tmp_path, capsys):
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    code = main(["grammar", "qwen3", "--format", STRUCTURAL_TAG, "--tools", str(tmp_path / "tools.json")])
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["type"] == "structural_tag"
    assert "respc: note: field 'reasoning_content': reasoning only at the start of the output" in err.splitlines()


def test_structural_tag_needs_tools():
    with pytest.raises(StructuralTagError, match="needs the offered tools"):
        export_structural_tag(REPO / "templates" / "qwen3.json")


#: section region -> (open, close) of templates whose calls nest in a section (no corpus vectors)
NESTED_SECTIONS = {"minimax_m3": ("]<]minimax[>[<tool_call>", "]<]minimax[>[</tool_call>"),
                   "kimi_k3": ("<|open|>tools<|sep|>", "<|close|>tools<|sep|>"),
                   "gigachat3_5": ("<｜GCML｜tool_calls>", "</｜GCML｜tool_calls>"),
                   "minimax_m1": ("<tool_calls>", "</tool_calls>"),
                   # (their section's open also ends the reasoning: the reasoning's text keeps it out)
                   "deepseek_v4": ("<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>"),
                   "deepseek_v4_1": ("<｜DSML｜ calls>", "</｜DSML｜ calls>")}


@needs_engines
@pytest.mark.parametrize("family", NESTED_SECTIONS)
def test_structural_tag_writes_call_sections(family):
    """Calls nested in a section region: one tag per section open, its content the grammar IR's own
    section body. Sections cut from the EBNF export's samples are accepted; a call outside any
    section is text (the parser reads none there), and a section whose call names no offered tool
    is refused."""
    opens, close = NESTED_SECTIONS[family]
    t = _compiled(family).template
    tag = json.dumps(build_structural_tag(t, [WEATHER])[0])
    g = build_grammar_ir(t, [WEATHER], tool_choice="required")
    sections = []
    for i in range(30):
        text = sample(g, random.Random(i))
        a = text.find(opens)
        b = text.find(close, a)
        if a >= 0 and b >= 0:
            sections.append(text[a:b + len(close)])
    assert len(sections) >= 5, family
    for section in sections:
        assert accepts_structural_tag(tag, "Sure. " + section), (family, section)
    assert accepts_structural_tag(tag, "Sure. no call")
    assert not accepts_structural_tag(tag, "Sure. " + sections[0].replace("get_weather", "get_tim", 1))


MUSE_CALL = ('to=functions<|message|>\n<atem:function_calls><atem:invoke name="get_weather"><atem:parameter name="city">'
             'Paris</atem:parameter></atem:invoke></atem:function_calls>')


@needs_engines
def test_structural_tag_section_with_a_pattern_open():
    """muse_glimmer's call section opens with a pattern (``(?:<|start|>assistant)?[ \\t]*to=[^\\s<]+[ \\t]*
    <|message|>\\s*<atem:function_calls>``): one tag begun by its literal start ``to=``, the rest of the
    open at the head of its content; every ``to=`` of the free text is then that tag (the reasoning's and
    the answer's opens, ``to=self``/``to=user``, are not written)."""
    t = _compiled("muse_glimmer").template
    tag, notes = build_structural_tag(t, [WEATHER], tool_choice="required")
    text = json.dumps(tag)
    assert accepts_structural_tag(text, MUSE_CALL)
    assert not accepts_structural_tag(text, MUSE_CALL.replace("get_weather", "get_time"))
    assert not accepts_structural_tag(text, MUSE_CALL.replace("city", "town"))
    assert not accepts_structural_tag(text, "to=user<|message|>hi<|eot|>")  # no call
    assert any("'answer'" in note and "to=" in note for note in notes), notes
    auto = json.dumps(build_structural_tag(t, [WEATHER])[0])
    assert accepts_structural_tag(auto, "Sure.") and not accepts_structural_tag(auto, "to=user<|message|>hi")
    assert accepts_structural_tag(auto, "<|start|>assistant " + MUSE_CALL)
    # tool_choice none: free text without the section's open
    none = json.dumps(build_structural_tag(t, [WEATHER], tool_choice="none")[0])
    assert accepts_structural_tag(none, "Sure.") and not accepts_structural_tag(none, MUSE_CALL)
    assert accepts_structural_tag(none, "to=user<|message|>hi")  # (its open's literal end is kept out)


K2_CALL = ("<ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_value>Paris"
           "</ifm|arg_value></ifm|tool_call>{}")


@needs_engines
def test_structural_tag_close_with_an_optional_tail():
    """k2_horizon's close ``</ifm\\|tool_call>(?:\\s*</ifm\\|tool_calls>)?``: the tag ends at its literal
    head; the optional section close after it is free text, which the parser reads into the same close."""
    tag, _notes = build_structural_tag(_compiled("k2_horizon").template, [WEATHER])
    assert [t["end"] for t in tag["format"]["tags"]] == ["</ifm|tool_call>"]
    text = json.dumps(tag)
    for tail in ("", "</ifm|tool_calls>", "\n</ifm|tool_calls>"):
        assert accepts_structural_tag(text, K2_CALL.format(tail)), tail
    assert accepts_structural_tag(text, '<ifm|tool_call>{"name": "get_weather", "arguments": {"city": "P"}}'
                                        '</ifm|tool_call>')
    assert not accepts_structural_tag(text, K2_CALL.format("").replace("city", "town"))
    assert not accepts_structural_tag(text, K2_CALL.format("").replace("get_weather", "get_time"))


@needs_engines
def test_structural_tag_bracketed_pythonic_calls():
    """llama4_pythonic: its pythonic call list is a tag between ``[`` and ``]``, begun by
    ``<|python_start|>[`` (the literal open the trigger) or by ``[`` alone (the open's lookahead holds
    for every offered tool); a bare call is not written."""
    tag, notes = build_structural_tag(_compiled("llama4_pythonic").template, [WEATHER], tool_choice="required")
    assert tag["format"]["triggers"] == ["<|python_start|>", "["]
    assert [(t["begin"], t["end"]) for t in tag["format"]["tags"]] == [("<|python_start|>[", "]"), ("[", "]")]
    text = json.dumps(tag)
    assert accepts_structural_tag(text, '[get_weather(city="Paris")]')
    assert accepts_structural_tag(text, '<|python_start|>[get_weather(city="Paris", days=2)]<|python_end|>')
    assert not accepts_structural_tag(text, 'get_weather(city="Paris")')  # a bare call: text to the parser
    assert not accepts_structural_tag(text, '[get_time()]')
    assert not accepts_structural_tag(text, '[get_weather(days=2)]')  # city is required
    assert any("brackets only" in note for note in notes)


@needs_engines
def test_structural_tag_bracketed_pythonic_calls_end_with_the_close():
    """lfm2's pythonic call list has a close (``<|tool_call_end|>``): its tag ends with the bracket and the
    close together, since text between them is body text the reader refuses (the hole of a first version
    ending at ``]``: ``...[set_alarm(time="7")] x<|tool_call_end|>``)."""
    tag, _notes = build_structural_tag(_compiled("lfm2").template, RICH_TOOLS, tool_choice="required")
    def tags(node):
        if isinstance(node, dict):
            return ([(node["begin"], node["end"])] if node.get("type") == "tag" else []) + \
                [x for v in node.values() for x in tags(v)]
        return [x for v in node for x in tags(v)] if isinstance(node, list) else []

    assert ("<|tool_call_start|>[", "]<|tool_call_end|>") in tags(tag)
    text = json.dumps(tag)
    call = '<|tool_call_start|>[set_alarm(time="7")]{}'
    assert accepts_structural_tag(text, call.format("<|tool_call_end|>"))
    assert not accepts_structural_tag(text, call.format(" x<|tool_call_end|>"))
    assert accepts_structural_tag(text, '<|tool_call_start|>[{"name": "set_alarm", "arguments": {"time": "7"}}]'
                                        '<|tool_call_end|>')


# --- strings the schema fixes hold a delimiter ------------------------------------------------

@pytest.mark.parametrize("family", ["hermes2pro", "qwen3", "mistral_small_3_2", "deepseek_v3", "kimi_k2"])
def test_fixed_strings_holding_a_delimiter_are_written_escaped(family):
    """A property name, an enum member and a const value holding the template's delimiters (the
    tool-call close first): the grammar wrote them raw inside the JSON body, so every output it
    allowed held the close inside a string, where the strict parser ends the region (an error: the
    grammar was unsound for any such schema). Now one character of each delimiter is written as a
    ``\\u`` escape, and every sampled output parses strictly to arguments holding the strings as the
    schema wrote them (docs/grammar.md, "What the grammar says")."""
    compiled = _compiled(family)
    module = importlib.import_module(f"respc.generated.{family}")
    delims = [lit for f in compiled.template.fields for d in (f.open, f.close) if d is not None
              for lit in d.literals or ()]
    hostile = "".join(f"x{lit}" for lit in delims) + "y"
    tools = [{"type": "function", "function": {"name": "set_it", "parameters": {"type": "object", "properties": {
        "k" + hostile: {"type": "string", "enum": ["e" + hostile, "plain"]},
        "c": {"const": {"in": ["v" + hostile]}}}, "required": ["k" + hostile, "c"]}}}]
    g = build_grammar_ir(compiled.template, tools, tool_choice="required")
    rng = random.Random(family)
    for _ in range(20):
        text = sample(g, rng)
        message = module.parse_response(text, prefix="", tools=tools)
        assert message["tool_calls"], text
        for call in message["tool_calls"]:
            args = call["function"]["arguments"]
            args = args if isinstance(args, dict) else json.loads(args)
            assert args["k" + hostile] in ("e" + hostile, "plain") and args["c"] == {"in": ["v" + hostile]}, (text, args)


@pytest.mark.parametrize("name", ['a"b', "f(x)", "a</tool_call>b", "get weather", ""])
def test_a_tool_name_the_parser_refuses_is_refused(name):
    """A tool whose name is no function name for the parser (whitespace, markup, quotes, brackets:
    runtime/tools.py check_tool_call_names): every export made the model write a call the strict
    parser then refuses (hermes2pro, where the name is a JSON string). Now refused, naming the tool
    (docs/grammar.md, "Tool names")."""
    tools = [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}]
    with pytest.raises(GrammarExportError, match="cannot be called"):
        export_grammar("hermes2pro", "lark", tools=tools)
    with pytest.raises(GrammarExportError, match="cannot be called"):
        export_structural_tag("hermes2pro", tools=tools)
