"""Grammar soundness (issue 27;
docs/grammar.md "What the grammar guarantees"): every output the exported grammar allows parses, in strict mode,
to a valid message. One regression test per defect class, each with the issue's own strings: the
export must refuse them (xgrammar EBNF, llguidance, Lark, and the xgrammar structural tag where
the template has one). The random walks over every export are ``test_grammar_sampling.py``.
"""

from __future__ import annotations

import json

import pytest

from grammar_engines import ACCEPTS, accepts_structural_tag
from grammar_walks import RICH_TOOLS
from respc.compiler.cli import main
from respc.compiler.grammar_ir import GrammarExportError
from respc.compiler.grammar_render import STRUCTURAL_TAG, export_grammar
from respc.compiler.grammar_structural import StructuralTagError
from support import REPO

try:
    import llguidance  # noqa: F401
    import xgrammar  # noqa: F401
    ENGINES: tuple = ("llguidance", "xgrammar")
except ImportError:  # pragma: no cover - the grammar extra is not installed
    ENGINES = ()

pytestmark = pytest.mark.skipif(not ENGINES, reason="the grammar extra is not installed: these checks run in CI's "
                                "grammar suite (pip install -e .[grammar]; README, Constrained decoding)")


def verdicts(family: str, text: str, choice: str = "auto", parallel: bool = True, tools=None,
             structural: bool = True, reasoning: bool = True) -> dict:
    """Whether each export of ``family`` accepts ``text``: Lark always, the engines when installed,
    the structural tag (xgrammar) when the template has one."""
    tools = RICH_TOOLS if tools is None else tools
    path = REPO / "templates" / f"{family}.json"
    out = {}
    for fmt in ("lark",) + ENGINES:
        out[fmt] = ACCEPTS[fmt](export_grammar(path, fmt, tools=tools, tool_choice=choice, parallel=parallel,
                                                reasoning=reasoning), text)
    if structural and ENGINES:
        try:
            tag = export_grammar(path, STRUCTURAL_TAG, tools=tools, tool_choice=choice, parallel=parallel,
                                 reasoning=reasoning)
        except StructuralTagError:
            pass
        else:
            out[STRUCTURAL_TAG] = accepts_structural_tag(tag, text)
    return out


def refused(family: str, text: str, **kw) -> None:
    got = verdicts(family, text, **kw)
    assert got == {fmt: False for fmt in got}, (family, text, got)


def accepted(family: str, text: str, **kw) -> None:
    got = verdicts(family, text, **kw)
    assert got == {fmt: True for fmt in got}, (family, text, got)


# --- A: a watched delimiter inside a JSON string value ------------------------------------

A_CASES = {
    "qwen3": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "</tool_call>"}}\n</tool_call>',
    "kimi_k2": ('<|tool_calls_section_begin|><|tool_call_begin|>functions.set_alarm:0<|tool_call_argument_begin|>'
                '{"time":"7","label":"<|tool_call_end|>"}<|tool_call_end|><|tool_calls_section_end|>'),
    "gpt_oss": ('<|start|>assistant<|channel|>commentary to=functions.set_alarm <|constrain|>json<|message|>'
                '{"time":"<|end|>","volume":5}<|call|>'),
}


@pytest.mark.parametrize("family", sorted(A_CASES))
def test_a_watched_delimiter_in_a_string_is_refused(family):
    refused(family, A_CASES[family])


def test_a_escaped_delimiter_in_a_string_is_allowed():
    # the same text written escaped is another raw text: the parser does not see its close there
    accepted("qwen3", A_CASES["qwen3"].replace('"</tool_call>"', '"<\\/tool_call>"'))
    accepted("kimi_k2", A_CASES["kimi_k2"].replace('"<|tool_call_end|>"', '"\\u003c|tool_call_end|>"'))


# --- B: a second name or arguments member in the call object ---------------------------

B_DUPLICATE_NAME = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}, "name": "rm_rf"}\n</tool_call>'


def test_b_second_name_member_is_refused():
    refused("qwen3", B_DUPLICATE_NAME, choice="required")


def test_b_second_arguments_member_is_refused():
    refused("qwen3", B_DUPLICATE_NAME.replace('"name": "rm_rf"', '"arguments": {"days": "x"}'), choice="required")


def test_b_other_members_still_pass():
    # an id (and keys that only start like name or arguments) is still read and ignored
    accepted("qwen3", B_DUPLICATE_NAME.replace('"name": "rm_rf"', '"id": "call_1", "names": 1, "argument": 2, "nam": 3'),
             choice="required")


# --- I: a type list in an XML-parameter template ------------------------------------------

I_TOOLS = [{"type": "function", "function": {"name": "tag", "parameters": {
    "type": "object", "properties": {"labels": {"type": ["array", "string"]}}, "required": ["labels"]}}}]


def test_i_type_list_in_xml_parameters_exports(tmp_path, capsys):
    (tmp_path / "tools.json").write_text(json.dumps(I_TOOLS), encoding="utf-8")
    code = main(["grammar", "glm4_5", "--format", "xgrammar", "--tools", str(tmp_path / "tools.json")])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "") and out.startswith(("root ::= ", "# inexact"))
    call = "<tool_call>tag<arg_key>labels</arg_key><arg_value>{}</arg_value></tool_call>"
    accepted("glm4_5", call.format('["a", "b"]'), tools=I_TOOLS)
    accepted("glm4_5", call.format("any text"), tools=I_TOOLS)


