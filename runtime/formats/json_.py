"""The ``json`` format and its dialects (template-language.md "Content parsers", deviation D6): the whole-body
parser, the boundary reader (:class:`JsonBoundary`: where the value ends, for the core), the argument reader
(:class:`ArgumentReader`: the pieces the OpenAI adapter sends), the recover repair, the
load-time checks and the plan."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

import regex

from ..content import _ANY_BODY, ContentParser
from ..errors import ContentParseError, ParserStateError
from ..repair import NOTES, repair_json_text
from .base import (ArgumentStream, ACCEPTED, REJECTED, UNDECIDED, Boundary, Format, InsideReader, Plan, Problems, bool_args, call_shape, escaped,
                   is_tool_field)
from .text import make as make_text

#: the call-object keys the adapter streams from (name key, then arguments keys in the order tried)
NAME_KEYS = ("name", "tool_name")
ARG_KEYS = ("arguments", "parameters", "args", "input", "params")
#: characters a ``string_delims`` opener must not start with for its body to convert as it streams: they
#: also start JSON text, so the converter could not tell the two apart character by character
_JSON_START = set('{}[],:"-+.0123456789 \t\r\n') | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_WORD = re.compile(r"\w")


def accept_chars(args: dict) -> str:
    """Every character ``accept`` may name: JSON value starts, Python literals, delimiter openers."""
    chars = '{["-0123456789tfn'
    if args.get("python_literals") is True:
        chars += "TFN"
    return chars


def check(args: dict, where: str = "content_args") -> Problems:
    """Load-time checks of json's ``content_args`` (template-language.md "Load-time checks")."""
    problems: Problems = []
    if "string_delims" in args:
        delims = args["string_delims"]
        if not isinstance(delims, list) or not all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(s, str) and s for s in pair)
            for pair in delims
        ):
            problems.append(("", "json 'string_delims' must be a list of [open, close] pairs of "
                                 "non-empty strings"))
    problems += bool_args(args, ("python_literals",), "json")
    if "accept" in args:
        accept = args["accept"]
        allowed = accept_chars(args)
        if not isinstance(accept, str) or not accept:
            problems.append(("", f"json 'accept' must be a non-empty string of first characters, got {accept!r}"))
        else:
            bad = sorted({c for c in accept if c not in allowed})
            if bad:
                problems.append(("", f"json 'accept' names {bad}, which cannot start a JSON value "
                                     f"(allowed: {allowed!r}; a string_delims opener counts as '\"')"))
    return problems


def stream_pairs(args: dict) -> tuple[tuple[str, str], ...] | None:
    """The ``string_delims`` pairs when a converter can tell each from JSON text by its first character
    (docs/openai.md), else None."""
    try:
        pairs = tuple((str(o), str(c)) for o, c in args.get("string_delims") or [])
    except (TypeError, ValueError):
        return None
    if any(not o or not c or o[0] in _JSON_START or _WORD.match(o[0]) or o[0].isspace() for o, c in pairs):
        return None
    return pairs


def plan(field) -> Plan:
    """Ends itself and may reject its opener; an empty body cannot be read (unless ``allow_non_json``).

    A tool field's arguments stream (:class:`Plan`): plain JSON as written when the call is a call object
    (name under ``name``/``tool_name``, arguments under the keys the transform reads) or the arguments
    object named by an open-delimiter group; a ``[{name: arguments}]`` list (``name-keyed``); the
    ``string_delims``/``unquoted_keys`` dialects converted (arguments object named by a group). Python
    literals and ``allow_non_json`` go at the close.
    """
    args = field.content_args
    lax = bool(args.get("allow_non_json"))
    base = {"ends_itself": True, "can_reject": True, "empty_none": not lax}
    shape = call_shape(field) if is_tool_field(field) and not lax and not args.get("python_literals") else None
    if shape is None:
        return Plan("json", **base)
    dialect = bool(args.get("string_delims")) or bool(args.get("unquoted_keys"))
    by_group = (shape.name is not None and shape.name[0] == "group" and shape.arguments == ("body",)
                and not shape.each)
    if dialect:
        if by_group and stream_pairs(args) is not None:
            return Plan("json", **base, arguments="dialect-json", call="args", name_group=shape.name[1])
        return Plan("json", **base)
    if by_group:
        return Plan("json", **base, arguments="json", call="args", name_group=shape.name[1])
    if shape.name is not None and shape.name[0] == "key" and shape.arguments is not None \
            and shape.arguments[0] == "keys":
        keys = shape.arguments[1]
        if shape.name[1] in NAME_KEYS:
            found = tuple(k for k in ARG_KEYS[:2] if k in keys)
            if found:
                return Plan("json", **base, arguments="json", call="object", name_key=shape.name[1], arg_keys=found)
        other = [k for k in ARG_KEYS[2:] if k in keys]
        if shape.name[1] == "name" and other:
            return Plan("json", **base, arguments="json", call="object", name_key="name", arg_keys=(other[0],))
    if shape.name == ("$key",) and shape.arguments == ("$value",) and shape.each:
        return Plan("json", **base, arguments="name-keyed", call="object", name_key="name", arg_keys=("arguments",))
    return Plan("json", **base)


# ------------------------------------------------------------------------------------------------
# The boundary reader: where a JSON value ends (``end: "value"``, ``reject``; the core's Format.reader).

#: Default ``accept`` of the json parser: a self-delimiting body must start an object or an array.
JSON_ACCEPT_DEFAULT = "{["
# Searches for one of a few literal characters use the standard library's engine: the same answer as
# `regex` for a set of literal characters, at a third of the cost per call (decoders make one call
# per string, bracket or escape of the body).
_JSON_SPACE = re.compile(r"[ \t\r\n]*")
_JSON_STRING_STOP = re.compile(r'["\\]')
# The rest of a top-level scalar (number or bare literal): up to the first character that cannot
# continue one. For a well-formed scalar this is where raw_decode stops.
_SCALAR_REST = regex.compile(r"[\w.+\-]*")
# The standard library's C reader: on a well-formed JSON object or array it stops exactly where the
# character-level scan below ends (both end at the bracket that closes the first one).
_RAW_DECODE = json.JSONDecoder().raw_decode


@functools.lru_cache(maxsize=64)
def _code_stop(firsts: str) -> re.Pattern:
    """The search for the next character that matters in JSON code: a bracket, a quote, or the
    first character of a ``string_delims`` opener (compiled once per opener set, not per region)."""
    return re.compile("[" + re.escape('{}[]"' + firsts) + "]")


_PLAIN_CODE_STOP = _code_stop("")
#: per ``string_delims`` tuple: (its non-empty pairs, their openers' first characters, the code
#: stop search), derived once instead of per decoder (one decoder per tool call)
_DELIM_PLANS: dict = {}
_WAIT = object()  # "the held text might still become a delimiter"


