"""Chat templates render with a deadline and size caps (issue 23 item 5; docs/security.md, "Limits").

The attacks, as the issue writes them: a chat template of nested ``range(100000)`` loops hung
``respc detect``, ``check --chat-template`` and compiling a model folder; ``"a" * 400000000`` took
1.6 GB. Each now stops with a :class:`ChatTemplateLimitError` naming the chat template.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest

from respc.compiler import chat_render
from respc.compiler.api import compile_source
from respc.compiler.chat_render import ChatTemplateLimitError, render
from respc.compiler.cli import main

NESTED = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
MULTIPLY = '{{ "a" * 400000000 }}'


def _model(tmp_path, source: str):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "chat_template.jinja").write_text(source, encoding="utf-8")
    return folder


def test_nested_range_loops_stop_at_the_deadline(tmp_path, capsys, monkeypatch):
    folder = _model(tmp_path, NESTED)
    for i, argv in enumerate((["detect", str(folder)],
                              ["compile", str(folder), "-o", str(tmp_path / "out.py")],
                              ["check", "qwen3", "--chat-template", str(folder / "chat_template.jinja")])):
        if i:  # the default deadline once; a shorter one keeps the other paths quick
            monkeypatch.setattr(chat_render, "RENDER_SECONDS", 0.25)
        t0 = time.perf_counter()
        assert main(argv) != 0
        assert time.perf_counter() - t0 < 10 * chat_render.RENDER_SECONDS
        err = capsys.readouterr().err
        assert "chat_template.jinja" in err and f"longer than {chat_render.RENDER_SECONDS:g} s" in err, err
    assert not (tmp_path / "out.py").exists()
    with pytest.raises(ChatTemplateLimitError):
        compile_source(folder)


def test_string_multiplication_is_refused_before_it_is_built(tmp_path, capsys):
    folder = _model(tmp_path, MULTIPLY)
    tracemalloc.start()
    try:
        assert main(["detect", str(folder)]) != 0
        assert main(["check", "qwen3", "--chat-template", str(folder / "chat_template.jinja")]) != 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000
    err = capsys.readouterr().err
    assert "chat_template.jinja" in err and "400,000,000" in err and f"{chat_render.MAX_VALUE:,}" in err


@pytest.mark.parametrize("source, words", [
    ('{{ "a"|center(400000000) }}', "'center' filter"),
    ('{{ "a".ljust(400000000) }}', "str.ljust"),
    ('{{ "{:>400000000}".format(1) }}', "str.format"),
    ('{{ "%0400000000d" % 1 }}', "'%'"),
    ('{{ 10 ** 1000000000 }}', "'**'"),
    ('{{ range(100000)|join("x" * 1000) }}', "'join' filter"),
    ('{% set ns = namespace(s="a") %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}', "'+'"),
    ('{% for i in range(100000) %}{{ "x" * 100 }}{% endfor %}', "rendered more than"),
    ('{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}', "recursed"),
    ('{{ ("a" * 999999)|replace("a", "a" * 999999) }}', "'replace' filter"),
    ('{{ ("a" * 999999).replace("a", "a" * 999999) }}', "str.replace"),
    ('{{ ("x" * 999999).join(range(100000)|map("string")) }}', "str.join"),
    ('{{ "\t\t".expandtabs(400000000) }}', "str.expandtabs"),
    ('{% set __respc_loop_guard__ = 1 %}{% set respc_loop_guard = 1 %}' + NESTED, "longer than"),
])
def test_other_ways_to_build_too_much_are_refused(source, words, monkeypatch):
    monkeypatch.setattr(chat_render, "RENDER_SECONDS", 0.25)
    with pytest.raises(ChatTemplateLimitError) as info:
        render(source, [{"role": "user", "content": "hi"}], add_generation_prompt=True, origin="m/chat_template.jinja")
    assert "m/chat_template.jinja" in str(info.value) and words in str(info.value)


def test_ordinary_templates_render_as_before():
    source = ("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{{ 'x'|center(5) }}"
              "{{ ['a', 'b']|join(',') }}{{ '%3d' % 3 }}{{ '{:>3}'.format(1) }}{{ 'ab' * 2 }}{{ 2 ** 10 }}"
              "{% for i in range(300) %}{% if loop.last %}{{ loop.length }}{% endif %}{% endfor %}"
              "{{ 'abc'|replace('b', 'xy') }}{{ '-'.join(['p', 'q']) }}{{ 'ab'.replace('a', 'c') }}")
    got = render(source, [{"role": "user", "content": "hi"}], add_generation_prompt=True)
    assert got == "<user>hi  x  a,b  3  1abab1024300axycp-qcb"
    # a template rendered outside render() keeps the size caps (and no stale deadline)
    template = chat_render.compile_template(MULTIPLY)
    with pytest.raises(ChatTemplateLimitError):
        template.render()
    assert chat_render.compile_template("{{ 'x' * 3 }}").render() == "xxx"
