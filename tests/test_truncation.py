"""A value is complete only when its format says so (issue 24, item 1; docs/events.md, "Truncated
regions").

A region the output ended inside -- no closer came where the format has one, or an ``end:
"value"`` body whose value did not end -- is *truncated*: its value is dropped (never a tool
call), earlier complete calls are kept, ``errors="recover"`` reports a ``truncated`` diagnostic
holding its text (the text is not put into the answer: it is a cut call, not prose) and
``errors="strict"`` raises. The first part runs the issue's examples literally, whole, one
character at a time and in random pieces; the second cuts every catalogue family's sample outputs
at every point (the property).
"""

from __future__ import annotations

import json

import pytest

from respc.openai import ChatCompletionStream
from respc.runtime import whole
from respc.runtime.errors import ContentParseError
from support import (CATALOGUE_TEMPLATES, FAMILY_DIR, run_checked, CORPUS, PEER2_XFAIL, PEER_PREFIX, PEER_XFAIL, REPO,
                     SHARED, chunkings, generated, load_jsonl)

HOWS = ("whole", "chars", "random")
TRUNCATED = "ContentParseError: Field 'tool_calls': the output ended inside this region before {} (truncated); " \
            "a value the output did not finish is not returned."


def run(family: str, text: str, how: str, errors: str = "recover", prefix: str = ""):
    """``(message, events, diagnostics)`` of ``text`` fed in chunking ``how``; the whole-text
    path (``parse_response``) must give the same message and diagnostics."""
    return run_checked(generated(family), prefix, text, how, errors)


def _truncated(start: int, end: int, text: str, before: str = "its close") -> dict:
    return {"kind": "truncated", "field": "tool_calls", "start": start, "end": end,
            "message": TRUNCATED.format(before), "text": text}


# family, output, message in "recover", the truncated region's (start, end), what it ended before
EXAMPLES = [
    ("glm4_5", "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Par",
     {"role": "assistant"}, (0, 61), "its close"),
    ("qwen3_coder", "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar",
     {"role": "assistant"}, (0, 55), "its close"),
    ("glm4_5", "<tool_call>" + "   " + "x", {"role": "assistant"}, (0, 15), "its close"),
    ("mistral_small_3_2", 'Sure.[TOOL_CALLS]get_weather[ARGS]{"city": "Par',
     {"role": "assistant", "content": "Sure."}, (5, 47), "its value ended"),
    ("llama3_json", 'Sure.{"name": "get_weather", "parameters": {"city": "Par',
     {"role": "assistant", "content": "Sure."}, (5, 56), "its value ended"),
    ("llama3_json", 'Hi<|python_tag|>{"name": "get_weather", "parameters": {"city": "Par',
     {"role": "assistant", "content": "Hi"}, (2, 67), "its value ended"),
    ("dots", 'Sure.<dots_function_call>{"name": "get_weather", "arguments": {"city": "Par',
     {"role": "assistant", "content": "Sure."}, (25, 75), "its value ended"),
    ("llama4_pythonic", 'Sure.<|python_start|>[get_weather(city="Par',
     {"role": "assistant", "content": "Sure."}, (5, 43), "its value ended"),
    ("olmo3", 'Sure.<function_calls>get_weather(city="Par',
     {"role": "assistant", "content": "Sure."}, (21, 42), "its value ended"),
    # a text body of a tool-call region has no end of its own: a cut program is not run
    ("functionary_v3_1", "Let me compute.<|python_tag|>print(1",
     {"role": "assistant", "content": "Let me compute."}, (15, 36), "its close"),
    # an opener and nothing after it
    ("qwen3", "Sure.<tool_call>", {"role": "assistant", "content": "Sure."}, (5, 16), "its close"),
]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("family,text,message,span,before", EXAMPLES,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(EXAMPLES)])
def test_cut_call_is_truncated_in_recover(family, text, message, span, before, how):
    got, events, diagnostics = run(family, text, how)
    assert got == message
    start, end = span
    assert diagnostics == [_truncated(start, end, text[start:end], before)]
    dropped = [e for e in events if e["type"] == "region_malformed"]
    assert len(dropped) == 1 and dropped[0]["into"] is None and dropped[0]["text"] == text[start:end]
    assert not any(e["type"] == "region_close" and e["field"] == "tool_calls" for e in events)


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("family,text,message,span,before", EXAMPLES,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(EXAMPLES)])
def test_cut_call_raises_in_strict(family, text, message, span, before, how):
    with pytest.raises(ContentParseError) as info:
        run(family, text, how, errors="strict")
    assert "truncated" in str(info.value) or "could not parse" in str(info.value)
    assert (info.value.start, info.value.end) == span
    assert info.value.partial_message == message


