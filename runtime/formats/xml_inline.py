"""The ``xml-inline`` format: parameters matched by a ``tag_pattern`` regex with groups ``key`` and ``value``
(template-language.md "Content parsers")."""

from __future__ import annotations

import functools
import json
import zlib
from collections.abc import Callable
from typing import Any

import regex

from ..content import _REGEX_ERRORS, ContentParser, _failing, _grammar_any, _make_value_parser, group_end
from ..errors import ContentParseError
from ..repair import NOTES
from .base import (REPARSE, ArgumentStream, Format, InsideReader, Plan, Problems, call_shape, calls_of, escaped, function_of, is_tool_field,
                   open_scope, unmatched_problems, value_parser_problems)
from .json_ import Converted, JsonStream, _Quoted

#: the value group a ``tag_pattern`` must have (once) for its values to stream as written
VALUE_GROUP = "(?P<value>.*?)"


def check(args: dict, where: str = "content_args") -> Problems:
    """Load-time checks of xml-inline's ``content_args``."""
    pattern = args.get("tag_pattern")
    if not isinstance(pattern, str):
        return [("", "xml-inline needs 'tag_pattern', a regex string with groups 'key' and 'value'")]
    try:
        compiled = regex.compile(pattern, regex.DOTALL)
    except _REGEX_ERRORS as exc:
        return [("tag_pattern", f"invalid {where}.tag_pattern regex {pattern!r}: {exc}")]
    if "key" not in compiled.groupindex:
        return [("", f"xml-inline tag_pattern {pattern!r} has no named group 'key'")]
    groups = tuple(sorted(compiled.groupindex, key=compiled.groupindex.__getitem__))
    return unmatched_problems(args) + _recover_problems(args, where, compiled) + value_parser_problems(args, where, groups)


def _recover_problems(args: dict, where: str, compiled: regex.Pattern) -> Problems:
    """``recover_tag_pattern`` (template-language.md "xml-inline"): a regex with the very named groups of
    ``tag_pattern`` (the value parser and the transform read them), not ``tag_pattern`` itself."""
    if "recover_tag_pattern" not in args:
        return []
    pattern = args["recover_tag_pattern"]
    if not isinstance(pattern, str) or not pattern:
        return [("recover_tag_pattern", f"{where}.recover_tag_pattern must be a non-empty regex string, "
                                        f"got {pattern!r}")]
    if pattern == args["tag_pattern"]:
        return [("recover_tag_pattern", f"{where}.recover_tag_pattern is tag_pattern itself")]
    try:
        recover = regex.compile(pattern, regex.DOTALL)
    except _REGEX_ERRORS as exc:
        return [("recover_tag_pattern", f"invalid {where}.recover_tag_pattern regex {pattern!r}: {exc}")]
    if set(recover.groupindex) != set(compiled.groupindex):
        return [("recover_tag_pattern", f"{where}.recover_tag_pattern must have the named groups of tag_pattern "
                                        f"{sorted(compiled.groupindex)}, got {sorted(recover.groupindex)}")]
    return []


def _split(pattern: str) -> tuple[regex.Pattern, str] | None:
    """The compiled text before the value group and the text after it, when the pattern has the value group
    once and the part before it has the ``key`` group."""
    if pattern.count(VALUE_GROUP) != 1:
        return None
    before, after = pattern.split(VALUE_GROUP)
    try:
        opening = regex.compile(linear_source(before), regex.DOTALL)
    except _REGEX_ERRORS:
        return None
    return (opening, after) if "key" in opening.groupindex else None


def lenient(args: dict) -> dict | None:
    """The arguments that read a body still being written, which may end in a cut-off tag
    (``"unmatched": "skip"``); None when ``args`` already read it so."""
    return {**args, "unmatched": "skip"} if args.get("unmatched", "error") != "skip" else None


def plan(field) -> Plan:
    """Only its closer ends it; an empty body reads as ``{}``. A tool field named by an open-delimiter group
    whose arguments are the body streams them: ``xml-tree`` values (MiniMax-M3: ``CLOSE`` names the key by
    ``(?P=key)``, duplicates merged) as nested JSON, parameters with one lazy value group (``OPEN(?P<value>.*?)
    CLOSE``, no group after it, no ``merge_duplicates``) converted as written, any other body parameter by
    parameter."""
    if not is_tool_field(field):
        return Plan("xml-inline")
    shape = call_shape(field)
    if shape is None or shape.each or shape.arguments != ("body",) or shape.name is None or shape.name[0] != "group":
        return Plan("xml-inline")
    args = field.content_args
    group = shape.name[1]
    pattern = args.get("tag_pattern")
    spec = args.get("value_parser")
    split = _split(pattern) if isinstance(pattern, str) else None
    if isinstance(spec, dict) and spec.get("name") == "xml-tree":
        tree = spec.get("args") or {}
        if (split is not None and split[1].count("(?P=key)") == 1 and args.get("merge_duplicates") is True
                and isinstance(tree.get("tag_prefix", ""), str) and isinstance(tree.get("item_tag", "item"), str)):
            return Plan("xml-inline", arguments="xml-tree", call="args", name_group=group)
        return Plan("xml-inline")
    if split is not None and not args.get("merge_duplicates"):
        try:
            closing = regex.compile(split[1], regex.DOTALL)
        except _REGEX_ERRORS:
            closing = None
        switch = spec.get("switch") if isinstance(spec, dict) else None
        if closing is not None and not closing.groups and (switch is None or switch in split[0].groupindex):
            return Plan("xml-inline", arguments="xml-parameters", call="args", name_group=group)
    return Plan("xml-inline", arguments="per-parameter", call="args", name_group=group)


# ------------------------------------------------------------------------------------------------
# The argument reader: an xml-inline tool body converted to JSON text as it is written (plan
# ``"xml-parameters"``; the OpenAI adapter sends the pieces, docs/formats.md "Argument readers").

#: raw values a string parameter must keep unchanged (its value parser and tool type leave them)
STRING_SAMPLES = ("a", "0", "1", "-2", "1.5", "true", "False", "null", "None", "[1]", "{}", '{"a": 1}', '"a"')


#: ``json.dumps(value, ensure_ascii=False)`` without building an encoder per call
_dumps = json.JSONEncoder(ensure_ascii=False).encode
#: the same for one string (the json module's C string encoder)
_dumps_str = json.encoder.encode_basestring


def stream_plan(args: dict) -> tuple | None:
    """The stream plan of an xml-inline tool region whose format plan is ``"xml-parameters"``
    (:func:`plan` checked its ``tag_pattern``: one lazy ``(?P<value>.*?)`` group, the ``key`` group
    before it, no group after it), built from its ``content_args``.

    Returns:
        ``(pattern, opening, closing, value_parser, switch, before, open_at, close_at)``: the compiled
        ``tag_pattern``, the text before and after its value (DOTALL, as ``runtime.content`` compiles them; a
        partial match of the whole pattern does not report reliable group spans, so the opening is matched on
        its own), the ``value_parser`` as ``runtime.content`` builds it (``(raw, selector) -> value`` or None),
        its switch group, the opening's source, and where the opening and the closing may begin
        (:class:`_Starts`, None when not known: the reader then searches partially from the start); None when
        a pattern does not compile.
    """
    pattern = args["tag_pattern"]
    try:
        full = _compile_tag_pattern(pattern)
        before, after = pattern.split(VALUE_GROUP)
        opening = regex.compile(linear_source(before), regex.DOTALL)
        closing = regex.compile(linear_closing(after), regex.DOTALL)
    except (regex.error, TypeError, ValueError):
        return None
    value_parser, switch = _make_value_parser(args.get("value_parser"))
    return (full, opening, closing, value_parser, switch, before, _starts(before, False), _starts(after, True))


# Where a tag may begin. A ``partial=True`` search of the ``regex`` module costs about 1.2 µs whatever the text
# (a plain one 0.1 µs), so the reader asks it only from the first place a tag can begin: the opening's or
# closing's first characters, read from the pattern's syntax tree (Python's own parser of the same syntax; a
# pattern it cannot read, or whose first characters are not a small set of literal characters, is searched
# partially from the start as before).

def _first(items: Any) -> tuple[frozenset | None, bool]:
    """The characters a match of the sequence ``items`` (an ``re`` syntax tree) can begin with, and whether it
    can match the empty text; ``(None, False)`` when not a small set of literal characters."""
    chars: set[str] = set()
    for op, av in items:
        got, empty = _first_one(str(op), av)
        if got is None:
            return None, False
        chars |= got
        if not empty:
            return frozenset(chars), False
    return frozenset(chars), True


def _first_one(op: str, av: Any) -> tuple[set | frozenset | None, bool]:
    if op == "LITERAL":
        return {chr(av)}, False
    if op == "IN":
        out = set()
        for o, a in av:
            if str(o) == "LITERAL":
                out.add(chr(a))
            elif str(o) == "RANGE" and a[1] - a[0] < 64:
                out.update(chr(c) for c in range(a[0], a[1] + 1))
            else:
                return None, False
        return out, False
    if op == "SUBPATTERN":
        _group, add, remove, items = av
        return (None, False) if add or remove else _first(items)
    if op == "ATOMIC_GROUP":
        return _first(av)
    if op == "BRANCH":
        out, empty = set(), False
        for items in av[1]:
            got, nullable = _first(items)
            if got is None:
                return None, False
            out |= got
            empty = empty or nullable
        return out, empty
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        low, _high, items = av
        got, empty = _first(items)
        return (None, False) if got is None else (got, empty or low == 0)
    return None, False


#: a run of whitespace as the ``regex`` module's ``\s`` reads it (``str.isspace`` takes a few more characters)
_SPACES = regex.compile(r"\s*")


