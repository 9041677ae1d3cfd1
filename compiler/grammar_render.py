"""Grammar export, pass 2: render a :class:`~respc.compiler.grammar_ir.Grammar` per engine.

Formats (``FORMATS``):

* ``lark`` -- Lark (Earley, dynamic lexer, ``regex=True``); :class:`Except` becomes one
  lookahead regex terminal. This is the ``GRAMMAR`` embedded in generated modules.
* ``gbnf`` -- llama.cpp GBNF (rule names ``[a-z0-9-]``, root ``root``).
* ``xgrammar`` -- xgrammar's EBNF (``xgr.Grammar.from_ebnf``; GBNF syntax, root ``root``).
* ``llguidance`` -- llguidance's Lark dialect (``%llguidance {}``, start ``start``).

GBNF, xgrammar and llguidance have no lookahead, so :class:`Except` is lowered to right-linear
rules over Aho-Corasick states (the text read so far ends in a proper prefix of a literal; a step
that would complete a literal is missing). The renderers only lay out what the IR decided.
"""

from __future__ import annotations

import json

from .grammar_ir import Alt, Chars, Except, Grammar, Lit, Ref, Rep, Seq, MAX_CHAR, _complement, _norm

__all__ = ["FORMATS", "STRUCTURAL_TAG", "export_grammar", "render"]

FORMATS = ("lark", "gbnf", "xgrammar", "llguidance")
#: the xgrammar structural tag (JSON; :mod:`respc.compiler.grammar_structural`), not a grammar text
STRUCTURAL_TAG = "xgrammar-structural-tag"

#: a string as ``json.dumps(text, ensure_ascii=False)`` writes it
_json_string = json.encoder.encode_basestring


def _lower_except(g: Grammar, node: Except, cache: dict) -> Ref:
    """Right-linear rules for text without ``node.literals``; returns the entry rule."""
    key = (node.literals, node.within)
    if key in cache:
        return cache[key]
    literals = [x for x in node.literals if x]
    base = f"except_{len(cache)}"
    prefixes = [""] + sorted({lit[:i] for lit in literals for i in range(1, len(lit))}, key=lambda p: (len(p), p))
    allowed = _positive(node.within) if node.within is not None else ((0, MAX_CHAR),)
    # a literal character outside ``within`` can never be read: no step takes it
    alphabet = sorted({c for lit in literals for c in lit if _holds(allowed, ord(c))})

    def step(state: str, c: str) -> str | None:
        s = state + c
        if any(s.endswith(lit) for lit in literals):
            return None
        for i in range(len(s) + 1):
            if s[i:] in prefix_set:
                return s[i:]
        return ""

    prefix_set = set(prefixes)
    name = {p: (base if p == "" else f"{base}_{k}") for k, p in enumerate(prefixes)}
    for p in prefixes:
        by_target: dict[str, list[int]] = {}
        for c in alphabet:
            nxt = step(p, c)
            if nxt is not None:
                by_target.setdefault(nxt, []).append(ord(c))
        alts = []
        for target, codes in by_target.items():
            alts.append(Seq((Chars(_norm([(x, x) for x in codes])), Ref(name[target]))))
        if node.within is None:  # any character but the literals' ones
            codes = _norm([(ord(c), ord(c)) for c in alphabet])
            alts.append(Seq((Chars(codes, True), Ref(base))))
        elif _minus(allowed, [ord(c) for c in alphabet]):
            alts.append(Seq((Chars(_minus(allowed, [ord(c) for c in alphabet])), Ref(base))))
        g.rules[name[p]] = Rep(Alt(tuple(alts)), 0, 1)
    cache[key] = Ref(base)
    return cache[key]


def _positive(c: Chars) -> tuple[tuple[int, int], ...]:
    """The code point ranges ``c`` matches, as positive ranges."""
    return _complement(c.ranges) if c.negate else c.ranges


def _holds(ranges, code: int) -> bool:
    return any(lo <= code <= hi for lo, hi in ranges)


def _minus(ranges, codes: list[int]) -> tuple[tuple[int, int], ...]:
    """``ranges`` without the code points ``codes`` (normalised)."""
    out = list(_norm(ranges))
    for code in sorted(set(codes)):
        nxt = []
        for lo, hi in out:
            if lo <= code <= hi:
                if lo < code:
                    nxt.append((lo, code - 1))
                if code < hi:
                    nxt.append((code + 1, hi))
            else:
                nxt.append((lo, hi))
        out = nxt
    return tuple(out)