def test_i_an_export_fault_is_not_an_output_error(tmp_path, capsys, monkeypatch):
    import respc.compiler.grammar_render as grammar_render

    def broken(*_a, **_k):
        raise TypeError("unhashable type: 'list'")
    monkeypatch.setattr(grammar_render, "export_grammar", broken)
    (tmp_path / "tools.json").write_text(json.dumps(I_TOOLS), encoding="utf-8")
    code = main(["grammar", "glm4_5", "--format", "xgrammar", "--tools", str(tmp_path / "tools.json")])
    err = capsys.readouterr().err
    assert code == 1 and "cannot parse output" not in err
    assert err.startswith("respc: cannot export the grammar of glm4_5: TypeError: unhashable type: 'list'")


def test_i_malformed_parameters_name_the_tool():
    with pytest.raises(GrammarExportError, match=r"tools\[0\] \('tag'\): 'parameters' must be a JSON schema object"):
        export_grammar(REPO / "templates" / "glm4_5.json", "xgrammar",
                       tools=[{"type": "function", "function": {"name": "tag", "parameters": ["x"]}}])


# --- E: an XML parameter value holding the call's close -----------------------------------

E_CASES = {
    "qwen3_coder": "<tool_call><function=get_weather><parameter=city></tool_call></parameter>",
    "nemotron3_nano": "<tool_call><function=get_weather><parameter=city></tool_call></parameter>",
    "minimax_m2": ('<minimax:tool_call><invoke name="get_weather"><parameter name="city"></invoke></parameter>'
                   '</invoke></minimax:tool_call>'),
}


@pytest.mark.parametrize("family", sorted(E_CASES))
def test_e_call_close_inside_a_parameter_value_is_refused(family):
    refused(family, E_CASES[family])
    refused(family, E_CASES[family] + "</function></tool_call>")


# --- C: the parser reads a longer name than the grammar allows ----------------------------

C_CASES = {
    "gpt_oss": 'to=functions.set_alarmto=functions.><|end|>{"time":"","volume":5}',
    "glm4_5": "<tool_call>get_weatherr<arg_key>city</arg_key><arg_value></arg_value>",
    "poolside": '<tool_call>get_weather"<arg_key>city</arg_key><arg_value></arg_value></tool_call>',
}
#: a tool without declared properties (H: any arguments) must not let the name run on either
C_FREE = [{"type": "function", "function": {"name": "get_weather"}}, RICH_TOOLS[1]]


@pytest.mark.parametrize("family", sorted(C_CASES))
def test_c_name_running_on_is_refused(family):
    refused(family, C_CASES[family])
    refused(family, C_CASES[family], tools=C_FREE)


# --- D: required or a named tool accept an output with no call ----------------------------

D_CASES = {  # (template, text, tool_choice)
    "deepseek_v4/empty_section": ("deepseek_v4", "<｜DSML｜tool_calls></｜DSML｜tool_calls>", "required"),
    "minimax_m1/empty_section": ("minimax_m1", "<tool_calls></tool_calls>", "required"),
    "olmo3/empty_section": ("olmo3", "<function_calls></function_calls>", "required"),
    "intern_s1/reasoning_open_at_the_end": ("intern_s1", "<think>", "required"),
    "functionary_v3_1/python_tag": ("functionary_v3_1", "<|python_tag|>", "required"),
    "functionary_v3_1/python_tag_named": ("functionary_v3_1", "<|python_tag|>", "set_alarm"),
    "functionary_v3_1/python_call": ("functionary_v3_1", "<|python_tag|>print(1)<|eom_id|>", "required"),
    "firefunction_v2/space_after_functools": (
        "firefunction_v2", 'functools [{"name": "get_weather", "arguments": {"city": "Paris"}}]', "required"),
    "xlam/id_before_name": (
        "xlam", '[{"id": 1, "name": "get_weather", "arguments": {"city": "Paris"}}]', "required"),
}


@pytest.mark.parametrize("case", sorted(D_CASES))
def test_d_required_without_a_call_is_refused(case):
    family, text, choice = D_CASES[case]
    refused(family, text, choice=choice)


def test_d_python_tag_with_python_offered():
    python = [{"type": "function", "function": {"name": "python", "parameters": {
        "type": "object", "properties": {"code": {"type": "string"}}}}}]
    # (the structural tag leaves this text-bodied call out, with a note)
    accepted("functionary_v3_1", "<|python_tag|>print(1)<|eom_id|>", choice="required", tools=python, structural=False)


# --- F: --no-parallel accepts a trigger with nothing after it (structural tag) ------------

F_TOOLS = [{"type": "function", "function": {"name": "g", "parameters": {"type": "object", "properties": {}}}}]


@pytest.mark.skipif(not ENGINES, reason="needs xgrammar (the grammar extra)")
@pytest.mark.parametrize("family,text", [("qwen2_5", "<tool_call>"),
                                         ("gemma4", '<|tool_call>call:g<|"|><|"|>')])
def test_f_no_parallel_bare_trigger_is_refused(family, text):
    tag = export_grammar(REPO / "templates" / f"{family}.json", STRUCTURAL_TAG, tools=F_TOOLS, parallel=False)
    assert accepts_structural_tag(tag, text) is False
    assert accepts_structural_tag(tag, "hi") is True


