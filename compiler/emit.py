"""Pass 5: lay the generated module out (SPEC section 8).

All meaning is decided by the earlier passes; this module only turns the IR and the automaton into
a view model of strings and renders ``emit_templates/module.py.jinja``. Every value taken from the
template reaches the module through :func:`py_literal` (``repr`` of plain data), or, for the
``HOLD_REGEX`` tables, as JSON text in raw string literals checked by :func:`_raw_literal`, never
as code, so a hostile template cannot inject anything. The output is deterministic: same template and compiler
version, same bytes.
"""

from __future__ import annotations

import ast
import json
import math
from typing import Any

import jinja2

from respc.runtime.content import PARSERS, STREAMABLE_PARSERS
from respc.runtime.stream import PARTIAL_LONG, RUNTIME_ABI

from .automaton import NEVER, Automaton, LiteralFind, barrier_plan, classify_pattern, late_pattern, plan_scans
from .held import PositionAutomaton, held_plan
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


def _held_rows(automata: tuple[PositionAutomaton, ...] | None) -> list[str]:
    """The ``HOLD_REGEX`` entry of one state as source lines (without indentation): ``None``, or
    per delimiter a comment with its pattern and one string constant, the JSON text ``[edge,
    tests, first, follow, last]`` (``edge``: the pattern when a complete match can go on, else
    null) that runtime/held.py ``automaton_table`` decodes, written as adjacent raw literals, one
    part to a line and ``follow`` eight positions to a line."""
    if automata is None:
        return ["None,"]
    rows = ["("]
    for table in automata:
        follow = [json.dumps(list(f)) for f in table.follow]
        parts = ["[" + json.dumps(table.pattern if table.extends else None) + ",",
                 " " + json.dumps(list(table.tests)) + ",", " " + json.dumps(list(table.first)) + ",", " ["]
        parts += ["  " + ", ".join(follow[k:k + 8]) + ("," if k + 8 < len(follow) else "")
                  for k in range(0, len(follow), 8)]
        parts.append(" ], " + json.dumps(list(table.last)) + "]")
        rows.append(f"    # /{_line(repr(table.pattern))}/")
        rows += ["    " + _raw_literal(part) for part in parts]
        rows[-1] += ","
    rows.append("),")
    return rows


def _raw_literal(text: str) -> str:
    """``text`` (JSON from ``json.dumps``: printable ASCII, ``\\uXXXX`` for the rest) as a raw
    string literal ``r'...'`` that evaluates to the same JSON value: a ``'`` becomes ``\\u0027``
    (valid only inside a JSON string, the only place JSON has one). The JSON reads as it is,
    without Python's doubled backslashes; the result is checked by evaluating it.

    Raises:
        ValueError: the literal would not read back as ``text``'s JSON (never for json.dumps).
    """
    safe = text.replace("'", "\\u0027")
    literal = f"r'{safe}'"
    if not safe.isascii() or not safe.isprintable() or safe.endswith("\\") or ast.literal_eval(literal) != safe:
        raise ValueError(f"cannot write {text[:60]!r} as a raw string literal")
    return literal


def _stray_closers(template: Template) -> str:
    """The ``STRAY_CLOSERS`` table as Python source: ``(closer, open_pattern, field_index)`` for
    every literal close (three characters or more, not blank) of a field with an open delimiter,
    in declaration order. ``errors="recover"`` reports such a closer found in the text of a region
    with no match of ``open_pattern`` before it (issue 8, *stray closer*)."""
    rows = []
    for index, f in enumerate(template.fields):
        if f.open is None or f.close is None or f.close.literals is None:
            continue
        for closer in f.close.literals:
            if len(closer.strip()) >= 3:
                rows.append(f"({closer!r}, {f.open.pattern!r}, {index})")
    return _tuple(rows)


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
    states = []
    held = held_plan(automaton)
    for s in automaton.states:
        states.append({"index": s.index, "label": s.name, "transitions": _edges(template, s),
                       "triggers": repr(s.triggers),
                       "held": _held_rows(held[s.index]),
                       "runs": "None" if not s.runs else _tuple([f"({r.chars!r}, {r.factor!r})" for r in s.runs]),
                       "heads": "None" if s.heads is None else "frozenset(" + _tuple([repr(p) for p in s.heads]) + ")"})
    source = template.source
    context = automaton.context
    # "hold-runs": the fast path must hold the runs of HOLD_RUNS, which a runtime without it ignores
    features = _features(template) + (["hold-runs"] if any(s.runs for s in automaton.states) else [])
    # "fast-heads": FAST_PATH has three-character heads, which a runtime comparing two would never
    # match (it would route a delimiter unscanned)
    if any(s.heads and len(s.heads[0]) > 2 for s in automaton.states):
        features.append("fast-heads")
    # "lazy-pattern": probes, back-searches and late patterns are runtime.LazyPattern objects
    scans = plan_scans(template, automaton)
    if scans.probes or scans.backs or any(late_pattern(p) not in (None, NEVER) for p, _ in scans.regexes):
        features.append("lazy-pattern")
    # "lead-search" / "barrier-search": a complete text's search of a regex delimiter calls
    # runtime.lead_search / runtime.barrier_search; the scanners' view says which it wrote
    scanner_view = _scanner_view(scans)
    features += [name for name in ("lead-search", "barrier-search", "partial-search", "window-partial")
                 if name in scanner_view["searches"]]
    # "hold-regex": HOLD_REGEX is an optimisation only; a runtime without it would scan, with the
    # same events, so it is not listed: the tables are simply ignored there. "held-json": a runtime
    # that reads them as tuples would fail on the JSON text (runtime/held.py automaton_table)
    if any(table is not None for table in held):
        features.append("held-json")
    # "lazy-delimiters": the regex delimiters are LazyPattern objects that rebind their global
    if scans.regexes:
        features.append("lazy-delimiters")
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
        "features": _tuple([repr(name) for name in features]) if features else "",
        "fields": fields,
        "defaults": py_literal(template.defaults),
        "required": _tuple([repr(f.slot) for f in template.fields if not f.optional]),
        "scanners": _tuple([f"_scan_{s.index}" for s in automaton.states]),
        "triggers": _tuple([repr(s.triggers) for s in automaton.states]),
        "anchor_repr": repr(template.start_anchor.pattern),
        "states": states,
        "has_runs": any(s.runs for s in automaton.states),
        "has_held": any(table is not None for table in held),
        "outside_field": template.implicit,
        "stray_closers": _stray_closers(template),
        "diagnostics_key": repr(template.diagnostics),
        **scanner_view,
        "context": context,
        "anchor_context": automaton.anchor_context,
        "context_why": ("an unbounded lookbehind or a pattern the compiler cannot analyse: keep all"
                        if context is None else "^, \\b and lookbehinds must not see a trimmed start"
                        if context else "no regex delimiter looks behind its start"),
        "grammar_repr": "(\n" + "".join(f"    {line!r}\n" for line in grammar.splitlines(keepends=True)) + ")"
        if grammar else "''",
    }


