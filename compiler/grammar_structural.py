"""Grammar export, xgrammar structural tag
(docs/grammar.md "The xgrammar structural tag"): the tool-call part of a template's output
language as xgrammar's ``{"type": "structural_tag", "format": ...}`` (xgrammar 0.2.9, the
"format" JSON that ``xgr.Grammar.from_structural_tag``, vLLM's and SGLang's
``response_format={"type": "structural_tag", ...}`` take).

Theory of operation
-------------------
A structural tag is free text in which a *trigger* string switches into a *tag*
``begin content end``; xgrammar checks the content, here the tool's JSON schema. It is built from
the same pieces as the grammar IR (:mod:`respc.compiler.grammar_ir`): the open delimiter's IR node
with the call's name substituted, :func:`~respc.compiler.grammar_ir.call_shape`, the offered tools:

* ``begin`` -- the literal start of the open (with the tool's name when the open carries it, as in
  ``<function=get_weather>``); an optional start of a pattern open (``(?:<|start|>assistant)?``)
  is left to the free text before the trigger, and the open's rest after the literal start (``\\s*
  <|constrain|>json<|message|>``) becomes an EBNF ``grammar`` element at the head of the content;
* ``content`` -- ``sequence[grammar(open rest, whitespace), grammar(body), grammar(whitespace, close
  head)]``; the body is the grammar IR's own rule (the tool's parameters with the name in the open,
  call objects with the name in the body), not a ``json_schema``: xgrammar's JSON-schema strings
  admit the delimiters the parser watches there, and its objects a second ``name``
  (docs/grammar.md "What the grammar says");
* ``end`` -- the close's literals (the literal tail of a close pattern such as ``\\s*;``);
* ``triggers`` -- the literal part of the begins before the name (``<function=``) or the begin.

Modes: ``auto`` is ``triggered_tags``; ``required`` and a named tool set ``at_least_one`` (a named
tool keeps only its tag or schema); ``--no-parallel`` is ``sequence[any_text, tag, any_text]`` (the
tag optional in ``auto``; ``triggered_tags`` with ``stop_after_first`` followed by free text lets a
bare trigger through in xgrammar 0.2.9); ``none`` is ``any_text`` excluding the triggers. A tool region without a
close (or whose close is the end-of-turn token, ``</s>``) runs to the end of the stream, so its
calls are ``tags_with_separator`` with an empty separator at the very end. A reasoning region
with literal delimiters becomes an optional leading ``tag`` whose ``any_text`` ends at its close
(a tool open inside reasoning stays reasoning text, as the parser reads it); its open is then
excluded from the later free text (reasoning comes first). ``--no-reasoning`` excludes it.

An xml-inline body whose open names the tool is the format's own parameter rule per tool (as
the EBNF export writes it). Calls nested in a section region with a literal close, whose open starts
with literal text, that nests only calls are one tag per literal start of the section's open, whose
content is the rest of the open and the grammar IR's section body (muse_glimmer's ``to=`` then
``functions<|message|><atem:function_calls>``). A pythonic call list whose open does not name the
tool is a tag between its brackets (llama4_pythonic: ``<|python_start|>[`` or, where the open's
lookahead holds, ``[``; ``]``). A close that ends in an optional part after literal text (k2_horizon)
ends the tag at that text.

What it cannot express (:class:`StructuralTagError`, naming template, field and reason): another
body not in JSON whose open does not name the tool (xgrammar's built-in readings of other formats
are not respc's); opens without a literal start (a lookahead such as ``(?=\\{)``); fields nested in
a region no tag writes (the error names the section and why); no tools; no tool-call field.
Where it is stricter than the parser it says so in the notes: a call cut off by the end of the
stream, a reasoning region after text.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from .automaton import Automaton
from .grammar_ir import (WS, Alt, Chars, Except, Grammar, GrammarExportError, JsonBuilder, Lit, Ref, Rep, Seq,
                         _Builder, _is_reasoning, _is_tool_field, _looks_ahead, call_shape, regex_to_ir, seq,
                         without_optional_repairs, has_start_branches, nullable, pattern_leads, alt, EMPTY, _norm, NEVER,
                         name_run_on, not_starting, check_tool_name, nullable_in)
from .ir import Field, Template
from ..runtime.formats import FORMATS
from ..runtime.formats.json_ import json_calls

__all__ = ["StructuralTagError", "build_structural_tag", "export_structural_tag"]


#: end-of-turn (stop) tokens: a tool region closed only by one of these (and by the implicit field's
#: close) runs to the end of the output, since an engine stops at the token instead of writing it
END_OF_TURN = frozenset({"</s>", "<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|endoftext|>", "<|end_of_text|>",
                         "<|return|>", "<eos>", "<|END_OF_TURN_TOKEN|>", "<｜end▁of▁sentence｜>"})


class StructuralTagError(GrammarExportError):
    """The template's tool calls cannot be written as an xgrammar structural tag (the message
    names the template, each tool-call field and why)."""


class _Cannot(Exception):
    pass


def _reachable(node, rules: dict) -> dict:
    """The rules of ``rules`` that ``node`` refers to, directly or through other rules, in
    ``rules``' order (a rule the grammar never reaches is left out)."""
    seen: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Ref):
            if n.name not in seen and n.name in rules:
                seen.add(n.name)
                stack.append(rules[n.name])
        elif isinstance(n, (Seq, Alt)):
            stack.extend(n.items)
        elif isinstance(n, Rep):
            stack.append(n.item)
    return {name: body for name, body in rules.items() if name in seen} if len(seen) < len(rules) else rules


