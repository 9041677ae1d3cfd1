"""The streaming machinery every generated parser shares (events.md "The parser object"; template-language.md
"Matching").

Theory of operation
-------------------
A generated module subclasses :class:`StreamParser` and fills in its tables: the field table
(names, dirty flags, join/repeats, processors, group names), the start anchor, and -- the part the
compiler specialises into code -- one *scanner* function per automaton state. A scanner answers one
question for the undecided text ``buf[pos:]``: which watched delimiter commits next (if any), and
where the leftmost still-pending hit starts (``hold``, template-language.md "Choosing the next delimiter"). This
class does the rest: route text to the current region, open and close regions, store values (D1), finalize (D3), and
keep only undecided text (plus the few characters of context the compiler asked for) in its buffer, so the total
work is linear in the output length.

Scanner contract: ``scan(buf: str, pos: int, eos: bool, memo: list) -> (start, end, rank, match,
hold)`` with ``start == -1`` when nothing may be committed; ``rank`` indexes the state's transition
table ``(is_open, field_index, target_state)``; ``match`` is the regex match object for regex
delimiters (its named groups reach the transform scope), else None. ``memo`` keeps each
delimiter's last search result over the same buffer, so a long buffer is never searched twice.

These shortcuts keep the common chunk cheap, each giving exactly the events a scan would give
(``tests/test_stream.py`` and ``tests/test_held.py`` compare them):

* fast path -- nothing held, region open, and no character of the chunk can start a watched
  delimiter (``FAST_PATH``: the state's trigger characters and the first three, or two,
  characters of its delimiters, as a search after offset 0 sees them): the chunk is routed
  whole; a proper prefix of such a head ending the chunk is held without scanning, and the next
  chunk read with it (``_run_path``). With one to three triggers the chunk is only tested
  with ``not in``; a ``CONTEXT`` the regex delimiters need is then the chunk's own tail, kept
  lazily (``_sync``), or, when it is there only for ``^`` and ``\\A`` (``ANCHOR_CONTEXT``),
  whatever decided characters the buffer still has. A state watching a regex that is a run
  of one class then a literal (``HOLD_RUNS``: gpt_oss's ``\\s*to=functions\\.``, muse_glimmer's
  ``[ \\t]*to=``) holds a trailing run, and a prefix of the literal after it, itself
  (``_run_path``; with one such literal, or several sharing their class and first two
  characters, a chunk without the trigger and those two characters is read by ``feed`` itself);
* value regions -- in a v2 region that ends where its value ends, such a chunk goes to the
  value's decoder without a scan while the value goes on (``_value_chunk``);
* held regex -- while held text starts a regex delimiter that is still being written, a chunk is
  read by that state's automaton (``HOLD_REGEX``, runtime/held.py) instead of the scanner, which
  would hold the same text and emit nothing (``_held_regex``);
* held literals -- in a state that watches literal delimiters only (``HOLD_LITERALS``), held text
  that is still a proper prefix of one is held on, and text holding none of them is routed up to
  the leftmost proper prefix of one ending it, without a scan (``_run_path``);
* long partial searches -- the scanners' partial search of a regex delimiter over 256 or more
  undecided characters (one big ``feed``) starts where a match can start: its first lead
  (:func:`partial_search`), after offset 0 without its start-anchored alternatives
  (:func:`partial_late`), or at the barrier before its factor (:func:`partial_barrier`); the same
  for its D2 probe. The engine in partial mode would try such a pattern at every offset;
* nothing left -- a delimiter that ends the buffer, in a state whose triggers are known, ends
  :meth:`_run`'s loop without a scan of the empty rest (no delimiter can start there, the same
  rule as the fast path's; the close of every tool call);
* blocks -- body pieces are joined every ``BLOCK`` pieces, so memory follows the body's size;
* long holds -- text held behind a regex match still pending after ``LONG_HOLD`` characters is
  searched again only once it has doubled (messages are unchanged; chunk boundaries of that text
  may be coarser than the reference's).
"""

from __future__ import annotations

import copy
import logging
import re
import threading
import time
from typing import Any, Callable, NamedTuple

import regex

from .decoders import ACCEPTED, REJECTED, UNDECIDED
from .errors import ContentParseError, ParserStateError, RegexTimeoutError
from .held import STOP, HeldRegex
from .repair import NOTES, decode_string_arguments
from .scanners import HELD_LITERALS, Literal, build_scanners, literal_automata
from .tables import HoldLiterals
from .tools import _GOOD_NAMES, check_tool_call_names, coerce_tool_calls, compile_tool_types, tool_parameters
from .whole import finish as finish_whole

__all__ = [
    "RUNTIME_ABI",
    "regrouped",
    "FEATURES",
    "RECOVER_ALIAS",
    "OPEN",
    "NEST",
    "CLOSE",
    "AFTER",
    "DEFER",
    "Edge",
    "Region",
    "StreamParser",
    "make_boundary",
    "check_abi",
    "to_text",
    "literal_hold",
    "lead_search",
    "barrier_search",
    "partial_search",
    "partial_late",
    "partial_barrier",
    "lead_start",
    "LazyPattern",
    "BoundedPattern",
    "REGEX_TIMEOUT",
    "LiteralPrefixes",
    "parse_many",
    "module_api",
    "PREFIX_REQUIRED",
]

#: ``errors=`` values: "strict" raises on a body that cannot be decoded (the reference's
#: behaviour); "recover" never raises on model output (region_malformed, diagnostics).
ERRORS = ("strict", "recover")

#: Named groups of a delimiter pattern whose name starts with this mark a *declared repair*: a
#: piece of damaged markup the template accepts (``(?P<repair_filler>commentary(?=<\|))?``). When
#: such a group takes part in a match, the parser lists a ``"repaired"`` diagnostic naming it (in
#: both modes: the template, not the mode, accepts it). Trailing digits keep names unique.
REPAIR_GROUP = "repair_"
#: the declared-repair groups of recover-only closers (compiler/recover_open.py ``REPAIR_NAMES``)
RECOVER_CLOSER_GROUP = REPAIR_GROUP + "recover_closer"

#: A group of a recover-only opener (template keys ``recover_open_pattern``; compiler/recover_open.py)
#: named ``g`` is renamed ``g`` + this + its alternative's number in the combined recover opener;
#: when it takes part it writes its text into ``g`` (:func:`_put_groups`).
RECOVER_ALIAS = "__alt"

#: Bumped only when generated modules need a different runtime; generated modules check it.
#: 4: tables are named records (runtime/tables.py), literal-only states are declared
#: (runtime/scanners.py), and every search helper the module's scanners call is part of the ABI,
#: not a feature. 5: every state is declared (``_rt.Pattern`` records for regex
#: delimiters); the runtime writes every scanner and gives every memo slot. This runtime still
#: runs modules of ABI 3 (tuples, JSON held-regex text) and 4 (regex scanners written out).
#: 6: a module takes ``get_response_parser`` and ``parse_response`` from
#: :func:`module_api` and writes a class attribute at its default not at all; ABI 5 modules
#: (which write both functions) still run. 7: ``HELD_LITERALS`` may end a state's
#: tuple of held automata (its literal delimiters'), ``REGEX_BOUNDED`` is read from the
#: ``bound=`` of the declared delimiters when a class does not write it, and a recover class's
#: region may be :func:`regrouped`; ABI 6 modules still run.
RUNTIME_ABI = 7

#: the ABIs of the generated modules this runtime runs
SUPPORTED_ABIS = (3, 4, 5, 6, 7)

#: What this runtime can run beyond template language v1; a generated module lists the ones it
#: uses and :func:`check_abi` refuses a runtime that lacks one, naming it. A module of ABI 4 or 5
#: names only what it declares (:data:`DECLARED_FEATURES`); the others are named by modules of ABI 3.
FEATURES = frozenset({"slots", "nest", "defer", "end-value", "reject", "typed-roles", "empty-none", "hold-runs",
                      "lead-search", "lazy-pattern", "held-json", "lazy-delimiters", "fast-heads",
                      "barrier-search", "partial-search", "literal-prefixes", "window-partial", "regex-timeout",
                      "recover-openers", "linear-attempts", "late-held"})

#: The features a module of ABI 4 or 5 can name: template-language keys and declared facts (a field's
#: slot, nesting, deferred opens, a value that ends its region, rejected bodies, v2 roles and
#: empty values, delimiters not proven linear and those whose attempts are, held automata read past
#: start anchors, recover-only openers). How the runtime searches is
#: no feature: a new shortcut in the runtime regenerates nothing.
DECLARED_FEATURES = frozenset({"slots", "nest", "defer", "end-value", "reject", "typed-roles", "empty-none",
                               "regex-timeout", "recover-openers", "linear-attempts", "late-held"})

# Transition actions (compiler/automaton.py ACTIONS): the first item of every Edge.
OPEN, NEST, CLOSE, AFTER, DEFER = 0, 1, 2, 3, 4


class Edge(NamedTuple):
    """One transition of a state: what committing one watched delimiter does.

    Attributes:
        action (int): ``OPEN`` (close the current region, open ``field``), ``NEST`` (suspend the
            current region, open ``field``), ``CLOSE`` (close the current region and resume the
            suspended one, or go OUTSIDE), ``AFTER`` (consume the optional close after a value) or
            ``DEFER`` (an ``OPEN`` that counts only if the current region's own close never
            follows: text is held until that close or the end of the stream decides).
        field (int): index of the field whose delimiter it is.
        target (int): the state an open enters (0 for closes: the state is taken from the stack).
    """

    action: int
    field: int
    target: int


class Region:
    """One field of a generated module: the region, its content parser and the slot it fills.

    Generated modules build one per field with keywords; every key but ``name`` has the v1 default,
    so a new template key is a new keyword here, not a new table.

    Args:
        name (str): the field (region) name, as declared.
        slot (str | None): the message key its values go to (default: ``name``); None discards
            the region's text (no events, no value).
        process (Callable[[str, dict], Any]): body -> value (content parser, transform; template-language.md
        "Content parsers", "Transforms").
        dirty (bool): the ``dirty`` flag of its ``region_chunk`` events (events.md "The events").
        repeats (bool), join (str | None): template-language.md "Closing a region and storing its value".
        groups (tuple[str, ...]): named groups of its open and close patterns (D4, D5).
        typed (bool): tool-schema typing applies to its values (template-language.md "Tool-argument typing"; v2
        ``role``).
        boundary (Callable[[], Any] | None): v2: factory of the content parser's incremental
            boundary decoder (``runtime.decoders``), used when ``ends`` or ``reject`` is set.
        ends (bool): v2 ``"end": "value"``: the decoder's end of value closes the region.
        reject (bool): v2: a body the decoder rejects at its start gives the opener back.
        alternatives (tuple[int, ...]): v2: fields with the identical open, tried next on reject.
        after (int | None): v2: the state watching the optional close after its value.
        empty_none (bool): v2: an empty or whitespace body has the value None (no parse): set
            for content parsers that cannot read an empty body.
        extend (bool): v2 ``repeats`` with ``transform_each``: the block's list of values extends
            the slot's list (one level), so several regions can fill one flat list.
        plan (Plan | None): the compile-time facts of its content format (``runtime/formats``,
            docs/formats.md "The plan"), read by ``respc.openai``; None for a hand-built region.
    """

    __slots__ = ("name", "slot", "process", "dirty", "repeats", "join", "groups", "typed", "boundary", "ends",
                 "reject", "alternatives", "after", "empty_none", "extend", "label", "verdict", "ends_itself",
                 "plan")

    def __init__(self, name: str, *, process: Callable[[str, dict], Any], slot: Any = ..., dirty: bool = False,
                 repeats: bool = False, join: str | None = None, groups: tuple = (), typed: bool = True,
                 boundary: Callable[[], Any] | None = None, ends: bool = False, reject: bool = False,
                 alternatives: tuple = (), after: int | None = None, empty_none: bool = False,
                 extend: bool = False, plan: Any = None) -> None:
        self.name = name
        self.slot = name if slot is ... else slot
        self.process = process
        self.dirty = dirty
        self.repeats = repeats
        self.join = join
        self.groups = groups
        self.typed = typed
        self.boundary = boundary
        self.ends = ends
        self.reject = reject
        self.alternatives = alternatives
        self.after = after
        self.empty_none = empty_none
        self.extend = extend
        self.plan = plan
        #: the region name when it differs from the slot (open/close events then carry it)
        self.label = name if self.slot != name else None
        #: ``verdict(text) -> status`` of a new boundary decoder fed ``text``, when its factory
        #: offers one (runtime/decoders.py ``json_boundary``), else None: _probe builds a decoder
        self.verdict = getattr(boundary, "verdict", None)
        #: a body the end of the output closed (no closer came) can still hold a whole value:
        #: True for the plain parsers (``text``, ``int``, ``float``, ``bool``: their text is the
        #: value) and for a self-delimiting one (``json``, ``pythonic``) whose strict parse reads
        #: the body whole (a cut JSON object or call list never parses); False for ``end:
        #: "value"`` regions (their decoder must have seen the value end) and for bodies that
        #: only their closer ends (``xml-inline``, ``kv-lines``, ``xml-tree``). See
        #: docs/events.md, "Truncated regions".
        self.ends_itself = not dirty or (not ends and _self_delimiting(getattr(process, "content_parser", None)))

    def __repr__(self) -> str:
        return f"Region({self.name!r}, slot={self.slot!r})"

logger = logging.getLogger("respc")


def _self_delimiting(parser: Any) -> bool:
    """Whether content parser ``parser`` (a name, or None when unknown) reads a value that ends
    itself (``runtime/formats`` ``Format.ends_itself``); unknown: False."""
    from .formats import FORMATS

    record = FORMATS.get(parser) if isinstance(parser, str) else None
    return record is not None and record.ends_itself

PREFIX_REQUIRED = (
    "ResponseParser/parse_response requires `prefix` (the chat prompt sent to the model before "
    "generation), because chat templates often pre-write part of the assistant message (e.g. an "
    "opening `<think>` tag) that the parser must see to parse the output correctly. If the "
    'generation already contains the complete message, pass prefix="" (or []) to opt out explicitly.'
)


def check_abi(required: int, module: str, features: tuple = ()) -> None:
    """Refuse to run a generated module built for another runtime.

    Args:
        required: the ``RUNTIME_ABI`` the module was generated for (one of :data:`SUPPORTED_ABIS`).
        module: the module's ``__name__``, for the message.
        features: the runtime features (:data:`FEATURES`) its template uses (language v2).

    Raises:
        ImportError: when the installed runtime differs or lacks a feature, saying how to fix it.
    """
    if required not in SUPPORTED_ABIS:
        raise ImportError(
            f"{module} was generated for respc runtime ABI {required}, but the installed runtime "
            f"has ABI {RUNTIME_ABI} (and runs {', '.join(map(str, SUPPORTED_ABIS))}); regenerate it with "
            "`respc compile` or install a matching respc."
        )
    missing = [name for name in features if name not in FEATURES]
    if missing:
        raise ImportError(
            f"{module} needs runtime feature(s) {missing} of template language v2, which the installed "
            "respc runtime lacks; install a newer respc."
        )


def make_boundary(parser: str, args: dict) -> Callable[[], Any]:
    """The factory of ``parser``'s incremental boundary decoder (``runtime.decoders``), for v2
    regions that end at their value or may reject their body.

    Args:
        parser: a content parser name whose registry record has a ``boundary``.
        args: its ``content_args``.

    Raises:
        ValueError: the parser has no boundary decoder (the compiler never emits that).
    """
    from .formats import FORMATS

    record = FORMATS[parser]
    if record.reader is None:
        raise ValueError(f"content parser {parser!r} cannot end itself or reject a body")
    return record.reader(args)


def _carry_events(exc: BaseException, events: list) -> None:
    """Give an error raised inside ``feed`` / ``finalize`` the events that call produced before
    it, as ``exc.events`` (a list of event dicts; docs/events.md, "Errors"): they are returned by
    no call, and a caller printing events as they come (``respc parse --events``) prints them
    before the error. An error that already carries them (raised again by a later call) keeps its own."""
    if isinstance(exc, Exception) and not hasattr(exc, "events"):
        try:
            exc.events = events
        except AttributeError:  # an exception type without a __dict__
            pass


def to_text(value: Any, tokenizer: Any, what: str) -> str:
    """Return ``value`` as text: a str as is, token ids decoded with ``tokenizer.decode``.

    Args:
        value: a str, or a sequence of token ids (an empty sequence is ``""``).
        tokenizer: any object with ``decode(ids) -> str``, or None.
        what: ``"prefix"`` or ``"response"``, for the error message.

    Raises:
        TypeError: ids without a tokenizer, or a decode that does not return a str (events.md "The parser object").
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and not value:
        return ""
    if value is None or isinstance(value, (bytes, bytearray)):
        raise TypeError(f"{what} must be text (str) or token ids, not {type(value).__name__}"
                        + ("; decode the bytes first" if value is not None else ""))
    if tokenizer is None:
        raise TypeError(
            f"{what} is not text ({type(value).__name__}); token ids need tokenizer= "
            "(any object with decode(ids) -> str)"
        )
    text = tokenizer.decode(value)
    if not isinstance(text, str):
        raise TypeError(f"tokenizer.decode returned {type(text).__name__} for the {what}, expected str")
    return text


#: seconds one search (or match) of a regex delimiter that ``compiler/backtracking.py``
#: ``linear_time_problem`` does not prove linear may run before it counts as timed out (strict:
#: ``RegexTimeoutError``; recover: a ``regex-timeout`` diagnostic, the delimiter taken as not
#: matching in the text so far). A parser's ``regex_timeout=`` overrides it; patterns proven
#: linear (every catalogue delimiter but those docs/security.md lists) are searched without one.
REGEX_TIMEOUT = 0.25
#: the most characters a search (or match) of a :class:`BoundedPattern` whose attempts are proven
#: linear reads without ``timeout=``: at most SHORT_SEARCH + 1 attempts (two rounds with
#: ``partial=True``) of at most SHORT_SEARCH characters each (docs/security.md, "Short searches")
SHORT_SEARCH = 128
#: the largest ``regex_timeout=`` a parser takes, in seconds (about 11.6 days): the regex engine
#: reads a timeout of about 1e15 s or more as already past, so every search "timed out" at once
#: (strict raised on any text; recover looped for ever; red team s11)
MAX_REGEX_TIMEOUT = 1_000_000.0


def _module_limit() -> float:
    """:data:`REGEX_TIMEOUT` as set (a user may set it), brought into (0.001,
    :data:`MAX_REGEX_TIMEOUT`]: ``inf`` or ``1e300`` would make every search time out at once."""
    limit = REGEX_TIMEOUT
    if not (0.001 <= limit <= MAX_REGEX_TIMEOUT):  # (a NaN too)
        return 0.001 if limit < 0.001 else MAX_REGEX_TIMEOUT
    return limit


class _Running(threading.local):
    """The parser whose scan runs in this thread (set only by parsers with bounded patterns)."""

    parser: Any = None


_RUNNING = _Running()


class _SearchTimeout(Exception):
    """A :class:`BoundedPattern` search ran past its limit inside a parser's scan (internal)."""

    def __init__(self, pattern: "BoundedPattern", pos: int, timeout: float) -> None:
        super().__init__(pattern.pattern)
        self.bounded = pattern
        self.pos = pos
        self.timeout = timeout


class BoundedPattern:
    """A compiled ``regex`` pattern whose ``search``, ``match`` and ``fullmatch`` run with
    ``timeout=`` (docs/security.md, "Limits"): a generated module's delimiter that
    ``linear_time_problem`` does not prove linear, its D2 probe and late pattern
    (``LazyPattern(..., bound=(field, key))``).

    The limit is the running parser's ``regex_timeout=``, else :data:`REGEX_TIMEOUT`. Inside a
    parser's scan a search that runs out raises an internal exception the parser turns into
    ``RegexTimeoutError`` (strict) or a ``regex-timeout`` diagnostic (recover); after such a
    diagnostic, searches of the same delimiter over the parser's buffer skip every start before
    the end of the text it had then (the delimiter does not match there). Outside a parser it
    raises :class:`~respc.runtime.errors.RegexTimeoutError` (offset None).

    A pattern whose attempts the compiler proved linear (``linear_attempts``: its searches are at
    most quadratic in the text they read) is searched without ``timeout=`` over at most
    :data:`SHORT_SEARCH` characters, where its time is bounded whatever the text
    (docs/security.md, "Short searches"): the engine's timeout reads the process's CPU clock twice
    per call, a system call each (4 to 7 us a search on a loaded 2-core machine, more than the
    search itself). The time of such a search still counts against the shared limit.

    Args:
        compiled: the compiled pattern.
        label (tuple[str, str]): ``(field name, template key)`` of the delimiter.
        linear_attempts (bool): one attempt is proven linear
            (``compiler.backtracking.attempts_linear``).
    """

    __slots__ = ("_rx", "pattern", "label", "_short")

    def __init__(self, compiled: Any, label: tuple, linear_attempts: bool = False) -> None:
        self._rx = compiled
        self.pattern = compiled.pattern
        self.label = tuple(label)
        self._short = linear_attempts is True

    def __getattr__(self, name: str) -> Any:  # groupindex, flags, finditer (unbounded) ...
        return getattr(self._rx, name)

    def _start(self, string: str, pos: int, endpos: int | None) -> tuple[int, float]:
        parser = _RUNNING.parser
        if parser is None:
            return pos, _module_limit()
        skip = parser._rxskip
        if skip is not None and string is parser._rxbuf:
            until = skip.get(self.label)
            if until is not None and pos < until - parser._rxbase:
                pos = until - parser._rxbase
                if pos > (len(string) if endpos is None else endpos):
                    pos = -1
        # the searches from one position share one limit, however many chunks re-read that text
        left = (parser._rxt or _module_limit()) - parser._rxspent
        return pos, left if left > 0.001 else 0.001

    def _spent(self, t0: float) -> None:
        parser = _RUNNING.parser
        if parser is not None:
            parser._rxspent += time.perf_counter() - t0

    def _out(self, pos: int, timeout: float) -> BaseException:
        if _RUNNING.parser is None:
            return RegexTimeoutError(self.label[0], self.label[1], self.pattern, None, timeout)
        # the limit the parser was given (the search itself had what was left of it)
        return _SearchTimeout(self, pos, _RUNNING.parser._rxt or _module_limit())

    # search, match and fullmatch are _start, the engine call and _spent written out: one look-up
    # of the running parser instead of two, and no call of either (1.75 us a bounded
    # search against 0.48 us for the bare one; the engine's own timeout= handling is the rest)

    def search(self, string: str, pos: int = 0, endpos: int | None = None, **kwargs: Any) -> Any:
        parser = _RUNNING.parser
        if parser is None:
            timeout = _module_limit()
        else:
            skip = parser._rxskip
            if skip is not None and string is parser._rxbuf:
                until = skip.get(self.label)
                if until is not None and pos < until - parser._rxbase:
                    pos = until - parser._rxbase
                    if pos > (len(string) if endpos is None else endpos):
                        return None
            timeout = (parser._rxt or _module_limit()) - parser._rxspent
            if timeout <= 0.001:
                timeout = 0.001
        t0 = time.perf_counter()
        try:
            if self._short and (len(string) if endpos is None else endpos) - pos <= SHORT_SEARCH:
                return self._rx.search(string, pos, endpos, **kwargs)  # (see SHORT_SEARCH)
            return self._rx.search(string, pos, endpos, timeout=timeout, **kwargs)
        except TimeoutError:
            raise self._out(pos, timeout) from None
        finally:
            if parser is not None:
                parser._rxspent += time.perf_counter() - t0

    def match(self, string: str, pos: int = 0, endpos: int | None = None, **kwargs: Any) -> Any:
        parser = _RUNNING.parser
        if parser is None:
            timeout = _module_limit()
        else:
            skip = parser._rxskip
            if skip is not None and string is parser._rxbuf:
                until = skip.get(self.label)
                if until is not None and pos < until - parser._rxbase:
                    return None  # (_start moved the start: a match at pos is skipped)
            timeout = (parser._rxt or _module_limit()) - parser._rxspent
            if timeout <= 0.001:
                timeout = 0.001
        t0 = time.perf_counter()
        try:
            if self._short and (len(string) if endpos is None else endpos) - pos <= SHORT_SEARCH:
                return self._rx.match(string, pos, endpos, **kwargs)  # (see SHORT_SEARCH)
            return self._rx.match(string, pos, endpos, timeout=timeout, **kwargs)
        except TimeoutError:
            raise self._out(pos, timeout) from None
        finally:
            if parser is not None:
                parser._rxspent += time.perf_counter() - t0

    def fullmatch(self, string: str, pos: int = 0, endpos: int | None = None, **kwargs: Any) -> Any:
        start, timeout = self._start(string, pos, endpos)
        if start != pos:
            return None
        t0 = time.perf_counter()
        try:
            if self._short and (len(string) if endpos is None else endpos) - pos <= SHORT_SEARCH:
                return self._rx.fullmatch(string, pos, endpos, **kwargs)  # (see SHORT_SEARCH)
            return self._rx.fullmatch(string, pos, endpos, timeout=timeout, **kwargs)
        except TimeoutError:
            raise self._out(pos, timeout) from None
        finally:
            self._spent(t0)


