"""OpenAI-compatible streaming from any generated parser (docs/openai.md).

:class:`ChatCompletionStream` wraps a generated ``ResponseParser`` and turns its region events
(events.md "The events") into ``chat.completion.chunk`` dicts as the OpenAI Chat Completions API streams them;
:func:`sse` renders them as server-sent events, and :meth:`ChatCompletionStream.feed_sse` /
``finalize_sse`` give that text directly (built without the dicts for text chunks and argument fragments).
Standard library, ``regex`` and ``respc.runtime``.

Theory of operation
-------------------
Each region event is routed by its message key (``field``):

* ``content`` and ``reasoning_content`` regions whose content parser is ``text`` stream as they
  come. The message stores each block stripped (``str.strip``) and joined with the field's
  ``join``; the adapter applies that as the text goes: leading whitespace of a block is dropped,
  trailing whitespace is held until more text follows it (then sent) or the block closes (then
  dropped), and the ``join`` string goes out before a block's first character when the slot already
  has non-empty text (empty pieces are never joined). So the concatenated deltas of a key equal the
  message's value; nothing is ever sent that the message will not hold, but for a field that neither
  joins nor repeats written again: the message keeps the later block, the client holds both, and the
  replaced range is reported once (:meth:`ChatCompletionStream._catch_up`; docs/openai.md "Text a
  later block replaces"). A text region whose body is not stripped streams raw; any other
  processing is sent at the region's close.
* ``tool_calls`` regions: a call's first delta carries ``index``, ``id`` and ``type``; its
  ``function.name`` goes out as soon as it is known; ``function.arguments`` are JSON text fragments.
  Which bodies stream their arguments while the model writes them is decided at compile time by the
  region's content format and written into its record (``Region.plan``, docs/formats.md; :func:`_plans`):

  - JSON bodies (``json`` content parser without dialect options) that are a call object
    ``{"name": ..., "arguments"|"parameters": {...}}`` or a list of them, or that are the arguments
    object itself with the name in the open delimiter: the arguments object's text is forwarded
    as it arrives. A top-level argument that the tool schema types (template-language.md "Tool-argument typing":
    integer, number, boolean, array, object, null) is held until its value is complete, then sent typed, so a
    fragment never needs retracting ("5" does not go out before it turns out to be 5).
  - xml-inline bodies with the name in the open delimiter and one lazy ``(?P<value>.*?)`` group
    in their ``tag_pattern``: each parameter is converted to JSON text as it is written (the
    format's reader, ``runtime/formats/xml_inline.py`` ``ArgumentReader``): a string value streams character by
    character as JSON string text, holding only what may still be its closing text or whitespace
    the message strips; a value its value parser or tool type changes is held until its closing
    tag, then sent typed.
  - other xml-inline (and kv-lines) bodies with the name in the open delimiter: the body so far is
    parsed again as it grows (each time by an eighth); every parameter but the last found is sent
    typed as ``"key": value`` (``runtime/formats/base.py`` ``PerParameterReader``), the rest at the close.
  - ``pythonic`` bodies whose transform keeps the reader's calls: converted to JSON text as they
    are written, by the pythonic format's ``PythonicArgs`` (``runtime/formats/pythonic.py``; strings character by character,
    other values and schema-typed strings once complete).
  - JSON dialects, name-as-key JSON, other arguments keys, a text body as one argument, nested XML
    (MiniMax-M3): converted into the JSON above as they arrive (the converters of ``runtime/formats``: docs/formats.md "Argument readers").
  - everything else (other xml-inline/kv-lines, arguments
    given as a JSON string, a call whose arguments come before its name when tools type it, and
    every tool region with ``errors="recover"`` and ``recover_arguments="hold"``, where a body may
    still turn out malformed): the arguments are sent in one fragment when the region closes.

  At each close the adapter checks the streamed fragments against the typed value the message
  stores; a difference cannot be repaired without retracting and is recorded in
  :attr:`ChatCompletionStream.diagnostics` (the test suite asserts there are none).

* ``errors="recover"`` with ``recover_arguments="stream"``: tool regions get the strict plans.
  A region that ends with ``region_malformed`` (malformed, or truncated at the end) after a delta
  of its call left the adapter keeps the call as sent and does not send the raw text as content
  (:meth:`ChatCompletionStream._malformed_tools`, diagnostic ``"streamed-call-malformed"``);
  before that, it is handled as with ``"hold"``. Damage the JSON reader can tell from the
  characters alone is converted as the recover repair converts it (a comma is held until it is
  known not to be trailing, raw control characters in strings are escaped, Python literals
  become JSON literals); arguments that stop short of the repaired value are completed at the
  close when that needs no retraction (:meth:`ChatCompletionStream._complete`); any other
  difference is diagnostic ``"streamed-arguments-differ"``. docs/openai.md gives the trade-off.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any, Callable, Iterable

from respc.runtime.formats import FORMATS
from respc.runtime.formats import json_ as _json_format
from respc.runtime.formats.base import ARGUMENT_LABELS, ArgumentStream
from respc.runtime.formats.base import calls_of as _calls_of
from respc.runtime.formats.base import function_of as _function
from respc.runtime.formats.base import surrogates_escaped as _ascii_surrogates
from respc.runtime.formats.json_ import closers
from respc.runtime.stream import BLOCK, StreamParser
from respc.runtime.tools import coerce_tool_calls

__all__ = ["ChatCompletionStream", "ResponsesStream", "sse", "responses_sse", "openai_message", "argument_streaming"]

def after_prompt(text: str, skip: list[str]) -> str:
    """``text`` (answer content as a plug-in sends it, in order) without the part of ``skip[0]``
    that it starts with: ``skip[0]`` is the answer text the rendered prompt itself holds (a
    prefilled assistant message, docs/serving.md "The prompt") not yet met. ``skip[0]`` keeps what
    is still to meet, or becomes ``""`` at the first character that differs (the content went its
    own way: nothing more is cut). Content may come stripped, so a whitespace difference skips the
    prompt's whitespace. Used by the vLLM and SGLang plug-ins; linear in ``len(text)``."""
    rest = skip[0]
    i = j = 0
    while i < len(text) and j < len(rest):
        if text[i] == rest[j]:
            i += 1
            j += 1
        elif rest[j].isspace():
            j += 1  # whitespace the stripped content left out
        else:
            rest = ""
            break
    skip[0] = rest[j:] if rest else ""
    return text[i:]


#: a UTF-16 surrogate code point (U+D800 to U+DFFF): no UTF-8 text can hold one (see :func:`_wire`)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _wire(text: str) -> str:
    """Server-sent-event text as UTF-8 can carry it: a surrogate code point (a model's ``"\\ud800"``
    JSON escape, or Python's ``'\\ud83d\\ude00'`` in a pythonic call, gives one in a message value;
    ``json.dumps(..., ensure_ascii=False)`` writes it raw, and writing the event to the wire then
    raised ``UnicodeEncodeError``) is written as its JSON escape ``\\udXXXX``, which a JSON reader
    reads back as the same code point. Non-ASCII text only occurs inside JSON strings of the
    event, so nothing else changes; ASCII text (``str.isascii`` is constant time) is returned as
    it is (docs/security.md, "Red team s12b: server-sent events carry no surrogate")."""
    return _ascii_surrogates(text)


