"""The ``text`` format: the body as a string, stripped unless ``"strip": false`` (template-language.md "Content
parsers")."""

from __future__ import annotations

import json

from ..content import ContentParser, _grammar_any
from .base import Format, Plan, call_shape, escaped, is_tool_field, no_problems, text_grammar, text_mode


def plan(field) -> Plan:
    """Streams as text (``"strip"``/``"raw"``); a tool field with a fixed name whose one argument is the body
    streams it as that argument (functionary's ``{"code": "{content}"}``)."""
    strips = bool(field.content_args.get("strip", True))
    if is_tool_field(field):
        shape = call_shape(field)
        if (shape is not None and not shape.each and shape.name is not None and shape.name[0] == "fixed"
                and shape.arguments is not None and shape.arguments[0] == "one"):
            return Plan("text", dirty=False, text=text_mode(field, strips), arguments="text-argument", call="args",
                        name=shape.name[1], arg_key=shape.arguments[1], strip=strips)
    return Plan("text", dirty=False, text=text_mode(field, strips))


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
        return head + (escaped(whole) if whole else "")

    def finish(self) -> str:
        if not self.begun:
            return ""  # nothing kept: the close sends the call
        self.pending = ""
        return '"}'


def _identity(text: str) -> str:
    return text


def make(args: dict) -> ContentParser:
    """The whole-body parser: the body, stripped unless ``"strip": false`` (``str.strip`` itself)."""
    return str.strip if args.get("strip", True) else _identity


def stream(plan: Plan, args: dict):
    """``Format.stream`` of text: a text body sent as the one string argument of its call
    (``"text-argument"``, :class:`TextArgs` in front of the json reader)."""
    if plan.arguments != "text-argument":
        return None
    from .json_ import Converted, JsonStream

    key, strip, name = plan.arg_key, plan.strip, plan.name
    return JsonStream(("args", None), lambda scanner: Converted(scanner, TextArgs(key, strip), name=name))


FORMAT = Format("text", False, no_problems, plan, make, grammar=_grammar_any, stream=stream,
                body_grammar=text_grammar)