def _guard_scanner(scan: Callable) -> Callable:
    """``scan`` for a parser with bounded patterns: a search that ran out of time is handed to
    the running parser (strict: it raises; recover: the delimiter is skipped there) and the scan
    runs again."""
    if getattr(scan, "_respc_guarded", False):
        return scan
    # a scanner the runtime builds by its first call (runtime/scanners.py): built by the first
    # call through this guard, which then calls it directly
    build = getattr(scan, "build", None)

    def guarded(buf: str, pos: int, eos: bool, memo: list) -> tuple:
        nonlocal scan, build
        if build is not None:
            scan, build = build(), None
        parser = _RUNNING.parser
        at = parser._rxbase + pos
        if at != parser._rxat:
            # decided text before this position: the searches from here start a new shared limit
            parser._rxat = at
            parser._rxspent = 0.0
        while True:
            try:
                return scan(buf, pos, eos, memo)
            except _SearchTimeout as exc:
                _RUNNING.parser._search_timed_out(exc, buf, memo)

    guarded._respc_guarded = True  # type: ignore[attr-defined]
    guarded._respc_inner = scan  # type: ignore[attr-defined]
    return guarded


class LazyPattern:
    """A ``regex`` pattern (``regex.DOTALL``) compiled when it is first used: a generated module's
    delimiters, D2 probes and factor back-searches, so importing the module compiles none of them
    (gpt_oss's five probes were 4 of the 9 ms of its import, later its six delimiters 4
    of the 4.5 ms its code took to run); a parse compiles those it searches.

    ``search``, ``match`` and ``fullmatch`` take the compiled pattern's arguments and return what
    it returns; the first call compiles and puts the compiled pattern's own methods on the
    instance. With ``scope`` and ``name`` (a module's delimiters: ``scope`` is the module's
    ``globals()``, ``name`` the global holding this object) the compiled pattern also replaces
    the object there, so the module's scanners then search the compiled pattern itself (a call
    through this object costs some 250 more instructions, measured with cachegrind).

    Args:
        source (str): the pattern.
        flags (int): its ``regex`` flags (``regex.DOTALL`` unless told; errors="recover"'s stray
            closer search compiles an open pattern without it, ``StreamParser._STRAY``).
        scope (dict | None): where ``name`` is bound to this object, rebound to the compiled
            pattern by the first use.
        name (str | None): that global's name (required with ``scope``).
        bound (tuple[str, str] | None): ``(field, key)`` of a delimiter not proven to search in
            linear time: the compiled pattern is wrapped in a :class:`BoundedPattern`.
        linear_attempts (bool): with ``bound``, one attempt of the pattern is proven linear
            (:class:`BoundedPattern`: short searches run without ``timeout=``).

    Raises:
        ValueError: ``scope`` without ``name``.
    """

    def __init__(self, source: str, flags: int = regex.DOTALL, *, scope: dict | None = None,
                 name: str | None = None, bound: tuple | None = None, linear_attempts: bool = False) -> None:
        if scope is not None and not name:
            raise ValueError(f"LazyPattern({source!r}): scope without the name of its global")
        self.pattern = source
        self.flags = flags
        self._scope = scope
        self._name = name
        self._bound = bound
        self._linear_attempts = linear_attempts
        self._compiled: Any = None

    def _compile(self) -> Any:
        # also reached after the first use through a method taken before it (lead_search's match)
        compiled = self._compiled
        if compiled is None:
            compiled = regex.compile(self.pattern, self.flags)
            if self._bound is not None:
                compiled = BoundedPattern(compiled, self._bound, self._linear_attempts)
            self._compiled = compiled
            self.search, self.match, self.fullmatch = compiled.search, compiled.match, compiled.fullmatch
            if self._scope is None and _is_probe(self.pattern) and _windowable(compiled):
                # a D2 probe never matches completely: its long partial searches go a window at a
                # time (window_partial), not through the engine's complete phase at every offset
                self.search = lambda string, pos=0, endpos=None, partial=False: _probe_search(
                    compiled, string, pos, endpos, partial)
            if self._scope is not None and self._scope.get(self._name) is self:
                self._scope[self._name] = compiled
        return compiled

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self._compile().search(*args, **kwargs)

    def match(self, *args: Any, **kwargs: Any) -> Any:
        return self._compile().match(*args, **kwargs)

    def fullmatch(self, *args: Any, **kwargs: Any) -> Any:
        return self._compile().fullmatch(*args, **kwargs)


#: lead_search: leads found where the pattern does not match before the engine takes over, when
#: they come closer together than LEAD_SPAN characters on average
LEAD_MISSES = 16
#: lead_search: characters per miss (on average since the search began) under which the misses
#: count as dense and the engine takes over. The engine tries a lead-less pattern at every offset
#: (about 3-75 ns a character: a lookahead opener, an optional head) and a miss costs one Python
#: step and one anchored match (about 1 us), so sparse leads (a ``[`` every 2 kB of prose)
#: stay with ``str.find`` and dense ones (a JSON array of arrays) go to the engine.
LEAD_SPAN = 256
_str_find = str.find
#: lead_search: the first window it looks for leads in (characters; doubled while none is there)
LEAD_WINDOW = 4096


def lead_search(pattern: Any, buf: str, pos: int, leads: tuple[str, ...]) -> Any:
    """``pattern.search(buf, pos)`` for a pattern every match of which starts with one of
    ``leads`` (compiler/automaton.py ``_branch_leads``): the leads are found with ``str.find``
    and the pattern is matched only where one starts, leftmost first, so text holding none of
    them is not searched by the regex engine (docs/security.md "Whole text at scan speed": a complete text's search).

    Args:
        pattern: a compiled ``regex`` pattern.
        buf (str): the text; pos (int): where the search starts.
        leads (tuple[str, ...]): non-empty literals, none a prefix of another.

    Returns:
        the match ``pattern.search(buf, pos)`` gives (the same object type), or None.

    After ``LEAD_MISSES`` places where a lead starts but the pattern does not match, when they
    lie fewer than ``LEAD_SPAN`` characters apart on average, the engine searches the rest itself
    (no match starts before: every start has a lead there). Either way the work is linear: each
    miss moves the search on by at least one character, and the misses cost at most a constant
    per ``LEAD_SPAN`` characters searched before the engine takes over. The engine calls share
    the time limit of the scan that makes them (``_guard_scanner``).
    """
    match = pattern.match
    # Until the first miss: the leftmost lead from pos, looked for in a window that doubles while
    # it holds none, each later lead only where it would start first (every search costs about
    # the distance to the answer, not to the text's end: a lead that never comes would cost a
    # whole scan per call otherwise, and a text with many calls one scan per call), and the
    # pattern matched there. Most searches (a tool call's opener) end in this loop.
    # Each lead is looked for where it would START before the window's end (the find's end is
    # end + len(lead) - 1): bounding every lead by the window's end alone would miss a long lead
    # that starts inside the window and ends past it while a shorter lead inside it is found
    # (leads ('<tool_call>', 'tool_'): the search answered the 'tool_' at s + 1, not the match at s).
    n = len(buf)
    window = LEAD_WINDOW
    while True:
        end = pos + window
        at = -1
        for lead in leads:
            k = buf.find(lead, pos, (end if at < 0 else at) + len(lead) - 1)
            if k >= 0:
                at = k
        if at >= 0:
            m = match(buf, at)
            if m is not None:
                return m
            return _lead_search_on(pattern, buf, at + 1, leads, window)
        if end >= n:
            return None
        pos = end  # every occurrence that starts before end was looked at
        window *= 2


def _lead_search_on(pattern: Any, buf: str, pos: int, leads: tuple[str, ...], window: int) -> Any:
    """:func:`lead_search` after its first miss, from ``pos`` (just after it), with a window of
    ``window`` characters."""
    match = pattern.match
    n = len(buf)
    began = pos
    misses = 1
    # Per lead, its last answer: (its first occurrence from an earlier start, or -1 for none that
    # starts before the stop searched; that stop). The window's end stays put while misses move
    # pos on, so after a miss only the lead that missed is searched again. As in lead_search, a
    # lead is looked for where it starts before the stop (an occurrence may end past it).
    known: dict = {}
    end = pos + window
    while True:
        # as in lead_search, each lead's answer kept
        at = -1
        for lead in leads:
            hit = known.get(lead)
            if hit is None or 0 <= hit[0] < pos:
                # (one character: the C search itself, memchr, not a whole text's find)
                k = (_str_find(buf, lead, pos, end) if len(lead) == 1
                     else buf.find(lead, pos, end + len(lead) - 1))
                known[lead] = (k, end)
            elif hit[0] < 0 and hit[1] < end:
                # none started before the last stop: only the characters from it can hold one
                more = hit[1]
                k = buf.find(lead, more if more > pos else pos, end + len(lead) - 1)
                known[lead] = (k, end)
            else:
                k = hit[0]
            if k >= 0 and (at < 0 or k < at):
                at = k
        if at < 0:
            if end >= n:
                return None
            pos = end  # every occurrence that starts before end was looked at
            window *= 2
            end = pos + window
            continue
        m = match(buf, at)
        if m is not None:
            return m
        misses += 1
        if misses >= LEAD_MISSES and at - began < misses * LEAD_SPAN:
            return pattern.search(buf, at + 1)
        pos = at + 1


#: undecided text at least this long is searched by :func:`partial_search` / :func:`partial_late`
#: (shorter, a generated scanner asks the engine directly: a streamed chunk's scan stays as it was)
PARTIAL_LONG = 256


def lead_start(buf: str, pos: int, leads: tuple[str, ...], end: int | None = None) -> int:
    """The leftmost offset ``>= pos`` where one of ``leads`` starts before ``end``, or where a
    non-empty proper prefix of one ends ``buf[:end]``; ``end`` when there is neither (``end``:
    the end of the text the engine is given, ``len(buf)`` by default).

    For a pattern every match of which starts with one of ``leads`` (compiler/automaton.py
    ``_branch_leads``), no complete or partial match (template-language.md "Choosing the next delimiter") starts
    before this offset: a partial match is a prefix of a complete one that runs into the end of ``buf``, so its text
    either holds the lead or is a proper prefix of it.
    """
    n = len(buf) if end is None else end
    lo = n
    for lead in leads:
        # only an occurrence that starts before the best so far can move it
        k = buf.find(lead, pos, min(lo + len(lead) - 1, n))
        if k >= 0:
            lo = k
    for lead in leads:
        first = lead[0]
        j = buf.find(first, max(pos, n - len(lead) + 1), lo)
        while j >= 0:
            if lead.startswith(buf[j:n]):
                lo = j
                break
            j = buf.find(first, j + 1, lo)
    return lo


#: window_partial: characters searched by the engine in partial mode at a time
PARTIAL_WINDOW = 256
#: the window of a D2 probe's partial search (_probe_search): small, as a probe is searched at
#: every chunk while text is held (up to LONG_HOLD characters) and its first window usually holds
#: the answer (the held text's start), confirmed by one match over the rest
PROBE_WINDOW = 32
#: _probe_search: fewer undecided characters than this go to the engine as they are (a streamed
#: chunk's probe, where the engine is fastest)
PROBE_LONG = 128
#: window_partial: windows double after one that holds no candidate, up to this size
WINDOW_MAX = 1024
#: window_partial: per pattern source, whether a window of the text matches as the text does
_WINDOWABLE: dict[str, bool] = {}
#: what makes a match depend on where the text ends or starts: anchors and \b (the engine's
#: partial matching reaches into lookaheads at the end of a window; compiler/automaton.py)
_EDGE_SENSITIVE = regex.compile(r"\\[AbBZzG]|[$^]")
#: the assertion a D2 probe puts for \Z and \z (compiler/automaton.py ``_STRING_END``): it needs
#: one more character, so in a window it reports a path reaching the window's edge, as wanted
_STRING_END = "(?:(?=[\\s\\S])(?!))"


def _is_probe(source: str) -> bool:
    """Whether ``source`` is a D2 probe, ``(?>(?:P'))(?!)`` (compiler/automaton.py)."""
    return source.startswith("(?>(?:") and source.endswith("))(?!)")


def _probe_search(compiled: Any, string: str, pos: int = 0, endpos: int | None = None,
                  partial: bool = False) -> Any:
    """``compiled.search`` of a D2 probe, whose long partial searches go to :func:`window_partial`."""
    n = len(string) if endpos is None else endpos
    if not partial or n - pos < PROBE_LONG:
        return compiled.search(string, pos, n, partial=partial)
    return window_partial(compiled, string, pos, n, complete=False, window=PROBE_WINDOW)


def _windowable(pattern: Any) -> bool:
    source = pattern.pattern
    known = _WINDOWABLE.get(source)
    if known is None:
        if len(_WINDOWABLE) > 4096:
            _WINDOWABLE.clear()
        # "[^" is a negated class, not an anchor; "\\" an escaped backslash
        plain = (source.replace("\\\\", "").replace(_STRING_END, "").replace("[^", "[")
                 .replace("\\^", "").replace("\\$", ""))
        known = _WINDOWABLE[source] = _EDGE_SENSITIVE.search(plain) is None
    return known


def window_partial(pattern: Any, buf: str, pos: int, end: int | None = None, complete: bool = True,
                   window: int = 0) -> Any:
    """``pattern.search(buf, pos, end, partial=True)``, linear in the text
    (docs/security.md "Model output: time and memory").

    The ``regex`` engine's partial phase (it looks for a complete match first, then for the
    leftmost partial one) can cost the rest of the text at every offset: gpt_oss's call opener
    ``(?:<\\|start\\|>...)?...\\s*to=functions\\.`` over ``"<" * 20_000`` took 50 ms, 4x as
    long for 2x the text. Here the complete match is searched without partial mode (linear), and
    only when there is none the partial one, a window at a time (:data:`PARTIAL_WINDOW` characters,
    doubled after a window without a candidate, up to :data:`WINDOW_MAX`): a partial
    match runs into the end of the text, so its path reaches the end of every window it starts in,
    where the engine reports it as partial; each such candidate is confirmed by matching it at its
    start over the whole text (``complete=False``: the pattern never matches completely, a D2
    probe, and the first search is skipped; after :data:`LEAD_MISSES` candidates that die past their window's
    edge, the engine takes over, as before). Patterns whose matches depend on where the text ends or starts
    (anchors, ``\\b``) and short texts go to the engine as they are.

    Returns:
        what ``pattern.search(buf, pos, end, partial=True)`` returns (the same span and groups), or
        None.
    """
    n = len(buf) if end is None else end
    window = window or PARTIAL_WINDOW
    if n - pos <= 2 * window or not _windowable(pattern):
        return pattern.search(buf, pos, n, partial=True)
    if complete:
        found = pattern.search(buf, pos, n)
        if found is not None:
            return found
    at, misses = pos, 0
    while at < n and misses < LEAD_MISSES:
        edge = at + window
        if edge >= n:
            return pattern.search(buf, at, n, partial=True)
        m = pattern.search(buf, at, edge, partial=True)
        if m is None or (m.partial and m.start() == edge):
            # no path from [at, edge) reaches edge: no partial match starts there. (An empty
            # partial match at the edge itself, a pattern that may start with an empty path, says
            # the same: the leftmost one starts there; the next window, from edge, reads it.
            # plamo3's call-opener probe over its 177 held characters: 14 engine calls before,
            # 6 now.)
            at = edge
            if window < WINDOW_MAX:
                window *= 2  # text where paths die soon: fewer, longer windows
            continue
        if not m.partial:
            break  # complete only inside the window: not expected; the engine decides
        start = m.start()
        far = edge + window
        if far < n and pattern.match(buf, start, far, partial=True) is None:
            at = start + 1  # its paths die soon after the window: not a partial match
            continue
        whole = pattern.match(buf, start, n, partial=True)
        if whole is not None:
            if whole.partial:
                return whole
            break
        at = start + 1  # a path that died far after the window: a miss
        misses += 1
    return pattern.search(buf, pos, n, partial=True)


def partial_search(pattern: Any, buf: str, pos: int, leads: tuple[str, ...], end: int | None = None) -> Any:
    """``pattern.search(buf, pos, partial=True)`` for a pattern every match of which starts with
    one of ``leads``: the engine searches from :func:`lead_start`, as no match or partial match
    starts before it (docs/security.md "Model output: time and memory":
    a long undecided text, as one big ``feed`` or the recover-mode
    whole-text pass holds; the engine in partial mode cannot skip ahead by itself for a pattern
    with a zero-width alternative such as xlam's ``(?=\\[\\s*\\{\\s*"name")``).

    Args:
        pattern: a compiled ``regex`` pattern.
        buf (str): the text; pos (int): where the search starts.
        leads (tuple[str, ...]): non-empty literals, none a prefix of another.
        end (int | None): the engine's ``endpos`` (a D2 probe's window), None for the whole text.

    Returns:
        what ``pattern.search(buf, pos, partial=True)`` (with ``end``: ``pattern.search(buf, pos,
        end, partial=True)``) returns (the same match), or None. The same for the D2 probe of such
        a pattern: each of its partial matches is a path of the pattern that reached the end.
    """
    if end is None:
        return window_partial(pattern, buf, lead_start(buf, pos, leads))
    return window_partial(pattern, buf, lead_start(buf, pos, leads, end), end)


def partial_barrier(pattern: Any, buf: str, pos: int, factor: str, barrier: str, end: int | None = None) -> Any:
    """``pattern.search(buf, pos, partial=True)`` for a pattern every match of which is ``P +
    factor + ...`` where ``P`` never consumes ``barrier`` after its first character (the plan of
    :func:`barrier_search`, compiler/automaton.py ``barrier_plan``): the engine searches from the
    leftmost place a match or partial match can start, which is the last ``barrier`` before the
    first ``factor`` from ``pos``, before the leftmost proper prefix of ``factor`` ending ``buf``,
    or the last ``barrier`` of all (a partial match that ends inside ``P``), whichever comes first;
    ``pos`` when one of them has no ``barrier`` before it (inkling's call opener over prose with a
    ``<`` in it: the engine starts at that ``<``, not at every offset of the text).

    Args:
        pattern: a compiled ``regex`` pattern.
        buf (str): the text; pos (int): where the search starts.
        factor (str): the literal every match holds after its ``P`` part (non-empty).
        barrier (str): one character.
        end (int | None): the engine's ``endpos`` (a D2 probe's window), None for the whole text.

    Returns:
        what ``pattern.search(buf, pos, partial=True)`` (with ``end``: ``pattern.search(buf, pos,
        end, partial=True)``) returns (the same match), or None. The same for the D2 probe of such
        a pattern: each of its partial matches is a path of the pattern that reached the end.
    """
    n = len(buf) if end is None else end
    lo = buf.rfind(barrier, pos, n)  # a partial match that ends inside P starts at or after it
    if lo >= 0:
        # the first factor, else the leftmost proper prefix of it ending the text (n: neither)
        at = lead_start(buf, pos, (factor,), n)
        if at < n:
            back = buf.rfind(barrier, pos, at)
            if back < lo:
                lo = back
    if lo < pos:
        lo = pos  # a place with no barrier before it: the engine searches from pos
    return window_partial(pattern, buf, lo, n)


def partial_late(pattern: Any, late: Any, buf: str, pos: int, leads: tuple[str, ...] | None) -> Any:
    """``pattern.search(buf, pos, partial=True)`` for a pattern whose start-anchored alternatives
    (``^``, ``\\A``) can match only at offset 0, and ``late``, the pattern without them (None when
    nothing else is left; compiler/automaton.py ``late_pattern``), with ``leads`` its leads, or None.

    The engine in partial mode tries such a pattern at every offset of a long text (inkling's
    ``(?:(?:<\\|message_model\\|>|^)[^<]*)?<\\|content_invoke_tool_json\\|>``: 7 ms over 100 kB of
    prose, 0.3 ms without its ``^``). After offset 0 the two patterns match alike, so ``late``
    is searched there. From offset 0, the answer is the one of a partial search: the leftmost
    complete match if there is one, else the leftmost partial match (``tests/test_stream.py``
    checks both against the engine): the pattern is matched at 0, ``late`` searched after it.

    Returns:
        what ``pattern.search(buf, pos, partial=True)`` returns (a match at the same span with
        the same groups), or None.
    """
    def rest(start: int) -> Any:
        if late is None:
            return None
        if leads:
            return partial_search(late, buf, start, leads)
        return window_partial(late, buf, start)

    if pos:
        found = rest(pos)
    else:
        first = pattern.match(buf, 0, partial=True)
        if first is not None and not first.partial:
            return first
        found = rest(1)
        if found is None or found.partial:
            found = first or found
    if found is None:
        # the engine reports an empty partial match of such a pattern at the end of the text
        # (``^analysis`` over text that does not start with it): the same answer, once more
        found = pattern.match(buf, len(buf), partial=True)
    return found


#: barrier_search: factors looked at one by one before the engine takes over, when they come
#: closer together than BARRIER_SPAN characters on average
BARRIER_ROUNDS = 8
BARRIER_SPAN = 256
#: barrier_search: candidates of one factor that reach it and then fail, before the engine takes over
BARRIER_TRIES = 4
#: barrier_search: with at most this many characters after a factor the engine searches from its
#: barrier itself (two engine calls per factor cost 1-2 us more than one, a 4 kB scan of prose
#: about as much on most patterns)
BARRIER_LONG = 4096


