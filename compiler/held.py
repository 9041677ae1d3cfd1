"""Pass 3, continued: the position automata of a state's delimiters, for a pending hold.

Theory of operation
-------------------
While a regex delimiter (kimi_k2's ``<\\|tool_call_begin\\|>\\s*(?:functions\\.)?(?P<name>...)``)
is still being written, every chunk would re-run the state's scanner over the held text (issue
14). The scanner's answer there is known without it. A scanner commits only a hit that starts
before its hold, and every watched delimiter's hit and hold start at ``pos`` or later; so when one
delimiter ``D`` holds from ``pos``, the scan holds from ``pos`` and emits nothing. ``D`` holds from
``pos`` when its partial search from there returns a match at ``pos`` that is partial or ends at
the buffer edge, which is known in two cases:

* the text held from ``pos`` is a proper prefix of a match of ``D`` (its start at ``pos`` is
  *live*) and no match of ``D`` is complete anywhere in it (the ``regex`` module prefers a
  complete match at any later start to a partial one, hence the second condition): the search
  returns a partial match at ``pos``;
* ``D``'s anchored match at ``pos`` is complete and ends at the buffer edge (a name of
  ``[^\\s<]+`` still being written): that is the leftmost complete match, so the search returns
  it. Only patterns whose complete matches can go on (:attr:`PositionAutomaton.extends`) ask.

This module builds the tables the runtime (``respc.runtime.held``) decides the first case with
over only the new characters of each chunk: the *position automaton* (Glushkov) of each eligible
delimiter. The runtime runs them together as a lazily built DFA.

Only patterns whose language is their matching are eligible: plain characters, sets, classes,
groups without flags, alternation and repeats; no anchor, lookaround or backreference (these look
at text outside the match; a lookahead that ends the pattern is read, below), no atomic group or possessive repeat (these change which texts match)
but those :func:`_possessive` proves it can model (below), no flag
but DOTALL and UNICODE, no case folding, and the ``re`` and ``regex`` parsers must read the source
alike (``automaton._read_source``). A pattern that matches the empty string is not eligible (it is
complete everywhere). A one-character item becomes a test that the runtime compiles with ``regex``
itself, so ``\\s``, ``\\w`` and ``\\d`` keep the ``regex`` module's Unicode meaning; each test is
also checked here against the compiler's own reading on sample characters.
tests/test_held.py checks both cases against the ``regex`` module and the parser's events
against the scan's.

A trailing lookahead
--------------------
A lookahead that ends the pattern, ``P(?=Y)`` (k2_horizon's call opener ends its name with
``(?=\\s|<)``, poolside's and glm5_3_flash's with ``(?=\\s*\\{)``, firefunction_v2's ``functools(?=\\[)``),
is read as the sequence ``P Y``, with ``P`` and ``Y`` both non-empty. Held text from ``pos`` is then a
partial match of ``P(?=Y)`` at ``pos`` exactly when it is a live prefix of ``P Y`` with no complete
match: the engine reports a partial match while ``P`` is being written and while ``Y`` is being
looked at up to the end of the text, and a complete one exactly when ``Y`` matches after ``P``,
which is a complete match of ``P Y`` (the scan runs then). Its complete matches never end at the
buffer's edge (``Y`` needs a character after them), so the runtime's edge case (below) never holds
one: any doubt is a scan. (k2_horizon's name in 4-character chunks was scanned at every
chunk, nine engine calls each.)

Start anchors
-------------
A start anchor (``^`` without MULTILINE, which is refused, and ``\\A``) matches only at offset 0 of
the buffer (a search from ``pos`` does not move it there). inkling's call opener
``(?:(?:<\\|message_model\\|>|^)[^<]*)?<\\|content_invoke_tool_json\\|>`` has one, so it had no
automaton and was scanned at every chunk while its name was written. Read *late*, each anchor is
an item no text passes: for held text from ``pos > 0`` every match that starts there or later
cannot pass it, so the late language is the delimiter's there, exactly. At ``pos == 0`` it may
not be (``^abc|xyz`` is complete on ``abc``), so a late automaton marks its record
(``late=True``) and the runtime scans whenever the held text starts at offset 0 (runtime
``StreamParser._held_regex``). A late reading that leaves a position no path reaches (``^abc``
alone) is not eligible.

Possessive runs
---------------
A possessive repeat of one class, ``X{m,}+`` with ``m >= 1`` (gpt_oss's name ``[^<\\s]++``), and
an atomic group holding only such a repeat (``(?>X+)``) or only one-character items
(``(?>abc)``, which has no choice to give back), are read exactly, not refused. ``X{m,}+`` takes
the longest run of ``X`` and gives nothing back: after its last position the next character is
read by the run again when it is in ``X`` and by what follows the run only when it is not. In
the position automaton that is the greedy form's with each link from the run's looping position
to a following position ``q`` kept when ``q``'s characters are disjoint from ``X`` (the greedy
form could not go there either while the run goes on, so nothing changes: the rule "possessive
equals greedy when what follows can never start with a character of ``X``") and dropped when
they are all in ``X`` (the possessive run would have taken that character: the path exists only
for the greedy form). Anything else is refused (:func:`_possessive`): a following position that
shares some characters with ``X`` and not others, the run entered again from outside its own
loop (``(?:a++)+``), a bounded or nullable run (``a{1,3}+``, ``a*+``: they stop or skip with an
``X`` character next), a longer body (``(?:ab)++``), and a pattern left with a position that can
no longer reach a match's end (``a++a``, ``(?:x[^<]++){2}``: held text would then be live
without being a prefix of any match, which the two cases above rest on). The classes are compared by ``regex`` itself over every code point
(:func:`_relation`). tests/test_held.py compares such automata with the ``regex`` module's
partial search on the possessive source, on random strings read whole and cut at every offset.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import regex

from .automaton import _CLASS_CATEGORIES as _CATEGORIES
from .automaton import _SAMPLES, _item_has, _read_source, sre_c, sre_parse
from .sre import parse_pattern

__all__ = ["PositionAutomaton", "position_automaton", "held_automata", "held_plan", "MAX_POSITIONS"]

#: at most this many positions per pattern, and per state (bounded repeats are unrolled)
MAX_POSITIONS = 600

_REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT)
_POSSESSIVE = getattr(sre_c, "POSSESSIVE_REPEAT", None)  # Python 3.11+
_ATOMIC = getattr(sre_c, "ATOMIC_GROUP", None)
#: the start anchors a late reading drops (``^`` without MULTILINE, ``\A``)
_AT_START = ("AT_BEGINNING", "AT_BEGINNING_STRING")
_CHAR_ITEMS = (sre_c.LITERAL, sre_c.NOT_LITERAL, sre_c.ANY, sre_c.RANGE, sre_c.CATEGORY, sre_c.IN)


@dataclass(frozen=True)
class PositionAutomaton:
    """The position (Glushkov) automaton of one regex delimiter.

    A *position* is one one-character item of a pattern; a match is a path ``first`` ->
    ``follow`` ... ending in ``last``, each character matching the test of the position it
    enters.

    Attributes:
        tests (tuple[str, ...]): per position, the character a literal item matches, or (two
            characters or more) a ``regex`` source matching exactly the characters that item
            matches (compiled with DOTALL).
        first (tuple[int, ...]): the positions a match can start with.
        follow (tuple[tuple[int, ...], ...]): per position, the positions that can come next.
        last (tuple[int, ...]): the positions a match can end with.
        pattern (str): the delimiter's source.
        late (bool): read with its start anchors as matching nothing (see "Start anchors" in the
            module docstring): true of the delimiter only where the held text starts after
            offset 0 of the buffer.
    """

    tests: tuple[str, ...]
    first: tuple[int, ...]
    follow: tuple[tuple[int, ...], ...]
    last: tuple[int, ...]
    pattern: str = ""
    late: bool = False

    @property
    def extends(self) -> bool:
        """Whether a complete match can go on (a last position has a follower: ``[^\\s<]+`` at
        the end): then a complete match ending at the buffer edge is held by the scanner too,
        and the runtime asks the pattern's anchored match about it (runtime ``HeldRegex.edges``)."""
        return any(self.follow[p] for p in self.last)


