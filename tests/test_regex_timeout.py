"""Issue 23 item 4, the runtime half: no model output can hang a parser on a slow regex.

Load refuses exponential patterns (tests/test_backtracking.py); polynomial ones load. A delimiter
regex that ``compiler/backtracking.py`` ``linear_time_problem`` does not prove linear is searched
with ``timeout=`` (runtime ``BoundedPattern``, ``REGEX_TIMEOUT``, ``regex_timeout=``): strict
raises ``RegexTimeoutError`` naming field, key, pattern and offset; recover never raises, lists a
``regex-timeout`` diagnostic and keeps the text (docs/security.md, "Limits"; docs/events.md).
"""

from __future__ import annotations

import ast
import re
import time
from pathlib import Path

import pytest

import respc
from respc.compiler.backtracking import linear_time_problem
from respc.runtime.errors import ContentParseError, RegexTimeoutError
from respc.runtime.whole import finish

REPO = Path(__file__).resolve().parent.parent
LIMIT = 0.02  # seconds per search in these tests (the engine may overshoot it several times)


def _template(pattern: str) -> dict:
    return {"start_anchor_pattern": "^",
            "fields": {"t": {"open_pattern": pattern, "close": "</t>", "content": "text"},
                       "content": {"content": "text"}}}


# (pattern, the issue's text, a text whose search is slow in both modes)
CASES = [
    ("(?:a|ab)*c", "ab" * 4000 + "!", "ab" * 4000 + "!c"),
    # (r"\s*\s*x" was the second: polynomial per attempt, it is now refused at load, see
    # test_backtracking.py; this one is linear per attempt, quadratic over the search's offsets)
    (r"[ \t]*(?:\n[ \t]*)?x", " " * 3000 + "!", " " * 6000 + "!x"),
]


def _stream(module, text: str, errors: str) -> tuple[str, dict, list]:
    parser = module.ResponseParser("", errors=errors, regex_timeout=LIMIT)
    out = []
    for i in range(0, len(text), 16):
        out += [e["text"] for e in parser.feed(text[i:i + 16]) if e["type"] == "region_chunk"]
    message, events = parser.finalize()
    out += [e["text"] for e in events if e["type"] == "region_chunk"]
    return "".join(out), message, parser.diagnostics


@pytest.mark.parametrize("pattern", [c[0] for c in CASES])
def test_slow_polynomial_patterns_load_and_are_not_proven_linear(pattern):
    module = respc.compile_template(_template(pattern))
    assert linear_time_problem(pattern) is not None
    assert module.ResponseParser.REGEX_BOUNDED == ((pattern, "t", "open_pattern"),)


@pytest.mark.parametrize("pattern,issue_text,slow_text", CASES)
def test_strict_raises_a_clear_error_quickly(pattern, issue_text, slow_text):
    module = respc.compile_template(_template(pattern))
    for run in (lambda: finish(module.ResponseParser("", regex_timeout=LIMIT), slow_text),
                lambda: _stream(module, slow_text, "strict")):
        t0 = time.perf_counter()
        with pytest.raises(RegexTimeoutError) as info:
            run()
        assert time.perf_counter() - t0 < 5
        err = info.value
        assert isinstance(err, ContentParseError) and isinstance(err, TimeoutError)
        assert (err.field, err.key, err.pattern, err.timeout) == ("t", "open_pattern", pattern, LIMIT)
        assert isinstance(err.offset, int) and 0 <= err.offset <= len(slow_text)
        assert "field 't'" in str(err) and "'open_pattern'" in str(err) and pattern in str(err)
    # the issue's text, as written, never takes long either (it may parse or raise the same error)
    for run in (lambda: finish(module.ResponseParser("", regex_timeout=LIMIT), issue_text),
                lambda: _stream(module, issue_text, "strict")):
        t0 = time.perf_counter()
        try:
            run()
        except RegexTimeoutError:
            pass
        assert time.perf_counter() - t0 < 5


