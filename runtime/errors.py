"""Error classes shared by the compiler and every generated parser.

One root, :class:`RespcError`, mixed with the builtin type that SPEC.md names for each failure, so
callers written against the transformers reference (which raises plain ``ValueError`` /
``RuntimeError``) keep working.
"""

from __future__ import annotations

__all__ = ["RespcError", "TemplateError", "ContentParseError", "ParserStateError"]


class RespcError(Exception):
    """Root of every error respc raises on purpose."""


class TemplateError(RespcError, ValueError):
    """A response template is malformed (SPEC section 2, load-time rules).

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
    """A region body could not be parsed or transformed (SPEC sections 5 and 6).

    Raised while a region closes, i.e. from ``feed`` or ``finalize``; the message quotes the field
    name and the offending content.
    """


class ParserStateError(RespcError, RuntimeError):
    """A parser was used after ``finalize`` (SPEC section 3)."""
