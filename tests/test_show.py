"""``respc.show``: which region each output character went to, and the page that shows it.

* :func:`respc.show.layout` on every catalogue case: the segments cover the output exactly once,
  in order; each region's characters are exactly the text of its ``region_chunk`` events (read
  again here from an independent run over ``prefix tail + output``); every character outside
  regions is a delimiter the template declares, or (v2) text of a region whose slot is null,
  placed between that region's opener and its close;
* the page, parsed with ``html.parser``: every character once, in a span of its region's field
  colour class, delimiters in grey spans; diagnostics only when there are some;
* a 1 MB output: one span per run, built in seconds;
* headless Chromium (when installed: ``apt-get install -y chromium``): a screenshot that is not
  blank and shows each region's colour.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import time
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

import respc
from respc import show
from respc.compiler.cli import main
from support import REPO, generated, run_stream

FAMILIES = sorted((REPO / "tests" / "cases" / "families").glob("*.json"))
CASES = [(path.stem, case) for path in FAMILIES for case in json.loads(path.read_text(encoding="utf-8"))["cases"]]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed "
                                    "(apt-get install -y chromium; README 'Look at a template')")


def _rest(module, prefix: str) -> str:
    last = None
    for match in module.ResponseParser.START_ANCHOR.finditer(prefix):
        last = match.end()
    return prefix if last is None else prefix[last:]


def _instances(events: list[dict]) -> list[tuple[str, str]]:
    """(field, text) per region instance, straight from the events: an open starts one, chunks add to it.

    Instances are told apart by slot and region name (v2: several regions may fill one slot)."""
    out: list[list] = []
    current: dict[tuple, int] = {}
    for event in events:
        key = (event.get("field"), event.get("region", event.get("field")))
        if event["type"] == "region_open":
            current[key] = len(out)
            out.append([event["field"], ""])
        elif event["type"] == "region_chunk":
            if key not in current:
                current[key] = len(out)
                out.append([event["field"], ""])
            out[current[key]][1] += event["text"]
        elif event["type"] in ("region_close", "region_malformed"):
            current.pop(key, None)
    return [(f, t) for f, t in out]


def _check_cover(result, text: str) -> None:
    at = 0
    for seg in result.segments:
        assert seg.start == at and seg.end > seg.start, (seg, at)
        at = seg.end
    assert at == len(text)


@pytest.mark.parametrize("family,case", CASES, ids=[f"{f}-{c['name']}" for f, c in CASES])
def test_every_character_once_in_its_region(family, case):
    module = generated(family)
    text, prefix, tools = case["text"], case["prefix"], case.get("tools")
    errors = case.get("errors", "strict")
    result = show.layout(module, text, prefix=prefix, tools=tools, errors=errors)
    _check_cover(result, text)
    assert result.message == case["message"]
    assert [[d["kind"], d["start"], d["end"]] for d in result.diagnostics] == case.get("diagnostics", [])
    if result.diagnostics:
        return  # (a case with diagnostics: what they hold is in no region)
    kinds = {seg.kind for seg in result.segments}
    null_slot = {r.name for r in module.ResponseParser.REGIONS if r.slot is None}
    assert kinds <= {"region", "delimiter"} | ({"discarded"} if null_slot else set()), kinds
    # Discarded text is the text of a null-slot region: after its opener, before its close.
    open_null: list[str] = []
    for seg in result.segments:
        if seg.kind == "delimiter":
            words = seg.label.split()
            if words[0] == "open" and words[-1] in null_slot:
                open_null.append(words[-1])
            elif words[0] == "close" and open_null and words[-1] == open_null[-1]:
                open_null.pop()
        elif seg.kind == "discarded":
            assert seg.label in null_slot and open_null and open_null[-1] == seg.label, (seg, open_null)

    # The same parse without a prefix, on what the parser reads: prefix tail + output.
    rest = _rest(module, prefix)
    whole = show.layout(module, rest + text, prefix="", tools=tools)
    _check_cover(whole, rest + text)
    _, events = run_stream(module, "", [rest + text], tools)
    expected = [(f, t) for f, t in _instances(events) if t]
    got: dict[int, str] = {}
    for seg in whole.segments:
        if seg.kind == "region":
            got[seg.region] = got.get(seg.region, "") + (rest + text)[seg.start:seg.end]
    assert [(whole.regions[i].field, t) for i, t in sorted(got.items())] == expected
    # Region text in offset order is the chunk text in event order (not instance order: a region
    # nested inside another, e.g. a tool call inside reasoning that resumes after it, sits between
    # the two parts of the outer region's text).
    assert "".join(e["text"] for e in events if e["type"] == "region_chunk") == "".join(
        (rest + text)[s.start:s.end] for s in whole.segments if s.kind == "region")
    # Delimiters are the template's: each one matches one of its delimiter patterns exactly.
    delimiters = show._delimiters(module, None)
    for seg in whole.segments:
        if seg.kind == "delimiter":
            assert any(p.fullmatch(rest + text, seg.start, seg.end) or p.match(rest + text, seg.start)
                       and p.match(rest + text, seg.start).end() == seg.end for _, p in delimiters), seg
    # With the prefix, the output's segments are the same ones, shifted past the prefix tail.
    shifted = [(max(s.start - len(rest), 0), s.end - len(rest), s.kind, whole.regions[s.region].field
                if s.region is not None else None) for s in whole.segments if s.end > len(rest)]
    assert shifted == [(s.start, s.end, s.kind, result.regions[s.region].field if s.region is not None else None)
                       for s in result.segments]


def test_chunk_text_inside_a_delimiter_is_placed_after_it():
    """``<think>t``: the chunk ``t`` also occurs inside ``<think>``; it must land after it."""
    module = generated("qwen3")
    text = "<think>t</think>\n\nhi<|im_end|>"
    result = show.layout(module, text, prefix="")
    spans = [(text[s.start:s.end], s.kind, s.label or result.regions[s.region].field) for s in result.segments]
    assert spans == [("<think>", "delimiter", "open reasoning_content"), ("t", "region", "reasoning_content"),
                     ("</think>", "delimiter", "close reasoning_content"), ("\n\nhi", "region", "content"),
                     ("<|im_end|>", "delimiter", "close content")]


def test_a_module_from_a_dict_names_its_delimiters():
    """The parser itself says which transition consumed each delimiter: no template is needed."""
    template = {"start_anchor": "A", "fields": {"content": {"content": "text"},
                                                "r": {"open": "<r>", "close": "</r>", "content": "text"}}}
    module = respc.compile_template(template)
    for text in ("a<r>x</r>b", "a<r>r</r>b"):  # the chunk "r" also occurs inside "<r>"
        result = show.layout(module, text, prefix="")
        assert [(text[s.start:s.end], s.kind, s.label) for s in result.segments] == [
            ("a", "region", ""), ("<r>", "delimiter", "open r"), (text[4], "region", ""),
            ("</r>", "delimiter", "close r"), ("b", "region", "")]


def test_a_chunk_that_repeats_its_opener_is_placed_after_the_opener():
    """``<r><r><r></r>``: the region's text ``<r><r>`` also starts at 0; the open event says a delimiter came first."""
    template = {"start_anchor": "A", "fields": {"content": {"content": "text"},
                                                "r": {"open": "<r>", "close": "</r>", "content": "text"}}}
    module = respc.compile_template(template)
    text = "<r><r><r></r>"
    result = show.layout(module, text, prefix="", template=template)
    assert [(text[s.start:s.end], s.kind) for s in result.segments] == [
        ("<r>", "delimiter"), ("<r><r>", "region"), ("</r>", "delimiter")]