def barrier_search(pattern: Any, buf: str, pos: int, factor: str, barrier: str) -> Any:
    """``pattern.search(buf, pos)`` for a pattern every match of which is ``P + factor + ...``
    where ``P`` never consumes ``barrier`` after its first character (compiler/automaton.py
    ``barrier_plan``, which proves it and checks it on samples): the first ``factor`` from
    ``pos`` is found with ``str.find``, the last ``barrier`` before it with ``str.rfind``, and the
    engine searches from there, since no match starts before it
    (docs/security.md "Whole text at scan speed": a complete text's
    search, where the engine would otherwise try the pattern at every offset from ``pos``).

    Factor by factor: a match that starts at or before that factor runs to its end at
    least (its factor is that one or a later one), so its path reaches the end of the window from
    the barrier to the factor's end, where the engine reports it as partial. The engine searches
    that window only (for a pattern whose matches do not depend on where the text ends,
    :func:`_windowable`); no candidate there: none starts before the factor's end, and the next
    factor is looked at; a candidate is confirmed by matching it over the whole text. A factor
    that belongs to another delimiter (muse_glimmer's ``to=self<|message|>`` before its
    tool-message opener ``...to=[^\\s<]+<|message|>\\s*<atem:function_calls>``, which the engine
    searched at 33 ns a character to the end of the text) then costs its window, not the rest of
    the text. The engine takes the rest itself when at most :data:`BARRIER_LONG` characters follow
    the factor, when the window holds a complete match (an earlier
    partial one might be hidden behind it), after :data:`BARRIER_TRIES` candidates of one window
    that fail, or when factors come closer together than :data:`BARRIER_SPAN` characters after
    :data:`BARRIER_ROUNDS` of them: every answer is the engine's, and the work stays linear. The
    engine calls of one such search share the time limit of the scan that makes them (a bounded
    pattern's limit is per scan position, ``_guard_scanner``), as the one search they replace did.

    Args:
        pattern: a compiled ``regex`` pattern.
        buf (str): the text; pos (int): where the search starts.
        factor (str): the literal every match holds after its ``P`` part (non-empty).
        barrier (str): one character.

    Returns:
        the match ``pattern.search(buf, pos)`` gives (the same span and groups), or None: None
        at once when no ``factor`` follows ``pos``.
    """
    at = buf.find(factor, pos)
    if at < 0:
        return None
    back = buf.rfind(barrier, pos, at)
    lo = back if back > pos else pos
    if not _windowable(pattern):
        return pattern.search(buf, lo)
    began = pos
    rounds = 0
    while True:
        rounds += 1
        if len(buf) - at <= BARRIER_LONG or (rounds > BARRIER_ROUNDS and at - began < rounds * BARRIER_SPAN):
            # little text after the factor (a failed search costs little: one engine call, not
            # a window's and a match's), or factors close together: the engine itself
            return pattern.search(buf, lo)
        end = at + len(factor)
        start = lo
        tries = 0
        while True:
            # a candidate: a start in [start, at] whose path reaches end
            w = pattern.search(buf, start, end, partial=True)
            if w is None or w.start() > at:
                break  # none: no match starts in [lo, at]
            if not w.partial:
                return pattern.search(buf, lo)  # complete in the window: the engine decides
            t = w.start()
            found = pattern.match(buf, t)
            if found is not None:
                return found  # nothing matches from [lo, t): the leftmost match
            tries += 1
            if tries == BARRIER_TRIES:
                return pattern.search(buf, t + 1)
            start = t + 1
        pos = at + 1
        at = buf.find(factor, pos)
        if at < 0:
            return None
        back = buf.rfind(barrier, pos, at)
        lo = back if back > pos else pos


def literal_hold(buf: str, lo: int, firsts: str, prefixes: frozenset) -> int:
    """Leftmost offset ``>= lo`` where the rest of ``buf`` is a proper prefix of a literal.

    This is the partial match of literal delimiters (template-language.md "Choosing the next delimiter"): text from
    that offset on may still become a delimiter, so it is held back.

    Args:
        buf: the buffer.
        lo: the first offset worth looking at (``len(buf) - longest literal + 1``, or the position).
        firsts: the distinct first characters of the literals.
        prefixes: every non-empty proper prefix of every literal.

    Returns:
        int: that offset, or ``len(buf)`` when nothing is pending.
    """
    best = len(buf)
    for first in firsts:
        j = buf.find(first, lo, best)
        while j >= 0:
            if buf[j:] in prefixes:
                best = j
                break
            j = buf.find(first, j + 1, best)
    return best


class LiteralPrefixes:
    """The proper prefixes of some literals, tested with ``in`` like a set of them, in linear space.

    A generated module writes a state's proper prefixes out as a ``frozenset`` while they total at
    most ``compiler.automaton.PREFIX_TABLE_BUDGET`` characters; beyond it (a long literal, whose
    prefixes would cost the square of its length: docs/security.md, "Limits") it writes this
    object, which keeps the literals only and answers ``text in prefixes`` with ``startswith``.

    Args:
        literals (tuple[str, ...]): the literals.
    """

    __slots__ = ("_by_first",)

    def __init__(self, literals: tuple) -> None:
        by_first: dict = {}
        for lit in literals:
            if len(lit) > 1:
                by_first.setdefault(lit[0], []).append(lit)
        self._by_first = {first: tuple(lits) for first, lits in by_first.items()}

    def __contains__(self, text: object) -> bool:
        """Whether ``text`` is a non-empty proper prefix of one of the literals."""
        if not isinstance(text, str) or not text:
            return False
        n = len(text)
        for lit in self._by_first.get(text[0], ()):
            if len(lit) > n and lit.startswith(text):
                return True
        return False


#: body pieces joined into one block at a time (see StreamParser._keep)
BLOCK = 256

#: token ids held at most at the end of a feed as a character still being written (_decode): a
#: character has at most four UTF-8 bytes, each id of a byte-level tokenizer one or more
SPLIT_IDS = 4
#: held text at least this long is searched again only once it has doubled (see StreamParser._run)
LONG_HOLD = 1024
#: _run gives a value decoder the text up to the next delimiter in one piece when it is at most
#: this long, or while such pieces add up to at most VALUE_BUDGET times the buffer in one pass (a
#: long value is then read whole by the json decoder's C reader); else in windows that double from
#: this size (docs/security.md "Whole text at scan speed"): most tool-call values end inside the first one
VALUE_WINDOW = 4096
VALUE_BUDGET = 8

_NO_GROUPS: dict = {}  # shared, read-only: processors copy the scope they are given


def _bounded_of(declared: tuple) -> tuple:
    """A class's ``REGEX_BOUNDED`` from its declared states (``_DECLARED``): ``(pattern, field,
    key)`` per regex delimiter of a ``Pattern`` record whose ``LazyPattern`` has ``bound=``, each
    pattern once (the last record's label, as a written table read into a dict keeps). These are
    the patterns the compiler could not prove linear (docs/security.md, "Limits").

    Args:
        declared (tuple): per state its records (``Literal``, ``Pattern``), or None.

    Returns:
        tuple[tuple[str, str, str], ...]: the table, in the order the records come.
    """
    bounded: dict[str, tuple] = {}
    for records in declared:
        for record in records or ():
            delimiter = getattr(record, "delimiter", None)
            if isinstance(delimiter, LazyPattern) and delimiter._bound is not None:
                bounded[delimiter.pattern] = delimiter._bound
    return tuple((pattern, *label) for pattern, label in bounded.items())


def regrouped(region: Region, groups: tuple) -> Region:
    """``region`` with the named groups ``groups`` instead of its own: the same field, content
    parser, transform and keywords, its processor made again with ``groups`` as its group names
    (``make_field_processor``). The ``errors="recover"`` class of a module writes a region its
    recover-only opener changes only by a group so (docs/template-language.md, "Recover-only
    openers").

    Args:
        region (Region): a region whose ``process`` came from ``make_field_processor``.
        groups (tuple[str, ...]): the named groups of its open and close patterns.

    Returns:
        Region: a new region.

    Raises:
        TypeError: ``region.process`` was not made by ``make_field_processor`` (a hand-built
            region: nothing to make again).
    """
    remake = getattr(region.process, "regrouped", None)
    if remake is None:
        raise TypeError(f"regrouped: {region!r} has no processor made by make_field_processor")
    new = copy.copy(region)
    new.groups = tuple(groups)
    new.process = remake(tuple(groups))
    return new


def _express_table(cls: type) -> tuple:
    """Per state, per rank of a parser class: the closer text when that delimiter opens an
    *express* region, else None (every entry None, or ``()``, for a class without one).

    An express region is one whose open is an ``OPEN`` edge into a state whose one edge is its
    own close, watched as one or more literals (``_DECLARED``: the literal states a module
    declares, runtime/scanners.py; several, gigachat3's ``</s>`` or ``<|message_sep|>``: a tuple,
    the first of which in the text ends the region, :func:`_first_closer`), and whose body needs nothing while it is read: a slot (not discarded),
    no ``end: "value"`` decoder or optional trailing close, no declared repairs, no recover-only
    closer. A tentative open (v2 ``reject``) is one too: the start of its body is decided first,
    up to the closer, as :meth:`StreamParser._probe` decides it (a rejected one is not express).
    On the whole-text path in strict mode
    (:meth:`StreamParser._express`) such a region, once opened, ends at the first occurrence of
    its closer: that is what the scanner of its state answers at the end of the stream, and
    nothing else can happen inside it.
    """
    declared = cls._DECLARED
    edges = cls.TRANSITIONS
    regions = cls.REGIONS
    if len(declared) != len(edges) or len(cls._IS_AFTER) != len(edges):
        return ()
    table = []
    for row in edges:
        out = []
        for action, field, target in row:
            closer = None
            if action == OPEN and field is not None and 0 <= field < len(regions) and 0 <= target < len(edges):
                literals, back, region = declared[target], edges[target], regions[field]
                if (literals and all(isinstance(lit, Literal) and lit.rank == 0 for lit in literals)
                        and len(back) == 1
                        and back[0][0] == CLOSE and back[0][1] == field and not cls._IS_AFTER[target]
                        and region.slot is not None and not region.ends
                        and region.after is None and not cls._REPAIRS[field]
                        and field not in cls._RC_FIELDS):
                    texts = tuple(dict.fromkeys(lit.text for lit in literals))
                    closer = texts[0] if len(texts) == 1 else texts
            out.append(closer)
        table.append(tuple(out))
    return tuple(table) if any(any(row) for row in table) else ()


def _end_quiet(cls: type) -> bool:
    """Whether state 0's scanner, asked at the end of a complete text (``pos == len(buf)``,
    ``eos``), surely answers nothing found and nothing held, ``(-1, 0, 0, None, len(buf))``: every
    delimiter it watches is a literal, or a regex every match of which starts with a non-empty
    lead (searched by ``lead_search``, not under a time limit, no start anchor), so none can match
    the empty rest. The whole-text path then skips that scan after an express region that ended
    the text (:meth:`StreamParser._run`; runtime/scanners.py for the records)."""
    declared = cls._DECLARED
    if not cls._EXPRESS or not declared or declared[0] is None or cls._IS_AFTER[0]:
        return False
    for record in declared[0]:
        if isinstance(record, Literal):
            continue
        if (record.anchored or not record.leads or not all(record.leads)
                or getattr(record.delimiter, "_bound", None) is not None):
            return False
    return True


def _first_closer(buf: str, closers: tuple, at: int) -> tuple[int, str]:
    """Where the first of ``closers`` (an express region's literal closers, :func:`_express_table`)
    starts in ``buf`` from ``at``, and which: the leftmost, the longest of those starting there
    (what a literal scanner answers: runtime/scanners.py); ``(-1, "")`` when none is there."""
    best, which = -1, ""
    for closer in closers:
        c = buf.find(closer, at, best + len(closer) if best >= 0 else None)
        if c >= 0 and (best < 0 or c < best or c == best and len(closer) > len(which)):
            best, which = c, closer
    return best, which


def _chain_table(cls: type) -> tuple:
    """``(leads, pattern, field, closer)`` per opener of an express region (:func:`_express_table`)
    that state 0, the state every express region leaves to, watches, and that no other delimiter
    of state 0 can match where it starts: a literal (``pattern`` None, ``leads`` the literal
    alone) or a regex whose every match starts with one of ``leads`` (not one searched under a
    time limit), where no other delimiter's literal or leads is a prefix of one of them or has
    one as a prefix (a regex delimiter without leads could match anywhere: none then). Matched
    right where the previous express region ended, it is what state 0's scanner answers there
    (the leftmost hit, and nothing else matches at that start), so the next region is read at once
    too (:meth:`StreamParser._run`). A literal of state 0 whose edge closes the outside region
    back to state 0 (a call section's markers, ``<|tool_calls_section_begin|>``) is a link too,
    ``(leads, None, None, None)``: right after a region ended the outside region holds nothing, so
    its close stores nothing, and the chain steps over it (the section-marker cost).
    State 0's delimiters: the records it declares
    (runtime/scanners.py: ``Literal`` and ``Pattern``). Empty when state 0 is an *after*
    state or the outside region has a decoder."""
    declared = cls._DECLARED
    express = cls._EXPRESS
    if not express or not declared or cls._IS_AFTER[0]:
        return ()
    outside = cls.OUTSIDE_FIELD
    if outside is not None and cls.REGIONS[outside].ends:
        return ()
    watched = []
    for record in declared[0] or ():
        if isinstance(record, Literal):
            watched.append((record.text, record.rank, None))
        else:
            # a start-anchored alternative is searched apart after offset 0: no chaining on it
            watched.append((record.delimiter, record.rank, None if record.anchored else record.leads))
    if not watched:
        return ()
    # per delimiter: the literals every match of it starts with (None: unknown)
    heads = [((delimiter,) if isinstance(delimiter, str) else leads) for delimiter, _rank, leads in watched]

    def apart(a: tuple | None, b: tuple | None) -> bool:
        return a is not None and b is not None and all(
            not (x.startswith(y) or y.startswith(x)) for x in a for y in b)

    chain = []
    for k, (delimiter, rank, leads) in enumerate(watched):
        closer = express[0][rank]
        action, field, target = cls.TRANSITIONS[0][rank]
        if closer is None and not (action == CLOSE and field == outside and target == 0
                                   and isinstance(delimiter, str) and field not in cls._RC_FIELDS):
            continue
        if heads[k] is None or (not isinstance(delimiter, str) and getattr(delimiter, "_bound", None) is not None):
            continue
        if all(j == k or apart(heads[k], heads[j]) for j in range(len(watched))):
            pattern = None if isinstance(delimiter, str) else delimiter
            # a close of the outside region back to state 0 (kimi_k2's and deepseek_v3_1's call
            # section markers): field and closer None
            chain.append((tuple(heads[k]), pattern, None if closer is None else field, closer))
    return tuple(chain)
# Stands for "no trigger character at all" (a region that runs to the end of the stream): a chunk
# that happens to contain it just takes the general fast path.
_NO_TRIGGER = "\x00\uffff\x00"
#: ``wide`` of a state with the run quickest path (see _quick_trigger): true, and not True
_RUN_WIDE = 2


def _quick_trigger(triggers: str | None, lazy: bool, run: tuple | None = None) -> tuple:
    """What the quickest paths test with ``not in chunk``, as ``(trigger, wide, t1, t2, t3, held)``.

    ``trigger`` is the first trigger character (``""``: in every chunk, so neither path is
    taken; ``_NO_TRIGGER`` for a state with no trigger); with ``wide`` False that one test is
    all (the quickest path), with ``wide`` the second quickest path also tests ``t2`` and ``t3``
    (the second and third trigger characters, or ``_NO_TRIGGER``): two or three triggers, or a
    ``CONTEXT`` kept lazily (``lazy``, see StreamParser.feed). Four or more, or unknown: neither.
    ``t1`` and ``held`` are ``""`` and None then.

    A state watching one run-and-literal delimiter (``run``: see :func:`_one_run`; the parser
    has ``CONTEXT`` 1) has its own quickest path: ``wide`` is ``_RUN_WIDE``, ``t1`` the
    characters a chunk routed whole must not end with (``_one_run``'s ``ends``), ``t2`` the
    literal's first two characters, which it must not hold, ``t3`` ``""`` (so the second
    quickest path never takes its chunks), and ``held`` what goes on with the text the path
    holds (None: nothing held; see StreamParser.feed).
    """
    if run is not None:
        return triggers, _RUN_WIDE, run[0], run[1], "", None
    if triggers is None or len(triggers) > 3:
        return "", False, "", "", "", None
    rest = tuple(triggers[1:]) + (_NO_TRIGGER,) * (3 - max(len(triggers), 1))
    return (triggers[:1] or _NO_TRIGGER, len(triggers) > 1 or lazy, "") + rest + (None,)

def _one_run(rows: tuple | None, triggers: str | None, heads: tuple | None) -> tuple | None:
    """The run quickest path's data for one state (StreamParser.feed, :func:`_quick_trigger`):
    ``(ends, lead, chars)``, or None when the state does not qualify. ``ends`` maps each
    character a chunk routed whole must not end with -- a class character, or the literal's
    first -- to ``(what goes on with held text ending in it, the class characters)`` (both
    frozensets: the class, or the literal's second character); ``lead`` is the literal's first
    two characters and ``chars`` the class. A state qualifies with run-and-literal delimiters
    (``rows``, as ``_RUNS`` holds them) that share their class and their literal's first two
    characters (one delimiter, or muse_glimmer's three ``[ \\t]*to=self``, ``[ \\t]*to=``,
    ``[ \\t]*to=user``), each literal two characters or more, none of them in the class; exactly
    one trigger character; and no character of a trigger or a head (``heads`` as
    :func:`_read_heads` reads them) in the class or the literals' first character (gpt_oss's
    answer: ``\\s*to=functions\\.``, ``<`` and ``<|``).

    Why that is enough (compiler/automaton.py ``HoldRun``; the same rule as
    :meth:`StreamParser._run_path`): in a chunk without the trigger and without the literal's
    first two characters, no delimiter starts at a trigger, no literal is complete, and the only
    proper prefix of the literal that can end it is its first character; so a partial match can
    only be a trailing run, or a run and that character. Held text that ends in a class
    character is a run (a held head or literal prefix has none), and it can go on into a
    partial match only through a chunk that starts with a class character (a chunk that starts
    with the literal's first character and not with its first two ends it); held text that ends
    in the literal's first character, without the literal's first two, is a run and that
    character, and only the literal's second character goes on with it. Several delimiters
    with the same class and the same first two literal characters change none of this: a chunk
    without those two holds none of their literals, and a proper prefix of one that ends it is
    the shared first character."""
    if not rows or triggers is None or len(triggers) != 1:
        return None
    chars, literal, _ = rows[0]
    first = literal[0]
    seen = set(triggers) | (set().union(*heads[0]) if heads is not None else set())
    for other, lit, _ in rows:
        if other != chars or len(lit) < 2 or lit[:2] != literal[:2] or chars.intersection(lit):
            return None
    if first in seen or chars.intersection(seen):
        return None
    ends = {c: (chars, chars) for c in chars}
    ends[first] = (frozenset(literal[1]), chars)
    return ends, literal[:2], chars


def _prefixes_by_last(literal: str) -> dict[str, tuple[str, ...]]:
    """The non-empty proper prefixes of ``literal``, keyed by their last character."""
    out: dict[str, tuple[str, ...]] = {}
    for k in range(1, len(literal)):
        out[literal[k - 1]] = out.get(literal[k - 1], ()) + (literal[:k],)
    return out


def _run_hold(w: str, chars: frozenset, by_last: dict) -> int:
    """Leftmost offset from which ``w``'s rest is a run of ``chars`` then a proper prefix of a
    literal (``by_last``: its prefixes by last character), ``len(w)`` when there is none."""
    n = len(w)
    best = n
    c = w[-1]
    ends = by_last.get(c)
    if ends is not None:
        for p in ends:
            if w.endswith(p):
                k = n - len(p)
                while k and w[k - 1] in chars:
                    k -= 1
                if k < best:
                    best = k
    if c in chars:
        k = n - 1
        while k and w[k - 1] in chars:
            k -= 1
        if k < best:
            best = k
    return best


def _read_heads(triggers: str | None, heads: Any) -> tuple | None:
    """FAST_PATH's heads of one state as :func:`_trigger_hold` reads them: None (unknown), or
    ``(heads, k, partial, search)`` (``search``: :func:`_hold_search`'s, None until
    :func:`_searching_heads` compiles it): the heads (all ``k`` characters long; a mix is cut to the shortest,
    which only scans more), and every proper prefix of one, each trigger character among them (a
    trigger ending a chunk is held, as it always was)."""
    if heads is None:
        return None
    k = min((len(h) for h in heads), default=2)
    starts = frozenset(h[:k] for h in heads)
    partial = {h[:i] for h in starts for i in range(1, k)} | set(triggers or "")
    return starts, k, frozenset(partial), None


def _searching_heads(cls: type) -> None:
    """Give each state's heads of ``cls._FAST`` its :func:`_hold_search` (the fourth member,
    None until then): by the class's first parser, so that importing a module compiles no
    pattern (README.md "Performance"), as its scanners and delimiters are compiled by their first use."""
    cls._FAST = tuple((triggers, heads if heads is None else heads[:3] + (_hold_search(triggers, heads[0], heads[2]),))
                      for triggers, heads in cls._FAST)
    cls._FAST_SEARCH = True


def _hold_search(triggers: str | None, starts: frozenset, partial: set) -> Callable | None:
    """The ``search`` of one stdlib ``re`` pattern that answers :func:`_trigger_hold_plain` for
    a state in one engine call (its loop of ``find`` calls and slices was most of the
    cost of a chunk holding a ``<``): group 1, a head at a trigger character (scan); else group
    2, the leftmost trigger that begins a proper prefix of a head ending the text (held). Only
    heads and prefixes that begin with a trigger character are in it, as the loop looks only
    there; a head is ``k`` characters and a held prefix fewer, so the leftmost match is the
    loop's answer. None (the loop decides) without triggers."""
    if not triggers:
        return None
    heads = sorted(h for h in starts if h[0] in triggers)
    held = sorted(p for p in partial if p[0] in triggers)
    alternatives = []
    if heads:
        alternatives.append("(" + _trie_source(heads) + ")")
    if held:
        alternatives.append("((?:" + _trie_source(held) + r")\Z)")
    if not alternatives:
        return None
    if not heads:
        alternatives.insert(0, "((?!))")
    return re.compile("|".join(alternatives), re.DOTALL).search


def _trie_source(texts: list[str]) -> str:
    """A stdlib ``re`` source matching exactly the non-empty ``texts``, as a trie: the texts
    that share a first character share one branch, and one-character rests are one class
    (llama4_pythonic's 80 heads ``[`` then a letter or a space are ``\\[[...]``, which ``re``
    reads in one step instead of trying 80 branches)."""
    by_first: dict[str, list[str]] = {}
    for text in texts:
        by_first.setdefault(text[0], []).append(text[1:])
    branches = []
    for first in sorted(by_first):
        rests = by_first[first]
        ends = "" in rests
        rests = sorted(r for r in rests if r)
        if not rests:
            branches.append(re.escape(first))
            continue
        if all(len(r) == 1 for r in rests):
            inner = rests[0] if len(rests) == 1 else "[" + "".join(_class_char(r) for r in rests) + "]"
            inner = re.escape(inner) if len(rests) == 1 else inner
        else:
            inner = "(?:" + _trie_source(rests) + ")"
        branches.append(re.escape(first) + inner + ("?" if ends else ""))
    return "|".join(branches)


def _class_char(c: str) -> str:
    """``c`` written to stand for itself inside a ``re`` character class."""
    return "\\" + c if c in "\\]^-[" else c


def _trigger_hold(text: str, triggers: str, heads: tuple | None) -> int:
    """Where the fast paths must stop in ``text``: -1 when a trigger character begins one of the
    state's ``heads`` (see :func:`_read_heads`; a delimiter may begin there: scan; ``heads``
    None: any trigger), else the offset of the leftmost trigger that begins a proper prefix of a head
    ending ``text`` (held: a delimiter may begin there), else ``len(text)`` (nothing to hold).
    The answer of :func:`_trigger_hold_plain`, in one search of :func:`_hold_search`'s pattern
    when the state has one (tests/test_stream.py compares them)."""
    if heads is not None:
        search = heads[3]
        if search is not None:
            for c in triggers:
                if c in text:
                    found = search(text)
                    if found is None:
                        return len(text)
                    return -1 if found.lastindex == 1 else found.start()
            return len(text)  # (no trigger: nothing to search)
    return _trigger_hold_plain(text, triggers, heads)


