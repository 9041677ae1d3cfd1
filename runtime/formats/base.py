"""What a content format declares: the :class:`Format` record and the :class:`Plan` it decides at compile time.

Each content format (template-language.md "Content parsers") lives in one module of this package and exports
one :class:`Format`; ``runtime/formats/__init__.py`` registers them in one table, :data:`FORMATS`. The table is
read by the load-time checks (``compiler/validate.py``), the emitter (``compiler/emit.py``, which writes each
region's :class:`Plan` by name into the generated module), the streaming core (``runtime/stream.py``,
``runtime/transforms.py``) and the OpenAI adapter (``respc/openai.py`` reads the plan, never probes).
docs/formats.md describes the table for contributors.

This module also holds what several formats share: the argument-check helpers of
:func:`value_parser_problems` (``xml-inline`` and ``kv-lines``) and :func:`call_shape`, which reads a tool-call
field's transform at compile time (which body key or open-delimiter group names the call, which key holds its
arguments).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import regex

from ..errors import ParserStateError

__all__ = ["Format", "InsideReader", "Plan", "PerParameterReader", "ArgumentStream", "ReparseStream", "REPARSE",
           "calls_of", "function_of", "escaped", "Boundary", "UNDECIDED", "ACCEPTED", "REJECTED", "Problems",
           "CallShape", "call_shape", "bool_args", "value_parser_problems", "unmatched_problems", "text_mode",
           "text_grammar"]

#: ``(arg path, problem)`` pairs of a load-time check: the path is relative to the checked dict (``""``: the
#: dict itself; ``"tag_pattern"``; ``"value_parser.args"``), the problem a sentence naming the argument.
Problems = list[tuple[str, str]]

#: how a tool region's arguments reach the OpenAI adapter while the model writes them (:attr:`Plan.arguments`)
ARGUMENT_MODES = ("json", "dialect-json", "name-keyed", "text-argument", "xml-parameters", "xml-tree",
                  "per-parameter", "pythonic")
#: how each mode is named to users (``respc.openai.argument_streaming``, docs/openai.md): the arguments' text
#: forwarded as the model wrote it, rewritten to JSON as it streams, sent parameter by parameter, or (None, no
#: mode) in one piece at the close
ARGUMENT_LABELS = {None: "at close", "json": "as written", "name-keyed": "as written",
                   "dialect-json": "converted as written", "text-argument": "converted as written",
                   "xml-tree": "converted as written", "xml-parameters": "converted as written",
                   "pythonic": "converted as written", "per-parameter": "per parameter"}


@dataclass(frozen=True)
class Plan:
    """Compile-time facts of one field's body, decided by its format's ``plan(field)`` and written by name
    into the generated module's region record (``Region.plan``; docs/formats.md, "The plan").

    Attributes:
        format (str): the content format's name.
        ends_itself (bool): the value ends itself, so ``"end": "value"`` is allowed and a body the output
            ended inside may still hold a whole value (docs/events.md, "Truncated regions").
        can_reject (bool): the format's reader may refuse a body at its first significant character
            (``"reject"``, template-language.md).
        empty_none (bool): an empty or whitespace body cannot be read (template language v2 gives it the
            value None).
        dirty (bool): the body's ``region_chunk`` events are not its final value (events.md "The events").
        text (str | None): the value is the body as text, ``"strip"`` (stripped) or ``"raw"`` (as written),
            so it can stream as it is written; None when only the close gives the value.
        arguments (str | None): tool-call regions (``role``/slot ``tool_calls``): how the call's arguments
            stream (:data:`ARGUMENT_MODES`): ``"json"`` (the JSON arguments object as written),
            ``"dialect-json"`` (a JSON dialect converted to JSON as written), ``"name-keyed"`` (``[{name:
            {arguments}}]``), ``"text-argument"`` (the body is one string argument), ``"xml-parameters"``
            (each xml-inline parameter converted as written), ``"xml-tree"`` (nested XML values),
            ``"per-parameter"`` (each parameter once the next begins), ``"pythonic"`` (Python calls
            converted as written); None: the arguments go out in one piece at the close.
        call (str | None): ``"object"`` (the body is a call object, or a list of them: the name under
            :attr:`name_key`, the arguments under one of :attr:`arg_keys`) or ``"args"`` (the body is the
            arguments; the name is the open delimiter's group :attr:`name_group`, or the fixed :attr:`name`).
        name_key (str | None), arg_keys (tuple[str, ...]): the call object's keys.
        name_group (str | None): the open delimiter's named group that holds the call's name.
        name (str | None): the call's fixed name (``"text-argument"``).
        arg_key (str | None): the one argument a ``"text-argument"`` body becomes.
        strip (bool): ``"text-argument"``: the argument is the stripped body.
    """

    format: str
    ends_itself: bool = False
    can_reject: bool = False
    empty_none: bool = False
    dirty: bool = True
    text: str | None = None
    arguments: str | None = None
    call: str | None = None
    name_key: str | None = None
    arg_keys: tuple = ()
    name_group: str | None = None
    name: str | None = None
    arg_key: str | None = None
    strip: bool = False

    def keywords(self) -> list[tuple[str, Any]]:
        """The attributes that differ from their defaults, ``format`` first (what the emitter writes)."""
        out: list[tuple[str, Any]] = [("format", self.format)]
        for name, spec in self.__dataclass_fields__.items():
            value = getattr(self, name)
            if name != "format" and value != spec.default:
                out.append((name, value))
        return out


@dataclass(frozen=True)
class Format:
    """One content format (docs/formats.md): everything respc knows about it, in one record.

    Attributes:
        name (str): the ``content`` value naming it.
        dirty (bool): its ``region_chunk`` events carry ``dirty=True`` (events.md "The events").
        check (Callable[[dict, str], Problems]): load-time checks of a ``content_args`` dict (the second
            argument is the dict's key path, for messages); :func:`respc.runtime.formats.content_args_problems`.
        plan (Callable[[Any], Plan]): ``plan(field)``, the compile-time facts of a field
            (:class:`respc.compiler.ir.Field`) whose content is this format.
        processor (Callable[[dict], Callable[[str], Any]]): whole-body parser factory (template-language.md
            "Content parsers").
        reader (Callable[[dict], Callable[[], Any]] | None): factory of incremental boundary readers
            (:class:`Boundary`), None when the format does not end itself.
        ends_itself (bool): a value ends itself (``"end": "value"`` allowed).
        can_reject (bool): its reader may reject a body at its first significant character(s).
        repair (Callable | None): ``errors="recover"`` only: factory of ``fix(body) -> (value, notes) | None``.
        repair_on_success (bool): the strict parse can succeed while skipping body text, so ``fix`` is
            also tried after a success.
        grammar (Callable[[dict], str] | None): a Lark rule body for the region's body text.
        never_string (str | None): what the value always is when it is never a str (``"an int"``), for the
            ``join`` check; None when it may be a str.
        since (int): the template language version that introduced it (1, or 2 for ``pythonic``,
            ``xml-tree``).
        lenient (Callable[[dict], dict | None] | None): the arguments that read a body still being
            written (``respc.openai`` streams what is done of it: ``Region.process.partial``), or None
            when the strict reading does.
        stream (Callable[[Plan, dict], ArgumentStream | None] | None): ``stream(plan, content_args)``, how a
            tool region's arguments stream to the OpenAI adapter (:class:`ArgumentStream`), decided from its
            plan; None (or a None result): the arguments go out in one piece at the close.
        body_grammar (Callable | None): ``body_grammar(b, field, tool, shape, where)``, the grammar-export
            node of a region body in this format (docs/grammar.md, "Formats write their bodies"): ``b`` is
            the export's builder (``respc.compiler.grammar_ir``; ``b.ir`` holds the node kinds and the JSON
            value builder, ``b.g`` the grammar, ``b.tools`` the offered tools), ``tool`` whether the field
            holds tool calls, ``shape`` its :class:`respc.compiler.grammar_ir.CallShape` (None when not a
            call), ``where`` the field named for notes. Returns the body's node, or None: the body is the
            region's text (nested regions between, the watched delimiters kept out). None (no hook): the
            body is any text, and the grammar says it is inexact.
        args_grammar (Callable | None): ``args_grammar(b, field, schema, where, jb)``: the node of one offered
            tool's arguments when the region's open names the tool (a ``name`` group); ``schema`` is the
            tool's parameters schema, ``jb`` the JSON value builder of the body (its dialect, the
            delimiters watched in it kept out of strings). None: the format cannot type such a body.
        inside (Callable[[dict], Callable[[], Any]] | None): ``errors="recover"`` only: factory of
            :class:`InsideReader` objects that tell whether a body stands inside an open value (an
            xml-inline parameter, a JSON or Python string); it decides for every closer of the
            region: one of the template met there is the value's text when a later closer leaves the
            value whole, a recover-only one is the value's text (docs/security.md, "Closers inside an
            open value"); None when the format has no such structure.
    """

    name: str
    dirty: bool
    check: Callable[..., Problems]
    plan: Callable[[Any], Plan]
    processor: Callable[[dict], Callable[[str], Any]]
    reader: Callable[[dict], Callable[[], Any]] | None = None
    ends_itself: bool = False
    can_reject: bool = False
    repair: Callable[[dict], Callable[[str], Any]] | None = None
    repair_on_success: bool = False
    grammar: Callable[[dict], str] | None = None
    never_string: str | None = None
    since: int = 1
    lenient: Callable[[dict], "dict | None"] | None = None
    stream: "Callable[[Plan, dict], ArgumentStream | None] | None" = None
    body_grammar: Callable[..., Any] | None = None
    args_grammar: Callable[..., Any] | None = None
    inside: "Callable[[dict], Callable[[], Any]] | None" = None


def text_grammar(b: Any, field: Any, tool: bool, shape: Any, where: str) -> None:
    """:attr:`Format.body_grammar` of a format whose body is the region's text as written (``text``,
    ``bool``): None, the export writes the region's text (docs/grammar.md, "Formats write their bodies")."""
    return None


