"""The streaming machinery every generated parser shares (SPEC sections 3 and 4).

Theory of operation
-------------------
A generated module subclasses :class:`StreamParser` and fills in its tables: the field table
(names, dirty flags, join/repeats, processors, group names), the start anchor, and -- the part the
compiler specialises into code -- one *scanner* function per automaton state. A scanner answers one
question for the undecided text ``buf[pos:]``: which watched delimiter commits next (if any), and
where the leftmost still-pending hit starts (``hold``, SPEC 4.3). This class does the rest: route
text to the current region, open and close regions, store values (D1), finalize (D3), and keep
only undecided text (plus the few characters of context the compiler asked for) in its buffer, so
the total work is linear in the output length.

Scanner contract: ``scan(buf: str, pos: int, eos: bool, memo: list) -> (start, end, rank, match,
hold)`` with ``start == -1`` when nothing may be committed; ``rank`` indexes the state's transition
table ``(is_open, field_index, target_state)``; ``match`` is the regex match object for regex
delimiters (its named groups reach the transform scope), else None. ``memo`` keeps each
delimiter's last search result over the same buffer, so a long buffer is never searched twice.

Three shortcuts keep the common chunk cheap, each giving exactly the events a scan would give
(``tests/test_fast_path.py`` compares them):

* fast path -- nothing held, region open, and no character of the chunk can start a watched
  delimiter (``FAST_PATH``: the state's trigger characters and the first two characters of its
  delimiters): the chunk is routed whole; a trigger ending the chunk is held without scanning;
* blocks -- body pieces are joined every ``BLOCK`` pieces, so memory follows the body's size;
* long holds -- text held behind a regex match still pending after ``LONG_HOLD`` characters is
  searched again only once it has doubled (messages are unchanged; chunk boundaries of that text
  may be coarser than the reference's).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from .errors import ContentParseError, ParserStateError
from .tools import coerce_tool_calls, compile_tool_types, tool_parameters

__all__ = [
    "RUNTIME_ABI",
    "StreamParser",
    "check_abi",
    "to_text",
    "literal_hold",
    "parse_many",
    "PREFIX_REQUIRED",
]

#: Bumped only when generated modules need a different runtime; generated modules check it.
RUNTIME_ABI = 1

logger = logging.getLogger("respc")

PREFIX_REQUIRED = (
    "ResponseParser/parse_response requires `prefix` (the chat prompt sent to the model before "
    "generation), because chat templates often pre-write part of the assistant message (e.g. an "
    "opening `<think>` tag) that the parser must see to parse the output correctly. If the "
    'generation already contains the complete message, pass prefix="" (or []) to opt out explicitly.'
)


def check_abi(required: int, module: str) -> None:
    """Refuse to run a generated module built for another runtime.

    Args:
        required: the ``RUNTIME_ABI`` the module was generated for.
        module: the module's ``__name__``, for the message.

    Raises:
        ImportError: when the installed runtime differs, saying how to fix it.
    """
    if required != RUNTIME_ABI:
        raise ImportError(
            f"{module} was generated for respc runtime ABI {required}, but the installed runtime "
            f"has ABI {RUNTIME_ABI}; regenerate it with `respc compile` or install a matching respc."
        )


def to_text(value: Any, tokenizer: Any, what: str) -> str:
    """Return ``value`` as text: a str as is, token ids decoded with ``tokenizer.decode``.

    Args:
        value: a str, or a sequence of token ids (an empty sequence is ``""``).
        tokenizer: any object with ``decode(ids) -> str``, or None.
        what: ``"prefix"`` or ``"response"``, for the error message.

    Raises:
        TypeError: ids without a tokenizer, or a decode that does not return a str (SPEC 3).
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