class _Starts:
    """Where a match of part of a ``tag_pattern`` may begin: a character of ``lead`` (found by ``str.find`` or a
    plain character-class search) where the text agrees with ``literal`` (the literal text every match starts
    with there, maybe ""), after a run of up to ``most`` characters ``run`` (``"\\s"``: whitespace; "" none) the
    closing may begin with (``\\n?``, ``\\s*``); ``tail``: the literal text every match of the opening ends with
    (but for optional parts after it), "" when not known."""

    __slots__ = ("lead", "one", "search", "literal", "run", "most", "tail")

    def __init__(self, lead: frozenset, literal: str, run: str, most: int, tail: str = "") -> None:
        import re

        self.lead = lead
        self.one = next(iter(lead)) if len(lead) == 1 else None
        self.search = re.compile("[" + "".join(re.escape(c) for c in sorted(lead)) + "]").search
        self.literal = literal
        self.run = run
        self.most = most
        self.tail = tail

    def first(self, text: str, at: int = 0) -> tuple[int, bool]:
        """The first place from ``at`` a match can begin with its ``lead`` character, and whether the text from
        there is shorter than ``literal`` (then only a partial match can begin there); ``(-1, False)`` when
        none."""
        literal = self.literal
        size = len(literal)
        one = self.one
        while True:
            if one is not None:
                at = text.find(one, at)
            else:
                m = self.search(text, at)
                at = -1 if m is None else m.start()
            if at < 0:
                return -1, False
            seg = text[at:at + size]
            if literal.startswith(seg):
                return at, len(seg) < size
            at += 1

    def back(self, text: str, end: int, known: int = 0) -> tuple[int, bool]:
        """Where the run the closing may begin with, ending at ``end``, starts (at most ``most`` characters),
        and whether that is exact (False: a run of ``str.isspace`` characters not all ``\\s``; the place is then
        a lower bound); ``text[:known]`` is known to be such a run (only the rest is read)."""
        run = self.run
        if not run or end == 0:
            return end, True
        head = text[known:end]
        start = len(head.rstrip()) if run == "\\s" else len(head.rstrip(run))
        # (all of the text from ``known`` is run: it goes on into the text known to be one)
        start = known + start if start else 0
        if start == end:
            return end, True
        if run == "\\s" and _SPACES.fullmatch(text, max(start, known), end) is None:
            return max(start, known), False
        return max(start, end - self.most), True


def _starts(source: str, closing: bool) -> "_Starts | None":
    """The :class:`_Starts` of the opening (``closing`` False) or closing source of a ``tag_pattern``; None when
    its first characters cannot be told (the reader then searches partially from the start)."""
    import re
    try:
        import re._parser as parser
    except ImportError:  # pragma: no cover - Python before 3.11
        import sre_parse as parser  # type: ignore[no-redef]
    import warnings
    try:
        with warnings.catch_warnings():
            # a warning marks syntax the two modules read differently (``[[:punct:]]``: a POSIX class to
            # ``regex``, a nested set to ``re``): not read here
            warnings.simplefilter("error")
            tree = parser.parse(source)
    except Exception:  # noqa: BLE001 - syntax only the regex module reads
        return None
    if tree.state.flags & (re.IGNORECASE | re.VERBOSE):
        return None
    items = list(tree)
    run, most = "", 0
    if closing and items and str(items[0][0]) == "MAX_REPEAT":
        low, high, inner = items[0][1]
        inner = list(inner)
        if low == 0 and len(inner) == 1:
            op, av = inner[0]
            if str(op) == "LITERAL":
                run, most = chr(av), high
            elif str(op) == "IN" and len(av) == 1 and str(av[0][0]) == "CATEGORY" and \
                    str(av[0][1]) == "CATEGORY_SPACE":
                run, most = "\\s", high
            if run:
                items = items[1:]
    lead, empty = _first(items)
    if lead is None or empty or not lead:
        return None
    if run and (run in lead if run != "\\s" else any(c.isspace() for c in lead)):
        return None
    literal = []
    for op, av in items:
        if str(op) != "LITERAL":
            break
        literal.append(chr(av))
    tail: list[str] = []
    if not closing:
        rest = items[:]
        while rest and _first(rest[-1:]) [1]:
            rest.pop()  # optional parts at the end (``\\n?``, ``(?:<!\\[CDATA\\[)?``)
        while rest and str(rest[-1][0]) == "LITERAL":
            tail.insert(0, chr(rest.pop()[1]))
    return _Starts(lead, "".join(literal), run, most, "".join(tail))


@functools.lru_cache(maxsize=1024)
def _pinned(before: str, key: str) -> Any:
    """The opening pattern ``before`` of a ``tag_pattern`` with its ``key`` group matching only ``key``
    (compiled, DOTALL), or None when the group cannot be found: used to ask whether an opening already
    matched may still grow (an optional ``<![CDATA[`` after it) without its key group taking the rest of
    the text."""
    start = before.find("(?P<key>")
    if start < 0:
        return None
    end = group_end(before, start)
    try:
        return regex.compile(before[:start] + "(?P<key>" + regex.escape(key) + ")" + before[end:], regex.DOTALL)
    except regex.error:
        return None


def string_strip(value: Callable[[str], Any]) -> tuple | None:
    """How a parameter streams, given ``value(raw)``, its value as the message stores it (value parser, then
    tool type): ``(lstrip, rstrip)`` when its value stays the raw text (whitespace stripped at the ends as
    the flags say), None when the value parser or tool type may change it (it is held until complete).
    Decided by running ``value`` on :data:`STRING_SAMPLES`."""
    try:
        if any(value(raw) != raw for raw in STRING_SAMPLES):
            return None
        left, right, both = value(" \n a"), value("a \n "), value(" a ")
        got = (left == "a", right == "a")
        if left not in (" \n a", "a") or right not in ("a \n ", "a") or both != " a "[got[0]:3 - got[1]]:
            return None
        return got
    except Exception:  # noqa: BLE001 - a value parser that fails on a sample: typed, held
        return None


class _Param:
    """The parameter an :class:`ArgumentReader` is in: its key, how it streams, what was sent of it."""

    __slots__ = ("key", "selector", "strip", "head", "raw", "started", "pending")

    def __init__(self, key: str, selector: str | None, strip: tuple | None, head: str) -> None:
        self.key = key
        self.selector = selector
        self.strip = strip        # (lstrip, rstrip) of a string value; None: typed, held to its end
        self.head = head          # the parameter's text before its value
        self.raw: list[str] = []  # the value text read so far (pieces)
        self.started = False      # a character of the value was sent (leading whitespace is dropped)
        self.pending = ""         # trailing whitespace held back