def test_text_discarded_outside_regions_is_discarded():
    """No implicit field (the null sink): text outside regions is discarded, delimiters still named."""
    template = {"start_anchor": "A", "fields": {"r": {"open": "<r>", "close": "</r>", "content": "text"}}}
    module = respc.compile_template(template)
    text = "junk<r>x</r>more<r>yy</r>end"
    result = show.layout(module, text, prefix="", template=template)
    assert [(text[s.start:s.end], s.kind, s.label) for s in result.segments] == [
        ("junk", "discarded", "outside"), ("<r>", "delimiter", "open r"), ("x", "region", ""),
        ("</r>", "delimiter", "close r"), ("more", "discarded", "outside"), ("<r>", "delimiter", "open r"),
        ("yy", "region", ""), ("</r>", "delimiter", "close r"), ("end", "discarded", "outside")]
    assert result.message == {"r": "yy"}


# --- template language v2 ---------------------------------------------------------------------

_CALL = {"type": "function", "function": {"name": "{content.name}", "arguments": "{content.arguments}"}}
#: a discarded section (slot null) nested in reasoning, holding calls that nest in it
_SECTION = {
    "respc_version": 2, "defaults": {"role": "assistant"}, "start_anchor": "<|m|>",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>", "repeats": True, "join": ""},
        "section": {"open": "<|calls|>", "close": "<|/calls|>", "slot": None,
                    "inside": {"reasoning_content": "nest"}},
        "tool_calls": {"open": "<|call|>", "close": "<|/call|>", "content": "json", "repeats": True,
                       "role": "tool_calls", "inside": {"section": "nest"}, "outside": False, "transform": _CALL},
        "content": {"close": "<|im_end|>", "repeats": True, "join": ""},
    },
}
#: calls that end at their JSON value, with an optional trailing ``;``; an opener rejected when no JSON follows
_VALUE = {
    "respc_version": 2, "defaults": {"role": "assistant"}, "start_anchor": "<|a|>",
    "fields": {
        "tool_calls": {"open": "<call>", "close_pattern": r"\s*;", "end": "value", "content": "json",
                       "repeats": True, "role": "tool_calls", "transform": _CALL},
        "content": {"close": "<|eot|>", "repeats": True, "join": ""},
    },
}


