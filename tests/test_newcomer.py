"""What a newcomer trips over on the command line (issue 30): each message says what went wrong and
what to do, in one line, pointing at the command that was typed."""

from __future__ import annotations

import json

import pytest

from respc.compiler.cli import main

QWEN_PREFIX = "<|im_start|>assistant\n"


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _stdin(monkeypatch, tmp_path, text: str) -> None:
    path = tmp_path / "stdin.txt"
    path.write_text(text)
    monkeypatch.setattr("sys.stdin", open(path))


def test_missing_prefix_says_what_a_prefix_is_and_how_to_opt_out(workdir, capsys):
    (workdir / "out.txt").write_text("hi")
    assert main(["parse", "qwen3", "out.txt"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("respc: parse: the prefix is required: the prompt text just before the model's output")
    assert "--prefix-file PROMPT.txt" in err and '--prefix "" to read the output from its start' in err


def test_literal_backslash_n_in_the_prefix_is_named(workdir, capsys):
    (workdir / "out.txt").write_text("hi")
    assert main(["parse", "qwen3", "out.txt", "--prefix", "<|im_start|>assistant\\n"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["content"] == "<|im_start|>assistant\\nhi"
    assert ("respc: prefix-without-anchor at 0-0: the start anchor is not in the prefix; the whole prefix was "
            "parsed as the start of the response; the prefix holds a backslash and 'n' (\\n) where the start "
            "anchor has a newline: pass a real newline (in a shell: --prefix $'...\\n', or --prefix-file)\n"
            ) == captured.err


def test_a_real_newline_gives_no_hint(workdir, capsys):
    (workdir / "out.txt").write_text("hi")
    assert main(["parse", "qwen3", "out.txt", "--prefix", "<|im_start|>user\\nhello"]) == 0
    err = capsys.readouterr().err
    assert "prefix-without-anchor" in err and "backslash" not in err  # \n would not find the anchor either


def test_non_utf8_prefix_file_is_one_friendly_line(workdir, capsys):
    (workdir / "out.txt").write_text("hi")
    (workdir / "prompt.txt").write_bytes(b"<|im_start|>assistant\n\xff")
    assert main(["parse", "qwen3", "out.txt", "--prefix-file", "prompt.txt"]) == 2
    assert capsys.readouterr().err == ("respc: cannot read prefix file 'prompt.txt': not UTF-8 at byte 22 "
                                       "(counted from the start): invalid start byte\n")


@pytest.mark.parametrize("argv, expected", [
    (["parse", "qwen3", "-", "--prefix-filx", "p.txt"],
     "respc: parse: unrecognized arguments: --prefix-filx p.txt (did you mean --prefix-file?) "
     "(see respc parse --help)\n"),
    (["compile", "qwen3", "-o", "x.py", "--chek"],
     "respc: compile: unrecognized arguments: --chek (did you mean --check?) (see respc compile --help)\n"),
])
def test_option_typo_points_at_the_subcommand(workdir, capsys, argv, expected):
    assert main(argv) == 2
    assert capsys.readouterr().err == expected


def test_list_filters_by_family_or_model(capsys):
    assert main(["list", "qwen"]) == 0
    families = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert "qwen3" in families and "qwen3_coder" in families and "gpt_oss" not in families
    assert "deepseek_r1" in families  # DeepSeek-R1-Distill-Qwen: a model name matches
    assert main(["list", "Llama-3.3"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["llama3_json"]
    assert main(["list", "no-such-model"]) == 1
    assert capsys.readouterr().err == ("respc: list: no catalogue family or model matches 'no-such-model' "
                                       "(respc list shows them all)\n")


def test_html_says_what_it_wrote(workdir, capsys):
    (workdir / "out.txt").write_text("<think>a</think>b")
    assert main(["parse", "qwen3", "out.txt", "--prefix", "", "--html", "page.html"]) == 0
    assert (workdir / "page.html").is_file()
    assert capsys.readouterr().err == "respc: wrote page.html (open it in a browser)\n"


def test_responses_lists_the_tools_given(workdir, capsys):
    tool = {"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                             "parameters": {"type": "object", "properties": {}}}}
    (workdir / "tools.json").write_text(json.dumps([tool]))
    (workdir / "out.txt").write_text("hi")
    assert main(["parse", "qwen3", "out.txt", "--prefix", "", "--tools", "tools.json", "--responses"]) == 0
    data = [json.loads(line[6:]) for line in capsys.readouterr().out.splitlines() if line.startswith("data: {")]
    assert data[0]["response"]["tools"] == [{"type": "function", "name": "get_weather", "description": "Weather",
                                             "parameters": {"type": "object", "properties": {}}, "strict": None}]
    assert data[-1]["response"]["tools"] == data[0]["response"]["tools"]
