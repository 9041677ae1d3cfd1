"""The region automaton pass: watch sets, tie-break ranks, delimiter classes (docs/template-language.md
"Watch sets", "Choosing the next delimiter", "D2: chunking never changes the result")."""

from __future__ import annotations

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from respc.compiler.automaton import NEVER, barrier_plan, build_automaton, classify_pattern, example_text, late_pattern
from respc.compiler.load import LoadedTemplate
from respc.compiler.validate import validate
from respc.runtime import barrier_search, lead_search, literal_hold
from support import REPO


def _automaton(document: dict):
    return build_automaton(validate(LoadedTemplate(document, "<test>")))


QWEN = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "content": "json", "repeats": True},
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "content": {"close": ["<|im_end|>", "<|endoftext|>"]},
        "note": {"open_pattern": r"<note id=(?P<id>\d+)>", "transform": {"id": "{id}", "text": "{content}"}},
    },
}


def test_states_and_watch_sets_follow_declaration_order():
    auto = _automaton(QWEN)
    outside = auto.states[0]
    assert outside.name == "outside (implicit field 'content')"
    assert [(w.kind, w.field) for w in outside.watches] == [("open", 0), ("open", 1), ("open", 3), ("close", 2)]
    assert [s.name for s in auto.states[1:]] == ["region 'tool_calls'", "region 'reasoning_content'", "region 'note'"]
    assert [(w.kind, w.field) for w in auto.states[1].watches] == [("close", 0)]
    assert auto.states[3].watches == ()  # no close: the region runs to the end of the stream
    assert auto.state_of_field == {0: 1, 1: 2, 3: 3}


def test_ranks_put_opens_before_closes_then_field_names():
    outside = _automaton(QWEN).states[0]
    ranks = {(w.kind, w.field): w.rank for w in outside.watches}
    # opens sorted by name: note < reasoning_content < tool_calls; the close comes last
    assert ranks == {("open", 3): 0, ("open", 1): 1, ("open", 0): 2, ("close", 2): 3}


def test_matchers_triggers_and_heads():
    auto = _automaton(QWEN)
    outside = auto.states[0]
    assert [w.matcher for w in outside.watches] == ["literal", "literal", "regex", "literal"]
    assert outside.triggers == "<"
    # three characters of each: the literals, and the regex's lead '<note id='
    assert outside.heads == ("<no", "<th", "<to", "<|e", "<|i")
    assert auto.states[1].triggers == "<" and auto.states[1].heads == ("</t",)
    assert auto.states[3].triggers == "" and auto.states[3].heads == ()


def test_heads_are_two_characters_when_one_delimiter_has_only_two():
    # a two-character literal ('<b') cuts every head of its state to two
    auto = _automaton({"start_anchor": "A", "fields": {
        "x": {"open": "<b", "close": "</x>"}, "y": {"open": "<yes>", "close": "</y>"}, "content": {}}})
    assert auto.states[0].heads == ("<b", "<y")
    # a regex whose known start is two characters ('<|' then a class) does the same
    auto = _automaton({"start_anchor": "A", "fields": {
        "x": {"open_pattern": r"<\|\w+\|>", "close": "</x>"}, "y": {"open": "<yes>", "close": "</y>"},
        "content": {}}})
    assert auto.states[0].heads == ("<y", "<|")


def test_literal_list_that_can_extend_is_searched_as_regex():
    auto = _automaton({"start_anchor": "A", "fields": {"x": {"open": ["<a", "<ab>"], "close": "</a>"}}})
    watch = auto.states[0].watches[0]
    assert (watch.matcher, watch.pending_at_edge, watch.delimiter.can_extend) == ("regex", True, True)
    assert watch.delimiter.pattern == "<ab>|<a"