@pytest.mark.parametrize("how", HOWS)
def test_earlier_complete_calls_are_kept(how):
    call = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
    text = "Sure." + call + call.replace("Paris", "Rome")[:-len("</arg_value>\n</tool_call>")]
    message, _, diagnostics = run("glm4_5", text, how)
    assert message == {"role": "assistant", "content": "Sure.", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}
    start = 5 + len(call)
    assert diagnostics == [_truncated(start, len(text), text[start:])]


@pytest.mark.parametrize("how", HOWS)
def test_olmo3_cut_name_after_prose_in_the_section(how):
    """olmo3 ``<function_calls>ab cd``: ``cd`` may still become a call when the output ends, so
    it is truncated (strict raises, as for any cut call); it is never a call."""
    text = "<function_calls>ab cd"
    with pytest.raises(ContentParseError, match="call section|truncated"):
        run("olmo3", text, how, errors="strict")
    message, _, diagnostics = run("olmo3", text, how)
    # "ab " is text of the call section that no call accounts for: never dropped (docs/events.md,
    # "Text inside a call section"), so it is malformed and goes to the answer; "cd" is a cut call
    assert message == {"role": "assistant", "content": "ab "}
    assert diagnostics[0]["kind"] == "malformed" and diagnostics[0]["field"] is None
    assert (diagnostics[0]["start"], diagnostics[0]["end"], diagnostics[0]["text"]) == (16, 19, "ab ")
    assert diagnostics[1:] == [_truncated(19, 21, "cd", "its value ended")]


def test_json_body_without_its_closer_is_whole():
    """A self-delimiting body the end closed (a stop token the engine stripped) keeps its value
    when the body holds a whole JSON value: the JSON's own end says it is complete."""
    for family, text in (("qwen3", '<tool_call>{"name": "f", "arguments": {"a": 1}}'),
                         ("firefunction_v2", ' functools[{"name": "f", "arguments": {"a": 1}}]')):
        for errors in ("strict", "recover"):
            message, _, diagnostics = run(family, text, "chars", errors)
            assert message["tool_calls"] == [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]
            assert diagnostics == []


# --- the OpenAI adapter with recover_arguments="stream" ------------------------------------------

def _accumulate(chunks: list[dict]) -> tuple[str, dict, list]:
    content, calls, finish = "", {}, []
    for chunk in chunks:
        choice = chunk["choices"][0]
        delta = choice["delta"]
        content += delta.get("content") or ""
        for call in delta.get("tool_calls") or []:
            got = calls.setdefault(call["index"], {"name": "", "arguments": ""})
            function = call.get("function") or {}
            got["name"] += function.get("name") or ""
            got["arguments"] += function.get("arguments") or ""
        if choice["finish_reason"]:
            finish.append(choice["finish_reason"])
    return content, calls, finish


ISSUE_TEXT = "Hi<|python_tag|>python.call(code=1 2)<|eom_id|>"
DOTS_TEXT = 'Hi<dots_function_call>{"name": "get_weather", "arguments": {"city": 1 2}}</dots_function_call>'
# family, output, the malformed region's raw text (None: the output has no call region)
ADAPTER = [("llama3_json", ISSUE_TEXT, "<|python_tag|>python.call(code=1 2)"),
           ("dots", ISSUE_TEXT, None),
           ("dots", DOTS_TEXT, '{"name": "get_weather", "arguments": {"city": 1 2}}')]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("family,text,raw", ADAPTER, ids=[f"{a[0]}-{i}" for i, a in enumerate(ADAPTER)])
