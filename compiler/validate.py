"""Pass 2: check every load-time rule of template-language.md "Load-time checks" and build the IR.

Each failure is a :class:`~respc.runtime.errors.TemplateError` naming the template source, the field
and the key at fault. Nothing here runs model text: patterns are compiled, and the empty-match checks
(:func:`may_match_empty`) only match them against a few fixed probe strings.

Beyond the rules listed in template-language.md "Load-time checks", :func:`check_template` refuses
what would fail or hang at run time for every
input (a ``repeats`` default that is not a list, a region that opens and closes at one offset
forever) and finds what can be known to fail or lose text (an unknown placeholder root, ``join`` on
values that are never strings, an implicit close that matches empty before text): warnings in v1,
whose behaviour is the reference's, errors with ``"version": 2``.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import regex

from respc.runtime.formats import FORMATS, content_args_problems
from respc.runtime.errors import TemplateError
from respc.runtime.transforms import (
    FIRST,
    PLACEHOLDER,
    PLACEHOLDER_V2,
    placeholder_errors,
    placeholder_roots,
    transform_errors,
)

from .backtracking import backtracking_problem
from .ir import Delimiter, Field, Template, canonical_json, template_sha256
from .load import LoadedTemplate
from .recover_open import recover_alternatives

__all__ = ["validate", "check_template", "may_match_empty", "TOP_LEVEL_KEYS", "FIELD_KEYS", "NEVER_STRING_PARSERS",
           "MAX_TEMPLATE_CHARS", "MAX_FIELDS", "MAX_LITERAL_CHARS", "MAX_LITERALS", "MAX_PATTERN_CHARS"]

TOP_LEVEL_KEYS = ("version", "respc_version", "defaults", "fields", "start_anchor", "start_anchor_pattern",
                  "diagnostics")
#: Top-level keys of template language v2; legal only with "respc_version": 2.
TOP_LEVEL_KEYS_V2 = ("diagnostics",)
FIELD_KEYS = ("open", "open_pattern", "close", "close_pattern", "content", "content_args", "repeats",
              "join", "optional", "transform", "transform_each")
#: Field keys of template language v2 (docs/template-language.md); legal only with "version": 2.
FIELD_KEYS_V2 = ("slot", "role", "end", "inside", "outside", "reject", "recover_open", "recover_open_pattern",
                 "recover_close", "recover_close_pattern")
#: respc template language versions this compiler reads. The language version is its own key,
#: ``respc_version``: the reference's ``version`` stays 1 (transformers refuses ``"version": 2``,
#: and a later transformers version 2 must not be mistaken for ours).
VERSIONS = (1, 2)
_ROLES = ("tool_calls",)
_ENDS = ("delimiter", "value")
_INSIDE_ACTIONS = ("nest", "end", "end-if-unclosed")
_REJECTS = ("restore", "error")
# Template size limits (docs/security.md, "Limits"; docs/template-language.md): a template is
# refused at load, before anything is built from it, when it exceeds one of them. Each is far
# above what the catalogue needs (its largest, measured: 1,848 characters of template, 6 fields,
# a 66-character literal, 6 literals under one key, a 298-character pattern), and each bounds a
# cost that grows with the template (module size, compile time, the per-chunk hold check).
#: characters of the whole response template (its canonical JSON text, keys sorted, no spaces)
MAX_TEMPLATE_CHARS = 1_000_000
#: fields in ``fields``
MAX_FIELDS = 256
#: characters of one literal delimiter (``open``, ``close``, ``start_anchor``, or one of a list)
MAX_LITERAL_CHARS = 10_000
#: literals in the list of one ``open`` / ``close`` / ``start_anchor`` key
MAX_LITERALS = 256
#: characters of one regex (``open_pattern``, ``close_pattern``, ``start_anchor_pattern``)
MAX_PATTERN_CHARS = 4096

# Regex flavour of template-language.md "Load-time checks": the `regex` module, DOTALL, no MULTILINE.
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
            if len(items) > MAX_LITERALS:
                raise self.fail(f"'{literal_key}' lists {len(items)} literals; the limit is {MAX_LITERALS} "
                                "(docs/security.md, \"Limits\")", field, literal_key)
            for item in items:
                if len(item) > MAX_LITERAL_CHARS:
                    raise self.fail(f"'{literal_key}' has a literal of {len(item):,} characters ({item[:20]!r}...); "
                                    f"the limit is {MAX_LITERAL_CHARS:,} (docs/security.md, \"Limits\")",
                                    field, literal_key)
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
            if len(raw) > MAX_PATTERN_CHARS:
                raise self.fail(f"'{pattern_key}' is {len(raw):,} characters ({raw[:20]!r}...); the limit is "
                                f"{MAX_PATTERN_CHARS:,} (docs/security.md, \"Limits\")", field, pattern_key)
            compiled = self.compile(raw, field, pattern_key)
            problem = backtracking_problem(raw)
            if problem is not None:
                raise self.fail(f"'{pattern_key}' {raw[:80]!r} is refused: {problem} (docs/security.md, \"Limits\")",
                                field, pattern_key)
            names = tuple(sorted(compiled.groupindex, key=compiled.groupindex.__getitem__))
            reserved = [g for g in names if regex.search(r"__alt\d+$", g)]
            if reserved:
                raise self.fail(f"'{pattern_key}' declares the group {reserved[0]!r}: names ending in '__alt<digits>' "
                                "are reserved for recover-only openers (docs/template-language.md)", field, pattern_key)
            return Delimiter(pattern_key, None, raw, False, names)
        return None


def _check_content_args(check: _Checker, name: str, content: str, args: Any, key: str = "content_args") -> None:
    """Raise the first problem the content parser's registry record finds in ``args`` (template-language.md
    "Load-time checks").

    The record's ``check_args`` gives ``(arg path, problem)`` pairs with paths relative to ``key``
    (see :func:`respc.runtime.formats.content_args_problems`); the key at fault is ``key`` or
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
    v2 = version >= 2
    if not isinstance(spec, dict):
        raise check.fail(f"a field spec must be a dict, got {type(spec).__name__}", name)
    allowed = FIELD_KEYS + FIELD_KEYS_V2
    unknown = sorted(set(spec) - set(allowed))
    if unknown:
        allowed_shown = list(FIELD_KEYS) if version < 2 else list(allowed)
        raise check.fail(f"unknown keys {unknown} (allowed: {allowed_shown})", name, unknown[0])
    v2_keys = _v2_keys(check, name, spec, version)
    if spec.get("content") in FORMATS and FORMATS[spec["content"]].since > version:
        raise check.fail(f"content parser {spec['content']!r} is part of respc template language v2: it needs "
                         "\"respc_version\": 2 at the top of the template", name, "content")
    content = spec.get("content", "text")
    if content not in FORMATS:
        raise check.fail(f"unknown content parser {content!r}. Available: {sorted(FORMATS)}",
                         name, "content")
    open_ = check.delimiter(spec, "open", "open_pattern", name)
    close = check.delimiter(spec, "close", "close_pattern", name)
    recover_open = recover_alternatives(check, name, spec, open_, version)
    recover_close = recover_alternatives(check, name, spec, close, version, "close")
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
        mixed = placeholder_errors(transform, v2=v2)
        if mixed:
            raise check.fail(f"transform string {mixed[0]} mixes a {{placeholder}} with literal text; "
                             "string interpolation is not supported: use a whole-string placeholder "
                             "such as \"{content}\" or a plain literal", name, "transform")
        shape = transform_errors(transform, v2=v2)
        if shape:
            raise check.fail(shape[0], name, "transform")
    elif _captures(open_groups, version) or _captures(close_groups, version):
        key = "open_pattern" if _captures(open_groups, version) else "close_pattern"
        raise check.fail(f"the pattern declares named group(s) {_captures(open_groups + close_groups, version)} but the "
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
        recover_open=recover_open,
        recover_close=recover_close,
        **v2_keys,
    )


