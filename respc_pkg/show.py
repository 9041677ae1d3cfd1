"""A parse as a page: ``respc parse TEMPLATE FILE ... --html OUT.html`` and :func:`html`.

The page shows the raw output with each region's text in its field's colour, consumed delimiters
greyed, text the parser held back until the end of the stream underlined, diagnostics listed with
their offsets (only when there are some), and the parsed message beside it; hovering a region shows
its value. It is one self-contained file: inline CSS and JS, no network, no external assets.

Offsets. The parser reports none, so :func:`layout` reconstructs them from its events: the
``region_chunk`` texts are contiguous slices of the input in order (SPEC 4.4), and what lies
between two of them is delimiter text (or text the parser discarded, in a template without an
implicit field). Inside such a gap the next chunk could in principle match earlier than it really
starts (``<think>t``: the chunk ``t`` also occurs inside ``<think>``), so each gap is explained
with the template's own delimiters: the next chunk starts at the nearest offset reachable from
the gap's start through a chain of delimiter matches. Without the template (a module compiled
from a dict and no ``template=``), the nearest occurrence is taken and such gaps are shown as
"consumed" rather than as named delimiters.

Size. One ``<span>`` per run of one region (not per character), values kept in one JSON block
parsed on the first hover, one event listener: a 1 MB output renders without freezing a browser.
"""

from __future__ import annotations

import heapq
import html as _html
import json
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

__all__ = ["Segment", "Region", "Layout", "layout", "html", "displayed", "FIELD_COLOURS", "DELIMITER_COLOUR"]

#: region backgrounds, by field in the module's declaration order (then slots as they appear)
FIELD_COLOURS = ("#bcd7ff", "#ffd58f", "#b6ebb6", "#f5bde2", "#d6c8ff", "#aeeae6", "#f0e08c", "#ffc4b8")
#: background of consumed delimiters (their text is grey)
DELIMITER_COLOUR = "#dcdcdc"

#: pieces the output is fed in; on an error the failing piece is fed again one character at a time
PIECE = 4096
#: outputs longer than this are shown without line wrapping: breaking 1 MB of text into lines
#: takes a browser several seconds, laying out unwrapped lines almost nothing
WRAP_LIMIT = 100_000
#: delimiter matches tried per gap before falling back to the nearest occurrence
_GAP_STEPS = 256


@dataclass(frozen=True)
class Segment:
    """A run of output characters ``text[start:end]`` with one role.

    Attributes:
        start (int), end (int): offsets in the output (the prefix not counted).
        kind (str): ``"region"`` (a region's text), ``"delimiter"`` (a delimiter the parser
            consumed), ``"consumed"`` (consumed, but not explained by the template's delimiters:
            discarded text, or no template given), ``"unparsed"`` (after an error, not reached).
        region (int | None): index into :attr:`Layout.regions` for ``"region"``.
        held (bool): routed only by ``finalize()``: the parser held it back until the end of the
            stream (a possible partial delimiter, or a D2 match that later input could change).
        label (str): for a delimiter, which one (``"close reasoning_content"``).
    """

    start: int
    end: int
    kind: str
    region: int | None = None
    held: bool = False
    label: str = ""


@dataclass
class Region:
    """One region instance: from its ``region_open`` (or first chunk) to its ``region_close``.

    Attributes:
        field (str): the event's ``field`` (the message key, a slot in v2 templates).
        name (str): the event's ``region`` when present, else ``field``.
        value (Any): the ``region_close`` value (None while not closed).
        closed (bool): a ``region_close`` was seen.
        by_prefix (bool): opened while the parser read the prefix.
        start (int | None), end (int | None): output offsets of its first and past its last
            character (None when it has no text in the output).
    """

    field: str
    name: str
    value: Any = None
    closed: bool = False
    by_prefix: bool = False
    start: int | None = None
    end: int | None = None


