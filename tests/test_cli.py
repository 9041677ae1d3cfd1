"""The ``respc`` command line (README "Use").

* every vector of ../shared/conformance/hf.jsonl through ``respc parse`` (in process for all of
  them, through a real ``python -m respc`` subprocess for five);
* ``--events`` streams: events reach stdout while stdin is still open;
* ``respc compile`` and ``--check`` (fresh, stale, missing), bad usage, missing templates;
* the acceptance check: a module compiled into a temp folder, imported by path in another process,
  parses every ``qwen3`` corpus vector exactly, whole and one character at a time.

Exit status contract: 0 ok, 1 unparseable output or stale ``--check``, 2 bad template or usage;
errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import builtins
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import respc
import respc.runtime.errors
from respc.compiler.cli import main
from respc.compiler.load import catalogue_names
from support import CONFORMANCE, CONFORMANCE_DEVIATIONS, CORPUS, REPO, load_jsonl, missing, params

VECTORS = load_jsonl(CONFORMANCE)
needs_vectors = pytest.mark.skipif(not VECTORS, reason=missing(CONFORMANCE))

QWEN3 = REPO / "templates" / "qwen3.json"
RESPC = [sys.executable, "-m", "respc"]


def _id(vector: dict) -> str:
    return vector["id"]


def _write_case(folder: Path, vector: dict) -> list[str]:
    """Write template, output, prefix (and tools) of ``vector``; return the ``parse`` argv."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "template.json").write_text(json.dumps(vector["template"]), encoding="utf-8")
    # bytes, so no newline translation can touch the text
    (folder / "output.txt").write_bytes(vector["text"].encode("utf-8"))
    (folder / "prefix.txt").write_bytes(vector["prefix"].encode("utf-8"))
    argv = ["parse", str(folder / "template.json"), str(folder / "output.txt"),
            "--prefix-file", str(folder / "prefix.txt")]
    if vector.get("tools"):
        (folder / "tools.json").write_text(json.dumps(vector["tools"]), encoding="utf-8")
        argv += ["--tools", str(folder / "tools.json")]
    return argv


def _check_result(vector: dict, code: int, out: str, err: str) -> None:
    expect = vector["expect"]
    assert "Traceback" not in err
    if vector["id"] in CONFORMANCE_DEVIATIONS:
        # D7/D8: respc refuses the body the reference reads (tests/cases/conformance_deviations.json)
        assert code == 1 and out == "", err
        assert err.startswith("respc: cannot parse output: ContentParseError: "
                              + CONFORMANCE_DEVIATIONS[vector["id"]]["error"]), err
        return
    if "message" in expect:
        # strict prints what the parser recorded without raising: only a prompt without the
        # start anchor (whose text the reference parses as the response's start)
        assert code == 0, err
        # and, where a field that does not repeat is written again, what was overwritten (docs/events.md,
        # "Overwritten values")
        lines = err.splitlines()
        assert all(line.startswith(("respc: prefix-without-anchor at 0-0: ", "respc: overwritten at "))
                   for line in lines), err
        assert ("without-anchor" in vector["id"]) == any("prefix-without-anchor" in line for line in lines), err
        assert json.loads(out) == expect["message"]
        return
    expected_code = 2 if expect["stage"] == "load" else 1
    assert code == expected_code, err
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("respc: ")
    assert expect["match"] in err
    if expect["stage"] == "load":
        assert "bad template" in err
    else:
        assert err.startswith("respc: cannot parse output: ")
        # the class named is the expected builtin or one of ours deriving from it
        name = err[len("respc: cannot parse output: "):].split(":", 1)[0]
        expected = {"ValueError": ValueError, "KeyError": KeyError, "RuntimeError": RuntimeError}[expect["error"]]
        assert issubclass(getattr(respc.runtime.errors, name, None) or getattr(builtins, name), expected), err


# -- every conformance vector, in process ---------------------------------------------------------
@needs_vectors
@pytest.mark.parametrize("vector", params(VECTORS, CONFORMANCE, _id))
def test_parse_vector_in_process(vector, tmp_path, capsys):
    argv = _write_case(tmp_path, vector)
    code = main(argv)
    captured = capsys.readouterr()
    _check_result(vector, code, captured.out, captured.err)


def _subprocess_sample() -> list[dict]:
    """Five vectors: plain, with tools, with a prefix, a load error, a parse error."""
    msg = [v for v in VECTORS if "message" in v["expect"]]
    picks = [
        next((v for v in msg if not v.get("tools") and not v["prefix"]), None),
        next((v for v in msg if v.get("tools")), None),
        next((v for v in msg if v["prefix"]), None),
        next((v for v in VECTORS if v["expect"].get("stage") == "load"), None),
        next((v for v in VECTORS if v["expect"].get("stage") == "parse"), None),
    ]
    return [v for v in picks if v is not None]


SUBPROCESS_VECTORS = _subprocess_sample() if VECTORS else []


@needs_vectors
@pytest.mark.parametrize("vector", params(SUBPROCESS_VECTORS, CONFORMANCE, _id))
def test_parse_vector_subprocess(vector, tmp_path):
    argv = _write_case(tmp_path, vector)
    proc = subprocess.run(RESPC + argv, capture_output=True, text=True, encoding="utf-8", timeout=60)
    _check_result(vector, proc.returncode, proc.stdout, proc.stderr)


def test_subprocess_sample_covers_every_kind():
    if not VECTORS:
        pytest.skip(missing(CONFORMANCE))
    assert len(SUBPROCESS_VECTORS) == 5


# -- parse: a fixed literal case, stdin, --prefix --------------------------------------------------
def test_parse_bundled_example(capsys):
    code = main(["parse", str(QWEN3), str(REPO / "examples" / "qwen3_output.txt"),
                 "--prefix-file", str(REPO / "examples" / "qwen3_prefix.txt"),
                 "--tools", str(REPO / "examples" / "tools.json")])
    captured = capsys.readouterr()
    assert (code, captured.err) == (0, "")
    message = json.loads(captured.out)
    assert sorted(message) == ["content", "reasoning_content", "role", "tool_calls"]
    assert message["role"] == "assistant"
    assert len(message["tool_calls"]) == 2
    assert all(call["type"] == "function" for call in message["tool_calls"])
    # the printed JSON is indented by two spaces and ends with a newline
    assert captured.out.startswith('{\n  "role": "assistant"')
    assert captured.out.endswith("}\n")