# -- load-time checks beyond the reference's rules (docs/template-language.md "Load-time checks")
# --------------------------------------------------- Each returns nothing or raises TemplateError naming the field
# and key; the softer ones (rules a v1 template must keep for the reference's sake) become warnings in v1 and errors
# in v2.

#: content parsers whose value is never a str (int / float / bool, or a dict for the two
#: key-value parsers); ``text`` always gives a str and ``json`` may (``"\"x\""``).
NEVER_STRING_PARSERS = {name: f.never_string for name, f in FORMATS.items() if f.never_string}

# Left and right contexts tried around the probe position by may_match_empty / _empty_at; the
# pattern's own literal runs are added to these.
_PROBE_CONTEXTS = ("", "a", "Z", "0", "_", " ", "\n", "<", ">", "{", "}", '"', "x", "\u00e9", "-")
_META = set("()[]{}|*+?.^$\\")


def _literal_runs(pattern: str) -> list[str]:
    """Runs of literal characters in a regex source (``\\<`` read as ``<``), longest first.

    Only a source of probe text for :func:`_empty_positions`: it need not be a faithful parse.
    """
    runs, run, i = [], [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if not nxt.isalnum():
                run.append(nxt)
            else:
                runs.append("".join(run))
                run = []
            i += 2
            continue
        if c in _META:
            runs.append("".join(run))
            run = []
        else:
            run.append(c)
        i += 1
    runs.append("".join(run))
    out = sorted({r for r in runs if r}, key=lambda r: (-len(r), r))
    return out[:8] + sorted({ch for r in out for ch in r})[:16]


@functools.lru_cache(maxsize=1024)
def _probe_contexts(pattern: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_PROBE_CONTEXTS + tuple(_literal_runs(pattern))))


