"""Which regex delimiters can backtrack for exponential time
(docs/security.md "Regexes that backtrack for exponential time (refused at load)").

The ``regex`` module is a backtracking engine: on a near-miss it tries every way a pattern can
match a prefix of the text. A pattern with exponentially many such ways (``(a|aa)+b`` on
``"a" * 30 + "!"``: 2.6 s, doubling every two more characters) lets model output hang a server.
:func:`backtracking_problem` finds them; ``validate`` refuses such a pattern at load and ``respc
check`` reports it (docs/security.md, "Limits").

Theory of operation
-------------------
A pattern is read into its *position automaton* (Glushkov; see ``compiler/held.py``): one state
per one-character item, ``follow`` edges between them. Lookarounds and anchors only narrow what
matches, so they are read as empty here, and their own bodies are analysed on their own. The
number of ways to read a text is the number of paths through that automaton. Two paths that
part on one character (two positions whose items share a character) and meet again double the
count. So the analysis walks the *pair automaton* (two copies run side by side on the same
characters) and looks for

* a cycle through a parted pair and back to a same-position pair: the ways multiply with every
  turn of the loop (exponential degree of ambiguity: ``(a|aa)+``, ``(\\w|\\d)*``, ``(a|a)*``);
* a path through :data:`MAX_MEETINGS` or more places, one after the other, where two ways part
  and meet again, without a loop (``(?:a|a)`` sixteen times: 2**16 ways or more);
* a repeat whose body can itself repeat unboundedly (``(a+)+``): the position automaton merges
  such loops, a backtracking engine does not (the ``regex`` module guards many of these, other
  engines do not; this is the ``backtracking`` check ``respc check`` has always run). A
  possessive inner repeat or an atomic group gives back nothing and is not counted.

* two unbounded repeats that can read the same text one after the other (``\\s*\\s*\\S``) in a
  loop that attempts from two offsets can share: polynomial in one attempt, paid once per offset
  (:func:`polynomial_problem`, which :func:`backtracking_problem` includes).

Bounded repeats of more than :data:`UNROLL` copies are read as unbounded ones (a superset: it can
only find more). Items share a character when some sample does match both: every character of
the pattern, both ends of each range, and a fixed set of ASCII and non-ASCII samples. A
backreference is read as any text and a conditional as either branch; ``regex``-only classes
(``\\p{L}``, ``\\X``, ``\\N{...}``) as any character, its zero-width escapes (``\\m``,
``\\M``, ``\\G``, ``\\K``) as nothing, version-1 sets (``(?V1)[[a-z]--[aeiou]]``) as any
character, and its own inline flags (``(?r)``, ``(?w)``, fuzzy, ``(?V0)``, ``(?V1)``) are
dropped; POSIX classes (``[[:alpha:]]``) are read as any character, a subroutine call
(``(?1)``, ``(?&name)``) as any text and a branch reset ``(?|`` as a plain group: each can only
find more, or changes nothing the analysis counts. Whole-pattern recursion (``(?R)``) is not
read. A pattern the analysis still cannot read, or too large to analyse, is refused too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from functools import lru_cache

from .automaton import _SAMPLES, _item_has, sre_c, sre_parse
from .sre import parse_pattern

__all__ = ["backtracking_problem", "polynomial_problem", "linear_time_problem", "attempts_linear", "MAX_MEETINGS",
           "MAX_WORK", "UNROLL"]

#: places one after the other where two ways to read the same text part and meet again: refused
#: from this many (2**k ways to read one text or more; the catalogue's most: 2)
MAX_MEETINGS = 8
#: bounded repeats with more copies than this are analysed as unbounded
UNROLL = 8
#: positions analysed at most (more: refused as too large to check)
_MAX_POSITIONS = 2000

_REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", sre_c.MAX_REPEAT))
_BACKTRACKING_REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT)
_CHAR_OPS = (sre_c.LITERAL, sre_c.NOT_LITERAL, sre_c.ANY, sre_c.RANGE, sre_c.CATEGORY, sre_c.IN)
_EMPTY_OPS = (sre_c.AT,)
_ASSERTS = (sre_c.ASSERT, sre_c.ASSERT_NOT)
_EXTRA_SAMPLES = "\u00a0\u2028\u0660\U0001f600\u00ff\u0100\uffff"


# escapes of the ``regex`` module the ``re`` parser does not know, each one character of a class
# (or a named character): read as ``.``, which matches more, so the check can only find more
_REGEX_ONLY = re.compile(r"\\[pP](?:\{[^}]*\}|[A-Za-z])|\\N\{[^}]*\}|\\X")
# its zero-width escapes (word start and end, search anchor, keep-out): read as nothing
_REGEX_ONLY_EMPTY = re.compile(r"\\[mMGK]")
# its inline flags the ``re`` parser does not know (reverse, word, fuzzy, version 0, BESTMATCH,
# POSIX, full case folding); none changes how many ways a pattern can match a text
_POSIX_CLASS = re.compile(r"\[:\^?[A-Za-z]+:\]")
_SUBROUTINE = re.compile(r"\(\?(?:[+-]?[1-9][0-9]*|&\w+|P>\w+)\)")
_NAMED_GROUP = re.compile(r"\(\?P?<(?![=!])\w+>")
_NAMED_REF = re.compile(r"\(\?P=\w+\)|\\g<\w+>")
_IGNORECASE = re.compile(r"\(\?[a-zA-Z0-9-]*i")
_FLAG_GROUP = re.compile(r"\(\?([a-zA-Z0-9]+)([:)])")
_REGEX_ONLY_FLAGS = set("rwbepfV0")


def _strip_flags(match: re.Match) -> str:
    letters = match.group(1).replace("V0", "").replace("V1", "")
    if not set(letters) <= set("aiLmsux") | _REGEX_ONLY_FLAGS:
        return match.group(0)
    kept = "".join(c for c in letters if c not in _REGEX_ONLY_FLAGS)
    if match.group(2) == ":":
        return f"(?{kept}:" if kept else "(?:"
    return f"(?{kept})" if kept else "(?:)"


class _Unanalysable(Exception):
    """A construct the analysis does not model."""


class _TooLarge(Exception):
    """The pattern's automaton is too large to analyse (:data:`MAX_WORK`)."""


