"""Scanners the runtime builds from a generated module's declarations
(docs/security.md "Declared scanners and named records").

A generated module declares, per state, its delimiters as records in rank order: :class:`Literal`
for a literal, :class:`Pattern` for a regex delimiter with the facts the compiler proved about it.
:func:`build_scanners` (called when the parser class is created) checks each declaration and gives
it its memo slots (and a literal-only state its ``HOLD_LITERALS`` entry); the state's scanner, with
its shared first-character searches and its hold of a proper prefix ending the buffer, is written
by its first call: :func:`literal_scanner` for literals only, :func:`state_scanner` for a state
with a regex delimiter (the code the compiler wrote before the runtime did, line for line). A module of
an earlier codegen that writes a scanner function keeps it.

The scanner is written out as Python source and compiled once per state, by its first call
(:func:`build_scanners`), as ``dataclasses`` writes ``__init__``: a loop over the literals cost up to 7% of a whole-text parse (qwen3,
hermes2pro). Only ``repr`` of checked ``str`` and ``int`` values reaches that source.

A scanner is ``scan(buf, pos, eos, memo) -> (start, end, rank, match, hold)``: the committable
delimiter hit from ``pos`` (``start`` -1: none) and the leftmost offset from which more input
could still change the answer, from which text must be held back (docs/template-language.md,
"Matching": the leftmost hit wins; at one start the longest, then the lowest rank). ``memo[slot]``
keeps each search result over the same buffer: a hit at or after ``pos`` is still the first one
from ``pos``, and "none" stays none, so no text is searched twice.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Callable, NamedTuple

__all__ = ["Literal", "Pattern", "state_scanner", "scanner_sources", "build_now", "HELD_LITERALS", "PREFIX_TABLE_BUDGET", "build_scanners", "literal_scanner", "literal_automata",
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
#: compiler writes it only where its own tables read the same: no complete match can go on. Last
#: in a state's tuple of automata (a state that also watches a regex delimiter), it stands for
#: those of the state's literal delimiters, after the regex delimiters' written out.
HELD_LITERALS = _HeldLiterals()


def literal_automata(literals: tuple) -> tuple:
    """The position automata of a state's literal delimiters, one per delimiter (the literals of
    one rank; equal ones once): a chain of one-character tests per literal, none of whose
    complete matches goes on (runtime/held.py reads them; compiler/held.py writes the same
    language for the escaped pattern).

    Args:
        literals (tuple[Literal | Pattern, ...]): the state's declaration, in rank order (its
            ``Pattern`` records are passed over).

    Returns:
        tuple[HeldAutomaton, ...]: per delimiter ``edge`` None, ``tests``, ``first``, ``follow``,
        ``last``.
    """
    from .tables import HeldAutomaton

    by_rank: dict[int, list[str]] = {}
    for record in literals:
        if isinstance(record, Literal):  # a state that also watches a regex: its Pattern records
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
    what a scanner tests ``buf[j:] in`` to hold a literal's start ending the buffer. No module
    generated now calls it: the runtime builds a declared state's prefixes from its records
    (the same plan). A module of ABI 4 generated before regex states were declared
    (``_PREFIXES_<k> = _rt.literal_prefixes(...)``) still calls it, so it stays public
    (docs/security.md "Declared scanners and named records").

    Raises:
        TypeError: ``literals`` is not a tuple of str.
    """
    if not isinstance(literals, tuple) or not all(type(lit) is str for lit in literals):
        raise TypeError(f"literal_prefixes takes a tuple of str, not {_show(literals)}")
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
        raise TypeError(f"a literal scanner takes a tuple of Literal(text, rank) records, not {_show(literals)}")
    for record in literals:
        if (not isinstance(record, Literal) or type(record.text) is not str or not record.text
                or type(record.rank) is not int):
            raise TypeError(f"a literal scanner takes Literal(text, rank) records, not {_show(record)}")


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
    exec(_code(source, "<respc literal scanner>"), scope)  # noqa: S102 (see _literal_source)
    scan = scope["scan"]
    scan.__doc__ = "Scanner of literal delimiters " + ", ".join(repr(t) for t in texts[:8])
    return scan, len(literals) + len(groups), hold_plan


