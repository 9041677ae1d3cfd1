"""Grammar export, pass 1: the grammar IR of one template's output language (docs/grammar.md).

Theory of operation
-------------------
A grammar here is a set of named rules over a handful of node kinds (:class:`Lit`, :class:`Chars`,
:class:`Seq`, :class:`Alt`, :class:`Rep`, :class:`Ref`, :class:`Except`). It is built from the
region automaton (which delimiters each state watches) and from the content parsers' bodies, with
the offered tools as input, and rendered per engine by :mod:`respc.compiler.grammar_render`.
Nothing is decided while rendering.

The language is the text the parser consumes (the prefix after its last start anchor, then the
model output)::

    start   ::= T (R T)* ICLOSE?          (auto; ``required`` / a named tool need one tool region)
    R       ::= OPEN_i BODY_i CLOSE_i      one alternative per explicit field
    T       ::= text containing none of the delimiters watched outside (:class:`Except`)

A text body excludes its region's close (and the opens watched inside it). A tool-call body is
written from the tools: the call's name is one of the offered tools (in the open delimiter's
``name`` group or in the JSON/pythonic body, as the field's transform says) and its arguments
follow that tool's JSON schema (properties in schema order, required ones present, no others).

A region's body is written by its content format (``runtime/formats/<name>.py``: the ``Format``'s
``body_grammar`` and ``args_grammar`` hooks, docs/grammar.md "Formats write their bodies"); this module
lays out regions, free text and the modes, and hands the hooks its builder (``b.ir`` is this module).

Exactness: a regex delimiter is translated from its ``sre`` parse tree; lookarounds and anchors
cannot be expressed in a context-free grammar, so they are dropped and the grammar is marked
inexact (``Grammar.notes`` says why). Formats without a body hook (``kv-lines``, ``xml-tree``,
``int``, ``float``) have any text as their body and are inexact too.
"""

from __future__ import annotations

import functools
import json
import re
import zlib
from dataclasses import dataclass, field as _dc_field
from typing import Any

import regex

try:  # Python 3.11+
    from re import _constants as sre_c
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

from .automaton import OUTSIDE, Automaton, build_automaton
from .ir import Delimiter, Field, Template
from ..runtime.content import group_end
from ..runtime.formats import FORMATS
from ..runtime.formats.base import REJECTED as _REJECTED
from ..runtime.errors import RespcError
from ..runtime.tools import is_function_name
from .sre import parse_pattern as _parse_pattern

__all__ = ["Lit", "Chars", "Seq", "Alt", "Rep", "Ref", "Except", "Grammar", "build_grammar_ir",
           "TOOL_CHOICES", "GrammarExportError", "regex_to_ir", "tools_from_message", "without_optional_repairs"]

TOOL_CHOICES = ("auto", "required", "none")
MAX_CHAR = 0x10FFFF


@functools.lru_cache(maxsize=1024)
def parse_pattern(pattern: str) -> Any:
    """:func:`respc.compiler.sre.parse_pattern` of ``pattern``, computed once per pattern: the
    same delimiter and tag patterns are read once per tool and per parameter, and the trees are
    only read here, never changed (docs/grammar.md "Cost").

    Raises:
        re.error: as :func:`respc.compiler.sre.parse_pattern` (not cached).
    """
    return _parse_pattern(pattern)


class GrammarExportError(RespcError, ValueError):
    """Bad grammar-export input (an unknown tool name, a malformed tools list): a ``RespcError``
    (README, "Errors") and a ``ValueError``."""


# --- nodes ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Lit:
    """A literal string (non-empty)."""
    text: str


@dataclass(frozen=True)
class Chars:
    """One character from ``ranges`` (inclusive code point pairs, sorted, disjoint), or any
    character outside them when ``negate``."""
    ranges: tuple[tuple[int, int], ...]
    negate: bool = False


@dataclass(frozen=True)
class Seq:
    """The items one after the other; ``Seq(())`` is the empty string."""
    items: tuple


@dataclass(frozen=True)
class Alt:
    """One of the items (in preference order)."""
    items: tuple


@dataclass(frozen=True)
class Rep:
    """``item`` repeated ``min`` to ``max`` times (``max`` None: unbounded); ``lazy``: the pattern
    it came from prefers fewer (only regex renderings can say so)."""
    item: Any
    min: int = 0
    max: int | None = None
    lazy: bool = False


@dataclass(frozen=True)
class Ref:
    """The rule named ``name``."""
    name: str


@dataclass(frozen=True)
class Except:
    """Any text, possibly empty, that contains none of ``literals`` (template-language.md "Watch sets": the delimiters a
    state watches). Renderers lower it to a regex or to right-linear rules (Aho-Corasick states).

    ``within``: when set (a :class:`Chars`), every character of the text is one of it (a lazy
    ``[^\\n]*?`` before a literal: text of that class up to the literal's first occurrence)."""
    literals: tuple[str, ...]
    within: Any = None


EMPTY = Seq(())
ANY_CHAR = Chars((), negate=True)


def seq(*items):
    flat = []
    for item in items:
        if isinstance(item, Seq):
            flat.extend(item.items)
        elif item is not None:
            flat.append(item)
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def alt(*items):
    uniq = list(dict.fromkeys(items))
    return uniq[0] if len(uniq) == 1 else Alt(tuple(uniq))


def opt(item):
    return Rep(item, 0, 1)


def lits(*texts: str):
    return alt(*(Lit(t) for t in texts))


@dataclass
class Grammar:
    """Named rules and where to start.

    Attributes:
        rules (dict[str, node]): in creation order (renderers keep it: deterministic output).
        start (str): the start rule's name.
        exact (bool): False when some construct was approximated (see ``notes``).
        notes (list[str]): why it is not exact, one line each (field and key named).
    """
    rules: dict = _dc_field(default_factory=dict)
    start: str = "start"
    exact: bool = True
    notes: list = _dc_field(default_factory=list)
    #: literal sets kept out of string values -> their number in rule names (JsonBuilder)
    excluded: dict = _dc_field(default_factory=dict)
    #: content key -> the rule already written for it (:func:`any_order`): identical rules are shared,
    #: not written again per tool or per region form (docs/grammar.md "Cost")
    shared: dict = _dc_field(default_factory=dict)

    def add(self, name: str, node) -> Ref:
        """Add rule ``name`` (first definition wins: rules are shared by key) and return a Ref."""
        if name not in self.rules:
            self.rules[name] = node
        return Ref(name)

    def share(self, prefix: str, node) -> Ref:
        """The rule whose body is ``node``: the one already written with that body under ``prefix``
        (compared by content), or a new one named ``prefix_N``. Engines that compile the grammar
        (xgrammar) take time that grows faster than the number of rules, so a body built again for
        another region form (closed, cut by the end of the output, holding the required call) is
        written once (docs/grammar.md "Cost")."""
        key = ("rule", prefix, node)
        if key not in self.shared:
            self.shared[key] = self.add(f"{prefix}_{len(self.rules)}", node)
        return self.shared[key]

    def inexact(self, note: str) -> None:
        self.exact = False
        if note not in self.notes:
            self.notes.append(note)


# --- regex -> IR ----------------------------------------------------------------------------

_CATEGORIES = {
    "CATEGORY_DIGIT": ((0x30, 0x39),),
    "CATEGORY_SPACE": ((0x09, 0x0D), (0x20, 0x20)),
    "CATEGORY_WORD": ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
    "CATEGORY_LINEBREAK": ((0x0A, 0x0A),),
}


def _norm(ranges) -> tuple[tuple[int, int], ...]:
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def _complement(ranges) -> tuple[tuple[int, int], ...]:
    out, nxt = [], 0
    for lo, hi in _norm(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CHAR:
        out.append((nxt, MAX_CHAR))
    return tuple(out)


class _Inexact(Exception):
    pass


def _category(av, notes) -> tuple[tuple[int, int], bool]:
    name = str(av)
    negate = "_NOT_" in name
    base = name.replace("_NOT_", "_")
    if base not in _CATEGORIES:
        raise _Inexact(name)
    if base in ("CATEGORY_WORD", "CATEGORY_DIGIT"):
        notes.append(f"\\{'w' if 'WORD' in base else 'd'} is read as ASCII")
    return _CATEGORIES[base], negate


def _set_to_chars(av, notes) -> Chars:
    negate = bool(av) and av[0][0] is sre_c.NEGATE
    ranges: list = []
    for op, a in (av[1:] if negate else av):
        if op is sre_c.LITERAL:
            ranges.append((a, a))
        elif op is sre_c.RANGE:
            ranges.append(a)
        elif op is sre_c.CATEGORY:
            rs, neg = _category(a, notes)
            ranges.extend(_complement(rs) if neg else rs)
        else:
            raise _Inexact(str(op))
    return Chars(_norm(ranges), negate)


def _seq_to_ir(tree, groups: dict, names: dict, notes: list):
    items = []
    for op, av in tree:
        if op is sre_c.LITERAL:
            items.append(Lit(chr(av)))
        elif op is sre_c.NOT_LITERAL:
            items.append(Chars(((av, av),), True))
        elif op is sre_c.ANY:
            items.append(ANY_CHAR)
        elif op is sre_c.IN:
            items.append(_set_to_chars(av, notes))
        elif op is sre_c.CATEGORY:
            rs, neg = _category(av, notes)
            items.append(Chars(rs, neg))
        elif op is sre_c.BRANCH:
            items.append(alt(*(_seq_to_ir(b, groups, names, notes) for b in av[1])))
        elif op is sre_c.SUBPATTERN:
            group, _add, _del, sub = av
            name = names.get(group)
            if _add:
                notes.append("inline flags are ignored")
            if name is not None and name in groups:
                items.append(groups[name])
            else:
                items.append(_seq_to_ir(sub, groups, names, notes))
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT) or op is getattr(sre_c, "POSSESSIVE_REPEAT", None):
            lo, hi, sub = av
            items.append(Rep(_seq_to_ir(sub, groups, names, notes), lo, None if hi == sre_c.MAXREPEAT else hi,
                             op is sre_c.MIN_REPEAT))
        elif op is getattr(sre_c, "ATOMIC_GROUP", None):
            items.append(_seq_to_ir(av, groups, names, notes))
        elif op is sre_c.GROUPREF and names.get(av) in groups:
            # a backreference to a group the caller writes as a fixed node (xml-inline's
            # ``</(?P=key)>`` with the key a literal): the same node again
            items.append(groups[names[av]])
        elif op is sre_c.AT:
            notes.append(f"anchor {av} dropped")
        elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
            notes.append("lookaround dropped")
        else:
            raise _Inexact(str(op))
    # merge adjacent one-character literals into one literal
    merged: list = []
    for item in items:
        if isinstance(item, Lit) and merged and isinstance(merged[-1], Lit):
            merged[-1] = Lit(merged[-1].text + item.text)
        else:
            merged.append(item)
    flat = [x for item in merged for x in (item.items if isinstance(item, Seq) else (item,))]
    return seq(*_lazy_to_first(flat, notes)) if flat else EMPTY