@pytest.mark.skipif(not ENGINES, reason="needs xgrammar (the grammar extra)")
def test_f_engine_quirk_is_still_there():
    """The shape respc no longer emits: when xgrammar fixes it, this test says so (and the
    simpler shape may come back)."""
    call = {"type": "tag", "begin": "<tool_call>", "content": {"type": "any_text"}, "end": "</tool_call>"}
    quirky = {"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [call], "stop_after_first": True},
        {"type": "any_text", "excludes": ["<tool_call>"]}]}}
    assert accepts_structural_tag(json.dumps(quirky), "hi<tool_call>") is True


# --- unquoted keys (gemma's dialect): no whitespace between a bare key and its colon ----------

def test_bare_key_then_space_before_colon_is_refused():
    # found by the walks: the dialect reader quotes \s*(\w+): only, so "time \n:" is not JSON
    refused("gemma4", '<|tool_call>call:set_alarm{time   \n \n\n :"note"\n }<tool_call|>', choice="required")
    accepted("gemma4", '<|tool_call>call:set_alarm{time:<|"|>note<|"|>}<tool_call|>', choice="required")


@pytest.mark.skipif(not ENGINES, reason="needs xgrammar (the grammar extra)")
def test_control_characters_in_a_class_before_hex_letters_compile():
    # found by the walks: xgrammar read [\x0Aad-e] as 0xAAD-e ("lower bound is larger than upper bound")
    import xgrammar as xgr
    for tools in (None, RICH_TOOLS):
        xgr.Grammar.from_ebnf(export_grammar(REPO / "templates" / "functionary_v3_2.json", "xgrammar", tools=tools))


# --- H: tools without declared properties take any arguments -------------------------------

H_PARAMS = {"no_parameters": None, "object": {"type": "object"}, "empty_properties": {"type": "object", "properties": {}},
            "additional": {"type": "object", "properties": {}, "additionalProperties": True}}
H_CASES = {
    "llama4_pythonic": "<|python_start|>[f(a=1)]<|python_end|>",
    "qwen3_coder": "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>",
    "glm4_5": "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
    "minimax_m2": ('<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">1</parameter>\n</invoke>\n'
                   '</minimax:tool_call>'),
}


@pytest.mark.parametrize("params", sorted(H_PARAMS))
@pytest.mark.parametrize("family", sorted(H_CASES))
def test_h_tool_without_properties_takes_any_arguments(family, params):
    fn = {"name": "f"} if H_PARAMS[params] is None else {"name": "f", "parameters": H_PARAMS[params]}
    accepted(family, H_CASES[family], tools=[{"type": "function", "function": fn}], structural=False)


def test_json_read_xml_values_are_typed():
    # found by the walks: hyperclovax reads each value as JSON (text that is not JSON stays a string)
    call = "<tool_call>\nbook_trip\n<arg_key>where</arg_key><arg_value>{}</arg_value></tool_call>"
    refused("hyperclovax_seed_think", call.format('days"where"'), choice="required")
    accepted("hyperclovax_seed_think", call.format('{"city": "Paris"}'), choice="required")
    accepted("hyperclovax_seed_think", call.format('{"city": "Paris"}').replace(
        "</arg_value>", "</arg_value><arg_key>note</arg_key><arg_value>Paris</arg_value>"), choice="required")


# --- G: mistral_nemo under required: two [TOOL_CALLS] sections back to back -----------------

G_CALL = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]'


def test_g_two_sections_to_the_end_of_the_output_are_refused():
    refused("mistral_nemo", G_CALL + G_CALL, choice="required")
    accepted("mistral_nemo", G_CALL, choice="required")
    accepted("mistral_nemo", G_CALL.replace("}}]", '}}, {"name": "set_alarm", "arguments": {"time": "7"}}]'),
             choice="required")


# --- J: llguidance's Earley limits ------------------------------------------------------------

@pytest.mark.xfail(strict=True, raises=ValueError, reason="issue 27 J, not shaped away yet (docs/grammar.md, 'llguidance'): with the "
                   "grammar's literals as tokens, llguidance's mask computation over the one-character lexemes "
                   "of the llguidance export runs into its item limits")
def test_j_llguidance_walks_stay_under_its_limits():
    import random

    from grammar_walks import LLGrammar, literals, walk
    from respc.compiler.api import compile_source
    from respc.compiler.grammar_ir import build_grammar_ir
    from respc.compiler.grammar_render import render

    g = build_grammar_ir(compile_source(REPO / "templates" / "qwen3.json").template, RICH_TOOLS,
                         tool_choice="required")
    grammar = LLGrammar(render(g, "llguidance"), tuple(literals(g)))
    rng = random.Random("j")
    for _ in range(20):
        walk(grammar.matcher(), rng)  # raises ValueError("... Too many items ...") at the limit


# --- text inside a call section: only calls and whitespace (docs/events.md) -------------------