def build_scanners(owner: type, scanners: tuple, memo_slots: int) -> tuple[tuple, int, tuple]:
    """Turn a parser class's ``SCANNERS`` into scanners: each entry that is a tuple of
    :class:`Literal` records becomes :func:`literal_scanner`'s, one with a :class:`Pattern`
    :func:`state_scanner`'s, with memo slots after the class's own ``memo_slots``; a function is
    kept.

    The records are checked and the memo slots and ``HOLD_LITERALS`` entries made now; the
    scanner's source is compiled by its first call (an import compiles nothing: about 0.2 ms per
    state), which then puts it in ``owner.SCANNERS`` in place of the stub.

    Returns:
        tuple: ``(scanners, memo slots in all, per state its HOLD_LITERALS entry or None)``.
    """
    built = []
    holds = []
    edges = getattr(owner, "TRANSITIONS", ())
    for state, entry in enumerate(scanners):
        if isinstance(entry, tuple) and any(isinstance(r, Pattern) for r in entry):
            used, hold = _check_state(entry), None
            _check_ranks(entry, state, edges)
            built.append(_lazy(owner, state, entry, memo_slots))
            memo_slots += used
            holds.append(hold)
        elif isinstance(entry, tuple):
            used, hold = _check(entry)
            _check_ranks(entry, state, edges)
            built.append(_lazy(owner, state, entry, memo_slots))
            memo_slots += used
            holds.append(hold)
        else:
            built.append(entry)
            holds.append(None)
    return tuple(built), memo_slots, tuple(holds)


