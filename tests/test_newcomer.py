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


# -- respc test TEMPLATE CASES ----------------------------------------------------------------------

def test_respc_test_passes_a_catalogue_familys_own_cases(capsys):
    from support import REPO

    cases = REPO / "tests" / "cases" / "families" / "qwen3.json"
    assert main(["test", "qwen3", str(cases)]) == 0
    captured = capsys.readouterr()
    count = len(json.loads(cases.read_text())["cases"])
    assert captured.out == ""
    assert captured.err == (f"respc test: {count} cases, {count} right and 0 wrong (each fed whole, per character "
                            "and in random pieces)\n")


def test_respc_test_shows_a_diff_and_exits_1(workdir, capsys):
    good = {"name": "answer", "prefix": "<|im_start|>assistant\n", "text": "<think>hm</think>Hello",
            "message": {"role": "assistant", "reasoning_content": "hm", "content": "Hello"}}
    bad = {"id": "call", "text": '<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>',
           "expect": {"message": {"role": "assistant", "tool_calls": [
               {"type": "function", "function": {"name": "f", "arguments": {"x": 2}}}]}}}
    (workdir / "cases.jsonl").write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")
    assert main(["test", "qwen3", "cases.jsonl", "-v"]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("ok    answer\nFAIL  call (whole, chars, random)\n      --- expected message\n"
                                   "      +++ parsed message\n")
    assert '      -          "x": 2\n      +          "x": 1\n' in captured.out
    assert captured.err == ("respc test: 2 cases, 1 right and 1 wrong (each fed whole, per character and in "
                            "random pieces)\n")



def test_respc_test_starts_each_failure_on_its_own_line(workdir, capsys):
    """Two failing cases: the second `FAIL` line is not glued to the last line of the first diff
    (`      }FAIL  bad2 ...`), and the output ends with a line break."""
    lines = [json.dumps({"name": name, "text": "Hi", "message": {"role": "assistant", "content": want}})
             for name, want in (("bad", "Ho"), ("bad2", "Hu"))]
    (workdir / "bad2.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["test", "qwen3", "bad2.jsonl"]) == 1
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if "FAIL" in line] == [
        "FAIL  bad (whole, chars, random)", "FAIL  bad2 (whole, chars, random)"]
    assert out.endswith("      }\n")

def test_respc_test_checks_diagnostics_and_names_errors(workdir, capsys):
    case = {"name": "cut", "text": "Hi <tool_call>{\"name\": \"f\"", "errors": "recover",
            "message": {"role": "assistant", "content": "Hi"}, "diagnostics": ["no-such-kind"]}
    (workdir / "cases.jsonl").write_text(json.dumps(case) + "\n")
    assert main(["test", "qwen3", "cases.jsonl"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL  cut (whole, chars, random)\n")
    assert "      diagnostics: expected ['no-such-kind'], got [" in out


@pytest.mark.parametrize("content, message", [
    ("{\"text\": \"hi\"}\n", "respc: cases.jsonl: line 1: key 'message' (or 'expect': {'message': ...}) must be "
                             "the expected message, a JSON object\n"),
    ("{\"text\": \"hi\", \"message\": {}}\nnot json\n", "respc: cases.jsonl: line 2 is not JSON: Expecting value "
                                                      "at column 1\n"),
    ("\n", "respc: cases.jsonl: no cases (one JSON object per line with 'text' and 'message')\n"),
])
def test_respc_test_bad_cases_file_is_exit_2(workdir, capsys, content, message):
    (workdir / "cases.jsonl").write_text(content)
    assert main(["test", "qwen3", "cases.jsonl"]) == 2
    assert capsys.readouterr().err == message


@pytest.mark.parametrize("key, value, message", [
    ("erros", "recover", "respc: cases.jsonl: line 1 (cut): unknown key 'erros' (did you mean 'errors'?); the known "
                         "keys are text, message, expect, prefix, tools, name, id, errors, diagnostics, source, why, "
                         "note\n"),
    ("mesage", {"role": "assistant", "content": "Hi"},
     "respc: cases.jsonl: line 1 (cut): unknown key 'mesage' (did you mean 'message'?); the known keys are text, "
     "message, expect, prefix, tools, name, id, errors, diagnostics, source, why, note\n"),
    ("zzz", 1, "respc: cases.jsonl: line 1 (cut): unknown key 'zzz'; the known keys are text, message, expect, "
               "prefix, tools, name, id, errors, diagnostics, source, why, note\n"),
])
def test_respc_test_names_an_unknown_key(workdir, capsys, key, value, message):
    """A misspelt key is an error (exit 2) naming the file, the case and the key, with the nearest
    known key: `"erros": "recover"` was dropped silently (the case ran strict and passed), and
    `"mesage"` was reported only as a missing 'message' (docs/writing-a-template.md)."""
    case = {"name": "cut", "text": "Hi", "message": {"role": "assistant", "content": "Hi"}, key: value}
    (workdir / "cases.jsonl").write_text(json.dumps(case) + "\n")
    assert main(["test", "qwen3", "cases.jsonl"]) == 2
    assert capsys.readouterr().err == message


def test_respc_test_names_an_unknown_key_of_expect_and_an_unnamed_case(workdir, capsys):
    good = {"text": "Hi", "message": {"role": "assistant", "content": "Hi"}, "source": "mine", "why": "a", "note": "b"}
    bad = {"text": "Hi", "expect": {"mesage": {"role": "assistant", "content": "Hi"}}}
    (workdir / "cases.json").write_text(json.dumps({"cases": [good, bad]}, indent=1))
    assert main(["test", "qwen3", "cases.json"]) == 2
    assert capsys.readouterr().err == ("respc: cases.json: case 2: unknown key 'expect.mesage' (did you mean "
                                       "'expect.message'?); the known keys are expect.message\n")


def test_respc_test_reads_the_catalogue_diagnostics_form(workdir, capsys):
    """A `diagnostics` entry may be `[kind, start, end]`, as the catalogue's own cases write them
    (tests/cases/families/minimax_m3.json could not be read before)."""
    from support import REPO

    cases = REPO / "tests" / "cases" / "families" / "minimax_m3.json"
    assert any(isinstance(c.get("diagnostics", [""])[0], list) for c in json.loads(cases.read_text())["cases"])
    assert main(["test", "minimax_m3", str(cases)]) == 0
    case = {"name": "cut", "text": "Hi <tool_call>{\"name\": \"f\"", "errors": "recover",
            "message": {"role": "assistant", "content": "Hi"}, "diagnostics": [["truncated", 0, 1]]}
    (workdir / "cases.jsonl").write_text(json.dumps(case) + "\n")
    capsys.readouterr()
    assert main(["test", "qwen3", "cases.jsonl"]) == 1
    assert "      diagnostics: expected [['truncated', 0, 1]], got [['truncated', 3, " in capsys.readouterr().out


def test_a_delimiter_may_start_in_the_prompt():
    """docs/writing-a-template.md, "A delimiter may start in the prompt"."""
    from support import chunkings

    from respc.generated import qwen3

    prefix = "<|im_start|>assistant\n<thi"
    for chunks in chunkings("nk>hm</think>Hi", "prompt").values():
        parser = qwen3.ResponseParser(prefix)
        for chunk in chunks:
            parser.feed(chunk)
        assert parser.finalize()[0] == {"role": "assistant", "reasoning_content": "hm", "content": "Hi"}


# -- respc check: a deliberate lookahead is not a warning ------------------------------------------

def _lint(fields: dict) -> list:
    from respc.compiler.api import compile_source
    from respc.compiler.lint import lint

    compiled = compile_source({"start_anchor": "A", "fields": fields})
    return [(f.check, f.field, f.key) for f in lint(compiled.template, compiled.automaton)]


@pytest.mark.parametrize("close", ["(?=<tool_call>)", "(?=<tool_call>)|\\Z", "(?!x)"])
def test_a_lookahead_close_is_zero_width_on_purpose(close):
    findings = _lint({"a": {"open": "<a>", "close_pattern": close}, "content": {}})
    assert ("empty-match", "a", "close_pattern") not in findings


@pytest.mark.parametrize("close", ["\\s*", "(?=x)y?", "</a>|"])
def test_an_accidental_empty_match_still_warns(close):
    findings = _lint({"a": {"open": "<a>", "close_pattern": close}, "content": {}})
    assert ("empty-match", "a", "close_pattern") in findings


def test_check_notes_a_stripped_join_without_whitespace(capsys):
    assert main(["check", "qwen3"]) == 0
    out = capsys.readouterr().out
    assert ("note: field 'content' strips each piece, then joins them with '': the whitespace between two pieces "
            "is lost ('In Python:\\n' and '>>> print(1)' give 'In Python:>>> print(1)'); a join such as '\\n', or "
            'content_args {"strip": false}, keeps it\n') in out
    assert "field 'reasoning_content' strips" not in out  # joined with '\n\n': nothing lost


CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def test_check_against_another_familys_chat_template_is_short_and_says_detect(workdir, capsys):
    (workdir / "chat.jinja").write_text("<|im_start|>system\n{{ 'a long system prompt ' * 100 }}<|im_end|>\n" + CHATML)
    assert main(["check", "gpt_oss", "--chat-template", "chat.jinja"]) == 1
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) < 600
    assert out.splitlines()[-2].endswith("; the chat template may be another family's: try `respc detect "
                                         "chat.jinja`")


def test_the_run_summary_gives_one_line_per_skip_reason(tmp_path):
    import subprocess
    import sys

    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "@pytest.mark.parametrize('i', range(5))\n"
        "def test_a(i):\n    pytest.skip('needs the frobnicator extra')\n"
        "def test_b():\n    pytest.skip('needs ../shared')\n"
        "def test_c():\n    pytest.skip('needs ../shared')\n")
    from support import REPO

    (tmp_path / "conftest.py").write_text((REPO / "tests" / "conftest.py").read_text())
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path).stdout
    assert "    5 skipped: needs the frobnicator extra\n    2 skipped: needs ../shared\n" in out