def _lowered(g: Grammar) -> Grammar:
    out = Grammar(dict(g.rules), g.start, g.exact, list(g.notes))
    cache: dict = {}
    # node id -> its lowered node. A node without an Except is kept as it is (no copy), and a node
    # met again (the same object under several rules) is lowered once; the first meeting of each
    # Except still comes in the same order, so the ``except_N`` rules are named as before
    done: dict = {}

    def walk(node):
        kind = type(node)
        if kind is Lit or kind is Chars or kind is Ref:
            return node
        got = done.get(id(node))
        if got is not None:
            return got[1]
        if kind is Seq or kind is Alt:
            new = node
            items = node.items
            for i, x in enumerate(items):
                y = walk(x)
                if y is not x:
                    new = kind(items[:i] + (y,) + tuple(walk(z) for z in items[i + 1:]))
                    break
        elif kind is Rep:
            item = walk(node.item)
            new = node if item is node.item else Rep(item, node.min, node.max, node.lazy)
        elif isinstance(node, Except):
            new = _lower_except(out, node, cache)
        else:
            new = walk_other(node)
        done[id(node)] = (node, new)  # (keeps ``node`` alive, so its id is not reused)
        return new

    def walk_other(node):  # a subclass of a node kind (none today): rebuilt as its kind
        if isinstance(node, Seq):
            return Seq(tuple(walk(x) for x in node.items))
        if isinstance(node, Alt):
            return Alt(tuple(walk(x) for x in node.items))
        if isinstance(node, Rep):
            return Rep(walk(node.item), node.min, node.max, node.lazy)
        return node

    for name in list(g.rules):
        out.rules[name] = walk(g.rules[name])
    return out


def _is_empty(node) -> bool:
    return isinstance(node, Seq) and not node.items


class _Renderer:
    arrow = " ::= "
    start_name = "root"

    def __init__(self, g: Grammar) -> None:
        self.g = g
        #: Lit / Chars -> its text: the same literal or class recurs in every tool's rules, and
        #: its text depends on nothing else (docs/grammar.md "Cost")
        self._leaves: dict = {}

    def name(self, rule: str) -> str:
        return self.start_name if rule == self.g.start else rule.replace("_", "-")

    def lit(self, text: str) -> str:
        # (``json.dumps(text, ensure_ascii=False)`` without building an encoder per literal)
        return _json_string(text).replace("\x7f", "\\x7f")

    def code(self, c: int) -> str:
        ch = chr(c)
        if ch in "\\]-^[":
            return "\\" + ch
        if c < 0x20 or c == 0x7F:
            # \u with four digits: xgrammar reads \x greedily, so [\x0Aad-e] would be 0xAAD-e
            return f"\\u{c:04X}"
        if 0xD800 <= c <= 0xDFFF:
            return f"\\u{c:04X}"
        if c > 0xFFFF:
            return f"\\U{c:08X}"
        return ch

    def chars(self, node: Chars) -> str:
        if not node.ranges and node.negate:
            return self.any_char()
        body = "".join(self.code(lo) if lo == hi else f"{self.code(lo)}-{self.code(hi)}" for lo, hi in node.ranges)
        return f"[{'^' if node.negate else ''}{body}]"

    def any_char(self) -> str:
        return f"[{self.code(0)}-{self.code(MAX_CHAR)}]"

    def empty(self) -> str:
        return '""'

    def node(self, n, top: bool = False) -> str:
        if isinstance(n, (Lit, Chars)):
            text = self._leaves.get(n)
            if text is None:
                text = self._leaves[n] = self.lit(n.text) if isinstance(n, Lit) else self.chars(n)
            return text
        if isinstance(n, Ref):
            return self.name(n.name)
        if isinstance(n, Except):
            return self.except_(n)
        if isinstance(n, Seq):
            if not n.items:
                return self.empty()
            inner = " ".join(self.node(x) for x in n.items)
            return inner if top else f"({inner})"
        if isinstance(n, Alt):
            items = [x for x in n.items if not _is_empty(x)]
            inner = " | ".join(self.node(x, top=True) for x in items)
            if len(items) < len(n.items):
                return f"({inner})?"
            return inner if top else f"({inner})"
        if isinstance(n, Rep):
            item = self.node(n.item)
            if n.max is None:
                return " ".join([item] * n.min + [f"{item}*"]) if n.min != 1 else f"{item}+"
            parts = [item] * n.min
            tail = ""
            for _ in range(n.max - n.min):
                tail = f"({item} {tail})?" if tail else f"{item}?"
            if tail:
                parts.append(tail)
            return " ".join(parts) if parts else self.empty()
        raise TypeError(n)

    def except_(self, n: Except) -> str:  # pragma: no cover - lowered before rendering
        raise TypeError("Except must be lowered")

    def header(self) -> list[str]:
        return []

    def render(self) -> str:
        lines = self.header()
        for note in self.g.notes:
            lines.append(self.comment(f"inexact: {note}"))
        for rule, body in self.g.rules.items():
            lines.append(f"{self.name(rule)}{self.arrow}{self.node(body, top=True)}")
        return "\n".join(lines) + "\n"

    def comment(self, text: str) -> str:
        return "# " + "".join(c if c.isprintable() else "?" for c in text)