#: sampled outputs the grammar allowed once merged with the runtime that makes text inside a call
#: section malformed: olmo3's calls open only at a letter (``(?=[A-Za-z_])``), so a ``[`` around
#: them is text inside the section; muse_glimmer's answer open ``to=user<|message|>`` followed by
#: ``<atem:function_calls>`` is its call section's open, and ``<|message|>`` is text inside it
SECTION_TEXT = [
    ("olmo3", '"city"<function_calls>\n[set_alarm( \n time ="fahrenheit")]', dict(choice="auto", parallel=False)),
    ("olmo3", 'label\n}>_volumea?b(!(;Z(9<function_calls>[set_alarm(time="<|endoftext|><|im_end|>")]',
     dict(choice="set_alarm")),
    ("olmo3", '<function_calls>[set_alarm(time="7")]</function_calls>', dict(choice="required")),
    ("muse_glimmer", "<|eot|>(to=user<|message|><atem:function_calls><|message|>", dict(choice="none")),
]


@pytest.mark.parametrize("family,text,kw", SECTION_TEXT)
def test_text_inside_a_call_section_is_refused(family, text, kw):
    import importlib

    from respc.runtime.errors import ContentParseError

    module = importlib.import_module(f"respc.generated.{family}")
    with pytest.raises(ContentParseError, match="text inside a call section"):
        module.parse_response(text, prefix="", tools=RICH_TOOLS)
    refused(family, text, **kw)


def test_calls_and_whitespace_in_a_call_section_still_pass():
    accepted("olmo3", '<function_calls>set_alarm(time="7")</function_calls>', choice="required")
    accepted("olmo3", '<function_calls>\nset_alarm(time="7")\n get_weather(city="Paris")\n</function_calls>')
    accepted("muse_glimmer", "to=user<|message|>hi", choice="none")
    accepted("muse_glimmer", 'to=functions.set_alarm<|message|><atem:function_calls><atem:invoke name="set_alarm">'
             '<atem:parameter name="time">7</atem:parameter></atem:invoke></atem:function_calls>', choice="required")


# --- value_parser switches: each selector text with the value its case reads ---------------------------------
# strings the sampling walks found (tests/test_grammar_sampling.py) in the exports before the values were typed

SWITCH_CASES = [
    ("deepseek_v3_2", "required",
     '</｜DSML｜function_calls>[:<｜DSML｜parameter name="guests"<｜end▁of▁sentence｜><｜DSML｜function_calls></｜DSML｜'
     'parameter>]</｜DSML｜function_calls><｜DSML｜function_calls><｜DSML｜function_calls><｜DSML｜parameter name="guests"'
     '<｜end▁of▁sentence｜><｜DSML｜invoke name="book_trip"><｜DSML｜parameter name="where"</｜DSML｜function_calls>'
     '<｜DSML｜parameter name="note"<think></｜DSML｜parameter>\n</｜DSML｜invoke>'),
    ("deepseek_v4", "required",
     'b</<｜DSML｜parameter name="note"<｜DSML｜parameter name="days"<｜DSML｜tool_calls><｜DSML｜invoke name="book_trip">'
     '<｜DSML｜parameter name="where"<｜DSML｜invoke name="book_trip"></think><think>}<think><think><｜DSML｜parameter '
     'name="label"<｜DSML｜invoke name="book_trip"></｜DSML｜parameter></｜DSML｜invoke>'),
    ("deepseek_v4_1", "set_alarm",
     '<｜DSML｜ calls>\n<｜DSML｜ invoke name="set_alarm"><｜DSML｜ parameter name="label"</｜DSML｜ parameter><think>'
     '</｜DSML｜ parameter><｜DSML｜ parameter name="volume"<｜end▁of▁sentence｜></｜DSML｜ parameter><｜DSML｜ parameter '
     'name="time"<think></｜DSML｜ parameter></｜DSML｜ invoke>'),
    # the optional ` string="` read after all: its [^"]* runs past the tag's > (found once the values were typed)
    ("deepseek_v4_1", "set_alarm",
     '<｜DSML｜ calls><｜DSML｜ invoke name="set_alarm"><｜DSML｜ parameter name="volume" string="nulltimetimefalse>9'
     '</｜DSML｜ parameter><｜DSML｜ parameter name="time"truetruelabel)>"</think><think></think></｜DSML｜ calls>'
     '</｜DSML｜ parameter></｜DSML｜ invoke>'),
    ("gigachat3_5", "required",
     ' string="<｜GCML｜parameter name="city"</s>"<｜GCML｜parameter name="label"<｜GCML｜tool_calls><｜GCML｜invoke '
     'name="book_trip"><｜GCML｜parameter name="where""<|message_sep|></｜GCML｜tool_calls>>"<|message_sep|>'
     '<|message_sep|></｜GCML｜tool_calls></s><｜GCML｜tool_calls><think></｜GCML｜parameter></｜GCML｜invoke>'),
    ("k2_horizon", "required",
     '><ifm|tool_call>book_trip <ifm|arg_key>where</ifm|arg_key><ifm|arg_value><ifm|arg_key>label</ifm|arg_key>'
     '"name"><ifm|tool_call>}<ifm|tool_call><ifm|tool_call><ifm|arg_key>unit</ifm|arg_key></ifm|arg_value>'
     '</ifm|tool_call>'),
]


@pytest.mark.parametrize("family, choice, text", SWITCH_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(SWITCH_CASES)])
def test_switched_values_are_typed(family, choice, text):
    refused(family, text, choice=choice)