def _show(value: object) -> str:
    """``repr(value)`` for an error message, at most 300 characters; a value whose repr fails (an
    int too long to write out, a hostile ``__repr__``) is named by its type."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 (any failure: the message names the type instead)
        return f"a {type(value).__name__} that cannot be shown"
    return text if len(text) <= 300 else text[:297] + "..."


def _check_ranks(records: tuple, state: int, edges: tuple) -> None:
    """Refuse a record whose rank is not the index of one of its state's ``TRANSITIONS`` edges
    (a module not made by respc; docs/security.md, "Declared scanner records"): a rank out of
    range (negative, past the last edge, a huge int) would pick another edge than the one the
    delimiter stands for (Python's negative indexing) or fail later with an IndexError.

    Raises:
        TypeError: naming the state and the record.
    """
    if not edges:
        return  # a class with no transitions at all (a bare scanner, as tests build one) parses nothing
    count = len(edges[state]) if 0 <= state < len(edges) and isinstance(edges[state], tuple) else 0
    for record in records:
        if not 0 <= record.rank < count:
            raise TypeError(f"state {state} declares {_show(record)}, but its rank must be the index of one of "
                            f"the state's {count} TRANSITIONS edge(s) (a module not made by respc)")


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

    def build() -> Callable:
        nonlocal real
        if real is None:
            if any(isinstance(r, Pattern) for r in literals):
                real = state_scanner(literals, slot)
            else:
                real = literal_scanner(literals, slot)[0]
            scanners = owner.__dict__.get("SCANNERS", ())
            if state < len(scanners) and scanners[state] is scan:
                owner.SCANNERS = scanners[:state] + (real,) + scanners[state + 1:]
        return real

    def scan(buf, pos, eos, memo):
        return (real or build())(buf, pos, eos, memo)

    scan.build = build
    return scan


#: the code of the scanner sources compiled in this process, by source (at most
#: :data:`CODE_CACHE_SIZE`, the oldest dropped first): a state declared the same in two classes
#: (a recover class's state that kept its memo slots, a module imported again) is compiled once
_CODE_CACHE: dict = {}
CODE_CACHE_SIZE = 512


#: taken while :data:`_CODE_CACHE` is changed: two threads building scanners at once (a server's
#: first requests) both dropped the same oldest entry, and the second ``del`` raised KeyError
#: out of ``feed`` (docs/security.md, "Red team s12b: the compiled-scanner cache under threads")
_CODE_LOCK = threading.Lock()


def _code(source: str, filename: str) -> Any:
    """``compile(source, filename, "exec")``, from :data:`_CODE_CACHE` when compiled before (a
    code object is immutable: each ``exec`` of it makes new functions in its own globals).
    Compiling is most of a state's first-use cost (README.md, "Layout"). Safe from any number of
    threads: the cache is changed under :data:`_CODE_LOCK` (a lookup needs no lock)."""
    key = (source, filename)
    code = _CODE_CACHE.get(key)
    if code is None:
        code = compile(source, filename, "exec")
        with _CODE_LOCK:
            while len(_CODE_CACHE) >= CODE_CACHE_SIZE:
                del _CODE_CACHE[next(iter(_CODE_CACHE))]
            _CODE_CACHE[key] = code
    return code


def build_now(parser_class: type) -> None:
    """Build every scanner of ``parser_class`` that its first call would build (a warm-up, or a
    test that builds them under a setting such as ``runtime.stream.PARTIAL_LONG``)."""
    for entry in parser_class.SCANNERS:
        build = getattr(getattr(entry, "_respc_inner", entry), "build", None)
        if build is not None:
            build()


def _literal_hold():
    from .stream import literal_hold

    return literal_hold


def _literal_source(literals: tuple, slot: int, group_of: dict, groups: list, hold_plan) -> str:
    """The source of a literal scanner: each search written out, as the compiler wrote it before
    the runtime did (a loop over the literals costs up to 7% of a whole-text parse: qwen3, hermes2pro).
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


# -- states that watch a regex delimiter (docs/security.md "Declared scanners and named records") -------------

#: the global name a regex delimiter's LazyPattern is bound to in its module (``_D<k>``, ``_R_D<k>``
#: in the errors="recover" class): the only name of a module that reaches a built scanner's source
DELIMITER_NAME = re.compile(r"(?:_R)?_D[0-9]+\Z")
#: the largest ``Pattern.reach`` a declaration may give (a reach is a count of characters; a
#: negative one, or one too long to write out, is refused: docs/security.md, "Declared scanner records")
REACH_MAX = 2 ** 62
#: characters past a complete match over which its probe is asked first (compiler/automaton.py,
#: ``ScanPlans.window``)
PROBE_AHEAD = 64


class Pattern(NamedTuple):
    """One regex delimiter a state watches, with the facts the compiler proved about it
    (compiler/automaton.py, ``plan_scans`` and ``classify_pattern``); the runtime writes the
    state's scanner from them (:func:`state_scanner`).

    Attributes:
        delimiter (LazyPattern): the delimiter, a module global (``_D<k>``) made with
            ``scope=globals()``: the scanner searches that global, which its first search rebinds
            to the compiled pattern.
        rank (int): its rank in the state (the index of its ``TRANSITIONS`` edge).
        probe (LazyPattern | None): its D2 probe (never matches completely; its partial search
            stops where more input could change the delimiter's answer); None: no sound probe, the
            state's text is held until the end of stream.
        probe_always (bool): ask the probe on every search before the end of stream (the probe
            rewrote assertions that judge the buffer's edge).
        memo (bool): its search results are kept over a buffer (False: ``\\G``, whose answer
            depends on where a search starts).
        prefilter (bool): before probing a complete match at ``i``, find the leftmost start whose
            paths reach ``i`` with its own partial search (it has a literal lead).
        factor (str | None): a literal every match contains, found first: no factor from ``pos``,
            no complete match; a partial match starts in the run of characters before it.
        reach (int | None): how far before the factor a match can start (None: unbounded).
        back (LazyPattern | None): reverse search for the last character the part before the
            factor cannot consume.
        leads (tuple[str, ...] | None): every match starts with one of these (``lead_search``,
            ``partial_search``).
        barrier (tuple[str, str] | None): ``(factor, barrier)`` of ``barrier_search`` and
            ``partial_barrier`` (only without leads).
        anchored (bool): some top-level alternative begins with a start anchor: searches after
            offset 0 use ``late``.
        late (LazyPattern | None): the pattern without those alternatives (None: nothing else).
        late_leads (tuple[str, ...] | None): ``late``'s leads.
        late_barrier (tuple[str, str] | None): ``late``'s ``(factor, barrier)``.
        final (tuple[str, ...] | None): literals that end a match for good (compiler/automaton.py
            ``final_literals``): a complete match with text after it whose last characters are
            one of them is taken without asking the probe, which could only agree.
    """

    delimiter: object
    rank: int
    probe: object = None
    probe_always: bool = False
    memo: bool = True
    prefilter: bool = False
    factor: str | None = None
    reach: int | None = None
    back: object = None
    leads: tuple | None = None
    barrier: tuple | None = None
    anchored: bool = False
    late: object = None
    late_leads: tuple | None = None
    late_barrier: tuple | None = None
    final: tuple | None = None


def _texts(value, size=None) -> bool:
    """Whether ``value`` is None or a tuple of non-empty exact ``str`` (of ``size`` members)."""
    return value is None or (type(value) is tuple and bool(value) and (size is None or len(value) == size)
                             and all(type(t) is str and t for t in value))


def _check_pattern(record) -> None:
    """Refuse a :class:`Pattern` of another shape (a module not made by respc): only a checked
    global name, ``repr`` of exact ``str`` and ``int`` values, and decisions on exact ``bool``
    values reach a scanner's source; the probe, back and late patterns are bound by closure."""
    from .stream import LazyPattern

    d = record.delimiter
    ok = (isinstance(d, LazyPattern) and type(d._name) is str and DELIMITER_NAME.match(d._name) is not None
          and type(d._scope) is dict and type(record.rank) is int
          and all(type(flag) is bool for flag in (record.probe_always, record.memo, record.prefilter, record.anchored))
          and all(p is None or isinstance(p, LazyPattern) for p in (record.probe, record.back, record.late))
          and (record.factor is None or (type(record.factor) is str and record.factor))
          and (record.reach is None or (type(record.reach) is int and 0 <= record.reach <= REACH_MAX))
          and _texts(record.leads) and _texts(record.late_leads)
          and _texts(record.barrier, 2) and _texts(record.late_barrier, 2) and _texts(record.final)
          and (record.final is None or (record.probe is not None and not record.probe_always))
          and (record.factor is None or (record.memo and record.probe is not None and not record.probe_always))
          and (record.back is None or record.factor is not None))
    if not ok:
        raise TypeError(f"a scanner takes Literal and Pattern records of checked values, not {_show(record)}")


def _slots_of(records: tuple) -> tuple[list, list, int]:
    """Memo slots of a state's records in the compiler's order (compiler/automaton.py
    ``plan_scans``): per record its slots, the literal groups ``(common prefix, slot)``, and how
    many in all (from 0)."""
    slots = 0
    per: list = []
    for r in records:
        if isinstance(r, Literal):
            per.append({"slot": slots})
            slots += 1
            continue
        mine: dict = {"slot": None, "probe": None, "window": None, "factor": None, "back": None}
        if r.memo:
            mine["slot"] = slots
            slots += 1
            if r.probe is not None:
                mine["probe"], mine["window"] = slots, slots + 1
                slots += 2
        if r.factor is not None:
            mine["factor"] = slots
            slots += 1
            if r.back is not None:
                mine["back"] = slots
                slots += 1
        per.append(mine)
    by_first: dict[str, list[str]] = {}
    for r in records:
        if isinstance(r, Literal):
            by_first.setdefault(r.text[0], []).append(r.text)
    groups = []
    for first, texts in by_first.items():
        if len(set(texts)) >= GROUP_MIN:
            common = texts[0]
            for text in texts[1:]:
                while not text.startswith(common):
                    common = common[:-1]
            groups.append((first, common, slots))
            slots += 1
    return per, groups, slots


def _tuple_source(texts: tuple) -> str:
    return "(" + "".join(repr(t) + ", " for t in texts).rstrip(" ") + ")"


def _search_source(var: str, leads, barrier, start: str) -> str:
    """A complete text's search of ``var`` from ``start``: by leads, else by factor and barrier."""
    if leads:
        return f"_rt.lead_search({var}, buf, {start}, {_tuple_source(leads)})"
    if barrier is not None:
        return f"_rt.barrier_search({var}, buf, {start}, {barrier[0]!r}, {barrier[1]!r})"
    return f"{var}.search(buf, {start})"


def _eos_source(r, var: str, late: str, start: str) -> str:
    full = _search_source(var, r.leads, r.barrier, start)
    if not r.anchored:
        return full
    if r.late is None:
        return f"(None if {start} else {var}.match(buf, 0))"
    rest = _search_source(late, r.late_leads, r.late_barrier, start)
    return f"({rest} if {start} else ({var}.match(buf, 0) or {rest}))"


def _helper_source(r, var: str) -> tuple[str, str] | None:
    """``(call, arguments after (pattern, buf, start)`` of the search that starts a long partial
    search late (leads, else barrier), or None."""
    if r.leads:
        return "_rt.partial_search", _tuple_source(r.leads)
    if r.barrier is not None:
        return "_rt.partial_barrier", f"{r.barrier[0]!r}, {r.barrier[1]!r}"
    return None


def _short_source(r, var: str, late: str, start: str) -> str:
    """A short text's partial search of ``var`` from ``start``: for a pattern with start-anchored
    alternatives, after offset 0 that of ``late`` (none when nothing else is left), which answers
    alike there (:func:`~respc.runtime.stream.partial_late`, whose first step this is)."""
    if not r.anchored:
        return f"{var}.search(buf, {start}, partial=True)"
    rest = "None" if r.late is None else f"{late}.search(buf, {start}, partial=True)"
    return f"({rest} if {start} else {var}.search(buf, 0, partial=True))"


def _long_source(r, var: str, late: str, start: str) -> str:
    if r.anchored:
        if r.late is None:
            return f"_rt.partial_late({var}, None, buf, {start}, None)"
        leads = _tuple_source(r.late_leads) if r.late_leads else "None"
        return f"_rt.partial_late({var}, {late}, buf, {start}, {leads})"
    helper = _helper_source(r, var)
    if helper is None:
        return f"_rt.window_partial({var}, buf, {start})"
    return f"{helper[0]}({var}, buf, {start}, {helper[1]})"


def _pattern_source(records: tuple, slot: int) -> tuple[str, dict]:
    """The source of the scanner of a state that watches a regex delimiter (and maybe literals),
    as the compiler wrote it before the runtime did, and the patterns its closure binds. Only the checked
    delimiter names, ``repr`` of exact ``str`` and ``int`` values and closure names reach it."""
    per, groups, _ = _slots_of(records)
    closure: dict = {}
    out: list[str] = []

    def w(depth: int, text: str) -> None:
        out.append("    " * depth + text)

    group_of = {first: (f"g{k}", gslot + slot) for k, (first, _, gslot) in enumerate(groups)}
    w(1, "n = len(buf)")
    w(1, "hold = n")
    w(1, "bs = be = br = -1")
    w(1, "bm = None")
    for k, (first, common, gslot) in enumerate(groups):
        g = f"g{k}"
        w(1, f"{g} = memo[{gslot + slot}]")
        w(1, f"if {g} is None or -1 < {g} < pos:")
        w(2, f"{g} = memo[{gslot + slot}] = buf.find({common!r}, pos)")
    texts: list[str] = []
    for index, (r, mine) in enumerate(zip(records, per)):
        tie = ("" if index == 0 else
               f" and (bs < 0 or i < bs or i == bs and ({{l}} > be - bs or {{l}} == be - bs and {r.rank} < br))")
        if isinstance(r, Literal):
            texts.append(r.text)
            s = mine["slot"] + slot
            w(1, f"i = memo[{s}]")
            w(1, "if i is None or -1 < i < pos:")
            group = group_of.get(r.text[0])
            if group is None:
                w(2, f"i = memo[{s}] = buf.find({r.text!r}, pos)")
            else:
                w(2, f"i = memo[{s}] = buf.find({r.text!r}, {group[0]}) if {group[0]} >= 0 else -1")
            w(1, "if i >= 0" + tie.format(l=len(r.text)) + ":")
            w(2, f"bs, be, br, bm = i, i + {len(r.text)}, {r.rank}, None")
            continue
        var = r.delimiter._name
        probe, back, late = f"P{index}", f"B{index}", f"L{index}"
        closure[probe], closure[back], closure[late] = r.probe, r.back, r.late
        take = "if i >= 0" + tie.format(l="e - i") + ":"
        if r.probe is None:
            # no probe can tell when this pattern's answer is final: hold until the end of stream
            w(1, "if eos:")
            w(2, f"m = {_eos_source(r, var, late, 'pos')}")
            w(2, "if m is not None:")
            w(3, "i, e = m.span()")
            if index == 0:
                w(3, f"bs, be, br, bm = i, e, {r.rank}, m")
            else:
                w(3, "if " + take[len("if i >= 0 and "):])
                w(4, f"bs, be, br, bm = i, e, {r.rank}, m")
            w(1, "elif pos < hold:")
            w(2, "hold = pos")
            continue
        helper = None
        if r.factor is None and not r.prefilter and not r.anchored:
            helper = _helper_source(r, var)
        if mine["slot"] is None:
            w(1, f"m = {_eos_source(r, var, late, 'pos')} if eos else {_short_source(r, var, late, 'pos')}")
            w(1, "if m is not None:")
        else:
            ms = mine["slot"] + slot
            if r.factor is not None:
                fs = mine["factor"] + slot
                depth = 1
                if r.leads:
                    w(1, "if eos:")
                    w(2, "k, lo = 0, pos")
                    w(1, "else:")
                    depth = 2
                factor, short, first = r.factor, len(r.factor) - 1, r.factor[0]
                w(depth, f"k = memo[{fs}]")
                w(depth, "if k is None or -1 < k < pos:")
                w(depth + 1, f"k = memo[{fs}] = buf.find({factor!r}, pos)")
                w(depth, "if k >= 0:")
                w(depth + 1, "x = k")
                w(depth, "else:")
                w(depth + 1, "x = n")
                w(depth + 1, f"j = buf.find({first!r}, n - {short} if n - {short} > pos else pos)")
                w(depth + 1, "while j >= 0:")
                w(depth + 2, f"if buf[j:] == {factor!r}[:n - j]:")
                w(depth + 3, "x = j")
                w(depth + 3, "break")
                w(depth + 2, f"j = buf.find({first!r}, j + 1)")
                if r.reach == 0:
                    w(depth, "lo = x if x > pos else pos")
                elif r.reach is not None:
                    w(depth, f"lo = x - {r.reach}")
                    w(depth, "if lo < pos:")
                    w(depth + 1, "lo = pos")
                else:
                    w(depth, "lo = pos")
                if r.back is not None:
                    bslot = mine["back"] + slot
                    w(depth, f"b = memo[{bslot}]")
                    w(depth, "if b is None or b[0] != x or lo < b[1]:")
                    w(depth + 1, f"b = {back}.search(buf, lo, x)")
                    w(depth + 1, f"b = memo[{bslot}] = (x, lo, -1 if b is None else b.end())")
                    w(depth, "if b[2] > lo:")
                    w(depth + 1, "lo = b[2]")
            w(1, f"m = memo[{ms}]")
            w(1, "if m is None or (m is not False and m.start() < pos):")
            if r.factor is not None:
                w(2, "if k < 0 and (eos or lo == n):")
                w(3, f"m = memo[{ms}] = False")
                w(2, "else:")
                w(3, "if eos:")
                w(4, f"m = {_eos_source(r, var, late, 'lo')}")
                w(3, f"elif n - lo < {_partial_long()}:")
                w(4, f"m = {_short_source(r, var, late, 'lo')}")
                w(3, "else:")
                w(4, f"m = {_long_source(r, var, late, 'lo')}")
                w(3, f"m = memo[{ms}] = m or False")
            else:
                w(2, "if eos:")
                w(3, f"m = {_eos_source(r, var, late, 'pos')}")
                w(2, f"elif n - pos < {_partial_long()}:")
                w(3, f"m = {_short_source(r, var, late, 'pos')}")
                w(2, "else:")
                w(3, f"m = {_long_source(r, var, late, 'pos')}")
                w(2, f"m = memo[{ms}] = m or False")
            w(1, "if m is not False:")
        long = _partial_long()
        ahead = f"e + {PROBE_AHEAD} if e + {PROBE_AHEAD} < n else n"
        w(2, "i, e = m.span()")
        w(2, "if not eos:")
        w(3, "if m.partial or e == n:")
        w(4, "if not m.partial:")
        if helper is not None:
            w(5, f"q = ({probe}.search(buf, pos, partial=True) if n - pos < {long}")
            w(5, f"     else {helper[0]}({probe}, buf, pos, {helper[1]}))")
        else:
            w(5, f"q = {probe}.search(buf, {'lo' if r.factor else 'pos'}, i, partial=True)")
        w(5, "if q is not None and q.start() < i:")
        w(6, "i = q.start()")
        w(4, "if i < hold:")
        w(5, "hold = i")
        w(4, "i = -1")
        # a match ending with a final literal is final: its probe could only agree (Pattern.final)
        w(3, f"elif not buf.endswith({r.final!r}, i, e):" if r.final is not None else "else:")
        window = None if mine["window"] is None else mine["window"] + slot
        if r.prefilter:
            lo_var = "lo" if r.factor else "pos"
            if window is not None:
                w(4, f"c = memo[{window}]")
                w(4, f"if c is None or c[0] is not m or not c[1] <= {lo_var} <= c[2]:")
                w(5, f"j = {var}.search(buf, {lo_var}, i, partial=True)")
                w(5, "j = i if j is None else j.start()")
                w(5, f"q = {probe}.search(buf, j, {ahead}, partial=True)")
                w(5, f"c = memo[{window}] = (m, {lo_var}, j, -1 if q is None else q.start())")
                w(4, "j = c[2]")
                w(4, "qs = c[3]")
            else:
                w(4, f"j = {var}.search(buf, {lo_var}, i, partial=True)")
                w(4, "j = i if j is None else j.start()")
                w(4, f"q = {probe}.search(buf, j, {ahead}, partial=True)")
                w(4, "qs = -1 if q is None else q.start()")
            start = "j"
        else:
            lo_var = "pos" if helper else ("lo" if r.factor else "pos")
            depth = 4
            if window is not None:
                w(4, f"c = memo[{window}]")
                w(4, f"if c is None or c[0] is not m or c[1] > {lo_var} or 0 <= c[3] < {lo_var}:")
                depth = 5
            if helper is not None:
                w(depth, f"w = {ahead}")
                w(depth, f"q = ({probe}.search(buf, pos, w, partial=True) if w - pos < {long}")
                w(depth, f"     else {helper[0]}({probe}, buf, pos, {helper[1]}, w))")
            else:
                w(depth, f"q = {probe}.search(buf, {lo_var}, {ahead}, partial=True)")
            if window is not None:
                w(5, f"c = memo[{window}] = (m, {lo_var}, 0, -1 if q is None else q.start())")
                w(4, "qs = c[3]")
            else:
                w(4, "qs = -1 if q is None else q.start()")
            start = lo_var
        w(4, "if 0 <= qs <= i:")
        if mine["probe"] is None:
            w(5, f"q = {probe}.search(buf, {start}, partial=True)")
            w(5, "if q is not None and q.start() <= i:")
        else:
            ps = mine["probe"] + slot
            w(5, f"q = memo[{ps}]")
            w(5, "if q is None or (q is not False and q.start() < pos):")
            if helper is not None:
                w(6, f"if n - pos < {long}:")
                w(7, f"q = {probe}.search(buf, pos, partial=True)")
                w(6, "else:")
                w(7, f"q = {helper[0]}({probe}, buf, pos, {helper[1]})")
                w(6, f"q = memo[{ps}] = q or False")
            else:
                w(6, f"q = memo[{ps}] = {probe}.search(buf, {start}, partial=True) or False")
            w(5, "if q is not False and q.start() <= i:")
        w(6, "if q.start() < hold:")
        w(7, "hold = q.start()")
        w(6, "i = -1")
        w(2, take)
        w(3, f"bs, be, br, bm = i, e, {r.rank}, m")
        if r.probe_always:
            if mine["slot"] is None:
                w(1, "if not eos and (m is None or i < 0):")
                w(2, f"q = {probe}.search(buf, pos, partial=True)")
                w(2, "if q is not None and q.start() < hold:")
                w(3, "hold = q.start()")
            else:
                ps = mine["probe"] + slot
                w(1, "if not eos and (m is False or i < 0):")
                w(2, f"q = memo[{ps}]")
                w(2, "if q is None or (q is not False and q.start() < pos):")
                w(3, f"q = memo[{ps}] = {probe}.search(buf, pos, partial=True) or False")
                w(2, "if q is not False and q.start() < hold:")
                w(3, "hold = q.start()")
    plan = _hold_plan(tuple(texts)) if texts else None
    if plan is not None:
        _, span, firsts, prefixes = plan
        closure["PREFIXES"] = prefixes
        w(1, "if not eos:")
        if len(firsts) == 1:
            w(2, f"j = n - {span}")
            w(2, f"j = buf.find({firsts!r}, j if j > pos else pos)")
            w(2, "while j >= 0:")
            w(3, "if buf[j:] in PREFIXES:")
            w(4, "if j < hold:")
            w(5, "hold = j")
            w(4, "break")
            w(3, f"j = buf.find({firsts!r}, j + 1)")
        else:
            closure["literal_hold"] = _literal_hold()
            w(2, f"h = literal_hold(buf, pos if n - {span} < pos else n - {span}, {firsts!r}, PREFIXES)")
            w(2, "if h < hold:")
            w(3, "hold = h")
    w(1, "if 0 <= bs < hold:")
    w(2, "return bs, be, br, bm, hold")
    w(1, "return -1, 0, 0, None, hold")
    names = ", ".join(closure)
    source = (f"def make({names}):\n    def scan(buf, pos, eos, memo):\n"
              + "".join("    " + line + "\n" for line in out) + "    return scan\n")
    return source, closure


def _partial_long() -> int:
    from .stream import PARTIAL_LONG

    return PARTIAL_LONG


def state_scanner(records: tuple, slot: int) -> Callable:
    """Build the scanner of a state that watches a regex delimiter (and maybe literals): its
    records (:class:`Pattern`, :class:`Literal`) in rank order, its memo slots from ``slot``.

    The source is written as the compiler wrote it before the runtime did and compiled with the
    delimiters' module as its globals (their first search rebinds them there), the probes, back
    searches, late patterns and literal prefixes bound by closure.

    Raises:
        TypeError: a record is of another shape (a module not made by respc).
    """
    _check_state(records)
    source, closure = _pattern_source(records, slot)
    scope = next(r.delimiter._scope for r in records if isinstance(r, Pattern))
    namespace: dict = {}
    exec(_code(source, "<respc pattern scanner>"), scope, namespace)  # noqa: S102 (see _check_state)
    scan = namespace["make"](**closure)
    scan.__doc__ = "Scanner of delimiters " + ", ".join(
        repr(r.text) if isinstance(r, Literal) else r.delimiter._name for r in records[:8])
    return scan


def _check_state(records: tuple) -> int:
    """Check a state's mixed declaration (TypeError) and return its memo slots."""
    if not isinstance(records, tuple) or not records:
        raise TypeError(f"a scanner takes a tuple of Literal and Pattern records, not {_show(records)}")
    scopes = set()
    for record in records:
        if isinstance(record, Pattern):
            _check_pattern(record)
            scopes.add(id(record.delimiter._scope))
        else:
            _records((record,))
    if len(scopes) != 1:
        raise TypeError("a scanner's Pattern records must all be globals of one module")
    return _slots_of(records)[2]


def scanner_sources(parser_class: type) -> list[str]:
    """The source the runtime writes for each state of ``parser_class`` (a generated module's
    class, before or after its scanners are built) that watches a regex delimiter: what a
    reviewer or a test reads where the module declares :class:`Pattern` records."""
    out = []
    slot = 0
    for entry in getattr(parser_class, "_DECLARED", ()):
        if isinstance(entry, tuple) and any(isinstance(r, Pattern) for r in entry):
            out.append(_pattern_source(entry, slot)[0])
            slot += _check_state(entry)
        elif isinstance(entry, tuple):
            slot += _check(entry)[0]
    return out
