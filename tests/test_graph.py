"""``respc graph``: the diagram's edges are the automaton's watches, in every format, for every template.

The expected edges are read from ``Automaton.states[*].watches`` (and, for v2 regions that end
at their value, ``Field.end`` and ``Automaton.after_state``) here, independently of
``build_graph``; the rendered Mermaid and DOT texts are parsed back line by line and compared to
them, so a renderer that drops, duplicates or mislabels a transition fails. Where a close
returns to (``return_states``: OUTSIDE, or the region a nested one suspended) is checked
literally on the catalogue's nesting templates. SVG is rendered by Graphviz when ``dot`` is
installed (skipped otherwise) and its edge titles are counted.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from respc.compiler.api import compile_source
from respc.compiler.cli import main
from respc.compiler.graph import build_graph, return_states, to_dot, to_mermaid, to_svg
from support import REPO

TEMPLATES = sorted((REPO / "templates").glob("*.json"))
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed "
                               "(apt-get install graphviz)")


def _expected_edges(compiled) -> list[tuple[str, str, str, object]]:
    """(source, target, label start, watch or None) per edge after the entry edge, in state order.

    A watch's label starts with its kind, then its action when that differs (``open nest``,
    ``open defer``, ``close after``), then its field. Opens go to ``Watch.target``; closes to each
    of the field's return states. A region with ``"end": "value"`` adds ``value ends <field>`` to
    its after state (or its return states when it has no close); an after state adds
    ``no close after <field>`` back to the return states.
    """
    template, automaton = compiled.template, compiled.automaton
    fields = template.fields
    returns = return_states(template, automaton)
    after_of = {index: fi for fi, index in automaton.after_state.items()}
    out = []
    for state in automaton.states:
        for watch in state.watches:
            assert watch.action in ("open", "nest", "close", "after", "defer"), watch
            words = [watch.kind] + ([watch.action] if watch.action != watch.kind else []) + [fields[watch.field].name]
            targets = (watch.target,) if watch.kind == "open" or watch.field == template.implicit else returns[watch.field]
            out += [(f"s{state.index}", f"s{t}", " ".join(words) + ": ", watch) for t in targets]
        if state.index in after_of:
            fi = after_of[state.index]
            out += [(f"s{state.index}", f"s{t}", f"no close after {fields[fi].name}", None) for t in returns[fi]]
        elif state.index and state.field is not None and fields[state.field].end == "value":
            fi = state.field
            ends = (automaton.after_state[fi],) if fi in automaton.after_state else returns[fi]
            out += [(f"s{state.index}", f"s{t}", f"value ends {fields[fi].name}", None) for t in ends]
    return out


def _unmermaid(text: str) -> str:
    for code, char in (("#quot;", '"'), ("#lt;", "<"), ("#gt;", ">"), ("#124;", "|"), ("#96;", "`"),
                       ("#91;", "["), ("#93;", "]"), ("#123;", "{"), ("#125;", "}"), ("#35;", "#")):
        text = text.replace(code, char)
    return text


def _undot(text: str) -> str:
    return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def _literals_in(label: str, delim) -> None:
    """Every literal of the delimiter (or its pattern) is written in the label."""
    if delim.literals is not None:
        for lit in delim.literals:
            assert json.dumps(lit, ensure_ascii=False) in label, (lit, label)
    else:
        visible = delim.pattern.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
        assert "/" + visible + "/" in label, (delim.pattern, label)


@pytest.mark.parametrize("path", TEMPLATES, ids=[p.stem for p in TEMPLATES])
def test_edges_are_the_automatons_watches(path: Path):
    compiled = compile_source(path)
    expected = _expected_edges(compiled)
    graph = build_graph(compiled.template, compiled.automaton)
    assert [n.id for n in graph.nodes] == ["start"] + [f"s{s.index}" for s in compiled.automaton.states]
    assert graph.nodes[1].implicit == (compiled.template.implicit is not None)
    fields = compiled.template.fields
    for node, state in zip(graph.nodes[1:], compiled.automaton.states):
        null_slot = (state.index in compiled.automaton.state_of_field.values() and compiled.template.version >= 2
                     and fields[state.field].slot is None)
        assert node.discarded == null_slot and ("text discarded" in node.label) == null_slot
        assert node.after == (state.index in compiled.automaton.after_state.values())

    mermaid = re.findall(r'^  (\w+) -->\|"(.*)"\| (\w+)$', to_mermaid(graph), re.M)
    dot = re.findall(r'^  (\w+) -> (\w+) \[label="((?:[^"\\]|\\.)*)"', to_dot(graph), re.M)
    mermaid = [(a, b, _unmermaid(label)) for a, label, b in mermaid]
    dot = [(a, b, _undot(label)) for a, b, label in dot]
    for rendered in (mermaid, dot):
        assert rendered[0][:2] == ("start", "s0")
        _literals_in(rendered[0][2], compiled.template.start_anchor)
        body = rendered[1:]
        assert [(a, b) for a, b, _ in body] == [(a, b) for a, b, _, _ in expected]
        for (_, _, label), (_, _, head, watch) in zip(body, expected):
            if watch is None:
                assert label == head
            else:
                assert label.startswith(head), (label, head)
                _literals_in(label, watch.delimiter)


def test_qwen3_edges_literally():
    compiled = compile_source(REPO / "templates" / "qwen3.json")
    graph = build_graph(compiled.template, compiled.automaton)
    assert [(e.source, e.target, e.label) for e in graph.edges[1:]] == [
        ("s0", "s1", 'open reasoning_content: "<think>"'),
        ("s0", "s2", 'open tool_calls: "<tool_call>"'),
        ("s0", "s0", 'close content: "<|im_end|>" | "<|endoftext|>" | "</think>"'),
        ("s1", "s0", 'close reasoning_content: "</think>"'),
        # v2: a call inside reasoning that is never closed ends it ("end-if-unclosed")
        ("s1", "s2", 'open defer tool_calls: "<tool_call>"'),
        ("s2", "s0", 'close tool_calls: "</tool_call>"'),
    ]
    assert [e.action for e in graph.edges[1:]] == ["open", "open", "close", "close", "defer", "close"]


def test_nested_regions_return_to_the_region_they_suspended():
    """dots: a call nested in the discarded section returns to it; the same call opened outside returns there."""
    compiled = compile_source(REPO / "templates" / "dots.json")
    graph = build_graph(compiled.template, compiled.automaton)
    assert [n.label for n in graph.nodes[1:]] == [
        "outside (implicit field 'content')", "region 'call_section' (slot null: text discarded)",
        "region 'tool_calls'", "region 'json_tool_call' -> slot 'tool_calls'"]
    assert [(e.source, e.target, e.label.split(":")[0]) for e in graph.edges[1:]] == [
        ("s0", "s1", "open call_section"), ("s0", "s2", "open tool_calls"), ("s0", "s0", "close content"),
        ("s1", "s0", "close call_section"), ("s1", "s2", "open nest tool_calls"),
        ("s1", "s3", "open nest json_tool_call"), ("s2", "s0", "close tool_calls"),
        ("s2", "s1", "close tool_calls"), ("s3", "s1", "value ends json_tool_call")]
    olmo3 = compile_source(REPO / "templates" / "olmo3.json")
    fields = {f.name: i for i, f in enumerate(olmo3.template.fields)}
    assert return_states(olmo3.template, olmo3.automaton) == {fields["call_section"]: (0,), fields["tool_calls"]: (1,)}


def test_value_end_and_trailing_close_edges():
    compiled = compile_source(REPO / "templates" / "granite3.json")
    graph = build_graph(compiled.template, compiled.automaton)
    assert [(e.source, e.target, e.kind, e.label) for e in graph.edges if e.source in ("s2", "s3")] == [
        ("s2", "s3", "value", "value ends tool_calls"),
        ("s3", "s0", "close", 'close after tool_calls: "</tool_call>"'),
        ("s3", "s0", "return", "no close after tool_calls")]
    assert graph.nodes[4].label == "after the value of 'tool_calls'" and graph.nodes[4].after
    dot = to_dot(graph)
    assert 's2 -> s3 [label="value ends tool_calls", style=bold];' in dot
    assert 's3 -> s0 [label="no close after tool_calls", style=dotted];' in dot


def test_a_later_watch_kind_or_action_is_drawn_without_change():
    """A watch of another state (here a made-up ``nest`` from reasoning) is drawn by itself, with its action."""
    compiled = compile_source(REPO / "templates" / "qwen3.json")
    state = compiled.automaton.states[1]
    nested = type("NestWatch", (), {"kind": "open", "action": "nest", "field": 1, "target": 2,
                                    "delimiter": compiled.automaton.states[0].watches[1].delimiter})()
    fake_states = list(compiled.automaton.states)
    fake_states[1] = type(state)(state.index, state.field, state.name, state.watches + (nested,))
    fake = type(compiled.automaton)(tuple(fake_states), compiled.automaton.state_of_field,
                                    compiled.automaton.context, ())
    graph = build_graph(compiled.template, fake)
    assert ("s1", "s2", 'open nest tool_calls: "<tool_call>"') in [(e.source, e.target, e.label)
                                                                   for e in graph.edges]


def test_regex_delimiters_and_control_characters_are_visible():
    compiled = compile_source({"start_anchor": "A\n", "fields": {
        "content": {"content": "text"},
        "calls": {"open_pattern": "<call\tname=(?P<n>\\w+)>\n", "close": "</call>\n", "content": "text",
                  "transform": {"name": "{n}", "body": "{content}"}}}})
    graph = build_graph(compiled.template, compiled.automaton)
    labels = [e.label for e in graph.edges]
    assert 'open calls: /<call\\tname=(?P<n>\\w+)>\\n/' in labels
    assert 'close calls: "</call>\\n"' in labels
    dot = to_dot(graph)
    assert '[label="open calls: /<call\\\\tname=(?P<n>\\\\w+)>\\\\n/"]' in dot
    assert "\t" not in dot.split("\n", 1)[1]


def test_cli_formats(capsys, tmp_path):
    assert main(["graph", "qwen3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("flowchart LR\n") and out.count(" -->|") == 7  # the entry and 6 watches
    assert main(["graph", "qwen3", "--format", "dot", "-o", str(tmp_path / "g.dot")]) == 0
    assert (tmp_path / "g.dot").read_text(encoding="utf-8").count(" -> ") == 7
    # -o says what it wrote in one line on stderr, as compile -o and parse --html do (README "Use")
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"respc: wrote {tmp_path / 'g.dot'} (qwen3, dot)\n")
    assert main(["graph", "qwen3", "--format", "png"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_cli_svg_without_graphviz_is_one_line(capsys, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert main(["graph", "qwen3", "--format", "svg"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "apt-get install graphviz" in captured.err


@needs_dot
def test_svg_has_one_titled_edge_per_watch():
    compiled = compile_source(REPO / "templates" / "qwen3.json")
    svg = to_svg(build_graph(compiled.template, compiled.automaton))
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
    titles = re.findall(r'<g id="edge\d+" class="edge">\s*<title>(.*?)</title>', svg)
    assert sorted(titles) == sorted(["start&#45;&gt;s0", "s0&#45;&gt;s1", "s0&#45;&gt;s2", "s0&#45;&gt;s0",
                                     "s1&#45;&gt;s0", "s1&#45;&gt;s2", "s2&#45;&gt;s0"])
    assert "open reasoning_content: &quot;&lt;think&gt;&quot;" in svg


def test_readme_picture_shows_the_current_automaton():
    """docs/graph-qwen3.svg (README "Look at a template") carries every edge label of today's qwen3 automaton."""
    from html import unescape

    svg = unescape((REPO / "docs" / "graph-qwen3.svg").read_text(encoding="utf-8"))
    compiled = compile_source(REPO / "templates" / "qwen3.json")
    graph = build_graph(compiled.template, compiled.automaton)
    labels = re.findall(r"<text [^>]*>(.*?)</text>", svg)
    nodes = {n.label for n in graph.nodes}
    assert sorted(label for label in labels if label not in nodes) == sorted(e.label for e in graph.edges)