def _lazy_to_first(items, notes: list) -> list:
    """Rewrite ``C{k,}? L`` (a lazy unbounded repeat of one character class, then a literal) as
    ``C{k} (text of C without L) L``: the regex engine ends a lazy repeat at the first ``L`` from
    which the rest of the pattern matches, so when ``L`` ends the pattern this is exactly the
    language the delimiter matches (Python ``re`` semantics of ``*?``); when more follows ``L``,
    a match that needs a later ``L`` is left out (noted). Earley's dynamic lexer and the
    engines' greedy lexers read the rewritten form without backtracking into the repeat."""
    items = list(items)
    out: list = []
    i = 0
    while i < len(items):
        item = items[i]
        nxt = items[i + 1] if i + 1 < len(items) else None
        lead = nxt.items[0] if isinstance(nxt, Seq) and nxt.items else nxt
        if (isinstance(item, Rep) and item.lazy and item.max is None and isinstance(item.item, Chars)
                and isinstance(lead, Lit)):
            if item.min:
                out.append(Rep(item.item, item.min, item.min))
            out.append(Except((lead.text,), None if item.item == ANY_CHAR else item.item))
            if i + 2 < len(items) or (isinstance(nxt, Seq) and len(nxt.items) > 1):
                notes.append(f"lazy repeat read as text up to the first {lead.text!r}")
        else:
            out.append(item)
        i += 1
    return out


def without_optional_repairs(pattern: str, mark: str = "repair_") -> str:
    """``pattern`` without its optional declared-repair groups (``(?P<repair_x>...)?``, see
    ``runtime/stream.py`` REPAIR_GROUP): the damaged markup a template accepts but a model
    should not be made to write. A repair group that is neither optional nor an alternative is kept.

    Args:
        pattern: a delimiter regex source.
        mark: the group-name prefix of declared repairs.

    Returns:
        str: the pattern source with each ``(?P<mark...>...)?``, and each such group that is a
        later alternative (``|(?P<mark...>...)`` before ``|``, ``)`` or the end), removed (escapes
        and character classes are skipped when matching the group's parentheses).
    """
    head = "(?P<" + mark
    out, i = [], 0
    while True:
        start = pattern.find(head, i)
        if start < 0:
            out.append(pattern[i:])
            return "".join(out)
        end = group_end(pattern, start)
        if end < len(pattern) and pattern[end] == "?" and not pattern.startswith("??", end):
            out.append(pattern[i:start])                  # (?P<repair_x>...)?  -> nothing
            i = end + 1
        elif start > 0 and pattern[start - 1] == "|" and pattern[start - 2:start] != "\\|" \
                and (end == len(pattern) or pattern[end] in "|)"):
            out.append(pattern[i:start - 1])              # ...|(?P<repair_x>...)  -> ...
            i = end
        else:
            out.append(pattern[i:end])
            i = end


_START_ANCHORS = (sre_c.AT_BEGINNING, sre_c.AT_BEGINNING_STRING)


def _start_split(tree) -> tuple[list, list] | None:
    """``(anchored, late)`` branches of a pattern whose top level is an alternation in which some,
    not all, branches start with ``^`` or ``\\A`` (ernie4_5's ``^\\s*(?:<think>\\s*)?|<think>\\s*``);
    anchored branches lose their leading anchor. None for any other pattern."""
    items = list(tree)
    whole = _strip_start(items)
    if whole is not None:  # every match starts at offset 0 (gpt_oss's ``(?P<repair_stripped_tokens>^analysis)``)
        return [whole], []
    if len(items) != 1 or items[0][0] is not sre_c.BRANCH:
        return None
    anchored, late = [], []
    for b in items[0][1][1]:
        ops = list(b)
        if ops and ops[0][0] is sre_c.AT and ops[0][1] in _START_ANCHORS:
            anchored.append(ops[1:])
        else:
            late.append(ops)
    return (anchored, late) if anchored and late else None


def _strip_start(ops: list) -> list | None:
    """``ops`` (a parsed sequence) without its leading ``^``/``\\A`` when every match of it starts
    with one (directly, or first in a leading group), else None."""
    if not ops:
        return None
    op, av = ops[0]
    if op is sre_c.AT and av in _START_ANCHORS:
        return list(ops[1:])
    if op is sre_c.SUBPATTERN:
        inner = _strip_start(list(av[3]))
        return None if inner is None else inner + list(ops[1:])
    return None


def has_start_branches(pattern: str) -> bool:
    """Whether ``pattern`` is an alternation some of whose branches match only at the start of the
    output (``^``/``\\A``: the parser tries them at offset 0 only, runtime/stream.py
    ``partial_search``), or a pattern all of whose matches do (then it opens nothing elsewhere).
    The grammar gives such an open two forms (:func:`regex_to_ir` ``at_start``)."""
    try:
        return _start_split(parse_pattern(pattern)) is not None
    except Exception:  # noqa: BLE001 - unreadable: no split
        return False


def nullable(node) -> bool:
    """Whether ``node`` (a node without rule references) matches the empty string."""
    if isinstance(node, Lit):
        return node.text == ""
    if isinstance(node, Seq):
        return all(nullable(x) for x in node.items)
    if isinstance(node, Alt):
        return any(nullable(x) for x in node.items)
    if isinstance(node, Rep):
        return node.min == 0 or nullable(node.item)
    return isinstance(node, Except)


def regex_to_ir(pattern: str, groups: dict | None = None, at_start: bool | None = None) -> tuple[Any, list[str]]:
    """Translate a delimiter regex into a node.

    Args:
        pattern: ``re``-compatible source (the ``regex`` module's extras are not read).
        groups: named group -> node that replaces the group (``name`` -> the tool names).
        at_start: for a pattern :func:`has_start_branches` splits: True gives every branch (the
            match at offset 0, anchors exact there), False only the unanchored ones (a match
            anywhere else); None (or another pattern) translates the whole pattern, anchors dropped.

    Returns:
        (node, notes): notes list what was approximated (anchors and lookarounds dropped, ``\\w``
        read as ASCII); an unreadable pattern gives ``Rep(ANY_CHAR, 1)`` and a note.
    """
    notes: list[str] = []
    try:
        tree = parse_pattern(pattern)
        names = {v: k for k, v in tree.state.groupdict.items()}
        split = _start_split(tree) if at_start is not None else None
        if split is not None:
            anchored, late = split
            branches = (anchored + late) if at_start else late
            if not branches:  # a wholly anchored pattern matches nowhere but at offset 0
                return NEVER, notes
            return alt(*(_seq_to_ir(b, groups or {}, names, notes) for b in branches)), notes
        return _seq_to_ir(tree, groups or {}, names, notes), notes
    except (_Inexact, Exception) as exc:  # noqa: BLE001 - any unreadable construct: approximate
        return Rep(ANY_CHAR, 1), [f"pattern not translated ({exc})"]


def _leads(pattern: str, anchored: bool = False) -> list[str]:
    """Literal strings such that every match of ``pattern`` starts with one of them ('' if some
    match may start with anything). Used to keep delimiters out of free text. A pattern with
    branches that match at offset 0 only (:func:`_start_split`) gives the other branches' leads,
    or with ``anchored`` those branches' leads."""
    try:
        tree = parse_pattern(pattern)
    except Exception:  # noqa: BLE001
        return [""]

    def lead(seq_) -> list[str]:
        out = ""
        for i, (op, av) in enumerate(seq_):
            if op is sre_c.LITERAL:
                out += chr(av)
                continue
            if op is sre_c.AT and not out:
                continue
            if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT) and not out and av[0] == 0:
                continue  # every match still contains what follows an optional start
            if op is sre_c.ASSERT and not out and av[0] == 1:  # lookahead at the start
                return lead(list(av[1]))
            if op is sre_c.SUBPATTERN and not out:
                rest = list(seq_[i + 1:])
                return [x for sub in [list(av[3])] for x in lead(sub + rest)]
            if op is sre_c.BRANCH and not out:
                rest = list(seq_[i + 1:])
                return [x for b in av[1] for x in lead(list(b) + rest)]
            break
        return [out]

    split = _start_split(tree)
    if split is not None:  # anchored branches match at offset 0 only, which the grammar's start rule reads
        return list(dict.fromkeys(x for b in split[0 if anchored else 1] for x in lead(b)))
    if anchored:
        return []
    return list(dict.fromkeys(lead(list(tree))))


_INLINE_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")


def check_tool_name(f: Field, group: str, name: str, where: str) -> None:
    """Refuse an offered tool whose ``name`` the open delimiter of ``f`` cannot read back: its
    ``group`` (the name group, ``(?P<name>[^\\s<]+)``) must match the whole name, or a grammar
    would make the model write a call that the parser reads as text, or as another name
    (docs/grammar.md, "Tool names"; red team s12).

    Raises:
        GrammarExportError: naming the tool, the field and the group's pattern.
    """
    pattern = f.open.pattern if f.open is not None else None
    head = f"(?P<{group}>"
    at = pattern.find(head) if pattern else -1
    if at < 0:
        return
    sub = pattern[at + len(head):group_end(pattern, at) - 1]
    lead = _INLINE_FLAGS.match(pattern)
    try:
        rx = regex.compile((lead.group() if lead else "") + f"(?:{sub})", regex.DOTALL)
    except (regex.error, TypeError, ValueError):
        return  # a group that refers outside itself: left to the grammar checks
    if rx.fullmatch(name) is None:
        raise GrammarExportError(f"{where}: tool {name!r} cannot be named in this template: the open's name "
                                 f"group {sub!r} does not match the whole name, so the parser would not read "
                                 "the call back (rename the tool)")


def delimiter_ir(delim: Delimiter, groups: dict | None, g: Grammar, where: str, at_start: bool | None = None):
    """The node of an open/close delimiter (literals: their alternation). A pattern's optional
    declared repairs (damaged markup the parser accepts, :func:`without_optional_repairs`) are
    left out: the model is not made to write them, and a repair after a name group (gpt-oss's
    ``(?P<repair_recipient_again>\\s*to=functions\\.[^<\\s]+)?``) would let the text after the
    name continue it (the parser's greedy group reads a longer name, docs/grammar.md "What the grammar says")."""
    if delim.literals is not None:
        return lits(*sorted(delim.literals, key=len, reverse=True))
    node, notes = regex_to_ir(without_optional_repairs(delim.pattern), groups, at_start)
    for note in notes:
        if "ASCII" not in note:
            g.inexact(f"{where} {delim.key} {delim.pattern!r}: {note}")
    return node


