"""Scanners the runtime builds from a generated module's declarations (issue 31).

A generated module declares, per state that watches literal delimiters only, those delimiters as
:class:`Literal` records in rank order; :func:`build_scanners` (called when the parser class is
created) turns each such declaration into the state's scanner, with its memo slots, its shared
first-character searches and its hold of a proper prefix ending the buffer, and gives the state
its ``HOLD_LITERALS`` entry. States that watch a regex delimiter keep the scanner the compiler
writes for them.

The scanner is written out as Python source and compiled once per state, by its first call
(:func:`build_scanners`), as ``dataclasses`` writes ``__init__``: a loop over the literals cost up to 7% of a whole-text parse (qwen3,
hermes2pro; issue 31). Only ``repr`` of checked ``str`` and ``int`` values reaches that source.

A scanner is ``scan(buf, pos, eos, memo) -> (start, end, rank, match, hold)``: the committable
delimiter hit from ``pos`` (``start`` -1: none) and the leftmost offset from which more input
could still change the answer, from which text must be held back (docs/template-language.md,
"Matching": the leftmost hit wins; at one start the longest, then the lowest rank). ``memo[slot]``
keeps each search result over the same buffer: a hit at or after ``pos`` is still the first one
from ``pos``, and "none" stays none, so no text is searched twice.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

__all__ = ["Literal", "HELD_LITERALS", "PREFIX_TABLE_BUDGET", "build_scanners", "literal_scanner", "literal_automata",
           "literal_prefixes"]

#: proper prefixes of a state's literals are kept as a ``frozenset`` while they total at most
#: this many characters, else as :class:`~respc.runtime.stream.LiteralPrefixes` (linear space;
#: docs/security.md, "Limits"); the same budget as ``compiler.automaton.PREFIX_TABLE_BUDGET``
PREFIX_TABLE_BUDGET = 4096

#: a first character that begins this many distinct literals of a state is searched once, and
#: those literals only after it
GROUP_MIN = 3


class Literal(NamedTuple):
    """One literal delimiter a state watches (a delimiter given as a list of literals is one
    record per literal, all with its rank).

    Attributes:
        text (str): the literal (non-empty).
        rank (int): its delimiter's rank in the state (the index of its ``TRANSITIONS`` edge).
    """

    text: str
    rank: int


class _HeldLiterals:
    """The type of :data:`HELD_LITERALS`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "HELD_LITERALS"


#: A ``HOLD_REGEX`` entry of a declared state: its held automata are those of its literal
#: delimiters (:func:`literal_automata`), built by the runtime instead of written out. The
#: compiler writes it only where its own tables read the same: no complete match can go on.
HELD_LITERALS = _HeldLiterals()


def literal_automata(literals: tuple) -> tuple:
    """The position automata of a state's literal delimiters, one per delimiter (the literals of
    one rank; equal ones once): a chain of one-character tests per literal, none of whose
    complete matches goes on (runtime/held.py reads them; compiler/held.py writes the same
    language for the escaped pattern).

    Args:
        literals (tuple[Literal, ...]): the state's declaration, in rank order.

    Returns:
        tuple[HeldAutomaton, ...]: per delimiter ``edge`` None, ``tests``, ``first``, ``follow``,
        ``last``.
    """
    from .tables import HeldAutomaton

    by_rank: dict[int, list[str]] = {}
    for record in literals:
        by_rank.setdefault(record.rank, []).append(record.text)
    out = []
    seen = set()
    for texts in by_rank.values():
        key = tuple(sorted(set(texts)))
        if key in seen:
            continue
        seen.add(key)
        tests: list[str] = []
        first, follow, last = [], [], []
        for text in dict.fromkeys(texts):
            start = len(tests)
            tests.extend(text)
            first.append(start)
            follow.extend((k + 1,) for k in range(start, start + len(text) - 1))
            follow.append(())
            last.append(start + len(text) - 1)
        out.append(HeldAutomaton(edge=None, tests=tuple(tests), first=tuple(first), follow=tuple(follow),
                                 last=tuple(last)))
    return tuple(out)