class JsonBoundary(Boundary):
    """End of the first JSON value of a body, in respc's json dialects (deviation D6).

    Accept rule: after JSON whitespace, the first significant character must be one of ``accept``
    (default ``"{["``: an object or an array); a ``string_delims`` opener counts as ``"``. Any
    other start is REJECTED. Inside the value only strings and brackets matter: ``"..."`` with
    backslash escapes, ``string_delims`` spans (no escapes; the first pair in declaration order
    whose opener starts there; the span ends at the next occurrence of its closer), and ``{[``
    / ``]}`` nesting. Bare keys (``unquoted_keys``) and Python literals hold no structure, so they
    need no tracking. A top-level number or literal (when ``accept`` allows one) ends at the
    first character that cannot continue it, so it ends only when more text arrives.

    Difference from the whole-body scanner: that scanner treats an opener whose closer never
    follows as plain text; a decoder cannot know that in advance and keeps waiting for the closer
    (the region then ends with the stream and the whole-body parser reports the error).
    """

    def __init__(self, accept: str = JSON_ACCEPT_DEFAULT,
                 string_delims: tuple[tuple[str, str], ...] = ()) -> None:
        self.status = UNDECIDED
        self._accept = accept
        if string_delims:
            try:
                plan = _DELIM_PLANS.get(string_delims)
                known = True
            except TypeError:  # a list: derived each time (the factory passes a tuple of pairs)
                plan, known = None, False
            if plan is None:
                delims = tuple((o, c) for o, c in string_delims if o and c)
                firsts = "".join(sorted({o[0] for o, _ in delims}))
                plan = (delims, firsts, _code_stop(firsts))
                if known and len(_DELIM_PLANS) < 64:
                    _DELIM_PLANS[string_delims] = plan
            self._delims, self._opener_firsts, self._code_stop = plan
        else:  # the common case, one decoder per tool call: nothing to derive
            self._delims = ()
            self._opener_firsts = ""
            self._code_stop = _PLAIN_CODE_STOP
        self._state = "start"
        self._depth = 0
        self._closer = ""
        self._carry = ""

    def resume(self, state: str, depth: int) -> "JsonBoundary":
        """Continue a scan another reader of the same body began (:class:`ReaderBoundary`): the
        next character fed is read in ``state`` (``"start"``, ``"code"``, ``"string"`` or
        ``"escape"``) at bracket depth ``depth``. Only for a decoder without ``string_delims``
        that was not fed yet. Returns the decoder itself."""
        self._state = state
        self._depth = depth
        if state != "start":
            self.status = ACCEPTED
        return self

    def _opener_at(self, data: str, i: int) -> Any:
        rest = len(data) - i
        for pair in self._delims:
            if data.startswith(pair[0], i):
                return pair
            if rest < len(pair[0]) and pair[0].startswith(data[i:]):
                return _WAIT
        return None

    def _scan(self, data: str) -> int:
        state = self._state
        i, n = 0, len(data)
        depth = self._depth
        try:
            while i < n:
                if state == "code":
                    m = self._code_stop.search(data, i)
                    if m is None:
                        break
                    i = m.start()
                    char = data[i]
                    if char in self._opener_firsts:
                        pair = self._opener_at(data, i)
                        if pair is _WAIT:
                            self._carry = data[i:]
                            break
                        if pair is not None:
                            self._closer = pair[1]
                            state = "delimited"
                            i += len(pair[0])
                            continue
                    i += 1
                    if char == '"':
                        state = "string"
                    elif char in "{[":
                        depth += 1
                    elif char in "}]":
                        depth -= 1
                        if depth == 0:
                            state = "done"
                            return i
                elif state == "string":
                    m = _JSON_STRING_STOP.search(data, i)
                    if m is None:
                        break
                    i = m.end()
                    if m.group() == "\\":
                        if i == n:
                            state = "escape"
                            break
                        i += 1
                    elif depth:
                        state = "code"
                    else:
                        state = "done"
                        return i
                elif state == "escape":
                    i += 1
                    state = "string"
                elif state == "delimited":
                    j = data.find(self._closer, i)
                    if j < 0:
                        keep = max(i, n - len(self._closer) + 1)
                        self._carry = data[keep:]
                        break
                    i = j + len(self._closer)
                    if depth:
                        state = "code"
                    else:
                        state = "done"
                        return i
                elif state == "scalar":
                    i = _SCALAR_REST.match(data, i).end()
                    if i < n:
                        state = "done"
                        return i
                else:  # "start": nothing significant seen yet
                    i = _JSON_SPACE.match(data, i).end()
                    if i == n:
                        break
                    # A string_delims opener starts a string: only looked for when strings are accepted.
                    pair = self._opener_at(data, i) if '"' in self._accept else None
                    if pair is _WAIT:
                        self._carry = data[i:]
                        break
                    if pair is not None:
                        self.status = ACCEPTED
                        self._closer = pair[1]
                        state = "delimited"
                        i += len(pair[0])
                        continue
                    char = data[i]
                    if char not in self._accept:
                        return self._reject()
                    self.status = ACCEPTED
                    if char in "{[" and not self._delims and data.find("}" if char == "{" else "]", i + 1) > 0:
                        # Quick path: a well-formed standard JSON value here ends where the C reader
                        # stops. Anything else (a dialect, a value cut by the chunk) is scanned below.
                        # (Without its closing bracket yet, the value cannot be complete: the C
                        # reader's error, costly to build, is not asked for.)
                        try:
                            end = _RAW_DECODE(data, i)[1]
                        except (ValueError, RecursionError):
                            pass
                        else:
                            state = "done"
                            return end
                    i += 1
                    if char in "{[":
                        depth = 1
                        state = "code"
                    elif char == '"':
                        state = "string"
                    else:
                        state = "scalar"
            return -1
        finally:
            if self._state != "rejected":
                self._state = state
            self._depth = depth


def _delims(args: dict) -> tuple[tuple[str, str], ...]:
    raw = args.get("string_delims") or ()
    try:
        return tuple((o, c) for o, c in raw if isinstance(o, str) and isinstance(c, str))
    except (TypeError, ValueError):
        return ()  # load-time checks refuse these; a decoder never raises on its arguments


def json_boundary(args: dict) -> Callable[[], Boundary]:
    """Factory of :class:`JsonBoundary` decoders for a json field's ``content_args``.

    Args:
        args (dict): ``accept`` (str, default :data:`JSON_ACCEPT_DEFAULT`), ``string_delims``.

    Returns:
        Callable[[], Boundary]: a new decoder per call (one per open region). Without
        ``string_delims`` it has an attribute ``verdict``, ``verdict(text) -> status``: the
        status a new decoder has after ``feed(text)`` (see :func:`_json_verdict`).
    """
    accept = args.get("accept", JSON_ACCEPT_DEFAULT)
    if not isinstance(accept, str):
        accept = JSON_ACCEPT_DEFAULT
    delims = _delims(args)

    def factory() -> Boundary:
        return JsonBoundary(accept, delims)

    if not delims:
        factory.verdict = _json_verdict(accept)
    return factory


def _json_verdict(accept: str) -> Callable[[str], int]:
    """``verdict(text) -> status``: the :attr:`Boundary.status` a new :class:`JsonBoundary`
    without ``string_delims`` has once fed ``text`` -- UNDECIDED while ``text`` is JSON whitespace,
    then ACCEPTED or REJECTED by its first significant character (the accept rule), which later
    text never changes. For the streaming core's ``reject`` test
    (docs/template-language.md "reject": it needs only the status, not a decoder)."""

    def verdict(text: str) -> int:
        i = _JSON_SPACE.match(text).end()
        if i == len(text):
            return UNDECIDED
        return ACCEPTED if text[i] in accept else REJECTED

    return verdict


# ------------------------------------------------------------------------------------------------
# The argument reader: what the OpenAI adapter streams of a tool-call body (docs/formats.md).

#: raw control characters inside a JSON string, as the recover repair escapes them
_CONTROL = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
#: the runs :meth:`ArgumentReader.feed` takes in one step (each what :meth:`ArgumentReader._char` does with
#: every character of it): plain string characters (and the quote that closes them); whitespace; the rest of a
#: top-level scalar (``…_SCALAR``) and a nested value's characters between structure (``…_VALUE``),
#: forwarded or (``HELD``) collected without their whitespace
_RUN_PLAIN = re.compile(r'[^"\\\x00-\x1f]*').match
_RUN_BLANK = re.compile(r"[ \t\r\n]+").match
_RUN_SCALAR = re.compile(r"[^,}\]:]+").match
_RUN_HELD_SCALAR = re.compile(r"[^,}\]: \t\r\n]+").match
_RUN_VALUE = re.compile(r'[^"{}\[\],TFN]+').match
_RUN_HELD_VALUE = re.compile(r'[^"{}\[\]TFN \t\r\n]+').match
#: the first characters of those runs: JSON whitespace; what a forwarded nested value's run stops at (a held
#: value's commas are part of its run); what a top-level scalar's run stops at
_BLANK = frozenset(" \t\r\n")
_VALUE_STOPS = frozenset('"{}[]TFN, \t\r\n')
_SCALAR_STOPS = frozenset(",}]: \t\r\n")


def _decoded(parts: list[str]) -> str:
    """The JSON string whose characters between the quotes are ``parts`` (a key or a name): the text
    itself when it has no backslash (the reader escapes control characters, so then nothing decodes),
    else ``json.loads`` of it.

    Raises:
        ValueError: the text is not a JSON string's inside (a bad escape)."""
    raw = "".join(parts)
    return raw if "\\" not in raw else json.loads('"' + raw + '"')


#: Python literals in a JSON value, as the recover repair reads them
_LITERALS = {"True": "true", "False": "false", "None": "null", "NaN": "NaN"}  # (NaN: Python's json reads it)


#: :attr:`ArgumentReader.end` for a moment: the value ended at the character just read
_ENDED = -2