@pytest.mark.parametrize("pattern,indeterminate,context,extendable,first,lead", [
    (r"<call name=(?P<name>.*)>", True, 0, False, "<", "<call name="),
    (r"<call name=(?P<name>.*?)>", False, 0, False, "<", "<call name="),
    (r"<tool_call>\s*<function=(?P<name>\w+)>", False, 0, False, "<", "<tool_call>"),
    (r"[^>]*>", False, 0, False, None, ""),
    (r"\w+\s", False, 0, False, None, ""),
    ("$", True, 0, False, None, ""),
    (r"\Z", True, 0, False, None, ""),
    (r"(?:^|<think>\s*)", False, 1, False, None, ""),
    (r"^\s*(?:<think>\s*)?|<think>\s*", False, 1, True, None, ""),
    (r"\n?</response>", False, 0, True, "\n<", ""),
    (r"functools(?=\[)", False, 0, False, "f", "functools"),
    (r"foo(?!bar)", True, 0, False, "f", "foo"),
    (r"x(?=a$)", True, 0, False, "x", "x"),
    (r"(?<=\n)<x>", False, 1, False, "<", ""),
    (r"(?<=a+)b", False, None, False, "b", ""),
    (r"\bfoo", False, 1, False, "f", ""),
    (r"(?i)<think>", False, 0, False, None, ""),
    (r"(?:ab)*a", True, 0, False, "a", ""),
])
def test_classify_pattern(pattern, indeterminate, context, extendable, first, lead):
    facts = classify_pattern(pattern)
    assert (facts.indeterminate, facts.context, facts.extendable, facts.first_chars, facts.lead) == (
        indeterminate, context, extendable, first, lead)


@pytest.mark.parametrize("pattern,context,looks_back", [
    (r"^\s*(?:<think>\s*)?|<think>\s*", 1, 0),  # ernie4_5's reasoning opener
    (r"(?:(?:<\|message_model\|>|^)[^<]*)?<\|content_invoke_tool_json\|>", 1, 0),  # inkling's tool call
    (r"\A<x>|<y>", 1, 0),
    (r"(?m)^<x>", 1, 1),  # a line start reads the character before
    (r"\bfoo", 1, 1),
    (r"\Bfoo", 1, 1),
    (r"^(?<=\n\n)<x>", 2, 2),
    (r"(?=\bq)q:", 1, 1),  # a word boundary inside a lookahead, at the start of the match
    (r"(?<=a+)b", None, None),
    (r"<x>", 0, 0),
])
def test_looks_back_counts_the_context_that_must_be_real_text(pattern, context, looks_back):
    """``looks_back``: the context characters that must be the real ones (word boundaries,
    multiline ``^``, lookbehinds); ``^`` and ``\\A`` only need some character before the start."""
    facts = classify_pattern(pattern)
    assert (facts.context, facts.looks_back) == (context, looks_back)


@pytest.mark.parametrize("opener,anchor_context", [
    (r"^\s*(?:<think>\s*)?|<think>\s*", True),
    (r"(?:(?:<m>|^)[^<]*)?<call>", True),
    (r"\bcall:", False),
    (r"(?<=\n)<call>", False),
    (r"(?m)^call:", False),
    (r"<call>", False),  # no context at all
])
def test_anchor_context_only_when_every_need_is_a_start_anchor(opener, anchor_context):
    auto = _automaton({"start_anchor": "A", "fields": {
        "call": {"open_pattern": opener, "close": "</call>"}, "content": {"close": ["<end>"]}}})
    assert auto.anchor_context is anchor_context
    assert bool(auto.context) is (opener != "<call>")


def test_anchor_context_is_off_when_another_delimiter_looks_back():
    auto = _automaton({"start_anchor": "A", "fields": {
        "a": {"open_pattern": r"^\s*<a>", "close": "</a>"},
        "b": {"open_pattern": r"\b<b>", "close": "</b>"}}})
    assert (auto.context, auto.anchor_context) == (1, False)


def test_unanalysable_pattern_is_conservative():
    facts = classify_pattern(r"\p{L}+:")  # regex-module syntax that sre cannot parse
    assert facts.indeterminate and facts.context is None and facts.first_chars is None
    assert facts.looks_back is None
    assert facts.reasons == ("the compiler cannot analyse this pattern",)


def test_warnings_name_field_key_and_reason():
    auto = _automaton({"start_anchor": "A", "fields": {
        "call": {"open_pattern": "<call name=(?P<name>.*)>", "close": "</call>", "transform": {"n": "{name}"}},
        "content": {}}})
    assert auto.warnings == (
        "field 'call' open_pattern '<call name=(?P<name>.*)>': an unbounded greedy repeat overlaps what "
        "follows it; its matches are held until no later input can change them (D2)",)
    assert auto.states[0].watches[0].indeterminate


def test_context_is_the_largest_need_of_any_regex_delimiter():
    auto = _automaton({"start_anchor": "A", "fields": {
        "a": {"open_pattern": r"(?<=\n\n)<a>", "close": "</a>"},
        "b": {"open_pattern": r"\b<b>", "close": "</b>"}}})
    assert auto.context == 2