def _trigger_hold_plain(text: str, triggers: str, heads: tuple | None) -> int:
    """:func:`_trigger_hold` by its definition: each trigger character's occurrences in turn."""
    cut = n = len(text)
    for c in triggers:
        if c not in text:
            continue  # (most chunks have none: no find)
        j = text.find(c)
        while j >= 0:
            if heads is None:
                return -1
            starts, k, partial = heads[:3]
            if n - j >= k:
                if text[j:j + k] in starts:
                    return -1
            elif j < cut and text[j:] in partial:
                cut = j
            j = text.find(c, j + 1)
    return cut


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, (list, dict, str)) and not value)


def _escaped_newline_hint(anchor: Any, prefix: str) -> str:
    r"""The end of a ``prefix-without-anchor`` message when the prefix was typed with ``\n`` for a newline.

    A prompt such as ``<|im_start|>assistant\n`` passed in single quotes on a command line holds a
    backslash and an ``n``, not a newline, so a start anchor that ends in a newline is not found.
    Returns "" when reading those two characters as a newline would not find the anchor either.
    """
    if "\\n" not in prefix or anchor.search(prefix.replace("\\r", "\r").replace("\\n", "\n")) is None:
        return ""
    return ("; the prefix holds a backslash and 'n' (\\n) where the start anchor has a newline: pass a real "
            "newline (in a shell: --prefix $'...\\n', or --prefix-file)")



def _become_recover(parser: "StreamParser") -> None:
    """Make ``parser``, built with ``errors="recover"``, an instance of its class's ``RECOVER_CLASS``
    (docs/template-language.md, "Recover-only openers"). A class whose recover class is a subclass of it
    (the generated ``ResponseParser``) gets that one; a caller's subclass of the strict class (an
    override of some table or method) gets a class made once per subclass, its overrides over the
    recover class's tables. Both have the strict class's layout, so ``__class__`` may be set."""
    cls = type(parser)
    recover = cls.RECOVER_CLASS
    if isinstance(parser, recover):
        return
    if not issubclass(recover, cls):
        combined = cls.__dict__.get("_RECOVER_OF_SUBCLASS")
        if combined is None:
            combined = type(cls.__name__, (cls, recover), {"__module__": cls.__module__, "__slots__": (),
                                                           "__qualname__": cls.__qualname__})
            combined.RECOVER_CLASS = combined
            cls._RECOVER_OF_SUBCLASS = combined
        recover = combined
    parser.__class__ = recover