@functools.lru_cache(maxsize=1024)
def _empty_positions(pattern: str) -> tuple[tuple[str, str], ...] | None:
    """The probe places where the ``regex`` engine matches ``pattern`` with an empty match.

    The pattern is compiled as ``(?:pattern)\\G`` (``\\G``: the position the match started at) and
    matched at the join of every (left, right) pair of probe contexts, so any alternative that can
    end where it starts is found, whatever the engine's first choice (``a|`` before ``a``),
    including assertions that need context (``\\b``, ``(?=x)``, ``(?<=</x>)``).

    Returns:
        tuple[tuple[str, str], ...] | None: the (left, right) pairs with an empty match, or None when
        the wrapped pattern does not compile (then nothing is known). Cached per pattern.
    """
    tail = "\n" if regex.compile(pattern, REGEX_FLAGS).flags & regex.VERBOSE else ""
    try:
        wrapped = regex.compile(f"(?:{pattern}{tail})\\G", REGEX_FLAGS)
    except (regex.error, ValueError, OverflowError, RecursionError):
        return None
    contexts = _probe_contexts(pattern)
    found = []
    for left in contexts:
        for right in contexts:
            if wrapped.match(left + right, len(left)) is not None:
                found.append((left, right))
    return tuple(found)


def _stdlib_min_width_zero(pattern: str) -> bool:
    """Whether the stdlib regex parser finds a path of width 0 through ``pattern``.

    Used only to widen :func:`may_match_empty` (never to narrow it): it treats every assertion as
    passable, so it finds the empty paths whose assertions no probe text satisfied. A pattern it
    cannot read (syntax of the ``regex`` module only) counts as False here: the probes decide.
    """
    try:
        import re._parser as stdlib_parser  # Python 3.11+
    except ImportError:  # pragma: no cover - Python < 3.11
        import sre_parse as stdlib_parser  # type: ignore[no-redef]
    import re
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return stdlib_parser.parse(pattern, re.DOTALL).getwidth()[0] == 0
    except Exception:  # noqa: BLE001 - any failure to read it just means "no opinion"
        return False


def may_match_empty(pattern: str) -> bool:
    """Whether a delimiter pattern can match the empty string somewhere (conservative).

    ``fullmatch("")`` is not enough: ``\\b``, ``(?=x)`` and ``(?<=a)`` match nothing on ``""`` but
    are empty matches inside text. True when the ``regex`` engine matches it empty at one of the
    probe places of :func:`_empty_positions`, or when the stdlib parser finds a width-0 path
    (assertions assumed passable), or when the probe pattern cannot be built.

    Args:
        pattern (str): a regex source that compiles with the template-language.md "Load-time checks" flags.

    Returns:
        bool: False only when no empty match was found or is possible by either reading.
    """
    found = _empty_positions(pattern)
    return found is None or bool(found) or _stdlib_min_width_zero(pattern)


def _delimiter_may_match_empty(delim: Delimiter | None) -> bool:
    # literals are never empty (validate refuses "")
    return delim is not None and delim.literals is None and may_match_empty(delim.pattern)


def _swallow_example(delim: Delimiter) -> tuple[str, str] | None:
    """A probe place where ``delim`` matches empty with non-blank text after it, or None."""
    found = _empty_positions(delim.pattern) or []
    return next(((left, right) for left, right in found if right.strip()), None)


