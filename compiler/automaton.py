"""Pass 3: the region automaton (template-language.md "Regions and states", "Watch sets", "Choosing the next
delimiter", D2; README "Layout").

Theory of operation
-------------------
The parser is always in one *state*: ``OUTSIDE`` (the implicit field, or the null sink when the
template has none) or inside one explicit field's region. Each state watches a fixed, ordered set of
delimiters (its *watch set*, template-language.md "Watch sets"): outside, every explicit open in declaration order
plus the implicit field's own close; inside a region, only that region's close. Committing a delimiter is a
*transition*: an open moves to that field's state, a close moves back to ``OUTSIDE``.

Template language v2 adds explicit transition actions. A field's open may also be watched inside
other regions (``inside``): ``nest`` suspends the current region (it resumes when the nested one
closes, so the parser keeps a stack of suspended regions), ``open`` closes it first. A field that
ends at its value (``"end": "value"``) has no close in its own watch set; its optional trailing
close gets a small *after* state that only looks at the position where the value ended.

When two complete hits start at the same offset with the same length, template-language.md "Choosing the next
delimiter" breaks the tie by "opens before closes, then field name"; that order never changes at run time, so each
watched delimiter gets a precomputed *rank* and the emitted scanner compares ranks, not names.

Every delimiter is also classified once here:

* ``literal`` -- literal strings: each found with ``str.find``; a partial match (a proper prefix
  of one at the end of the buffer) is decided from precomputed prefix sets. A list behaves like
  the reference's alternation: leftmost, then longest.
* ``regex`` -- a pattern (or, for the reference's watch records, a literal list that can
  extend), searched with the ``regex`` module's partial matching.
* ``indeterminate`` (D2, ``respc check`` warns) -- a pattern whose complete match can change with
  later input even when it ends before the buffer edge: an end anchor (``$``, ``\\Z``), a negative
  lookahead or one that tests for the end of the text, or an unbounded greedy repeat whose
  characters overlap what may follow it (``<call name=(?P<n>.*)>``).
* ``extendable`` (D2, ``respc check`` notes) -- a pattern with a greedy bounded repeat
  (``(?:<think>)?``): a complete match is held while the rest of the buffer could still continue it.

The scanners do not act on these classes: each regex delimiter gets a *probe* (:func:`edge_probe`)
built with the ``regex`` module's own syntax and semantics, which finds the leftmost offset from
which more input could change the search's answer, and :func:`plan_scans` lays out what each
state's scanner does. The ``re``-tree analysis (first characters, lead, context, the classes above)
runs only on patterns that ``re`` and ``regex`` read alike (:func:`_read_source`); anything else
takes the conservative answer (no fast path, full context).

Finally the automaton records how much already-decided text the regex delimiters must still see
(``context``): one character for ``^``/``\\A``/``\\b``/``\\B`` (so they cannot fire at a trimmed
buffer start), the width of a bounded lookbehind, or everything (None) for unbounded lookbehinds
and patterns the analysis cannot read. The generated parser trims its buffer only down to that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field as _dc_field
from functools import lru_cache

import regex

from respc.runtime.stream import barrier_search
from respc.runtime.whole import _rarity as whole_rarity
from respc.runtime.whole import sentinel as whole_sentinel

try:  # Python 3.11+
    from re import _constants as sre_c
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

from .ir import Delimiter, Template
from .sre import parse_pattern

__all__ = ["ACTIONS", "Watch", "State", "Automaton", "build_automaton", "classify_pattern", "PatternFacts",
           "late_pattern", "NEVER", "example_text", "barrier_plan", "final_literals",
           "edge_probe", "plan_scans", "HoldRun", "ScanPlans", "ScanPlan", "LiteralFind", "RegexFind", "LiteralHold", "Factor",
           "PREFIX_TABLE_BUDGET"]

OUTSIDE = 0
#: transition actions (see build_automaton)
ACTIONS = ("open", "nest", "close", "after", "defer")

#: A state's proper prefixes of its literals are written out as one set (a hash lookup per held
#: tail) while they total at most this many characters; beyond it the state's literals alone are
#: written and the runtime tests tails with ``startswith`` (``runtime.LiteralPrefixes``), so a
#: long literal costs the module its length, not its square (docs/security.md, "Limits"). The
#: catalogue's largest state needs 2,145 (plamo3).
PREFIX_TABLE_BUDGET = 4096


@dataclass(frozen=True)
class PatternFacts:
    """What the compiler knows about one regex delimiter.

    Attributes:
        indeterminate (bool): D2 -- a complete match may change with later input.
        context (int | None): characters before the search position it must see; None = all.
        reasons (tuple[str, ...]): why it is indeterminate (for ``respc check`` warnings).
        extendable (bool): has a greedy bounded repeat (``(?:<think>)?``, ``x{0,3}``): a complete
            match that stopped early may grow once more input arrives (D2), so the scanner also
            asks whether the rest of the buffer is a partial match from the same start.
        first_chars (str | None): every character a non-empty match (or partial match) can start
            with, in sorted order; None when unknown, unbounded, or the pattern can match empty.
        lead (str): the literal characters every match starts with (``"<|"`` for
            ``<\\|tool_call>call:\\w+``), empty when unknown.
        probe (str | None): the *probe* of this pattern (see :func:`edge_probe`), which tells the
            scanner from where the answer of a search could still change with more input (D2);
            None when no sound probe exists: the scanner then holds the state's text until the
            end of stream.
        probe_always (bool): the probe rewrote end-sensitive assertions (``\\b``, ``$``...), so
            the pattern's own partial match does not see every place the answer could change:
            the scanner asks the probe on every search, not only after a complete match.
    """

    indeterminate: bool
    context: int | None
    reasons: tuple[str, ...] = ()
    extendable: bool = False
    first_chars: str | None = None
    lead: str = ""
    probe: str | None = None
    probe_always: bool = False
    factor: "Factor | None" = None
    #: the first characters of a match, or partial match, found by a search from an offset after
    #: 0 (a start anchor never holds there; a leading lookahead names the character at the start);
    #: None when unknown. The parser's fast path uses these (it runs only after offset 0).
    late_chars: str | None = None
    #: the first two characters of every such match, or partial match (see :func:`_late_pairs`);
    #: None when unknown
    late_pairs: tuple[str, ...] | None = None
    #: the run-and-factor form, when the pattern has it (see :class:`HoldRun`); None otherwise
    run: "HoldRun | None" = None
    #: literals one of which every match starts with (see :func:`_branch_leads` and
    #: :func:`_checked_leads`); None when some alternative has none, case is ignored, or one
    #: literal without an uncommon character leads every match
    leads: tuple[str, ...] | None = None
    #: how many of the ``context`` characters must be the real ones before the search position
    #: (``\b``, ``\B``, a multiline ``^``, lookbehinds); the rest only keep ``^`` and ``\A`` from
    #: matching at a trimmed buffer start, which any characters do. None: all, or unknown
    looks_back: int | None = None


#: the characters ``regex``'s ``\\s`` matches (Unicode White_Space; not ``str.isspace``, which
#: also takes U+001C..U+001F); tests/test_automaton.py checks it against the engine
_REGEX_SPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
                "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


@dataclass(frozen=True)
class HoldRun:
    """A regex delimiter of the form *optional openers, a run of one character class, a literal*
    (``(?:<\\|start\\|>...)?\\s*to=functions\\.…``), which the parser's fast path reads without
    the regex (README.md "Performance"): a text without :attr:`factor` holds no complete match; a partial match
    starts with one of :attr:`firsts` (an optional opener: the fast path's triggers and heads), or
    it is a trailing run of :attr:`chars` followed by a proper prefix of :attr:`factor`.

    Attributes:
        chars (str): every character the run's class matches (a finite set).
        factor (str): the literal after the run (two characters or more).
        firsts (str): first characters of the optional openers before the run.
        pairs (tuple[str, ...]): their first two characters.
    """

    chars: str
    factor: str
    firsts: str
    pairs: tuple[str, ...]


@dataclass(frozen=True)
class Factor:
    """A literal every match of a regex delimiter contains (README.md "Performance": the scanner's prefilter).

    When ``str.find`` does not find :attr:`text` in ``buf[pos:]``, no match is complete there, and
    a partial match needs a path that runs into the end of the buffer before the factor is
    complete: through the part of the pattern before the factor (at most :attr:`reach`
    characters, all in :attr:`before_class`), then a proper prefix of the factor. Such a path
    starts at or after ``len(buf) - len(text) + 1 - reach`` and within the run of ``before_class``
    characters that ends there, so the scanner searches only from there.

    Attributes:
        text (str): the literal (the longest run of literal items at the pattern's top level).
        reach (int | None): the most characters the part before it can match; None: unbounded.
        before_class (str | None): a ``regex`` set (``[...]``) holding every character that part
            can consume; None when it is not a finite union of literals, ranges and ``\\d \\s \\w``
            (then ``reach`` alone bounds the search, and without either there is no factor).
    """

    text: str
    reach: int | None
    before_class: str | None


@dataclass(frozen=True)
class Watch:
    """One watched delimiter of one state.

    Attributes:
        kind (str): ``"open"`` or ``"close"``.
        field (int): index of the field whose delimiter it is.
        delimiter (Delimiter): the delimiter.
        rank (int): tie-break rank inside the state (lower wins; template-language.md "Choosing the next delimiter").
        target (int): the state entered when it commits.
        matcher (str): ``"literal"`` (literals none of which extends another: ``str.find`` per
            literal) or ``"regex"`` (patterns, and literal lists that can extend).
        pending_at_edge (bool): a complete match ending at the buffer edge must wait.
        indeterminate (bool): every complete match must wait until end of stream (D2).
        extendable (bool): see :class:`PatternFacts`.
        action (str): what committing it does, one of :data:`ACTIONS` (``kind`` is ``"open"``
            for ``open``/``nest`` and ``"close"`` for ``close``/``after``).
    """

    kind: str
    field: int
    delimiter: Delimiter
    rank: int
    target: int
    matcher: str
    pending_at_edge: bool
    indeterminate: bool
    extendable: bool = False
    action: str = ""


@dataclass(frozen=True)
class State:
    """One automaton state: the region it fills and the delimiters it watches.

    Attributes:
        index (int): 0 is OUTSIDE; explicit fields follow in declaration order.
        field (int | None): the field receiving text in this state (None = null sink).
        name (str): a readable label for comments.
        watches (tuple[Watch, ...]): in declaration order (template-language.md "Watch sets").
        triggers (str | None): every character a watched delimiter (or a partial match of one)
            can start with, searched from an offset after 0 (``PatternFacts.late_chars``: a
            start anchor never holds there, so the parser takes its fast path only after offset
            0); a chunk holding none of them, arriving with nothing held, is plain region text
            (the parser's fast path). None when some delimiter's first characters are unknown.
        heads (tuple[str, ...] | None): the distinct first :data:`HEAD` (three) characters of
            every watched delimiter, all of one length (two when some delimiter has only two
            known: a literal of two characters, a regex with a shorter lead): a trigger that does
            not begin one of them, or a proper prefix of one at the end of the text, cannot start
            a delimiter, so the fast path still applies. None when some delimiter has fewer than
            two known first characters.
    """

    index: int
    field: int | None
    name: str
    watches: tuple[Watch, ...]
    triggers: str | None = None
    heads: tuple[str, ...] | None = None
    #: the :class:`HoldRun` delimiters whose optional openers are in ``triggers`` and ``heads``:
    #: the fast path holds their trailing run itself (runtime ``HOLD_RUNS``)
    runs: tuple["HoldRun", ...] = ()


@dataclass(frozen=True)
class Automaton:
    """The region automaton of one template.

    Attributes:
        states (tuple[State, ...]): ``states[0]`` is OUTSIDE.
        state_of_field (dict[int, int]): explicit field index -> its state.
        context (int | None): decided characters regex delimiters need to see (None = all).
        warnings (tuple[str, ...]): indeterminate delimiters (D2), for ``respc check``.
        after_state (dict[int, int]): v2: field index -> the state watching the optional close
            that may follow its value (fields with ``"end": "value"`` and a close).
        anchor_context (bool): ``context`` is there only for ``^`` and ``\\A`` (no ``\\b``,
            lookbehind or multiline ``^`` in any regex delimiter): it must keep a start anchor
            from matching at a trimmed buffer start, which any decided characters do, not only
            the last ones (see :attr:`PatternFacts.looks_back`).
    """

    states: tuple[State, ...]
    state_of_field: dict
    context: int | None
    warnings: tuple[str, ...]
    after_state: dict = _dc_field(default_factory=dict)
    anchor_context: bool = False


# --- regex analysis -------------------------------------------------------------------------

_SAMPLES = "aZ0_ \n\t\r-.,:;\"'<>{}[]()/\\|=+*?!@#$%^&`~é中\x00\x01"
_MAXREPEAT = sre_c.MAXREPEAT


class _Unknown(Exception):
    """The analysis met a construct it does not model; the caller falls back to 'conservative'."""


_CATEGORY_CLASS = {
    "CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s", "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W", "CATEGORY_LINEBREAK": r"\n", "CATEGORY_NOT_LINEBREAK": r"[^\n]",
}


@lru_cache(maxsize=None)
def _category_regex(name: str):
    return regex.compile(_CATEGORY_CLASS[name])


def _category_has(cat, c: str) -> bool:
    """Whether the category ``cat`` (``\\d``, ``\\w``...) holds ``c``, asked of the ``regex`` module
    (its ``\\w`` and ``\\s`` are Unicode properties, not ``str.isalnum``/``str.isspace``)."""
    name = str(cat)
    if name not in _CATEGORY_CLASS:
        raise _Unknown(name)
    return _category_regex(name).match(c) is not None


def _item_has(op, av, c: str) -> bool:
    """Whether the one-character item (op, av) of an sre parse tree matches ``c``."""
    if op is sre_c.LITERAL:
        return ord(c) == av
    if op is sre_c.NOT_LITERAL:
        return ord(c) != av
    if op is sre_c.ANY:
        return True  # DOTALL: '.' matches everything
    if op is sre_c.RANGE:
        return av[0] <= ord(c) <= av[1]
    if op is sre_c.CATEGORY:
        return _category_has(av, c)
    if op is sre_c.IN:
        negate = bool(av) and av[0][0] is sre_c.NEGATE
        items = av[1:] if negate else av
        hit = any(_item_has(o, a, c) for o, a in items)
        return hit != negate
    raise _Unknown(str(op))


class _CharSet:
    """A set of characters, kept as the sre items that define it; compared by sampling."""

    def __init__(self, items=(), anything: bool = False) -> None:
        self.items = list(items)
        self.anything = anything

    def __or__(self, other: "_CharSet") -> "_CharSet":
        return _CharSet(self.items + other.items, self.anything or other.anything)

    def has(self, c: str) -> bool:
        return self.anything or any(_item_has(op, av, c) for op, av in self.items)

    def chars(self) -> set[str]:
        found = set()
        for op, av in self.items:
            if op in (sre_c.LITERAL, sre_c.NOT_LITERAL):
                found.add(chr(av))
            elif op is sre_c.RANGE:
                found.update((chr(av[0]), chr(av[1])))
            elif op is sre_c.IN:
                found |= _CharSet([(o, a) for o, a in av if o is not sre_c.NEGATE]).chars()
        return found

    def overlaps(self, other: "_CharSet") -> bool:
        if (self.anything and (other.anything or other.items)) or (other.anything and self.items):
            return True
        for c in set(_SAMPLES) | self.chars() | other.chars():
            if self.has(c) and other.has(c):
                return True
        return False


_EMPTY = _CharSet()
_ANY = _CharSet(anything=True)


_CHAR_OPS = (sre_c.LITERAL, sre_c.NOT_LITERAL, sre_c.ANY, sre_c.IN, sre_c.RANGE, sre_c.CATEGORY)
_REPEAT_OPS = tuple(op for op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None))
                    if op is not None)
_ATOMIC = getattr(sre_c, "ATOMIC_GROUP", None)


def _all_chars(seq) -> _CharSet:
    """Every character ``seq`` can consume anywhere (an over-approximation)."""
    return _chars(seq, False)


def _rest_chars(seq) -> _CharSet:
    """Every character ``seq`` can consume at a position after the first of its match (an
    over-approximation). Raises :class:`_Unknown` for an item it does not model."""
    return _chars(seq, True)


def _chars(seq, rest: bool) -> _CharSet:
    """:func:`_all_chars` (``rest`` false) or :func:`_rest_chars` (true): an item after one that
    may have consumed a character gives all its characters, an item before only its own rest;
    zero-width items consume nothing."""
    out = _CharSet()
    consumed = not rest  # an earlier item may have consumed a character
    for op, av in seq:
        if op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
            continue
        if op in _CHAR_OPS:
            if consumed:
                out = out | _CharSet([(op, av)])
        elif op is sre_c.SUBPATTERN:
            out = out | _chars(av[-1], not consumed)
        elif op is _ATOMIC and _ATOMIC is not None:
            out = out | _chars(av, not consumed)
        elif op is sre_c.BRANCH:
            for alt in av[1]:
                out = out | _chars(alt, not consumed)
        elif op in _REPEAT_OPS:
            # a second repetition's characters follow the first one's
            out = out | _chars(av[2], not consumed and av[1] <= 1)
        elif op is sre_c.GROUPREF_EXISTS:
            out = out | _chars(av[1], not consumed) | (_chars(av[2], not consumed) if av[2] is not None else _EMPTY)
        elif op is sre_c.GROUPREF:
            out = out | _ANY
        elif rest:
            raise _Unknown(str(op))
        else:
            continue
        consumed = True
    return out


#: start anchors that hold only at offset 0 of the text (without MULTILINE): once the parser has
#: decided a character, a search from its position can never satisfy them
_AT_START = ("AT_BEGINNING", "AT_BEGINNING_STRING")


#: characters :func:`example_text` tries for a class, in order (readable ones first)
_EXAMPLE_CHARS = "fabcdegxyz0123456789_ -.:,=/|<>\"'{}[]()\n\tABCXYZ"


def example_text(pattern: str) -> str | None:
    """A short text the delimiter ``pattern`` matches in full, for messages that show one (``respc
    check``'s examples): each repeat taken its least number of times, the first alternative, a
    class's first character in :data:`_EXAMPLE_CHARS`; None when the ``re`` parser cannot read
    the pattern as the ``regex`` module does, or the text built does not match."""
    if not _read_source(pattern).sre_agrees:
        return None
    try:
        tree = parse_pattern(pattern, sre_c.SRE_FLAG_DOTALL)
        groups: dict[int, str] = {}
        text = _example_seq(list(tree), groups)
    except (_Unknown, Exception):
        return None
    return text if regex.fullmatch(pattern, text, regex.DOTALL) else None


def _example_seq(seq, groups: dict) -> str:
    out = []
    for op, av in seq:
        if op is sre_c.LITERAL:
            out.append(chr(av))
        elif op in (sre_c.IN, sre_c.ANY, sre_c.NOT_LITERAL, sre_c.CATEGORY, sre_c.RANGE):
            out.append(next(c for c in _EXAMPLE_CHARS if _item_has(op, av, c)))
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
            lo, _, body = av
            out.append(_example_seq(list(body), groups) * lo)
        elif op is sre_c.SUBPATTERN:
            text = _example_seq(list(av[-1]), groups)
            if av[0] is not None:
                groups[av[0]] = text
            out.append(text)
        elif op is sre_c.BRANCH:
            out.append(_example_seq(list(av[1][0]), groups))
        elif op is sre_c.GROUPREF:
            out.append(groups[av])
        elif op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
            continue  # zero-width: the full match check below decides
        elif op is getattr(sre_c, "ATOMIC_GROUP", None):
            out.append(_example_seq(list(av), groups))
        else:
            raise _Unknown(str(op))
    return "".join(out)


#: :func:`late_pattern` of a pattern every alternative of which is anchored at the start
NEVER = "(?!)"
#: an inline flag group at the start of a pattern (``(?i)``, ``(?s:``...), not a named group
_INLINE_FLAGS = re.compile(r"\(\?[a-zA-Z0-9-]+[:)]")


def _top_alternatives(pattern: str) -> list[str] | None:
    """The source of each top-level alternative of ``pattern`` (split at ``|`` outside groups,
    sets and escapes), or None when it cannot be split safely (a global inline flag such as
    ``(?i)`` at the start, a version-1 set, an unreadable escape or set)."""
    if _INLINE_FLAGS.match(pattern) or "V1" in pattern:
        return None
    parts, start, depth, i, n = [], 0, 0, 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            end = _escape_end(pattern, i)
            if end is None:
                return None
            i = end
            continue
        if c == "[":
            found = _set_end(pattern, i, False)
            if found is None:
                return None
            i = found[0]
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    parts.append(pattern[start:])
    return parts


@lru_cache(maxsize=512)
def late_pattern(pattern: str) -> str | None:
    """The pattern for searches that start after offset 0, when it is simpler: the top-level
    alternatives that begin with a start anchor (``^``, ``\\A``: :data:`_AT_START`, never
    satisfied after offset 0 without MULTILINE) dropped, for example ernie4_5's
    ``^\\s*(?:<think>\\s*)?|<think>\\s*`` -> ``<think>\\s*``; ``"(?!)"`` when every
    alternative begins with one. None when none does (or the pattern cannot be split).

    README.md "Performance": the ``regex`` engine tries an anchored alternative at every offset of a search
    (ernie4_5's opener: 8 ms over 100 kB of prose, against 60 us for the rest of it). Only for
    complete (end-of-stream) searches, and checked on samples against the full pattern from
    offsets after 0: a partial search of an anchored group can report a partial match at the
    end of the text where the rest cannot, so partial searches keep the full pattern.
    """
    if not _read_source(pattern).sre_agrees:  # regex-only syntax: the re parser would misread it
        return None
    parts = _top_alternatives(pattern)
    if not parts:
        return None
    kept = []
    for part in parts:
        try:
            tree = parse_pattern(part, sre_c.SRE_FLAG_DOTALL)
        except Exception:
            return None
        items = list(tree)
        while items and items[0][0] is sre_c.SUBPATTERN and len(items) == 1:
            items = list(items[0][1][-1])  # a group around the whole alternative
        anchored = bool(items) and items[0][0] is sre_c.AT and str(items[0][1]) in _AT_START
        if not anchored:
            kept.append(part)
    if len(kept) == len(parts):
        return None
    late = "|".join(kept) if kept else NEVER
    full, short = regex.compile(pattern, regex.DOTALL), regex.compile(late, regex.DOTALL)
    samples = [_SAMPLES, "x<think>\n y", "a\nanalysis<think> </think>"]
    for sample in samples:
        for i in range(1, len(sample) + 1):
            a, b = full.search(sample, i), short.search(sample, i)
            if (a and a.span()) != (b and b.span()):
                return None
    return late


@lru_cache(maxsize=512)
def barrier_plan(pattern: str) -> tuple[str, str] | None:
    """``(factor, barrier)`` for a complete text's search of a regex delimiter that starts with
    neither a literal nor leads (:func:`_branch_leads`), or None.

    The pattern's top-level sequence (or, when it starts with a positive lookahead, the
    lookahead's: the match starts where its text does) is ``P + factor + ...``: ``factor`` a run
    of literal characters after at least one other item (the longest run that has a barrier),
    ``P`` the items before it. ``barrier`` is a character ``P`` never consumes after its first
    character (:func:`_rest_chars`). So a match starting at ``s`` has no barrier in ``(s, c)``,
    ``c`` the factor's place in it, and ``c`` is at or after the first factor from the search's
    start: no match starts before the last barrier ahead of that factor, and none at all when
    no factor follows. The search runs the engine from there only (``runtime.barrier_search``).

    README.md "Performance": inkling's tool-call opener
    ``(?:(?:<\\|message_model\\|>|^)[^<]*)?<\\|content_invoke_tool_json\\|>``
    has no literal lead, and the engine tried it at every offset (about 2 ms per search over
    100 kB of prose); its factor is ``<|content_invoke_tool_json|>``, its barrier ``<``. And a
    lookahead-led opener (``(?=\\{\\s*"name")``: factor ``"name"``) costs the engine about 1 us
    per kB of prose. Checked on samples against the engine's own search from every offset (as
    :func:`late_pattern` is); None when the ``re`` parser cannot read the pattern as ``regex``
    does, case is ignored, or no run has a barrier (a one-character factor is not its own).
    """
    if not _read_source(pattern).sre_agrees:
        return None
    try:
        tree = parse_pattern(pattern, sre_c.SRE_FLAG_DOTALL)
        if tree.state.flags & (sre_c.SRE_FLAG_VERBOSE | sre_c.SRE_FLAG_LOCALE) or _ignores_case(tree):
            return None
        items = list(tree)
        if items and items[0][0] is sre_c.ASSERT and items[0][1][0] == 1:
            items = list(items[0][1][1])  # a leading lookahead: the match starts where its text does
        elif not items or items[0][0] is sre_c.LITERAL:
            return None  # (a literal first: the engine's own prefix search, or the leads, find it)
        plan = None
        for k, j in sorted(_literal_runs(items)[int(items[0][0] is sre_c.LITERAL):],
                           key=lambda r: (r[0] - r[1], r[0])):  # the longest first, after the first item
            factor = "".join(chr(av) for _, av in items[k:j])
            before = items[:k]
            rest = _rest_chars(before)
            candidates = sorted(set(factor) | _all_chars(before).chars(), key=lambda c: (-whole_rarity(c), c))
            barrier = next((c for c in candidates if not rest.has(c) and c != factor), None)
            if barrier is not None:
                plan = factor, barrier
                example = _example_seq(items, {})
                break
    except (_Unknown, Exception):
        return None
    if plan is None:
        return None
    factor, barrier = plan
    compiled = regex.compile(pattern, regex.DOTALL)
    samples = [_SAMPLES + factor, factor + _SAMPLES, barrier + "ab" + factor + "cd" + factor,
               _SAMPLES + barrier + example + factor + _SAMPLES + example,
               example + barrier + example + "x" + factor + barrier + factor + example[1:] + example]
    for sample in samples:
        for i in range(len(sample) + 1):
            a, b = compiled.search(sample, i), barrier_search(compiled, sample, i, factor, barrier)
            if (a and a.span()) != (b and b.span()):
                return None
    return plan


def _first_item(op, av, late: bool = False):
    """(first-character set, can match empty) of one item of an sre tree.

    With ``late`` the set is that of a match starting after offset 0 (a start anchor never holds,
    :data:`_AT_START`), and a positive lookahead that must consume a character gives its first
    characters: the character at the match's start must be one of them even for an empty match.
    """
    if op in _CHAR_OPS:
        return _CharSet([(op, av)]), False
    if op is sre_c.SUBPATTERN:
        return _seq_first(av[-1], late)
    if op is _ATOMIC and _ATOMIC is not None:
        return _seq_first(av, late)
    if op is sre_c.BRANCH:
        out, nullable = _CharSet(), False
        for alt in av[1]:
            first, empty = _seq_first(alt, late)
            out, nullable = out | first, nullable or empty
        return out, nullable
    if op in _REPEAT_OPS:
        first, nullable = _seq_first(av[2], late)
        return first, nullable or av[0] == 0
    if late and op is sre_c.AT and str(av) in _AT_START:
        return _CharSet(), False  # never holds: nothing can follow
    if late and op is sre_c.ASSERT and av[0] == 1:
        first, nullable = _seq_first(av[1], late)
        if not nullable:
            return first, False
    if op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
        return _CharSet(), True
    if op is sre_c.GROUPREF_EXISTS:
        a = _seq_first(av[1], late)
        b = _seq_first(av[2], late) if av[2] is not None else (_CharSet(), True)
        return a[0] | b[0], a[1] or b[1]
    if op is sre_c.GROUPREF:
        return _ANY, True
    raise _Unknown(str(op))


def _seq_first(seq, late: bool = False):
    """(first-character set, can match empty) of a sequence of sre items (``late``: see
    :func:`_first_item`)."""
    out = _CharSet()
    for op, av in seq:
        first, nullable = _first_item(op, av, late)
        out = out | first
        if not nullable:
            return out, False
    return out, True


def _within(seq, chars: _CharSet) -> tuple[bool, bool]:
    """(can match empty, can match a non-empty string made only of ``chars``) for ``seq``."""
    all_possible, all_empty, some_nonempty = True, True, False
    for op, av in seq:
        empty, nonempty = _item_within(op, av, chars)
        all_possible = all_possible and (empty or nonempty)
        all_empty = all_empty and empty
        some_nonempty = some_nonempty or nonempty
    return all_empty, all_possible and some_nonempty


def _item_within(op, av, chars: _CharSet) -> tuple[bool, bool]:
    if op in _CHAR_OPS:
        return False, _CharSet([(op, av)]).overlaps(chars)
    if op is sre_c.SUBPATTERN:
        return _within(av[-1], chars)
    if op is _ATOMIC and _ATOMIC is not None:
        return _within(av, chars)
    if op is sre_c.BRANCH:
        results = [_within(alt, chars) for alt in av[1]]
        return any(e for e, _ in results), any(n for _, n in results)
    if op in _REPEAT_OPS:
        empty, nonempty = _within(av[2], chars)
        return av[0] == 0 or empty, nonempty and av[1] > 0
    if op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
        return True, False
    if op is sre_c.GROUPREF_EXISTS:
        a = _within(av[1], chars)
        b = _within(av[2], chars) if av[2] is not None else (True, False)
        return a[0] or b[0], a[1] or b[1]
    if op is sre_c.GROUPREF:
        return True, True
    raise _Unknown(str(op))


def _walk(seq, cont: tuple, facts: dict) -> None:
    """Record indeterminacy reasons and context needs of ``seq``; ``cont`` is what follows it.

    An unbounded greedy repeat is indeterminate when what follows it can match a non-empty
    string made only of characters the repeat consumes: then its maximal munch can run to the
    buffer edge and backtrack, so later input moves the match (``.*>``). When what follows needs a
    character the repeat never takes (``\\w+.*?<x>``, ``[^>]*>``) the munch stops inside
    known text and the match is final.
    """
    items = list(seq)
    for i, (op, av) in enumerate(items):
        after = (items[i + 1:],) + cont
        if op is sre_c.AT:
            name = str(av)
            if name in ("AT_END", "AT_END_STRING"):
                facts["reasons"].append("an end anchor ($ or \\Z) matches only once the stream ends")
            elif name != "AT_END_LINE":
                facts["context"] = _more(facts["context"], 1)
                if name not in _AT_START:
                    # \b and \B read the character before: it must be the real one
                    facts["looks_back"] = _more(facts["looks_back"], 1)
        elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
            direction, sub = av
            if direction == 1 and (op is sre_c.ASSERT_NOT or not _monotone(sub)):
                facts["reasons"].append("a negative lookahead, or one that tests for the end of the text, "
                                        "can change with later input")
            elif direction != 1:
                width = sub.getwidth()[1]
                facts["context"] = None if width >= _MAXREPEAT else _more(facts["context"], width)
                facts["looks_back"] = None if width >= _MAXREPEAT else _more(facts["looks_back"], width)
            _walk(sub, (), facts)
        elif op is sre_c.SUBPATTERN:
            _walk(av[-1], after, facts)
        elif op is _ATOMIC and _ATOMIC is not None:
            _walk(av, after, facts)
        elif op is sre_c.BRANCH:
            for alt in av[1]:
                _walk(alt, after, facts)
        elif op is sre_c.GROUPREF_EXISTS:
            _walk(av[1], after, facts)
            if av[2] is not None:
                _walk(av[2], after, facts)
        elif op in _REPEAT_OPS:
            low, high, body = av
            if op is sre_c.MAX_REPEAT and low < high < _MAXREPEAT:
                facts["extendable"] = True
            if op is sre_c.MAX_REPEAT and high == _MAXREPEAT:
                rest = [item for part in after for item in part]
                if _within(rest, _all_chars(body))[1]:
                    facts["reasons"].append("an unbounded greedy repeat overlaps what follows it")
            _walk(body, after, facts)


_UNSTABLE_AT = ("AT_END", "AT_END_STRING", "AT_END_LINE", "AT_BOUNDARY", "AT_NON_BOUNDARY",
                "AT_UNI_BOUNDARY", "AT_UNI_NON_BOUNDARY", "AT_LOC_BOUNDARY", "AT_LOC_NON_BOUNDARY")


def _monotone(seq) -> bool:
    """Whether a positive lookahead body, once it matched, keeps matching whatever text is appended.

    It does unless it tests for the end of the text (``$``, ``\\Z``, ``\\b`` at the edge) or for
    the absence of something (a nested negative lookaround): appending text only ever adds
    characters after what the body already matched.
    """
    for op, av in seq:
        if op is sre_c.AT and str(av) in _UNSTABLE_AT:
            return False
        if op is sre_c.ASSERT_NOT:
            return False
        if op is sre_c.ASSERT and not _monotone(av[1]):
            return False
        if op is sre_c.SUBPATTERN and not _monotone(av[-1]):
            return False
        if op is _ATOMIC and _ATOMIC is not None and not _monotone(av):
            return False
        if op is sre_c.BRANCH and not all(_monotone(alt) for alt in av[1]):
            return False
        if op in _REPEAT_OPS and not _monotone(av[2]):
            return False
        if op is sre_c.GROUPREF_EXISTS and not (_monotone(av[1]) and (av[2] is None or _monotone(av[2]))):
            return False
    return True


def _more(current: int | None, need: int) -> int | None:
    return None if current is None else max(current, need)


# --- reading the source the way the matching engine does
# (docs/template-language.md "D2: chunking never changes the result") ---
#
# The analysis above walks the stdlib ``re`` parse tree, but the parser matches with the
# ``regex`` module, which reads some sources differently (``[[:alpha:]]`` is a POSIX class there
# and a set of ``[:ahlp`` for ``re``; ``a{e<=1}`` is fuzzy matching there and literal text for
# ``re``). :func:`_read_source` walks the source once with the ``regex`` module's syntax and
# (a) tells whether the two parsers can disagree on it (then the tree is not analysed at all) and
# (b) builds the *probe* the scanner uses to decide when a match is final.
#
# The probe of a pattern P is ``(?>(?:P'))(?!)``, searched with ``partial=True``. It never
# matches completely, so the ``regex`` module always runs its partial phase, which at every
# start position explores P's paths in the engine's own order and reports the first one that
# runs into the end of the buffer. The atomic group stops that exploration at P's first
# complete match. So the probe's start is the leftmost position at which the answer of a search
# can still change when text is appended: a path tried before the winning one needs more text.
# Left of it, nothing can change (a complete match there is final). ``regex`` judges zero-width
# assertions at the end of the buffer as if the text ended there (``<\b`` does not partially
# match ``<``), so P' is P with each end-sensitive assertion rewritten to need one more character
# there: ``\b`` becomes ``(?:(?=[\s\S])\b)``, ``$`` ``(?:(?=\n?(?=[\s\S])(?!))|$)``.
# Lookaheads need no rewriting: the engine's partial matching reaches into them.

_POSIX_CLASS = re.compile(r"\[:\^?[A-Za-z0-9_]+:\]")
_SRE_REPEAT = re.compile(r"\{(?:\d+|\d*,\d*)\}")
_FLAG_GROUP = re.compile(r"\(\?([A-Za-z0-9-]*)[:)]")
_FLAG_LETTERS = set("aiLmsuwV01-bepfrx")
#: inline flags whose matching order or partial matching the probe cannot account for:
#: verbose (x: comments would hide what the reader sees), reverse (r), POSIX leftmost-longest (p),
#: best/enhanced fuzzy matching (b, e), full case folding (f)
_UNPROBED_FLAGS = set("xrpbef")
_WORD_EDGE = "(?:(?=[\\s\\S])\\{})"
_TEXT_END = "(?:(?=\\n?(?=[\\s\\S])(?!))|$)"  # $: at the end, or before a final newline
_STRING_END = "(?:(?=[\\s\\S])(?!))"  # \\Z, \\z: only at the end


@dataclass(frozen=True)
class _Reading:
    probe: str | None
    rewritten: bool
    sre_agrees: bool
    why: str = ""


def _escape_end(src: str, i: int) -> int | None:
    """Offset just past the escape starting at ``src[i] == "\\\\"`` (None: unreadable)."""
    if i + 1 >= len(src):
        return None
    kind = src[i + 1]
    if kind in "pPNxugL" and i + 2 < len(src) and src[i + 2] in "{<":
        close = src.find("}" if src[i + 2] == "{" else ">", i + 3)
        return None if close < 0 else close + 1
    if kind in "pP":
        return i + 3 if i + 2 < len(src) else None
    return i + 2


def _set_end(src: str, i: int, version1: bool) -> tuple[int, bool] | None:
    """(offset just past the set starting at ``src[i] == "["``, whether it holds a ``[``)."""
    j = i + 1
    if j < len(src) and src[j] == "^":
        j += 1
    if j < len(src) and src[j] == "]":
        j += 1
    nested = False
    while j < len(src):
        c = src[j]
        if c == "\\":
            end = _escape_end(src, j)
            if end is None:
                return None
            j = end
        elif c == "[":
            nested = True
            posix = _POSIX_CLASS.match(src, j)
            if posix:
                j = posix.end()
            elif version1:
                inner = _set_end(src, j, version1)
                if inner is None:
                    return None
                j = inner[0]
            elif src.startswith(("[:", "[=", "[."), j):
                return None  # a POSIX-looking item the reader does not know
            else:
                j += 1
        elif c == "]":
            return j + 1, nested
        else:
            j += 1
    return None


@lru_cache(maxsize=512)
def _read_source(pattern: str) -> _Reading:
    """Walk a ``regex``-syntax source: does ``re`` read it alike, and what is its probe?"""
    out: list[str] = []
    agrees = True
    rewritten = False
    version1 = "V1" in pattern  # any (?V1) makes every set a version-1 (nestable) set
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            end = _escape_end(pattern, i)
            if end is None:
                return _Reading(None, False, False, "an escape the compiler cannot read")
            kind = pattern[i + 1]
            if kind in "bBmM":
                out.append(_WORD_EDGE.format(kind))
                rewritten = True
            elif kind in "Zz":
                out.append(_STRING_END)
                rewritten = True
            elif kind == "K":
                return _Reading(None, False, False, "\\K moves the reported start of a match")
            else:
                out.append(pattern[i:end])
            i = end
        elif c == "$":
            out.append(_TEXT_END)
            rewritten = True
            i += 1
        elif c == "[":
            found = _set_end(pattern, i, version1)
            if found is None:
                return _Reading(None, False, False, "a character set the compiler cannot read")
            end, nested = found
            agrees = agrees and not nested and not version1
            out.append(pattern[i:end])
            i = end
        elif c == "(" and pattern.startswith("(?#", i):
            end = pattern.find(")", i)
            if end < 0:
                return _Reading(None, False, False, "an unterminated comment")
            out.append(pattern[i:end + 1])
            i = end + 1
        elif c == "(" and pattern.startswith("(?", i):
            flags = _FLAG_GROUP.match(pattern, i)
            letters = flags.group(1) if flags else ""
            if flags and letters and not letters.isdigit() and set(letters) <= _FLAG_LETTERS:
                bad = sorted(set(letters) & _UNPROBED_FLAGS)
                if bad:
                    return _Reading(None, False, False, f"the inline flag {bad[0]!r}")
                agrees = agrees and not set(letters) & set("wV01")
            out.append("(?")
            i += 2
        elif c == "{":
            repeat = _SRE_REPEAT.match(pattern, i)
            if repeat:
                out.append(repeat.group(0))
                i = repeat.end()
            else:
                agrees = False  # fuzzy matching for `regex`, literal text for `re`
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    body = "".join(out)
    probe = f"(?>(?:{body}))(?!)"
    try:
        original = regex.compile(pattern, regex.DOTALL)
        check = regex.compile(body, regex.DOTALL)
        regex.compile(probe, regex.DOTALL)
    except Exception:  # noqa: BLE001 - any refusal of the engine means: no probe
        return _Reading(None, False, False, "the probe does not compile")
    if (check.groups, check.groupindex) != (original.groups, original.groupindex):
        return _Reading(None, False, False, "the probe changes the groups")
    return _Reading(probe, rewritten, agrees)


def edge_probe(pattern: str) -> tuple[str | None, bool]:
    """The probe of a regex delimiter (see the comment above :func:`_read_source`).

    Args:
        pattern: the delimiter's source (``regex`` module syntax, compiled with DOTALL).

    Returns:
        tuple[str | None, bool]: the probe source and whether it rewrote end-sensitive
        assertions; ``(None, False)`` when the pattern uses something the probe cannot account
        for (``\\K``, the ``r``/``p``/``b``/``e``/``f``/``x`` flags, unreadable syntax).
    """
    reading = _read_source(pattern)
    return reading.probe, reading.rewritten


#: final_literals: the longest literal a match's last positions are read back through
FINAL_MAX = 64


@lru_cache(maxsize=512)
def final_literals(pattern: str) -> tuple[str, ...] | None:
    """Literals that end a regex delimiter's match for good: the D2 probe after a complete match
    that ends with one of them can only agree, so the scanner takes the match without it
    (runtime/scanners.py ``Pattern.final``; docs/template-language.md, "Matching").

    A literal ``F`` qualifies when, in the delimiter's position automaton
    (compiler/held.py :func:`~respc.compiler.held.position_automaton`), no path can read ``F``
    and then one more character: every text the pattern can still be writing holds ``F`` only as
    its end. Then, for a complete match ``[i, e)`` with ``F`` its last characters and text after
    ``e``, no partial match starts at or before ``i`` (its text up to the buffer's edge would hold
    that ``F`` before its end), which is what the probe's window and full search look for. The
    candidates are read back from each last position through one-character items with a single
    predecessor (``<|message|>`` of gpt_oss's call opener, ``<|end|>``); the automaton is run
    together with a matcher of ``F`` (a class admits every character of ``F`` it matches, and
    other characters too, which only adds paths). Patterns whose probe rewrote end assertions,
    or that the position automaton does not model (anchors, lookarounds but a trailing
    lookahead, backreferences), have none.

    Args:
        pattern (str): the delimiter's source (``regex`` syntax, compiled with DOTALL).

    Returns:
        tuple[str, ...] | None: the proven literals, longest first; None: none.
    """
    from .held import position_automaton

    reading = _read_source(pattern)
    if reading.probe is None or reading.rewritten:
        return None
    auto = position_automaton(pattern)
    if auto is None:
        return None
    preds: list[set] = [set() for _ in auto.tests]
    for p, follows in enumerate(auto.follow):
        for q in follows:
            preds[q].add(p)
    for q in auto.first:
        preds[q].add(-1)
    found = set()
    for p in auto.last:
        text = ""
        while p >= 0 and len(auto.tests[p]) == 1 and len(text) < FINAL_MAX:
            text = auto.tests[p] + text
            if len(preds[p]) != 1:
                break
            (p,) = preds[p]
        if text and _only_at_end(auto, text):
            found.add(text)
    return tuple(sorted(found, key=lambda t: (-len(t), t))) or None


def _only_at_end(auto, literal: str) -> bool:
    """Whether no path of ``auto`` (a position automaton) reads ``literal`` and then goes on."""
    n = len(literal)
    fail = [0] * (n + 1)
    k = 0
    for j in range(1, n):
        while k and literal[j] != literal[k]:
            k = fail[k]
        if literal[j] == literal[k]:
            k += 1
        fail[j + 1] = k

    def step(k: int, c: str) -> int:
        if k == n:
            k = fail[k]
        while k and literal[k] != c:
            k = fail[k]
        return k + 1 if literal[k] == c else 0

    chars = set(literal)
    admits = []
    for test in auto.tests:
        if len(test) == 1:
            admits.append(({test} & chars, test not in chars))
        else:
            compiled = regex.compile(test, regex.DOTALL)
            admits.append(({c for c in chars if compiled.fullmatch(c)}, True))

    def moves(targets, k):
        for r in targets:
            inside, other = admits[r]
            for c in inside:
                yield r, step(k, c)
            if other:
                yield r, 0

    seen = set(moves(auto.first, 0))
    todo = list(seen)
    while todo:
        q, k = todo.pop()
        if k == n and auto.follow[q]:
            return False
        for move in moves(auto.follow[q], k):
            if move not in seen:
                seen.add(move)
                todo.append(move)
    return True


@lru_cache(maxsize=512)
def classify_pattern(pattern: str) -> PatternFacts:
    """Classify one regex delimiter for D2 and for buffer trimming (see module docstring).

    The ``re`` parse tree is analysed only when :func:`_read_source` finds nothing the two
    parsers read differently; every claim about first characters is then also checked against
    the ``regex`` module itself (:func:`_first_chars`).

    Args:
        pattern: the regex source (``regex`` module syntax).

    Returns:
        PatternFacts: indeterminate or not, the context it needs, why, and its probe. A pattern
        the analysis cannot read (``regex``-only syntax, or syntax the parsers read differently) is
        treated conservatively: indeterminate, full context, no first characters, no lead.
    """
    reading = _read_source(pattern)
    why = ("the compiler cannot analyse this pattern",)
    if reading.probe is None:
        why += (f"no probe can tell when its match is final ({reading.why}), so text in its state "
                "waits for the end of stream",)
    unknown = PatternFacts(True, None, why, probe=reading.probe, probe_always=reading.rewritten)
    if not reading.sre_agrees:
        return unknown
    try:
        tree = parse_pattern(pattern, sre_c.SRE_FLAG_DOTALL)
        if tree.state.flags & (sre_c.SRE_FLAG_VERBOSE | sre_c.SRE_FLAG_LOCALE):
            return unknown
        facts = {"reasons": [], "context": 0, "looks_back": 0, "extendable": False}
        _walk(tree, (), facts)
    except (_Unknown, Exception):
        return unknown
    reasons = tuple(dict.fromkeys(facts["reasons"]))
    if _has_multiline(tree):
        # the tree reads a multiline ^ as AT_BEGINNING too: it tests for a newline before it
        facts["looks_back"] = facts["context"]
    first = _first_chars(tree, pattern)
    late = _first_chars(tree, pattern, True)
    if late is None:
        late = first
    return PatternFacts(bool(reasons), facts["context"], reasons, facts["extendable"], first,
                        "" if _ignores_case(tree) else _checked_lead(_lead(tree), first),
                        reading.probe, reading.rewritten, _factor(tree, pattern), late,
                        _late_pair_set(tree, pattern, late), _hold_run(tree, pattern),
                        None if _ignores_case(tree) else _checked_leads(_branch_leads(list(tree)), pattern),
                        facts["looks_back"])


#: sre categories the factor's class may name, and how ``regex`` spells them
_CLASS_CATEGORIES = {"CATEGORY_DIGIT": "\\d", "CATEGORY_NOT_DIGIT": "\\D", "CATEGORY_SPACE": "\\s",
                     "CATEGORY_NOT_SPACE": "\\S", "CATEGORY_WORD": "\\w", "CATEGORY_NOT_WORD": "\\W"}
#: what the part of a pattern before its factor may hold: consuming items only (no assertion,
#: lookaround, group reference or flag change, which could see text the path does not consume)
_PLAIN_OPS = _CHAR_OPS + (sre_c.SUBPATTERN, sre_c.BRANCH) + _REPEAT_OPS + ((_ATOMIC,) if _ATOMIC else ())


def _plain(seq) -> bool:
    for op, av in seq:
        if op not in _PLAIN_OPS:
            return False
        if op is sre_c.SUBPATTERN and (av[1] or av[2] or not _plain(av[-1])):
            return False
        if op is sre_c.BRANCH and not all(_plain(alt) for alt in av[1]):
            return False
        if op in _REPEAT_OPS and not _plain(av[2]):
            return False
        if op is _ATOMIC and _ATOMIC is not None and not _plain(av):
            return False
    return True


def _class_char(c: str) -> str:
    """``c`` as a member of a ``regex`` set."""
    if c.isalnum() or c in " <>|=.,:;!\"'_/@#%&*+?$(){}~`":
        return c
    return f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"


def _class_items(items) -> list[str] | None:
    """The members of a ``regex`` set holding exactly these sre items, None when not expressible."""
    out = []
    for op, av in items:
        if op is sre_c.LITERAL:
            out.append(_class_char(chr(av)))
        elif op is sre_c.RANGE:
            out.append(_class_char(chr(av[0])) + "-" + _class_char(chr(av[1])))
        elif op is sre_c.CATEGORY and str(av) in _CLASS_CATEGORIES:
            out.append(_CLASS_CATEGORIES[str(av)])
        elif op is sre_c.IN and not (av and av[0][0] is sre_c.NEGATE):
            inner = _class_items(av)
            if inner is None:
                return None
            out.extend(inner)
        else:
            return None  # '.', a negated set or literal: (nearly) every character
    return out


def _literal_runs(items) -> list[tuple[int, int]]:
    """``(start, end)`` indexes of each maximal run of LITERAL items in the sre sequence ``items``."""
    runs = []
    k = 0
    while k < len(items):
        if items[k][0] is sre_c.LITERAL:
            j = k
            while j < len(items) and items[j][0] is sre_c.LITERAL:
                j += 1
            runs.append((k, j))
            k = j
        else:
            k += 1
    return runs


def _factor(tree, pattern: str) -> Factor | None:
    """The required literal factor of a pattern (see :class:`Factor`), or None.

    Only the top level is read (a literal there is in every match); the pattern must have no
    global flag beyond DOTALL/UNICODE and ignore no case, and the part before the factor must
    consume plainly (:func:`_plain`). The factor's claims are checked against the ``regex``
    module only through :func:`classify_pattern`, which reads the tree only when the two parsers
    read the source alike.
    """
    if tree.state.flags & ~(sre_c.SRE_FLAG_DOTALL | sre_c.SRE_FLAG_UNICODE) or _ignores_case(tree):
        return None
    items = list(tree)
    best = (0, 0)  # (length, start index) of the longest literal run (the first of the longest)
    for k, j in _literal_runs(items):
        if j - k > best[0]:
            best = (j - k, k)
    length, start = best
    if length < 2:
        return None  # a one-character factor would be found in most prose: no gain
    before = items[:start]
    if not _plain(before):
        return None
    text = "".join(chr(av) for _, av in items[start:start + length])
    hi = sre_parse.SubPattern(tree.state, before).getwidth()[1] if before else 0
    reach = None if hi >= sre_c.MAXREPEAT - 1 else hi
    chars = _class_items(_all_chars(before).items) if before else []
    if chars is not None and not _all_chars(before).anything:
        before_class = "[" + "".join(dict.fromkeys(chars)) + "]" if chars else None
    else:
        before_class = None
    if reach is None and before_class is None:
        return None
    return Factor(text, reach, before_class)


def _lead(seq) -> str:
    """Literal characters every match of ``seq`` starts with.

    Stops at the first item that is not a literal. An assertion counts as such, even a leading
    one: a pattern like ``(?<=\\n)<x>`` does not partially match a trailing ``<`` everywhere,
    so the parser's fast path must not treat that ``<`` as held text.
    """
    out = []
    for op, av in seq:
        if op is sre_c.LITERAL:
            out.append(chr(av))
        elif op is sre_c.SUBPATTERN:
            inner = _lead(av[-1])
            out.append(inner)
            if len(inner) < len(av[-1]) or any(o is not sre_c.LITERAL for o, _ in av[-1]):
                break
        else:
            break
    return "".join(out)


def _branch_leads(seq) -> tuple[str, ...] | None:
    """Literals one of which every match of ``seq`` starts with: its literal lead (:func:`_lead`),
    else those of each alternative of a leading group or alternation, or of the text a leading
    positive lookahead looks at (the match starts where the lookahead's text does). None when an
    alternative has none (an empty one, a repeat, a class, an anchor or lookbehind first).

    docs/security.md "Whole text at scan speed": a complete text's search for a pattern without a
    common literal lead (xlam's ``<tool_call>|...|(?=\\[\\s*\\{\\s*"name")``) runs the regex at every
    offset; with these the parser finds the leads with ``str.find`` and asks the regex only where one starts
    (``runtime.lead_search``).
    """
    lead = _lead(seq)
    if lead:
        k = 0
        while k < len(seq) and seq[k][0] is sre_c.LITERAL:
            k += 1
        if k == len(lead) and k < len(seq) and seq[k][0] is sre_c.ASSERT and seq[k][1][0] == 1:
            # literals, then a lookahead: the text there starts with both (``functools(?=\\[)``)
            lead += _lead(list(seq[k][1][1]))
        return (lead,)
    if not seq:
        return None
    op, av = seq[0]
    if op is sre_c.SUBPATTERN:
        return _branch_leads(list(av[-1]))
    if op is sre_c.BRANCH:
        out: list[str] = []
        for alt in av[1]:
            got = _branch_leads(list(alt))
            if got is None:
                return None
            out.extend(got)
        return tuple(sorted(set(out)))
    if op is sre_c.ASSERT and av[0] == 1:
        return _branch_leads(list(av[1]))
    return None


def _checked_leads(leads: tuple[str, ...] | None, pattern: str) -> tuple[str, ...] | None:
    """:func:`_branch_leads`, kept only when the ``regex`` module agrees on samples: every match
    of the pattern at an offset of a sample starts with a lead (the ``re`` parser read the tree).
    Leads that begin with another lead are dropped (the shorter one finds them). One lead is kept
    only when it has an uncommon character (``runtime.whole``'s sentinel): the engine's own
    search for a literal prefix costs about what ``str.find`` does, and a complete text's
    ``find`` of such a lead is a ``memchr``."""
    if not leads:
        return None
    leads = tuple(t for t in leads if not any(o != t and t.startswith(o) for o in leads))
    if len(leads) < 2 and not (len(leads[0]) >= 2 and whole_sentinel(leads[0])[0]):
        return None
    compiled = regex.compile(pattern, regex.DOTALL)
    for sample in ("".join(leads) + _SAMPLES, _SAMPLES + "".join(leads)):
        for i in range(len(sample) + 1):
            m = compiled.match(sample, i)
            if m is not None and not any(sample.startswith(t, i) for t in leads):
                return None
    return leads


def _sets_flag(tree, flag: int) -> bool:
    """Whether ``tree`` sets the sre ``flag`` globally or in a scoped group anywhere."""
    if tree.state.flags & flag:
        return True
    stack = [tree]
    while stack:
        for op, av in stack.pop():
            if op is sre_c.SUBPATTERN:
                if av[1] & flag:
                    return True
                stack.append(av[-1])
            elif op is sre_c.BRANCH:
                stack.extend(av[1])
            elif op in _REPEAT_OPS:
                stack.append(av[2])
            elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
                stack.append(av[1])
            elif op is _ATOMIC and _ATOMIC is not None:
                stack.append(av)
            elif op is sre_c.GROUPREF_EXISTS:
                stack.append(av[1])
                if av[2] is not None:
                    stack.append(av[2])
    return False


def _ignores_case(tree) -> bool:
    return _sets_flag(tree, sre_c.SRE_FLAG_IGNORECASE)


def _has_multiline(tree) -> bool:
    """Whether ``^`` may hold after a newline too (MULTILINE anywhere)."""
    return _sets_flag(tree, sre_c.SRE_FLAG_MULTILINE)


def _first_chars(tree, pattern: str, late: bool = False) -> str | None:
    """The characters a match can start with, when that is a small finite set of literals.

    The set read from the ``re`` tree is checked against the ``regex`` module: a match, or a
    partial match, that starts with any other character of a probe sample refutes it (None).
    With ``late`` it is the set for a search from an offset after 0 (see :func:`_first_item`),
    checked only at such offsets; a MULTILINE flag anywhere turns ``late`` off.
    """
    if _ignores_case(tree):
        return None
    if late and _has_multiline(tree):
        return None
    chars = _literal_firsts(tree, late)
    if chars is None:
        return None
    compiled = regex.compile(pattern, regex.DOTALL)
    for c in (set(_SAMPLES) | set(pattern)) - chars:
        for text in (("\n" + c, "a" + c, "<" + c) if late else (c, "\n" + c, "a" + c)):
            if compiled.match(text, len(text) - 1, partial=True) is not None:
                return None
    return "".join(sorted(chars))


def _literal_firsts(seq, late: bool, wide: bool = False) -> set[str] | None:
    """The first characters of ``seq`` (:func:`_seq_first`) when they are a finite set of
    literals and ``seq`` cannot match empty; None otherwise. With ``wide``, ranges of up to 256
    characters and ``\\s`` count as such sets too."""
    try:
        first, nullable = _seq_first(seq, late)
    except _Unknown:
        return None
    if nullable or first.anything:
        return None
    chars: set[str] = set()
    for op, av in first.items:
        got = _finite_chars(op, av, wide)
        if got is None:
            return None
        chars |= got
    return chars


def _finite_chars(op, av, wide: bool) -> set[str] | None:
    """The characters of one sre character item, when it is a literal or a set of literals (with
    ``wide`` also a range of up to 256 characters or ``\\s``); None otherwise."""
    if op is sre_c.LITERAL:
        return {chr(av)}
    if op is sre_c.IN and not (av and av[0][0] is sre_c.NEGATE):
        out: set[str] = set()
        for o, a in av:
            got = _finite_chars(o, a, wide)
            if got is None:
                return None
            out |= got
        return out
    if wide and op is sre_c.RANGE and av[1] - av[0] < 256:
        return {chr(k) for k in range(av[0], av[1] + 1)}
    if wide and op is sre_c.CATEGORY and str(av) == "CATEGORY_SPACE":
        return set(_REGEX_SPACE)
    return None


def _late_pairs(seq) -> set[str] | None:
    """The first two characters of every match, or partial match, of ``seq`` found by a search
    from an offset after 0 (a start anchor never holds there), as a set of 2-character strings;
    None when that is not a small set of literals (a category, a repeat, a match of one character).

    Reads a leading literal, group, alternation, optional item (``?``) or positive lookahead (the
    character pair at the start of the match must begin a match of its body).
    """
    items = list(seq)
    if not items:
        return None
    op, av = items[0]
    rest = items[1:]
    if op is sre_c.LITERAL:
        seconds = _literal_firsts(rest, True, wide=True)
        return None if seconds is None else {chr(av) + d for d in seconds}
    if op is sre_c.AT and str(av) in _AT_START:
        return set()
    if op is sre_c.SUBPATTERN:
        if av[1] or av[2]:
            return None  # a scoped flag change
        return _late_pairs(list(av[-1]) + rest)
    if op is _ATOMIC and _ATOMIC is not None:
        return _late_pairs(list(av) + rest)
    if op is sre_c.BRANCH:
        out: set[str] = set()
        for alt in av[1]:
            got = _late_pairs(list(alt) + rest)
            if got is None:
                return None
            out |= got
        return out
    if op in _REPEAT_OPS and av[0] == 0 and av[1] == 1:
        taken, skipped = _late_pairs(list(av[2]) + rest), _late_pairs(rest)
        return None if taken is None or skipped is None else taken | skipped
    if op is sre_c.ASSERT and av[0] == 1:
        return _late_pairs(av[1])
    return None


def _run_chars(item) -> str | None:
    """The characters of a one-character item, when finite: literals, sets of literals, ``\\s``."""
    op, av = item
    if op is sre_c.LITERAL:
        return chr(av)
    if op is sre_c.CATEGORY and str(av) == "CATEGORY_SPACE":
        return _REGEX_SPACE
    if op is sre_c.IN and not (av and av[0][0] is sre_c.NEGATE):
        out = []
        for sub in av:
            got = _run_chars(sub)
            if got is None:
                return None
            out.append(got)
        return "".join(dict.fromkeys("".join(out)))
    return None


def _hold_run(tree, pattern: str) -> HoldRun | None:
    """The :class:`HoldRun` form of a pattern, or None: at its top level, optional items (``?``)
    whose matches start with two known characters, then one greedy or lazy ``*`` of a
    one-character item with finitely many characters, then a literal of two characters or more,
    then anything; no flag beyond DOTALL/UNICODE. Checked against the ``regex`` module: a trailing
    run, or run and prefix, must be a partial match, and a run followed by another character
    that is not the factor's first must not be."""
    if tree.state.flags & ~(sre_c.SRE_FLAG_DOTALL | sre_c.SRE_FLAG_UNICODE) or _ignores_case(tree):
        return None
    items = list(tree)
    k = 0
    firsts, pairs = set(), set()
    while k < len(items) and items[k][0] in _REPEAT_OPS and items[k][1][:2] == (0, 1):
        body = items[k][1][2]
        got = _late_pairs(body)
        if not got or not _plain_or_groups(body):
            return None
        pairs |= got
        firsts |= {p[0] for p in got}
        k += 1
    if k >= len(items) or items[k][0] not in _REPEAT_OPS:
        return None
    low, high, body = items[k][1]
    if low != 0 or high != _MAXREPEAT or len(body) != 1:
        return None
    chars = _run_chars(list(body)[0])
    k += 1
    factor = []
    while k < len(items) and items[k][0] is sre_c.LITERAL:
        factor.append(chr(items[k][1]))
        k += 1
    if chars is None or len(factor) < 2 or set(chars) & firsts:
        return None
    text = "".join(factor)
    compiled = regex.compile(pattern, regex.DOTALL)
    c = chars[0]
    for probe in (c, c + c, c + text[:1], c + text[:-1], "a" + c + text[:2]):
        m = compiled.search(probe, 0, partial=True)
        if m is None or not m.partial or m.start() != (1 if probe[0] == "a" else 0):
            return None
    m = compiled.search("a" + c + "\x01", 0, partial=True)
    if m is not None and m.start() < 3:  # (an empty partial match at the end is no hold)
        return None
    return HoldRun(chars, text, "".join(sorted(firsts)), tuple(sorted(pairs)))


def _plain_or_groups(seq) -> bool:
    """Consuming items and capture groups only (what an optional opener may hold)."""
    for op, av in seq:
        if op is sre_c.SUBPATTERN:
            if av[1] or av[2] or not _plain_or_groups(av[-1]):
                return False
        elif op in _REPEAT_OPS:
            if not _plain_or_groups(av[2]):
                return False
        elif op is sre_c.BRANCH:
            if not all(_plain_or_groups(alt) for alt in av[1]):
                return False
        elif op not in _CHAR_OPS:
            return False
    return True


def _late_pair_set(tree, pattern: str, late_chars: str | None) -> tuple[str, ...] | None:
    """:func:`_late_pairs` of a whole pattern, checked against the ``regex`` module: no other
    second character of a probe sample may continue a (partial) match after a first one."""
    if late_chars is None or _ignores_case(tree) or _has_multiline(tree):
        return None
    try:
        pairs = _late_pairs(tree)
    except _Unknown:
        return None
    if pairs is None or any(p[0] not in late_chars for p in pairs):
        return None
    compiled = regex.compile(pattern, regex.DOTALL)
    for c in late_chars:
        for d in (set(_SAMPLES) | set(pattern)):
            if c + d in pairs:
                continue
            for text in ("a" + c + d, "\n" + c + d):
                if compiled.match(text, 1, partial=True) is not None:
                    return None
    return tuple(sorted(pairs))


def _checked_lead(lead: str, first: str | None) -> str:
    """The lead, unless the engine-checked first characters contradict it."""
    if lead and first is not None and first != lead[0]:
        return ""
    return lead


# --- the automaton ----------------------------------------------------------------------------

def _watch(kind: str, field_index: int, delim: Delimiter, target: int) -> tuple[Watch, PatternFacts]:
    if delim.literals is not None:
        firsts = "".join(sorted({lit[0] for lit in delim.literals}))
        facts = PatternFacts(False, 0, first_chars=firsts, late_chars=firsts, looks_back=0)
        if not delim.can_extend:
            return Watch(kind, field_index, delim, 0, target, "literal", False, False), facts
        return Watch(kind, field_index, delim, 0, target, "regex", True, False), facts
    facts = classify_pattern(delim.pattern)
    return Watch(kind, field_index, delim, 0, target, "regex", True, facts.indeterminate, facts.extendable), facts


#: how many first characters of a watched delimiter the fast path compares (State.heads): three
#: tell `<c` in prose from gemma4's `<channel|>`, and `</arg_key>` inside a call body from its
#: `</tool_call>`, which two do not
HEAD = 3


def _heads(watches: tuple[Watch, ...]) -> tuple[str, ...] | None:
    """The first :data:`HEAD` characters of every watched delimiter, or the first two when one of
    them has only two known; None when one of them does not have two."""
    starts_all: list[str] = []
    for w in watches:
        if w.delimiter.literals is not None:
            starts = list(w.delimiter.literals)
        else:
            facts = classify_pattern(w.delimiter.pattern)
            if facts.run is not None and not facts.probe_always:  # (the run fast path, see ranked)
                starts = list(facts.run.pairs)  # its optional openers; the run is held by the fast path
            else:
                starts = [facts.lead] if len(facts.lead) >= 2 or facts.late_pairs is None else list(facts.late_pairs)
        if any(len(start) < 2 for start in starts):
            return None
        starts_all.extend(starts)
    k = HEAD if all(len(start) >= HEAD for start in starts_all) else 2
    return tuple(sorted({start[:k] for start in starts_all}))


def build_automaton(template: Template) -> Automaton:
    """Build the region automaton of a validated template.

    States: ``OUTSIDE`` (0), one per explicit field in declaration order, then one *after* state per
    field that ends at its value and has a close (v2): it watches only that optional trailing close.
    Transitions carry an explicit action (:data:`ACTIONS`): ``open`` (the current region closes,
    the new one opens and later returns where the closed one would have), ``nest`` (the current
    region is suspended and resumes when the new one ends), ``close`` (back to the suspended
    region, or OUTSIDE), ``after`` (consume the trailing close, then go back) and ``defer`` (an
    ``open`` that counts only if the current region's own close never follows).

    Args:
        template: the IR from :func:`respc.compiler.validate.validate`.

    Returns:
        Automaton: states with ordered watch sets, ranks and matcher classes, the context the
        regex delimiters need, and the D2 warnings.
    """
    fields = template.fields
    explicit = [i for i, f in enumerate(fields) if not f.is_implicit]
    state_of_field = {fi: k + 1 for k, fi in enumerate(explicit)}
    after_fields = [fi for fi in explicit if fields[fi].end == "value" and fields[fi].close is not None]
    after_state = {fi: len(explicit) + 1 + k for k, fi in enumerate(after_fields)}
    context: int | None = 0
    looks_back: int | None = 0
    warnings: list[str] = []

    def order_key(w: Watch):
        # template-language.md "Choosing the next delimiter": opens before closes, then field name; v2 breaks ties
        # in declaration order.
        second = fields[w.field].name if template.version < 2 else w.field
        return (0 if w.kind == "open" else 1, second)

    def ranked(entries):
        nonlocal context, looks_back
        watches = []
        triggers: set[str] | None = set()
        runs: list[HoldRun] = []
        for action, fi, delim, target in entries:
            kind = "open" if action in ("open", "nest", "defer") else "close"
            watch, facts = _watch(kind, fi, delim, target)
            watch = Watch(watch.kind, watch.field, watch.delimiter, 0, watch.target, watch.matcher,
                          watch.pending_at_edge, watch.indeterminate, watch.extendable, action)
            if triggers is not None and facts.run is not None and not facts.probe_always:
                # a run-and-literal delimiter takes the run fast path even when its first
                # characters are known: muse_glimmer's `[ \t]*to=...` openers start with a space
                # or a `t`, which nearly every chunk of prose holds (25x the floor),
                # while its literal `to=` is rare
                triggers.update(facts.run.firsts)
                runs.append(facts.run)
            elif triggers is not None and facts.late_chars is not None:
                triggers.update(facts.late_chars)
            else:
                triggers = None
            context = None if context is None or facts.context is None else max(context, facts.context)
            looks_back = None if looks_back is None or facts.looks_back is None else max(looks_back, facts.looks_back)
            for reason in facts.reasons:
                warnings.append(f"field {fields[fi].name!r} {delim.key} {delim.pattern!r}: {reason}; "
                                "its matches are held until no later input can change them (D2)")
            watches.append(watch)
        order = sorted(range(len(watches)), key=lambda k: order_key(watches[k]))
        rank = {k: r for r, k in enumerate(order)}
        ranked_watches = tuple(Watch(w.kind, w.field, w.delimiter, rank[k], w.target, w.matcher,
                                     w.pending_at_edge, w.indeterminate, w.extendable, w.action)
                               for k, w in enumerate(watches))
        # (watches, triggers, heads: filled in below, runs), in State's field order
        if triggers is None:
            return ranked_watches, None, None, ()
        return ranked_watches, "".join(sorted(triggers)), None, tuple(runs)

    def opens_in(region: int | None):
        """The opens watched while ``region`` (None: outside) is current, in declaration order."""
        entries = []
        for fi in explicit:
            f = fields[fi]
            if region is None:
                if f.outside:
                    entries.append(("open", fi, f.open, state_of_field[fi]))
                continue
            for name, how in f.inside:
                if name == fields[region].name:
                    action = {"nest": "nest", "end": "open", "end-if-unclosed": "defer"}[how]
                    entries.append((action, fi, f.open, state_of_field[fi]))
        return entries

    outside_entries = opens_in(None)
    if template.implicit is not None and fields[template.implicit].close is not None:
        outside_entries.append(("close", template.implicit, fields[template.implicit].close, OUTSIDE))
    outside_name = (f"outside (implicit field {fields[template.implicit].name!r})"
                    if template.implicit is not None else "outside (null sink)")
    states = [State(OUTSIDE, template.implicit, outside_name, *ranked(outside_entries))]
    for fi in explicit:
        f = fields[fi]
        entries = []
        if f.close is not None and f.end == "delimiter":
            entries.append(("close", fi, f.close, OUTSIDE))
        entries.extend(opens_in(fi))
        states.append(State(state_of_field[fi], fi, f"region {f.name!r}", *ranked(entries)))
    for fi in after_fields:
        f = fields[fi]
        watches = ranked([("after", fi, f.close, OUTSIDE)])[0]
        # no fast path: the trailing close is decided at the position the value ended
        states.append(State(after_state[fi], fi, f"after the value of {f.name!r}", watches, None))
    states = [State(s.index, s.field, s.name, s.watches, s.triggers, _heads(s.watches), s.runs) for s in states]
    return Automaton(tuple(states), state_of_field, context, tuple(dict.fromkeys(warnings)), after_state,
                     bool(context) and looks_back == 0)


# --- scan plans: what each state's scanner does (template-language.md "Choosing the next delimiter", D2)
# -------------------------------  The emitter writes each plan as the state's records (``_rt.Literal``,
# ``_rt.Pattern``: the facts below, no memo slot) and the runtime writes the scanner from them, giving the memo
# slots in this order (runtime/scanners.py;
# docs/security.md "Declared scanners and named records"); neither decides anything itself. A
# state's scanner looks for every watched delimiter in rank order (each search result kept in a memo slot), collects
# the leftmost start from which the answer could still change (``hold``), and commits the best complete hit only
# when it starts before ``hold``:  * literals (single ones, lists, and lists in which one literal extends another)
# are found with   ``str.find``; the hold for all of them is one question: does the buffer end with a proper
# prefix of any literal of the state? A complete hit never hides such a prefix
# (docs/template-language.md "D2: chunking never changes the result": the   reference's
# alternation does, so ``["ab", "abcd"]`` fed ``"xabc"``, ``"dy"`` closed at ``ab``). * a regex delimiter is
# searched with partial matching; a complete match is final only when its   probe (:func:`edge_probe`) starts after
# it. A complete match that ends at the edge of the   buffer still waits, as in the reference. A pattern without a
# sound probe holds the state's   text until the end of stream.


@dataclass(frozen=True)
class LiteralFind:
    """Find one literal with ``str.find`` (memo slot ``slot`` keeps the offset).

    ``group`` (int | None): index into :attr:`ScanPlan.groups` when the literal shares a common
    prefix with two or more other literals of the state: that prefix is found once, and the
    literal only from there (none at all without it).
    """

    text: str
    rank: int
    slot: int
    comment: str
    group: int | None = None


@dataclass(frozen=True)
class RegexFind:
    """Search one regex delimiter (compiled as ``regexes[regex]``).

    Attributes:
        regex (int): index into :attr:`ScanPlans.regexes`.
        rank (int): tie-break rank in the state.
        slot (int | None): memo slot of the search result; None when it must not be reused
            (``\\G`` depends on where a search starts).
        probe (int | None): index into :attr:`ScanPlans.probes`; None: no sound probe, so the
            state's text is held until the end of stream.
        probe_slot (int | None): memo slot of the probe's result (None: not reused).
        probe_always (bool): ask the probe on every search before the end of stream, not only
            after a complete match (the probe rewrote end-sensitive assertions).
        comment (str): what it is, for the generated code.
        prefilter (bool): before probing a complete match at ``i``, find the leftmost start
            whose paths reach ``i`` with the delimiter's own partial search of ``buf[pos:i]``
            (only starts from there can touch the end). Chosen when the pattern has a literal
            lead, which makes that search quick; without one the probe starts at ``pos``.
        factor (Factor | None): a literal every match contains, found with ``str.find`` first
            (memo slot ``factor_slot``): without it from ``pos`` there is no complete match, and
            the partial search starts where :class:`Factor` says a partial match can start.
            Only for patterns with a memo slot and a probe that is not asked on every search.
        back (int | None): index into :attr:`ScanPlans.backs`: the reverse search for the last
            character the part before the factor cannot consume (None: ``factor.reach`` alone).
        window_slot (int | None): memo slot of the D2 check of a complete match before the
            buffer's end (the probe over a window past it, and the prefilter's ``j``), reused
            while the same match stands: a later start has the same answer until it passes the
            recorded start (every scan asked it again over the text up to the match otherwise, a
            quadratic cost in recover mode: gpt_oss's headers before a call far ahead).
        back_slot (int | None): memo slot of that search's result ``(x, lo, end)``: the same
            factor position ``x`` and a start at or after ``lo`` give the same answer, so a run of
            characters the part before the factor can consume is searched once per buffer, not
            once per scan (a quadratic cost otherwise: gpt_oss over ``"<|start|>assistant" * n``).
    """

    regex: int
    rank: int
    slot: int | None
    probe: int | None
    probe_slot: int | None
    probe_always: bool
    comment: str
    prefilter: bool = False
    factor: Factor | None = None
    factor_slot: int | None = None
    back: int | None = None
    back_slot: int | None = None
    window_slot: int | None = None


@dataclass(frozen=True)
class LiteralHold:
    """Hold text from the leftmost offset where the buffer ends in a proper prefix of a literal.

    Attributes:
        prefixes (tuple[str, ...] | None): every non-empty proper prefix of the state's literals,
            sorted; None when they would total more than :data:`PREFIX_TABLE_BUDGET` characters
            (then :attr:`literals` stands for them: ``runtime.LiteralPrefixes``).
        firsts (str): their distinct first characters, sorted.
        span (int): the longest prefix length (offsets before ``len(buf) - span`` cannot hold).
        literals (tuple[str, ...]): the state's distinct literals, in rank order.
    """

    prefixes: tuple[str, ...] | None
    firsts: str
    span: int
    literals: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScanPlan:
    """The scanner of one state.

    Attributes:
        state (int): the state's index.
        label (str): the state's readable name.
        finds (tuple[LiteralFind | RegexFind, ...]): the searches, in rank order.
        hold (LiteralHold | None): the literals' partial matches, None without literals.
        groups (tuple[tuple[str, int], ...]): (common prefix, memo slot) of each group of three or
            more literals with the same first character (one ``str.find`` for all).
    """

    state: int
    label: str
    finds: tuple
    hold: LiteralHold | None
    groups: tuple = ()

    @property
    def has_regex(self) -> bool:
        """Whether some search is a regex one (then the scanner returns a match object)."""
        return any(isinstance(f, RegexFind) for f in self.finds)

    @property
    def literals(self) -> tuple[str, ...] | None:
        """The state's literal delimiters (distinct, in rank order) when it watches literals only,
        else None. Then the fast path may decide held text itself (runtime ``HOLD_LITERALS``): no
        literal in it, the scanner's answer is the leftmost proper prefix of one ending it."""
        if self.hold is None or self.has_regex:
            return None
        return tuple(dict.fromkeys(f.text for f in self.finds))


@dataclass(frozen=True)
class ScanPlans:
    """The scan plans of every state and the module-level data they share.

    Attributes:
        plans (tuple[ScanPlan, ...]): one per state, in state order.
        regexes (tuple[tuple[str, str], ...]): (pattern, comment) of each compiled delimiter.
        probes (tuple[tuple[str, str], ...]): (probe source, comment) of each compiled probe.
        memo_slots (int): how many memo slots the scanners use.
        backs (tuple[tuple[str, str], ...]): (source, comment) of each reverse search of a
            factor's ``before_class`` (``(?r)[^...]``: the last character outside it).
        window (int): characters past a complete match over which its probe is asked first. A
            probe that finds nothing there finds nothing in the whole buffer either (a path that
            reaches the buffer's end passes the window's), so a whole text with many delimiters is
            not searched to its end once per delimiter.
    """

    plans: tuple
    regexes: tuple
    probes: tuple
    memo_slots: int
    window: int = 64
    backs: tuple = ()
    #: per entry of ``regexes``, then per entry of ``probes``: ``(field name, template key)`` of
    #: its delimiter (what a search that runs out of time names, runtime ``BoundedPattern``)
    labels: tuple = ()
    probe_labels: tuple = ()


def _describe_delimiter(delim: Delimiter) -> str:
    if delim.literals is not None:
        return " | ".join(repr(x) for x in delim.literals)
    return f"/{delim.pattern!r}/"


def plan_scans(template: Template, automaton: Automaton) -> ScanPlans:
    """Decide every scanner's searches, memo slots and holds (see the comment above).

    Args:
        template: the IR (for field names in comments).
        automaton: its region automaton.

    Returns:
        ScanPlans: the plans, in state order, and the delimiters and probes they compile.
    """
    regexes: list[tuple[str, str]] = []
    probes: list[tuple[str, str]] = []
    regex_index: dict[tuple[int, str], int] = {}
    probe_index: dict[tuple[int, str], int] = {}
    backs: list[tuple[str, str]] = []
    back_index: dict[str, int] = {}
    labels: list[tuple[str, str]] = []
    probe_labels: list[tuple[str, str]] = []
    slots = 0
    plans = []
    for state in automaton.states:
        finds: list = []
        literals: list[str] = []
        for w in sorted(state.watches, key=lambda w: w.rank):
            comment = f"{w.kind} of {template.fields[w.field].name!r}: {_describe_delimiter(w.delimiter)}"
            if w.delimiter.literals is not None:
                for text in w.delimiter.literals:
                    finds.append(LiteralFind(text, w.rank, slots, comment))
                    slots += 1
                literals.extend(w.delimiter.literals)
                continue
            facts = classify_pattern(w.delimiter.pattern)
            key = (w.field, w.delimiter.key)
            if key not in regex_index:
                regex_index[key] = len(regexes)
                regexes.append((w.delimiter.pattern, comment + (" (indeterminate, D2)" if facts.indeterminate else "")))
                labels.append((template.fields[w.field].name, w.delimiter.key))
            probe = None
            if facts.probe is not None:
                if key not in probe_index:
                    probe_index[key] = len(probes)
                    probes.append((facts.probe, "probe of " + comment))
                    probe_labels.append((template.fields[w.field].name, w.delimiter.key))
                probe = probe_index[key]
            reuse = "\\G" not in w.delimiter.pattern
            slot = probe_slot = window_slot = None
            if reuse:
                slot = slots
                slots += 1
                if probe is not None:
                    probe_slot = slots
                    window_slot = slots + 1
                    slots += 2
            # the prefilter reads the pattern's own partial match, which misjudges assertions at
            # the truncation point: not for patterns whose probe rewrote them
            prefilter = bool(facts.lead) and not facts.probe_always
            factor = factor_slot = back = back_slot = None
            if facts.factor is not None and slot is not None and probe is not None and not facts.probe_always:
                factor = facts.factor
                factor_slot = slots
                slots += 1
                if factor.before_class is not None:
                    source = "(?r)[^" + factor.before_class[1:]
                    if source not in back_index:
                        back_index[source] = len(backs)
                        backs.append((source, f"the last character before {factor.text!r} that "
                                              f"/{w.delimiter.pattern!r}/ cannot consume before it"))
                    back = back_index[source]
                    back_slot = slots
                    slots += 1
            finds.append(RegexFind(regex_index[key], w.rank, slot, probe, probe_slot, facts.probe_always, comment,
                                   prefilter, factor, factor_slot, back, back_slot, window_slot))
        groups: list[tuple[str, int]] = []
        by_first: dict[str, list[str]] = {}
        for f in finds:
            if isinstance(f, LiteralFind):
                by_first.setdefault(f.text[0], []).append(f.text)
        group_of: dict[str, int] = {}
        for first, texts in by_first.items():
            if len(set(texts)) >= 3:
                common = texts[0]
                for text in texts[1:]:
                    while not text.startswith(common):
                        common = common[:-1]
                group_of[first] = len(groups)
                groups.append((common, slots))
                slots += 1
        finds = [LiteralFind(f.text, f.rank, f.slot, f.comment, group_of.get(f.text[0]))
                 if isinstance(f, LiteralFind) else f for f in finds]
        hold = None
        distinct = tuple(dict.fromkeys(literals))
        longer = [lit for lit in distinct if len(lit) > 1]
        if longer:
            # sum of the prefix lengths of a literal of n characters: n(n-1)/2
            if sum(len(lit) * (len(lit) - 1) // 2 for lit in longer) <= PREFIX_TABLE_BUDGET:
                prefixes = tuple(sorted({lit[:k] for lit in longer for k in range(1, len(lit))}))
            else:
                prefixes = None
            hold = LiteralHold(prefixes, "".join(sorted({lit[0] for lit in longer})),
                               max(len(lit) for lit in longer) - 1, distinct)
        plans.append(ScanPlan(state.index, state.name, tuple(finds), hold, tuple(groups)))
    return ScanPlans(tuple(plans), tuple(regexes), tuple(probes), slots, backs=tuple(backs), labels=tuple(labels),
                     probe_labels=tuple(probe_labels))