class InsideReader:
    """Where a region's body stands, read incrementally (the ``inside`` reader of a :class:`Format`).

    ``feed(text)`` reads the next piece of the body (each character once: linear) and returns True
    when the body, after it, stands inside a value not closed yet (an open ``<parameter=...>``, a
    string), False otherwise. The stream parser feeds it the body up to each closer it meets in
    ``errors="recover"``, one reader per region (runtime/stream.py, ``StreamParser._inside_at_close``
    and, while a closer is held, ``_close_deferred``)."""

    def feed(self, text: str) -> bool:  # pragma: no cover - interface
        raise NotImplementedError


def no_problems(args: dict, where: str = "content_args") -> Problems:
    """The check of a format that takes no arguments it would refuse."""
    return []


def bool_args(args: dict, names: tuple[str, ...], parser: str) -> Problems:
    """A problem for each of ``names`` present in ``args`` and not a bool."""
    return [("", f"{parser} '{name}' must be a bool, got {type(args[name]).__name__}")
            for name in names if name in args and not isinstance(args[name], bool)]


def unmatched_problems(args: dict) -> Problems:
    """``unmatched`` of ``xml-inline`` and ``kv-lines``: ``"error"`` (default) or ``"skip"``."""
    if "unmatched" in args and args["unmatched"] not in ("error", "skip"):
        return [("unmatched", f"'unmatched' must be \"error\" or \"skip\", got {args['unmatched']!r}")]
    return []