def _spans(result) -> list[tuple[str, str, str]]:
    return [(result.text[s.start:s.end], s.kind, s.label if s.region is None else result.regions[s.region].name)
            for s in result.segments]


def test_discarded_section_with_nested_calls():
    module = respc.compile_template(_SECTION)
    text = ('<think>Read.<|calls|>\n<|call|>{"name": "f", "arguments": {}}<|/call|>\n<|/calls|> On.</think>'
            "Done.<|im_end|>")
    result = show.layout(module, text, prefix="")
    assert _spans(result) == [
        ("<think>", "delimiter", "open reasoning_content"), ("Read.", "region", "reasoning_content"),
        ("<|calls|>", "delimiter", "open nest section"), ("\n", "discarded", "section"),
        ("<|call|>", "delimiter", "open nest tool_calls"),
        ('{"name": "f", "arguments": {}}', "region", "tool_calls"), ("<|/call|>", "delimiter", "close tool_calls"),
        ("\n", "discarded", "section"), ("<|/calls|>", "delimiter", "close section"),
        (" On.", "region", "reasoning_content"), ("</think>", "delimiter", "close reasoning_content"),
        ("Done.", "region", "content"), ("<|im_end|>", "delimiter", "close content")]
    # the suspended reasoning resumes: its two runs are one region instance
    assert result.regions[0].value == "Read. On." and result.segments[1].region == result.segments[-4].region
    page = show.render(result)
    _check_page(page, result)
    assert 'class="d k" title="discarded: text of region section (its slot is null)"' in page


def test_value_end_trailing_close_and_rejected_opener():
    module = respc.compile_template(_VALUE)
    text = 'Use <call> here. <call>{"name": "f", "arguments": {}} ; then<call>{"name": "g", "arguments": {}}ok'
    result = show.layout(module, text, prefix="")
    assert _spans(result) == [
        ("Use <call> here. ", "region", "content"), ("<call>", "delimiter", "open tool_calls"),
        ('{"name": "f", "arguments": {}}', "region", "tool_calls"), (" ;", "delimiter", "close after tool_calls"),
        (" then", "region", "content"), ("<call>", "delimiter", "open tool_calls"),
        ('{"name": "g", "arguments": {}}', "region", "tool_calls"), ("ok", "region", "content")]
    assert result.message["content"] == "Use <call> here.thenok"  # text strips each block