class _Ineligible(Exception):
    """The pattern holds something the position automaton does not model."""


def _hex(code: int) -> str:
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _literal(code: int) -> str:
    """One character as ``regex`` source, valid in and outside a set: printable ASCII (but the
    space) escaped as ``regex.escape`` does, anything else as ``\\uXXXX``."""
    c = chr(code)
    if c.isascii() and c.isprintable() and c != " ":
        return regex.escape(c)
    return _hex(code)


def _set_member(op, av) -> str:
    if op is sre_c.LITERAL:
        return _literal(av)
    if op is sre_c.RANGE:
        return _literal(av[0]) + "-" + _literal(av[1])
    if op is sre_c.CATEGORY and str(av) in _CATEGORIES:
        return _CATEGORIES[str(av)]
    raise _Ineligible(f"set member {op}")


def _test(op, av) -> str:
    """The test of one one-character item: a literal as the character itself, anything else as
    a ``regex`` source of two characters or more (so the runtime tells them apart by length)."""
    if op is sre_c.LITERAL:
        return chr(av)
    if op is sre_c.NOT_LITERAL:
        return "[^" + _literal(av) + "]"
    if op is sre_c.ANY:
        return "[\\s\\S]"
    if op is sre_c.RANGE:
        return "[" + _set_member(op, av) + "]"
    if op is sre_c.CATEGORY:
        if str(av) not in _CATEGORIES:
            raise _Ineligible(str(av))
        return _CATEGORIES[str(av)]
    if op is sre_c.IN:
        negate = bool(av) and av[0][0] is sre_c.NEGATE
        items = av[1:] if negate else av
        if not items:
            raise _Ineligible("an empty set")
        if not negate and len(items) == 1 and items[0][0] is sre_c.CATEGORY:
            return _set_member(*items[0])  # [\\s] is \\s
        return "[" + ("^" if negate else "") + "".join(_set_member(o, a) for o, a in items) + "]"
    raise _Ineligible(str(op))