def value_parser_problems(args: dict, where: str, groups: tuple[str, ...] | None, parser: str = "") -> Problems:
    """Check ``value_parser`` of a format whose values it reads: ``groups`` are the names a switch may
    name (xml-inline: the tag_pattern's groups), None when only ``"key"`` (the format ``parser``)."""
    from . import FORMATS, content_args_problems

    def spec_problems(spec: dict, path: str) -> Problems:
        sub = spec.get("name", "text")
        if sub not in FORMATS:
            return [("", f"value_parser: unknown content parser {sub!r}. Available: {sorted(FORMATS)}")]
        nested = f"{path}.args"
        return [(nested + ("." + arg if arg else ""), problem)
                for arg, problem in content_args_problems(sub, spec.get("args", {}), f"{where}.{nested}")]

    value_parser = args.get("value_parser")
    if value_parser is None:
        return []
    if not isinstance(value_parser, dict):
        return [("", "'value_parser' must be a dict {\"name\": parser, \"args\": {...}} or a switch "
                     "{\"switch\": group, \"cases\": {...}, \"default\": {...}}")]
    if "switch" not in value_parser:
        return spec_problems(value_parser, "value_parser")
    problems: Problems = []
    unknown = sorted(set(value_parser) - {"switch", "cases", "default"})
    if unknown:
        problems.append(("", f"value_parser switch has unknown keys {unknown} (allowed: "
                             "['switch', 'cases', 'default'])"))
    group = value_parser["switch"]
    if groups is None and group != "key":
        problems.append(("", f"{parser} value_parser can only switch on \"key\", got {group!r}"))
    elif groups is not None and (not isinstance(group, str) or group not in groups):
        problems.append(("", f"value_parser switch {group!r} is not a named group of tag_pattern "
                             f"(groups: {list(groups)})"))
    cases = value_parser.get("cases", {})
    if not isinstance(cases, dict):
        problems.append(("", f"value_parser 'cases' must be a dict of text -> parser spec, got "
                             f"{type(cases).__name__}"))
        cases = {}
    for case, spec in cases.items():
        if not isinstance(spec, dict):
            problems.append(("", f"value_parser case {case!r} must be a dict {{\"name\": parser, "
                                 "\"args\": {...}}"))
        else:
            problems += spec_problems(spec, f"value_parser.cases.{case}")
    default = value_parser.get("default")
    if default is not None:
        if not isinstance(default, dict):
            problems.append(("", "value_parser 'default' must be a dict {\"name\": parser, \"args\": {...}}"))
        else:
            problems += spec_problems(default, "value_parser.default")
    return problems


