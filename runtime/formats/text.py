"""The ``text`` format: the body as a string, stripped unless ``"strip": false`` (template-language.md "Content
parsers")."""

from __future__ import annotations

import json
from typing import Any

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
        #: trailing whitespace held, in the pieces it came in: joined once, when text follows it (a
        #: long run of whitespace chunks is not copied and stripped again per chunk: linear)
        self.pending: list[str] = []

    def feed(self, text: str) -> str:
        head = ""
        if not self.begun:
            if self.strip:
                text = text.lstrip()
            if not text:
                return ""
            self.begun = True
            head = "{" + json.dumps(self.key, ensure_ascii=False) + ': "'
        whole = text
        if self.strip:
            cut = len(text.rstrip())
            if not cut:  # all whitespace: held with the rest
                self.pending.append(text)
                return head
            held, self.pending = self.pending, [text[cut:]] if cut < len(text) else []
            whole = "".join(held) + text[:cut] if held else text[:cut]
        return head + (escaped(whole) if whole else "")

    def finish(self) -> str:
        if not self.begun:
            return ""  # nothing kept: the close sends the call
        self.pending = []
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


#: keywords of a property schema that leave it taking any string (no enum, pattern, length, ...)
_PLAIN_STRING_KEYS = frozenset({"type", "description", "title", "default", "examples"})


def _takes_any_text(schema: Any, key: str) -> bool:
    """Whether ``{key: s}`` is valid against a tool's ``schema`` for every string ``s``: ``key``
    declared as a string (or a type list with ``"string"``: the tool typing keeps a string no other
    type converts) with no other constraint, no other property required; or a tool without declared
    properties (it takes any arguments, docs/grammar.md)."""
    if not isinstance(schema, dict):
        return False
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    if required - {key}:
        return False
    if not props:
        return schema.get("additionalProperties") is not False
    prop = props.get(key)
    if not isinstance(prop, dict) or set(prop) - _PLAIN_STRING_KEYS:
        return False
    kind = prop.get("type", "string")
    return kind == "string" or isinstance(kind, list) and "string" in kind


def args_grammar(b: Any, f: Any, name: str | None, schema: Any, where: str, jb: Any) -> Any:
    """:attr:`Format.args_grammar` of ``text``: the body of a call whose open names the tool and whose one
    argument is the body (cwm's ``{"command": "{content}"}``), written only for a tool that takes any
    string there (:func:`_takes_any_text`); None for any other tool (no call to it is written). The body
    holds no delimiter the parser watches, and its first character after whitespace is none an earlier
    field behind the same open reads (cwm's JSON call takes ``{``; a body of whitespace only it takes
    too, as an empty JSON body: template-language.md "reject"), nor a watched delimiter's first character.
    docs/grammar.md, "Fields that share an open"."""
    shape = call_shape(f)
    if shape is None or shape.arguments is None or shape.arguments[0] != "one":
        return None
    if name is not None and not _takes_any_text(schema, shape.arguments[1]):
        return None
    ir = b.ir
    body = b.text_body(b.t.fields.index(f))
    if not isinstance(body, ir.Except) or body.within is not None:
        return None
    space = [(9, 13), (32, 32)]
    firsts = {ord(x[0]) for x in body.literals if x}
    probes = [chr(c) for c in range(33, 127)] + ["\u00e9"]
    claimed = {ord(c) for c in probes if b.claimed(f, c)}
    if ord("\u00e9") in claimed:  # an earlier reader takes any other character too
        return None
    bad = ir.norm_ranges(space + [(c, c) for c in firsts | claimed])
    return ir.seq(ir.WS, ir.Chars(bad, negate=True), body)


FORMAT = Format("text", False, no_problems, plan, make, grammar=_grammar_any, stream=stream,
                body_grammar=text_grammar, args_grammar=args_grammar)
