"""errors="recover" and markup damage (issue 8;
docs/events.md "Recovering from damaged output"): declared repairs of a template (``repair_...``
groups, here the harmony format of gpt_oss), stray closers, event offsets on request, and
diagnostics in the message when a template asks for them.

Every damaged output is fed whole, one character at a time and in random pieces (``support.chunkings``);
messages, events and diagnostics are literal.
"""

from __future__ import annotations

import importlib
import json

import pytest

from respc.compiler.api import compile_template
from respc.runtime.errors import TemplateError

from support import FAMILY_DIR, REPO, run_checked

GPT_OSS = importlib.import_module("respc.generated.gpt_oss")
QWEN3 = importlib.import_module("respc.generated.qwen3")
HERMES = importlib.import_module("respc.generated.hermes2pro")
HOWS = ["whole", "chars", "random"]
# the tail of a gpt-oss prompt rendered by its chat template (tests/cases/families/gpt_oss.json)
HARMONY = "<|start|>user<|message|>What's the weather in Paris?<|end|><|start|>assistant"


def run(module, prefix, text, how, errors="recover", **options):
    return run_checked(module, prefix, text, how, errors, **options)


def declared(field, start, text, what, delimiter):
    return {"kind": "repaired", "field": field, "start": start, "end": start + len(text), "text": text,
            "message": f"{what}: {text!r} accepted in the delimiter {delimiter!r} (a repair the template declares)"}


def call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


# (name, output, message, diagnostics): each a declared repair of templates/gpt_oss.json
HARMONY_DAMAGE = [
    ("special tokens stripped by the decoder (skip_special_tokens)",
     "analysisThe user says hi. Answer politely.assistantfinalHello! How can I help?",
     {"role": "assistant", "reasoning_content": "The user says hi. Answer politely.",
      "content": "Hello! How can I help?"},
     [declared("reasoning_content", 0, "analysis", "stripped tokens", "analysis")]),
    ("a bare 'commentary' after <|call|>",
     '<|channel|>commentary to=functions.f<|message|>{"a": 1}<|call|>commentary'
     '<|start|>assistant<|channel|>final<|message|>Done<|return|>',
     {"role": "assistant", "content": "Done", "tool_calls": [call("f", {"a": 1})]},
     [declared("tool_calls", 63, "commentary", "filler", "<|call|>commentary")]),
    ("the recipient written twice",
     '<|channel|>commentary to=functions.f to=functions.f<|message|>{"a": 1}<|call|>',
     {"role": "assistant", "tool_calls": [call("f", {"a": 1})]},
     [declared("tool_calls", 36, " to=functions.f", "recipient again",
               "<|channel|>commentary to=functions.f to=functions.f<|message|>")]),
    ("<|end|> where the call header's <|message|> belongs",
     '<|channel|>commentary to=functions.f <|constrain|>json<|end|>{"a": 1}<|call|>',
     {"role": "assistant", "tool_calls": [call("f", {"a": 1})]},
     [declared("tool_calls", 54, "<|end|>", "end for message",
               "<|channel|>commentary to=functions.f <|constrain|>json<|end|>")]),
    ("<|end|> where the final header's <|message|> belongs",
     "<|channel|>final<|end|>It is sunny.<|return|>",
     {"role": "assistant", "content": "It is sunny."},
     [declared("content", 16, "<|end|>", "end for message", "<|channel|>final<|end|>")]),
    ("<|end|> where the analysis header's <|message|> belongs",
     "<|channel|>analysis<|end|>Thinking.<|end|><|start|>assistant<|channel|>final<|message|>Hi<|return|>",
     {"role": "assistant", "reasoning_content": "Thinking.", "content": "Hi"},
     [declared("reasoning_content", 19, "<|end|>", "end for message", "<|channel|>analysis<|end|>")]),
    ("spaces a decoder put between special tokens",
     "<|channel|> analysis <|message|>Hmm.<|end|> <|start|> assistant <|channel|> final <|message|>Hi<|return|>",
     {"role": "assistant", "reasoning_content": "Hmm.", "content": "Hi"},
     [declared("reasoning_content", 11, " ", "space", "<|channel|> analysis <|message|>"),
      declared("reasoning_content", 20, " ", "space", "<|channel|> analysis <|message|>"),
      declared("content", 53, " ", "space", "<|start|> assistant"),
      declared("content", 75, " ", "space", "<|channel|> final <|message|>"),
      declared("content", 81, " ", "space", "<|channel|> final <|message|>")]),
]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("errors", ["recover", "strict"])
@pytest.mark.parametrize("name,text,message,diagnostics", HARMONY_DAMAGE, ids=[c[0] for c in HARMONY_DAMAGE])
def test_harmony_damage_is_repaired_and_reported(name, text, message, diagnostics, errors, how):
    # the template accepts these, so both modes give the same message and diagnostics
    got, events, diags = run(GPT_OSS, HARMONY, text, how, errors)
    assert got == message
    assert diags == diagnostics
    assert all(text[d["start"]:d["end"]] == d["text"] for d in diags)
    assert [e for e in events if e["type"] == "region_malformed"] == []


