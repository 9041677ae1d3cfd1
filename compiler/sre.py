"""Template patterns read by the standard library's regex parser, for analysis only.

The passes (automaton, held-text plans, backtracking analysis, grammar, linter) read a template's
patterns, written for the `regex` module, with ``re``'s own parser. That parser warns "Possible
nested set" about ``[[``, which in the `regex` flavour is a POSIX class such as ``[[:alpha:]]``,
not a mistake; the warning would only reach the user as noise, so it is silenced here and nowhere
else.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

try:  # Python 3.11+
    from re import _constants as _sre_c
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_c  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

__all__ = ["parse_pattern", "mark_possessive"]

#: whether the standard library's parser reads possessive repeats (``X++``: Python 3.11+)
NATIVE_POSSESSIVE = hasattr(_sre_c, "POSSESSIVE_REPEAT")
if not NATIVE_POSSESSIVE:  # pragma: no cover - Python 3.10
    # The passes look the opcode up as ``getattr(sre_c, "POSSESSIVE_REPEAT", None)``; on 3.10 it is
    # this one, which only parse_pattern's trees hold (``re`` itself never sees it). getwidth reads
    # it as a repeat, as 3.11's parser does.
    _sre_c.POSSESSIVE_REPEAT = _sre_c._NamedIntConstant(10_000, "POSSESSIVE_REPEAT")
    _sre_parse._REPEATCODES = frozenset(_sre_parse._REPEATCODES | {_sre_c.POSSESSIVE_REPEAT})

#: the scoped flags of the group :func:`mark_possessive` wraps a possessive repeat in
_MARK_FLAGS = _sre_c.SRE_FLAG_ASCII | _sre_c.SRE_FLAG_DOTALL
_MARK = "(?as:"
_REPEAT = re.compile(r"\{(?:\d+|\d*,\d*)\}")
_ESCAPE_DIGITS = {"x": 2, "u": 4, "U": 8}


def _escape_extent(src: str, i: int) -> int:
    """Offset just past the escape at ``src[i] == "\\"`` as ``re`` reads it (an atom)."""
    if i + 1 >= len(src):
        raise re.error("bad escape (end of pattern)", src, i)
    kind = src[i + 1]
    if kind in _ESCAPE_DIGITS:
        return min(i + 2 + _ESCAPE_DIGITS[kind], len(src))
    if kind in "Ngp" and i + 2 < len(src) and src[i + 2] in "{<":
        close = src.find("}" if src[i + 2] == "{" else ">", i + 3)
        return len(src) if close < 0 else close + 1
    if kind.isdigit():  # an octal escape (up to 3 digits) or a group reference (up to 2)
        j = i + 2
        while j < len(src) and j < i + 4 and src[j].isdigit():
            j += 1
        return j
    return i + 2


def _set_extent(src: str, i: int) -> int:
    """Offset just past the set at ``src[i] == "["`` as ``re`` reads it (no nested sets)."""
    j = i + 1
    if j < len(src) and src[j] == "^":
        j += 1
    if j < len(src) and src[j] == "]":
        j += 1
    while j < len(src):
        if src[j] == "\\":
            j = _escape_extent(src, j)
        elif src[j] == "]":
            return j + 1
        else:
            j += 1
    raise re.error("unterminated character set", src, i)


def mark_possessive(pattern: str) -> str | None:
    """``pattern`` with every possessive repeat ``A*+``, ``A++``, ``A?+``, ``A{m,n}+`` written as
    the greedy repeat inside a group with the scoped flags ``(?as:...)``, which Python 3.10's
    parser reads (it has no possessive repeats) and :func:`parse_pattern` turns back into the
    ``POSSESSIVE_REPEAT`` node 3.11's parser makes; None when there is none, or when the pattern
    already writes such a group or uses the verbose flag (then nothing is rewritten).

    Raises:
        re.error: a set or escape that does not end.
    """
    if _MARK in pattern or "(?sa:" in pattern or re.search(r"\(\?[a-zA-Z-]*x", pattern):
        return None
    out: list[str] = []
    groups: list[int] = []  # where in ``out`` each open group starts
    atom = -1  # where in ``out`` the last atom starts (-1: none, a repeat would be an error)
    changed = False
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        end = i + 1
        quantifier = False
        if c == "\\":
            end = _escape_extent(pattern, i)
            atom = len(out)
        elif c == "[":
            end = _set_extent(pattern, i)
            atom = len(out)
        elif c == "(":
            if pattern.startswith("(?#", i):
                close = pattern.find(")", i)
                end = n if close < 0 else close + 1
                out.append(pattern[i:end])
                i = end
                continue
            groups.append(len(out))
            atom = -1
        elif c == ")":
            atom = groups.pop() if groups else -1
        elif c in "*+?":
            quantifier = True
        elif c == "{" and _REPEAT.match(pattern, i):
            end = _REPEAT.match(pattern, i).end()
            quantifier = True
        elif c in "|^$":
            atom = -1
        else:
            atom = len(out)
        if quantifier and atom >= 0 and end < n and pattern[end] == "+":
            body = "".join(out[atom:]) + pattern[i:end]
            del out[atom:]
            out.append(_MARK + body + ")")
            changed = True
            i = end + 1
            continue
        if quantifier and end < n and pattern[end] == "?":
            end += 1  # lazy
        out.append(pattern[i:end])
        i = end
    return "".join(out) if changed else None


def _unmark(tree: Any) -> None:
    """Turn the groups :func:`mark_possessive` wrote back into ``POSSESSIVE_REPEAT`` nodes."""
    data = tree.data
    for k, (op, av) in enumerate(data):
        if op is _sre_c.SUBPATTERN:
            group, add, delete, sub = av
            if (group is None and add == _MARK_FLAGS and not delete and len(sub.data) == 1
                    and sub.data[0][0] is _sre_c.MAX_REPEAT):
                low, high, body = sub.data[0][1]
                _unmark(body)
                data[k] = (_sre_c.POSSESSIVE_REPEAT, (low, high, body))
                continue
            _unmark(sub)
        elif op is _sre_c.BRANCH:
            for alternative in av[1]:
                _unmark(alternative)
        elif op in (_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT) or op is getattr(_sre_c, "POSSESSIVE_REPEAT", None):
            _unmark(av[2])
        elif op in (_sre_c.ASSERT, _sre_c.ASSERT_NOT):
            _unmark(av[1])
        elif op is _sre_c.GROUPREF_EXISTS:
            for sub in av[1:]:
                if sub is not None:
                    _unmark(sub)
        elif op is getattr(_sre_c, "ATOMIC_GROUP", None):
            _unmark(av)


def _parse_marked(pattern: str, flags: int = 0) -> Any:
    """The parse tree of ``pattern`` read through :func:`mark_possessive` (what Python 3.10 gets;
    tests/test_held.py compares it with 3.11's own parse of possessive repeats)."""
    marked = mark_possessive(pattern)
    if marked is None:
        raise re.error("no possessive repeat to rewrite", pattern)
    tree = _sre_parse.parse(marked, flags)
    _unmark(tree)
    return tree


def parse_pattern(pattern: str, flags: int = 0) -> Any:
    """``re``'s parse tree of ``pattern`` (a ``SubPattern``), without its FutureWarnings. On
    Python 3.10, whose parser has no possessive repeats, a pattern that has them is read through
    :func:`mark_possessive` and gets the tree Python 3.11 gives it.

    Raises:
        re.error: the standard library cannot read the pattern (``regex``-only syntax among others).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            return _sre_parse.parse(pattern, flags)
        except re.error:
            if NATIVE_POSSESSIVE or mark_possessive(pattern) is None:
                raise
        # Python 3.10: possessive repeats (gpt_oss's ``[^<\\s]++``) read as 3.11 reads them, so
        # that compiling gives the same module on every supported version
        return _parse_marked(pattern, flags)