class ArgumentReader:
    """The xml-inline format's incremental reader of a tool body whose parameters stream as written (plan
    ``"xml-parameters"``, :func:`stream_plan`): each parameter found opens ``"key": "`` and streams its
    string value (escaped as JSON text) up to what may still be its closing text or stripped whitespace; a
    typed parameter goes out whole, typed, when its closing text is complete.

    Args:
        plan (tuple): :func:`stream_plan`'s answer.
        value (Callable[[str, str | None, str], Any]): ``value(key, selector, raw)``, a parameter's value as
            the message stores it (value parser, then tool type); may raise (the close then decides).
        strip (Callable[[str, str | None], tuple | None]): ``strip(key, selector)``, how a parameter streams
            (:func:`string_strip`, cached by the caller).

    Attributes:
        text (str): the body not read yet.
        ready (bool): set by the caller once the call's name is known (a region opened and closed within one
            feed is sent at its close in one fragment).
        keys (list[str]): the parameters sent whole, in order.
        begun (bool): ``{`` was sent.
        dead (bool): something this reader does not convert as the whole-body parser reads it: the rest
            waits for the close check.
        cur: the parameter being written, or None between parameters (a body that ends with one open is
            truncated).
    """

    __slots__ = ("mode", "plan", "text", "ready", "cur", "keys", "begun", "dead", "value", "strip", "seen",
                 "known", "lazy", "rest", "fresh", "edge", "wait")

    def __init__(self, plan: tuple, value: Callable, strip: Callable) -> None:
        self.mode = "xml"
        self.plan = plan
        self.value = value
        self.strip = strip
        self.text = ""
        self.ready = False
        self.cur: _Param | None = None
        self.keys: list[str] = []
        self.begun = False
        self.dead = False
        self.seen = 0  # where the opening's last literal is looked for next, when the text kept starts at a tag
        self.known = 0  # how much of the text kept inside a value is a run the closing may begin with
        # While the text kept is long and undecided (an opening waiting for its last literal: 1; a value's
        # trailing run of whitespace an unbounded ``\\s*`` closing may begin with: 2), the pieces fed go to
        # ``rest`` instead of being added to ``text`` (which copies it: quadratic); ``fresh``: the first piece
        # not read yet; ``edge``: the opening's last characters kept, where its last literal may begin.
        self.lazy = 0
        self.rest: list[str] = []
        self.fresh = 0
        self.edge = ""
        #: the opening's last literal, when the last scan stopped waiting for it (the text kept, at most 64
        #: characters, begins at a tag whose literal start came): the next scan looks for it alone first
        self.wait: str | None = None

    def feed(self, text: str) -> None:
        """Take the next piece of the body (read by :meth:`scan`)."""
        if self.dead:
            return
        if self.lazy:
            self.rest.append(text)
        else:
            self.text += text

    def _waits(self) -> bool:
        """Whether the pieces fed since the last scan leave the reader as it was (:attr:`lazy`): the opening's
        last literal did not come, or the value's trailing run only grew; then they stay pieces."""
        fresh = "".join(self.rest[self.fresh:])
        if self.lazy == 1:
            tail = self.plan[6].tail
            window = self.edge + fresh
            if window.find(tail) >= 0:
                return False
            self.edge = window[len(window) - len(tail) + 1:] if len(tail) > 1 else ""
        elif fresh and (_SPACES.fullmatch(fresh) is None if self.plan[7].run == "\\s" else fresh.strip(self.plan[7].run)):
            return False
        self.fresh = len(self.rest)
        return True

    def _sep(self) -> str:
        sep = ", " if self.begun else "{"
        self.begun = True
        return sep

    def scan(self) -> str:
        """Convert the body text not read yet; return the JSON text it settled (maybe ``""``).

        A ``partial=True`` search (about 1.2 µs in the ``regex`` module, whatever the text) is made only from
        the first place the opening or the closing can begin (:class:`_Starts`): text with no such place is
        decided by ``str.find`` alone, a cut literal tag by comparing it with the tag's literal start; the text
        kept for the next piece begins where a tag may begin (what was decided is not read again)."""
        wait = self.wait
        if wait is not None:
            # the last scan waited for the opening's last literal: while it has not come (and the text kept stays
            # short), a scan ends as that one did, so only where it looks next moves (what the loop below does
            # in that case, without the loop)
            self.wait = None
            text = self.text
            if len(text) <= 64 and text.find(wait, self.seen) < 0 and not self.dead:
                self.seen = max(len(text) - len(wait) + 1, 0)
                self.wait = wait
                return ""
        full, opening, closing, _, switch, before, open_at, close_at = self.plan
        if self.lazy:
            if self._waits():
                return ""
            # what came decides: the text is read as one again (once per wait: linear)
            kept = "".join(self.rest[:self.fresh])
            if self.lazy == 1:
                self.seen = len(self.text) + len(kept) - len(open_at.tail) + 1
            else:
                self.known += len(kept)
            self.text += kept + "".join(self.rest[self.fresh:])
            self.rest.clear()
            self.fresh = 0
            self.lazy = 0
        text = self.text
        cur = self.cur
        if cur is not None and text and close_at is not None and close_at.one is not None and \
                close_at.one not in text and not self.dead:
            # the commonest piece, inside a value: no closing can begin in it (none of its first character, and
            # it does not end in a character of the run the closing may begin with): all value
            run = close_at.run
            if not run or (not text[-1].isspace() if run == "\\s" else text[-1] != run):
                cur.raw.append(text)
                self.text = ""
                self.known = 0
                if cur.strip is None:
                    return ""
                out: list[str] = []
                self._piece(cur, text, out, False)
                return out[0] if out else ""
        out = []
        seen, self.seen = self.seen, 0
        known, self.known = self.known, 0
        while not self.dead:
            cur = self.cur
            if cur is None:
                at = 0
                if open_at is not None:
                    at, cut = open_at.first(text)
                    if at < 0:  # no tag begins here (nor the whole parameter, which starts with one)
                        text = ""
                        break
                    if cut:  # a tag's literal start, cut: only a partial match begins there
                        text = text[at:]
                        break
                    tail = open_at.tail
                    if tail:
                        since = at + len(open_at.literal)
                        if at == 0 and seen > since:
                            since = seen  # (the text before was looked at by the last scan: linear)
                        if text.find(tail, since) < 0:
                            # no opening can be complete yet (each ends with this text): wait from the first
                            # place one may begin (a partial search would keep the text from that place or
                            # later; a parameter that begins in between would have been a partial match there)
                            text = text[at:]
                            self.seen = max(len(text) - len(tail) + 1, 0)
                            if len(text) > 64:
                                self.lazy, self.edge = 1, text[len(text) - len(tail) + 1:] if len(tail) > 1 else ""
                            else:
                                self.wait = tail  # (the next scan's first look: see the top)
                            break
                m = full.search(text, at)
                if m is not None:  # a whole parameter
                    key = m.group("key")
                    selector = m.group(switch) if switch is not None else None
                    try:
                        value = self.value(key, selector, m.group("value"))
                    except Exception:  # noqa: BLE001 - the close decides
                        self.dead = True
                        break
                    out.append(self._sep() + _dumps(key) + ": " + _dumps(value))
                    self.keys.append(key)
                    text = text[m.end():]
                    continue
                # a parameter's opening, settled when text follows it (its greedy end, such as
                # "\n?" or "\s*", has then seen the character that stops it)
                # (from the first place one can begin, a plain match that ends before the text does is what the
                # partial search gives: the regex module prefers a whole match to a partial one at a place)
                m = opening.match(text, at) if open_at is not None else None
                if m is None or m.end() == len(text):
                    m = opening.search(text, at, partial=True)
                if m is None:
                    text = ""
                    break
                if m.partial or m.end() == len(text):
                    text = text[m.start():]
                    break
                pinned = _pinned(before, m.group("key"))
                if pinned is None or pinned.fullmatch(text, m.start(), partial=True) is not None:
                    # what follows may still extend it (minicpm4's optional "<![CDATA[" after
                    # the tag, cut at "<!"): wait
                    text = text[m.start():]
                    break
                key = m.group("key")
                selector = m.group(switch) if switch is not None else None
                cur = self.cur = _Param(key, selector, self.strip(key, selector), text[m.start():m.end()])
                text = text[m.end():]
                if cur.strip is not None:
                    out.append(self._sep() + _dumps(key) + ': "')
            # where the closing text begins (found: complete) or may begin (hold: the text from there waits)
            if close_at is None:
                found = closing.search(text, partial=True)
                hold = len(text) if found is None else found.start()
            else:
                # (the text known to be a run of the closing's first characters holds none of its lead: read
                # once, so a long run of whitespace in a value is read in linear time)
                at, cut = close_at.first(text, known)
                end = len(text) if at < 0 else at
                start, exact = close_at.back(text, end, known)
                known = 0
                if exact and (at < 0 or cut):  # no closing can be complete: a partial one begins at start
                    found, hold = None, start
                    if at < 0:
                        self.known = len(text) - start  # the text kept is that run
                        if self.known > 64 and close_at.most > len(text):  # (an unbounded run: nothing goes)
                            self.lazy = 2
                else:
                    # a whole closing at the first place one can begin is the partial search's answer
                    found = closing.match(text, start) if exact else None
                    if found is None:
                        found = closing.search(text, start, partial=True)
                    hold = len(text) if found is None else found.start()
            if found is not None and not found.partial:  # the parameter is complete
                raw = "".join(cur.raw) + text[:found.start()]
                whole = cur.head + raw + found.group()
                m = full.match(whole)
                if m is None or m.end() != len(whole) or m.group("value") != raw:
                    self.dead = True  # read differently than the tag_pattern reads it
                    break
                try:
                    value = self.value(cur.key, cur.selector, raw)
                except Exception:  # noqa: BLE001 - the close decides
                    self.dead = True
                    break
                if cur.strip is None:
                    out.append(self._sep() + _dumps(cur.key) + ": " + _dumps(value))
                else:
                    self._piece(cur, text[:found.start()], out, True)
                    out.append('"')
                self.keys.append(cur.key)
                self.cur = None
                text = text[found.end():]
                continue
            piece = text[:hold]
            if piece:
                cur.raw.append(piece)
                if cur.strip is not None:
                    self._piece(cur, piece, out, False)
            text = text[hold:]
            break
        self.text = text
        return "".join(out)

    @staticmethod
    def _piece(cur: _Param, piece: str, out: list[str], final: bool) -> None:
        """``piece`` of a string value as JSON string text: leading whitespace dropped and trailing
        whitespace held (dropped at the end) when the value is stripped."""
        lstrip, rstrip = cur.strip
        if lstrip and not cur.started:
            piece = piece.lstrip()
            if not piece:
                return
        cur.started = True
        whole = cur.pending + piece
        if rstrip:
            body = whole.rstrip()
            cur.pending = "" if final else whole[len(body):]
            whole = body
        else:
            cur.pending = ""
        if whole:
            out.append(_dumps_str(whole)[1:-1])

    def finish(self, arguments: Any) -> tuple[str, bool]:
        """At the close, with ``arguments`` the message's: convert the rest of the body, add the parameters
        the message has that were not found (none, normally) and the closing brace.

        Returns:
            tuple[str, bool]: the JSON text to send, and whether it closes the arguments object (False when
            the reader stopped, a parameter is still open or ``arguments`` is no dict: the caller's check
            reports the difference).
        """
        text = self.scan()
        if self.dead or self.cur is not None or not isinstance(arguments, dict):
            return text, False
        keys = set(self.keys)
        pieces = [text]
        for key, value in arguments.items():
            if key not in keys:
                pieces.append(self._sep() + _dumps(key) + ": " + _dumps(value))
        if not self.begun:
            pieces.append("{")
        return "".join(pieces) + "}", True


# ------------------------------------------------------------------------------------------------
# The argument reader of nested XML values (plan "xml-tree", MiniMax-M3): converted to JSON as written.

