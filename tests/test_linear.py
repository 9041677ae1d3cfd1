"""Every input size is linear: model output that costs more per character the longer it gets
(issue 23 item 6; docs/security.md, "Model output: time and memory").

How it is measured: a parse of an input of ``n`` characters and one of ``2n`` characters, each
the best of 3 runs of its CPU time (``time.process_time``: other processes on a loaded machine
do not count) with the garbage collector off (timeit's rule); the second may cost at most 2.5
times the first (a parse of 2n under ``NEGLIGIBLE`` passes). ``n`` starts small and doubles
until one parse takes ``FLOOR`` seconds (so fixed costs do not hide the growth) or ``n``
reaches the cap (128k characters fed whole, 32k in feeds; past 128k the ratio measures the CPU's
caches). A comparison that fails is measured again, up to ``RETRIES`` times, before the test
fails (``tests/support_linear.py`` measures, ``tests/test_redteam.py`` uses it too).

What is parsed: for each template, inputs built from its own delimiters (``benchmarks/inputs.py``
derives a reasoning block and a complete tool call per family):

- ``calls``: the family's reasoning block, a word and its tool call, repeated (many regions);
- ``lt``, ``bracket``, ``brace``: ``"<"``, ``"["``, ``"{"`` repeated (delimiter prefixes);
- ``cut``: the tool call less its last character, repeated (an opener whose close never comes
  as written);
- ``deep``: the tool call's opener and ``"["`` repeated (a body nested past any depth limit; a
  pythonic body nests inside an argument: ``f(a=[[[...``);
- ``prose``: each literal opener (and the tool call's head) followed by prose that never closes it.

Each in ``errors="strict"`` and ``"recover"``, as one feed (``parse_response``, the whole-text
path) and as 16-character feeds (``ResponseParser.feed``, then ``finalize``). The default suite
runs the templates of :data:`FAST` and the named cases of the issue; the marker ``linear``
(``python -m pytest -q -m linear tests/test_linear.py``) runs every catalogue template.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import inputs  # noqa: E402  (benchmarks/inputs.py)

import respc  # noqa: E402

from support import CATALOGUE_TEMPLATES, generated  # noqa: E402
from support_linear import NEGLIGIBLE, RATIO, assert_linear, growth  # noqa: E402

#: the representative template swept first under the `linear` marker (gpt_oss: regex delimiters of
#: every kind of partial search, literal ones, a JSON body, recover-mode repairs); in the default
#: suite it took 4 s alone but over 70 s after the rest of the suite had run, so the default suite
#: keeps the named cases below and CI's `-m linear` run does the sweeps
FAST = ("gpt_oss",)
CHUNK = 16


def _repeat(unit: str, head: str = "") -> Callable[[int], str]:
    return lambda n: head + unit * max((n - len(head)) // len(unit), 1)


def _prose(head: str) -> Callable[[int], str]:
    return lambda n: head + inputs._filler(n)


def _body_start(call: str) -> int:
    found = [i for i in (call.find("{"), call.find("["), call.find("(")) if i > 0]
    return min(found) if found else -1


def kinds(name: str) -> dict[str, Callable[[int], str]]:
    """The inputs of template ``name`` (see the module docstring), each a function of the size."""
    doc = inputs.load(name)
    pieces = inputs.pieces(name, doc)
    made: dict[str, Callable[[int], str]] = {"lt": _repeat("<"), "bracket": _repeat("["), "brace": _repeat("{")}
    unit = ""
    if pieces.reasoning is not None:
        unit += pieces.reasoning[0] + "so " + pieces.reasoning[1]
    unit += "Hi. " + (pieces.tool_call or "")
    made["calls"] = _repeat(unit)
    heads = []
    for spec in doc["fields"].values():
        opens = spec.get("open")
        heads += [opens] if isinstance(opens, str) else list(opens or [])[:1]
    call = pieces.tool_call
    if call:
        made["cut"] = _repeat(call[:-1])
        at = _body_start(call)
        if at > 0:
            head = call[:at]
            if call[at] == "(":
                head = call[:at + 1] + "a="
            elif call[at] == "[" and "(" in call[at:]:  # a pythonic call list: nest in an argument
                head = call[:call.index("(", at) + 1] + "a="
            made["deep"] = _repeat("[", head)
            heads.append(head)
    for i, head in enumerate(dict.fromkeys(heads)):
        made[f"prose{i}"] = _prose(head)
    return made


CONFIGS = [("strict", None), ("recover", None), ("strict", CHUNK), ("recover", CHUNK)]


def _sweep(name: str) -> list[str]:
    module = generated(name)
    failed = []
    for kind, make in kinds(name).items():
        for errors, chunk in CONFIGS:
            cap = 128_000 if chunk is None else 32_000
            n, small, large = growth(module, make, errors, chunk, cap=cap)
            if large > RATIO * small and large >= NEGLIGIBLE:
                failed.append(f"{name} {kind} {errors} {'one feed' if chunk is None else f'{chunk}-char feeds'}: "
                              f"{n} chars {small * 1e3:.1f} ms, {2 * n} chars {large * 1e3:.1f} ms "
                              f"({large / small:.1f}x)")
    return failed


@pytest.mark.linear
@pytest.mark.parametrize("name", FAST)
def test_fast_sweep_is_linear(name):
    """The representative templates, every input kind, both modes, both chunkings."""
    assert not _sweep(name)


@pytest.mark.linear
@pytest.mark.parametrize("name", sorted(CATALOGUE_TEMPLATES))
def test_catalogue_sweep_is_linear(name):
    """Every catalogue template, every input kind, both modes, both chunkings (marker ``linear``)."""
    assert not _sweep(name)


class _Quadratic:
    """A stand-in module whose whole-text parse scans the rest of the text every 64 characters."""

    @staticmethod
    def parse_response(text, prefix="", errors="strict"):
        return sum(text.count("a", i) for i in range(0, len(text), 64))


class _Linear:
    """A stand-in module whose whole-text parse reads the text once."""

    @staticmethod
    def parse_response(text, prefix="", errors="strict"):
        return text.count("a")


def test_growth_fails_a_quadratic_parse_and_passes_a_linear_one():
    """The measurement itself: re-measuring cannot wash out real growth (a quadratic parse stays
    near 4x per doubling), and a linear one stays under :data:`RATIO`."""
    make = _repeat("ab")
    n, small, large = growth(_Quadratic, make, "strict", None, start=8000, cap=64_000)
    assert large > RATIO * small and large >= NEGLIGIBLE, (n, small, large)
    n, small, large = growth(_Linear, make, "strict", None, start=100_000, cap=1_000_000, floor=0.002)
    assert large <= RATIO * small, (n, small, large)


# --- the cases of issue 23 item 6 and issue 24 item 5, as written there ---------------------------


def test_gpt_oss_recover_lt_run():
    """gpt_oss, ``errors="recover"``, ``"<" * n`` (0.25 s at 20k, 2.85 s at 80k before): the
    engine's partial search of the call opener cost the rest of the text at every ``<``."""
    assert_linear(generated("gpt_oss"), lambda n: "<" * n, "recover", None, start=5000, cap=20_000)