def literal_hold(buf: str, lo: int, firsts: str, prefixes: frozenset) -> int:
    """Leftmost offset ``>= lo`` where the rest of ``buf`` is a proper prefix of a literal.

    This is the partial match of literal delimiters (SPEC 4.3): text from that offset on may
    still become a delimiter, so it is held back.

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


#: body pieces joined into one block at a time (see StreamParser._keep)
BLOCK = 256

#: held text at least this long is searched again only once it has doubled (see StreamParser._run)
LONG_HOLD = 1024

_NO_GROUPS: dict = {}  # shared, read-only: processors copy the scope they are given
# Stands for "no trigger character at all" (a region that runs to the end of the stream): a chunk
# that happens to contain it just takes the general fast path.
_NO_TRIGGER = "\x00\uffff\x00"


def _quick_trigger(triggers: str | None) -> str:
    """What the quickest path tests with ``not in chunk``: the state's one trigger character;
    ``""`` (in every chunk, so never quick) for several or unknown; ``_NO_TRIGGER`` for none."""
    if triggers is None or len(triggers) > 1:
        return ""
    return triggers or _NO_TRIGGER


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, (list, dict, str)) and not value)


class StreamParser:
    """Base class of every generated ``ResponseParser`` (SPEC section 3 and 4).

    Subclasses set the class attributes below; nothing here depends on one template.

    Args:
        prefix (str | Sequence[int]): the prompt before generation (required; ``""`` or ``[]``
            opts out). Cut after the last start anchor, then run through the parser (SPEC 4.6).
        tools (list | None): JSON-schema tools or typed Python callables (SPEC 7).
        tokenizer: object with ``decode(ids) -> str``, needed when text comes as token ids.

    Raises:
        ValueError: ``prefix`` is None.
        TypeError: token ids without a tokenizer.
    """

    # --- filled in by the generated subclass -------------------------------------------------
    SOURCE: str = ""
    FIELD_NAMES: tuple = ()
    DIRTY: tuple = ()
    JOIN: tuple = ()
    REPEATS: tuple = ()
    GROUPS: tuple = ()
    PROCESS: tuple = ()
    REQUIRED: tuple = ()
    DEFAULTS: dict = {}
    OUTSIDE_FIELD: int | None = None
    START_ANCHOR: Any = None
    SCANNERS: tuple = ()
    #: how many delimiter search results a scan memo holds
    MEMO_SLOTS: int = 0
    TRANSITIONS: tuple = ()
    #: per state: (characters any watched delimiter can start with, or None when unknown;
    #: the first two characters of every watched delimiter, or None) -- see automaton.State
    FAST_PATH: tuple = ()
    #: characters of decided text regex delimiters must still see; None keeps everything
    CONTEXT: int | None = 0

    __slots__ = ("_buf", "_pos", "_state", "_field", "_name", "_dirty", "_opened", "_body", "_blocks", "_groups",
                 "_out", "_tools", "_tokenizer", "_done", "_quiet", "_triggers", "_pairs", "_rescan_at",
                 "_tail", "_tail_len", "_trigger", "_context", "initial_events")

    #: per state: what the quickest path tests with ``not in chunk`` (see _quick_trigger)
    _QUICK: tuple = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._QUICK = tuple(_quick_trigger(triggers) for triggers, _ in cls.FAST_PATH)

    def __init__(self, prefix: Any = None, tools: list | None = None, tokenizer: Any = None) -> None:
        if prefix is None:
            raise ValueError(PREFIX_REQUIRED)
        prefix = to_text(prefix, tokenizer, "prefix")
        self._tokenizer = tokenizer
        params = tool_parameters(tools) if tools is not None else None
        self._tools = compile_tool_types(params) if params else None
        self._buf = ""
        self._pos = 0
        self._state = 0
        self._enter(self.OUTSIDE_FIELD)
        self._groups = None
        self._out = {key: _copy(value) for key, value in self.DEFAULTS.items()}
        self._done = False
        self._quiet = False
        self._triggers, self._pairs = self.FAST_PATH[0]
        self._trigger = self._QUICK[0]
        self._context = self.CONTEXT
        self._rescan_at = 0
        self._tail: list[str] = []
        self._tail_len = 0
        self.initial_events: list[dict] = []
        if prefix:
            last = None
            for match in self.START_ANCHOR.finditer(prefix):
                last = match.end()
            if last is None:
                logger.info("%s: start anchor not found in the prefix; the whole prefix is parsed", self.SOURCE)
                rest = prefix
            else:
                rest = prefix[last:]
            if rest:
                self._buf = rest
                self._guarded(self.initial_events, False)

    # --- public API (SPEC 3) -----------------------------------------------------------------
    def feed(self, text: Any) -> list[dict]:
        """Feed the next piece of model output and return the events it produced (SPEC 4.4).

        Args:
            text (str | Sequence[int]): text, or token ids decoded with the tokenizer.

        Returns:
            list[dict]: ``region_open`` / ``region_chunk`` / ``region_close`` events, in order.

        Raises:
            RuntimeError: (ParserStateError) after ``finalize`` or after an earlier error.
            ValueError / KeyError: a region body failed to parse or transform (SPEC 5, 6).
        """
        if self._quiet and text.__class__ is str:
            if self._trigger not in text and text and not self._context:
                # The commonest chunk: plain text, no trigger character, nothing to keep.
                body = self._body
                body.append(text)
                if len(body) >= BLOCK:
                    self._blocks.append("".join(body))
                    body.clear()
                return [{"type": "region_chunk", "field": self._name, "text": text, "dirty": self._dirty}]
            # Fast path: nothing is held and no character of the chunk can start a watched
            # delimiter (a trigger character, followed by a character that continues one), so
            # the scanners could only route it whole to the open region.
            # (_quiet is never set once the parser is finalized or failed.)
            pairs = self._pairs
            cut = len(text)
            for c in self._triggers:
                j = text.find(c)
                while j >= 0:
                    if pairs is None or text[j:j + 2] in pairs:
                        break
                    if j + 1 == len(text):
                        cut = j  # a trigger ending the chunk may begin a delimiter: hold it
                    j = text.find(c, j + 1)
                if j >= 0:
                    break
            else:
                if cut == len(text):
                    if not text:
                        return []
                    self._keep(text)
                    context = self.CONTEXT
                    if context:
                        kept = (self._buf + text)[-context:]
                        self._buf = kept
                        self._pos = len(kept)
                    return [{"type": "region_chunk", "field": self._name, "text": text, "dirty": self._dirty}]
                # What the scanners would do: route all but the last character, hold that one.
                events = []
                if cut:
                    head = text[:cut]
                    self._keep(head)
                    events.append({"type": "region_chunk", "field": self._name, "text": head, "dirty": self._dirty})
                kept = (self._buf + text)[-(self.CONTEXT + 1):]
                self._buf = kept
                self._pos = len(kept) - 1
                self._quiet = False
                return events
        if self._done:
            raise ParserStateError("ResponseParser already finalized (or failed earlier)")
        if text.__class__ is not str:
            text = to_text(text, self._tokenizer, "response")
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
                self._buf += text
        events: list[dict] = []
        try:
            self._run(events, False)
        except BaseException:
            self._fail()
            raise
        return events

    def finalize(self) -> tuple[dict, list[dict]]:
        """End the stream: close the open region and return ``(message, final events)``.

        Empty values of keys not in ``defaults`` are dropped, then required fields are checked
        (SPEC 4.7, D3).

        Raises:
            RuntimeError: (ParserStateError) when called twice or after an earlier error.
            ValueError: a required field is missing or empty, or a body failed to parse.
        """
        if self._done:
            raise ParserStateError("ResponseParser already finalized (or failed earlier)")
        events: list[dict] = []
        self._flush_tail()
        self._guarded(events, True)
        defaults = self.DEFAULTS
        message = {k: v for k, v in self._out.items() if k in defaults or not _is_empty(v)}
        self._done = True
        self._quiet = False
        missing = [name for name in self.REQUIRED if name not in message]
        if missing:
            raise ContentParseError(f"Required response_template fields missing from parsed output: {missing}")
        return message, events

    # --- machinery ---------------------------------------------------------------------------
    def _guarded(self, events: list, eos: bool) -> None:
        try:
            self._run(events, eos)
        except BaseException:
            self._fail()
            raise

    def _fail(self) -> None:
        # Like h11: after an error the parser's state is unknown, so it refuses to go on.
        self._done = True
        self._quiet = False

    def _flush_tail(self) -> None:
        if self._tail:
            self._buf += "".join(self._tail)
            self._tail.clear()
            self._tail_len = 0

    def _enter(self, field: int | None) -> None:
        self._field = field
        self._name = None if field is None else self.FIELD_NAMES[field]
        self._dirty = None if field is None else self.DIRTY[field]
        self._opened = False
        self._body = []
        self._blocks = []

    def _run(self, events: list, eos: bool) -> None:
        buf = self._buf
        pos = self._pos
        scanners = self.SCANNERS
        # per delimiter, its last search result over this buffer (see the generated scanners)
        memo = [None] * self.MEMO_SLOTS
        while True:
            state = self._state
            start, end, rank, match, hold = scanners[state](buf, pos, eos, memo)
            if start >= 0:
                if start > pos:
                    self._route(events, buf[pos:start])
                pos = end
                is_open, field, target = self.TRANSITIONS[state][rank]
                if is_open:
                    self._close(events, None)
                    self._state = target
                    self._enter(field)
                    self._groups = match
                    self._opened = True
                    events.append({"type": "region_open", "field": self._name})
                else:
                    had_text = self._opened
                    self._close(events, match)
                    if not had_text and start == end:
                        # A zero-width close on a region that got nothing would fire forever.
                        break
                continue
            if eos:
                if pos < len(buf):
                    self._route(events, buf[pos:])
                    pos = len(buf)
                self._close(events, None)
                break
            if hold > pos:
                self._route(events, buf[pos:hold])
                pos = hold
            break
        context = self.CONTEXT
        if context is not None and pos > context:
            buf = buf[pos - context:]
            pos = context
        self._buf = buf
        self._pos = pos
        if pos == len(buf):
            self._rescan_at = 0
            state = self._state
            self._triggers, self._pairs = fast = self.FAST_PATH[state]
            self._trigger = self._QUICK[state]
            # the fast path needs an opened region, known triggers and a trimmed buffer
            self._quiet = self._opened and fast[0] is not None and self._field is not None and context is not None
        else:
            self._quiet = False
            held = len(buf) - pos
            # Text held this long can only be a regex delimiter still pending (a lazy `.*?`
            # that has not found its end, an indeterminate match waiting for end of stream):
            # searching it again on every chunk would make the total work quadratic, so wait
            # until it has doubled.
            self._rescan_at = len(buf) + held if held >= LONG_HOLD else 0

    def _route(self, events: list, text: str) -> None:
        if self._field is None:
            return  # the null sink: no implicit field, text outside regions is discarded
        if not self._opened:
            self._opened = True
            events.append({"type": "region_open", "field": self._name})
        self._keep(text)
        events.append({"type": "region_chunk", "field": self._name, "text": text, "dirty": self._dirty})

    def _keep(self, text: str) -> None:
        """Append body text; every BLOCK pieces are joined, so a long body of small chunks costs
        about its own size, not a pointer and a header per chunk."""
        body = self._body
        body.append(text)
        if len(body) >= BLOCK:
            self._blocks.append("".join(body))
            body.clear()

    def _close(self, events: list, close_match: Any) -> None:
        field = self._field
        if field is not None and self._opened:
            names = self.GROUPS[field]
            scope = _NO_GROUPS
            if names:
                # D4/D5: every declared group is in scope, None when it did not take part.
                scope = dict.fromkeys(names)
                if self._groups is not None:
                    scope.update(self._groups.groupdict())
                if close_match is not None:
                    scope.update(close_match.groupdict())
            blocks = self._blocks
            text = "".join(blocks) + "".join(self._body) if blocks else "".join(self._body)
            value = self.PROCESS[field](text, scope)
            if self._tools is not None:
                value = coerce_tool_calls(value, self._tools)
            name = self._name
            self._store(field, name, value)
            events.append({"type": "region_close", "field": name, "value": value})
        self._state = 0
        self._enter(self.OUTSIDE_FIELD)
        self._groups = None

    def _store(self, field: int, name: str, value: Any) -> None:
        """Put one block's value into the message (SPEC 4.5 with D1: empty never erases)."""
        out = self._out
        join = self.JOIN[field]
        if join is not None:
            if not isinstance(value, str):
                raise ContentParseError(
                    f"Field {name!r}: 'join' requires each match to parse to a string, got {type(value).__name__}."
                )
            previous = out.get(name)
            if previous is None:
                out[name] = value
            elif value or not previous:
                out[name] = previous + join + value
        elif self.REPEATS[field]:
            out.setdefault(name, []).append(value)
        elif not _is_empty(value) or _is_empty(out.get(name)):
            out[name] = value


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _texts(value: Any, tokenizer: Any, what: str) -> tuple[list[str], bool]:
    """``(texts, is_batch)`` for a response or prefix argument (SPEC 3).

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


def parse_many(parser_class: Callable[..., StreamParser], response: Any, prefix: Any, tools: Any,
               tokenizer: Any) -> Any:
    """Whole-text parsing with batches and prefix broadcasting (SPEC 3).

    Args:
        parser_class: a generated ``ResponseParser``.
        response: a str or token ids (one message), or a list of str / of id sequences (a batch).
        prefix: a str or ids (broadcast to every item), ``""``/``[]`` to opt out, or a list of one
            prefix per item.
        tools, tokenizer: as for ``ResponseParser``.

    Returns:
        dict | list[dict]: one message, or a list for a batch (a one-item batch gives a list).

    Raises:
        ValueError: prefix missing, or a prefix list whose length differs from the batch.
        TypeError: token ids without a tokenizer.
    """
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
    for text, item_prefix in zip(texts, prefixes):
        parser = parser_class(item_prefix, tools, tokenizer)
        parser.feed(text)
        messages.append(parser.finalize()[0])
    return messages if batched else messages[0]