def _ebnf(node, rules: dict | None = None) -> dict:
    """An EBNF ``grammar`` element whose root is ``node`` (``rules``: the rules it may refer to;
    only those it reaches are written, so each tool's element holds its own rules and the shared
    ones, not every earlier tool's: the tag grows linearly with the tools, docs/grammar.md "Cost")."""
    from .grammar_render import render

    text = render(Grammar(rules={"start": node, **_reachable(node, rules or {})}), "xgrammar")
    return {"type": "grammar", "grammar": "\n".join(x for x in text.splitlines() if not x.startswith("#")) + "\n"}


def _nullable(n) -> bool:
    """Whether node ``n`` (no rule references) matches the empty string."""
    if isinstance(n, Lit):
        return False
    if isinstance(n, (Chars,)):
        return False
    if isinstance(n, Except):
        return True
    if isinstance(n, Seq):
        return all(_nullable(x) for x in n.items)
    if isinstance(n, Alt):
        return any(_nullable(x) for x in n.items)
    if isinstance(n, Rep):
        return n.min == 0 or _nullable(n.item)
    return False


def _begins(node) -> list[tuple[str, Any]]:
    """``[(literal start, rest node)]`` of an open node: one per alternative that has a literal
    start; optional leading items are skipped (left to the free text before the trigger)."""
    if isinstance(node, Alt):
        return [b for item in node.items for b in _begins(item)]
    items = list(node.items) if isinstance(node, Seq) else [node]
    while items and _nullable(items[0]):
        items.pop(0)
    if items and isinstance(items[0], Alt):
        return [b for item in items[0].items for b in _begins(seq(item, *items[1:]))]
    begin = ""
    while items and isinstance(items[0], Lit):
        begin += items.pop(0).text
    return [(begin, seq(*items))] if begin else []


def _literal_tail(pattern: str, optional_tail: bool = False) -> tuple[list[str] | None, Any]:
    """``(strings, head)``: the literal strings a delimiter pattern ends in and the node before them
    (None: nothing), its optional declared repairs left out; ``(None, None)`` when it does not end
    in literals. Literals just before a final alternation belong to each string: sre factors a
    common prefix out of ``<\\|call\\|>|<\\|end\\|>`` into ``<\\|`` + (call|end).
    ``optional_tail``: optional items at the very end are left out first (k2_horizon's close
    ``</ifm\\|tool_call>(?:\\s*</ifm\\|tool_calls>)?``: the tag ends at ``</ifm|tool_call>``, and
    the parser takes what of the optional part the free text after it writes into the same
    close, docs/grammar.md "The xgrammar structural tag")."""
    node, _notes = regex_to_ir(without_optional_repairs(pattern))
    items = list(node.items) if isinstance(node, Seq) else [node]
    while optional_tail and len(items) > 1 and _nullable(items[-1]):
        items.pop()
    last = items.pop() if items else None
    if isinstance(last, Lit):
        tails = [last.text]
    elif isinstance(last, Alt) and all(isinstance(x, Lit) for x in last.items):
        tails = [x.text for x in last.items]
    else:
        return None, None
    lead = ""
    while items and isinstance(items[-1], Lit):
        lead = items.pop().text + lead
    return [lead + t for t in tails], seq(*items) if items else None


def _ends(f: Field, eot: set) -> tuple[list[str], Any]:
    """The tag's end strings and the close's head node (None: nothing before them); ``[""]``: the
    region runs to the end of the stream (no close, or only end-of-turn closes)."""
    if f.close is None:
        return [""], None
    if f.close.literals is not None:
        if all(x in eot for x in f.close.literals):
            return [""], None
        return list(f.close.literals), None
    ends, head = _literal_tail(f.close.pattern)
    if ends is None:
        ends, head = _literal_tail(f.close.pattern, optional_tail=True)
    if ends is None:
        raise _Cannot(f"close_pattern {f.close.pattern!r} does not end in literal strings, nor in literal strings "
                      "then an optional part (a tag's end is fixed text)")
    return ends, head


def _literal_list(delim) -> list[str] | None:
    """The strings a delimiter matches when it is a literal list, or a pattern that is one once its
    optional declared repairs are left out (``<\\|channel\\|>(?P<repair_space>\\s)?analysis``);
    None otherwise (or for no delimiter)."""
    if delim is None:
        return None
    if delim.literals is not None:
        return list(delim.literals)
    strings, head = _literal_tail(delim.pattern)
    return strings if head is None else None


def _object(props: dict, required: list) -> dict:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _params(schema: dict) -> dict:
    out = copy.deepcopy(schema) if isinstance(schema, dict) else {"type": "object"}
    # as the grammar IR: declared properties only; without any declared, any object (xgrammar
    # reads a missing additionalProperties as false)
    out.setdefault("additionalProperties", not out.get("properties"))
    return out