class StreamParser:
    """Base class of every generated ``ResponseParser`` (events.md "The parser object"; template-language.md
    "Matching").

    Subclasses set the class attributes below; nothing here depends on one template.

    Args:
        prefix (str | Sequence[int]): the prompt before generation (required; ``""`` or ``[]``
            opts out). Cut after the last start anchor, then run through the parser (template-language.md "The
            prefix and the start anchor").
        tools (list | None): JSON-schema tools or typed Python callables (template-language.md "Tool-argument typing").
        tokenizer: object with ``decode(ids) -> str``, needed when text comes as token ids.
        regex_timeout (float | None): seconds one search of a regex delimiter not proven to search
            in linear time may run (None: :data:`REGEX_TIMEOUT`; docs/security.md, "Limits").
            Strict: ``RegexTimeoutError``; recover: a ``regex-timeout`` diagnostic.

    Raises:
        ValueError: ``prefix`` is None, or ``regex_timeout`` is not a positive number of at most
            :data:`MAX_REGEX_TIMEOUT` seconds (a bool is no number here).
        TypeError: token ids without a tokenizer.
    """

    # --- filled in by the generated subclass -------------------------------------------------
    SOURCE: str = ""
    FIELD_NAMES: tuple = ()
    #: one :class:`Region` per field, in declaration order
    REGIONS: tuple = ()
    #: message keys of the ``optional: false`` fields
    REQUIRED: tuple = ()
    DEFAULTS: dict = {}
    OUTSIDE_FIELD: int | None = None
    START_ANCHOR: Any = None
    #: the start anchor is not proven to search in linear time (compiler/backtracking.py
    #: ``linear_time_problem``): its search of the prefix runs under the time limit
    START_ANCHOR_BOUNDED: bool = False
    SCANNERS: tuple = ()
    #: how many delimiter search results a scan memo holds
    MEMO_SLOTS: int = 0
    #: per state, per rank: the :class:`Edge` taken when that watched delimiter commits
    TRANSITIONS: tuple = ()
    #: per state: (characters any watched delimiter can start with, or None when unknown;
    #: the first three (or two) characters of every watched delimiter, or None) -- see
    #: automaton.State.heads
    FAST_PATH: tuple = ()
    #: characters of decided text regex delimiters must still see; None keeps everything
    CONTEXT: int | None = 0
    #: True when ``CONTEXT`` is there only so that ``^`` and ``\\A`` cannot match at a trimmed
    #: buffer start (compiler/automaton.py ``Automaton.anchor_context``): any decided characters
    #: do that, so the quickest paths leave the buffer as it was instead of keeping the chunk's tail
    ANCHOR_CONTEXT: bool = False
    #: per state: None, or ``(class characters, literal)`` per watched delimiter that is a run of
    #: the class then the literal (compiler/automaton.py ``HoldRun``); empty: none anywhere
    HOLD_RUNS: tuple = ()
    #: per state: None, or per eligible regex delimiter ``(edge, tests, first, follow, last)``
    #: (a tuple, or its JSON text as generated modules write it, runtime/held.py
    #: ``automaton_table``): its position automaton, read while it is pending instead of scanning
    #: (compiler/held.py, runtime/held.py); empty: none anywhere
    HOLD_REGEX: tuple = ()
    #: per state: None, or ``(literals, span, firsts, prefixes)`` when it watches literal
    #: delimiters only (compiler/automaton.py ``ScanPlan.literals``): the fast path decides held
    #: text holding no literal itself (:meth:`_run_path`); empty: none anywhere
    HOLD_LITERALS: tuple = ()
    #: ``(closer, open_pattern, field)`` per literal close of an explicit field (compiler/emit.py
    #: ``_stray_closers``): errors="recover" reports a closer with no opener in a text region
    STRAY_CLOSERS: tuple = ()
    #: ``(pattern, field, key)`` per regex delimiter not proven to search in linear time
    #: (compiler/backtracking.py ``linear_time_problem``): its searches run with ``timeout=``
    #: (:class:`BoundedPattern`); empty for most modules, which then pay nothing
    REGEX_BOUNDED: tuple = ()
    #: v2 template key ``diagnostics``: the message key that receives :attr:`diagnostics` at
    #: finalize when there are any (None: they stay on the parser only)
    DIAGNOSTICS_KEY: str | None = None

    __slots__ = ("_buf", "_pos", "_state", "_field", "_name", "_dirty", "_opened", "_body", "_blocks", "_groups",
                 "_out", "_tools", "_tokenizer", "_done", "_quiet", "_triggers", "_heads", "_rescan_at",
                 "_tail", "_tail_len", "_trigger", "_context", "_region", "_bd", "_stack", "_tent", "_back",
                 "_defer", "_cdefer", "_held", "_rc_spent", "_mark", "_sunk", "_open_at", "_open_text", "_gaps", "_recover", "_eos_hold", "_id_tail",
                 "_again", "_offsets", "_exact", "diagnostics", "initial_events", "ledger", "_wide", "_t1",
                 "_t2", "_t3", "_rheld", "_last", "_bdq", "_hd", "_rxt", "_rxskip", "_rxbase", "_rxbuf", "_rxat",
                 "_rxspent", "_loose", "boundary_hook", "_mute", "_ins", "_spans")

    #: per state: what the quickest paths test with ``not in chunk`` (see _quick_trigger)
    _QUICK: tuple = ()
    #: per state: True for the *after* states of v2 (see automaton.build_automaton)
    _IS_AFTER: tuple = ()
    #: per state: its triggers are known (``FAST_PATH``), so with nothing left to read after
    #: offset 0 no watched delimiter can commit and no text is held: _run need not scan
    #: (tests/test_stream.py's parsers without FAST_PATH scan, and must give the same events)
    _KNOWN: tuple = ()
    #: per field: its declared-repair group names (REPAIR_GROUP), empty for most
    _REPAIRS: tuple = ()
    #: per field: a v2 ``"role": "tool_calls"`` region (typed while others are not), whose plain
    #: ``text`` body is a call's argument, so the end of the output cannot end it (_cut_off)
    _CALLS: tuple = ()
    #: STRAY_CLOSERS with the open patterns as LazyPattern (without DOTALL; only errors="recover"
    #: searches them, so an import does not compile them)
    _STRAY: tuple = ()
    #: per state: HOLD_RUNS as ``(frozenset of class characters, literal, {last character: its
    #: proper prefixes ending with it})``, or None
    _RUNS: tuple = ()
    #: per state: HOLD_REGEX as a :class:`~respc.runtime.held.HeldRegex`, or None
    _HELD: tuple = ()
    #: per state: ``(triggers, heads)`` of FAST_PATH with the heads as :func:`_read_heads` reads them
    _FAST: tuple = ()
    #: per state: the run quickest path's data (see :func:`_one_run`), or None
    _RUN1: tuple = ()
    #: per state: HOLD_LITERALS, or None (every state None when the module has none)
    _LITS: tuple = ()
    #: per state: the records its module declares (runtime/scanners.py), or None
    _DECLARED: tuple = ()
    #: per state, per rank: the closer of an express region (:func:`_express_table`), or None
    _EXPRESS: tuple = ()
    #: whether state 0's scan at the end of a complete text surely finds nothing (:func:`_end_quiet`)
    _END_QUIET: bool = False
    #: the express regions read at once when they open right where one ended (:func:`_chain_table`)
    _CHAIN: tuple = ()
    _CHAIN_LEADS: tuple = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "SCANNERS" in cls.__dict__:
            # what each state of this class is known to watch (the express regions read it): a
            # class that gives its own scanners declares nothing it inherited
            cls._DECLARED = tuple(scan if isinstance(scan, tuple) else None for scan in cls.SCANNERS)
        if "SCANNERS" in cls.__dict__ and any(isinstance(scan, tuple) for scan in cls.SCANNERS):
            # the states a module declares by their literal delimiters: the runtime builds their
            # scanners and HOLD_LITERALS entries (runtime/scanners.py;
            # docs/security.md "Declared scanners and named records")
            declared = tuple(scan if isinstance(scan, tuple) else None for scan in cls.SCANNERS)
            cls._DECLARED = declared
            # the memo slots the class writes (a module of ABI 4 writes its regex states' slots), not its
            # base class's: the runtime gives the rest
            cls.SCANNERS, cls.MEMO_SLOTS, holds = build_scanners(cls, cls.SCANNERS, cls.__dict__.get("MEMO_SLOTS", 0))
            if "HOLD_REGEX" in cls.__dict__:
                # a state's entry HELD_LITERALS, or HELD_LITERALS last in its tuple after the
                # automata written out: its literal delimiters' automata
                cls.HOLD_REGEX = tuple(
                    literal_automata(declared[k]) if entry is HELD_LITERALS
                    else entry[:-1] + literal_automata(declared[k])
                    if isinstance(entry, tuple) and entry and entry[-1] is HELD_LITERALS else entry
                    for k, entry in enumerate(cls.HOLD_REGEX))
            if "REGEX_BOUNDED" not in cls.__dict__:
                # the regex delimiters searched under the time limit are those declared with
                # bound= (a module of ABI 7 does not list them again; runtime/scanners.py Pattern)
                cls.REGEX_BOUNDED = _bounded_of(cls._DECLARED)
            declared = cls.HOLD_LITERALS or (None,) * len(holds)
            cls.HOLD_LITERALS = tuple(HoldLiterals(*hold) if hold is not None else entry
                                      for hold, entry in zip(holds, declared))
        runs = cls.HOLD_RUNS or (None,) * len(cls.FAST_PATH)
        cls._RUNS = tuple(None if not rows else tuple((frozenset(chars), factor, _prefixes_by_last(factor))
                                                      for chars, factor in rows) for rows in runs)
        cls._IS_AFTER = tuple(bool(edges) and edges[0][0] == AFTER for edges in cls.TRANSITIONS)
        # v2 roles: some region is not typed, so the typed ones are exactly the tool-call regions
        cls._CALLS = tuple(r.typed and any(not o.typed for o in cls.REGIONS) for r in cls.REGIONS)
        cls._KNOWN = tuple(triggers is not None for triggers, _ in cls.FAST_PATH)
        cls._REPAIRS = tuple(tuple(g for g in r.groups if g.startswith(REPAIR_GROUP)) for r in cls.REGIONS)
        # fields with recover-only closers: whether one stands inside an open value is told by the
        # format's inside reader, as for every closer (_inside_at_close); a zero-width one of a body
        # whose format has no such reader (text: no structure to ask) is held until the region's
        # own closer is known not to follow (_close_deferred): a block that mentions the token and
        # then closes is text (docs/security.md, "Closers inside an open value")
        cls._RC_FIELDS = frozenset(k for k, r in enumerate(cls.REGIONS)
                                   if any(g.startswith(RECOVER_CLOSER_GROUP) for g in r.groups))
        cls._EXPRESS = _express_table(cls)
        cls._CHAIN = _chain_table(cls)
        # every lead of the chain's links: one startswith tells whether any can start here
        cls._CHAIN_LEADS = tuple(lead for leads, _p, _f, _c in cls._CHAIN for lead in leads)
        cls._END_QUIET = _end_quiet(cls)
        bounded = {pattern: (name, key) for pattern, name, key in cls.REGEX_BOUNDED}
        cls._STRAY = tuple((closer, LazyPattern(pattern, 0, bound=bounded.get(pattern)), field)
                           for closer, pattern, field in cls.STRAY_CLOSERS)
        if bounded and "REGEX_BOUNDED" in cls.__dict__:
            # searches of these patterns run with timeout=; a scan that meets one running out
            # goes to _search_timed_out (docs/security.md, "Limits"). Only on the class that
            # declares them: a subclass's own _run still reaches this one through super()
            cls._run = StreamParser._run_bounded
            cls.SCANNERS = tuple(_guard_scanner(scan) for scan in cls.SCANNERS)
        elif "REGEX_BOUNDED" in cls.__dict__ and cls._run is StreamParser._run_bounded:
            # a recover class (RECOVER_CLASS) that declares none under a strict class that has some
            cls._run = StreamParser._run
        # HeldRegex decodes and compiles its tables when first built (_held_regex; runtime/held.py)
        cls._HELD = tuple(None if table is None else HeldRegex(*table, lazy=True)
                          for table in (cls.HOLD_REGEX or (None,) * len(cls.FAST_PATH)))
        cls._FAST = tuple((triggers, _read_heads(triggers, heads)) for triggers, heads in cls.FAST_PATH)
        cls._LITS = cls.HOLD_LITERALS or (None,) * len(cls.FAST_PATH)
        cls._RUN1 = tuple(_one_run(rows, triggers, heads) for rows, (triggers, heads) in zip(cls._RUNS, cls._FAST))
        if cls.CONTEXT == 0 and any(one is not None for one in cls._RUN1):
            # The run quickest path keeps one decided character before the text it holds
            # (StreamParser.feed, _held_run): a template whose delimiters need no context
            # (muse_glimmer) keeps one, for start anchors only (ANCHOR_CONTEXT), as gpt_oss does.
            # Keeping more decided text than the delimiters read changes no search.
            cls.CONTEXT = 1
            cls.ANCHOR_CONTEXT = True
        # a state with runs takes the quickest path only through its own branch (a chunk ending in
        # the class is held), and only with one run delimiter and CONTEXT 1 (see _quick_trigger)
        lazy = bool(cls.CONTEXT) and not cls.ANCHOR_CONTEXT
        run1 = cls._RUN1 if cls.CONTEXT == 1 else (None,) * len(cls._RUN1)
        cls._QUICK = tuple(_quick_trigger(None if cls._RUNS[k] is not None and run1[k] is None else triggers,
                                          lazy, run1[k])
                           for k, (triggers, _) in enumerate(cls.FAST_PATH))

    #: the parser class a parser built with ``errors="recover"`` becomes (at the start of :meth:`__init__`,
    #: :func:`_become_recover`): a subclass whose scanners also accept the template's recover-only openers
    #: (docs/template-language.md, "Recover-only openers"); None: the template has none, one class serves
    #: both modes
    RECOVER_CLASS: type | None = None

    def __init__(self, prefix: Any = None, tools: list | None = None, tokenizer: Any = None,
                 errors: str = "strict", ledger: bool = False, offsets: bool = False,
                 regex_timeout: float | None = None) -> None:
        if errors == "recover" and self.RECOVER_CLASS is not None:
            # a recover-mode parser of a template with recover-only openers becomes a RECOVER_CLASS
            # here, before any state is set (so a strict parser, and any parser of a template without
            # them, pays one comparison; there is no __new__ to call)
            _become_recover(self)
        if prefix is None:
            raise ValueError(PREFIX_REQUIRED)
        if regex_timeout is not None and not (isinstance(regex_timeout, (int, float))
                                              and not isinstance(regex_timeout, bool)
                                              and 0 < regex_timeout <= MAX_REGEX_TIMEOUT):
            raise ValueError(f"regex_timeout must be a positive number of seconds, at most {MAX_REGEX_TIMEOUT:,.0f} "
                             f"(docs/security.md, \"Limits\"), got {regex_timeout!r}")
        #: seconds a search of a delimiter not proven linear may run (None: REGEX_TIMEOUT)
        self._rxt = regex_timeout
        self._rxskip = None
        #: response offset the last scan started at, and the bounded searches' seconds since
        self._rxat = -1
        self._rxspent = 0.0
        #: True on a parser the whole-text path finishes (runtime/whole.py ``finish``): its events
        #: are returned by no call, so ``_begin``, ``_route`` and ``_close`` build none
        #: (docs/security.md "Whole text at scan speed")
        self._mute = False
        if errors not in ERRORS:
            raise ValueError(f"errors must be one of {list(ERRORS)}, got {errors!r}")
        self._recover = errors == "recover"
        if not self._recover and type(self).RECOVER_CLASS is type(self):
            # a recover class built strict (called directly, or a caller's subclass of it): strict never
            # reads recover-only delimiters; a recover class's first base is the class it was made for
            # (emit.py: _RecoverParser(ResponseParser); _become_recover: (subclass, recover class))
            self.__class__ = type(self).__bases__[0]
        #: ``offsets=True``: every event also carries ``start``/``end``, response offsets (see
        #: docs/events.md, "Offsets"); the unscanned fast path is then off
        self._offsets = bool(offsets)
        #: what was repaired, dropped or could not be parsed: dicts with ``kind``, ``field``,
        #: ``start``/``end`` (offsets in the response text) and ``message`` (and ``text``)
        self.diagnostics: list[dict] = []
        #: with ``ledger=True``: where every character went, ``(start, end, kind)`` in response
        #: offsets (negative: the prefix remainder), kind ``"text"`` (a region_chunk of a field),
        #: ``"delimiter"`` (an opener or closer consumed), ``"discarded"`` (the text of a region
        #: whose slot is null, or outside every region when the template has no implicit field)
        #: or ``"diagnostic"`` (text a diagnostic holds instead: a truncated delimiter, a
        #: repeated opener). The entries tile the input; tests/test_recover_properties.py checks it.
        self.ledger: list[tuple[int, int, str]] | None = [] if ledger else None
        self._eos_hold = None
        #: (buffer, pos, HeldRegex, DFA state after buffer[pos:]) of the last held-regex read (_held_regex)
        self._hd = None
        #: errors="recover": the opener of the region just opened, while its body may still start
        #: with that opener written again (see _reopened)
        self._again: tuple[str, str, str | None] | None = None
        #: text routed into a call section (a null-slot region that nests calls) since the last
        #: call: [start, end, pieces, holds more than whitespace] (see _section_text)
        self._loose: list | None = None
        self._id_tail: list = []
        self._mark = 0
        self._sunk = 0
        self._open_at = None
        self._open_text = ""
        #: errors="recover": text consumed inside the current region's span that is not its body
        #: (a repaired copy of a delimiter), as (body length there, text); see _raw
        self._gaps = None
        prefix = to_text(prefix, tokenizer, "prefix")
        self._tokenizer = tokenizer
        params = tool_parameters(tools) if tools is not None else None
        self._tools = compile_tool_types(params) if params else None
        self._buf = ""
        self._pos = 0
        self._state = 0
        self._stack: list[tuple] = []
        self._tent = None
        self._defer = None
        #: errors="recover": a closer met inside an open value, held until decided (_close_deferred)
        self._cdefer: list | None = None
        #: the region being closed passed over a closer held inside a value: its body must parse strictly
        self._held = 0
        #: a held zero-width recover closer fired at the end of the output: no own closer follows
        #: anywhere after it, so later ones fire at once
        self._rc_spent = False
        self._back = 0
        #: None, or ``hook(region, match) -> decoder``: makes the boundary decoder of each region with
        #: ``end: "value"`` that a delimiter opens (``match``: the opener's match), instead of
        #: ``region.boundary()``. The OpenAI adapter sets it so that the body of a tool-call region is
        #: read by one scanner, its json argument reader (docs/formats.md, "One reader for the end and
        #: the arguments"). The decoder must keep the :class:`Boundary` contract of
        #: ``runtime/formats/base.py`` and find the end ``region.boundary()`` finds.
        self.boundary_hook: Callable[[Any, Any], Any] | None = None
        if "_FAST_SEARCH" not in type(self).__dict__:
            _searching_heads(type(self))
        self._enter(self.OUTSIDE_FIELD)
        self._out = {key: _copy(value) for key, value in self.DEFAULTS.items()}
        #: per message key of a field that neither joins nor repeats: the offsets of the block
        #: whose value it holds (the ``overwritten`` diagnostic names them, see _store)
        self._spans = {}
        self._done = False
        self._quiet = self._bdq = False
        self._triggers, self._heads = self._FAST[0]
        self._trigger, self._wide, self._t1, self._t2, self._t3, self._rheld = self._QUICK[0]
        # the context the quickest paths keep: none when it only stops start anchors (the buffer
        # keeps the characters it had); else they take a chunk of at least CONTEXT characters,
        # and the context the scanners need is its own tail, kept lazily in _last (see _sync)
        self._context = 0 if self.ANCHOR_CONTEXT else self.CONTEXT
        self._last = None
        self._rescan_at = 0
        self._tail: list[str] = []
        self._tail_len = 0
        self.initial_events: list[dict] = []
        if prefix:
            last = self._anchor_end(prefix)
            if last is None:
                logger.info("%s: start anchor not found in the prefix; the whole prefix is parsed", self.SOURCE)
                self.diagnostics.append({
                    "kind": "prefix-without-anchor", "field": None, "start": 0, "end": 0,
                    "message": ("the start anchor is not in the prefix; "
                                + ("the prefix is ignored (errors='recover')" if self._recover
                                   else "the whole prefix was parsed as the start of the response")
                                + _escaped_newline_hint(self.START_ANCHOR, prefix)),
                })
                rest = "" if self._recover else prefix
            else:
                rest = prefix[last:]
            if rest:
                # offsets count from the start of the response: the prefix remainder lies before 0
                self._mark = -len(rest)
                self._buf = rest
                self._guarded(self.initial_events, False)

    def _anchor_end(self, prefix: str) -> int | None:
        """Where the last start anchor in ``prefix`` ends (None: there is none).

        Linear in the prefix (docs/security.md, "Start anchor search"): a literal anchor, or a
        pattern ``linear_time_problem`` proves linear, is searched as is (each match ends where
        the next search starts, and the proof bounds how much text attempts from different
        offsets share). Any other anchor (``START_ANCHOR_BOUNDED``) is searched under the parser's
        ``regex_timeout`` (else :data:`REGEX_TIMEOUT`), for the whole prefix: strict raises
        :class:`~respc.runtime.errors.RegexTimeoutError` (field ``None``, key
        ``start_anchor_pattern``); recover takes the anchor as not found (the prefix is ignored)
        and lists a ``regex-timeout`` diagnostic.
        """
        last = None
        if not self.START_ANCHOR_BOUNDED:
            for match in self.START_ANCHOR.finditer(prefix):
                last = match.end()
            return last
        limit = self._rxt or _module_limit()
        try:
            for match in self.START_ANCHOR.finditer(prefix, timeout=limit):
                last = match.end()
        except TimeoutError:
            error = RegexTimeoutError(None, "start_anchor_pattern", self.START_ANCHOR.pattern, None, limit)
            if not self._recover:
                raise error from None
            self.diagnostics.append({"kind": "regex-timeout", "field": None, "start": 0, "end": 0,
                                     "message": f"{error}; the prefix is ignored (errors='recover')", "text": ""})
            return len(prefix)
        return last

    # --- public API (events.md "The parser object") -----------------------------------------------------------------
    def feed(self, text: Any) -> list[dict]:
        """Feed the next piece of model output and return the events it produced (events.md "The events").

        Args:
            text (str | Sequence[int]): text, or token ids decoded with the tokenizer.

        Returns:
            list[dict]: ``region_open`` / ``region_chunk`` / ``region_close`` events, in order.

        Raises:
            RuntimeError: (ParserStateError) after ``finalize`` or after an earlier error.
            ValueError / KeyError: a region body failed to parse or transform (template-language.md "Content
            parsers", "Transforms").
        """
        if self._quiet and text.__class__ is str:
            if self._trigger not in text and text:
                wide = self._wide
                if not wide:
                    # The commonest chunk: plain text, no trigger character, nothing to keep.
                    body = self._body
                    body.append(text)
                    if len(body) >= BLOCK:
                        self._blocks.append("".join(body))
                        body.clear()
                    return [{"type": "region_chunk", "field": self._name, "text": text, "dirty": self._dirty}]
                # (the run quickest path's t3 is "", in every chunk: it goes straight to its own branch)
                if wide is not _RUN_WIDE and self._t2 not in text and self._t3 not in text:
                    # The same with two or three trigger characters, or with a CONTEXT the regex
                    # delimiters must see: that context is the chunk's own tail when it has
                    # CONTEXT characters or more, so only the chunk is remembered and the buffer
                    # is made from it when it is next read (_sync).
                    context = self._context
                    if not context or len(text) >= context:
                        body = self._body
                        body.append(text)
                        if len(body) >= BLOCK:
                            self._blocks.append("".join(body))
                            body.clear()
                        if context:
                            self._last = text
                        return [{"type": "region_chunk", "field": self._name, "text": text, "dirty": self._dirty}]
                if wide is _RUN_WIDE and self._t2 not in text:
                    # A state watching one run-and-literal delimiter (gpt_oss's answer; _one_run,
                    # _quick_trigger), with nothing held (_rheld None) or a run, or a run and the
                    # literal's first character, held after one decided character (_rheld: the
                    # characters that go on with it): a chunk without the trigger and the literal's
                    # first two characters that does not go on with the held text holds a partial
                    # match only in its trailing run, or a run and the literal's first character.
                    # The rest goes out as one chunk, with the held text in front, as _run_path
                    # routes it (CONTEXT is 1).
                    held = self._rheld
                    if held is None or text[0] not in held:
                        last = text[-1]
                        if last not in self._t1:
                            if held is not None:
                                text = self._buf[1:] + text
                                self._rheld = None
                            body = self._body
                            body.append(text)
                            if len(body) >= BLOCK:
                                self._blocks.append("".join(body))
                                body.clear()
                            self._last = text
                            return [{"type": "region_chunk", "field": self._name, "text": text, "dirty": self._dirty}]
                        goes_on, chars = self._t1[last]
                        k = len(text) - 1
                        while k and text[k - 1] in chars:
                            k -= 1
                        if len(text) - k < LONG_HOLD:
                            if k:
                                head = self._buf[1:] + text[:k] if held is not None else text[:k]
                                self._buf = text[k - 1:]  # the last decided character, then the held text
                            elif held is not None and held is not chars:
                                # a run and the literal's first character held, and the chunk does
                                # not go on with it: the held text goes out, the chunk is held
                                head = self._buf[1:]
                                self._buf = head[-1] + text
                            else:
                                # the whole chunk is held: a run (nothing held before it), or the
                                # literal's first character after a held run
                                last = self._last
                                if held is not None:
                                    self._buf += text
                                else:
                                    self._buf = (self._buf[-1] if last is None else last[-1]) + text
                                self._pos = 1
                                self._last = None
                                self._rheld = goes_on
                                return []
                            body = self._body
                            body.append(head)
                            if len(body) >= BLOCK:
                                self._blocks.append("".join(body))
                                body.clear()
                            self._pos = 1
                            self._last = None
                            self._rheld = goes_on
                            return [{"type": "region_chunk", "field": self._name, "text": head, "dirty": self._dirty}]
            if self._last is not None:
                self._sync()
            runs = self._RUNS[self._state]
            if runs is not None or self._pos < len(self._buf):
                # a state watching a run-and-literal delimiter, or a trigger character held by
                # the fast path below: the fast path that reads held text (None: scan)
                events = self._run_path(text, runs or ())
                if events is not None:
                    return events
            else:
                # Fast path: nothing is held and no character of the chunk can start a watched
                # delimiter (a trigger character, followed by a character that continues one), so
                # the scanners could only route it whole to the open region.
                # (_quiet is never set once the parser is finalized or failed.)
                heads = self._heads
                if heads is not None and heads[3] is not None:
                    # _trigger_hold's search, called here (a chunk holding a trigger character
                    # took two calls more than a plain one)
                    found = heads[3](text)
                    cut = len(text) if found is None else -1 if found.lastindex == 1 else found.start()
                else:
                    cut = _trigger_hold(text, self._triggers, heads)
                if cut < 0 and self._LITS[self._state] is not None:
                    events = self._run_path(text, ())
                    if events is not None:
                        return events
                elif cut >= 0:
                    if cut == len(text):
                        if not text:
                            return []
                        body = self._body  # (_keep, written out)
                        body.append(text)
                        if len(body) >= BLOCK:
                            self._blocks.append("".join(body))
                            body.clear()
                        context = self._context  # (0 with ANCHOR_CONTEXT: the buffer keeps its characters)
                        if context:
                            kept = (self._buf + text)[-context:]
                            self._buf = kept
                            self._pos = len(kept)
                        return [{"type": "region_chunk", "field": self._name, "text": text, "dirty": self._dirty}]
                    # What the scanners would do: route the text before the proper prefix of a
                    # head that ends the chunk, hold that prefix.
                    events = []
                    if cut:
                        head = text[:cut]
                        self._keep(head)
                        events.append({"type": "region_chunk", "field": self._name, "text": head, "dirty": self._dirty})
                    held = len(text) - cut
                    kept = (self._buf + text)[-(self.CONTEXT + held):]
                    self._buf = kept
                    self._pos = len(kept) - held
                    # the quickest paths assume nothing held: off until _run_path decides it
                    self._trigger = ""
                    return events
        elif (self._bdq and text.__class__ is str and text
                and _trigger_hold(text, self._triggers, self._heads) == len(text)):
            # v2, a region that ends where its value ends: nothing held, and no character of the
            # chunk can start a delimiter, so the scanners would give the whole chunk to the
            # value's decoder (see _run)
            return self._value_chunk(text)
        if self._done:
            raise ParserStateError("ResponseParser already finalized (or failed earlier)")
        if self._last is not None:
            self._sync()
        if text.__class__ is not str:
            text = self._decode(text)
        if text:
            if self._rescan_at:
                # A long pending match (see _run): collect chunks and search again once the
                # held text has doubled, so neither copying nor searching grows per chunk.
                self._tail.append(text)
                self._tail_len += len(text)
                if len(self._buf) + self._tail_len < self._rescan_at:
                    return []
                self._flush_tail()
            else:
                held = self._HELD[self._state]
                if held is None:
                    self._buf += text
                elif self._held_regex(text, held):
                    return []  # a regex delimiter still pending where it was: nothing to scan
        events: list[dict] = []
        try:
            self._run(events, False)
        except BaseException as exc:
            self._fail()
            _carry_events(exc, events)
            raise
        return events

    def finalize(self) -> tuple[dict, list[dict]]:
        """End the stream: close the open region and return ``(message, final events)``.

        Empty values of keys not in ``defaults`` are dropped, then required fields are checked
        (template-language.md "Finalizing", D3).

        Raises:
            RuntimeError: (ParserStateError) when called twice or after an earlier error.
            ValueError: a required field is missing or empty, or a body failed to parse.
        """
        if self._done:
            raise ParserStateError("ResponseParser already finalized (or failed earlier)")
        events: list[dict] = []
        if self._last is not None:
            self._sync()
        if self._id_tail:
            self._buf += self._tokenizer.decode(self._id_tail)
            self._id_tail = []
        collected = bool(self._tail)
        self._flush_tail()
        if self._recover and collected:
            # text collected unscanned behind a long pending match (see feed): the eos=False pass
            # decides what is still held before the end is reported, as one feed of it would
            self._guarded(events, False)
        if self._recover and self._pos < len(self._buf):
            cut = self._pos  # text held back as a possible delimiter (see _run)
            if self._again is not None:
                cut += _lead(self._buf, cut, len(self._buf))  # whitespace held by _reopened is text
            self._eos_hold = cut if cut < len(self._buf) else None
        self._guarded(events, True)
        defaults = self.DEFAULTS
        message = {k: v for k, v in _joined(self._out).items() if k in defaults or not _is_empty(v)}
        if self.DIAGNOSTICS_KEY is not None and self.diagnostics:
            message[self.DIAGNOSTICS_KEY] = _copy(self.diagnostics)
        self._done = True
        self._quiet = self._bdq = False
        missing = [name for name in self.REQUIRED if name not in message]
        if missing:
            raise ContentParseError(f"Required response_template fields missing from parsed output: {missing}")
        return message, events

    # --- machinery ---------------------------------------------------------------------------
    def _decode(self, ids: Any) -> str:
        """Token ids to text, holding the ids whose text ends in the middle of a character.

        A byte-level tokenizer decodes a character split across tokens as U+FFFD until its last
        byte arrives. The ids held from earlier feeds and ``ids`` are decoded together; when that
        text ends with U+FFFD, the last ids that may still be completing a character stay held:
        the fewest (one to :data:`SPLIT_IDS`, since a character has at most four UTF-8 bytes and
        every id of a byte-level tokenizer carries one or more) whose removal leaves a text that
        does not end with U+FFFD and begins the whole text; the rest is returned. When no such
        cut exists, the U+FFFD is the output's own (bytes that no later id can complete) and
        everything is returned. However many ids one feed brings, no character is lost, and
        each feed is decoded at most ``SPLIT_IDS + 1`` times (docs/events.md, "Token ids").
        ``finalize`` decodes what is still held.
        """
        if isinstance(ids, (bytes, bytearray)) or ids is None:
            return to_text(ids, self._tokenizer, "response")
        if self._tokenizer is None:
            return to_text(ids, None, "response")
        tail = self._id_tail
        if tail:
            ids = tail + list(ids)
        text = to_text(ids, self._tokenizer, "response")
        self._id_tail = []
        if not text.endswith("\ufffd"):
            return text
        ids = list(ids)
        for k in range(1, min(SPLIT_IDS, len(ids)) + 1):
            head = to_text(ids[:-k], self._tokenizer, "response")
            if not head.endswith("\ufffd") and text.startswith(head):
                self._id_tail = ids[-k:]
                return head
        return text

    def _body_len(self) -> int:
        """Characters in the current region's body so far."""
        n = sum(map(len, self._blocks)) if self._blocks else 0
        return n + sum(map(len, self._body))

    def _here(self) -> int:
        """Offset in the response of the current position: everything before it was routed."""
        return self._mark + self._sunk + self._body_len()

    def feed_text(self, text: Any) -> str | list[dict]:
        """:meth:`feed` for adapters that turn the commonest event into something else (docs/openai.md "Cost",
        ``respc.openai``): when the chunk takes the quickest path (plain text with no trigger
        character, routed whole to the open region of field ``self._name``, not dirty), it returns
        the chunk itself (``str``) instead of ``[{"type": "region_chunk", "field": self._name,
        "text": text, "dirty": False}]``, so no event is built; otherwise exactly what
        :meth:`feed` returns (``list[dict]``). Same state changes as :meth:`feed`; the same errors.

        (The two quickest branches of :meth:`feed`, repeated: a call between them would cost each
        chunk what this saves. Both are repeated again, inline, in ``respc_pkg/openai.py``
        ``ChatCompletionStream._fast_feed``: a change of their conditions or of what they append must be
        made there too.)"""
        if self._quiet and text.__class__ is str and not self._dirty and self._trigger not in text and text:
            if not self._wide:
                body = self._body
                body.append(text)
                if len(body) >= BLOCK:
                    self._blocks.append("".join(body))
                    body.clear()
                return text
            if self._t2 not in text and self._t3 not in text:
                context = self._context
                if not context or len(text) >= context:
                    body = self._body
                    body.append(text)
                    if len(body) >= BLOCK:
                        self._blocks.append("".join(body))
                        body.clear()
                    if context:
                        self._last = text
                    return text
        return self.feed(text)

    def _run_path(self, text: str, runs: tuple) -> list[dict] | None:
        """The fast path of a state that watches run-and-literal delimiters (``HOLD_RUNS``), or
        that holds the start of a head the other fast path held (``runs`` empty): what the
        scanners would do with the held text and ``text``, or None when they must run.

        With the held text ``w = buf[pos:] + text``: a literal of a run delimiter in ``w``, or a
        trigger beginning one of the state's heads (:func:`_trigger_hold`), may be a match: scan.
        (In a state that watches literals only, ``HOLD_LITERALS``, ``w`` is scanned only when one
        of the literals is in it; else the hold is the leftmost proper prefix of one ending
        ``w``, as the scanner finds it.)
        Otherwise nothing is complete, and the leftmost partial match starts at a trigger that
        begins a proper prefix of a head ending ``w``, or at the start
        of a trailing run of a delimiter's class followed by a proper prefix of its literal
        (compiler/automaton.py ``HoldRun``): the text before it is routed as one chunk, as a
        scan routes it, and the rest stays held. Held text reaching ``LONG_HOLD`` is scanned
        (the scanners then wait for it to double).
        """
        buf = self._buf
        pos = self._pos
        w = buf[pos:] + text if pos < len(buf) else text
        if not w:
            return []
        n = len(w)
        lits = self._LITS[self._state]
        if lits is not None:
            # A state watching literals only (HOLD_LITERALS): with none of them in w, the scanner
            # would hold w from the leftmost proper prefix of one ending it (minimax_m3's call
            # bodies, where every tag starts like the close: ']<]minimax[>[<user_id>...'); the
            # heads' hold is one of those prefixes, so _trigger_hold is not asked
            literals, span, firsts, prefixes = lits
            if w in prefixes:
                # all of it may still become one of the literals: held on, nothing routed
                self._buf = buf + text
                self._trigger = ""
                return []
            for lit in literals:
                if lit in w:
                    return None
            hold = literal_hold(w, n - span if n > span else 0, firsts, prefixes)
        else:
            hold = _trigger_hold(w, self._triggers, self._heads)
            if hold < 0:
                return None
        if runs:
            last = w[-1]
            one = self._RUN1[self._state]
            if one is not None and one[1] not in w:
                # no literal, and no proper prefix of it but its first character can end w (see
                # _one_run): only a trailing run, or a run and that character, is held
                if last in one[0]:
                    chars = one[2]
                    h = n - 1
                    while h and w[h - 1] in chars:
                        h -= 1
                    if h < hold:
                        hold = h
            else:
                for chars, factor, by_last in runs:
                    if factor in w:
                        return None
                    # _run_hold finds a hold only at a run character or a literal prefix's last one
                    if last in by_last or last in chars:
                        h = _run_hold(w, chars, by_last)
                        if h < hold:
                            hold = h
        if n - hold >= LONG_HOLD:
            return None
        context = self.CONTEXT
        if hold:
            head = w[:hold] if hold < n else w
            body = self._body
            body.append(head)
            if len(body) >= BLOCK:
                self._blocks.append("".join(body))
                body.clear()
            events = [{"type": "region_chunk", "field": self._name, "text": head, "dirty": self._dirty}]
            if not context:
                kept = ""
            elif len(head) >= context:
                kept = head[-context:]
            else:
                kept = (buf[:pos] + head)[-context:]
        else:
            events = []
            kept = buf[:pos]
        self._buf = kept + w[hold:] if hold < n else kept
        self._pos = len(kept)
        if hold == n:
            self._trigger, self._wide, self._t1, self._t2, self._t3, self._rheld = self._QUICK[self._state]
        elif runs and self._QUICK[self._state][1] is _RUN_WIDE and self._held_run(w[hold:]):
            pass  # a run held, or a run and the literal's first character: see _held_run
        else:
            self._trigger = ""  # the quickest paths assume nothing held
        return events

    def _held_run(self, held: str) -> bool:
        """After :meth:`_run_path` held ``held`` in a state with the run quickest path (see
        :func:`_one_run`): when it is a run, or a run and the literal's first character, after one
        decided character, give it to that path (``_rheld``) and tell True; else False."""
        ends, lead, chars = self._RUN1[self._state]
        last = held[-1]
        if self._pos != 1 or last not in ends or (last not in chars and lead in held):
            return False
        self._trigger, self._wide, self._t1, self._t2, self._t3, _ = self._QUICK[self._state]
        self._rheld = ends[last][0]
        return True

    def _value_chunk(self, text: str) -> list[dict]:
        """The fast path of a region that ends where its value ends (``_bdq``): what :meth:`_run`
        does with a chunk that arrives while nothing is held and holds no possible delimiter
        start. The value's decoder reads it; while the value goes on the chunk is region text,
        else the text after the value's end is scanned as usual."""
        buf = self._buf
        try:
            k = self._bd.feed(text)
            if k < 0:
                self._keep(text)
                context = self.CONTEXT
                if context:
                    kept = (buf + text)[-context:]
                    self._buf = kept
                    self._pos = len(kept)
                return [{"type": "region_chunk", "field": self._name, "text": text, "dirty": self._dirty}]
            events: list[dict] = []
            if k:
                self._route(events, text[:k])
            self._buf = buf + text
            self._pos = len(buf) + k
            self._end_value(events)
            self._run(events, False)
        except BaseException:
            self._fail()
            raise
        return events

    def _held_regex(self, text: str, held: HeldRegex) -> bool:
        """Append ``text`` to the buffer, and tell whether the scan that would follow can be
        skipped because the scanner would hold from ``pos`` and emit nothing (compiler/held.py):

        * the held text ``buf[pos:]`` still starts a live match of one of the state's
          ``HOLD_REGEX`` delimiters that has no complete match in it (the DFA of :class:`HeldRegex`
          says so; its partial search then returns a partial match at ``pos``), or
        * one of them that can go on after a complete match (``HeldRegex.edges``) matches at
          ``pos`` completely, up to the end of the buffer: its search returns that match, which
          ends at the buffer edge, so it is held (a name of ``[^\\s<]+`` still being written);

        and nothing else pending reads the buffer (a v2 deferred or tentative open, a
        repeated-opener watch), and the held text is shorter than ``LONG_HOLD`` (longer, the
        scanners wait for it to double), and it does not start at offset 0 where an automaton
        was read past start anchors (``HeldRegex.late``; compiler/held.py, "Start anchors").

        ``_hd`` keeps ``(buffer, pos, held, DFA state after buffer[pos:])`` of the last call, so
        when this call finds the same buffer object and position only the new characters are
        read (the DFA's STOP is final: a dead start stays dead, a complete match stays).
        """
        buf = self._buf
        pos = self._pos
        new = self._buf = buf + text
        if (len(new) - pos >= LONG_HOLD or self._again is not None or self._defer is not None
                or self._tent is not None or self._cdefer is not None or (not pos and held.late)):
            self._hd = None
            return False
        hd = self._hd
        if hd is not None and hd[0] is buf and hd[1] == pos and hd[2] is held:
            d = hd[3]
        elif pos == len(buf):
            return False  # nothing was held
        else:
            d = held.start
            if d is None:  # the first text held in this state: decode the tables now
                d = held.build()
            text = new[pos:]
        if d is not STOP:
            step = held.step
            for c in text:
                nxt = d.get(c)
                if nxt is None:
                    nxt = step(d, c)
                if nxt is STOP:
                    d = STOP
                    break
                d = nxt
        self._hd = (new, pos, held, d)
        if d is STOP:
            n = len(new)
            for rx in held.edges:
                m = rx.match(new, pos, partial=True)
                if m is not None and not m.partial and m.end() == n:
                    break
            else:
                return False
        self._quiet = self._bdq = False  # what _run leaves while text is held
        return True

    def _sync(self) -> None:
        """Make the buffer what the quickest path left implicit: the last CONTEXT characters of
        the last chunk it routed (which has at least that many), nothing held."""
        kept = self._last[-self.CONTEXT:]
        self._last = None
        self._buf = kept
        self._pos = len(kept)

    def _guarded(self, events: list, eos: bool) -> None:
        try:
            self._run(events, eos)
        except BaseException as exc:
            self._fail()
            _carry_events(exc, events)
            raise

    def _fail(self) -> None:
        # Like h11: after an error the parser's state is unknown, so it refuses to go on.
        self._done = True
        self._quiet = self._bdq = False

    def _flush_tail(self) -> None:
        if self._tail:
            self._buf += "".join(self._tail)
            self._tail.clear()
            self._tail_len = 0

    def _enter(self, field: int | None) -> None:
        """Make ``field``'s region (None: the null sink) the current one, with an empty body."""
        self._field = field
        if field is None:
            self._region = None
            self._name = None
            self._dirty = None
            self._bd = None
        else:
            region = self._region = self.REGIONS[field]
            self._name = region.slot
            self._dirty = region.dirty
            self._bd = region.boundary() if region.ends else None
        self._ins = None
        self._opened = False
        self._groups = None
        self._body = []
        self._blocks = []
        self._gaps = None
        #: body length from which body text lies contiguously before the current position (a
        #: resumed region or text consumed inside the body breaks that); see _stray_closers
        self._exact = 0

    def _run(self, events: list, eos: bool) -> None:
        buf = self._buf
        pos = self._pos
        scanners = self.SCANNERS
        edges = self.TRANSITIONS
        # per delimiter, its last search result over this buffer (runtime/scanners.py)
        memo = [None] * self.MEMO_SLOTS
        n = len(buf)
        closing: dict = {}  # per call-section state, where a cut closer of it may start (eos)
        spent = 0  # characters given to value decoders in pieces longer than VALUE_WINDOW
        # the whole-text path in strict mode reads an express region at once (_express)
        express = self._EXPRESS if eos and self._mute and not self._recover and self.ledger is None else ()
        chain = self._CHAIN if express else ()
        while True:
            if self._again is not None:
                # errors="recover": the region's own opener written again at its start
                verdict = self._reopened(events, buf, pos, eos)
                if verdict is None:
                    break
                pos = verdict
            if self._cdefer is not None:
                # errors="recover": a closer inside an open value, waiting for a later closer
                verdict = self._close_deferred(events, buf, pos, eos, memo)
                if verdict is None:
                    break
                pos = verdict
                continue
            state = self._state
            if (pos == n and not eos and self._KNOWN[state] and self._tent is None and self._defer is None
                    and (pos > 0 or self.CONTEXT == 0)):
                # Nothing left after a delimiter: every watched delimiter starts with a trigger
                # character (the fast path's rule, which holds after offset 0: with CONTEXT 0 no
                # pattern has an anchor), so the scan would find nothing and hold nothing.
                break
            if pos == n and express and state == 0 and self._END_QUIET:
                # the whole-text path at the end of the text (most outputs end with their
                # calls): what state 0's scanner answers there, without it (_end_quiet)
                start, end, rank, match, hold = -1, 0, 0, None, n
            else:
                start, end, rank, match, hold = scanners[state](buf, pos, eos, memo)
            if eos and start > pos and self._name is None and self._tent is None and self._defer is None:
                cuts = closing.get(state)
                if cuts is None:
                    cuts = closing[state] = self._cut_closers(buf, state)
                cut = next((j for j in cuts if j >= pos), -1)
                if 0 <= cut < start:
                    # The output ended inside the call section's own closer (`\n</function_ca`)
                    # and a nested opener matched inside that held text (olmo3's call opener is a
                    # lookahead at any letter): the closer started first, so it keeps precedence;
                    # the text is a cut closer, reported in full as a truncated delimiter below
                    # (docs/events.md, "Text inside a call section"), never a call's text.
                    start = -1
                    if self._recover and (self._eos_hold is None or self._eos_hold > cut):
                        self._eos_hold = cut
            if self._defer is not None:
                # v2: an open that counts only if this region's close never follows
                verdict = self._deferred(events, buf, pos, eos, memo)
                if verdict is None:
                    break
                pos = verdict
                continue
            if self._tent is not None:
                # v2: an open whose body the content parser may still reject (nothing emitted yet)
                verdict = self._probe(events, buf, pos, eos, start, hold)
                if verdict is None:
                    break  # undecided: hold the opener and what follows it
                if verdict >= 0:
                    pos = verdict  # rejected: the opener went back to the enclosing region
                    continue
                # accepted: the region is open now, go on with the same scan result
            elif self._IS_AFTER[state]:
                # v2: only the optional close right where the value ended
                if start == pos:
                    self._consume("delimiter", end - start)  # counted, so later offsets stay right
                    pos = end
                elif not eos and hold == pos:
                    break
                self._state = self._back
                continue
            if self._bd is not None:
                # v2: a region that ends where its value ends; its decoder sees every body piece
                limit = start if start >= 0 else len(buf) if eos else hold
                if limit > pos:
                    decoder = self._bd
                    rest = limit - pos
                    if rest <= VALUE_WINDOW or spent + rest <= VALUE_BUDGET * n:
                        # all of it in one piece (a long value is then read by the json
                        # decoder's C reader whole); a piece longer than VALUE_WINDOW counts
                        # against a budget of VALUE_BUDGET times the buffer per pass
                        if rest > VALUE_WINDOW:
                            spent += rest
                        k = decoder.feed(buf[pos:limit])
                    else:
                        # Windows that double from VALUE_WINDOW characters until the value ends:
                        # given all of the text up to limit each time, every value of a state
                        # that watches no delimiter (llama3_json's calls) cost the rest of the
                        # text, so many calls were quadratic
                        # (docs/security.md "Whole text at scan speed": 32,000 calls in 1.8 MB,
                        # 2.2 s); past the budget a value longer than a window is read by the
                        # decoder piece by piece (its character scan)
                        at, step, k = pos, VALUE_WINDOW, -1
                        while at < limit:
                            stop = at + step if limit - at > step else limit
                            k = decoder.feed(buf[at:stop])
                            if k >= 0:
                                k += at - pos
                                break
                            at = stop
                            step *= 2
                    if k >= 0:
                        if k:
                            self._route(events, buf[pos:pos + k])
                        pos += k
                        self._end_value(events)
                        continue
                    self._route(events, buf[pos:limit])
                    pos = limit
            if start >= 0:
                if start > pos:
                    self._route(events, buf[pos:start])
                pos = end
                action, field, target = edges[state][rank]
                if action == DEFER:
                    pos = start  # the opener stays in the buffer until it is decided
                    self._defer = (start, end, field, target, match, end)
                    continue
                if action <= NEST:
                    closer = express[state][rank] if express else None
                    if closer is not None and not self._stack and self._loose is None:
                        # the whole-text path: the region and its close at once (_express); a
                        # tentative open's body decides first, as _probe would with the closer
                        # found (a rejected one takes the way below)
                        if closer.__class__ is str:
                            c = buf.find(closer, end)
                        else:
                            c, closer = _first_closer(buf, closer, end)
                        if c >= 0 and (not self.REGIONS[field].reject
                                       or self._tent_status(field, buf, end, c) != REJECTED):
                            pos = self._express(events, field, match, buf[start:end], buf[end:c], closer, c)
                            if chain and self._loose is None and buf.startswith(self._CHAIN_LEADS, pos):
                                # the next ones right here (_chain_table): what the scan of state
                                # 0 from pos answers, without it; otherwise the scan decides
                                pos = self._express_chain(buf, pos, chain)
                            continue
                    if self.REGIONS[field].reject:
                        # Nothing happens until the content parser saw the body start (_probe).
                        self._tent = (start, end, state, action, field, target, match)
                        self._state = target
                    else:
                        self._begin(events, action, field, target, match, buf[start:end])
                elif self._recover and (inside := self._inside_at_close(field, start, end, match)):
                    # a closer inside an open value (an xml-inline parameter, a JSON or Python
                    # string), as the body's format tells: a closer of the format is held until a
                    # later closer leaves the value whole, or the output ends (then it closes
                    # after all); a recover-only one is the value's text, as strict reads it, and
                    # the search goes on from the next character (a delimiter that starts inside
                    # it is still found); a zero-width recover-only closer of a body with no such
                    # structure (text) is held until the region's own closer is known not to
                    # follow. docs/security.md, "Closers inside an open value"
                    if inside == 2:
                        pos = start + 1
                        self._route(events, buf[start:pos])
                    else:
                        pos = start
                else:
                    had_text = self._opened
                    slot = self._name
                    self._leave(self._close(events, match, buf[start:end]))
                    if self._recover and end > start:
                        self._watch_again(buf[start:end], "doubled-closer", slot)
                    if not had_text and start == end:
                        # A zero-width close on a region that got nothing would fire forever.
                        break
                    if (chain and end > start and self._state == 0 and not self._stack and self._loose is None
                            and self._tent is None and self._defer is None
                            and buf.startswith(self._CHAIN_LEADS, pos)):
                        # the whole-text path: back in state 0 with the outside region empty,
                        # as after an express region: what opens right here is read at once
                        # (kimi_k2's section opener, then its first call)
                        pos = self._express_chain(buf, pos, chain)
                continue
            if eos:
                cut = self._eos_hold
                if cut is not None and pos <= cut < len(buf):
                    # errors="recover": text held back as the start of a delimiter that the stream
                    # cut off is reported, and stays the region's text (answer text is never
                    # dropped: serving engines strip the stop token, so every output ends
                    # without its closer; docs/events.md "Recovering from damaged output")
                    at = self._here() + cut - pos
                    self._report("truncated-delimiter", at, at + len(buf) - cut,
                                 "the stream ended inside what may be a delimiter (kept as text)", buf[cut:],
                                 self._name)
                if pos < len(buf):
                    self._route(events, buf[pos:])
                pos = len(buf)
                end_at = self._close(events, None, "", True)
                while self._stack:
                    # every suspended region ends with the stream too
                    self._leave(end_at)
                    end_at = self._close(events, None, "", True)
                self._state = 0
                self._enter(self.OUTSIDE_FIELD)
                break
            if hold > pos:
                self._route(events, buf[pos:hold])
                pos = hold
            break
        context = self.CONTEXT
        keep = pos if self._tent is None else min(pos, self._tent[0])
        if context is not None and keep > context:
            cut = keep - context
            buf = buf[cut:]
            pos -= cut
            if self._tent is not None:
                t = self._tent
                self._tent = (t[0] - cut, t[1] - cut) + t[2:]
            if self._defer is not None:
                d = self._defer
                self._defer = (d[0] - cut, d[1] - cut) + d[2:5] + (d[5] - cut,)
            if self._cdefer is not None:
                d = self._cdefer
                d[0] -= cut
                d[1] -= cut
                d[3] -= cut
                d[5] -= cut
        self._buf = buf
        self._pos = pos
        if pos == len(buf):
            self._rescan_at = 0
            state = self._state
            self._triggers, self._heads = fast = self._FAST[state]
            self._trigger, self._wide, self._t1, self._t2, self._t3, self._rheld = self._QUICK[state]
            # the fast path needs an opened region, known triggers, a trimmed buffer, and no v2
            # decoder or trailing close waiting for the text; and a position after offset 0,
            # where a start anchor can no longer hold (the triggers assume it, see
            # automaton.State): with CONTEXT >= 1 (every pattern with an anchor has it) pos is 0
            # only before the first decided character
            quiet = (self._opened and fast[0] is not None and self._name is not None
                     and context is not None and self._tent is None
                     and not self._IS_AFTER[state] and self._again is None and self.ledger is None
                     and not self._offsets and (pos > 0 or not context))
            # a region that ends where its value ends has its own fast path (_value_chunk)
            self._quiet = quiet and self._bd is None
            self._bdq = quiet and self._bd is not None
        else:
            self._quiet = self._bdq = False
            held = len(buf) - pos
            # Text held this long can only be a regex delimiter still pending (a lazy `.*?`
            # that has not found its end, an indeterminate match waiting for end of stream):
            # searching it again on every chunk would make the total work quadratic, so wait
            # until it has doubled.
            self._rescan_at = len(buf) + held if held >= LONG_HOLD else 0

    def _run_bounded(self, events: list, eos: bool) -> None:
        """:meth:`_run` of a class with ``REGEX_BOUNDED`` patterns: this parser is made the
        thread's running one, so its searches know their limit and what to skip
        (:class:`BoundedPattern`)."""
        running = _RUNNING
        outer = running.parser
        running.parser = self
        self._rxbuf = self._buf
        self._rxbase = self._here() - self._pos  # the response offset of the buffer's start
        try:
            StreamParser._run(self, events, eos)
        except _SearchTimeout as exc:  # a search outside a scan (none is known): an error in any mode
            raise self._timeout_error(exc) from None
        finally:
            running.parser = outer

    def _timeout_error(self, exc: _SearchTimeout) -> RegexTimeoutError:
        field, key = exc.bounded.label
        return RegexTimeoutError(field, key, exc.bounded.pattern, self._rxbase + exc.pos, exc.timeout)

    def _search_timed_out(self, exc: _SearchTimeout, buf: str, memo: list) -> None:
        """A scan's search of a bounded delimiter ran out of time (docs/security.md, "Limits").

        Strict: raise :class:`~respc.runtime.errors.RegexTimeoutError` naming the field, key,
        pattern and response offset. Recover: the delimiter is taken as not matching anywhere it
        would start before the end of the text received so far (its later searches skip those
        starts, so the slow search is not repeated), a ``regex-timeout`` diagnostic covers that
        text, and the scan runs again; the text stays the current region's.
        """
        if not self._recover:
            raise self._timeout_error(exc) from None
        label = exc.bounded.label
        start = self._rxbase + exc.pos
        until = self._rxbase + len(buf)
        skip = self._rxskip
        if skip is None:
            skip = self._rxskip = {}
        skip[label] = max(until, skip.get(label, until))
        memo[:] = [None] * len(memo)
        self._rxspent = 0.0
        self._report("regex-timeout", start, until,
                     f"the search of /{exc.bounded.pattern}/ (field {label[0]!r}, key {label[1]!r}) from response "
                     f"offset {start} ran past its time limit of {exc.timeout} s; it is taken as not matching in "
                     f"this text, which stays text", buf[exc.pos:], self._name)

    def _deferred(self, events: list, buf: str, pos: int, eos: bool, memo: list) -> int | None:
        """Decide a ``DEFER`` open at ``pos``: look on for the current region's own close.

        Returns None while undecided (the text from the opener on is held), else the position to
        go on from: after that close when it follows (the opener was the region's own text), or
        after the opener when the stream ended first (the open counts).
        """
        start, end, field, target, match, scan = self._defer
        s, e, m, scan = self._look_on(buf, scan, eos, memo, None)
        if s >= 0:
            # The region closes after all: the opener and what followed were its text.
            self._defer = None
            return self._close_at(events, buf, pos, s, e, m)
        if not eos:
            self._defer = (start, end, field, target, match, scan)
            return None
        self._defer = None
        state = self._state
        if self.REGIONS[field].reject:
            self._tent = (start, end, state, OPEN, field, target, match)
            self._state = target
        else:
            self._begin(events, OPEN, field, target, match, buf[start:end])
        return end

    def _look_on(self, buf: str, scan: int, eos: bool, memo: list,
                 take: "Callable[[int, int, Any], bool] | None") -> tuple[int, int, Any, int]:
        """The scan of a hold (:meth:`_deferred`, :meth:`_close_deferred`): from ``scan`` on, in the
        current state, the first close of the region that ``take(start, end, match)`` accepts
        (None: any). Every other delimiter is looked past, so each character is scanned once.

        Returns:
            tuple: ``(start, end, match, scan)`` of that close, or ``(-1, -1, None, scan)`` when the
            text so far holds none (``scan``: where the next look goes on from).
        """
        scanner = self.SCANNERS[self._state]
        edges = self.TRANSITIONS[self._state]
        while True:
            s, e, rank, m, hold = scanner(buf, scan, eos, memo)
            if s < 0:
                return -1, -1, None, hold if hold > scan else scan
            if edges[rank][0] == CLOSE and (take is None or take(s, e, m)):
                return s, e, m, scan
            scan = e if e > s else s + 1  # another delimiter, or a close not taken: look past it

    def _close_at(self, events: list, buf: str, pos: int, s: int, e: int, m: Any, held: int = 0) -> int:
        """End a hold with the close ``m`` at ``s``-``e``: the text from ``pos`` to it is the
        region's, the region closes there (its body read strictly with ``held``, see
        :meth:`_recovered`); returns ``e``."""
        self._route(events, buf[pos:s])
        slot = self._name
        self._held = held
        try:
            end_at = self._close(events, m, buf[s:e])
        finally:
            self._held = 0
        self._leave(end_at)
        if self._recover and e > s:
            self._watch_again(buf[s:e], "doubled-closer", slot)
        return e

    @classmethod
    def _inside_factory(cls, field: int) -> Any:
        """The ``inside`` reader factory of region ``field``'s content format
        (``runtime/formats/base.py`` :class:`InsideReader`), or None; built once per class."""
        table = cls.__dict__.get("_INSIDE_TABLE")
        if table is None:
            table = {}
            setattr(cls, "_INSIDE_TABLE", table)
        if field not in table:
            from .formats import FORMATS

            process = cls.REGIONS[field].process
            record = FORMATS.get(getattr(process, "content_parser", None))
            factory = None
            if record is not None and record.inside is not None:
                try:
                    factory = record.inside(getattr(process, "content_args", None) or {})
                except Exception:  # load-time checks refuse bad arguments; never raise here
                    factory = None
            table[field] = factory
        return table[field]

    def _inside_at_close(self, field: int, start: int, end: int, match: Any) -> int:
        """errors="recover": what the close ``match`` at ``start``-``end`` of region ``field`` is where
        the body stands (docs/security.md, "Closers inside an open value"), as its format's
        ``inside`` reader tells (``runtime/formats/base.py`` :class:`InsideReader`):

        - 0: a close (the body stands inside no open value, the format has no reader, or the closer
          is a zero-width one of the format: a look at what opens next);
        - 1: held (:attr:`_cdefer`; :meth:`_close_deferred` decides): a closer of the format inside
          an open value, or a zero-width recover-only closer of a body whose format has no reader;
        - 2: a recover-only closer inside an open value: the value's text, as strict reads it.

        The reader is made once per region and fed each body piece once (linear)."""
        if field != self._field or self._loose is not None:
            return 0
        recover_only = field in self._RC_FIELDS and self._recover_match(match)
        if end <= start and not recover_only:
            return 0
        factory = self._inside_factory(field)
        if factory is None:
            if end > start or not recover_only or self._rc_spent:
                return 0
            # a zero-width recover-only closer of a text body: held until the region's own closer
            # is known not to follow
            self._cdefer = [start, end, match, start + 1, None, start]
            return 1
        blocks, body = self._blocks, self._body
        g = self._ins
        if g is None or g[4] is not body:
            # [reader, blocks fed, body pieces fed, their characters, the body list, inside]
            g = self._ins = [factory(), 0, 0, 0, body, False]
        if len(blocks) == g[1]:
            new = body[g[2]:]
            g[3] += sum(map(len, new))
        else:
            # the body pieces fed before were joined into blocks[g[1]], at its start
            new = [blocks[g[1]][g[3]:]] + blocks[g[1] + 1:] + body
            g[3] = sum(map(len, body))
        g[1], g[2] = len(blocks), len(body)
        if new:
            g[5] = g[0].feed("".join(new))
        if not g[5]:
            return 0
        if recover_only:
            return 2
        # the held reader goes on with the text from the closer on (the region ends with the hold)
        self._ins = None
        self._cdefer = [start, end, match, end, g[0], start]
        return 1

    @staticmethod
    def _recover_match(match: Any) -> bool:
        """Whether a close ``match`` is one of the field's recover-only closers."""
        groups = match.groupdict() if hasattr(match, "groupdict") else {}
        return any(v is not None for k, v in groups.items() if k.startswith(RECOVER_CLOSER_GROUP))

    def _opener_inside(self, buf: str, lo: int, hi: int, anything: bool = False) -> bool:
        """Whether ``buf[lo:hi]`` holds an opener of the current field (strict or, in recover mode,
        recover-only) as the state the region returns to would find it (with ``anything``: any
        delimiter that state watches, when the region has already been left): one scan of that
        text."""
        back = self._state if anything else self._stack[-1][0] if self._stack else 0
        scanner = self.SCANNERS[back]
        edges = self.TRANSITIONS[back]
        piece = buf[lo:hi]
        memo = [None] * self.MEMO_SLOTS
        at, field = 0, self._field
        try:
            while at < len(piece):
                s, e, rank, _m, _h = scanner(piece, at, True, memo)
                if s < 0:
                    return False
                action, target_field = edges[rank][0], edges[rank][1]
                if anything or (action in (OPEN, NEST, DEFER) and target_field == field):
                    return True
                at = e if e > s else s + 1
        except Exception:  # a bounded search that timed out: count it as ambiguous
            return True
        return False

    def _close_deferred(self, events: list, buf: str, pos: int, eos: bool, memo: list) -> int | None:
        """Decide a close held by :meth:`_inside_at_close` (the closer stands at ``pos``): look on for
        a later close of the same region after which the body's value is whole.

        Returns None while undecided (the text from the held closer on is held), else the position
        to go on from: after the later close (the held closer and what followed were the value's
        text), or the end of the output when it ended first (the held closer closes after all, as
        it did before: a body damaged there is repaired or malformed; the text after it is kept as
        text of the region returned to, never read for calls).
        Each character is fed to the inside reader once and scanned once (linear)."""
        start, end, match, scan, reader, fed = self._cdefer
        if reader is None:
            # a held zero-width recover closer of a text body: when the region's own closer
            # follows, the held one was text; the region closes there as strict reads it
            s, e, m, scan = self._look_on(buf, scan, eos, memo,
                                          lambda s, e, m: e > s and not self._recover_match(m))
            if s >= 0:
                self._cdefer = None
                return self._close_at(events, buf, pos, s, e, m)
        else:
            def whole(s: int, e: int, m: Any) -> bool:
                # a later closer (of the format or recover-only) after which the value is whole
                nonlocal fed
                inside = reader.feed(buf[fed:s])
                fed = s
                return not inside

            s, e, m, scan = self._look_on(buf, scan, eos, memo, whole)
            if s >= 0:
                self._cdefer = None
                at = self._here()  # the held closer's offset (pos is its start)
                closer = buf[start:end]
                self._report("repaired", at, at + len(closer),
                             f"closer {closer!r} stands inside an open value of {self.REGIONS[self._field].name!r} "
                             f"(a parameter or string its format reads): kept as the value's text; the closer "
                             f"at offset {at + s - pos} leaves the value whole", closer, self._name)
                # reading the held closer as text is this body's repair: no other repair is
                # stacked on it (a value that needs one is malformed, never a guessed call);
                # an opener of this field after the held closer makes the body ambiguous
                # (one call, or calls that end and begin there): malformed, no call
                return self._close_at(events, buf, pos, s, e, m, 2 if self._opener_inside(buf, end, s) else 1)
        if not eos:
            self._cdefer = [start, end, match, scan, reader, fed]
            return None
        if reader is None:
            # no own closer follows: the held recover closer closes the region where it stood
            # (the damage it is there for: calls inside an unclosed <think>), and the text after
            # it is read as usual; no own closer is anywhere after it, so later ones fire at once
            self._cdefer = None
            self._rc_spent = True
            self._leave(self._close(events, match, ""))
            return start
        # The output ended with the value still open after every later closer: the held closer
        # closes the region after all (a body damaged there is repaired or malformed, as without
        # the hold), and what followed it is text of the region it returns to, never read for
        # delimiters: it was read as the value's text, so a call written there is not one (a
        # string delimiter written in a value could otherwise keep the hold to the end and have
        # the call in it read after all).
        self._cdefer = None
        name = self.REGIONS[self._field].name
        closer = buf[start:end]
        self._leave(self._close(events, match, closer))
        if end < len(buf):
            at = self._here()
            rest = buf[end:]
            if self._opener_inside(buf, end, len(buf), True):
                self._report("repaired", at, at + len(rest),
                             f"the output ended inside an open value of {name!r} that a closer {closer!r} met inside "
                             f"it did not end: the region closes there, and the {len(rest)} characters after it are "
                             f"kept as text, not read for delimiters", rest, self._name)
            self._route(events, rest)
        return len(buf)

    def _tent_status(self, field: int, buf: str, pos: int, limit: int) -> int:
        """The status (``ACCEPTED``, ``REJECTED`` or ``UNDECIDED``) a new boundary decoder of
        ``field``'s region has after reading ``buf[pos:limit]``, the text after a tentative
        opener (:meth:`_probe`)."""
        verdict = self.REGIONS[field].verdict
        # The body is read a growing piece at a time, stopping once decided (most bodies decide
        # in their first characters): a slice of the whole rest of the buffer made every
        # tentative open of one big feed cost its length (olmo3's prose after an unclosed
        # <function_calls>, where every letter opens a region; docs/security.md "Model output: time and memory").
        status, at, step = UNDECIDED, pos, 64
        if verdict is not None:
            while True:  # what a new decoder's status would be
                stop = pos + step if pos + step < limit else limit
                status = verdict(buf[pos:stop])
                if status != UNDECIDED or stop >= limit:
                    break
                step *= 4
        else:
            decoder = self.REGIONS[field].boundary()
            while at < limit and status == UNDECIDED:
                stop = at + step if at + step < limit else limit
                if decoder.feed(buf[at:stop]) >= 0:
                    status = decoder.status
                    break
                status, at, step = decoder.status, stop, step * 2
            if at >= limit:
                status = decoder.status
        return status

    def _probe(self, events: list, buf: str, pos: int, eos: bool, start: int, hold: int) -> int | None:
        """Decide a tentative open (v2 ``reject``) from the text after the opener.

        Returns None while undecided (hold), -1 once accepted (the region is then open), or the
        position to scan from after a rejection. Only the status of a new boundary decoder fed the
        text after the opener counts: the region's ``verdict`` gives it without a decoder when
        there is one (json without ``string_delims``).
        """
        open_start, open_end, state, action, field, target, match = self._tent
        limit = start if start >= 0 else len(buf) if eos else hold
        status = self._tent_status(field, buf, pos, limit)
        if status == ACCEPTED or (status == UNDECIDED and (start >= 0 or eos)):
            # accepted, or a delimiter / the end of the stream came first: an empty region
            self._tent = None
            self._state = state
            self._begin(events, action, field, target, match, buf[open_start:open_end])
            self._again = None  # the body starts with what the content parser accepts
            return -1
        if status == UNDECIDED:
            return None
        for alternative in self.REGIONS[field].alternatives:
            # the next field with the identical open gets to read the body
            for edge in self.TRANSITIONS[state]:
                if edge[1] == alternative and edge[0] <= NEST:
                    self._state = edge[2]
                    if self.REGIONS[alternative].reject:
                        self._tent = (open_start, open_end, state, edge[0], alternative, edge[2], match)
                    else:
                        self._tent = None
                        self._state = state
                        self._begin(events, edge[0], alternative, edge[2], match, buf[open_start:open_end])
                    return pos
        opener = buf[open_start:open_end]
        if self._recover and opener.strip():
            # errors="recover" policy *doubled opener*: the opener written twice (whitespace
            # between allowed); the first one is consumed, the second one opens the region
            again = open_end + _lead(buf, open_end, len(buf))
            if not buf.startswith(opener, again):
                if not eos and len(buf) - again < len(opener) and buf.startswith(opener[:len(buf) - again], again):
                    return None  # may still be the opener again: wait
                opener = ""
        # Not an opener after all: its text belongs to the enclosing region.
        self._tent = None
        self._state = state
        if opener.strip() and self._recover:
            at = self._here()
            self._report("repaired", at, at + len(opener), NOTES["doubled-opener"].format(opener),
                         opener, self.REGIONS[field].slot)
            self._consume("diagnostic", len(opener))
            self._gap(opener)
            return open_end
        if open_start == open_end:
            # A zero-width opener would match here again: the next character goes with it (no
            # other delimiter starts here, or it would have been longer or held).
            open_end += 1
        self._route(events, buf[open_start:open_end])
        return open_end

    def _begin(self, events: list, action: int, field: int, target: int, match: Any, opener: str) -> None:
        """Open ``field``'s region after its opener text: ``OPEN`` closes the current region
        first, ``NEST`` suspends it."""
        if action == NEST:
            if self._loose is not None:
                # the stretch before this call ends here; a cut closer of the section never
                # reaches this point: at the end of the output it keeps precedence over a call
                # opening inside it (_run, _cut_closers)
                self._section_end(events, False)
            at = self._here()
            self._stack.append((self._state, self._field, self._region, self._name, self._dirty, self._opened,
                                self._body, self._blocks, self._groups, self._bd, self._open_at,
                                self._open_text, self._gaps))
        else:
            at = self._close(events, None)  # no closer: the offset it ends at is _here()
        if self.ledger is not None and opener:
            self.ledger.append((at, at + len(opener), "delimiter"))
        self._state = target
        # _enter(field), written out (every call opens one region)
        self._field = field
        region = self._region = self.REGIONS[field]
        self._name = region.slot
        self._dirty = region.dirty
        if region.ends:
            hook = self.boundary_hook
            self._bd = region.boundary() if hook is None else hook(region, match)
        else:
            self._bd = None
        self._body = []
        self._blocks = []
        self._gaps = None
        self._exact = 0
        if match is not None and self._REPAIRS[field]:
            self._declared_repairs(match, at, field)
        self._mark = at + len(opener)
        self._sunk = 0
        self._open_at = at
        self._open_text = opener
        self._groups = match
        self._opened = True
        if self._recover:
            self._watch_again(opener, "opener-again", region.slot)
        if region.slot is not None and not self._mute:
            event = {"type": "region_open", "field": region.slot}
            if region.label is not None:
                event["region"] = region.label
            if self._offsets:
                event["start"], event["end"] = at, at + len(opener)
            events.append(event)

    def _express(self, events: list, field: int, match: Any, opener: str, body: str, closer: str, at: int) -> int:
        """The whole-text path, strict mode: ``field``'s express region (:func:`_express_table`)
        opened by ``opener`` (its match ``match``, or None), with ``body`` up to the first
        ``closer``, which starts at buffer offset ``at``, read at once; returns the buffer offset
        after the closer.

        The state, message, diagnostics and errors are those :meth:`_begin`, one pass of
        :meth:`_run` over the body (its state's scanner finds the closer; the body is routed) and
        :meth:`_close` + :meth:`_leave` give: the current region is closed (a region with nothing
        in it only gives its offset), the value is read, checked and stored with the same offsets
        while the region is the current one (:meth:`_store` reads its field and opener), and the
        parser is back OUTSIDE after the closer. Nothing else can happen inside the region: its
        state watches the closer only, and the conditions of the table rule out every hook
        (recover, ledger, sections, decoders, repairs, a nested region).

        Raises:
            The errors of ``_close``: the body's ``ValueError`` / ``KeyError`` / ``TypeError``
            with ``field``, ``start``, ``end`` and ``partial_message``; ``_store``'s.
        """
        if self._opened or self._body or self._blocks:
            start = self._close(events, None)
        else:
            start = self._mark + self._sunk  # (what _close gives for a region with nothing in it)
        end = self._express_store(field, match, opener, body, closer, start)
        # _leave with nothing suspended
        self._state = 0
        self._enter(self.OUTSIDE_FIELD)
        self._mark = end
        self._sunk = 0
        self._open_at = None
        self._open_text = ""
        return at + len(closer)

    def _express_store(self, field: int, match: Any, opener: str, body: str, closer: str, start: int) -> int:
        """Read, check and store the value of ``field``'s express region whose opener starts at
        response offset ``start`` (:meth:`_express`), with the region current as :meth:`_close`
        has it; returns the response offset after its closer. The parser is left with that
        region current: the caller goes back OUTSIDE."""
        region = self.REGIONS[field]
        end = start + len(opener) + len(body) + len(closer)
        # what _store and _overwrite read while the region is the current one
        self._field = field
        self._region = region
        self._open_at = start
        self._open_text = opener
        self._gaps = None
        names = region.groups
        scope = _NO_GROUPS
        if names:
            scope = dict.fromkeys(names)
            if match is not None:
                pairs = _GROUP_NUMBERS.get(match.re)
                if pairs is not None and not pairs[1]:
                    # _put_groups, written out (no recover-only alias among the groups)
                    groups = match.groups()
                    for name, number in pairs[0]:
                        scope[name] = groups[number - 1]
                else:
                    _put_groups(scope, match)
        if region.empty_none and (not body or body.isspace()):
            value = None
        else:
            try:
                value = region.process(body, scope)
                cls = value.__class__
                if cls is not str and not (cls is _DICT and region.typed and self._tools is None
                                           and _plain_call(value)):
                    value = _checked_value(region, value, self._tools)
            except (ValueError, KeyError, TypeError) as exc:
                exc.field = region.slot
                exc.start, exc.end = start, end
                exc.partial_message = _copy(_joined(self._out))
                raise
        if region.repeats and region.join is None and not region.extend:
            # _store's way for a repeating field, written out
            if value is not None or not region.empty_none:
                self._out.setdefault(region.slot, []).append(value)
        else:
            self._store(region, value, start, end, body, closer)
        return end

    def _express_chain(self, buf: str, pos: int, chain: tuple) -> int:
        """After an express region that ended at buffer offset ``pos``: each next express region
        that opens right there (``chain``, :func:`_chain_table`) read at once, as state 0's scan
        from there and :meth:`_express` would read it; returns the buffer offset where the scan
        must go on (``pos`` when none opened)."""
        base = self._mark - pos  # response offset = buffer offset + base (OUTSIDE, nothing routed)
        moved = pos
        while True:
            for leads, pattern, field, closer in chain:
                if buf.startswith(leads, pos):
                    break
            else:
                break
            if field is None:
                # a close of the outside region, which holds nothing here: _close stores nothing
                # and _leave goes back to state 0 (done below, once)
                pos += len(leads[0])
                continue
            if pattern is None:
                match = None
                end = pos + len(leads[0])
            else:
                match = pattern.match(buf, pos)
                if match is None:
                    break
                end = match.end()
            if closer.__class__ is str:
                c = buf.find(closer, end)
            else:
                c, closer = _first_closer(buf, closer, end)
            if c < 0 or (self.REGIONS[field].reject and self._tent_status(field, buf, end, c) == REJECTED):
                break
            pos = self._express_store(field, match, buf[pos:end], buf[end:c], closer, pos + base) - base
        if pos != moved:
            # _leave with nothing suspended
            self._state = 0
            self._enter(self.OUTSIDE_FIELD)
            self._mark = pos + base
            self._open_at = None
            self._open_text = ""
        return pos

    def _watch_again(self, delimiter: str, note: str, slot: str | None) -> None:
        """errors="recover": look for ``delimiter`` written again right after it (_reopened);
        only delimiters of three characters or more (``[`` or ``}`` written twice is text)."""
        text = delimiter.strip()
        self._again = (text, note, slot) if len(text) >= 3 else None

    def _reopened(self, events: list, buf: str, pos: int, eos: bool) -> int | None:
        """errors="recover" policies *repeated opener* and *doubled closer*: a region whose body
        starts (after whitespace) with its own opener written again -- a model writing
        ``<think>`` after the prompt already opened it, or ``<think><think>`` -- and a closer
        written twice (``</tool_call></tool_call>``) have the copy consumed and reported (kind
        ``"repaired"``). The whitespace before it stays text of the current region.

        Returns None while the text at ``pos`` may still become the copy (held), else the
        position to go on from.
        """
        again, note, slot = self._again
        lead = _lead(buf, pos, len(buf))
        at = pos + lead
        if buf.startswith(again, at):
            self._again = None
            if lead:
                self._route(events, buf[pos:at])
            here = self._here()
            self._report("repaired", here, here + len(again), NOTES[note].format(again), again, slot)
            self._consume("diagnostic", len(again))
            self._gap(again)
            return at + len(again)
        if not eos and len(buf) - at < len(again) and buf.startswith(again[:len(buf) - at], at):
            # whitespace or a piece of the opener so far: wait for more (compared in place: a
            # slice of the rest of the buffer made every region of one big feed cost its length)
            return None
        self._again = None
        return pos

    def _leave(self, at: int) -> None:
        """After a close ending at offset ``at``: resume the suspended region, or go back OUTSIDE."""
        if self._stack:
            (self._state, self._field, self._region, self._name, self._dirty, self._opened, self._body,
             self._blocks, self._groups, self._bd, self._open_at, self._open_text, self._gaps) = self._stack.pop()
            self._exact = self._body_len()
            self._mark = at - self._exact  # its body goes on from here
            self._sunk = 0
        else:
            self._state = 0
            self._enter(self.OUTSIDE_FIELD)
            self._mark = at
            self._sunk = 0
            self._open_at = None
            self._open_text = ""

    def _end_value(self, events: list) -> None:
        """A v2 region's value ended: close it, then look for its optional trailing close."""
        after = self._region.after
        self._leave(self._close(events, None))
        if after is not None:
            self._back = self._state
            self._state = after

    def _consume(self, kind: str, n: int) -> None:
        """Count ``n`` characters at the current position that no region receives (a delimiter
        or text a diagnostic holds), and enter them in the ledger when there is one."""
        if self.ledger is not None:
            at = self._here()
            self.ledger.append((at, at + n, kind))
        self._sunk += n
        if self._recover and self._STRAY:  # only _stray_closers reads it
            self._exact = self._body_len()

    def _gap(self, text: str) -> None:
        """errors="recover": ``text``, just consumed at the current position, lies inside the
        current region's span without being its body (see :meth:`_raw`)."""
        if self._gaps is None:
            self._gaps = []
        self._gaps.append((self._body_len(), text))

    def _raw(self, body: str, closer: str) -> str:
        """The current region's text in the output, opener to ``closer``: ``body`` with the text
        consumed inside it put back where it was (:meth:`_gap`), so that a diagnostic's ``text``
        is the output slice at its ``start``/``end`` (docs/events.md)."""
        gaps = self._gaps
        if not gaps:
            return self._open_text + body + closer
        pieces = [self._open_text]
        k = 0
        for at, text in gaps:
            pieces.append(body[k:at])
            pieces.append(text)
            k = at
        pieces.append(body[k:])
        pieces.append(closer)
        return "".join(pieces)

    def _route(self, events: list, text: str) -> None:
        if self.ledger is not None and text:
            at = self._here()
            self.ledger.append((at, at + len(text), "text" if self._name is not None else "discarded"))
        if self._name is None:
            if self._region is not None and self._state in self._sections():
                self._section_text(text)
            self._sunk += len(text)  # the null sink, or a region whose slot is null: discarded
            return
        if self._mute:
            # the whole-text path (runtime/whole.py): no event is returned, so none is built
            self._opened = True
            body = self._body
            body.append(text)
            if len(body) >= BLOCK:
                self._blocks.append("".join(body))
                body.clear()
            return
        if not self._opened:
            self._opened = True
            event = {"type": "region_open", "field": self._name}
            if self._region.label is not None:
                event["region"] = self._region.label
            if self._offsets:
                event["start"] = event["end"] = self._here()
            events.append(event)
        if self._offsets:
            at = self._here()
            self._keep(text)
            events.append({"type": "region_chunk", "field": self._name, "text": text, "dirty": self._dirty,
                           "start": at, "end": at + len(text)})
            return
        # _keep, written out (a call costs what the rest of this does)
        body = self._body
        body.append(text)
        if len(body) >= BLOCK:
            self._blocks.append("".join(body))
            body.clear()
        events.append({"type": "region_chunk", "field": self._name, "text": text, "dirty": self._dirty})

    @classmethod
    def _sections(cls) -> frozenset:
        """The states whose region may nest another (a call section when its slot is null)."""
        found = cls.__dict__.get("_SECTION_STATES")
        if found is None:
            found = frozenset(s for s, edges in enumerate(cls.TRANSITIONS) if any(e[0] == NEST for e in edges))
            cls._SECTION_STATES = found
        return found

    def _cut_closers(self, buf: str, state: int) -> list[int]:
        """The offsets in ``buf`` from which the rest of ``buf`` (the end of the output) is a
        proper prefix of the call section's own closer, when ``state`` is a call section's
        (:meth:`_sections`), in increasing order; empty otherwise.

        Only literal closers are known (``STRAY_CLOSERS``, three characters or more). Costs at
        most the closer's length squared; :meth:`_run` asks once per state and end-of-stream pass."""
        if state not in self._sections():
            return []
        field = self._field
        n = len(buf)
        found = set()
        for closer, _opener, f in self.STRAY_CLOSERS:
            if f != field:
                continue
            for j in range(max(0, n - len(closer) + 1), n):
                if closer.startswith(buf[j:]):
                    found.add(j)
        return sorted(found)

    def _section_text(self, text: str) -> None:
        """Text routed into a call section (a region whose slot is null and that nests calls):
        collected per stretch between calls, decided when the stretch ends (:meth:`_section_end`).
        Pieces are joined by their offsets, so how the output was chunked changes nothing."""
        at = self._here()
        loose = self._loose
        if loose is not None and loose[1] == at:
            loose[1] = at + len(text)
            loose[2].append(text)
            if not loose[3] and not text.isspace():
                loose[3] = True
        else:
            self._loose = [at, at + len(text), [text], not text.isspace()]

    def _section_end(self, events: list, eos: bool) -> None:
        """A stretch of call-section text ended (a call opens, the section closes, the output
        ends). Whitespace is the section's own; anything else is text no call accounts for, never
        dropped (docs/events.md, "Text inside a call section"): strict raises
        ``ContentParseError``; recover ends the stretch with ``region_malformed`` (its text goes
        to the implicit field, or, when the output ended inside the section, is kept in a
        ``truncated`` diagnostic only). At the end of the output, a stretch that is the start of
        the section's own closer (after whitespace) is a cut closer, not stray text."""
        loose, field = self._loose, self._field
        self._loose = None
        start, end, pieces, solid = loose
        if not solid:
            return
        raw = "".join(pieces)
        region = self.REGIONS[field]
        if eos:
            rest = raw.strip()
            if any(c != rest and c.startswith(rest) for c, _o, f in self.STRAY_CLOSERS if f == field):
                return
        shown = raw if len(raw) <= 60 else raw[:57] + "..."
        exc = ContentParseError(
            f"Field {region.name!r} (a call section, slot null): text that is no call at response offsets "
            f"{start}-{end}: {shown!r}; text inside a call section is never dropped "
            f"({'the output ended inside the section' if eos else 'only whitespace may stand between calls'}).")
        if not self._recover:
            exc.field = region.name
            exc.start, exc.end = start, end
            exc.partial_message = _copy(_joined(self._out))
            raise exc
        kind = "truncated" if eos else "malformed"
        implicit = self.OUTSIDE_FIELD
        into = self.REGIONS[implicit].slot if kind == "malformed" and implicit is not None else None
        events.append({"type": "region_malformed", "field": None, "region": region.name, "text": raw,
                       "error": f"ContentParseError: {exc}", "start": start, "end": end, "into": into})
        self._report(kind, start, end, f"ContentParseError: {exc}", raw, None)
        if into is not None:
            self._to_implicit(implicit, raw)

    def _keep(self, text: str) -> None:
        """Append body text; every BLOCK pieces are joined, so a long body of small chunks costs
        about its own size, not a pointer and a header per chunk."""
        body = self._body
        body.append(text)
        if len(body) >= BLOCK:
            self._blocks.append("".join(body))
            body.clear()

    def _close(self, events: list, close_match: Any, closer: str = "", eos: bool = False) -> int:
        """Close the current region: parse its body and store the value (template-language.md "Closing a region and
        storing its value").

        The caller decides what becomes current next (:meth:`_leave` or :meth:`_begin`).

        Args:
            close_match: the close delimiter's regex match (its groups reach the transform), or None.
            closer: the close delimiter's text ("" when none was consumed).
            eos: the stream ended with the region still open.

        Returns:
            int: the response offset just after the close delimiter.
        """
        if self._loose is not None:
            self._section_end(events, eos and not closer)
        blocks = self._blocks
        text = "".join(blocks) + "".join(self._body) if blocks else "".join(self._body)
        at = self._mark + self._sunk + len(text)  # _here(): the body is all that was routed
        if self.ledger is not None and closer:
            self.ledger.append((at, at + len(closer), "delimiter"))
        region = self._region
        if close_match is not None and self._field is not None and self._REPAIRS[self._field]:
            self._declared_repairs(close_match, at, self._field)
        if region is not None and self._opened and region.slot is not None:
            names = region.groups
            scope = _NO_GROUPS
            if names:
                # D4/D5: every declared group is in scope, None when it did not take part.
                scope = dict.fromkeys(names)
                if self._groups is not None:
                    _put_groups(scope, self._groups)
                if close_match is not None:
                    _put_groups(scope, close_match)
            if self._recover and self._STRAY and not region.dirty:
                self._stray_closers(text, at - len(text), region)
            cut = eos and not closer and self._cut_off(region, text)
            if region.empty_none and (not text or text.isspace()) and not cut:
                value = None  # v2: an empty body has no value
            else:
                try:
                    if cut:
                        # the output ended inside the region: its value is not finished, so
                        # it is never returned (docs/events.md, "Truncated regions")
                        raise ContentParseError(
                            f"Field {region.slot!r}: the output ended inside this region before "
                            f"{'its value ended' if region.ends else 'its close'} (truncated); "
                            "a value the output did not finish is not returned.")
                    if self._recover:
                        value, notes = self._recovered(region, text, scope, closer, eos)
                    else:
                        value = region.process(text, scope)
                    if value.__class__ is not str:
                        # (a str is no tool call: the name check and the typing leave it as it is)
                        value = _checked_value(region, value, self._tools)
                    if self._recover and notes:
                        start = self._open_at if self._open_at is not None else self._mark
                        raw = self._raw(text, closer)
                        for note in notes:
                            self._report("repaired", start, at + len(closer), note, raw, region.slot)
                except (ValueError, KeyError, TypeError) as exc:
                    start = self._open_at if self._open_at is not None else self._mark
                    if not self._recover:
                        # strict: the error says where, and carries the message parsed so far
                        exc.field = region.slot
                        exc.start, exc.end = start, at + len(closer)
                        exc.partial_message = _copy(_joined(self._out))
                        raise
                    self._malformed(events, region, text, closer, exc, start, at + len(closer),
                                    eos and not closer and (cut or self._has_close()))
                    self._opened = False
                    return at + len(closer)
            self._store(region, value, self._open_at if self._open_at is not None else self._mark,
                        at + len(closer), text, closer)
            if self._mute:
                self._opened = False  # (the whole-text path: no event, see _route)
                return at + len(closer)
            event = {"type": "region_close", "field": region.slot, "value": value}
            if region.label is not None:
                event["region"] = region.label
            if self._offsets:
                event["start"] = self._open_at if self._open_at is not None else self._mark
                event["end"] = at + len(closer)
            events.append(event)
        self._opened = False
        return at + len(closer)

    def _recovered(self, region: Region, text: str, scope: dict, closer: str, eos: bool) -> tuple[Any, list[str]]:
        """errors="recover": :meth:`_repaired`, and when that fails, the policy *opener inside
        the body*: the region's own opener written again inside its body (poolside
        ``<tool_call>f\n{...}\n<tool_call>f\n{...}</tool_call>``: a call started, abandoned
        and written again). When the body after the last copy of the opener gives a value, that
        is the region's value; what came before it, from the first opener to the end of the last
        copy, is an abandoned start, dropped with a ``repaired`` diagnostic holding its text and
        offsets (never a call, never answer text). Decided at the close from the whole body, so
        chunking changes nothing; the strict parse is not touched. A body that passed over a closer
        inside one of its values (:meth:`_close_deferred`) is read strictly: no repair is stacked
        on that one (docs/security.md, "Closers inside an open value")."""
        if self._held == 2:
            raise ContentParseError(
                f"Field {region.slot!r}: a closer stands inside an open value of the body and an opener of this "
                "field follows it: the body is ambiguous (one call whose value holds that text, or calls that "
                "end and begin there), so no call is read from it (docs/security.md, \"Closers inside an open "
                "value\").")
        if self._held:
            return region.process(text, scope), []
        try:
            return self._repaired(region, text, scope, closer, eos)
        except (ValueError, KeyError, TypeError):
            opener = self._open_text
            k = text.rfind(opener) if opener.strip() and not self._gaps and closer else -1
            if k < 0:
                raise
            try:
                value, notes = self._repaired(region, text[k + len(opener):], scope, closer, eos)
            except (ValueError, KeyError, TypeError):
                pass
            else:
                start = self._open_at if self._open_at is not None else self._mark
                dropped = opener + text[:k + len(opener)]
                self._report("repaired", start, start + len(dropped), NOTES["opener-inside"].format(opener),
                             dropped, region.slot)
                return value, notes
            raise

    def _repaired(self, region: Region, text: str, scope: dict, closer: str, eos: bool) -> tuple[Any, list[str]]:
        """errors="recover": a region's value, repaired where the strict parse fails
        (``runtime/repair.py``); returns ``(value, notes)``, one note per repair made.

        Not tried on a region the stream cut off (no close, not self-delimiting): completing a
        half-written body would invent it. Raises the strict parse's error when nothing helps.
        """
        process = region.process
        repair = getattr(process, "repair", None)
        notes: list[str] = []
        try:
            value = process(text, scope)
            if repair is not None and process.repair_on_success:
                got = repair(text, scope, True)
                if got is not None:
                    value, notes = got
        except (ValueError, KeyError, TypeError):
            if repair is None or (eos and not closer):
                raise
            try:
                got = repair(text, scope)
            except (ValueError, KeyError, TypeError):
                got = None
            if got is None:
                raise
            value, notes = got
        if region.typed:
            value = decode_string_arguments(value, notes)
        return value, notes

    def _stray_closers(self, text: str, start: int, region: Region) -> None:
        """errors="recover" policy *stray closer*: a closer of another field written in the text
        of ``region`` (``Done.</tool_call>``) with no opener of that field before it (since the
        previous such closer) stays text, and is reported (kind ``"stray-closer"``). Only the part
        of the body after the last break of its offsets (``_exact``: a nested region, a consumed
        copy) is looked at, so every report has exact offsets.

        Args:
            text: the region's body; ``start``: the response offset ``text`` would start at if it
                lay contiguously before the close (exact from ``self._exact`` on).
        """
        exact = self._exact
        reported: set | None = None  # (offset, closer) already reported: fields can share a closer
        for closer, opener, field in self._STRAY:
            if self.REGIONS[field] is region:
                continue
            j = text.find(closer, exact)
            since = exact
            while j >= 0:
                try:
                    found = opener.search(text, since, j)
                except _SearchTimeout as exc:  # not proven linear and slow: taken as an opener there
                    label = exc.bounded.label
                    self._report("regex-timeout", start + since, start + j,
                                 f"the search of /{exc.bounded.pattern}/ (field {label[0]!r}, key {label[1]!r}) "
                                 f"for a stray closer's opener ran past its time limit of {exc.timeout} s",
                                 text[since:j], region.slot)
                    found = True
                if found is None and (reported is None or (j, closer) not in reported):
                    if reported is None:
                        reported = set()
                    reported.add((j, closer))
                    owner = self.REGIONS[field]
                    self._report("stray-closer", start + j, start + j + len(closer),
                                 NOTES["stray-closer"].format(closer, owner.name, region.slot), closer,
                                 owner.slot)
                since = j + len(closer)
                j = text.find(closer, since)

    def _declared_repairs(self, match: Any, at: int, field: int) -> None:
        """Report each declared-repair group (REPAIR_GROUP) that took part in ``match``, a
        delimiter of ``field`` that starts at response offset ``at``."""
        names = self._REPAIRS[field]
        pattern = match.re
        key = (pattern, names)
        numbers = _REPAIR_NUMBERS.get(key)
        if numbers is None:
            # per pattern, the repair groups it has, in declared order, with their numbers:
            # groupdict() builds a name table on every call (0.6 us a delimiter)
            if len(_REPAIR_NUMBERS) >= 512:
                _REPAIR_NUMBERS.clear()
            index = pattern.groupindex
            numbers = _REPAIR_NUMBERS[key] = tuple((name, index[name]) for name in names if name in index)
        if not numbers:
            return
        groups = match.groups()
        base = match.start()
        delimiter = match.group()
        for name, number in numbers:
            text = groups[number - 1]
            if text is not None:
                what = name[len(REPAIR_GROUP):].rstrip("0123456789").replace("_", " ")
                start = at + match.start(name) - base
                self._report("repaired", start, start + len(text),
                             NOTES["declared"].format(what, text, delimiter), text, self.REGIONS[field].slot)

    def _report(self, kind: str, start: int, end: int, message: str, text: str, field: str | None = None) -> None:
        self.diagnostics.append({"kind": kind, "field": field, "start": start, "end": end, "message": message,
                                 "text": text})

    def _cut_off(self, region: Region, text: str) -> bool:
        """Whether a region the end of the output closed (no closer came) is *truncated*: the
        output ended inside it before its format said its value was complete (docs/events.md,
        "Truncated regions").

        A plain region (``text`` and the like) is never cut: its text is its value (unclosed
        reasoning stays reasoning), unless it is a v2 tool-call region (functionary's
        ``<|python_tag|>`` code): a cut program is not run. An ``end:
        "value"`` region is cut (its decoder would have closed it at the value's end). A
        structured region whose state has a closer is cut unless its parser is self-delimiting
        (``json``, ``pythonic``) and its body holds a whole value: then the strict parse, not
        this test, decides (a cut object never parses). A structured region with no closer in the
        format ends with the output, as the template says.
        """
        if not region.dirty and not self._CALLS[self._field]:
            return False
        if region.ends:
            return True
        if not self._has_close():
            return False
        return not region.ends_itself or not region.dirty or not text or text.isspace()

    def _has_close(self) -> bool:
        """The current state watches a close of its region (the format has a closer for it)."""
        return any(edge[0] == CLOSE for edge in self.TRANSITIONS[self._state])

    def _malformed(self, events: list, region: Region, body: str, closer: str, exc: BaseException, start: int,
                   end: int, cut: bool) -> None:
        """errors="recover": a body that cannot be decoded ends its region with ``region_malformed``.

        A region the output ended inside (``cut``: no close came where the format has one, or
        its value did not end) is *truncated*: its value is dropped and its text kept in the
        diagnostic only (never in the answer: it is a cut call, not prose). One that closed is
        *malformed*: its raw text, delimiters included, also goes to the implicit field, so the
        answer never loses it.
        """
        raw = self._raw(body, closer)
        error = f"{type(exc).__name__}: {exc}"
        kind = "truncated" if cut else "malformed"
        implicit = self.OUTSIDE_FIELD
        into = self.REGIONS[implicit].slot if kind == "malformed" and implicit is not None else None
        # "into": the message key that received the raw text (None: it is only in the diagnostic)
        event = {"type": "region_malformed", "field": region.slot, "text": raw, "error": error,
                 "start": start, "end": end, "into": into}
        if region.label is not None:
            event["region"] = region.label  # as region_open and region_close carry it
        events.append(event)
        self._report(kind, start, end, error, raw, region.slot)
        if into is not None:
            self._to_implicit(implicit, raw)

    def _to_implicit(self, implicit: int, raw: str) -> None:
        """Add ``raw`` (a malformed region's text) to the implicit field's value."""
        target = self.REGIONS[implicit]
        out = self._out
        previous = out.get(target.slot)
        if target.repeats and target.join is None:
            out.setdefault(target.slot, []).append(raw)
        elif isinstance(previous, _Parts) and previous.size:
            previous.add(target.join or "", raw)
        elif isinstance(previous, str) and previous:
            out[target.slot] = _Parts(previous, target.join or "", raw)
        else:
            out[target.slot] = raw

    def _store(self, region: Region, value: Any, start: int = -1, end: int = -1, body: str = "",
               closer: str = "") -> None:
        """Put one block's value into the message (docs/template-language.md, D1: empty never erases,
        and an empty piece of a ``join`` field is never joined).

        ``start``/``end``: the block's offsets in the response, ``body``/``closer`` its text (kept
        by reference for the diagnostic's ``text``, see :meth:`_raw`). A field that neither joins nor
        repeats is assigned; when that replaces a non-empty value with a non-empty one (the field
        written twice), an ``overwritten`` diagnostic names the field and the replaced block's
        offsets (docs/events.md, "Overwritten values"). For a tool-call field (v1 ``tool_calls``,
        v2 ``"role": "tool_calls"``) dropping a call is a wrong answer: ``errors="recover"``
        appends the later calls to the earlier ones; ``"strict"`` raises
        :class:`ContentParseError` naming the field (docs/template-language.md, "Closing a region
        and storing its value").

        Raises:
            ContentParseError: a ``join`` value that is not a string; strict, a tool-call field
            written twice.
        """
        out = self._out
        name = region.slot
        join = region.join
        if join is not None:
            if value is None and region.empty_none:
                return
            if not isinstance(value, str):
                raise ContentParseError(
                    f"Field {region.name!r}: 'join' requires each match to parse to a string, got "
                    f"{type(value).__name__}."
                )
            # empty pieces are never joined (docs/template-language.md, D1): "" + join + "b" would
            # give the separator with nothing before it, "a" + join + "" one with nothing after it
            previous = out.get(name)
            if previous is None:
                out[name] = value
            elif not value:
                pass  # an empty piece is never joined
            elif type(previous) is _Parts:
                previous.add(join, value)
            elif not previous:
                out[name] = value
            else:
                # the pieces are joined once, when the message is read (_joined): a string
                # rebuilt for every block made a field of many blocks quadratic
                out[name] = _Parts(previous, join, value)
        elif region.repeats:
            if value is None and region.empty_none:
                return
            if region.extend and isinstance(value, list):
                out.setdefault(name, []).extend(value)
            else:
                out.setdefault(name, []).append(value)
        elif not _is_empty(value):
            previous = out.get(name)
            if not _is_empty(previous) and name in self._spans:
                value = self._overwrite(region, name, previous, value, start, end)
            out[name] = value
            # references only (no copy): the text is built if the value is ever replaced
            self._spans[name] = (start, end, self._open_text, body, closer, self._gaps)
        elif _is_empty(out.get(name)):
            out[name] = value

    def _overwrite(self, region: Region, name: str, previous: Any, value: Any, start: int, end: int) -> Any:
        """A field that neither joins nor repeats gets a second non-empty value (see _store):
        report it, and return what the message stores."""
        at, to, opener, body, closer, gaps = self._spans[name]
        now = self._open_text, self._gaps
        self._open_text, self._gaps = opener, gaps
        try:
            raw = self._raw(body, closer)
        finally:
            self._open_text, self._gaps = now
        calls = name == "tool_calls" or self._CALLS[self._field]
        if calls and not self._recover:
            exc = ContentParseError(
                f"Field {name!r}: a second block (offsets {start} to {end}) would replace the tool calls of "
                f"the block at offsets {at} to {to}; the field does not repeat, and dropping a call is a "
                "wrong answer (errors='recover' keeps both).")
            exc.field = name
            exc.start, exc.end = start, end
            exc.partial_message = _copy(_joined(self._out))
            raise exc
        if calls:
            kept = (previous if isinstance(previous, list) else [previous]) + (
                value if isinstance(value, list) else [value])
            self._report("overwritten", at, to,
                         f"Field {name!r} does not repeat but was written again (offsets {start} to {end}): "
                         "the later calls are appended to those of this block, not put in their place.",
                         raw, name)
            return kept
        self._report("overwritten", at, to,
                     f"Field {name!r} does not repeat: the value of this block was replaced by the block at "
                     f"offsets {start} to {end}.", raw, name)
        return value


