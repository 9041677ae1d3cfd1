"""A model directory as the template (issue 11;
docs/security.md "Guessed families"): its ``response_template``, else the detected family.

``load_template`` (and with it ``respc compile``, ``respc parse`` and the Python conveniences) takes a
model directory, a ``tokenizer_config.json``, a ``chat_template.json`` or a ``chat_template.jinja``.
The model directories are built in a temporary folder from the corpus chat templates
(``../shared/corpus/chat_templates``, the real templates of those models); the error cases need no
shared data.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

import respc
from respc.compiler.cli import main
from respc.compiler.load import load_template
from respc.runtime.errors import TemplateError

from support import CHAT_TEMPLATES, missing

QWEN3_OUTPUT = "<think>\nThe user greets.\n</think>\n\nHello!<|im_end|>"
QWEN3_MESSAGE = {"role": "assistant", "reasoning_content": "The user greets.", "content": "Hello!"}
OWN = {"start_anchor": "<|assistant|>", "fields": {"content": {"close": "<|end|>"}}}


def _chat_template(family: str) -> str:
    path = CHAT_TEMPLATES / f"{family}.jinja"
    if not path.is_file():
        pytest.skip(missing(CHAT_TEMPLATES))
    return path.read_text(encoding="utf-8")


@pytest.fixture
def qwen3_dir(tmp_path: Path) -> Path:
    """A transformers-5 style model directory: chat_template.jinja beside a tokenizer_config.json
    that has no chat template and no response template."""
    (tmp_path / "chat_template.jinja").write_text(_chat_template("qwen3"), encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>"}), encoding="utf-8")
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    return tmp_path


def test_model_dir_without_response_template_uses_detected_family(qwen3_dir: Path):
    loaded = load_template(qwen3_dir)
    assert loaded.source == "templates/qwen3.json"
    assert loaded.document == load_template("qwen3").document
    config = qwen3_dir / "tokenizer_config.json"
    assert loaded.note.startswith(f"{config}: tokenizer_config.json has no 'response_template' key; using the "
                                  f"catalogue family 'qwen3' detected from its chat template "
                                  f"{qwen3_dir / 'chat_template.jinja'} (start anchor in the generation prompt; ")
    assert loaded.note.endswith("; thinking switch: enable_thinking)")
    # the same family from the tokenizer_config.json and from the chat template file
    assert load_template(config).source == load_template(qwen3_dir / "chat_template.jinja").source == loaded.source


def test_conveniences_take_a_model_dir(qwen3_dir: Path, caplog):
    prefix = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    with caplog.at_level(logging.INFO, logger="respc"):
        assert respc.parse_response(QWEN3_OUTPUT, qwen3_dir, prefix=prefix) == QWEN3_MESSAGE
    assert "using the catalogue family 'qwen3'" in caplog.text
    parser = respc.get_response_parser(str(qwen3_dir), prefix=prefix)
    parser.feed(QWEN3_OUTPUT[:9])
    parser.feed(QWEN3_OUTPUT[9:])
    assert parser.finalize()[0] == QWEN3_MESSAGE
    assert respc.compile_template(qwen3_dir / "chat_template.jinja").FIELD_NAMES == \
        respc.compile_template("qwen3").FIELD_NAMES


def test_chat_template_inside_tokenizer_config(tmp_path: Path):
    """An older layout: the chat template is tokenizer_config.json's ``chat_template`` key."""
    config = {"chat_template": _chat_template("deepseek_r1"), "bos_token": "<｜begin▁of▁sentence｜>",
              "eos_token": "<｜end▁of▁sentence｜>"}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    loaded = load_template(tmp_path)
    assert loaded.source == "templates/deepseek_r1.json"
    assert f"detected from its chat template {tmp_path / 'tokenizer_config.json'} (" in loaded.note
    output = "Greeting.\n</think>\n\nHello!<｜end▁of▁sentence｜>"
    assert respc.parse_response(output, tmp_path, prefix="<｜User｜>Hi<｜Assistant｜><think>\n") == {
        "role": "assistant", "reasoning_content": "Greeting.", "content": "Hello!"}


def test_response_template_key_wins_over_chat_template(qwen3_dir: Path):
    config = qwen3_dir / "tokenizer_config.json"
    config.write_text(json.dumps({"response_template": OWN}), encoding="utf-8")
    loaded = load_template(qwen3_dir)
    assert (loaded.document, loaded.source) == (OWN, f"{config}#response_template")
    assert loaded.note == f"{config}: using its response template (key 'response_template')"
    assert respc.parse_response("Hi<|end|>", qwen3_dir, prefix="<|assistant|>") == {"content": "Hi"}


def test_no_response_template_and_no_family_names_the_directory(tmp_path: Path):
    (tmp_path / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content }}\n{% endfor %}",
                                                  encoding="utf-8")
    with pytest.raises(TemplateError) as info:
        load_template(tmp_path)
    assert str(info.value) == (f"{tmp_path}: model directory has no tokenizer_config.json, and no catalogue family "
                               "fits its chat template (no catalogue family's start anchor occurs in the "
                               "generation prompt)")
    (tmp_path / "chat_template.jinja").unlink()
    (tmp_path / "tokenizer_config.json").write_text('{"eos_token": "</s>"}', encoding="utf-8")
    with pytest.raises(TemplateError) as info:
        respc.compile_template(tmp_path)
    assert str(info.value) == (
        f"{tmp_path / 'tokenizer_config.json'}, key 'response_template': tokenizer_config.json has no "
        "'response_template' key, and no chat template to detect a family from "
        f"({tmp_path / 'tokenizer_config.json'}: key 'chat_template' is missing or not a string)")


def test_cli_compile_and_parse_a_model_dir(qwen3_dir: Path, tmp_path_factory, capsys):
    out = tmp_path_factory.mktemp("out") / "parser.py"
    assert main(["compile", str(qwen3_dir), "-o", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"respc: note: {qwen3_dir / 'tokenizer_config.json'}: tokenizer_config.json has no "
                             "'response_template' key; using the catalogue family 'qwen3' detected from")
    assert out.read_text(encoding="utf-8").splitlines()[3] == (Path(__file__).parent.parent / "generated" /
                                                               "qwen3.py").read_text(encoding="utf-8").splitlines()[3]
    assert out.read_text(encoding="utf-8").splitlines()[3].startswith("# template sha256: ")
    text = tmp_path_factory.mktemp("in") / "out.txt"
    text.write_text(QWEN3_OUTPUT, encoding="utf-8")
    assert main(["parse", str(qwen3_dir), str(text), "--prefix", "<|im_start|>assistant\n"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == QWEN3_MESSAGE
    assert "using the catalogue family 'qwen3'" in captured.err
    (qwen3_dir / "chat_template.jinja").write_text("{{ messages[0].content }}", encoding="utf-8")
    assert main(["parse", str(qwen3_dir), str(text), "--prefix", ""]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"respc: bad template: {qwen3_dir / 'tokenizer_config.json'}, key 'response_template': "
                          "tokenizer_config.json has no 'response_template' key, and no catalogue family fits")