DSML = ('<｜DSML｜function_calls>\n<｜DSML｜invoke name="set_alarm">\n<｜DSML｜parameter name="time" string="true">7:00'
        '</｜DSML｜parameter>\n<｜DSML｜parameter name="volume" string="false">{}</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
        '</｜DSML｜function_calls>')


def test_switched_values_follow_their_case():
    # string="false" reads JSON: 5 is an integer, "loud" a string the integer volume refuses
    accepted("deepseek_v3_2", DSML.format("5"))
    refused("deepseek_v3_2", DSML.format('"loud"'))
    # no string attribute: the default (text), typed by the tool typing
    accepted("deepseek_v3_2", DSML.format("5").replace(' string="false"', ""))
    # k2_horizon's <ifm|arg_type> names the case; without it the value is text the typing converts
    k2 = ('<ifm|tool_calls><ifm|tool_call>set_alarm <ifm|arg_key>time</ifm|arg_key><ifm|arg_type>string</ifm|arg_type>'
          '<ifm|arg_value>7:00</ifm|arg_value><ifm|arg_key>volume</ifm|arg_key>{}<ifm|arg_value>5</ifm|arg_value>'
          '</ifm|tool_call></ifm|tool_calls>')
    accepted("k2_horizon", k2.format("<ifm|arg_type>integer</ifm|arg_type>"))
    accepted("k2_horizon", k2.format(""))
    # a json case reads its value as JSON whatever the case's name: ``5`` is 5 there, ``five`` no JSON at all
    accepted("k2_horizon", k2.format("<ifm|arg_type>object</ifm|arg_type>"))
    refused("k2_horizon", k2.format("<ifm|arg_type>integer</ifm|arg_type>").replace(">5<", ">five<"))


# --- a body an earlier field with the same open reads -------------------------------------------------------

def test_shared_open_body_the_json_call_takes_is_refused():
    # llama3_json: <|python_tag|> opens its JSON call first; that reader takes "[", so a bracketed
    # builtin call list there is a JSON call that does not parse (found by the sampling walks)
    text = '"set_alarm""city""get_weather""name"<|python_tag|>[set_alarm(time \n ="time")]'
    refused("llama3_json", text, parallel=False)
    # a bare builtin call, which the JSON reader refuses, is the pythonic field's (the structural tag
    # writes no pythonic calls: tests/cases/structural_tag_gaps.json)
    accepted("llama3_json", '<|python_tag|>set_alarm(time="7:00")', parallel=False, structural=False)


# --- plamo3: a region that runs to the end; a close consumed only right after the value ---------------------

PLAMO_CALL = ('<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>set_alarm<|plamo:end_tool_name:plamo|>'
              '<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>')
PLAMO_CASES = [
    # the end-of-turn region <|plamo:tag|> has no close: the call section after it is its text
    ("required", '}<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"days"<|plamo:tag|>'
                 '<|plamo:begin_tool_requests:plamo|>' + PLAMO_CALL + ' \n{"volume"   :0,"label"\n:null,"time" :"time"}'
                 '<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>'),
    # whitespace between the value and the call's close: the close is then text in the section
    ("set_alarm", 'a<|plamo:begin_think:plamo|>/<|plamo:end_think:plamo|><|plamo:begin_tool_requests:plamo|>' + PLAMO_CALL
                  + ' {"label":"volume" ,"time" :"time"}\n<|plamo:end_tool_arguments:plamo|>'
                  '<|plamo:end_tool_request:plamo|>'),
    # the end-of-turn region opened inside reasoning: the reasoning's close never comes (found by a walk
    # once the two above were fixed, as written; with the call's close after the value the grammar before
    # either fix allowed it too)
    ("set_alarm", '<|plamo:begin_think:plamo|> #<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>'
                  '<|plamo:tag|><|plamo:end_tool_requests:plamo|><|plamo:end_tool_arguments:plamo|>'
                  '<|plamo:end_tool_request:plamo|><|plamo:end_think:plamo|>"label"<|plamo:begin_tool_requests:plamo|>'
                  + PLAMO_CALL + '  {"label":"label" \n,"time"\n\n:"volume"}'),
    ("set_alarm", '<|plamo:begin_think:plamo|> #<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>'
                  '<|plamo:tag|><|plamo:end_tool_requests:plamo|><|plamo:end_tool_arguments:plamo|>'
                  '<|plamo:end_tool_request:plamo|><|plamo:end_think:plamo|>"label"<|plamo:begin_tool_requests:plamo|>'
                  + PLAMO_CALL + '  {"label":"label" \n,"time"\n\n:"volume"}<|plamo:end_tool_arguments:plamo|>'
                  '<|plamo:end_tool_request:plamo|>'),
]


@pytest.mark.parametrize("choice, text", PLAMO_CASES, ids=["endless-region", "space-before-close", "endless-nested", "endless-nested-closed"])
def test_plamo3_calls_the_parser_does_not_see_are_refused(choice, text):
    refused("plamo3", text, choice=choice)


def test_plamo3_call_with_its_close_right_after_the_value_passes():
    accepted("plamo3", '<|plamo:begin_tool_requests:plamo|>' + PLAMO_CALL + '{"time": "7:00"}'
             '<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>',
             choice="set_alarm")


# --- structural tag: an open that ends the reasoning is no reasoning text -------------------------------------