def test_recover_marks_malformed_and_held_text_at_the_parsers_offsets():
    module = generated("qwen3")
    text = "Hi.<tool_call>{bad}</tool_call>ok<tool_c"
    result = show.layout(module, text, prefix="", errors="recover")
    assert [(d["kind"], d["start"], d["end"]) for d in result.diagnostics] == [
        ("malformed", 3, 31), ("truncated-delimiter", 33, 40)]
    assert [(text[s.start:s.end], s.kind, s.malformed) for s in result.segments] == [
        ("Hi.", "region", False), ("<tool_call>", "delimiter", True), ("{bad}", "region", True),
        ("</tool_call>", "delimiter", True), ("ok", "region", False), ("<tool_c", "region", False)]
    assert result.regions[1].malformed and not result.regions[1].closed
    assert result.message["content"] == "Hi.<tool_call>{bad}</tool_call>ok<tool_c"
    parsed = _check_page(show.render(result), result)
    assert [p[0] for p in parsed.pieces if "m" in p[1].split()] == ["<tool_call>", "{bad}", "</tool_call>", "<tool_c"]
    # a delimiter cut off right after a value that ended its region is text, not a trailing close
    value = show.layout(respc.compile_template(_VALUE), '<call>{"name": "f", "arguments": {}}<|eo', prefix="",
                        errors="recover")
    assert _spans(value) == [("<call>", "delimiter", "open tool_calls"),
                             ('{"name": "f", "arguments": {}}', "region", "tool_calls"),
                             ("<|eo", "region", "content")]
    with pytest.raises(ValueError, match="errors must be"):
        show.layout(module, text, prefix="", errors="lenient")


def test_held_back_text_is_marked():
    """A trailing ``<`` may begin a delimiter: the parser holds it until finalize."""
    module = generated("qwen3")
    result = show.layout(module, "answer <", prefix="")
    assert [(s.start, s.end, s.held) for s in result.segments] == [(0, 7, False), (7, 8, True)]


def test_a_parse_error_becomes_a_diagnostic_at_its_offset():
    module = generated("qwen3")
    text = "ok<tool_call>{bad</tool_call>never reached" + "x" * 5000
    result = show.layout(module, text, prefix="")
    _check_cover(result, text)
    assert result.message is None
    (diag,) = result.diagnostics
    assert diag["kind"] == "error" and "json" in diag["message"]
    assert (diag["start"], diag["end"]) == (text.index("{bad"), text.index("never"))
    assert result.segments[-1].kind == "unparsed" and result.segments[-1].start == text.index("never")