@pytest.mark.parametrize("buf,lo,expected", [
    ("hello <th", 0, 6),
    ("hello <tx", 0, 9),
    ("hello <", 0, 6),
    ("<t<th", 0, 2),
    ("abc", 0, 3),
    ("<th", 1, 3),
])
def test_literal_hold(buf, lo, expected):
    prefixes = frozenset({"<", "<t", "<th", "<thi", "<thin", "<think"})
    assert literal_hold(buf, lo, "<", prefixes) == expected


def test_late_first_characters_and_pairs():
    """What a search from an offset after 0 can start with (the parser's fast path runs only
    there): a start anchor never holds, a leading lookahead names the character at the start."""
    import string

    from respc.compiler.automaton import _REGEX_SPACE, classify_pattern

    facts = classify_pattern(r"^\s*(?:<think>\s*)?|<think>\s*")
    assert (facts.first_chars, facts.late_chars, facts.late_pairs) == (None, "<", ("<t",))
    facts = classify_pattern(r"(?P<repair_stripped_tokens>^analysis)")
    assert (facts.first_chars, facts.late_chars, facts.late_pairs) == ("a", "", ())
    facts = classify_pattern(r"(?=\[\s*[A-Za-z_][\w.]*\()")
    assert (facts.first_chars, facts.late_chars) == (None, "[")
    # the second character: \s (the engine's) or a letter or _, enumerated
    assert set(facts.late_pairs) == {"[" + c for c in _REGEX_SPACE + string.ascii_letters + "_"}
    facts = classify_pattern(r"(?:(?:<\|mm\|>|^)[^<]*)?<\|c\|>")
    assert (facts.late_chars, facts.late_pairs) == ("<", ("<|",))
    # MULTILINE: ^ holds after every newline, so the anchored alternative stays (first characters)
    assert classify_pattern(r"(?m)^x").late_chars == "x"
    assert classify_pattern(r"(?m:^x)|y").late_chars == "xy"
    assert classify_pattern(r"^x|y").late_chars == "y"
    # a large class after the first character: no pairs; a one-character match: no pairs
    assert classify_pattern(r"<\w").late_pairs is None
    assert classify_pattern(r"<x?").late_pairs is None
    # without an anchor or lookahead the late characters are the first characters
    assert classify_pattern(r"[ab]x|c").late_chars == "abc"


def test_hold_run_form():
    """The run-and-literal form the fast path holds itself (automaton.HoldRun)."""
    import regex

    from respc.compiler.automaton import _REGEX_SPACE, HoldRun, classify_pattern

    every = "".join(chr(k) for k in range(0x110000) if not 0xD800 <= k < 0xE000)
    assert "".join(regex.findall(r"\s", every)) == _REGEX_SPACE  # the engine's \s, not str.isspace
    gpt_oss = (r"(?:<\|start\|>(?P<repair_space>\s)?assistant)?(?:<\|channel\|>(?P<repair_space2>\s)?commentary)?"
               r"\s*to=functions\.(?P<name>[^<\s]+)")
    assert classify_pattern(gpt_oss).run == HoldRun(_REGEX_SPACE, "to=functions.", "<", ("<|",))
    assert classify_pattern(r"[ \t]*::x").run == HoldRun(" \t", "::x", "", ())
    assert classify_pattern(r"\s+to=").run is None  # a run that must be non-empty
    assert classify_pattern(r"\w*to=").run is None  # not a finite class
    assert classify_pattern(r"(?:a|b)?\s*to=").run is None  # an opener of one character
    assert classify_pattern(r"\s*t").run is None  # a one-character literal


@pytest.mark.parametrize("pattern, leads", [
    # xlam's tool-call opener: three alternatives, one a lookahead (``[TOOL_CALLS]`` begins with ``[``)
    (r'<tool_call>|\[TOOL_CALLS\]|```(?:json)?\s*(?=\[\s*\{\s*"name")|(?=\[\s*\{\s*"name")',
     ("<tool_call>", "[", "```")),
    (r"<\|python_start\|>|(?=\[\s*[A-Za-z_][\w.]*\()", ("<|python_start|>", "[")),
    (r"(?:<a>|\[b\])x|~", ("<a>", "[b]", "~")),
    (r"<tool_call>\s*", ("<tool_call>",)),  # one lead, with an uncommon character (its sentinel)
    (r"functools(?=\[)", ("functools[",)),   # a literal, then what a lookahead reads
    (r"call:\s*", None),            # one lead of common characters: the engine's own search
    (r"(?i)<a>|<b>", None),         # case ignored: str.find cannot find the leads
    (r"<a>|b?c", None),             # an alternative with no literal first
    (r"(?<=\n)<a>|<b>", None),      # a lookbehind first
    (r"<a>||<b>", None),            # an empty alternative matches anywhere
    (r"\b<a>|<b>", None),           # an anchor first
])
def test_branch_leads(pattern, leads):
    """PatternFacts.leads: the literals a complete text's search finds first (issue 14)."""
    assert classify_pattern(pattern).leads == leads


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["<tool_call>", "[", "[{", '[ {"name"', "```", "```json\n", "x", " ", "\n", "<",
                                 '{"name"', "<|python_start|>", "[f(", "[ a.b(", "]"]), max_size=12),
       st.integers(0, 40))