class _StructuralBuilder:
    def __init__(self, t: Template, automaton: Automaton, tools, choice: str, parallel: bool,
                 reasoning: bool) -> None:
        if tools is None:
            raise StructuralTagError(f"{t.source}: a structural tag needs the offered tools (--tools): its tags "
                                     "are written per tool")
        self.t = t
        self.ir = _Builder(t, automaton, tools, choice, parallel, reasoning)  # checks tools and tool_choice
        self.tools, self.choice = self.ir.tools, self.ir.choice
        self.parallel, self.reasoning = parallel, reasoning
        self.notes: list[str] = []
        self.triggers: list[str] = []
        self.excluded: list[str] = []  # literals the free text keeps out (a form left out of a tag)
        self.not_written: set[str] = set()  # fields whose open starts with a trigger
        self.unclosed: dict | None = None  # reasoning cut off by the end of the stream
        imp = t.fields[t.implicit] if t.implicit is not None else None
        closes = set(imp.close.literals or ()) if imp is not None and imp.close is not None else set()
        self.eot = closes & END_OF_TURN

    def field_tags(self, f: Field) -> list[dict]:
        where = f"field {f.name!r}"
        if not f.outside:
            raise _Cannot("it is nested in a section region (not written as a structural tag)")
        shape = call_shape(f)
        fmt = FORMATS[f.content]
        if f.content == "pythonic" and (shape is None or shape.name_group is None) and fmt.body_grammar is not None:
            return self.bracket_tags(f, shape, fmt, where)
        if f.content != "json" and (fmt.args_grammar is None or shape is None or shape.name_group is None
                                    or f.end == "value"):
            # another body (xml-inline parameters) is written when the open names the tool: the
            # tag's content is the format's own rule for the tool's arguments, as in the EBNF export
            raise _Cannot(f"its body is {f.content!r} ({'XML parameters' if f.content == 'xml-inline' else 'not JSON'})"
                          " and its open does not name the tool: a structural tag writes such a body per tool")
        if shape is None:
            raise _Cannot("its transform does not take a call's name and arguments from one place")
        dialect = self.ir.dialect(f)
        # the body is the grammar IR's own rule for it, as an EBNF element: a json_schema string
        # admits any text, the delimiters the parser watches there too
        # (docs/grammar.md "What the grammar says"), and a call
        # object's name and arguments must not come twice
        jb = JsonBuilder(self.ir.g, dialect, self.ir.body_watch(f))
        ends, head = _ends(f, self.eot)
        if ends == [""] and f.close is not None:
            self.notes.append(f"{where}: its close {list(f.close.literals or [f.close.pattern])} is the end of the "
                              "turn: the calls run to the end of the output")
        elif f.close is not None:
            self.notes.append(f"{where}: a call cut off by the end of the stream (no close) is not accepted")
        # (a JSON body may be followed by whitespace; another format's rule says what follows it)
        space = WS if f.content == "json" else EMPTY
        tail = _ebnf(seq(space, head) if head is not None else space)
        tags = []
        if shape.name_group is not None:
            probe, _notes = regex_to_ir(without_optional_repairs(f.open.pattern), {shape.name_group: Lit("\x00")})
            mine = [begin.split("\x00")[0] or begin for begin, _rest in _begins(probe)]
            self.triggers.extend(mine)
            runon = name_run_on(f.open.pattern, shape.name_group)
            lead = WS
            if runon is not None and not_starting(Lit("{"), runon, {}) == NEVER:
                # the parser's name group runs on over its class (cwm's ``[^\s<]+``): the body's
                # ``{`` follows the name only after whitespace outside that class
                # (docs/grammar.md "What the grammar says")
                space = not_starting(Rep(WS.item, 1), runon, {})
                if space == NEVER:
                    raise _Cannot(f"its open {f.open.pattern!r} reads the name on into the body")
                lead = seq(space, WS)
            per_trigger: dict = {}
            for name, schema in self.tools:
                if name != "\x00":
                    check_tool_name(f, shape.name_group, name, where)
                    if f.content == "json" and self.ir.name_taken(self.t.fields.index(f), name, "{}"):
                        continue
                node, notes = regex_to_ir(without_optional_repairs(f.open.pattern), {shape.name_group: Lit(name)})
                self.notes.extend(f"{where} open: {n}" for n in notes if "ASCII" not in n)
                body = _params(schema)
                if shape.args_keys:
                    body = _object({shape.args_keys[0]: body}, [shape.args_keys[0]])
                if f.content != "json":
                    args = fmt.args_grammar(self.ir, f, None if name == "\x00" else name,
                                            schema if name != "\x00" else {"type": "object"}, where, jb)
                    if args is None:  # the format cannot write a call to this tool valid against its schema
                        continue
                    if runon is not None and name != "\x00":  # what follows the name starts outside its class
                        args = not_starting(args, runon, self.ir.g.rules)
                    if name != "\x00" and self.ir.name_taken(self.t.fields.index(f), name,
                                                              self.ir.sample_of(args)):
                        continue
                elif name == "\x00":  # no tool offered: the tags only name the triggers
                    element = self._schema_element(body, jb, where)
                    tags.extend(self._tag(begin, rest, element, tail, ends, lead) for begin, rest in self._begins(f, node))
                    continue
                else:
                    args = seq(lead, jb.schema(body, f"{where} parameters"))
                for begin, rest in self._begins(f, node):
                    # one tag per trigger, its content one grammar element choosing the tool (the name
                    # after the trigger, then its arguments): the rules the tools share (strings,
                    # whitespace, free text) are written once, not once per tool's element, and
                    # xgrammar's compile grows with the rules it is given (docs/grammar.md "Cost")
                    trigger = max((x for x in mine if begin.startswith(x)), key=len, default=begin)
                    rest_of_begin = begin[len(trigger):]
                    per_trigger.setdefault(trigger, []).append(
                        seq(Lit(rest_of_begin) if rest_of_begin else EMPTY, rest, args))
            for trigger, forms in per_trigger.items():
                content = {"type": "sequence", "elements": [_ebnf(alt(*forms), self.ir.g.rules), tail]}
                tags.append({"type": "tag", "begin": trigger, "content": content,
                             "end": ends[0] if len(ends) == 1 else ends})
            return tags
        node = (Alt(tuple(Lit(x) for x in f.open.literals)) if f.open.literals is not None
                else regex_to_ir(without_optional_repairs(f.open.pattern))[0])
        calls_node = json_calls(self.ir, f, shape, jb, where)
        # an open ending in a lookahead (``functools(?=\\[)``): the body follows it at once
        lead = Seq(()) if _looks_ahead(f) else WS
        out = [self._tag(begin, rest, _ebnf(calls_node, self.ir.g.rules), tail, ends, lead)
               for begin, rest in self._begins(f, node)]
        self.triggers.extend(tag["begin"] for tag in out)
        return out

    def bracket_tags(self, f: Field, shape, fmt, where: str) -> list[dict]:
        """Tags of a call field whose body is a bracketed call list that names its tools
        (llama4_pythonic's ``[get_weather(city="Paris"), ...]``): the body is the format's own rule
        (``body_grammar``, as in the EBNF export); each tag writes its bracketed form, ``[`` and
        ``]`` being the tag's begin and end, so the tag's content is the calls between them. A
        literal open begins the tag with the bracket after it (``<|python_start|>[``); an open that
        is only a lookahead (``(?=\\[\\s*[A-Za-z_][\\w.]*\\()``) begins it with the bracket itself,
        written only where that lookahead holds for every offered tool (a tool name it refuses
        leaves that form out and the bracket out of the free text: the parser would read a bracket
        list there otherwise). A bare call outside the brackets is not written (stricter than the
        parser: a note says so). docs/grammar.md "The xgrammar structural tag"."""
        import regex

        if [name for name, _schema in self.tools] == ["\x00"]:
            # no tool offered: no tag is written, the free text keeps every lead of the open out
            # (the literal open, and the bracket its lookahead opens at)
            leads = [x for x in pattern_leads(without_optional_repairs(f.open.pattern)) if x] \
                if f.open.pattern is not None else list(f.open.literals)
            self.triggers.extend(leads)
            return [{"type": "tag", "begin": x, "content": {"type": "any_text"}, "end": ""} for x in leads]
        body = fmt.body_grammar(self.ir, f, True, shape, where)
        forms = _bracketed(body, self.ir.g.rules)
        if not forms:
            raise _Cannot(f"its body is {f.content!r} without a bracketed call list (a tag needs fixed text "
                          "around its calls)")
        node, _notes = regex_to_ir(without_optional_repairs(f.open.pattern)) if f.open.literals is None else \
            (Alt(tuple(Lit(x) for x in f.open.literals)), [])
        rx = regex.compile(without_optional_repairs(f.open.pattern)) if f.open.pattern is not None else None
        names = [name for name, _schema in self.tools if name != "\x00"] or ["f"]
        # what the tag's end holds after the bracket: nothing when the region ends with its value
        # (llama4_pythonic: the text after it is the answer's again); else the region's close
        # right after it (lfm2's ``]<|tool_call_end|>``: text between them would be body text the
        # reader does not account for)
        closes = [""]
        if f.end != "value" and f.close is not None:
            closes, head = _ends(f, self.eot)
            if head is not None or closes == [""]:
                raise _Cannot(f"its close {f.close.literals or f.close.pattern!r} is not literal text right after its "
                              "call list (a tag's end)")
        elif f.end != "value":
            raise _Cannot("nothing closes it but the end of the output (a bracketed tag ends at its ``]``)")
        tags, left_out, triggers = [], [], []
        for lead, mid, end in forms:
            # (trigger, begin): a literal open is the trigger (kept out of the free text, where the
            # parser would open the field), the bracket after it part of the tag's begin
            begins = [(begin, begin + lead) for begin, rest in _begins(node) if rest == Seq(())]
            # (a literal start with more of the open after it is not written: kept out below)
            # the open matched empty before the bracket (a lookahead): the bracket starts the tag
            if rx is not None and all((m := rx.match(lead + n + "(")) is not None and m.end() == 0 for n in names):
                begins.append((lead, lead))
            elif rx is not None and any(x == lead for x in pattern_leads(without_optional_repairs(f.open.pattern))):
                left_out.append(lead)
            triggers.extend(trigger for trigger, _begin in begins)
            ends = [end + c for c in closes]
            tags.extend({"type": "tag", "begin": b, "content": _ebnf(mid, self.ir.g.rules),
                         "end": ends[0] if len(ends) == 1 else ends} for _trigger, b in begins)
        if not tags:
            raise _Cannot(f"its open {f.open.pattern or f.open.literals!r} has no literal start before a bracketed "
                          "call list")
        # every lead of the open the free text may not hold but as a trigger: the parser opens the
        # field there (as the EBNF export's free text, which keeps the same leads out)
        leads = list(f.open.literals) if f.open.literals is not None else \
            pattern_leads(without_optional_repairs(f.open.pattern))
        left_out.extend(x for x in leads if x and x not in triggers and x not in left_out)
        self.notes.append(f"field {f.name!r}: calls are written in brackets only (a bare call is not)")
        self.excluded.extend(left_out)
        self.triggers.extend(triggers)
        return tags

    def _section_of(self, f: Field) -> Field:
        """The section region a nested call field ``f`` nests in: an outside text field whose open
        starts with literal text in every alternative, whose close is literal, and whose nested
        fields are all calls (minimax_m3's ``<tool_call>`` around its ``<invoke>`` calls,
        muse_glimmer's ``to=...<|message|><atem:function_calls>``); :class:`_Cannot` naming each
        region ``f`` nests in and why a tag cannot write it otherwise."""
        homes = [self.t.fields[j] for j, g in enumerate(self.t.fields)
                 if any(r == g.name and how == "nest" for r, how in f.inside)]
        why = []
        for g in homes:
            gi = self.t.fields.index(g)
            nested = [self.t.fields[j] for j in self.ir.inside(gi, ("nest",))]
            # (a call field both nested and outside, dots': the random walks of
            # tests/test_grammar_sampling.py found outputs the parser reads otherwise)
            reason = ("it is nested itself" if not g.outside else
                      "it is a reasoning region" if _is_reasoning(g) else
                      f"its body is {g.content!r}, not text between calls" if g.content != "text" else
                      "it has no open" if g.open is None else
                      f"its open {g.open.pattern!r} has an alternative without a literal start (a tag's begin)"
                      if not self._section_begins(g) else
                      "its close is not literal text (a tag's end)" if _literal_list(g.close) is None else
                      "it nests no call field" if not nested else
                      "it nests a field that is not a call, or a call field also written outside it"
                      if not all(_is_tool_field(self.t, x) and not x.outside for x in nested) else
                      "nothing closes it (it runs to the end of the output)" if self.ir.endless(gi) else None)
            if reason is None:
                return g
            why.append(f"section {g.name!r}: {reason}")
        raise _Cannot("it is nested in a region no tag can write (" + "; ".join(why or ["no section region"]) + ")")

    def section_tags(self, g: Field) -> list[dict]:
        """One tag per literal open of section ``g``: its content is the grammar IR's own body of the
        section (text without the delimiters watched there, the nested calls between), its end the
        section's close (docs/grammar.md "Structural tag")."""
        gi = self.t.fields.index(g)
        ends = _literal_list(g.close)
        ends = [c for c in ends if c not in self.eot] or ends
        outer = getattr(self.ir, "_need", False)
        self.ir._need = self.choice not in ("auto", "none")  # a section counts only with a call in it
        try:
            body = self.ir.text_body(gi)
        finally:
            self.ir._need = outer
        if not self.parallel:
            self.notes.append(f"field {g.name!r}: at most one call section (--no-parallel)")
        tags = []
        for begin, rest in self._section_begins(g):
            # a pattern open's rest after its literal start (muse_glimmer's recipient and
            # ``<|message|><atem:function_calls>`` after ``to=``) heads the content
            content = _ebnf(seq(rest, body), self.ir.g.rules)
            tags.append({"type": "tag", "begin": begin, "content": content, "end": ends[0] if len(ends) == 1 else ends})
            self.triggers.append(begin)
        return tags

    def _section_begins(self, g: Field) -> list:
        """``[(literal start, rest node)]`` of a section's open: its literals, or a pattern's
        alternatives that start with a literal (an optional start such as muse_glimmer's
        ``(?:<|start|>assistant)?[ \\t]*`` left to the free text before it); [] when an
        alternative has none (the tag could not begin it, and the parser would open it)."""
        if g.open.literals is not None:
            return [(x, Seq(())) for x in g.open.literals]
        node, _notes = regex_to_ir(without_optional_repairs(g.open.pattern))
        begins = _begins(node)
        alternatives = node.items if isinstance(node, Alt) else (node,)
        return begins if len(begins) >= len(alternatives) else []

    def _begins(self, f: Field, node) -> list:
        begins = _begins(node)
        if not begins:
            raise _Cannot(f"its open {f.open.pattern!r} has no literal start (a tag's begin is a fixed string)")
        pattern = f.open.pattern
        if f.open.literals is None and isinstance(node, Alt) and len(begins) < len(node.items):
            self.notes.append(f"field {f.name!r} open {pattern!r}: alternatives without a literal start are left out")
        return begins

    def _schema_element(self, schema: dict, jb, where: str) -> dict:
        """The EBNF element of the grammar IR's rule for ``schema`` in ``jb``'s dialect."""
        return _ebnf(jb.schema(schema, f"{where} parameters"), self.ir.g.rules)

    @staticmethod
    def _tag(begin: str, rest, body: dict, tail: dict, ends: list[str], lead=WS) -> dict:
        head = _ebnf(seq(rest, lead) if rest != Seq(()) else lead)
        return {"type": "tag", "begin": begin, "content": {"type": "sequence", "elements": [head, body, tail]},
                "end": ends[0] if len(ends) == 1 else ends}

    def reasoning_part(self) -> tuple[dict | None, list[str]]:
        """(optional leading reasoning tag or None, opens to keep out of later free text)."""
        for f in self.t.fields:
            if not _is_reasoning(f) or f.is_implicit or not f.outside:
                continue
            if f.open is not None and f.open.pattern is not None and "(?P<repair_" in without_optional_repairs(f.open.pattern):
                continue  # a field that only reads damaged output (gpt-oss's stripped tokens)
            opens = _literal_list(f.open)
            start = self.start_reasoning(f)
            if start is not None:
                return start
            if not self.reasoning:
                if opens is None:
                    self.notes.append(f"field {f.name!r}: its pattern open cannot be kept out (--no-reasoning)")
                return None, opens or []
            closes = _literal_list(f.close)
            if opens is None or closes is None:
                if f.name in self.not_written:
                    return None, []
                self.notes.append(f"field {f.name!r}: reasoning with pattern delimiters is free text here (a tool open "
                                  "in it is read as a call)")
                return None, []
            closes = [c for c in closes if c not in self.eot] or closes
            # an open watched inside the reasoning that ends it (poolside's <tool_call>, ``inside``
            # "end") is never reasoning text: the parser leaves the reasoning there and reads a call;
            # one that ends it only when its close never comes ("end-if-unclosed": qwen3) is text in a
            # closed reasoning tag, but not in reasoning cut off by the end of the output
            def opens_ending(actions: tuple) -> list:
                return list(dict.fromkeys(x for j in self.t.fields if j.open is not None and any(
                    r == f.name and how in actions for r, how in j.inside)
                    for x in (j.open.literals or _begins_of(j.open.pattern)) if x))
            # an open nested in the reasoning (solar_open2's calls, plamo3's end of turn) is a region
            # there, never reasoning text: the tag keeps it out (stricter than the parser: a call
            # inside reasoning is not written)
            nested = opens_ending(("nest",))
            if nested:
                self.notes.append(f"field {f.name!r}: a region nested in the reasoning ({', '.join(nested)}) is "
                                  "not written there")
            enders = list(dict.fromkeys(opens_ending(("end",)) + nested))
            cut_enders = list(dict.fromkeys(opens_ending(("end", "end-if-unclosed")) + nested))
            inner = {"type": "any_text", "excludes": enders} if enders else {"type": "any_text"}
            tags = [{"type": "tag", "begin": o, "content": inner,
                     "end": closes[0] if len(closes) == 1 else closes} for o in opens]
            self.notes.append(f"field {f.name!r}: reasoning only at the start of the output")
            # reasoning cut off by the end of the stream: its open, then any text to the end
            self.unclosed = _one_of([{"type": "sequence", "elements": [{"type": "const_string", "value": o},
                                                                          {"type": "any_text", "excludes":
                                                                           list(dict.fromkeys(closes + cut_enders))}]}
                                    for o in opens])
            return {"type": "optional", "content": _one_of(tags)}, opens
        return None, []

    def start_reasoning(self, f: Field) -> tuple[dict, list[str]] | None:
        """The leading reasoning of a field whose open has an anchored branch that matches the
        empty string (ernie4_5's ``^\\s*(?:<think>\\s*)?|<think>\\s*``): the parser opens it at
        offset 0 unless a longer delimiter matches there (docs/grammar.md "Anchored opens"), so
        the tag starts with that reasoning (closed, or cut off by the end of the output), its text
        starting with no character that starts a delimiter (of any field). None for any other field.

        Raises:
            StructuralTagError: with ``--no-reasoning`` (the output would have to start with a
                delimiter, which the tag cannot say; the EBNF export can)."""
        pattern = without_optional_repairs(f.open.pattern) if f.open is not None and f.open.pattern else None
        closes = _literal_list(f.close)
        if pattern is None or closes is None or not has_start_branches(pattern):
            return None
        node, _notes = regex_to_ir(pattern, None, True)
        if not nullable(node):
            return None
        if not self.reasoning:
            raise StructuralTagError(f"{self.t.source}: field {f.name!r} opens at the start of the output with an "
                                     "empty open, so with --no-reasoning the output must start with a delimiter, "
                                     "which a structural tag cannot say (use --format xgrammar for its EBNF grammar)")
        firsts = sorted({x[0] for g in self.t.fields for d in (g.open, g.close) if d is not None
                         for x in (d.literals or pattern_leads(d.pattern)) if x})
        body = alt(EMPTY, seq(Chars(_norm([(ord(c), ord(c)) for c in firsts]), True), Except(tuple(closes))))
        self.notes.append(f"field {f.name!r}: reasoning at the start of the output")
        self.unclosed = _ebnf(seq(node, body))  # cut off by the end of the output (build: only with no call needed)
        return _ebnf(seq(node, body, alt(*(Lit(c) for c in closes)))), [x for x in pattern_leads(pattern) if x]

    def build(self) -> dict:
        fields = [f for f in self.t.fields if _is_tool_field(self.t, f)]
        if not fields:
            raise StructuralTagError(f"{self.t.source}: no tool-call field (role 'tool_calls'): nothing to tag")
        tags, problems = [], []
        offered = self.tools
        if not offered:  # no tool offered (or tool_choice none): the tags only name the triggers
            self.tools = [("\x00", {"type": "object"})]
        left_out: list[str] = []
        done: set[str] = set()
        for f in fields:
            if f.name in done:
                continue
            try:
                if not f.outside and self.choice == "none":
                    # no call is written: the sections it nests in only need to stay out of the
                    # free text (the parser would read a section there, and a call in it)
                    homes = [g for g in self.t.fields if g.outside and g.open is not None and
                             any(r == g.name and how == "nest" for r, how in f.inside)]
                    keep_out = [_open_literals(g.open) for g in homes]
                    if homes and all(keep_out):
                        self.triggers.extend(x for xs in keep_out for x in xs)
                        done.add(f.name)
                        continue
                if not f.outside:
                    section = self._section_of(f)
                    tags.extend(self.section_tags(section))
                    done.update(self.t.fields[j].name for j in self.ir.inside(self.t.fields.index(section), ("nest",)))
                    continue
                tags.extend(self.field_tags(f))
            except _Cannot as exc:
                problems.append(f"field {f.name!r}: {exc}")
                if f.open is not None and f.outside:
                    # its open stays out of the free text: the parser would read a call there
                    left_out.extend(x for x in (f.open.literals or _begins_of(f.open.pattern)) if x)
                # so do the opens of the sections it nests in: the parser reads a section there
                for g in self.t.fields:
                    if g.outside and g.open is not None and any(r == g.name and how == "nest" for r, how in f.inside):
                        left_out.extend(x for x in (g.open.literals or _begins_of(g.open.pattern)) if x)
        self.tools = offered
        # fields whose open starts like a tag's trigger (muse_glimmer's answer ``to=user`` and the
        # section's ``to=``): the free text keeps the trigger out, so they are not written there
        for g in self.t.fields:
            if g.outside and g.open is not None and not _is_tool_field(self.t, g) and g.name not in done and \
                    not any(how == "nest" for j in self.t.fields for r, how in j.inside if r == g.name):
                begins = g.open.literals or _begins_of(g.open.pattern)
                hit = [x for x in self.triggers if any(b.startswith(x) and b != x for b in begins)]
                if hit:
                    self.not_written.add(g.name)
                    self.notes.append(f"field {g.name!r}: its open starts with the trigger {hit[0]!r}: not written")
        if not tags and not (self.choice == "none" and self.triggers and not problems):
            raise StructuralTagError(f"{self.t.source}: cannot be written as an xgrammar structural tag: "
                                     + "; ".join(problems) + " (use --format xgrammar for its EBNF grammar)")
        self.notes.extend(f"{p}; left out" for p in problems)
        prefix, reasoning_opens = self.reasoning_part()
        # (an open another field's tag begins with is that tag's trigger, never excluded)
        reasoning_opens = list(dict.fromkeys(reasoning_opens + self.excluded + [x for x in left_out if not any(
            t.startswith(x) or x.startswith(t) for t in self.triggers)]))
        closed = [tag for tag in tags if tag["end"] != ""]
        open_ended = [tag for tag in tags if tag["end"] == ""]
        triggers = list(dict.fromkeys(self.triggers))
        free = {"type": "any_text", "excludes": triggers + reasoning_opens}
        need = self.choice not in ("auto", "none")
        if self.choice == "none" or not offered:
            body = free
        elif not open_ended:
            body = {"type": "triggered_tags", "triggers": triggers, "tags": _merged(closed), "at_least_one": need,
                    "stop_after_first": not self.parallel, "excludes": reasoning_opens}
            if not self.parallel:
                # at most one call: free text, the call, free text. Not triggered_tags with
                # stop_after_first followed by any_text: xgrammar 0.2.8 and 0.2.9 accept a
                # trigger with nothing after it there
                # (docs/grammar.md "The xgrammar structural tag"; tests/test_grammar_soundness.py)
                one = _one_of(_merged(closed))
                call = {"type": "sequence", "elements": [one, free]}
                body = {"type": "sequence", "elements": [free, call if need else {"type": "optional", "content": call}]}
        else:
            if closed:
                self.notes.append("tags with a close are left out: another tool field runs to the end of the output")
            # such a region runs to the end of the output: one of it (its body is the rest of the
            # output; a second open there would be body text the parser cannot read,
            # docs/grammar.md "What the grammar says"),
            # unless the field repeats (its open ends the call before it: mistral's [TOOL_CALLS]name[ARGS])
            once = not self.parallel or not all(f.repeats for f in fields if _ends(f, self.eot)[0] == [""])
            tws = {"type": "tags_with_separator", "tags": _merged(open_ended), "separator": "", "at_least_one": True,
                   "stop_after_first": once}
            elements = [free, tws]
            if self.eot:  # the end-of-turn token may still be written as text: only at the very end
                elements.append({"type": "optional", "content": _one_of(
                    [{"type": "const_string", "value": x} for x in sorted(self.eot)])})
            calls = {"type": "sequence", "elements": elements}
            body = calls if need else {"type": "or", "elements": [free, calls]}
        fmt = {"type": "sequence", "elements": [prefix, body]} if prefix is not None else body
        if self.unclosed is not None and not need:  # with a call required, reasoning must close first
            # (reasoning that a call's open ends is not written: xgrammar 0.2.9 lets untyped calls
            # through ``sequence[const, any_text, triggered_tags]``; tests/cases/structural_tag_gaps.json)
            fmt = {"type": "or", "elements": [fmt, self.unclosed]}
        return {"type": "structural_tag", "format": fmt}


