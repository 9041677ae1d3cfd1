"""Red-team regressions: attacks on the guarantees of docs/security.md that worked on the code
they were tried against. Each test runs the attack exactly as it was tried; a fixed one passes,
one whose fix is larger is marked ``xfail(strict=True)`` with its reason.
"""

from __future__ import annotations

import time

import pytest

from respc.compiler.chat_render import MAX_VALUE, ChatTemplateLimitError, render

MESSAGES = [{"role": "user", "content": "hi"}]


# --- chat templates: widths the size caps did not see (docs/security.md, "Chat templates") ------

# Each built a string of 100,000,000 characters (100 MB; 10**9 gives 1 GB) past the cap of
# 1,000,000: the width of a str.format field may itself be a field (``{0:{1}}``, also through an
# item, ``format_map``), and a %-format's width may be ``*``, taken from the arguments.
HIDDEN_WIDTHS = {
    "nested-field": "{{ '{0:{1}}'.format('a', 99999999)|length }}",
    "nested-align": "{{ '{0:>{1}}'.format('a', 99999999)|length }}",
    "nested-item": "{{ '{0:{1[0]}}'.format('a', [99999999])|length }}",
    "format-map": "{{ '{a:{w}}'.format_map({'a': 'x', 'w': 99999999})|length }}",
    "percent-star": "{{ ('%*d' % (99999999, 1))|length }}",
    "format-filter-star": "{{ '%*d'|format(99999999, 1)|length }}",
    "percent-star-precision": "{{ ('%.*d' % (99999999, 1))|length }}",
}


@pytest.mark.parametrize("source", list(HIDDEN_WIDTHS.values()), ids=list(HIDDEN_WIDTHS))
def test_chat_template_widths_from_arguments_are_capped(source):
    with pytest.raises(ChatTemplateLimitError, match="the limit is 1,000,000"):
        render(source, MESSAGES, add_generation_prompt=True)


@pytest.mark.parametrize("source", ["{{ '{0:{1}}'.format('a', 5) }}|{{ '%*d' % (4, 7) }}|{{ '%-*s'|format(3, 'x') }}|"
                                    "{{ '{a:>{w}}'.format_map({'a': 'y', 'w': 3}) }}|{{ '%.*f' % (2, 1.5) }}"])
def test_chat_template_small_widths_from_arguments_still_render(source):
    assert render(source, MESSAGES, add_generation_prompt=True) == "{:5}|{:>4}|{:<3}|{:>3}|{:.2f}".format(
        "a", "7", "x", "y", 1.5)


def test_chat_template_integer_products_are_capped():
    """Squaring a big integer in a loop: each product is one C call the deadline cannot stop
    (4.7 s against the 2 s deadline here, growing with each squaring). Integer products count
    against the size caps like strings do, and the check comes before the product is built:
    the render stops at the first operation whose result would pass the cap, naming that
    operation and its size (no wall-clock bound: the size named proves no bigger product ran)."""
    source = ("{% set ns = namespace(x=10**999999) %}{% for i in range(40) %}{% set ns.x = ns.x * ns.x %}"
              "{% endfor %}x")
    with pytest.raises(ChatTemplateLimitError, match="'[*][*]' would build an integer of 499,999 bytes; "
                                                     "the limit is 100,000"):
        render(source, MESSAGES, add_generation_prompt=True)
    # 10**50000 is 20,762 bytes; squaring gives 41,524, 83,048, then 166,096: the third product
    # is the first over the cap, and the render stops there
    source = source.replace("10**999999", "10**50000")
    with pytest.raises(ChatTemplateLimitError, match="'[*]' would build an integer of 166,096 bytes; "
                                                     "the limit is 100,000"):
        render(source, MESSAGES, add_generation_prompt=True)
    assert MAX_VALUE == 1_000_000


# --- model output: a barrier search repeated at every scan (docs/security.md, "Model output") ----

from support_linear import assert_linear  # noqa: E402
from support import family_cases, random_cuts  # noqa: E402
from support import generated as _module  # noqa: E402

