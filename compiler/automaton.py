"""Pass 3: the region automaton (SPEC sections 4.1-4.3, 8 and deviation D2).

Theory of operation
-------------------
The parser is always in one *state*: ``OUTSIDE`` (the implicit field, or the null sink when the
template has none) or inside one explicit field's region. Each state watches a fixed, ordered set of
delimiters (its *watch set*, SPEC 4.2): outside, every explicit open in declaration order plus the
implicit field's own close; inside a region, only that region's close. Committing a delimiter is a
*transition*: an open moves to that field's state, a close moves back to ``OUTSIDE``.

Template language v2 adds explicit transition actions. A field's open may also be watched inside
other regions (``inside``): ``nest`` suspends the current region (it resumes when the nested one
closes, so the parser keeps a stack of suspended regions), ``open`` closes it first. A field that
ends at its value (``"end": "value"``) has no close in its own watch set; its optional trailing
close gets a small *after* state that only looks at the position where the value ended.

When two complete hits start at the same offset with the same length, SPEC 4.3 breaks the tie by
"opens before closes, then field name"; that order never changes at run time, so each watched
delimiter gets a precomputed *rank* and the emitted scanner compares ranks, not names.

Every delimiter is also classified once here:

* ``literal`` -- literal strings none of which is a prefix of another: each found with
  ``str.find``; a partial match (a proper prefix of one at the end of the buffer) is decided from
  precomputed prefix sets. A list behaves like the reference's alternation: leftmost, then longest.
* ``regex`` -- a pattern or a literal list that can extend, searched with the ``regex`` module's partial matching
  exactly like the reference. A complete match ending at the buffer edge is *pending* when more
  input could still change it: always for patterns and for literal lists that can extend.
* ``indeterminate`` (D2) -- a pattern whose complete match can change with later input even when
  it ends before the buffer edge: an end anchor (``$``, ``\\Z``), a negative lookahead or one that
  tests for the end of the text, or an unbounded greedy repeat whose characters overlap what may
  follow it (``<call name=(?P<n>.*)>``). Its complete matches stay pending until end of stream.
  A positive lookahead that only looks at characters (``functools(?=\\[)``) is not: once it
  matched, appending text cannot undo that, and a lookahead cut off by the buffer edge is a
  partial match, held like any other.
* ``extendable`` (D2) -- a pattern with a greedy bounded repeat (``(?:<think>)?``): a complete
  match is also held while the rest of the buffer could still continue it from the same start.

Finally the automaton records how much already-decided text the regex delimiters must still see
(``context``): one character for ``^``/``\\A``/``\\b``/``\\B`` (so they cannot fire at a trimmed
buffer start), the width of a bounded lookbehind, or everything (None) for unbounded lookbehinds
and patterns the analysis cannot read. The generated parser trims its buffer only down to that.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as _dc_field

try:  # Python 3.11+
    from re import _constants as sre_c
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

from .ir import Delimiter, Template

__all__ = ["ACTIONS", "Watch", "State", "Automaton", "build_automaton", "classify_pattern", "PatternFacts"]

OUTSIDE = 0
#: transition actions (see build_automaton)
ACTIONS = ("open", "nest", "close", "after", "defer")


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
    """

    indeterminate: bool
    context: int | None
    reasons: tuple[str, ...] = ()
    extendable: bool = False
    first_chars: str | None = None
    lead: str = ""