def _always_empty(delim: Delimiter) -> bool:
    """Whether ``delim`` matches empty at every probe place (so it matches wherever a search starts)."""
    found = _empty_positions(delim.pattern)
    total = len(_probe_contexts(delim.pattern)) ** 2
    return found is not None and len(found) == total


def _string_capable(node: Any, content: str, v2: bool) -> bool:
    """Whether a transform node may produce a str, for a field whose content parser is ``content``.

    Conservative (True when unsure): a literal string, a group placeholder (a str or None), an
    indexed ``{content.k}`` (anything), ``{content.$key}`` (a str), ``{content}`` when the parser
    may give a str, a ``$first`` with such an alternative. False: dicts, lists, non-str scalars.
    """
    if isinstance(node, str):
        m = (PLACEHOLDER_V2 if v2 else PLACEHOLDER).fullmatch(node)
        if m is None:
            return True
        path = m.group(1).split(".")
        return path[0] != "content" or len(path) > 1 or content not in NEVER_STRING_PARSERS
    if isinstance(node, dict):
        alternatives = node.get(FIRST) if v2 else None
        if isinstance(alternatives, list):
            return any(_string_capable(a, content, v2) for a in alternatives)
        return False
    return False


def check_defaults(check: "_Checker", fields: tuple[Field, ...], defaults: dict) -> None:
    """Refuse a default the message cannot grow from
    (docs/template-language.md "Load-time checks": AttributeError/TypeError at run time).

    Legal defaults: for a ``join`` field a string (each match is appended after the separator) or
    null (the first match is taken as is); for any other ``repeats`` field a list (each match is
    appended to it). Other fields take any JSON value.

    Raises:
        TemplateError: on the field, key ``defaults``.
    """
    for f in fields:
        if not f.repeats or f.slot not in defaults:
            continue
        value = defaults[f.slot]
        if f.join is not None:
            if value is not None and not isinstance(value, str):
                raise check.fail(f"the default {value!r} of a 'join' field must be a string (each match is "
                                 "appended to it after the separator) or null, got "
                                 f"{type(value).__name__}", f.name, "defaults")
        elif not isinstance(value, list):
            raise check.fail(f"the default {value!r} of a 'repeats' field must be a list (each match is "
                             f"appended to it), got {type(value).__name__}", f.name, "defaults")


def check_progress(check: "_Checker", fields: tuple[Field, ...], *, v2: bool = False) -> list[str]:
    """Refuse a template that can make a parser loop; find delimiters that swallow text.

    In the template-language.md "Choosing the next delimiter" loop an explicit region opens eagerly, so a zero-width
    open followed by a zero-width close at the same place returns to the same state at the same offset, forever
    (open ``\\b``, close ``x?``, text ``ab``; the reference hangs too). Whether both can happen at one place is not
    decided: any field whose open and close can both match empty is refused. Every other zero-width transition makes
    progress: a zero-width close of the implicit field stops the scan of the current input when that field got no
    text (template-language.md "Choosing the next delimiter"), and an explicit open beats it at the same offset,
    then needs a close that consumes text. A zero-width open followed by a non-empty close is fine (``llama3_json``
    opens with a lookahead).

    That stop loses text: an implicit field's close that matches empty before more (non-blank)
    text (``(?=c)``, ``\\b``) leaves everything after it unparsed, silently. A warning in v1 (the
    reference does the same), an error in v2. End anchors (``$``, ``\\Z``) lose nothing.
    Also warned: an explicit close that matches empty everywhere (``x?``): its region never
    receives text.

    Args:
        check: the error factory (source label).
        fields: the template's fields.
        v2: the template has ``"version": 2``.

    Returns:
        list[str]: warnings, each starting ``field '<name>' key '<key>': ``.

    Raises:
        TemplateError: naming the field and its close key (the loop), or in v2 the implicit
        field's close key (lost text).
    """
    warnings: list[str] = []
    for f in fields:
        if f.close is None:
            continue
        if f.open is not None and _delimiter_may_match_empty(f.open) and _delimiter_may_match_empty(f.close):
            raise check.fail(f"{f.open.key} {f.open.pattern!r} and {f.close.key} {f.close.pattern!r} can both "
                             "match the empty string: the parser would open and close this region at the same "
                             "offset forever; make one of them consume at least one character", f.name,
                             f.close.key)
        if f.close.literals is not None:
            continue
        if f.open is None:
            example = _swallow_example(f.close)
            if example is not None:
                detail = (f"{f.close.pattern!r} can match the empty string before more text (e.g. between "
                          f"{example[0]!r} and {example[1]!r}); the implicit field then closes there with "
                          "nothing and everything after it is never parsed (silently lost); make it consume "
                          "text or use an end anchor ($, \\Z)")
                if v2:
                    raise check.fail(detail, f.name, f.close.key)
                warnings.append(f"field {f.name!r} key {f.close.key!r}: {detail}")
        elif _always_empty(f.close):
            warnings.append(f"field {f.name!r} key {f.close.key!r}: {f.close.pattern!r} matches the empty "
                            "string wherever the region starts, so the region never receives text")
    return warnings


