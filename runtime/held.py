"""A regex delimiter still being written, read over only the new characters
(docs/security.md "Model output: time and memory").

A generated module's ``HOLD_REGEX`` gives, per state, the position automata of the state's
eligible regex delimiters (compiler/held.py explains which, and why the answer below is the
scanner's). :class:`HeldRegex` runs them as one DFA built lazily, one state per triple of sets:
``live``, the positions reached by matches starting at the held offset ``pos``; ``later``, those
reached by matches starting after it (with the start markers ``-1 - i``, "delimiter ``i`` may
start at the next character"); ``done``, the delimiters that have had a complete match (they are
no longer read). A step that leaves no live position of a delimiter not done *stops*: the parser
scans as usual (after asking the ``edges`` patterns, see ``StreamParser._held_regex``). Until
then that delimiter's search would return a partial match at ``pos``, so the scanner would hold
from ``pos`` and emit nothing, and ``StreamParser.feed`` skips it. Stopping is final as the text
grows (a dead start stays dead, a complete match stays), so a stopped run stays stopped.

DFA states are dicts: character -> next state (or :data:`STOP`); key None holds the triple. They
are shared by every parser of the module (the tables are per class) and only grow with distinct
characters seen in held text: at most :data:`MAX_EDGES` entries per state, :data:`MAX_STATES`
states and :data:`MAX_CHARS` classified characters are kept (past that they are recomputed).

A module writes each automaton as one ``HeldAutomaton`` record built by keyword (runtime/tables.py,
compiler/emit.py ``_held_rows``;
docs/security.md "Declared scanners and named records": no JSON in strings); a module of ABI 3 wrote each as one
JSON string constant, which :func:`automaton_table` still decodes. A parser class makes its
:class:`HeldRegex` objects with ``lazy=True``: ``StreamParser._held_regex`` has their tests
compiled (:meth:`HeldRegex.build`) the first time text is held in that state, so an import pays
no regex compile. (The tuples cost a cold import without a cached ``.pyc`` their bytecode
compile: gpt_oss 25 -> 34 ms; a warm import 0.50 -> 0.64 ms.)
"""

from __future__ import annotations

import json
from typing import Any

import regex

__all__ = ["HeldRegex", "STOP", "automaton_table"]

#: what a step returns when the scanner must run (the start at ``pos`` died, or a match completed)
STOP = False
#: most entries cached per DFA state
MAX_EDGES = 64
#: most characters whose test results are cached
MAX_CHARS = 2048
#: most DFA states kept for reuse
MAX_STATES = 1024


def automaton_table(entry: Any) -> tuple:
    """One delimiter's entry of ``HOLD_REGEX`` as ``(edge, tests, first, follow, last)``.

    Args:
        entry (str | tuple): the JSON text a generated module holds, ``[edge, tests, first,
            follow, last]`` (``edge`` a string or null, ``tests`` strings, the others integers
            and lists of integers), or that tuple itself (returned as it is).

    Returns:
        tuple: ``(str | None, tuple[str, ...], tuple[int, ...], tuple[tuple[int, ...], ...],
        tuple[int, ...])``, what :class:`HeldRegex` takes.

    Raises:
        ValueError: the text is not JSON of that shape (a module not made by respc); the
            message quotes its start.
    """
    if not isinstance(entry, str):
        return tuple(entry[:5])  # (a HeldAutomaton's ``late`` is read by HeldRegex itself)
    try:
        edge, tests, first, follow, last = json.loads(entry)
        return edge, tuple(tests), tuple(first), tuple(tuple(row) for row in follow), tuple(last)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"HOLD_REGEX entry {entry[:60]!r}... is not [edge, tests, first, follow, last] "
                         f"JSON: {exc}") from None


