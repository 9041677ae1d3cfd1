"""The intermediate representation of a validated response template.

Every later pass (automaton, grammar, emit) reads only these frozen dataclasses; nothing here is
re-derived from the raw JSON. Built by :func:`respc.compiler.validate.validate`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

__all__ = ["Delimiter", "Field", "Template", "canonical_json", "template_sha256"]


@dataclass(frozen=True)
class Delimiter:
    """One open, close or start-anchor delimiter (template-language.md "Load-time checks").

    Attributes:
        key (str): the template key it came from (``open``, ``close_pattern``, ``start_anchor``...).
        literals (tuple[str, ...] | None): the literal strings, deduplicated in declaration order,
            or None for a regex delimiter.
        pattern (str): the regex source matched by the parser; for literals, the escaped
            alternation longest-first (the order the reference uses).
        can_extend (bool): a literal list in which one literal is a strict prefix of another.
        group_names (tuple[str, ...]): named groups, in the order the pattern declares them.
    """

    key: str
    literals: tuple[str, ...] | None
    pattern: str
    can_extend: bool
    group_names: tuple[str, ...]

    @property
    def is_single_literal(self) -> bool:
        """True for exactly one literal string (the str.find fast path)."""
        return self.literals is not None and len(self.literals) == 1


@dataclass(frozen=True)
class Field:
    """One field of the output message and the region that fills it (template-language.md "Load-time checks").

    Attributes:
        name (str): the output key.
        open (Delimiter | None): None for the implicit field.
        close (Delimiter | None): None when the region runs to the end of the stream.
        content (str): content parser name (template-language.md "Content parsers").
        content_args (dict): its arguments.
        repeats (bool), join (str | None), optional (bool): template-language.md "Load-time checks" / 4.5.
        transform (Any): output template or None (template-language.md "Transforms").
        transform_each (bool): apply ``transform`` per list element.
        group_names (tuple[str, ...]): named groups of open then close pattern (D4, D5).
        slot (str | None): v2: the message key the region writes into (None: its text is
            consumed and discarded); the field name in v1.
        role (str | None): v2: ``"tool_calls"`` marks the values that tool-schema typing applies to.
        end (str): ``"delimiter"`` (the close ends the region) or v2 ``"value"`` (the content
            parser's value ends it; the close is then an optional trailing delimiter).
        inside (tuple[tuple[str, str], ...]): v2: ``(region name, action)`` pairs; the open is also
            watched while that region is current, and ``"nest"`` suspends it, ``"end"`` closes it.
        outside (bool): whether the open is watched outside regions (always true in v1).
        reject (bool): v2: a body the content parser rejects at its start gives the opener back.
        recover_open (tuple[str, ...]): v2 ``recover_open`` / ``recover_open_pattern``: openers only
            ``errors="recover"`` accepts, as regex sources (compiler/recover_open.py).
        recover_close (tuple[str, ...]): the same for closers (``recover_close`` /
            ``recover_close_pattern``).
    """

    name: str
    open: Delimiter | None
    close: Delimiter | None
    content: str
    content_args: dict
    repeats: bool
    join: str | None
    optional: bool
    transform: Any
    transform_each: bool
    group_names: tuple[str, ...]
    slot: str | None = None
    role: str | None = None
    end: str = "delimiter"
    inside: tuple = ()
    outside: bool = True
    reject: bool = False
    recover_open: tuple[str, ...] = ()
    recover_close: tuple[str, ...] = ()

    @property
    def is_implicit(self) -> bool:
        """True for the field with neither ``open`` nor ``open_pattern``."""
        return self.open is None


@dataclass(frozen=True)
class Template:
    """A whole validated template.

    Attributes:
        source (str): where it came from (for banners and errors).
        sha256 (str): hex SHA-256 of :func:`canonical_json` of the document (key order kept).
        document (dict): the raw document, as given (used for the banner and for re-emission).
        defaults (dict): values pre-filled in the message.
        fields (tuple[Field, ...]): in declaration order.
        implicit (int | None): index into ``fields`` of the implicit field.
        start_anchor (Delimiter): where the assistant turn starts inside the prefix.
        version (int): the template language version (1 or 2).
        diagnostics (str | None): v2: the message key that receives the parser's diagnostics
            (when there are any), or None: they are only on the parser.
    """

    source: str
    sha256: str
    document: dict
    defaults: dict
    fields: tuple[Field, ...]
    implicit: int | None
    start_anchor: Delimiter
    version: int = 1
    diagnostics: str | None = None


def canonical_json(document: Any) -> str:
    """The canonical JSON text of a template: no spaces, UTF-8 kept, and the keys of the top level
    and of each field's spec sorted; every other object keeps its keys in the document's order.

    The order of those two levels' keys cannot matter (the compiler reads each key by name), but
    elsewhere order carries meaning (docs/template-language.md, ``fields``): the order of
    ``fields`` ranks tied delimiters in v2 and orders the watch sets, and ``defaults``,
    ``transform``, ``inside`` and content arguments are read in order. Two templates that behave
    differently must never share a hash (docs/security.md "Generated code"), so only what is known not to matter is
    sorted; templates that differ only in another order that happens not to matter get different
    hashes, which costs at most a compile.
    """
    if isinstance(document, dict):
        document = {key: document[key] for key in sorted(document)}
        fields = document.get("fields")
        if isinstance(fields, dict):
            document["fields"] = {name: {key: spec[key] for key in sorted(spec)} if isinstance(spec, dict) else spec
                                  for name, spec in fields.items()}
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def template_sha256(document: Any) -> str:
    """Hex SHA-256 of :func:`canonical_json`: the banner's ``template sha256``, ``TEMPLATE_SHA256``,
    what ``respc compile --check`` and :func:`respc.compiler.api.compile_template`'s cache tell
    templates apart by (README "Layout"; docs/security.md, "Generated code")."""
    # surrogatepass: JSON may hold a lone surrogate ("\\ud800"); it is data and must still hash.
    return hashlib.sha256(canonical_json(document).encode("utf-8", "surrogatepass")).hexdigest()
