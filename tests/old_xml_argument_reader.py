"""The xml-inline format's argument reader as it was before it searched partially only where a tag may start
(runtime/formats/xml_inline.py ``ArgumentReader``, commit 46e62c8): a ``partial=True`` search of the whole text
not read yet on every scan. Kept as the oracle of tests/test_formats_xml_inline.py, which checks the reader gives
the same JSON text, keys and state on random bodies and chunkings. Not product code; never imported by respc."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from respc.runtime.formats.xml_inline import _pinned


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


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


class OldArgumentReader:
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

    __slots__ = ("mode", "plan", "text", "ready", "cur", "keys", "begun", "dead", "value", "strip")

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

    def feed(self, text: str) -> None:
        """Take the next piece of the body (read by :meth:`scan`)."""
        if not self.dead:
            self.text += text

    def _sep(self) -> str:
        sep = ", " if self.begun else "{"
        self.begun = True
        return sep

    def scan(self) -> str:
        """Convert the body text not read yet; return the JSON text it settled (maybe ``""``)."""
        full, opening, closing, _, switch, before = self.plan[:6]
        text = self.text
        out: list[str] = []
        while not self.dead:
            cur = self.cur
            if cur is None:
                m = full.search(text)
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
                m = opening.search(text, partial=True)
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
            found = closing.search(text, partial=True)
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
            hold = len(text) if found is None else found.start()
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
            out.append(_dumps(whole)[1:-1])

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