class HeldRegex:
    """The lazily built DFA of one state's position automata (see the module docstring).

    Args:
        *automata (str | tuple): per delimiter ``(edge, tests, first, follow, last)``, or that
            as the JSON text of a generated module (:func:`automaton_table`): its pattern when
            a complete match can go on (else None); per position its test (a literal
            character, or a ``regex`` source of two characters or more matching one
            character); the positions a match starts with; per position, those that may come
            next; those a match may end with. Positions are numbered from 0 in each.
        lazy (bool): only keep ``automata``; :meth:`build` decodes and compiles them (and sets
            ``start``), as ``StreamParser._held_regex`` does the first time text is held.

    Raises:
        ValueError: an entry is not such JSON; regex.error: a test or ``edge`` pattern does not
        compile (both: a module not made by respc; with ``lazy``, raised by :meth:`build`).

    Attributes:
        start (dict | None): the DFA state of an empty held text (None until built).
        edges (tuple[regex.Pattern, ...]): the ``edge`` patterns, compiled with DOTALL (set when
            built).
        late (bool): some automaton is read past start anchors (``HeldAutomaton.late``): it is
            the delimiter's only for held text that starts after offset 0.
    """

    # No __getattr__ here: a class with one is not specialised by CPython's attribute caches,
    # and start/edges/_chars are read per chunk (+0.4% instructions per gpt_oss parse measured)
    __slots__ = ("_automata", "_tests", "_literals", "_first", "_follow", "_last", "_owner", "_chars", "_states",
                 "start", "edges", "late")

    def __init__(self, *automata: str | tuple, lazy: bool = False) -> None:
        #: the entries as given, until build replaces them by the tables (then None)
        self._automata: tuple | None = automata
        self.start: dict | None = None
        #: an automaton read past start anchors (runtime/tables.py ``HeldAutomaton.late``): held
        #: text from offset 0 is scanned
        self.late = any(type(e) is not str and len(e) > 5 and e[5] is True for e in automata)
        if not lazy:
            self.build()

    def build(self) -> dict:
        """Decode and compile the tables if not done yet; return :attr:`start`."""
        if self._automata is not None:
            self._build(self._automata)
        return self.start

    def _build(self, automata: tuple) -> None:
        compiled: dict[str, Any] = {}
        tests: list = []
        literals: dict[str, set[int]] = {}
        first: list = []
        follow: list = []
        last: set[int] = set()
        owner: list[int] = []
        edges: list = []
        for index, entry in enumerate(automata):
            edge, t, f, nxt, end = automaton_table(entry)
            if edge is not None:
                edges.append(regex.compile(edge, regex.DOTALL))
            base = len(owner)
            for k, src in enumerate(t):
                if len(src) == 1:
                    literals.setdefault(src, set()).add(base + k)
                else:
                    rx = compiled.get(src)
                    if rx is None:
                        rx = compiled[src] = regex.compile(src, regex.DOTALL)
                    tests.append((base + k, rx))
            first.append(tuple(base + k for k in f))
            follow += [tuple(base + k for k in row) for row in nxt]
            last |= {base + k for k in end}
            owner += [index] * len(t)
        #: the delimiters that can go on after a complete match, compiled: a complete match at
        #: ``pos`` that ends at the buffer edge is held too (see StreamParser._held_regex)
        self.edges = tuple(edges)
        #: the class positions and their compiled tests; literal positions by character
        self._tests = tuple(tests)
        self._literals = {c: frozenset(ks) for c, ks in literals.items()}
        #: start markers are negative: -1 - i starts delimiter i
        self._first = tuple(first)
        self._follow = tuple(follow)
        self._last = frozenset(last)
        self._owner = tuple(owner)
        #: character -> frozenset of the positions whose test it passes
        self._chars: dict[str, frozenset] = {}
        #: (live, later, done) -> its DFA state
        self._states: dict[tuple, dict] = {}
        self.start = self._state(frozenset(range(-len(first), 0)), frozenset(), frozenset())
        self._automata = None

    def run(self, d: Any, text: str) -> Any:
        """The DFA state after reading ``text`` from state ``d`` (:data:`STOP` stays STOP)."""
        if d is STOP:
            return STOP
        for c in text:
            nxt = d.get(c)
            if nxt is None:
                nxt = self.step(d, c)
            if nxt is STOP:
                return STOP
            d = nxt
        return d

    def _state(self, live: frozenset, later: frozenset, done: frozenset) -> dict:
        key = (live, later, done)
        d = self._states.get(key)
        if d is None:
            d = {None: key}
            if len(self._states) < MAX_STATES:
                self._states[key] = d
        return d

    def step(self, d: dict, c: str) -> Any:
        """One character read from DFA state ``d`` when ``d`` has no entry for it yet (the entry
        is added): the next state, or STOP when no delimiter is left whose start at ``pos`` is
        live and that has no complete match so far."""
        live, later, done = d[None]
        passing = self._chars.get(c)
        if passing is None:
            passing = self._literals.get(c, frozenset()) | {k for k, rx in self._tests if rx.match(c) is not None}
            if len(self._chars) < MAX_CHARS:
                self._chars[c] = passing
        live = self._move(live, passing)
        later = self._move(later, passing)
        owner = self._owner
        ended = (live | later) & self._last
        if ended:
            # a delimiter with a complete match is no longer read (its search would return it)
            done = done | {owner[p] for p in ended}
            live = frozenset(p for p in live if owner[p] not in done)
            later = frozenset(p for p in later if owner[p] not in done)
        nxt: Any = STOP
        if live:
            seeds = {-1 - i for i in range(len(self._first)) if i not in done}
            nxt = self._state(live, later | seeds, done)
        if len(d) <= MAX_EDGES:
            d[c] = nxt
        return nxt

    def _move(self, positions: frozenset, passing: frozenset) -> frozenset:
        out: set[int] = set()
        first, follow = self._first, self._follow
        for p in positions:
            for q in (first[-1 - p] if p < 0 else follow[p]):
                if q in passing:
                    out.add(q)
        return frozenset(out)
