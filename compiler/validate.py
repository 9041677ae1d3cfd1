"""Pass 2: check every load-time rule of SPEC section 2 and build the IR.

Each failure is a :class:`~respc.runtime.errors.TemplateError` naming the template source, the field
and the key at fault. Nothing here runs text from the template: patterns are only compiled.
"""

from __future__ import annotations

import copy
from typing import Any

import regex

from respc.runtime.content import CONTENT_PARSER_NAMES, PARSERS, content_args_problems
from respc.runtime.errors import TemplateError
from respc.runtime.transforms import placeholder_errors

from .ir import Delimiter, Field, Template, template_sha256
from .load import LoadedTemplate

__all__ = ["validate", "TOP_LEVEL_KEYS", "FIELD_KEYS"]

TOP_LEVEL_KEYS = ("version", "respc_version", "defaults", "fields", "start_anchor", "start_anchor_pattern")
FIELD_KEYS = ("open", "open_pattern", "close", "close_pattern", "content", "content_args", "repeats",
              "join", "optional", "transform", "transform_each")
#: Field keys of template language v2 (docs/template-language.md); legal only with "version": 2.
FIELD_KEYS_V2 = ("slot", "role", "end", "inside", "outside", "reject")
#: respc template language versions this compiler reads. The language version is its own key,
#: ``respc_version``: the reference's ``version`` stays 1 (transformers refuses ``"version": 2``,
#: and a later transformers version 2 must not be mistaken for ours).
VERSIONS = (1, 2)
_ROLES = ("tool_calls",)
_ENDS = ("delimiter", "value")
_INSIDE_ACTIONS = ("nest", "end", "end-if-unclosed")
_REJECTS = ("restore", "error")
# Regex flavour of SPEC 2: the `regex` module, DOTALL, no MULTILINE.
REGEX_FLAGS = regex.DOTALL