class _Builder:
    def __init__(self, late: bool = False) -> None:
        #: read a start anchor as an item no text passes (:func:`position_automaton`'s ``late``)
        self.late = late
        #: start anchors read so
        self.anchors = 0
        self.tests: list[str] = []
        self.items: list[tuple] = []
        self.follow: list[set[int]] = []
        #: per possessive run (:meth:`run`): (its positions, its looping position, the positions
        #: linked from that one since the run was built: what follows it)
        self.runs: list[tuple[frozenset[int], int, set[int]]] = []

    def position(self, op, av) -> int:
        if len(self.tests) >= MAX_POSITIONS:
            raise _Ineligible("too many positions")
        self.tests.append(_test(op, av))
        self.items.append((op, av))
        self.follow.append(set())
        return len(self.tests) - 1

    def link(self, lasts, firsts) -> None:
        for p in lasts:
            self.follow[p] |= firsts
        for _positions, loop, after in self.runs:
            if loop in lasts:
                after |= firsts

    def seq(self, seq) -> tuple[set[int], set[int], bool]:
        """(first, last, nullable) of a sequence of sre items, linking follow sets."""
        return self.concat(self.item(op, av) for op, av in seq)

    def concat(self, pieces) -> tuple[set[int], set[int], bool]:
        """(first, last, nullable) of pieces one after the other, linking each piece's last
        positions (and those of nullable pieces before it) to its first."""
        first: set[int] = set()
        last: set[int] = set()
        nullable = True
        for f, l, n in pieces:
            self.link(last, f)
            if nullable:
                first |= f
            last = (last | l) if n else l
            nullable = nullable and n
        return first, last, nullable

    def item(self, op, av) -> tuple[set[int], set[int], bool]:
        if op in (sre_c.LITERAL, sre_c.NOT_LITERAL, sre_c.ANY, sre_c.RANGE, sre_c.CATEGORY, sre_c.IN):
            p = self.position(op, av)
            return {p}, {p}, False
        if op is sre_c.AT and self.late and str(av) in _AT_START:
            # no match starting after offset 0 passes ^ or \A (no MULTILINE: refused below)
            self.anchors += 1
            return set(), set(), False
        if op is sre_c.SUBPATTERN:
            if av[1] or av[2]:
                raise _Ineligible("a scoped flag")
            return self.seq(av[-1])
        if op is sre_c.BRANCH:
            first: set[int] = set()
            last: set[int] = set()
            nullable = False
            for alt in av[1]:
                f, l, n = self.seq(alt)
                first |= f
                last |= l
                nullable = nullable or n
            return first, last, nullable
        if op in _REPEATS:
            low, high, body = av
            return self.repeat(low, high, body)
        if op is _POSSESSIVE and _POSSESSIVE is not None:
            return self.run(*av)
        if op is _ATOMIC and _ATOMIC is not None:
            items = list(av)
            if all(o in _CHAR_ITEMS for o, _a in items):
                return self.seq(items)  # (?>abc): no choice inside, nothing to give back
            if len(items) == 1 and items[0][0] in (sre_c.MAX_REPEAT, _POSSESSIVE):
                return self.run(*items[0][1])  # (?>X+) is X++
            raise _Ineligible("an atomic group other than (?>X+) or (?>abc)")
        raise _Ineligible(str(op))

    def run(self, low: int, high: int, body) -> tuple[set[int], set[int], bool]:
        """A possessive run ``X{low,}+`` of one class (see "Possessive runs" in the module
        docstring): built as its greedy form, then registered so that :func:`_possessive` can
        read what follows it once the whole pattern is linked."""
        items = list(body)
        if low < 1 or high < sre_c.MAXREPEAT or len(items) != 1 or items[0][0] not in _CHAR_ITEMS:
            raise _Ineligible("a possessive repeat other than X{m,}+ of one class, m >= 1")
        start = len(self.tests)
        first, last, nullable = self.repeat(low, high, items)
        (loop,) = last  # the looping copy's one position
        self.runs.append((frozenset(range(start, len(self.tests))), loop, set()))
        return first, last, nullable

    def repeat(self, low: int, high: int, body) -> tuple[set[int], set[int], bool]:
        # body{low,high} is body low times, then (high - low) optional copies (or one loop)
        # (body+ when unbounded with low >= 1: body low - 1 times, then one copy that loops)
        pieces: list[tuple[set[int], set[int], bool]] = []
        unbounded = high >= sre_c.MAXREPEAT
        for _ in range(low - 1 if unbounded and low else low):
            pieces.append(self.seq(body))
        if unbounded:
            f, l, n = self.seq(body)
            self.link(l, f)
            pieces.append((f, l, n or not low))
        else:
            for _ in range(high - low):
                f, l, _n = self.seq(body)
                pieces.append((f, l, True))
        return self.concat(pieces)