#: pair-automaton steps one analysis may take; a pattern that needs more is refused as too large
#: to check (the catalogue's largest needs a few thousand)
MAX_WORK = 500_000


class _Glushkov:
    """The position automaton of an sre tree, lookarounds read as empty."""

    def __init__(self) -> None:
        self.items: list[tuple] = []
        self.follow: list[set[int]] = []
        self.lookarounds: list = []
        #: positions inside a possessive repeat or an atomic group (they give back nothing)
        self.committed: set[int] = set()
        self._commit = 0

    def position(self, op, av) -> int:
        if len(self.items) >= _MAX_POSITIONS:
            raise _TooLarge("too many positions")
        self.items.append((op, av))
        self.follow.append(set())
        if self._commit:
            self.committed.add(len(self.items) - 1)
        return len(self.items) - 1

    def seq(self, seq) -> tuple[set[int], set[int], bool]:
        first: set[int] = set()
        last: set[int] = set()
        nullable = True
        for op, av in seq:
            f, l, n = self.item(op, av)
            for p in last:
                self.follow[p] |= f
            if nullable:
                first |= f
            last = (last | l) if n else l
            nullable = nullable and n
        return first, last, nullable

    def item(self, op, av) -> tuple[set[int], set[int], bool]:
        if op in _CHAR_OPS:
            p = self.position(op, av)
            return {p}, {p}, False
        if op is sre_c.SUBPATTERN:
            return self.seq(av[-1])
        if op is getattr(sre_c, "ATOMIC_GROUP", None):  # read as a plain group (may find more)
            self._commit += 1
            try:
                return self.seq(av)
            finally:
                self._commit -= 1
        if op is sre_c.BRANCH:
            first: set[int] = set()
            last: set[int] = set()
            nullable = False
            for alt in av[1]:
                f, l, n = self.seq(alt)
                first |= f
                last |= l
                nullable = nullable or n
            return first, last, nullable
        if op in _REPEATS:
            low, high, body = av
            if op is getattr(sre_c, "POSSESSIVE_REPEAT", None):
                self._commit += 1
                try:
                    return self.repeat(low, high, body)
                finally:
                    self._commit -= 1
            return self.repeat(low, high, body)
        if op in _EMPTY_OPS:
            return set(), set(), True
        if op in _ASSERTS:
            self.lookarounds.append(av[1])
            return set(), set(), True
        if op is sre_c.GROUPREF:  # a backreference: read as any text (it can only find more)
            return self.repeat(0, sre_c.MAXREPEAT, [(sre_c.ANY, None)])
        if op is sre_c.GROUPREF_EXISTS:  # a conditional: read as either branch
            _group, yes, no = av
            return self.item(sre_c.BRANCH, (None, [yes, no if no is not None else []]))
        raise _Unanalysable(str(op))

    def repeat(self, low: int, high: int, body) -> tuple[set[int], set[int], bool]:
        if high > UNROLL:  # read as body{low', } with at most UNROLL copies before the loop
            low, high = min(low, UNROLL), sre_c.MAXREPEAT
        unbounded = high >= sre_c.MAXREPEAT
        pieces = []
        for _ in range(low - 1 if unbounded and low else low):
            pieces.append(self.seq(body))
        if unbounded:
            f, l, n = self.seq(body)
            for p in l:
                self.follow[p] |= f
            pieces.append((f, l, n or not low))
        else:
            for _ in range(high - low):
                f, l, _n = self.seq(body)
                pieces.append((f, l, True))
        first: set[int] = set()
        last: set[int] = set()
        nullable = True
        for f, l, n in pieces:
            for p in last:
                self.follow[p] |= f
            if nullable:
                first |= f
            last = (last | l) if n else l
            nullable = nullable and n
        return first, last, nullable