class XmlTree:
    """Incremental conversion of an ``xml-inline`` body whose values are ``xml-tree`` values
    (MiniMax-M3: ``P<key>value P</key>`` parameters, a value either text or nested elements) into
    the JSON text of its arguments object, read as ``runtime.content`` reads the whole body.

    A parameter opens at its settled opening tag (text between parameters is skipped, as
    ``finditer`` skips it). Its value is a *leaf* when its first non-space text cannot begin an
    element (``P<name>``; decided with a partial match of the runtime's own start pattern): then
    ``"key": "`` goes out and the text streams as JSON string text, unchanged (the value parser
    keeps a leaf's whitespace), holding only what may begin the closing tag; ``"`` at the closing
    tag. Otherwise the value is held until its closing tag and sent as the value parser reads it
    (an object, a list, or the text when it is not a clean element sequence). A key met again
    (``merge_duplicates``: the message collects the values in a list) is held and sent again with
    the whole list: JSON readers keep a key's last value, so the text parses to the message's
    arguments. What the tool schema types is the scanner's to hold (the leaf's JSON string).

    Args:
        opening: the compiled part of ``tag_pattern`` before its value group (a ``key`` group).
        after (str): the part after it (its ``(?P=key)`` replaced by each key's literal).
        full: the compiled ``tag_pattern`` (each complete parameter is checked against it).
        read (Callable[[str], Any]): the value parser.
        start: the compiled start pattern of an element, ``\\s*P<(?!/)NAME>``.
    """

    __slots__ = ("opening", "after", "full", "read", "start", "text", "cur", "values", "begun", "dead", "closers",
                 "held")

    def __init__(self, opening: Any, after: str, full: Any, read: Callable[[str], Any], start: Any) -> None:
        self.opening, self.after, self.full, self.read, self.start = opening, after, full, read, start
        self.text = ""
        self.cur: list | None = None   # [key, head, raw pieces, kind: None | "leaf" | "held"]
        self.values: dict[str, Any] = {}  # key -> its value so far, merged as the runtime merges
        self.begun = False
        self.dead = False
        self.closers: dict[str, Any] = {}
        #: ``held(key)``: whether the tool schema types parameter ``key`` (None: not known yet);
        #: such a leaf is held whole, so a call cut off inside it has sent nothing of it
        self.held: Callable[[str], bool | None] | None = None

    def _closer(self, key: str) -> Any:
        import regex

        got = self.closers.get(key)
        if got is None:
            got = self.closers[key] = regex.compile(self.after.replace("(?P=key)", regex.escape(key)), regex.DOTALL)
        return got

    def _key(self, key: str) -> str:
        head = "{" if not self.begun else ", "
        self.begun = True
        return head + json.dumps(key, ensure_ascii=False) + ": "

    def _merge(self, key: str, value: Any) -> Any:
        """The arguments' value of ``key`` once ``value`` was read for it, merged as
        ``runtime.content``'s ``merge_duplicates`` merges (a value that is a list already takes
        the later values in; any other becomes the list of both)."""
        if key not in self.values:
            self.values[key] = json.loads(json.dumps(value))  # (a copy: it may be appended to)
            return value
        previous = self.values[key]
        if not isinstance(previous, list):
            previous = self.values[key] = [previous]
        previous.append(value)
        return previous

    def _decide(self, cur: list, out: list[str]) -> None:
        """Whether the value read so far is a leaf (it cannot begin an element: streamed from
        here, unless the schema types it) or nested (it begins one: held); undecided while a
        partial match of the element start (whitespace, a cut tag) may still become one."""
        lead = "".join(cur[2])
        m = self.start.match(lead, partial=True)
        if m is not None:
            if not m.partial:
                cur[3] = "held"
        elif self.held is not None and self.held(cur[0]) is not False:
            cur[3] = "held"  # a typed leaf (or maybe typed): sent whole at its closing tag
        else:
            cur[3] = "leaf"
            out.append(self._key(cur[0]) + '"' + escaped(lead))

    def feed(self, text: str) -> str:
        if self.dead:
            return ""
        out: list[str] = []
        text = self.text + text
        while True:
            cur = self.cur
            if cur is None:
                m = self.opening.search(text, partial=True)
                if m is None:
                    text = ""
                    break
                if m.partial:
                    text = text[m.start():]
                    break
                key = m.group("key")
                cur = self.cur = [key, text[m.start():m.end()], [], None if key not in self.values else "held"]
                text = text[m.end():]
            found = self._closer(cur[0]).search(text, partial=True)
            end = len(text) if found is None else found.start()
            if end:
                cur[2].append(text[:end])
                if cur[3] is None:
                    self._decide(cur, out)
                elif cur[3] == "leaf":
                    out.append(escaped(text[:end]))
            if found is None or found.partial:
                text = text[end:]
                break
            raw = "".join(cur[2])
            whole = cur[1] + raw + found.group()
            m = self.full.match(whole)
            if m is None or m.end() != len(whole) or m.group("value") != raw:
                self.dead = True  # read otherwise than the tag_pattern reads it: the close decides
                break
            try:
                value = self.read(raw)
            except Exception:  # noqa: BLE001 - the close decides
                self.dead = True
                break
            if cur[3] == "leaf":
                if value != raw:
                    self.dead = True
                    break
                self._merge(cur[0], value)
                out.append('"')
            else:
                out.append(self._key(cur[0]) + json.dumps(self._merge(cur[0], value), ensure_ascii=False))
            self.cur = None
            text = text[found.end():]
        self.text = text
        return "".join(out)

    def finish(self) -> str:
        """At the region's close: the parameters the runtime still finds in the text not read
        (``finditer`` from the last parameter sent: a parameter opened and never closed is
        skipped, a complete one inside it is taken), then ``}``. A leaf already streamed whose
        closing tag never came cannot be taken back: nothing is added (the close check reports
        the difference)."""
        cur = self.cur
        if self.dead or (cur is not None and cur[3] == "leaf"):
            return ""
        rest = self.text if cur is None else cur[1] + "".join(cur[2]) + self.text
        self.cur, self.text = None, ""
        out = []
        for m in self.full.finditer(rest):
            try:
                value = self.read(m.group("value"))
            except Exception:  # noqa: BLE001 - the close decides
                return ""
            out.append(self._key(m.group("key")) + json.dumps(self._merge(m.group("key"), value), ensure_ascii=False))
        return "".join(out) + ("}" if self.begun else "{}")


def tree_reader(args: dict) -> Callable[[Any], "Converted"] | None:
    """``make(scanner)`` of an ``xml-inline`` region with an ``xml-tree`` value parser (MiniMax-M3), built
    from its ``content_args`` (``runtime/formats/xml_inline.py`` planned it: ``OPEN(?P<value>.*?)CLOSE`` whose
    ``CLOSE`` names the key by ``(?P=key)``); None when its patterns do not compile."""
    spec = args["value_parser"]
    prefix = (spec.get("args") or {}).get("tag_prefix", "")
    pattern = args["tag_pattern"]
    before, after = pattern.split("(?P<value>.*?)")
    try:
        full = regex.compile(pattern, regex.DOTALL)
        opening = regex.compile(before, regex.DOTALL)
        start = regex.compile(r"\s*" + regex.escape(prefix) + r"<(?!/)[^\s<>/\"']+>")
    except (regex.error, TypeError):
        return None
    read, _ = _make_value_parser(spec)
    return lambda scanner: Converted(scanner, XmlTree(opening, after, full, lambda raw: read(raw, None), start))


# ------------------------------------------------------------------------------------------------
# The whole-body parser and the recover repair.


#: a lazy group of any character (``.``) or of a negated class that takes every whitespace character
#: (``[^<]``: no backslash, no whitespace in it) followed by ``\s*``, optionally after ``\s*``:
#: ``\s*(?P<key>.*?)\s*</arg_key>``
_LAZY_BEFORE_SPACES = regex.compile(r"(?<!\\)(\\s\*)?\(\?P<(\w+)>(\.|\[\^[^\]\\\s]*\])\*\?\)(?=\\s\*)")


def linear_source(pattern: str) -> str:
    r"""``pattern`` (a ``tag_pattern`` source) with each lazy group followed by ``\s*`` rewritten to match
    the same text in linear time (docs/security.md "Model output: time and memory").

    ``(?P<v>.*?)\s*</p>`` tries ``\s*</p>`` at every character of the value, and inside a run of whitespace
    each try reads the rest of the run: a run of n spaces cost n²/2 steps. The lazy group never ends in
    whitespace when the text after it starts with a non-space character (``\s*`` takes the run, a shorter
    match), so it is written ``(?P<v>(?:(?!\s)C|\s++(?=C))*?)``: a whitespace run is taken whole, and only
    when a character of the group follows. A ``\s*`` before the group becomes possessive (``\s*+``): the
    group cannot start with whitespace either, and backtracking into that run after a failed closing
    cost the same square. Same matches, same groups (the added groups do not capture).

    Args:
        pattern: a regex source (a whole ``tag_pattern``, or its part before the value group).
    Returns:
        The rewritten source (str); ``pattern`` itself when it has no such group. Raises nothing (a source
        that does not compile still does not).
    """
    def linear(m: regex.Match) -> str:
        lead = r"\s*+" if m.group(1) else ""
        cls = m.group(3)
        return f"{lead}(?P<{m.group(2)}>(?:(?!\\s){cls}|\\s++(?={cls}))*?)"

    return _LAZY_BEFORE_SPACES.sub(linear, pattern)


def linear_closing(source: str) -> str:
    r"""``source`` (the part of a ``tag_pattern`` after its value group, searched on its own by the readers)
    rewritten to find the same leftmost match in linear time (docs/security.md "Model output: time and
    memory"): ``\s*</parameter>`` searched over a run of n spaces tried ``\s*`` from each of them (n²/2
    steps). A search's leftmost match of ``\s*X`` (``X`` starting with a literal non-space character)
    starts where the search starts or after a non-space character, so ``(?:\G|(?<!\s))\s*+X`` tries the
    run once.

    Args:
        source: a regex source, the closing part of a ``tag_pattern``.
    Returns:
        The rewritten source (str); ``source`` itself when it does not start with ``\s*`` and a literal
        non-space character. Raises nothing.
    """
    if not source.startswith(r"\s*") or source[3:4] in ("", "+", "?", "*", "{", "\\") or source[3] in _META \
            or source[3].isspace():
        return source
    return r"(?:\G|(?<!\s))\s*+" + source[3:]


@functools.lru_cache(maxsize=256)
def _compile_tag_pattern(pattern: str) -> regex.Pattern:
    """Compile an ``xml-inline`` ``tag_pattern`` with DOTALL, as the reference does, in the linear form of
    :func:`linear_source` (the same matches)."""
    return regex.compile(linear_source(pattern), regex.DOTALL)


