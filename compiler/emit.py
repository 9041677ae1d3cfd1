"""Pass 5: lay the generated module out (SPEC section 8).

All meaning is decided by the earlier passes; this module only turns the IR and the automaton into
a view model of strings and renders ``emit_templates/module.py.jinja``. Every value taken from the
template reaches the module through :func:`py_literal` (``repr`` of plain data), never as code, so a
hostile template cannot inject anything. The output is deterministic: same template and compiler
version, same bytes.
"""

from __future__ import annotations

import math
from typing import Any

import jinja2

from respc.runtime.content import PARSERS, STREAMABLE_PARSERS
from respc.runtime.stream import RUNTIME_ABI

from .automaton import Automaton
from .ir import Template

__all__ = ["CODEGEN_VERSION", "emit_module", "py_literal"]

#: Stamped into every generated module; bump it deliberately when the generated code changes.
CODEGEN_VERSION = 1

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("respc.compiler", "emit_templates"),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,
)


def py_literal(value: Any, indent: int = 0) -> str:
    """Python source for a JSON-like value: one entry per line, trailing commas, ``repr`` strings.

    Args:
        value: None, bool, int, float, str, or lists / dicts of them (dict keys are strings).
        indent: the indentation (spaces) of the line the literal starts on.

    Returns:
        str: an expression that evaluates to an equal value and executes nothing else.

    Raises:
        TypeError: for any other type (templates are JSON, so this means a bug upstream).
    """
    pad = " " * (indent + 4)
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return f"float({str(value)!r})"
        return repr(value)
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        items = "".join(f"{pad}{py_literal(v, indent + 4)},\n" for v in value)
        return "[\n" + items + " " * indent + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = "".join(f"{pad}{py_literal(str(k))}: {py_literal(v, indent + 4)},\n" for k, v in value.items())
        return "{\n" + items + " " * indent + "}"
    raise TypeError(f"cannot emit a {type(value).__name__} as data")


def _line(text: str) -> str:
    """Make text safe on one comment line: control characters become '?'."""
    return "".join(c if c.isprintable() else "?" for c in text)