def sse(chunks: Iterable[dict]) -> str:
    """Render chunks as server-sent events: one ``data: {json}`` line and a blank line each (a
    surrogate code point written as its JSON escape, :func:`_wire`)."""
    return _wire("".join(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n" for chunk in chunks))


def responses_sse(events: Iterable[dict]) -> str:
    """Render Responses API stream events as server-sent events, the framing the Responses API
    uses: an ``event: <type>`` line, a ``data: {json}`` line (the text of ``json.dumps(event,
    ensure_ascii=False)``, written by the module's prebuilt encoder, :func:`_dumps`) and a blank
    line per event. The stream has no ``[DONE]`` line: it ends after ``response.completed`` (or
    ``response.incomplete``)."""
    return _wire("".join(f"event: {event['type']}\ndata: {_dumps(event)}\n\n" for event in events))


def _dumps(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``: the same text (see :data:`_ENCODE`)."""
    return "".join(_ENCODE(value, 0)) if _ENCODE is not None else json.dumps(value, ensure_ascii=False)


#: the C encoder ``json.dumps(value, ensure_ascii=False)`` builds on each call (same separators,
#: string encoder, ``default`` and ``allow_nan``), built once: the same text at a third of the cost
#: for a chunk's delta. No circular-reference check (``json.dumps`` passes a markers dict): what
#: the adapter serializes is its own chunks and values read from JSON text, which have no cycles.
#: None where the json module has no C encoder (then ``json.dumps`` itself).
try:
    _ENCODE = json.encoder.c_make_encoder(None, json.JSONEncoder().default, json.encoder.encode_basestring, None,
                                          ": ", ", ", False, False, True)
except TypeError:  # no C encoder (None), or one with another signature
    _ENCODE = None


#: the JSON string encoder ``json.dumps(..., ensure_ascii=False)`` uses for every string (the C one
#: when CPython has it), so a string encoded on its own is byte for byte what ``json.dumps`` writes
_encode_string = json.encoder.encode_basestring
_join = "".join
#: a delta no chunk carries: the JSON around it is a chunk's pre-serialized head and tail
_SENTINEL = "\x00respc-sse\x00"


def _split_json(chunk: dict) -> tuple[str, str]:
    """The server-sent-event text of ``chunk`` (whose delta is ``_SENTINEL``) split around the
    sentinel's JSON: ``("data: " + the JSON before the delta, the JSON after it + blank line)``."""
    head, tail = ("data: " + _dumps(chunk) + "\n\n").split(_dumps(_SENTINEL))
    return head, tail


#: how :func:`argument_streaming` names each ``Plan.arguments`` (docs/openai.md): the formats' table
LABELS = ARGUMENT_LABELS


def _label(plan: Any) -> str:
    """How :func:`argument_streaming` names a region's format plan (``runtime/formats/base.py``
    ``ARGUMENT_LABELS``)."""
    return LABELS[getattr(plan, "arguments", None)]


def argument_streaming(parser_class: Any) -> dict[str, str]:
    """How each tool-call region of a generated parser sends its arguments (errors="strict").

    Returns:
        dict[str, str]: region name -> ``"as written"`` (JSON arguments forwarded while the model
        writes them), ``"converted as written"`` (xml-inline parameters or pythonic calls converted
        to JSON text as they are written: string values character by character, typed values once
        complete),
        ``"per parameter"`` (each parameter sent typed once the next one began) or
        ``"at close"`` (one fragment when the region closes), in declaration order; read off each region's
        format plan (``Region.plan``, docs/formats.md).
    """
    return {region.name: _label(getattr(region, "plan", None))
            for region in parser_class.REGIONS if region.slot == "tool_calls"}


def _one_reader_plans(parser: Any, plans: dict[int, Any]) -> dict[int, tuple]:
    """The tool regions of ``parser`` whose body one scanner reads for the core and the adapter
    (``id(region)`` -> their ``("object", ...)`` / ``("args", ...)`` plan): ``end: "value"`` and
    json arguments (docs/formats.md "One reader for the end and the arguments")."""
    one = {}
    for region in getattr(parser, "REGIONS", ()):
        plan = plans.get(id(region))
        if region.slot == "tool_calls" and getattr(region, "ends", False) and isinstance(plan, ArgumentStream) \
                and plan.scan is not None:
            one[id(region)] = plan
    return one


class _CoreRead:
    """A tool region's json reader that the core runs as the region's boundary decoder
    (:meth:`ChatCompletionStream._boundary`): it read the body already, so a ``region_chunk`` of the
    region is not fed to it again (:meth:`feed` ignores its text) but passes on the pieces it gave,
    numbered from the region's first call (``base``, known once the stream reads the region's
    ``region_open`` event; :meth:`bind`)."""

    __slots__ = ("mode", "pending", "stream", "region", "base")

    def __init__(self, mode: str) -> None:
        self.mode = mode              # "object" / "args", as the reader's (read by _name_from_groups)
        self.pending: list[tuple] = []  # (kind, call number in the region, payload) not passed on yet
        self.stream: Any = None
        self.region: Any = None
        self.base = 0

    def bind(self, stream: Any, region: Any, base: int) -> None:
        """The stream read the region's opening: its calls are numbered from ``base``."""
        self.stream, self.region, self.base = stream, region, base
        self.drain()

    def feed(self, text: str) -> None:
        """A ``region_chunk`` of the region: the core read ``text`` already; pass on the pieces."""
        if self.pending:
            self.drain()

    def drain(self) -> None:
        """Pass the pieces the reader gave to the stream, in order."""
        pending = self.pending
        stream = self.stream
        if not pending or stream is None:
            return
        region, base = self.region, self.base
        for kind, n, payload in pending:
            stream._scanned(region, base + n, kind, payload)
        pending.clear()


class _Call:
    """One tool call of the stream: what was sent of it so far."""

    __slots__ = ("index", "wire", "id", "name", "fwd", "nsent", "sent_header", "sent_name", "streaming", "done",
                 "shown")

    def __init__(self, index: int) -> None:
        self.index = index      # its place in the stream's calls (the readers' call numbers)
        self.wire = index       # the index its deltas carry: calls announced before it (set by _announce)
        self.id = ""            # set when it is announced: ids(wire)
        self.name: str | None = None
        self.fwd: list[str] = []  # argument text forwarded by the scanner (pieces)
        self.nsent = 0          # how many of those pieces were sent
        self.sent_header = False
        self.sent_name = False
        self.streaming = False  # arguments are being forwarded as they arrive
        self.done = False       # the forwarded arguments object is complete
        self.shown = False      # a delta of it left the adapter (returned by feed/finalize)

    @property
    def args(self) -> str:
        """The argument text sent so far."""
        sent = "".join(self.fwd[:self.nsent])
        return sent


#: at most this many characters of the text a ``"the message replaced text already sent"`` diagnostic
#: names are kept in it (its offsets give the whole range): docs/openai.md "Text a later block replaces"
EXCERPT = 80


class _Text:
    """Streaming state of one text slot (``content`` or the reasoning key).

    What was sent is ``parts`` (what the client accumulated); the message's value is described
    without being rebuilt (a string rebuilt at every close made many blocks quadratic): ``has``
    (it is non-empty), and where it lies in the text sent, ``start`` (characters before it that
    the message no longer holds, named in diagnostics) with ``first`` (the part it begins at).
    ``mark`` and ``size``: the parts and characters sent up to the last close; the parts after
    ``mark`` are the open block's text so far (:meth:`ChatCompletionStream._catch_up`)."""

    __slots__ = ("key", "parts", "has", "mark", "size", "start", "first", "started", "pending", "join",
                 "sse_head", "sse_tail")

    def __init__(self, key: str, stored: Any) -> None:
        self.key = key          # the delta key it goes to
        self.join = ""          # the open region's join
        self.parts: list[str] = []  # everything sent for it so far (what the accumulator holds)
        self.has = False        # the message's value so far is non-empty
        self.mark = 0           # parts sent up to the last close
        self.size = 0           # characters in parts[:mark]
        self.start = 0          # characters sent before the message's value (replaced text)
        self.first = 0          # the part the message's value begins at
        self.started = False    # the open block has had a non-whitespace character
        #: trailing whitespace held back, in the pieces it came in: a run of whitespace chunks is
        #: joined once, when a character after it is sent (not copied again per chunk: linear)
        self.pending: list[str] = []
        #: the server-sent-event text of a chunk whose delta is this key alone, before and after
        #: the delta's JSON string (set by the stream)
        self.sse_head = self.sse_tail = ""
        if isinstance(stored, str) and stored:  # a default the message holds: sent with the role chunk
            self.parts.append(stored)
            self.has = True
            self.mark = 1
            self.size = len(stored)

    @property
    def sent(self) -> str:
        """The text sent so far (what the client accumulated for the key)."""
        return "".join(self.parts)

    def excerpt(self, index: int, end: int) -> str:
        """At most :data:`EXCERPT` characters of ``parts[index:end]``, from their start: the
        cost is the excerpt's, not the range's."""
        out: list[str] = []
        need = EXCERPT
        for part in self.parts[index:end]:
            out.append(part[:need])
            need -= len(out[-1])
            if need <= 0:
                break
        return "".join(out)


#: parser class and errors mode -> its plans (see :func:`_plans`); bounded, cleared when full
_PLANS: dict[tuple, dict] = {}
_PLANS_MAX = 256


def _plans(parser: Any, hold: bool = True) -> dict[int, Any]:
    """How each region of ``parser`` streams (``id(region)`` -> plan), read once per parser class and errors
    mode off each region's format plan (``Region.plan``, decided at compile time by ``runtime/formats``;
    docs/formats.md): text regions ``"strip"``/``"raw"``/``"close"`` (``Plan.text``); tool regions the
    :class:`~respc.runtime.formats.base.ArgumentStream` their format gives for their plan (``Format.stream``), or None (at close; always with ``errors="recover"`` and ``hold``,
    i.e. ``recover_arguments="hold"``, and for a region without a plan). ``errors="recover"`` with
    ``hold=False`` gets the strict plans."""
    recover = bool(getattr(parser, "_recover", False)) and hold
    key = (type(parser), recover, parser.REGIONS)
    plans = _PLANS.get(key)
    if plans is not None:
        return plans
    plans = {}
    for region in parser.REGIONS:
        plan = getattr(region, "plan", None)
        if region.slot in ("content", "reasoning_content") and not region.dirty:
            plans[id(region)] = (plan.text if plan is not None else None) or "close"
        elif region.slot == "tool_calls":
            plans[id(region)] = None if recover or plan is None else _tool_plan(region, plan)
    if len(_PLANS) >= _PLANS_MAX:
        _PLANS.clear()
    _PLANS[key] = plans
    return plans


def _tool_plan(region: Any, plan: Any) -> ArgumentStream | None:
    """How a tool region's arguments stream: its format's answer from its plan (``Format.stream``,
    ``runtime/formats/base.py`` :class:`ArgumentStream`); None: at the close."""
    record = FORMATS.get(plan.format)
    if record is None or record.stream is None:
        return None
    return record.stream(plan, getattr(region.process, "content_args", None) or {})


def _feeds_text(parser: Any) -> bool:
    """Whether ``parser`` is a generated parser whose ``feed`` and ``feed_text`` are the runtime's
    own (``StreamParser.feed_text`` then returns the commonest chunk as its text); a wrapper or a
    subclass that overrides ``feed`` is fed through ``feed``."""
    cls = type(parser)
    return (isinstance(parser, StreamParser) and cls.feed is StreamParser.feed
            and cls.feed_text is StreamParser.feed_text)


class ChatCompletionStream:
    """OpenAI ``chat.completion.chunk`` dicts from a generated parser's events (docs/openai.md "What the chunks carry").

    Args:
        parser: a generated ``ResponseParser`` (fresh; its ``initial_events`` are read too).
        model (str): the ``model`` of every chunk.
        reasoning_field (str): the delta key of the reasoning text (``"reasoning_content"`` as
            vLLM and DeepSeek send it; some clients read ``"reasoning"``).
        ids (Callable[[int], str] | None): ``ids(n)`` gives the id of the n-th tool call (from 0);
            None: ``"call_"`` + 24 random hex digits. Pass e.g. ``lambda n: f"call_{n}"`` in tests.
        include_usage (bool): send a last chunk with ``choices: []`` and ``usage`` (the numbers
            passed to :meth:`finalize`), as the API does with ``stream_options.include_usage``.
        completion_id (str | None): the chunks' ``id`` (default ``"chatcmpl-"`` + random hex).
        created (int | None): the chunks' ``created`` (default: now, in seconds).
        recover_arguments (str): with a parser made with ``errors="recover"``, how tool-call
            arguments go out (docs/openai.md, "Arguments with errors=recover"). ``"hold"`` (the
            default): every call's arguments in one fragment at its close, so a body that turns
            out malformed was never sent as a call (its raw text goes to ``content``, as the
            message has it). ``"stream"``: as with ``errors="strict"`` (as written / converted as
            written); a call already (partly) sent whose region then ends malformed or truncated
            stays in the stream as sent (nothing is retracted), its raw text is *not* also sent
            as ``content``, and a ``"streamed-call-malformed"`` diagnostic names it; a call whose
            repaired arguments differ from what its fragments parse to gets a
            ``"streamed-arguments-differ"`` diagnostic. No effect with ``errors="strict"``.

    Raises:
        ValueError: ``recover_arguments`` is not ``"hold"`` or ``"stream"``.

    Message keys: ``content`` and ``reasoning_content`` (the parser's text fields) and
    ``tool_calls``; other keys (``role`` and template-specific ones) are not streamed.
    """

    def __init__(self, parser: Any, model: str = "m", reasoning_field: str = "reasoning_content",
                 ids: Callable[[int], str] | None = None, include_usage: bool = False,
                 completion_id: str | None = None, created: int | None = None,
                 recover_arguments: str = "hold") -> None:
        if recover_arguments not in ("hold", "stream"):
            raise ValueError(f"ChatCompletionStream: recover_arguments must be 'hold' or 'stream', "
                             f"got {recover_arguments!r}")
        self.parser = parser
        self.recover_arguments = recover_arguments
        #: errors="recover" with recover_arguments="stream": calls stream before they are known good
        self._streaming_recover = bool(getattr(parser, "_recover", False)) and recover_arguments == "stream"
        self.model = model
        self.reasoning_field = reasoning_field
        self.include_usage = include_usage
        self._ids = ids or (lambda n: "call_" + uuid.uuid4().hex[:24])
        self.id = completion_id or "chatcmpl-" + uuid.uuid4().hex
        self.created = int(time.time()) if created is None else created
        #: what the adapter could not stream faithfully: text a later block replaced (in both modes:
        #: "the message replaced text already sent", docs/openai.md "Text a later block replaces");
        #: with recover_arguments="stream", the calls sent that the message lacks or holds otherwise
        #: (kinds "streamed-call-malformed", "streamed-arguments-differ")
        self.diagnostics: list[dict] = []
        #: the parser's message once finalized (transformers shape)
        self.message: dict | None = None
        defaults = parser.DEFAULTS
        self._texts = {"content": _Text("content", defaults.get("content")),
                       "reasoning_content": _Text(reasoning_field, defaults.get("reasoning_content"))}
        regions = {}
        for region in parser.REGIONS:
            regions[(region.slot, region.name if region.slot != region.name else None)] = region
        self._regions = regions
        self._plans = _plans(parser, hold=recover_arguments == "hold")
        # text slots all of whose regions strip: their plain chunks take the fast path in feed()
        self._fast = {slot: text for slot, text in self._texts.items()
                      if all(self._plans.get(id(r)) == "strip" for r in parser.REGIONS if r.slot == slot)}
        self._calls: list[_Call] = []
        #: calls announced so far: the next one's index on the wire. A call never announced (its
        #: region ended malformed before its name came) takes no index, so the client's indices
        #: run 0, 1, 2, ... without a gap (docs/openai.md)
        self._wired = 0
        #: what the formats' argument readers keep for the stream's lifetime (the host interface)
        self.cache: dict[Any, Any] = {}
        self._open: dict[int, Any] = {}   # id(region) -> (scanner or None, first call number)
        self._ticking: set[int] = set()   # id() of the open regions whose ArgumentStream ticks
        self._tool_open: int | None = None  # id() of the tool region opened last (its chunks' region)
        # one scanner per body (docs/formats.md "One reader for the end and the arguments"): the tool
        # regions with end: "value" and a json arguments plan get their json reader from the core,
        # which runs it as the region's boundary decoder (StreamParser.boundary_hook, _boundary)
        self._one = _one_reader_plans(parser, self._plans)
        self._made: dict[int, list] = {}  # id(region) -> readers the core made, not opened here yet
        if self._one and getattr(parser, "boundary_hook", _MISSING) is None:
            parser.boundary_hook = self._boundary
        self._role_sent = False
        #: the text deltas of a text slot's non-empty default (the message holds it unless a block replaces it)
        self._owed = [("text", text.key, text.parts[0]) for text in self._texts.values() if text.parts]
        # templates of a chunk and of its one choice (copied per chunk, never handed out)
        self._outer = {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                       "model": self.model, "choices": None}
        self._inner = {"index": 0, "delta": None, "logprobs": None, "finish_reason": None}
        self._done = False
        self._pending = list(parser.initial_events)
        # the fast path's text slots: filled once the role chunk was sent
        self._fast_now: dict[str, _Text] = {}
        #: [the text block a plain chunk from StreamParser.feed_text goes to, or None] (see _fast_feed)
        self._current: list = [None]
        # server-sent-event text of a chunk: the JSON of its delta between these (see _sse)
        # (written as UTF-8 can carry them, _wire: a model name or id with a surrogate code point; the map is
        # per code point, so the pieces wired one by one join to the wired whole, and the fast paths need not
        # wire the heads and tails again)
        self._sse_head, self._sse_tail = map(_wire, _split_json(self._chunk(_SENTINEL)))
        #: the server-sent-event text of a chunk whose delta is one argument fragment, around the call's
        #: index and the fragment's JSON string (:meth:`_tool_chunk`; as :meth:`_built_sse` writes it)
        self._sse_args = (self._sse_head + '{"tool_calls": [{"index": ', ', "function": {"arguments": ',
                          "}}]}" + self._sse_tail)
        self._sse_ends: dict[str, str] = {}  # finish reason -> the tail of a chunk with it
        for text in self._texts.values():
            text.sse_head = _wire(self._sse_head + "{" + _dumps(text.key) + ": ")
            text.sse_tail = "}" + self._sse_tail
        #: delta key -> the server-sent-event text of a chunk whose delta is that key alone, around the
        #: JSON string (the _Text's sse_head and sse_tail)
        self._sse_keys = {text.key: (text.sse_head, text.sse_tail) for text in self._texts.values()}
        self._as_sse = False  # _built gives server-sent-event text (while _other_sse runs)
        if self._fast and type(self).feed is ChatCompletionStream.feed:  # (not when a subclass overrides feed)
            self.feed = self._fast_feed()
            if type(self).feed_sse is ChatCompletionStream.feed_sse:
                self.feed_sse = self._fast_feed(sse=True)
        self._out: list[tuple] = []       # (kind, payload) deltas of the current call

    # --- public API --------------------------------------------------------------------------
    def feed(self, text: Any) -> list[dict]:
        """Feed the next piece of model output; return the chunks it produced (maybe none).

        (An instance's ``feed`` is the faster :meth:`_fast_feed` closure, with the same contract.)"""
        return self._general(self.parser.feed(text))

    def _general(self, events: list[dict]) -> list[dict]:
        if self._pending:
            events = self._pending + events
            self._pending = []
        return self._chunks(events)

    def _fast_feed(self, sse: bool = False) -> Callable[[Any], Any]:
        """The instance's ``feed`` (``sse=False``) or ``feed_sse`` (``sse=True``), with the contract
        of :meth:`feed` / :meth:`feed_sse`. The commonest chunk (after the role chunk, text of an
        open stripped text block that has begun, no tool region open) becomes its chunk here, with
        trailing whitespace held and held whitespace sent before the next text. It comes as the
        ``str`` that ``StreamParser.feed_text`` returns (no event built; wrappers of a parser are
        fed through ``feed`` instead) or as a list holding its one ``region_chunk`` event. As a
        dict, the chunk is built from per-stream templates (``dict.copy`` of a dict is cheaper than
        a dict display); as server-sent-event text, it is the pre-serialized text of the block's
        key around the piece encoded by the C string encoder ``json.dumps`` itself uses. The next
        commonest, one ``region_chunk`` event of an open tool region (after the role chunk), goes
        straight to its reader (:meth:`_tool_chunk`; it opens and closes no region, so ``current[0]``
        stays as it is). Everything else goes to :meth:`_other`. ``tests/test_openai.py`` checks the
        results equal the general path's on every vector and chunking.

        ``current[0]`` is the text block a ``str`` chunk goes to (None: take the events way). It
        changes only when other events arrive (a region opens or closes, a block's first text, the
        role chunk), so it is worked out after each feed that went to :meth:`_other`, in one cell
        for both closures (``feed`` and ``feed_sse`` may be mixed on one stream).

        While ``current[0]`` names a block, a chunk that ``StreamParser.feed_text`` would return as its
        text is fed by the lines of its two quickest branches, inlined (their conditions on the parser's
        state and the chunk, the append to the block's body): the call into ``feed_text`` cost each text
        chunk about a quarter of the adapter's share (measured on CPython 3.11, benchmarks/README.md
        "OpenAI deltas"). Every other chunk goes through ``feed_text``, as before. A chunk with no event
        after the role chunk (the parser holds a possible delimiter) gives nothing, as :meth:`_other`
        gives, without the way through it.

        The stream's state is bound as closure variables (cheaper than attribute lookups). The two
        cases are one closure with a flag (``sse``, read where the results differ): once the
        parser's branches were inlined, two closures repeated them, and one closure with the flag
        measured the same (least of 9 interleaved runs, seven templates: medians 1.585x and 1.574x
        the parser; an earlier measurement, before the inlining, put a flag and two more variables
        at about 3 % of the parser's per-chunk instructions)."""
        parser = self.parser
        fast = self._fast_now
        open_regions = self._open
        current = self._current
        if _feeds_text(parser):
            parser_text = parser.feed_text

            def settle(result: Any) -> Any:
                state = fast.get(parser._name)
                current[0] = state if state is not None and state.started and not open_regions else None
                return result
        else:  # a wrapper: every feed gives events, current[0] stays None
            parser_text = parser.feed

            def settle(result: Any) -> Any:
                return result

        other = self._other_sse if sse else self._other
        tool = self._tool_chunk
        outer, inner = self._outer, self._inner
        surrogate = _SURROGATE.search

        def feed(text: Any) -> Any:
            state = current[0]
            got = None
            if state is not None and parser._quiet and text.__class__ is str and not parser._dirty \
                    and parser._trigger not in text and text:
                # (StreamParser.feed_text's two quickest branches, inlined: see the docstring)
                if not parser._wide:
                    got = text
                elif parser._t2 not in text and parser._t3 not in text:
                    context = parser._context
                    if not context or len(text) >= context:
                        if context:
                            parser._last = text
                        got = text
                if got is not None:
                    body = parser._body
                    body.append(text)
                    if len(body) >= BLOCK:
                        parser._blocks.append("".join(body))
                        body.clear()
            if got is None:
                got = parser_text(text)
                if got.__class__ is str:
                    if state is None:
                        return settle(other([{"type": "region_chunk", "field": parser._name, "text": got,
                                              "dirty": False}]))
                elif len(got) == 1 and (event := got[0])["type"] == "region_chunk":
                    if open_regions:
                        if event["field"] == "tool_calls" and fast:
                            return tool(event["text"], sse)  # (the open regions stay as they were: current[0] too)
                        return settle(other(got))
                    if (state := fast.get(event["field"])) is not None and state.started:
                        got = event["text"]
                    else:
                        return settle(other(got))
                elif not got and fast:
                    # (the parser holds a possible delimiter: what _other gives, without the way through it)
                    return settle("" if sse else [])
                else:
                    return settle(other(got))
            body = got.rstrip()
            if body is not got:  # (str.rstrip returns the string itself when unchanged)
                if not body:
                    state.pending.append(got)
                    return "" if sse else []
                held, state.pending = state.pending, [got[len(body):]]
                got = "".join(held) + body if held else body
            elif state.pending:
                got = "".join(state.pending) + got
                state.pending = []
            state.parts.append(got)
            if sse:
                # (measured on CPython 3.11: an f-string of the three pieces is about a fifth cheaper than
                # str.join of a tuple, which is cheaper than "+" or "%")
                if got.isascii() or surrogate(got) is None:
                    return f"{state.sse_head}{_encode_string(got)}{state.sse_tail}"
                return _wire(f"{state.sse_head}{_encode_string(got)}{state.sse_tail}")
            choice = inner.copy()
            choice["delta"] = {state.key: got}
            chunk = outer.copy()
            chunk["choices"] = [choice]
            return [chunk]

        feed.__doc__ = (ChatCompletionStream.feed_sse if sse else ChatCompletionStream.feed).__doc__
        return feed

    def _other(self, events: list[dict]) -> list[dict]:
        """The fast ``feed``'s events that are not a plain text chunk: two more cases are taken
        here, the rest goes the general way (:meth:`_general`). After the role chunk, no event (the
        parser holds a possible delimiter) gives nothing; one
        ``region_chunk`` of an open tool region is fed to its reader without the event loop
        (:meth:`_tool_chunk`)."""
        if self._fast_now:
            if not events:
                # (the parser holds a possible delimiter; with a tool region open, its body did not grow
                # and its open delimiter was read at its region_open: nothing for a reader either)
                return []
            elif len(events) == 1 and self._open:
                event = events[0]
                if event["type"] == "region_chunk" and event["field"] == "tool_calls":
                    return self._tool_chunk(event["text"])
        return self._general(events)

    def _other_sse(self, events: list[dict]) -> str:
        """:meth:`_other` as server-sent-event text: its chunks are built as text (:meth:`_built_sse`)."""
        self._as_sse = True
        try:
            return _wire("".join(self._other(events)))
        finally:
            self._as_sse = False

    def feed_sse(self, text: Any) -> str:
        """Feed the next piece of model output; return its chunks as server-sent events, the text
        a server writes to the wire: ``data: <json>`` and a blank line per chunk (``""`` when
        there is none). Byte for byte what :func:`sse` gives for :meth:`feed`'s chunks (the JSON
        of ``json.dumps(chunk, ensure_ascii=False)``), without building the dicts of text chunks
        and argument fragments: their event text is the stream's pre-serialized text around the
        delta's string, encoded by the C encoder ``json.dumps`` uses
        (``json.encoder.encode_basestring``). Other chunks (role, a call's header and name,
        finish) are built as dicts and serialized around their delta. ``feed`` and ``feed_sse``
        may be mixed on one stream.

        (An instance's ``feed_sse`` is a :meth:`_fast_feed` closure, with the same contract; the
        class's own ``feed_sse``, used by subclasses that override it, serializes :meth:`feed`'s
        dicts.)"""
        return self._sse(self.feed(text))

    def finalize_sse(self, finish_reason: str | None = None, usage: dict | None = None,
                     done: bool = True) -> str:
        """End the stream as :meth:`finalize` does; return its chunks as server-sent events
        (as :meth:`feed_sse`), then, with ``done``, the ``data: [DONE]`` event that ends an
        OpenAI stream."""
        return self._sse(self.finalize(finish_reason, usage)) + ("data: [DONE]\n\n" if done else "")

    def _sse(self, chunks: list[dict]) -> str:
        """Server-sent-event text of ``chunks`` (exactly :func:`sse`'s): a chunk of the stream's
        own shape (one choice, from the templates) is its pre-serialized head, the JSON of its
        delta and a pre-serialized tail; any other (the usage chunk) goes through ``json.dumps``
        whole."""
        out = []
        head, tail, ends = self._sse_head, self._sse_tail, self._sse_ends
        for chunk in chunks:
            choices = chunk["choices"]
            if len(chunk) == 5 and len(choices) == 1 and len(choices[0]) == 4 and choices[0]["logprobs"] is None:
                choice = choices[0]
                reason = choice["finish_reason"]
                if reason is None:
                    out.append(head + _dumps(choice["delta"]) + tail)
                    continue
                if isinstance(reason, str):
                    end = ends.get(reason)
                    if end is None:
                        end = ends[reason] = _split_json(self._chunk(_SENTINEL, reason))[1]
                    out.append(head + _dumps(choice["delta"]) + end)
                    continue
            out.append("data: " + _dumps(chunk) + "\n\n")
        return _wire("".join(out))

    def finalize(self, finish_reason: str | None = None, usage: dict | None = None) -> list[dict]:
        """End the stream: the last deltas, then the chunk with ``finish_reason``.

        Args:
            finish_reason: ``"length"`` when the engine cut the output; None: ``"tool_calls"`` when
                the message has tool calls, else ``"stop"``.
            usage: the ``usage`` dict of the last chunk when ``include_usage`` is set.
        """
        message, events = self.parser.finalize()
        self.message = message
        if self._pending:
            events = self._pending + events
            self._pending = []
        chunks = self._chunks(events)
        self._done = True
        reason = finish_reason or ("tool_calls" if self._wired else "stop")
        chunks.append(self._chunk({}, reason))
        if self.include_usage:
            chunk = self._chunk({}, None)
            chunk["choices"] = []
            chunk["usage"] = usage or {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
            chunks.append(chunk)
        return chunks

    def openai_message(self) -> dict:
        """The final message in OpenAI shape (after :meth:`finalize`): ``content`` and the
        reasoning key as the stream sent them (None when empty), ``tool_calls`` with the stream's
        ids and ``arguments`` as the JSON string the fragments add up to."""
        if self.message is None:
            raise RuntimeError("openai_message() needs finalize() first")
        out: dict = {"role": "assistant", "content": self._texts["content"].sent or None}
        reasoning = self._texts["reasoning_content"].sent
        if reasoning:
            out[self.reasoning_field] = reasoning
        calls = [{"id": call.id, "type": "function", "function": {"name": call.name or "", "arguments": call.args}}
                 for call in self._calls if call.sent_header]  # (a call never announced was never sent)
        if calls:
            out["tool_calls"] = calls
        return out

    # --- machinery ---------------------------------------------------------------------------
    def _chunk(self, delta: dict, finish_reason: str | None = None) -> dict:
        choice = self._inner.copy()
        choice["delta"] = delta
        choice["finish_reason"] = finish_reason
        chunk = self._outer.copy()
        chunk["choices"] = [choice]
        return chunk

    def _chunks(self, events: list[dict]) -> list[dict]:
        # ("text", key, str) | ("tool", index, the call's delta dict: its header, its name) | ("args", index,
        # argument text): an argument fragment stays a string until its chunk is built (_built)
        deltas: list[tuple] = []
        if self._owed:  # (the first chunks: a default text the message holds goes out after the role)
            deltas, self._owed = self._owed, []
        self._deltas = deltas
        for event in events:
            kind = event["type"]
            slot = event["field"]
            if kind == "region_chunk":
                region = self._regions.get((slot, event.get("region")))
                if slot in self._texts and not event["dirty"]:
                    plan = self._plans.get(id(region))
                    if plan == "strip":
                        self._strip_text(self._texts[slot], event["text"])
                    elif plan == "raw":
                        self._send_text(self._texts[slot], event["text"])
                elif slot == "tool_calls":
                    # a chunk names no region (events.md "The events"): it is the body of the tool region opened last
                    state = self._open.get(self._tool_open)
                    if state is not None and state[0] is not None:
                        state[0].feed(event["text"])
            elif kind == "region_open":
                region = self._regions.get((slot, event.get("region")))
                if slot in self._texts:
                    text = self._texts[slot]
                    text.started = False
                    text.pending = []
                    text.join = (region.join if region is not None else None) or ""
                elif slot == "tool_calls":
                    self._open_tools(region)
            elif kind == "region_close":
                region = self._regions.get((slot, event.get("region")))
                if slot in self._texts:
                    self._close_text(self._texts[slot], region, event["value"])
                elif slot == "tool_calls":
                    self._close_tools(region, event["value"])
            elif kind == "region_malformed":
                into = event.get("into")
                kept = False
                if slot == "tool_calls":
                    kept = self._malformed_tools(self._regions.get((slot, event.get("region"))), event)
                if into in self._texts and not kept:
                    self._malformed_text(self._texts[into], event["text"])
        return self._emit(deltas)

    def _tool_chunk(self, text: str, sse: bool = False) -> Any:
        """What :meth:`_chunks` does with the text of one ``region_chunk`` event of a tool region, without
        its event loop (the fast path's tool case: the role chunk was sent): the reader of the tool region
        opened last is fed and ticked; returns the chunks of the deltas that gave, or with ``sse`` their
        server-sent-event text (the fast ``feed_sse``'s). There the commonest result, one argument
        fragment, is the stream's pre-serialized text around the fragment's JSON string
        (:attr:`_sse_args`, byte for byte :meth:`_built_sse`'s); any other deltas go through
        :meth:`_built_sse`."""
        deltas: list[tuple] = []
        self._deltas = deltas
        # (a chunk event names no region: it belongs to the tool region opened last, as in _chunks)
        state = self._open.get(self._tool_open)
        if state is not None and state[0] is not None:
            state[0].feed(text)
        if self._ticking:
            self._name_from_groups()
        if not deltas:  # (the role chunk was sent: no deltas, no chunks)
            return "" if sse else []
        if not sse:
            return self._built(deltas)
        if len(deltas) == 1:
            kind, key, payload = deltas[0]
            if kind == "args":  # (argument text carries no surrogate: _scanned, send_piece; nor do the heads)
                self._calls[key].shown = True
                head, mid, tail = self._sse_args
                return f"{head}{key}{mid}{_encode_string(payload)}{tail}"
        return _wire("".join(self._built_sse([], _merged(deltas) if len(deltas) > 1 else deltas)))

    def _emit(self, deltas: list[tuple]) -> list[dict]:
        """The chunks of one ``feed``'s deltas (after the events were read): the name read from
        the open delimiter, the role chunk first (once), then one chunk per run of deltas."""
        self._name_from_groups()
        return self._built(deltas)

    def _built(self, deltas: list[tuple]) -> list[Any]:
        """:meth:`_emit` after the name was read: the role chunk first (once), then one chunk per run
        of deltas of one key or one tool call (:func:`_merged`). While :meth:`_other_sse` runs
        (``_as_sse``), each chunk comes as its server-sent-event text instead (:meth:`_built_sse`)."""
        chunks = []
        if not self._role_sent:
            self._role_sent = True
            chunks.append(self._chunk({"role": "assistant"}))
            self._fast_now.update(self._fast)
        items = _merged(deltas) if len(deltas) > 1 else deltas
        if self._as_sse:
            return self._built_sse(chunks, items)
        calls = self._calls
        for kind, key, payload in items:
            if kind == "text":
                chunks.append(self._chunk({key: payload}))
            else:
                call = calls[key]
                call.shown = True
                if kind == "args":
                    payload = {"index": call.wire, "function": {"arguments": payload}}
                chunks.append(self._chunk({"tool_calls": [payload]}))
        return chunks

    def _built_sse(self, chunks: list[dict], items: list[tuple]) -> list[str]:
        """The server-sent-event text of :meth:`_built`'s chunks (``chunks``: the role chunk, when it
        goes now; ``items``: the merged deltas), byte for byte :func:`sse` of the dicts, without
        building the dicts of text and argument deltas: the stream's pre-serialized text around the
        piece encoded by the C string encoder ``json.dumps`` uses."""
        out = [self._sse(chunks)] if chunks else []
        head, tail, heads = self._sse_head, self._sse_tail, self._sse_keys
        calls = self._calls
        for kind, key, payload in items:
            if kind == "text":
                text_head, text_tail = heads[key]
                out.append(f"{text_head}{_encode_string(payload)}{text_tail}")
                continue
            call = calls[key]
            call.shown = True
            if kind == "args":
                out.append(f'{head}{{"tool_calls": [{{"index": {call.wire}, "function": {{"arguments": '
                           f'{_encode_string(payload)}}}}}]}}{tail}')
            else:
                out.append(f'{head}{{"tool_calls": [{_dumps(payload)}]}}{tail}')
        return out

    # --- text ----------------------------------------------------------------------------
    def _send_text(self, text: _Text, piece: str) -> None:
        if piece:
            text.parts.append(piece)
            self._deltas.append(("text", text.key, piece))

    def _strip_text(self, text: _Text, piece: str) -> None:
        """Send ``piece`` of a stripped block: leading whitespace dropped, trailing held."""
        if not text.started:
            piece = piece.lstrip()
            if not piece:
                return
            text.started = True
            join = text.join
            if text.has and join:  # (empty pieces are never joined: the message's rule)
                text.parts.append(join)
                self._deltas.append(("text", text.key, join))
        cut = len(piece.rstrip())
        if not cut:  # all whitespace: held with the rest (joined once, below: linear in a long run)
            text.pending.append(piece)
            return
        held, text.pending = text.pending, [piece[cut:]] if cut < len(piece) else []
        self._send_text(text, "".join(held) + piece[:cut] if held else piece[:cut])

    def _close_text(self, text: _Text, region: Any, value: Any) -> None:
        """Mirror the parser's store of one block (template-language.md "Closing a region and storing its value",
        D1; docs/events.md "Overwritten values") and send what the slot gained beyond what was already sent
        (the join of an empty block, a processed value): :meth:`_catch_up` with what the store appends to the
        value, or with the value that replaces it (a field that neither joins nor repeats, written again)."""
        text.pending = []
        text.started = False
        if value is None and region is not None and region.empty_none:
            self._catch_up(text, "", False)
            return
        if not isinstance(value, str):
            self.diagnostics.append({"field": text.key, "problem": "a text block whose value is not a string"})
            return
        join = region.join if region is not None else None
        if join is not None:
            self._catch_up(text, (join + value if text.has else value) if value else "", False)
        elif region is not None and region.repeats:
            self._catch_up(text, value, False)  # a list of strings: shown concatenated
        else:
            self._catch_up(text, value, bool(value) and text.has)

    def _catch_up(self, text: _Text, target: str, replace: bool) -> None:
        """The slot's block closed: the message appends ``target`` to its value (``replace``: its
        value becomes ``target``). Send what ``target`` holds beyond the block's text sent so far
        (``parts[mark:]``), so each close costs its block, never the whole slot.

        Text the client holds that the message does not is reported once, when it happens, as
        ``{"field", "problem": "the message replaced text already sent", "start", "end", "text"}``:
        ``start``/``end`` are offsets (characters) in the key's accumulated text, ``text`` at most
        :data:`EXCERPT` characters of that range. Two causes: a replaced value (the previous
        value's range), and a block whose text as sent does not begin what the message stores
        (its range; ``target`` is then sent whole after it, so no text of the message is ever
        missing). Removing every reported range from the accumulated text gives the message's
        value (docs/openai.md "Text a later block replaces")."""
        parts = text.parts
        mark = text.mark
        if len(parts) > mark + 1:
            parts[mark:] = ["".join(parts[mark:])]
        since = parts[mark] if len(parts) > mark else ""
        size = text.size + len(since)
        if target.startswith(since):
            rest = target[len(since):]
            if replace:
                self._replaced(text, text.start, text.size, text.first, mark)
                text.start, text.first = text.size, mark
        else:  # (no plan sends text a block's value does not begin with; kept exact should one ever)
            rest = target
            if replace:
                self._replaced(text, text.start, size, text.first, len(parts))
                text.start, text.first = size, len(parts)
            else:
                self._replaced(text, text.size, size, mark, len(parts))
        if rest:
            parts.append(rest)
            self._deltas.append(("text", text.key, rest))
        text.size = size + len(rest)
        text.mark = len(parts)
        text.has = text.has or bool(target)

    def _replaced(self, text: _Text, start: int, end: int, first: int, last: int) -> None:
        """Report the characters ``start`` to ``end`` of the key's accumulated text
        (``parts[first:last]``) as text the message does not hold (see :meth:`_catch_up`)."""
        if start < end:
            self.diagnostics.append({"field": text.key, "problem": "the message replaced text already sent",
                                     "start": start, "end": end, "text": text.excerpt(first, last)})

    def _malformed_text(self, text: _Text, raw: str) -> None:
        """A malformed region's raw text goes to the implicit field (docs/events.md): the message
        appends it (after the join when the value is not empty)."""
        region = next((r for r in self.parser.REGIONS if r.slot == text.key and not r.dirty), None)
        join = (region.join if region is not None else None) or ""
        self._catch_up(text, join + raw if text.has else raw, False)

    # --- tool calls ------------------------------------------------------------------------
    def _call(self, n: int) -> _Call:
        while len(self._calls) <= n:
            self._calls.append(_Call(len(self._calls)))
        return self._calls[n]

    def _boundary(self, region: Any, match: Any) -> Any:
        """The core's ``boundary_hook`` (``runtime/stream.py``): the boundary decoder of a region
        with ``end: "value"`` that opens. For a tool region whose arguments stream as json it is
        the json argument reader itself (``runtime/formats/json_.py`` ``ReaderBoundary``), so the
        body is read once; the pieces it gives wait in a :class:`_CoreRead` until this stream reads
        the region's ``region_open`` event, which numbers its calls (:meth:`_open_tools`). Any
        other region gets ``region.boundary()``."""
        fallback = region.boundary()
        plan = self._one.get(id(region))
        if plan is None or type(fallback) is not _json_format.JsonBoundary or fallback._delims:
            return fallback
        mode, extra = plan.scan
        read = _CoreRead(mode)
        pending = read.pending
        if mode == "args":
            try:
                name = match.group(extra) if match is not None and extra is not None else None
            except (IndexError, AttributeError):
                name = None
            name = name if isinstance(name, str) and name else None

            def named() -> str | None:
                return name
        else:
            def named() -> str | None:
                return reader.name

        def out(kind: str, n: int, payload: str) -> None:
            pending.append((kind, n, payload))

        # (these run inside the core's feed: a failure stops the reader, the arguments then go at the close,
        # and never changes where the core ends the region)
        def held(n: int, key: str) -> bool | None:
            try:
                return self._held(named(), key)
            except Exception:  # noqa: BLE001
                return None

        def typed(n: int, key: str, raw: str) -> str | None:
            try:
                return self._typed(named(), key, raw)
            except Exception:  # noqa: BLE001
                return None

        reader = plan.reader(out, held, typed)
        self._made.setdefault(id(region), []).append(read)
        return _json_format.ReaderBoundary(reader, fallback)

    def _open_tools(self, region: Any) -> None:
        self._tool_open = id(region)
        plan = self._plans.get(id(region))
        base = len(self._calls)
        made = self._made.get(id(region))
        if made:  # the core reads this body with the json reader it was handed (_boundary)
            read = made.pop(0)
            read.bind(self, region, base)
            self._open[id(region)] = (read, base, region)
            if plan.ticks:
                self._ticking.add(id(region))
            return
        self._open[id(region)] = (None if plan is None else plan.open(self, region, base), base, region)
        if plan is not None and plan.ticks:
            self._ticking.add(id(region))

    # --- the host interface of the formats' argument readers (runtime/formats/base.py ArgumentStream) ---
    # (call, scanned, send_name, send_args, held and typed are the methods below under their own names,
    # bound as class attributes after them: no extra call per piece)
    def ncalls(self) -> int:
        """How many calls the stream has."""
        return len(self._calls)

    def send_piece(self, call: "_Call", piece: str) -> None:
        """Forward argument text of ``call`` (sent once its name is)."""
        call.streaming = True
        call.fwd.append(piece if piece.isascii() else _ascii_surrogates(piece))
        self._send_args(call)

    def coerce(self, name: str | None, key: str, value: Any, region: Any) -> Any:
        """Argument ``key`` of tool ``name`` as the message holds it (the tool schema's typing, when tools
        were given and the region is ``typed``)."""
        tools = getattr(self.parser, "_tools", None)
        if tools and getattr(region, "typed", True):
            call = {"function": {"name": name, "arguments": {key: value}}}
            coerce_tool_calls(call, tools)
            value = call["function"]["arguments"][key]
        return value

    def _held(self, name: str | None, key: str | None) -> bool | None:
        """True when the tool schema may change the argument ``key`` of tool ``name`` (held);
        None when tools were given but the name is not known yet."""
        tools = getattr(self.parser, "_tools", None)
        if not tools:
            return False
        if name is None:
            return None
        table = tools.get(name)
        # a string parameter is never changed by typing (runtime.tools._convert): it streams
        return bool(table) and key in table and table[key] != ("string",)

    def _typed(self, name: str, key: str, raw: str) -> str | None:
        from respc.runtime.tools import coerce_tool_calls

        try:
            value = json.loads(raw)
        except ValueError:
            return None
        call = {"function": {"name": name, "arguments": {key: value}}}
        coerce_tool_calls(call, self.parser._tools)
        return _dumps(call["function"]["arguments"][key])

    def _scanned(self, region: Any, n: int, kind: str, payload: str) -> None:
        """What the scanner of an open tool region found: a call, its name, argument text."""
        calls = self._calls
        call = calls[n] if n < len(calls) else self._call(n)
        if kind == "args":  # (the commonest first)
            call.streaming = True
            if not payload.isascii():
                payload = _ascii_surrogates(payload)  # (argument text carries no surrogate: docs/openai.md)
            fwd = call.fwd
            fwd.append(payload)
            if call.sent_name:
                if call.nsent == len(fwd) - 1:  # (all before it went out: this piece alone, as _send_args sends it)
                    call.nsent += 1
                    if payload:
                        self._deltas.append(("args", call.index, payload))
                else:
                    self._send_args(call)
        elif kind == "call":
            pass  # announced with its name (:meth:`_send_name`)
        elif kind == "name":
            call.name = payload
            self._send_name(call)
        elif kind == "start":
            call.streaming = True
        elif kind == "end":
            call.done = True

    # the host interface's names (runtime/formats/base.py ArgumentStream)
    scanned = _scanned
    held = _held
    typed = _typed

    def _announce(self, call: _Call) -> None:
        """The call's first delta (``index``, ``id``, ``type``) with its name, as one delta dict: a call
        never goes out before its name is known (a client or server that builds the call from its first
        delta needs the name there; OpenAI sends both together)."""
        call.sent_name = True
        if not call.sent_header:
            call.sent_header = True
            call.wire = self._wired
            call.id = self._ids(call.wire)
            self._wired += 1
            self._deltas.append(("tool", call.index, {"index": call.wire, "id": call.id, "type": "function",
                                                       "function": {"name": call.name}}))
        else:
            self._deltas.append(("tool", call.index, {"index": call.wire, "function": {"name": call.name}}))

    def _send_name(self, call: _Call) -> None:
        if not call.sent_name and call.name:
            self._announce(call)
            if call.fwd:
                self._send_args(call)

    def _send_args(self, call: _Call) -> None:
        """Send the forwarded argument text not sent yet (``final`` collects it)."""
        fwd = call.fwd
        nsent = call.nsent
        # (one new piece, the common case, needs no join)
        rest = fwd[-1] if nsent == len(fwd) - 1 else "".join(fwd[nsent:])
        call.nsent = len(fwd)
        if rest:
            self._deltas.append(("args", call.index, rest))

    call = _call
    send_name = _send_name
    send_args = _send_args

    def _name_from_groups(self) -> None:
        """For bodies that are the arguments, the name is a group of the open delimiter: read it
        from the parser's current match while that region is still open."""
        if not self._ticking:  # (no open region's reader needs a tick: the commonest case)
            return
        parser = self.parser
        try:  # (cheaper than getattr with a default when the attribute is there: the generated parser's case)
            region = parser._region
        except AttributeError:
            return
        state = self._open.get(id(region))
        if state is None or (reader := state[0]) is None:
            return
        try:
            if not parser._opened:
                return
        except AttributeError:
            return
        plan = self._plans.get(id(region))
        if plan is not None:
            plan.tick(reader, self, state[1], region)

    def _malformed_tools(self, region: Any, event: dict) -> bool:
        """A tool region ended with ``region_malformed`` (errors="recover"). Returns True when
        its calls stay in the stream: ``recover_arguments="stream"`` and a delta of one of them
        was already returned; each is then named in a ``"streamed-call-malformed"`` diagnostic
        and the raw text is not sent as text. Otherwise the region's calls and their deltas not
        returned yet are forgotten (as ``"hold"``: the raw text goes where the message has it)."""
        state = self._open.pop(id(region), None)
        self._ticking.discard(id(region))
        if state is not None and isinstance(state[0], _CoreRead):
            state[0].drain()
        base = state[1] if state is not None else len(self._calls)
        calls = self._calls[base:]
        if not calls:
            return False
        if not any(call.shown for call in calls):
            self._deltas[:] = [d for d in self._deltas if d[0] == "text" or d[1] < base]
            self._wired -= sum(call.sent_header for call in calls)  # (their indices were never sent)
            del self._calls[base:]
            return False
        cause = next((d["kind"] for d in reversed(self.parser.diagnostics)
                      if d.get("kind") in ("truncated", "malformed") and d.get("start") == event.get("start")),
                     "malformed")
        for call in calls:
            if not call.sent_header:
                # never announced (its name never came): it was never in the stream, so it is not
                # kept; its forwarded arguments would go out as a call with no id and no name
                continue
            self._send_args(call)  # (fragments forwarded but not sent yet: the call is kept as written)
            self.diagnostics.append({"kind": "streamed-call-malformed", "field": "tool_calls", "index": call.wire,
                                     "cause": cause, "text": event["text"], "error": event.get("error"),
                                     "start": event.get("start"), "end": event.get("end"),
                                     "into": event.get("into"), "sent": call.args})
        return True

    def _complete(self, call: _Call, arguments: Any) -> bool:
        """errors="recover", ``"stream"``: a call whose forwarded arguments stopped short of the
        repaired value (a missing closing bracket, a trailing comma held back, a reader that
        stopped at damage). Send the rest when one exists without retracting: the brackets and
        string still open in what was sent, or the rest of the value's ``json.dumps`` text when
        what was sent is its beginning. Returns True when the fragments now parse to
        ``arguments``."""
        sent = call.args
        rest = closers(sent)
        if rest is None or not _same_json(sent + rest, arguments):
            whole = _ascii_surrogates(_dumps(arguments))
            if not whole.startswith(sent):
                return False
            rest = whole[len(sent):]
        call.fwd.append(_ascii_surrogates(rest))
        call.done = True
        self._send_args(call)
        return True

    def _close_tools(self, region: Any, value: Any) -> None:
        """A tool region closed with its typed value: finish each of its calls, checking what
        was streamed against the value the message stores."""
        scanner, base, _ = self._open.pop(id(region), (None, len(self._calls), region))
        self._ticking.discard(id(region))
        if isinstance(scanner, _CoreRead):
            scanner.drain()
        calls = _calls_of(value)
        plan = self._plans.get(id(region))
        if scanner is not None and plan is not None:
            plan.close(scanner, self, base, calls)
        # (a tool region that does not repeat, closed again, never replaces the calls sent: the
        # parser appends them in errors="recover" and raises in "strict", docs/events.md
        # "Overwritten values"; so base + k is each call's index in the message)
        for k, call_value in enumerate(calls):
            function = _function(call_value)
            name = function.get("name")
            arguments = function.get("arguments")
            call = self._call(base + k)
            if call.name is None or not call.sent_name:
                call.name = name if isinstance(name, str) else ""
                if call.name and not call.sent_name:
                    self._announce(call)
                if not call.sent_name:
                    continue  # a call without a name is not sent (docs/openai.md, "tool_calls")
            elif call.name != name:
                self.diagnostics.append({"field": "tool_calls", "problem": "a name sent differs from the message",
                                         "sent": call.name, "message": name})
            if call.nsent:
                if not (call.done and _same_json(call.args, arguments)) and not (
                        self._streaming_recover and not call.done and self._complete(call, arguments)):
                    self.diagnostics.append({"kind": "streamed-arguments-differ", "field": "tool_calls",
                                             "index": call.wire, "problem": "streamed arguments differ from the message",
                                             "sent": call.args, "message": arguments})
            else:
                text = _ascii_surrogates(arguments if isinstance(arguments, str)
                                         else _dumps(arguments if arguments is not None else {}))
                call.fwd = [text]
                call.nsent = 1
                self._deltas.append(("args", call.index, text))
        if len(self._calls) > base + len(calls):
            self.diagnostics.append({"field": "tool_calls", "problem": "the stream announced calls the message lacks"})


_MISSING = object()


def _same_json(text: str, value: Any) -> bool:
    """``text`` is JSON text of ``value``: a surrogate pair written as two escapes (argument text
    carries no surrogate, :func:`~respc.runtime.formats.base.surrogates_escaped`) reads back as
    the character the pair forms, so it is compared with ``value`` written the same way."""
    try:
        read = json.loads(text)
    except ValueError:
        return False
    if read == value:
        return True
    if "\\ud" not in text and "\\uD" not in text:
        return False
    try:
        return read == json.loads(_ascii_surrogates(_dumps(value)))
    except (ValueError, TypeError):
        return False


def _merged(deltas: list[tuple]) -> list[tuple]:
    """Adjacent deltas of one text key, or of one tool call, as one delta: text and argument
    fragments are concatenated (an argument fragment after the call's header or name joins their
    dict)."""
    out: list[tuple] = []
    for item in deltas:
        if out and out[-1][0] != "text" and item[0] != "text" and out[-1][1] == item[1]:
            last = out[-1]
            if item[0] == "args":
                if last[0] == "args":
                    out[-1] = ("args", item[1], last[2] + item[2])
                else:
                    function = last[2].get("function", {})
                    out[-1] = ("tool", item[1], {**last[2], "function": {
                        **function, "arguments": function.get("arguments", "") + item[2]}})
                continue
            merged = _merge_call(last[2] if last[0] == "tool" else
                                 {"index": item[2]["index"], "function": {"arguments": last[2]}}, item[2])
            if merged is not None:
                out[-1] = ("tool", item[1], merged)
                continue
        elif out and out[-1][0] == "text" and item[0] == "text" and out[-1][1] == item[1]:
            out[-1] = ("text", item[1], out[-1][2] + item[2])
            continue
        out.append(item)
    return out


def _merge_call(a: dict, b: dict) -> dict | None:
    """One tool-call delta for two consecutive ones of the same call (None when they cannot be
    one: a name after arguments keeps its own delta so the order stays)."""
    fa, fb = a.get("function", {}), b.get("function", {})
    if "id" in b:
        return None
    if "name" in fb and ("name" in fa or "arguments" in fa):
        return None
    function = dict(fa)
    for key, value in fb.items():
        function[key] = function.get(key, "") + value
    return {**a, "function": function}


def openai_message(message: dict, ids: Callable[[int], str] | None = None,
                   reasoning_field: str = "reasoning_content") -> dict:
    """A transformers-shaped message (``arguments`` dicts) in OpenAI shape (JSON strings, ids).

    For a message that was streamed use :meth:`ChatCompletionStream.openai_message`, whose ids and
    argument strings are the stream's.
    """
    make_id = ids or (lambda n: "call_" + uuid.uuid4().hex[:24])
    out: dict = {"role": message.get("role", "assistant"), "content": message.get("content") or None}
    if message.get("reasoning_content"):
        out[reasoning_field] = message["reasoning_content"]
    calls = []
    for n, call in enumerate(message.get("tool_calls") or []):
        function = _function(call)
        arguments = function.get("arguments")
        calls.append({"id": make_id(n), "type": "function",
                      "function": {"name": function.get("name") or "",
                                   "arguments": _ascii_surrogates(
                                       arguments if isinstance(arguments, str)
                                       else "{}" if arguments is None else _dumps(arguments))}})
    if calls:
        out["tool_calls"] = calls
    return out


def _responses_tool(tool: Any) -> Any:
    """One request tool in the Responses API's shape: ``{"type": "function", "name", "description",
    "parameters", "strict"}`` from a Chat Completions tool (``{"type": "function", "function": {...}}``);
    a tool already in that shape, or of another type, is kept as it is."""
    if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
        function = tool["function"]
        return {"type": "function", "name": function.get("name"), "description": function.get("description"),
                "parameters": function.get("parameters"), "strict": function.get("strict")}
    return tool


class ResponsesStream:
    """OpenAI Responses API stream events from a generated parser (docs/openai.md "Responses API events"), built on
    :class:`ChatCompletionStream` (same text, ids and argument fragments, same guarantees).

    Output items follow the deltas: a run of reasoning text is a ``reasoning`` item with one
    ``reasoning_text`` part (``response.reasoning_text.delta`` / ``.done``), a run of answer text a
    ``message`` item with one ``output_text`` part (``response.output_text.delta`` / ``.done``),
    each tool call a ``function_call`` item (added once its name is known;
    ``response.function_call_arguments.delta`` / ``.done``). An item is done when the next kind of
    delta begins, or at the end. ``feed``/``finalize`` return lists of event dicts with
    ``sequence_number``; the first is ``response.created``, the last ``response.completed`` (or
    ``response.incomplete`` when ``finalize`` is told ``"length"``) with the whole output.

    Args:
        parser, model, ids, recover_arguments: as for :class:`ChatCompletionStream` (its
            diagnostics are ``stream.chat.diagnostics``).
        response_id (str | None), created_at (int | None): default random ``resp_...`` / now.
        tools (list | None): the request's tools, OpenAI Chat Completions style
            (``{"type": "function", "function": {...}}``) or already in the Responses shape; the
            response object's ``tools`` lists them as Responses ``function`` tools (default: none).

    Raises:
        ValueError: ``recover_arguments`` is not ``"hold"`` or ``"stream"``.
    """

    def __init__(self, parser: Any, model: str = "m", ids: Callable[[int], str] | None = None,
                 response_id: str | None = None, created_at: int | None = None,
                 recover_arguments: str = "hold", tools: list | None = None) -> None:
        self.chat = ChatCompletionStream(parser, model=model, reasoning_field="reasoning_content", ids=ids,
                                         completion_id="x", created=0, recover_arguments=recover_arguments)
        self.id = response_id or "resp_" + uuid.uuid4().hex
        self.created_at = int(time.time()) if created_at is None else created_at
        self.model = model
        self.tools = [_responses_tool(tool) for tool in tools or ()]
        self._seq = 0
        self._output: list[dict] = []   # finished and open items, in order
        self._item: dict | None = None  # the open item
        self._kind: Any = None          # "reasoning" | "message" | ("call", index)
        self._calls: dict[int, dict] = {}
        self._waiting: dict[int, list] = {}  # tool index -> argument text before its name was known
        self._started = False

    def _response(self, status: str, output: list) -> dict:
        return {"id": self.id, "object": "response", "created_at": self.created_at, "status": status,
                "model": self.model, "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
                "tools": self.tools, "error": None, "incomplete_details": None, "instructions": None, "metadata": {},
                "temperature": None, "top_p": None}

    def _event(self, out: list, kind: str, **fields: Any) -> None:
        out.append({"type": kind, "sequence_number": self._seq, **fields})
        self._seq += 1

    def feed(self, text: Any) -> list[dict]:
        """Feed model output; return the Responses stream events it produced."""
        return self._events(self.chat.feed(text))

    def feed_sse(self, text: Any) -> str:
        """:meth:`feed`, as the server-sent-event text a server writes (:func:`responses_sse`;
        ``""`` when there is no event)."""
        return responses_sse(self.feed(text))

    def finalize_sse(self, finish_reason: str | None = None) -> str:
        """:meth:`finalize`, as server-sent-event text (:func:`responses_sse`): the last event is
        ``response.completed`` (or ``response.incomplete``)."""
        return responses_sse(self.finalize(finish_reason))

    def finalize(self, finish_reason: str | None = None) -> list[dict]:
        """End the stream: finish the open item and send ``response.completed``
        (``response.incomplete`` for ``finish_reason="length"``)."""
        out = self._events(self.chat.finalize(finish_reason))
        self._close_item(out)
        if finish_reason == "length":
            response = self._response("incomplete", self._output)
            response["incomplete_details"] = {"reason": "max_output_tokens"}
            self._event(out, "response.incomplete", response=response)
        else:
            self._event(out, "response.completed", response=self._response("completed", self._output))
        return out

    @property
    def message(self) -> dict | None:
        """The parser's message (transformers shape) once finalized."""
        return self.chat.message

    def _events(self, chunks: list[dict]) -> list[dict]:
        out: list[dict] = []
        if not self._started:
            self._started = True
            self._event(out, "response.created", response=self._response("in_progress", []))
            self._event(out, "response.in_progress", response=self._response("in_progress", []))
        for chunk in chunks:
            for choice in chunk["choices"]:
                delta = choice["delta"]
                if delta.get("reasoning_content"):
                    self._text(out, "reasoning", delta["reasoning_content"])
                if delta.get("content"):
                    self._text(out, "message", delta["content"])
                for call in delta.get("tool_calls") or ():
                    self._tool(out, call)
        return out

    def _text(self, out: list, kind: str, piece: str) -> None:
        if self._kind != kind:
            self._close_item(out)
            index = len(self._output)
            if kind == "reasoning":
                item = {"type": "reasoning", "id": f"rs_{self.id}_{index}", "summary": [], "content": [],
                        "status": "in_progress"}
                part = {"type": "reasoning_text", "text": ""}
            else:
                item = {"type": "message", "id": f"msg_{self.id}_{index}", "status": "in_progress",
                        "role": "assistant", "content": []}
                part = {"type": "output_text", "text": "", "annotations": []}
            self._open_item(out, kind, item)
            self._event(out, "response.content_part.added", item_id=item["id"], output_index=index,
                        content_index=0, part=dict(part))
            item["content"].append(part)
        item = self._item
        item["content"][0]["text"] += piece
        name = "response.reasoning_text.delta" if kind == "reasoning" else "response.output_text.delta"
        extra = {} if kind == "reasoning" else {"logprobs": []}
        self._event(out, name, item_id=item["id"], output_index=len(self._output) - 1, content_index=0,
                    delta=piece, **extra)

    def _open_item(self, out: list, kind: Any, item: dict) -> None:
        self._output.append(item)
        self._item = item
        self._kind = kind
        self._event(out, "response.output_item.added", output_index=len(self._output) - 1,
                    item=json.loads(json.dumps(item)))

    def _tool(self, out: list, call: dict) -> None:
        index = call["index"]
        function = call.get("function") or {}
        state = self._calls.setdefault(index, {"id": call.get("id"), "name": None})
        if call.get("id"):
            state["id"] = call["id"]
        if "name" in function:
            state["name"] = function["name"]
        arguments = function.get("arguments") or ""
        if self._kind != ("call", index):
            if state["name"] is None:
                if arguments:
                    self._waiting.setdefault(index, []).append(arguments)
                return
            self._close_item(out)
            item = {"type": "function_call", "id": f"fc_{state['id']}", "call_id": state["id"],
                    "name": state["name"], "arguments": "", "status": "in_progress"}
            self._open_item(out, ("call", index), item)
            arguments = "".join(self._waiting.pop(index, ())) + arguments
        if arguments:
            self._item["arguments"] += arguments
            self._event(out, "response.function_call_arguments.delta", item_id=self._item["id"],
                        output_index=len(self._output) - 1, delta=arguments)

    def _close_item(self, out: list) -> None:
        item = self._item
        if item is None:
            return
        index = len(self._output) - 1
        if item["type"] == "function_call":
            self._event(out, "response.function_call_arguments.done", item_id=item["id"], output_index=index,
                        name=item["name"], arguments=item["arguments"])
        else:
            part = item["content"][0]
            if item["type"] == "reasoning":
                self._event(out, "response.reasoning_text.done", item_id=item["id"], output_index=index,
                            content_index=0, text=part["text"])
            else:
                self._event(out, "response.output_text.done", item_id=item["id"], output_index=index,
                            content_index=0, text=part["text"], logprobs=[])
            self._event(out, "response.content_part.done", item_id=item["id"], output_index=index,
                        content_index=0, part=dict(part))
        item["status"] = "completed"
        self._event(out, "response.output_item.done", output_index=index, item=json.loads(json.dumps(item)))
        self._item = None
        self._kind = None