# --------------------------------------------------------------------------------------------
# Reading a tool-call field's transform at compile time.

#: a whole-string placeholder ``{root.path}`` (template-language.md "Transforms")
_PLACEHOLDER = regex.compile(r"\{([^{}]+)\}")
_FIRST = "$first"


@dataclass(frozen=True)
class CallShape:
    """Where a tool-call field's transform takes the call's name and arguments from (:func:`call_shape`).

    Attributes:
        name (tuple): ``("key", K)``: the body's key ``K`` (a call object); ``("group", G)``: the open
            delimiter's group ``G``; ``("fixed", N)``: the literal name ``N``; ``("$key",)``: the body's
            one key; None: none of these.
        arguments (tuple): ``("keys", (K, ...))``: the first present of the body's keys ``K``;
            ``("body",)``: the whole body; ``("$value",)``: the body's one value; ``("one", K)``: an
            object whose one argument ``K`` is the body; None: none of these.
        each (bool): the transform is applied to each element of a list body (``transform_each``).
    """

    name: tuple | None
    arguments: tuple | None
    each: bool


def _content_path(node: Any, each: bool) -> tuple[str, ...] | None:
    """The path a whole-string placeholder reads from the body: ``()`` for ``{content}``, ``("k",)`` for
    ``{content.k}`` (or ``{k}`` under ``transform_each``); None for anything else."""
    if not isinstance(node, str):
        return None
    m = _PLACEHOLDER.fullmatch(node)
    if m is None:
        return None
    path = tuple(m.group(1).split("."))
    if path[0] == "content":
        return path[1:]
    return path if each else None