@pytest.mark.parametrize("choice, text", [
    ("none", '<think><tool_call>#/\n<tool_call>;/<think>;'),
    ("required", '<think>guestsfalse<arg_key>{days#_true0#("volume"〈|EOS|〉"note""label</tool_call>〈|EOS|〉</tool_call>'
                 '〈|EOS|〉<tool_call>>labeltrue"label"</tool_call></tool_call>false</think><tool_call>get_weather\n\n '
                 '{"days":0 ,"unit"\n \n\n\n \n\n:"fahrenheit" ,"city"\n:"guests"}</tool_call>'),
], ids=["none", "required"])
def test_structural_tag_reasoning_holds_no_call_open(choice, text):
    # poolside: <tool_call> ends its reasoning (inside "end"), so the parser reads a call there
    # (strings the sampling walks found in the structural tag)
    refused("poolside", text, choice=choice)


def test_structural_tag_reasoning_cut_by_a_call_types_the_call():
    # qwen3: reasoning the output never closes ends at <tool_call> ("end-if-unclosed"), so the call after
    # it is a call: to an offered tool only (the tag once read it as reasoning text, any call through)
    cut = '<think>x<tool_call>\n{{"name": "{}", "arguments": {{"city": "Paris"}}}}\n</tool_call>'
    refused("qwen3", cut.format("rm_rf"))
    # the grammar reads the offered call; the structural tag writes no reasoning a call ends
    # (tests/cases/structural_tag_gaps.json)
    accepted("qwen3", cut.format("get_weather"), structural=False)


#: ernie4_5's reasoning open ``^\s*(?:<think>\s*)?|<think>\s*`` (walk-found strings,
#: test_grammar_sampling.py): its anchored branch matches only at offset 0, and there even the
#: empty string unless a longer delimiter matches (docs/grammar.md, "Anchored opens")
@pytest.mark.parametrize("text, kw", [
    # under none: the empty anchored open taken after </response>, then a call open in "reasoning"
    (".</response></think>Z\\</think></think>}<tool_call>", {"choice": "none"}),
    # under none: text at offset 0 that starts with a delimiter the parser takes over the empty open
    ("<|end_of_sentence|><tool_call>[_/:</think><tool_call>", {"choice": "none"}),
    # with a call required: text at offset 0 is reasoning, the call inside it
    ('x<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>', {"choice": "required"}),
    # the structural tag's walks: free text, then a call whose string holds the reasoning's close,
    # after which the parser opens a call on the string's rest
    ('x<tool_call>{"name": "get_weather", "arguments": {"city": "</think><tool_call>"}}</tool_call>', {}),
    # with a call required and reasoning off: the same
    ('x<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
     {"choice": "required", "reasoning": False}),
])
def test_anchored_open_is_read_only_at_offset_0(text, kw):
    refused("ernie4_5", text, **kw)


def test_anchored_open_real_outputs_still_pass():
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    for text in ("plan</think>\n\n" + call, "<think>\nplan\n</think>\n\n" + call, "</think>ok" + call):
        accepted("ernie4_5", text)
        # (with a call required the structural tag refuses these, as it did before: not studied here)
        accepted("ernie4_5", text, structural=False, choice="required")
    # a call at offset 0 (a longer delimiter than the empty open): the structural tag always
    # starts with the reasoning (docs/grammar.md "Anchored opens")
    accepted("ernie4_5", call, structural=False, choice="required")
    accepted("ernie4_5", "plan, cut off", choice="auto")
    accepted("ernie4_5", "hello</think>Hi<|end_of_sentence|>", choice="none")


#: minicpm4's tag_pattern ends in ``(?=\s*(?:<param\b|\Z))``: a tag counts only when whitespace and
#: the next tag or the end of the body follow it, so no closing tag may follow the last one
#: (walk-found string, test_grammar_sampling.py; docs/grammar.md "Formats write their bodies")
def test_closing_tag_after_a_lookahead_tag_is_refused():
    text = ('|</param>city")-]<think>\'\\>\'?</<|:"[label</think></think><function\nname="book_trip"city"<function'
            '</function><param name="where"><![CDATA[\n\n{"nights": 9\n\n ,"city"\n \n:"nights"}</param></think>'
            '</function>')
    refused("minicpm4", text, choice="required")


def test_lookahead_tags_still_pass():
    accepted("minicpm4", '<function name="book_trip"><param name="where"><![CDATA[{"city": "Paris"}]]></param>\n'
             '<param name="guests">["Ann"]</param>\n</function>', choice="required")


# --- cwm: four call fields behind one open (<tool:); a name group that runs on into the body ---------------
#: walk-found strings (test_grammar_sampling.py) the exports allowed: the named form's name group
#: ``[^\s<]+`` reads ``set_alarm{"time":`` as the name when no whitespace follows the name; the
#: command forms (a text body, arguments ``{"command": ...}``) took any name and any tool
CWM_CASES = [
    ("set_alarm", '<tool:function  >set_alarm{"time":\n"volume"}</tool>'),
    ("set_alarm", '<tool: function>set_alarm{\n\n "time" \n : "time"\n,"label":null}</tool>'),
    ("auto", '<tool:;    >,\'book_tripnull"volume"</think>]function"nights"<think>function<think><|end_of_text|>"volume"'
             '<|end_of_text|>"time"set_alarm</think>"where"</think></tool>'),
    ("set_alarm", '<set_alarm9"time"<|eot_id|><tool:"label"<|eot_id|><|end_of_text|><think></tool>'),
    ("required", '<tool:get_weather>\nParis\n</tool>'),
]
CWM_TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}},
    {"type": "function", "function": {"name": "function", "parameters": {
        "type": "object", "properties": {"x": {"type": "string"}}}}}] + RICH_TOOLS


