"""``respc check`` linter (docs/writing-a-template.md "4. Check it"): defects a template can have
that load-time rules allow.

Each :class:`Finding` names the field and key at fault and carries an example string that shows
the defect. ``error`` findings make a template parse wrongly for some ordinary output; ``warning``
findings are risks. The load-time warnings of :func:`respc.compiler.validate.check_template` and the
D2 warnings of the automaton are reported by ``respc check`` beside these.

Checks, in order:

* ``empty-match`` (warning): an open or close pattern that matches the empty string -- reuses
  ``validate.may_match_empty`` (a close may end a region before text); a pattern made only of
  lookarounds and anchors (``(?=<tool_call>)``) is zero-width on purpose and is not reported;
* ``shadowed-open``: two fields watched in one state with the same literal open; the later one
  never opens unless the first can give the opener back (``reject``);
* ``unreachable``: a field whose open is watched in no state the parser can reach;
* ``backtracking``: a pattern that can take exponential time on a near-miss
  (``compiler/backtracking.py``: ``(a+)+``, ``(a|aa)+``); ``validate`` refuses
  such a pattern at load (docs/template-language.md "Load-time checks"), so a template that loads has none;
* ``payload-delimiter``: a region whose close literal can occur inside its payload (a JSON string
  value, an xml-inline parameter value) and so end the region early;
* ``placeholder``: a transform placeholder that cannot resolve: ``{content.x}`` on a text body
  (a warning), a root that is neither ``content`` nor a named group of the field's patterns (an
  error: every region of the field fails at its close; v1 templates still load, as the reference
  loads them, and v2 ones are refused at load);
* ``reasoning-name``: a reasoning-like field whose slot is not ``reasoning_content`` (the name
  OpenAI-compatible servers and chat templates use).

With ``respc check TEMPLATE --chat-template F``, ``compiler/roundtrip.py`` adds ``roundtrip``
findings of the same shape: sample messages rendered with the model's chat template that TEMPLATE
does not parse back (``error``), or that the chat template cannot render or renders in part
(``warning``: not checked).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from respc.runtime.transforms import placeholder_roots

from .automaton import OUTSIDE, Automaton, example_text, sre_c
from .backtracking import backtracking_problem
from .ir import Delimiter, Template
from .sre import parse_pattern
from .validate import may_match_empty

__all__ = ["Finding", "lint"]

_REASONING_WORDS = ("reason", "think", "thought", "analysis")


@dataclass(frozen=True)
class Finding:
    """One linter finding.

    Attributes:
        level (str): ``"error"`` or ``"warning"``.
        check (str): the check's name (see the module docstring).
        field (str | None): the field at fault (None: the template).
        key (str): the template key at fault.
        message (str): what is wrong.
        example (str): a string that shows it (model output, or the pattern input).
    """

    level: str
    check: str
    field: str | None
    key: str
    message: str
    example: str

    def __str__(self) -> str:
        where = f"field {self.field!r} key {self.key!r}" if self.field is not None else f"key {self.key!r}"
        return f"{self.level}: [{self.check}] {where}: {self.message} (example: {self.example!r})"


def _delims(template: Template):
    for f in template.fields:
        for kind, delim in (("open", f.open), ("close", f.close)):
            if delim is not None:
                yield f, kind, delim


def _example_of(delim: Delimiter) -> str:
    """Text the delimiter matches: its first literal, or a text its pattern matches in full
    (:func:`~respc.compiler.automaton.example_text`), else the pattern's source."""
    if delim.literals:
        return delim.literals[0]
    return example_text(delim.pattern) or delim.pattern


def _only_assertions(pattern: str) -> bool:
    """True when every top-level item of ``pattern`` is a lookaround or an anchor, such as
    ``(?=<tool_call>)`` or ``(?=\\[TOOL_CALLS\\])|\\Z``: zero-width by construction, so the
    empty match is what its author wrote it for and ``empty-match`` does not warn (a pattern that
    matches the empty string by accident, ``<x>*``, still does). Patterns the standard library's
    parser cannot read (``regex``-only syntax) are not exempt."""
    try:
        parsed = parse_pattern(pattern)
    except Exception:  # noqa: BLE001 - regex-only syntax: no exemption
        return False
    items = list(parsed)
    if len(items) == 1 and items[0][0] is sre_c.BRANCH:
        return all(_all_zero_width(branch) for branch in items[0][1][1])
    return _all_zero_width(items)


def _all_zero_width(items) -> bool:
    items = list(items)
    return bool(items) and all(op in (sre_c.ASSERT, sre_c.ASSERT_NOT, sre_c.AT) for op, _ in items)


