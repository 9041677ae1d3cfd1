"""Transforms: reshape a parsed region value into the output shape (template-language.md "Transforms").

Theory of operation
-------------------
A transform is a JSON value. Every string in it that is exactly ``{name}`` or ``{name.key.key}``
is a *placeholder*: it is replaced by the value looked up in the scope, type preserved (a dict
stays a dict, an int an int). Every other string is a literal. A string that mixes a placeholder
with other text is rejected when the template is compiled (:func:`placeholder_errors`).

The scope of one region close is (template-language.md "Transforms", deviations D4 and D5):

* ``content``: the value the content parser produced;
* every named group of the open *and* close delimiter matches (D4), the caller merging both;
* every declared group name that did not take part in the match, as ``None`` (D5).

With ``transform_each`` the parsed value must be a list of dicts and the transform is applied
once per element, with the element's keys (instead of ``content``) on top of the groups.

Version 2 templates (``v2=True`` everywhere below) add two forms, both literals in v1:

* ``{"$first": [A, B, ..., DEFAULT]}``: the first alternative whose placeholders all resolve
  (the root and every key present, the value not ``None``, ``$key``/``$value`` on a one-key
  dict); a literal always resolves, so the last one usually is the default;
* a placeholder segment ``.$key`` / ``.$value``: the only key / value of a one-key dict
  (Apertus writes ``[{"get_weather": {"city": "Paris"}}]``: with ``transform_each``,
  ``{"name": "{content.$key}", "arguments": "{content.$value}"}``).

With ``transform_each`` a v2 scope also binds ``content`` to the element itself (after the
element's keys, so an element key named ``content`` is reached as ``{content.content}``): in v2
``{content}`` always names the value being transformed. v1 scopes are unchanged.

Failures are :class:`~respc.runtime.errors.PlaceholderError` (a ``ContentParseError``), and an
unknown root name is :class:`~respc.runtime.errors.UnknownPlaceholderError`, also a ``KeyError``
as in the reference.

A transform is compiled once into a tree of small closures (:func:`compile_transform`), so a
region close only walks the placeholders and builds fresh containers: the result never aliases
the template. Substituted values are the scope's own objects (not copies), as in the reference.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import regex

from .content import make_content_parser
from .errors import ContentParseError, PlaceholderError, UnknownPlaceholderError
from .repair import NOTES

__all__ = [
    "PLACEHOLDER",
    "PLACEHOLDER_V2",
    "placeholder_errors",
    "transform_errors",
    "placeholder_roots",
    "compile_transform",
    "apply_transform",
    "make_field_processor",
]

#: A placeholder: ``{name}`` or ``{name.key.key}``; a string is one only when it fully matches.
PLACEHOLDER: regex.Pattern = regex.compile(r"\{(\w+(?:\.\w+)*)\}")
#: The same in a ``"version": 2`` template: a segment may also be ``$key`` or ``$value``.
PLACEHOLDER_V2: regex.Pattern = regex.compile(r"\{(\w+(?:\.(?:\w+|\$key|\$value))*)\}")
#: A string a v2 template author meant as a placeholder (checked by :func:`transform_errors`).
_LOOKS_LIKE_PLACEHOLDER: regex.Pattern = regex.compile(r"\{[\w.$]+\}")
#: The v2 transform operator: ``{"$first": [A, B, ..., DEFAULT]}``.
FIRST = "$first"
#: The v2 placeholder segments that read a one-key dict: its key, its value.
ONE_KEY_SEGMENTS = ("$key", "$value")

Builder = Callable[[dict], Any]


def _strings(transform: Any):
    """Yield every string value of a transform, depth first, in declaration order.

    Dict keys are not placeholders (they are never substituted), so only values are walked.
    """
    stack = [transform]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))


def _placeholder_pattern(v2: bool) -> regex.Pattern:
    return PLACEHOLDER_V2 if v2 else PLACEHOLDER


def placeholder_errors(transform: Any, *, v2: bool = False) -> list[str]:
    """Find the strings of a transform that mix a placeholder with literal text (template-language.md "Load-time
    checks", "Transforms").

    Args:
        transform (Any): a transform value (dict / list / str / scalar), walked recursively.
        v2 (bool): read placeholders as a ``"version": 2`` template does (``.$key`` / ``.$value``
            segments are part of a placeholder).

    Returns:
        list[str]: ``repr`` of each offending string, in walk order (duplicates kept). Empty when
        the transform is valid. The compiler turns each into a ``TemplateError``.
    """
    pattern = _placeholder_pattern(v2)
    return [
        repr(s) for s in _strings(transform)
        if pattern.search(s) is not None and pattern.fullmatch(s) is None
    ]


def placeholder_roots(transform: Any, *, v2: bool = False) -> list[str]:
    """List the root names the placeholders of a transform use (template-language.md "Transforms").

    Args:
        transform (Any): a transform value, walked recursively (in v2 the alternatives of every
            ``$first`` included).
        v2 (bool): as for :func:`placeholder_errors`.

    Returns:
        list[str]: each distinct root name (``content`` for ``{content.args}``), in first-seen
        order. Strings that are not whole placeholders contribute nothing.
    """
    pattern = _placeholder_pattern(v2)
    roots: dict[str, None] = {}
    for s in _strings(transform):
        m = pattern.fullmatch(s)
        if m is not None:
            roots.setdefault(m.group(1).split(".", 1)[0], None)
    return list(roots)


def transform_errors(transform: Any, *, v2: bool = False) -> list[str]:
    """Find the structural problems of a transform that are not about mixed strings (template-language.md
    "Transforms", v2).

    A v1 transform has none: every dict is a literal dict and every string that is not a whole
    ``{name.key}`` placeholder is a literal. In a v2 transform:

    * a dict key starting with ``$`` is an operator; ``$first`` is the only one, it must be the
      only key of its dict and its value a non-empty list of alternatives;
    * a string that looks like a placeholder (``{`` + names, dots and ``$`` + ``}``) must be a
      valid one: a root name, then ``.key``, ``.$key`` or ``.$value`` segments (``{content.$kye}``
      and ``{$key}`` are errors, not literals);
    * nothing may follow ``.$key``: the key is a string, which cannot be indexed.

    Args:
        transform (Any): a transform value, walked recursively.
        v2 (bool): check the v2 rules above (``False``: always ``[]``).

    Returns:
        list[str]: one sentence per problem, in walk order. The compiler turns the first into a
        ``TemplateError`` on the field's ``transform`` key.
    """
    if not v2:
        return []
    problems: list[str] = []
    stack = [transform]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ops = [key for key in node if isinstance(key, str) and key.startswith("$")]
            for op in ops:
                if op != FIRST:
                    problems.append(f"unknown transform operator {op!r} (the only one is '$first'; "
                                    "in a version 2 template a dict key starting with '$' is an operator)")
            if FIRST in node:
                if len(node) != 1:
                    problems.append(f"'$first' must be the only key of its dict, found {sorted(node, key=str)}")
                alternatives = node[FIRST]
                if not isinstance(alternatives, list) or not alternatives:
                    problems.append("'$first' needs a non-empty list of alternatives "
                                    "(e.g. [\"{content.parameters}\", \"{content.arguments}\", {}]), got "
                                    f"{alternatives!r}")
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, str):
            m = PLACEHOLDER_V2.fullmatch(node)
            if m is None:
                if _LOOKS_LIKE_PLACEHOLDER.fullmatch(node):
                    problems.append(f"{node!r} is not a valid placeholder: a name, then '.key', '.$key' or "
                                    "'.$value' segments, e.g. \"{content.$value}\"")
            elif "$key." in m.group(1):
                problems.append(f"{node!r}: nothing can follow '$key' (the key is a string)")
    return problems


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return f"a dict with {len(value)} keys {sorted(value, key=str)}"
    return type(value).__name__


def _lookup(path: str, strict: bool) -> Builder:
    """The builder of one placeholder; ``strict`` (inside a ``$first`` alternative): None fails too."""
    root, *keys = path.split(".")
    plain = not any(key.startswith("$") for key in keys)

    def lookup(scope: dict) -> Any:
        try:
            value = scope[root]
        except KeyError:
            raise UnknownPlaceholderError(
                f"transform placeholder '{{{path}}}' is not defined. "
                f"Available: {sorted(scope, key=str)}"
            ) from None
        for key in keys:
            if not plain and key in ONE_KEY_SEGMENTS:
                if not isinstance(value, dict) or len(value) != 1:
                    raise PlaceholderError(
                        f"transform placeholder '{{{path}}}': '{key}' needs a dict with exactly one key, "
                        f"got {_describe(value)}"
                    )
                ((only_key, only_value),) = value.items()
                value = only_key if key == "$key" else only_value
                continue
            if not isinstance(value, dict):
                raise PlaceholderError(
                    f"transform placeholder '{{{path}}}' cannot index into "
                    f"{type(value).__name__} at '{key}'"
                )
            if key not in value:
                raise PlaceholderError(
                    f"transform placeholder '{{{path}}}' is missing key '{key}'. "
                    f"Available: {sorted(value, key=str)}"
                )
            value = value[key]
        if strict and value is None:
            raise PlaceholderError(f"transform placeholder '{{{path}}}' is null")
        return value

    return lookup


def _first(alternatives: list, v2: bool) -> Builder:
    """``{"$first": [A, B, ..., DEFAULT]}``: the first alternative whose placeholders all resolve."""
    builds = [_compile(alternative, v2, True) for alternative in alternatives]

    def first(scope: dict) -> Any:
        reasons = []
        for build in builds:
            try:
                return build(scope)
            except PlaceholderError as exc:
                reasons.append(str(exc))
        raise PlaceholderError("no alternative of '$first' resolved: " + "; ".join(reasons))

    return first


def _compile(transform: Any, v2: bool, strict: bool) -> Builder:
    if isinstance(transform, dict):
        if v2 and FIRST in transform:
            return _first(transform[FIRST], v2)
        items = [(k, _compile(v, v2, strict)) for k, v in transform.items()]
        return lambda scope: {k: build(scope) for k, build in items}
    if isinstance(transform, list):
        parts = [_compile(v, v2, strict) for v in transform]
        return lambda scope: [build(scope) for build in parts]
    if isinstance(transform, str):
        m = _placeholder_pattern(v2).fullmatch(transform)
        if m is not None:
            return _lookup(m.group(1), strict)
    return lambda scope: transform


def compile_transform(transform: Any, *, v2: bool = False) -> Callable[[dict], Any]:
    """Compile a transform into a function of the scope (template-language.md "Transforms").

    Args:
        transform (Any): the transform value from the template. It is read now; later changes
            to it are not seen. Assumed valid (:func:`placeholder_errors`, :func:`transform_errors`).
        v2 (bool): the template has ``"version": 2``: ``{"$first": [...]}`` and ``.$key`` /
            ``.$value`` segments have their v2 meaning (in v1 they are literals).

    Returns:
        Callable[[dict], Any]: ``build(scope) -> value``, with the semantics of
        :func:`apply_transform`; every dict and list in the result is freshly built.
    """
    return _compile(transform, v2, False)


def apply_transform(transform: Any, scope: dict, *, v2: bool = False) -> Any:
    """Substitute every whole-string placeholder of a transform (template-language.md "Transforms").

    Args:
        transform (Any): dict / list / str / scalar; dicts and lists are walked (values only).
        scope (dict): name -> value. A dotted placeholder ``{a.b.c}`` looks up ``scope["a"]``
            and then indexes dicts by ``b`` and ``c``.
        v2 (bool): v2 transforms: ``{"$first": [A, B, ..., DEFAULT]}`` is the first alternative
            whose placeholders all resolve (present and not None; a literal always resolves), and
            the segment ``.$key`` / ``.$value`` is the only key / value of a one-key dict.

    Returns:
        Any: the transform with placeholders replaced by their values (type preserved, the
        scope's objects themselves) and every dict/list rebuilt, so nothing aliases the template.

    Raises:
        UnknownPlaceholderError: (a ``KeyError`` and a ``PlaceholderError``) a placeholder's root
            name is not in the scope.
        PlaceholderError: (a ``ContentParseError``, hence ``ValueError``) a dotted key is missing,
            the path indexes into a value that is not a dict, ``$key``/``$value`` meets anything but
            a one-key dict, or no alternative of a ``$first`` resolved.
    """
    return compile_transform(transform, v2=v2)(scope)


def make_field_processor(
    field: str,
    content: str,
    content_args: dict | None = None,
    transform: Any | None = None,
    transform_each: bool = False,
    group_names: tuple[str, ...] = (),
    *,
    v2: bool = False,
) -> Callable[[str, dict], Any]:
    """Build the close-time processing of one field: content parser, then transform (template-language.md "Closing a
    region and storing its value").

    Tool-argument typing (template-language.md "Tool-argument typing") is not part of it; the generated parser
    applies it afterwards when tools were given.

    Args:
        field (str): the field name, used in error messages.
        content (str): the content parser name (template-language.md "Content parsers").
        content_args (dict | None): its arguments (None: none, ``{}``). A generated module passes
            every argument by keyword and leaves out those at their default
            (README.md "Layout").
        transform (Any | None): the transform, or ``None`` for none.
        transform_each (bool): apply the transform to each element of a list of dicts.
        group_names (tuple[str, ...]): every named group declared by the field's open and close
            patterns; those missing from (or ``None`` in) the captures are ``None`` in the scope
            (deviation D5).
        v2 (bool): the template has ``"version": 2`` (v2 transforms, see :func:`apply_transform`).

    Returns:
        Callable[[str, dict], Any]: ``process(body, captures) -> value`` where ``captures`` is
        the merged ``groupdict()`` of the open and close matches (deviation D4; may be empty).
        Its attribute ``regrouped(names)`` makes the same processor with ``group_names`` ``names``
        (``runtime.regrouped``). Its attributes ``content_parser`` and ``content_args`` are ``content`` and
        ``content_args`` (read by ``respc.openai``), ``repair`` is the ``errors="recover"`` form,
        ``partial`` reads a body still being written with the format's ``lenient`` arguments
        (``runtime/formats``: ``xml-inline`` and ``kv-lines`` read it with ``"unmatched": "skip"``,
        so its cut-off last tag or line is not an error; D7).

    Raises:
        ContentParseError: (from ``process``) the body does not parse, or ``transform_each``
            meets a non-list or a non-dict element. The message starts with the field name.
        PlaceholderError: (from ``process``; a ``ContentParseError``) a placeholder cannot be
            filled; :class:`UnknownPlaceholderError` (also a ``KeyError``) when its root name is
            not in the scope. The message starts with the field name.
    """
    # The content parser (and its errors="recover" repair) is built on first use: an import builds
    # every field's processor, and some parsers compile a regex then (xml-inline's tag_pattern:
    # 0.5 ms on dots), while a parse closes few of the fields. The arguments are read
    # as they are now (a copy), as make_content_parser would.
    if content_args is None:
        content_args = {}
    args = copy.deepcopy(content_args)
    parse: Callable[[str], Any] | None = None
    prefix = f"Field {field!r}: "

    def parse_body(body: str) -> Any:
        nonlocal parse
        if parse is None:
            parse = make_content_parser(content, args)
        try:
            return parse(body)
        except ContentParseError as exc:
            raise type(exc)(prefix + str(exc)) from exc

    finish = _finisher(field, transform, transform_each, group_names, v2)
    direct = None if transform is None else _direct(transform, frozenset(group_names), v2, transform_each)

    # (the two common cases read the body as parse_body does, written out: one call less per
    # region closed)
    if transform is None:
        def process(body: str, captures: dict) -> Any:
            nonlocal parse
            if parse is None:
                parse = make_content_parser(content, args)
            try:
                return parse(body)
            except ContentParseError as exc:
                raise type(exc)(prefix + str(exc)) from exc
    elif direct is not None:
        def process(body: str, captures: dict) -> Any:
            nonlocal parse
            if parse is None:
                parse = make_content_parser(content, args)
            try:
                value = parse(body)
            except ContentParseError as exc:
                raise type(exc)(prefix + str(exc)) from exc
            try:
                return direct(value, captures)
            except _Miss:
                return finish(value, captures, body)
    else:
        def process(body: str, captures: dict) -> Any:
            return finish(parse_body(body), captures, body)

    from .formats import FORMATS

    record = FORMATS.get(content)
    repairs = record is not None and record.repair is not None
    fix: Callable[[str], Any] | None = None

    def repair(body: str, captures: dict, parsed: bool = False) -> tuple[Any, list[str]] | None:
        """errors="recover" (runtime/repair.py): ``(value, notes)`` of a repaired body, or None
        when nothing could be repaired; ``parsed``: the strict parse succeeded (only parsers whose
        record says ``repair_on_success`` are asked then). Raises as ``process`` does."""
        nonlocal fix
        if fix is None and repairs:
            fix = record.repair(args)
        got = fix(body) if fix is not None else None
        if got is None:
            if parsed:
                return None
            value, notes = parse_body(body), []
        else:
            value, notes = got[0], list(got[1])
        if transform_each and transform is not None and isinstance(value, dict):
            value = [value]
            notes.append(NOTES["one-object"])
        value = finish(value, captures, body)
        return (value, notes) if notes else None

    process.repair = repair
    process.partial = process
    lenient = record.lenient(args) if record is not None and record.lenient is not None else None
    if lenient is not None:
        # a body still being written ends in a cut-off tag or line, text no match accounts for
        # yet (D7): respc.openai reads such a body leniently (the format's ``lenient`` arguments)
        lenient_parse: Callable[[str], Any] | None = None

        def partial(body: str, captures: dict) -> Any:
            nonlocal lenient_parse
            if lenient_parse is None:
                lenient_parse = make_content_parser(content, lenient)
            try:
                value = lenient_parse(body)
            except ContentParseError as exc:
                raise type(exc)(prefix + str(exc)) from exc
            return value if transform is None else finish(value, captures, body)

        process.partial = partial
    # read by respc.openai to stream xml-inline parameters as they are written
    # (docs/openai.md "Which formats stream arguments as they are written")
    process.content_parser = content
    process.content_args = content_args
    process.repair_on_success = bool(repairs and record.repair_on_success)
    # runtime.regrouped: the same processor for other named groups (a recover class's region)
    process.regrouped = lambda names: make_field_processor(field, content, content_args, transform, transform_each,
                                                           names, v2=v2)
    return process


class _Miss(Exception):
    """A direct builder (:func:`_direct`) met a case it leaves to the general one."""


_MISS = _Miss()
_IMMUTABLE = (str, int, float, bool, type(None))


def _direct(transform: Any, group_names: frozenset, v2: bool, each: bool = False) -> Callable[[Any, dict], Any] | None:
    """A faster ``finish`` for a transform without ``$first`` or ``$key``/``$value`` segments
    (a tool call's ``{"type": "function", "function": {"name": "{name}", "arguments":
    "{content}"}}`` is built at every region close): ``direct(value, captures) -> result``, the
    result :func:`_finisher`'s ``finish`` gives (``each``: ``finish_each``), built without a scope
    dict.

    A placeholder root is looked up where that scope would have it (template-language.md "Transforms", D4, D5):
    ``content`` is ``value``; a declared group name is ``captures.get(name)`` (None when it did not take part); any
    other root is ``captures[root]``. With ``each`` the scope of one element is the captures, then the element's
    keys, then (v2) ``content`` bound to the element. A path that meets anything but a dict with the key, an unknown
    root, a value that is not a list of dicts (``each``) raise :class:`_Miss`: the caller then runs the general
    ``finish``, which gives the same result or raises its own error. Returns None for a transform it does not cover.
    Literals are immutable scalars here, so nothing aliases the template; dicts and lists are built fresh.
    """
    pattern = _placeholder_pattern(v2)

    def node(t: Any) -> tuple[int, Any] | None:
        # (0, literal) | (1, None): the value itself | (2, builder(value, captures))
        if isinstance(t, str):
            m = pattern.fullmatch(t)
            if m is None:
                return 0, t
            root, *keys = m.group(1).split(".")
            if any(key.startswith("$") for key in keys):
                return None
            if root == "content" and not keys and (v2 or not each):
                return 1, None
            return 2, _direct_lookup(root, tuple(keys), root in group_names, each, v2)
        if isinstance(t, dict):
            if v2 and FIRST in t:
                return _direct_first(t, pattern, node) if not each and len(t) == 1 else None
            parts = [(k, node(v)) for k, v in t.items()]
            if any(part is None for _, part in parts):
                return None
            return 2, _direct_dict(parts)
        if isinstance(t, list):
            parts = [node(v) for v in t]
            if any(part is None for part in parts):
                return None
            return 2, _direct_list(parts)
        if isinstance(t, _IMMUTABLE):
            return 0, t
        return None

    top = node(transform)
    if top is None:
        return None
    kind, arg = top
    if kind == 0:
        build = lambda value, captures: arg  # noqa: E731
    elif kind == 1:
        build = lambda value, captures: value  # noqa: E731
    else:
        build = arg
    if not each:
        return build

    def build_each(value: Any, captures: dict) -> list:
        if value.__class__ is not list:
            raise _MISS
        out = []
        for item in value:
            if item.__class__ is not dict:
                raise _MISS
            out.append(build(item, captures))
        return out

    return build_each


def _holds_placeholder(t: Any, pattern: Any) -> bool:
    """Whether a transform value holds a placeholder string or an operator dict anywhere."""
    if isinstance(t, str):
        return pattern.fullmatch(t) is not None
    if isinstance(t, dict):
        return any(k.startswith("$") for k in t if isinstance(k, str)) or any(
            _holds_placeholder(v, pattern) for v in t.values())
    if isinstance(t, list):
        return any(_holds_placeholder(v, pattern) for v in t)
    return False


def _direct_first(t: dict, pattern: Any, node: Callable) -> tuple[int, Any] | None:
    """The direct builder of ``{"$first": [A, B, ..., DEFAULT]}`` (see :func:`_direct`) when
    every alternative is a placeholder on ``content`` without ``$key``/``$value`` segments or a
    literal without placeholders (json tool calls' ``{"$first": ["{content.parameters}",
    "{content.arguments}", {}]}``, built at every call); None otherwise.

    As :func:`_first` decides: the first alternative whose path resolves (every key present in a
    dict, the value not None) gives the value; a literal always resolves and is built fresh. A
    value on the path that is a dict subclass, or no alternative resolving, raises
    :class:`_Miss` (the general ``finish`` then decides)."""
    alternatives = t[FIRST]
    if not isinstance(alternatives, list) or not alternatives:
        return None
    steps: list[tuple[int, Any]] = []
    for alternative in alternatives:
        if isinstance(alternative, str):
            m = pattern.fullmatch(alternative)
            if m is None:
                steps.append((0, alternative))
                continue
            root, *keys = m.group(1).split(".")
            if root != "content" or any(key.startswith("$") for key in keys):
                return None
            steps.append((1, tuple(keys)))
        elif isinstance(alternative, (dict, list)) and not _holds_placeholder(alternative, pattern):
            built = node(alternative)
            if built is None:
                return None
            steps.append(built if built[0] != 1 else (0, None))
        elif isinstance(alternative, _IMMUTABLE):
            steps.append((0, alternative))
        else:
            return None
    steps_t = tuple(steps)

    def first(value: Any, captures: dict) -> Any:
        for kind, arg in steps_t:
            if kind == 0:
                return arg
            if kind == 2:
                return arg(value, captures)
            got = value
            for key in arg:
                if got.__class__ is not dict:
                    if isinstance(got, dict):
                        raise _MISS
                    break
                if key not in got:
                    break
                got = got[key]
            else:
                if got is not None:
                    return got
        raise _MISS

    return 2, first


def _direct_lookup(root: str, keys: tuple[str, ...], declared: bool, each: bool,
                   v2: bool) -> Callable[[Any, dict], Any]:
    """The direct builder of one placeholder ``{root.key...}`` (see :func:`_direct`); with
    ``each`` its ``value`` is the element."""
    if each:
        bound = v2 and root == "content"

        def start(item: dict, captures: dict) -> Any:
            if bound:
                return item
            if root in item:
                return item[root]
            if root in captures:
                return captures[root]
            if declared:
                return None
            raise _MISS
    elif root == "content":
        start = None
    elif declared:
        def start(value: Any, captures: dict) -> Any:
            return captures.get(root)
    else:
        def start(value: Any, captures: dict) -> Any:
            if root in captures:
                return captures[root]
            raise _MISS

    if not keys:
        return start
    if start is None and len(keys) == 1:
        (only,) = keys

        def lookup_one(value: Any, captures: dict) -> Any:
            if value.__class__ is not dict or only not in value:
                raise _MISS
            return value[only]

        return lookup_one

    def lookup(value: Any, captures: dict) -> Any:
        if start is not None:
            value = start(value, captures)
        for key in keys:
            if value.__class__ is not dict or key not in value:
                raise _MISS
            value = value[key]
        return value

    return lookup


def _direct_dict(parts: list) -> Callable[[Any, dict], Any]:
    """The direct builder of a dict: the literals copied from one prepared dict (key order kept),
    the rest filled in (None: the value itself)."""
    prepared = {k: (arg if kind == 0 else None) for k, (kind, arg) in parts}
    holes = tuple((k, arg) for k, (kind, arg) in parts if kind != 0)
    if len(holes) == 1 and holes[0][1] is None:
        ((only, _),) = holes

        def one_value(value: Any, captures: dict) -> dict:
            out = prepared.copy()
            out[only] = value
            return out

        return one_value

    def build(value: Any, captures: dict) -> dict:
        out = prepared.copy()
        for k, part in holes:
            out[k] = value if part is None else part(value, captures)
        return out

    return build


def _direct_list(parts: list) -> Callable[[Any, dict], Any]:
    """The direct builder of a list (see :func:`_direct`)."""
    steps = tuple(parts)

    def build(value: Any, captures: dict) -> list:
        return [arg if kind == 0 else value if kind == 1 else arg(value, captures) for kind, arg in steps]

    return build


def _finisher(field: str, transform: Any, transform_each: bool, group_names: tuple[str, ...],
              v2: bool) -> Callable[[Any, dict, str], Any]:
    """``finish(value, captures, body)``: the transform part of :func:`make_field_processor`."""
    prefix = f"Field {field!r}: "
    if transform is None:
        return lambda value, captures, body: value

    build = compile_transform(transform, v2=v2)
    defaults = dict.fromkeys(group_names)

    def scope_of(captures: dict) -> dict:
        scope = dict(defaults)
        scope.update(captures)
        return scope

    def built(scope: dict) -> Any:
        try:
            return build(scope)
        except ContentParseError as exc:
            # keep the class: a PlaceholderError stays one (and an unknown root stays a KeyError)
            raise type(exc)(prefix + str(exc)) from exc

    if not transform_each:
        def finish(value: Any, captures: dict, body: str) -> Any:
            scope = scope_of(captures)
            scope["content"] = value
            return built(scope)

        return finish

    def finish_each(value: Any, captures: dict, body: str) -> Any:
        if not isinstance(value, list):
            raise ContentParseError(
                f"{prefix}transform_each requires the parsed content to be a list, "
                f"got {type(value).__name__}.\nContent: {body!r}"
            )
        base = scope_of(captures)
        out = []
        for item in value:
            if not isinstance(item, dict):
                raise ContentParseError(
                    f"{prefix}transform_each requires each list element to be a dict, "
                    f"got {type(item).__name__}.\nContent: {body!r}"
                )
            scope = dict(base)
            scope.update(item)
            if v2:
                scope["content"] = item
            out.append(built(scope))
        return out

    return finish_each