class ArgumentReader:
    """The json format's incremental reader of a tool-call body for the OpenAI adapter (docs/formats.md,
    "Argument readers"): it forwards the arguments object's text as it is written, says where the value
    ends and whether it is complete.

    Fed the region's body text piece by piece; calls ``out(kind, call_number, text)`` with kind
    ``"call"`` (a call object began), ``"name"`` (its name, decoded) or ``"args"`` (a fragment of
    its arguments JSON). Holding: a top-level argument whose key ``held(name, key)`` says is typed
    is collected until complete and passed through ``typed(n, key, raw) -> json text``
    (``held(n, key)`` is None while call ``n``'s name is unknown and tools may type it).
    A body this reader does not understand stops it (``dead``): the region then finishes at close.

    The pieces (``out(kind, call_number, payload)``), in order per call: ``"call"`` (a call object
    began; the body is one in ``"args"`` mode), ``"name"`` (the decoded name), ``"start"`` (its
    arguments object began), ``"args"`` (JSON text of the arguments, to be concatenated), ``"end"``
    (the arguments object closed). Damage the recover repair (``runtime/repair.py``) reads from the
    characters alone is converted as it converts it: raw control characters in strings are escaped,
    a trailing comma is dropped, Python literals become JSON literals.

    Attributes:
        end (int): the offset in the whole body (all pieces fed) just past the top-level value (the
            call object, the list of them, or the arguments object), -1 while it has not ended.
        dead (bool): the reader stopped at something it does not forward (the close decides).
    """

    __slots__ = ("end", "pos", "mode", "keys", "namekey", "stack", "instr", "esc", "expect", "keybuf", "curkey", "n", "name", "namebuf",
                 "argdepth", "dead", "out", "held", "typed", "hold", "holdbuf", "holdkey", "valstart", "seen", "comma",
                 "word", "stop", "dead_at", "keyset")

    def __init__(self, mode: str, keys: tuple, out: Callable, held: Callable, typed: Callable) -> None:
        self.end = -1
        self.pos = 0                # characters fed before the current piece
        self.mode = mode            # "object": call objects; "args": the body is the arguments
        self.namekey, self.keys = keys if keys else ("", ())  # the name and arguments keys ("object")
        self.keyset = frozenset(self.keys)
        self.stack: list[str] = []  # open containers
        self.instr = False
        self.esc = False
        self.expect = ""            # at a call object / args object level: "key", ":", "value", ","
        self.keybuf: list[str] | None = None
        self.curkey: str | None = None
        self.n = -1                 # call number within the region
        self.name: str | None = None
        self.namebuf: list[str] | None = None
        self.argdepth = 0           # stack depth inside the arguments object (0: not forwarding)
        self.dead = False
        self.out = out
        self.held = held
        self.typed = typed
        self.hold = False
        self.holdbuf: list[str] = []
        self.holdkey: str | None = None
        self.valstart = False
        self.seen: set = set()
        self.comma: str | None = None      # a forwarded comma (and whitespace after it) held back
        self.word: list[str] | None = None  # a Python literal (True/False/None) being read
        #: stop reading at the end of the top-level value (set by :class:`ReaderBoundary`: the text
        #: after it is not the body)
        self.stop = False
        #: once ``dead``: the offset in the whole body of the first character whose structure
        #: (string, escape, brackets) the reader did not take in; -1 before
        self.dead_at = -1

    @property
    def complete(self) -> bool:
        """The top-level value ended (a body the output ends before that is truncated)."""
        return self.end >= 0

    def feed(self, text: str) -> None:
        """Read the next piece of the body; the pieces found go to ``out``.

        The piece is read by runs, not character by character: a compiled regex takes, in one step, a run of
        plain string characters together with the quote that closes it, a run of whitespace, the rest of a
        top-level scalar, or a run of a nested value's characters between its brackets, commas, strings and
        Python-literal letters (the ``_RUN_*`` patterns); only the characters that change the reader's
        structure (brackets, commas, colons, opening quotes, backslashes, control characters in strings, the
        letters ``T``/``F``/``N``) are read one at a time (:meth:`_char`). Each run does what :meth:`_char`
        does with each of its characters, so the pieces, ``end`` and ``dead_at`` are those of reading the
        text one character at a time, on every chunking (tests/test_formats_json.py holds the
        character-by-character reader as the oracle)."""
        if self.dead:
            self.pos += len(text)
            return
        emit: list[str] = []
        plain = _RUN_PLAIN
        stack = self.stack
        i, end = 0, len(text)
        try:
            while i < end:
                c = text[i]
                if self.instr:
                    if not self.esc:
                        # inside a string: its plain characters and the quote that closes it, in one step
                        j = plain(text, i).end()
                        if j < end and text[j] == '"':
                            if self.argdepth and not self.hold and self.keybuf is None:
                                # (the commonest: a forwarded string value, written as it is)
                                emit.append(text[i:j + 1])
                                self.instr = False
                            else:
                                piece = text[i:j]
                                i = j  # (at the closing quote while it is read: the except clause counts from it)
                                self._string_part(piece, True, emit)
                            i = j + 1
                            continue
                        if j > i:
                            if self.argdepth and not self.hold and self.keybuf is None:
                                emit.append(text[i:j])
                            else:
                                self._string_part(text[i:j], False, emit)
                            i = j
                            if i == end:
                                break
                            c = text[i]
                    self._char(c, emit)
                    i += 1
                    continue
                argdepth = self.argdepth
                if self.word is None:
                    if c in _BLANK:
                        # whitespace: forwarded, added to a held comma, or (outside the arguments, in a held
                        # value) not read
                        m = _RUN_BLANK(text, i)
                        i = m.end()
                        if argdepth:
                            if self.comma is not None:
                                self.comma += m.group()
                            elif not self.hold:
                                emit.append(m.group())
                        continue
                    if argdepth:
                        # forwarding the arguments object, outside a string, no Python literal being read
                        if self.comma is not None:
                            if c in "}]":
                                self._char(c, emit)  # (a trailing comma: dropped)
                                i += 1
                                if self.end == _ENDED:
                                    self.end = self.pos + i
                                    if self.stop:
                                        break
                                if self.dead:
                                    self.dead_at = self.pos + i - 1
                                    return
                                continue
                            emit.append(self.comma)  # not a trailing comma: it goes out with what follows
                            self.comma = None
                        depth = len(stack)
                        hold = self.hold
                        if depth > argdepth:
                            if not hold:
                                if c == '"':
                                    self.instr = True
                                    emit.append(c)
                                    i += 1
                                    continue
                                if c == ",":
                                    self.comma = c
                                    i += 1
                                    continue
                                if c == "{" or c == "[":
                                    stack.append(c)
                                    emit.append(c)
                                    i += 1
                                    continue
                            if c not in _VALUE_STOPS:
                                m = (_RUN_HELD_VALUE if hold else _RUN_VALUE)(text, i)
                                i = m.end()
                                (self.holdbuf if hold else emit).append(m.group())
                                continue
                        else:
                            expect = self.expect
                            if expect == ",":
                                if c == "," and not hold:
                                    self.comma = c
                                    self.expect = "key"
                                    i += 1
                                    continue
                                if c not in _SCALAR_STOPS:
                                    m = (_RUN_HELD_SCALAR if hold else _RUN_SCALAR)(text, i)
                                    i = m.end()
                                    (self.holdbuf if hold else emit).append(m.group())
                                    continue
                            elif expect == "key":
                                if c == '"':
                                    self.instr = True
                                    self.keybuf = []
                                    emit.append(c)
                                    i += 1
                                    continue
                            elif expect == ":":
                                if c == ":":
                                    emit.append(c)
                                    self.expect = "value"
                                    i += 1
                                    continue
                            elif expect == "value" and c == '"':
                                # a top-level argument's string value opens: held when the tool types it
                                self.expect = ","
                                held = self.held(self.n, self.holdkey)
                                if held is None:
                                    self.dead = True  # typed by a tool not known yet: sent at close
                                    self.dead_at = self.pos + i
                                    return
                                self.instr = True
                                if held:
                                    self._flush(emit)
                                    self.hold = True
                                    self.holdbuf = [c]
                                else:
                                    emit.append(c)
                                i += 1
                                continue
                    elif len(stack) == 1 and stack[0] == "{" and self.mode == "object":
                        # directly inside a call object: a key opens, its colon, the comma after its value
                        expect = self.expect
                        if expect == "key":
                            if c == '"':
                                self.instr = True
                                self.keybuf = []
                                i += 1
                                continue
                        elif expect == ":":
                            if c == ":":
                                self.expect = "value"
                                i += 1
                                continue
                        elif expect == ",":
                            if c == ",":
                                self.expect = "key"
                                i += 1
                                continue
                        elif expect == "value":
                            # the name's string, or the arguments object, opens (once each)
                            key = self.curkey
                            if c == '"':
                                if key == self.namekey and key not in self.seen and key not in self.keyset:
                                    self.seen.add(key)
                                    self.instr = True
                                    self.namebuf = []
                                    i += 1
                                    continue
                            elif c == "{" and key in self.keyset and self.keyset.isdisjoint(self.seen):
                                self.seen.add(key)
                                stack.append(c)
                                self.argdepth = len(stack)
                                self.expect = "key"
                                self.out("start", self.n, "")
                                emit.append(c)
                                i += 1
                                continue
                self._char(c, emit)
                i += 1
                if self.end == _ENDED:
                    self.end = self.pos + i
                    if self.stop:
                        break
                if self.dead:
                    # (every stop but the one below leaves the character that caused it unread)
                    self.dead_at = self.pos + i - 1
                    return
        except ValueError:  # a key or name that does not decode (errors="recover" damage)
            self.dead = True
            self.dead_at = self.pos + i + 1  # (the closing quote was read: the string ended)
            return
        finally:
            self.pos += end
        if emit:
            self.out("args", self.n, "".join(emit))

    def _string_part(self, piece: str, closing: bool, emit: list[str]) -> None:
        """Plain characters of an open string (no quote, backslash or control character, not after a
        backslash) and, with ``closing``, the quote after them that closes it: as :meth:`_char` reads each of
        them, all at once.

        Raises:
            ValueError: the string closed was a key or a name that does not decode as a JSON string."""
        if self.argdepth and len(self.stack) >= self.argdepth:
            if piece:
                (self.holdbuf if self.hold else emit).append(piece)
            keybuf = self.keybuf
            if closing:
                self.instr = False
                (self.holdbuf if self.hold else emit).append('"')
                if keybuf is not None:
                    if piece:
                        keybuf.append(piece)
                    self._end_key()
            elif keybuf is not None and piece:
                keybuf.append(piece)
            return
        if self.keybuf is not None:
            if piece:
                self.keybuf.append(piece)
            if closing:
                self.instr = False
                self.curkey = _decoded(self.keybuf)
                self.keybuf = None
                self.expect = ":"
        elif self.namebuf is not None:
            if piece:
                self.namebuf.append(piece)
            if closing:
                self.instr = False
                self.name = _decoded(self.namebuf)
                self.namebuf = None
                self.out("name", self.n, self.name)
                self.expect = ","
        elif closing:
            self.instr = False

    def _flush(self, emit: list[str]) -> None:
        if emit:
            self.out("args", self.n, "".join(emit))
            emit.clear()

    def _char(self, c: str, emit: list[str]) -> None:
        stack = self.stack
        depth = len(stack)
        argdepth = self.argdepth
        forwarding = argdepth and depth >= argdepth
        # --- inside a string ---------------------------------------------------------------
        if self.instr:
            closing = False
            if c < " " and not self.esc:
                # a raw control character can only be damage: sent escaped, as the recover
                # repair reads it (runtime/repair.py); a strict parse fails on it anyway
                c = _CONTROL.get(c) or f"\\u{ord(c):04x}"
            if self.esc:
                self.esc = False
            elif c == "\\":
                self.esc = True
            elif c == '"':
                self.instr = False
                closing = True
            if forwarding:
                (self.holdbuf if self.hold else emit).append(c)
                if self.keybuf is not None:
                    if closing:
                        self._end_key()
                    else:
                        self.keybuf.append(c)
                return
            if self.keybuf is not None:
                if closing:
                    self.curkey = _decoded(self.keybuf)
                    self.keybuf = None
                    self.expect = ":"
                else:
                    self.keybuf.append(c)
            elif self.namebuf is not None:
                if closing:
                    self.name = _decoded(self.namebuf)
                    self.namebuf = None
                    self.out("name", self.n, self.name)
                    self.expect = ","
                else:
                    self.namebuf.append(c)
            return
        if forwarding:
            if self.word is not None:
                if c.isalpha():
                    self.word.append(c)
                    return
                self._end_word(emit)
                if self.dead:
                    return
            if self.comma is not None:
                if c in " \t\r\n":
                    self.comma += c
                    return
                if c not in "}]":
                    emit.append(self.comma)  # not a trailing comma: it goes out with what follows
                self.comma = None  # (a trailing comma is dropped, as the recover repair drops it)
        if c in " \t\r\n":
            if forwarding and not self.hold:
                emit.append(c)  # (whitespace of a held value is not needed)
            return
        # --- forwarding the arguments object -------------------------------------------------
        if forwarding:
            if depth == argdepth:
                # directly inside the arguments object: keys, ':' and ',' / '}' between values
                if self._key_or_colon(c, emit):
                    return
                if self.expect == "value":
                    self.expect = ","
                    held = self.held(self.n, self.holdkey)
                    if held is None:
                        self.dead = True  # typed by a tool not known yet: sent at close
                        return
                    if held:
                        self._flush(emit)
                        self.hold = True
                        self.holdbuf = []
                    return self._value_char(c, emit, depth)
                if self.expect == ",":
                    if c == "," or c == "}":
                        if self.hold:
                            self._flush(emit)
                            raw = "".join(self.holdbuf)
                            self.hold = False
                            self.holdbuf = []
                            text = self.typed(self.n, self.holdkey, raw)
                            if text is None:
                                self.dead = True
                                return
                            emit.append(text)
                        if c == ",":
                            self.comma = c  # held until what follows shows it is not trailing
                            self.expect = "key"
                        else:
                            self._close_args(emit)
                        return
                    if c in "]:":
                        self.dead = True
                        return
                    # the rest of a scalar (a number, true/false/null)
                    (self.holdbuf if self.hold else emit).append(c)
                    return
                self.dead = True
                return
            return self._value_char(c, emit, depth)
        # --- outside the arguments: the call objects --------------------------------------------
        if self.mode == "args":
            if depth == 0 and c == "{" and self.n < 0:
                self.n = 0
                self.out("call", 0, "")
                stack.append("{")
                self.argdepth = 1
                self.expect = "key"
                emit.append(c)
                return
            self.dead = True
            return
        if depth == 0:
            if c == "[":
                stack.append("[")
                self.expect = "value"
                return
            if c == "{":
                self._open_call(emit)
                return
            self.dead = True
            return
        top = stack[-1]
        calllevel = (depth == 1 and top == "{") or (depth == 2 and top == "{" and stack[0] == "[")
        if depth == 1 and top == "[":
            if c == "{" and self.expect == "value":
                self._open_call(emit)
            elif c == "," and self.expect == ",":
                self.expect = "value"
            elif c == "]":
                stack.pop()
                self._ended()
            else:
                self.dead = True
            return
        if calllevel:
            if self._key_or_colon(c, None):
                return
            if self.expect == "value":
                key = self.curkey
                if key in self.seen or (key in self.keyset and not self.keyset.isdisjoint(self.seen)):
                    # (both argument keys: the first was forwarded; a difference is reported at close)
                    self.dead = True  # a repeated key, or both argument keys: sent at close
                    return
                self.seen.add(key)
                if key == self.namekey and c == '"':
                    self.instr = True
                    self.namebuf = []
                    return
                if key in self.keys and c == "{":
                    stack.append("{")
                    self.argdepth = len(stack)
                    self.expect = "key"
                    self.out("start", self.n, "")
                    emit.append(c)
                    return
                if key == self.namekey or key in self.keys:
                    self.dead = True  # a name or arguments this reader does not forward
                    return
                # another key's value: skip it
                self.expect = ","
                return self._skip_char(c)
            if self.expect == ",":
                if c == ",":
                    self.expect = "key"
                elif c == "}":
                    self._close_call()
                else:
                    self._skip_char(c)
                return
            self.dead = True
            return
        self._skip_char(c)

    def _key_or_colon(self, c: str, emit: list[str] | None) -> bool:
        """In an object (a call object, or the forwarded arguments when ``emit`` is given): read a
        key's opening quote, the object's end (``_close_call``, or ``_close_args`` when forwarding) or the
        ``:``. Returns True when ``c`` was read here."""
        if self.expect == "key":
            if c == '"':
                self.instr = True
                self.keybuf = []
                if emit is not None:
                    emit.append(c)
            elif c == "}":
                if emit is not None:
                    self._close_args(emit)
                else:
                    self._close_call()
            else:
                self.dead = True
            return True
        if self.expect == ":":
            if c != ":":
                self.dead = True
                return True
            if emit is not None:
                emit.append(c)
            self.expect = "value"
            return True
        return False

    def _skip_char(self, c: str) -> None:
        """A character of a value outside the arguments (skipped, nesting tracked)."""
        if c == '"':
            self.instr = True
        elif c in "{[":
            self.stack.append(c)
        elif c in "}]":
            if not self.stack or self.stack[-1] != ("{" if c == "}" else "["):
                self.dead = True
                return
            self.stack.pop()

    def _value_char(self, c: str, emit: list[str], depth: int) -> None:
        """A character of an argument value (forwarded, or collected when held)."""
        buf = self.holdbuf if self.hold else emit
        if c in "TFN":  # True/False/None: only damage writes them; held until read whole
            self.word = [c]
            return
        if c == "," and not self.hold:
            self.comma = c
            return
        if c == '"':
            self.instr = True
        elif c in "{[":
            self.stack.append(c)
        elif c in "}]":
            if self.stack[-1] != ("{" if c == "}" else "[") or depth <= self.argdepth:
                self.dead = True
                return
            self.stack.pop()
        buf.append(c)

    def _end_word(self, emit: list[str]) -> None:
        """A bare word of a forwarded value ended: a Python literal goes out as its JSON literal
        (as the recover repair reads it); anything else stops the reader."""
        word = "".join(self.word or ())
        self.word = None
        literal = _LITERALS.get(word)
        if literal is None:
            self.dead = True
            return
        (self.holdbuf if self.hold else emit).append(literal)

    def _end_key(self) -> None:
        parts = self.keybuf or ()
        self.keybuf = None
        self.holdkey = _decoded(parts)
        self.expect = ":"

    def _open_call(self, emit: list[str]) -> None:
        self.stack.append("{")
        self.n += 1
        self.name = None
        self.curkey = None
        self.seen = set()
        self.expect = "key"
        self.out("call", self.n, "")

    def _ended(self) -> None:
        """A container closed: when it was the top-level one, the value ends at this character."""
        if not self.stack and self.end < 0:
            self.end = _ENDED

    def _close_args(self, emit: list[str]) -> None:
        emit.append("}")
        self.stack.pop()
        self._ended()
        self.argdepth = 0
        self._flush(emit)
        self.out("end", self.n, "")
        self.expect = "," if self.mode == "object" else ""
        if self.mode == "args":
            self.dead = True  # nothing more to read

    def _close_call(self) -> None:
        self.stack.pop()
        self._ended()
        self.expect = "," if self.stack else ""


