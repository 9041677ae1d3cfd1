"""Error classes shared by the compiler and every generated parser.

One root, :class:`RespcError`, mixed with the builtin type each kind of failure is (events.md "What finalize returns
and raises"), so callers written against the transformers reference (which raises plain ``ValueError`` /
``RuntimeError``) keep working.
"""

from __future__ import annotations

__all__ = ["RespcError", "TemplateError", "ContentParseError", "PlaceholderError", "UnknownPlaceholderError",
           "ParserStateError", "RegexTimeoutError"]


class RespcError(Exception):
    """Root of every error respc raises on purpose."""


class TemplateError(RespcError, ValueError):
    """A response template is malformed (template-language.md "Load-time checks", load-time rules).

    Attributes:
        source (str | None): where the template came from (a path, ``tokenizer_config.json``, a
            catalogue name, or ``"<dict>"``).
        field (str | None): the field name at fault, or ``None`` for a top-level problem.
        key (str | None): the offending key (``"open_pattern"``, ``"join"``, ...), if any.
        detail (str): the human-readable reason, without the location prefix.
    """

    def __init__(self, detail: str, *, source: str | None = None, field: str | None = None,
                 key: str | None = None) -> None:
        self.source = source
        self.field = field
        self.key = key
        self.detail = detail
        where = []
        if source:
            where.append(source)
        if field is not None:
            where.append(f"field {field!r}")
        if key is not None:
            where.append(f"key {key!r}")
        prefix = ": ".join([", ".join(where)]) + ": " if where else ""
        super().__init__(prefix + detail)


class ContentParseError(RespcError, ValueError):
    """A region body could not be parsed or transformed (template-language.md "Content parsers", "Transforms").

    Raised while a region closes, i.e. from ``feed`` or ``finalize``; the message quotes the field
    name and the offending content.
    """


class PlaceholderError(ContentParseError):
    """A transform placeholder could not be filled from the region's value (template-language.md "Transforms").

    Raised while a region closes: a dotted key is missing (``{content.args}`` on ``{"name": "f"}``),
    the path indexes into a value that is not a dict, or (v2) ``{content.$key}`` /
    ``{content.$value}`` meets something other than a one-key dict, or no alternative of a
    ``$first`` resolved. It is a :class:`ContentParseError`, hence a ``ValueError``: the reference
    raises ``ValueError`` for these, and the conformance vectors expect that.
    """


class UnknownPlaceholderError(PlaceholderError, KeyError):
    """A placeholder's root name is not in the transform scope (template-language.md "Transforms").

    The scope is ``content`` plus the named groups of the open and close patterns, or with
    ``transform_each`` the element's keys plus the groups. Outside ``transform_each`` the compiler
    refuses an unknown root when the template is loaded (v2) or warns (v1), so this is mostly
    met with ``transform_each`` (an element without that key).

    Also a ``KeyError``: the transformers reference raises a bare ``KeyError`` here, and callers
    written against it (and the conformance vector ``transform-undefined-placeholder``) catch
    that. The message is printed as given (not quoted the way ``KeyError`` prints its key).
    """

    __str__ = BaseException.__str__


class RegexTimeoutError(ContentParseError, TimeoutError):
    """errors="strict": a search of a regex delimiter not proven to take linear time ran past its
    time limit (``runtime.REGEX_TIMEOUT``, or the parser's ``regex_timeout=``; docs/security.md,
    "Limits"). errors="recover" never raises it: the delimiter is taken as not matching there
    and a ``regex-timeout`` diagnostic is listed (docs/events.md).

    A :class:`ContentParseError` (the model output could not be parsed within the limit, so a
    ``ValueError``) and a ``TimeoutError``.

    Attributes:
        field (str | None): the field whose delimiter it is; key (str | None): its template key
            (``"open_pattern"``, ``"close_pattern"``); pattern (str): the regex;
        offset (int | None): the response offset the search started at (None outside a parser);
        timeout (float): the limit, in seconds.
    """

    def __init__(self, field: str | None, key: str | None, pattern: str, offset: int | None,
                 timeout: float) -> None:
        self.field = field
        self.key = key
        self.pattern = pattern
        self.offset = offset
        self.timeout = timeout
        where = f" at response offset {offset}" if offset is not None else ""
        super().__init__(f"field {field!r}, key {key!r}: the search of /{pattern}/{where} ran past its time "
                         f"limit of {timeout} s (the pattern is not proven to search in linear time; "
                         f"docs/security.md, \"Limits\")")


class ParserStateError(RespcError, RuntimeError):
    """A parser was used after ``finalize`` (events.md "The parser object")."""