@dataclass
class Layout:
    """Where every output character went.

    Attributes:
        text (str): the output.
        segments (list[Segment]): contiguous, in order, covering ``text`` exactly once.
        regions (list[Region]): in the order they opened.
        message (dict | None): the parsed message (None when parsing failed).
        events (list[dict]): every event (initial, fed, final), in order.
        diagnostics (list[dict]): ``{"kind", "start", "end", "message"}`` with output offsets.
        fields (tuple[str, ...]): field names in colour order.
    """

    text: str
    segments: list
    regions: list
    message: dict | None
    events: list
    diagnostics: list = field(default_factory=list)
    fields: tuple = ()


# --- delimiters of the template ------------------------------------------------------------

_DELIMITERS: dict = {}


def _delimiters(parser_module: Any, template: Any) -> list[tuple[str, Any]] | None:
    """``[(label, compiled regex)]`` of every watched delimiter, or None when the template is unknown.

    The template is ``template`` when given, else the module's ``SOURCE`` (a file, or a catalogue
    name by its stem); either is used only when its SHA-256 equals the module's ``TEMPLATE_SHA256``. Cached per module
    and template name (not for a dict template, which is compiled each time).
    """
    key = (getattr(parser_module, "TEMPLATE_SHA256", None), getattr(parser_module, "SOURCE", None), template)
    cacheable = template is None or isinstance(template, str)
    if cacheable and key in _DELIMITERS:
        return _DELIMITERS[key]
    found = _find_delimiters(parser_module, template)
    if cacheable:
        _DELIMITERS[key] = found
    return found


def _find_delimiters(parser_module: Any, template: Any) -> list[tuple[str, Any]] | None:
    import regex

    from respc.compiler.api import compile_source
    from respc.runtime.errors import TemplateError

    candidates = [template] if template is not None else []
    source = getattr(parser_module, "SOURCE", "")
    if template is None and source and not source.startswith("<"):
        candidates += [source, re.sub(r"\.json$", "", source.replace("\\", "/").rsplit("/", 1)[-1])]
    for spec in candidates:
        try:
            compiled = compile_source(spec)
        except (TemplateError, OSError, ValueError):
            continue
        if compiled.template.sha256 != getattr(parser_module, "TEMPLATE_SHA256", compiled.template.sha256):
            continue
        fields = compiled.template.fields
        out = {}
        for state in compiled.automaton.states:
            for watch in state.watches:
                label = f"{watch.kind} {fields[watch.field].name}"
                out.setdefault((label, watch.delimiter.pattern), regex.compile(watch.delimiter.pattern, regex.DOTALL))
        return [(label, pattern) for (label, _), pattern in out.items()]
    return None


def _prefix_rest(parser_class: Any, prefix: Any) -> str:
    """The part of the prefix the parser reads: after the last start-anchor match (SPEC 4.6)."""
    if not isinstance(prefix, str) or not prefix:
        return ""
    anchor = getattr(parser_class, "START_ANCHOR", None)
    last = None
    if anchor is not None:
        for match in anchor.finditer(prefix):
            last = match.end()
    return prefix if last is None else prefix[last:]


# --- events -> offsets ---------------------------------------------------------------------

def _events(parser_class: Any, text: str, prefix: Any, tools: Any) -> tuple[list, dict | None, Any, int]:
    """Feed ``text`` and return ``(tagged events, message, error, reached)``.

    ``tagged`` holds ``(event, source)`` with source ``"prefix"``, ``"feed"`` or ``"final"``.
    ``reached``: output characters fed when an error arose (``len(text)`` without error). The
    text is fed in pieces of :data:`PIECE`; when a piece fails it is fed again, on a fresh parser,
    one character at a time, so the error is placed at the character that raised it.
    """
    def run(slow_from: int) -> tuple[list, dict | None, Any, int, int]:
        parser = parser_class(prefix, tools)
        tagged = [(event, "prefix") for event in parser.initial_events]
        pos = 0
        try:
            while pos < len(text):
                size = PIECE if pos < slow_from else 1
                piece = text[pos:min(pos + size, max(slow_from, pos + 1))]
                events = parser.feed(piece)
                tagged.extend((event, "feed") for event in events)
                pos += len(piece)
            message, final = parser.finalize()
        except (ValueError, KeyError, TypeError) as exc:
            return tagged, None, exc, pos, min(len(text), pos + len(piece)) if pos < len(text) else len(text)
        tagged.extend((event, "final") for event in final)
        return tagged, message, None, len(text), len(text)

    tagged, message, error, piece_start, reached = run(len(text))
    if error is not None and reached - piece_start > 1:
        again = run(piece_start)
        if again[2] is not None:
            tagged, message, error, _, reached = again
    return tagged, message, error, reached