class ReaderBoundary(Boundary):
    """One scanner for a tool-call body that ends itself (``end: "value"``, docs/formats.md "One reader
    for the end and the arguments"): the json :class:`ArgumentReader` serving as the streaming core's
    boundary decoder, so that the body is read once, not by a :class:`JsonBoundary` and again by the
    argument reader. The core feeds it every body piece (:meth:`feed`, the :class:`Boundary` contract);
    the end it reports is the reader's ``end``. Where the reader stops (``dead``: damage, or a shape it
    does not forward), a :class:`JsonBoundary` resumes at the first character the reader did not read,
    in the reader's string and bracket state, and finds the end from there: the end found is the one
    a :class:`JsonBoundary` alone finds on every body and chunking
    (``tests/test_formats.py::test_reader_boundary_finds_the_boundary_end``).

    The reader is made with ``stop`` set: it reads nothing after the value's end.

    Args:
        reader (ArgumentReader): a reader not fed yet.
        fallback (JsonBoundary): a decoder of the field without ``string_delims``, not fed yet.
    """

    __slots__ = ("reader", "_fallback", "_base")

    def __init__(self, reader: "ArgumentReader", fallback: JsonBoundary) -> None:
        reader.stop = True
        self.reader = reader
        self._fallback = fallback
        self._base = -1  # (>= 0: the fallback took over at this body offset)
        self.status = UNDECIDED

    def feed(self, text: str) -> int:
        """As :meth:`Boundary.feed`: the offset in ``text`` just past the value, or -1.

        Raises:
            ParserStateError: fed again after the value ended.
        """
        if self._base >= 0:
            k = self._fallback.feed(text)
            self.status = self._fallback.status
            return k
        reader = self.reader
        if reader.end >= 0:
            raise ParserStateError("ReaderBoundary fed again after its value ended")
        start = reader.pos
        reader.feed(text)
        if reader.end >= 0:
            self.status = ACCEPTED
            return reader.end - start
        if reader.stack:
            self.status = ACCEPTED
        if not reader.dead:
            return -1
        # the reader stopped: the boundary decoder goes on from its structural state
        at = reader.dead_at - start
        self._base = reader.dead_at
        state = ("escape" if reader.esc else "string") if reader.instr else "code" if reader.stack else "start"
        fallback = self._fallback.resume(state, len(reader.stack))
        k = fallback.feed(text[at:])
        self.status = fallback.status
        return k + at if k >= 0 else -1