def test_granite4_recover_one_feed_many_calls():
    """granite4, repeated calls, recover, one feed (0.09/0.30/0.68/1.57 s at 128k..1M before):
    ``_reopened`` compared the rest of the buffer with a copy of it after every opener."""
    call = inputs.pieces("granite4").tool_call
    assert_linear(generated("granite4"), _repeat(call), "recover", None, start=256_000, cap=256_000)


def test_kimi_vl_strict_join_many_blocks():
    """kimi_vl, strict, one feed, many ``join`` blocks (0.32/1.04/3.88 s at 256k..1M before): the
    joined string was rebuilt for every block."""
    unit = "◁think▷" + "é" * 60 + "◁/think▷" + "è" * 60
    assert_linear(generated("kimi_vl"), _repeat(unit), "strict", None, start=256_000, cap=256_000)


@pytest.mark.linear
def test_olmo3_prose_after_unclosed_function_calls():
    """olmo3, strict, one feed: prose after an unclosed ``<function_calls>`` (37 s for 1 MB
    before): every letter opens a tentative region whose probe copied the rest of the text."""
    assert_linear(generated("olmo3"), _prose("<function_calls>"), "strict", None, start=100_000, cap=100_000)


def _string_end_template(pattern: str) -> dict:
    """A test template whose region closes with ``pattern`` (a ``\\Z`` close: the region ends
    only at the end of the stream, so its text stays held while the stream goes on)."""
    return {"start_anchor": "A:", "fields": {"t": {"open": "<t>", "close_pattern": pattern}, "content": {}}}