def _has(node, marker) -> bool:
    if node is marker:
        return True
    if isinstance(node, (Seq, Alt)):
        return any(_has(x, marker) for x in node.items)
    if isinstance(node, Rep):
        return _has(node.item, marker)
    return False


def select_group(node, marker, replacement):
    """``node`` (a translated pattern in which one named group was replaced by the object
    ``marker``) with that group written as ``replacement``, or, with ``replacement`` None, left
    out: every optional or alternative around the group is taken (or skipped) accordingly, so the
    group is certainly present (absent). A ``value_parser`` switch reads how a value is parsed from
    such a group, so the grammar pairs each selector text with its value
    (docs/grammar.md "What the grammar says", xml-inline). Returns None
    when the pattern cannot be written that way (a mandatory group left out, a repeated one)."""
    present = replacement is not None

    def pick(n, want: bool):
        if n is marker:
            return replacement if want else None
        if not _has(n, marker):
            return None if want else n
        if isinstance(n, Seq):
            items = []
            for x in n.items:
                y = pick(x, want and _has(x, marker))
                if y is None:
                    return None
                items.append(y)
            return seq(*items) if items else EMPTY
        if isinstance(n, Alt):
            forms = [y for y in (pick(x, want) for x in n.items) if y is not None]
            return alt(*forms) if forms else None
        if isinstance(n, Rep):
            if want:
                return pick(n.item, True) if n.max == 1 and n.min <= 1 else None
            return EMPTY if n.min == 0 else None
        return None

    return pick(node, present)


has_node = _has


def _rewrite(node, leaf):
    """``node`` rebuilt bottom-up: ``leaf(n)`` gives a replacement for ``n`` or None; where it gives
    None, a :class:`Seq`, :class:`Alt` or :class:`Rep` is rebuilt from its rewritten items and any
    other node is kept."""
    new = leaf(node)
    if new is not None:
        return new
    if isinstance(node, Seq):
        return seq(*(_rewrite(x, leaf) for x in node.items))
    if isinstance(node, Alt):
        return alt(*(_rewrite(x, leaf) for x in node.items))
    if isinstance(node, Rep):
        return Rep(_rewrite(node.item, leaf), node.min, node.max, node.lazy)
    return node


def replace_nodes(node, mapping: dict):
    """``node`` with each object of ``mapping`` (compared by identity) replaced by its value."""

    def leaf(n):
        for key, value in mapping.items():
            if n is key:
                return value
        return None

    return _rewrite(node, leaf)


def narrow_chars(node, firsts: str):
    """``node`` with the characters of ``firsts`` taken out of every character class (:class:`Chars`)
    that holds one: a pattern's free stretches (``[^>]*`` between a parameter tag's name and its
    ``>``) then hold no delimiter starting with one of them (the parser would find it in the raw
    body first, docs/grammar.md). Literals are kept."""
    codes = sorted({ord(c) for c in firsts})

    def leaf(n):
        if not isinstance(n, Chars):
            return None
        ranges = _complement(n.ranges) if n.negate else n.ranges
        if not any(lo <= c <= hi for c in codes for lo, hi in ranges):
            return n
        out = list(ranges)
        for c in codes:
            out = [r for lo, hi in out for r in (((lo, c - 1), (c + 1, hi)) if lo <= c <= hi else ((lo, hi),))
                   if r[0] <= r[1]]
        return Chars(_norm(out)) if out else Lit("\x00never")

    return _rewrite(node, leaf)


NEVER = Lit("\x00never")


def _chars_set(n: Chars) -> tuple[tuple[int, int], ...]:
    """The code point ranges ``n`` matches (its complement when negated)."""
    return _complement(n.ranges) if n.negate else _norm(n.ranges)


def _minus(ranges, bad) -> tuple[tuple[int, int], ...]:
    """``ranges`` without the code points of ``bad`` (both sorted, disjoint range tuples)."""
    keep = _complement(bad)
    out = [(max(lo, klo), min(hi, khi)) for lo, hi in ranges for klo, khi in keep if max(lo, klo) <= min(hi, khi)]
    return _norm(out)


def nullable_in(node, rules: dict, _seen: frozenset = frozenset()) -> bool:
    """:func:`nullable` through rule references (``rules``: the grammar's rules)."""
    if isinstance(node, Ref):
        if node.name in _seen or node.name not in rules:
            return False
        return nullable_in(rules[node.name], rules, _seen | {node.name})
    if isinstance(node, Seq):
        return all(nullable_in(x, rules, _seen) for x in node.items)
    if isinstance(node, Alt):
        return any(nullable_in(x, rules, _seen) for x in node.items)
    if isinstance(node, Rep):
        return node.min == 0 or nullable_in(node.item, rules, _seen)
    return nullable(node)


def not_starting(node, bad: Chars, rules: dict):
    """The non-empty strings of ``node`` whose first character is not one of ``bad`` (and the
    empty string when ``node`` matches it), as a node; rule references at the start are inlined
    (a few levels; deeper, or left-recursive, the strings through them are left out). Used after a
    name group that ends an open with a greedy class (cwm's ``(?P<name>[^\\s<]+)``): the parser's
    group runs on over any character of the class, so what follows the name must not start with
    one (docs/grammar.md "What the grammar says", "Names that run on"). Narrower than exact where a text
    run (:class:`Except`) starts with one of its own literals' first characters: those strings
    are left out (the sound side)."""
    drop = _chars_set(bad)

    def cat(*items):
        return NEVER if NEVER in items else seq(*items)

    def either(*items):
        kept = [x for x in items if x != NEVER]
        return alt(*kept) if kept else NEVER

    def first(n, depth: int):
        if isinstance(n, Lit):
            return n if n.text and not any(lo <= ord(n.text[0]) <= hi for lo, hi in drop) else NEVER
        if isinstance(n, Chars):
            kept = _minus(_chars_set(n), drop)
            return Chars(kept) if kept else NEVER
        if isinstance(n, Except):
            allowed = _complement(drop)
            if n.within is not None:
                allowed = _minus(allowed, _complement(_chars_set(n.within)))
            allowed = _minus(allowed, _norm([(ord(x[0]), ord(x[0])) for x in n.literals if x]))
            return cat(Chars(allowed), n) if allowed else NEVER
        if isinstance(n, Alt):
            return either(*(first(x, depth) for x in n.items))
        if isinstance(n, Rep):
            if n.max == 0:
                return NEVER
            return cat(first(n.item, depth), Rep(n.item, max(n.min - 1, 0), None if n.max is None else n.max - 1,
                                                  n.lazy))
        if isinstance(n, Ref):
            if depth > 8 or n.name not in rules:
                return NEVER
            return first(rules[n.name], depth + 1)
        if isinstance(n, Seq):
            if not n.items:
                return NEVER
            head, rest = n.items[0], seq(*n.items[1:])
            out = cat(first(head, depth), rest)
            if nullable_in(head, rules):
                out = either(out, first(rest, depth))
            return out
        return NEVER

    def firsts(n, depth: int) -> list:
        """The characters ``n``'s strings may start with (a superset)."""
        if isinstance(n, Lit):
            return [(ord(n.text[0]), ord(n.text[0]))] if n.text else []
        if isinstance(n, Chars):
            return list(_chars_set(n))
        if isinstance(n, Alt):
            return [r for x in n.items for r in firsts(x, depth)]
        if isinstance(n, Rep):
            return firsts(n.item, depth) if n.max != 0 else []
        if isinstance(n, Ref):
            return [(0, MAX_CHAR)] if depth > 8 or n.name not in rules else firsts(rules[n.name], depth + 1)
        if isinstance(n, Seq):
            out: list = []
            for x in n.items:
                out += firsts(x, depth)
                if not nullable_in(x, rules):
                    break
            return out
        return [(0, MAX_CHAR)]

    if _minus(_norm(firsts(node, 0)), _complement(drop)) == ():
        return node  # nothing it writes starts inside the class: unchanged
    out = first(node, 0)
    if nullable_in(node, rules):
        return EMPTY if out == NEVER else alt(out, EMPTY)
    return out


def name_run_on(pattern: str, group: str) -> Chars | None:
    """The character class a pattern's name group repeats greedily when that group ends the
    pattern (cwm's ``<tool:function>\\s*(?P<name>[^\\s<]+)``): the parser's match of the name
    runs on over any following character of it. None when the pattern ends otherwise."""
    try:
        tree = parse_pattern(without_optional_repairs(pattern))
    except Exception:  # noqa: BLE001 - unreadable: nothing derived
        return None
    names = {v: k for k, v in tree.state.groupdict.items()}
    items = list(tree)
    if not items or items[-1][0] is not sre_c.SUBPATTERN or names.get(items[-1][1][0]) != group:
        return None
    sub = list(items[-1][1][3])
    if len(sub) != 1 or sub[0][0] is not sre_c.MAX_REPEAT:
        return None
    lo, hi, inner = sub[0][1]
    if hi != sre_c.MAXREPEAT:
        return None
    node = _seq_to_ir(inner, {}, names, [])
    if isinstance(node, Lit) and len(node.text) == 1:
        return Chars(((ord(node.text), ord(node.text)),))
    return node if isinstance(node, Chars) else None


#: public names of the helpers the formats' grammar hooks use (runtime/formats/*.py): merged code-point
#: ranges, the literal leads of a pattern, whether a node holds another (by identity)
norm_ranges = _norm
pattern_leads = _leads


def delimiter_leads(delim: Delimiter, g: Grammar, where: str) -> list[str]:
    if delim.literals is not None:
        return list(delim.literals)
    leads = _leads(delim.pattern)
    if "" in leads:
        g.inexact(f"{where} {delim.key} {delim.pattern!r}: no literal lead; free text may contain it")
    return [x for x in leads if x]


# --- JSON -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class JsonDialect:
    """The JSON reader's dialect (content args of ``json``)."""
    string_delims: tuple[tuple[str, str], ...] = ()
    unquoted_keys: bool = False
    python_literals: bool = False
    pythonic: bool = False  # Python literal syntax (pythonic calls)

    @property
    def tag(self) -> str:
        if self.pythonic:
            return "py"
        parts = ["json"]
        if self.string_delims:
            parts.append("sd")
        if self.unquoted_keys:
            parts.append("uk")
        if self.python_literals:
            parts.append("pl")
        return "_".join(parts)


WS = Rep(Chars(((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20))), 0, None)
_DIGIT = Chars(((0x30, 0x39),))
_DIGIT19 = Chars(((0x31, 0x39),))
_HEX = Chars(((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)))