def closers(text: str) -> str | None:
    """What closes the JSON text ``text`` (a cut-off object): its open string's quote and its open
    brackets, innermost first; None when ``text`` is not the beginning of JSON this can close."""
    stack: list[str] = []
    instr = esc = False
    for c in text:
        if instr:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                instr = False
        elif c == '"':
            instr = True
        elif c in "{[":
            stack.append("}" if c == "{" else "]")
        elif c in "}]":
            if not stack or stack.pop() != c:
                return None
    if esc:
        return None
    return ('"' if instr else "") + "".join(reversed(stack))


# ------------------------------------------------------------------------------------------------
# Converters in front of the argument reader: JSON dialects and the name-as-key shape, converted to the
# JSON the ArgumentReader forwards as they stream (plans "dialect-json", "name-keyed"; docs/openai.md).

#: characters that end a bare value (``_BARE_VALUE`` excludes them)
_STRUCTURAL = set('{}[],:"')


def _string_step(c: str, esc: bool) -> tuple[bool, bool]:
    """One character ``c`` inside a JSON string literal (``esc``: after a backslash): whether the
    string is still open after it, and whether the next character is escaped."""
    if esc:
        return True, False
    if c == "\\":
        return True, True
    return c != '"', False


class _CharConverter:
    """A converter that reads its body one character at a time (``_char(c, out)`` appends the
    JSON text it settles to ``out``)."""

    __slots__ = ()

    def feed(self, text: str) -> str:
        """Read ``text``; return the JSON text it settled (maybe empty)."""
        out: list[str] = []
        for c in text:
            self._char(c, out)
        return "".join(out)

    def _char(self, c: str, out: list[str]) -> None:
        raise NotImplementedError


class DialectJson(_CharConverter):
    """Incremental rewrite of a JSON-dialect body into JSON text, as
    ``_apply_dialects`` rewrites the whole body (deviation D6).

    Args:
        delims (tuple[tuple[str, str], ...]): ``string_delims`` pairs in priority order; each
            opener begins with a character that cannot begin JSON text (checked by :func:`probe`).
        unquoted_keys (bool): quote a bare ``\\w+`` key directly followed by ``:`` after ``{`` or
            ``,`` (and optional JSON whitespace).

    A bare value right after ``:`` or ``[`` that ends in a delimiter whose opener is its closer
    (``{query:weather in Tokyo<|"|>}``, its opener omitted) is sent as that string, as the
    ``errors="recover"`` repair reads it (``_add_missing_opens``); so a bare
    value (a number, ``true``...) is held until what ends it (a strict parse rejects the body
    anyway, and a valid bare value goes out unchanged).

    ``feed(text) -> str`` returns the JSON text settled so far (what follows cannot change it);
    ``finish() -> str`` the rest at the end of the body (held text, copied as it is).
    """

    __slots__ = ("delims", "unquoted", "state", "buf", "close", "esc", "value", "same")

    def __init__(self, delims: tuple, unquoted_keys: bool) -> None:
        self.delims = delims
        self.unquoted = unquoted_keys
        self.state = "out"   # "out" | "json" (in a JSON string) | "delim" (in a span) | "key" | "open"
        self.buf = ""        # held text: a key candidate, an opener's beginning, a closer's beginning
        self.close = ""      # the closer of the open span
        self.esc = False     # after a backslash in a JSON string
        self.value = False   # at a value's start: after ":" or "[" (and whitespace)
        self.same = tuple(o for o, c in delims if o == c)  # delimiters whose opener is their closer

    def feed(self, text: str) -> str:
        """Read ``text``; return the JSON text it settled (a delimited span's text in one piece)."""
        out: list[str] = []
        self._read(text, out)
        return "".join(out)

    def _read(self, text: str, out: list[str]) -> None:
        i, n = 0, len(text)
        while i < n:
            if self.state == "delim":
                i += self._span(text, i, out)
            else:
                self._char(text[i], out)
                i += 1

    def _span(self, text: str, i: int, out: list[str]) -> int:
        """In a delimited span: read ``text[i:]`` up to its closer (included) and return how many
        characters were read; the longest end that may still begin the closer is held."""
        held = len(self.buf)
        buf = self.buf + text[i:]
        close = self.close
        at = buf.find(close)
        if at >= 0:
            out.append(escaped(buf[:at]) + '"')
            self.buf, self.state = "", "out"
            return at + len(close) - held
        keep = 0
        if close[0] in buf[1 - len(close):]:  # (else no end of it can begin the closer)
            keep = next((k for k in range(min(len(buf), len(close) - 1), 0, -1) if close.startswith(buf[-k:])), 0)
        if len(buf) > keep:
            out.append(escaped(buf[:len(buf) - keep]))
        self.buf = buf[len(buf) - keep:]
        return len(text) - i

    def finish(self) -> str:
        out: list[str] = []
        if self.state in ("key", "open", "bare"):
            out.append(self.buf)  # (no key, no opener, no delimiter: the runtime copies it)
        elif self.state == "delim":
            out.append(escaped(self.buf))
        self.buf = ""
        self.state = "out"
        return "".join(out)

    def _char(self, c: str, out: list[str]) -> None:
        state = self.state
        if state == "json":
            out.append(c)
            instr, self.esc = _string_step(c, self.esc)
            if not instr:
                self.state = "out"
            return
        if state == "key":
            if c in " \t\r\n" and not self.buf.strip():
                self.buf += c
                return
            if _WORD.match(c):
                self.buf += c
                return
            held, self.buf, self.state = self.buf, "", "out"
            if c == ":" and held.strip():
                word = held.lstrip(" \t\r\n")
                out.append(held[:len(held) - len(word)] + '"' + word + '":')
                self.value = True
                return
            out.append(held)  # not a bare key: copied, and ``c`` read as usual
            self._char(c, out)
            return
        if state == "open":
            # the first pair (in order) whose opener starts here, as the runtime picks it: a
            # longer opener of an earlier pair that may still match is waited for
            buf = self.buf + c
            for opener, closer in self.delims:
                if buf.startswith(opener):
                    self.buf, self.state, self.close = "", "delim", closer
                    out.append('"')
                    self._read(buf[len(opener):], out)
                    return
                if opener.startswith(buf):
                    self.buf = buf
                    return
            # not an opener: its first character is copied, the rest read again
            self.buf, self.state = "", "out"
            out.append(buf[0])
            for rest in buf[1:]:
                self._char(rest, out)
            return
        if state == "bare":
            buf = self.buf + c
            for delim in self.same:
                if buf.endswith(delim):  # its opener was omitted: the bare text is the string
                    out.append('"' + escaped(buf[:-len(delim)]) + '"')
                    self.buf, self.state, self.value = "", "out", False
                    return
            if c in _STRUCTURAL and not any(delim.startswith(buf[-k:]) for delim in self.same
                                            for k in range(1, len(delim))):
                out.append(self.buf)  # a bare value as written (a literal, a number)
                self.buf, self.state, self.value = "", "out", False
                self._char(c, out)
                return
            self.buf = buf
            return
        # outside strings
        if any(opener.startswith(c) for opener, _ in self.delims):
            self.state, self.buf, self.value = "open", "", False
            self._char(c, out)
            return
        if self.value and self.same and c not in _STRUCTURAL and not c.isspace():
            self.state, self.buf = "bare", c
            return
        out.append(c)
        if c == '"':
            self.state = "json"
        elif self.unquoted and c in "{,":
            self.state, self.buf = "key", ""
        if not c.isspace():
            self.value = c in ":["


