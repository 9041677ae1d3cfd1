"""The region automaton as a diagram: ``respc graph TEMPLATE [--format mermaid|dot|svg]``.

Built only from :class:`respc.compiler.automaton.Automaton`, the same object the emitter lays out
as the generated parser's transition table, so the picture cannot drift from the parser:

* one node per state (``Automaton.states``; state 0 is OUTSIDE, the implicit field or the null
  sink), plus an entry node for where parsing starts (after the template's start anchor in the
  prefix);
* one edge per watched delimiter (``State.watches``), labelled with the watch's kind and, when it
  differs, its v2 transition action (``open``, ``open nest``, ``open defer``, ``close``,
  ``close after``), the field and the delimiter: literals quoted and joined by ``|``, a regex
  between slashes. An open goes to ``Watch.target``. A close (and a trailing ``after`` close)
  goes back to where the region returns (:func:`return_states`): OUTSIDE, or, for a region
  nested in another (``nest``), the suspended region's state -- the runtime keeps a stack, the
  automaton's ``target`` 0 only says "pop";
* v2 regions that end at their value (``"end": "value"``) have no close in their watch set: a
  ``value`` edge leads from the region to its *after* state (``Automaton.after_state``), or back
  where it returns when it has no close; an after state has a ``return`` edge back for the case
  that the optional close does not follow;
* nodes of regions whose slot is null say that their text is discarded (drawn dashed).

Renderers: :func:`to_mermaid` (a Mermaid ``flowchart``), :func:`to_dot` (Graphviz) and
:func:`to_svg` (``dot -Tsvg``; raises :class:`GraphvizMissing` when Graphviz is not installed).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass

from respc.runtime.errors import RespcError

from .automaton import Automaton, Watch
from .ir import Delimiter, Template

__all__ = ["Node", "Edge", "Graph", "build_graph", "return_states", "delimiter_label", "edge_label", "to_mermaid", "to_dot",
           "to_svg", "render", "FORMATS", "GraphvizMissing"]

FORMATS = ("mermaid", "dot", "svg")

#: the entry node's id (not a state: where the parser starts, after the start anchor)
START = "start"


class GraphvizMissing(RespcError, RuntimeError):
    """``--format svg`` needs Graphviz's ``dot`` program on PATH."""


@dataclass(frozen=True)
class Node:
    """One diagram node.

    Attributes:
        id (str): ``s<index>`` for automaton state ``index``, or :data:`START`.
        label (str): the state's readable name (``State.name``) or the entry's text.
        field (str | None): the name of the field the state fills (None: null sink, entry).
        implicit (bool): the state is OUTSIDE with an implicit field.
        discarded (bool): v2: the region's slot is null (its text is consumed and discarded).
        after (bool): v2: the state watching the optional close after a region's value.
    """

    id: str
    label: str
    field: str | None
    implicit: bool = False
    discarded: bool = False
    after: bool = False


@dataclass(frozen=True)
class Edge:
    """One diagram edge: one watched delimiter of one state (or the entry edge).

    Attributes:
        source (str), target (str): node ids.
        label (str): see :func:`edge_label`.
        kind (str): the watch's kind (``open``/``close``), ``start`` for the entry edge, ``value``
            for a region's end of value, ``return`` for an after state's missing close.
        action (str): the watch's transition action (:data:`respc.compiler.automaton.ACTIONS`),
            ``""`` for the other edges.
    """

    source: str
    target: str
    label: str
    kind: str
    action: str = ""


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


def return_states(template: Template, automaton: Automaton) -> dict[int, tuple[int, ...]]:
    """Where each explicit field's region returns when it closes (or its value ends).

    An open watched OUTSIDE returns there (0); a ``nest`` from state S returns to S (the runtime
    resumes the suspended region); an ``open``/``defer`` from the state of region G closes G and
    returns where G returns. Computed to a fixed point over every state's watches.

    Returns:
        dict[int, tuple[int, ...]]: field index -> sorted state indices (``(0,)`` for a field that
        no watch opens).
    """
    returns: dict[int, set[int]] = {fi: set() for fi in automaton.state_of_field}
    changed = True
    while changed:
        changed = False
        for state in automaton.states:
            for watch in state.watches:
                if watch.kind != "open" or watch.field not in returns:
                    continue
                if state.index == 0:
                    new = {0}
                elif watch.action == "nest":
                    new = {state.index}
                else:
                    new = returns.get(state.field, {0})
                if not new <= returns[watch.field]:
                    returns[watch.field] |= new
                    changed = True
    return {fi: tuple(sorted(found or {0})) for fi, found in returns.items()}