def make(args: dict) -> ContentParser:
    """The whole-body parser: every ``tag_pattern`` match a parameter (template-language.md "Content parsers");
    raises ContentParseError, also for text no match accounts for unless ``"unmatched": "skip"``."""
    tag_pattern = args.get("tag_pattern")
    if tag_pattern is None:
        return _failing("xml-inline", "'tag_pattern' content_arg is required")
    try:
        compiled = _compile_tag_pattern(tag_pattern)
    except (regex.error, TypeError) as exc:
        return _failing("xml-inline", f"invalid tag_pattern {tag_pattern!r}: {exc}")
    sub_parse, switch = _make_value_parser(args.get("value_parser"))
    if switch is not None and switch not in compiled.groupindex:
        return _failing("xml-inline", f"value_parser switch group {switch!r} is not a named group of "
                                      f"tag_pattern {tag_pattern!r}")
    merge = bool(args.get("merge_duplicates", False))
    skip = args.get("unmatched", "error") == "skip"
    has_value_group = "value" in compiled.groupindex
    # Groups are read by number: the regex module looks a group name up in a dict it builds per
    # read (0.7 us a name); a name used twice is one group there, so one number.
    numbers = compiled.groupindex
    key_at, value_at = numbers.get("key"), numbers.get("value")
    switch_at = numbers.get(switch) if switch is not None else None

    def parse_xml_inline(text: str, raws: dict | None = None) -> dict:
        # raws (errors="recover" repair): match index -> (the value text to use instead, the
        # body offset its closing text ends at)
        out: dict[str, Any] = {}
        last = 0
        for index, m in enumerate(compiled.finditer(text)):
            start = m.start()
            # (a gap of whitespace, the newline between two parameters, is checked here, no call)
            if not skip and start > last and not text[last:start].isspace():
                _unaccounted_gap(text, last, start, False)
            last = m.end()
            key = m.group(key_at) if key_at is not None else None
            if key is None:
                raise ContentParseError(
                    "xml-inline: tag_pattern must have a named group 'key' that matches. "
                    f"Pattern: {tag_pattern}\nContent: {text!r}"
                )
            raw = m.group(value_at) if has_value_group else ""
            if raws and index in raws:
                raw, raw_end = raws[index]
                last = max(last, raw_end)  # the repaired value runs past the match
            if sub_parse is None:
                value = raw
            elif raw is None:
                raise ContentParseError(
                    f"xml-inline: group 'value' did not match for key {key!r}, so value_parser "
                    f"has nothing to parse.\nContent: {text!r}"
                )
            else:
                value = sub_parse(raw, m.group(switch_at) if switch is not None else None)
            if merge and key in out:
                previous = out[key]
                if not isinstance(previous, list):
                    out[key] = previous = [previous]
                previous.append(value)
            else:
                out[key] = value
        if not skip and last < len(text):
            _unaccounted_gap(text, last, len(text), True)
        return out

    parse_xml_inline.compiled = compiled
    return parse_xml_inline


def _unaccounted_gap(text: str, start: int, end: int, tail: bool) -> None:
    """Raise unless ``text[start:end]``, body text no ``tag_pattern`` match covers, is accounted
    for: whitespace, or (``tail``: after the last match) closing tags ``</name>`` of the enclosing
    markup (``\n</function>\n`` of a Qwen3-Coder call), each with whitespace around it.

    Raises:
        ContentParseError: naming the offset in the body and the text (docs/template-language.md,
            "Text no parser accounted for").
    """
    gap = text[start:end]
    if not gap or gap.isspace() or (tail and _CLOSING_TAGS.fullmatch(gap)):
        return
    offset = start + len(gap) - len(gap.lstrip())
    shown = gap.strip()
    if len(shown) > 60:
        shown = shown[:57] + "..."
    raise ContentParseError(f"xml-inline: text at offset {offset} of the body matches no tag_pattern: "
                            f"{shown!r}.\nContent: {text!r}")


_META = set("()[]{}.*+?|^$\\")


#: closing tags at the end of a body: the enclosing markup (``</function>``)
_CLOSING_TAGS = regex.compile(r"(?:\s*</[^<>/]+>)+\s*$")


def _literal_end(pattern: str, from_end: bool) -> str:
    """The literal text a regex starts (or ends) with: ``<parameter=`` of
    ``<parameter=(?P<key>...)``; "" when it starts (ends) with a regex construct."""
    out: list[str] = []
    if not from_end:
        i = 0
        while i < len(pattern):
            c = pattern[i]
            if c == "\\" and i + 1 < len(pattern) and not pattern[i + 1].isalnum():
                out.append(pattern[i + 1])
                i += 2
                continue
            if c in _META:
                break
            out.append(c)
            i += 1
        return "".join(out)
    i = len(pattern) - 1
    while i >= 0:
        c = pattern[i]
        escaped = i > 0 and pattern[i - 1] == "\\"
        if escaped and not c.isalnum():
            out.append(c)
            i -= 2
            continue
        if c in _META or escaped:
            break
        out.append(c)
        i -= 1
    return "".join(reversed(out))


def repair(args: dict) -> Callable[[str], "tuple[Any, list[str]] | None"]:
    """``errors="recover"``: the damage an xml-inline body recovers from (notes in ``runtime/repair.py``,
    docs/events.md "Repairs and policies").

    * Tags the template's ``recover_tag_pattern`` reads (template-language.md "xml-inline"): when the strict
      parse fails, the body is read with ``(?:tag_pattern)|(?:recover_tag_pattern)``; each parameter the
      strict pattern does not match there is one note (MiniCPM's ``<paramname="city">``, the space lost).
    * A missing close: ``<parameter=a>1<parameter=b>2</parameter>`` or a last parameter with no
      ``</parameter>`` before the region's close. When ``tag_pattern`` starts and ends with
      literal text (``<parameter=`` ... ``</parameter>``, three characters or more), an opening
      with no closing after it before the next opening (or the end of the body) gets one.
    * A value that holds its own closing text:
      ``<parameter name="c">A </parameter> B</parameter></invoke>``: the lazy ``tag_pattern`` ends
      the value at the first ``</parameter>`` and the rest, up to the next match, is skipped. When
      that skipped text ends with the match's closing text again, the value runs to that last one.
    * The arguments wrapper: a body whose only parameter is ``arguments`` and whose value is an object
      (DeepSeek-V4 ``<parameter name="arguments" string="false">{"location":"Beijing"}</parameter>``)
      is that object. Tried also when the strict parse succeeds (``repair_on_success``), so in recover
      mode a tool whose one parameter is an object named ``arguments`` reads as that object's keys.

    ``fix`` returns None when none applies.
    """
    parse = make(args)
    compiled = getattr(parse, "compiled", None)
    if compiled is None or "value" not in compiled.groupindex:
        return lambda text: None
    opening = _literal_end(args["tag_pattern"], False)
    closing = _literal_end(args["tag_pattern"], True)
    if len(opening) < 3 or len(closing) < 3 or closing in opening:
        opening = closing = ""
    recover_parse = None
    recover = args.get("recover_tag_pattern")
    if isinstance(recover, str) and recover:
        recover_parse = make({**args, "tag_pattern": f"(?:{args['tag_pattern']})|(?:{recover})"})
        if getattr(recover_parse, "compiled", None) is None:
            recover_parse = None

    def add_closes(text: str, notes: list[str]) -> str:
        if not opening or opening not in text:
            return text
        starts = []
        at = text.find(opening)
        while at >= 0:
            starts.append(at)
            at = text.find(opening, at + len(opening))
        pieces, last = [], 0
        for index, start in enumerate(starts):
            limit = starts[index + 1] if index + 1 < len(starts) else len(text)
            segment = text[start:limit]
            pieces.append(text[last:start])
            if closing not in segment:
                # before the closing tags of the enclosing markup (``</function>``), if any
                tail = _CLOSING_TAGS.search(segment)
                cut = tail.start() if tail is not None else len(segment.rstrip())
                pieces.append(segment[:cut] + closing + segment[cut:])
                where = (f"before the next {opening!r}" if index + 1 < len(starts)
                         else f"before {segment[cut:].strip()!r}" if tail is not None else "at the end of the body")
                notes.append(NOTES["missing-close"].format(closing, where))
            else:
                pieces.append(segment)
            last = limit
        return "".join(pieces)

    def recover_tags(text: str, notes: list[str]) -> tuple[Callable, regex.Pattern]:
        """The parser and pattern to read ``text`` with: the recover-only tags too when the strict
        parse fails, one note per tag only they match."""
        if recover_parse is None:
            return parse, compiled
        try:
            parse(text)
            return parse, compiled
        except ContentParseError:
            pass
        both = recover_parse.compiled
        for m in both.finditer(text):
            strict = compiled.match(text, m.start())
            if strict is None or strict.end() != m.end():
                notes.append(NOTES["recover-tag"].format(text[m.start():m.start("value")]))
        return recover_parse, both

    def fix(text: str) -> "tuple[Any, list[str]] | None":
        notes: list[str] = []
        read, pattern = recover_tags(text, notes)
        text = add_closes(text, notes)
        matches = list(pattern.finditer(text))
        if not matches and text.strip().startswith("{"):
            # the body written as a JSON object instead of tags
            try:
                value = json.loads(text)
            except ValueError:
                return None
            return (value, [NOTES["json-body"]]) if isinstance(value, dict) else None
        raws: dict[int, str] = {}
        for index, m in enumerate(matches):
            if m.start("value") < 0:
                continue
            limit = matches[index + 1].start() if index + 1 < len(matches) else len(text)
            close_text = text[m.end("value"):m.end()]
            tag = close_text.strip()
            skipped = text[m.end():limit]
            if not tag or not skipped.strip():
                continue
            last = text.rfind(tag, m.end(), limit)
            if last < 0 or text[last + len(tag):limit].strip():
                continue
            raw = text[m.start("value"):last]
            raws[index] = (raw.rstrip() if close_text[:1].isspace() else raw, last + len(tag))
            key = m.group("key") if "key" in pattern.groupindex else None
            notes.append(NOTES["inner-close"].format(key, tag))
        wrapped = len(matches) == 1 and matches[0].group("key") == _WRAPPER
        if not notes and not wrapped:
            return None
        value = read(text, raws)
        if wrapped and isinstance(value, dict) and isinstance(value.get(_WRAPPER), dict) and len(value) == 1:
            value = value[_WRAPPER]
            notes.append(NOTES["wrapper"].format(_WRAPPER))
        return (value, notes) if notes else None

    return fix


#: the one parameter that may wrap a whole argument object (``repair``)
_WRAPPER = "arguments"