def _locate(total: str, cursor: int, run: str, delimiters: list | None, prefer: tuple[str, ...] = (),
            consumed: bool = False) -> tuple[int, list[tuple[int, int, str]]]:
    """Where ``run`` starts at or after ``cursor``, and the delimiter matches that fill the gap.

    Args:
        total: prefix tail + output; cursor: the end of the previous region text.
        run: the next region text.
        delimiters: ``[(label, compiled regex)]`` or None (unknown template).
        prefer: delimiter labels tried first (the close of the region before the gap, the open of
            the one after it), so a delimiter two fields share (``</think>``) is named for the right one.
        consumed: the events between say a delimiter was consumed (an explicit open or a close):
            a gap of zero characters is then the last resort (zero-width delimiters), not the first.

    Returns:
        tuple[int, list[tuple[int, int, str]]]: the start, and ``(start, end, label)`` per delimiter
        match in the gap. Tried in order: the nearest start reachable from ``cursor`` through a
        chain of delimiter matches; then (text the parser discarded, in a template without an
        implicit field) the nearest occurrence of ``run`` right after a delimiter match; then the
        nearest occurrence (the gap is then not explained).

    Raises:
        AssertionError: ``run`` does not occur after ``cursor`` (events that are not slices of the
            input: a parser bug, never an input problem).
    """
    at_cursor = total.startswith(run, cursor)
    if at_cursor and not (consumed and delimiters):
        return cursor, []
    if delimiters:
        delimiters = sorted(delimiters, key=lambda d: d[0] not in prefer)
        came_from: dict[int, tuple[int, str]] = {}
        heap, seen, steps = [cursor], {cursor}, 0
        while heap and steps < _GAP_STEPS:
            q = heapq.heappop(heap)
            if q != cursor and total.startswith(run, q):
                chain = []
                while q != cursor:
                    p, label = came_from[q]
                    chain.append((p, q, label))
                    q = p
                return chain[0][1], chain[::-1]
            for label, pattern in delimiters:
                steps += 1
                match = pattern.match(total, q)
                if match is not None and match.end() > q and match.end() not in seen:
                    seen.add(match.end())
                    came_from[match.end()] = (q, label)
                    heapq.heappush(heap, match.end())
        if at_cursor:
            return cursor, []
        found = total.find(run, cursor)
        for _ in range(_GAP_STEPS):
            if found < 0:
                break
            for label, pattern in delimiters:
                ending = _match_ending_at(pattern, total, cursor, found)
                if ending is not None:
                    return found, _tail(total, cursor, ending, delimiters, prefer) + [(ending, found, label)]
            found = total.find(run, found + 1)
    found = total.find(run, cursor)
    if found < 0:
        raise AssertionError(f"region text {run[:40]!r} does not follow offset {cursor} of the input")
    return found, []


def _match_ending_at(pattern: Any, total: str, lo: int, end: int) -> int | None:
    """The start of the leftmost match of ``pattern`` in ``total[lo:]`` that ends exactly at ``end``."""
    pos = lo
    while pos < end:
        match = pattern.search(total, pos, end)
        if match is None:
            return None
        if match.end() == end and match.end() > match.start():
            return match.start()
        pos = match.start() + 1
    return None


