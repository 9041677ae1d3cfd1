"""The json format's argument reader as it was before it read by runs (runtime/formats/json_.py
``ArgumentReader``, commit 9f5c577): character by character. Kept as the oracle of
tests/test_formats_json.py, which checks the run-reading reader gives the same pieces, end and stop
on random bodies and chunkings. Not product code; never imported by respc."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

#: raw control characters inside a JSON string, as the recover repair escapes them
_CONTROL = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
#: a run of JSON string characters that need no care (no quote, backslash or control character):
#: the :class:`ArgumentReader` takes it in one step
_STRING_RUN = re.compile(r'[^"\\\x00-\x1f]+')
#: Python literals in a JSON value, as the recover repair reads them
_LITERALS = {"True": "true", "False": "false", "None": "null", "NaN": "NaN"}  # (NaN: Python's json reads it)


#: :attr:`ArgumentReader.end` for a moment: the value ended at the character just read
_ENDED = -2


class OldArgumentReader:
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
                 "word", "stop", "dead_at")

    def __init__(self, mode: str, keys: tuple, out: Callable, held: Callable, typed: Callable) -> None:
        self.end = -1
        self.pos = 0                # characters fed before the current piece
        self.mode = mode            # "object": call objects; "args": the body is the arguments
        self.namekey, self.keys = keys if keys else ("", ())  # the name and arguments keys ("object")
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
        """Read the next piece of the body; the pieces found go to ``out``."""
        if self.dead:
            self.pos += len(text)
            return
        emit: list[str] = []
        char = self._char
        run = _STRING_RUN.match
        i, end = 0, len(text)
        try:
            while i < end:
                if self.instr and not self.esc:
                    # inside a string: a run of plain characters in one step (what _char does
                    # with each of them: forwarded, held or collected as a key or name)
                    m = run(text, i)
                    if m is not None:
                        i = m.end()
                        self._string_run(m.group(), emit)
                        if i == end:
                            break
                char(text[i], emit)
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

    def _string_run(self, piece: str, emit: list[str]) -> None:
        """Plain characters of an open string (no quote, backslash or control character, not
        after a backslash): as :meth:`_char` reads each of them, all at once."""
        if self.argdepth and len(self.stack) >= self.argdepth:
            (self.holdbuf if self.hold else emit).append(piece)
            if self.keybuf is not None:
                self.keybuf.append(piece)
        elif self.keybuf is not None:
            self.keybuf.append(piece)
        elif self.namebuf is not None:
            self.namebuf.append(piece)

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
                    self.curkey = json.loads('"' + "".join(self.keybuf) + '"')
                    self.keybuf = None
                    self.expect = ":"
                else:
                    self.keybuf.append(c)
            elif self.namebuf is not None:
                if closing:
                    self.name = json.loads('"' + "".join(self.namebuf) + '"')
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
                if key in self.seen or (key in self.keys and self.seen & set(self.keys)):
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
        raw = "".join(self.keybuf or ())
        self.keybuf = None
        self.holdkey = json.loads('"' + raw + '"')
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