@pytest.mark.parametrize("how", HOWS)
def test_harmony_lookalikes_are_not_repaired(how):
    # 'commentary' not followed by a special token, and 'analysis' later than the very start, are text
    text = ('<|channel|>commentary to=functions.f<|message|>{"a": 1}<|call|>commentary follows; '
            'analysis done.<|return|>')
    message, _, diagnostics = run(GPT_OSS, HARMONY, text, how)
    assert message == {"role": "assistant", "content": "commentary follows; analysis done.",
                       "tool_calls": [call("f", {"a": 1})]}
    assert diagnostics == []


@pytest.mark.parametrize("how", HOWS)
def test_clean_harmony_cases_report_nothing(how):
    family = json.loads((FAMILY_DIR / "gpt_oss.json").read_text(encoding="utf-8"))
    for case in family["cases"]:
        message, _, diagnostics = run(GPT_OSS, case["prefix"], case["text"], how, tools=case.get("tools"))
        assert message == case["message"], case["name"]
        assert diagnostics == [], case["name"]


def test_repair_groups_need_no_transform_but_captures_do():
    base = {"respc_version": 2, "start_anchor": "<|a|>",
            "fields": {"reasoning_content": {"open_pattern": "<think(?P<repair_space> )?>", "close": "</think>"},
                       "content": {}}}
    module = compile_template(base)
    parser = module.ResponseParser("<|a|>")
    parser.feed("<think >Hm</think>Ok")
    assert parser.finalize()[0] == {"reasoning_content": "Hm", "content": "Ok"}
    assert parser.diagnostics == [declared("reasoning_content", 6, " ", "space", "<think >")]
    base["fields"]["reasoning_content"]["open_pattern"] = "<think(?P<mood> )?>"
    with pytest.raises(TemplateError, match=r"named group\(s\) \['mood'\] but the field has no 'transform'"):
        compile_template(base)


STRAY = [
    (HERMES, "", "Done.</tool_call> More.", {"role": "assistant", "content": "Done.</tool_call> More."},
     [(5, "</tool_call>", "tool_calls", "content")]),
    (QWEN3, "", "Done.</tool_call> More.", {"role": "assistant", "content": "Done.</tool_call> More."},
     [(5, "</tool_call>", "tool_calls", "content")]),
    (QWEN3, "<|im_start|>assistant\n<think>\n", "No call yet</tool_call> so.</think>Answer.",
     {"role": "assistant", "reasoning_content": "No call yet</tool_call> so.", "content": "Answer."},
     [(11, "</tool_call>", "tool_calls", "reasoning_content")]),
    (QWEN3, "", 'Call f.<tool_call>{"name": "f", "arguments": {}}</tool_call>x</tool_call>',
     {"role": "assistant", "content": "Call f.x</tool_call>", "tool_calls": [call("f", {})]},
     [(61, "</tool_call>", "tool_calls", "content")]),
]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("module,prefix,text,message,strays", STRAY, ids=[f"{m.__name__.rsplit('.', 1)[1]}-{t[:12]}"
                                                                          for m, _, t, _, _ in STRAY])
def test_stray_closer_stays_text_and_is_reported(module, prefix, text, message, strays, how):
    got, _, diagnostics = run(module, prefix, text, how)
    assert got == message
    assert diagnostics == [
        {"kind": "stray-closer", "field": field, "start": at, "end": at + len(closer), "text": closer,
         "message": f"closer {closer!r} of {field!r} with no opener before it: kept as text of {into!r}"}
        for at, closer, field, into in strays]
    assert all(text[d["start"]:d["end"]] == d["text"] for d in diagnostics)
    strict, _, strict_diagnostics = run(module, prefix, text, how, "strict")
    assert strict == message and strict_diagnostics == []


@pytest.mark.parametrize("how", HOWS)
def test_closer_after_its_opener_in_prose_is_not_stray(how):
    text = "The tag <tool_call> starts a call and </tool_call> ends it."
    message, _, diagnostics = run(QWEN3, "", text, how)
    assert message == {"role": "assistant", "content": text}
    assert diagnostics == []


OFFSET_TEXT = 'Hi.<tool_call>{"name": "f", "arguments": {}}</tool_call> ok'