def test_the_region_malformed_example_of_the_docs_is_malformed():
    """docs/events.md, "Recovering from damaged output": the example is what the parser gives."""
    import ast
    import re

    from support import REPO

    from respc.generated import qwen3

    doc = (REPO / "docs" / "events.md").read_text()
    block = re.search(r"parsed ends with a fourth event instead of `region_close`\. Qwen3's\n`(.+?)` \(.*?```python\n"
                      r"(.+?)```", doc, re.S)
    text, shown = block.group(1).replace("\n", " "), ast.literal_eval(block.group(2))
    parser = qwen3.ResponseParser("", errors="recover")
    events = parser.feed(text) + parser.finalize()[1]
    [event] = [e for e in events if e["type"] == "region_malformed"]
    assert event["error"].startswith(shown.pop("error").removesuffix(" ..."))
    assert {k: v for k, v in event.items() if k != "error"} == shown


def test_check_says_when_the_start_anchor_is_in_no_generation_prompt(workdir, capsys):
    """`respc check T --chat-template F` where nothing parses back because T's start anchor is not
    the assistant header F's generation prompt writes: the summary note says so and quotes the end
    of a prompt (before, it only suggested `respc detect`, which names no family for a new format);
    with the anchor right, the same template parses every sample back and the note is absent."""
    chat = ("{% for m in messages %}<|{{ m.role }}|>\n{{ m.content or '' }}<|end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
    (workdir / "chat.jinja").write_text(chat, encoding="utf-8")
    for anchor, code in (("<|bot|>\n", 1), ("<|assistant|>\n", 0)):
        template = {"defaults": {"role": "assistant"}, "start_anchor": anchor,
                    "fields": {"content": {"close": "<|end|>"}}}
        (workdir / "t.json").write_text(json.dumps(template), encoding="utf-8")
        assert main(["check", "t.json", "--chat-template", "chat.jinja"]) == code
        out = capsys.readouterr().out
        said = ("the template's start anchor is in none of the generation prompts the chat template renders "
                "(one ends '! Can you help me?<|end|>\\n<|assistant|>\\n'): start_anchor must be "
                "their assistant header, byte for byte; the chat template may be another family's: try "
                "`respc detect chat.jinja`")
        assert (said in out) == (code == 1), out


def test_javascript_prefix_errors_say_how_to_pass_it_in_javascript(tmp_path):
    """docs/javascript.md "The API": a ResponseParser without a prefix says to pass "" the
    JavaScript way (the Python message's `prefix="" (or [])` is no JavaScript: `[]` is refused);
    `parseResponse(text, "")`, the Python habit of a positional prefix, says that the prefix is an
    option instead of claiming that none was given."""
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node (Node.js 20 or later) is not installed")
    assert main(["compile", "kimi_vl", "--target", "js", "-o", str(tmp_path / "kimi_vl.mjs"), "--with-runtime"]) == 0
    (tmp_path / "t.mjs").write_text(
        'import { ResponseParser, parseResponse } from "./kimi_vl.mjs";\n'
        "const said = [];\n"
        "try { new ResponseParser(); } catch (e) { said.push(e.message); }\n"
        'try { parseResponse("Hi", ""); } catch (e) { said.push(`${e.name}: ${e.message}`); }\n'
        'said.push(parseResponse("Hi", { prefix: "" }).content);\n'
        "console.log(JSON.stringify(said));\n", encoding="utf-8")
    ran = subprocess.run([node, "t.mjs"], cwd=tmp_path, capture_output=True, text=True, encoding="utf-8", timeout=60)
    assert ran.returncode == 0, ran.stderr
    missing, positional, content = json.loads(ran.stdout)
    assert missing.endswith('pass "" to opt out explicitly: new ResponseParser("", options), '
                            'parseResponse(text, { prefix: "" }).'), missing
    assert "(or [])" not in missing
    assert positional == ('TypeError: parseResponse(text, options): the prefix is an option, '
                          'parseResponse(text, { prefix: "" })')
    assert content == "Hi"


def test_parse_html_needs_the_prefix_and_honours_errors_recover(workdir, capsys):
    """`respc parse T F --html OUT` without a prefix is the usage error the command gives without
    --html (it was `cannot parse output: TypeError: expected str, ... not NoneType`, exit 1), and
    `--errors recover` with --html reads a cut call as recover does (it was ignored: exit 1 with the
    strict error); the page is written and the diagnostics are printed as without --html."""
    (workdir / "out.txt").write_text('Hi <tool_call>{"name": "f", "argu', encoding="utf-8")
    assert main(["parse", "qwen3", "out.txt", "--html", "page.html"]) == 2
    assert capsys.readouterr().err.startswith("respc: parse: the prefix is required: ")
    assert not (workdir / "page.html").exists()
    assert main(["parse", "qwen3", "out.txt", "--prefix", "", "--html", "page.html", "--errors", "recover"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"role": "assistant", "content": "Hi"}
    assert captured.err.splitlines() == [
        "respc: truncated at 3-33 field tool_calls: ContentParseError: Field 'tool_calls': json parser could not "
        "parse region as JSON.",
        "respc: wrote page.html (open it in a browser)"]
    assert main(["parse", "qwen3", "out.txt", "--prefix", "", "--errors", "recover"]) == 0
    assert json.loads(capsys.readouterr().out) == {"role": "assistant", "content": "Hi"}
    assert main(["parse", "qwen3", "out.txt", "--prefix", "", "--html", "page.html"]) == 1  # strict
    assert capsys.readouterr().err.startswith("respc: cannot parse output: ContentParseError: ")


def test_parse_takes_the_output_file_after_the_options(workdir, capsys):
    """`respc parse qwen3 --prefix-file prompt.txt output.txt` (FILE after the options) reads
    output.txt: argparse had given FILE its default (standard input) at the first option and then
    called output.txt an unrecognized argument. A word that is no FILE stays an error."""
    (workdir / "out.txt").write_text("<think>hm</think>Hi", encoding="utf-8")
    (workdir / "prompt.txt").write_text("<|im_start|>assistant\n", encoding="utf-8")
    expected = {"role": "assistant", "reasoning_content": "hm", "content": "Hi"}
    for argv in (["parse", "qwen3", "--prefix-file", "prompt.txt", "out.txt"],
                 ["parse", "--prefix", "", "qwen3", "out.txt"],
                 ["parse", "qwen3", "out.txt", "--prefix", ""]):
        assert main(argv) == 0, argv
        assert json.loads(capsys.readouterr().out) == expected
    assert main(["parse", "qwen3", "out.txt", "--prefix", "", "more.txt"]) == 2
    assert capsys.readouterr().err == "respc: parse: unrecognized arguments: more.txt (see respc parse --help)\n"
    assert main(["parse", "qwen3", "--prefix-filx", "prompt.txt", "out.txt"]) == 2
    assert "(did you mean --prefix-file?)" in capsys.readouterr().err