def layout(parser_module: Any, text: str, *, prefix: Any, tools: list | None = None,
           template: Any = None) -> Layout:
    """Parse ``text`` and say which region every character went to.

    Args:
        parser_module: a generated parser module (``respc.generated.qwen3``, or what
            ``respc.compile_template`` returns); its ``ResponseParser`` is used.
        text (str): the model output.
        prefix: the prompt before generation (required; ``""`` opts out), as for ``ResponseParser``.
        tools: JSON-schema tools, as for ``ResponseParser``.
        template: the module's template (dict, path, catalogue name), to name delimiters; by
            default found from the module's ``SOURCE``.

    Returns:
        Layout: segments covering ``text`` once, the regions with their values, the message and
        the events. A parse error does not raise: it becomes a diagnostic of kind ``"error"``
        spanning the open region up to the character that raised it, and the text after that
        character is ``"unparsed"``.

    Raises:
        ValueError: ``prefix`` is None (the parser's own message).
    """
    parser_class = parser_module.ResponseParser
    if prefix is None:
        parser_class(prefix, tools)  # raises the parser's own PREFIX_REQUIRED error
    rest = _prefix_rest(parser_class, prefix)
    total = rest + text
    base = len(rest)
    tagged, message, error, reached = _events(parser_class, text, prefix, tools)
    delimiters = _delimiters(parser_module, template)

    names = list(getattr(parser_module, "FIELD_NAMES", ()) or getattr(parser_class, "FIELD_NAMES", ()))
    regions: list[Region] = []
    current: dict[tuple[str, str], int] = {}
    runs: list[list] = []  # [region index, [chunk texts], held, contiguous, a delimiter was consumed before]
    chunk_before = False  # the previous event was a chunk (nothing happened in between)
    labels = {label for label, _ in delimiters or ()}
    consumed = False  # since the previous chunk, an event that consumes a delimiter
    for event, source in tagged:
        kind = event.get("type")
        key = (event.get("field"), event.get("region", event.get("field")))
        if key[0] is not None and key[0] not in names:
            names.append(key[0])
        if kind in ("region_open", "region_close"):
            consumed = consumed or f"{'open' if kind == 'region_open' else 'close'} {key[1]}" in labels
        if kind == "region_open":
            current[key] = len(regions)
            regions.append(Region(key[0], key[1], by_prefix=source == "prefix"))
            chunk_before = False
        elif kind == "region_chunk":
            if key not in current:
                current[key] = len(regions)
                regions.append(Region(key[0], key[1], by_prefix=source == "prefix"))
            index, held = current[key], source == "final"
            if not event["text"]:
                continue
            if chunk_before and runs and runs[-1][0] == index and runs[-1][2] == held:
                runs[-1][1].append(event["text"])
            else:
                runs.append([index, [event["text"]], held, chunk_before, consumed])
            chunk_before, consumed = True, False
        elif kind == "region_close":
            index = current.pop(key, None)
            if index is None:
                index = len(regions)
                regions.append(Region(key[0], key[1], by_prefix=source == "prefix"))
            regions[index].value = event.get("value")
            regions[index].closed = True
            chunk_before = False
        else:
            chunk_before = False

    limit = base + reached
    raw: list[Segment] = []  # offsets in `total`
    cursor = 0
    before = None  # the region of the previous run
    for index, pieces, held, contiguous, after_delimiter in runs:
        run_text = "".join(pieces)
        prefer = (f"open {regions[index].name}",) + (() if before is None else (f"close {before}",))
        before = regions[index].name
        start, chain = (cursor, []) if contiguous else _locate(total, cursor, run_text, delimiters, prefer,
                                                                    after_delimiter)
        if contiguous and not total.startswith(run_text, cursor):
            raise AssertionError(f"region text {run_text[:40]!r} does not continue at offset {cursor}")
        at = cursor
        for d_start, d_end, label in chain:
            if d_start > at:
                raw.append(Segment(at, d_start, "consumed"))
            raw.append(Segment(d_start, d_end, "delimiter", label=label))
            at = d_end
        if start > at:
            raw.append(Segment(at, start, "consumed"))
        raw.append(Segment(start, start + len(run_text), "region", index, held))
        cursor = start + len(run_text)
    if cursor < limit:
        # after the last region text: delimiters (a final close), or consumed text
        tail_chain = _tail(total, cursor, limit, delimiters, () if before is None else (f"close {before}",))
        for d_start, d_end, label in tail_chain:
            raw.append(Segment(d_start, d_end, "delimiter", label=label))
            cursor = d_end
        if cursor < limit:
            raw.append(Segment(cursor, limit, "consumed" if error is None else "unparsed"))
            cursor = limit
    if limit < len(total):
        raw.append(Segment(limit, len(total), "unparsed"))

    segments = []
    for seg in raw:  # drop the prefix part, shift to output offsets
        start, end = max(seg.start, base) - base, seg.end - base
        if end > start:
            segments.append(Segment(start, end, seg.kind, seg.region, seg.held, seg.label))
            if seg.region is not None:
                region = regions[seg.region]
                region.start = start if region.start is None else region.start
                region.end = end
    at = 0
    for seg in segments:  # never silently lost (or doubled) text
        if seg.start != at:
            raise AssertionError(f"layout of {len(text)} characters: segment at {seg.start}, expected {at}")
        at = seg.end
    if at != len(text):
        raise AssertionError(f"layout of {len(text)} characters ends at {at}")
    diagnostics = []
    if error is not None:
        open_regions = [regions[i] for i in current.values() if regions[i].start is not None]
        start = min((r.start for r in open_regions), default=max(0, reached - 1))
        diagnostics.append({"kind": "error", "start": start, "end": reached,
                            "message": f"{type(error).__name__}: {_one_line(error)}"})
    return Layout(text, segments, regions, message, [event for event, _ in tagged], diagnostics, tuple(names))


