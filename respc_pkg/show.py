"""A parse as a page: ``respc parse TEMPLATE FILE ... --html OUT.html`` and :func:`html`.

The page shows the raw output with each region's text in its field's colour, consumed delimiters
greyed, text the parser held back until the end of the stream underlined, diagnostics listed with
their offsets (only when there are some), and the parsed message beside it; hovering a region shows
its value. It is one self-contained file: inline CSS and JS, no network, no external assets.

Offsets. :func:`layout` runs the parser itself, in a subclass that records the response offset
of every piece of text at the three places the runtime routes, discards or consumes text
(``_route``, ``_begin``, ``_close``; see :func:`_traced`): region text, text the parser discards (a
region whose v2 slot is null, or the null sink of a template without an implicit field), and each
opener and closer with the transition that consumed it (``open``, ``open nest``, ``open defer``,
``close``). Nothing is searched again, so v2 constructs place themselves: a region that ends at
its value (what the parser then consumes before routing again is its optional trailing close,
``close after``), an opener given back to the enclosing region (it is that region's text), calls
nested in a section. With ``errors="recover"`` the parser's diagnostics carry offsets: text inside
a ``region_malformed`` span is marked malformed (text held as a possible delimiter when the
stream ended is region text: docs/events.md).

Size. One ``<span>`` per run of one region (not per character), values kept in one JSON block
parsed on the first hover, one event listener: a 1 MB output renders without freezing a browser.
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Segment:
    """A run of output characters ``text[start:end]`` with one role.

    Attributes:
        start (int), end (int): offsets in the output (the prefix not counted).
        kind (str): ``"region"`` (a region's text), ``"delimiter"`` (a delimiter the parser
            consumed), ``"discarded"`` (text of a region whose slot is null, or of the null sink:
            consumed, in no event), ``"consumed"``
            (consumed but explained by nothing: never for the catalogue), ``"unparsed"`` (after
            a strict error, not reached).
        region (int | None): index into :attr:`Layout.regions` for ``"region"``.
        held (bool): routed only by ``finalize()``: the parser held it back until the end of the
            stream (a possible partial delimiter, or a D2 match that later input could change).
        label (str): for a delimiter, which one and how it was taken (``"close reasoning_content"``,
            ``"open nest tool_calls"``, ``"close after tool_calls"``); for discarded text, the
            region whose text it was (``"outside"``: the null sink).
        malformed (bool): inside the span of a ``region_malformed`` event (``errors="recover"``).
    """

    start: int
    end: int
    kind: str
    region: int | None = None
    held: bool = False
    label: str = ""
    malformed: bool = False


@dataclass
class Region:
    """One region instance: from its ``region_open`` (or first chunk) to its ``region_close``.

    Attributes:
        field (str): the event's ``field`` (the message key, a slot in v2 templates).
        name (str): the event's ``region`` when present, else ``field``.
        value (Any): the ``region_close`` value (None while not closed).
        closed (bool): a ``region_close`` was seen.
        by_prefix (bool): opened while the parser read the prefix.
        malformed (bool): it ended with ``region_malformed`` (``errors="recover"``).
        start (int | None), end (int | None): output offsets of its first and past its last
            character (None when it has no text in the output).
    """

    field: str
    name: str
    value: Any = None
    closed: bool = False
    by_prefix: bool = False
    malformed: bool = False
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
        diagnostics (list[dict]): ``{"kind", "start", "end", "message"}`` with output offsets:
            the parser's own (``parser.diagnostics``), then a strict parse error.
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
                action = watch.action if watch.action and watch.action != watch.kind else ""
                label = " ".join(filter(None, (watch.kind, action, fields[watch.field].name)))
                out.setdefault((label, watch.delimiter.pattern), regex.compile(watch.delimiter.pattern, regex.DOTALL))
        return [(label, pattern) for (label, _), pattern in out.items()]
    return None


# --- the parser's own positions ----------------------------------------------------------------

#: names of the runtime's transition actions (runtime.stream OPEN, NEST, ...), as edges are labelled
_ACTION_NAMES = {0: "open", 1: "open nest", 2: "close", 3: "close after", 4: "open defer"}
_TRACED: dict = {}


def _traced(parser_class: Any) -> Any:
    """A subclass of ``parser_class`` that records where the parser put each piece of text.

    Every piece of text the runtime (``runtime/stream.py``) routes, discards or consumes as a
    delimiter passes through ``StreamParser._route`` (region text; text of the null sink or of a
    region whose slot is null, which it discards), ``_begin`` (an opener) or ``_close`` (a closer),
    where ``_here()`` is the response offset of the current position. The subclass wraps the three
    and records ``[kind, start, end, detail, final]`` in ``self._show_trace`` (offsets in the
    response; the prefix tail lies before 0):

    * ``"text"``: routed region text; detail is its ``region_chunk`` event;
    * ``"discarded"``: detail is the region's name (``"outside"`` for the null sink);
    * ``"delimiter"``: detail is its label (``"open nest tool_calls"``, ``"close content"``);
    * ``"value-end"`` (zero width): a v2 region ended at its value; what the parser consumes right
      after it without routing is that region's optional trailing close (the *after* state).

    The one chunk the quick paths of ``feed`` emit without ``_route`` starts where everything fed
    before it ended (they run only with nothing held), so ``feed`` records it from ``_here()``.
    """
    traced = _TRACED.get(parser_class)
    if traced is not None:
        return traced

    class Traced(parser_class):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._show_trace: list = []
            self._show_final = False
            super().__init__(*args, **kwargs)

        def feed(self, text: Any) -> list:
            before = self._here() if self._quiet else None
            count = len(self._show_trace)
            events = super().feed(text)
            if before is not None and len(self._show_trace) == count:
                for event in events:
                    if event.get("type") == "region_chunk":
                        self._show_trace.append(["text", before, before + len(event["text"]), event, False])
                        before += len(event["text"])
            return events

        def finalize(self) -> Any:
            self._show_final = True
            return super().finalize()

        def _route(self, events: list, text: str) -> None:
            at = self._here()
            discarded = self._name is None
            name = self._region.name if self._region is not None else "outside"
            super()._route(events, text)
            if text:
                self._show_trace.append(["discarded" if discarded else "text", at, at + len(text),
                                         name if discarded else events[-1], self._show_final])

        def _begin(self, events: list, action: int, field: int, target: int, match: Any, opener: str) -> None:
            at = self._here()
            label = f"{_ACTION_NAMES.get(action, 'open')} {self.REGIONS[field].name}"
            super()._begin(events, action, field, target, match, opener)
            self._show_trace.append(["delimiter", at, at + len(opener), label, self._show_final])

        def _close(self, events: list, close_match: Any, closer: str = "", eos: bool = False) -> int:
            at = self._here()
            region = self._region
            if closer:
                self._show_trace.append(["delimiter", at, at + len(closer), f"close {region.name}",
                                         self._show_final])
            end = super()._close(events, close_match, closer, eos)
            if not closer and not eos and region is not None and getattr(region, "ends", False):
                self._show_trace.append(["value-end", end, end, region.name, self._show_final])
            return end

    Traced.__name__ = Traced.__qualname__ = parser_class.__name__
    _TRACED[parser_class] = Traced
    return Traced


def _events(parser_class: Any, text: str, prefix: Any, tools: Any, errors: str) -> tuple:
    """Feed ``text`` to a traced parser; return ``(tagged events, trace, message, error, reached, diagnostics)``.

    ``tagged`` holds ``(event, source)`` with source ``"prefix"``, ``"feed"`` or ``"final"``;
    ``trace`` is the parser's record (:func:`_traced`). ``reached``: output characters fed when an
    error arose (``len(text)`` without error). The text is fed in pieces of :data:`PIECE`; when a
    piece fails it is fed again, on a fresh parser, one character at a time, so the error is placed
    at the character that raised it.
    """
    traced = _traced(parser_class)

    def run(slow_from: int) -> tuple:
        kwargs = {} if errors == "strict" else {"errors": errors}
        parser = traced(prefix, tools, **kwargs)
        tagged = [(event, "prefix") for event in parser.initial_events]
        pos = 0
        piece = ""
        try:
            while pos < len(text):
                size = PIECE if pos < slow_from else 1
                piece = text[pos:min(pos + size, max(slow_from, pos + 1))]
                events = parser.feed(piece)
                tagged.extend((event, "feed") for event in events)
                pos += len(piece)
            message, final = parser.finalize()
        except (ValueError, KeyError, TypeError) as exc:
            reached = min(len(text), pos + len(piece)) if pos < len(text) else len(text)
            return tagged, parser._show_trace, None, exc, pos, reached, list(parser.diagnostics)
        tagged.extend((event, "final") for event in final)
        return tagged, parser._show_trace, message, None, len(text), len(text), list(parser.diagnostics)

    result = run(len(text))
    if result[3] is not None and result[5] - result[4] > 1:
        again = run(result[4])
        if again[3] is not None:
            result = again
    tagged, trace, message, error, _, reached, diagnostics = result
    return tagged, trace, message, error, reached, diagnostics


def layout(parser_module: Any, text: str, *, prefix: Any, tools: list | None = None,
           template: Any = None, errors: str = "strict") -> Layout:
    """Parse ``text`` and say which region every character went to.

    Args:
        parser_module: a generated parser module (``respc.generated.qwen3``, or what
            ``respc.compile_template`` returns); its ``ResponseParser`` is used.
        text (str): the model output.
        prefix: the prompt before generation (required; ``""`` opts out), as for ``ResponseParser``.
        tools: JSON-schema tools, as for ``ResponseParser``.
        template: the module's template (dict, path, catalogue name); used only to name a gap the
            parser's record does not explain (never in the catalogue), by default found from the
            module's ``SOURCE``.
        errors (str): ``"strict"`` (a body that cannot be parsed stops the parse) or ``"recover"``
            (the parser's ``region_malformed`` events and diagnostics, with their offsets).

    Returns:
        Layout: segments covering ``text`` once, the regions with their values, the message, the
        events and the diagnostics (the parser's own, with response offsets). A strict parse error
        does not raise: it becomes a diagnostic of kind ``"error"`` spanning the open region up to
        the character that raised it, and the text after that character is ``"unparsed"``.

    Raises:
        ValueError: ``prefix`` is None (the parser's own message), or an unknown ``errors``.
        AssertionError: the parser's record places a character twice or not at all (a bug of the
            runtime or of this module, never an input problem).
    """
    parser_class = parser_module.ResponseParser
    if prefix is None:
        parser_class(prefix, tools)  # raises the parser's own PREFIX_REQUIRED error
    if errors not in ("strict", "recover"):
        raise ValueError(f"errors must be 'strict' or 'recover', got {errors!r}")
    tagged, trace, message, error, reached, parser_diagnostics = _events(parser_class, text, prefix, tools, errors)

    names = list(getattr(parser_module, "FIELD_NAMES", ()) or getattr(parser_class, "FIELD_NAMES", ()))
    names = list(dict.fromkeys(getattr(r, "slot", r.name) for r in getattr(parser_class, "REGIONS", ())
                               if getattr(r, "slot", r.name) is not None)) or names
    regions: list[Region] = []
    current: dict[tuple[str, str], int] = {}
    region_of: dict[int, int] = {}  # id(region_chunk event) -> region index
    malformed: list[tuple[int, int]] = []
    for event, source in tagged:
        kind = event.get("type")
        key = (event.get("field"), event.get("region", event.get("field")))
        if key[0] is not None and key[0] not in names:
            names.append(key[0])
        if kind == "region_open":
            current[key] = len(regions)
            regions.append(Region(key[0], key[1], by_prefix=source == "prefix"))
        elif kind == "region_chunk":
            if key not in current:
                current[key] = len(regions)
                regions.append(Region(key[0], key[1], by_prefix=source == "prefix"))
            region_of[id(event)] = current[key]
        elif kind == "region_close":
            index = current.pop(key, None)
            if index is None:
                index = len(regions)
                regions.append(Region(key[0], key[1], by_prefix=source == "prefix"))
            regions[index].value = event.get("value")
            regions[index].closed = True
        elif kind == "region_malformed":
            index = current.pop(key, None)
            if index is not None:
                regions[index].malformed = True
            malformed.append((event.get("start", 0), event.get("end", 0)))

    # The parser's record, in offset order (a stable sort keeps a value end before what follows it).
    records = sorted(trace, key=lambda r: (r[1], r[2]))
    diagnostics = [{"kind": d.get("kind"), "start": d.get("start", 0), "end": d.get("end", 0),
                    "message": d.get("message", ""), **({"field": d["field"]} if d.get("field") else {})}
                   for d in parser_diagnostics]
    delimiters = None  # the template's, looked up only for a gap the record does not explain
    raw: list[Segment] = []
    cursor = 0
    after: str | None = None  # the region whose value ended at the cursor

    def gap(lo: int, hi: int) -> None:
        """Explain output[lo:hi], which the parser consumed without routing it."""
        nonlocal delimiters, after
        if hi <= lo:
            return
        if after is not None:
            raw.append(Segment(lo, hi, "delimiter", label=f"close after {after}"))
            after = None
            return
        if delimiters is None:
            delimiters = _delimiters(parser_module, template) or []
        for d_start, d_end, label in _tail(text, lo, hi, delimiters):
            raw.append(Segment(d_start, d_end, "delimiter", label=label))
            lo = d_end
        if lo < hi:
            raw.append(Segment(lo, hi, "consumed"))

    limit = reached
    for kind, start, end, detail, final in records:
        start, end = max(start, 0), min(end, limit)
        if kind == "value-end":
            if start >= cursor:
                gap(cursor, start)
                cursor = max(cursor, start)
                after = detail
            continue
        if end <= start:
            continue
        if start < cursor:
            raise AssertionError(f"layout of {len(text)} characters: text at {start} placed twice "
                                 f"(already up to {cursor})")
        gap(cursor, start)
        after = None
        if kind == "text":
            raw.append(Segment(start, end, "region", region_of[id(detail)], final))
        elif kind == "discarded":
            raw.append(Segment(start, end, "discarded", held=final, label=detail))
        else:
            raw.append(Segment(start, end, "delimiter", held=final, label=detail))
        cursor = end
    if cursor < limit:
        gap(cursor, limit)
        cursor = limit
    if limit < len(text):
        raw.append(Segment(limit, len(text), "unparsed"))

    segments: list[Segment] = []
    for seg in raw:
        bad = any(a <= seg.start and seg.end <= b for a, b in malformed)
        last = segments[-1] if segments else None
        if (last is not None and seg.kind in ("region", "discarded") and last.end == seg.start
                and (last.kind, last.region, last.held, last.label, last.malformed)
                == (seg.kind, seg.region, seg.held, seg.label, bad)):
            segments[-1] = Segment(last.start, seg.end, seg.kind, seg.region, seg.held, seg.label, bad)
        else:  # one segment per run of one region: a 1 MB output stays a few hundred spans
            segments.append(Segment(seg.start, seg.end, seg.kind, seg.region, seg.held, seg.label, bad))
        if seg.region is not None:
            region = regions[seg.region]
            region.start = seg.start if region.start is None else region.start
            region.end = seg.end
    at = 0
    for seg in segments:  # never silently lost (or doubled) text
        if seg.start != at:
            raise AssertionError(f"layout of {len(text)} characters: segment at {seg.start}, expected {at}")
        at = seg.end
    if at != len(text):
        raise AssertionError(f"layout of {len(text)} characters ends at {at}")
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
.k{color:#777;font-style:italic;background:repeating-linear-gradient(135deg,#eee 0 3px,#dcdcdc 3px 6px)}
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
            out.append(Segment(start, cuts[j], seg.kind, seg.region, seg.held, seg.label, seg.malformed))
            start = cuts[j]
            j += 1
        out.append(Segment(start, seg.end, seg.kind, seg.region, seg.held, seg.label, seg.malformed))
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
        mark = seg.malformed or any(a <= seg.start and seg.end <= b for a, b in marked)
        extra = " m" if mark else ""
        if seg.kind == "region":
            region = result.regions[seg.region]
            cls = f"r {slot_class[region.field]}{' h' if seg.held else ''}{extra}"
            note = region.name + (" (held back until the end of the stream)" if seg.held else "")
            spans.append(f'<span class="{cls}" data-r="{seg.region}" title="{_attr(note)}">{piece}</span>')
        elif seg.kind == "delimiter":
            spans.append(f'<span class="d{extra}" title="{_attr("delimiter: " + seg.label)}">{piece}</span>')
        elif seg.kind == "discarded":
            note = ("discarded: outside regions (no implicit field)" if seg.label == "outside"
                    else f"discarded: text of region {seg.label} (its slot is null)")
            spans.append(f'<span class="d k{extra}" title="{_attr(note)}">{piece}</span>')
        elif seg.kind == "consumed":
            spans.append(f'<span class="d x{extra}" title="consumed (no region\'s text)">{piece}</span>')
        else:
            spans.append(f'<span class="u{extra}" title="not reached: parsing stopped at an error">{piece}</span>')
    legend = "".join(f'<li><span class="{slot_class[name]}">{_text(name)}</span></li>' for name in result.fields)
    legend += '<li><span class="d">delimiter</span></li>'
    if any(seg.kind == "discarded" for seg in segments):
        legend += '<li><span class="d k">discarded (slot null)</span></li>'
    legend += '<li><span class="h">held back until the end of the stream</span></li>'

    if diagnostics or any(seg.malformed for seg in segments):
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
         diagnostics: Sequence[dict] = (), title: str | None = None, errors: str = "strict") -> str:
    """One self-contained HTML page showing how ``parser_module`` parses ``text``.

    Args:
        parser_module: a generated parser module (``respc.generated.qwen3``, ``respc.compile_template(...)``).
        text (str): the model output.
        prefix: the prompt before generation (required; ``""`` opts out).
        tools: JSON-schema tools (template-language.md "Tool-argument typing"), as for ``ResponseParser``.
        template: the module's template, to name delimiters (default: from the module's ``SOURCE``).
        diagnostics: extra ``{"kind", "start", "end", "message"}`` entries (output offsets) to
            list and mark; a parse error is added by itself.
        title (str | None): the page heading (default: ``respc parse <SOURCE>``).
        errors (str): ``"strict"`` or ``"recover"`` (see :func:`layout`).

    Returns:
        str: the page (UTF-8 text; write it with ``encoding="utf-8"``).

    Raises:
        ValueError: ``prefix`` is None.
    """
    result = layout(parser_module, text, prefix=prefix, tools=tools, template=template, errors=errors)
    result.diagnostics = list(diagnostics) + result.diagnostics
    source = getattr(parser_module, "SOURCE", "") or getattr(parser_module.ResponseParser, "SOURCE", "")
    return render(result, title=title or f"respc parse {source}".strip())
