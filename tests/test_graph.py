"""``respc graph``: the diagram's edges are the automaton's watches, in every format, for every template.

The expected edges are read from ``Automaton.states[*].watches`` here, independently of
``build_graph``; the rendered Mermaid and DOT texts are parsed back line by line and compared to
them, so a renderer that drops, duplicates or mislabels a transition fails. SVG is rendered by
Graphviz when ``dot`` is installed (skipped otherwise) and its edge titles are counted.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from respc.compiler.api import compile_source
from respc.compiler.cli import main
from respc.compiler.graph import build_graph, to_dot, to_mermaid, to_svg
from support import REPO

TEMPLATES = sorted((REPO / "templates").glob("*.json"))
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed "
                               "(apt-get install graphviz)")


def _expected_edges(compiled) -> list[tuple[str, str, str, str]]:
    """(source, target, kind, field name) per watch, straight from the automaton."""
    fields = compiled.template.fields
    return [(f"s{state.index}", f"s{watch.target}", watch.kind, fields[watch.field].name)
            for state in compiled.automaton.states for watch in state.watches]


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
    watches = [w for s in compiled.automaton.states for w in s.watches]
    graph = build_graph(compiled.template, compiled.automaton)
    assert [n.id for n in graph.nodes] == ["start"] + [f"s{s.index}" for s in compiled.automaton.states]
    assert graph.nodes[1].implicit == (compiled.template.implicit is not None)

    mermaid = re.findall(r'^  (\w+) -->\|"(.*)"\| (\w+)$', to_mermaid(graph), re.M)
    dot = re.findall(r'^  (\w+) -> (\w+) \[label="((?:[^"\\]|\\.)*)"', to_dot(graph), re.M)
    mermaid = [(a, b, _unmermaid(label)) for a, label, b in mermaid]
    dot = [(a, b, _undot(label)) for a, b, label in dot]
    for rendered in (mermaid, dot):
        assert rendered[0][:2] == ("start", "s0")
        _literals_in(rendered[0][2], compiled.template.start_anchor)
        body = rendered[1:]
        assert [(a, b) for a, b, _ in body] == [(a, b) for a, b, _, _ in expected]
        for (_, _, label), (_, _, kind, field), watch in zip(body, expected, watches):
            assert label.startswith(f"{kind} {field}: "), label
            _literals_in(label, watch.delimiter)


def test_qwen3_edges_literally():
    compiled = compile_source(REPO / "templates" / "qwen3.json")
    graph = build_graph(compiled.template, compiled.automaton)
    assert [(e.source, e.target, e.label) for e in graph.edges[1:]] == [
        ("s0", "s1", 'open reasoning_content: "<think>"'),
        ("s0", "s2", 'open tool_calls: "<tool_call>"'),
        ("s0", "s0", 'close content: "<|im_end|>" | "<|endoftext|>" | "</think>"'),
        ("s1", "s0", 'close reasoning_content: "</think>"'),
        ("s2", "s0", 'close tool_calls: "</tool_call>"'),
    ]


def test_a_later_watch_kind_or_action_is_drawn_without_change():
    """Nested regions (v2 ``inside``) will add watches of new kinds/actions; they appear by themselves."""
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
    assert out.startswith("flowchart LR\n") and out.count(" -->|") == 6
    assert main(["graph", "qwen3", "--format", "dot", "-o", str(tmp_path / "g.dot")]) == 0
    assert (tmp_path / "g.dot").read_text(encoding="utf-8").count(" -> ") == 6
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
                                     "s1&#45;&gt;s0", "s2&#45;&gt;s0"])
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