GPT_OSS_HEADERS = {
    # 144 kB cost 2.9 s strict, 1.5 s recover (one feed) before: every scan searched back over the
    # whole run of characters the call opener's part before 'to=functions.' may consume
    "headers": lambda n: "<|start|>assistant" * max(n // 18, 1),
    # the same with the factor at the end: the factor's position was found once, the run before
    # it searched again at every scan (2.8 s at 144 kB)
    "headers-then-call": lambda n: "<|start|>assistant" * max(n // 18, 1) + "to=functions.f<|message|>{}<|call|>",
}


@pytest.mark.parametrize("chunk", [None, 1 << 30], ids=["parse_response", "one-feed"])
@pytest.mark.parametrize("errors", ["strict", "recover"])
@pytest.mark.parametrize("kind", list(GPT_OSS_HEADERS))
def test_gpt_oss_repeated_headers_are_linear(kind, errors, chunk):
    assert_linear(_module("gpt_oss"), GPT_OSS_HEADERS[kind], errors, chunk, start=8000, cap=64_000)


# --- templates: polynomial backtracking (docs/security.md, "Backtracking") -------------------------

def _poly_module():
    import respc

    return respc.compile_template({"respc_version": 2, "start_anchor": "S", "fields": {
        "t": {"open_pattern": "\\s*\\s*\\S", "close": "</t>", "content": "text"},
        "content": {"content": "text", "repeats": True}}})


def test_polynomial_open_pattern_is_refused_or_linear():
    """An untrusted template's ``open_pattern`` ``\\s*\\s*\\S`` passes the backtracking check;
    a model output of spaces then costs quadratic time (16k spaces: 0.66 s strict, 2.0 s
    recover; 160k: minutes), against "every input size is linear"."""
    try:
        module = _poly_module()
    except ValueError as exc:  # refused at load (compiler/backtracking.py polynomial_problem)
        assert "'open_pattern'" in str(exc) and repr("\\s*\\s*\\S") in str(exc) and "polynomial" in str(exc), exc
        return
    # a module compiled from a dict is not importable by name: time parse_response directly
    def cost(n):
        best = float("inf")
        for _ in range(2):
            t0 = time.process_time()
            module.parse_response(" " * n, prefix="S", errors="strict")
            best = min(best, time.process_time() - t0)
        return best
    small, large = cost(2000), cost(4000)
    assert large <= 2.5 * max(small, 0.002), (small, large)


# --- model output: text inside a call section that is no call (docs/security.md, "Model output") -

SECTION_TEXT = [
    ("minimax_m3", "hi ]<]minimax[>[<tool_call>garbage the user should see]<]minimax[>[</tool_call> bye"),
    ("minimax_m3", "hi ]<]minimax[>[<tool_call>garbage the user should see"),
    ("olmo3", "hi <function_calls>garbage text</function_calls> bye"),
]


@pytest.mark.parametrize("errors", ["strict", "recover"])
@pytest.mark.parametrize("family,text", SECTION_TEXT, ids=[f"{f}-{i}" for i, (f, _) in enumerate(SECTION_TEXT)])
def test_text_in_a_call_section_is_never_dropped_silently(family, text, errors):
    from respc.runtime.errors import ContentParseError

    parser = _module(family).ResponseParser("", errors=errors)
    try:
        parser.feed(text)
        message, _ = parser.finalize()
    except ContentParseError:
        assert errors == "strict"
        return
    assert "garbage" in (message.get("content") or "") or any(
        "garbage" in (d.get("text") or "") for d in parser.diagnostics), (message, parser.diagnostics)


def _sections() -> list[tuple[str, str, str, str]]:
    """(family, section field, its opener, its closer) for every catalogue call section: a
    null-slot field other fields nest in, with a literal opener."""
    import json
    from pathlib import Path

    found = []
    for path in sorted((Path(__file__).parent.parent / "templates").glob("*.json")):
        fields = json.loads(path.read_text(encoding="utf-8"))["fields"]
        for name, spec in fields.items():
            if ("slot" in spec and spec["slot"] is None and "open" in spec
                    and any(name in (other.get("inside") or {}) for other in fields.values())):
                first = (lambda v: v if isinstance(v, str) else v[0])
                found.append((path.stem, name, first(spec["open"]), first(spec["close"])))
    return found


SECTIONS = _sections()


def _chunkings(text: str) -> list[list[str]]:
    """Whole, characters, and one random cut into at most 7 pieces (seeded by the length: an
    attack's text is fed the same way every run)."""
    import random

    return [[text], list(text), random_cuts(text, random.Random(len(text)), min(6, len(text) - 1))]


def test_every_catalogue_call_section_is_covered():
    assert {family for family, *_ in SECTIONS} >= {"deepseek_v4", "dots", "gigachat3_5", "kimi_k3", "minimax_m1",
                                                   "minimax_m3", "olmo3", "plamo3"}


@pytest.mark.parametrize("family,field,opener,closer", SECTIONS, ids=[s[0] for s in SECTIONS])
def test_section_text_is_malformed_in_every_sectioned_family(family, field, opener, closer):
    """Text in a call section that no call accounts for: strict raises naming the section and
    the offsets; recover keeps it in the answer with a ``malformed`` diagnostic; whitespace alone
    is the section's own. The same on every chunking (D2)."""
    from respc.runtime.errors import ContentParseError

    module = _module(family)
    text = "hi " + opener + "\n  garbage text  \n" + closer + " bye"
    start = 3 + len(opener)
    for chunks in _chunkings(text):
        parser = module.ResponseParser("", errors="strict")
        with pytest.raises(ContentParseError, match=f"Field '{field}' \\(a call section, slot null\\): text that is "
                                                    f"no call at response offsets {start}-{start + 18}"):
            for chunk in chunks:
                parser.feed(chunk)
            parser.finalize()
        parser = module.ResponseParser("", errors="recover")
        events = [e for chunk in chunks for e in parser.feed(chunk)]
        message, tail = parser.finalize()
        events += tail
        assert message == {"role": "assistant", "content": "hi\n  garbage text  \nbye"}, message
        assert [(d["kind"], d["field"], d["start"], d["end"], d["text"]) for d in parser.diagnostics] == [
            ("malformed", None, start, start + 18, "\n  garbage text  \n")]
        bad = [e for e in events if e["type"] == "region_malformed"]
        assert [(e["region"], e["text"], e["into"]) for e in bad] == [(field, "\n  garbage text  \n", "content")]
        for errors in ("strict", "recover"):  # whitespace only: nothing to say
            parser = module.ResponseParser("", errors=errors)
            for chunk in _chunkings("hi " + opener + "\n \n" + closer + " bye")[1]:
                parser.feed(chunk)
            assert parser.finalize()[0] == {"role": "assistant", "content": "hibye"}
            assert parser.diagnostics == []


# --- a cut section closer with a call opener inside it (docs/events.md, "Text inside a call section") -

def test_olmo3_cut_section_closer_is_a_truncated_delimiter_not_a_call():
    """olmo3's call opener is a lookahead at any letter: after the held ``</`` of a cut
    ``</function_calls>`` it opened a call at ``f``; recover reported ``function_ca`` as a
    truncated call and ``</`` (43-45) in nothing, strict raised although the call is complete.
    The section's closer started first, so it keeps precedence at the end of the output."""
    from respc.generated import olmo3

    t = '<function_calls>\nget_weather(city="Paris")\n</function_ca'
    p = olmo3.ResponseParser("", errors="recover"); p.feed(t); m, _ = p.finalize()
    call = {"role": "assistant", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}
    assert m == call
    assert [(d["kind"], d["field"], d["start"], d["end"], d["text"]) for d in p.diagnostics] == [
        ("truncated-delimiter", None, 43, 56, "</function_ca")]
    # strict: the output ended inside the section's closer, as every call-section family says
    # of that cut: the complete call stands, no error (docs/events.md)
    assert olmo3.parse_response(t, prefix="") == call
    assert olmo3.parse_response(t, prefix="", errors="recover") == call


def test_olmo3_stray_closer_start_before_a_cut_call_is_not_dropped():
    """``</`` that does not go on as the closer, then a call the output ended inside: the
    ``</`` is text no call accounts for (malformed, kept in the answer), the call is truncated;
    it was dropped silently when a call opened right after a closer's start."""
    from respc.generated import olmo3
    from respc.runtime.errors import ContentParseError

    t = '<function_calls>\nget_weather(city="Paris")\n</f(x='
    for chunks in _chunkings(t):
        p = olmo3.ResponseParser("", errors="recover")
        for chunk in chunks:
            p.feed(chunk)
        m, _ = p.finalize()
        assert m["content"] == "\n</" and [c["function"]["name"] for c in m["tool_calls"]] == ["get_weather"]
        assert [(d["kind"], d["start"], d["end"], d["text"]) for d in p.diagnostics] == [
            ("malformed", 42, 45, "\n</"), ("truncated", 45, 49, "f(x=")]
    with pytest.raises(ContentParseError, match="offsets 42-45"):
        olmo3.parse_response(t, prefix="")


def _outcome(module, prefix: str, chunks, errors: str, whole: bool = False):
    # (not support.feed_outcome: this one also runs the whole-text path, and compares the diagnostics only)
    from respc.runtime.errors import ContentParseError

    try:
        if whole:
            parser = None
            message = module.parse_response("".join(chunks), prefix=prefix, errors=errors)
        else:
            parser = module.ResponseParser(prefix, errors=errors)
            for chunk in chunks:
                parser.feed(chunk)
            message = parser.finalize()[0]
    except ContentParseError as exc:
        return "error", str(exc), None
    found = None if parser is None else [(d["kind"], d["field"], d["start"], d["end"], d["text"])
                                         for d in parser.diagnostics]
    return "ok", message, found


@pytest.mark.parametrize("family,field,opener,closer", SECTIONS, ids=[s[0] for s in SECTIONS])
def test_cut_section_closer_in_every_sectioned_family(family, field, opener, closer):
    """Every case of every call-section family, cut inside its section's closer at every point:
    in both modes, whole and on three chunkings, the message is the one of the output cut just
    before the closer (the calls stand, strict raises nothing), and recover reports the cut
    closer, all of it, as one ``truncated-delimiter``: every character of the output is in the
    message or in a diagnostic span, whatever the chunking (olmo3 lost ``</`` in 140 of 160)."""
    module = _module(family)
    tried = 0
    for case in family_cases(family):
        text, prefix = case["text"], case["prefix"]
        at = text.find(closer, max(text.rfind(opener), 0))
        if at < 0:
            continue
        base = {errors: _outcome(module, prefix, [text[:at]], errors) for errors in ("strict", "recover")}
        for k in range(1, len(closer)):
            cut = text[:at + k]
            tried += 1
            for errors in ("strict", "recover"):
                runs = [_outcome(module, prefix, chunks, errors) for chunks in _chunkings(cut)]
                runs.append(_outcome(module, prefix, [cut], errors, whole=True))
                label = (case["name"], k, errors)
                assert all(r[:2] == runs[0][:2] for r in runs), (label, runs)  # D2, whole == streamed
                assert all(r[2] == runs[0][2] for r in runs if r[2] is not None), (label, runs)
                kind, message, found = runs[0]
                assert (kind, message) == base[errors][:2], (label, runs[0], base[errors])
                if errors == "recover":
                    assert found == base["recover"][2] + [("truncated-delimiter", None, at, at + k, closer[:k])], (
                        label, found)
                    covered = {i for d in found for i in range(d[2], d[3])}
                    assert all(i in covered for i in range(at, at + k)), (label, found)
    assert tried >= 3 * (len(closer) - 1), (family, tried)  # three cases or more