@pytest.mark.parametrize("choice, text", CWM_CASES, ids=[f"cwm-{i}" for i in range(len(CWM_CASES))])
def test_cwm_name_and_command_forms_are_typed(choice, text):
    refused("cwm", text, choice=choice)


def test_cwm_real_forms_still_pass():
    accepted("cwm", '<tool:function>\nset_alarm\n{"time": "7:00"}\n</tool>', choice="required")
    accepted("cwm", '<tool: set_alarm>\n{"time": "7:00"}\n</tool>', choice="required")
    # a command: only to a tool whose one string argument is the command; the named form's first word
    # (the structural tag writes JSON bodies only: no command form there)
    accepted("cwm", "<tool: bash>\nls -la\n</tool>", choice="required", tools=CWM_TOOLS, structural=False)
    accepted("cwm", '<think>Let me search.</think>\n<tool: function>\nbash find . -name "*.py"\n</tool>\n',
             choice="required", tools=CWM_TOOLS, structural=False)
    # a body that starts with "{" is the JSON call's; a tool named "function" only in the named form
    refused("cwm", "<tool: bash>\n{ ls; }\n</tool>", choice="required", tools=CWM_TOOLS)
    refused("cwm", '<tool: function>\n{"x": "a"}\n</tool>', choice="required", tools=CWM_TOOLS)
    accepted("cwm", '<tool: function>\nfunction {"x": "a"}\n</tool>', choice="required", tools=CWM_TOOLS)


# --- minimax_m3: xml-tree values (nested elements), a tag pattern that repeats its key -------------------
#: walk-found strings (test_grammar_sampling.py) the export allowed: each parameter was any text, since
#: the tag pattern's ``</(?P=key)>`` was not translated, so bodies held text the parser finds no tag in
M3 = "]<]minimax[>["
M3_CASES = [
    ("set_alarm", f'{M3}<tool_call>{M3}<invoke name="set_alarm">{M3}<tool_call>]{M3}</invoke>'),
    ("set_alarm", f'{M3}<tool_call>{M3}<invoke name="set_alarm">)</mm:think></mm:think><mm:think>{M3}</invoke>'),
    ("auto", f'{M3}<tool_call>{M3}<invoke name="get_weather"></mm:think></mm:think></{M3}</tool_call><mm:think>'
             f'{M3}<invoke name="book_trip">{M3}</tool_call></mm:think>[e~[{M3}<tool_call></mm:think>[e~[[e~['
             f'{M3}</invoke>'),
    # issue 27 E: a parameter value holding the call's close
    ("required", f'{M3}<tool_call>{M3}<invoke name="get_weather">{M3}<city>{M3}</invoke>{M3}</city>{M3}</invoke>'
                 f'{M3}</tool_call>'),
    # nested values are typed too: nights is an integer, where needs its city
    ("required", f'{M3}<tool_call>{M3}<invoke name="book_trip">{M3}<where>{M3}<city>Paris{M3}</city>{M3}<nights>'
                 f'three{M3}</nights>{M3}</where>{M3}</invoke>{M3}</tool_call>'),
    ("required", f'{M3}<tool_call>{M3}<invoke name="book_trip">{M3}<where>{M3}<nights>3{M3}</nights>{M3}</where>'
                 f'{M3}</invoke>{M3}</tool_call>'),
]


@pytest.mark.parametrize("choice, text", M3_CASES, ids=[f"minimax_m3-{i}" for i in range(len(M3_CASES))])
def test_minimax_m3_values_are_typed_trees(choice, text):
    refused("minimax_m3", text, choice=choice)


def test_minimax_m3_real_values_still_pass():
    call = (f'{M3}<tool_call>\n{M3}<invoke name="book_trip">\n{M3}<where>\n{M3}<city>Paris{M3}</city>\n{M3}<nights>3'
            f'{M3}</nights>\n{M3}</where>\n{M3}<guests>{M3}<item>Ann{M3}</item>{M3}<item>Bo{M3}</item>{M3}</guests>\n'
            f'{M3}<note>null{M3}</note>\n{M3}</invoke>\n{M3}</tool_call>')
    accepted("minimax_m3", call, choice="required")
    # an object or array written as JSON text is read the same way by the tool typing
    accepted("minimax_m3", call.replace(f'\n{M3}<city>Paris{M3}</city>\n{M3}<nights>3{M3}</nights>\n',
                                        '{"city": "Paris", "nights": 3}'), choice="required")
    accepted("minimax_m3", f'{M3}<tool_call>{M3}<invoke name="get_weather">{M3}<city>Paris{M3}</city>'
             f'{M3}<days>2{M3}</days>{M3}</invoke>{M3}</tool_call>', choice="get_weather")


# --- D: a wholly anchored open read anywhere (gpt_oss's ``^analysis``) ---------------------

