"""Random hostile templates, written to disk and imported in a fresh interpreter (issue 23, "Done when";
docs/security.md "Generated code").

Seeded random templates take strings from every hostile class (quotes and triple quotes,
backslashes, ``\\u0027``-style escapes, PEP 263 ``coding=`` cookies, utf-7 ``+ACc-`` runs, hz
``~{``, ``%``, line breaks, NUL and other control characters, U+2028, a byte order mark,
non-ASCII, a lone surrogate, Python code that would create a canary file, Jinja and placeholder
braces) in every template position: field names, ``open`` / ``close`` literals and lists,
``open_pattern`` / ``close_pattern`` (escaped text, comments, classes, and the issue's own
pattern), ``join``, ``start_anchor``, ``defaults``, ``transform`` keys and values, v2 ``slot``,
``kv-lines`` content arguments, and the name of the template file or model folder the CLI names in
the banner. Each module is compiled as ``respc compile`` would (same banner labels), checked
(``HEADER``, ASCII, inert syntax tree), WRITTEN to disk, and then one fresh interpreter imports
every module from its file and parses text built from the template's own delimiters, strict and
recover. It must import them all, nothing may create the canary file, it must finish within its
timeout, and every message must equal the one the in-memory module (the source string executed
here) gives: the file means what the string means.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import textwrap

import regex

from respc.compiler.api import compile_source
from respc.compiler.cli import _banner_labels
from respc.compiler.emit import HEADER
from respc.runtime.errors import TemplateError
from support_hostile import assert_inert, read_as_every_codec

SEED = 23
COUNT = 24
CANARY = "CANARY"
CODE = f"__import__('os').system('touch {CANARY}')"

#: one sample of each hostile class
PIECES = [
    "'", '"', "'''", '"""', "\\", "\\'", '\\"', "\\\\'", "\\u0027", "\\x27", "\\N{APOSTROPHE}", "\\U00000027",
    "\\u000a", "+ACc-", "+AFw-", "+AAo-", "+-", "~{", "~}", "%", "%s", "# -*- coding: raw_unicode_escape -*-",
    "coding=utf-7", "coding:unicode_escape", "_coding=hz+", "\n", "\r", "\r\n", "\x00", "\x0b\x0c", "\x1b", "\x7f",
    "\x85", "\u2028", "\u2029", "\ufeff", "\u00a5", "\u00e9", "\u601d\u8003", "\U0001f916", "\ud800", CODE,
    "');" + CODE + "#", '""");' + CODE + "#", "'+" + CODE + "+r'", "{{ x }}", "{% raw %}", "${x}", "\t", " ",
]
LETTERS = "abcxyz"
#: the pattern of issue 23 item 1, verbatim (touches PWNED, which the canary check also looks for)
ISSUE_PATTERN = "<a(?:'+str(__import__('os').system('touch PWNED'))+r'){0}x+"


def _hostile(rng: random.Random, pieces: int = 3) -> str:
    return "".join(rng.choice(PIECES) if rng.random() < 0.8 else rng.choice(LETTERS)
                   for _ in range(rng.randint(1, pieces)))


def _plain(rng: random.Random) -> str:
    """Hostile text without placeholder braces (a transform literal)."""
    return _hostile(rng).replace("{", "(").replace("}", ")")


def _file_name(rng: random.Random) -> str:
    """A hostile name a file or folder can have (no slash, no NUL, no surrogate, short)."""
    text = "m" + "".join(c for c in _hostile(rng, 4) if c not in "/\x00" and not "\ud800" <= c <= "\udfff")
    return text.encode("utf-8")[:120].decode("utf-8", "ignore")


def _delimiter(rng: random.Random, key: str, tag: str) -> tuple[dict, str]:
    """A delimiter spec under ``key`` (``open`` / ``close``) and a text it matches."""
    text = tag + _hostile(rng)
    kind = rng.random()
    if kind < 0.4:
        return {key: text}, text
    if kind < 0.6:
        return {key: [text, text + rng.choice(PIECES)]}, text
    pattern = regex.escape(text) + rng.choice(["", "(?#" + _hostile(rng).replace(")", "") + ")",
                                               "[" + regex.escape(_hostile(rng)) + "]?", "(?:" + regex.escape(_hostile(rng)) + ")?"])
    return {key + "_pattern": pattern}, text