def call_shape(field: Any) -> CallShape | None:
    """Read the call's name and arguments off a tool-call field's transform (no body is parsed).

    The call is the transform's ``function`` object (or the transform itself when it has no ``function``
    key); ``{"function": "{content}"}`` and no transform at all make the body the call object. The call
    must hold exactly ``name`` and ``arguments``.

    Args:
        field: a :class:`respc.compiler.ir.Field`.

    Returns:
        CallShape | None: None when the transform builds the call some other way.
    """
    each = bool(field.transform_each)
    groups = set(field.group_names)
    transform = field.transform
    if transform is None or (isinstance(transform, dict) and _content_path(transform.get("function"), False) == ()):
        if transform is not None and each:
            return None
        return CallShape(("key", "name"), ("keys", ("arguments",)), each)
    if not isinstance(transform, dict):
        return None
    call = transform.get("function", transform)
    if not isinstance(call, dict) or set(call) != {"name", "arguments"}:
        return None
    name_node, args_node = call["name"], call["arguments"]
    name: tuple | None = None
    path = _content_path(name_node, each)
    if path is not None and len(path) == 1:
        name = ("$key",) if path[0] == "$key" else ("key", path[0])
    elif isinstance(name_node, str):
        m = _PLACEHOLDER.fullmatch(name_node)
        if m is None:
            name = ("fixed", name_node)
        elif m.group(1) in groups:
            name = ("group", m.group(1))
    arguments: tuple | None = None
    path = _content_path(args_node, each)
    if path == ():
        arguments = ("body",)
    elif path is not None and len(path) == 1:
        arguments = ("$value",) if path[0] == "$value" else ("keys", (path[0],))
    elif isinstance(args_node, dict) and set(args_node) == {_FIRST} and isinstance(args_node[_FIRST], list):
        alternatives = list(args_node[_FIRST])
        if alternatives and alternatives[-1] == {}:
            alternatives.pop()
        keys = [_content_path(a, each) for a in alternatives]
        if keys and all(k is not None and len(k) == 1 and not k[0].startswith("$") for k in keys):
            arguments = ("keys", tuple(k[0] for k in keys))
    elif isinstance(args_node, dict) and len(args_node) == 1:
        (key, value), = args_node.items()
        if key != _FIRST and _content_path(value, False) == ():
            arguments = ("one", key)
    return CallShape(name, arguments, each)


def is_tool_field(field: Any) -> bool:
    """Whether the field's values are tool calls: ``role: "tool_calls"``, or (v1) its slot is ``tool_calls``."""
    return field.role == "tool_calls" or field.slot == "tool_calls"


def text_mode(field: Any, strips: bool) -> str | None:
    """``"strip"``/``"raw"`` when a field's value is its body as text (no transform, or ``"{content}"``),
    stripped or not; None otherwise."""
    if field.transform is not None and field.transform != "{content}":
        return None
    return "strip" if strips else "raw"


# --------------------------------------------------------------------------------------------
# The argument reader of bodies read whole and again as they grow (plan ``"per-parameter"``).

_MISSING = object()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


#: the json module's encoder of one string, as ``json.dumps(..., ensure_ascii=False)`` uses it
_encode_string = json.encoder.encode_basestring


#: a UTF-16 surrogate code point (U+D800 to U+DFFF), which no UTF-8 text can hold
_SURROGATE = re.compile("[\ud800-\udfff]")


def _surrogate_escape(match: "re.Match[str]") -> str:
    return "\\u%04x" % ord(match.group())