@pytest.mark.parametrize("pattern,issue_text,slow_text", CASES)
def test_recover_keeps_the_text_and_reports(pattern, issue_text, slow_text):
    module = respc.compile_template(_template(pattern))
    for text in (issue_text, slow_text):
        t0 = time.perf_counter()
        parser = module.ResponseParser("", errors="recover", regex_timeout=LIMIT)
        message = finish(parser, text)
        whole_time = time.perf_counter() - t0
        t0 = time.perf_counter()
        chunks, streamed, diagnostics = _stream(module, text, "recover")
        assert whole_time < 5 and time.perf_counter() - t0 < 5
        for msg, diags in ((message, parser.diagnostics), (streamed, diagnostics)):
            assert msg["content"] == text.strip()  # the text stays text (a text field is stripped)
            timeouts = [d for d in diags if d["kind"] == "regex-timeout"]
            if text is slow_text:
                assert timeouts, diags
            for d in timeouts:
                assert 0 <= d["start"] <= d["end"] <= len(text) and pattern in d["message"]
        assert chunks == text
    # the parser stays usable after a timeout: a later, well-formed call still opens the region
    parser = module.ResponseParser("", errors="recover", regex_timeout=LIMIT)
    parser.feed(slow_text)
    events = parser.feed(" then </t>")
    assert isinstance(events, list)
    parser.finalize()


def test_regex_timeout_argument_is_checked():
    module = respc.compile_template(_template("(?:a|ab)*c"))
    for bad in (0, -1, "1"):
        with pytest.raises(ValueError):
            module.ResponseParser("", regex_timeout=bad)


# catalogue delimiters the proof does not cover, and why (docs/security.md, "Limits"): each
# either really is super-linear on some text, or uses a `^` alternative the proof reads as empty
NOT_PROVEN = {
    "dots": "attempts at different offsets",  # [^"'>\s]+ runs over another '<invoke name='
    "ernie4_5": "inside a loop",  # ^\s*(?:<think>\s*)?: \s* twice around an optional tag
    "functionary_v3_1": "attempts at different offsets",  # [^>]+ runs over '<function='
    "gpt_oss": "inside a loop",  # its commentary/tool-call opener: (?P<repair_space>\s)? beside \s*
    "inkling": "attempts at different offsets",  # (?:...|^)[^<]*: ^ read as empty
    "kimi_k2_thinking": "inside a loop",  # [^\s<]+? then (?::\d+)? : digits either way
    "llama3_json": "attempts at different offsets",  # \s*; over a long run of spaces
    "minicpm4": "attempts at different offsets",  # [^"']+ and [^>]* run over another opener
    "plamo3": "attempts at different offsets",  # (?P<name>.*?) runs over another opener
    "step3": "attempts at different offsets",  # [^"]+ runs over another opener
    "xlam": "attempts at different offsets",  # \s*(?:</tool_call>|```) over a long run of spaces
    # open: [ \t]*\n?[ \t]* reads spaces two ways; close: \s*``` over a long run of spaces
    "command_r_plus": ("inside a loop", "attempts at different offsets"),
    "cwm": "attempts at different offsets",  # [^>\s]+ runs over another '<tool:'
    "rwkv": "attempts at different offsets",  # \s*``` over a long run of spaces
    "k2_horizon": "attempts at different offsets",  # the name class runs over another '<ifm|tool_call>'
    "muse_glimmer": "attempts at different offsets",  # [ \t]* and [^"]+ run over another header
    # the short form's (?=\s*\{): the proof does not enter lookarounds (each attempt's spaces are
    # its own, so it is linear in fact; it runs under the limit all the same)
    "glm5_3_flash": "attempts at different offsets",
    # recover mode only (_R_D0): the strict opener or a bare '<function=NAME>' (docs/template-language.md,
    # "Recover-only openers"); each text is read by at most the two alternatives' attempts
    "qwen3_coder": "attempts at different offsets",
}