#: found by a walk of gpt_oss's EBNF export with a named tool: the text before ``<|channel|>`` let the
#: grammar read ``analysis<|message|>...assistantfinal`` as the stripped reasoning (its open ``^analysis``
#: anchor dropped) and the rest as a call; the parser reads the reasoning channel there, no call
D_ANCHORED_NAMED = (
    '{?,?!9Z\\)<|end|>|=Z"label"analysis<analysiscontainer.<|constrain|><|channel|>"<|end|><|channel|>analysis'
    '<|message|>to=functions.assistantfinalto=functions.set_alarm<|channel|>assistantfinal<|constrain|>'
    'assistantfinalassistantfinalassistantfinal<|message|>{"volume"\n\n\n\n:9 ,"time":"browser.to=functions.'
    'commentaryto=functions.nullto=functions.assistantfinalchannel|>final>container.to=functions.analysisto='
    'functions.}assistantfinalanalysisassistantfinalcall|>to=analysis}to=functions.end|>assistantfinalnull'
    'assistantfinalchannel|>to=functions.to=functions.analysisto=functions.set_alarm"}')


def test_d_anchored_open_mid_output_named_tool_is_refused():
    refused("gpt_oss", D_ANCHORED_NAMED, choice="set_alarm")
    # the stripped reasoning at offset 0 still opens there; text that only starts like it is text
    accepted("gpt_oss", 'analysisWe should set it.assistantfinal<|start|>assistant<|channel|>commentary '
             'to=functions.set_alarm <|constrain|>json<|message|>{"time":"7"}<|call|>', choice="set_alarm",
             structural=False)
    accepted("gpt_oss", 'an alarm: <|start|>assistant<|channel|>commentary to=functions.set_alarm <|constrain|>json'
             '<|message|>{"time":"7"}<|call|>', choice="set_alarm", structural=False)


def test_d_anchored_open_at_the_start_is_the_region():
    # the parser reads this all as reasoning (its close assistantfinal never comes): no call
    refused("gpt_oss", 'analysis <|start|>assistant<|channel|>commentary to=functions.set_alarm <|constrain|>json'
            '<|message|>{"time":"7"}<|call|>', choice="set_alarm")


# --- E: a closing tag after the last XML parameter that is the call's close --------------------------------

#: found by a walk of deepseek_v4's structural tag: after the last parameter the body may hold the closing
#: tags of markup the opener began, but ``</｜DSML｜invoke>`` there is the call's close, so the parser ends the
#: call at it and reads the rest (``</｜DSML｜parameter></｜DSML｜invoke>``) as text inside the call section
DSML_CALL = '<｜DSML｜tool_calls><｜DSML｜invoke name="set_alarm"><｜DSML｜parameter name="time">7</｜DSML｜parameter>{}' \
            '</｜DSML｜invoke></｜DSML｜tool_calls>'

DSML1_CALL = DSML_CALL.replace("｜DSML｜", "｜DSML｜ ").replace("tool_calls>", "calls>")


@pytest.mark.parametrize("choice", ["auto", "required"])
def test_e_call_close_among_closing_tags_is_refused(choice):
    refused("deepseek_v4", DSML_CALL.format("</｜DSML｜invoke></｜DSML｜parameter>"), choice=choice)
    refused("deepseek_v4_1", DSML1_CALL.format("</｜DSML｜ invoke></｜DSML｜ parameter>"), choice=choice)


def test_e_other_closing_tags_still_pass():
    accepted("deepseek_v4", DSML_CALL.format("\n</function>\n"), choice="required")
    accepted("deepseek_v4", DSML_CALL.format(""), choice="required")
    accepted("deepseek_v4_1", DSML1_CALL.format(""), choice="required")


# --- D: llama4_pythonic's open that matches no text (a lookahead) ------------------------------------------

#: the open ``<|python_start|>|(?=\[\s*[A-Za-z_][\w.]*\()``: after no open only a bracketed list is a call
#: (the issue's string: a bare call the grammar counted and the parser reads as text), and a tool whose
#: name the pythonic reader does not read as a call's name is never written
HYPHEN = [{"type": "function", "function": {"name": "get-weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "ok", "parameters": {"type": "object", "properties": {}}}}]


@pytest.mark.parametrize("choice", ["required", "set_alarm"])
def test_d_bare_pythonic_call_after_no_open_is_refused(choice):
    refused("llama4_pythonic", 'set_alarm(time="7")', choice=choice)
    refused("llama4_pythonic", 'Sure. set_alarm(time="7")<|eot|>', choice=choice)
    accepted("llama4_pythonic", '[set_alarm(time="7")]', choice=choice)
    accepted("llama4_pythonic", '<|python_start|>[set_alarm(time="7")]<|python_end|>', choice=choice)


def test_d_pythonic_name_the_reader_does_not_read_is_refused():
    refused("llama4_pythonic", '<|python_start|>[get-weather(city="x")]', choice="required", tools=HYPHEN)
    refused("llama4_pythonic", '[get-weather(city="x")]', choice="required", tools=HYPHEN)
    accepted("llama4_pythonic", '<|python_start|>[ok()]', choice="required", tools=HYPHEN)
    # the EBNF exports write the bracketed list after no open for the tools they write; the structural
    # tag leaves that form out when the lookahead refuses any offered tool's name (stricter)
    got = verdicts("llama4_pythonic", "[ok()]", choice="required", tools=HYPHEN)
    assert got.pop(STRUCTURAL_TAG, False) is False and got == {fmt: True for fmt in got}, got