def build_graph(template: Template, automaton: Automaton) -> Graph:
    """The diagram of a compiled template.

    Args:
        template: the IR (for field names, slots, ends and the start anchor).
        automaton: its region automaton (:func:`respc.compiler.automaton.build_automaton`).

    Returns:
        Graph: one node per state plus the entry node; the entry edge, then per state in order one
        edge per watch (per return state for closes) and its ``value``/``return`` edges.
    """
    fields = template.fields
    after_of = {index: fi for fi, index in automaton.after_state.items()}
    nodes = [Node(START, "start", None)]
    for state in automaton.states:
        field = None if state.field is None else fields[state.field].name
        implicit = state.index == 0 and state.field is not None
        is_after = state.index in after_of
        discarded = (not implicit and not is_after and state.index != 0 and state.field is not None
                     and template.version >= 2 and fields[state.field].slot is None)
        label = state.name
        if discarded:
            label += " (slot null: text discarded)"
        elif (state.field is not None and not is_after and template.version >= 2
              and fields[state.field].slot not in (None, field)):
            label += f" -> slot {fields[state.field].slot!r}"
        nodes.append(Node(f"s{state.index}", label, field, implicit, discarded, is_after))
    returns = return_states(template, automaton)
    edges = [Edge(START, "s0", f"prefix, after start anchor {delimiter_label(template.start_anchor)}", "start")]
    for state in automaton.states:
        for watch in state.watches:
            label = edge_label(watch, fields[watch.field].name)
            action = getattr(watch, "action", "") or ""
            targets = ((watch.target,) if watch.kind == "open" or watch.field not in returns
                       else returns[watch.field])
            for target in targets:
                edges.append(Edge(f"s{state.index}", f"s{target}", label, watch.kind, action))
        fi = state.field
        if state.index in after_of:
            name = fields[after_of[state.index]].name
            for target in returns[after_of[state.index]]:
                edges.append(Edge(f"s{state.index}", f"s{target}", f"no close after {name}", "return"))
        elif state.index != 0 and fi is not None and fields[fi].end == "value":
            name = fields[fi].name
            ends = ((automaton.after_state[fi],) if fi in automaton.after_state else returns[fi])
            for target in ends:
                edges.append(Edge(f"s{state.index}", f"s{target}", f"value ends {name}", "value"))
    return Graph(template.source, tuple(nodes), tuple(edges))


# --- renderers ------------------------------------------------------------------------------

def _visible(text: str, keep: str = "") -> str:
    """``text`` with every character ``str.isprintable`` rejects (line breaks ``\\r``, ``\\n``,
    U+2028 and the other control and format characters) written as an escape (``\\r``, ``\\n``,
    ``\\t``, ``\\x85``, ``\\u2028``), except those in ``keep``: a field name, delimiter or path
    can never end a line of diagram text (docs/security.md, "Generated code")."""
    return "".join(c if c.isprintable() or c in keep else _VISIBLE.get(c) or ascii(c)[1:-1] for c in text)


def _mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label: no line break or other control character
    (:func:`_visible`), entity codes for characters Mermaid reads."""
    out = _visible(text).replace("#", "#35;")
    for char, code in (('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("|", "#124;"), ("`", "#96;"),
                       ("[", "#91;"), ("]", "#93;"), ("{", "#123;"), ("}", "#125;")):
        out = out.replace(char, code)
    return out


def to_mermaid(graph: Graph) -> str:
    """A Mermaid ``flowchart LR``: one ``id["label"]`` line per node, one ``a -->|"label"| b`` per edge."""
    lines = ["flowchart LR", f"  %% region automaton of {_visible(graph.title)}"]
    for node in graph.nodes:
        shape = ('(["', '"])') if node.id == START else ('["', '"]')
        lines.append(f"  {node.id}{shape[0]}{_mermaid_text(node.label)}{shape[1]}")
    for edge in graph.edges:
        lines.append(f'  {edge.source} -->|"{_mermaid_text(edge.label)}"| {edge.target}')
    return "\n".join(lines) + "\n"


def _dot_string(text: str) -> str:
    """A DOT double-quoted string (backslashes doubled, so ``\\n`` in a label stays two characters;
    a line break is DOT's ``\\n``, any other control character an escape shown as text)."""
    return '"' + _visible(text, keep="\n").replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


#: node fill colours: the implicit field, explicit regions, the null sink and the entry
_FILL = {"implicit": "#dbe9ff", "region": "#fff1cc", "sink": "#eeeeee", "start": "#ffffff",
         "discarded": "#f2f2f2", "after": "#e9f7e9"}


def to_dot(graph: Graph) -> str:
    """A Graphviz ``digraph``: nodes ``s<index>`` (boxes; the implicit field double-bordered,
    discarded regions dashed, after states ellipses), one ``a -> b [label=...]`` line per edge, in
    :class:`Graph` order (the entry edge dashed, ``value`` edges bold, ``return`` edges dotted)."""
    lines = [f"digraph {_dot_string('respc ' + graph.title)} {{", "  rankdir=LR;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
             '  edge [fontname="Helvetica", fontsize=10];']
    for node in graph.nodes:
        if node.id == START:
            attrs = f'shape=oval, fillcolor="{_FILL["start"]}"'
        elif node.implicit:
            attrs = f'peripheries=2, fillcolor="{_FILL["implicit"]}"'
        elif node.discarded:
            attrs = f'style="rounded,filled,dashed", fillcolor="{_FILL["discarded"]}"'
        elif node.after:
            attrs = f'shape=ellipse, fillcolor="{_FILL["after"]}"'
        else:
            attrs = f'fillcolor="{_FILL["region" if node.field is not None else "sink"]}"'
        lines.append(f"  {node.id} [label={_dot_string(node.label)}, {attrs}];")
    for edge in graph.edges:
        style = {"start": ", style=dashed", "value": ", style=bold", "return": ", style=dotted"}.get(edge.kind, "")
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
