"""The region automaton as a diagram: ``respc graph TEMPLATE [--format mermaid|dot|svg]``.

Built only from :class:`respc.compiler.automaton.Automaton`, the same object the emitter lays out
as the generated parser's transition table, so the picture cannot drift from the parser:

* one node per state (``Automaton.states``; state 0 is OUTSIDE, the implicit field or the null
  sink), plus an entry node for where parsing starts (after the template's start anchor in the
  prefix);
* one edge per watched delimiter (``State.watches``), from the watching state to ``Watch.target``,
  labelled with the watch's kind (``open``, ``close``, or any later kind such as a nested
  region's ``nest``/``end``) and its delimiter: literals quoted and joined by ``|``, a regex
  between slashes. An ``action`` attribute, when a watch has one, is added to the label, so
  transitions the automaton gains later appear without a change here.

Renderers: :func:`to_mermaid` (a Mermaid ``flowchart``), :func:`to_dot` (Graphviz) and
:func:`to_svg` (``dot -Tsvg``; raises :class:`GraphvizMissing` when Graphviz is not installed).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass

from .automaton import Automaton, Watch
from .ir import Delimiter, Template

__all__ = ["Node", "Edge", "Graph", "build_graph", "delimiter_label", "edge_label", "to_mermaid", "to_dot",
           "to_svg", "render", "FORMATS", "GraphvizMissing"]

FORMATS = ("mermaid", "dot", "svg")

#: the entry node's id (not a state: where the parser starts, after the start anchor)
START = "start"


class GraphvizMissing(RuntimeError):
    """``--format svg`` needs Graphviz's ``dot`` program on PATH."""


@dataclass(frozen=True)
class Node:
    """One diagram node.

    Attributes:
        id (str): ``s<index>`` for automaton state ``index``, or :data:`START`.
        label (str): the state's readable name (``State.name``) or the entry's text.
        field (str | None): the name of the field the state fills (None: null sink, entry).
        implicit (bool): the state is OUTSIDE with an implicit field.
    """

    id: str
    label: str
    field: str | None
    implicit: bool = False


@dataclass(frozen=True)
class Edge:
    """One diagram edge: one watched delimiter of one state (or the entry edge).

    Attributes:
        source (str), target (str): node ids.
        label (str): see :func:`edge_label`.
        kind (str): the watch's kind (``open``/``close``/...), ``start`` for the entry edge.
    """

    source: str
    target: str
    label: str
    kind: str


@dataclass(frozen=True)
class Graph:
    """Nodes in state order, then edges in state order and, inside a state, watch order."""

    title: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]


def _quoted(text: str) -> str:
    """A literal as a JSON string: quotes, backslashes, newlines and control characters visible."""
    return json.dumps(text, ensure_ascii=False)


#: control characters in a regex source, written the way the regex reads them
_VISIBLE = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def delimiter_label(delim: Delimiter) -> str:
    """How a delimiter is written on an edge.

    Returns:
        str: literals as JSON strings joined by `` | `` (``"</think>"``), a regex as ``/pattern/``
        with control characters escaped (``/<tool_call>\\n/``).
    """
    if delim.literals is not None:
        return " | ".join(_quoted(lit) for lit in delim.literals)
    return "/" + "".join(_VISIBLE.get(c, c) if c >= " " or c in _VISIBLE else f"\\x{ord(c):02x}"
                         for c in delim.pattern) + "/"


def edge_label(watch: Watch, field_name: str) -> str:
    """The label of the edge for one watch: ``"<kind>[ <action>] <field>: <delimiter>"``.

    Args:
        watch: the watched delimiter (any object with ``kind``, ``delimiter`` and optionally
            ``action``).
        field_name: the name of the field whose delimiter it is (``Template.fields[watch.field]``).
    """
    action = getattr(watch, "action", None)
    kind = watch.kind if not action or action == watch.kind else f"{watch.kind} {action}"
    return f"{kind} {field_name}: {delimiter_label(watch.delimiter)}"