class XmlStream(ArgumentStream):
    """Plan ``"xml-parameters"``: each parameter converted to JSON as it is written (:class:`ArgumentReader`,
    ``plan`` is :func:`stream_plan`'s answer); :class:`~respc.runtime.formats.base.ArgumentStream` describes the
    protocol."""

    def __init__(self, plan: tuple) -> None:
        self.plan = plan

    def value(self, host: Any, name: str, key: str, selector: str | None, raw: str, region: Any) -> Any:
        """The message's value of one parameter from its raw text: value parser, then tool type."""
        parse = self.plan[3]
        return host.coerce(name, key, raw if parse is None else parse(raw, selector), region)

    def open(self, host: Any, region: Any, base: int) -> "ArgumentReader":
        value_of = self.value

        def value(key: str, selector: str | None, raw: str) -> Any:
            return value_of(host, host.call(base).name, key, selector, raw, region)

        def strip(key: str, selector: str | None) -> tuple | None:
            cache = host.cache
            name = host.call(base).name
            got = cache.get((id(region), name, key, selector), cache)
            if got is cache:
                got = cache[(id(region), name, key, selector)] = string_strip(lambda raw: value(key, selector, raw))
            return got

        return ArgumentReader(self.plan, value, strip)

    def tick(self, reader: "ArgumentReader", host: Any, base: int, region: Any) -> None:
        """Read the name from the open delimiter (once), then convert the body read so far."""
        if reader.dead:
            return
        call = host.call(base)
        if not reader.ready:
            try:
                calls = calls_of(region.process("", open_scope(host, region)))
            except Exception:  # noqa: BLE001 - no name: the close sends the call
                reader.dead = True
                reader.text = ""
                return
            name = function_of(calls[0]).get("name") if len(calls) == 1 else None
            if not isinstance(name, str) or not name:
                reader.dead = True  # the close sends the call
                reader.text = ""
                return
            reader.ready = True
            call.name = name
            host.send_name(call)
        piece = reader.scan()
        if piece:
            host.send_piece(call, piece)

    def close(self, reader: "ArgumentReader", host: Any, base: int, calls: list) -> None:
        if reader.ready and len(calls) == 1:
            call = host.call(base)
            piece, closed = reader.finish(function_of(calls[0]).get("arguments"))
            if piece:
                call.streaming = True
                call.fwd.append(piece)
            call.done = call.done or closed
            host.send_args(call)


def stream(plan: Plan, args: dict) -> ArgumentStream | None:
    """``Format.stream`` of xml-inline: parameters converted as written (``"xml-parameters"``), nested XML
    values (``"xml-tree"``, a converter in front of the json reader) or parameter by parameter
    (``"per-parameter"``)."""
    mode = plan.arguments
    if mode == "xml-parameters":
        xml = stream_plan(args)
        return None if xml is None else XmlStream(xml)
    if mode == "xml-tree":
        make_tree = tree_reader(args)
        return None if make_tree is None else JsonStream(("args", plan.name_group), make_tree)
    if mode == "per-parameter":
        return REPARSE
    return None


# --- grammar export (docs/grammar.md, "Formats write their bodies") -------------------------------------------

def args_grammar(b: Any, f: Any, name: str | None, schema: Any, where: str, jb: Any) -> Any:
    """:attr:`Format.args_grammar` of ``xml-inline``: one ``tag_pattern`` match per argument (the ``key``
    group the parameter's name, the value as the tool typing reads it), in any order, every required one
    present."""
    ir = b.ir
    seq, alt, Lit, Rep, Chars, Except, WS = ir.seq, ir.alt, ir.Lit, ir.Rep, ir.Chars, ir.Except, ir.WS
    pattern = f.content_args.get("tag_pattern")
    vp = f.content_args.get("value_parser")
    switch = vp.get("switch") if isinstance(vp, dict) and isinstance(vp.get("switch"), str) else None
    # a switch's values are typed case by case (with tools: ``_switched_tag``), xml-tree values
    # element by element (``_tree_value``)
    tree = isinstance(vp, dict) and vp.get("name") == "xml-tree" and "switch" not in vp
    if not isinstance(pattern, str) or (switch is None or not b.has_tools) and not (tree and b.has_tools) and \
            vp not in (None, {"name": "text"}, "text"):
        b.g.inexact(f"{where} content_args.value_parser: values are any text")
    if not b.has_tools or not isinstance(pattern, str):
        b.g.inexact(f"{where} content_args.tag_pattern: arguments not typed without tools")
        return Except(tuple(b.close_leads(f)))
    b.g.inexact(f"{where} content_args.tag_pattern: values are text up to the tag's close")
    required = set(schema.get("required") or ())
    if f.content_args.get("unmatched", "error") == "skip":
        # text between tags is skipped by the reader: anything without a tag start or the close
        junk = tail = Except(tuple(dict.fromkeys([x for x in ir.pattern_leads(pattern) if x] + b.close_leads(f))))
    else:
        # D7 (runtime/content.py): only whitespace between tags, and after the last one the
        # closing tags of markup the opener began (``</function>``)
        junk = WS
        # (none of them a delimiter the parser watches in the body: the call's close would end the
        # call there, issue 27 E)
        tail = ir.closing_tags(b.g, "xml_tail", tuple(b.body_watch(f)))
    value_tail = pattern.split("(?P<value>", 1)[1] if "(?P<value>" in pattern else ""
    # the pattern after the value group: group_end reads ``(`` + the group's body onwards
    after = value_tail[group_end("(" + value_tail, 0) - 1:] if value_tail else ""
    if "(?=" in after and f.content_args.get("unmatched", "error") != "skip":
        # a lookahead after the tag's close (minicpm4's ``(?=\s*(?:<param\b|\Z))``): a tag counts only
        # when whitespace and the next tag or the end of the body follow it, so no closing tags
        # may follow the last one (docs/grammar.md "Formats write their bodies")
        tail = WS
    # a value ends at the tag's close; it may not hold a delimiter the parser watches in the
    # body either (the call's close: the parser ends the region there, docs/grammar.md "What the grammar says")
    stop = tuple(dict.fromkeys([x for x in (ir.pattern_leads(after) if after else []) if x] + list(b.body_watch(f))))
    jb = ir.JsonBuilder(b.g, ir.JsonDialect(), stop)
    text = Except(stop) if stop else Rep(ir.ANY_CHAR)
    # the text parser (stripped or not) keeps the value for the tool typing to convert
    typed = vp in (None, "text") or isinstance(vp, dict) and vp.get("name") == "text" and "switch" not in vp
    if not schema.get("properties") and schema.get("additionalProperties") is not False:
        # a tool without declared properties takes any arguments
        # (docs/grammar.md "What the grammar says"): any number of
        # tags, each key as the tag pattern reads it, each value text
        node, notes = ir.regex_to_ir(ir.without_optional_repairs(pattern), {"value": text})
        if any(n.startswith("pattern not translated") for n in notes):
            # (a pattern the grammar cannot write for any key, such as a close that repeats the key
            # by a backreference, minimax_m3's ``</(?P=key)>``: no tags, the empty arguments)
            b.g.inexact(f"{where} content_args.tag_pattern: a tool without declared properties takes no "
                        "arguments here (the tag pattern repeats its key)")
            return seq(junk, tail)
        return seq(junk, Rep(seq(node, junk)), tail)
    members = []
    as_json = isinstance(f.content_args.get("value_parser"), dict) and \
        f.content_args["value_parser"].get("name") == "json"
    if tree:
        # xml-tree values (minimax_m3): a leaf never starts an element, so its text holds no tag start
        prefix = (vp.get("args") or {}).get("tag_prefix", "")
        item = (vp.get("args") or {}).get("item_tag", "item")
        tree_stop = tuple(dict.fromkeys(stop + (prefix + "<",)))
        tree_text, tree_jb = Except(tree_stop), ir.JsonBuilder(b.g, ir.JsonDialect(), tree_stop)
    for key, prop in (schema.get("properties") or {}).items():
        if switch is not None:
            node = _switched_tag(b, f, pattern, vp, key, prop, text, jb, stop, where)
        elif tree:
            value = _tree_value(b, prop, tree_text, tree_jb, prefix, item, key, f"{where} parameters.{key}", 0)
            node, notes = ir.regex_to_ir(pattern, {"key": Lit(key), "value": value})
            if any(n.startswith("pattern not translated") for n in notes):
                node = Lit("\x00never")
        else:
            if as_json:
                value = _json_value(b, prop, text, jb, stop, f"{where} parameters.{key}", lax=True)
            else:
                value = _xml_value(b, prop, text, jb, f"{where} parameters.{key}") if typed else text
            node, notes = ir.regex_to_ir(pattern, {"key": Lit(key), "value": value})
        members.append((seq(node, junk), key in required))
    return seq(junk, ir.any_order(b.g, "xml_members", members, lambda node, first: node), tail)


def _json_value(b: Any, prop: Any, text: Any, jb: Any, stop: tuple, where: str, lax: bool) -> Any:
    """One XML parameter's value read by the ``json`` value parser: JSON text valid against the
    property's schema; ``lax`` (``allow_non_json``): text that is not JSON stays a string, so a
    property that admits a string may also be text no JSON value starts like."""
    ir = b.ir
    value = ir.seq(ir.WS, jb.schema(prop, where), ir.WS)
    kinds = prop.get("type") if isinstance(prop, dict) else None
    if lax and "enum" not in (prop or {}) and "const" not in (prop or {}) and (
            kinds == "string" or isinstance(kinds, list) and "string" in kinds or not kinds):
        json_starts = '{["-0123456789tfnNI \t\r\n' + "".join(x[0] for x in stop)
        value = ir.alt(value, ir.seq(ir.Chars(ir.norm_ranges([(ord(c), ord(c)) for c in json_starts]), True), text))
    return value


def _spec_value(b: Any, spec: Any, prop: Any, text: Any, jb: Any, stop: tuple, where: str) -> Any:
    """One XML parameter's value read by one ``value_parser`` spec (a switch case; None: the raw text,
    no case and no default), then typed by the tool typing; None for a parser the grammar does not
    write (its case is left out of the grammar)."""
    name = spec.get("name", "text") if isinstance(spec, dict) else "text"
    args = (spec.get("args") or {}) if isinstance(spec, dict) else {}
    if name == "text":
        return _xml_value(b, prop, text, jb, where)
    if name == "json" and isinstance(args, dict) and set(args) <= {"allow_non_json"}:
        return _json_value(b, prop, text, jb, stop, where, lax=bool(args.get("allow_non_json")))
    return None


