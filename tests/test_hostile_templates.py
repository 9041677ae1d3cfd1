"""Hostile templates (docs/security.md "Generated code": template values reach the module only as data).

Field names, delimiters, patterns, defaults, join separators and transform values full of quotes,
backslashes, newlines, triple quotes, braces, ``{content}``-like literals, NUL, U+2028, non-ASCII,
Python code, ``#`` comment tricks and Jinja syntax must compile into a module that

* is valid Python (``ast.parse``) and byte-identical across compiles (also under another
  ``PYTHONHASHSEED``, in a fresh process);
* defines only the known top-level names and names nothing from the template as code;
* executes nothing from the template (the sentinel file ``PWNED`` is never created, neither by the
  in-memory compile nor by importing the written file in a fresh process);
* parses to the literal expected message, whole and one character at a time.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

import respc
from respc.compiler.api import compile_source
from respc.runtime.errors import TemplateError
from respc.runtime.scanners import scanner_sources
from support_hostile import FORBIDDEN_IDENTIFIERS, KNOWN_NAMES, NUMBERED, assert_inert

CODE = "__import__('os').system('touch PWNED')"

# (template, prefix, text, expected message)
HOSTILE = {
    "quotes-backslashes": (
        {
            "defaults": {"role": "assistant", "note'''": 'say """hi"""'},
            "start_anchor": '"""\'\'\'',
            "fields": {
                'reason"""ing': {"open": '<think """>', "close": "</think '''>"},
                "content'''": {"close": '\\"""end'},
            },
        },
        'system """\'\'\' junk """\'\'\'<think """>pre',
        ' "quoted" \'\'\' thought</think \'\'\'>answer with \\ and """<- \\"""end trailing',
        {"role": "assistant", "note'''": 'say """hi"""', 'reason"""ing': 'pre "quoted" \'\'\' thought',
         "content'''": "trailing"},
    ),
    "python-code": (
        {
            "defaults": {CODE: CODE, "role": "assistant"},
            "start_anchor": "\n" + CODE + "\n",
            "fields": {
                CODE: {"open": "')\n" + CODE + "\n#", "close": "\n#')\nexec(" + repr(CODE) + ")\n",
                       "content": "json",
                       "transform": {"call": CODE, CODE: "{content}", "first": "{content.a}"}},
                "content": {"close": ['"); ' + CODE + "  # ", "\\"]},
            },
        },
        "",
        "hi ')\n" + CODE + '\n#{"a": "' + CODE + '"}\n#\')\nexec(' + repr(CODE) + ")\n" + "bye\\last",
        {CODE: {"call": CODE, CODE: {"a": CODE}, "first": CODE}, "role": "assistant", "content": "last"},
    ),
    "jinja-braces": (
        {
            "start_anchor": "{{ bos_token }}{% generation %}",
            "fields": {
                "{{ field }}": {"open": "{% tool %}", "close": "{% endtool %}", "content": "json", "repeats": True,
                                "transform": {"name": "{content.name}", "args": "{content.arguments}",
                                              "raw": "{{ raw }}", "pct": "{% raw %}", "brace": "{content",
                                              "empty": "{}", "{content}": "{not.closed"}},
                "{content}": {"open": "{content}", "close": "{/content}"},
                "content": {"repeats": True, "join": "\n'''\"\"\"{content}\n"},
            },
        },
        "",
        'pre {content}lit{/content} mid {% tool %}{"name": "f", "arguments": {"x": "{{y}}"}}{% endtool %} post',
        {"content": "pre\n'''\"\"\"{content}\nmid\n'''\"\"\"{content}\npost", "{content}": "lit",
         "{{ field }}": [{"name": "f", "args": {"x": "{{y}}"}, "raw": "{{ raw }}", "pct": "{% raw %}",
                          "brace": "{content", "empty": "{}", "{content}": "{not.closed"}]},
    ),
    "control-chars-unicode": (
        {
            "defaults": {"role": "assistant", "nul\x00key": "v\x00", "ls": "\u2028\u2029\x85"},
            "start_anchor": "\x00\u2028",
            "fields": {
                "思考\u2028": {"open": "\x00<думать>\u2029", "close": "\r\n\x00"},
                "content": {"close": "\x0c", "repeats": True, "join": "\r"},
            },
        },
        "junk\x00\u2028",
        "héllo\x00<думать>\u2029 🤖 thought\r\n\x00 answer ☕\x0cgone",
        {"role": "assistant", "nul\x00key": "v\x00", "ls": "\u2028\u2029\x85", "思考\u2028": "🤖 thought",
         "content": "héllo\ranswer ☕\rgone"},
    ),
    "regex-comments": (
        {
            "start_anchor_pattern": r"(?#''' \"\"\" __import__ os system)<\|a\|>",
            "fields": {
                "calls": {"open_pattern": "<call name=\"(?P<name>[^\"]+)\"(?#\"\"\"'''\n)>",
                          "close_pattern": "(?x) </call \\s* (?P<tag>[a-z]*) > # '''\"\"\" " + CODE + "\n",
                          "content": "json", "repeats": True,
                          "transform": {"name": "{name}", "arguments": "{content}", "tag": "{tag}"}},
                "content": {"repeats": True, "join": "#"},
            },
        },
        "x<|a|>",
        'go <call name="f\'\'\'\\">{"k": "v"}</call  end>done',
        {"content": "go#done", "calls": [{"name": "f'''\\", "arguments": {"k": "v"}, "tag": "end"}]},
    ),
    "content-args": (
        {
            "start_anchor": "A",
            "fields": {
                "kv": {"open": "<kv>", "close": "</kv>", "content": "kv-lines",
                       "content_args": {"line_sep": "'''\n", "kv_sep": '"""=', "strip": True}},
                "xml": {"open": "<x>", "close": "</x>", "content": "xml-inline",
                        "content_args": {"tag_pattern": "<(?P<key>\\w+)>(?P<value>.*?)</(?P=key)>(?#'''" + '"""' + ")",
                                         "value_parser": {"name": "json", "args": {"allow_non_json": True}}}},
                "js": {"open": "<j>", "close": "</j>", "content": "json",
                       "content_args": {"unquoted_keys": True, "string_delims": [["<<'''", '""">>']]}},
            },
        },
        "",
        "<kv>a\"\"\"=1'''\nb \"\"\"= {x} '''\n</kv><x><n>2</n><s>__import__</s></x>"
        "<j>{k: <<'''it's \"q\" \\ ok\"\"\">>}</j>",
        {"kv": {"a": "1", "b": "{x}"}, "xml": {"n": 2, "s": "__import__"}, "js": {"k": "it's \"q\" \\ ok"}},
    ),
}