def _tail(total: str, cursor: int, limit: int, delimiters: list | None,
          prefer: tuple[str, ...] = ()) -> list[tuple[int, int, str]]:
    """Delimiter matches that fill ``total[cursor:limit]`` from the left, as far as they reach."""
    chain = []
    if delimiters:
        delimiters = sorted(delimiters, key=lambda d: d[0] not in prefer)
    while delimiters and cursor < limit:
        for label, pattern in delimiters:
            match = pattern.match(total, cursor, limit)
            if match is not None and match.end() > cursor:
                chain.append((cursor, match.end(), label))
                cursor = match.end()
                break
        else:
            break
    return chain


def _one_line(exc: BaseException, limit: int = 2000) -> str:
    """An error message as one line, cut to ``limit`` characters (it may quote a whole region body)."""
    text = " | ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


# --- the page --------------------------------------------------------------------------------

_UNSAFE = re.compile("[\x00\ud800-\udfff]")


def displayed(text: str) -> str:
    """``text`` as the page shows it: NUL and lone surrogates (which HTML/UTF-8 cannot carry) become U+FFFD."""
    return _UNSAFE.sub("\ufffd", text)


def _text(text: str) -> str:
    """Escaped element text; ``\\r`` as ``&#13;`` so a browser's newline normalisation keeps it."""
    return _html.escape(displayed(text), quote=False).replace("\r", "&#13;")


def _attr(text: str) -> str:
    return _html.escape(displayed(text), quote=True).replace("\r", "&#13;").replace("\n", "&#10;")