def _switched_tag(b: Any, f: Any, pattern: str, vp: dict, key: str, prop: Any, text: Any, jb: Any, stop: tuple,
                  where: str) -> Any:
    """One parameter's tag under a ``value_parser`` switch (``{"switch": GROUP, "cases": {TEXT: spec},
    "default": spec}``, template-language.md "Content parsers"): the parser reads the value by the case
    the ``GROUP`` text names (the default without the group or with another text), so each alternative
    writes one case's text in the group and a value that case's parser reads into a value of the
    property's schema (docs/grammar.md "What the grammar says":
    deepseek_v3_2's ``string="false"`` reads JSON, ``string="true"`` text).
    The pattern's free character classes (``[^>]*``) hold no first character of a delimiter the parser
    watches in the body (the call's close would end it inside the tag)."""
    ir = b.ir
    cases = vp.get("cases") if isinstance(vp.get("cases"), dict) else {}
    shapes = _switch_shapes(b, f, pattern, vp["switch"], tuple(cases))
    mk, mv = shapes.mk, shapes.mv  # the markers are replaced by identity (``replace_nodes``)
    forms = []
    for case, spec in cases.items():
        value = _spec_value(b, spec, prop, text, jb, stop, f"{where} parameters.{key}")
        if value is None or not regex.fullmatch(shapes.group, case):
            b.g.inexact(f"{where} content_args.value_parser case {case!r}: not written")
            continue
        tag = shapes.case_tag(case)
        if tag is not None:
            forms.append(ir.replace_nodes(tag, {mk: ir.Lit(key), mv: value}))
    value = _spec_value(b, vp.get("default"), prop, text, jb, stop, f"{where} parameters.{key}")
    other, other_tag, tag = shapes.rest(b)
    if other is not None and value is not None:
        # the group holding a text no case names: the default reads the value (kimi_k3's type="number")
        if other_tag is not None:
            forms.append(ir.replace_nodes(other_tag, {mk: ir.Lit(key), mv: value}))
    if tag is not None and value is not None:
        forms.append(ir.replace_nodes(tag, {mk: ir.Lit(key), mv: value}))
    return ir.alt(*forms) if forms else ir.Lit("\x00never")


class _SwitchShapes:
    """The parts of a switched tag that do not depend on the parameter (:func:`_switched_tag`): the
    tag pattern's node with markers for the key, the value and the switch group, narrowed once;
    the group's own pattern; the tag with the group holding one case's text (built on first use),
    holding a text no case names, or left out. Built once per tag pattern and body, not once per
    parameter of every tool (docs/grammar.md "Cost")."""

    def __init__(self, b: Any, f: Any, pattern: str, switch: str, cases: tuple) -> None:
        ir = self.ir = b.ir
        self.mk, self.mv, self.ms = ir.Ref("\x00key"), ir.Ref("\x00value"), ir.Ref("\x00selector")
        ms = self.ms
        node, _notes = ir.regex_to_ir(pattern, {"key": self.mk, "value": self.mv, switch: ms})
        self.node = node = ir.narrow_chars(node, "".join(x[0] for x in b.body_watch(f) if x))
        head = f"(?P<{switch}>"
        at = pattern.find(head)
        self.group = pattern[at + len(head):group_end(pattern, at) - 1] if at >= 0 else ".*"
        self._cases: dict = {}
        self._firsts, self._case_names, self._rest = "".join(x[0] for x in b.body_watch(f) if x), cases, None

    def rest(self, b: Any) -> tuple:
        """``(other, other_tag, bare_tag)``: the selector text no case names (None: the group's
        pattern is not one repeated class), the tag with the group holding it, and the tag without
        the group. Built at the first parameter's default, where the selector's rules were always
        first written (rule order is output order)."""
        if self._rest is None:
            ir, node, ms = self.ir, self.node, self.ms
            other = _other_selector(b, self.group, self._case_names, self._firsts)
            tag = ir.select_group(node, ms, None)
            if tag is not None:
                # without the group, no free stretch may hold the first character of the optional part
                # around it, or the regex could read that part after all (``name="v" string="x>...``:
                # ``[^"]*`` runs on past the ``>``)
                tag = ir.narrow_chars(tag, _optional_lead(ir, node, ms))
            self._rest = (other, ir.select_group(node, ms, other) if other is not None else None, tag)
        return self._rest

    def case_tag(self, case: str) -> Any:
        """The tag with the switch group holding ``case`` (None: the pattern cannot hold it there)."""
        if case not in self._cases:
            ir = self.ir
            self._cases[case] = ir.select_group(self.node, self.ms, ir.Lit(case) if case else ir.EMPTY)
        return self._cases[case]


def _switch_shapes(b: Any, f: Any, pattern: str, switch: str, cases: tuple) -> _SwitchShapes:
    """The :class:`_SwitchShapes` of one tag pattern in field ``f``'s body, kept on the builder ``b``
    for the rest of its build."""
    cache = b.__dict__.setdefault("_switch_shapes", {})
    key = (b.t.fields.index(f), pattern, switch, cases)
    if key not in cache:
        cache[key] = _SwitchShapes(b, f, pattern, switch, cases)
    return cache[key]


def _other_selector(b: Any, group: str, cases: tuple, firsts: str) -> Any:
    """Text the switch group's pattern (``[a-z]*``, one repeated character class) matches that is none
    of the ``cases``, without the first characters of the delimiters the parser watches; None when
    the group is not such a pattern."""
    ir = b.ir
    node, notes = ir.regex_to_ir(group)
    if notes or not isinstance(node, ir.Rep) or not isinstance(node.item, ir.Chars) or node.max is not None \
            or node.min > 1:
        return None
    chars = ir.narrow_chars(node.item, firsts)
    if not isinstance(chars, ir.Chars):
        return None
    name = f"selector_{zlib.crc32(repr((sorted(cases), group, firsts)).encode()):08x}"
    return ir.not_words(b.g, name, tuple(cases), chars, ir.Rep(chars), ir.EMPTY, chars if node.min else None)


def _optional_lead(ir: Any, node: Any, marker: Any) -> str:
    """The first character of the optional part (``(?: string="...")?``) around ``marker`` in
    ``node``; "" when there is none or it starts with no literal."""
    def find(n: Any) -> str:
        if isinstance(n, ir.Rep):
            if n.max == 1 and ir.has_node(n.item, marker):
                first = n.item.items[0] if isinstance(n.item, ir.Seq) and n.item.items else n.item
                return first.text[0] if isinstance(first, ir.Lit) else ""
            return find(n.item)
        if isinstance(n, (ir.Seq, ir.Alt)):
            return next((x for x in (find(y) for y in n.items) if x), "")
        return ""
    return find(node)


def _xml_value(b: Any, prop: Any, text: Any, jb: Any, where: str) -> Any:
    """One XML parameter's value as the tool typing reads it (docs/template-language.md,
    "Tool-argument typing"): a string is the raw text; an enum or const one of its members'
    texts; an integer, number, boolean or null the text the typing converts; an object or
    array (also among a ``type`` list or ``anyOf``/``oneOf`` members) the JSON text the typing
    decodes. A schema that admits a string admits any text (the typing keeps what no other
    type converts)."""
    ir = b.ir
    seq, alt, Lit, WS = ir.seq, ir.alt, ir.Lit, ir.WS
    if not isinstance(prop, dict):
        return text
    choices = prop.get("enum") if "enum" in prop else [prop["const"]] if "const" in prop else None
    if isinstance(choices, list):
        forms = []
        for v in choices:
            if isinstance(v, str):
                forms.append(Lit(v) if v else ir.EMPTY)
            elif isinstance(v, (bool, int, float)) or v is None:
                forms.append(seq(WS, Lit(json.dumps(v)), WS))
            else:
                forms.append(seq(WS, jb.literal_value(v, where), WS))
        return alt(*forms) if forms else Lit("\x00never")
    members = [prop]
    for combo in ("anyOf", "oneOf"):
        if isinstance(prop.get(combo), list):
            members = [m for m in prop[combo] if isinstance(m, dict)]
    forms = []
    for member in members:
        kind = member.get("type")
        kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
        if not kinds and ("properties" in member):
            kinds = ["object"]
        if not kinds or "string" in kinds or any(not isinstance(k, str) for k in kinds):
            return text
        for k in kinds:
            if k == "integer":
                forms.append(seq(WS, jb.integer(), WS))
            elif k == "number":
                forms.append(seq(WS, jb.number(), WS))
            elif k == "boolean":
                forms.append(seq(WS, _xml_boolean(b), WS))
            elif k == "null":
                forms.append(seq(WS, Lit("null"), WS))
            elif k in ("object", "array"):
                forms.append(seq(WS, jb.schema({**member, "type": k}, where), WS))
            else:
                return text
    return alt(*forms) if forms else text


#: nesting of xml-tree elements the grammar writes (deeper values are leaves: text or JSON text)
TREE_DEPTH = 6