def check_transform_scope(check: "_Checker", f: Field, *, v2: bool = False) -> list[str]:
    """Placeholders that can never resolve, and ``join`` on values that are never strings.

    * A placeholder root must be ``content`` or a named group of the field's open/close patterns
      (template-language.md "Transforms" scope). With ``transform_each`` the roots are the keys of each list
      element, known only at run time, so nothing is checked then.
    * ``join`` needs each block's value to be a str: refused when the content parser never gives
      one (int, float, bool, xml-inline, kv-lines) and no transform can, or when the transform
      always gives a dict, list or non-string scalar, or with ``transform_each`` (a list).

    Both are warnings in v1, where the reference fails only at run time and the conformance
    vectors expect that (``transform-undefined-placeholder``, ``x-join-with-int-content-rejected``),
    and errors in v2.

    Returns:
        list[str]: v1 warnings, each starting ``field '<name>' key '<key>': ``.

    Raises:
        TemplateError: (v2 only) on key ``transform`` or ``join``.
    """
    problems: list[tuple[str, str]] = []
    # With transform_each the scope is the groups plus each element's keys (and, in v2, content):
    # any root may be an element key, so roots are checked only without it.
    if f.transform is not None and not f.transform_each:
        known = ("content", *f.group_names)
        for root in placeholder_roots(f.transform, v2=v2):
            if root not in known:
                groups = f"named groups {list(f.group_names)}" if f.group_names else "no named groups"
                problems.append(("transform", f"placeholder root {root!r} is neither 'content' nor a named group "
                                 f"of the field's patterns (which have {groups}); it would fail at the first "
                                 "region close"))
    if f.join is not None:
        never = NEVER_STRING_PARSERS.get(f.content)
        if f.transform_each:
            why = "with 'transform_each' every block is a list"
        elif f.transform is None:
            why = f"content parser {f.content!r} always gives {never}" if never else None
        elif not _string_capable(f.transform, f.content, v2):
            why = "the transform never gives a string"
        else:
            why = None
        if why is not None:
            problems.append(("join", f"'join' needs every block to parse to a string, but {why}; use "
                             "'repeats' without 'join', or a transform that gives a string"))
    if v2 and problems:
        key, detail = problems[0]
        raise check.fail(detail, f.name, key)
    return [f"field {f.name!r} key {key!r}: {detail}" for key, detail in problems]


def check_template(template: Template, *, v2: bool = False) -> list[str]:
    """Run every load-time check (docs/template-language.md "Load-time checks") on a validated template.

    Args:
        template: the IR from :func:`validate` (any version).
        v2: the template has ``"version": 2`` (soft rules become errors).

    Returns:
        list[str]: warnings for ``respc check``, each ``field '<name>' key '<key>': ...`` (or
        ``key '<key>': ...`` for the start anchor): in v1 the soft rules of
        :func:`check_transform_scope` and :func:`check_progress`; in every version a close that
        matches empty everywhere, and a start anchor pattern that does.

    Raises:
        TemplateError: naming the source, field and key of the first problem.
    """
    check = _Checker(template.source)
    check_defaults(check, template.fields, template.defaults)
    warnings = check_progress(check, template.fields, v2=v2)
    for f in template.fields:
        warnings.extend(check_transform_scope(check, f, v2=v2))
    anchor = template.start_anchor
    if anchor.literals is None and _always_empty(anchor):
        # template-language.md "The prefix and the start anchor" cuts the prefix after the anchor's last match: the
        # end of the prefix, here
        warnings.append(f"key {anchor.key!r}: {anchor.pattern!r} matches the empty string everywhere, so its "
                        "last match is at the end of the prefix and no prefix text is ever parsed")
    return warnings