def build_graph(template: Template, automaton: Automaton) -> Graph:
    """The diagram of a compiled template.

    Args:
        template: the IR (for field names and the start anchor).
        automaton: its region automaton (:func:`respc.compiler.automaton.build_automaton`).

    Returns:
        Graph: one node per state plus the entry node, one edge per watch plus the entry edge.
    """
    fields = template.fields
    nodes = [Node(START, "start", None)]
    for state in automaton.states:
        field = None if state.field is None else fields[state.field].name
        implicit = state.index == 0 and state.field is not None
        nodes.append(Node(f"s{state.index}", state.name, field, implicit))
    edges = [Edge(START, "s0", f"prefix, after start anchor {delimiter_label(template.start_anchor)}", "start")]
    for state in automaton.states:
        for watch in state.watches:
            edges.append(Edge(f"s{state.index}", f"s{watch.target}", edge_label(watch, fields[watch.field].name),
                              watch.kind))
    return Graph(template.source, tuple(nodes), tuple(edges))


# --- renderers ------------------------------------------------------------------------------

def _mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label (entity codes for characters Mermaid reads)."""
    out = text.replace("#", "#35;")
    for char, code in (('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("|", "#124;"), ("`", "#96;"),
                       ("[", "#91;"), ("]", "#93;"), ("{", "#123;"), ("}", "#125;")):
        out = out.replace(char, code)
    return out


def to_mermaid(graph: Graph) -> str:
    """A Mermaid ``flowchart LR``: one ``id["label"]`` line per node, one ``a -->|"label"| b`` per edge."""
    lines = ["flowchart LR", f"  %% region automaton of {graph.title.replace(chr(10), ' ')}"]
    for node in graph.nodes:
        shape = ('(["', '"])') if node.id == START else ('["', '"]')
        lines.append(f"  {node.id}{shape[0]}{_mermaid_text(node.label)}{shape[1]}")
    for edge in graph.edges:
        lines.append(f'  {edge.source} -->|"{_mermaid_text(edge.label)}"| {edge.target}')
    return "\n".join(lines) + "\n"


def _dot_string(text: str) -> str:
    """A DOT double-quoted string (backslashes doubled, so ``\\n`` in a label stays two characters)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


#: node fill colours: the implicit field, explicit regions, the null sink and the entry
_FILL = {"implicit": "#dbe9ff", "region": "#fff1cc", "sink": "#eeeeee", "start": "#ffffff"}


def to_dot(graph: Graph) -> str:
    """A Graphviz ``digraph``: nodes ``s<index>`` (boxes; the implicit field double-bordered), one
    ``a -> b [label=...]`` line per edge, in :class:`Graph` order."""
    lines = [f"digraph {_dot_string('respc ' + graph.title)} {{", "  rankdir=LR;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
             '  edge [fontname="Helvetica", fontsize=10];']
    for node in graph.nodes:
        if node.id == START:
            attrs = f'shape=oval, fillcolor="{_FILL["start"]}"'
        elif node.implicit:
            attrs = f'peripheries=2, fillcolor="{_FILL["implicit"]}"'
        else:
            attrs = f'fillcolor="{_FILL["region" if node.field is not None else "sink"]}"'
        lines.append(f"  {node.id} [label={_dot_string(node.label)}, {attrs}];")
    for edge in graph.edges:
        style = ", style=dashed" if edge.kind == "start" else ""
        lines.append(f"  {edge.source} -> {edge.target} [label={_dot_string(edge.label)}{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_svg(graph: Graph) -> str:
    """The DOT diagram rendered by Graphviz (``dot -Tsvg``).

    Raises:
        GraphvizMissing: ``dot`` is not on PATH (the message names the Debian package).
        RuntimeError: ``dot`` failed (its first line of stderr is in the message).
    """
    dot = shutil.which("dot")
    if dot is None:
        raise GraphvizMissing("--format svg needs Graphviz's `dot` program, which is not installed "
                              "(apt-get install graphviz); --format dot or mermaid work without it")
    done = subprocess.run([dot, "-Tsvg"], input=to_dot(graph).encode("utf-8"), capture_output=True, timeout=120)
    if done.returncode != 0:
        first = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[0]
        raise RuntimeError(f"dot -Tsvg failed (exit {done.returncode}): {first}")
    return done.stdout.decode("utf-8")


def render(graph: Graph, fmt: str) -> str:
    """Render ``graph`` in one of :data:`FORMATS`.

    Raises:
        ValueError: an unknown format; GraphvizMissing / RuntimeError: see :func:`to_svg`.
    """
    if fmt == "mermaid":
        return to_mermaid(graph)
    if fmt == "dot":
        return to_dot(graph)
    if fmt == "svg":
        return to_svg(graph)
    raise ValueError(f"unknown graph format {fmt!r}; expected one of {', '.join(FORMATS)}")