def test_lead_search_is_the_engines_search(pieces, pos):
    """``runtime.lead_search`` gives the match ``pattern.search`` gives, from every position."""
    text = "".join(pieces)
    pos = min(pos, len(text))
    for pattern in (r'<tool_call>|\[TOOL_CALLS\]|```(?:json)?\s*(?=\[\s*\{\s*"name")|(?=\[\s*\{\s*"name")',
                    r"<\|python_start\|>|(?=\[\s*[A-Za-z_][\w.]*\()"):
        compiled = regex.compile(pattern, regex.DOTALL)
        leads = classify_pattern(pattern).leads
        want, got = compiled.search(text, pos), lead_search(compiled, text, pos, leads)
        assert (want and want.span()) == (got and got.span()), (pattern, text, pos)


def test_lead_search_after_many_misses_and_single_leads():
    """A lead found often where the pattern does not match: after LEAD_MISSES such places the
    engine searches the rest (same answer); a single lead extended by a lookahead's text."""
    from respc.runtime.stream import LEAD_MISSES

    pattern = r"<\|(?:tool|call)>\d"
    compiled = regex.compile(pattern, regex.DOTALL)
    leads = classify_pattern(pattern).leads
    assert leads == ("<|",)
    for text in ("<|no " * (LEAD_MISSES * 3) + "<|tool>5 <|call>7", "<|no " * (LEAD_MISSES - 1) + "<|call>1", "x"):
        for pos in (0, 3, len(text) // 2):
            want, got = compiled.search(text, pos), lead_search(compiled, text, pos, leads)
            assert (want and want.span()) == (got and got.span()), (text[:20], pos)
    # leads past several doubling windows, and across a window's edge
    xlam = r'<tool_call>|\[TOOL_CALLS\]|```(?:json)?\s*(?=\[\s*\{\s*"name")|(?=\[\s*\{\s*"name")'
    compiled, leads = regex.compile(xlam, regex.DOTALL), classify_pattern(xlam).leads
    for at in (0, 4093, 4094, 4095, 4096, 12_285, 20_000, 70_000):
        for call in ('```json\n[{"name"', '<tool_call>', '[ {"name"'):
            for text in ("a [b] `c` " * (at // 10) + "x" * (at % 10) + call + " tail", "y" * at + call):
                want, got = compiled.search(text, 0), lead_search(compiled, text, 0, leads)
                assert want is not None and want.span() == got.span(), (at, call)
    assert lead_search(compiled, "plain " * 5000, 0, leads) is None
    fire = regex.compile(r"functools(?=\[)", regex.DOTALL)
    text = "functools are handy; functools( no; functools[{}]"
    assert lead_search(fire, text, 0, ("functools[",)).span() == fire.search(text).span() == (36, 45)


@pytest.mark.parametrize("pattern, late", [
    (r"^\s*(?:<think>\s*)?|<think>\s*", r"<think>\s*"),   # ernie4_5's reasoning opener
    (r"(?P<repair_stripped_tokens>^analysis)", "(?!)"),   # gpt_oss's: only at the start
    (r"\Aa|(b)|^c", "(b)"),
    (r"[|^]a|^b", "[|^]a"),        # a | and a ^ inside a set split nothing
    (r"<a>|b", None),              # nothing anchored
    (r"(?i)^a|b", None),           # a global flag: not split
    (r"(?:^|\n)x", None),          # the anchor is inside an alternation of a group: kept whole
])
def test_late_pattern(pattern, late):
    """late_pattern: what a complete text's search from an offset after 0 uses (issue 14)."""
    assert late_pattern(pattern) == late
    if late is not None:
        full, short = regex.compile(pattern, regex.DOTALL), regex.compile(late, regex.DOTALL)
        text = "a\n<think> analysis b c\nx ^b <think>"
        for i in range(1, len(text) + 1):
            assert (full.search(text, i) and full.search(text, i).span()) == \
                   (short.search(text, i) and short.search(text, i).span())


_INKLING_OPEN = r"(?:(?:<\|message_model\|>|^)[^<]*)?<\|content_invoke_tool_json\|>"
_GPT_OSS_OPEN = (r"(?:<\|start\|>(?P<repair_space>\s)?assistant)?(?:<\|channel\|>(?P<repair_space2>\s)?commentary)?"
                 r"\s*to=functions\.(?P<name>[^<\s]+)(?P<repair_recipient_again>\s*to=functions\.[^<\s]+)?"
                 r"(?:\s*<\|channel\|>\w+)?(?:\s*<\|constrain\|>\w+|\s+\w+)?\s*(?:<\|message\|>|(?P<repair_end_for_message><\|end\|>))")


@pytest.mark.parametrize("pattern, plan", [
    (_INKLING_OPEN, ("<|content_invoke_tool_json|>", "<")),  # P consumes '<' only first
    (r'(?=\{\s*"name")', ('"name"', "a")),             # a lookahead: its text's factor
    (r'(?=\[\s*\{\s*"name")', ('"name"', "a")),       # the longest run, not the first ('{')
    (_GPT_OSS_OPEN, ("to=functions.", "f")),            # optional groups of markup, then the recipient
    (r"[^<]*<b>", ("<b>", "<")),
    (r"\s*;", None),              # a one-character factor is its own barrier: nothing gained
    (r".*<b>", None),              # P consumes every character
    (r"<a>\s*x", None),            # a literal first: the engine's prefix search or the leads
    (r"(?i)[^<]*<b>", None),       # case ignored: str.find cannot find the factor
    (r"[^<]*(?:<b>|<c>)", None),   # no literal run at the top level
    (r"(x)\1<b>", None),           # a backreference may consume anything (so no barrier)
])
def test_barrier_plan(pattern, plan):
    """barrier_plan: the factor and barrier of a complete text's search (issue 14)."""
    assert barrier_plan(pattern) == plan


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["<|message_model|>", "<|content_invoke_tool_json|>", "<", "weather", " ", "\n",
                                 "a < b", '{"name"', '[ {"name"', "{", "[", '"', "name", "<|start|>assistant",
                                 "<|channel|>commentary", " to=functions.get", "f", "<|message|>", "<|end|>"]),
                max_size=14),
       st.integers(0, 60))
