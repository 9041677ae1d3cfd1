"""``respc check TEMPLATE --chat-template F``: the chat-template round trip (issue 10, compiler/roundtrip.py;
docs/writing-a-template.md "Against the model's chat template").

One test per outcome: a matching pair from the corpus (every sample parses back, exit 0), a
mismatching pair (error findings with field, sample, expected and got; exit 1), a chat template
that drops or cannot render part of a sample (warnings only, exit 0), and a bad path (exit 2).
Corpus chat templates are the real ones of ``../shared/corpus/chat_templates``; the inline ones
need no shared data.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import respc
from respc.compiler.api import compile_source
from respc.compiler.cli import main
from respc.compiler.roundtrip import roundtrip
from respc.compiler.samples import ChatTemplate, read_chat_template

from support import CHAT_TEMPLATES, QWEN_LIKE, missing

# A ChatML chat template that writes reasoning in <think> and tool calls as Hermes JSON.
CHATML = QWEN_LIKE


def _corpus(family: str) -> str:
    path = CHAT_TEMPLATES / f"{family}.jinja"
    if not path.is_file():
        pytest.skip(missing(CHAT_TEMPLATES))
    return str(path)


def _roundtrip_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if "[roundtrip]" in line]


def test_matching_pair_from_the_corpus(capsys):
    chat = _corpus("qwen3")
    assert main(["check", "qwen3", "--chat-template", chat]) == 0
    out = capsys.readouterr().out
    assert _roundtrip_lines(out) == []
    assert (f"note: round trip with {chat}: 4 of 4 sample messages parse back "
            "(content, reasoning, tool_call, two_tool_calls)") in out.splitlines()


def test_mismatching_pair_reports_each_key(capsys):
    chat = _corpus("qwen3")
    # hermes2pro has no reasoning field: qwen3's <think> block comes back inside the content
    assert main(["check", "hermes2pro", "--chat-template", chat]) == 1
    out = capsys.readouterr().out
    lines = _roundtrip_lines(out)
    assert (f"error: [roundtrip] key 'reasoning_content': sample 'reasoning' (system + user, arguments as a dict) "
            f"rendered by {chat} parses back differently: expected \"The user asks for a capital.\", got (missing) "
            "(example: '<think>\\nThe user asks for a capital.\\n</think>\\n\\nParis.<|im_end|>\\n')") in lines
    assert (f"error: [roundtrip] field 'content' key 'content': sample 'reasoning' (system + user, arguments as a "
            f"dict) rendered by {chat} parses back differently: expected \"Paris.\", got "
            "\"<think>\\nThe user asks for a capital.\\n</think>\\n\\nParis.\"") in lines[1]
    assert len(lines) == 5 and all(line.startswith("error: ") for line in lines)
    assert f"note: round trip with {chat}: 0 of 4 sample messages parse back (none)" in out
    assert out.splitlines()[-1] == "templates/hermes2pro.json: 5 errors, 1 warning"


def test_parts_the_chat_template_does_not_render_are_warnings(capsys):
    chat = _corpus("deepseek_r1")
    # DeepSeek-R1's chat template keeps only the text after </think> of a history turn
    assert main(["check", "deepseek_r1", "--chat-template", chat]) == 0
    out = capsys.readouterr().out
    assert _roundtrip_lines(out) == [
        f"warning: [roundtrip] field 'reasoning_content' key 'reasoning_content': sample 'reasoning': the chat "
        f"template {chat} does not render reasoning_content in a history turn (the render is the same without it); "
        "not checked (example: 'Paris.<｜end▁of▁sentence｜>')"]
    assert "3 of 4 sample messages parse back (content, tool_call, two_tool_calls)" in out
    chat = _corpus("gpt_oss")
    found = roundtrip(respc.compile_template("gpt_oss"), compile_source("gpt_oss").template,
                      read_chat_template(chat))
    assert [(f.level, f.field, f.key) for f in found] == [("warning", "tool_calls", "tool_calls")]
    assert "renders only the first of the 2 items of tool_calls in a history turn" in found[0].message
    assert found.passed == ("content", "reasoning", "tool_call")


def test_inline_pair_and_a_template_that_refuses_tool_calls(tmp_path: Path):
    found = roundtrip(respc.compile_template("qwen3"), compile_source("qwen3").template, ChatTemplate(CHATML, "x"))
    assert (list(found), found.passed) == ([], ("content", "reasoning", "tool_call", "two_tool_calls"))
    refusing = CHATML.replace("{% for c in m.tool_calls or [] %}",
                              "{% if m.tool_calls %}{{ raise_exception('no tool calls here') }}{% endif %}"
                              "{% for c in m.tool_calls or [] %}")
    found = roundtrip(respc.compile_template("qwen3"), compile_source("qwen3").template,
                      ChatTemplate(refusing, "refusing.jinja"))
    assert [(f.level, f.key) for f in found] == [("warning", "chat_template")] * 2
    assert found[0].message == ("sample 'tool_call': the chat template refusing.jinja cannot render it "
                                "(TemplateError: no tool calls here); not checked")
    assert json.loads(found[1].example)["tool_calls"][1]["function"]["arguments"] == {"city": "Tokyo", "days": 3}


def test_bad_chat_template_path(tmp_path: Path, capsys):
    assert main(["check", "qwen3", "--chat-template", str(tmp_path / "missing.jinja")]) == 2
    assert capsys.readouterr().err == (f"respc: --chat-template: {tmp_path / 'missing.jinja'}: "
                                       "no such file or directory\n")


# family -> why its own template does not read back what its own chat template writes (strict).
OWN_PAIR_ERRORS = {
    "phi4_mini": "the chat template writes history tool calls without the `functools` marker, as bare objects with "
                 "Python-repr arguments, unlike the model's output `functools[{...}]` that the template reads",
}


def _own_pairs() -> list:
    paths = sorted(CHAT_TEMPLATES.glob("*.jinja")) if CHAT_TEMPLATES.is_dir() else []
    repo = Path(__file__).resolve().parent.parent
    return [pytest.param(p, id=p.stem, marks=[pytest.mark.xfail(strict=True, reason=OWN_PAIR_ERRORS[p.stem])]
                         if p.stem in OWN_PAIR_ERRORS else [])
            for p in paths if (repo / "templates" / f"{p.stem}.json").is_file()]


@pytest.mark.skipif(not CHAT_TEMPLATES.is_dir(), reason=missing(CHAT_TEMPLATES))
@pytest.mark.parametrize("path", _own_pairs())
def test_own_template_reads_own_chat_template(path: Path):
    found = roundtrip(respc.compile_template(path.stem), compile_source(path.stem).template,
                      read_chat_template(path))
    assert [str(f) for f in found if f.level == "error"] == []
    assert found.passed, "no sample parsed back"