def lint(template: Template, automaton: Automaton) -> list[Finding]:
    """Run every check on a validated template.

    Args:
        template: the IR.
        automaton: its region automaton.

    Returns:
        list[Finding]: in check order, then declaration order.
    """
    out: list[Finding] = []
    fields = template.fields
    for f, kind, delim in _delims(template):
        if delim.literals is None and may_match_empty(delim.pattern) and not _only_assertions(delim.pattern):
            out.append(Finding("warning", "empty-match", f.name, delim.key,
                               f"{delim.pattern!r} matches the empty string"
                               + (": the region opens wherever it does, with no text of its own (intended for "
                                  "lookahead opens)" if kind == "open" else
                                  ": the region may end before any text"), ""))
    for state in automaton.states:
        seen: dict[str, int] = {}
        for w in state.watches:
            if w.kind != "open" or w.delimiter.literals is None:
                continue
            for lit in w.delimiter.literals:
                if lit in seen and seen[lit] != w.field and not fields[seen[lit]].reject:
                    first = fields[seen[lit]].name
                    out.append(Finding("error", "shadowed-open", fields[w.field].name, w.delimiter.key,
                                       f"{lit!r} is also the open of field {first!r}, watched first in "
                                       f"{state.name}; this field never opens there", lit))
                seen.setdefault(lit, w.field)
    reachable = {OUTSIDE}
    frontier = [OUTSIDE]
    while frontier:
        s = frontier.pop()
        for w in automaton.states[s].watches:
            targets = [w.target] + ([automaton.after_state[w.field]] if w.field in automaton.after_state else [])
            for target in targets:
                if target not in reachable:
                    reachable.add(target)
                    frontier.append(target)
    for fi, f in enumerate(fields):
        if f.is_implicit:
            continue
        if automaton.state_of_field[fi] not in reachable:
            out.append(Finding("error", "unreachable", f.name, "outside" if not f.outside else f.open.key,
                               "no state the parser can reach watches this field's open (outside is false and "
                               "no reachable region lists it in 'inside')", _example_of(f.open)))
    for f, kind, delim in _delims(template):
        problem = None if delim.literals is not None else backtracking_problem(delim.pattern)
        if problem is not None:  # validate refuses these at load: reached for a hand-built IR only
            out.append(Finding("error", "backtracking", f.name, delim.key, f"{delim.pattern!r}: {problem}",
                               "a" * 30 + "!"))
    for f in fields:
        if f.is_implicit or f.close is None or f.end == "value" or f.close.literals is None:
            continue
        if f.content == "json" and not f.content_args.get("string_delims"):
            for lit in f.close.literals:
                if '"' not in lit and "\\" not in lit and all(ord(c) >= 0x20 for c in lit):
                    out.append(Finding("warning", "payload-delimiter", f.name, f.close.key,
                                       f"a JSON string value can hold {lit!r}, which ends the region early "
                                       "(the model need not escape it)",
                                       _example_of(f.open) + json.dumps({"code": f"x = '{lit}'"}) + lit))
                    break
        elif f.content == "xml-inline":
            out.append(Finding("warning", "payload-delimiter", f.name, f.close.key,
                               f"a parameter value can hold {f.close.literals[0]!r}, which ends the region early",
                               f.close.literals[0]))
    for f in fields:
        if f.transform is None:
            continue
        roots = placeholder_roots(f.transform, v2=template.version >= 2)
        for root in dict.fromkeys(roots):
            if root == "content" and f.content in ("text", "int", "float", "bool"):
                text = json.dumps(f.transform)
                if "{content." in text:
                    out.append(Finding("warning", "placeholder", f.name, "transform",
                                       f"'{{content.<key>}}' on a {f.content!r} body: the value has no keys, so "
                                       "it never resolves", text))
            elif root != "content" and root not in f.group_names and (
                    not f.transform_each or f.content in ("text", "int", "float", "bool")):
                # (with transform_each a root may be a key of each list element: known at run time)
                groups = f"named groups {list(f.group_names)}" if f.group_names else "no named groups"
                out.append(Finding("error", "placeholder", f.name, "transform",
                                   f"placeholder root {root!r} is neither 'content' nor a named group of the "
                                   f"field's patterns (which have {groups}), so every region of this field "
                                   "fails at its close (a v1 template still compiles, as the reference "
                                   "accepts it)", "{" + root + "}"))
    for f in fields:
        slot = f.slot if f.slot is not None else f.name
        if slot != "reasoning_content" and any(w in slot.lower() for w in _REASONING_WORDS):
            out.append(Finding("warning", "reasoning-name", f.name, "slot" if f.slot != f.name else "fields",
                               f"reasoning goes into {slot!r}; OpenAI-compatible servers and chat templates use "
                               "'reasoning_content'", slot))
    return out