def _open_literals(delim) -> list[str]:
    """Literal texts one of which every match of an open delimiter holds: its literals, or the
    literal strings a pattern ends in (muse_glimmer's ``<atem:function_calls>``), or the literal
    starts of all its alternatives; [] when there are none. Free text without them never opens it."""
    if delim.literals is not None:
        return list(delim.literals)
    tail, _head = _literal_tail(delim.pattern)
    if tail:
        return tail
    node, _notes = regex_to_ir(without_optional_repairs(delim.pattern))
    begins = _begins(node)
    return [b for b, _rest in begins] if len(begins) >= len(node.items if isinstance(node, Alt) else (node,)) else []


def _bracketed(body, rules: dict) -> list[tuple[str, Any, str]]:
    """``[(open, inner, close)]``: the forms of a body node that are text between two literals
    (``"[" calls "]"``), leading and trailing optional items (whitespace) left out (``rules``: the
    rules its references name)."""
    items = list(body.items) if isinstance(body, Seq) else [body]
    while items and nullable_in(items[0], rules):
        items.pop(0)
    while items and nullable_in(items[-1], rules):
        items.pop()
    if len(items) == 1 and isinstance(items[0], Alt):
        return [x for item in items[0].items for x in _bracketed(item, rules)]
    if len(items) >= 2 and isinstance(items[0], Lit) and isinstance(items[-1], Lit):
        return [(items[0].text, seq(*items[1:-1]), items[-1].text)]
    return []