def test_catalogue_timeouts_only_on_patterns_not_proven():
    """Every `bound=` in generated/ is on a pattern the proof does not cover, and every regex
    delimiter without one is proven linear; the modules that have any are exactly NOT_PROVEN."""
    with_bounds = set()
    for path in sorted((REPO / "generated").glob("*.py")):
        source = path.read_text(encoding="utf-8")
        # every module-level _D<k> = _rt.LazyPattern(pattern, ...), however it is laid out
        for node in ast.parse(source).body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name) and re.fullmatch(r"_(?:R_)?D\d+", node.targets[0].id)
                    and isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == "_rt.LazyPattern"):
                continue
            pattern = ast.literal_eval(node.value.args[0])
            problem = linear_time_problem(pattern)
            if any(k.arg == "bound" for k in node.value.keywords):
                assert problem is not None, (path.name, pattern)
                with_bounds.add(path.stem)
                reasons = NOT_PROVEN[path.stem]
                assert any(r in problem for r in ((reasons,) if isinstance(reasons, str) else reasons)), (
                    path.name, pattern, problem)
            else:
                assert problem is None, (path.name, pattern, problem)
        # a probe or late pattern is bounded only with its delimiter
        if "bound=" in source:
            assert path.stem in with_bounds, path.name
    assert with_bounds == set(NOT_PROVEN)
    for name in ("qwen3", "kimi_k2"):
        assert "bound=" not in (REPO / "generated" / f"{name}.py").read_text(encoding="utf-8")


# --- regex_timeout= on every entry point that builds a parser (docs/security.md, "Limits") -------

SLOW_PATTERN, _ISSUE_TEXT, SLOW_TEXT = CASES[0]


def _limit_of(call) -> float:
    with pytest.raises(RegexTimeoutError) as info:
        call()
    return info.value.timeout


@pytest.mark.parametrize("name", ["minicpm4", "gpt_oss", "cwm", "llama3_json", "qwen3_coder", "qwen3"])
def test_regex_bounded_is_read_from_the_declared_delimiters(name):
    """A module of ABI 7 writes no ``REGEX_BOUNDED``: each class (strict, recover) reads it from the
    ``bound=`` of its declared delimiters, and it names exactly that class's regex delimiters the
    proof does not cover (the compiler's own plan), each labelled with a field that opens or
    closes with it."""
    from respc.compiler.api import compile_source
    from respc.compiler.automaton import build_automaton, plan_scans
    from respc.compiler.recover_open import recover_variant

    compiled = compile_source(REPO / "templates" / f"{name}.json")
    assert "REGEX_BOUNDED" not in compiled.source
    module = respc.compile_template(REPO / "templates" / f"{name}.json")
    variant = recover_variant(compiled.template)
    classes = [(module.ResponseParser, compiled.template)]
    if variant is not None:
        classes.append((module.ResponseParser.RECOVER_CLASS, variant))
    for cls, template in classes:
        scans = plan_scans(template, build_automaton(template))
        want = {pattern for pattern, _ in scans.regexes if linear_time_problem(pattern) is not None}
        assert {pattern for pattern, _, _ in cls.REGEX_BOUNDED} == want, (name, cls.__name__)
        assert "REGEX_BOUNDED" in cls.__dict__  # the class's own, not its base's
        fields = {f.name: f for f in template.fields}
        for pattern, field, key in cls.REGEX_BOUNDED:
            delimiter = getattr(fields[field], key.split("_")[0])
            assert delimiter.pattern == pattern, (name, field, key)
    has = [bool(cls.REGEX_BOUNDED) for cls, _ in classes]
    if name == "qwen3":
        assert not any(has)
    elif name == "qwen3_coder":
        assert has == [False, True]  # its recover class's combined opener only (NOT_PROVEN)
    else:
        assert has[0]


def test_parse_response_accepts_regex_timeout():
    """``parse_response(..., regex_timeout=)`` (module, batch and ``respc.parse_response``) and
    ``get_response_parser(..., regex_timeout=)``: the limit a search runs under, named by the
    error; a bad value is refused before anything is parsed."""
    template = _template(SLOW_PATTERN)
    module = respc.compile_template(template)
    assert _limit_of(lambda: module.parse_response(SLOW_TEXT, prefix="", regex_timeout=LIMIT)) == LIMIT
    assert _limit_of(lambda: module.parse_response([SLOW_TEXT], prefix="", regex_timeout=LIMIT)) == LIMIT
    assert _limit_of(lambda: respc.parse_response(SLOW_TEXT, template, prefix="", regex_timeout=LIMIT)) == LIMIT
    parser = respc.get_response_parser(template, prefix="", regex_timeout=LIMIT)
    assert _limit_of(lambda: finish(parser, SLOW_TEXT)) == LIMIT
    parser = module.get_response_parser("", regex_timeout=LIMIT)
    assert _limit_of(lambda: finish(parser, SLOW_TEXT)) == LIMIT
    message = module.parse_response(SLOW_TEXT, prefix="", errors="recover", regex_timeout=LIMIT)
    assert message["content"] == SLOW_TEXT
    for bad in (0, -1, "1"):
        with pytest.raises(ValueError, match="regex_timeout must be a positive number of seconds"):
            module.parse_response("hi", prefix="", regex_timeout=bad)
    # a catalogue module too (written to generated/, it has the same signature)
    from respc.generated import gpt_oss

    assert gpt_oss.parse_response("hi", prefix="", regex_timeout=LIMIT) == {"role": "assistant", "content": "hi"}