@dataclass(frozen=True)
class Watch:
    """One watched delimiter of one state.

    Attributes:
        kind (str): ``"open"`` or ``"close"``.
        field (int): index of the field whose delimiter it is.
        delimiter (Delimiter): the delimiter.
        rank (int): tie-break rank inside the state (lower wins; SPEC 4.3).
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
        watches (tuple[Watch, ...]): in declaration order (SPEC 4.2).
        triggers (str | None): every character a watched delimiter (or a partial match of one)
            can start with; a chunk holding none of them, arriving with nothing held, is plain
            region text (the parser's fast path). None when some delimiter's first characters
            are unknown.
        pairs (tuple[str, ...] | None): when every watched delimiter is a literal of two or more
            characters, their distinct first two characters: a trigger followed by anything else
            cannot start a delimiter, so the fast path still applies. None otherwise.
    """

    index: int
    field: int | None
    name: str
    watches: tuple[Watch, ...]
    triggers: str | None = None
    pairs: tuple[str, ...] | None = None


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
    """

    states: tuple[State, ...]
    state_of_field: dict
    context: int | None
    warnings: tuple[str, ...]
    after_state: dict = _dc_field(default_factory=dict)


# --- regex analysis -------------------------------------------------------------------------

_SAMPLES = "aZ0_ \n\t\r-.,:;\"'<>{}[]()/\\|=+*?!@#$%^&`~é中\x00\x01"
_MAXREPEAT = sre_c.MAXREPEAT


class _Unknown(Exception):
    """The analysis met a construct it does not model; the caller falls back to 'conservative'."""


def _category_has(cat, c: str) -> bool:
    name = str(cat)
    word = c.isalnum() or c == "_"
    table = {
        "CATEGORY_DIGIT": c.isdecimal(), "CATEGORY_NOT_DIGIT": not c.isdecimal(),
        "CATEGORY_SPACE": c.isspace(), "CATEGORY_NOT_SPACE": not c.isspace(),
        "CATEGORY_WORD": word, "CATEGORY_NOT_WORD": not word,
        "CATEGORY_LINEBREAK": c == "\n", "CATEGORY_NOT_LINEBREAK": c != "\n",
    }
    if name not in table:
        raise _Unknown(name)
    return table[name]


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
    out = _CharSet()
    for op, av in seq:
        if op in _CHAR_OPS:
            out = out | _CharSet([(op, av)])
        elif op is sre_c.SUBPATTERN:
            out = out | _all_chars(av[-1])
        elif op is _ATOMIC and _ATOMIC is not None:
            out = out | _all_chars(av)
        elif op is sre_c.BRANCH:
            for alt in av[1]:
                out = out | _all_chars(alt)
        elif op in _REPEAT_OPS:
            out = out | _all_chars(av[2])
        elif op is sre_c.GROUPREF_EXISTS:
            out = out | _all_chars(av[1]) | (_all_chars(av[2]) if av[2] is not None else _EMPTY)
        elif op is sre_c.GROUPREF:
            out = out | _ANY
    return out


def _first_item(op, av):
    """(first-character set, can match empty) of one item of an sre tree."""
    if op in _CHAR_OPS:
        return _CharSet([(op, av)]), False
    if op is sre_c.SUBPATTERN:
        return _seq_first(av[-1])
    if op is _ATOMIC and _ATOMIC is not None:
        return _seq_first(av)
    if op is sre_c.BRANCH:
        out, nullable = _CharSet(), False
        for alt in av[1]:
            first, empty = _seq_first(alt)
            out, nullable = out | first, nullable or empty
        return out, nullable
    if op in _REPEAT_OPS:
        first, nullable = _seq_first(av[2])
        return first, nullable or av[0] == 0
    if op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
        return _CharSet(), True
    if op is sre_c.GROUPREF_EXISTS:
        a = _seq_first(av[1])
        b = _seq_first(av[2]) if av[2] is not None else (_CharSet(), True)
        return a[0] | b[0], a[1] or b[1]
    if op is sre_c.GROUPREF:
        return _ANY, True
    raise _Unknown(str(op))


def _seq_first(seq):
    """(first-character set, can match empty) of a sequence of sre items."""
    out = _CharSet()
    for op, av in seq:
        first, nullable = _first_item(op, av)
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
        elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
            direction, sub = av
            if direction == 1 and (op is sre_c.ASSERT_NOT or not _monotone(sub)):
                facts["reasons"].append("a negative lookahead, or one that tests for the end of the text, "
                                        "can change with later input")
            elif direction != 1:
                width = sub.getwidth()[1]
                facts["context"] = None if width >= _MAXREPEAT else _more(facts["context"], width)
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


def classify_pattern(pattern: str) -> PatternFacts:
    """Classify one regex delimiter for D2 and for buffer trimming (see module docstring).

    Args:
        pattern: the regex source (``regex`` module syntax).

    Returns:
        PatternFacts: indeterminate or not, the context it needs, and why. A pattern the analysis
        cannot read (``regex``-only syntax) is treated conservatively: indeterminate, full context.
    """
    try:
        tree = sre_parse.parse(pattern, sre_c.SRE_FLAG_DOTALL)
        facts = {"reasons": [], "context": 0, "extendable": False}
        _walk(tree, (), facts)
    except (_Unknown, Exception):
        return PatternFacts(True, None, ("the compiler cannot analyse this pattern",))
    reasons = tuple(dict.fromkeys(facts["reasons"]))
    return PatternFacts(bool(reasons), facts["context"], reasons, facts["extendable"], _first_chars(tree),
                        "" if _ignores_case(tree) else _lead(tree))


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


def _ignores_case(tree) -> bool:
    if tree.state.flags & sre_c.SRE_FLAG_IGNORECASE:
        return True
    stack = [tree]
    while stack:
        for op, av in stack.pop():
            if op is sre_c.SUBPATTERN:
                if av[1] & sre_c.SRE_FLAG_IGNORECASE:
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
    return False


def _first_chars(tree) -> str | None:
    """The characters a match can start with, when that is a small finite set of literals."""
    if _ignores_case(tree):
        return None
    try:
        first, nullable = _seq_first(tree)
    except _Unknown:
        return None
    if nullable or first.anything:
        return None
    chars = set()
    for op, av in first.items:
        if op is sre_c.LITERAL:
            chars.add(chr(av))
        elif op is sre_c.IN and all(o is sre_c.LITERAL for o, _ in av):
            chars.update(chr(a) for _, a in av)
        else:
            return None
    return "".join(sorted(chars))


# --- the automaton ----------------------------------------------------------------------------

def _watch(kind: str, field_index: int, delim: Delimiter, target: int) -> tuple[Watch, PatternFacts]:
    if delim.literals is not None:
        facts = PatternFacts(False, 0, first_chars="".join(sorted({lit[0] for lit in delim.literals})))
        if not delim.can_extend:
            return Watch(kind, field_index, delim, 0, target, "literal", False, False), facts
        return Watch(kind, field_index, delim, 0, target, "regex", True, False), facts
    facts = classify_pattern(delim.pattern)
    return Watch(kind, field_index, delim, 0, target, "regex", True, facts.indeterminate, facts.extendable), facts


def _pairs(watches: tuple[Watch, ...]) -> tuple[str, ...] | None:
    """First two characters of every watched delimiter, or None when one of them has no such pair."""
    pairs = set()
    for w in watches:
        if w.delimiter.literals is not None:
            starts = [lit[:2] for lit in w.delimiter.literals]
        else:
            starts = [classify_pattern(w.delimiter.pattern).lead[:2]]
        if any(len(start) < 2 for start in starts):
            return None
        pairs.update(starts)
    return tuple(sorted(pairs))


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
    warnings: list[str] = []

    def order_key(w: Watch):
        # SPEC 4.3: opens before closes, then field name; v2 breaks ties in declaration order.
        second = fields[w.field].name if template.version < 2 else w.field
        return (0 if w.kind == "open" else 1, second)

    def ranked(entries):
        nonlocal context
        watches = []
        triggers: set[str] | None = set()
        for action, fi, delim, target in entries:
            kind = "open" if action in ("open", "nest", "defer") else "close"
            watch, facts = _watch(kind, fi, delim, target)
            watch = Watch(watch.kind, watch.field, watch.delimiter, 0, watch.target, watch.matcher,
                          watch.pending_at_edge, watch.indeterminate, watch.extendable, action)
            if triggers is not None and facts.first_chars is not None:
                triggers.update(facts.first_chars)
            else:
                triggers = None
            context = None if context is None or facts.context is None else max(context, facts.context)
            for reason in facts.reasons:
                warnings.append(f"field {fields[fi].name!r} {delim.key} {delim.pattern!r}: {reason}; "
                                "its matches are held until no later input can change them (D2)")
            watches.append(watch)
        order = sorted(range(len(watches)), key=lambda k: order_key(watches[k]))
        rank = {k: r for r, k in enumerate(order)}
        ranked_watches = tuple(Watch(w.kind, w.field, w.delimiter, rank[k], w.target, w.matcher,
                                     w.pending_at_edge, w.indeterminate, w.extendable, w.action)
                               for k, w in enumerate(watches))
        return ranked_watches, (None if triggers is None else "".join(sorted(triggers)))

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
        watches, _ = ranked([("after", fi, f.close, OUTSIDE)])
        # no fast path: the trailing close is decided at the position the value ended
        states.append(State(after_state[fi], fi, f"after the value of {f.name!r}", watches, None))
    states = [State(s.index, s.field, s.name, s.watches, s.triggers, _pairs(s.watches)) for s in states]
    return Automaton(tuple(states), state_of_field, context, tuple(dict.fromkeys(warnings)), after_state)