def _holds(text: str, exclude: tuple[str, ...]) -> bool:
    """Whether ``text`` holds one of the delimiters ``exclude`` as raw text."""
    return any(x and x in text for x in exclude)


def _json_string(text: str, exclude: tuple[str, ...]) -> str:
    """``json.dumps(text, ensure_ascii=False)``, with a character of each delimiter of ``exclude``
    that would occur in it written as its ``\\uXXXX`` escape instead (JSON and Python string
    literals read the same string back): the text a grammar may make the model write inside a body
    whose parser watches those delimiters (docs/grammar.md, "What the grammar says"). A delimiter
    whose characters are all escapes or outside the BMP already stays (none in practice)."""
    pieces = [json.dumps(c, ensure_ascii=False)[1:-1] for c in text]
    while True:
        out = '"' + "".join(pieces) + '"'
        hits = [(out.find(x), x) for x in exclude if x and x in out]
        if not hits:
            return out
        pos, x = min(hits)
        at, k = 1, 0  # the character whose encoding covers position pos, then the next ones in the hit
        while k < len(pieces) and at + len(pieces[k]) <= pos:
            at += len(pieces[k])
            k += 1
        while k < len(pieces) and at < pos + len(x):
            c = text[k]
            if not pieces[k].startswith("\\u") and ord(c) < 0x10000:
                pieces[k] = f"\\u{ord(c):04x}"
                break
            at += len(pieces[k])
            k += 1
        else:
            return out