class _Gbnf(_Renderer):
    pass


class _Xgrammar(_Renderer):
    pass


class _LarkBase(_Renderer):
    arrow = ": "
    start_name = "start"

    def name(self, rule: str) -> str:
        return rule.lower()

    def comment(self, text: str) -> str:
        return "// " + "".join(c if c.isprintable() else "?" for c in text)

    def empty(self) -> str:
        return ""

    def node(self, n, top: bool = False) -> str:
        if isinstance(n, Seq) and not n.items:
            return "_EMPTY?" if False else ""
        if isinstance(n, Rep) and _is_empty(n.item):
            return ""
        return super().node(n, top)

    def render(self) -> str:
        text = super().render()
        # Lark has no empty parenthesised expansions: drop them.
        return text.replace(" ()", "").replace("()", "")


def _re_code(c: int) -> str:
    ch = chr(c)
    if ch in "\\]-^[/":
        return "\\" + ch
    if c < 0x20 or c == 0x7F or 0xD800 <= c <= 0xDFFF:
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"
    return ch


def _re_escape(text: str) -> str:
    out = []
    for ch in text:
        if ch in "\\.^$|?*+()[]{}/-":
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def _min_width(n) -> int | None:
    """Shortest match of a regular node; None when it holds a rule reference or free text."""
    if isinstance(n, Lit):
        return len(n.text)
    if isinstance(n, Chars):
        return 1
    if isinstance(n, Seq):
        widths = [_min_width(x) for x in n.items]
        return None if None in widths else sum(widths)
    if isinstance(n, Alt):
        widths = [_min_width(x) for x in n.items]
        return None if None in widths else min(widths)
    if isinstance(n, Rep):
        w = _min_width(n.item)
        return None if w is None else w * n.min
    return None


def _regex(n) -> str:
    if isinstance(n, Lit):
        return _re_escape(n.text)
    if isinstance(n, Chars):
        if not n.ranges and n.negate:
            return "[\\s\\S]"
        body = "".join(_re_code(lo) if lo == hi else f"{_re_code(lo)}-{_re_code(hi)}" for lo, hi in n.ranges)
        return f"[{'^' if n.negate else ''}{body}]"
    if isinstance(n, Seq):
        return "".join(_regex(x) for x in n.items)
    if isinstance(n, Alt):
        return "(?:" + "|".join(_regex(x) for x in n.items) + ")"
    if isinstance(n, Rep):
        hi = "" if n.max is None else str(n.max)
        return f"(?:{_regex(n.item)}){{{n.min},{hi}}}" + ("?" if n.lazy else "")
    raise TypeError(n)


def _unbounded(n) -> bool:
    if isinstance(n, Rep):
        return n.max is None or _unbounded(n.item)
    if isinstance(n, (Seq, Alt)):
        return any(_unbounded(x) for x in n.items)
    return False


def _regular_runs(items) -> list:
    """``items`` with each run of two or more regular items holding an unbounded repeat (a
    delimiter such as ``<call name=.*>``) joined into one Seq: Lark's dynamic lexer matches one
    terminal greedily and never backtracks into it, so ``.*`` and ``>`` as two terminals would lose
    the ``>``; one terminal lets the regex engine backtrack, as the parser's delimiter search does."""
    out: list = []
    run: list = []

    def flush() -> None:
        if len(run) > 1 and any(_unbounded(x) for x in run) and _min_width(Seq(tuple(run))):
            out.append(Seq(tuple(run)))
        else:
            out.extend(run)
        run.clear()

    for item in items:
        if not isinstance(item, (Ref, Except)) and _min_width(item) is not None:
            run.append(item)
        else:
            flush()
            out.append(item)
    flush()
    return out


class _Lark(_LarkBase):
    # Earley over one-character terminals is slow on long outputs; a regular part that cannot
    # match empty becomes one regex terminal (greedy, like the dynamic lexer matches it).
    def node(self, n, top: bool = False) -> str:
        if not isinstance(n, (Lit, Chars, Ref, Except)) and _min_width(n):
            return "/" + _regex(n) + "/s"
        if isinstance(n, Seq) and len(n.items) > 1:
            runs = _regular_runs(n.items)
            if len(runs) < len(n.items):
                return super().node(Seq(tuple(runs)), top)
        if isinstance(n, Rep) and n.min == 0 and n.max is None and _min_width(n.item):
            return "/" + _regex(Rep(n.item, 1, None)) + "/s?"
        return super().node(n, top)

    def lit(self, text: str) -> str:
        return "/" + _re_escape(text) + "/"

    def chars(self, node: Chars) -> str:
        if not node.ranges and node.negate:
            return "/[\\s\\S]/"
        body = "".join(_re_code(lo) if lo == hi else f"{_re_code(lo)}-{_re_code(hi)}" for lo, hi in node.ranges)
        return f"/[{'^' if node.negate else ''}{body}]/"

    def except_(self, n: Except) -> str:
        lits = [x for x in n.literals if x]
        char = _regex(n.within) if n.within is not None else "[\\s\\S]"
        if not lits:
            return f"/{char}+/s?"
        guard = "|".join(_re_escape(x) for x in sorted(lits, key=len, reverse=True))
        return f"/(?:(?!{guard}){char})+/s?"

    def header(self) -> list[str]:
        return ["// respc grammar export (Lark: Earley, dynamic lexer, regex=True)"]