class NameKeyed(_CharConverter):
    """Incremental rewrite of a name-as-key JSON body (``[{"f": {...}}, ...]``, each call object
    one key: the tool name, its value the arguments) into call objects: each call object's
    ``"f":`` becomes ``"name": "f", "arguments":``; everything else is copied.

    Args:
        bare (bool): a body that is one call object (not a list) is read too.

    ``feed(text) -> str``; ``finish() -> str`` (nothing is held between keys and values but a
    key read so far).
    """

    __slots__ = ("bare", "stack", "instr", "esc", "key", "expect")

    def __init__(self, bare: bool) -> None:
        self.bare = bare
        self.stack: list[str] = []
        self.instr = False
        self.esc = False
        self.key: list[str] | None = None  # a call object's key being read (raw JSON text)
        self.expect = ""                   # at a call object's level: "key", ":" or ""

    def finish(self) -> str:
        key, self.key = self.key, None
        return "".join(key or ())

    def _calllevel(self) -> bool:
        stack = self.stack
        return (len(stack) == 1 and stack[0] == "{" and self.bare) or stack == ["[", "{"]

    def _char(self, c: str, out: list[str]) -> None:
        if self.instr:
            self.instr, self.esc = _string_step(c, self.esc)
            (self.key if self.key is not None else out).append(c)
            return
        if self.key is not None:
            self.key.append(c)
            if c == ":":
                raw = "".join(self.key[:-1]).rstrip(" \t\r\n")
                self.key = None
                self.expect = ""
                out.append('"name": ' + raw + ', "arguments":')
            elif c not in " \t\r\n":
                out.append("".join(self.key))  # not a key: copied (the scanner rejects it)
                self.key = None
                self.expect = ""
            return
        out.append(c)
        if c == '"':
            if self.expect == "key" and self._calllevel():
                out.pop()
                self.key = [c]
            self.instr = True
        elif c in "{[":
            self.stack.append(c)
            self.expect = "key" if self._calllevel() else ""
        elif c in "}]":
            if self.stack:
                self.stack.pop()
            self.expect = ""
        elif c == "," and self._calllevel():
            self.expect = "key"


class Converted:
    """A converter in front of a ``json ArgumentReader``: the body text goes through
    ``convert.feed`` and what it returns to the scanner; ``finish()`` (at the region's close)
    feeds the converter's rest. With ``name`` (a call whose name is a constant of the template),
    the name is reported to the stream through the scanner's ``out`` right after the call began.

    ``mode``: the scanner's (``"object"``/``"args"``), or ``"const"`` with ``name`` (the stream
    then does not read the name from the open delimiter)."""

    __slots__ = ("scanner", "convert", "name", "mode", "named")

    def __init__(self, scanner: Any, convert: Any, name: str | None = None) -> None:
        self.scanner = scanner
        self.convert = convert
        self.name = name
        self.mode = "const" if name is not None else scanner.mode
        self.named = False
        if hasattr(convert, "held"):
            convert.held = lambda key: scanner.held(0, key)

    def feed(self, text: str) -> None:
        self._send(self.convert.feed(text))

    def finish(self) -> None:
        self._send(self.convert.finish())

    def _send(self, text: str) -> None:
        if not text:
            return
        scanner = self.scanner
        if self.name is not None and not self.named:
            scanner.feed(text[0])  # the "{": the call begins
            self.named = True
            if scanner.n == 0:
                scanner.out("name", 0, self.name)
            text = text[1:]
        scanner.feed(text)


# ------------------------------------------------------------------------------------------------
# The whole-body parser, its dialects (deviation D6), the recover repair and the grammar fragment.


@functools.lru_cache(maxsize=256)
def _dialect_finder(opens: tuple[str, ...], unquoted_keys: bool,
                    python_literals: bool = False) -> re.Pattern:
    """A pattern that finds the next position the JSON dialect scanner must look at.

    That is: the first character of any ``string_delims`` opener, a ``"`` (a JSON string to
    skip), with ``unquoted_keys`` a ``{`` or ``,`` (a key may follow), and with
    ``python_literals`` a ``T``, ``F`` or ``N`` (a Python literal may start).
    """
    chars = {'"'}
    if unquoted_keys:
        chars.update("{,")
    if python_literals:
        chars.update("TFN")
    chars.update(o[0] for o in opens if o)
    return re.compile("[" + "".join(re.escape(c) for c in sorted(chars)) + "]")


# A JSON string body after its opening quote: escapes skip one character; stops after the
# closing quote. An unterminated string runs to the end of the text.
_JSON_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)


# JSON insignificant whitespace, then a bare key directly followed by its colon. The reference
# uses a Unicode ``\w+`` key, so do we.
_BARE_KEY = re.compile(r"[ \t\r\n]*(\w+):")


# A Python literal as a whole word (the scanner checks the character before it).
_PY_LITERAL = re.compile(r"(?:True|False|None)(?!\w)")


_PY_TO_JSON = {"True": "true", "False": "false", "None": "null"}


def _checked_delims(string_delims: Any) -> tuple[tuple[str, str], ...]:
    """Validate ``string_delims`` into a tuple of (open, close) string pairs.

    Raises:
        ValueError: the argument is not a list of two-string pairs.
    """
    pairs = []
    for pair in string_delims:
        if isinstance(pair, str):
            raise ValueError(f"string_delims entry {pair!r} is not an [open, close] pair")
        open_d, close_d = pair
        if not isinstance(open_d, str) or not isinstance(close_d, str):
            raise ValueError(f"string_delims entry {pair!r} must hold two strings")
        pairs.append((open_d, close_d))
    return tuple(pairs)


def _apply_dialects(text: str, delims: tuple[tuple[str, str], ...], unquoted_keys: bool,
                    python_literals: bool = False) -> str:
    """Rewrite lax JSON into strict JSON in one left-to-right scan (deviation D6).

    Outside JSON string literals: a span ``open ... close`` of a ``string_delims`` pair (the first
    pair whose opener starts here and whose closer follows; the closer is its next occurrence)
    becomes ``json.dumps`` of the enclosed text, and with ``unquoted_keys`` an identifier that
    follows ``{`` or ``,`` (after optional whitespace) and is directly followed by ``:`` gets
    quoted; with ``python_literals`` a whole-word Python literal becomes its JSON spelling. JSON
    string literals are copied verbatim.

    Args:
        text (str): the region body.
        delims (tuple[tuple[str, str], ...]): validated ``string_delims`` pairs, in priority order.
        unquoted_keys (bool): whether to quote bare keys.
        python_literals (bool): whether a whole-word ``True``/``False``/``None`` outside strings
            becomes ``true``/``false``/``null``.

    Returns:
        str: the rewritten text (``text`` itself when nothing changed).
    """
    finder = _dialect_finder(tuple(o for o, _ in delims), unquoted_keys, python_literals)
    out: list[str] = []
    copied = 0  # text[:copied] is already in ``out``
    pos = 0
    length = len(text)
    # Closers known to be absent from the rest of the text: once a search for one fails, later
    # openers of that pair are plain text, and searching again would make the scan quadratic.
    exhausted: set[str] = set()
    while pos < length:
        m = finder.search(text, pos)
        if m is None:
            break
        at = m.start()
        handled = False
        for open_d, close_d in delims:
            if open_d and close_d not in exhausted and text.startswith(open_d, at):
                body_start = at + len(open_d)
                end = text.find(close_d, body_start)
                if end < 0:
                    exhausted.add(close_d)
                    continue
                out.append(text[copied:at])
                out.append(json.dumps(text[body_start:end]))
                pos = copied = end + len(close_d)
                handled = True
                break
        if handled:
            continue
        char = text[at]
        if char == '"':
            pos = _JSON_STRING_REST.match(text, at + 1).end()
        elif unquoted_keys and char in "{,":
            key = _BARE_KEY.match(text, at + 1)
            if key is not None:
                out.append(text[copied:key.start(1)])
                out.append('"' + key.group(1) + '"')
                copied = key.end(1)
                pos = key.end()
            else:
                pos = at + 1
        elif python_literals and char in "TFN":
            word = _PY_LITERAL.match(text, at)
            if word is not None and not (at and (text[at - 1].isalnum() or text[at - 1] == "_")):
                out.append(text[copied:at])
                out.append(_PY_TO_JSON[word.group()])
                copied = pos = word.end()
            else:
                pos = at + 1
        else:
            pos = at + 1
    if not out:
        return text
    out.append(text[copied:])
    return "".join(out)


