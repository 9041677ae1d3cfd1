"""Transforms: reshape a parsed region value into the output shape (SPEC section 6).

Theory of operation
-------------------
A transform is a JSON value. Every string in it that is exactly ``{name}`` or ``{name.key.key}``
is a *placeholder*: it is replaced by the value looked up in the scope, type preserved (a dict
stays a dict, an int an int). Every other string is a literal. A string that mixes a placeholder
with other text is rejected when the template is compiled (:func:`placeholder_errors`).

The scope of one region close is (SPEC 6, deviations D4 and D5):

* ``content``: the value the content parser produced;
* every named group of the open *and* close delimiter matches (D4), the caller merging both;
* every declared group name that did not take part in the match, as ``None`` (D5).

With ``transform_each`` the parsed value must be a list of dicts and the transform is applied
once per element, with the element's keys (instead of ``content``) on top of the groups.

A transform is compiled once into a tree of small closures (:func:`compile_transform`), so a
region close only walks the placeholders and builds fresh containers: the result never aliases
the template. Substituted values are the scope's own objects (not copies), as in the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import regex

from .content import make_content_parser
from .errors import ContentParseError

__all__ = [
    "PLACEHOLDER",
    "placeholder_errors",
    "placeholder_roots",
    "compile_transform",
    "apply_transform",
    "make_field_processor",
]

#: A placeholder: ``{name}`` or ``{name.key.key}``; a string is one only when it fully matches.
PLACEHOLDER: regex.Pattern = regex.compile(r"\{(\w+(?:\.\w+)*)\}")

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


def placeholder_errors(transform: Any) -> list[str]:
    """Find the strings of a transform that mix a placeholder with literal text (SPEC 2, 6).

    Args:
        transform (Any): a transform value (dict / list / str / scalar), walked recursively.

    Returns:
        list[str]: ``repr`` of each offending string, in walk order (duplicates kept). Empty when
        the transform is valid. The compiler turns each into a ``TemplateError``.
    """
    return [
        repr(s) for s in _strings(transform)
        if PLACEHOLDER.search(s) is not None and PLACEHOLDER.fullmatch(s) is None
    ]


def placeholder_roots(transform: Any) -> list[str]:
    """List the root names the placeholders of a transform use (SPEC 6).

    Args:
        transform (Any): a transform value, walked recursively.

    Returns:
        list[str]: each distinct root name (``content`` for ``{content.args}``), in first-seen
        order. Strings that are not whole placeholders contribute nothing.
    """
    roots: dict[str, None] = {}
    for s in _strings(transform):
        m = PLACEHOLDER.fullmatch(s)
        if m is not None:
            roots.setdefault(m.group(1).split(".", 1)[0], None)
    return list(roots)


def _lookup(path: str) -> Builder:
    root, *keys = path.split(".")

    def lookup(scope: dict) -> Any:
        try:
            value = scope[root]
        except KeyError:
            raise KeyError(
                f"transform placeholder '{{{path}}}' is not defined. "
                f"Available: {sorted(scope, key=str)}"
            ) from None
        for key in keys:
            if not isinstance(value, dict):
                raise ContentParseError(
                    f"transform placeholder '{{{path}}}' cannot index into "
                    f"{type(value).__name__} at '{key}'"
                )
            if key not in value:
                raise ContentParseError(
                    f"transform placeholder '{{{path}}}' is missing key '{key}'. "
                    f"Available: {sorted(value, key=str)}"
                )
            value = value[key]
        return value

    return lookup


def compile_transform(transform: Any) -> Callable[[dict], Any]:
    """Compile a transform into a function of the scope (SPEC 6).

    Args:
        transform (Any): the transform value from the template. It is read now; later changes
            to it are not seen.

    Returns:
        Callable[[dict], Any]: ``build(scope) -> value``, with the semantics of
        :func:`apply_transform`; every dict and list in the result is freshly built.
    """
    if isinstance(transform, dict):
        items = [(k, compile_transform(v)) for k, v in transform.items()]
        return lambda scope: {k: build(scope) for k, build in items}
    if isinstance(transform, list):
        parts = [compile_transform(v) for v in transform]
        return lambda scope: [build(scope) for build in parts]
    if isinstance(transform, str):
        m = PLACEHOLDER.fullmatch(transform)
        if m is not None:
            return _lookup(m.group(1))
    return lambda scope: transform


def apply_transform(transform: Any, scope: dict) -> Any:
    """Substitute every whole-string placeholder of a transform (SPEC 6).

    Args:
        transform (Any): dict / list / str / scalar; dicts and lists are walked (values only).
        scope (dict): name -> value. A dotted placeholder ``{a.b.c}`` looks up ``scope["a"]``
            and then indexes dicts by ``b`` and ``c``.

    Returns:
        Any: the transform with placeholders replaced by their values (type preserved, the
        scope's objects themselves) and every dict/list rebuilt, so nothing aliases the template.

    Raises:
        KeyError: a placeholder's root name is not in the scope.
        ContentParseError: (a ``ValueError``) a dotted key is missing, or the path indexes into
            a value that is not a dict.
    """
    return compile_transform(transform)(scope)


def make_field_processor(
    field: str,
    content: str,
    content_args: dict,
    transform: Any | None,
    transform_each: bool,
    group_names: tuple[str, ...],
) -> Callable[[str, dict], Any]:
    """Build the close-time processing of one field: content parser, then transform (SPEC 4.5).

    Tool-argument typing (SPEC 7) is not part of it; the generated parser applies it afterwards
    when tools were given.

    Args:
        field (str): the field name, used in error messages.
        content (str): the content parser name (SPEC 5).
        content_args (dict): its arguments.
        transform (Any | None): the transform, or ``None`` for none.
        transform_each (bool): apply the transform to each element of a list of dicts.
        group_names (tuple[str, ...]): every named group declared by the field's open and close
            patterns; those missing from (or ``None`` in) the captures are ``None`` in the scope
            (deviation D5).

    Returns:
        Callable[[str, dict], Any]: ``process(body, captures) -> value`` where ``captures`` is
        the merged ``groupdict()`` of the open and close matches (deviation D4; may be empty).

    Raises:
        ContentParseError: (from ``process``) the body does not parse, a dotted placeholder
            fails, or ``transform_each`` meets a non-list or a non-dict element. The message
            starts with the field name.
        KeyError: (from ``process``) a placeholder's root name is not in the scope.
    """
    parse = make_content_parser(content, content_args)
    prefix = f"Field {field!r}: "

    def parse_body(body: str) -> Any:
        try:
            return parse(body)
        except ContentParseError as exc:
            raise ContentParseError(prefix + str(exc)) from exc

    if transform is None:
        return lambda body, captures: parse_body(body)

    build = compile_transform(transform)
    defaults = dict.fromkeys(group_names)

    def scope_of(captures: dict) -> dict:
        scope = dict(defaults)
        scope.update(captures)
        return scope

    def built(scope: dict) -> Any:
        try:
            return build(scope)
        except ContentParseError as exc:
            raise ContentParseError(prefix + str(exc)) from exc

    if not transform_each:
        def process(body: str, captures: dict) -> Any:
            value = parse_body(body)
            scope = scope_of(captures)
            scope["content"] = value
            return built(scope)

        return process

    def process_each(body: str, captures: dict) -> Any:
        value = parse_body(body)
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
            out.append(built(scope))
        return out

    return process_each