class _Spans(HTMLParser):
    """Text of ``<pre id="out">`` as (text, classes, data-r) per text piece, and the diagnostics section."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pieces: list[tuple[str, str, str | None, str]] = []
        self.stack: list[dict] = []
        self.in_out = False
        self.ids: list[str] = []
        self.tags: set[str] = set()
        self.attrs_seen: list[dict] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.add(tag)
        self.attrs_seen.append(attrs)
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag == "pre" and attrs.get("id") == "out":
            self.in_out = True
        elif self.in_out:
            assert tag == "span", tag
            assert not self.stack, "spans are not nested"
            self.stack.append(attrs)

    def handle_endtag(self, tag):
        if tag == "pre" and self.in_out:
            self.in_out = False
        elif self.in_out and tag == "span":
            self.stack.pop()

    def handle_data(self, data):
        if self.in_out:
            assert self.stack, f"text outside a span: {data[:30]!r}"
            top = self.stack[-1]
            self.pieces.append((data, top.get("class", ""), top.get("data-r"), top.get("title", "")))


def _parse_page(page: str) -> _Spans:
    parser = _Spans()
    parser.feed(page)
    parser.close()
    return parser


def _check_page(page: str, result) -> _Spans:
    parsed = _parse_page(page)
    assert "".join(p[0] for p in parsed.pieces) == show.displayed(result.text)
    # rebuild per-character owners from the spans and compare with the layout
    at = 0
    owners = []
    for text, classes, region, _ in parsed.pieces:
        owners.append((at, at + len(text), classes.split(), region))
        at += len(text)
    colour_class = {name: f"f{i}" for i, name in enumerate(result.fields)}
    by_offset = {(s.start, s.end): s for s in result.segments}
    for start, end, classes, region in owners:
        seg = by_offset[(start, end)]
        if seg.kind == "region":
            assert region == str(seg.region) and colour_class[result.regions[seg.region].field] in classes
        else:
            assert region is None and ("d" in classes if seg.kind != "unparsed" else "u" in classes)
    # self-contained: no external references
    for attrs in parsed.attrs_seen:
        for key in ("src", "href"):
            assert key not in attrs, attrs
    style = page.split("<style>", 1)[1].split("</style>", 1)[0]
    script = page.rsplit("<script>", 1)[1]
    assert not re.search(r"url\(|@import|https?:|//", style + script)
    return parsed


def test_page_of_every_catalogue_case():
    for family, case in CASES:
        module = generated(family)
        result = show.layout(module, case["text"], prefix=case["prefix"], tools=case.get("tools"),
                             errors=case.get("errors", "strict"))
        page = show.render(result, title=f"{family} {case['name']}")
        parsed = _check_page(page, result)
        assert ("diagnostics" in parsed.ids) == bool(case.get("diagnostics"))


def test_page_colours_delimiters_and_values():
    module = generated("qwen3")
    text = Path(REPO / "examples" / "qwen3_output.txt").read_text(encoding="utf-8")
    prefix = Path(REPO / "examples" / "qwen3_prefix.txt").read_text(encoding="utf-8")
    tools = json.loads((REPO / "examples" / "tools.json").read_text(encoding="utf-8"))
    page = respc.show.html(module, text, prefix=prefix, tools=tools)
    parsed = _parse_page(page)
    delimiters = [p[0] for p in parsed.pieces if p[1] == "d"]
    assert delimiters == ["</think>", "<tool_call>", "</tool_call>", "<tool_call>", "</tool_call>", "<|im_end|>"]
    assert all(p[3].startswith("delimiter: ") for p in parsed.pieces if p[1] == "d")
    for i, name in enumerate(module.FIELD_NAMES):
        assert f".f{i}{{background:{show.FIELD_COLOURS[i]}}}" in page
    regions = json.loads(re.search(r'<script type="application/json" id="regions">(.*?)</script>', page,
                                   re.S).group(1))
    assert regions[0]["field"] == "reasoning_content" and regions[0]["value"].startswith("The user wants")
    assert regions[2]["value"]["function"]["name"] == "get_weather"
    assert '"get_time"' in page.split('id="message">')[1]


def test_page_escapes_and_keeps_awkward_characters():
    module = generated("qwen3")
    text = "\n<b>&amp;</b>\r\n\x00 \ud800 </script><!-- é<think>x</think><|im_end|>"
    result = show.layout(module, text, prefix="")
    page = show.render(result)
    page.encode("utf-8")  # no lone surrogate reaches the page
    _check_page(page, result)
    assert "&#13;" in page and "</script><!--" not in page.split("<script")[1]


def test_diagnostics_are_listed_and_marked_only_when_present():
    module = generated("qwen3")
    page = respc.show.html(module, "abcdef", prefix="", diagnostics=[
        {"kind": "malformed", "start": 2, "end": 4, "message": "damaged <text>"}])
    parsed = _parse_page(page)
    assert "diagnostics" in parsed.ids and "[2\u20134) malformed: damaged &lt;text&gt;" in page
    assert [(p[0], "m" in p[1].split()) for p in parsed.pieces] == [("ab", False), ("cd", True), ("ef", False)]
    assert 'id="diagnostics"' not in respc.show.html(module, "abcdef", prefix="")


def _big_output(size: int) -> str:
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    reasoning = "<think>\n" + ("Let me think about the weather in Paris. " * (size // 80)) + "\n</think>\n\n"
    answer = "It is sunny. " * (size // 2 // 13)
    return reasoning + answer + call * 20 + "<|im_end|>"


def test_one_megabyte_is_one_span_per_run_and_quick():
    module = generated("qwen3")
    text = _big_output(1_000_000)
    assert len(text) > 1_000_000
    began = time.perf_counter()
    page = respc.show.html(module, text, prefix="")
    took = time.perf_counter() - began
    assert page.count("<span") < 200
    assert took < 20, f"{took:.1f} s for {len(text)} characters"
    assert "".join(p[0] for p in _parse_page(page).pieces) == text


def test_cli_html(tmp_path, capsys):
    out = tmp_path / "page.html"
    argv = ["parse", "qwen3", str(REPO / "examples" / "qwen3_output.txt"),
            "--prefix-file", str(REPO / "examples" / "qwen3_prefix.txt"), "--html", str(out)]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["tool_calls"][1]["function"]["name"] == "get_time"
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "reasoning_content" in page
    assert main(argv + ["--events"]) == 2
    assert "--events and --html do not combine" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_text("<tool_call>{bad</tool_call>", encoding="utf-8")
    assert main(["parse", "qwen3", str(bad), "--prefix", "", "--html", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "offsets 11-27" in err
    assert 'id="diagnostics"' in out.read_text(encoding="utf-8")
    assert main(argv[:-1] + [str(tmp_path)]) == 2  # a folder cannot be written as a page
    err = capsys.readouterr().err
    assert err.startswith("respc: cannot write") and err.count("\n") == 1


# --- rendered by a real browser --------------------------------------------------------------

def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA PNG (what Chromium writes): (width, height, rows of RGB(A) bytes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, [], 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, previous))
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b, c = previous[i], previous[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, channels, rows


def _screenshot(page: Path, png: Path, size: str = "1000,600", timeout: int = 120) -> None:
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size={size}", f"--screenshot={png}", page.as_uri()],
                   capture_output=True, timeout=timeout, check=True)


def _colour_counts(png: Path) -> dict[tuple[int, int, int], int]:
    _, channels, rows = _png_pixels(png.read_bytes())
    counts: dict[tuple[int, int, int], int] = {}
    for row in rows:
        for i in range(0, len(row), channels):
            key = (row[i], row[i + 1], row[i + 2])
            counts[key] = counts.get(key, 0) + 1
    return counts


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


@needs_chromium
def test_screenshot_shows_the_regions_colours(tmp_path):
    module = generated("qwen3")
    text = (REPO / "examples" / "qwen3_output.txt").read_text(encoding="utf-8")
    prefix = (REPO / "examples" / "qwen3_prefix.txt").read_text(encoding="utf-8")
    page = tmp_path / "page.html"
    page.write_text(respc.show.html(module, text, prefix=prefix), encoding="utf-8")
    png = tmp_path / "page.png"
    _screenshot(page, png)
    counts = _colour_counts(png)
    total = sum(counts.values())
    white = counts.get((255, 255, 255), 0)
    assert white < total * 0.97 and len(counts) > 20, "blank screenshot"
    for i, name in enumerate(module.FIELD_NAMES):
        colour = _rgb(show.FIELD_COLOURS[i])
        assert counts.get(colour, 0) > 200, f"{name}'s colour {show.FIELD_COLOURS[i]} is not on the screenshot"
    assert counts.get(_rgb(show.DELIMITER_COLOUR), 0) > 200


@needs_chromium
def test_one_megabyte_page_renders(tmp_path):
    page = tmp_path / "big.html"
    page.write_text(respc.show.html(generated("qwen3"), _big_output(1_000_000), prefix=""), encoding="utf-8")
    png = tmp_path / "big.png"
    began = time.perf_counter()
    _screenshot(page, png, size="800,400")
    assert time.perf_counter() - began < 60
    counts = _colour_counts(png)
    assert counts.get(_rgb(show.FIELD_COLOURS[0]), 0) > 200  # the reasoning at the top


@needs_chromium
def test_hovering_a_region_shows_its_value(tmp_path):
    """The page's one mouseover listener fills the hover box with the region's value (run in Chromium)."""
    module = generated("qwen3")
    text = (REPO / "examples" / "qwen3_output.txt").read_text(encoding="utf-8")
    prefix = (REPO / "examples" / "qwen3_prefix.txt").read_text(encoding="utf-8")
    page = respc.show.html(module, text, prefix=prefix)
    hover = ("<script>document.querySelector('[data-r=\"2\"]').dispatchEvent("
             "new MouseEvent('mouseover', {bubbles: true}));</script>")
    path = tmp_path / "hover.html"
    path.write_text(page.replace("</body>", hover + "</body>"), encoding="utf-8")
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
                          capture_output=True, timeout=120, check=True)
    dom = done.stdout.decode("utf-8")
    box = dom.split('id="hover">', 1)[1].split("</pre>", 1)[0]
    assert box.startswith("tool_calls  [")
    assert '"name": "get_weather"' in box.replace("&quot;", '"')
    assert dom.count('class="r f1 on"') == 1  # that region's spans are outlined