#: per delimiter pattern: its ``(group name, group number)`` pairs (see _put_groups)
_GROUP_NUMBERS: dict = {}
#: per (delimiter pattern, a field's repair group names): the ``(name, number)`` pairs of those
#: groups the pattern has (see StreamParser._declared_repairs)
_REPAIR_NUMBERS: dict = {}


#: the error of a region whose value holds a NaN or an infinity (docs/security.md "Files")
_NON_FINITE = ("Field {!r}: the value holds a number that is not finite ({!r}): the body wrote NaN, Infinity "
               "or a number too large for a float (1e999999), which JSON cannot represent")


def _non_finite(value: Any) -> float | None:
    """The first NaN or infinite float in ``value`` (dict keys and values, list and tuple items, at
    any depth), or None.

    A message is JSON: ``json.loads`` (and ``float()``, ``ast.literal_eval``) read ``NaN``,
    ``Infinity`` and ``1e999999`` as floats that ``json.dumps`` can only write as non-JSON
    ``NaN``/``Infinity``. The body then holds text no JSON reader accounts for, so its region is
    malformed: strict raises, recover keeps the raw text (docs/security.md "Files"). One visit per
    item: linear in the value's size (about 0.4 us for a tool call of a dozen items: strings,
    ints, bools and None are passed over without a call).
    """
    cls = value.__class__
    if cls in _LEAVES:
        return None
    try:
        if cls is _DICT:
            return _finite_dict(value)
        return _finite_walk((value,))
    except RecursionError:  # nested deeper than the stack left: the same walk without recursion
        return _finite_stack(value)