def make_case(rng: random.Random, index: int) -> tuple[dict, str, str]:
    """(template, prefix, text): a random hostile template and an output that uses its delimiters."""
    v2 = rng.random() < 0.3
    fields: dict = {}
    pieces = []
    for k in range(rng.randint(1, 3)):
        name = _hostile(rng) + f"#{k}"
        spec, opened = ({"open_pattern": ISSUE_PATTERN}, "<axx") if rng.random() < 0.1 else \
            _delimiter(rng, "open", f"<{index}.{k}")
        close, closed = _delimiter(rng, "close", f"</{index}.{k}")
        spec.update(close)
        if rng.random() < 0.4:
            spec["repeats"] = True
        if spec.get("repeats") and rng.random() < 0.6:
            spec["join"] = _hostile(rng)  # a text body (join needs strings: no transform, no kv-lines)
        elif rng.random() < 0.4:
            spec["transform"] = {_plain(rng) + "1": "{content}", _plain(rng) + "2": _plain(rng)}
        elif rng.random() < 0.3:
            spec["content"] = "kv-lines"
            spec["content_args"] = {"line_sep": "\n" + _plain(rng), "kv_sep": "=" + _plain(rng)}
        if v2 and rng.random() < 0.3:
            spec["slot"] = _hostile(rng) + f"@{k}"
        fields[name] = spec
        pieces.append(f"{_hostile(rng)} {opened}{_hostile(rng)}{closed}")
    fields[_hostile(rng) + "#content"] = {"repeats": True, "join": _hostile(rng)} if rng.random() < 0.5 else {}
    anchor = "@" + _hostile(rng) + "@"
    template: dict = {"start_anchor": anchor, "fields": fields}
    if rng.random() < 0.5:
        template["defaults"] = {_hostile(rng) + "=d": _hostile(rng)}
    if v2:
        template = {"respc_version": 2, **template}
    return template, "junk " + anchor, " ".join(pieces) + " " + _hostile(rng)


_IMPORTER = textwrap.dedent("""
    import importlib.util, json, sys
    cases = json.load(sys.stdin)
    out = {}
    for name, prefix, text in cases:
        spec = importlib.util.spec_from_file_location(name, name + ".py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        got = {"recover": module.parse_response(text, prefix=prefix, errors="recover")}
        try:
            got["strict"] = module.parse_response(text, prefix=prefix)
        except ValueError as exc:  # a body a parser cannot read: strict raises, like the reference
            got["strict"] = type(exc).__name__
        out[name] = got
    print(json.dumps(out, ensure_ascii=True))
""")


def _in_memory(source: str, name: str, prefix: str, text: str) -> dict:
    scope: dict = {"__name__": name}
    exec(compile(source, name, "exec"), scope)  # noqa: S102 - the module under test
    got = {"recover": scope["parse_response"](text, prefix=prefix, errors="recover")}
    try:
        got["strict"] = scope["parse_response"](text, prefix=prefix)
    except ValueError as exc:
        got["strict"] = type(exc).__name__
    return got


def test_random_hostile_templates_written_and_imported(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = random.Random(SEED)
    cases, expected, refused = [], {}, 0
    for index in range(COUNT):
        template, prefix, text = make_case(rng, index)
        # the template's own file (or model folder), named like an attacker would name it
        where = tmp_path / "in" / str(index)
        where.mkdir(parents=True)
        if rng.random() < 0.3:
            target = where / _file_name(rng)
            target.mkdir()
            (target / "tokenizer_config.json").write_text(json.dumps({"response_template": template}), encoding="utf-8")
        else:
            target = where / (_file_name(rng) + ".json")
            target.write_text(json.dumps(template), encoding="utf-8")
        name = f"m{index}"
        label, command = _banner_labels(str(target), f"{name}.py")  # what `respc compile TARGET -o mN.py` writes
        try:
            source = compile_source(str(target), source_name=label, command=command).source
        except TemplateError:
            refused += 1
            continue
        assert source.startswith(HEADER) and source.isascii()
        assert all(re.fullmatch(r"[ -~]*", line) for line in source.splitlines())
        assert_inert(source)
        (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
        expected[name] = _in_memory(source, name, prefix, text)
        cases.append([name, prefix, text])
        if len(cases) <= 2:  # the slow check on a few: no codec reads the file as other code
            read_as_every_codec(source)
    assert refused <= COUNT // 4, f"{refused} of {COUNT} random templates refused: the fuzz tests too little"
    proc = subprocess.run([sys.executable, "-c", _IMPORTER], input=json.dumps(cases), cwd=tmp_path,
                          capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout) == json.loads(json.dumps(expected, ensure_ascii=True))
    planted = {CANARY, "PWNED"} & set(os.listdir(tmp_path))
    assert not planted, f"a template ran code: {planted}"
