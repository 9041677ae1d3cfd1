"""The ``xml-tree`` format (template language v2): a value written as nested XML elements (MiniMax-M3 tool
arguments; template-language.md "Content parsers")."""

from __future__ import annotations

import operator
import re
from typing import Any

import regex

from ..content import ContentParser, _failing, _grammar_any
from .base import Format, Plan, Problems

#: a tag name of an xml-tree element: no markup, quote or space characters
_TREE_NAME = r"[^\s<>/\"']+"
#: the same for the standard library's ``re``, which splits a body at its tags in about half the
#: time ``regex`` takes (MiniMax-M3's call values): ``regex``'s ``\s`` written out (the
#: Unicode White_Space characters), as ``re``'s own ``\s`` also takes U+001C..U+001F;
#: tests/test_formats_xml_tree.py checks the two classes agree on every code point
_WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_TREE_NAME_RE = "[^" + _WHITE_SPACE + "<>/\"']+"


def check(args: dict, where: str = "content_args") -> Problems:
    """Load-time checks of xml-tree's ``content_args``."""
    problems: Problems = []
    unknown = sorted(set(args) - {"tag_prefix", "item_tag"})
    if unknown:
        problems.append(("", f"xml-tree has unknown arguments {unknown} (allowed: ['tag_prefix', 'item_tag'])"))
    if "tag_prefix" in args and not isinstance(args["tag_prefix"], str):
        problems.append(("tag_prefix", f"xml-tree 'tag_prefix' must be a string, got {args['tag_prefix']!r}"))
    if "item_tag" in args and not (isinstance(args["item_tag"], str) and regex.fullmatch(_TREE_NAME, args["item_tag"])):
        problems.append(("item_tag", f"xml-tree 'item_tag' must be a tag name (no spaces, quotes or <>/), "
                                     f"got {args['item_tag']!r}"))
    return problems


def plan(field) -> Plan:
    """Only its closer ends it; an empty body reads as the empty text."""
    return Plan("xml-tree")


#: what xml-tree's one-pass reader returns when ``read``'s own walk must decide
_NOT_QUICK = object()


#: nesting beyond which the one-pass reader leaves the text to ``read`` (and its recursion limit)
_QUICK_DEPTH = 64


_second = operator.itemgetter(1)