_STR, _FLOAT, _DICT, _LIST, _TUPLE = str, float, dict, list, tuple
#: the classes that hold no float (subclasses are not: they take the general way)
_LEAVES = frozenset((str, int, bool, type(None)))


def _checked_value(region: Region, value: Any, tools: Any) -> Any:
    """A region's parsed ``value`` (not a ``str``) after the checks every value takes: in a
    typed region the tool-call name check (``check_tool_call_names``) and, with ``tools``, the
    arguments' typing (``coerce_tool_calls``); then no non-finite number anywhere. A plain call,
    or a list of them, passes the first and the last without them (:func:`_plain_call`).

    Raises:
        ContentParseError (a ``ValueError``): a bad name, or a non-finite number; the typing's
        errors.
    """
    cls = value.__class__
    if region.typed and tools is None and (
            _plain_call(value) if cls is _DICT else cls is _LIST and _plain_calls(value)):
        return value
    if region.typed:
        check_tool_call_names(value, region.slot)
        if tools is not None:
            value = coerce_tool_calls(value, tools)
    bad = _non_finite(value)
    if bad is not None:
        raise ContentParseError(_NON_FINITE.format(region.name, bad))
    return value


def _plain_call(call: dict) -> bool:
    """True when ``call`` (a dict) is a tool call that ``check_tool_call_names`` and
    :func:`_non_finite` both let through, proven the quick way (the two checks were
    1.2 us of a call's 5-8 us): every key a ``str``; every value a ``str``, ``int``, ``bool`` or
    None, except ``"function"``, a dict whose ``"name"`` is a name already checked
    (``tools._GOOD_NAMES``) and whose values are such leaves too, except ``"arguments"``, a
    ``str`` or a dict with ``str`` keys whose values are such leaves or hold nothing non-finite
    (:func:`_non_finite` of each nested value: xlam's ``{"stops": [...], "options": {...}}``). No
    other float anywhere, so nothing non-finite. False for anything else, which then takes both
    checks (the answer is never wrong, only sometimes slow)."""
    function = call.get("function")
    if function.__class__ is not _DICT:
        return False
    for key, value in call.items():
        if key.__class__ is not _STR or (value.__class__ not in _LEAVES and value is not function):
            return False
    name = function.get("name")
    if name.__class__ is not _STR or name not in _GOOD_NAMES:
        return False
    for key, value in function.items():
        if key.__class__ is not _STR:
            return False
        cls = value.__class__
        if cls in _LEAVES:
            if key == "arguments" and cls is not _STR:
                return False  # arguments null, a number or a bool: refused by the name check
            continue
        if key != "arguments" or cls is not _DICT:
            return False
        for k, v in value.items():
            if k.__class__ is not _STR:
                return False
            if v.__class__ not in _LEAVES and _non_finite(v) is not None:
                return False  # (a nested value: lists and objects of arguments, walked once)
    return True