def _tree_value(b: Any, prop: Any, text: Any, jb: Any, prefix: str, item: str, top: str, where: str,
                depth: int) -> Any:
    """One value read by the ``xml-tree`` value parser (template-language.md "xml-tree") and then typed by
    the tool typing, which goes as deep as the schema: a leaf (text holding no ``PREFIX<``) as
    :func:`_xml_value` writes it, or, for an object or array the schema admits, its elements:
    ``PREFIX<name>value PREFIX</name>`` per declared property (any order, each at most once, every
    required one, at least one: no elements would be text), an array one or more ``item_tag`` elements.
    No element is named like the top-level parameter ``top`` (the tag pattern's value ends at the first
    ``PREFIX</top>``), nor an object's property like ``item_tag`` (elements all named so are a list)."""
    ir = b.ir
    seq, Lit, WS = ir.seq, ir.Lit, ir.WS
    forms = [_xml_value(b, prop, text, jb, where)]
    if not isinstance(prop, dict) or depth >= TREE_DEPTH or "enum" in prop or "const" in prop:
        return forms[0]
    members = [prop]
    for combo in ("anyOf", "oneOf"):
        if isinstance(prop.get(combo), list):
            members = [m for m in prop[combo] if isinstance(m, dict)]
    for member in members:
        kind = member.get("type")
        kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
        if not kinds and "properties" in member:
            kinds = ["object"]
        if "object" in kinds and isinstance(member.get("properties"), dict) and member["properties"]:
            required = set(member.get("required") or ())
            elems = []
            for name, sub in member["properties"].items():
                if name in (top, item) or not regex.fullmatch(r"[^\s<>/\"']+", name):
                    if name in required:
                        elems = []
                        break
                    continue
                value = _tree_value(b, sub, text, jb, prefix, item, top, f"{where}.{name}", depth + 1)
                elems.append((seq(Lit(f"{prefix}<{name}>"), value, Lit(f"{prefix}</{name}>"), WS), name in required))
            if elems:
                forms.append(seq(WS, ir.any_order(b.g, "tree_members", elems, lambda node, first: node,
                                                  at_least_one=True)))
        if "array" in kinds and item != top:
            sub = member.get("items") if isinstance(member.get("items"), dict) else {}
            value = _tree_value(b, sub, text, jb, prefix, item, top, f"{where}[]", depth + 1)
            forms.append(seq(WS, ir.Rep(seq(Lit(f"{prefix}<{item}>"), value, Lit(f"{prefix}</{item}>"), WS), 1)))
    return ir.alt(*forms)


def _xml_boolean(b: Any) -> Any:
    """A boolean parameter value as the tool typing reads it (``runtime/tools.py``: ``true``,
    ``false`` in any case, ``1``, ``0``)."""
    ir = b.ir

    def nocase(word: str) -> Any:
        return ir.seq(*(ir.Chars(ir.norm_ranges([(ord(c.lower()), ord(c.lower())), (ord(c.upper()), ord(c.upper()))]))
                        for c in word))
    return b.g.add("xml_bool", ir.alt(nocase("true"), nocase("false"), ir.Lit("1"), ir.Lit("0")))


class InParameter(InsideReader):
    """Whether an xml-inline body stands inside an open tag value: after a match of the part of
    ``tag_pattern`` before its ``value`` group (``<parameter=city>``) and before the first match of
    the part after it (``</parameter>``; ``</arg_value(?::[^<>\\s]+)?>``; MiniMax-M3's
    ``...</(?P=key)>`` with the key the opening named), which is where the pattern's lazy value
    ends. Each piece is read once from where the last one stopped, only the start of a closing
    still being written kept (linear); the stream parser feeds pieces that end at a closer, so a
    tag never straddles two (docs/security.md, "Closers inside an open value").

    The closing is matched as the pattern's regex, never as the literal text it ends with: for
    ``</arg_value(?::[^<>\\s]+)?>`` that text is ``>``, which the opening itself holds, so a value
    read as ended at the opening's own ``>`` let a closer inside it end the call (red team s12)."""

    __slots__ = ("_pairs", "_in", "_tail", "_close_re", "_next", "_json")

    def __init__(self, pairs: "list[tuple[regex.Pattern, _Closing]]") -> None:
        # (opening, closing) of tag_pattern, then of recover_tag_pattern (the reader runs only in
        # errors="recover", where the repair reads those tags too)
        self._pairs = pairs
        self._in = False
        self._tail = ""
        self._close_re: "regex.Pattern | str | None" = None
        self._next: list = [None] * len(pairs)  # per opening: its next match in the current data
        # a body written as a JSON object instead of tags (the recover repair reads it as JSON):
        # its strings, read as json's inside reader reads them; None until the body's first
        # character is known, False when it is not ``{``
        self._json: "_Quoted | bool | None" = None

    def _opening_at(self, data: str, at: int) -> "tuple[Any, _Closing] | None":
        """The leftmost opening match at or after ``at`` (tag_pattern's first at the same place);
        each opening's next match is kept, so no text is searched twice for it (linear)."""
        best = None
        for k, (opening, closing) in enumerate(self._pairs):
            m = self._next[k]
            if m is None or (m is not False and m.start() < at):
                m = self._next[k] = opening.search(data, at) or False
            if m is not False and (best is None or m.start() < best[0].start()):
                best = (m, closing)
        return best

    def feed(self, text: str) -> bool:
        in_json = self._feed_json(text)
        return self._feed_tags(text) or in_json

    def _feed_json(self, text: str) -> bool:
        """Whether a body written as a JSON object stands inside one of its strings."""
        reader = self._json
        if reader is None:
            lead = text.lstrip()
            if not lead:
                return False
            if lead[0] != "{":
                self._json = False
                return False
            reader = self._json = _Quoted(())
            text = lead
        return reader.feed(text) if reader is not False else False

    def _feed_tags(self, text: str) -> bool:
        data = self._tail + text
        self._next = [None] * len(self._pairs)  # new data: no match is known in it
        at, n = 0, len(data)
        while at < n:
            if self._in:
                closing = self._close_re
                if isinstance(closing, str):  # a literal closing (the commonest): a plain search
                    j = data.find(closing, at)
                    if j < 0:
                        at = max(at, n - len(closing) + 1)  # keep what may start the closing
                        break
                    at = j + len(closing)
                    self._in = False
                    continue
                m = closing.search(data, at)
                if m is None:
                    # inside still: keep only a closing that may still be being written
                    part = closing.search(data, at, partial=True)
                    at = part.start() if part is not None else n
                    break
                at = m.end() if m.end() > at else at + 1
                self._in = False
            else:
                found = self._opening_at(data, at)
                if found is None:
                    at = n
                    break
                m, closing = found
                at = m.end() if m.end() > at else at + 1
                self._close_re = closing.after(m)
                self._in = True
        self._tail = data[at:] if self._in else ""
        return self._in


class _Closing:
    """The part of a ``tag_pattern`` after its value group, compiled; a backreference to a group of
    the opening (``(?P=key)``) is replaced by the text the opening matched there, escaped (one
    compiled pattern per such text, at most 256 kept)."""

    __slots__ = ("_source", "_refs", "_plain", "_cache", "_parts")

    def __init__(self, source: str) -> None:
        self._source = source
        self._refs = sorted(set(_BACKREF.findall(source)))
        # literal text between the backreferences, when there is nothing else: the closing is then
        # a literal per opening (MiniMax-M3's ``]<]minimax[>[</`` KEY ``>``), found by a plain search
        # without compiling a pattern per key
        pieces = _BACKREF.split(source)
        texts = [_literal_text(piece) for piece in pieces[0::2]]
        self._parts = None if any(t is None for t in texts) else (texts, pieces[1::2])
        self._plain = None
        if not self._refs:
            self._plain = ("".join(texts) if self._parts is not None
                           else regex.compile(linear_closing(source), regex.DOTALL))
        self._cache: dict = {}

    def after(self, opening: Any) -> "regex.Pattern | str":
        if self._plain is not None:
            return self._plain
        if self._parts is not None:
            texts, names = self._parts
            out = [texts[0]]
            for name, text in zip(names, texts[1:]):
                out.append(opening.group(name) or "")
                out.append(text)
            return "".join(out)
        key = tuple(opening.group(name) or "" for name in self._refs)
        pattern = self._cache.get(key)
        if pattern is None:
            if len(self._cache) >= 256:
                self._cache.clear()
            values = dict(zip(self._refs, key))
            pattern = self._cache[key] = regex.compile(
                linear_closing(_BACKREF.sub(lambda r: regex.escape(values[r.group(1)]), self._source)), regex.DOTALL)
        return pattern


#: a named backreference in a tag_pattern (``(?P=key)``)
_BACKREF = regex.compile(r"\(\?P=(\w+)\)")


def _literal_text(pattern: str) -> str | None:
    """The text ``pattern`` matches when it is only literal characters and escaped punctuation
    (``\\]<\\]minimax``), else None."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 < len(pattern) and not pattern[i + 1].isalnum():
                out.append(pattern[i + 1])
                i += 2
                continue
            return None
        if c in _META:
            return None
        out.append(c)
        i += 1
    return "".join(out)


def inside(args: dict) -> "Callable[[], InParameter] | None":
    """The ``inside`` reader factory of xml-inline (:class:`InParameter`) for ``content_args``
    ``args``: the openings and closings of ``tag_pattern`` and of ``recover_tag_pattern`` (the reader
    runs only in errors="recover", whose repair reads those tags too); None when ``tag_pattern`` has
    no single ``value`` group, or the part after it is empty, matches the empty string or cannot be
    compiled alone (a backreference to a group of the opening is filled in from the opening's match)."""
    pairs = []
    for key in ("tag_pattern", "recover_tag_pattern"):
        pattern = args.get(key)
        pair = _inside_pair(pattern) if isinstance(pattern, str) and pattern else None
        if pair is None and key == "tag_pattern":
            return None
        if pair is not None:
            pairs.append(pair)
    return lambda: InParameter(pairs)


def _inside_pair(pattern: str) -> "tuple[regex.Pattern, _Closing] | None":
    """The compiled opening of ``pattern`` (the part before its value group) and its closing."""
    split = _split(pattern)
    if split is None:
        return None
    opening, after = split
    refs = set(_BACKREF.findall(after))
    if not after or not refs <= set(opening.groupindex):
        return None
    try:
        probe = regex.compile(_BACKREF.sub("x", after), regex.DOTALL)
    except _REGEX_ERRORS:
        return None
    if probe.match("") is not None:
        return None  # a closing that matches nothing would end every value at once
    return opening, _Closing(after)


FORMAT = Format("xml-inline", True, check, plan, make, repair=repair, repair_on_success=True,
                grammar=_grammar_any, never_string="a dict", lenient=lenient, stream=stream,
                args_grammar=args_grammar, inside=inside)