def test_barrier_search_is_the_engines_search(pieces, pos):
    """``runtime.barrier_search`` with a pattern's :func:`barrier_plan` gives the match
    ``pattern.search`` gives (span and groups), from every position of random texts."""
    text = "".join(pieces)
    pos = min(pos, len(text))
    for pattern in (_INKLING_OPEN, r'(?=\{\s*"name")', r'(?=\[\s*\{\s*"name")', _GPT_OSS_OPEN, r"[^<]*<b>"):
        compiled = regex.compile(pattern, regex.DOTALL)
        factor, barrier = barrier_plan(pattern)
        for at in (pos, 0, len(text)):
            want, got = compiled.search(text, at), barrier_search(compiled, text, at, factor, barrier)
            assert (want and (want.span(), want.groups())) == (got and (got.span(), got.groups())), (pattern, text, at)


def test_barrier_search_skips_text_without_the_factor():
    """No factor after the position: no match, and the engine is not asked (it would scan on)."""
    class Spy:
        pattern = "x"  # (a pattern whose matches do not depend on where the text ends)

        def __init__(self):
            self.asked = []

        def search(self, text, pos, *rest, **options):
            self.asked.append(pos)

    spy = Spy()
    assert barrier_search(spy, "a < b " * 1000, 0, "<|content_invoke_tool_json|>", "<") is None
    assert spy.asked == []
    # the engine is asked from the last barrier before the factor, not from the position
    text = "x<|message_model|>w<|content_invoke_tool_json|>" + "a < b " * 1000
    barrier_search(spy, "a < b " * 100 + text, 0, "<|content_invoke_tool_json|>", "<")
    barrier_search(spy, "no barrier " + text[18:], 3, "<|content_invoke_tool_json|>", "<")
    assert spy.asked == [601, 3]
    compiled = regex.compile(_INKLING_OPEN, regex.DOTALL)
    assert barrier_search(compiled, text, 0, "<|content_invoke_tool_json|>", "<").span() == (1, 47)
    assert barrier_search(compiled, text, 2, "<|content_invoke_tool_json|>", "<").span() == (19, 47)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["analysis", "a", "<think>", " ", "\n", "x", "b"]), max_size=8))
