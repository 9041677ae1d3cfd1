"""``respc detect``: the catalogue family whose output format a chat template renders (issue 11;
docs/writing-a-template.md "Which family does my model use? (`respc detect`)").

Every real chat template in ``../shared/corpus/chat_templates/<family>.jinja`` (and in
``tests/cases/chat_templates/``, families added later) must detect its own family: as the best fit, or tied with families whose format these samples cannot tell apart (the
``hermes2pro`` and ``qwen2_5`` templates are the same). Known misses are strict xfails below, each
with what the two families' formats share. Reading a model directory, a tokenizer_config.json and a
list of named templates, the thinking switch, "none fits", and the CLI are tested without ../shared.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from respc.compiler.cli import main
from respc.compiler.detect import ChatTemplate, detect, read_chat_template

from support import QWEN_LIKE, SHARED, chat_templates

CHAT_TEMPLATES = SHARED / "corpus" / "chat_templates"
# the shared corpus's chat templates and this repository's own (tests/cases/chat_templates)
CORPUS_TEMPLATES = list(chat_templates().values())

# chat template -> why detect does not name its family (strict: a fix shows as XPASS). deepseek_r1,
# qwen3_5 and smollm3 were misses until detect parsed history turns after the text they follow and
# counted the thinking switch (see compiler/detect.py).
KNOWN_MISSES: dict[str, str] = {
    "phi4_mini": "Phi-4-mini-instruct's chat template renders history tool calls as bare JSON objects joined by "
                 "commas, without the functools[...] its prompt teaches (and a dict's arguments as a Python "
                 "repr): no family parses them back, so no family fits exactly (issue 24: an inexact fit is "
                 "never named); test_phi4_mini_nearest_fit checks what detect says instead",
}


# Like QWEN_LIKE, but the generation prompt pre-opens <think> and history turns drop their reasoning
# (what DeepSeek-R1's and Qwen3.5's chat templates do): the render of a history turn does not start
# with the generation prompt.
QWEN_PREOPEN = """{%- for m in messages %}<|im_start|>{{ m.role }}
{% if m.content %}{{ m.content }}{% endif %}{% for c in m.tool_calls or [] %}<tool_call>
{{ {"name": c.function.name, "arguments": c.function.arguments} | tojson }}
</tool_call>{% endfor %}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
<think>
{% endif %}"""


def _params():
    params = []
    for path in CORPUS_TEMPLATES:
        family = path.stem
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[family])] if family in KNOWN_MISSES else []
        params.append(pytest.param(path, marks=marks, id=family))
    return params


@pytest.mark.skipif(not CORPUS_TEMPLATES, reason="../shared/corpus/chat_templates is absent")
@pytest.mark.parametrize("path", _params())
def test_corpus_chat_template_detects_its_family(path: Path):
    found = detect(read_chat_template(path))
    assert found.family is not None, found.reason
    assert path.stem in found.tied, f"{path.stem}: detected {found.tied} ({found.reason})"
    # an exact fit: every rendered sample parsed back, and the tied families are among the exact ones
    assert found.failed[found.family] == () and set(found.tied) <= set(found.exact)


def test_known_misses_name_corpus_templates():
    if not (SHARED / "corpus" / "chat_templates").is_dir():
        pytest.skip("../shared/corpus/chat_templates is absent (the known misses are its templates)")
    assert sorted(set(KNOWN_MISSES) - {p.stem for p in CORPUS_TEMPLATES}) == []


def test_qwen_like_template_and_thinking_switch():
    found = detect(ChatTemplate(QWEN_LIKE, "inline"))
    assert found.family in {"qwen3", "smollm3"}
    assert "qwen3" in found.tied
    assert found.thinking_switch == "enable_thinking"
    assert found.scores["qwen3"][1] == 4        # all four samples parse back exactly
    assert found.scores["hermes2pro"][1] == 3   # no reasoning field: the reasoning sample is lost


def test_history_turn_parsed_after_the_text_it_follows():
    found = detect(ChatTemplate(QWEN_PREOPEN, "inline"))
    # Parsed after the generation prompt, every history turn would read as reasoning (the prompt
    # leaves <think> open): content and both tool-call samples parse back only after the common prefix.
    assert found.scores["qwen3"][1] == 3
    assert "qwen3" in found.tied and found.thinking_switch is None


def _corpus(family: str) -> Path:
    path = CHAT_TEMPLATES / f"{family}.jinja"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


def test_deepseek_r1_history_turns_and_switch_decide():
    found = detect(read_chat_template(_corpus("deepseek_r1")))
    # cogito has the same response template but a thinking switch this chat template lacks.
    assert (found.family, found.tied, found.thinking_switch) == ("deepseek_r1", ("deepseek_r1",), None)
    assert found.scores["deepseek_r1"][:4] == (True, 3, 8, True)  # reasoning is dropped from history
    assert found.scores["cogito"][:4] == (True, 3, 8, False)
    assert found.scores["deepseek_v3_1"][1] == 1                   # its tool-call syntax differs


def test_same_format_families_tie():
    found = detect(read_chat_template(_corpus("qwen3_5")))
    assert set(found.tied) == {"qwen3_5", "nemotron3_nano"}, found.reason
    assert "exact fits as well: qwen3_5" in found.reason
    found = detect(read_chat_template(_corpus("smollm3")))
    # No tools and no history reasoning rendered: only the turn format and the switch tell.
    assert "smollm3" in found.tied and "olmo3_think" not in found.tied
    assert all(found.scores[n][3] for n in found.tied) and found.thinking_switch == "enable_thinking"


def test_none_fits_says_why():
    found = detect(ChatTemplate("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}Bot:", "plain"))
    assert found.family is None and found.tied == ()
    assert found.reason == "plain: no catalogue family's start anchor occurs in the generation prompt"


def test_read_model_dir_tokenizer_config_and_named_templates(tmp_path: Path):
    config = {"chat_template": [{"name": "tool_use", "template": "x"}, {"name": "default", "template": QWEN_LIKE}],
              "bos_token": {"content": "<s>", "lstrip": False}, "eos_token": "<|im_end|>"}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    chat = read_chat_template(tmp_path)
    assert (chat.source, chat.bos_token, chat.eos_token) == (QWEN_LIKE, "<s>", "<|im_end|>")
    assert chat.origin == str(tmp_path / "tokenizer_config.json")
    (tmp_path / "chat_template.jinja").write_text("{{ 'jinja wins' }}", encoding="utf-8")
    chat = read_chat_template(tmp_path)
    assert (chat.source, chat.bos_token) == ("{{ 'jinja wins' }}", "<s>")


def test_read_errors(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="no chat_template.jinja"):
        read_chat_template(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text('{"bos_token": "<s>"}', encoding="utf-8")
    with pytest.raises(ValueError, match="key 'chat_template' is missing"):
        read_chat_template(tmp_path / "tokenizer_config.json")


def test_cli_detect(tmp_path: Path, capsys):
    path = tmp_path / "chat_template.jinja"
    path.write_text(QWEN_LIKE, encoding="utf-8")
    assert main(["detect", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] in {"family: qwen3", "family: smollm3"}
    assert "thinking switch: enable_thinking" in out
    path.write_text("{{ messages[0].content }}", encoding="utf-8")
    assert main(["detect", str(path)]) == 1
    assert capsys.readouterr().err.startswith("respc: no catalogue family fits: ")
    assert main(["detect", str(tmp_path / "missing")]) == 2


# --- issue 24 item 4: a family is named only when it parses back every sample the template rendered ---

ISSUE_TEMPLATES = Path(__file__).parent / "cases" / "detect"
OWN_TEMPLATES = Path(__file__).parent / "cases" / "chat_templates"

# Meta-Llama-3-8B-Instruct's chat template (no tool support), as vLLM logs it as its default.
PLAIN_LLAMA3 = ("{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
                "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
                "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
                "{{ content }}{% endfor %}{% if add_generation_prompt %}"
                "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}")

# ChatML turns, but assistant messages are never rendered: no sample can be checked.
NO_ASSISTANT = ("{% for m in messages %}{% if m.role != 'assistant' %}<|im_start|>{{ m.role }}\n{{ m.content }}"
                "<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def _issue(name: str) -> Path:
    return ISSUE_TEMPLATES / f"{name}.jinja"


def test_functionary_v3_2_is_its_own_family(capsys):
    # Functionary v3.2 writes ">>>RECIPIENT\n" before each part (all: answer text, else a call's JSON
    # arguments); detect used to name llama3_json for it, whose format it is not (issue 28).
    path = OWN_TEMPLATES / "functionary_v3_2.jinja"
    found = detect(read_chat_template(path))
    assert (found.family, found.exact) == ("functionary_v3_2", ("functionary_v3_2",)), found.reason
    assert found.rendered == ("content", "tool_call", "two_tool_calls")   # history reasoning is dropped
    assert found.failed["llama3_json"] == ("content", "tool_call", "two_tool_calls")
    assert main(["detect", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "family: functionary_v3_2"


@pytest.mark.parametrize("name", ["lfm2_8b_a1b", "lfm2_5_instruct"])
def test_tools_offered_but_never_rendered_are_unconfirmed(name: str, capsys):
    # LFM2's templates list the tools in the prompt but render a history tool call as its content
    # (here: "null"), and teach no call syntax: the tool-call format is unknown, so no family fits.
    path = _issue(name)
    found = detect(read_chat_template(path))
    assert found.family is None, found.reason
    assert (found.rendered, found.unconfirmed) == (("content",), ("tool_call", "two_tool_calls"))
    assert all(found.failed[n] == ("tool_call", "two_tool_calls") for n in found.nearest)
    assert "offers tools but renders no tool call in history" in found.reason
    assert main(["detect", str(path)]) == 1
    assert "nearest fits: xlam (failed: tool_call, two_tool_calls)" in capsys.readouterr().err


def test_tools_taught_by_the_prompt_confirm_the_opener(capsys):
    # granite 3's template drops history tool calls but its prompt teaches <|tool_call|>: granite3 passes
    # the unconfirmed samples, families whose openers the prompt does not spell fail them.
    path = _corpus("granite3")
    found = detect(read_chat_template(path))
    assert found.unconfirmed == ("tool_call", "two_tool_calls") and found.family == "granite3"
    assert found.failed["granite4"] == ("tool_call", "two_tool_calls")
    assert main(["detect", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[3] == (
        "samples parsed back: content; only the tool-call opener the prompt teaches: tool_call, two_tool_calls; "
        "not rendered (not checked): reasoning")


def test_plain_templates_list_every_exact_fit(capsys, tmp_path: Path):
    # No tools offered: the tool samples are not rendered and do not count; every family that parses
    # the plain answer back is an exact fit, and all of them are listed.
    path = tmp_path / "chat_template.jinja"
    path.write_text(PLAIN_LLAMA3, encoding="utf-8")
    found = detect(read_chat_template(path))
    assert found.rendered == ("content",) and found.unconfirmed == ()
    assert set(found.exact) == {"cwm", "firefunction_v2", "functionary_v3_1", "functionary_v3_2", "llama3_json"}
    assert main(["detect", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"family: {found.family}"
    assert out[1] == f"exact fits: {', '.join(found.exact)}"
    assert out[3] == "samples parsed back: content; not rendered (not checked): reasoning, tool_call, two_tool_calls"
    found = detect(read_chat_template(_issue("phi3_5_mini")))   # a plain <|user|> template
    assert found.exact == ("phi4_mini", "apriel_1_5") and found.rendered == ("content",)


def test_renders_no_sample_fits_no_family():
    found = detect(ChatTemplate(NO_ASSISTANT, "noassistant"))
    assert found.family is None and found.rendered == () and found.nearest == ()
    assert found.reason == ("noassistant: the chat template renders none of the sample messages with all of "
                            "its text, so no format can be checked")


def test_same_format_exact_tie_is_listed(capsys):
    path = CHAT_TEMPLATES / "qwen3_5.jinja"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    found = detect(read_chat_template(path))
    # step3p5 has the same format, but its thinking switch (none) is not the one this template reacts to
    assert found.exact == ("nemotron3_nano", "qwen3_5", "step3p5") and found.tied == ("nemotron3_nano", "qwen3_5")
    assert found.rendered == ("content", "reasoning", "tool_call", "two_tool_calls")
    assert main(["detect", str(path)]) == 0
    assert "exact fits: nemotron3_nano, qwen3_5, step3p5" in capsys.readouterr().out.splitlines()


def test_stepfun_template_names_step3p5(capsys):
    """StepFun Step-3.5-Flash's chat template (issue 28): the qwen3_5 format, no thinking switch."""
    path = OWN_TEMPLATES / "step3p5.jinja"
    found = detect(read_chat_template(path))
    assert (found.family, found.tied) == ("step3p5", ("step3p5",)), found.reason
    assert found.exact == ("step3p5", "nemotron3_nano", "qwen3_5") and found.thinking_switch is None
    assert found.rendered == ("content", "reasoning", "tool_call", "two_tool_calls")
    assert main(["detect", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == ["family: step3p5",
                                                        "exact fits: step3p5, nemotron3_nano, qwen3_5"]


def test_smollm3_lists_its_equal_fits(capsys):
    path = _corpus("smollm3")
    found = detect(read_chat_template(path))
    assert found.rendered == ("content",) and "smollm3" in found.tied
    assert main(["detect", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("exact fits: ") and set(found.tied) <= set(out[1][len("exact fits: "):].split(", "))


def test_hy3_is_hunyuan():
    found = detect(read_chat_template(_issue("hy3")))
    assert (found.family, found.exact) == ("hunyuan", ("hunyuan",)), found.reason
    assert found.rendered == ("content", "reasoning", "tool_call", "two_tool_calls")


def test_phi4_mini_nearest_fit():
    found = detect(read_chat_template(_corpus("phi4_mini")))
    assert found.family is None
    assert found.nearest[0] == "phi4_mini" and found.failed["phi4_mini"] == ("tool_call", "two_tool_calls")


def test_model_folder_with_inexact_fit_is_refused(tmp_path: Path, capsys):
    from respc import compile_template, get_response_parser, parse_response
    from respc.runtime.errors import TemplateError

    (tmp_path / "chat_template.jinja").write_text(_issue("lfm2_8b_a1b").read_text(encoding="utf-8"),
                                                  encoding="utf-8")
    output = tmp_path / "out.txt"
    output.write_text("Hello<|im_end|>", encoding="utf-8")
    found = detect(read_chat_template(tmp_path))
    assert found.family is None and found.reason.startswith(f"{tmp_path / 'chat_template.jinja'}: no catalogue family")
    why = found.reason.split(": ", 1)[1]
    want = (f"respc: bad template: {tmp_path}: model directory has no tokenizer_config.json, and no catalogue "
            f"family fits its chat template ({why}); an inexact fit is never used: give the template explicitly "
            "(a catalogue name from `respc list` or a template .json) if you know the model's format\n")
    assert main(["parse", str(tmp_path), str(output), "--prefix", ""]) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", want)
    assert main(["compile", str(tmp_path), "-o", str(tmp_path / "parser.py")]) == 2
    assert capsys.readouterr().err == want and not (tmp_path / "parser.py").exists()
    calls = [lambda: compile_template(str(tmp_path)),
             lambda: parse_response("Hello", str(tmp_path), prefix=""),
             lambda: get_response_parser(str(tmp_path), prefix="")]
    for call in calls:
        with pytest.raises(TemplateError, match=r"nearest fits: .*give the template explicitly"):
            call()


# issue 28: families added with their chat templates; detect names each one first (gemma-2's used to
# give functiongemma, Functionary v3.2's no family), and an exact fit it ties with is listed after it.
ISSUE28_FAMILIES = ["reka_edge", "spark2_5", "command_r_plus", "gemma2", "functionary_v3_2", "rwkv"]


@pytest.mark.parametrize("name", ISSUE28_FAMILIES)
def test_issue28_chat_template_names_its_family_first(name: str):
    found = detect(read_chat_template(OWN_TEMPLATES / f"{name}.jinja"))
    assert found.family == name and found.exact[0] == name, found.reason
    assert found.failed[name] == ()