def _samples(pattern: str, items) -> list[str]:
    chars = set(_SAMPLES) | set(pattern) | set(_EXTRA_SAMPLES)

    def ends(op, av) -> None:
        if op is sre_c.LITERAL or op is sre_c.NOT_LITERAL:
            chars.add(chr(av))
        elif op is sre_c.RANGE:
            chars.update((chr(av[0]), chr(av[1]), chr((av[0] + av[1]) // 2)))
        elif op is sre_c.IN:
            for o, a in av:
                if o is not sre_c.NEGATE:
                    ends(o, a)

    for op, av in items:
        ends(op, av)
    return sorted(chars)


def _nested_unbounded(seq) -> bool:
    """Whether an unbounded repeat holds a repeat of more than one copy (``(a+)+``, ``(a{2})*``)."""

    def has_repeat(seq) -> bool:
        # an atomic group or a possessive repeat gives back nothing once matched: not counted
        for op, av in seq:
            if op in _BACKTRACKING_REPEATS and (av[1] == sre_c.MAXREPEAT or av[1] > 1):
                return True
            if op is sre_c.SUBPATTERN and has_repeat(av[-1]):
                return True
            if op is sre_c.BRANCH and any(has_repeat(b) for b in av[1]):
                return True
        return False

    for op, av in seq:
        if op in _REPEATS:
            if av[1] == sre_c.MAXREPEAT and has_repeat(av[2]):
                return True
            if _nested_unbounded(av[2]):
                return True
        elif op is sre_c.SUBPATTERN and _nested_unbounded(av[-1]):
            return True
        elif op is getattr(sre_c, "ATOMIC_GROUP", None) and _nested_unbounded(av):
            return True
        elif op is sre_c.BRANCH and any(_nested_unbounded(b) for b in av[1]):
            return True
        elif op in _ASSERTS and _nested_unbounded(av[1]):
            return True
    return False


def _position_masks(pattern: str, g: "_Glushkov") -> list[int]:
    """Which sample characters each Glushkov position matches, as a bit set over the samples.

    With case folding anywhere in the pattern, a position matches a sample when it matches any case
    of it (more overlaps than the positions without the flag have: the analyses can only find more).
    """
    samples = _samples(pattern, g.items)
    fold = "(?" in pattern and _IGNORECASE.search(pattern) is not None
    masks = []
    for op, av in g.items:
        mask = 0
        for i, c in enumerate(samples):
            cases = {c, c.lower(), c.upper(), c.casefold()[:1], c.swapcase()[:1]} if fold else (c,)
            if any(len(x) == 1 and _item_has(op, av, x) for x in cases):
                mask |= 1 << i
        masks.append(mask)
    return masks


def _pair_successors(g: "_Glushkov", first, masks: list[int], unordered: bool) -> Callable:
    """The successor function of the pair automaton over ``g``'s positions: from ``(p, q)``
    (``-1``: before the first character) the pairs of positions that can read one character
    together. ``unordered`` gives each pair once, smaller position first. Counts its work and
    raises ``_TooLarge`` past ``MAX_WORK``, shared by every call of the function it returns."""
    steps = [0]

    def succ(pair) -> list:
        p, q = pair
        fp = g.follow[p] if p >= 0 else first
        fq = g.follow[q] if q >= 0 else first
        steps[0] += len(fp) * len(fq)
        if steps[0] > MAX_WORK:
            raise _TooLarge("too many steps")
        out = []
        for a in fp:
            ma = masks[a]
            for b in fq:
                if ma & masks[b]:
                    out.append((a, b) if not unordered or a <= b else (b, a))
        return out

    return succ


def _ambiguity(pattern: str, tree) -> str | None:
    """The pair-automaton verdict on one sre tree (and, separately, its lookarounds' bodies)."""
    g = _Glushkov()
    first, _last, _nullable = g.seq(tree)
    masks = _position_masks(pattern, g)
    succ = _pair_successors(g, first, masks, unordered=True)

    start = (-1, -1)
    nodes = {start: 0}
    order = [start]
    edges: dict = {}
    i = 0
    while i < len(order):
        node = order[i]
        i += 1
        out = set(succ(node))
        edges[node] = out
        for nxt in out:
            if nxt not in nodes:
                nodes[nxt] = len(order)
                order.append(nxt)
    # strongly connected components (iterative Tarjan)
    index: dict = {}
    low: dict = {}
    comp: dict = {}
    stack: list = []
    on: set = set()
    closed: list = []
    counter = 0
    for root in order:
        if root in index:
            continue
        frames = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while frames:
            node, it = frames[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    frames.append((nxt, iter(edges[nxt])))
                    advanced = True
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            frames.pop()
            if frames:
                parent = frames[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on.discard(member)
                    comp[member] = node
                    if member == node:
                        break
                closed.append(node)
    kinds: dict = {}
    for node in order:
        kinds.setdefault(comp[node], set()).add(node[0] == node[1])
    if any(both == {True, False} for both in kinds.values()):
        # a component with a parted and a same-position pair is a cycle through both
        return "two ways to match the same text inside a loop: a near-miss takes exponential time"
    # meetings (an edge from a parted pair to a same-position pair) along the longest path through
    # the DAG of components, each component once its successors are done (the order Tarjan
    # closed them)
    members: dict = {}
    for node in order:
        members.setdefault(comp[node], []).append(node)
    best: dict = {}
    for c in closed:
        value = 0
        for node in members[c]:
            for nxt in edges[node]:
                d = comp[nxt]
                if d != c:
                    value = max(value, best[d] + (node[0] != node[1] and nxt[0] == nxt[1]))
        best[c] = value
    meetings = max(best.values(), default=0)
    if meetings >= MAX_MEETINGS:
        return (f"{meetings} places one after the other where two ways to match the same text part and meet "
                f"again: a near-miss can take 2**{meetings} steps or more")
    for body in g.lookarounds:
        found = _ambiguity(pattern, body)
        if found:
            return found + " (in a lookaround)"
    return None


def _sets_as_any(pattern: str) -> str:
    """``pattern`` with every character set read as ``.`` (version-1 sets nest and have set
    operations the ``re`` parser does not know; any character is more than any set)."""
    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if c != "[":
            out.append(c)
            i += 1
            continue
        depth = 0
        while i < n:
            c = pattern[i]
            if c == "\\":
                i += 2
                continue
            if c == "[":
                depth += 1
                i += 1
                if i < n and pattern[i] == "^":
                    i += 1
                if i < n and pattern[i] == "]":
                    i += 1
                continue
            i += 1
            if c == "]":
                depth -= 1
                if depth == 0:
                    break
        out.append(".")
    return "".join(out)


def _mark_alternatives(pattern: str) -> str:
    """``pattern`` with an empty named group at the start of every alternative after the first.

    The ``re`` parser merges alternatives of one character into a set (``a|a`` -> ``[a]``) and
    factors out a common first item; the ``regex`` engine backtracks through them as written. The
    groups (epsilon to the analysis) keep each alternative as written.
    """
    out = []
    i = 0
    n = len(pattern)
    in_class = False
    count = 0
    while i < n:
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            out.append(c)
            i += 1
            # a ']' (after an optional '^') right after '[' is a member, not the end
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":
                out.append("]")
                i += 1
            continue
        elif c == "|":
            count += 1
            out.append(f"|(?P<_respc_alt{count}>)")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


@lru_cache(maxsize=1024)
def backtracking_problem(pattern: str) -> str | None:
    """Why ``pattern`` can take exponential time on some text, or None when it cannot.

    Args:
        pattern: a delimiter regex (``regex`` syntax, compiled with DOTALL).

    Returns:
        str | None: one sentence saying what makes it exponential (see the module docstring),
        or polynomial in a way a search pays once per offset (:func:`polynomial_problem`), or
        that the pattern is too large to analyse (:data:`MAX_WORK`) or uses syntax the analysis
        cannot read; None when the analysis finds nothing. ``validate`` refuses a pattern with a
        problem at load; ``respc check`` reports it (``backtracking``).
    """
    read = _read_approximately(pattern)
    if read is None:
        return "syntax the backtracking check cannot read, so it cannot be shown safe"
    pattern, tree = read
    if _nested_unbounded(list(tree)):
        return ("a repeat nested inside an unbounded repeat: a near-miss takes exponential time (write the "
                "inner one possessive, a++, or inside an atomic group, (?>...))")
    try:
        try:
            marked = parse_pattern(_mark_alternatives(pattern), sre_c.SRE_FLAG_DOTALL)
        except Exception:  # noqa: BLE001 - the marks did not fit (a conditional): as the parser read it
            marked = tree
        return _ambiguity(pattern, list(marked)) or _polynomial_read(pattern, tree)
    except _TooLarge:
        return (f"too large to check for exponential backtracking (more than {_MAX_POSITIONS} one-character items, "
                f"bounded repeats of up to {UNROLL} copies unrolled, or more than {MAX_WORK:,} steps)")
    except RecursionError:
        return "nested too deeply to check for exponential backtracking"
    except _Unanalysable as exc:
        return f"a construct the backtracking check cannot read ({exc}), so it cannot be shown safe"


# -- polynomial backtracking (red-team item: ``\\s*\\s*\\S``) ----------------------------------


def _polynomial(pattern: str, tree) -> str | None:
    """The infinite-degree-of-ambiguity test on one sre tree (and, separately, its lookarounds).

    A pattern has polynomially many ways to read a text (and a backtracking engine polynomial
    work on a near-miss) when two positions ``p != q`` and one text ``v`` give ``p -> p``,
    ``p -> q`` and ``q -> q`` (Weber and Seidl's IDA condition): every turn of the loop may be the
    one where the reading moves from ``p``'s loop to ``q``'s. Three copies of the position
    automaton run side by side on the same characters: the condition holds when the triple
    ``(p, q, q)`` is reached from ``(p, p, q)`` on a non-empty text. Only parted pairs ``(p, q)``
    that lie on a loop of the pair automaton are tried (the condition needs ``(p, q) -> (p, q)``).
    """
    g = _Glushkov()
    first, _last, _nullable = g.seq(tree)
    masks = _position_masks(pattern, g)
    steps = [0]

    def count(n: int) -> None:
        steps[0] += n
        if steps[0] > MAX_WORK:
            raise _TooLarge("too many steps")

    # the pair graph (ordered pairs) from the start, then its loops
    graph: dict = {}
    todo = [(-1, -1)]
    graph[(-1, -1)] = None
    while todo:
        node = todo.pop()
        p, q = node
        fp = g.follow[p] if p >= 0 else first
        fq = g.follow[q] if q >= 0 else first
        count(len(fp) * len(fq))
        out = [(a, b) for a in fp for b in fq if masks[a] & masks[b]]
        graph[node] = out
        for nxt in out:
            if nxt not in graph:
                graph[nxt] = None
                todo.append(nxt)
    cyclic = _components(graph)
    # attempts from different offsets: one that has read a character (at an inner position a) and
    # one starting on the next (at a first position b) side by side (as in _linear_proof, part 2)
    inner = sorted({x for x in range(len(g.items)) if any(x in f for f in g.follow)})
    starts = [(a, b) for a in inner for b in first if masks[a] & masks[b]]
    reach: dict = {}

    def shared(p: int) -> bool:
        # whether two attempts from different offsets can both be in p's loop on the same text:
        # then each of them pays the polynomial work on it, and a search pays it once per offset
        # (n**3 for \s*\s*\S); otherwise the attempts that reach the loop read it one after
        # the other and the search runs under the time limit (linear_time_problem)
        if not reach:
            seen = set(starts)
            todo = list(starts)
            while todo:
                x, y = todo.pop()
                count(len(g.follow[x]) * len(g.follow[y]))
                for a in g.follow[x]:
                    for b in g.follow[y]:
                        if masks[a] & masks[b] and (a, b) not in seen:
                            seen.add((a, b))
                            todo.append((a, b))
            reach[None] = seen
        return (p, p) in reach[None]

    for (p, q), loop in cyclic.items():
        if p == q or p < 0 or q < 0 or not loop or p in g.committed:
            continue
        # (p, p, q) ->+ (p, q, q) on one text, each step on a character all three items share
        seen = set()
        frontier = [(p, p, q)]
        while frontier:
            x, y, z = frontier.pop()
            fz = g.follow[z]
            for a in g.follow[x]:
                ma = masks[a]
                for b in g.follow[y]:
                    mab = ma & masks[b]
                    if not mab:
                        continue
                    count(len(fz))
                    for c in fz:
                        if mab & masks[c]:
                            triple = (a, b, c)
                            if triple == (p, q, q) and shared(p):
                                return ("two unbounded repeats that can read the same text one after the "
                                        "other (as in \\s*\\s*): a near-miss takes polynomial time (merge "
                                        "them, or make one possessive, a*+, or atomic, (?>...))")
                            if triple not in seen:
                                seen.add(triple)
                                frontier.append(triple)
    for body in g.lookarounds:
        found = _polynomial(pattern, body)
        if found:
            return found + " (in a lookaround)"
    return None


@lru_cache(maxsize=1024)
def polynomial_problem(pattern: str) -> str | None:
    """Why ``pattern`` can take polynomial (super-linear) time in one attempt, or None.

    The exponential cases are :func:`backtracking_problem`'s; this finds the next class (docs/
    security.md, "Backtracking"): two unbounded repeats that can read the same text one after the
    other (``\\s*\\s*\\S``: one attempt on n spaces tries every split, n**2 steps; a search
    from every offset, n**3). ``validate`` refuses such a pattern at load, naming the template
    key and the pattern. Possessive repeats and atomic groups give back nothing: the analysis
    reads the automaton as written, so write the repeat possessive to be accepted.

    Args:
        pattern: a delimiter regex (``regex`` syntax, compiled with DOTALL).

    Returns:
        str | None: one sentence saying what makes it polynomial, or that it is too large to
        check; None when the analysis finds nothing (or the syntax is one
        :func:`backtracking_problem` already decides on).
    """
    read = _read_approximately(pattern)
    if read is None:
        return None  # backtracking_problem refuses what it cannot read
    return _polynomial_read(*read)


def _read_approximately(pattern: str) -> tuple[str, Any] | None:
    """``(pattern as read, its parse tree)``: the ``re`` parser's reading of ``pattern``, with the
    ``regex`` module's own syntax replaced by what matches at least as much (a POSIX class or a
    ``\\p{..}`` escape: any character; a subroutine call or a named backreference: any text); None
    when even that cannot be read. Both checks read a pattern this way, so that a construct the
    ``re`` parser does not know hides no exponential or polynomial shape (red team s11)."""
    # POSIX classes ([[:alpha:]]), which the re parser reads as plain characters: any character
    pattern = _POSIX_CLASS.sub(lambda m: "\\x00-\\U0010ffff", pattern)
    # subroutine calls ((?1), (?&name), (?P>name)): any text; branch reset: a plain group
    pattern = _SUBROUTINE.sub("(?:.*)", pattern).replace("(?|", "(?:")
    try:
        return pattern, parse_pattern(pattern, sre_c.SRE_FLAG_DOTALL)
    except Exception:  # noqa: BLE001 - regex-only syntax: read its classes as any character
        if "V1" in pattern:
            pattern = _sets_as_any(pattern)
        # names used twice (the regex module allows it): plain groups, named backreferences any text
        pattern = _NAMED_REF.sub("(?:.*)", _NAMED_GROUP.sub("(", pattern))
        pattern = _FLAG_GROUP.sub(_strip_flags, _REGEX_ONLY_EMPTY.sub("(?:)", _REGEX_ONLY.sub(".", pattern)))
        try:
            return pattern, parse_pattern(pattern, sre_c.SRE_FLAG_DOTALL)
        except Exception:  # noqa: BLE001 - still unreadable: refused, it cannot be checked
            return None


def _polynomial_read(pattern: str, tree: Any) -> str | None:
    """:func:`polynomial_problem` of a pattern as :func:`_read_approximately` read it."""
    try:
        try:
            marked = parse_pattern(_mark_alternatives(pattern), sre_c.SRE_FLAG_DOTALL)
        except Exception:  # noqa: BLE001
            marked = tree
        return _polynomial(pattern, list(marked))
    except _TooLarge:
        return (f"too large to check for polynomial backtracking (more than {_MAX_POSITIONS} one-character items "
                f"or more than {MAX_WORK:,} steps)")
    except RecursionError:
        return "nested too deeply to check for polynomial backtracking"
    except _Unanalysable:
        return None  # backtracking_problem refuses what it cannot read


# -- proof of linear-time search (docs/security.md "Regexes not proven linear (searched with a time limit)") --


def _has_unreadable(seq) -> str | None:
    """What in an sre tree makes the linear-time proof fail outright, or None: a backreference, a
    conditional, or a lookaround whose body can match text of unbounded length."""
    for op, av in seq:
        if op is sre_c.GROUPREF or op is sre_c.GROUPREF_EXISTS:
            return "a backreference or a conditional"
        if op in _ASSERTS:
            body = av[1]
            if av[0] < 0 and body.getwidth()[1] >= sre_c.MAXREPEAT:
                # a lookahead's body is proven as a pattern of its own (_linear_proof)
                return "a lookbehind that can read text of unbounded length"
            found = _has_unreadable(body)
        elif op is sre_c.SUBPATTERN:
            found = _has_unreadable(av[-1])
        elif op is getattr(sre_c, "ATOMIC_GROUP", None):
            found = _has_unreadable(av)
        elif op is sre_c.BRANCH:
            found = next((f for f in (_has_unreadable(b) for b in av[1]) if f), None)
        elif op in _REPEATS:
            found = _has_unreadable(av[2])
        else:
            found = None
        if found:
            return found
    return None


def _pair_cycle(edges_of, starts) -> bool:
    """Whether the graph ``edges_of`` reaches a cycle from ``starts`` (iterative DFS, colours)."""
    colour: dict = {}
    for root in starts:
        if root in colour:
            continue
        colour[root] = 1
        frames = [(root, iter(edges_of(root)))]
        while frames:
            node, it = frames[-1]
            for nxt in it:
                c = colour.get(nxt)
                if c == 1:
                    return True
                if c is None:
                    colour[nxt] = 1
                    frames.append((nxt, iter(edges_of(nxt))))
                    break
            else:
                colour[node] = 2
                frames.pop()
    return False


def _components(graph: dict) -> dict:
    """Per node of ``graph`` (node -> successors): True when it lies on a cycle (Kosaraju)."""
    order: list = []
    seen: set = set()
    for root in graph:
        if root in seen:
            continue
        seen.add(root)
        frames = [(root, iter(graph[root]))]
        while frames:
            node, it = frames[-1]
            for nxt in it:
                if nxt not in seen:
                    seen.add(nxt)
                    frames.append((nxt, iter(graph[nxt])))
                    break
            else:
                order.append(node)
                frames.pop()
    back: dict = {node: [] for node in graph}
    for node, out in graph.items():
        for nxt in out:
            back[nxt].append(node)
    cyclic: dict = {}
    comp_of: dict = {}
    for root in reversed(order):
        if root in comp_of:
            continue
        members = [root]
        comp_of[root] = root
        stack = [root]
        while stack:
            node = stack.pop()
            for prev in back[node]:
                if prev not in comp_of:
                    comp_of[prev] = root
                    members.append(prev)
                    stack.append(prev)
        loop = len(members) > 1 or root in graph[root]
        for m in members:
            cyclic[m] = loop
    return cyclic


def _one_attempt(pattern: str, tree) -> tuple[Any, list, Callable, bool]:
    """Step 1 of the linear-time proof on ``tree``: ``(automaton, first positions, pair
    successors, holds)``, where ``holds`` says that one attempt (one start offset) has a bounded
    number of ways to read any text: two copies of the automaton run side by side on the same
    characters never go round a loop while they are apart (a loop through a parted pair gives
    ever more ways: ``\\s*\\s*x``)."""
    g = _Glushkov()
    first, _last, _nullable = g.seq(tree)
    masks = _position_masks(pattern, g)
    succ = _pair_successors(g, first, masks, unordered=False)
    graph: dict = {}
    todo = [(-1, -1)]
    graph[(-1, -1)] = None
    while todo:
        node = todo.pop()
        out = graph[node] = succ(node)
        for nxt in out:
            if nxt not in graph:
                graph[nxt] = None
                todo.append(nxt)
    holds = not any(node[0] != node[1] and comp for node, comp in _components(graph).items())
    return g, first, succ, holds


def _linear_proof(pattern: str, tree) -> str | None:
    g, first, succ, holds = _one_attempt(pattern, tree)
    masks = _position_masks(pattern, g)

    # 1. one attempt (one start offset) has a bounded number of ways to read any text
    if not holds:
        return "two ways to read the same text inside a loop (a search may take polynomial time)"
    # 2. attempts from different offsets share a bounded stretch of text: an attempt that has read
    # a character (at position a) and one that starts on the next (b in first) cannot go on side
    # by side for ever (no cycle in the pair graph from those pairs)
    inner = sorted({p for p in range(len(g.items)) if any(p in f for f in g.follow)})
    starts = []
    for a in inner:
        for b in first:
            if masks[a] & masks[b]:
                starts.append((a, b))
    if _pair_cycle(succ, starts):
        return ("attempts at different offsets can read the same text without bound "
                "(a search may take quadratic time)")
    for body in g.lookarounds:
        found = _linear_proof(pattern, body)
        if found:
            return found + " (in a lookaround)"
    return None


@lru_cache(maxsize=1024)
def attempts_linear(pattern: str) -> bool:
    """Whether one attempt of ``pattern`` at one start offset is proven to take time linear in
    the text it reads: step 1 of :func:`linear_time_problem`'s proof (at most one way to read any
    text) holds, with no exponential problem, no backreference or conditional, and only
    lookarounds of bounded length (each costs a bounded amount wherever an attempt asks it).
    A search of such a pattern over ``n`` characters makes at most ``n + 1`` attempts (two
    rounds with ``partial=True``) of at most ``n`` characters each: quadratic in ``n`` at worst,
    so over a short text its time is bounded whatever the text (docs/security.md, "Short
    searches"; runtime ``BoundedPattern``). Patterns whose only gap is the offsets (``(?:a|ab)*c``,
    ``<function=[^>]+>``) have it; those with two ways to read inside a loop do not.

    Args:
        pattern: a delimiter regex, or its D2 probe (``regex`` syntax, compiled with DOTALL).

    Returns:
        bool: True when proven; False otherwise (anything unreadable or too large included).
    """
    if backtracking_problem(pattern):
        return False
    try:
        tree = parse_pattern(pattern, sre_c.SRE_FLAG_DOTALL)
        if _has_unreadable(list(tree)) or _unbounded_lookaround(list(tree)):
            return False
        try:
            marked = parse_pattern(_mark_alternatives(pattern), sre_c.SRE_FLAG_DOTALL)
        except Exception:  # noqa: BLE001
            marked = tree
        return _one_attempt(pattern, list(marked))[3]
    except Exception:  # noqa: BLE001 - regex-only syntax, too large, too deep: not proven
        return False


def _unbounded_lookaround(seq) -> bool:
    """Whether an sre tree holds a lookaround whose body can read text of unbounded length."""
    for op, av in seq:
        if op in _ASSERTS:
            if av[1].getwidth()[1] >= sre_c.MAXREPEAT:
                return True
            inner = [av[1]]
        elif op is sre_c.SUBPATTERN:
            inner = [av[-1]]
        elif op is getattr(sre_c, "ATOMIC_GROUP", None):
            inner = [av]
        elif op is sre_c.BRANCH:
            inner = list(av[1])
        elif op in _REPEATS:
            inner = [av[2]]
        else:
            inner = []
        if any(_unbounded_lookaround(list(body)) for body in inner):
            return True
    return False


@lru_cache(maxsize=1024)
def linear_time_problem(pattern: str) -> str | None:
    """Why ``pattern``'s searches cannot be shown to take linear time, or None when they can.

    The proof (docs/security.md, "Limits"): the pattern has no exponential problem
    (:func:`backtracking_problem`), no backreference, conditional or lookaround of unbounded
    length; in its position automaton (lookaround bodies on their own) one attempt at one start
    offset has at most one way to read any text, so the engine's work there is proportional to
    the text it reads (each other choice fails on the character at hand); and two attempts from
    different offsets can read only a bounded stretch of text side by side, so each character is
    read by a bounded number of attempts. Together a search costs time linear in the text. The
    regex module's own syntax that the ``re`` parser cannot read, and anything too large to
    analyse, is not proven.

    Args:
        pattern: a delimiter regex (``regex`` syntax, compiled with DOTALL).

    Returns:
        str | None: one sentence saying what the proof missed; None when it holds. Generated
        modules search a pattern with a reason under ``timeout=`` (runtime ``REGEX_TIMEOUT``).
    """
    problem = backtracking_problem(pattern)
    if problem:
        return problem
    try:
        tree = parse_pattern(pattern, sre_c.SRE_FLAG_DOTALL)
    except Exception:  # noqa: BLE001 - regex-only syntax: read only approximately, not proven
        return "syntax of the regex module the proof reads only approximately"
    found = _has_unreadable(list(tree))
    if found:
        return found
    try:
        try:
            marked = parse_pattern(_mark_alternatives(pattern), sre_c.SRE_FLAG_DOTALL)
        except Exception:  # noqa: BLE001
            marked = tree
        return _linear_proof(pattern, list(marked))
    except (_TooLarge, RecursionError, _Unanalysable):
        return "too large or too deeply nested to prove linear"