# json.loads(text) for a str is ``JSONDecoder().decode``: WHITESPACE, ``scan_once``, WHITESPACE,
# "Extra data" unless at the end (CPython Lib/json/decoder.py); parse_json's quick path repeats it.
_JSON_SCAN = json.JSONDecoder().scan_once


_JSON_WS = json.decoder.WHITESPACE.match
#: the characters _JSON_WS skips (json's whitespace)
_WS_CHARS = " \t\n\r"


def make(args: dict) -> ContentParser:
    """The whole-body parser: the body read as JSON in respc's dialects (deviation D6); raises
    ContentParseError (with ``allow_non_json``, the stripped text instead)."""
    allow_non_json = bool(args.get("allow_non_json"))
    unquoted_keys = bool(args.get("unquoted_keys", False))
    python_literals = bool(args.get("python_literals", False))
    fallback = make_text(args)
    # Validate the dialect arguments once; a bad value is reported (or, with allow_non_json,
    # falls back to text) when a region is parsed, like every other failure.
    bad_args: Exception | None = None
    delims: tuple[tuple[str, str], ...] = ()
    try:
        delims = _checked_delims(args.get("string_delims") or [])
    except (ValueError, TypeError) as exc:
        bad_args = exc
    dialects = bool(delims) or unquoted_keys or python_literals
    plain = not dialects and bad_args is None

    def parse_json(text: str) -> Any:
        if plain and text.__class__ is str:
            # What json.loads does with a str, without its three Python frames: the C reader after
            # leading whitespace, then only trailing whitespace. Anything else (a failure, extra
            # data) goes the full way below, which gives the same value or raises the same error.
            # (one whitespace character each side, the common case, is skipped without the regex)
            n = len(text)
            start = 0
            if n and text[0] in _WS_CHARS:
                start = 1 if n == 1 or text[1] not in _WS_CHARS else _JSON_WS(text, 0).end()
            try:
                value, end = _JSON_SCAN(text, start)
            except (StopIteration, ValueError, RecursionError):
                pass
            else:
                if end == n or (end + 1 == n and text[end] in _WS_CHARS) or _JSON_WS(text, end).end() == n:
                    return value
        working = text
        try:
            if bad_args is not None:
                raise ValueError(f"invalid string_delims: {bad_args}")
            if dialects:
                working = _apply_dialects(text, delims, unquoted_keys, python_literals)
            return json.loads(working)
        except (ValueError, TypeError, AttributeError, RecursionError) as exc:
            if allow_non_json:
                try:
                    return fallback(text)
                except (TypeError, AttributeError):
                    pass  # not even text: report below
            if working is text or working == text:
                raise ContentParseError(
                    f"json parser could not parse region as JSON.\nContent: {text!r}\nError: {exc}"
                ) from exc
            raise ContentParseError(
                "json: could not parse after dialect transforms.\n"
                f"Original: {text!r}\nTransformed: {working!r}\nError: {exc}"
            ) from exc

    return parse_json


#: a bare value right after ``:``, ``[`` or ``,`` up to the end of the text searched
_BARE_VALUE = regex.compile(r'(?:(?<=[:\[,])|(?<=[:\[,]\s+))[^\s{}\[\],:"][^{}\[\],:"]*\Z')


def _add_missing_opens(text: str, open_: str, close: str, notes: list[str]) -> str:
    """``string_delims`` whose open and close are one token (gemma4 ``<|"|>``), written an odd
    number of times: a close right after a bare value (``{query:weather in Tokyo<|"|>}``) lost
    its open, which is added before the value."""
    if open_ != close or text.count(open_) % 2 == 0:
        return text
    out: list[str] = []
    last, inside = 0, False
    at = text.find(open_)
    while at >= 0:
        if inside:
            inside = False
        else:
            bare = _BARE_VALUE.search(text, last, at)
            if bare is not None:
                out.append(text[last:bare.start()] + open_ + text[bare.start():at + len(close)])
                last = at + len(close)
                notes.append(NOTES["missing-open"].format(open_))
                at = text.find(open_, last)
                continue
            inside = True
        at = text.find(open_, at + len(open_))
    out.append(text[last:])
    return "".join(out)


def repair(args: dict) -> Callable[[str], "tuple[Any, list[str]] | None"]:
    """``errors="recover"``: the json parser's repair (``runtime/repair.py``); dialects first."""
    unquoted_keys = bool(args.get("unquoted_keys", False))
    python_literals = bool(args.get("python_literals", False))
    try:
        delims = _checked_delims(args.get("string_delims") or [])
    except (ValueError, TypeError):
        return lambda text: None
    dialects = bool(delims) or unquoted_keys or python_literals

    def fix(text: str) -> "tuple[Any, list[str]] | None":
        working = text
        notes: list[str] = []
        if dialects:
            for open_, close in delims:
                working = _add_missing_opens(working, open_, close, notes)
            try:
                working = _apply_dialects(working, delims, unquoted_keys, python_literals)
            except (ValueError, TypeError, AttributeError):
                working = text
        repaired, more = repair_json_text(working)
        notes += more
        if not notes:
            return None
        try:
            return json.loads(repaired), notes
        except (ValueError, RecursionError):
            return None

    return fix


def grammar(args: dict) -> str:
    """A Lark rule body for a json body, approximate (a regex cannot count brackets; docs/formats.md)."""
    if args.get("allow_non_json"):
        return _ANY_BODY
    return r"/[ \t\r\n]*(?:\{[\s\S]*\}|\[[\s\S]*\]|\"[\s\S]*\"|[\w.+\-]+|<[\s\S]+)[ \t\r\n]*/s"


class JsonStream(ArgumentStream):
    """Arguments read by the json :class:`ArgumentReader` (``scan_plan``: ``("object", (name_key,
    arg_keys))`` or ``("args", name_group)``), with ``wrap(reader) ->`` :class:`Converted` in front of it
    for a body that is converted to JSON as it arrives (a dialect, name-as-key JSON, a text body as one
    argument, nested XML); :class:`~respc.runtime.formats.base.ArgumentStream` describes the protocol."""

    def __init__(self, scan_plan: tuple, wrap: Callable[[Any], Any] | None = None) -> None:
        self.scan_plan = scan_plan
        self.wrap = wrap
        self.scan = scan_plan if wrap is None else None
        self.name_group = scan_plan[1] if scan_plan[0] == "args" else None
        self.ticks = self.name_group is not None

    def reader(self, out: Callable, held: Callable, typed: Callable) -> "ArgumentReader":
        """The json reader of one region (also the one the core may run as its boundary decoder)."""
        mode, extra = self.scan_plan
        return ArgumentReader(mode, extra if mode == "object" else (), out, held, typed)

    def open(self, host: Any, region: Any, base: int) -> Any:
        scanned = host.scanned  # (bound once: the reader calls out() for every piece)

        def out(kind: str, n: int, payload: str) -> None:
            scanned(region, base + n, kind, payload)

        def held(n: int, key: str) -> bool | None:
            return host.held(host.call(base + n).name, key)

        def typed(n: int, key: str, raw: str) -> str | None:
            return host.typed(host.call(base + n).name, key, raw)

        scanner = self.reader(out, held, typed)
        return scanner if self.wrap is None else self.wrap(scanner)

    def tick(self, reader: Any, host: Any, base: int, region: Any) -> None:
        if getattr(reader, "mode", "args") == "args":  # (a Converted with a constant name needs none)
            ArgumentStream.tick(self, reader, host, base, region)

    def close(self, reader: Any, host: Any, base: int, calls: list) -> None:
        if self.wrap is not None:
            reader.finish()