@pytest.mark.parametrize("pattern, unit, start", [(r".+\Z", "ab ", 300), (r"[^>]+\Z", "a", 600)])
def test_string_end_close_streamed_by_character(pattern, unit, start):
    """Issue 24 item 5
    (docs/security.md "Model output: time and memory", D2 probes): ``.+\\Z`` fed ``"ab " * 100`` by character (1.34 s
    before) and ``[^>]+\\Z`` at 600 characters (30 s): the D2 probe's partial search at every chunk cost the held text
    squared (the engine's complete phase at every offset); it now goes a window at a time."""
    module = respc.compile_template(_string_end_template(pattern))
    assert_linear(module, lambda n: "<t>" + unit * (n // len(unit)), "strict", 1, start=start, cap=start)


# --- whitespace inside an xml-inline key or value (red team: a lazy group before ``\s*</X>``) -------

def _spaced(name: str) -> Callable[[int], str]:
    """A tool call of template ``name`` with ``n`` spaces inside a parameter's value (MiniMax-M2's
    ``<parameter name="a">x...y</parameter>`` shape) or key (GLM's ``<arg_key>a...b</arg_key>``)."""
    if name == "minimax_m2":  # the red team's input, as written
        return lambda n: ('<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">x' + " " * n
                          + 'y</parameter>\n</invoke>\n</minimax:tool_call>')
    if name == "glm4_5":  # the red team's input, as written
        return lambda n: "<tool_call>f\n<arg_key>a" + " " * n + "b</arg_key>\n<arg_value>1</arg_value>\n</tool_call>"
    if name == "hunyuan":  # its sample call has no argument
        return lambda n: "<tool_call>f<tool_sep><arg_key>a" + " " * n + "b</arg_key><arg_value>1</arg_value></tool_call>"
    call = inputs.pieces(name).tool_call
    if "<arg_key>" in call:
        return lambda n: call.replace("<arg_key>", "<arg_key>a" + " " * n, 1)
    assert ">Paris<" in call, call
    return lambda n: call.replace(">Paris<", ">x" + " " * n + "y<", 1)


#: the templates whose tag_pattern has a lazy group before ``\s*`` (``runtime/formats/xml_inline.py``
#: ``linear_source``): a run of n spaces in a value or key cost n² (MiniMax-M2: 0.05/0.17/0.66 s at
#: 4k/8k/16k spaces, one feed, strict, before)
SPACED = ("minimax_m2", "glm4_5", "dots", "step3", "glm5_3_flash", "hunyuan", "ling3", "spark2_5",
          "hyperclovax_seed_think", "poolside")


@pytest.mark.parametrize("name", SPACED)
@pytest.mark.parametrize("errors, chunk", CONFIGS)
def test_xml_inline_whitespace_run_in_parameter(name, errors, chunk):
    """A whitespace run inside an xml-inline parameter's value or key costs linear time, whole text and
    16-character feeds, strict and recover (docs/security.md "Model output: time and memory"); the run
    is kept in the value or key as written."""
    make = _spaced(name)
    calls = generated(name).parse_response(make(5), prefix="", errors=errors)["tool_calls"]
    assert any("     " in key or (isinstance(value, str) and "     " in value)
               for call in calls for key, value in call["function"]["arguments"].items()), calls
    assert_linear(generated(name), make, errors, chunk, start=4000, cap=32_000)
