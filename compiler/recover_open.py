"""Recover-only openers: the v2 field keys ``recover_open`` / ``recover_open_pattern``.

A field may list openers that only ``errors="recover"`` accepts (docs/template-language.md,
"Recover-only openers"): damaged forms of its opener a model is known to write (Qwen3-Coder's
``<function=NAME>`` without ``<tool_call>``, Gemma 4's ``<|channel>`` without ``thought``). The
strict parser never sees them, so every strict result stays what it was.

How it is built: :func:`recover_variant` derives from the validated template a second template in
which each such field's opener is ``(?:OPEN)|(?P<repair_recover_opener>ALT1)|(?P<repair_recover_opener2>ALT2)...``:
the strict opener first (where it matches it wins, with its own groups), then each alternative as a
*declared repair* group, so that the existing machinery reports a ``"repaired"`` diagnostic with
the alternative's text and offsets. The emitter compiles that template's automaton into a second
parser class of the same module (``_RecoverParser``, a subclass of ``ResponseParser``) that a
parser built with ``errors="recover"`` becomes (``runtime.stream._become_recover``, at the start of ``StreamParser.__init__``). Every
rule of the strict path (D2 holds under every chunking, linear-time searches, the load-time
backtracking check) applies to the combined pattern unchanged, because it is an ordinary
delimiter of an ordinary template. The grammar exporters read the strict template only, so no
exported grammar allows a recover-only opener.

Capture groups: an alternative declares exactly the capture groups of the field's opener (the
transform reads them). The ``regex`` module allows a name twice, but the analysis passes read
patterns with ``re``'s parser, which does not; so in the combined pattern an alternative's group
``g`` is renamed ``g__alt<k>`` (:data:`respc.runtime.stream.RECOVER_ALIAS`), and the runtime writes
such a group into ``g`` when it took part (``runtime.stream._put_groups``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import regex

from respc.runtime.stream import RECOVER_ALIAS, REPAIR_GROUP

from .backtracking import backtracking_problem
from .ir import Delimiter, Template

__all__ = ["RECOVER_KEYS", "SIDES", "REPAIR_NAME", "REPAIR_NAMES", "recover_alternatives", "combined_pattern", "recover_variant"]

#: the v2 field keys per side: (literals, regexes)
SIDES = {"open": ("recover_open", "recover_open_pattern"), "close": ("recover_close", "recover_close_pattern")}
#: every such key
RECOVER_KEYS = SIDES["open"] + SIDES["close"]
#: the declared-repair group each alternative becomes, per side (its diagnostic reads "recover
#: opener: ..." / "recover closer: ...")
REPAIR_NAMES = {"open": REPAIR_GROUP + "recover_opener", "close": REPAIR_GROUP + "recover_closer"}
REPAIR_NAME = REPAIR_NAMES["open"]
#: at most this many alternatives per field and side (docs/security.md, "Limits")
MAX_RECOVER_OPENERS = 16

# every place a group is named: its definition ((?P<g>, (?<g>), back-references ((?P=g), \\g<g>),
# subroutine calls ((?P>g), (?&g)) and conditionals ((?(g)...)); each is renamed with the group
# (any other escape is skipped whole, so an escaped backslash before "g<" names nothing)
_GROUP = regex.compile(r"\\g<([A-Za-z_]\w*)>|\\.|\(\?P?<([A-Za-z_]\w*)>|\(\?P=(\w+)\)|\(\?P>(\w+)\)|\(\?&(\w+)\)"
                       r"|\(\?\((?!DEFINE\))([A-Za-z_]\w*)\)", regex.DOTALL)


def _numbered_reference(pattern: str) -> str | None:
    """The first reference to a group by number in ``pattern`` (``\\1``, ``\\g<1>``, ``(?1)``,
    ``(?-1)``, ``(?R)``, ``(?(1)...)``), outside character classes, or None. In the combined
    delimiter an alternative's groups are numbered after the strict one's, so such a reference
    would name another group than it did in the alternative alone (red team s11)."""
    i, n, depth = 0, len(pattern), 0
    while i < n:
        c = pattern[i]
        if c == "\\":
            if depth == 0:
                m = _NUMBERED_ESCAPE.match(pattern, i)
                if m:
                    return m.group()
            i += 2
            continue
        if depth:
            if c == "[":
                depth += 1  # a nested set (version 1)
            elif c == "]":
                depth -= 1
            i += 1
            continue
        if c == "[":
            depth = 1
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":
                i += 1  # a ']' first in a class is a character
            continue
        if c == "(":
            m = _NUMBERED_GROUP.match(pattern, i)
            if m:
                return m.group()
        i += 1
    return None


_NUMBERED_ESCAPE = regex.compile(r"\\(?:[1-9][0-9]*|g<[+-]?[0-9]+>)")
_NUMBERED_GROUP = regex.compile(r"\(\?(?:[+-]?[0-9]+\)|R\)|\([+-]?[0-9]+\)|&[0-9])")


def _items(check: Any, spec: dict, key: str, name: str) -> list[str]:
    raw = spec[key]
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not items or not all(isinstance(x, str) and x for x in items):
        raise check.fail(f"'{key}' must be a non-empty string or a non-empty list of non-empty strings, got {raw!r}",
                         name, key)
    return items


def _rename(pattern: str, k: int) -> str:
    """``pattern`` with each named group ``g`` (and its back-references) renamed ``g__alt<k>``."""
    def sub(m: regex.Match) -> str:
        if m.lastindex is None:
            return m.group()  # an escape
        g = m.group(m.lastindex)
        start = m.start(m.lastindex) - m.start()
        text = m.group()
        return text[:start] + f"{g}{RECOVER_ALIAS}{k}" + text[start + len(g):]
    return _GROUP.sub(sub, pattern)


def combined_pattern(open_pattern: str, alternatives: tuple[str, ...], side: str = "open") -> str:
    """The recover-mode delimiter: the strict pattern first, then each alternative as a
    declared-repair group (``repair_recover_opener``, ``repair_recover_opener2``...; ``_closer``
    for ``side="close"``), its own groups renamed (module docstring)."""
    parts = [f"(?:{open_pattern})"]
    for k, alt in enumerate(alternatives, 1):
        suffix = "" if k == 1 else str(k)
        parts.append(f"(?P<{REPAIR_NAMES[side]}{suffix}>{_rename(alt, k)})")
    return "|".join(parts)


def recover_alternatives(check: Any, name: str, spec: dict, open_: Delimiter | None, version: int,
                         side: str = "open") -> tuple[str, ...]:
    """Check a field's recover-only openers (``side="open"``) or closers (``"close"``) at load
    time and return them as regex sources. What is said of openers below holds for closers, except
    that a closer may match the empty string (a lookahead: a zero-width close, as in
    docs/template-language.md, "Zero-width delimiters").

    Args:
        check: the validator's checker (``fail``, ``compile``).
        name: the field name; spec: its spec; open_: its strict opener or closer (None: none).
        version: the template language version.

    Returns:
        tuple[str, ...]: the alternatives (literals escaped), literals first; ``()`` when the field
        has neither key.

    Raises:
        TemplateError: a key in v1; on the implicit field; not a string or list of strings; more than
        :data:`MAX_RECOVER_OPENERS`; an alternative that does not compile, can match the empty
        string, equals the strict opener, declares other capture groups than the opener, declares a
        ``repair_`` group or a name ending in ``__alt<digits>``; a combined opener that does not
        compile or is refused by the backtracking check (docs/template-language.md,
        "Recover-only openers").
    """
    keys = SIDES[side]
    word = "opener" if side == "open" else "closer"
    used = [key for key in keys if key in spec]
    if not used:
        return ()
    if version < 2:
        raise check.fail(f"key {used[0]!r} is part of respc template language v2: it needs "
                         "\"respc_version\": 2 at the top of the template", name, used[0])
    if open_ is None:
        raise check.fail(f"'{used[0]}' needs an {word} to repair: the field has none", name, used[0])
    from .validate import may_match_empty  # validate imports this module

    strict_groups = {g for g in open_.group_names if not g.startswith(REPAIR_GROUP)}
    alternatives: list[str] = []
    for key in keys:
        if key not in spec:
            continue
        for item in _items(check, spec, key, name):
            if key == keys[0]:
                if open_.literals is not None and item in open_.literals:
                    raise check.fail(f"'{key}' {item!r} is the field's own {word}", name, key)
                if strict_groups:
                    raise check.fail(f"'{key}' {item!r} is a literal, but the field's {word} captures "
                                     f"{sorted(strict_groups)}: use '{keys[1]}' with the same groups",
                                     name, key)
                alternatives.append(regex.escape(item))
                continue
            compiled = check.compile(item, name, key)
            numbered = _numbered_reference(item)
            if numbered is not None:
                raise check.fail(f"'{key}' {item!r} refers to a group by number ({numbered!r}): in the combined "
                                 f"{word} its groups are numbered after the field's own {word}'s, so the number "
                                 "would name another group; name the group and refer to it by name", name, key)
            if item == open_.pattern:
                raise check.fail(f"'{key}' {item!r} is the field's own {word}", name, key)
            if side == "open" and may_match_empty(item):
                raise check.fail(f"'{key}' {item!r} can match the empty string: an opener must consume text", name, key)
            groups = set(compiled.groupindex)
            bad = sorted(g for g in groups if g.startswith(REPAIR_GROUP) or regex.search(RECOVER_ALIAS + r"\d+$", g))
            if bad:
                raise check.fail(f"'{key}' {item!r} declares the group {bad[0]!r}: the alternative itself is the repair "
                                 f"(its diagnostic holds its text), and names ending in '{RECOVER_ALIAS}<digits>' are "
                                 "reserved", name, key)
            if groups != strict_groups:
                raise check.fail(f"'{key}' {item!r} declares the groups {sorted(groups)}, the field's {word} "
                                 f"{sorted(strict_groups)}: an alternative {word} must capture what the transform "
                                 "reads, no more and no less", name, key)
            alternatives.append(item)
    if len(alternatives) > MAX_RECOVER_OPENERS:
        raise check.fail(f"{len(alternatives)} recover-only {word}s; the limit is {MAX_RECOVER_OPENERS} "
                         "(docs/security.md, \"Limits\")", name, used[0])
    combined = combined_pattern(open_.pattern, tuple(alternatives), side)
    compiled = check.compile(combined, name, used[0])
    expected = strict_groups | {f"{g}{RECOVER_ALIAS}{k}" for k, alt in enumerate(alternatives, 1) for g in strict_groups}
    names = {g for g in compiled.groupindex if not g.startswith(REPAIR_GROUP)}
    if names != expected:
        raise check.fail(f"the combined recover {word} {combined[:80]!r} does not keep the groups apart "
                         "(a group name the renaming cannot reach)", name, used[0])
    problem = backtracking_problem(combined)
    if problem is not None:
        raise check.fail(f"the recover {word} {combined[:80]!r} is refused: {problem} (docs/security.md, \"Limits\")",
                         name, used[0])
    return tuple(alternatives)


def recover_variant(template: Template) -> Template | None:
    """The template a recover-mode parser runs: every field with recover-only openers gets the
    combined opener (:func:`combined_pattern`) as an ``open_pattern``, its repair groups added to
    its group names (``runtime.stream``'s ``_REPAIRS`` reads them from there); None when no field
    has any. Only the emitter uses it (``_RecoverParser``); grammars never do."""
    if not any(f.recover_open or f.recover_close for f in template.fields):
        return None
    fields = []
    for f in template.fields:
        if not (f.recover_open or f.recover_close):
            fields.append(f)
            continue
        opener, closer = f.open, f.close
        if f.recover_open:
            opener = _combined(f.open, f.recover_open, "open")
        if f.recover_close:
            closer = _combined(f.close, f.recover_close, "close")
        names = (opener.group_names if opener else ()) + (closer.group_names if closer else ())
        fields.append(dataclasses.replace(f, open=opener, close=closer, group_names=names, recover_open=(),
                                          recover_close=()))
    return dataclasses.replace(template, fields=tuple(fields))


def _combined(strict: Delimiter, alternatives: tuple[str, ...], side: str) -> Delimiter:
    pattern = combined_pattern(strict.pattern, alternatives, side)
    compiled = regex.compile(pattern, regex.DOTALL)
    names = tuple(g for g in sorted(compiled.groupindex, key=compiled.groupindex.__getitem__)
                  if RECOVER_ALIAS not in g)
    return Delimiter(f"{side}_pattern", None, pattern, False, names)