def _scanner_view(scans) -> dict:
    """The scanners' part of the view: :func:`plan_scans` decided it (``scans``), this only
    renders strings."""
    plans = []
    uses_literal_hold = False
    searches: set[str] = set()
    for plan in scans.plans:
        finds = []
        for k, f in enumerate(plan.finds):
            # one comment per delimiter, not per literal of a list
            comment = "" if k and plan.finds[k - 1].comment == f.comment else _line(f.comment)
            if isinstance(f, LiteralFind):
                finds.append({"literal": True, "comment": comment, "slot": f.slot, "repr": repr(f.text),
                              "length": len(f.text), "rank": f.rank,
                              "group": None if f.group is None else plan.groups[f.group][1]})
            else:
                var = f"_D{f.regex}"
                pattern = scans.regexes[f.regex][0]
                leads = classify_pattern(pattern).leads
                finds.append({"literal": False, "comment": comment, "var": var, "rank": f.rank,
                              "eos_pos": _eos_search(var, pattern, "pos", searches),
                              "eos_lo": _eos_search(var, pattern, "lo", searches),
                              "partial_pos": _partial_search(var, pattern, "pos", searches),
                              # the probe's long searches, where they start at pos (no factor, no
                              # prefilter) and the probe has the delimiter's leads or barrier
                              "probe_helper": None if f.factor is not None or f.probe is None or f.prefilter
                              or late_pattern(pattern) is not None else _start_helper(var, pattern, searches),
                              "partial_lo": _partial_search(var, pattern, "lo", searches),
                              "leads": bool(leads),
                              "slot": f.slot, "hold_all": f.probe is None, "probe_var": f"_P{f.probe}",
                              "probe_slot": f.probe_slot, "probe_always": f.probe_always,
                              "prefilter": f.prefilter, "factor": None if f.factor is None else {
                                  "repr": repr(f.factor.text), "short": len(f.factor.text) - 1,
                                  "first": repr(f.factor.text[0]),
                                  "reach": f.factor.reach, "slot": f.factor_slot,
                                  "back": None if f.back is None else f"_B{f.back}"}})
        hold = None
        if plan.hold is not None:
            single = len(plan.hold.firsts) == 1
            uses_literal_hold = uses_literal_hold or not single
            hold = {"prefixes": [repr(p) for p in plan.hold.prefixes], "firsts": repr(plan.hold.firsts),
                    "single": single, "span": plan.hold.span}
        literals = plan.literals
        if hold is not None:
            hold["literals"] = None if literals is None else _tuple([repr(x) for x in literals])
        plans.append({"index": plan.state, "label_doc": _doc(plan.label), "finds": finds, "hold": hold,
                      "groups": [{"repr": repr(text), "slot": slot} for text, slot in plan.groups],
                      "has_regex": plan.has_regex})
    return {
        "plans": plans,
        "regexes": [{"var": f"_D{k}", "var_repr": repr(f"_D{k}"), "pattern_repr": repr(pattern),
                     "comment": _line(comment), "leads": _leads_repr(pattern), "late": _late_view(f"_D{k}L", pattern)}
                    for k, (pattern, comment) in enumerate(scans.regexes)],
        "probes": [{"var": f"_P{k}", "pattern_repr": repr(pattern), "comment": _line(comment)}
                   for k, (pattern, comment) in enumerate(scans.probes)],
        "backs": [{"var": f"_B{k}", "pattern_repr": repr(pattern), "comment": _line(comment)}
                  for k, (pattern, comment) in enumerate(scans.backs)],
        "memo_slots": scans.memo_slots,
        "uses_literal_hold": uses_literal_hold,
        "has_literal_states": any(plan.literals is not None for plan in scans.plans),
        "window": scans.window,
        "partial_long": PARTIAL_LONG,
        "searches": searches,
    }