def test_anchored_search_from_zero_is_a_match_there(pieces):
    """What a complete text's search from offset 0 runs when some alternatives are anchored
    (compiler/emit.py ``_eos_search``): the full pattern's match at 0, else the late pattern's
    search, or nothing when every alternative is anchored -- the full pattern's search."""
    text = "".join(pieces)
    for pattern in (r"(?P<repair_stripped_tokens>^analysis)", r"^\s*(?:<think>\s*)?|<think>\s*", r"\Aa|(b)|^c"):
        full, late = regex.compile(pattern, regex.DOTALL), late_pattern(pattern)
        got = full.match(text, 0) or (None if late == NEVER else regex.compile(late, regex.DOTALL).search(text, 0))
        want = full.search(text, 0)
        assert (want and want.span()) == (got and got.span()), (pattern, text)


def test_lazy_pattern_compiles_once_and_answers_as_compiled():
    """runtime.LazyPattern (D2 probes, back-searches): not compiled at import; once asked, the
    compiled pattern's own methods answer, with its results and its errors."""
    from respc.runtime import LazyPattern

    lazy, real = LazyPattern(r"<a>(?P<n>\d+)|x$"), regex.compile(r"<a>(?P<n>\d+)|x$", regex.DOTALL)
    assert "search" not in vars(lazy)
    for text, pos in (("zz <a>12 x", 0), ("<a>", 0), ("abc x", 2), ("", 0)):
        for partial in (False, True):
            got, want = lazy.search(text, pos, partial=partial), real.search(text, pos, partial=partial)
            assert (got and (got.span(), got.partial, got.groupdict())) == \
                   (want and (want.span(), want.partial, want.groupdict()))
    assert vars(lazy)["search"].__self__.pattern == real.pattern  # the compiled pattern's bound method
    assert LazyPattern("a+").match("aab").span() == (0, 2) and LazyPattern("a").fullmatch("ab") is None
    with pytest.raises(TypeError):
        LazyPattern("a").search(3)


def test_lazy_delimiter_replaces_its_global_on_first_use():
    """A module's regex delimiter (``_D0 = LazyPattern(..., scope=globals(), name="_D0")``): an
    import compiles nothing; the first search compiles the pattern, answers as it does, and
    leaves the compiled pattern itself in the global (so scanners then search it directly). A
    global bound to something else by then is left alone; scope without a name is refused."""
    from respc.runtime import LazyPattern

    scope: dict = {}
    scope["_D0"] = lazy = LazyPattern(r"<a>(?P<n>\d+)", scope=scope, name="_D0")
    assert lazy._compiled is None and isinstance(scope["_D0"], LazyPattern)
    match = lazy.match  # taken before the first use, as lead_search does
    assert lazy.search("x <a>12", 0, partial=True).span() == (2, 7)
    assert isinstance(scope["_D0"], regex.Pattern) and scope["_D0"] is lazy._compiled
    assert scope["_D0"].pattern == r"<a>(?P<n>\d+)" and scope["_D0"].flags & regex.DOTALL
    assert match("<a>3").group("n") == "3" and scope["_D0"] is lazy._compiled  # compiled once
    scope["_D1"] = "other"
    LazyPattern("b", scope=scope, name="_D1").search("b")
    assert scope["_D1"] == "other"
    with pytest.raises(ValueError, match="scope without the name of its global"):
        LazyPattern("c", scope=scope)


def test_module_import_compiles_no_delimiter(monkeypatch):
    """Importing gpt_oss's generated module compiles only its start anchor (issue 14, README.md "Performance", import
    time); its first parse compiles the delimiters it searches, with the events as before."""
    import types

    from respc.compiler.api import compile_source

    compiled = compile_source(REPO / "templates" / "gpt_oss.json")
    seen: list[str] = []
    compile_ = regex.compile
    monkeypatch.setattr(regex, "compile", lambda p, *a, **k: seen.append(p) or compile_(p, *a, **k))
    module = types.ModuleType("lazy_gpt_oss")
    exec(compile(compiled.source, "<gpt_oss>", "exec"), module.__dict__)
    # the start anchor only (a template with recover-only delimiters has a second, recover-mode
    # automaton in the module, docs/template-language.md "Recover-only openers": the same anchor)
    assert seen and set(seen) == {compiled.template.start_anchor.pattern}
    text = "<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|channel|>final<|message|>Hi"
    assert module.parse_response(text, prefix="<|start|>assistant") == {
        "role": "assistant", "reasoning_content": "hm", "content": "Hi"}
    assert isinstance(module._D0, regex.Pattern) and len(seen) > 1