def test_plugins_pass_regex_timeout_to_their_parsers():
    """The vLLM tool parser and the SGLang detector accept ``regex_timeout`` where they build a
    parser (skipped where the engine is not installed)."""
    vllm = pytest.importorskip("respc.vllm", exc_type=ImportError)
    parser = vllm.tool_parser_class("gpt_oss")(_Tokenizer(), regex_timeout=LIMIT)
    assert parser.regex_timeout == LIMIT
    assert parser._new_stream(_Request()).parser._rxt == LIMIT
    assert vllm.tool_parser_class("gpt_oss")(_Tokenizer())._new_stream(_Request()).parser._rxt is None


def test_sglang_detector_passes_regex_timeout():
    sglang = pytest.importorskip("respc.sglang", exc_type=ImportError)
    detector = sglang.RespcFunctionCallDetector("gpt_oss", regex_timeout=LIMIT)
    assert detector.regex_timeout == LIMIT
    assert sglang._new_stream(detector.module, "", None, regex_timeout=LIMIT).parser._rxt == LIMIT


class _Tokenizer:
    def get_vocab(self) -> dict:
        return {}


class _Request:
    tools = None


# --- the start anchor's search of the prefix (docs/security.md, "Start anchor search") -----------

ANCHOR_ATTACK = {"start_anchor_pattern": "(?:a|ab)*c",
                 "fields": {"t": {"open": "<t>", "close": "</t>", "content": "text"}, "content": {"content": "text"}}}
ANCHOR_PREFIX = "ab" * 4000 + "!c"  # one finditer over it: about 1.8 s, four times that at twice the length


def test_start_anchor_not_proven_linear_is_searched_under_the_limit():
    module = respc.compile_template(ANCHOR_ATTACK)
    assert module.ResponseParser.START_ANCHOR_BOUNDED is True
    t0 = time.perf_counter()
    with pytest.raises(RegexTimeoutError) as info:
        module.parse_response("hi", prefix=ANCHOR_PREFIX, regex_timeout=LIMIT)
    assert time.perf_counter() - t0 < 2
    assert (info.value.field, info.value.key, info.value.pattern, info.value.timeout) == (
        None, "start_anchor_pattern", "(?:a|ab)*c", LIMIT)
    parser = module.ResponseParser(ANCHOR_PREFIX, errors="recover", regex_timeout=LIMIT)
    parser.feed("hi")
    assert parser.finalize()[0] == {"content": "hi"}
    assert [(d["kind"], d["field"]) for d in parser.diagnostics] == [("regex-timeout", None)]
    assert "start_anchor_pattern" in parser.diagnostics[0]["message"]
    # a prefix the search decides quickly is cut after its last anchor, as before
    assert module.parse_response("hi", prefix="xx abc <t>", regex_timeout=LIMIT) == {"t": "hi"}


def _anchor_unit(module) -> str:
    pattern = module.ResponseParser.START_ANCHOR.pattern
    text = re.sub(r"\\(.)", r"\1", pattern.split("|")[0])
    return text[:-1] + "x" + text  # a near miss, then (for a literal) the anchor itself