def surrogates_escaped(text: str) -> str:
    """Argument JSON text (or any JSON text) with every surrogate code point written as its JSON
    escape ``\\udXXXX``; nothing else changes.

    Args:
        text (str): JSON text, or a piece of it: a surrogate code point can only stand inside a
            JSON string of it, where the escape means the same code point (RFC 8259, section 7),
            so the map is per code point and pieces escaped one by one concatenate to the
            escaped whole.

    Returns:
        str: ``text`` itself when it holds no surrogate (ASCII text after a constant-time
        ``str.isascii`` test); otherwise the escaped copy. ``json.loads`` of it gives the value of
        ``json.loads(text)``; a high surrogate followed by a low one, left as two code points, reads
        back as the character they form (the same UTF-16 text).

    Why: ``json.dumps(..., ensure_ascii=False)`` of a value holding a lone surrogate (a model's
    ``"\\ud800"`` escape, a pythonic call's ``'\\ud800'``) writes it raw, and a server that sends the
    text as UTF-8 (pydantic's ``model_dump_json``, ``str.encode``) then raises (docs/openai.md,
    "What the chunks carry"; docs/security.md, "Red team s12b: argument text carries no surrogate").
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_surrogate_escape, text)


def escaped(text: str) -> str:
    """``text`` as the inside of a JSON string literal (pieces of one string concatenate): what
    ``json.dumps(text, ensure_ascii=False)`` writes between its quotes, by the json module's own string encoder
    (``json.dumps`` builds an encoder per call)."""
    return _encode_string(text)[1:-1]


def calls_of(value: Any) -> list:
    """The tool calls of one region value: a call dict, or a list of them (anything else: none)."""
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [call for call in value if isinstance(call, dict)]
    return []


def function_of(call: dict) -> dict:
    """The ``function`` object of an OpenAI-shaped call, or the call itself when it has none."""
    function = call.get("function")
    return function if isinstance(function, dict) else call


def open_scope(host: Any, region: Any) -> dict:
    """The open delimiter's groups of the region ``host.parser`` is in (None for each group that did not
    match), the ``captures`` a region's processor takes."""
    match = getattr(host.parser, "_groups", None)
    scope = dict.fromkeys(region.groups)
    if match is not None:
        scope.update(match.groupdict())
    return scope


class ArgumentStream:
    """How a tool region's arguments stream to the OpenAI adapter while the model writes them: the
    region's format decides it from the region's :class:`Plan` (``Format.stream(plan, args)``, docs/formats.md
    "Argument readers"), so the adapter (``respc/openai.py``) drives every argument reader the same way and
    never names a format or an argument mode.

    The adapter calls :meth:`open` at the region's ``region_open`` and feeds the reader each ``region_chunk``
    text (``reader.feed(text)``), :meth:`tick` after each ``feed`` while the region is open, and
    :meth:`close` at the region's close with the message's calls. ``host`` is the adapter's stream; what the
    readers may call on it (the *host interface*): ``parser``; ``cache`` (a dict for the stream's lifetime);
    ``call(n)`` (call ``n`` of the stream, with ``name``, ``done``, ``nsent``, ``args``, ``fwd``, made when
    new); ``ncalls()`` (how many calls the stream has); ``scanned(region, n, kind, payload)`` (a reader's ``out``: ``"call"``, ``"name"``, ``"start"``,
    ``"args"``, ``"end"``); ``send_name(call)``; ``send_piece(call, piece)`` (argument text, sent once the
    name is); ``send_args(call)``; ``held(name, key)`` and ``typed(name, key, raw)`` (tool-schema typing,
    docs/openai.md); ``coerce(name, key, value, region)`` (a parameter's value as the message holds it).

    Attributes:
        scan (tuple | None): ``("object", (name_key, arg_keys))`` or ``("args", name_group)``: the body is
            read by the json ``ArgumentReader`` (``runtime/formats/json_.py``) with no converter, so the
            streaming core may run that reader as the region's boundary decoder (``end: "value"``,
            docs/formats.md "One reader for the end and the arguments"); None for every other reader.
        name_group (str | None): the open delimiter's group that names the call, read by :meth:`tick`
            while the call has no name.
        ticks (bool): :meth:`tick` may do something; False: the adapter never calls it.
    """

    scan: tuple | None = None
    name_group: str | None = None
    #: :meth:`tick` may do something (False: the adapter skips it, a cost per chunk saved)
    ticks: bool = True

    def open(self, host: Any, region: Any, base: int) -> Any:
        """A new reader for one region whose first call is the stream's call ``base``."""
        raise NotImplementedError

    def tick(self, reader: Any, host: Any, base: int, region: Any) -> None:
        """After a ``feed`` with the region still open: the call's name from the open delimiter's
        :attr:`name_group`, once."""
        group = self.name_group
        if group is None:
            return
        match = getattr(host.parser, "_groups", None)
        if match is None:
            return
        call = host.call(base)
        if call.name is None:
            try:
                name = match.group(group)
            except (IndexError, AttributeError):
                return
            if isinstance(name, str) and name:
                call.name = name
                host.send_name(call)

    def close(self, reader: Any, host: Any, base: int, calls: list) -> None:
        """At the region's close, with ``calls`` the message's calls of the region: send what the
        reader holds back (the adapter then checks every call against the message)."""