@pytest.mark.parametrize("how", HOWS)
def test_events_carry_offsets_on_request(how):
    _, events, _ = run(QWEN3, "<|im_start|>assistant\n<think>\n", OFFSET_TEXT, how, offsets=True)
    spans = [(e["type"], e["field"], e["start"], e["end"]) for e in events if e["type"] != "region_chunk"]
    assert spans == [("region_open", "reasoning_content", -8, -1),
                     ("region_close", "reasoning_content", -8, 3),
                     ("region_open", "tool_calls", 3, 14),
                     ("region_close", "tool_calls", 3, 56),
                     ("region_open", "content", 56, 56),
                     ("region_close", "content", 56, 59)]
    full = "<think>\n" + OFFSET_TEXT  # offset o is full[o + 8]
    for e in events:
        if e["type"] == "region_chunk":
            assert full[e["start"] + 8:e["end"] + 8] == e["text"]


def test_events_have_no_offsets_by_default():
    _, events, _ = run(QWEN3, "", OFFSET_TEXT, "whole")
    assert all("start" not in e for e in events if e["type"] != "region_malformed")


DIAG_TEMPLATE = {
    "respc_version": 2, "defaults": {"role": "assistant"}, "start_anchor": "<|a|>", "diagnostics": "diagnostics",
    "fields": {"tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "content": "json", "repeats": True,
                              "role": "tool_calls"},
               "content": {"repeats": True, "join": ""}},
}


@pytest.mark.parametrize("how", HOWS)
def test_diagnostics_in_the_message_when_the_template_asks(how):
    module = compile_template(DIAG_TEMPLATE)
    message, _, diagnostics = run(module, "", "Done.</tool_call>", how)
    assert message == {"role": "assistant", "content": "Done.</tool_call>", "diagnostics": [
        {"kind": "stray-closer", "field": "tool_calls", "start": 5, "end": 17, "text": "</tool_call>",
         "message": "closer '</tool_call>' of 'tool_calls' with no opener before it: kept as text of 'content'"}]}
    assert message["diagnostics"] == diagnostics
    clean, _, _ = run(module, "", "Fine.", how)
    assert clean == {"role": "assistant", "content": "Fine."}


def test_diagnostics_key_is_v2_and_must_be_free():
    v1 = {k: v for k, v in DIAG_TEMPLATE.items() if k != "respc_version"}
    v1["fields"] = {"content": {}}
    with pytest.raises(TemplateError, match="'diagnostics' is a key of template language v2"):
        compile_template(v1)
    taken = dict(DIAG_TEMPLATE, diagnostics="content")
    with pytest.raises(TemplateError, match="'diagnostics' must name a message key of its own"):
        compile_template(taken)


# --- the region's opener written again inside its body (peer vector Laguna
# TestLagunaParserIgnoresDuplicatedNestedToolCall; docs/events.md, "Repairs and policies") ------

POOLSIDE = importlib.import_module("respc.generated.poolside")
POOLSIDE_PREFIX = "<user>\nWhat's the weather in Paris?\n</user>\n<assistant>\n</think>"
DUPLICATED = '<tool_call>skill\n{"name":"git-diff-review"}\n<tool_call>skill\n{"name":"git-diff-review"}</tool_call>'


@pytest.mark.parametrize("how", HOWS)
def test_opener_written_again_inside_the_body_drops_the_abandoned_start(how):
    message, _, diagnostics = run(POOLSIDE, POOLSIDE_PREFIX, DUPLICATED, how)
    assert message == {"role": "assistant", "tool_calls": [call("skill", {"name": "git-diff-review"})]}
    dropped = '<tool_call>skill\n{"name":"git-diff-review"}\n<tool_call>skill\n'
    assert diagnostics == [{
        "kind": "repaired", "field": "tool_calls", "start": 0, "end": len(dropped), "text": dropped,
        "message": "the region's opener '<tool_call>skill\\n' written again inside its body: the start before "
                   "the last copy was abandoned (dropped; the body after it is the value)"}]
    assert DUPLICATED[:len(dropped)] == dropped
    # strict is unchanged: the body does not parse
    with pytest.raises(ValueError, match="could not parse region as JSON"):
        run(POOLSIDE, POOLSIDE_PREFIX, DUPLICATED, how, errors="strict")


@pytest.mark.parametrize("how", HOWS)
def test_opener_again_with_other_groups_is_not_taken(how):
    """Only the very same opener text (hence the same groups: here the call's name) is read as
    the start written again; a different one leaves the region malformed, as before."""
    text = DUPLICATED.replace("\n<tool_call>skill\n", "\n<tool_call>other\n")
    message, _, diagnostics = run(POOLSIDE, POOLSIDE_PREFIX, text, how)
    assert "tool_calls" not in message and message["content"] == text
    assert [d["kind"] for d in diagnostics] == ["malformed"]