def _late_view(var: str, pattern: str) -> dict | None:
    """The compiled :func:`late_pattern` of a regex delimiter, for the template (None: none, or
    one that never matches, which needs no regex)."""
    late = late_pattern(pattern)
    if late is None or late == NEVER:
        return None
    return {"var": var, "pattern_repr": repr(late), "leads": _leads_repr(late)}


def _eos_search(var: str, pattern: str, start: str, searches: set[str]) -> str:
    """The end-of-stream (complete text) search of regex delimiter ``var`` from offset ``start``
    (a variable name), as source: by its leads when it has them (``runtime.lead_search``), else
    by its factor and barrier when it has them (``runtime.barrier_search``); and from an offset
    after 0 with its :func:`late_pattern` when it has one (``None`` when that can never match).
    Adds to ``searches`` the runtime feature (``"lead-search"``, ``"barrier-search"``) of each
    runtime searcher the source calls, so the module's FEATURES come from what was written."""
    def search(name: str, source: str) -> str:
        if classify_pattern(source).leads:
            searches.add("lead-search")
            return f"_rt.lead_search({name}, buf, {start}, {name}_LEADS)"
        barrier = barrier_plan(source)
        if barrier is not None:
            searches.add("barrier-search")
            return f"_rt.barrier_search({name}, buf, {start}, {barrier[0]!r}, {barrier[1]!r})"
        return f"{name}.search(buf, {start})"

    full = search(var, pattern)
    late = late_pattern(pattern)
    if late is None:
        return full
    # From offset 0 a match of an anchored alternative starts there: the engine is asked there
    # (a search would try the anchor at every offset), then the rest from 1 on (none at 0 then).
    if late == NEVER:
        return f"(None if {start} else {var}.match(buf, 0))"
    rest = search(var + "L", late)
    return f"({rest} if {start} else ({var}.match(buf, 0) or {rest}))"


def _start_helper(var: str, pattern: str, searches: set[str]) -> dict | None:
    """The runtime search that starts a long partial search of regex delimiter ``var`` (or of its
    D2 probe, whose partial matches start where the delimiter's can) late: by its leads
    (``runtime.partial_search``) or from its barrier (``runtime.partial_barrier``), as
    ``{"call": ..., "args": ...}``, the arguments after ``(pattern, buf, start``; None when it has
    neither. Adds the runtime feature ``"partial-search"`` to ``searches`` when there is one."""
    if classify_pattern(pattern).leads:
        helper = {"call": "_rt.partial_search", "args": f"{var}_LEADS"}
    else:
        barrier = barrier_plan(pattern)
        if barrier is None:
            return None
        helper = {"call": "_rt.partial_barrier", "args": f"{barrier[0]!r}, {barrier[1]!r}"}
    searches.add("partial-search")
    return helper


def _partial_search(var: str, pattern: str, start: str, searches: set[str]) -> str:
    """The partial search (``eos`` false) of regex delimiter ``var`` from offset ``start`` (a
    variable name), as source: the engine's own ``search(..., partial=True)`` while fewer than
    ``runtime.PARTIAL_LONG`` characters are undecided (a streamed chunk's scan), else with its
    start-anchored alternatives only tried at offset 0 (``runtime.partial_late``) when it has
    them, else by :func:`_start_helper`, else a window at a time (``runtime.window_partial``);
    the same answer either way."""
    plain = f"{var}.search(buf, {start}, partial=True)"
    late = late_pattern(pattern)
    if late is None:
        helper = _start_helper(var, pattern, searches)
        if helper is None:
            # no start to search from: the engine's partial phase a window at a time (issue 23)
            searches.add("window-partial")
            return f"({plain} if n - {start} < {PARTIAL_LONG} else _rt.window_partial({var}, buf, {start}))"
        call = f"{helper['call']}({var}, buf, {start}, {helper['args']})"
    else:
        searches.add("partial-search")
        if late == NEVER:
            late_var = late_leads = "None"
        else:
            late_var = var + "L"
            late_leads = f"{late_var}_LEADS" if classify_pattern(late).leads else "None"
        call = f"_rt.partial_late({var}, {late_var}, buf, {start}, {late_leads})"
    return f"({plain} if n - {start} < {PARTIAL_LONG} else {call})"


def _leads_repr(pattern: str) -> str | None:
    """The tuple of a regex delimiter's leads (``PatternFacts.leads``) as source, or None."""
    leads = classify_pattern(pattern).leads
    return None if not leads else _tuple([repr(t) for t in leads])


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