def test_catalogue_start_anchor_searches_are_linear():
    """Every catalogue module's anchor search over the prefix: 2x the prefix costs at most 2.5x
    the time (best of three, CPU time), for anchors searched as is and those under the limit."""
    import importlib

    for path in sorted((REPO / "generated").glob("*.py")):
        if path.stem.startswith("_"):
            continue
        module = importlib.import_module(f"respc.generated.{path.stem}")
        if module.ResponseParser.START_ANCHOR is None:
            continue
        unit = _anchor_unit(module)

        def cost(n: int) -> float:
            prefix = unit * (n // len(unit))
            best = float("inf")
            for _ in range(3):
                t0 = time.process_time()
                module.ResponseParser(prefix, errors="recover")._anchor_end(prefix)
                best = min(best, time.process_time() - t0)
            return best

        small, large = cost(100_000), cost(200_000)
        if large > 2.5 * max(small, 0.002):
            small, large = cost(100_000), cost(200_000)  # once more on a loaded machine
        assert large <= 2.5 * max(small, 0.002), (path.stem, small, large)


# --- short searches of patterns whose attempts are linear (docs/security.md, "Short searches") ---

def test_linear_attempts_marks_exactly_the_proven_bounded_patterns():
    """A generated ``LazyPattern`` says ``linear_attempts=True`` exactly when it is bounded and
    ``attempts_linear`` proves one attempt of its pattern linear; muse_glimmer's openers (linear
    per attempt, quadratic over offsets) are marked, gpt_oss's call opener (two ways to read inside
    a loop) is not."""
    from respc.compiler.backtracking import attempts_linear

    marked = {}
    for path in sorted((REPO / "generated").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                    and ast.unparse(node.value.func) == "_rt.LazyPattern"):
                continue
            pattern = ast.literal_eval(node.value.args[0])
            keywords = {k.arg: k.value for k in node.value.keywords}
            linear = "linear_attempts" in keywords
            if linear:
                assert ast.literal_eval(keywords["linear_attempts"]) is True and "bound" in keywords, path.name
            if "bound" in keywords:
                assert linear == attempts_linear(pattern), (path.name, pattern)
            marked[(path.stem, node.targets[0].id)] = linear
    assert marked[("muse_glimmer", "_D3")] and marked[("muse_glimmer", "_P3")]
    assert not marked[("gpt_oss", "_D2")] and not marked[("gpt_oss", "_P2")]
    assert attempts_linear(SLOW_PATTERN) and not attempts_linear(r"\s*(?:a\s*)*b")


class _Engine:
    """A stand-in for a compiled pattern that records the keywords of each call."""

    pattern = "x"

    def __init__(self):
        self.calls = []

    def _call(self, string, pos=0, endpos=None, **kwargs):
        self.calls.append(sorted(kwargs))
        return None

    search = match = fullmatch = _call


@pytest.mark.parametrize("method", ["search", "match", "fullmatch"])
def test_short_searches_of_linear_attempts_run_without_timeout(method):
    """``BoundedPattern``: with ``linear_attempts`` a call over at most ``SHORT_SEARCH`` characters
    goes to the engine without ``timeout=``, a longer one with it; without ``linear_attempts``
    every call has it."""
    from respc.runtime.stream import SHORT_SEARCH, BoundedPattern

    text = "a" * (SHORT_SEARCH + 10)
    for linear, spans, expected in ((True, (0, SHORT_SEARCH, SHORT_SEARCH + 1), [[], [], ["timeout"]]),
                                    (False, (0, SHORT_SEARCH), [["timeout"], ["timeout"]])):
        engine = _Engine()
        bounded = BoundedPattern(engine, ("t", "open_pattern"), linear)
        for span in spans:
            getattr(bounded, method)(text, 5, 5 + span)
        assert engine.calls == expected, (linear, engine.calls)
    engine = _Engine()
    getattr(BoundedPattern(engine, ("t", "open_pattern"), True), method)("a" * (SHORT_SEARCH + 5), 5)
    assert engine.calls == [[]]  # to the end of the text: SHORT_SEARCH characters


def test_short_search_still_times_out_over_long_text():
    """The slow texts above are longer than ``SHORT_SEARCH``: a module whose opener's attempts are
    linear still raises ``RegexTimeoutError`` quickly on one whole-text parse of them."""
    module = respc.compile_template(_template(SLOW_PATTERN))
    with pytest.raises(RegexTimeoutError):
        module.parse_response("x" + SLOW_TEXT, "", regex_timeout=LIMIT)
    assert module._D0._short is True  # (the search above compiled it: a BoundedPattern)