class ReparseStream(ArgumentStream):
    """Plan ``"per-parameter"`` (:class:`PerParameterReader`): the body so far is read again with the
    region's lenient processor (``Region.process.partial``) each time it grew by an eighth."""

    def open(self, host: Any, region: Any, base: int) -> "PerParameterReader":
        return PerParameterReader()

    def tick(self, reader: "PerParameterReader", host: Any, base: int, region: Any) -> None:
        """Parse the open region's body so far; send its header, name and settled parameters."""
        if not reader.due():
            return
        from ..tools import coerce_tool_calls

        body = reader.body()
        try:
            value = getattr(region.process, "partial", region.process)(body, open_scope(host, region))  # still open
            tools = getattr(host.parser, "_tools", None)
            if tools is not None and region.typed:
                value = coerce_tool_calls(value, tools)
        except Exception:  # noqa: BLE001 - not readable yet: the close decides
            return
        calls = calls_of(value)
        if len(calls) != 1:
            return
        function = function_of(calls[0])
        name, arguments = function.get("name"), function.get("arguments")
        if not isinstance(name, str) or not name or not isinstance(arguments, dict):
            return
        call = host.call(base)
        if call.name is None:
            call.name = name
            host.send_name(call)
        piece = reader.settle(arguments)
        if piece:
            host.send_piece(call, piece)

    def close(self, reader: "PerParameterReader", host: Any, base: int, calls: list) -> None:
        if reader.sent and len(calls) == 1 and base < host.ncalls():
            rest = reader.finish(function_of(calls[0]).get("arguments"))
            if rest is not None:  # (None: reported by the adapter's check)
                call = host.call(base)
                call.fwd.append(rest)
                call.done = True
                host.send_args(call)


#: the one :class:`ReparseStream` (it holds nothing)
REPARSE = ReparseStream()