def test_stream_mode_malformed_call_is_content_or_a_named_call_never_both(family, text, raw, how):
    """``Hi<|python_tag|>python.call(code=1 2)<|eom_id|>`` (and dots' own call syntax) with
    ``recover_arguments="stream"``: what the stream sends adds up to the adapter's message
    (``openai_message()``); a call already sent is kept and a ``streamed-call-malformed``
    diagnostic names it, and then its raw text is not also content; else the raw text is content,
    as in the parser's message, and no call is sent (docs/openai.md)."""
    module = generated(family)
    stream = ChatCompletionStream(module.ResponseParser("", errors="recover"), recover_arguments="stream",
                                  ids=lambda n: f"call_{n}", completion_id="x", created=0)
    chunks = []
    for piece in chunkings(text, text)[how]:
        chunks += stream.feed(piece)
    chunks += stream.finalize()
    content, calls, finish = _accumulate(chunks)
    message = stream.openai_message()
    assert content == (message.get("content") or "")
    assert [(c["name"], c["arguments"]) for c in calls.values()] == [
        (c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    kept = [d for d in stream.diagnostics if d.get("kind") == "streamed-call-malformed"]
    parsed = module.parse_response(text, prefix="", errors="recover")
    assert parsed == {"role": "assistant", "content": "Hi" + raw if raw else text}
    if calls:
        assert finish == ["tool_calls"] and content == "Hi"
        assert [(d["cause"], d["text"]) for d in kept] == [("malformed", raw)]
    else:
        assert finish == ["stop"] and kept == [] and content == parsed["content"]
    if raw and how == "chars":
        assert calls  # the name went out before the body turned out malformed


# --- the property: every catalogue family's outputs cut at every point -----------------------------

#: RESPC_TRUNCATION_SWEEP=1: every own case, corpus vector and peer vector (../shared/corpus) with
#: tool calls; by default the first own case with tool calls of each family (62 outputs, ~2 s)
SWEEP = bool(__import__("os").environ.get("RESPC_TRUNCATION_SWEEP"))


def _samples() -> list:
    found, seen = [], set()
    for path in sorted(FAMILY_DIR.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for case in data["cases"]:
            if case["message"].get("tool_calls") and (SWEEP or data["family"] not in seen):
                seen.add(data["family"])
                found.append(pytest.param(data["family"], case["prefix"], case["text"], case.get("tools"),
                                          id=f"{data['family']}/{case['name']}"))
    if SWEEP:
        found += [pytest.param(v["family"], v["prefix"], v["text"], v.get("tools"), id=v["id"])
                  for v in load_jsonl(CORPUS) if v["expect"]["message"].get("tool_calls")]
        for name in ("peer_vectors.jsonl", "peer_vectors2.jsonl"):
            found += [pytest.param(v["family"], PEER_PREFIX.get(v["id"], v["prefix"]), v["text"], v.get("tools"),
                                   id=v["id"])
                      for v in load_jsonl(SHARED / "corpus" / name)
                      if v["family"] in CATALOGUE_TEMPLATES and v["id"] not in PEER_XFAIL
                      and v["id"] not in PEER2_XFAIL
                      and (v.get("expect") or {}).get("message", {}).get("tool_calls")]
    return found


def _parse(module, prefix: str, text: str, tools, errors: str, ledger: bool = False):
    parser = module.ResponseParser(prefix, tools, errors=errors, ledger=ledger)
    return whole.finish(parser, text), parser


def _from_reasoning(call: dict, full: dict) -> bool:
    """A call of a cut output that the whole output has as reasoning text: the format reads a
    call written in unclosed reasoning as a call (qwen3's ``end-if-unclosed``), and the cut
    output's reasoning is unclosed. It is complete in the cut text, so it may be returned."""
    return call["function"]["name"] in (full.get("reasoning_content") or "")


def check_calls(got: list, calls: list, full: dict) -> None:
    """No tool call carries a value the output did not finish: the calls of a cut output are the
    whole output's first calls, equal to them (a call not complete in the cut is absent)."""
    assert got == calls[:len(got)] or all(c in calls or _from_reasoning(c, full) for c in got)


def check_text(value: str, whole_value: str, cut: str, delimiter: list, shown: dict, key: str,
               starts: frozenset = frozenset(), held: int = 0) -> None:
    """No answer character is lost or invented. ``value`` (a text key of the cut output's
    message) is a prefix of the whole output's ``whole_value`` -- nothing from a cut call, nothing
    reordered -- and, for growing cuts, never shorter than before (text once given is kept); or
    it is such a prefix (up to the whitespace the whole output's value stripped before the
    delimiter) followed by the cut's last characters (before trailing whitespace) that the whole
    output consumed as a delimiter, or that began a region of the whole output (``starts``: a
    zero-width opener such as llama3_json's, whose body is its first character): the held beginning
    of a delimiter the cut left unfinished, which is text at the end of the output (docs/events.md,
    "truncated-delimiter")."""
    if whole_value.startswith(value):
        # text a longer cut takes back is in its truncated diagnostic (``held`` characters): the
        # beginning of an opener that the shorter cut ended inside, given back there as text
        assert len(value) + held >= shown.get(key, 0), f"{key} lost text: {value!r}"
        shown[key] = len(value)
        return
    for end in {len(cut), len(cut.rstrip())}:
        for j in range(1, min(len(value), end) + 1):
            if (cut[:end].endswith(value[-j:]) and whole_value.startswith(value[:-j].rstrip())
                    and (all(delimiter[i] for i in range(end - j, end)) or end - j in starts)):
                return
    raise AssertionError(f"{key} of the cut output is not the whole output's: {value!r} vs {whole_value!r}")


@pytest.mark.parametrize("family,prefix,text,tools", _samples())
def test_every_cut_point(family, prefix, text, tools):
    """Cut at every point, parsed in both modes: "recover" never raises, "strict" raises only
    ContentParseError; the calls and text keys of every cut obey check_calls and check_text
    (strict cuts against the strict parse of the whole output, when it has one)."""
    module = generated(family)
    full, parser = _parse(module, prefix, text, tools, "recover", ledger=True)
    calls = full.get("tool_calls") or []
    delimiter = [False] * len(text)
    for start, end, kind in parser.ledger:
        for i in range(max(start, 0), min(end, len(text))):
            delimiter[i] = kind == "delimiter"
    starts = frozenset(start for start, _, _ in parser.ledger)
    # the prompt's tail after its start anchor is read as the start of the response: a piece of an
    # opener it holds (functionary v3.2's '>>>') joins the cut's own held characters at the end
    anchors = [m.end() for m in module.ResponseParser.START_ANCHOR.finditer(prefix)] if prefix else []
    remainder = prefix[anchors[-1]:] if anchors else ""
    try:  # strict cuts are compared with the strict whole parse (no repairs there)
        strict_full = _parse(module, prefix, text, tools, "strict")[0]
    except ContentParseError:
        strict_full = None
    shown: dict = {}
    for k in range(len(text) + 1):
        cut = text[:k]
        message, cut_parser = _parse(module, prefix, cut, tools, "recover")
        held = sum(len(d.get("text") or "") for d in cut_parser.diagnostics if d["kind"] == "truncated")
        got = message.get("tool_calls") or []
        check_calls(got, calls, full)
        if any(c not in calls for c in got):
            continue  # a call in unclosed reasoning ended it: the text after it is answer here
        for key, value in message.items():
            if k == 0:
                # no output at all: the message is the reading of the prompt's tail after its start
                # anchor, which is parsed as the start of the response (functionary v3.2's prompt
                # ends in '>>>': alone it is text) -- not a cut of this output
                break
            if key != "role" and isinstance(value, str) and isinstance(full.get(key, ""), str):
                if remainder and value.startswith(remainder) and not full.get(key, "").startswith(remainder):
                    value = value[len(remainder):]
                check_text(value, full.get(key, ""), cut, delimiter, shown, key, starts, held)
        try:
            strict, _ = _parse(module, prefix, cut, tools, "strict")
        except ContentParseError:
            continue
        if strict_full is not None:
            check_calls(strict.get("tool_calls") or [], strict_full.get("tool_calls") or [], strict_full)