def _doc(text: str) -> str:
    """Make text safe inside a non-raw triple-quoted docstring (escapes backslashes and quotes)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _describe(delim) -> str:
    if delim is None:
        return "-"
    if delim.literals is not None:
        return " | ".join(repr(x) for x in delim.literals)
    return f"/{delim.pattern!r}/"


def _tuple(items: list[str]) -> str:
    """A one-line tuple display of already-rendered items: ``()``, ``(a,)``, ``(a, b)``."""
    if len(items) == 1:
        return f"({items[0]},)"
    return "(" + ", ".join(items) + ")"


_ACTION_NAMES = {"open": "_rt.OPEN", "nest": "_rt.NEST", "close": "_rt.CLOSE", "after": "_rt.AFTER",
                 "defer": "_rt.DEFER"}


def _region_keywords(template: Template, automaton: Automaton, index: int) -> list[tuple[str, str]]:
    """The ``Region`` keywords of one field that differ from their v1 defaults, in a fixed order."""
    f = template.fields[index]
    record = PARSERS[f.content]
    v2 = template.version >= 2
    reject = v2 and f.reject and record.can_reject
    ends = f.end == "value"
    out = []
    if f.slot != f.name:
        out.append(("slot", repr(f.slot)))
    if f.content not in STREAMABLE_PARSERS:
        out.append(("dirty", "True"))
    if f.repeats:
        out.append(("repeats", "True"))
    if f.join is not None:
        out.append(("join", repr(f.join)))
    if f.group_names:
        out.append(("groups", _tuple([repr(g) for g in f.group_names])))
    if v2 and f.role != "tool_calls":
        out.append(("typed", "False"))
    if ends or reject:
        out.append(("boundary", f"_rt.make_boundary({f.content!r}, {py_literal(f.content_args, 8)})"))
    if ends:
        out.append(("ends", "True"))
    if reject:
        out.append(("reject", "True"))
        later = [k for k in range(index + 1, len(template.fields)) if template.fields[k].open == f.open]
        if later:
            out.append(("alternatives", _tuple([str(k) for k in later])))
    if index in automaton.after_state:
        out.append(("after", str(automaton.after_state[index])))
    if v2 and _empty_body_fails(f):
        out.append(("empty_none", "True"))
        if f.repeats and f.transform_each:
            out.append(("extend", "True"))
    return out


def _empty_body_fails(f) -> bool:
    """v2: a body that is empty or whitespace has the value None when the content parser cannot
    read one (json, pythonic, int, ...); parsers that can (text, xml-inline, kv-lines) read it."""
    try:
        PARSERS[f.content].make(f.content_args)("\n")
    except Exception:  # noqa: BLE001 - any failure means "cannot read an empty body"
        return True
    return False


def _features(template: Template) -> list[str]:
    """Runtime features (``respc.runtime.FEATURES``) a module of this template needs."""
    if template.version < 2:
        return []
    fields = template.fields
    used = []
    if any(f.slot != f.name for f in fields):
        used.append("slots")
    if any(how == "nest" for f in fields for _, how in f.inside):
        used.append("nest")
    if any(how == "end-if-unclosed" for f in fields for _, how in f.inside):
        used.append("defer")
    if any(f.end == "value" for f in fields):
        used.append("end-value")
    if any(f.reject and PARSERS[f.content].can_reject for f in fields):
        used.append("reject")
    used += ["typed-roles", "empty-none"]
    return used


def _edges(template: Template, state) -> list[dict]:
    """The transition table row of one state, in rank order."""
    rows = []
    for w in sorted(state.watches, key=lambda w: w.rank):
        field = template.fields[w.field]
        rows.append({"action": _ACTION_NAMES[w.action], "field": w.field, "target": w.target, "rank": w.rank,
                     "comment": f"{w.action} {field.name!r}"})
    return rows


def _view(template: Template, automaton: Automaton, command: str, grammar: str) -> dict:
    fields = []
    for index, f in enumerate(template.fields):
        fields.append({
            "keywords": _region_keywords(template, automaton, index),
            "name_repr": repr(f.name),
            "doc": _doc(f"{f.name!r}: open {_describe(f.open)}, close {_describe(f.close)}, content "
                        f"{f.content!r}" + (", repeats" if f.repeats else "")
                        + (f", join {f.join!r}" if f.join is not None else "")
                        + ("" if f.optional else ", required")
                        + (", implicit field" if f.is_implicit else "")),
            "groups": _tuple([repr(g) for g in f.group_names]),
            "content_repr": repr(f.content),
            "content_args": py_literal(f.content_args, 12),
            "transform": py_literal(f.transform, 12),
            "transform_each": f.transform_each,
        })
    regexes = []
    regex_var: dict[tuple[int, str], str] = {}
    states = []
    slots = 0
    for s in automaton.states:
        watches = []
        literal_watches = []
        for w in s.watches:
            field = template.fields[w.field]
            comment = f"{w.kind} of {field.name!r}: {_describe(w.delimiter)}"
            view = {"comment": comment, "rank": w.rank, "matcher": w.matcher,
                    "indeterminate": w.indeterminate, "pending_at_edge": w.pending_at_edge,
                    "extendable": w.extendable}
            if w.matcher == "literal":
                literals = w.delimiter.literals
                view.update(literals=[{"repr": repr(lit), "length": len(lit), "slot": slots + k}
                                      for k, lit in enumerate(literals)],
                            multi=len(literals) > 1)
                slots += len(literals)
                literal_watches.append((w, literals, comment))
            else:
                key = (w.field, w.delimiter.key)
                if key not in regex_var:
                    regex_var[key] = f"_D{len(regexes)}"
                    regexes.append({"var": regex_var[key], "pattern_repr": repr(w.delimiter.pattern),
                                    "comment": comment + (" (indeterminate, D2)" if w.indeterminate else "")})
                view["var"] = regex_var[key]
                # \G depends on where a search starts, so such a pattern's result is never reused
                view["memo"] = "\\G" not in w.delimiter.pattern
                view["slot"] = slots
                slots += 1
            watches.append(view)
        partial = None
        multi_ranks = [w.rank for w, literals, _ in literal_watches if len(literals) > 1]
        all_literals = [lit for _, literals, _ in literal_watches for lit in literals]
        prefixes = sorted({lit[:k] for lit in all_literals for k in range(1, len(lit))})
        if prefixes:
            firsts = "".join(sorted({p[0] for p in prefixes}))
            each = []
            for w, literals, comment in literal_watches:
                own = sorted({lit[:k] for lit in literals for k in range(1, len(lit))})
                if own:
                    each.append({"rank": w.rank, "guard": len(literals) > 1, "var": f"_PREFIXES_{s.index}_{w.rank}",
                                 "prefixes": [repr(p) for p in own], "comment": comment,
                                 "firsts": repr("".join(sorted({p[0] for p in own}))),
                                 "span": max(len(lit) for lit in literals) - 1})
            partial = {"prefixes": [repr(p) for p in prefixes], "firsts": repr(firsts), "single": len(firsts) == 1,
                       "span": max(len(lit) for lit in all_literals) - 1, "each": each}
        transitions = _edges(template, s)
        label = s.name
        states.append({"index": s.index, "label": label, "label_doc": _doc(label), "watches": watches,
                       "partial": partial, "transitions": transitions, "multi_ranks": multi_ranks,
                       "multi_any": " or ".join(f"m{r}" for r in multi_ranks),
                       "triggers": repr(s.triggers),
                       "pairs": "None" if s.pairs is None else "frozenset(" + _tuple([repr(p) for p in s.pairs]) + ")"})
    source = template.source
    context = automaton.context
    return {
        "source": _line(source),
        "source_doc": _doc(repr(source)),
        "source_repr": repr(source),
        "sha256": template.sha256,
        "sha256_repr": repr(template.sha256),
        "command": _line(command),
        "codegen": CODEGEN_VERSION,
        "abi": RUNTIME_ABI,
        "v2": template.version >= 2,
        "features": _tuple([repr(name) for name in _features(template)]) if _features(template) else "",
        "fields": fields,
        "defaults": py_literal(template.defaults),
        "required": _tuple([repr(f.slot) for f in template.fields if not f.optional]),
        "scanners": _tuple([f"_scan_{s.index}" for s in automaton.states]),
        "triggers": _tuple([repr(s.triggers) for s in automaton.states]),
        "anchor_repr": repr(template.start_anchor.pattern),
        "regexes": regexes,
        "states": states,
        "outside_field": template.implicit,
        "memo_slots": slots,
        "context": context,
        "context_why": ("an unbounded lookbehind or a pattern the compiler cannot analyse: keep all"
                        if context is None else "^, \\b and lookbehinds must not see a trimmed start"
                        if context else "no regex delimiter looks behind its start"),
        "grammar_repr": "(\n" + "".join(f"    {line!r}\n" for line in grammar.splitlines(keepends=True)) + ")"
        if grammar else "''",
    }


def emit_module(template: Template, automaton: Automaton, *, command: str, grammar: str) -> str:
    """Render the generated module's source.

    Args:
        template: the IR.
        automaton: its region automaton.
        command: the command that regenerates the file (stamped in the banner).
        grammar: the Lark grammar text embedded as ``GRAMMAR``.

    Returns:
        str: Python source, ending with a newline.
    """
    return _ENV.get_template("module.py.jinja").render(**_view(template, automaton, command, grammar))