def make(args: dict) -> ContentParser:
    """Read one value written as nested elements, ``P<name>...P</name>`` (``P``: ``tag_prefix``).

    A body whose first non-space text is not ``P<`` is a leaf: its text, unchanged. Otherwise it
    must be nothing but elements (whitespace between them is ignored): when every element is named
    ``item_tag`` the value is the list of their values, else a dict (a name met twice collects its
    values in a list, as MiniMax-M3's parsers do). Element bodies are read the same way, so objects
    and arrays nest to any depth. A body that starts like an element but is not a clean sequence of
    them (an unclosed or stray tag) is kept as its text. Rule from MiniMax-M3's chat template
    (``to_xml``: a mapping as one element per key, a list as ``<item>`` elements, a scalar as text).
    """
    prefix = args.get("tag_prefix", "")
    item_tag = args.get("item_tag", "item")
    if not isinstance(prefix, str) or not isinstance(item_tag, str) or not item_tag:
        return _failing("xml-tree", f"tag_prefix and item_tag must be strings, got {prefix!r}, {item_tag!r}")
    quoted = regex.escape(prefix)
    tag = re.compile(rf"{re.escape(prefix)}<(/?)({_TREE_NAME_RE})>")
    tag_head = prefix + "<"
    start = regex.compile(rf"\s*{quoted}<(?!/){_TREE_NAME}>")

    def elements(text: str) -> list[tuple[str, str]] | None:
        """The (name, body) elements ``text`` consists of, or None when it is not only elements."""
        out: list[tuple[str, str]] = []
        pos = 0
        while True:
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos == len(text):
                return out
            m = tag.match(text, pos)
            if m is None or m.group(1):
                return None
            name, depth, scan = m.group(2), 1, m.end()
            while depth:
                inner = tag.search(text, scan)
                if inner is None:
                    return None
                if inner.group(2) == name:
                    depth += -1 if inner.group(1) else 1
                scan = inner.end()
            out.append((name, text[m.end():inner.start()]))
            pos = scan

    def combine(found: list[tuple[str, Any]]) -> Any:
        """The value of elements already read: a list of ``item_tag`` values, else a dict."""
        value: dict[str, Any] = dict(found)  # (in C: the common answers need no Python loop)
        if len(value) == 1 and item_tag in value:
            return list(map(_second, found))  # every element is an item
        if len(value) == len(found):
            return value  # no name met twice
        return collect(found)

    def collect(pairs) -> dict[str, Any]:
        """``{name: value}`` of ``(name, value)`` pairs in order; a name met again collects its
        values into a list, in order (``read``'s rule for repeated elements)."""
        value: dict[str, Any] = {}
        repeated: set[str] = set()
        for name, child in pairs:
            if name not in value:
                value[name] = child
                continue
            if name not in repeated:
                value[name] = [value[name]]
                repeated.add(name)
            value[name].append(child)
        return value

    def quick(text: str) -> Any:
        """``read(text)`` in one pass over the tags (README.md "Performance"), or ``_NOT_QUICK``.

        ``read`` looks for each element's end tag from its start, and then reads the element's
        body again, so every tag is searched once per enclosing element. When the tags are well
        nested (every end tag closes the innermost open element, none left open) that end tag is
        the one ``read`` finds (it counts only tags of the element's own name, which are balanced
        inside), so one stack pass over the tags gives the same elements. ``tag.split`` cuts the
        text at every tag in one C call: ``[text, slash, name, text, slash, name, ..., text]``; a
        tag's text is ``prefix + "<" + slash + name + ">"``, so any body can be joined back. A body
        is elements when its text outside them is whitespace, else its text, as in ``read``. It
        gives up on tags that are not well nested, on whitespace other than space, tab, CR and LF
        between elements (``start``'s ``\\s`` and ``str.isspace`` may disagree there) and beyond
        ``_QUICK_DEPTH`` (``read`` may hit the recursion limit)."""
        parts = tag.split(text)
        root: list = [None, 0, [], True]  # name, index of the body's first part, children, clean
        stack = [root]
        top = root
        k, last = 1, len(parts)
        while k < last:
            gap = parts[k - 1]
            if parts[k]:  # an end tag
                children = top[2]
                if top is root or top[0] != parts[k + 1]:
                    return _NOT_QUICK
                if not children:
                    child: Any = gap  # a leaf: its one text
                else:
                    if gap and top[3]:
                        if not gap.isspace():
                            top[3] = False
                        elif gap.strip(" \t\r\n"):
                            return _NOT_QUICK
                    child = combine(children) if top[3] else join(parts, top[1], k - 1)
                stack.pop()
                name = top[0]
                top = stack[-1]
                top[2].append((name, child))
                k += 3
                continue
            if gap and top[3]:
                if not gap.isspace():
                    top[3] = False
                elif gap.strip(" \t\r\n"):
                    return _NOT_QUICK
            if len(stack) > _QUICK_DEPTH:
                return _NOT_QUICK
            name = parts[k + 1]
            if k + 3 < last and parts[k + 3] and parts[k + 4] == name:
                # its own end tag next: a leaf, what opening and closing it would append
                top[2].append((name, parts[k + 2]))
                k += 6
                continue
            top = [name, k + 2, [], True]
            stack.append(top)
            k += 3
        if top is not root:
            return _NOT_QUICK
        gap = parts[-1]
        if gap and root[3]:
            if not gap.isspace():
                root[3] = False
            elif gap.strip(" \t\r\n"):
                return _NOT_QUICK
        return combine(root[2]) if root[2] and root[3] else text

    def join(parts: list[str], lo: int, hi: int) -> str:
        """The text of ``parts[lo:hi + 1]`` (from a text part to a text part), tags written back."""
        out = []
        for j in range(lo, hi + 1):
            r = j % 3
            out.append(parts[j] if r == 0 else tag_head + parts[j] if r == 1 else parts[j] + ">")
        return "".join(out)

    def read(text: str) -> Any:
        if not start.match(text):
            return text
        value = quick(text)
        return value if value is not _NOT_QUICK else general(text)

    def general(text: str) -> Any:
        """What ``text`` reads as, element by element (the rule above)."""
        if not start.match(text):
            return text
        found = elements(text)
        if found is None:
            return text
        if all(name == item_tag for name, _ in found):
            return [general(body) for _, body in found]
        return collect((name, general(body)) for name, body in found)

    read.general, read.quick = general, quick  # tests/test_formats_xml_tree.py compares them
    return read


FORMAT = Format("xml-tree", True, check, plan, make, grammar=_grammar_any, since=2)
