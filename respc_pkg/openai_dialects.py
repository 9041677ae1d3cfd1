"""Tool-call bodies that are not plain JSON call objects, converted to JSON text as they stream
(issue 9; used by :mod:`respc.openai`).

Theory of operation
-------------------
:class:`respc.openai.ChatCompletionStream` forwards a JSON tool-call body through its ``_Scanner``,
which reads a call object (``{"name": ..., "arguments": {...}}``, or a list of them) or an arguments
object (the name in the open delimiter) and sends the arguments' text as it arrives, holding what
the tool schema types until it is complete. The bodies here are not that JSON, but each has an
incremental, never-retracting conversion *to* that JSON; the converted text is fed to the same
scanner (:class:`Converted`), so holding, typing, the close check and the ``recover_arguments``
policies are the scanner's:

* **JSON dialects** (``string_delims``, ``unquoted_keys``; Gemma 4's ``<|"|>``, FunctionGemma's
  ``<escape>``): :class:`DialectJson` rewrites the body as ``runtime.content._apply_dialects``
  rewrites it, left to right: a delimited span becomes a JSON string (its text escaped piece by
  piece; only what may be the start of its closer is held), a bare key after ``{``/``,`` is quoted
  (held only while it is still whitespace and word characters), JSON strings and everything else
  are copied; a bare value is held until what ends it (a lone delimiter after it: the string
  whose opener was omitted, as the recover repair reads it). A span whose closer never comes is plain text to the runtime; the stream cannot know
  that in advance and takes the opener as a string's start (such a body is not JSON after the
  rewrite either, so the strict parser rejects it; ``errors="recover"`` then reports it).
* **Name as the key** (Apertus ``[{"get_weather": {...}}]``, ``{content.$key}`` /
  ``{content.$value}``): :class:`NameKeyed` rewrites each call object's key ``"f":`` as
  ``"name": "f", "arguments":``; the rest is copied.
* **Another arguments key** (Inkling ``{"name": ..., "args": {...}}``): no conversion, the
  scanner is told the key (:data:`ARG_KEYS`).
* **A text body as one string argument** (functionary's ``<|python_tag|>`` code as
  ``{"code": ...}``): :class:`TextArgs` sends ``{"code": "`` at the first character the message
  keeps, the text as JSON string text (stripped as the content parser strips it: leading
  whitespace dropped, trailing whitespace held until text follows), ``"}`` at the close.
* **Nested XML** (MiniMax-M3: ``xml-inline`` with an ``xml-tree`` value parser): :class:`XmlTree`
  writes ``{"key": "`` and streams a leaf value's text once its start shows it cannot begin an
  element; a nested value, a leaf the schema types and a repeated key are held to their closing
  tag and sent as the runtime reads them.

Which applies is decided at compile time by the region's content format (``runtime/formats``, its
``Plan.arguments``, docs/formats.md); :func:`build` makes the converter the plan names.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

__all__ = ["build", "label", "LABELS", "Converted", "DialectJson", "NameKeyed", "TextArgs", "XmlTree", "ARG_KEYS"]

#: arguments keys of a call object besides ``arguments``/``parameters`` (which respc.openai tries)
ARG_KEYS = ("args", "input", "params")
#: characters that end a bare value (``runtime.content._BARE_VALUE`` excludes them)
_STRUCTURAL = set('{}[],:"')
#: a ``\w`` character, as ``runtime.content._BARE_KEY`` reads keys (Unicode)
_WORD = re.compile(r"\w")


def _escaped(text: str) -> str:
    """``text`` as the inside of a JSON string literal (pieces of one string concatenate)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


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
    ``runtime.content._apply_dialects`` rewrites the whole body (deviation D6).

    Args:
        delims (tuple[tuple[str, str], ...]): ``string_delims`` pairs in priority order; each
            opener begins with a character that cannot begin JSON text (checked by :func:`probe`).
        unquoted_keys (bool): quote a bare ``\\w+`` key directly followed by ``:`` after ``{`` or
            ``,`` (and optional JSON whitespace).

    A bare value right after ``:`` or ``[`` that ends in a delimiter whose opener is its closer
    (``{query:weather in Tokyo<|"|>}``, its opener omitted) is sent as that string, as the
    ``errors="recover"`` repair reads it (``runtime.content._add_missing_opens``); so a bare
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
            out.append(_escaped(buf[:at]) + '"')
            self.buf, self.state = "", "out"
            return at + len(close) - held
        keep = 0
        if close[0] in buf[1 - len(close):]:  # (else no end of it can begin the closer)
            keep = next((k for k in range(min(len(buf), len(close) - 1), 0, -1) if close.startswith(buf[-k:])), 0)
        if len(buf) > keep:
            out.append(_escaped(buf[:len(buf) - keep]))
        self.buf = buf[len(buf) - keep:]
        return len(text) - i

    def finish(self) -> str:
        out: list[str] = []
        if self.state in ("key", "open", "bare"):
            out.append(self.buf)  # (no key, no opener, no delimiter: the runtime copies it)
        elif self.state == "delim":
            out.append(_escaped(self.buf))
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
                    out.append('"' + _escaped(buf[:-len(delim)]) + '"')
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


class TextArgs:
    """A text body sent as the one string argument ``key`` of a call named ``name``:
    ``{"key": "`` before the first character the message keeps, the text as JSON string text,
    ``"}`` at the close; with ``strip``, leading whitespace is dropped and trailing whitespace held
    until text follows it (``str.strip``, as the ``text`` content parser strips).

    ``feed(text) -> str``; ``finish() -> str``; ``begun`` once ``{`` went out.
    """

    __slots__ = ("key", "strip", "begun", "pending")

    def __init__(self, key: str, strip: bool) -> None:
        self.key = key
        self.strip = strip
        self.begun = False
        self.pending = ""

    def feed(self, text: str) -> str:
        head = ""
        if not self.begun:
            if self.strip:
                text = text.lstrip()
            if not text:
                return ""
            self.begun = True
            head = "{" + json.dumps(self.key, ensure_ascii=False) + ': "'
        whole = self.pending + text
        if self.strip:
            body = whole.rstrip()
            self.pending = whole[len(body):]
            whole = body
        return head + (_escaped(whole) if whole else "")

    def finish(self) -> str:
        if not self.begun:
            return ""  # nothing kept: the close sends the call
        self.pending = ""
        return '"}'


class Converted:
    """A converter in front of a ``respc.openai._Scanner``: the body text goes through
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
            out.append(self._key(cur[0]) + '"' + _escaped(lead))

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
                    out.append(_escaped(text[:end]))
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


def _xml_tree(args: dict) -> Callable[[Any], "Converted"] | None:
    """``make(scanner)`` of an ``xml-inline`` region with an ``xml-tree`` value parser (MiniMax-M3), built
    from its ``content_args`` (``runtime/formats/xml_inline.py`` planned it: ``OPEN(?P<value>.*?)CLOSE`` whose
    ``CLOSE`` names the key by ``(?P=key)``); None when its patterns do not compile."""
    import regex

    from respc.runtime.content import _make_value_parser

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


def build(region: Any, plan: Any) -> tuple | None:
    """The stream plan of a tool region whose format plan (``region.plan``, docs/formats.md) names one of
    this module's conversions, built from the plan and the region's ``content_args``.

    Returns:
        ``("dialect", (inner_plan, make))``: ``inner_plan`` is the scanner plan of the converted body
        (``("object", (name_key, arg_keys))`` or ``("args", group)``), ``make(scanner) ->`` :class:`Converted`
        wraps a new scanner; None when the plan names none of them.
    """
    args = getattr(region.process, "content_args", None) or {}
    mode = plan.arguments
    if mode == "dialect-json":
        from respc.runtime.formats.json_ import stream_pairs

        pairs, unquoted = stream_pairs(args) or (), bool(args.get("unquoted_keys"))
        return ("dialect", (("args", plan.name_group), lambda scanner: Converted(scanner, DialectJson(pairs, unquoted))))
    if mode == "name-keyed":
        return ("dialect", (("object", ("name", ("arguments",))), lambda scanner: Converted(scanner, NameKeyed(False))))
    if mode == "text-argument":
        key, strip, name = plan.arg_key, plan.strip, plan.name
        return ("dialect", (("args", None), lambda scanner: Converted(scanner, TextArgs(key, strip), name=name)))
    if mode == "xml-tree":
        make = _xml_tree(args)
        return None if make is None else ("dialect", (("args", plan.name_group), make))
    return None


#: how :func:`respc.openai.argument_streaming` names each ``Plan.arguments`` (docs/openai.md)
LABELS = {None: "at close", "json": "as written", "name-keyed": "as written", "dialect-json": "converted as written",
          "text-argument": "converted as written", "xml-tree": "converted as written",
          "xml-parameters": "converted as written", "pythonic": "converted as written",
          "per-parameter": "per parameter"}


def label(plan: Any) -> str:
    """How :func:`respc.openai.argument_streaming` names a region's format plan: ``"as written"`` when the
    arguments' text is forwarded as the model wrote it (a call object, name as the key), ``"converted as
    written"`` when it is rewritten as it streams, ``"per parameter"``, ``"at close"`` (no plan)."""
    return LABELS[getattr(plan, "arguments", None)]