IDS = list(HOSTILE)


#: what a scanner the runtime writes from a module's records may call (runtime/scanners.py)
SCANNER_CALLEES = {"len", "buf.find", "m.span", "m.start", "q.start", "j.start", "b.end", "literal_hold",
                   "_rt.lead_search", "_rt.barrier_search", "_rt.partial_search", "_rt.partial_late",
                   "_rt.partial_barrier", "_rt.window_partial"}


def _assert_built_inert(module) -> None:
    """The scanners the runtime writes from a hostile template's records: template text only as
    str constants, names only the runtime's own and the checked _D<k> globals (docs/security.md,
    "Declared scanners and named records")."""
    for parser_class in (module.ResponseParser, getattr(module, "_RecoverParser", None)):
        if parser_class is None:
            continue
        for source in scanner_sources(parser_class):
            tree = ast.parse(source)
            callees = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
            assert callees <= SCANNER_CALLEES | {c for c in callees
                                                 if re.fullmatch(r"(_R)?_D\d+\.(search|match)|[PBL]\d+\.search", c)}
            assert all(type(n.value) in (str, int, bool) or n.value is None
                       for n in ast.walk(tree) if isinstance(n, ast.Constant))
            identifiers = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
            assert identifiers & FORBIDDEN_IDENTIFIERS == set()


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    assert not (tmp_path / "PWNED").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", IDS)
def test_source_is_valid_inert_python(name, sandbox):
    template = HOSTILE[name][0]
    source = compile_source(template).source
    assert_inert(source)
    compile(source, f"<{name}>", "exec")  # byte-compiles too (no NUL, no stray line breaks)
    # printable ASCII, UTF-8 declared on line 1 (docs/security.md, "Generated code")
    assert source.startswith("# -*- coding: utf-8 -*-\n") and source.isascii()
    assert all(c.isprintable() or c == "\n" for c in source)


@pytest.mark.parametrize("name", IDS)
def test_deterministic(name):
    template = HOSTILE[name][0]
    first = compile_source(template).source
    second = compile_source(json.loads(json.dumps(template))).source
    assert first == second