@pytest.mark.parametrize("pattern, text", [
    (r"<function=(?P<name>[^>\s]+)>", "<function=f>"),
    (r"<\|tool_call_begin\|>\s*(?:functions\.)?(?P<name>[^:<>\s]+?):\d+\s*<\|tool_call_argument_begin\|>",
     "<|tool_call_begin|>f:0<|tool_call_argument_begin|>"),     # kimi_k2's opener
    (r"(a|b)\1", "aa"),
    (r"\bcall:", "call:"),
    (r"functools(?=\[)", None),   # a lookahead needs text after the match: no example of the match alone
    (r"[[:digit:]]+", None),      # regex-only syntax
])
def test_example_text(pattern, text):
    """example_text: a real text a delimiter pattern matches, for respc check's messages."""
    assert example_text(pattern) == text


def test_lead_search_sparse_misses_stay_with_find():
    """Issue 33: leads that miss but lie far apart (a ``[`` every few hundred characters of prose)
    are looked for with ``str.find`` past LEAD_MISSES, and the engine (which tries a lead-less
    pattern at every offset) is not asked; dense misses still go to the engine. Same answers as
    ``pattern.search`` from every position tried."""
    from respc.runtime.stream import LEAD_MISSES, LEAD_SPAN

    xlam = r'<tool_call>|\[TOOL_CALLS\]|```(?:json)?\s*(?=\[\s*\{\s*"name")|(?=\[\s*\{\s*"name")'
    compiled, leads = regex.compile(xlam, regex.DOTALL), classify_pattern(xlam).leads

    class Counted:
        searches = 0

        def match(self, *args):
            return compiled.match(*args)

        def search(self, *args):
            Counted.searches += 1
            return compiled.search(*args)

    unit = "prose " * (LEAD_SPAN // 5) + "items[0] "
    for misses, tail, dense in ((LEAD_MISSES * 3, '[{"name": 1}]', False), (LEAD_MISSES * 3, "", False),
                                (LEAD_MISSES * 3, '[{"name": 1}]', True)):
        text = ("a[0] " if dense else unit) * misses + tail
        for pos in (0, 1, len(text) // 3, len(text) - len(tail)):
            Counted.searches = 0
            want, got = compiled.search(text, pos), lead_search(Counted(), text, pos, leads)
            assert (want and want.span()) == (got and got.span()), (misses, tail, dense, pos)
            if not dense:
                assert Counted.searches == 0, "sparse misses went to the engine"
        assert dense is (Counted.searches > 0) or pos > len(text) // 2


_MUSE_OPENS = (r"(?:<\|start\|>assistant)?[ \t]*to=self[ \t]*<\|message\|>",
               r"(?:<\|start\|>assistant)?[ \t]*to=[^\s<]+[ \t]*<\|message\|>\s*<atem:function_calls>",
               r"(?:<\|start\|>assistant)?[ \t]*to=user[ \t]*<\|message\|>")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["to=self", "to=user", "to=weather.get", "<|message|>", "<atem:function_calls>",
                                 "<|start|>assistant", " ", "\t", "\n", "x", "<", "g", "ab", "<|content_invoke_tool_json|>",
                                 "<|message_model|>", '{"name"', "[", "{", " to=functions.get"]), max_size=16),
       st.sampled_from([(8, 256, 4, 0), (1, 10**6, 1, 0), (2, 1, 2, 0), (8, 256, 4, 20)]))
def test_barrier_search_factor_by_factor(pieces, limits):
    """Issue 33: ``barrier_search`` looks at one factor at a time (a window from the barrier to
    the factor's end, candidates confirmed over the whole text) and hands the rest to the engine
    after a few rounds or tries (``limits``: rounds, span, tries, small here so every way out
    runs; the last one: the engine alone with at most 20 characters after the factor): from every position it gives the engine's own match, span and groups, on texts where
    the first factors belong to other delimiters (muse_glimmer's to=self header before a tool
    message)."""
    from respc.runtime import stream

    text = "".join(pieces)
    saved = stream.BARRIER_ROUNDS, stream.BARRIER_SPAN, stream.BARRIER_TRIES, stream.BARRIER_LONG
    stream.BARRIER_ROUNDS, stream.BARRIER_SPAN, stream.BARRIER_TRIES, stream.BARRIER_LONG = limits
    try:
        for pattern in _MUSE_OPENS + (_INKLING_OPEN, _GPT_OSS_OPEN, r'(?=\{\s*"name")', r"[^<]*<b>"):
            compiled = regex.compile(pattern, regex.DOTALL)
            factor, barrier = barrier_plan(pattern)
            for at in range(len(text) + 1):
                want, got = compiled.search(text, at), barrier_search(compiled, text, at, factor, barrier)
                assert (want and (want.span(), want.groups())) == (got and (got.span(), got.groups())), \
                    (pattern, text, at)
    finally:
        stream.BARRIER_ROUNDS, stream.BARRIER_SPAN, stream.BARRIER_TRIES, stream.BARRIER_LONG = saved


