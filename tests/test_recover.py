"""errors="recover": no model output raises; damaged regions end with region_malformed, every loss
is a diagnostic with offsets; errors="strict" errors say where and carry the message so far."""

from __future__ import annotations

import importlib
import json

import pytest

from respc.compiler.api import compile_template
from respc.runtime import ContentParseError

from support import chunkings, run_checked, run_stream

QWEN3 = importlib.import_module("respc.generated.qwen3")
HERMES = importlib.import_module("respc.generated.hermes2pro")

BAD = 'Answer.<tool_call>{"name": "f", "arguments": {"a": 1 2}}</tool_call>'


def run(module, prefix, text, how, errors="recover"):
    return run_checked(module, prefix, text, how, errors)


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_malformed_call_keeps_the_answer_and_its_raw_text(how):
    good = '<tool_call>{"name": "g", "arguments": {}}</tool_call>'
    message, events, diagnostics = run(QWEN3, "", BAD + good, how)
    raw = '<tool_call>{"name": "f", "arguments": {"a": 1 2}}</tool_call>'
    assert message == {"role": "assistant", "content": "Answer." + raw,
                       "tool_calls": [{"type": "function", "function": {"name": "g", "arguments": {}}}]}
    malformed = [e for e in events if e["type"] == "region_malformed"]
    assert len(malformed) == 1
    assert malformed[0]["field"] == "tool_calls"
    assert malformed[0]["into"] == "content"
    assert malformed[0]["text"] == raw
    assert (malformed[0]["start"], malformed[0]["end"]) == (7, 7 + len(raw))
    assert BAD[malformed[0]["start"]:malformed[0]["end"]] == raw
    assert [d["kind"] for d in diagnostics] == ["malformed"]
    assert diagnostics[0]["text"] == raw
    assert diagnostics[0]["message"].startswith("ContentParseError: Field 'tool_calls': json parser could not parse")


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_truncated_call_is_dropped_and_reported_earlier_calls_kept(how):
    calls = "".join(f'<tool_call>{{"name": "f{i}", "arguments": {{}}}}</tool_call>' for i in range(30))
    text = "Sure." + calls + '<tool_call>{"name": "f30", "argu'
    message, _, diagnostics = run(QWEN3, "", text, how)
    assert message["content"] == "Sure."
    assert [c["function"]["name"] for c in message["tool_calls"]] == [f"f{i}" for i in range(30)]
    assert [d["kind"] for d in diagnostics] == ["truncated"]
    cut = text.rindex("<tool_call>")
    assert (diagnostics[0]["start"], diagnostics[0]["end"]) == (cut, len(text))
    assert diagnostics[0]["text"] == text[cut:]


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_partial_delimiter_at_the_end_stays_text(how):
    """Answer text is never dropped (issue 24 item 2;
    docs/security.md "Model output: nothing lost, nothing guessed"): held text is text at the end, reported."""
    message, _, diagnostics = run(QWEN3, "", "Sure.<tool_c", how)
    assert message == {"role": "assistant", "content": "Sure.<tool_c"}
    assert diagnostics == [{"kind": "truncated-delimiter", "field": "content", "start": 5, "end": 12,
                            "message": "the stream ended inside what may be a delimiter (kept as text)",
                            "text": "<tool_c"}]


def test_partial_delimiter_at_the_end_stays_text_in_strict():
    message, _, diagnostics = run(QWEN3, "", "Sure.<tool_c", "whole", errors="strict")
    assert message == {"role": "assistant", "content": "Sure.<tool_c"}
    assert diagnostics == []


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_unclosed_reasoning_at_the_end_stays_reasoning(how):
    message, _, diagnostics = run(QWEN3, "<|im_start|>assistant\n<think>\n", "Still thinking about it", how)
    assert message == {"role": "assistant", "reasoning_content": "Still thinking about it"}
    assert diagnostics == []