class _Llguidance(_LarkBase):
    # llguidance lexes greedily (one lexeme at a time, no backtracking), so a multi-character
    # literal such as "</tool_call>" would swallow the "</" of text that merely starts like it.
    # Every lexeme here is one character; the Earley parser resolves all ambiguity.
    def lit(self, text: str) -> str:
        parts = [_json_string(c) for c in text]
        return parts[0] if len(parts) == 1 else "(" + " ".join(parts) + ")"

    def chars(self, node: Chars) -> str:
        def code(c: int) -> str:
            ch = chr(c)
            if ch in "\\]-^[/":
                return "\\" + ch
            if c < 0x20 or c == 0x7F or c > 0xFFFF or 0xD800 <= c <= 0xDFFF:
                return f"\\x{{{c:x}}}"
            return ch
        if not node.ranges and node.negate:
            return "/(?s:.)/"
        ranges = [(lo, hi) for lo, hi in node.ranges if not (hi < 0xE000 and lo > 0xD7FF)]
        body = "".join(code(lo) if lo == hi else f"{code(lo)}-{code(hi)}" for lo, hi in ranges)
        return f"/[{'^' if node.negate else ''}{body}]/"

    def header(self) -> list[str]:
        return ["%llguidance {}"]


_RENDERERS = {"lark": _Lark, "gbnf": _Gbnf, "xgrammar": _Xgrammar, "llguidance": _Llguidance}


def render(g: Grammar, fmt: str) -> str:
    """Render ``g`` in ``fmt`` (one of :data:`FORMATS`).

    Raises:
        ValueError: an unknown format.
    """
    if fmt not in _RENDERERS:
        raise ValueError(f"unknown grammar format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt != "lark":
        g = _lowered(g)
    return _RENDERERS[fmt](g).render()


def export_grammar(template, fmt: str = "lark", *, tools: list | None = None, tool_choice: str = "auto",
                   parallel: bool = True, reasoning: bool = True) -> str:
    """The constrained-decoding grammar of a template's output language, in one engine's format.

    Args:
        template: a dict, a template path, ``tokenizer_config.json``, a model directory or a
            catalogue name (anything :func:`respc.compiler.api.compile_source` reads).
        fmt: ``lark``, ``gbnf`` (llama.cpp), ``xgrammar`` (EBNF), ``llguidance`` (Lark dialect) or
            ``xgrammar-structural-tag`` (JSON ``{"type": "structural_tag", "format": ...}``; needs
            ``tools``; see :mod:`respc.compiler.grammar_structural` for what it cannot express).
        tools: OpenAI-style tools; None leaves names and arguments free (any JSON object).
        tool_choice: ``auto`` | ``required`` | ``none`` | an offered tool's name.
        parallel: False allows at most one tool call.
        reasoning: False leaves the reasoning region out.

    Returns:
        str: the grammar text; comment lines starting ``inexact:`` list what it approximates.

    Raises:
        TemplateError: a bad template. GrammarExportError (ValueError): bad tools / tool_choice;
        StructuralTagError (a GrammarExportError): a template the structural tag cannot express.
        ValueError: an unknown format.
    """
    from .source import read_template as compile_source
    from .grammar_ir import build_grammar_ir

    if fmt == STRUCTURAL_TAG:
        from .grammar_structural import export_structural_tag

        tag, _notes = export_structural_tag(template, tools=tools, tool_choice=tool_choice, parallel=parallel,
                                            reasoning=reasoning)
        return json.dumps(tag, indent=2, ensure_ascii=False) + "\n"
    if fmt not in FORMATS:
        raise ValueError(f"unknown grammar format {fmt!r}; choose one of {', '.join(FORMATS + (STRUCTURAL_TAG,))}")
    compiled = compile_source(template)
    g = build_grammar_ir(compiled.template, tools, tool_choice=tool_choice, parallel=parallel,
                         reasoning=reasoning, automaton=compiled.automaton)
    return render(g, fmt)