class PerParameterReader:
    """A tool body streamed parameter by parameter (plan ``"per-parameter"``: xml-inline bodies the
    ``xml-parameters`` reader cannot take, kv-lines): the caller parses the body so far again with the
    format's lenient parser when it has grown by an eighth (:meth:`due`, :meth:`body`) and hands the
    arguments read to :meth:`settle`; every parameter but the last one found (which may still grow) is
    sent, typed (docs/formats.md, "Argument readers").

    Attributes:
        sent (list[tuple]): the ``(key, value)`` pairs sent, in order.
        dead (bool): a parameter sent changed (a repeated key): the close check reports the difference.
    """

    __slots__ = ("mode", "parts", "size", "last", "sent", "dead")

    def __init__(self) -> None:
        self.mode = "reparse"
        self.parts: list[str] = []
        self.size = 0
        self.last = 0
        self.sent: list[tuple] = []
        self.dead = False

    def feed(self, text: str) -> None:
        """Take the next piece of the body."""
        self.parts.append(text)
        self.size += len(text)

    def due(self) -> bool:
        """Whether the body grew enough since it was last read (by an eighth, at least 16 characters):
        reading it again each time it grows by a fixed fraction keeps the cost linear."""
        return not self.dead and self.size - self.last >= max(16, self.last // 8)

    def body(self) -> str:
        """The body so far (to be read now)."""
        self.last = self.size
        body = "".join(self.parts)
        self.parts = [body]
        return body

    def settle(self, arguments: dict) -> str:
        """The JSON text of the parameters of ``arguments`` (the body so far, read) now settled: all but
        the last; ``""`` when none is new."""
        settled = list(arguments.items())[:-1]
        if settled[:len(self.sent)] != self.sent:
            self.dead = True
            return ""
        pieces = []
        for key, item in settled[len(self.sent):]:
            pieces.append(("{" if not self.sent else ", ") + _dumps(key) + ": " + _dumps(item))
            self.sent.append((key, item))
        return "".join(pieces)

    def finish(self, arguments: Any) -> str | None:
        """At the close, with ``arguments`` the message's: the parameters not sent yet and the closing
        brace; None when ``arguments`` is no dict or differs from what was sent."""
        if not isinstance(arguments, dict) or any(arguments.get(k, _MISSING) != v for k, v in self.sent):
            return None
        sent = dict(self.sent)
        return "".join(", " + _dumps(k) + ": " + _dumps(v) for k, v in arguments.items() if k not in sent) + "}"


# --------------------------------------------------------------------------------------------
# Boundary readers: where a self-delimiting value ends (template v2, ``end: "value"``; the core's
# ``Format.reader``). The json and pythonic formats' own are in their modules.
#
# Incremental boundary decoders: where a self-delimiting region body ends (template v2, ``end: "value"``).
#
# Theory of operation
# -------------------
# A region whose field says ``"end": "value"`` has no closing delimiter of its own: it ends where its
# content parser's value ends (``{"name": "f"} Anything else?`` ends after the ``}``). The streaming
# core feeds such a body, chunk by chunk, to one :class:`Boundary` per open region. The decoder keeps
# only the little state needed to find the end -- bracket depth, whether it is inside a string, an
# escape in flight, a few held characters of a delimiter split across chunks -- and never builds the
# value: the whole-body parser of :mod:`respc.runtime.content` does that once the region closes.
#
# Every decoder is a character-level state machine whose only lookahead is held in ``_carry``, so
# the result never depends on the chunking: fed ``"ab"`` or ``"a"``, ``"b"`` it reaches the same
# state, and the end offset found is the same on every chunking (``tests/test_decoders.py`` checks
# this with hypothesis). The text is skimmed with precompiled regex searches, so the cost is linear
# in the body length.
#
# Status (one of :data:`UNDECIDED`, :data:`ACCEPTED`, :data:`REJECTED`) starts at ``UNDECIDED`` while
# only whitespace was seen and changes once, at the first significant character(s): ``REJECTED``
# means the body cannot start a value of this format, so the opener was not an opener (the core's
# ``reject`` rule). A decoder never rejects after it accepted; an invalid body that was accepted
# is reported by the whole-body parser when the region closes.
#
# Decoders only find ends; they do not validate. For a well-formed value the end is exactly where the
# whole-body reader stops (``json.JSONDecoder.raw_decode`` after the dialect rewrite,
# :func:`respc.runtime.pythonic.read_pythonic`).

#: Only whitespace seen so far.
UNDECIDED = 0
#: The body starts a value of this format; the decoder now looks for its end.
ACCEPTED = 1
#: The body cannot start a value of this format (its first significant characters say so).
REJECTED = 2


class Boundary:
    """Finds where a self-delimiting value ends, fed the region body piece by piece.

    Attributes:
        status (int): :data:`UNDECIDED`, :data:`ACCEPTED` or :data:`REJECTED`.
    """

    status: int = UNDECIDED

    def feed(self, text: str) -> int:
        """Consume the next piece of the region's body.

        Args:
            text (str): the next chunk (any length, ``""`` included).

        Returns:
            int: ``-1`` while the value goes on (or while UNDECIDED/REJECTED); else the offset in
            ``text`` just past the value's last character. After a non-negative answer the value
            ended and the decoder must not be fed again.

        Raises:
            ParserStateError: fed again after the value ended.
        """
        if self._state == "done":
            raise ParserStateError(f"{type(self).__name__} fed again after its value ended")
        if self._state == "rejected":
            return -1
        data = self._carry + text
        base = len(self._carry)
        self._carry = ""
        end = self._scan(data)
        return end - base if end >= 0 else -1

    _state = "start"
    _carry = ""  # held lookahead: text that may still become a delimiter, scanned again next time

    def _scan(self, data: str) -> int:
        """Advance over ``data`` (held text + new chunk); the end offset in ``data``, or -1."""
        raise NotImplementedError

    def _reject(self) -> int:
        self.status = REJECTED
        self._state = "rejected"
        return -1