def _check_tests(builder: _Builder, pattern: str) -> None:
    """Each position's test must agree with the compiler's reading of its item."""
    samples = set(_SAMPLES) | set(pattern) | {"\u00a0", "\u2028", "\u0660", "\U0001f600"}
    compiled: dict[str, object] = {}
    for test, (op, av) in zip(builder.tests, builder.items):
        if len(test) == 1:
            if op is not sre_c.LITERAL:
                raise _Ineligible(f"a one-character test {test!r} for {op}")
            continue
        rx = compiled.get(test)
        if rx is None:
            rx = compiled[test] = regex.compile(test, regex.DOTALL)
        for c in samples:
            if (rx.fullmatch(c) is not None) != _item_has(op, av, c):
                raise _Ineligible(f"the test {test!r} reads {c!r} differently")


_NONE, _SOME, _ALL = "disjoint", "overlap", "subset"


@lru_cache(maxsize=None)
def _every_character() -> str:
    return "".join(map(chr, range(0x110000)))


def _source(test: str) -> str:
    """A position's test as ``regex`` source matching one character (a literal is escaped)."""
    return _literal(ord(test)) if len(test) == 1 else test


@lru_cache(maxsize=256)
def _relation(test: str, run: str) -> str:
    """How the characters of one position's test lie against a run's class: ``"disjoint"``,
    ``"subset"`` (all in it) or ``"overlap"``, decided by ``regex`` (DOTALL) over every code
    point, so ``\\s`` and ``\\w`` keep the ``regex`` module's Unicode meaning."""
    a, x = _source(test), _source(run)
    every = _every_character()
    some_in = regex.search(f"(?={x}){a}", every, regex.DOTALL) is not None
    some_out = regex.search(f"(?!{x}){a}", every, regex.DOTALL) is not None
    if not some_in:
        return _NONE
    return _SOME if some_out else _ALL


def _possessive(builder: _Builder, last: set[int]) -> None:
    """Read each possessive run of ``builder`` exactly (module docstring, "Possessive runs"):
    drop the links from its looping position to following positions whose characters are all in
    its class, keep those to positions disjoint from it.

    Raises:
        _Ineligible: a following position overlaps the class, the run is entered again from
            outside its loop, or afterwards a position cannot reach one of ``last``.
    """
    for positions, loop, after in builder.runs:
        run = builder.tests[loop]
        for q in sorted(after):
            if q in positions:
                raise _Ineligible("a possessive run entered again from outside its own loop")
            relation = _relation(builder.tests[q], run)
            if relation == _SOME:
                raise _Ineligible(f"{builder.tests[q]!r} after the possessive run {run!r} shares some characters")
            if relation == _ALL:
                builder.follow[loop].discard(q)
    # every position must still reach a match's end (a++a would not)
    alive = set(last)
    grew = True
    while grew:
        grew = False
        for p, follow in enumerate(builder.follow):
            if p not in alive and follow & alive:
                alive.add(p)
                grew = True
    if len(alive) != len(builder.tests):
        raise _Ineligible("a position that cannot reach the end of a match")