def literal_prefixes(literals: tuple) -> frozenset | object:
    """The proper prefixes (non-empty) of ``literals``' members longer than one character, as a
    ``frozenset`` while they total at most :data:`PREFIX_TABLE_BUDGET` characters, else as a
    :class:`~respc.runtime.stream.LiteralPrefixes` (linear space; docs/security.md, "Limits"):
    what a scanner tests ``buf[j:] in`` to hold a literal's start ending the buffer. A generated
    module calls it for a state that watches literals and a regex delimiter (issue 31: the
    prefixes are not written out).

    Raises:
        TypeError: ``literals`` is not a tuple of str.
    """
    if not isinstance(literals, tuple) or not all(type(lit) is str for lit in literals):
        raise TypeError(f"literal_prefixes takes a tuple of str, not {literals!r}")
    plan = _hold_plan(literals)
    return frozenset() if plan is None else plan[3]


def _hold_plan(literals: tuple[str, ...]):
    """``(distinct literals, span, firsts, prefixes)`` of literals that hold a proper prefix ending
    the buffer, or None when none is longer than one character (nothing to hold)."""
    from .stream import LiteralPrefixes

    distinct = tuple(dict.fromkeys(literals))
    longer = [lit for lit in distinct if len(lit) > 1]
    if not longer:
        return None
    if sum(len(lit) * (len(lit) - 1) // 2 for lit in longer) <= PREFIX_TABLE_BUDGET:
        prefixes = frozenset(lit[:k] for lit in longer for k in range(1, len(lit)))
    else:
        prefixes = LiteralPrefixes(tuple(longer))
    firsts = "".join(sorted({lit[0] for lit in longer}))
    return distinct, max(len(lit) for lit in longer) - 1, firsts, prefixes


def _records(literals: tuple) -> None:
    """Refuse a declaration that is not ``Literal`` records of an exact non-empty ``str`` and an
    exact ``int`` (a module not made by respc): nothing else may reach a scanner's source."""
    if not isinstance(literals, tuple):
        raise TypeError(f"a literal scanner takes a tuple of Literal(text, rank) records, not {literals!r}")
    for record in literals:
        if (not isinstance(record, Literal) or type(record.text) is not str or not record.text
                or type(record.rank) is not int):
            raise TypeError(f"a literal scanner takes Literal(text, rank) records, not {record!r}")


def literal_scanner(literals: tuple, slot: int) -> tuple[Callable, int, tuple | None]:
    """Build the scanner of a state that watches the literal delimiters ``literals``.

    Args:
        literals (tuple[Literal, ...]): the state's delimiters, in rank order.
        slot (int): its first memo slot.

    Returns:
        tuple: ``(scan, slots, hold)``: the scanner (see the module docstring), how many memo
        slots it uses from ``slot`` on, and the state's ``HOLD_LITERALS`` entry ``(literals,
        span, firsts, prefixes)`` or None.

    Raises:
        TypeError: a record is not a ``Literal`` of a non-empty str and an int (a module not
        made by respc).
    """
    _records(literals)
    if not literals:
        def scan_nothing(buf, pos, eos, memo):
            return -1, 0, 0, None, len(buf)
        return scan_nothing, 0, None
    texts = [r.text for r in literals]
    # one search per first character that begins GROUP_MIN or more distinct literals: its common
    # prefix, found once; those literals are looked for only after it
    by_first: dict[str, list[str]] = {}
    for text in texts:
        by_first.setdefault(text[0], []).append(text)
    groups: list[tuple[int, str]] = []
    group_of: dict[str, int] = {}
    for first, members in by_first.items():
        if len(set(members)) >= GROUP_MIN:
            common = members[0]
            for text in members[1:]:
                while not text.startswith(common):
                    common = common[:-1]
            group_of[first] = slot + len(literals) + len(groups)
            groups.append((group_of[first], common))
    hold_plan = _hold_plan(tuple(texts))
    source = _literal_source(literals, slot, group_of, groups, hold_plan)
    scope = {"literal_hold": _literal_hold(), "PREFIXES": None if hold_plan is None else hold_plan[3]}
    exec(compile(source, "<respc literal scanner>", "exec"), scope)  # noqa: S102 (see _literal_source)
    scan = scope["scan"]
    scan.__doc__ = "Scanner of literal delimiters " + ", ".join(repr(t) for t in texts[:8])
    return scan, len(literals) + len(groups), hold_plan


def build_scanners(owner: type, scanners: tuple, memo_slots: int) -> tuple[tuple, int, tuple]:
    """Turn a parser class's ``SCANNERS`` into scanners: each entry that is a tuple of
    :class:`Literal` records becomes :func:`literal_scanner`'s, with memo slots after the
    compiler's ``memo_slots``; a function is kept.

    The records are checked and the memo slots and ``HOLD_LITERALS`` entries made now; the
    scanner's source is compiled by its first call (an import compiles nothing: about 0.2 ms per
    state), which then puts it in ``owner.SCANNERS`` in place of the stub.

    Returns:
        tuple: ``(scanners, memo slots in all, per state its HOLD_LITERALS entry or None)``.
    """
    built = []
    holds = []
    for state, entry in enumerate(scanners):
        if isinstance(entry, tuple):
            used, hold = _check(entry)
            built.append(_lazy(owner, state, entry, memo_slots))
            memo_slots += used
            holds.append(hold)
        else:
            built.append(entry)
            holds.append(None)
    return tuple(built), memo_slots, tuple(holds)


def _check(literals: tuple) -> tuple[int, tuple | None]:
    """``(memo slots, HOLD_LITERALS entry)`` of a declaration, checked as :func:`literal_scanner`
    checks it (TypeError) without compiling anything."""
    _records(literals)
    texts = [r.text for r in literals]
    firsts: dict[str, set] = {}
    for text in texts:
        firsts.setdefault(text[0], set()).add(text)
    groups = sum(1 for members in firsts.values() if len(members) >= GROUP_MIN)
    return (len(literals) + groups if literals else 0), (_hold_plan(tuple(texts)) if literals else None)


def _lazy(owner: type, state: int, literals: tuple, slot: int) -> Callable:
    """A stub scanner that builds the real one on its first call and replaces itself with it in
    ``owner.SCANNERS`` (where it still is: a wrapper such as the time-limit guard keeps it)."""
    real = None

    def scan(buf, pos, eos, memo):
        nonlocal real
        if real is None:
            real = literal_scanner(literals, slot)[0]
            scanners = owner.__dict__.get("SCANNERS", ())
            if state < len(scanners) and scanners[state] is scan:
                owner.SCANNERS = scanners[:state] + (real,) + scanners[state + 1:]
        return real(buf, pos, eos, memo)

    return scan


def _literal_hold():
    from .stream import literal_hold

    return literal_hold


def _literal_source(literals: tuple, slot: int, group_of: dict, groups: list, hold_plan) -> str:
    """The source of a literal scanner: each search written out, as the compiler wrote it before
    issue 31 (a loop over the literals costs up to 7% of a whole-text parse: qwen3, hermes2pro).
    Only ``repr`` of a checked ``str`` and of ``int`` values reach it (:func:`literal_scanner`
    checks the records), so no text of a template can be anything but a string literal here."""
    lines = ["def scan(buf, pos, eos, memo):", "    n = len(buf)", "    hold = n", "    bs = be = br = -1"]
    names = {}
    for k, (gslot, common) in enumerate(groups):
        g = names[gslot] = f"g{k}"
        lines += [f"    {g} = memo[{gslot}]", f"    if {g} is None or -1 < {g} < pos:",
                  f"        {g} = memo[{gslot}] = buf.find({common!r}, pos)"]
    for k, record in enumerate(literals):
        text, rank, length, fslot = record.text, record.rank, len(record.text), slot + k
        lines += [f"    i = memo[{fslot}]", "    if i is None or -1 < i < pos:"]
        gslot = group_of.get(text[0])
        if gslot is None:
            lines.append(f"        i = memo[{fslot}] = buf.find({text!r}, pos)")
        else:
            g = names[gslot]
            lines.append(f"        i = memo[{fslot}] = buf.find({text!r}, {g}) if {g} >= 0 else -1")
        if k == 0:
            lines.append("    if i >= 0:")
        else:
            lines.append(f"    if i >= 0 and (bs < 0 or i < bs or i == bs and ({length} > be - bs"
                         f" or {length} == be - bs and {rank} < br)):")
        lines.append(f"        bs, be, br = i, i + {length}, {rank}")
    if hold_plan is not None:
        _, span, firsts, _ = hold_plan
        lines += ["    if not eos:", f"        j = n - {span}", "        if j < pos:", "            j = pos"]
        if len(firsts) == 1:
            lines += [f"        j = buf.find({firsts!r}, j)", "        while j >= 0:",
                      "            if buf[j:] in PREFIXES:", "                hold = j", "                break",
                      f"            j = buf.find({firsts!r}, j + 1)"]
        else:
            lines.append(f"        hold = literal_hold(buf, j, {firsts!r}, PREFIXES)")
    lines += ["    if 0 <= bs < hold:", "        return bs, be, br, None, hold", "    return -1, 0, 0, None, hold", ""]
    return "\n".join(lines)