def _begins_of(pattern: str) -> list[str]:
    """The literal starts of a delimiter pattern's alternatives
    (docs/grammar.md "The xgrammar structural tag": opens of fields the tag
    leaves out are kept out of its free text)."""
    node, _notes = regex_to_ir(without_optional_repairs(pattern))
    return [b for b, _rest in _begins(node)]


def _one_of(formats: list[dict]) -> dict:
    return formats[0] if len(formats) == 1 else {"type": "or", "elements": formats}


def _merged(tags: list[dict]) -> list[dict]:
    """Tags with the same begin and end joined into one whose content is an ``or`` (two tool
    fields behind one open, such as lfm2's call list and single call)."""
    out: dict = {}
    for tag in tags:
        key = (tag["begin"], json.dumps(tag["end"]))
        if key not in out:
            out[key] = tag
            continue
        have = out[key]["content"]
        alts = have["elements"] if have.get("type") == "or" else [have]
        out[key] = {**out[key], "content": {"type": "or", "elements": alts + [tag["content"]]}}
    return list(out.values())


def build_structural_tag(template: Template, tools: list | None, *, tool_choice: str = "auto", parallel: bool = True,
                         reasoning: bool = True, automaton: Automaton | None = None) -> tuple[dict, list[str]]:
    """The xgrammar structural tag of a validated template's tool calls.

    Args:
        template: the validated IR. tools: OpenAI-style tools (required). tool_choice: ``auto`` |
        ``required`` | ``none`` | an offered tool's name. parallel: False: at most one call.
        reasoning: False keeps the reasoning region out. automaton: reuse a built automaton.

    Returns:
        (structural_tag, notes): the ``{"type": "structural_tag", "format": {...}}`` dict (xgrammar
        0.2.9) and one line per place where it is stricter than the parser.

    Raises:
        StructuralTagError: no tools, no tool-call field, or no tool-call field it can express
            (the message names the template, the fields and the reasons).
        GrammarExportError: a tool_choice naming no offered tool, malformed tools.
    """
    from .automaton import build_automaton

    automaton = automaton or build_automaton(template)
    b = _StructuralBuilder(template, automaton, tools, tool_choice, parallel, reasoning)
    return b.build(), list(dict.fromkeys(b.notes))


def export_structural_tag(template, *, tools: list | None = None, tool_choice: str = "auto", parallel: bool = True,
                          reasoning: bool = True) -> tuple[dict, list[str]]:
    """:func:`build_structural_tag` for anything :func:`respc.compiler.api.compile_source` reads
    (a dict, a path, ``tokenizer_config.json``, a model directory, a catalogue name).

    Raises:
        TemplateError: a bad template. StructuralTagError / GrammarExportError: as
        :func:`build_structural_tag`.
    """
    from .source import read_template as compile_source

    compiled = compile_source(template)
    return build_structural_tag(compiled.template, tools, tool_choice=tool_choice, parallel=parallel,
                                reasoning=reasoning, automaton=compiled.automaton)