def _plain_calls(calls: list) -> bool:
    """:func:`_plain_call` of every item of ``calls`` (a list: a region whose transform makes one
    call per item, mistral_nemo's ``[TOOL_CALLS][...]``); True for an empty list, which both checks
    let through too (``check_tool_call_names`` looks at each item, ``_non_finite`` at each item)."""
    for call in calls:
        if call.__class__ is not _DICT or not _plain_call(call):
            return False
    return True


def _finite_dict(item: dict) -> float | None:
    """:func:`_finite_walk` of one dict: its keys first, then its values, in order."""
    for key in item:
        if key.__class__ is not _STR and _finite_walk((key,)) is not None:
            return key
    for value in item.values():
        cls = value.__class__
        if cls in _LEAVES:
            continue
        if cls is _FLOAT:
            if value - value != 0.0:
                return value
            continue
        found = _finite_dict(value) if cls is _DICT else _finite_walk((value,))
        if found is not None:
            return found
    return None


def _finite_walk(items: Any) -> float | None:
    """:func:`_non_finite` over ``items`` (an iterable), recursive (the fast path)."""
    for item in items:
        cls = item.__class__
        if cls in _LEAVES:
            continue
        if cls is _FLOAT:
            if item - item != 0.0:  # inf - inf and nan - nan are nan
                return item
        elif cls is _DICT:
            found = _finite_dict(item)
            if found is not None:
                return found
        elif cls is _LIST or cls is _TUPLE:
            found = _finite_walk(item)
            if found is not None:
                return found
        elif isinstance(item, (_FLOAT, _DICT, _LIST, _TUPLE)):  # subclasses, the slow way
            found = _finite_stack(item)
            if found is not None:
                return found
    return None


def _finite_stack(value: Any) -> float | None:
    """:func:`_non_finite` with an explicit stack (any depth)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if item - item != 0.0:
                return item
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return None


def _alias_of(name: str) -> str | None:
    """``g`` for a group named ``g__alt<digits>`` (RECOVER_ALIAS), else None."""
    k = name.rfind(RECOVER_ALIAS)
    tail = name[k + len(RECOVER_ALIAS):] if k > 0 else ""
    return name[:k] if tail.isdigit() and tail.isascii() else None


def _put_groups(scope: dict, match: Any) -> None:
    """``scope.update(match.groupdict())``, by group number: the regex module builds a name
    table for every ``groupdict()`` (0.65 us for one group); ``groups()`` and a table
    made once per pattern give the same values (None for a group that did not take part; a name
    used twice is one group) in the same order."""
    pattern = match.re
    pairs = _GROUP_NUMBERS.get(pattern)
    if pairs is None:
        if len(_GROUP_NUMBERS) >= 512:
            _GROUP_NUMBERS.clear()  # patterns compiled on the fly (tests, tools) do not pile up
        index = pattern.groupindex
        plain = tuple((name, number) for name, number in index.items() if _alias_of(name) is None)
        # a recover-only opener's groups (RECOVER_ALIAS): written into their own name when they took part
        alias = tuple((_alias_of(name), number) for name, number in index.items() if _alias_of(name) is not None)
        pairs = _GROUP_NUMBERS[pattern] = (plain, alias)
    groups = match.groups()
    plain, alias = pairs
    for name, number in plain:
        scope[name] = groups[number - 1]
    for name, number in alias:
        value = groups[number - 1]
        if value is not None:
            scope[name] = value


def _lead(buf: str, pos: int, limit: int) -> int:
    """How many whitespace characters ``buf[pos:limit]`` starts with."""
    n = pos
    while n < limit and buf[n].isspace():
        n += 1
    return n - pos


class _Parts(list):
    """The pieces of a ``join`` field's value so far (a list of strings and separators), and
    ``size``, the length of their concatenation; :func:`_joined` makes the string."""

    __slots__ = ("size",)

    def __init__(self, first: str, join: str, value: str) -> None:
        super().__init__((first, join, value))
        self.size = len(first) + len(join) + len(value)

    def add(self, join: str, value: str) -> None:
        self.append(join)
        self.append(value)
        self.size += len(join) + len(value)


def _joined(out: dict) -> dict:
    """``out`` with every :class:`_Parts` value joined into its string (a new dict when any is)."""
    if not any(type(v) is _Parts for v in out.values()):
        return out
    return {k: "".join(v) if type(v) is _Parts else v for k, v in out.items()}


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _texts(value: Any, tokenizer: Any, what: str) -> tuple[list[str], bool]:
    """``(texts, is_batch)`` for a response or prefix argument (events.md "The parser object").

    A str is one text; a list or tuple of str or of id sequences is a batch; anything else (a list
    of ids, an array, a tensor) goes to ``tokenizer.decode``, which gives one str or, for a 2-D
    input, a list of them (a batch), as transformers' tokenizers do.
    """
    if isinstance(value, str):
        return [value], False
    if isinstance(value, (list, tuple)) and (not value or isinstance(value[0], (str, list, tuple))):
        return [to_text(item, tokenizer, what) for item in value], True
    if tokenizer is None:
        return [to_text(value, tokenizer, what)], False
    decoded = tokenizer.decode(value)
    if isinstance(decoded, str):
        return [decoded], False
    if isinstance(decoded, (list, tuple)) and all(isinstance(item, str) for item in decoded):
        return list(decoded), True
    raise TypeError(f"tokenizer.decode returned {type(decoded).__name__} for the {what}, expected str")


def module_api(parser_class: type) -> tuple[Callable[..., StreamParser], Callable[..., Any]]:
    """The two API functions of a generated module, for its parser class (docs/events.md): every
    module gets them from here (``get_response_parser, parse_response = _rt.module_api(...)``)
    instead of writing them out.

    Args:
        parser_class: the module's ``ResponseParser``.

    Returns:
        tuple: ``(get_response_parser, parse_response)``: ``get_response_parser(prefix=None,
        tools=None, tokenizer=None, errors="strict", regex_timeout=None)`` returns a new parser
        (``prefix`` is required: ValueError without it); ``parse_response(response, prefix=None,
        ...)`` parses whole output(s) into message dict(s) as :func:`parse_many` does (a list of
        texts is a batch; ``regex_timeout``: seconds per search of a delimiter not proven linear,
        docs/security.md "Limits"). Both raise what ``ResponseParser`` and :func:`parse_many` raise.
    """
    def get_response_parser(prefix: Any = None, tools: Any = None, tokenizer: Any = None,
                            errors: str = "strict", regex_timeout: float | None = None) -> StreamParser:
        """Return a new parser of this module's template (docs/events.md); ``prefix`` is required
        (ValueError without it); ``regex_timeout``: seconds per search of a delimiter not proven
        linear (docs/security.md, "Limits")."""
        return parser_class(prefix, tools, tokenizer, errors, regex_timeout=regex_timeout)

    def parse_response(response: Any, prefix: Any = None, tools: Any = None, tokenizer: Any = None,
                       errors: str = "strict", regex_timeout: float | None = None) -> Any:
        """Parse whole output(s) of this module's template into message dict(s) (docs/events.md):
        a list of texts is a batch; ``regex_timeout``: seconds per search of a delimiter not proven
        linear (docs/security.md, "Limits"). Raises what :func:`respc.runtime.parse_many` raises."""
        return parse_many(parser_class, response, prefix, tools, tokenizer, errors, regex_timeout=regex_timeout)

    for function in (get_response_parser, parse_response):
        function.__module__ = parser_class.__module__
        function.__qualname__ = function.__name__
    return get_response_parser, parse_response


def parse_many(parser_class: Callable[..., StreamParser], response: Any, prefix: Any, tools: Any,
               tokenizer: Any, errors: str = "strict", *, regex_timeout: float | None = None) -> Any:
    """Whole-text parsing with batches and prefix broadcasting (events.md "The parser object").

    Args:
        parser_class: a generated ``ResponseParser``.
        response: a str or token ids (one message), or a list of str / of id sequences (a batch).
        prefix: a str or ids (broadcast to every item), ``""``/``[]`` to opt out, or a list of one
            prefix per item.
        tools, tokenizer, errors: as for ``ResponseParser``.
        regex_timeout (float | None): seconds one search of a regex delimiter not proven to
            search in linear time may run, per item (None: :data:`REGEX_TIMEOUT`; a positive
            number, else ValueError; docs/security.md, "Limits").

    Returns:
        dict | list[dict]: one message, or a list for a batch (a one-item batch gives a list). With
        ``errors="recover"`` no model output raises, so every item has its message.

    Raises:
        ValueError: prefix missing, or a prefix list whose length differs from the batch; in
            ``"strict"``, a body that failed to parse (the error's ``item`` names the batch item).
        TypeError: token ids without a tokenizer.
    """
    extra = {} if regex_timeout is None else {"regex_timeout": regex_timeout}
    if response.__class__ is str and prefix.__class__ is str and tokenizer is None:
        # one text and one prefix, the common case (a batch job's record): what the general
        # path below does with them, without building its lists
        return finish_whole(parser_class(prefix, tools, None, errors, **extra), response)
    if prefix is None:
        raise ValueError(PREFIX_REQUIRED)
    texts, batched = _texts(response, tokenizer, "response")
    if isinstance(prefix, (list, tuple)) and not prefix:
        prefix = ""  # the explicit opt-out, broadcast
    prefixes, prefix_batched = _texts(prefix, tokenizer, "prefix")
    if not prefix_batched:
        prefixes = prefixes * len(texts)
    elif len(prefixes) != len(texts):
        raise ValueError(
            f"Got {len(texts)} response(s) but {len(prefixes)} prefix(es); `prefix` must be a single "
            "sequence (broadcast to every response), or one prefix per response."
        )
    messages = []
    for item, (text, item_prefix) in enumerate(zip(texts, prefixes)):
        parser = parser_class(item_prefix, tools, tokenizer, errors, **extra)
        try:
            # the whole-text path (runtime/whole.py): one end-of-stream pass where that is exact
            messages.append(finish_whole(parser, text))
        except (ValueError, KeyError, TypeError) as exc:
            if batched:
                exc.item = item
                exc.add_note(f"(batch item {item})")
            raise
    return messages if batched else messages[0]