def _check_size(check: _Checker, doc: dict) -> None:
    """Refuse a template whose canonical JSON text exceeds :data:`MAX_TEMPLATE_CHARS`.

    Raises:
        TemplateError: too large, nested too deeply to measure, or holding a value JSON cannot
            write (docs/security.md, "Limits").
    """
    try:
        size = len(canonical_json(doc))
    except RecursionError:
        raise check.fail("the template is nested too deeply to read") from None
    except (TypeError, ValueError) as exc:
        raise check.fail(f"the template holds a value that is not JSON: {exc}") from None
    if size > MAX_TEMPLATE_CHARS:
        raise check.fail(f"the template is {size:,} characters of JSON; the limit is {MAX_TEMPLATE_CHARS:,} "
                         "(docs/security.md, \"Limits\")")


def validate(loaded: LoadedTemplate) -> Template:
    """Check a loaded template against template-language.md "Load-time checks" and return its IR.

    Args:
        loaded: the document and its source label, from :func:`respc.compiler.load.load_template`.

    Returns:
        Template: the frozen IR.

    Raises:
        TemplateError: naming the source, field and key of the first rule broken (template-language.md "Load-time
            checks"), or of the first hard failure of :func:`check_template` (defaults that cannot grow, a region
            that could open and close at one offset forever).
    """
    check = _Checker(loaded.source)
    doc = loaded.document
    if not isinstance(doc, dict):
        raise check.fail(f"a response template must be a JSON object, got {type(doc).__name__}")
    _check_size(check, doc)
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
    v2_top = [key for key in TOP_LEVEL_KEYS_V2 if key in doc]
    if v2_top and version < 2:
        raise check.fail(f"{v2_top[0]!r} is a key of template language v2; add \"respc_version\": 2 at the top "
                         "of the template", key=v2_top[0])
    raw_fields = doc.get("fields")
    if not isinstance(raw_fields, dict) or not raw_fields:
        raise check.fail("'fields' must be a non-empty dict", key="fields")
    if len(raw_fields) > MAX_FIELDS:
        raise check.fail(f"'fields' has {len(raw_fields)} fields; the limit is {MAX_FIELDS} "
                         "(docs/security.md, \"Limits\")", key="fields")
    v2 = version >= 2
    fields = tuple(_build_field(check, name, spec, version) for name, spec in raw_fields.items())
    implicit = [i for i, f in enumerate(fields) if f.is_implicit]
    if len(implicit) > 1:
        names = ", ".join(fields[i].name for i in implicit)
        raise check.fail(f"at most one field may omit 'open'/'open_pattern' (the implicit field); found: {names}",
                         key="fields")
    if version >= 2:
        _check_v2_fields(check, fields)
    diagnostics = doc.get("diagnostics")
    if diagnostics is not None:
        taken = sorted({f.slot for f in fields if f.slot is not None} | set(defaults))
        if not isinstance(diagnostics, str) or not diagnostics or diagnostics in taken:
            raise check.fail(f"'diagnostics' must name a message key of its own (a non-empty string that is "
                             f"no field's slot and not in defaults: {taken}), got {diagnostics!r}",
                             key="diagnostics")
    anchor = check.delimiter(doc, "start_anchor", "start_anchor_pattern", None)
    if anchor is None:
        raise check.fail("response_template must define 'start_anchor' or 'start_anchor_pattern'",
                         key="start_anchor")
    template = Template(
        source=loaded.source,
        sha256=template_sha256(doc),
        document=doc,
        defaults=copy.deepcopy(defaults),
        fields=fields,
        implicit=implicit[0] if implicit else None,
        start_anchor=anchor,
        version=version,
        diagnostics=diagnostics,
    )
    check_template(template, v2=v2)  # warnings: `respc check` asks check_template again
    return template


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
        if f.end == "value" and not FORMATS[f.content].ends_itself:
            ends = [n for n, r in FORMATS.items() if r.ends_itself]
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


def _captures(groups: tuple, version: int) -> list[str]:
    """The named groups that capture a value, sorted: in v2 every group but the ``repair_...``
    markers of declared repairs (``runtime.stream.REPAIR_GROUP``); in v1 every group (the
    reference refuses a named group in a field without a transform)."""
    return sorted(g for g in groups if version < 2 or not g.startswith("repair_"))