def test_parse_openai_prints_the_sse_of_the_chunks(capsys, monkeypatch):
    """``respc parse --openai`` (written with ``feed_sse``/``finalize_sse``) prints byte for byte
    ``data: <json.dumps(chunk)>`` and a blank line per chunk of ``ChatCompletionStream``, then
    ``data: [DONE]``: the output it printed before ``feed_sse`` (ids and time fixed here)."""
    import uuid

    import respc.openai as adapter
    from respc.generated import qwen3

    monkeypatch.setattr(adapter.uuid, "uuid4", lambda: uuid.UUID(int=7))
    monkeypatch.setattr(adapter.time, "time", lambda: 1234.5)
    output = REPO / "examples" / "qwen3_output.txt"
    prefix = (REPO / "examples" / "qwen3_prefix.txt").read_text(encoding="utf-8")
    tools = json.loads((REPO / "examples" / "tools.json").read_text(encoding="utf-8"))
    code = main(["parse", str(QWEN3), str(output), "--prefix-file", str(REPO / "examples" / "qwen3_prefix.txt"),
                 "--tools", str(REPO / "examples" / "tools.json"), "--openai"])
    captured = capsys.readouterr()
    assert (code, captured.err) == (0, "")
    stream = adapter.ChatCompletionStream(qwen3.ResponseParser(prefix, tools), model="respc", ids=lambda n: f"call_{n}")
    chunks = stream.feed(output.read_text(encoding="utf-8")) + stream.finalize()
    assert captured.out == "".join(f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    assert len(chunks) > 3 and '"id": "chatcmpl-00000000000000000000000000000007"' in captured.out


@pytest.mark.parametrize("mode", ["--openai", "--responses"])
def test_parse_openai_takes_errors_and_prints_diagnostics(tmp_path, capsys, mode):
    """``--errors`` reaches the parser behind ``--openai``/``--responses`` (it was ignored: a
    repairable call stopped the stream), and the parser's diagnostics go to stderr; the calls get
    the CLI's deterministic ids."""
    text = 'Hello.\n<tool_call>\n{"name": "f", "arguments": {"a": 1,}}\n</tool_call>'
    (tmp_path / "out.txt").write_text(text, encoding="utf-8")
    argv = ["parse", "qwen3", str(tmp_path / "out.txt"), "--prefix", "", mode]
    assert main([*argv, "--errors", "recover"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "respc: repaired at 7-69 field tool_calls: trailing comma before '}' removed\n"
    key = '"id": "call_0"' if mode == "--openai" else '"call_id": "call_0"'
    assert key in captured.out and "call_1" not in captured.out
    assert main(argv) == 1
    assert capsys.readouterr().err.startswith("respc: cannot parse output: ContentParseError: ")


def test_parse_responses_prints_the_events_as_sse(capsys, monkeypatch):
    """``respc parse --responses`` prints ``ResponsesStream``'s events in the Responses API's
    framing: ``event: <type>``, ``data: <json>``, a blank line; no ``[DONE]``. The openai
    package's own SSE decoder reads them back as the same events."""
    import uuid

    from openai._streaming import SSEDecoder

    import respc.openai as adapter
    from respc.generated import qwen3

    monkeypatch.setattr(adapter.uuid, "uuid4", lambda: uuid.UUID(int=9))
    monkeypatch.setattr(adapter.time, "time", lambda: 1234.5)
    output = REPO / "examples" / "qwen3_output.txt"
    prefix = (REPO / "examples" / "qwen3_prefix.txt").read_text(encoding="utf-8")
    code = main(["parse", str(QWEN3), str(output), "--prefix-file", str(REPO / "examples" / "qwen3_prefix.txt"),
                 "--responses"])
    captured = capsys.readouterr()
    assert (code, captured.err) == (0, "")
    stream = adapter.ResponsesStream(qwen3.ResponseParser(prefix), model="respc", ids=lambda n: f"call_{n}")
    events = stream.feed(output.read_text(encoding="utf-8")) + stream.finalize()
    assert captured.out == adapter.responses_sse(events)
    decoded = [(sse.event, sse.json()) for sse in SSEDecoder().iter_bytes(iter([captured.out.encode("utf-8")]))]
    assert decoded == [(e["type"], e) for e in events]
    assert decoded[0][0] == "response.created" and decoded[-1][0] == "response.completed"
    assert "[DONE]" not in captured.out and captured.out.startswith('event: response.created\ndata: {"type": ')


def test_parse_stdin_with_inline_prefix():
    proc = subprocess.run(RESPC + ["parse", "qwen3", "-", "--prefix", "<|im_start|>assistant\n<think>"],
                          input="I think.</think>\n\nCafé ☕<|im_end|>", capture_output=True, text=True,
                          encoding="utf-8", timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert json.loads(proc.stdout) == {"role": "assistant", "reasoning_content": "I think.", "content": "Café ☕"}
    # non-ASCII is printed as is, not \u-escaped
    assert "Café ☕" in proc.stdout


@pytest.mark.parametrize("extra", [[], ["--events"]])
def test_strict_parse_prints_the_diagnostics_on_stderr(tmp_path, capsys, extra):
    """A prompt without the start anchor goes to the answer (the reference's behaviour): strict
    keeps that output but says so on stderr, as recover does; stdout is what it was."""
    (tmp_path / "out.txt").write_text("hi", encoding="utf-8")
    argv = ["parse", "qwen3", str(tmp_path / "out.txt"), "--prefix", "You are a bot. <think>", *extra]
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0
    assert captured.err == ("respc: prefix-without-anchor at 0-0: the start anchor is not in the prefix; "
                            "the whole prefix was parsed as the start of the response\n")
    message = json.loads(captured.out.splitlines()[-1])["message"] if extra else json.loads(captured.out)
    assert message == {"role": "assistant", "content": "You are a bot.", "reasoning_content": "hi"}


@pytest.mark.parametrize("extra, message", [
    (["--events", "--openai"], "--events and --openai do not combine (each is a way to print the result: choose one)"),
    (["--openai", "--responses"], "--openai and --responses do not combine (each is a way to print the result: "
                                  "choose one)"),
    (["--events", "--jsonl", "in.jsonl"], "--events and --jsonl do not combine (each is a way to print the result: "
                                          "choose one)"),
    (["--workers", "2"], "--workers applies only with --jsonl (batch mode); without it, it would be ignored"),
    (["-o", "out.jsonl"], "-o/--output applies only with --jsonl (batch mode); without it, it would be ignored"),
    (["--no-progress"], "--progress/--no-progress applies only with --jsonl (batch mode); without it, it would be "
                        "ignored"),
    (["--model", "m"], "--model applies only with --openai or --responses; without them, it would be ignored"),
    (["--parents"], "--parents applies only with --html or --jsonl ... -o OUT.jsonl (there is no file to write)"),
])
def test_parse_options_that_would_be_ignored_are_usage_errors(tmp_path, capsys, extra, message):
    (tmp_path / "out.txt").write_text("hi", encoding="utf-8")
    assert main(["parse", "qwen3", str(tmp_path / "out.txt"), "--prefix", "", *extra]) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"respc: parse: {message}\n")


def test_every_command_help_has_a_description(capsys):
    for command in ("compile", "parse", "check", "grammar", "detect", "graph", "list"):
        assert main([command, "--help"]) == 0
        lines = capsys.readouterr().out.split("\n\n")
        assert len(lines) > 2 and not lines[1].startswith(("positional arguments", "options")), command


def test_jsonl_summary_counts_in_the_singular(tmp_path, capsys):
    (tmp_path / "in.jsonl").write_text('{"output": "<tool_call>{\\"name\\": \\"f\\"}</tool_call>", "prefix": ""}\n',
                                       encoding="utf-8")
    assert main(["parse", "qwen3", "--jsonl", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"),
                 "--workers", "1"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("respc: 1 record, 1 message with tool calls, 0 repairs, 0 failures, ")
    assert err.endswith(" records/s, 1 worker)\n")


def test_parse_unreadable_output_file_is_usage_error(tmp_path, capsys):
    code = main(["parse", "qwen3", str(tmp_path / "missing.txt"), "--prefix", ""])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("respc: cannot read output file ")


def test_parse_missing_prefix_file_is_usage_error(tmp_path, capsys):
    (tmp_path / "out.txt").write_text("hi", encoding="utf-8")
    code = main(["parse", "qwen3", str(tmp_path / "out.txt"), "--prefix-file", str(tmp_path / "nope.txt")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("respc: cannot read prefix file ")


def test_parse_tools_file_not_a_list(tmp_path, capsys):
    (tmp_path / "out.txt").write_text("hi", encoding="utf-8")
    (tmp_path / "tools.json").write_text('{"name": "f"}', encoding="utf-8")
    code = main(["parse", "qwen3", str(tmp_path / "out.txt"), "--prefix", "", "--tools", str(tmp_path / "tools.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"respc: tools file {str(tmp_path / 'tools.json')!r} must hold a JSON list of tools\n"


def test_parse_output_not_utf8_is_an_unreadable_file(tmp_path, capsys):
    (tmp_path / "out.bin").write_bytes(b"ok \xff\xfe")
    code = main(["parse", "qwen3", str(tmp_path / "out.bin"), "--prefix", ""])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (f"respc: cannot read output file {str(tmp_path / 'out.bin')!r}: not UTF-8 at byte 3 "
                   "(counted from the start): invalid start byte\n")


def test_parse_stdin_not_utf8_is_named(monkeypatch, capsys, tmp_path):
    (tmp_path / "out.bin").write_bytes(b"\xff")
    with open(tmp_path / "out.bin", "rb") as handle:
        monkeypatch.setattr(sys, "stdin", handle)
        assert main(["parse", "qwen3", "-", "--prefix", ""]) == 2
    assert capsys.readouterr().err == ("respc: cannot read standard input: not UTF-8 at byte 0 (counted from the "
                                       "start): invalid start byte\n")


def test_prefix_file_keeps_crlf(tmp_path, capsys):
    (tmp_path / "t.json").write_text(json.dumps({"start_anchor": "A:\r\n", "fields": {"content": {}}}),
                                     encoding="utf-8")
    (tmp_path / "prefix.txt").write_bytes(b"system junk A:\r\n")
    (tmp_path / "out.txt").write_bytes(b"hello")
    code = main(["parse", str(tmp_path / "t.json"), str(tmp_path / "out.txt"),
                 "--prefix-file", str(tmp_path / "prefix.txt")])
    assert code == 0
    assert json.loads(capsys.readouterr().out) == {"content": "hello"}


def test_template_not_utf8_is_bad_template(tmp_path, capsys):
    (tmp_path / "t.json").write_bytes(b'{"start_anchor": "\xe9", "fields": {"content": {}}}')
    (tmp_path / "out.txt").write_bytes(b"hello")
    code = main(["parse", str(tmp_path / "t.json"), str(tmp_path / "out.txt"), "--prefix", ""])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"respc: bad template: {tmp_path / 't.json'}: ")


def test_prefix_inline_keeps_crlf(tmp_path, capsys):
    (tmp_path / "t.json").write_text(json.dumps({"start_anchor": "A:\r\n", "fields": {"content": {}}}),
                                     encoding="utf-8")
    (tmp_path / "out.txt").write_bytes(b"hello")
    code = main(["parse", str(tmp_path / "t.json"), str(tmp_path / "out.txt"), "--prefix", "system junk A:\r\n"])
    assert code == 0
    assert json.loads(capsys.readouterr().out) == {"content": "hello"}


# -- --events: streamed as input arrives -----------------------------------------------------------
class _LineReader:
    """Collects a pipe's lines on a thread so the test can wait for them with a timeout."""

    def __init__(self, pipe) -> None:
        self.lines: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(pipe,), daemon=True)
        self._thread.start()

    def _pump(self, pipe) -> None:
        for line in iter(pipe.readline, ""):
            self.lines.put(line)
        self.lines.put(None)

    def take(self, count: int, timeout: float = 20.0) -> list[dict]:
        got = []
        for _ in range(count):
            line = self.lines.get(timeout=timeout)
            assert line is not None, f"stream ended early after {got}"
            got.append(json.loads(line))
        return got

    def nothing_more(self, wait: float = 0.3) -> bool:
        try:
            self.lines.get(timeout=wait)
        except queue.Empty:
            return True
        return False


def test_events_stream_before_eof():
    proc = subprocess.Popen(RESPC + ["parse", "qwen3", "-", "--prefix", "", "--events"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, encoding="utf-8", bufsize=1)
    try:
        reader = _LineReader(proc.stdout)
        steps = [
            ("<think>Let me", [
                {"type": "region_open", "field": "reasoning_content"},
                {"type": "region_chunk", "field": "reasoning_content", "text": "Let me", "dirty": False},
            ]),
            # "</th" may still become "</think>": held back, nothing about it is printed yet
            (" think</th", [
                {"type": "region_chunk", "field": "reasoning_content", "text": " think", "dirty": False},
            ]),
            ("ink>Hi<|im", [
                {"type": "region_close", "field": "reasoning_content", "value": "Let me think"},
                {"type": "region_open", "field": "content"},
                {"type": "region_chunk", "field": "content", "text": "Hi", "dirty": False},
            ]),
            ("_end|>", [
                {"type": "region_close", "field": "content", "value": "Hi"},
            ]),
        ]
        for chunk, expected in steps:
            proc.stdin.write(chunk)
            proc.stdin.flush()
            assert reader.take(len(expected)) == expected
            assert reader.nothing_more()
            assert proc.poll() is None  # still running: the events came before EOF
        proc.stdin.close()
        last = reader.take(1)
        assert last == [{"type": "message", "message": {"role": "assistant", "reasoning_content": "Let me think",
                                                         "content": "Hi"}}]
        assert reader.lines.get(timeout=20) is None
        assert proc.wait(timeout=20) == 0
        assert proc.stderr.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_events_with_prefix_initial_events_first(tmp_path, capsys):
    (tmp_path / "out.txt").write_text("done</think>ok", encoding="utf-8")
    code = main(["parse", "qwen3", str(tmp_path / "out.txt"), "--prefix", "<|im_start|>assistant\n<think>",
                 "--events"])
    captured = capsys.readouterr()
    assert (code, captured.err) == (0, "")
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert lines == [
        {"type": "region_open", "field": "reasoning_content"},
        {"type": "region_chunk", "field": "reasoning_content", "text": "done", "dirty": False},
        {"type": "region_close", "field": "reasoning_content", "value": "done"},
        {"type": "region_open", "field": "content"},
        {"type": "region_chunk", "field": "content", "text": "ok", "dirty": False},
        {"type": "region_close", "field": "content", "value": "ok"},
        {"type": "message", "message": {"role": "assistant", "reasoning_content": "done", "content": "ok"}},
    ]


def test_events_parse_error_exits_1_after_streaming(tmp_path, capsys):
    (tmp_path / "out.txt").write_text("<tool_call>{not json</tool_call>", encoding="utf-8")
    code = main(["parse", "qwen3", str(tmp_path / "out.txt"), "--prefix", "", "--events"])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("respc: cannot parse output: ")
    assert "Traceback" not in captured.err


@pytest.mark.parametrize("tail", ["", "</tool_call>"])
def test_events_before_a_strict_error_in_the_same_feed_are_printed(tmp_path, capsys, tail):
    """Issue 24 item 5: one feed whose later part raises printed none of its events; they come
    first now (exc.events), then the error on stderr. Without the closer the error comes from
    finalize, whose events before it (none here) are printed the same way."""
    text = 'Hi<tool_call>{"name": "f", "arguments": {}}</tool_call> then <tool_call>{bad}' + tail
    (tmp_path / "out.txt").write_text(text, encoding="utf-8")
    code = main(["parse", "qwen3", str(tmp_path / "out.txt"), "--prefix", "", "--events"])
    captured = capsys.readouterr()
    assert code == 1
    assert [json.loads(line) for line in captured.out.splitlines()] == [
        {"type": "region_open", "field": "content"},
        {"type": "region_chunk", "field": "content", "text": "Hi", "dirty": False},
        {"type": "region_close", "field": "content", "value": "Hi"},
        {"type": "region_open", "field": "tool_calls"},
        {"type": "region_chunk", "field": "tool_calls", "text": '{"name": "f", "arguments": {}}', "dirty": True},
        {"type": "region_close", "field": "tool_calls",
         "value": {"type": "function", "function": {"name": "f", "arguments": {}}}},
        {"type": "region_open", "field": "content"},
        {"type": "region_chunk", "field": "content", "text": " then ", "dirty": False},
        {"type": "region_close", "field": "content", "value": "then"},
        {"type": "region_open", "field": "tool_calls"},
        {"type": "region_chunk", "field": "tool_calls", "text": "{bad}", "dirty": True}]
    assert captured.err.startswith("respc: cannot parse output: ContentParseError: Field 'tool_calls'")
    assert captured.err.count("\n") == 1


def test_feed_error_carries_the_events_before_it():
    qwen3 = respc.compile_template(QWEN3)
    parser = qwen3.ResponseParser("")
    with pytest.raises(ValueError) as info:
        parser.feed("Hi<tool_call>{bad}</tool_call>")
    assert info.value.events == [
        {"type": "region_open", "field": "content"},
        {"type": "region_chunk", "field": "content", "text": "Hi", "dirty": False},
        {"type": "region_close", "field": "content", "value": "Hi"},
        {"type": "region_open", "field": "tool_calls"},
        {"type": "region_chunk", "field": "tool_calls", "text": "{bad}", "dirty": True}]


# -- compile and --check ---------------------------------------------------------------------------
@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A temp folder holding templates/qwen3.json, as the working directory."""
    (tmp_path / "templates").mkdir()
    shutil.copy(QWEN3, tmp_path / "templates" / "qwen3.json")
    monkeypatch.chdir(tmp_path)
    return tmp_path


#: the first two lines of every generated module (fixed: docs/security.md, "Generated code")
GENERATED = "# -*- coding: utf-8 -*-\n# @generated by respc -- do not edit.\n"

BANNER = [
    "# -*- coding: utf-8 -*-",
    "# @generated by respc -- do not edit.",
    "# template: templates/qwen3.json",
    "# template sha256: {sha}",
    "# regenerate: respc compile templates/qwen3.json -o q.py",
]


def test_compile_writes_module(workdir, capsys):
    assert main(["compile", "templates/qwen3.json", "-o", "q.py"]) == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "respc: wrote q.py (templates/qwen3.json, 3 fields)\n")
    source = (workdir / "q.py").read_text(encoding="utf-8")
    lines = source.splitlines()
    from respc.compiler.api import compile_source

    sha = compile_source(str(QWEN3)).template.sha256
    assert lines[:5] == [line.format(sha=sha) for line in BANNER]
    assert lines[5].startswith("# respc codegen ")
    assert str(workdir) not in source
    assert sorted(p.name for p in workdir.iterdir()) == ["q.py", "templates"]  # no .tmp left behind
    # deterministic: a second compile gives the same bytes
    assert main(["compile", "templates/qwen3.json", "-o", "q2.py"]) == 0
    assert (workdir / "q2.py").read_text(encoding="utf-8") == source.replace("-o q.py", "-o q2.py")


def test_compile_missing_folder_is_an_error_without_parents(workdir, capsys):
    assert main(["compile", "templates/qwen3.json", "-o", "out/deep/q.py"]) == 2
    assert capsys.readouterr().err == ("respc: cannot write 'out/deep/q.py': folder 'out/deep' does not exist "
                                       "(create it, or pass --parents)\n")
    assert sorted(p.name for p in workdir.iterdir()) == ["templates"]


def test_compile_into_new_subfolder_with_parents(workdir):
    assert main(["compile", "templates/qwen3.json", "-o", "out/deep/q.py", "--parents"]) == 0
    assert (workdir / "out" / "deep" / "q.py").read_text(encoding="utf-8").splitlines()[4] == \
        "# regenerate: respc compile templates/qwen3.json -o out/deep/q.py"


#: Every option that writes a file, with the argv that writes OUT (README "Use": one rule for all).
_WRITERS = {
    "compile -o": lambda out: ["compile", "templates/qwen3.json", "-o", out],
    "graph -o": lambda out: ["graph", "templates/qwen3.json", "-o", out],
    "parse --html": lambda out: ["parse", "templates/qwen3.json", "in.txt", "--prefix", "", "--html", out],
    "parse --jsonl -o": lambda out: ["parse", "templates/qwen3.json", "--jsonl", "in.jsonl", "-o", out,
                                     "--workers", "1"],
}


@pytest.mark.parametrize("option", list(_WRITERS))
def test_every_output_option_refuses_a_missing_folder(workdir, capsys, option):
    (workdir / "in.txt").write_text("hi", encoding="utf-8")
    (workdir / "in.jsonl").write_text('{"output": "hi", "prefix": ""}\n', encoding="utf-8")
    (workdir / "afile").write_text("", encoding="utf-8")
    before = sorted(p.name for p in workdir.iterdir())
    assert main(_WRITERS[option]("out/deep/x")) == 2
    assert capsys.readouterr().err == ("respc: cannot write 'out/deep/x': folder 'out/deep' does not exist "
                                       "(create it, or pass --parents)\n")
    assert main(_WRITERS[option]("afile/sub/x")) == 2
    assert capsys.readouterr().err == "respc: cannot write 'afile/sub/x': 'afile' is a file, not a folder\n"
    assert main([*_WRITERS[option]("afile/sub/x"), "--parents"]) == 2
    assert capsys.readouterr().err == "respc: cannot write 'afile/sub/x': 'afile' is a file, not a folder\n"
    assert sorted(p.name for p in workdir.iterdir()) == before
    assert main([*_WRITERS[option]("out/deep/x"), "--parents"]) == 0
    assert (workdir / "out" / "deep" / "x").stat().st_size > 0


def test_check_fresh_exits_0(workdir, capsys):
    assert main(["compile", "templates/qwen3.json", "-o", "q.py"]) == 0
    before = (workdir / "q.py").read_bytes()
    capsys.readouterr()
    assert main(["compile", "templates/qwen3.json", "-o", "q.py", "--check"]) == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "")
    assert (workdir / "q.py").read_bytes() == before


def test_check_stale_exits_1_with_diff(workdir, capsys):
    assert main(["compile", "templates/qwen3.json", "-o", "q.py"]) == 0
    stale = (workdir / "q.py").read_text(encoding="utf-8") + "# a hand edit\n"
    (workdir / "q.py").write_text(stale, encoding="utf-8")
    capsys.readouterr()
    assert main(["compile", "templates/qwen3.json", "-o", "q.py", "--check"]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("--- q.py (checked in)\n+++ q.py (regenerated)\n@@ ")
    assert "\n-# a hand edit\n" in captured.out
    assert captured.err == "respc: q.py is stale; run: respc compile templates/qwen3.json -o q.py\n"
    # --check writes nothing
    assert (workdir / "q.py").read_text(encoding="utf-8") == stale
    assert sorted(p.name for p in workdir.iterdir()) == ["q.py", "templates"]


def test_check_stale_after_template_change(workdir, capsys):
    assert main(["compile", "templates/qwen3.json", "-o", "q.py"]) == 0
    doc = json.loads((workdir / "templates" / "qwen3.json").read_text(encoding="utf-8"))
    doc["defaults"] = {"role": "model"}
    (workdir / "templates" / "qwen3.json").write_text(json.dumps(doc), encoding="utf-8")
    capsys.readouterr()
    assert main(["compile", "templates/qwen3.json", "-o", "q.py", "--check"]) == 1
    out = capsys.readouterr().out
    assert "-DEFAULTS = {'role': 'assistant'}\n+DEFAULTS = {'role': 'model'}\n" in out


def test_check_missing_output_exits_1_and_writes_nothing(workdir, capsys):
    assert main(["compile", "templates/qwen3.json", "-o", "q.py", "--check"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "respc: q.py does not exist; run: respc compile templates/qwen3.json -o q.py\n"
    assert not (workdir / "q.py").exists()


def test_check_catalogue_module_is_fresh(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert main(["compile", "templates/qwen3.json", "-o", "generated/qwen3.py", "--check"]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("argv", [
    [],
    ["compile"],
    ["compile", "qwen3"],                      # -o is required
    ["frobnicate"],
    ["parse", "qwen3"],                        # --prefix / --prefix-file is required
    ["parse", "qwen3", "-", "--prefix", "", "--prefix-file", "p.txt"],  # mutually exclusive
    ["compile", "qwen3", "-o", "q.py", "--bogus"],
], ids=["nothing", "compile-bare", "compile-no-o", "unknown-command", "parse-no-prefix", "both-prefixes",
        "unknown-option"])
def test_bad_usage_exits_2(argv, workdir, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    # one line in the style of every respc error: "respc: [COMMAND: ]MESSAGE (see respc [COMMAND] --help)"
    assert re.fullmatch(r"respc: (?:(compile|parse): )?.+ \(see respc(?: (compile|parse))? --help\)\n", captured.err)
    assert "Traceback" not in captured.err
    assert not (workdir / "q.py").exists()


def test_help_exits_0(capsys):
    assert main(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: respc ")


def test_missing_template_exits_2_one_line(workdir, capsys):
    assert main(["compile", "missing.json", "-o", "q.py"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "respc: bad template: missing.json: no such file or directory\n"
    assert not (workdir / "q.py").exists()


def test_unknown_catalogue_name_exits_2_one_line(workdir, capsys):
    assert main(["parse", "no_such_family", "-", "--prefix", ""]) == 2
    err = capsys.readouterr().err
    assert err == ("respc: bad template: no_such_family: no such file, and no catalogue template of that name "
                   f"(`respc list` shows the {len(catalogue_names())} catalogue templates)\n")


def test_mistyped_catalogue_name_says_did_you_mean(workdir, capsys):
    assert main(["parse", "qwen33", "-", "--prefix", ""]) == 2
    assert capsys.readouterr().err == ("respc: bad template: qwen33: no such file, and no catalogue template of "
                                       "that name (did you mean 'qwen3' or 'qwen3_5'? `respc list` shows them "
                                       "all)\n")


def test_missing_template_subprocess(tmp_path):
    proc = subprocess.run(RESPC + ["compile", "missing.json", "-o", "q.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == "respc: bad template: missing.json: no such file or directory\n"
    assert list(tmp_path.iterdir()) == []


def test_bad_usage_subprocess(tmp_path):
    proc = subprocess.run(RESPC + ["compile", "qwen3"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == ("respc: compile: the following arguments are required: -o/--output "
                           "(see respc compile --help)\n")
    assert "Traceback" not in proc.stderr


def test_check_command_ok(capsys):
    assert main(["check", "qwen3"]) == 0
    assert capsys.readouterr().out == (
        "note: field 'content' strips each piece, then joins them with '': the whitespace between two pieces is "
        "lost ('In Python:\\n' and '>>> print(1)' give 'In Python:>>> print(1)'); a join such as '\\n', or "
        "content_args {\"strip\": false}, keeps it\n"
        "warning: [payload-delimiter] field 'tool_calls' key 'close': a JSON string value can hold '</tool_call>', "
        "which ends the region early (the model need not escape it) (example: "
        "'<tool_call>{\"code\": \"x = \\'</tool_call>\\'\"}</tool_call>')\n"
        "templates/qwen3.json: ok (3 fields, 3 states, 1 warning)\n")


def test_check_command_bad_template(tmp_path, capsys):
    (tmp_path / "t.json").write_text('{"start_anchor": "a", "fields": {"x": {"open": ""}}}', encoding="utf-8")
    assert main(["check", str(tmp_path / "t.json")]) == 2
    err = capsys.readouterr().err
    assert err == (f"respc: bad template: {tmp_path / 't.json'}, field 'x', key 'open': "
                   "'open' literals cannot be empty strings\n")


# -- the acceptance check ------------------------------------------------------------------
QWEN3_CORPUS = [v for v in load_jsonl(CORPUS) if v.get("family") == "qwen3"]

_IMPORT_AND_PARSE = textwrap.dedent("""
    import importlib.util, json, sys
    spec = importlib.util.spec_from_file_location("q", "q.py")
    q = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(q)
    results = {}
    for vector in json.load(sys.stdin):
        whole = q.parse_response(vector["text"], prefix=vector["prefix"])
        parser = q.ResponseParser(vector["prefix"])
        for ch in vector["text"]:
            parser.feed(ch)
        chars = parser.finalize()[0]
        results[vector["id"]] = {"whole": whole, "chars": chars}
    print(json.dumps({"file": q.__file__, "results": results}))
""")


@pytest.mark.skipif(not QWEN3_CORPUS, reason=missing(CORPUS))
def test_acceptance_compiled_module_parses_qwen3_corpus(tmp_path):
    compiled = subprocess.run(RESPC + ["compile", str(QWEN3), "-o", "q.py"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60)
    assert (compiled.returncode, compiled.stdout) == (0, "")
    assert compiled.stderr == "respc: wrote q.py (templates/qwen3.json, 3 fields)\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.py"]
    source = (tmp_path / "q.py").read_text(encoding="utf-8")
    banner = source.splitlines()[:6]
    # the catalogue's own file, outside this folder: named as the catalogue entry, regenerated by name
    assert banner[2] == "# template: templates/qwen3.json"
    assert banner[4] == "# regenerate: respc compile qwen3 -o q.py"
    for text in (str(tmp_path), str(REPO), str(Path.home()), os.sep + "tmp" + os.sep, os.sep + "work" + os.sep):
        assert text not in source

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, "-c", _IMPORT_AND_PARSE], cwd=tmp_path, input=json.dumps(QWEN3_CORPUS),
                         capture_output=True, text=True, encoding="utf-8", timeout=60, env=env)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert Path(report["file"]).resolve() == (tmp_path / "q.py").resolve()  # the file, not respc.generated
    assert sorted(report["results"]) == sorted(v["id"] for v in QWEN3_CORPUS)
    for vector in QWEN3_CORPUS:
        got = report["results"][vector["id"]]
        assert got["whole"] == vector["expect"]["message"], vector["id"]
        assert got["chars"] == vector["expect"]["message"], vector["id"]


def test_acceptance_corpus_has_qwen3_vectors():
    if not CORPUS.is_file():
        pytest.skip(missing(CORPUS))
    assert len(QWEN3_CORPUS) == 7


def test_check_notes_greedy_optional_parts(capsys):
    assert main(["check", "ernie4_5"]) == 0
    assert capsys.readouterr().out == (
        "note: field 'reasoning_content' open_pattern '^\\\\s*(?:<think>\\\\s*)?|<think>\\\\s*': a greedy optional "
        "part may still grow, so a match waits while the buffered text could continue it (D2)\n"
        "note: field 'content' strips each piece, then joins them with '': the whitespace between two pieces is "
        "lost ('In Python:\\n' and '>>> print(1)' give 'In Python:>>> print(1)'); a join such as '\\n', or "
        "content_args {\"strip\": false}, keeps it\n"
        "warning: [empty-match] field 'reasoning_content' key 'open_pattern': '^\\\\s*(?:<think>\\\\s*)?|<think>\\\\s*' "
        "matches the empty string: the region opens wherever it does, with no text of its own (intended for "
        "lookahead opens) (example: '')\n"
        "warning: [payload-delimiter] field 'tool_calls' key 'close': a JSON string value can hold '</tool_call>', "
        "which ends the region early (the model need not escape it) (example: "
        "'<tool_call>{\"code\": \"x = \\'</tool_call>\\'\"}</tool_call>')\n"
        "templates/ernie4_5.json: ok (3 fields, 3 states, 2 warnings)\n")


def test_stale_hint_repeats_the_paths_as_given(tmp_path, capsys):
    out = tmp_path / "sub" / "q.py"
    assert main(["compile", "qwen3", "-o", str(out), "--parents"]) == 0
    capsys.readouterr()
    out.write_text(out.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    assert main(["compile", "qwen3", "-o", str(out), "--check"]) == 1
    assert capsys.readouterr().err == f"respc: {out} is stale; run: respc compile qwen3 -o {out}\n"
    assert str(tmp_path) not in out.read_text(encoding="utf-8").split("\n", 4)[3]


def test_unwritable_output_is_one_line(tmp_path, capsys):
    (tmp_path / "adir").mkdir()
    assert main(["compile", "qwen3", "-o", str(tmp_path / "adir")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"respc: cannot write {str(tmp_path / 'adir')!r}: ") and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir"]


def test_output_file_that_is_a_directory_is_one_line(tmp_path, capsys):
    assert main(["parse", "qwen3", str(tmp_path), "--prefix", ""]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"respc: cannot read output file {str(tmp_path)!r}: ") and err.count("\n") == 1


def test_not_utf8_offset_counts_from_the_start_of_the_input(tmp_path, capsys):
    data = b"a" * 69000 + b"\xff" + b"tail"
    (tmp_path / "out.bin").write_bytes(data)
    assert main(["parse", "qwen3", str(tmp_path / "out.bin"), "--prefix", ""]) == 2
    assert capsys.readouterr().err == (f"respc: cannot read output file {str(tmp_path / 'out.bin')!r}: not UTF-8 "
                                       "at byte 69000 (counted from the start): invalid start byte\n")


def test_truncated_character_across_reads(tmp_path, capsys):
    data = b"a" * 65535 + "é".encode()[:1]
    (tmp_path / "out.bin").write_bytes(data)
    assert main(["parse", "qwen3", str(tmp_path / "out.bin"), "--prefix", ""]) == 2
    assert capsys.readouterr().err == (f"respc: cannot read output file {str(tmp_path / 'out.bin')!r}: not UTF-8 "
                                       "at byte 65535 (counted from the start): unexpected end of data\n")


def test_content_error_is_one_line_with_its_detail(capsys, tmp_path):
    (tmp_path / "out.txt").write_text('<tool_call>{"name": oops}</tool_call>', encoding="utf-8")
    assert main(["parse", "qwen3", str(tmp_path / "out.txt"), "--prefix", ""]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    # the cause first, then where, then the quoted body (issue 8)
    assert err == ("respc: cannot parse output: ContentParseError: Field 'tool_calls': json parser could not "
                   "parse region as JSON. | Error: Expecting value: line 1 column 10 (char 9) | at 0-37 (response offsets "
                   "of the region, delimiters included) | Content: '{\"name\": oops}'\n")


def test_html_page_error_says_which_span_it_marks(tmp_path, capsys):
    """The page marks the failing region's body; the strict error gives the region with its
    delimiters: each says which span its numbers are."""
    text = 'Hello.\n<tool_call>\n{"name": "f", "arguments": {"a": 1,}}\n</tool_call>'
    (tmp_path / "out.txt").write_text(text, encoding="utf-8")
    argv = ["parse", "qwen3", str(tmp_path / "out.txt"), "--prefix", ""]
    assert main(argv) == 1
    start, end = text.index("<tool_call>"), len(text)
    assert f" | at {start}-{end} (response offsets of the region, delimiters included) | " in capsys.readouterr().err
    assert main([*argv, "--html", str(tmp_path / "p.html")]) == 1
    body = start + len("<tool_call>")
    assert capsys.readouterr().err.endswith(
        f" (marked on the page at output offsets {body}-{end}: from the failing region's body to where parsing "
        f"stopped, its opener not included; see {tmp_path / 'p.html'})\n")


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"respc {respc.__version__}\n"


# -- issue 13: where -o writes ----------------------------------------------------------------------
def test_output_symlink_is_followed_to_its_target(workdir, capsys):
    (workdir / "real").mkdir()
    (workdir / "real" / "q.py").write_text("old\n", encoding="utf-8")
    (workdir / "link.py").symlink_to(workdir / "real" / "q.py")
    assert main(["compile", "qwen3", "-o", "link.py"]) == 0
    assert (workdir / "link.py").is_symlink()  # still a link ...
    written = (workdir / "real" / "q.py").read_text(encoding="utf-8")  # ... and its target holds the module
    assert written.startswith(GENERATED + "# template: templates/qwen3.json\n")
    assert sorted(p.name for p in (workdir / "real").iterdir()) == ["q.py"]


def test_dangling_symlink_creates_its_target(workdir):
    (workdir / "link.py").symlink_to(workdir / "target.py")
    assert main(["compile", "qwen3", "-o", "link.py"]) == 0
    assert (workdir / "link.py").is_symlink()
    assert (workdir / "target.py").read_text(encoding="utf-8").startswith(GENERATED)


def test_output_keeps_the_targets_mode(workdir):
    (workdir / "q.py").write_text("old\n", encoding="utf-8")
    os.chmod(workdir / "q.py", 0o640)
    assert main(["compile", "qwen3", "-o", "q.py"]) == 0
    assert (workdir / "q.py").stat().st_mode & 0o7777 == 0o640
    assert (workdir / "q.py").read_text(encoding="utf-8").startswith(GENERATED)


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink-to-fifo"])
def test_output_that_is_not_a_regular_file_is_refused(workdir, capsys, kind):
    what = "a directory" if kind == "directory" else "a FIFO"
    if kind == "directory":
        (workdir / "out").mkdir()
    elif kind == "fifo":
        os.mkfifo(workdir / "out")
    else:
        os.mkfifo(workdir / "pipe")
        (workdir / "out").symlink_to(workdir / "pipe")
    before = sorted(p.name for p in workdir.iterdir())
    assert main(["compile", "qwen3", "-o", "out"]) == 2
    assert capsys.readouterr().err == f"respc: cannot write 'out': it is {what}, not a regular file (give a file path)\n"
    assert sorted(p.name for p in workdir.iterdir()) == before  # nothing replaced, no temporary file left
    if kind != "directory":
        import stat

        assert stat.S_ISFIFO(os.stat(workdir / "out").st_mode)


def test_character_device_is_refused(capsys):
    # /dev/null is only stat'ed here: refused before anything is opened or renamed
    assert main(["compile", "qwen3", "-o", os.devnull]) == 2
    assert capsys.readouterr().err == (f"respc: cannot write {os.devnull!r}: it is a device, not a regular file "
                                       "(give a file path)\n")


def test_output_dash_is_standard_output(workdir, capsys):
    assert main(["compile", "qwen3", "-o", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    lines = captured.out.splitlines()
    assert lines[2] == "# template: templates/qwen3.json"
    assert lines[4] == "# regenerate: respc compile qwen3 -o -"
    assert sorted(p.name for p in workdir.iterdir()) == ["templates"]
    assert main(["compile", "qwen3", "-o", "-", "--check"]) == 2
    assert capsys.readouterr().err == "respc: --check needs a file to check, not - (standard output)\n"


def test_empty_output_is_a_usage_error(workdir, capsys):
    assert main(["compile", "qwen3", "-o", ""]) == 2
    assert capsys.readouterr().err == ("respc: compile: argument -o/--output: -o/--output must not be empty "
                                       "(a file path, or - for standard output) (see respc compile --help)\n")


def test_check_of_a_fifo_is_refused(workdir, capsys):
    os.mkfifo(workdir / "q.py")
    assert main(["compile", "qwen3", "-o", "q.py", "--check"]) == 2
    assert capsys.readouterr().err == "respc: cannot check 'q.py': it is a FIFO, not a regular file\n"


# -- issue 13: --check judges the template's SHA-256 and the code -------------------------------------
def test_check_catalogue_name_against_a_file_made_from_its_path(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert main(["compile", "qwen3", "-o", "generated/qwen3.py", "--check"]) == 0
    assert capsys.readouterr() == ("", "")


def test_check_from_another_folder_with_absolute_paths(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["compile", str(QWEN3), "-o", str(REPO / "generated" / "qwen3.py"), "--check"]) == 0
    assert capsys.readouterr() == ("", "")


def test_banner_is_the_same_from_any_folder_of_a_repository(tmp_path, monkeypatch, capsys):
    repo = tmp_path / "proj"
    (repo / ".git").mkdir(parents=True)
    (repo / "tpl").mkdir()
    (repo / "out").mkdir()
    shutil.copy(QWEN3, repo / "tpl" / "mine.json")
    monkeypatch.chdir(repo / "out")
    assert main(["compile", "../tpl/mine.json", "-o", "q.py"]) == 0
    from_out = (repo / "out" / "q.py").read_text(encoding="utf-8")
    assert from_out.splitlines()[2:5:2] == ["# template: tpl/mine.json",
                                            "# regenerate: respc compile tpl/mine.json -o out/q.py"]
    monkeypatch.chdir(repo)
    assert main(["compile", "tpl/mine.json", "-o", "out/q.py", "--check"]) == 0
    assert main(["compile", "tpl/mine.json", "-o", "out/q2.py"]) == 0
    assert (repo / "out" / "q2.py").read_text(encoding="utf-8") == from_out.replace("-o out/q.py", "-o out/q2.py")


def test_file_compiled_from_another_folder_checks_fresh_here(tmp_path, monkeypatch, capsys):
    (tmp_path / "a").mkdir()
    shutil.copy(QWEN3, tmp_path / "a" / "t.json")
    monkeypatch.chdir(tmp_path)  # no repository: paths are relative to the working directory
    assert main(["compile", "a/t.json", "-o", "a/q.py"]) == 0
    made = (tmp_path / "a" / "q.py").read_text(encoding="utf-8")
    assert made.splitlines()[4] == "# regenerate: respc compile a/t.json -o a/q.py"
    monkeypatch.chdir(tmp_path / "a")
    capsys.readouterr()
    assert main(["compile", "t.json", "-o", "q.py", "--check"]) == 0
    assert capsys.readouterr() == ("", "")
    # what matters still counts: another template is stale, and the diff shows only the code
    doc = json.loads((tmp_path / "a" / "t.json").read_text(encoding="utf-8"))
    doc["defaults"] = {"role": "model"}
    (tmp_path / "a" / "t.json").write_text(json.dumps(doc), encoding="utf-8")
    assert main(["compile", "t.json", "-o", "q.py", "--check"]) == 1
    out = capsys.readouterr().out
    assert "-# template sha256: " in out and "+DEFAULTS = {'role': 'model'}\n" in out
    assert "\n-# regenerate" not in out and "\n+# template:" not in out  # the banner's labels do not count


def test_check_tells_field_order_apart(tmp_path, monkeypatch, capsys):
    """Issue 23, item 2: templates differing only in the order of "fields" have different hashes
    (docs/security.md "Generated code")."""
    fields = {"a": {"open": "<t>", "close": "</t>", "content": "json"}, "b": {"open": "<t>", "close": "</t>"},
              "content": {}}
    first = {"respc_version": 2, "start_anchor": "<s>", "fields": fields}
    second = {"respc_version": 2, "start_anchor": "<s>", "fields": dict(reversed(list(fields.items())))}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.json").write_text(json.dumps(first), encoding="utf-8")
    assert main(["compile", "t.json", "-o", "q.py"]) == 0
    (tmp_path / "t.json").write_text(json.dumps(second), encoding="utf-8")
    capsys.readouterr()
    assert main(["compile", "t.json", "-o", "q.py", "--check"]) == 1
    out = capsys.readouterr().out
    assert "\n-# template sha256: " in out and "\n+# template sha256: " in out


def test_template_outside_the_folder_is_named_without_its_path(tmp_path, monkeypatch, capsys):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "here").mkdir()
    shutil.copy(QWEN3, tmp_path / "elsewhere" / "mine.json")
    monkeypatch.chdir(tmp_path / "here")
    assert main(["compile", str(tmp_path / "elsewhere" / "mine.json"), "-o", "q.py"]) == 0
    source = (tmp_path / "here" / "q.py").read_text(encoding="utf-8")
    assert source.splitlines()[2:5:2] == [
        "# template: mine.json",
        "# regenerate: respc compile mine.json -o q.py (run outside any git repository, so no path is given "
        "for mine.json: give its path)"]
    assert str(tmp_path) not in source and "elsewhere" not in source


def test_no_repository_at_all_is_not_called_this_repository(tmp_path, monkeypatch):
    """`respc compile mine.json -o ../elsewhere/q.py` with no `.git` above the output nor the working
    folder: the note says the command ran outside any git repository, not that q.py is outside "this
    repository" (there is none); run from a repository, the note is unchanged (README, "Use")."""
    (tmp_path / "here").mkdir()
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(QWEN3, tmp_path / "here" / "mine.json")
    monkeypatch.chdir(tmp_path / "here")
    assert main(["compile", "mine.json", "-o", str(tmp_path / "elsewhere" / "q.py")]) == 0
    line = (tmp_path / "elsewhere" / "q.py").read_text(encoding="utf-8").splitlines()[4]
    assert line == ("# regenerate: respc compile mine.json -o q.py (run outside any git repository, so no path "
                    "is given for q.py: give its path)")
    assert "this repository" not in line
    (tmp_path / "here" / ".git").mkdir()
    assert main(["compile", "mine.json", "-o", str(tmp_path / "elsewhere" / "q.py")]) == 0
    assert (tmp_path / "elsewhere" / "q.py").read_text(encoding="utf-8").splitlines()[4] == (
        "# regenerate: respc compile mine.json -o q.py (q.py is outside this repository: give its path)")
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert main(["compile", str(tmp_path / "here" / "mine.json"), "-o", "q2.py"]) == 0
    assert (tmp_path / "elsewhere" / "q2.py").read_text(encoding="utf-8").splitlines()[4] == (
        "# regenerate: respc compile mine.json -o q2.py (run outside any git repository, so no path is given "
        "for mine.json: give its path)")


def test_catalogue_banners_never_hold_a_host_detail():
    import getpass
    import socket

    details = {str(REPO), str(Path.home()), getpass.getuser(), socket.gethostname()}
    for path in sorted((REPO / "generated").glob("*.py")):
        banner = "".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:6])
        name = path.stem
        if name == "__init__":
            continue
        assert banner.splitlines()[4] == f"# regenerate: respc compile templates/{name}.json -o generated/{name}.py"
        assert not any(detail and len(detail) > 3 and detail in banner for detail in details), name
        assert re.search(r"\d{4}-\d{2}-\d{2}|\d\d:\d\d", banner) is None, name  # no date or time


# -- issue 13: help and discoverability --------------------------------------------------------------
def test_help_names_exit_codes_and_the_catalogue(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "exit status: 0 ok; 1 output that cannot be parsed, or a stale or missing --check target;" in out
    assert ("  (detect) no family fits exactly; 2 a bad template (a model folder whose chat template no\n"
            "  family fits exactly among them), bad usage, or a file that cannot be read or written;") in out
    assert "  130 interrupted (Ctrl-C)." in out
    from respc.compiler.load import catalogue_names

    listed = out[out.index("catalogue templates (use the name"):].split(":", 1)[1]
    assert [n.strip() for n in listed.replace("\n", " ").split(",")] == catalogue_names()
    assert "list" in out


def test_compile_and_parse_help_name_their_options(capsys):
    assert main(["compile", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("usage: respc compile [-h] -o OUT [--parents] [--target {python,js}] [--with-runtime] [--check] "
            "TEMPLATE") in out
    assert "exit 1 with a diff when OUT (-o/--output) is missing or stale" in out
    assert main(["parse", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "FILE model output file; - or omitted: standard input" in out
    assert "byte order mark" in out


def test_list_shows_each_family_with_its_models(capsys):
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    from respc.compiler.load import catalogue_names

    assert [line.split()[0] for line in lines] == catalogue_names()
    qwen3 = next(line for line in lines if line.startswith("qwen3 "))
    assert "Qwen3-0.6B, Qwen3-1.7B" in qwen3 and qwen3.endswith(" [thinking switch: enable_thinking]")
    assert "(no models listed)" not in "\n".join(lines)


def test_catalogue_file_matches_the_family_files():
    """templates/catalogue.jsonl (what the installed ``respc list`` reads) says what the family files say."""
    from respc.compiler.load import catalogue_entries

    families = {p.stem: json.loads(p.read_text(encoding="utf-8"))
                for p in sorted((REPO / "tests" / "cases" / "families").glob("*.json"))}
    lines = [json.loads(line) for line in (REPO / "templates" / "catalogue.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [entry["family"] for entry in lines] == sorted(families), "one line per family, in name order"
    for entry in lines:
        data = families[entry["family"]]
        assert entry == {"family": data["family"], "models": data["models"],
                         "thinking_switch": data["thinking_switch"]}, entry["family"]
    assert catalogue_entries() == lines


def test_check_counts_in_the_singular(tmp_path, capsys):
    (tmp_path / "t.json").write_text(json.dumps({"start_anchor": "A:", "fields": {"content": {"close_pattern": "x$"}}}), encoding="utf-8")
    assert main(["check", str(tmp_path / "t.json")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"{tmp_path / 't.json'}: ok (1 field, 1 state, 1 warning)"


def test_empty_template_is_a_usage_error(workdir, capsys):
    for argv in (["check", ""], ["compile", "", "-o", "q.py"], ["parse", "", "--prefix", ""]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.endswith("argument TEMPLATE: TEMPLATE must not be empty (a path, . for the current folder, or a "
                            f"catalogue name) (see respc {argv[0]} --help)\n")
    from respc.compiler.load import load_template
    from respc.runtime.errors import TemplateError

    with pytest.raises(TemplateError, match="an empty string names no template"):
        load_template("")


def test_catalogue_name_means_the_catalogue_beside_a_local_folder(workdir, capsys):
    """Issue 23, item 10
    (docs/security.md "Catalogue names"): a local folder named like a catalogue entry silently replaced it in the CLI
    and the API. A bare catalogue name is the catalogue; a path says so (``./qwen3``)."""
    import respc

    (workdir / "qwen3").mkdir()
    local = {"start_anchor": "A", "fields": {"planted": {}}}
    (workdir / "qwen3" / "tokenizer_config.json").write_text(json.dumps({"response_template": local}), encoding="utf-8")
    (workdir / "out.txt").write_text("<think>r</think>hello", encoding="utf-8")
    # the API
    assert respc.compile_template("qwen3").FIELD_NAMES == ("reasoning_content", "tool_calls", "content")
    assert respc.compile_template("./qwen3").FIELD_NAMES == ("planted",)
    assert respc.parse_response("x", "qwen3", prefix="")["content"] == "x"
    # the CLI: parse, compile and check read the catalogue and say the folder is not read
    assert main(["parse", "qwen3", "out.txt", "--prefix", ""]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["content"] == "hello"
    assert captured.err == ("respc: note: 'qwen3' is the catalogue template templates/qwen3.json; the folder 'qwen3' "
                            "here is not read (to use it, give its path: ./qwen3)\n")
    assert main(["parse", "./qwen3", "out.txt", "--prefix", ""]) == 0
    assert json.loads(capsys.readouterr().out) == {"planted": "<think>r</think>hello"}
    assert main(["compile", "qwen3", "-o", "q.py"]) == 0
    assert (workdir / "q.py").read_text(encoding="utf-8").splitlines()[2] == "# template: templates/qwen3.json"
    assert main(["check", "qwen3"]) == 0
    assert capsys.readouterr().out.endswith(": ok (3 fields, 3 states, 1 warning)\n")


def test_catalogue_name_beside_a_local_file(workdir):
    from respc.compiler.load import is_catalogue_name, load_template

    (workdir / "qwen3").write_text(json.dumps({"start_anchor": "A", "fields": {"planted": {}}}), encoding="utf-8")
    assert load_template("qwen3").source == "templates/qwen3.json"
    assert "the file 'qwen3' here is not read" in load_template("qwen3").note
    assert load_template("./qwen3").source == "qwen3"
    assert load_template(Path("qwen3")).source == "qwen3"  # a PathLike is a path
    assert [is_catalogue_name(x) for x in ("qwen3", "./qwen3", "qwen3.json", "no_such_family", Path("qwen3"))] == [
        True, False, False, False, False]


def test_leading_bom_is_dropped_from_output_prefix_and_tools(tmp_path, capsys):
    bom = b"\xef\xbb\xbf"
    (tmp_path / "out.txt").write_bytes(bom + "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"n\": \"3\"}}\n"
                                             "</tool_call>\ufeffok".encode())
    (tmp_path / "prefix.txt").write_bytes(bom + b"<|im_start|>assistant\n")
    (tmp_path / "tools.json").write_bytes(bom + json.dumps(
        [{"name": "f", "parameters": {"properties": {"n": {"type": "integer"}}}}]).encode())
    assert main(["parse", "qwen3", str(tmp_path / "out.txt"), "--prefix-file", str(tmp_path / "prefix.txt"),
                 "--tools", str(tmp_path / "tools.json")]) == 0
    message = json.loads(capsys.readouterr().out)
    assert message["content"] == "\ufeffok"  # only the leading mark is dropped
    assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": {"n": 3}}
    proc = subprocess.run(RESPC + ["parse", "qwen3", "--prefix", ""], input=bom + b"hi", capture_output=True,
                          timeout=60)
    assert json.loads(proc.stdout) == {"role": "assistant", "content": "hi"}


def test_template_file_with_a_bom_loads(tmp_path, capsys):
    (tmp_path / "t.json").write_bytes(b"\xef\xbb\xbf" + QWEN3.read_bytes())
    assert main(["check", str(tmp_path / "t.json")]) == 0


def test_tools_file_in_the_wrong_shape_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "out.txt").write_text("hi", encoding="utf-8")
    (tmp_path / "tools.json").write_text('[{"foo": 1}]', encoding="utf-8")
    assert main(["parse", "qwen3", str(tmp_path / "out.txt"), "--prefix", "", "--tools",
                 str(tmp_path / "tools.json")]) == 2
    assert capsys.readouterr().err.startswith(
        f"respc: tools file {str(tmp_path / 'tools.json')!r}: tools[0] has no string 'name' (keys: 'foo'); a tool is ")


# -- issue 13.5: the README quick start is what CI runs ---------------------------------------------
def test_ci_runs_exactly_the_readme_quick_start():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Quick start"):readme.index("\n## ", readme.index("## Quick start") + 1)]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    commands = [line for block in blocks for line in block.splitlines() if line.strip()]
    assert commands[0] == "python -m venv .venv && . .venv/bin/activate"
    assert len(commands) == 3 and commands[1].startswith('python -m pip install -e ".[test]" && python -m respc parse ')
    text = (REPO / ".ci" / "run").read_text(encoding="utf-8").replace("\\\n", " ")
    ci = [" ".join(line.split()) for line in text.splitlines()
          if line.strip() and not line.startswith(("#", "set ", "cd ", "export "))]
    # the quick start, in order and unchanged; every other line of .ci/run is a README command too
    start = ci.index(commands[0])
    assert ci[start:start + 3] == commands
    readme_lines = {" ".join(line.split()) for block in re.findall(r"```bash\n(.*?)```", readme, re.S)
                    for line in block.replace("\\\n", " ").splitlines()}
    for line in ci[:start] + ci[start + 3:]:
        command = line.split(" > ")[0].split(" && echo")[0].strip("{} ;")
        assert any(command in known or known in line for known in readme_lines if known), line


def test_output_outside_the_folder_is_named_with_a_note(tmp_path, monkeypatch):
    """`respc compile templates/qwen3.json -o /elsewhere/q.py` run from a folder without `.git` above
    the output: the banner's regenerate command names q.py by its file name only and says it is
    outside, rather than a command that would write another file (README, "Use")."""
    (tmp_path / "here" / "templates").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(QWEN3, tmp_path / "here" / "templates" / "mine.json")
    monkeypatch.chdir(tmp_path / "here")
    assert main(["compile", "templates/mine.json", "-o", str(tmp_path / "elsewhere" / "q.py")]) == 0
    source = (tmp_path / "elsewhere" / "q.py").read_text(encoding="utf-8")
    assert source.splitlines()[2:5:2] == [
        "# template: templates/mine.json",
        "# regenerate: respc compile templates/mine.json -o q.py (run outside any git repository, so no path "
        "is given for q.py: give its path)"]
    assert main(["compile", str(tmp_path / "here" / "templates" / "mine.json"), "-o", "q2.py"]) == 0
    monkeypatch.chdir(tmp_path)
    assert main(["compile", str(tmp_path / "here" / "templates" / "mine.json"), "-o",
                 str(tmp_path / "elsewhere" / "q3.py")]) == 0
    assert str(tmp_path) not in (tmp_path / "elsewhere" / "q3.py").read_text(encoding="utf-8")


def test_a_local_folder_named_like_a_family_is_regenerated_as_a_path(tmp_path, monkeypatch):
    """`respc compile ./qwen3 -o qwen3/p.py` for a model folder called qwen3: the banner says
    `./qwen3`, since the bare word `qwen3` means the catalogue template (README, "Use"), and running
    the regenerate command as written gives the same module."""
    import shlex

    folder = tmp_path / "qwen3"
    folder.mkdir()
    template = json.loads(QWEN3.read_text(encoding="utf-8"))
    template["fields"]["content"]["join"] = "\n"  # not the catalogue's template
    (folder / "tokenizer_config.json").write_text(json.dumps({"response_template": template}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["compile", "./qwen3", "-o", "qwen3/p.py"]) == 0
    first = (folder / "p.py").read_text(encoding="utf-8")
    assert first.splitlines()[2:5:2] == ["# template: ./qwen3", "# regenerate: respc compile ./qwen3 -o qwen3/p.py"]
    command = first.splitlines()[4].removeprefix("# regenerate: respc ")
    (folder / "p.py").unlink()
    assert main(shlex.split(command)) == 0
    assert (folder / "p.py").read_text(encoding="utf-8") == first