def test_barrier_search_muse_reasoning_header_first():
    """The issue-33 case as the benchmark builds it: muse_glimmer's reasoning header
    ``to=self<|message|>`` at the start, long prose, then a tool message. The tool-message
    opener's search looks at the header's window, then (BARRIER_LONG characters or fewer after
    the call's factor) the engine searches from the call's barrier: it is never asked to search the prose (it took 33 ns a character: 3.3 ms over 100 kB)."""
    pattern = regex.compile(_MUSE_OPENS[1], regex.DOTALL)
    prose = "Check the wind, a < b, then go. " * 3000
    text = ("to=self<|message|>" + prose + "<|eom|><|start|>assistant to=weather.get<|message|>"
            "<atem:function_calls>\n<atem:invoke name=\"weather.get\">")
    asked = []

    class Spy:
        pattern = _MUSE_OPENS[1]

        def search(self, text, pos, end=None, **options):
            asked.append((pos, end))
            return pattern.search(text, pos, end, **options)

        def match(self, text, pos):
            return pattern.match(text, pos)

    got = barrier_search(Spy(), text, 0, "<|message|>", "<")
    assert got.span() == pattern.search(text).span() == (len("to=self<|message|>" + prose) + 7, text.index("\n<atem:inv"))
    # the header's window, then (little text after the call's factor) the engine from its barrier
    assert all(end is not None and end - pos < 100 for pos, end in asked[:-1]), asked
    assert asked[-1][0] >= len("to=self<|message|>" + prose), asked


def test_lead_and_barrier_searches_keep_one_time_limit(monkeypatch):
    """Issue 33: a lead_search past its first miss and a barrier_search past its first window make
    several engine calls for one search; with a bounded pattern (docs/security.md, "Limits") they
    share the one time limit of the scan that makes them (it is set per scan position, not per
    call), so a text with many sparse leads or factors cannot multiply it. Every engine call is
    made to take 10 ms of the clock the limit reads: the limits handed to the engine go down call
    after call."""
    from respc.runtime import stream

    clock = [0.0]

    def tick():
        clock[0] += 0.005  # two reads per call: 10 ms per engine call
        return clock[0]

    monkeypatch.setattr(stream.time, "perf_counter", tick)

    class Parser:
        _rxbase, _rxat, _rxspent, _rxt, _rxskip, _rxbuf = 0, -1, 0.0, None, None, None

    handed = []

    class Spy:
        def __init__(self, compiled):
            self.compiled = compiled
            self.pattern = compiled.pattern

        def search(self, *args, timeout=None, **options):
            handed.append(timeout)
            return self.compiled.search(*args, **options)

        def match(self, *args, timeout=None, **options):
            handed.append(timeout)
            return self.compiled.match(*args, **options)

    monkeypatch.setattr(stream._RUNNING, "parser", Parser())
    lead = stream.BoundedPattern(Spy(regex.compile(r"<\|(?:tool|call)>\d", regex.DOTALL)), ("f", "open_pattern"))
    text = ("prose " * 60 + "<|no ") * (stream.LEAD_MISSES + 4) + "<|call>7"
    assert lead_search(lead, text, 0, ("<|",)).span() == (text.index("<|call>7"), len(text))
    assert len(handed) == stream.LEAD_MISSES + 5
    assert all(b < a for a, b in zip(handed[1:], handed[2:])), handed  # after the first miss: one limit

    handed.clear()
    Parser._rxat = -1
    muse = stream.BoundedPattern(Spy(regex.compile(_MUSE_OPENS[1], regex.DOTALL)), ("f", "open_pattern"))
    text = "to=self<|message|>" + "a < b, " * 2000 + "to=x<|message|> no" + "c < d, " * 2000 + \
        "<|start|>assistant to=f<|message|><atem:function_calls>" + "e " * 3000
    got = barrier_search(muse, text, 0, "<|message|>", "<")
    assert got.span() == regex.compile(_MUSE_OPENS[1], regex.DOTALL).search(text).span()
    assert len(handed) >= 4 and all(b < a for a, b in zip(handed, handed[1:])), handed
