"""A generated module cannot be read as anything but what it says (issue 23, item 1).

PEP 263 takes a source file's encoding from a ``coding=`` / ``coding:`` comment on line 1 or 2.
The first line of a module used to name the template's source, so a template file (or model
folder) named ``mymodel_coding=raw_unicode_escape+v1.json`` chose the codec the module was read
with, and that codec turned the ``\\u0027`` escapes of its literals back into quotes: code ran on
import. Now (docs/security.md, "Generated code"):

* line 1 declares UTF-8 and line 2 is fixed text: no template or path text reaches them;
* the module is printable ASCII, template text only in escaped literals and comments;
* with line 1 replaced by a declaration of ANY codec Python has, the module either does not compile
  or compiles to the very same code (``ENCODING_GUARD`` breaks it under the codecs that read ASCII
  text another way).

The attacks run exactly as the issue writes them: ``respc compile <file> -o parser.py``, then
``python -c "import parser"`` in a fresh interpreter, in a folder where ``PWNED`` would appear.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from respc.compiler.api import compile_source
from respc.compiler.emit import ENCODING_GUARD, HEADER
from support_hostile import read_as_every_codec

RESPC = [sys.executable, "-m", "respc"]
OPEN_PATTERN = "<a(?:'+str(__import__('os').system('touch PWNED'))+r'){0}x+"
TEMPLATE = {"start_anchor": "<|assistant|>",
            "fields": {"tool": {"open_pattern": OPEN_PATTERN, "close": "</a>"}, "content": {}}}
TEXT = "hi <axx body</a> bye"
EXPECTED = {"tool": "body", "content": "bye"}
IMPORT = ("import json, parser; print(json.dumps(parser.parse_response(%r, prefix='')))" % TEXT)


def _attack(folder, target: str) -> str:
    """``respc compile TARGET -o parser.py`` then ``python -c "import parser"`` (parsing TEXT) in
    ``folder``: the module's text; asserts that nothing ran and that the module works."""
    made = subprocess.run(RESPC + ["compile", target, "-o", "parser.py"], cwd=folder, capture_output=True,
                          text=True, encoding="utf-8", timeout=60)
    assert made.returncode == 0, made.stderr
    ran = subprocess.run([sys.executable, "-c", IMPORT], cwd=folder, capture_output=True, text=True,
                         encoding="utf-8", timeout=60)
    assert not (folder / "PWNED").exists(), "the template's open_pattern ran as code"
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == EXPECTED
    return (folder / "parser.py").read_text(encoding="utf-8")


def _assert_header(source: str, codec: str) -> None:
    assert source.startswith(HEADER)
    assert codec not in "".join(source.splitlines(keepends=True)[:2])
    assert source.isascii()


@pytest.mark.parametrize("codec", ["raw_unicode_escape", "unicode_escape", "utf-7"])
def test_file_name_cannot_choose_the_encoding(codec, tmp_path):
    name = f"mymodel_coding={codec}+v1.json"
    (tmp_path / name).write_text(json.dumps(TEMPLATE), encoding="utf-8")
    source = _attack(tmp_path, name)
    _assert_header(source, codec)
    assert f"# template: {name}\n" in source  # the name is still there, on line 3


def test_model_folder_name_cannot_choose_the_encoding(tmp_path):
    folder = tmp_path / "mymodel_coding=raw_unicode_escape+v1"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text(json.dumps({"response_template": TEMPLATE}), encoding="utf-8")
    source = _attack(tmp_path, folder.name)
    _assert_header(source, "raw_unicode_escape")
    assert f"# template: ./{folder.name}\n" in source  # a bare word is written ./NAME (README, "Use")


def test_no_codec_changes_the_meaning():
    """The issue's template, and one holding every character that a codec reads otherwise."""
    tricky = "\\u0027 \\x27 \\' \\\\ +ACc- +AFw- ~{ ~} % ~ \u00a5 \u203e \xe9 \u2028 \U0001f916 \x00 ' \" \n"
    template = {"start_anchor": "<s>" + tricky,
                "fields": {"f" + tricky: {"open": "<f>" + tricky, "close": tricky + "</f>",
                                          "transform": {"k" + tricky: "{content}", "lit": tricky}},
                           "g": {"open_pattern": OPEN_PATTERN + "|" + "\\+ACc-~{%", "close": "</g>"},
                           "content": {"repeats": True, "join": tricky}}}
    for document in (TEMPLATE, template):
        source = compile_source(document, source_name="x_coding=utf-7+AAo-~{\\u000a.json").source
        compiled = read_as_every_codec(source)
        assert "utf_8" in compiled and "latin_1" in compiled  # ASCII-compatible ones read it alike
        for hostile in ("raw_unicode_escape", "unicode_escape", "utf_7", "hz", "shift_jis_2004"):
            assert hostile not in compiled


def test_guard_compiles_to_a_string():
    tree = ast.parse(ENCODING_GUARD)
    assert isinstance(tree.body[0].value, ast.Constant) and isinstance(tree.body[0].value.value, str)