def _json_block(value: Any) -> str:
    """JSON safe inside ``<script type="application/json">`` (no ``</script>``, no ``<!--``)."""
    return displayed(json.dumps(value, ensure_ascii=False, default=repr)).replace("<", "\\u003c")


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1d;background:#fff}
header{padding:10px 16px;border-bottom:1px solid #ddd}
h1{font-size:17px;margin:0 0 4px}h2{font-size:14px;margin:10px 0 6px}
.meta{color:#555;margin:0}
.legend{list-style:none;padding:0;margin:6px 0 0;display:flex;flex-wrap:wrap;gap:6px 14px}
.legend span{padding:0 6px;border-radius:3px;font-family:monospace}
main{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:16px;padding:0 16px 16px}
pre{font:13px/1.5 monospace;white-space:pre-wrap;overflow-wrap:anywhere;margin:0;padding:8px;
border:1px solid #ddd;border-radius:4px;overflow:auto}
.nowrap pre{white-space:pre;overflow-wrap:normal}
#out{max-height:85vh}
#out{background:#fff}
#message,#hover{background:#fafafa;max-height:45vh;overflow:auto}
#hover{white-space:pre-wrap}
.d{color:#8a8a8a;background:DELIM}
.x{font-style:italic}
.u{color:#666;background:repeating-linear-gradient(45deg,#fff 0 4px,#eee 4px 8px)}
.h{text-decoration:underline dotted #444;text-decoration-thickness:2px}
.m{text-decoration:underline wavy #d00000;text-decoration-skip-ink:none}
.r.on{outline:2px solid #333}
#diagnostics{margin:0 16px;padding:6px 12px;border:1px solid #e0a0a0;background:#fff5f5;border-radius:4px}
#diagnostics li{font-family:monospace}
"""

_JS = """
(function(){
var out=document.getElementById('out'),hover=document.getElementById('hover'),data=null,on=[];
function regions(){if(!data){data=JSON.parse(document.getElementById('regions').textContent);}return data;}
out.addEventListener('mouseover',function(e){
  var s=e.target.closest?e.target.closest('[data-r]'):null;if(!s)return;
  var i=+s.getAttribute('data-r'),r=regions()[i];
  for(var k=0;k<on.length;k++)on[k].classList.remove('on');
  on=Array.prototype.slice.call(out.querySelectorAll('[data-r="'+i+'"]'));
  for(k=0;k<on.length;k++)on[k].classList.add('on');
  var v=r.closed?JSON.stringify(r.value,null,2):'(not closed)';
  if(v===undefined)v='null';
  if(v.length>20000)v=v.slice(0,20000)+'\\n\\u2026 ('+(v.length-20000)+' more characters)';
  hover.textContent=r.name+(r.name!==r.field?' (slot '+r.field+')':'')+'  ['+r.start+'\\u2013'+r.end+')\\n'+v;
});
})();
"""


def _split(segments: list[Segment], cuts: Sequence[int]) -> list[Segment]:
    """Segments cut at the given offsets (diagnostic boundaries), so a mark covers whole spans."""
    cuts = sorted(set(cuts))
    out, k = [], 0
    for seg in segments:
        start = seg.start
        while k < len(cuts) and cuts[k] <= start:
            k += 1
        j = k
        while j < len(cuts) and cuts[j] < seg.end:
            out.append(Segment(start, cuts[j], seg.kind, seg.region, seg.held, seg.label))
            start = cuts[j]
            j += 1
        out.append(Segment(start, seg.end, seg.kind, seg.region, seg.held, seg.label))
    return out


def render(result: Layout, *, title: str = "", wrap: bool | None = None) -> str:
    """The page of a :class:`Layout` (see the module docstring).

    Args:
        result: what :func:`layout` returned (its ``diagnostics`` may be extended first).
        title: the page heading.
        wrap: wrap long lines; default: only outputs up to :data:`WRAP_LIMIT` characters.
    """
    if wrap is None:
        wrap = len(result.text) <= WRAP_LIMIT
    colour = {name: FIELD_COLOURS[i % len(FIELD_COLOURS)] for i, name in enumerate(result.fields)}
    slot_class = {name: f"f{i}" for i, name in enumerate(result.fields)}
    diagnostics = sorted(result.diagnostics, key=lambda d: (d["start"], d["end"]))
    marked = [(d["start"], d["end"]) for d in diagnostics if d["end"] > d["start"]]
    segments = _split(result.segments, [x for pair in marked for x in pair])
    text = result.text
    spans = []
    for seg in segments:
        piece = _text(text[seg.start:seg.end])
        mark = any(a <= seg.start and seg.end <= b for a, b in marked)
        extra = " m" if mark else ""
        if seg.kind == "region":
            region = result.regions[seg.region]
            cls = f"r {slot_class[region.field]}{' h' if seg.held else ''}{extra}"
            note = region.name + (" (held back until the end of the stream)" if seg.held else "")
            spans.append(f'<span class="{cls}" data-r="{seg.region}" title="{_attr(note)}">{piece}</span>')
        elif seg.kind == "delimiter":
            spans.append(f'<span class="d{extra}" title="{_attr("delimiter: " + seg.label)}">{piece}</span>')
        elif seg.kind == "consumed":
            spans.append(f'<span class="d x{extra}" title="consumed (no region\'s text)">{piece}</span>')
        else:
            spans.append(f'<span class="u{extra}" title="not reached: parsing stopped at an error">{piece}</span>')
    legend = "".join(f'<li><span class="{slot_class[name]}">{_text(name)}</span></li>' for name in result.fields)
    legend += ('<li><span class="d">delimiter</span></li>'
               '<li><span class="h">held back until the end of the stream</span></li>')
    if diagnostics:
        legend += '<li><span class="m">diagnostic</span></li>'
    css = _CSS.replace("DELIM", DELIMITER_COLOUR) + "".join(
        f".{slot_class[name]}{{background:{colour[name]}}}" for name in result.fields)
    opened = [r.name for r in result.regions if r.by_prefix and not r.closed or (r.by_prefix and r.start is not None)]
    counts = f"{len(text):,} characters, {sum(1 for r in result.regions if r.start is not None)} regions"
    if not wrap:
        counts += "; long output: lines are not wrapped"
    if opened:
        counts += "; the prefix left region " + ", ".join(f"'{_text(n)}'" for n in dict.fromkeys(opened)) + " open"
    diag_html = ""
    if diagnostics:
        items = "".join(f'<li>[{d["start"]}\u2013{d["end"]}) {_text(str(d["kind"]))}: {_text(str(d["message"]))}</li>'
                        for d in diagnostics)
        diag_html = f'<section id="diagnostics"><h2>Diagnostics</h2><ol>{items}</ol></section>'
    message = ("(no message: parsing failed, see the diagnostics)" if result.message is None
               else json.dumps(result.message, ensure_ascii=False, indent=2, default=repr))
    regions = [{"field": r.field, "name": r.name, "closed": r.closed, "value": r.value,
                "start": r.start, "end": r.end} for r in result.regions]
    page_title = _text(title or "respc parse")
    body_class = "" if wrap else ' class="nowrap"'
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{page_title}</title><style>{css}</style></head><body{body_class}>"
        f"<header><h1>{page_title}</h1><p class=\"meta\">{counts}</p><ul class=\"legend\">{legend}</ul></header>"
        f"{diag_html}<main><section><h2>Output</h2><pre id=\"out\">{''.join(spans)}</pre></section>"
        "<aside><h2>Region under the pointer</h2><pre id=\"hover\">Hover a region to see its value.</pre>"
        f"<h2>Message</h2><pre id=\"message\">{_text(message)}</pre></aside></main>"
        f"<script type=\"application/json\" id=\"regions\">{_json_block(regions)}</script>"
        f"<script>{_JS}</script></body></html>\n"
    )


def html(parser_module: Any, text: str, *, prefix: Any, tools: list | None = None, template: Any = None,
         diagnostics: Sequence[dict] = (), title: str | None = None) -> str:
    """One self-contained HTML page showing how ``parser_module`` parses ``text``.

    Args:
        parser_module: a generated parser module (``respc.generated.qwen3``, ``respc.compile_template(...)``).
        text (str): the model output.
        prefix: the prompt before generation (required; ``""`` opts out).
        tools: JSON-schema tools (SPEC 7), as for ``ResponseParser``.
        template: the module's template, to name delimiters (default: from the module's ``SOURCE``).
        diagnostics: extra ``{"kind", "start", "end", "message"}`` entries (output offsets) to
            list and mark; a parse error is added by itself.
        title (str | None): the page heading (default: ``respc parse <SOURCE>``).

    Returns:
        str: the page (UTF-8 text; write it with ``encoding="utf-8"``).

    Raises:
        ValueError: ``prefix`` is None.
    """
    result = layout(parser_module, text, prefix=prefix, tools=tools, template=template)
    result.diagnostics = list(diagnostics) + result.diagnostics
    source = getattr(parser_module, "SOURCE", "") or getattr(parser_module.ResponseParser, "SOURCE", "")
    return render(result, title=title or f"respc parse {source}".strip())