def _json_text(value: Any, exclude: tuple[str, ...]) -> str:
    """``json.dumps(value, ensure_ascii=False, separators=(", ", ": "))`` with every string (keys
    too) written by :func:`_json_string`."""
    if isinstance(value, str):
        return _json_string(value, exclude)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_json_string(str(k), exclude)}: {_json_text(v, exclude)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_json_text(v, exclude) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


class JsonBuilder:
    """JSON (and Python-literal) value rules for one dialect, shared through ``g``.

    ``exclude``: delimiters the parser watches while it reads this body (its region's close, the
    opens watched inside it). The parser finds them in the raw text, inside a string value too
    (it does not read strings as strings while it looks for the close), so no string value here
    may contain one as raw text (docs/grammar.md, "What the grammar says"); written escaped
    (``<\\/tool_call>``, ``\\u003c``) it is another text and allowed."""

    def __init__(self, g: Grammar, dialect: JsonDialect, exclude: tuple[str, ...] = ()) -> None:
        self.g, self.d = g, dialect
        self.exclude = tuple(sorted({x for x in exclude if x}))
        self.p = dialect.tag
        if self.exclude:
            number = g.excluded.setdefault(self.exclude, len(g.excluded))
            self.p = f"{dialect.tag}_x{number}"

    def ws(self):
        return self.g.add("ws", WS)

    def _escape(self, quote: str):
        return alt(Chars(_norm([(ord(c), ord(c)) for c in '"\\/bfnrt' + quote])), seq(Lit("u"), Rep(_HEX, 4, 4)))

    def _string_body(self, quote: str):
        q = ord(quote)
        plain = Chars(((0x00, 0x1F), (q, q), (0x5C, 0x5C)), True)
        name = f"{self.p}_chars_{'sq' if quote == chr(39) else 'dq'}"
        if not self.exclude:
            char = alt(plain, seq(Lit("\\"), self._escape(quote)))
            return self.g.add(name, Rep(char))
        # unescaped runs without a watched delimiter, escapes between them (a delimiter holds no
        # backslash, so none can straddle an escape)
        run = Except(self.exclude, plain)
        return self.g.add(name, seq(run, Rep(seq(Lit("\\"), self._escape(quote), run))))

    def string(self):
        name = f"{self.p}_string"
        if name in self.g.rules:
            return Ref(name)
        forms = [seq(Lit('"'), self._string_body('"'), Lit('"'))]
        if self.d.pythonic:
            forms.append(seq(Lit("'"), self._string_body("'"), Lit("'")))
        for o, c in self.d.string_delims:
            forms.append(seq(Lit(o), Except(tuple(dict.fromkeys((c,) + self.exclude))), Lit(c)))
        return self.g.add(name, alt(*forms))

    def string_of(self, text: str):
        """One exact string value (a tool name, an enum member, a property name). A delimiter the
        parser watches in this body is not written raw inside it (the parser would end the region
        there): one of its characters is written as a ``\\u`` escape, which both JSON and Python
        read back as the same string; the raw forms (a Python repr, a dialect's own delimiters)
        are left out when they would hold one."""
        forms = [Lit(_json_string(text, self.exclude))]
        if self.d.pythonic and not _holds(repr(text), self.exclude):
            forms.append(Lit(repr(text)))
        for o, c in self.d.string_delims:
            if c not in text and not _holds(o + text + c, self.exclude):
                forms.append(Lit(o + text + c))
        return alt(*forms)

    def integer(self):
        return self.g.add(f"{self.p}_int", seq(opt(Lit("-")), alt(Lit("0"), seq(_DIGIT19, Rep(_DIGIT)))))

    def number(self):
        """A JSON number the parser reads as a finite value: an integer (any size), or a
        fraction/exponent form with at most 15 integer digits and a two-digit exponent (the
        parser refuses a number a float cannot hold, ``1e999``)."""
        frac = seq(Lit("."), Rep(_DIGIT, 1))
        exp = seq(Chars(((0x45, 0x45), (0x65, 0x65))), opt(Chars(((0x2B, 0x2B), (0x2D, 0x2D)))), Rep(_DIGIT, 1, 2))
        short = seq(opt(Lit("-")), alt(Lit("0"), seq(_DIGIT19, Rep(_DIGIT, 0, 14))))
        return self.g.add(f"{self.p}_number", alt(self.integer(), seq(short, alt(seq(frac, opt(exp)), exp))))

    def boolean(self):
        forms = ["True", "False"] if self.d.pythonic else ["true", "false"]
        if self.d.python_literals:
            forms += ["true", "false"] if self.d.pythonic else ["True", "False"]
        return self.g.add(f"{self.p}_bool", lits(*forms))

    def null(self):
        forms = ["None"] if self.d.pythonic else ["null"]
        if self.d.python_literals:
            forms.append("null" if self.d.pythonic else "None")
        return self.g.add(f"{self.p}_null", lits(*forms))

    def key(self, name: str | None = None):
        if name is None:
            forms = [self.string()]
            if self.d.unquoted_keys:
                forms.append(seq(Chars(((0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))),
                                 Rep(Chars(((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))))))
            return alt(*forms)
        forms = [self.string_of(name)]
        if self.d.unquoted_keys and name.isidentifier():
            forms.append(Lit(name))
        return alt(*forms)

    def key_colon(self, key):
        """A key node then its ``:``: whitespace between a quoted key and the colon; none after
        an unquoted key (the dialect reader quotes ``\\s*(\\w+):`` only, docs/template-language.md)."""
        forms = key.items if isinstance(key, Alt) else (key,)
        out = []
        for form in forms:
            bare = self.d.unquoted_keys and (isinstance(form, Lit) and form.text[:1] not in "\"'<" or
                                             isinstance(form, Seq) and form.items and isinstance(form.items[0], Chars)
                                             or isinstance(form, Ref) and form.name.endswith("_uq_0"))
            out.append(seq(form, Lit(":")) if bare else seq(form, self.ws(), Lit(":")))
        return alt(*out)

    def other_key(self, words: tuple[str, ...]):
        """A member key that is none of ``words`` (a call object's other members, such as an
        ``id``, may not be a second name or arguments member: ``json.loads`` keeps the last,
        docs/grammar.md "What the grammar says"). Quoted keys are read without escapes here (an
        escaped ``"n\\u0061me"`` is ``name``), so a key is its raw text; the text is none of ``words`` (a trie of their
        prefixes, any other character leaves it for free text)."""
        name = f"{self.p}_other_key_{'_'.join(sorted(words))}"
        plain = Chars(((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C)), True)
        forms = [seq(Lit('"'), _not_words(self.g, name + "_dq", words, plain, Except(self.exclude, plain), Lit('"'),
                                                     avoid=self.exclude))]
        for o, c in self.d.string_delims:
            forms.append(seq(Lit(o), _not_words(self.g, f"{name}_sd{len(forms)}", words, ANY_CHAR,
                                                Except(tuple(dict.fromkeys((c,) + self.exclude))), Lit(c),
                                                avoid=(c,) + self.exclude)))
        if self.d.unquoted_keys:
            head = Chars(((0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)))
            tail_chars = Chars(((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)))
            forms.append(_not_words(self.g, name + "_uq", words, tail_chars, Rep(tail_chars), EMPTY, head))
        return alt(*forms)

    def value(self):
        name = f"{self.p}_value"
        if name in self.g.rules:
            return Ref(name)
        self.g.rules[name] = EMPTY  # placeholder for recursion
        ws = self.ws()
        member = seq(self.key_colon(self.key()), ws, Ref(name))
        obj = seq(Lit("{"), ws, opt(seq(member, ws, Rep(seq(Lit(","), ws, member, ws)))), Lit("}"))
        arr = seq(Lit("["), ws, opt(seq(Ref(name), ws, Rep(seq(Lit(","), ws, Ref(name), ws)))), Lit("]"))
        self.g.rules[name] = alt(self.g.add(f"{self.p}_object", obj), self.g.add(f"{self.p}_array", arr),
                                 self.string(), self.number(), self.boolean(), self.null())
        return Ref(name)

    def schema(self, schema: Any, where: str):
        """The node of values valid under JSON ``schema`` (a subset: type, enum, const, properties,
        required, items, anyOf/oneOf; other keywords are not checked and make it inexact)."""
        if schema is True or schema == {} or schema is None:
            return self.value()
        if not isinstance(schema, dict):
            raise GrammarExportError(f"{where}: a JSON schema must be an object, got {schema!r}")
        known = {"type", "enum", "const", "properties", "required", "items", "anyOf", "oneOf",
                 "description", "title", "default", "additionalProperties", "examples", "$schema"}
        for key in schema:
            if key not in known:
                self.g.inexact(f"{where}: schema keyword {key!r} is not enforced")
        if "const" in schema:
            return self.literal_value(schema["const"], where)
        if "enum" in schema:
            return alt(*(self.literal_value(v, where) for v in schema["enum"]))
        for combo in ("anyOf", "oneOf"):
            if combo in schema:
                return alt(*(self.schema(s, f"{where}.{combo}[{i}]") for i, s in enumerate(schema[combo])))
        kind = schema.get("type")
        if isinstance(kind, list):
            return alt(*(self.schema({**schema, "type": k}, where) for k in kind))
        if kind == "string":
            return self.string()
        if kind == "integer":
            return self.integer()
        if kind == "number":
            return self.number()
        if kind == "boolean":
            return self.boolean()
        if kind == "null":
            return self.null()
        if kind == "array":
            item = self.schema(schema.get("items", {}), f"{where}.items")
            ws = self.ws()
            return seq(Lit("["), ws, opt(seq(item, ws, Rep(seq(Lit(","), ws, item, ws)))), Lit("]"))
        if kind == "object" or "properties" in schema:
            return self.object(schema, where)
        return self.value()

    def literal_value(self, value: Any, where: str):
        if isinstance(value, str):
            return self.string_of(value)
        if self.d.pythonic or self.d.python_literals:
            if value is True or value is False or value is None:
                return lits(*dict.fromkeys([json.dumps(value)] * (not self.d.pythonic) + [repr(value)]))
        return Lit(_json_text(value, self.exclude))

    def object(self, schema: dict, where: str):
        props = schema.get("properties") or {}
        if not props:
            if schema.get("additionalProperties") is False:
                return seq(Lit("{"), self.ws(), Lit("}"))
            return self.g.add(f"{self.p}_object", EMPTY) if False else self._any_object()
        required = set(schema.get("required") or ())
        ws = self.ws()
        members = [(seq(self.key_colon(self.key(k)), ws, self.schema(s, f"{where}.properties.{k}")), k in required)
                   for k, s in props.items()]
        return seq(Lit("{"), ws, self._members(members, 0, False), Lit("}"))

    def _any_object(self):
        self.value()
        return Ref(f"{self.p}_object")

    def _members(self, members, i: int, after_first: bool):
        """The members in any order (see :func:`any_order`), commas between present ones."""
        ws = self.ws()
        return any_order(self.g, f"{self.p}_members", members,
                         lambda node, first: seq(node, ws) if first else seq(Lit(","), ws, node, ws))


def _not_words(g: Grammar, base: str, words: tuple[str, ...], chars: Chars, rest, end, first: Chars | None = None,
               avoid: tuple[str, ...] = ()):
    """Text of ``chars`` (the first character of ``first`` when given), then ``end``, that is none
    of ``words``: a trie over the words' prefixes; a character no word continues with leads to
    ``rest`` (any further text), then ``end``. ``avoid``: delimiters ``rest`` keeps out; their
    first characters do not lead to it (a delimiter could start there). Returns the entry node."""
    avoid = tuple(ord(x[0]) for x in avoid if x)
    prefixes = sorted({w[:i] for w in words for i in range(len(w) + 1)}, key=lambda p: (len(p), p))
    allowed = _complement(chars.ranges) if chars.negate else chars.ranges

    def rule(p: str):
        name = f"{base}_{prefixes.index(p)}"
        if name in g.rules:
            return Ref(name)
        g.rules[name] = EMPTY
        cls = first if (first is not None and not p) else chars
        ok = _complement(cls.ranges) if cls.negate else cls.ranges
        nexts = sorted({w[len(p)] for w in words if w.startswith(p) and len(w) > len(p)
                        if any(lo <= ord(w[len(p)]) <= hi for lo, hi in ok)})
        alts = [seq(Lit(c), rule(p + c)) for c in nexts]
        others = list(ok)
        for code in sorted({ord(c) for c in nexts} | set(avoid)):
            others = [r for lo, hi in others for r in (((lo, code - 1), (code + 1, hi)) if lo <= code <= hi
                                                        else ((lo, hi),)) if r[0] <= r[1]]
        if others:
            alts.append(seq(Chars(_norm(others)), rest, end))
        if p not in words and (p or first is None):
            alts.append(end)
        g.rules[name] = alt(*alts) if alts else Lit("\x00never")
        return Ref(name)

    del allowed
    return rule("")


#: public name for the formats' grammar hooks (a text that is none of some words)
not_words = _not_words


def closing_tags(g: Grammar, base: str, watch: tuple[str, ...]):
    """Whitespace and closing tags ``</name>`` (each followed by whitespace) that hold none of the
    delimiters ``watch`` the parser looks for there: the tail after an xml-inline body's last
    parameter (docs/grammar.md "Formats write their bodies"). A closing tag that is a watched close
    (``</｜DSML｜invoke>``, ``</tool_call>``) or starts like a pattern close's lead (hunyuan's
    ``</tool_call``) would end the call there, before the literal close the grammar writes next,
    and leave that close as text (in a call section: text that is no call). ``base``: the rules'
    name prefix. Returns the node (``WS`` when a watched delimiter could occur otherwise than as
    a tag's name: no closing tags then)."""
    name_chars = Chars(_norm([(ord(c), ord(c)) for c in "<>/"]), negate=True)
    equal: set[str] = set()
    starts: set[str] = set()
    for w in watch:
        if not w:
            continue
        if any(c == "<" and w[i + 1:i + 2] not in ("/", "") for i, c in enumerate(w)):
            continue  # a ``<`` followed by another character than ``/``: never in closing tags
        if not w.startswith("</"):
            return WS
        seg = w[2:].split(">", 1)[0]
        if not seg or any(c in seg for c in "</"):
            return WS
        (equal if ">" in w[2:] else starts).add(seg)
    if not equal and not starts:
        name = Rep(name_chars, 1)
    else:
        words = sorted(equal | starts)
        base = f"{base}_{zlib.crc32(repr((sorted(equal), sorted(starts))).encode()):08x}"
        prefixes = sorted({w[:i] for w in words for i in range(len(w) + 1)}, key=lambda p: (len(p), p))

        def rule(p: str):
            key = f"{base}_{prefixes.index(p)}"
            if key in g.rules:
                return Ref(key)
            g.rules[key] = EMPTY
            if p in starts:  # a name starting so is a watched lead: none
                g.rules[key] = NEVER
                return Ref(key)
            nexts = sorted({w[len(p)] for w in words if w.startswith(p) and len(w) > len(p)})
            alts = [seq(Lit(c), rule(p + c)) for c in nexts]
            others = _minus(_complement(name_chars.ranges), _norm([(ord(c), ord(c)) for c in nexts]))
            if others:
                alts.append(seq(Chars(others), Rep(name_chars)))
            if p and p not in equal:
                alts.append(EMPTY)
            g.rules[key] = alt(*alts) if alts else NEVER
            return Ref(key)

        name = rule("")
    return seq(WS, Rep(seq(Lit("</"), name, Lit(">"), WS), 0, None))

#: objects with more declared properties than this are written in schema order (2**n rules)
ANY_ORDER_MAX = 6


def any_order(g: Grammar, prefix: str, members: list, join, at_least_one: bool = False) -> Any:
    """Each of ``members`` (``[(node, required)]``) at most once, in any order, every required one
    present: the parsers read JSON objects, Python keyword arguments and XML parameters in any
    order (``json.loads``, the pythonic and xml-inline readers), so the grammar does too. One rule
    per set of members already written (at most ``2 ** ANY_ORDER_MAX``); ``join(node, first)``
    puts the separator in front of all but the first. More members than ``ANY_ORDER_MAX``: schema
    order (a subset of what the parser reads; ``Grammar.notes`` says so). ``at_least_one``: never
    none of them (an xml-tree object needs one element to be an object, not text).
    """
    if not members:
        return EMPTY
    if len(members) > ANY_ORDER_MAX:
        g.inexact(f"{prefix}: {len(members)} properties (more than {ANY_ORDER_MAX}) are written in schema order")
        if at_least_one and not any(req for _n, req in members):
            members = [(members[0][0], True)] + list(members[1:])  # (narrower: the first one written)
        return _in_order(members, 0, True, join)
    need = sum(1 << i for i, (_n, req) in enumerate(members) if req)
    # each member (key forms, separator, value) is a rule of its own, which the 2 ** (n - 1) sets
    # that lack it refer to: written inline, each set would carry a copy of it, and xgrammar turns
    # every copy's parenthesized choices (the key forms, an enum's values) into rules of their own.
    # Its compile builds a parser per grammar position, each costing time in the number of rules:
    # O(positions x rules), so copies cost twice (docs/grammar.md "Cost")
    members = [(node if isinstance(node, (Ref, Lit)) else g.share(f"{prefix}_m", node), req)
               for node, req in members]
    # the same members (compared by content: nodes are values, nested objects already shared), the
    # same separator: the same rules. ``join`` is applied to a marker to key what it writes
    marker = Lit("\x00member")
    key = ("any_order", prefix, tuple(members), at_least_one, join(marker, True), join(marker, False))
    if key in g.shared:
        return g.shared[key]
    base = f"{prefix}_{len(g.rules)}"
    g.shared[key] = Ref(f"{base}_0")

    def rule(mask: int):
        name = f"{base}_{mask}"
        if name in g.rules:
            return Ref(name)
        g.rules[name] = EMPTY  # placeholder while the successors are built
        first = mask == 0
        alts = [seq(join(node, first), rule(mask | 1 << i)) for i, (node, _req) in enumerate(members)
                if not mask & 1 << i]
        if mask & need == need and (mask or not at_least_one):
            alts.append(EMPTY)
        g.rules[name] = alt(*alts) if alts else EMPTY
        return Ref(name)

    return rule(0)


def _in_order(members, i: int, first: bool, join):
    if i == len(members):
        return EMPTY
    node, required = members[i]
    take = seq(join(node, first), _in_order(members, i + 1, False, join))
    return take if required else alt(take, _in_order(members, i + 1, first, join))


# --- tools ----------------------------------------------------------------------------------

def _normalize_tools(tools) -> list[tuple[str, dict]]:
    """``[(name, parameters schema)]`` from OpenAI-style tools (``{"type": "function",
    "function": {...}}``) or bare function objects."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise GrammarExportError(f"tools must be a list, got {type(tools).__name__}")
    out = []
    for i, tool in enumerate(tools):
        fn = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise GrammarExportError(f"tools[{i}]: needs a function with a string 'name'")
        if not is_function_name(fn["name"]):
            # the parser refuses a call so named (runtime/tools.py check_tool_call_names): a grammar that
            # made the model write it would give an error, or answer text, instead of the call
            raise GrammarExportError(f"tools[{i}]: tool {fn['name']!r} cannot be called: the parser reads a "
                                     "name with whitespace, markup, quotes or brackets as no function name "
                                     "(rename the tool)")
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        if not isinstance(params, dict) or not isinstance(params.get("properties", {}), dict):
            raise GrammarExportError(f"tools[{i}] ({fn['name']!r}): 'parameters' must be a JSON schema object "
                                     "whose 'properties' is an object")
        out.append((fn["name"], params))
    return out


def tools_from_message(message: dict) -> list[dict]:
    """Tools that a parsed message's calls conform to: one per called name, every argument
    given required and typed by its value (used when a test vector names no tools)."""
    def schema_of(value):
        if isinstance(value, bool):
            return {"type": "boolean"}
        if isinstance(value, int):
            return {"type": "integer"}
        if isinstance(value, float):
            return {"type": "number"}
        if isinstance(value, str):
            return {"type": "string"}
        if value is None:
            return {"type": "null"}
        return {}

    tools: dict[str, dict] = {}
    for call in message.get("tool_calls") or []:
        fn = call.get("function", call)
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = {}
        props = {k: schema_of(v) for k, v in (args or {}).items()} if isinstance(args, dict) else {}
        if fn["name"] in tools:  # a second call: every argument seen, required only if always given
            params = tools[fn["name"]]["function"]["parameters"]
            for k, v in props.items():
                if params["properties"].setdefault(k, v) != v:
                    params["properties"][k] = {}
            params["required"] = [k for k in params["required"] if k in props]
            continue
        tools[fn["name"]] = {"type": "function", "function": {
            "name": fn["name"], "parameters": {"type": "object", "properties": props, "required": list(props)}}}
    return list(tools.values())


def _placeholder(spec) -> list[str]:
    """The placeholder paths of one transform value: ``"{content.name}"`` -> ["content.name"];
    ``{"$first": [...]}`` -> each alternative's; a literal -> []."""
    if isinstance(spec, str) and spec.startswith("{") and spec.endswith("}") and spec.count("{") == 1:
        return [spec[1:-1]]
    if isinstance(spec, dict) and "$first" in spec:
        return [p for s in spec["$first"] for p in _placeholder(s)]
    return []


@dataclass(frozen=True)
class CallShape:
    """Where a tool region's transform takes the call's name and arguments from.

    name_group: the named group of the open delimiter holding the name, else None.
    name_key: the body's key holding the name (``"$key"``: the only key of a one-key object).
    args_keys: body keys the arguments may come under ((): the whole body is the arguments).
    """
    name_group: str | None
    name_key: str | None
    args_keys: tuple[str, ...]


def call_shape(f: Field) -> CallShape | None:
    """Read :class:`CallShape` from a field's transform; None when it is not a function call."""
    t = f.transform
    fn = t.get("function") if isinstance(t, dict) else None
    if fn == "{content}":
        return CallShape(None, "name", ("arguments",))
    if not isinstance(fn, dict):
        return None
    names, args = _placeholder(fn.get("name")), _placeholder(fn.get("arguments"))
    if len(names) != 1 or any(p.count(".") > (1 if p.startswith("content.") else 0) for p in names + args):
        return None  # a nested shape ({content.fn.name}): the body is read as any JSON value
    name = names[0]
    group = None
    if name in f.group_names:
        group, key = name, None
    else:
        key = name[len("content."):] if name.startswith("content.") else name
    keys = []
    for a in args:
        if a == "content":
            keys = []
            break
        keys.append(a[len("content."):] if a.startswith("content.") else a)
    if key == "$key":
        keys = []
    return CallShape(group, key, tuple(keys))


# --- the builder ----------------------------------------------------------------------------

def _is_tool_field(template: Template, f: Field) -> bool:
    if template.version >= 2:
        return f.role == "tool_calls"
    return f.name == "tool_calls"


def _is_reasoning(f: Field) -> bool:
    return (f.slot or f.name) == "reasoning_content"


def _literal_tail(pattern: str) -> str:
    """The literal text a pattern ends with (``<atem:function_calls>`` of muse_glimmer's call
    section open); "" when it ends in anything else or ``re`` cannot read it."""
    try:
        items = list(parse_pattern(without_optional_repairs(pattern)))
    except re.error:
        return ""
    out = []
    for op, arg in reversed(items):
        if str(op) != "LITERAL":
            break
        out.append(chr(arg))
    return "".join(reversed(out))


def _shortest_match(delim: Delimiter) -> str | None:
    """One short text ``delim`` matches (its shortest literal, or a pattern's shortest form as
    :func:`sample` walks it at depth 0, checked against the pattern); None when none is found."""
    if delim.literals is not None:
        return min(delim.literals, key=len) if delim.literals else None
    try:
        rx = regex.compile(without_optional_repairs(delim.pattern))
        node, _notes = regex_to_ir(without_optional_repairs(delim.pattern), None)
    except Exception:  # noqa: BLE001 - an open the IR cannot express: no tail is derived
        return None
    g = Grammar()
    g.rules["start"] = node
    import random as _random
    text = sample(g, _random.Random(0), depth=0)
    return text if rx.fullmatch(text) else None


def _looks_ahead(f: Field) -> bool:
    """Whether ``f``'s open pattern holds a lookahead (the grammar drops it; what it looks for
    must then come right after the open, in the order it names)."""
    return f.open is not None and f.open.pattern is not None and "(?=" in without_optional_repairs(f.open.pattern)


looks_ahead = _looks_ahead


def _close_after_value(body, close):
    """An ``end: "value"`` region's body and close: the close is optional and consumed only right
    after the value (template-language.md "end"), so whitespace the body may end with is left out
    when a close may follow (after the value it goes back to where the region was opened from, as
    text there); kept before the end of the region when there is no close."""
    if close is None:
        return body
    if isinstance(body, Seq) and body.items and body.items[-1] in (Ref("ws"), WS):
        body = seq(*body.items[:-1])
    return seq(body, opt(close))


class _Builder:
    def __init__(self, template: Template, automaton: Automaton, tools, tool_choice: str,
                 parallel: bool, reasoning: bool) -> None:
        self.t, self.a = template, automaton
        self.tools = _normalize_tools(tools)
        self.has_tools = tools is not None
        self.choice, self.parallel, self.reasoning = tool_choice, parallel, reasoning
        self.g = Grammar()
        if tool_choice not in TOOL_CHOICES:
            offered = [n for n, _ in self.tools]
            if tool_choice not in offered:
                raise GrammarExportError(f"tool_choice {tool_choice!r} is not 'auto', 'required', 'none' "
                                         f"or an offered tool ({', '.join(offered) or 'no tools given'})")
            self.tools = [(n, s) for n, s in self.tools if n == tool_choice]
        if self.has_tools and not self.tools:
            if tool_choice != "auto" and tool_choice != "none":
                raise GrammarExportError(f"tool_choice {tool_choice!r} but no tools are offered")
            self.choice = "none"  # no tool offered: no call can be written

    @property
    def ir(self):
        """This module: the node kinds and helpers a format's grammar hooks build with
        (:attr:`respc.runtime.formats.base.Format.body_grammar`; the runtime package does not import
        the compiler)."""
        import sys
        return sys.modules[__name__]

    # names and arguments
    def name_node(self, jb: JsonBuilder | None):
        if not self.has_tools:
            if jb is None:
                return Rep(Chars(_norm([(0x41, 0x5A), (0x61, 0x7A), (0x30, 0x39), (0x5F, 0x5F), (0x2D, 0x2E)])), 1)
            return jb.string()
        if jb is None:
            return lits(*(n for n, _ in self.tools)) if self.tools else Lit("\x00no-tools")
        return alt(*(jb.string_of(n) for n, _ in self.tools)) if self.tools else Lit("\x00no-tools")

    def args_node(self, jb: JsonBuilder, schema, where: str):
        if not self.has_tools:
            return jb.schema({"type": "object"}, where)
        return jb.schema(schema, where)

    def close_leads(self, f: Field) -> list[str]:
        return delimiter_leads(f.close, self.g, f"field {f.name!r}") if f.close is not None else []

    # regions
    def _set(self, fi: int, node) -> Ref:
        self.g.rules[self._key] = node
        return Ref(self._key)

    def region(self, fi: int, closed: bool = True, need: bool = False, start: bool = False):
        """The rule of field ``fi``'s region; ``closed=False``: cut off by the end of the stream
        (the parser closes it there; a close that is an end-of-turn token is never generated);
        ``need``: a region holding calls (a call section, reasoning in which calls nest) with at
        least one call in it (``required`` or a named tool: an empty section is no call,
        docs/grammar.md "What the grammar guarantees")."""
        key = (f"region_{fi}" if closed else f"open_region_{fi}") + ("_with_call" if need else "") \
            + ("_at_start" if start else "")
        if key in self.g.rules:
            return Ref(key)
        self.g.rules[key] = EMPTY  # placeholder: regions may nest each other
        outer, self._key = getattr(self, "_key", None), key
        outer_need, self._need = getattr(self, "_need", False), need
        outer_start, self._start = getattr(self, "_start", False), start
        try:
            return self._region(fi, closed)
        finally:
            self._key, self._need, self._start = outer, outer_need, outer_start

    def start_open(self, fi: int) -> bool:
        """Whether field ``fi``'s open has branches that match only at offset 0
        (:func:`has_start_branches`)."""
        f = self.t.fields[fi]
        return f.open is not None and f.open.literals is None and has_start_branches(
            without_optional_repairs(f.open.pattern))

    def start_only(self, fi: int) -> bool:
        """Whether every match of field ``fi``'s open starts at offset 0 (a wholly anchored open,
        gpt_oss's ``(?P<repair_stripped_tokens>^analysis)``): the region opens nowhere else."""
        if not self.start_open(fi):
            return False
        split = _start_split(parse_pattern(without_optional_repairs(self.t.fields[fi].open.pattern)))
        return split is not None and not split[1]

    def start_leads(self, anchored: list[int]) -> list[str] | None:
        """The literal leads of the anchored branches of fields ``anchored`` (what the parser
        watches at offset 0 only); None when one may start with anything."""
        out: list[str] = []
        for fi in anchored:
            for x in _leads(without_optional_repairs(self.t.fields[fi].open.pattern), anchored=True):
                if not x:
                    return None
                out.append(x)
        return list(dict.fromkeys(out))

    def guarded_start(self, leads: list[str], tref, rest):
        """Text at offset 0 that no anchored open in ``leads`` starts, then ``rest``: the text
        starts with a proper prefix of a lead and a character that does not continue it, such
        that no watched delimiter (nor a lead) is begun across that point, so the text rule
        (``tref``) reads on from a fresh state; or the output starts with ``rest`` (a region)."""
        watched = [w for w in self.watched(OUTSIDE) if w]
        prefixes = sorted({x[:i] for x in leads for i in range(len(x))})

        def safe(s: str) -> bool:  # no watched literal in s, none begun by a suffix of s
            return not any(w in s or any(w.startswith(s[i:]) for i in range(len(s))) for w in watched)

        heads = [EMPTY]
        for p in prefixes:
            if p and not safe(p):
                continue
            cands = {c for w in watched for c in w} | {x[len(p)] for x in leads if x.startswith(p)}
            bad = sorted(c for c in cands if any(x.startswith(p + c) for x in leads) or not safe(p + c))
            chars = Chars(_norm([(ord(c), ord(c)) for c in bad]), True)
            heads.append(seq(Lit(p), chars, tref) if p else seq(chars, tref))
        return seq(alt(*heads), rest)

    #: set while a format writes the body after an open that matched no text (``_region``)
    bare_open = False

    def _region(self, fi: int, closed: bool):
        f = self.t.fields[fi]
        where = f"field {f.name!r}"
        tool = _is_tool_field(self.t, f)
        close = delimiter_ir(f.close, None, self.g, where) if f.close is not None and closed else None
        open_groups = {}
        shape = call_shape(f) if tool else None
        body = None
        fmt = FORMATS[f.content]
        if tool and fmt.args_grammar is not None and shape is not None and shape.name_group is not None:
            # one alternative per tool: the open names it, the body is its arguments
            alts = []
            jb = JsonBuilder(self.g, self.dialect(f), self.body_watch(f))
            runon = name_run_on(f.open.pattern, shape.name_group) if f.open.pattern is not None else None
            for name, schema in (self.tools if self.has_tools else [(None, {"type": "object"})]):
                if name is not None:
                    check_tool_name(f, shape.name_group, name, where)
                nm = Lit(name) if name is not None else self.name_node(None)
                op = delimiter_ir(f.open, {shape.name_group: nm}, self.g, where)
                b = fmt.args_grammar(self, f, name, schema, where, jb)
                if b is None:  # the format cannot write a call to this tool valid against its schema
                    continue
                if f.end == "value":
                    after = _close_after_value(b, close)
                else:
                    after = seq(b, close) if close is not None else b
                if runon is not None and name is not None:
                    # the parser's name group runs on over its class: what follows starts outside it
                    after = not_starting(after, runon, self.g.rules)
                if name is not None and self.name_taken(fi, name, self.sample_of(after)):
                    continue
                alts.append(seq(op, after))
            if not alts:
                return self._set(fi, Lit("\x00no-tools"))
            return self._set(fi, alt(*alts))
        split = self.start_open(fi)
        op = delimiter_ir(f.open, open_groups, self.g, where, (getattr(self, "_start", False) if split else None))
        if fmt.body_grammar is None:
            self.g.inexact(f"{where} content {f.content!r}: body is any text")
        else:
            body = fmt.body_grammar(self, f, tool, shape, where)
            bare = None
            if tool and not split and isinstance(op, Alt) and f.open is not None and f.open.pattern is not None and \
                    any(nullable(x) for x in op.items) and not all(nullable(x) for x in op.items):
                # an alternative of the open that matches no text (a lookahead, dropped: llama4's
                # ``(?=\[\s*[A-Za-z_][\w.]*\()``) opens the region only where the lookahead holds, so
                # after it the body is only the forms it admits (its bracketed list, never a bare
                # call the parser reads as text); the format filters them (``bare_open``)
                self.bare_open = True
                try:
                    bare = fmt.body_grammar(self, f, tool, shape, where)
                finally:
                    self.bare_open = False
            if bare is not None and bare != body:  # (a format that does not filter: one region as before)
                written = alt(*(x for x in op.items if not nullable(x)))
                if f.end == "value":
                    return self._set(fi, alt(seq(written, _close_after_value(body, close)),
                                             _close_after_value(bare, close)))
                return self._set(fi, alt(seq(written, body, close) if close is not None else seq(written, body),
                                         seq(bare, close) if close is not None else bare))
        if body is None:
            ends = [self.region(j) for j in self.inside(fi, ("end",))]
            defers = self.inside(fi, ("end-if-unclosed",))
            body = self.text_body(fi)
            if defers and close is not None and f.end == "delimiter":
                # a deferred open counts only when this region's close never follows: with the
                # close, the region's text may hold it; without, the deferred region ends it
                lax = self.text_body(fi, skip=defers)
                return self._set(fi, alt(seq(op, lax, alt(close, *ends)),
                                         seq(op, body, alt(*(self.region(j) for j in defers)))))
            if tool:  # the body is text: the call's arguments are whatever the text is
                self.g.inexact(f"{where}: tool calls in {f.content!r} bodies are not typed")
            if ends and close is not None:
                close = alt(close, *ends)
        if split and getattr(self, "_start", False) and nullable(op if not isinstance(op, Ref) else EMPTY):
            body = self._start_body(fi, body)
        if f.end == "value":
            return self._set(fi, seq(op, _close_after_value(body, close)))
        return self._set(fi, seq(op, body, close) if close is not None else seq(op, body))

    def sample_of(self, node) -> str:
        """One short text of ``node`` (its rule references resolved in this grammar)."""
        import random as _random
        return sample(Grammar(rules={**self.g.rules, "start": node}), _random.Random(0), depth=0)

    def name_taken(self, fi: int, name: str, body: str) -> bool:
        """Whether another enabled tool field's open, of a different pattern, reads a longer match
        where field ``fi``'s open names ``name`` (the parser takes the longest delimiter,
        template-language.md "Choosing the next delimiter"): cwm's ``<tool:function>`` opens its
        named form ``<tool:function> NAME``, so a tool named ``function`` is never called through
        ``<tool:NAME>``. Probed with the open's shortest text followed by ``body`` (a short text of
        what follows the open: the body and the close)."""
        f = self.t.fields[fi]
        if f.open is None or f.open.pattern is None:
            return False
        node, _notes = regex_to_ir(without_optional_repairs(f.open.pattern), {call_shape(f).name_group: Lit(name)})
        g = Grammar()
        g.rules["start"] = node
        import random as _random
        probe = sample(g, _random.Random(0), depth=0)
        for j, other in enumerate(self.t.fields):
            if j == fi or not self.enabled(j) or not _is_tool_field(self.t, other) or other.open is None \
                    or other.open.pattern is None or other.open.pattern == f.open.pattern or other.inside != f.inside:
                continue
            try:
                rx = regex.compile(without_optional_repairs(other.open.pattern))
            except re.error:
                continue
            m = rx.match(probe + body)
            if m is not None and m.end() > len(probe):
                return True
        return False

    def _start_body(self, fi: int, body):
        """The body of field ``fi``'s region opened at offset 0 by its anchored open
        (:meth:`start_open`). The parser takes the longest delimiter at an offset
        (template-language.md "Choosing the next delimiter"), so an anchored open that matched
        the empty string loses to any other delimiter matching there: the body must not start
        with a character that starts one (nor a delimiter of its own). So the body is empty or
        starts with a character that starts no watched delimiter; a real output whose region
        text starts with one (ernie4_5: reasoning that starts with ``<``) is refused
        (docs/grammar.md)."""
        if not isinstance(body, Except):
            self.g.inexact(f"field {self.t.fields[fi].name!r}: anchored open before a nested body")
            return body
        firsts = sorted({x[0] for x in list(body.literals) + self.watched(OUTSIDE) if x})
        return alt(EMPTY, seq(Chars(_norm([(ord(c), ord(c)) for c in firsts]), True), body))

    def claimed(self, f: Field, start: str) -> bool:
        """Whether a body of ``f`` that starts with ``start`` is read by an earlier field with the
        same open delimiter instead (template-language.md "reject": a field whose reader refuses
        its body passes it to the next field with the identical open, in declaration order; one
        that never refuses takes every body). llama3_json's ``<|python_tag|>`` opens a JSON call,
        whose reader takes ``[`` and ``{``, before its builtin pythonic calls."""
        fi = self.t.fields.index(f)
        for j, other in enumerate(self.t.fields[:fi]):
            if not self.enabled(j) or other.open is None or f.open is None or \
                    (other.open.literals, other.open.pattern) != (f.open.literals, f.open.pattern):
                continue
            fmt = FORMATS[other.content]
            if not (other.reject and fmt.can_reject and fmt.reader is not None):
                return True
            factory = fmt.reader(other.content_args)
            verdict = getattr(factory, "verdict", None)
            if verdict is None:
                reader = factory()
                reader.feed(start)
                status = reader.status
            else:
                status = verdict(start)
            if status != _REJECTED:
                return True
        return False

    def body_watch(self, f: Field) -> tuple[str, ...]:
        """The literal leads of the delimiters the parser watches while it reads ``f``'s body (its
        close, opens watched inside it): kept out of the body's string values."""
        fi = self.t.fields.index(f)
        return tuple(self.watched(self.a.state_of_field[fi]))

    def dialect(self, f: Field) -> JsonDialect:
        a = f.content_args
        return JsonDialect(tuple(tuple(x) for x in a.get("string_delims") or ()), bool(a.get("unquoted_keys")),
                           bool(a.get("python_literals")))

    def watched(self, state: int, skip=()) -> list[str]:
        out = []
        for w in self.a.states[state].watches:
            if w.field in skip and w.kind == "open":
                continue
            out.extend(delimiter_leads(w.delimiter, self.g, f"field {self.t.fields[w.field].name!r}"))
        return list(dict.fromkeys(out))

    def enabled(self, fi: int) -> bool:
        f = self.t.fields[fi]
        if f.is_implicit:
            return False
        if _is_reasoning(f) and not self.reasoning:
            return False
        if _is_tool_field(self.t, f):
            if self.choice == "none":
                return False
            # a call whose name the transform fixes (functionary's <|python_tag|> is a call to
            # "python"): only when that tool is offered (docs/grammar.md "What the grammar guarantees")
            fn = f.transform.get("function") if isinstance(f.transform, dict) else None
            name = fn.get("name") if isinstance(fn, dict) else None
            if self.has_tools and isinstance(name, str) and not _placeholder(name) and \
                    name not in {n for n, _ in self.tools}:
                return False
        return True

    def inside(self, fi: int, actions: tuple[str, ...]) -> list[int]:
        """Enabled fields whose open is watched inside region ``fi`` with one of ``actions``."""
        name = self.t.fields[fi].name
        return [j for j, f in enumerate(self.t.fields)
                if self.enabled(j) and any(r == name and how in actions for r, how in f.inside)]

    def shadowing_tails(self, fi: int) -> list[str]:
        """Literal tails of the other fields' opens that extend an open of ``fi``: muse_glimmer's
        answer opens at ``to=user<|message|>``, its call section at the same text followed by
        ``<atem:function_calls>``, and the parser opens the longer one. A body of ``fi`` that
        begins with such a tail is read as that other region, so the tail is kept out of
        ``fi``'s text (docs/grammar.md, "What the grammar says")."""
        f = self.t.fields[fi]
        if f.open is None:
            return []
        probe = _shortest_match(f.open)
        if not probe:  # an open that may be empty (ernie4_5's reasoning at the start) extends nothing
            return []
        out = []
        for j, other in enumerate(self.t.fields):
            if j == fi or other.open is None or other.open.pattern is None or other.inside != f.inside:
                continue
            tail = _literal_tail(other.open.pattern)
            if not tail:
                continue
            try:
                rx = regex.compile(without_optional_repairs(other.open.pattern))
            except re.error:
                continue
            if any(rx.fullmatch(probe + gap + tail) for gap in ("", " ", "\n")):
                out.append(tail)
        return out

    def endless(self, fi: int) -> bool:
        """Whether region ``fi`` runs to the end of the output once opened: no close, not ended by
        its value, and no field's open ends it (plamo3's end-of-turn ``<|plamo:tag|>``). The parser
        stays in it, also where it nests in another region whose close then never comes."""
        f = self.t.fields[fi]
        return f.close is None and f.end == "delimiter" and not self.inside(fi, ("end", "end-if-unclosed"))

    def text_body(self, fi: int, skip: list | tuple = ()):
        """A text region's body: its text (no watched delimiter) with nested regions between;
        ``skip``: fields whose opens the text may contain."""
        f = self.t.fields[fi]
        watched = self.watched(self.a.state_of_field[fi], skip)
        watched = list(dict.fromkeys(watched + self.shadowing_tails(fi)))
        text = Except(tuple(watched)) if f.slot is not None or self.t.version < 2 else WS
        need = getattr(self, "_need", False)
        # a region that runs to the end of the output does not nest in a region that closes
        nested = [self.region(j) for j in self.inside(fi, ("nest",)) if not self.endless(j)]
        if not nested:
            return text
        if need:
            calls = [self.region(j) for j in self.inside(fi, ("nest",)) if _is_tool_field(self.t, self.t.fields[j])]
            if calls:
                more = Rep(seq(alt(*nested), text)) if self.parallel else EMPTY
                plain = [r for r in nested if r not in calls]
                lead = Rep(seq(alt(*plain), text)) if plain else EMPTY
                return seq(text, lead, alt(*calls), text, more)
        return seq(text, Rep(seq(alt(*nested), text), 0, None if self.parallel else 1))

    def build(self) -> Grammar:
        t = self.t
        tref = self.g.add("text", Except(tuple(self.watched(OUTSIDE))))
        top = [fi for fi, f in enumerate(t.fields) if self.enabled(fi) and f.outside]
        calls = [fi for fi in top if _is_tool_field(t, t.fields[fi]) or any(
            _is_tool_field(t, t.fields[j]) for j in self.inside(fi, ("nest",)))]
        # a region nothing closes (no close, no field's open ends it: plamo3's end-of-turn
        # ``<|plamo:tag|>``) runs to the end of the output: whatever follows its open is its body,
        # so it comes last, never before a call the parser would not see
        endless = [fi for fi in top if fi not in calls and self.endless(fi)]
        # a wholly anchored open (gpt_oss's ``^analysis``) opens its region at offset 0 only
        plain = [fi for fi in top if fi not in calls and fi not in endless and not self.start_only(fi)]
        other = [self.region(fi) for fi in plain]
        if t.implicit is not None and t.fields[t.implicit].close is not None:
            other.append(self.g.add("implicit_close", delimiter_ir(
                t.fields[t.implicit].close, None, self.g, f"field {t.fields[t.implicit].name!r}")))
        need_call = self.choice not in ("auto", "none")
        # with a call required, a region that only holds calls (a section, reasoning in which
        # calls nest) counts only with a call in it
        tool_regions = [self.region(fi, need=need_call and not _is_tool_field(t, t.fields[fi])) for fi in calls]
        # the stream may end inside a region (no close yet): the parser closes it there; a call
        # region only when its body is one whole self-delimiting value (its format ends itself: json,
        # pythonic): any
        # other one is truncated there, never a call (docs/events.md, "Truncated regions"); a
        # section holding calls keeps its complete calls
        cut = [fi for fi in top if t.fields[fi].close is not None and t.fields[fi].end == "delimiter"]
        unclosed = [self.region(fi, closed=False) for fi in cut if fi in plain] + [self.region(fi) for fi in endless]
        unclosed_calls = [self.region(fi, closed=False, need=need_call and not _is_tool_field(t, t.fields[fi]))
                          for fi in cut if fi in calls and (
                              not _is_tool_field(t, t.fields[fi]) or FORMATS[t.fields[fi].content].ends_itself)]
        any_region = alt(*(other + tool_regions)) if other or tool_regions else None
        plain_loop = Rep(seq(alt(*other), tref)) if other else EMPTY
        plain_end = opt(alt(*unclosed)) if unclosed else EMPTY
        any_end = opt(alt(*(unclosed + unclosed_calls))) if unclosed or unclosed_calls else EMPTY
        if need_call:  # after the first call any region may follow, with a call or not
            any_region = alt(*(other + [self.region(fi) for fi in calls])) if other or calls else None
            ends = unclosed + [self.region(fi, closed=False) for fi in cut if fi in calls and (
                not _is_tool_field(t, t.fields[fi]) or FORMATS[t.fields[fi].content].ends_itself)]
            any_end = opt(alt(*ends)) if ends else EMPTY
        if not tool_regions:
            if need_call:
                raise GrammarExportError(f"{t.source}: tool_choice {self.choice!r} but the template has no "
                                         "tool-call field (role 'tool_calls')")
            rest = seq(plain_loop, plain_end)
        else:
            if self.parallel:
                after = seq(tref, Rep(seq(any_region, tref)), any_end)
            else:
                after = seq(tref, plain_loop, plain_end)
            first = alt(seq(alt(*tool_regions), after), *unclosed_calls)
            rest = seq(plain_loop, first if need_call else alt(first, plain_end))
        body = seq(tref, rest)
        # an open with branches that match only at offset 0 (ernie4_5's ``^\s*(?:<think>\s*)?``):
        # there the region opens with any branch, elsewhere with the others only. When an
        # anchored branch matches the empty string the parser opens the region at offset 0
        # unless a longer delimiter matches there (template-language.md "Choosing the next
        # delimiter"): the output starts with that region (closed, or cut by the end when no
        # call is needed) or with another delimiter, never with text; a disabled field
        # (--no-reasoning) leaves only the second
        anchored = [fi for fi, f in enumerate(t.fields) if f.outside and not f.is_implicit and self.start_open(fi)]
        if anchored:
            starts = [fi for fi in anchored if fi in top and fi not in calls and fi not in endless]
            heads = [seq(self.region(fi, start=True), body) for fi in starts]
            if not need_call:
                heads += [self.region(fi, closed=False, start=True) for fi in starts
                          if t.fields[fi].close is not None and t.fields[fi].end == "delimiter"]
            empty = any(nullable(delimiter_ir(t.fields[fi].open, {}, Grammar(), "", True)) for fi in anchored)
            leads = None if empty else self.start_leads(anchored)
            # text at offset 0 that an anchored branch starts is that region's
            # (docs/grammar.md "Anchored opens": gpt_oss's
            # ``analysis ... to=functions.f`` is all reasoning to the parser, no call)
            heads.append(rest if empty else body if leads is None else self.guarded_start(leads, tref, rest))
            body = alt(*heads)
        tail = EMPTY
        self.g.rules = {"start": seq(body, tail), **self.g.rules}
        return self.g


def build_grammar_ir(template: Template, tools: list | None = None, *, tool_choice: str = "auto",
                     parallel: bool = True, reasoning: bool = True,
                     automaton: Automaton | None = None) -> Grammar:
    """Build the grammar IR of ``template``'s output language.

    Args:
        template: the validated IR.
        tools: OpenAI-style tools (``[{"type": "function", "function": {"name", "parameters"}}]``)
            or None (names are any identifier, arguments any JSON object).
        tool_choice: ``auto`` (text with optional calls), ``required`` (at least one call),
            ``none`` (no call regions), or an offered tool's name (only that tool, at least once).
        parallel: False allows at most one call (one tool region, one call in it).
        reasoning: False leaves out the reasoning region (field or slot ``reasoning_content``).
        automaton: reuse an already built automaton.

    Returns:
        Grammar: rules with start rule ``start``; ``exact``/``notes`` say what is approximated.

    Raises:
        GrammarExportError: a tool_choice that names no offered tool, malformed tools, or
            ``required`` for a template without tool-call fields.
    """
    automaton = automaton or build_automaton(template)
    return _Builder(template, automaton, tools, tool_choice, parallel, reasoning).build()


def sample(g: Grammar, rng, *, text_chars: str = "ab <>{}\"\n", max_len: int = 6, depth: int = 60) -> str:
    """One random string of ``g``'s language (for property tests): alternatives and repeat counts
    chosen by ``rng`` (a ``random.Random``); free text drawn from ``text_chars`` skipping any
    character that would complete an excluded literal. Deep recursion picks the shortest way out.

    Raises:
        RecursionError: never in practice (``depth`` bounds nesting, then alternatives are taken
        in order and repeats at their minimum).
    """
    out: list[str] = []

    def walk(n, d: int) -> None:
        if isinstance(n, Lit):
            out.append(n.text)
        elif isinstance(n, Chars):
            out.append(_sample_char(n, rng))
        elif isinstance(n, Seq):
            for x in n.items:
                walk(x, d)
        elif isinstance(n, Alt):
            walk(n.items[-1] if d <= 0 and any(isinstance(x, Lit) for x in n.items[-1:]) else
                 (n.items[0] if d <= 0 else rng.choice(n.items)), d - 1)
        elif isinstance(n, Rep):
            hi = n.min if d <= 0 else (n.max if n.max is not None else n.min + 2)
            for _ in range(rng.randint(n.min, max(n.min, hi))):
                walk(n.item, d - 1)
        elif isinstance(n, Ref):
            walk(g.rules[n.name], d - 1)
        elif isinstance(n, Except):
            text = ""
            pool = text_chars if n.within is None else "".join(
                c for c in text_chars if any(lo <= ord(c) <= hi for lo, hi in n.within.ranges) != n.within.negate)
            for _ in range(rng.randint(0, max_len) if pool else 0):
                c = rng.choice(pool)
                if not any((text + c).endswith(x) for x in n.literals if x):
                    text += c
            # a trailing partial literal could join with what follows: keep it out
            while text and any(x.startswith(text[i:]) for x in n.literals if x for i in range(len(text))):
                text = text[:-1]
            out.append(text)
        else:  # pragma: no cover
            raise TypeError(n)

    walk(g.rules[g.start], depth)
    return "".join(out)


def _sample_char(n: Chars, rng) -> str:
    pool = "abcXYZ019 _-.,\n\t\"'<>{}[]é"
    ok = [c for c in pool if any(lo <= ord(c) <= hi for lo, hi in n.ranges) != n.negate]
    if ok:
        return rng.choice(ok)
    lo, hi = n.ranges[0]
    return chr(rng.randint(lo, min(hi, lo + 25)))