def test_strict_error_says_where_and_keeps_the_message_so_far():
    parser = QWEN3.ResponseParser("")
    events = parser.feed("Answer.")
    assert events[-1]["text"] == "Answer."
    with pytest.raises(ValueError) as info:
        parser.feed(BAD[7:])
    error = info.value
    assert error.field == "tool_calls"
    assert (error.start, error.end) == (7, len(BAD))
    assert error.partial_message == {"role": "assistant", "content": "Answer."}


def test_strict_batch_error_names_the_item():
    with pytest.raises(ValueError) as info:
        QWEN3.parse_response(["fine", BAD, "also fine"], prefix="")
    assert info.value.item == 1
    assert "(batch item 1)" in info.value.__notes__


def test_recover_batch_gives_every_item():
    messages = QWEN3.parse_response(["fine", BAD], prefix="", errors="recover")
    assert messages[0] == {"role": "assistant", "content": "fine"}
    assert messages[1]["content"].startswith("Answer.<tool_call>")


def test_unknown_errors_value_is_refused():
    with pytest.raises(ValueError, match="errors must be one of"):
        QWEN3.ResponseParser("", errors="ignore")


def test_prefix_without_anchor_is_reported_and_ignored_in_recover():
    prompt = "You are a helpful assistant. Tell me a joke."
    strict = QWEN3.ResponseParser(prompt)
    strict.feed("Sure.")
    assert strict.finalize()[0]["content"] == prompt + "Sure."
    assert [d["kind"] for d in strict.diagnostics] == ["prefix-without-anchor"]
    recover = QWEN3.ResponseParser(prompt, errors="recover")
    recover.feed("Sure.")
    assert recover.finalize()[0] == {"role": "assistant", "content": "Sure."}
    assert [d["kind"] for d in recover.diagnostics] == ["prefix-without-anchor"]


class ByteTokenizer:
    """A byte-level tokenizer: one id per UTF-8 byte (a character may span several tokens)."""

    def decode(self, ids):
        return bytes(ids).decode("utf-8", errors="replace")


def test_token_ids_split_inside_a_character_are_decoded_whole():
    text = "é😀 ok"
    parser = QWEN3.ResponseParser("", tokenizer=ByteTokenizer())
    events = []
    for byte in text.encode("utf-8"):
        events += parser.feed([byte])
    message, final = parser.finalize()
    assert message == {"role": "assistant", "content": text}
    chunks = [e["text"] for e in events if e["type"] == "region_chunk"]
    assert "".join(chunks) == text
    assert all("\ufffd" not in c for c in chunks)


def test_offsets_follow_nested_and_prefix_text():
    template = {
        "respc_version": 2, "start_anchor": "<|a|>",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>"},
            "tool_calls": {"open": "<c>", "close": "</c>", "content": "json", "role": "tool_calls",
                           "inside": {"reasoning_content": "nest"}, "repeats": True},
            "content": {"repeats": True, "join": ""},
        },
    }
    module = compile_template(template)
    text = "<think>ab<c>{bad}</c>cd</think>ok"
    for how, chunks in chunkings(text, "nested").items():
        parser = module.ResponseParser("<|a|>", errors="recover")
        for chunk in chunks:
            parser.feed(chunk)
        message, _ = parser.finalize()
        assert message == {"reasoning_content": "abcd", "content": "<c>{bad}</c>ok"}, how
        [diag] = parser.diagnostics
        assert (diag["start"], diag["end"]) == (9, 21), how
        assert text[9:21] == "<c>{bad}</c>"


def test_hermes_recover_matches_strict_on_good_output():
    text = 'Hi.<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>'
    assert HERMES.parse_response(text, prefix="", errors="recover") == HERMES.parse_response(text, prefix="")
    message, events = run_stream(HERMES, "", list(text))
    assert not any(e["type"] == "region_malformed" for e in events)


# --- markup damage: policies of errors="recover" (runtime/stream.py _reopened, _probe) ---------