def _trailing_lookahead(items: list) -> object | None:
    """The body of a lookahead that ends the pattern's top-level sequence (``(?=\\s|<)``), or None."""
    if items and items[-1][0] is sre_c.ASSERT and items[-1][1][0] == 1:
        return items[-1][1][1]
    return None


def position_automaton(pattern: str, late: bool = False) -> PositionAutomaton | None:
    """The position automaton of one regex delimiter, or None when it is not eligible (see the
    module docstring for what is).

    Args:
        pattern (str): the delimiter's source (``regex`` syntax, compiled with DOTALL).
        late (bool): read its start anchors as items no text passes (module docstring, "Start
            anchors"); None when it has none, or when a position is then left that no match
            can reach.

    Returns:
        PositionAutomaton | None: its tables, positions numbered from 0.
    """
    builder = _Builder(late)
    try:
        reading = _read_source(pattern)
        if not reading.sre_agrees or reading.rewritten:
            return None
        tree = parse_pattern(pattern, sre_c.SRE_FLAG_DOTALL)
        if tree.state.flags & ~(sre_c.SRE_FLAG_DOTALL | sre_c.SRE_FLAG_UNICODE):
            return None
        items = list(tree)
        ahead = _trailing_lookahead(items)
        if ahead is not None:
            # P(?=Y) is read as P then Y (see "A trailing lookahead" in the module docstring)
            if _Builder().seq(items[:-1])[2] or _Builder().seq(ahead)[2]:
                return None  # (?=\{) alone, or a lookahead that always succeeds
            items[-1:] = list(ahead)
        first, last, nullable = builder.seq(items)
        if nullable:
            return None
        _check_tests(builder, pattern)
        if builder.runs:
            _possessive(builder, last)
        if late and (not builder.anchors or not _reachable(builder, first)):
            return None
    except Exception:  # noqa: BLE001 - anything unreadable (_Ineligible, sre errors): not eligible
        return None
    return PositionAutomaton(tuple(builder.tests), tuple(sorted(first)),
                             tuple(tuple(sorted(f)) for f in builder.follow), tuple(sorted(last)), pattern,
                             late)


def _reachable(builder: _Builder, first: set[int]) -> bool:
    """Whether every position of ``builder`` can be reached from ``first`` (a late reading leaves
    those after a dropped anchor unreached when nothing else leads to them)."""
    seen = set(first)
    todo = list(first)
    while todo:
        for q in builder.follow[todo.pop()]:
            if q not in seen:
                seen.add(q)
                todo.append(q)
    return len(seen) == len(builder.tests)


def held_automata(patterns) -> tuple[PositionAutomaton, ...] | None:
    """The position automata of the eligible patterns among ``patterns`` (a state's regex
    delimiters, duplicates dropped), or None when none is eligible or together they have more
    than :data:`MAX_POSITIONS` positions.

    Any one eligible delimiter suffices: while its start at ``pos`` is live and it has no
    complete match in the held text, it holds from ``pos`` (see the module docstring); the
    ineligible ones are not read, and the others' complete matches do not matter. A delimiter
    with a start anchor is read late (``late``), when that makes it eligible.
    """
    automata = [a for a in (position_automaton(p) or position_automaton(p, late=True) for p in dict.fromkeys(patterns))
                if a is not None]
    if not automata or sum(len(a.tests) for a in automata) > MAX_POSITIONS:
        return None
    return tuple(automata)


def held_plan(automaton) -> tuple[tuple[PositionAutomaton, ...] | None, ...]:
    """Per state of ``automaton`` (compiler/automaton.py ``Automaton``), the position automata
    of its eligible delimiters (:func:`held_automata`), or None: for states without one, and for
    the *after* states of v2 (they decide only at one offset).

    Literal delimiters are included (their escaped pattern): a long special-token delimiter held
    over several chunks (plamo3's ``<|plamo:end_tool_request:plamo|>``, minimax_m3's
    ``]<]minimax[>[`` before every tag of a call body) is then read by the DFA instead of scanned
    per chunk. (Per streamed call, callgrind: kimi_k3 -15 %, plamo3 -14 %, minimax_m3 -7 %;
    prose unchanged.)"""
    plan = []
    for state in automaton.states:
        if any(w.action == "after" for w in state.watches):
            plan.append(None)
            continue
        plan.append(held_automata([w.delimiter.pattern for w in state.watches]))
    return tuple(plan)