def test_mermaid_carries_no_raw_line_break(tmp_path, monkeypatch, capsys):
    """Issue 23, item 10: field names and paths put raw \\r / \\n into Mermaid text, where a line
    break starts a new statement (``click ...``). Every one is now an escape, in every format."""
    evil = "a\r\nclick s1 call alert(1)\n%%"
    template = {"respc_version": 2, "start_anchor": "A", "fields": {
        evil: {"open": "<x>", "close": "</x>"},
        "v\u2028" + evil: {"open": "<v>", "content": "json", "end": "value"},
        "content": {}}}
    folder = tmp_path / "dir\r\nclick s0 x"
    folder.mkdir()
    (folder / "t\u2028\x85.json").write_text(json.dumps(template), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    target = str(Path(folder.name) / "t\u2028\x85.json")
    compiled = compile_source(template)
    graph = build_graph(compiled.template, compiled.automaton)
    statement = re.compile(r'flowchart LR|  %% region automaton of .*|  start\(\["start"\]\)|  s\d+\["[^"\n]*"\]'
                           r'|  (start|s\d+) -->\|"[^"\n]*"\| s\d+')
    for fmt in ("mermaid", "dot"):
        assert main(["graph", target, "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert not set(out) & {"\r", "\x85", "\u2028", "\x0b", "\x0c"}, fmt
        lines = out.splitlines()
        if fmt == "mermaid":
            assert len(lines) == 2 + len(graph.nodes) + len(graph.edges)
            assert all(statement.fullmatch(line) for line in lines), lines
            assert "dir\\r\\nclick s0 x/t\\u2028\\x85.json" in lines[1]
        else:
            assert len(lines) == 4 + len(graph.nodes) + len(graph.edges) + 1