class _Checker:
    """Carries the source label so every error names where it happened."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, detail: str, field: str | None = None, key: str | None = None) -> TemplateError:
        return TemplateError(detail, source=self.source, field=field, key=key)

    def compile(self, pattern: str, field: str | None, key: str) -> regex.Pattern:
        try:
            return regex.compile(pattern, REGEX_FLAGS)
        except (regex.error, ValueError, OverflowError, RecursionError) as exc:
            raise self.fail(f"invalid {key} regex {pattern!r}: {exc}", field, key) from None

    def delimiter(self, spec: dict, literal_key: str, pattern_key: str,
                  field: str | None) -> Delimiter | None:
        """Build the delimiter of ``literal_key`` / ``pattern_key`` (at most one may be set)."""
        if literal_key in spec and pattern_key in spec:
            raise self.fail(f"cannot specify both '{literal_key}' and '{pattern_key}'", field, literal_key)
        if literal_key in spec:
            raw = spec[literal_key]
            if isinstance(raw, str):
                items = [raw]
            elif isinstance(raw, list):
                if not raw:
                    raise self.fail(f"'{literal_key}' list must contain at least one literal", field, literal_key)
                bad = [item for item in raw if not isinstance(item, str)]
                if bad:
                    raise self.fail(f"'{literal_key}' list must contain only strings, found {bad[0]!r}",
                                    field, literal_key)
                items = raw
            else:
                raise self.fail(f"'{literal_key}' must be a string or a list of strings, "
                                f"got {type(raw).__name__}", field, literal_key)
            if any(item == "" for item in items):
                raise self.fail(f"'{literal_key}' literals cannot be empty strings", field, literal_key)
            literals = tuple(dict.fromkeys(items))
            # Longest first (stable), exactly the alternation order of the reference.
            ordered = sorted(literals, key=len, reverse=True)
            pattern = "|".join(regex.escape(item) for item in ordered)
            self.compile(pattern, field, literal_key)
            can_extend = any(a != b and a.startswith(b) for a in literals for b in literals)
            return Delimiter(literal_key, literals, pattern, can_extend, ())
        if pattern_key in spec:
            raw = spec[pattern_key]
            if not isinstance(raw, str):
                raise self.fail(f"'{pattern_key}' must be a regex string, got {type(raw).__name__}",
                                field, pattern_key)
            compiled = self.compile(raw, field, pattern_key)
            names = tuple(sorted(compiled.groupindex, key=compiled.groupindex.__getitem__))
            return Delimiter(pattern_key, None, raw, False, names)
        return None


def _check_content_args(check: _Checker, name: str, content: str, args: Any, key: str = "content_args") -> None:
    """Raise the first problem the content parser's registry record finds in ``args`` (SPEC 2).

    The record's ``check_args`` gives ``(arg path, problem)`` pairs with paths relative to ``key``
    (see :func:`respc.runtime.content.content_args_problems`); the key at fault is ``key`` or
    ``key.path``.
    """
    problems = content_args_problems(content, args, key)
    if problems:
        arg, problem = problems[0]
        raise check.fail(problem, name, f"{key}.{arg}" if arg else key)


def _v2_keys(check: _Checker, name: str, spec: dict, version: int) -> dict:
    """Check the v2 field keys of one field spec and return their values with defaults filled in."""
    if version < 2:
        used = [key for key in FIELD_KEYS_V2 if key in spec]
        if used:
            raise check.fail(f"key {used[0]!r} is part of respc template language v2: it needs "
                             "\"respc_version\": 2 at the top of the template", name, used[0])
        return {"slot": name, "role": None, "end": "delimiter", "inside": (), "outside": True, "reject": False}
    slot = spec.get("slot", name)
    if slot is not None and (not isinstance(slot, str) or not slot):
        raise check.fail(f"'slot' must be a message key (a non-empty string) or null, got {slot!r}", name, "slot")
    role = spec.get("role")
    if role is not None and role not in _ROLES:
        raise check.fail(f"'role' must be one of {list(_ROLES)}, got {role!r}", name, "role")
    end = spec.get("end", "delimiter")
    if end not in _ENDS:
        raise check.fail(f"'end' must be one of {list(_ENDS)}, got {end!r}", name, "end")
    inside = spec.get("inside", {})
    if not isinstance(inside, dict) or not all(isinstance(k, str) for k in inside):
        raise check.fail("'inside' must be a dict {region name: \"nest\" | \"end\" | \"end-if-unclosed\"}", name, "inside")
    for region, action in inside.items():
        if action not in _INSIDE_ACTIONS:
            raise check.fail(f"'inside' action for {region!r} must be one of {list(_INSIDE_ACTIONS)}, "
                             f"got {action!r}", name, "inside")
    outside = spec.get("outside", True)
    if not isinstance(outside, bool):
        raise check.fail(f"'outside' must be a bool, got {type(outside).__name__}", name, "outside")
    reject = spec.get("reject", "restore")
    if reject not in _REJECTS:
        raise check.fail(f"'reject' must be one of {list(_REJECTS)}, got {reject!r}", name, "reject")
    return {"slot": slot, "role": role, "end": end, "inside": tuple(inside.items()), "outside": outside,
            "reject": reject == "restore"}


def _build_field(check: _Checker, name: str, spec: Any, version: int = 1) -> Field:
    if not isinstance(spec, dict):
        raise check.fail(f"a field spec must be a dict, got {type(spec).__name__}", name)
    allowed = FIELD_KEYS + FIELD_KEYS_V2
    unknown = sorted(set(spec) - set(allowed))
    if unknown:
        allowed_shown = list(FIELD_KEYS) if version < 2 else list(allowed)
        raise check.fail(f"unknown keys {unknown} (allowed: {allowed_shown})", name, unknown[0])
    v2 = _v2_keys(check, name, spec, version)
    content = spec.get("content", "text")
    if content not in CONTENT_PARSER_NAMES:
        raise check.fail(f"unknown content parser {content!r}. Available: {sorted(CONTENT_PARSER_NAMES)}",
                         name, "content")
    open_ = check.delimiter(spec, "open", "open_pattern", name)
    close = check.delimiter(spec, "close", "close_pattern", name)
    content_args = spec.get("content_args", {})
    _check_content_args(check, name, content, content_args)
    for flag in ("repeats", "optional"):
        if flag in spec and not isinstance(spec[flag], bool):
            raise check.fail(f"'{flag}' must be a bool, got {type(spec[flag]).__name__}", name, flag)
    repeats = spec.get("repeats", False)
    join = spec.get("join")
    if join is not None and not isinstance(join, str):
        raise check.fail(f"'join' must be a string, got {type(join).__name__}", name, "join")
    if join is not None and not repeats:
        raise check.fail("'join' requires 'repeats': true", name, "join")
    transform = spec.get("transform")
    transform_each = spec.get("transform_each", False)
    if not isinstance(transform_each, bool):
        raise check.fail(f"transform_each must be a bool, got {type(transform_each).__name__}", name,
                         "transform_each")
    if transform_each and transform is None:
        raise check.fail("transform_each is set but no transform was provided", name, "transform_each")
    open_groups = open_.group_names if open_ else ()
    close_groups = close.group_names if close else ()
    shared = sorted(set(open_groups) & set(close_groups))
    if shared:
        raise check.fail(f"named group(s) {shared} appear in both open_pattern and close_pattern; "
                         "one name would hide the other in the transform scope (D4)", name, "close_pattern")
    if transform is not None:
        mixed = placeholder_errors(transform)
        if mixed:
            raise check.fail(f"transform string {mixed[0]} mixes a {{placeholder}} with literal text; "
                             "string interpolation is not supported: use a whole-string placeholder "
                             "such as \"{content}\" or a plain literal", name, "transform")
    elif open_groups or close_groups:
        key = "open_pattern" if open_groups else "close_pattern"
        raise check.fail(f"the pattern declares named group(s) {sorted(open_groups + close_groups)} but the "
                         "field has no 'transform'; named captures only reach the message through a "
                         "transform", name, key)
    return Field(
        name=name,
        open=open_,
        close=close,
        content=content,
        content_args=copy.deepcopy(content_args),
        repeats=repeats,
        join=join,
        optional=spec.get("optional", True),
        transform=copy.deepcopy(transform),
        transform_each=transform_each,
        group_names=open_groups + close_groups,
        **v2,
    )


def validate(loaded: LoadedTemplate) -> Template:
    """Check a loaded template against SPEC section 2 and return its IR.

    Args:
        loaded: the document and its source label, from :func:`respc.compiler.load.load_template`.

    Returns:
        Template: the frozen IR.

    Raises:
        TemplateError: naming the source, field and key of the first rule broken (SPEC 2).
    """
    check = _Checker(loaded.source)
    doc = loaded.document
    if not isinstance(doc, dict):
        raise check.fail(f"a response template must be a JSON object, got {type(doc).__name__}")
    reference_version = doc.get("version", 1)
    if reference_version != 1 or isinstance(reference_version, bool):
        raise check.fail(f"unsupported response_template version {reference_version!r} (only 1 is known; "
                         "respc's own language v2 is chosen with \"respc_version\": 2)", key="version")
    version = doc.get("respc_version", 1)
    if version not in VERSIONS or isinstance(version, bool):
        raise check.fail(f"unsupported respc_version {version!r} (known: {list(VERSIONS)})", key="respc_version")
    unknown = sorted(set(doc) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise check.fail(f"unknown keys in response_template: {unknown} (allowed: {list(TOP_LEVEL_KEYS)})",
                         key=unknown[0])
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, dict):
        raise check.fail(f"'defaults' must be a dict, got {type(defaults).__name__}", key="defaults")
    raw_fields = doc.get("fields")
    if not isinstance(raw_fields, dict) or not raw_fields:
        raise check.fail("'fields' must be a non-empty dict", key="fields")
    fields = tuple(_build_field(check, name, spec, version) for name, spec in raw_fields.items())
    implicit = [i for i, f in enumerate(fields) if f.is_implicit]
    if len(implicit) > 1:
        names = ", ".join(fields[i].name for i in implicit)
        raise check.fail(f"at most one field may omit 'open'/'open_pattern' (the implicit field); found: {names}",
                         key="fields")
    if version >= 2:
        _check_v2_fields(check, fields)
    anchor = check.delimiter(doc, "start_anchor", "start_anchor_pattern", None)
    if anchor is None:
        raise check.fail("response_template must define 'start_anchor' or 'start_anchor_pattern'",
                         key="start_anchor")
    return Template(
        source=loaded.source,
        sha256=template_sha256(doc),
        document=doc,
        defaults=copy.deepcopy(defaults),
        fields=fields,
        implicit=implicit[0] if implicit else None,
        start_anchor=anchor,
        version=version,
    )


def _check_v2_fields(check: _Checker, fields: tuple[Field, ...]) -> None:
    """Rules of template language v2 that involve more than one field."""
    by_name = {f.name: f for f in fields}
    for f in fields:
        if f.is_implicit and (f.inside or f.end != "delimiter" or not f.outside):
            key = "inside" if f.inside else "end" if f.end != "delimiter" else "outside"
            raise check.fail("the implicit field has no open, so it cannot nest, end at its value or be "
                             "kept from outside", f.name, key)
        for region, _ in f.inside:
            other = by_name.get(region)
            if other is None or other.is_implicit or region == f.name:
                raise check.fail(f"'inside' names {region!r}, which is not another explicit field "
                                 "(regions are named by field name)", f.name, "inside")
        if not f.is_implicit and not f.outside and not f.inside:
            raise check.fail("'outside': false with no 'inside' regions: nothing can open this region",
                             f.name, "outside")
        if f.end == "value" and not PARSERS[f.content].self_delimiting:
            ends = [n for n, r in PARSERS.items() if r.self_delimiting]
            raise check.fail(f"'end': \"value\" needs a content parser that ends itself ({ends}); "
                             f"{f.content!r} does not", f.name, "end")
    slots: dict[str, Field] = {}
    for f in fields:
        if f.slot is None:
            continue
        first = slots.setdefault(f.slot, f)
        if first is not f and (first.repeats, first.join) != (f.repeats, f.join):
            raise check.fail(f"regions {first.name!r} and {f.name!r} write into slot {f.slot!r} but disagree "
                             "on 'repeats'/'join'", f.name, "slot")