QWEN3_THINKING = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n"


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_opener_written_again_after_the_prompt_opened_it_is_consumed(how):
    message, _, diagnostics = run(QWEN3, QWEN3_THINKING, "<think>\nLet me think...</think>Answer.", how)
    assert message == {"role": "assistant", "reasoning_content": "Let me think...", "content": "Answer."}
    assert diagnostics == [{"kind": "repaired", "field": "reasoning_content", "start": 0, "end": 7,
                            "message": "opener '<think>' written again at the start of its region: consumed",
                            "text": "<think>"}]


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_doubled_leading_opener_is_consumed(how):
    message, _, diagnostics = run(QWEN3, "", "<think><think>Let me think</think>The answer is 42.", how)
    assert message == {"role": "assistant", "reasoning_content": "Let me think", "content": "The answer is 42."}
    assert [(d["kind"], d["start"], d["end"], d["text"]) for d in diagnostics] == [("repaired", 7, 14, "<think>")]


def test_opener_written_again_stays_text_in_strict():
    message, _, diagnostics = run(QWEN3, QWEN3_THINKING, "<think>\nLet me think...</think>Answer.", "whole",
                                  errors="strict")
    assert message["reasoning_content"] == "<think>\nLet me think..."
    assert diagnostics == []


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_doubled_call_opener_keeps_the_call(how):
    call = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    message, _, diagnostics = run(QWEN3, "", "Hi<tool_call>\n" + call, how)
    assert message == {"role": "assistant", "content": "Hi",
                       "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]}
    assert diagnostics == [{"kind": "repaired", "field": "tool_calls", "start": 2, "end": 13,
                            "message": "doubled opener '<tool_call>': the first one was consumed",
                            "text": "<tool_call>"}]


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_opener_in_prose_stays_content_in_recover(how):
    message, _, diagnostics = run(QWEN3, "", "The tag <tool_call> starts a call.", how)
    assert message == {"role": "assistant", "content": "The tag <tool_call> starts a call."}
    assert diagnostics == []


def test_prompt_opened_region_with_empty_response():
    message, _, diagnostics = run(QWEN3, QWEN3_THINKING, "", "whole")
    assert message == {"role": "assistant"}
    assert diagnostics == []


# --- JSON damage: repairs of errors="recover" (runtime/repair.py), one diagnostic per repair ----

JAMBA = importlib.import_module("respc.generated.jamba")

JSON_REPAIRS = [
    ('{"name": "f", "arguments": {"s": "a\nb\tc"}}', {"s": "a\nb\tc"},
     ["raw newline in a string escaped", "raw tab in a string escaped"]),
    ('{"name": "f", "arguments": {"x": None, "y": True, "z": False}}', {"x": None, "y": True, "z": False},
     ["Python literal None read as null", "Python literal True read as true",
      "Python literal False read as false"]),
    ('{"name": "f", "arguments": {"a": 1,},}', {"a": 1}, ["trailing comma before '}' removed"]),
    ("{'name': 'f', 'arguments': {'q': 'it\\'s \"x\"'}}", {"q": "it's \"x\""},
     ["single-quoted string read as a JSON string"]),
    ('{"name": "f", "arguments": {"a": [1, 2', {"a": [1, 2]}, ["missing ']}}' added at the region's close"]),
    ('{"name": "f", "arguments": {"s": "open', {"s": "open"},
     ["string still open at the region's close: closed", "missing '}}' added at the region's close"]),
    ('{"name": "f", "arguments": "{\\"city\\": \\"Paris\\"}"}', {"city": "Paris"},
     ["arguments of 'f' were a JSON-encoded string: decoded"]),
]


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
@pytest.mark.parametrize("body,arguments,notes", JSON_REPAIRS, ids=[str(i) for i in range(len(JSON_REPAIRS))])
def test_json_damage_is_repaired_and_reported(body, arguments, notes, how):
    raw = "<tool_call>" + body + "</tool_call>"
    message, events, diagnostics = run(QWEN3, "", "Hi" + raw + "Done.", how)
    assert message == {"role": "assistant", "content": "HiDone.",
                       "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": arguments}}]}
    assert diagnostics == [{"kind": "repaired", "field": "tool_calls", "start": 2, "end": 2 + len(raw),
                            "message": note, "text": raw} for note in notes]
    assert [e["type"] for e in events if e["type"] in ("region_close", "region_malformed")].count(
        "region_malformed") == 0