@pytest.mark.parametrize("name", IDS)
def test_parses_literal_message(name, sandbox):
    template, prefix, text, expected = HOSTILE[name]
    module = respc.compile_template(template)
    assert module.parse_response(text, prefix=prefix) == expected
    _assert_built_inert(module)
    parser = module.ResponseParser(prefix)
    for ch in text:
        parser.feed(ch)
    assert parser.finalize()[0] == expected
    assert respc.parse_response(text, template, prefix=prefix) == expected
    module_names = {n for n in vars(module) if not n.startswith("__") or n == "__all__"}
    assert {n for n in module_names - KNOWN_NAMES if not NUMBERED.fullmatch(n)} == set()
    assert list(module.FIELD_NAMES) == list(template["fields"])


def test_names_are_data_not_code():
    """A field named like code is a string key of the message; the code text is a literal value."""
    module = respc.compile_template(HOSTILE["python-code"][0])
    assert module.FIELD_NAMES == (CODE, "content")
    assert module.DEFAULTS == {CODE: CODE, "role": "assistant"}


_SUBPROCESS = textwrap.dedent("""
    import importlib.util, json, os, sys
    from respc.compiler.api import compile_source
    cases = json.load(sys.stdin)
    out = {}
    for name, (template, prefix, text) in cases.items():
        source = compile_source(template).source
        path = name + ".py"
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(source)
        spec = importlib.util.spec_from_file_location("hostile_" + name.replace("-", "_"), path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out[name] = {"source": source, "message": module.parse_response(text, prefix=prefix)}
    out["__files__"] = sorted(os.listdir("."))
    print(json.dumps(out))
""")


def test_fresh_process_other_hashseed_same_bytes_nothing_run(tmp_path):
    cases = {name: [t, p, x] for name, (t, p, x, _) in HOSTILE.items()}
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    proc = subprocess.run([sys.executable, "-c", _SUBPROCESS], input=json.dumps(cases), cwd=tmp_path,
                          capture_output=True, text=True, encoding="utf-8", env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result.pop("__files__") == sorted(f"{name}.py" for name in HOSTILE)  # no PWNED
    for name, (template, _, _, expected) in HOSTILE.items():
        assert result[name]["source"] == compile_source(template).source, name
        assert result[name]["message"] == expected, name


# -- a sweep: each nasty string in every slot of one small template --------------------------------
NASTY = [
    'q"uote', "s'ingle", "back\\slash", "trail\\", "new\nline", "cr\rlf\r\n", 'tri"""ple', "tri'''ple",
    "'''\"\"\"", "{brace}", "{content}", "{{ jinja }}", "{% if x %}{% endif %}", "nul\x00byte", "ls\u2028ps\u2029",
    "ünï©ødé 思考 🤖", CODE, "x # comment\n#", "\\n", "\\'", "${x}", "%s %(x)s", "\t\x0b\x0c\x1b\x7f\x85",
    "\ufeffbom", "}", "{",
]


@pytest.mark.parametrize("nasty", NASTY, ids=[f"nasty{i}" for i in range(len(NASTY))])
def test_sweep(nasty, sandbox):
    # a transform string holding a {placeholder} is a placeholder (or a load error), not a literal
    literal = "literal" if re.search(r"\{\w+(?:\.\w+)*\}", nasty) else nasty
    template = {
        "defaults": {"d" + nasty: nasty},
        "start_anchor": "@" + nasty + "@",
        "fields": {
            nasty: {"open": "[[" + nasty, "close": nasty + "]]", "transform": {nasty: "{content}", "lit": literal}},
            "rest" + nasty: {"repeats": True, "join": nasty},
        },
    }
    source = compile_source(template).source
    assert_inert(source)
    assert compile_source(template).source == source
    module = respc.compile_template(template)
    prefix = "junk @" + nasty + "@ more @" + nasty + "@"
    text = "one [[" + nasty + " body " + nasty + "]]two[[" + nasty + "x" + nasty + "]]three"
    expected = {"d" + nasty: nasty, nasty: {nasty: "x", "lit": literal}, "rest" + nasty: "one" + nasty + "two" + nasty + "three"}
    assert module.parse_response(text, prefix=prefix) == expected
    parser = module.ResponseParser(prefix)
    for ch in text:
        parser.feed(ch)
    assert parser.finalize()[0] == expected


def test_lone_surrogate_is_handled_or_rejected():
    """JSON allows "\\ud800"; compiling must either work or raise TemplateError, never crash."""
    template = json.loads('{"start_anchor": "A", "defaults": {"s": "\\ud800"}, "fields": {"content": {}}}')
    try:
        module = respc.compile_template(template)
    except TemplateError:
        return
    assert module.parse_response("hi", prefix="") == {"s": "\ud800", "content": "hi"}