def stream(plan: Plan, args: dict) -> ArgumentStream | None:
    """``Format.stream`` of json: the arguments object as written (``"json"``), or converted from a dialect
    (``"dialect-json"``) or from name-as-key calls (``"name-keyed"``)."""
    mode = plan.arguments
    if mode == "json":
        return JsonStream(("object", (plan.name_key, plan.arg_keys)) if plan.call == "object" else ("args", plan.name_group))
    if mode == "dialect-json":
        pairs, unquoted = stream_pairs(args) or (), bool(args.get("unquoted_keys"))
        return JsonStream(("args", plan.name_group), lambda scanner: Converted(scanner, DialectJson(pairs, unquoted)))
    if mode == "name-keyed":
        return JsonStream(("object", ("name", ("arguments",))), lambda scanner: Converted(scanner, NameKeyed(False)))
    return None


# --- grammar export (docs/grammar.md, "Formats write their bodies") -------------------------------------------

def body_grammar(b: Any, f: Any, tool: bool, shape: Any, where: str) -> Any:
    """:attr:`Format.body_grammar` of ``json``: a tool field's call objects (the name one of the offered
    tools, the arguments valid against its schema), else any JSON value; None (the region's text) with
    ``allow_non_json``. String values keep out the delimiters the parser watches in the body."""
    ir = b.ir
    jb = ir.JsonBuilder(b.g, b.dialect(f), b.body_watch(f))
    if tool and shape is not None:
        # an open that ends in a lookahead (``functools(?=\\[)``) is followed by the body at once
        lead = ir.EMPTY if ir.looks_ahead(f) else jb.ws()
        return ir.seq(lead, json_calls(b, f, shape, jb, where), jb.ws())
    if f.content_args.get("allow_non_json"):
        return None
    return ir.seq(jb.ws(), jb.value(), jb.ws())


def args_grammar(b: Any, f: Any, name: str | None, schema: Any, where: str, jb: Any) -> Any:
    """:attr:`Format.args_grammar` of ``json``: tool ``name``'s arguments object, whitespace around it."""
    args = b.args_node(jb, schema, f"{where} tool {name!r} parameters")  # its rules first (stable rule order)
    return b.ir.seq(jb.ws(), args, jb.ws())


def json_calls(b: Any, f: Any, shape: Any, jb: Any, where: str) -> Any:
    """A JSON call body: one call object per offered tool (name and arguments members in either order,
    other members such as an ``id`` before and after, never a second name or arguments member,
    docs/grammar.md "What the grammar says"),
    or a list of them when the transform reads each element (``transform_each``)."""
    ir = b.ir
    seq, alt, Lit, Rep = ir.seq, ir.alt, ir.Lit, ir.Rep
    ws = jb.ws()
    if shape.name_group is not None:
        return None  # per-tool: handled by the caller (the open carries the name)
    per_tool = []
    named = b.tools if b.has_tools else [(None, None)]
    for name, schema in named:
        nm = jb.string_of(name) if name is not None else jb.value()  # untyped: tools typing ignores it
        args = b.args_node(jb, schema, f"{where} tool {name!r} parameters")
        if shape.name_key == "$key":
            key_node = nm if name is not None else jb.key()
            per_tool.append(seq(Lit("{"), ws, jb.key_colon(key_node), ws, args, ws, Lit("}")))
            continue
        keys = shape.args_keys or ("arguments",)
        arg_member = alt(*(seq(jb.key_colon(jb.key(k)), ws, args) for k in keys))
        name_member = seq(jb.key_colon(jb.key(shape.name_key or "name")), ws, nm)
        # other members (an id) may come before and after; the reader ignores them
        extra = seq(jb.key_colon(jb.other_key((shape.name_key or "name",) + keys)), ws, jb.value())
        before = Rep(seq(extra, ws, Lit(","), ws))
        after = Rep(seq(ws, Lit(","), ws, extra))
        if ir.looks_ahead(f):
            # the open looks ahead for the call's start (``(?=\\{\\s*"name")``): the name member
            # comes first, as the lookahead needs it, or the parser reads no call
            # (docs/grammar.md "What the grammar says")
            per_tool.append(seq(Lit("{"), ws, name_member, ws, Lit(","), ws, arg_member, after, ws, Lit("}")))
            continue
        per_tool.append(seq(Lit("{"), ws, before, alt(seq(name_member, ws, Lit(","), ws, arg_member),
                                                      seq(arg_member, ws, Lit(","), ws, name_member)),
                            after, ws, Lit("}")))
    if not per_tool:
        return Lit("\x00no-tools")
    call = b.g.share("call", alt(*per_tool))
    more = Rep(seq(ws, Lit(","), ws, call)) if b.parallel else ir.EMPTY
    # transform_each: the body is a list of calls (template-language.md "Transforms"); otherwise one call object
    return seq(Lit("["), ws, call, more, ws, Lit("]")) if f.transform_each else call


class InString(InsideReader):
    """Whether a json body stands inside a string of its first value, as errors="recover" reads
    strings (:class:`_Quoted`): ``"..."``, a ``string_delims`` span, and also ``'...'`` (a Python
    dict, which the recover repair reads as JSON: a closer written inside a single-quoted string
    closed the call, and the repair then ran the cut call and a call quoted in the value; red team
    s12). Each piece is read once (linear); once the value ended it is never inside again
    (docs/security.md, "Closers inside an open value")."""

    __slots__ = ("_quoted",)

    def __init__(self, delims: tuple[tuple[str, str], ...]) -> None:
        self._quoted = _Quoted(delims)

    def feed(self, text: str) -> bool:
        return self._quoted.feed(text)


_SQ_STOP = re.compile(r"['\\\\]")
_DQ_STOP = re.compile(r'["\\\\]')


class _Quoted:
    """Where ``runtime/repair.py`` (``repair_json_text``) reads strings, read incrementally: outside a
    string a ``"`` or ``'`` opens one that ends at the same quote, a backslash escaping the next
    character; a ``string_delims`` span is a string to its close. ``over`` once the body's first value
    (an object or array: its brackets closed again; a string: closed) has ended, or when the body
    starts with anything else."""

    __slots__ = ("_delims", "_quote", "_escape", "_depth", "_started", "over", "_tail", "_stop")

    def __init__(self, delims: tuple[tuple[str, str], ...]) -> None:
        self._delims = delims
        # outside strings, once the value started: the next character that matters
        firsts = "".join(sorted({o[0] for o, _ in delims if o}))
        self._stop = re.compile("[" + re.escape("\"'{}[]" + firsts) + "]")
        self._quote = ""  # the string's closing quote or delimiter, "" outside strings
        self._escape = False
        self._depth = 0
        self._started = False
        self.over = False
        self._tail = ""  # the start of a delimiter that may still be being written

    def feed(self, text: str) -> bool:
        """True when, after ``text``, the body stands inside such a string of its first value."""
        if self.over:
            return False
        data = self._tail + text
        self._tail = ""
        delims = self._delims
        longest = max((len(o) for o, _ in delims), default=1)
        i, n = 0, len(data)
        while i < n:
            quote = self._quote
            if quote:
                if len(quote) == 1:
                    if self._escape:
                        self._escape = False
                        i += 1
                        continue
                    m = (_SQ_STOP if quote == "'" else _DQ_STOP).search(data, i)
                    if m is None:
                        break
                    i = m.start()
                    if data[i] == "\\":
                        self._escape = True
                        i += 1
                        continue
                    i += 1
                    self._quote = ""
                    if self._depth == 0:
                        self.over = True
                        return False
                    continue
                j = data.find(quote, i)
                if j < 0:
                    # keep what may be the start of the closing delimiter
                    self._tail = data[max(i, n - len(quote) + 1):]
                    return True
                i = j + len(quote)
                self._quote = ""
                if self._depth == 0:
                    self.over = True
                    return False
                continue
            if self._started:
                m = self._stop.search(data, i)
                if m is None:
                    break
                i = m.start()
            c = data[i]
            if delims and n - i < longest and any(len(o) > n - i and o.startswith(data[i:]) for o, _ in delims):
                self._tail = data[i:]  # a delimiter still being written
                return False
            opened = next((d for d in delims if data.startswith(d[0], i)), None)
            if opened is not None:
                self._quote = opened[1]
                self._started = True
                i += len(opened[0])
                continue
            if c == '"' or c == "'":
                self._quote = c
                self._started = True
            elif c == "{" or c == "[":
                self._depth += 1
                self._started = True
            elif c == "}" or c == "]":
                if self._depth > 0:
                    self._depth -= 1
                    if self._depth == 0:
                        self.over = True
                        return False
            elif not self._started and not c.isspace():
                self.over = True  # the body starts with no value the repair reads
                return False
            i += 1
        return self._quote != ""


def inside(args: dict) -> Callable[[], InString]:
    """The ``inside`` reader factory of json (:class:`InString`), for ``content_args`` ``args``."""
    delims = _delims(args)
    return lambda: InString(delims)


FORMAT = Format("json", True, check, plan, make, reader=json_boundary, ends_itself=True, can_reject=True,
                repair=repair, grammar=grammar, stream=stream, body_grammar=body_grammar,
                args_grammar=args_grammar, inside=inside)