def test_json_damage_raises_in_strict():
    parser = QWEN3.ResponseParser("", errors="strict")
    with pytest.raises(ValueError, match="json parser could not parse"):
        parser.feed('Hi<tool_call>{"name": "f", "arguments": {"a": 1,}}</tool_call>')
        parser.finalize()


def test_truncated_json_is_not_completed():
    message, _, diagnostics = run(QWEN3, "", 'Hi<tool_call>{"name": "f", "arguments": {"a": [1, 2', "whole")
    assert message == {"role": "assistant", "content": "Hi"}
    assert [d["kind"] for d in diagnostics] == ["truncated"]


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_one_call_object_where_a_list_is_expected(how):
    raw = '<tool_calls>{"name": "f", "arguments": {"a": 1}}</tool_calls>'
    message, _, diagnostics = run(JAMBA, "", raw, how)
    assert message == {"role": "assistant",
                       "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]}
    assert diagnostics == [{"kind": "repaired", "field": "tool_calls", "start": 0, "end": len(raw),
                            "message": "one object where a list of them is expected: read as a list of one",
                            "text": raw}]


MINIMAX = importlib.import_module("respc.generated.minimax_m2")


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_closing_tag_inside_a_parameter_value(how):
    raw = ('<invoke name="f"><parameter name="content">A block ends with </parameter> on its own line.'
           '</parameter><parameter name="n">2</parameter></invoke>')
    message, _, diagnostics = run(MINIMAX, "", "<minimax:tool_call>" + raw + "</minimax:tool_call>", how)
    assert message == {"role": "assistant", "tool_calls": [{"type": "function", "function": {
        "name": "f", "arguments": {"content": "A block ends with </parameter> on its own line.", "n": "2"}}}]}
    assert diagnostics == [{"kind": "repaired", "field": "tool_calls", "start": 19, "end": 19 + len(raw),
                            "message": "value of 'content' holds its closing text '</parameter>': kept up to "
                                       "the last one", "text": raw}]


# --- respc parse --errors ----------------------------------------------------------------------

def test_cli_recover_prints_diagnostics_to_stderr(tmp_path, capsys):
    from respc.compiler.cli import main

    (tmp_path / "out.txt").write_text('Hi<tool_call>{"name": "f", "arguments": {"a": 1,}}</tool_call><tool_c',
                                      encoding="utf-8")
    code = main(["parse", "qwen3", str(tmp_path / "out.txt"), "--prefix", "", "--errors", "recover"])
    captured = capsys.readouterr()
    assert code == 0
    assert json.loads(captured.out) == {"role": "assistant", "content": "Hi<tool_c", "tool_calls": [
        {"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]}
    assert captured.err == ("respc: repaired at 2-62 field tool_calls: trailing comma before '}' removed\n"
                            "respc: truncated-delimiter at 62-69 field content: the stream ended inside what may "
                            "be a delimiter (kept as text)\n")


def test_cli_strict_error_puts_the_cause_before_the_cut_body(tmp_path, capsys):
    from respc.compiler.cli import main

    body = '{"name": "f", "arguments": {"a": "' + "x" * 600 + '" 1}}'
    (tmp_path / "out.txt").write_text("Hi<tool_call>" + body + "</tool_call>", encoding="utf-8")
    code = main(["parse", "qwen3", str(tmp_path / "out.txt"), "--prefix", "", "--errors", "strict"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1
    assert err.startswith("respc: cannot parse output: ContentParseError: Field 'tool_calls': json parser could "
                          "not parse region as JSON. | Error: Expecting ',' delimiter: line 1 column 637 (char 636)"
                          " | at 2-664 (response offsets of the region, delimiters included) | Content: '{\"name\": \"f\", ")
    assert err.endswith("…\n")
    assert len(err) == len("respc: cannot parse output: ContentParseError: ") + 400 + 1


QWEN3_CODER = importlib.import_module("respc.generated.qwen3_coder")


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
@pytest.mark.parametrize("body,where", [
    ("<parameter=a>\n1\n<parameter=b>\n2\n</parameter>\n</function>", "before the next '<parameter='"),
    ("<parameter=a>\n1\n</parameter>\n<parameter=b>\n2\n</function>", "before '</function>'"),
])
def test_missing_parameter_close_is_added(body, where, how):
    raw = "<tool_call>\n<function=f>\n" + body + "\n</tool_call>"
    message, _, diagnostics = run(QWEN3_CODER, "", raw, how)
    assert message == {"role": "assistant",
                       "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": "1", "b": "2"}}}]}
    assert diagnostics == [{"kind": "repaired", "field": "tool_calls", "start": 0, "end": len(raw),
                            "message": f"missing '</parameter>' added {where}", "text": raw}]


def test_missing_parameter_close_is_not_repaired_in_strict():
    # strict does not repair, and the parameter without its close is text no tag accounts for (D7):
    # an error, never a call that silently lacks "b"
    raw = "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n<parameter=b>\n2\n</function>\n</tool_call>"
    with pytest.raises(ContentParseError, match=r"text at offset 30 of the body matches no tag_pattern: "
                                                r"'<parameter=b>\\n2\\n</function>'"):
        run(QWEN3_CODER, "", raw, "whole", errors="strict")


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_doubled_closer_is_consumed(how):
    text = '<think>R</think></think>Answer.<tool_call>{"name": "f", "arguments": {}}</tool_call>\n</tool_call>Done'
    message, _, diagnostics = run(QWEN3, "", text, how)
    assert message == {"role": "assistant", "reasoning_content": "R", "content": "Answer.Done",
                       "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]}
    assert diagnostics == [
        {"kind": "repaired", "field": "reasoning_content", "start": 16, "end": 24,
         "message": "closer '</think>' written twice: the second one was consumed", "text": "</think>"},
        {"kind": "repaired", "field": "tool_calls", "start": 85, "end": 97,
         "message": "closer '</tool_call>' written twice: the second one was consumed", "text": "</tool_call>"},
    ]
    assert text[16:24] == "</think>" and text[85:97] == "</tool_call>"


GEMMA4 = importlib.import_module("respc.generated.gemma4")
DEEPSEEK_V3_2 = importlib.import_module("respc.generated.deepseek_v3_2")


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_string_delimiter_without_its_opening_one(how):
    raw = '<|tool_call>call:web_search{query:weather in Tokyo<|"|>,n:<|"|>3<|"|>}<tool_call|>'
    message, _, diagnostics = run(GEMMA4, "", raw, how)
    assert message == {"role": "assistant", "tool_calls": [{"type": "function", "function": {
        "name": "web_search", "arguments": {"query": "weather in Tokyo", "n": "3"}}}]}
    assert diagnostics == [{"kind": "repaired", "field": "tool_calls", "start": 0, "end": len(raw),
                            "message": "string closed by '<|\"|>' without its opening one: opening added",
                            "text": raw}]


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_json_object_as_the_body_of_tags(how):
    raw = ('<｜DSML｜invoke name="search">\n{"query": "x", "topn": 10}\n</｜DSML｜invoke>')
    text = "<｜DSML｜function_calls>\n" + raw + "\n</｜DSML｜function_calls>"
    message, _, diagnostics = run(DEEPSEEK_V3_2, "", text, how)
    assert message["tool_calls"] == [{"type": "function", "function": {
        "name": "search", "arguments": {"query": "x", "topn": 10}}}]
    assert [(d["kind"], d["message"], d["text"]) for d in diagnostics] == [
        ("repaired", "a JSON object as the body instead of tags: read as JSON", raw)]
