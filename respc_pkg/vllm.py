"""vLLM plug-in: a reasoning parser and a tool parser backed by a generated respc module
(docs/serving.md "vLLM (`respc.vllm`)").

vLLM (0.33) parses model output with one unified ``Parser`` per request (``vllm/parser/``). Out-of-tree
plug-ins still plug in as the two legacy classes it composes (``ParserManager.get_parser`` wraps them
in a ``DelegatingParser``): a ``ReasoningParser`` (``--reasoning-parser``, registered with
``ReasoningParserManager``) and a ``ToolParser`` (``--tool-call-parser``, ``ToolParserManager``),
loaded from a file given to ``--tool-parser-plugin`` / ``--reasoning-parser-plugin``. vLLM's own
unified hook for declarative parsers (``ResponseTemplateToolParser``) needs ``response_template``
metadata in the tokenizer config, so this plug-in uses the two legacy classes::

    import respc.vllm
    respc.vllm.register("qwen3")       # registers "respc-qwen3" with both managers

    vllm serve Qwen/Qwen3-8B --enable-auto-tool-choice --tool-parser-plugin respc.vllm_plugin \\
        --tool-call-parser respc-qwen3 --reasoning-parser-plugin respc.vllm_plugin --reasoning-parser respc-qwen3

(vLLM imports a plug-in given by module name, or by file path; ``respc.vllm_plugin`` registers every
catalogue template, or those named in ``RESPC_VLLM_TEMPLATES``, comma-separated.)

How the work is split (vLLM's calling conventions):

- The reasoning parser runs the generated parser from the rendered prompt (``set_prompt_token_ids`` /
  ``adjust_initial_state_from_prompt``; the tokenizer decodes the ids with special tokens kept), so
  the template's start anchor and a prompt that opens (or closes) the reasoning decide where the
  output starts. It streams ``reasoning`` deltas until the reasoning phase ends -- the reasoning
  region closes, or another field begins (not whitespace before ``<think>``) -- and then hands the
  raw output text after that point on as ``content`` (a one-character-at-a-time replay with the
  parser's ledger finds the offset). vLLM gives that text to the tool parser, or passes it through
  as content when there is no tool parsing.
- The tool parser runs a second generated parser (``prefix=""``: the text starts after the
  reasoning; the rendered prompt, asked of the request's respc reasoning parser, when no reasoning
  precedes the text, e.g. functionary v3.2's prompt ending in ``>>>``) wrapped in
  :class:`respc.openai.ChatCompletionStream`, so content, later reasoning blocks (after the
  template's ``join`` text) and tool calls stream exactly as the OpenAI adapter sends them: tool-call
  deltas with ``index``, ``id``, ``type``, ``function.name`` and ``function.arguments`` fragments,
  typed by the request's tool schemas. ``finish_streaming`` (vLLM calls it on the last delta)
  finalizes the parser.
- When the reasoning phase ended inside the output, the tool parser reads on from there instead:
  its parser reads the prompt and the output before the end of the phase first
  (:meth:`RespcReasoningParser.handover`; the reasoning already returned is not sent again), so a
  tool call written inside the reasoning is read, and typed by the request's tools, as respc reads
  the whole output. When only the end of the stream decides that the phase ended earlier, the
  reasoning parser's ``finish_streaming`` hands the rest to the tool parser (``take_over``).
- Beside another tool parser (``--tool-call-parser hermes``) the text after the reasoning phase is
  that parser's; when only the end of the stream decides where the phase ended, the reasoning
  parser's ``finish_streaming`` gives it what vLLM's whole-output path gives (:func:`_foreign_rest`),
  so streamed equals whole.
- Both parse with ``errors="recover"``: model output never raises.
- ``tool_choice="none"`` and requests without tools (vLLM then sets ``tool_choice="none"``): the tool
  parser passes its text through as content unparsed, as vLLM does without tool parsing; the
  reasoning is what precedes the end of the reasoning phase, streamed and whole alike (the tool
  parser finds the request it is built for, :func:`_construction_request`).
- ``adjust_request`` sets ``skip_special_tokens=False`` when a delimiter of the template is a special
  token of the tokenizer (other than its EOS token); otherwise the detokenizer would drop it. The tool
  parser does this only when the request has tools.
- Multi-token deltas: a delta is fed whole, any number of tokens; the parsers hold back a partial
  delimiter at the end of a delta until the next one decides it.
- A tool call's deltas wait until its name is known, and one ``DeltaMessage`` carries its pieces in
  the order reasoning, content, tool calls (:class:`_DeltaOut`): vLLM's Responses stream needs both.
- ``skip_special_tokens``: a token is special when the tokenizer's added-token table flags it (what
  vLLM's detokenizer drops), listed in ``all_special_tokens`` or not (:func:`special_delimiters`).

Known limits (docs/serving.md): with ``recover_arguments = "stream"`` (the default is "hold") arguments stream as written,
so a call already sent whose body then turns out malformed stays as sent (a diagnostic names it);
a tool call written inside the reasoning is read in its context only when the reasoning parser is
respc's for the same template (:meth:`RespcReasoningParser.handover`); without tool parsing a reasoning block after the answer or
after a first block stays in the content vLLM passes through; ``is_reasoning_end_streaming`` on an
instance that is not streaming (vLLM's structured-output gate) decodes and scans all ids of the step.
"""

from __future__ import annotations

import bisect
import functools
import importlib
import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from respc.openai import ChatCompletionStream, after_prompt as _after_prompt

INSTALL = "pip install --no-deps vllm==0.33.0 && pip install 'respc[vllm]' (from a checkout: pip install -e '.[test,vllm]')"

try:
    from vllm.entrypoints.generate.base.protocol import (
        DeltaFunctionCall,
        DeltaMessage,
        DeltaToolCall,
        ExtractedToolCallInformation,
        FunctionCall,
        ToolCall,
    )
    from vllm.reasoning import ReasoningParser, ReasoningParserManager
    from vllm.tool_parsers import ToolParser, ToolParserManager
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(f"respc.vllm needs vLLM's parser modules ({exc}); install them with: {INSTALL}") from exc

__all__ = ["register", "reasoning_parser_class", "tool_parser_class", "RespcReasoningParser", "RespcToolParser",
           "INSTALL"]

REASONING = "reasoning_content"


def _module(name: str) -> Any:
    try:
        return importlib.import_module(f"respc.generated.{name}")
    except ModuleNotFoundError as exc:
        raise ValueError(f"respc.vllm: no catalogue template named {name!r} (respc.generated.{name})") from exc


def _decode(tokenizer: Any, ids: Sequence[int]) -> str:
    """The text of ``ids`` with special tokens kept (the template's delimiters may be special)."""
    try:
        return tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)
    except TypeError:
        return tokenizer.decode(list(ids), skip_special_tokens=False)


def _template_strings(name: str) -> list[str]:
    from importlib import resources

    path = resources.files("respc.templates") / f"{name}.json"
    if not path.is_file():
        return []
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads(path.read_text(encoding="utf-8")).get("fields", {}))
    return out


def _special_tokens(tokenizer: Any) -> set[str]:
    """Every token the detokenizer drops with ``skip_special_tokens``: the added tokens flagged
    special (``tokenizer.json``'s ``added_tokens`` with ``"special": true``, read through
    ``added_tokens_decoder``), listed in the special-token attributes or not, and
    ``all_special_tokens``."""
    specials = set(getattr(tokenizer, "all_special_tokens", None) or ())
    try:
        decoder = tokenizer.added_tokens_decoder
    except Exception:  # noqa: BLE001 - a tokenizer without the table (vLLM's Mistral tokenizer)
        decoder = None
    for token in (decoder or {}).values():
        content = getattr(token, "content", None)
        if isinstance(content, str) and getattr(token, "special", False):
            specials.add(content)
    return specials


def special_delimiters(name: str, tokenizer: Any) -> list[str]:
    """Special tokens of ``tokenizer`` (its EOS token excepted) that occur in the delimiters of
    catalogue template ``name`` (literally, or escaped in a delimiter pattern), sorted. Non-empty: the
    output must be decoded with ``skip_special_tokens=False`` for the parser to see them.

    A token is special when the tokenizer's added-token table flags it so (``added_tokens_decoder``
    entries with ``special`` true, which is what vLLM's detokenizer drops: a Llama-3-style tokenizer
    flags ``<|python_tag|>`` special without listing it in ``all_special_tokens``) or when
    ``all_special_tokens`` lists it (docs/serving.md, "skip_special_tokens").

    Args:
        name: a catalogue template (``respc/templates/<name>.json``).
        tokenizer: a Hugging Face tokenizer, or anything with ``added_tokens_decoder`` (id ->
            object with ``content`` and ``special``) and/or ``all_special_tokens`` (a list of str),
            and optionally ``eos_token``.
    """
    specials = _special_tokens(tokenizer)
    specials.discard(getattr(tokenizer, "eos_token", None))
    strings = _template_strings(name)
    # a delimiter may be written in a regular expression (``open_pattern``), escaped: \\[TOOL_CALLS\\]
    return sorted(token for token in specials
                  if token and any(token in s or re.escape(token) in s for s in strings))


def _keep_special_tokens(name: str, tokenizer: Any, request: Any) -> Any:
    # None is vLLM's default, which means True
    if getattr(request, "skip_special_tokens", None) is not False and special_delimiters(name, tokenizer):
        request.skip_special_tokens = False
    return request


class _Recorder:
    """A generated parser seen through a proxy that keeps the events it returns, so a
    ChatCompletionStream and the boundary search read the same run."""

    def __init__(self, parser: Any) -> None:
        self._parser = parser
        self.events: list[dict] = list(parser.initial_events)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._parser, name)

    def feed(self, text: str) -> list[dict]:
        events = self._parser.feed(text)
        self.events.extend(events)
        return events

    def finalize(self) -> tuple[dict, list[dict]]:
        message, events = self._parser.finalize()
        self.events.extend(events)
        return message, events


def _replay_boundary(module: Any, prefix: str, raw: str) -> int:
    """The response offset in ``raw`` where the reasoning phase ends (0 when there was none).

    ``raw`` is fed again one character at a time to a parser with a ledger, so each step adds few
    ledger entries: a step whose events are all reasoning events (its opener, text) extends the
    reasoning to its last entry; the step that ends the phase adds the reasoning's closer, if any,
    and the opener of what follows. The reasoning closed and another explicit region opened with one
    delimiter only: that delimiter is the other region's opener (the reasoning had no closer).
    """
    parser = module.ResponseParser(prefix, errors="recover", ledger=True)
    ledger = parser.ledger
    implicit = module.ResponseParser.REGIONS[parser.OUTSIDE_FIELD].slot if parser.OUTSIDE_FIELD is not None else None
    at = 0
    seen = 0  # ledger entries up to the last step that had events (a delimiter may be entered
    # a step before the event that it opens, e.g. a container region with no events of its own)
    steps = [(ch, False) for ch in raw] + [("", True)]
    for ch, last in steps:
        events = parser.finalize()[1] if last else parser.feed(ch)
        if not events or all(_neutral(e) for e in events):
            # nothing yet, or only whitespace of the answer: its entries (and a delimiter entered
            # with them, e.g. the opener of a container region with no events of its own) belong
            # to the step that decides what they start
            continue
        new = ledger[seen:]
        seen = len(ledger)
        if all(e["field"] == REASONING or _neutral(e) for e in events) and not any(
                e["field"] == REASONING and e["type"] in ("region_close", "region_malformed") for e in events):
            at = max(at, new[-1][1]) if new else at
            continue
        return max(_ending_step(events, new, implicit, at), 0)
    return max(at, 0)


def _ending_step(events: list[dict], entries: list[tuple], implicit: Any, at: int) -> int:
    """The boundary within the step that ends the reasoning phase: its events and ledger entries
    are walked together (one ``text`` entry per ``region_chunk``, one ``delimiter`` per explicit
    opener, the reasoning's closer when there are more delimiters before the next text than
    explicit openers need)."""
    i = 0
    for k, event in enumerate(events):
        kind, field = event["type"], event["field"]
        if field != REASONING and not _neutral(event):
            return entries[i][0] if i < len(entries) else at
        if field != REASONING and kind != "region_chunk":
            continue  # the implicit answer opens and closes without delimiters
        if kind == "region_chunk":
            while i < len(entries) and entries[i][2] != "text":
                i += 1
            if i < len(entries):
                at = entries[i][1]
                i += 1
        elif kind == "region_open":
            if i < len(entries) and entries[i][2] == "delimiter":
                at = entries[i][1]
                i += 1
        else:  # the reasoning closes
            rest = events[k + 1:]
            until = next((n for n, e in enumerate(rest) if e["type"] == "region_chunk"), len(rest))
            opens = sum(1 for e in rest[:until] if e["type"] == "region_open" and e["field"] != implicit)
            j = i
            while j < len(entries) and entries[j][2] != "text":
                j += 1
            delimiters = sum(1 for entry in entries[i:j] if entry[2] == "delimiter")
            if delimiters > opens and entries[i][2] == "delimiter":
                at = entries[i][1]
            return at
    return at


class _ReasoningRun:
    """The generated parser from the prompt on, until the reasoning phase ends.

    ``feed`` returns ``(reasoning text, content text or None)``: the reasoning deltas as the OpenAI
    adapter strips them, and once the phase has ended the raw output text after it.
    """

    def __init__(self, module: Any, prefix: str, ids: Callable[[int], str] | None = None) -> None:
        parser = module.ResponseParser(prefix, errors="recover")
        self.module = module
        self.prefix = prefix
        self.prompt_events = len(parser.initial_events)
        self.recorder = _Recorder(parser)
        self.stream = ChatCompletionStream(self.recorder, ids=ids)
        self.raw: list[str] = []
        self.sent = ""  # the reasoning returned so far
        self.fed = 0
        self.delta_start = 0
        self.ended = False
        self.boundary: int | None = None
        self.ended = self._check()

    def _check(self) -> bool:
        """Whether the events so far end the reasoning phase (see :func:`_events_end_phase`)."""
        return _events_end_phase(self.recorder.events, self.prompt_events)

    def feed(self, text: str, whole: bool = False) -> tuple[str, str | None]:
        """``whole``: ``text`` is the whole output (vLLM's ``parse``), whose reasoning is all
        returned here (the tool parser's ``extract_tool_calls`` returns none)."""
        self.raw.append(text)
        chunks = self.stream.feed(text)
        everything = "".join(c["choices"][0]["delta"].get(REASONING, "") for c in chunks if c["choices"])
        if not self.ended and self._check():
            self.ended = True
            raw = "".join(self.raw)
            self.boundary = _replay_boundary(self.module, self.prefix, raw)
            self.delta_start = self.fed
            self.fed += len(text)
            reasoning = everything if whole else self._until_boundary(raw, chunks)
            self.sent += reasoning
            # from the boundary: text of earlier deltas may have been held, never sent
            return reasoning, raw[self.boundary:]
        self.fed += len(text)
        self.sent += everything
        return everything, None

    def _until_boundary(self, raw: str, chunks: list[dict]) -> str:
        """The reasoning of the delta that ended the phase, up to the boundary only: a later
        reasoning block in the same delta (Magistral's content then ``[THINK]``, gpt-oss's second
        analysis block, which the stream may send in the same chunk as the first) is in the text
        handed on, which the tool parser reads and sends. The output up to the boundary is read
        once more (once per request)."""
        probe = ChatCompletionStream(self.module.ResponseParser(self.prefix, errors="recover"))
        upto = "".join(c["choices"][0]["delta"].get(REASONING, "")
                       for c in probe.feed(raw[:self.boundary]) + probe.finalize() if c["choices"])
        return upto[len(self.sent):] if upto.startswith(self.sent) else _reasoning_before_other(chunks)

    def finalize(self) -> list[dict]:
        """The last chunks (the output ended before the reasoning phase did, as far as the parser
        could tell while text was held); ``ended`` and ``boundary`` are set from the final events."""
        chunks = self.stream.finalize()
        if not self.ended and self._check():
            self.ended = True
            self.boundary = _replay_boundary(self.module, self.prefix, "".join(self.raw))
        return chunks


def _reasoning_before_other(chunks: list[dict]) -> str:
    """The reasoning deltas of ``chunks`` before the first chunk whose delta carries anything else."""
    end = next((n for n, c in enumerate(chunks) if c["choices"] and set(c["choices"][0]["delta"]) - {REASONING, "role"}),
               len(chunks))
    return "".join(c["choices"][0]["delta"].get(REASONING, "") for c in chunks[:end] if c["choices"])


@functools.lru_cache(maxsize=None)
def _reasoning_join(name: str) -> str:
    """The text the template joins two reasoning blocks with (its reasoning field's ``join``)."""
    from importlib import resources

    path = resources.files("respc.templates") / f"{name}.json"
    if not path.is_file():
        return ""
    spec = json.loads(path.read_text(encoding="utf-8")).get("fields", {}).get(REASONING) or {}
    return spec.get("join", "") if spec.get("repeats") else ""


class _ReasoningCounter:
    """How many output tokens fall in the reasoning, for vLLM's ``usage`` (``count_reasoning_tokens``).

    The output ids are decoded a token at a time against the ids before them (so a tokenizer that
    drops a leading space at the start of a sequence, or a character split over byte tokens, gives
    each token its own text, and a token that ends inside a character is grouped with the next);
    the decoded text is fed to a generated parser made with ``offsets=True`` from the prompt; a
    token counts when its text overlaps a ``region_chunk`` of the reasoning field (the text between
    the reasoning's delimiters, whitespace included, delimiters excluded, as vLLM's own start/end
    token counters count). Incremental: a call with the ids of the last call and more feeds only
    the new ids (vLLM's continuous usage calls it with the growing output each step).
    """

    CONTEXT = 4  # ids before a token that its text is decoded against

    def __init__(self, module: Any, prefix: str, tokenizer: Any) -> None:
        self.parser = module.ResponseParser(prefix, errors="recover", offsets=True)
        self.tokenizer = tokenizer
        self.ids: list[int] = []      # ids seen
        self.starts: list[int] = []   # per id: start of its text in the output
        self.ends: list[int] = []     # per id: end of its text
        self.pending: list[int] = []  # ids whose text is not complete yet (a split character)
        self.length = 0               # characters decoded so far
        self.counted = -1             # index of the last id counted
        self.count = 0

    def extends(self, token_ids: Sequence[int]) -> bool:
        """Whether ``token_ids`` are the ids counted so far and maybe more (then :meth:`update`
        can go on from here)."""
        return len(token_ids) >= len(self.ids) and list(token_ids[:len(self.ids)]) == self.ids

    def update(self, token_ids: Sequence[int]) -> int:
        """The count for the output ``token_ids`` (int >= 0), which must extend the ids counted so
        far (:meth:`extends`)."""
        new = list(token_ids[len(self.ids):])
        pieces = []
        for token in new:
            self.ids.append(token)
            self.pending.append(token)
            before = self.ids[max(0, len(self.ids) - len(self.pending) - self.CONTEXT):len(self.ids) - len(self.pending)]
            head = _decode(self.tokenizer, before) if before else ""
            text = _decode(self.tokenizer, before + self.pending)
            piece = text[len(head):] if text.startswith(head) else text
            if piece.endswith("\ufffd") and len(self.pending) < 4:
                continue  # a character split over byte tokens: wait for the rest
            start = self.length
            self.length += len(piece)
            for _ in self.pending:
                self.starts.append(start)
                self.ends.append(self.length)
            self.pending = []
            pieces.append(piece)
        if pieces:
            self._spans(self.parser.feed("".join(pieces)))
        return self.count

    def _spans(self, events: list[dict]) -> None:
        for event in events:
            if event["type"] != "region_chunk" or event["field"] != REASONING or event["end"] <= event["start"]:
                continue
            first = max(bisect.bisect_right(self.ends, event["start"]), self.counted + 1)
            last = bisect.bisect_left(self.starts, event["end"]) - 1
            if last >= first:
                self.count += last - first + 1
                self.counted = last


def _phase_over(module: Any, text: str) -> bool:
    """Whether the reasoning phase is over at the end of ``text`` (a prompt, or a prompt and output):
    the text after the template's start anchor (all of it when there is none) is parsed and the
    reasoning region has closed or another field has begun."""
    cls = module.ResponseParser
    last = None
    for match in cls.START_ANCHOR.finditer(text):
        last = match.end()
    rest = text if last is None else text[last:]
    return _events_end_phase(cls("", errors="recover").feed(rest))


def _token_texts(tokenizer: Any, ids: Sequence[int]) -> list[str]:
    """The text each of ``ids`` adds to the output, decoded against at most
    ``_ReasoningCounter.CONTEXT`` ids before it (linear in ``len(ids)``); ids that end inside a
    character add "" and the id that completes it the character (as :class:`_ReasoningCounter`)."""
    texts: list[str] = []
    pending: list[int] = []
    ids = list(ids)
    for n, token in enumerate(ids):
        pending.append(token)
        before = ids[max(0, n + 1 - len(pending) - _ReasoningCounter.CONTEXT):n + 1 - len(pending)]
        head = _decode(tokenizer, before) if before else ""
        text = _decode(tokenizer, before + pending)
        piece = text[len(head):] if text.startswith(head) else text
        if piece.endswith("\ufffd") and len(pending) < 4 and n + 1 < len(ids):
            texts.append("")  # a character split over byte tokens: its text goes with the last
            continue
        texts.append(piece)
        pending = []
    return texts


def _phase_end_head(module: Any, prefix: str, texts: Sequence[str]) -> int | None:
    """The smallest ``k`` such that the reasoning phase is over (:func:`_phase_over`) at the end of
    ``prefix`` and the first ``k`` texts of ``texts`` (the output's tokens), or None.

    One pass: the start anchors are found once, in the prompt and in the whole text (an anchor
    that ends in a literal, every catalogue anchor but two, matches a head exactly where it matches
    the whole text and ends within the head, so this is :func:`_phase_over`'s rule); a parser reads
    from the last anchor that ends within the head, fed token by token, and starts again when a
    later anchor comes to lie within the head; whether its events end the phase is kept as they come
    (:func:`_events_end_phase`, incrementally). Each character is parsed at most once.

    An anchor pinned to the start of the text (``\\A``: trinity's and plamo3's, "the prompt up to a
    trailing reasoning opener") is matched in the prompt only, as the generated parser reads its
    prompt: matched against the prompt and a head, it would take the head too and leave nothing to
    read, so the phase would never end and no content id would be returned."""
    cls = module.ResponseParser
    full = prefix + "".join(texts)
    anchor_re = cls.START_ANCHOR
    ends = [match.end() for match in anchor_re.finditer(prefix)]
    if not re.match(r"(?:\(\?[a-zA-Z]+\))?\\A", anchor_re.pattern):
        ends += [match.end() for match in anchor_re.finditer(full) if match.end() > len(prefix)]
    anchor = -1
    start = None
    parser = None
    over = False
    fed = 0
    pos = len(prefix)
    for k in range(len(texts) + 1):
        if k:
            pos += len(texts[k - 1])
        while anchor + 1 < len(ends) and ends[anchor + 1] <= pos:
            anchor += 1
        at = ends[anchor] if anchor >= 0 else 0
        if at != start:
            parser, start, fed, over = cls("", errors="recover"), at, at, False
        if pos > fed:
            for event in parser.feed(full[fed:pos]):
                if event["field"] == REASONING and event["type"] == "region_open":
                    over = False
                elif not _neutral(event) and (event["field"] != REASONING
                                              or event["type"] in ("region_close", "region_malformed")):
                    over = True
            fed = pos
        if over:
            return k
    return None


def _neutral(event: dict) -> bool:
    """Whitespace of the answer before the reasoning opens (GLM-4.5 writes ``\n<think>``): a
    ``content`` event that does not end the reasoning phase."""
    if event["field"] != "content":
        return False
    if event["type"] == "region_chunk":
        return not event["text"].strip()
    if event["type"] == "region_close":
        return not event.get("value")
    return event["type"] == "region_open"


def _events_end_phase(events: list[dict], prompt: int | None = None) -> bool:
    """Whether ``events`` leave the reasoning phase over: after the last reasoning ``region_open``
    (a prompt may hold whitespace or an earlier block before it) the reasoning region closed or an
    event of another field came; with no reasoning open, any event of another field. ``prompt``:
    only the first ``prompt`` events are the prompt's, and only among them is an earlier block
    skipped (the output's answer before a reasoning block, Magistral's ``content[THINK]``, ends the
    phase)."""
    start = 0
    for n, event in enumerate(events if prompt is None else events[:prompt]):
        if event["field"] == REASONING and event["type"] == "region_open":
            start = n
    for event in events[start:]:
        if _neutral(event):
            continue
        if event["field"] != REASONING or event["type"] in ("region_close", "region_malformed"):
            return True
    return False


def _primer(name: str, module: Any) -> str:
    """Text that moves a fresh parser (``prefix=""``) past the reasoning, for the tool parser whose
    text starts after it: "" unless the template reads plain text at the start as reasoning (an
    implicit reasoning region), then the reasoning field's first literal close delimiter."""
    probe = module.ResponseParser("", errors="recover")
    events = probe.feed("x") + probe.finalize()[1]
    opened = [e["field"] for e in events if e["type"] == "region_open"]
    if not opened or opened[0] != REASONING:
        return ""
    from importlib import resources

    template = json.loads((resources.files("respc.templates") / f"{name}.json").read_text(encoding="utf-8"))
    close = template.get("fields", {}).get(REASONING, {}).get("close", "")
    return close[0] if isinstance(close, list) else close


def _has_reasoning(module: Any) -> bool:
    return any(region.slot == REASONING for region in module.ResponseParser.REGIONS)


def _pieces(chunks: Iterable[dict]) -> list[tuple]:
    """The chunks' deltas in order as ``("reasoning"|"content", text)`` and ``("tool", index, call)``
    pieces (``call``: ``id``, ``type``, ``name``, ``arguments``, each None when the piece lacks it)."""
    out: list[tuple] = []
    for chunk in chunks:
        if not chunk["choices"]:
            continue
        delta = chunk["choices"][0]["delta"]
        if REASONING in delta and delta[REASONING]:
            out.append(("reasoning", delta[REASONING]))
        if "content" in delta and delta["content"]:
            out.append(("content", delta["content"]))
        for call in delta.get("tool_calls", ()):
            function = call.get("function") or {}
            out.append(("tool", call["index"], {"id": call.get("id"), "type": call.get("type"),
                                                "name": function.get("name"), "arguments": function.get("arguments")}))
    return out


def _joined(a: str | None, b: str | None) -> str | None:
    return b if a is None else a + (b or "")


def _join_call(a: dict, b: dict) -> dict:
    return {"id": a["id"] or b["id"], "type": a["type"] or b["type"], "name": _joined(a["name"], b["name"]),
            "arguments": _joined(a["arguments"], b["arguments"])}


_RANK = {"reasoning": 0, "content": 1, "tool": 2}


class _DeltaOut:
    """Turns a stream's OpenAI chunks into vLLM ``DeltaMessage``\\ s that vLLM's Responses stream can
    follow (docs/serving.md, "Responses API"):

    - A tool call's pieces are held until its name is known, then sent as one piece with ``id``,
      ``type``, ``name`` and the arguments so far. The OpenAI adapter announces a call (an id and an
      empty ``function``) when its opener is read, before the name in formats that write it later
      (Hermes' ``{"name": ...}``, Llama 3's JSON, xLAM); vLLM's Responses stream opens a
      ``function_call`` item from a call's first delta, and that item requires a name. A call that
      never gets a name is never sent (a tool call needs a name: docs/template-language.md, D8).
    - One ``DeltaMessage`` cannot say in which order its fields came, and vLLM's Responses stream
      takes them as reasoning, then content, then tool calls (each field its own output item).
      So one message carries pieces only in that order, and argument text of a call already sent
      only with no text before it; the pieces after the first that breaks this wait for the next
      delta (or the end of the stream, :meth:`finish`).
    """

    def __init__(self) -> None:
        self.named: set[int] = set()
        self.held: dict[int, dict] = {}
        self.waiting: list[tuple] = []

    def _gate(self, pieces: list[tuple]) -> list[tuple]:
        out = []
        for piece in pieces:
            if piece[0] != "tool" or piece[1] in self.named:
                out.append(piece)
                continue
            index = piece[1]
            call = _join_call(self.held.pop(index), piece[2]) if index in self.held else piece[2]
            if call["name"]:
                self.named.add(index)
                out.append(("tool", index, call))
            else:
                self.held[index] = call
        return out

    def feed(self, chunks: Iterable[dict]) -> DeltaMessage | None:
        """The ``DeltaMessage`` for this delta's chunks (None when nothing can go out yet)."""
        pieces = self.waiting + self._gate(_pieces(chunks))
        sent_before = set(self.named) - {p[1] for p in pieces if p[0] == "tool" and p[2]["name"]}
        take, rank, text = 0, -1, False
        for piece in pieces:
            kind = piece[0]
            if _RANK[kind] < rank or (kind == "tool" and text and piece[1] in sent_before):
                break
            rank = _RANK[kind]
            text = text or kind != "tool"
            take += 1
        self.waiting = pieces[take:]
        return _message(pieces[:take])

    def finish(self, chunks: Iterable[dict]) -> DeltaMessage | None:
        """The last ``DeltaMessage``: everything still waiting and the final chunks (vLLM merges it
        into the stream's last delta, so its order is not kept)."""
        pieces = self.waiting + self._gate(_pieces(chunks))
        self.waiting = []
        return _message(pieces)


def _message(pieces: list[tuple]) -> DeltaMessage | None:
    """One ``DeltaMessage`` of ``pieces`` (None when they carry nothing): text joined per field,
    the pieces of each tool call merged into one ``DeltaToolCall`` per index."""
    content = "".join(p[1] for p in pieces if p[0] == "content")
    reasoning = "".join(p[1] for p in pieces if p[0] == "reasoning")
    calls: dict[int, dict] = {}
    for piece in pieces:
        if piece[0] == "tool":
            calls[piece[1]] = _join_call(calls[piece[1]], piece[2]) if piece[1] in calls else piece[2]
    fields: dict[str, Any] = {}
    if content:
        fields["content"] = content
    if reasoning:
        fields["reasoning"] = reasoning
    if calls:
        fields["tool_calls"] = [_delta_tool_call(index, c) for index, c in calls.items()]
    return DeltaMessage(**fields) if fields else None


def _merge_chunks(chunks: Iterable[dict]) -> DeltaMessage | None:
    """One vLLM ``DeltaMessage`` from OpenAI chunk dicts, all at once (:class:`_DeltaOut` for a
    stream)."""
    return _DeltaOut().finish(chunks)


def _given(**fields: Any) -> dict[str, Any]:
    """``fields`` without the None ones. vLLM serializes stream chunks with ``exclude_unset``, so a
    field passed as None goes out as ``null``; the OpenAI client's stream accumulator then merges
    ``"type": null`` into a call and fails (OpenAI sends ``id``/``type`` in a call's first delta only)."""
    return {key: value for key, value in fields.items() if value is not None}


def _delta_tool_call(index: int, call: dict) -> DeltaToolCall:
    """A ``DeltaToolCall`` with only the fields this piece carries set (``function`` always: the
    OpenAI client's accumulator reads ``function.name`` of every call it has seen)."""
    function = _given(name=call["name"], arguments=call["arguments"])
    return DeltaToolCall(index=index, **_given(id=call["id"], type=call["type"]), function=DeltaFunctionCall(**function))


def _tool_dicts(tools: Any) -> list[dict] | None:
    """JSON-schema tool dicts for respc's typing from vLLM's tool objects (pydantic models)."""
    out = []
    for tool in tools or ():
        data = tool.model_dump(exclude_none=True) if hasattr(tool, "model_dump") else tool
        if isinstance(data, dict) and isinstance(data.get("function"), dict):
            out.append({"type": "function", "function": data["function"]})
        elif isinstance(data, dict) and data.get("type") == "function" and "name" in data:
            # Responses API FunctionTool: name and parameters at the top level
            out.append({"type": "function", "function": {k: v for k, v in data.items() if k != "type"}})
    return out or None


def _parses_tools(request: Any) -> bool:
    return bool(getattr(request, "tools", None)) and getattr(request, "tool_choice", None) != "none"


class RespcReasoningParser(ReasoningParser):
    """vLLM ``ReasoningParser`` over a generated respc module (see the module docstring).

    Subclasses made by :func:`reasoning_parser_class` set ``template`` (a catalogue name).

    Args:
        tokenizer: vLLM's tokenizer (``decode(ids, skip_special_tokens=False)``, ``get_vocab()``).
        **kwargs: what vLLM passes (``model_config``, ``chat_template_kwargs``); kept by the base.
    """

    template: str = ""
    #: ``n -> id`` of a tool call this parser finalizes (one written inside unclosed reasoning)
    tool_call_ids: Callable[[int], str] | None = None
    # vLLM then asks has_engine_confirmed_reasoning_end() where the reasoning ends, calls
    # finish_streaming() when the output ends inside it, and takes a whole output's content from
    # the tool parser (respc's message content) rather than the raw text after the reasoning
    engine_based_streaming = True

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, *args, **kwargs)
        if not self.template:
            raise TypeError("RespcReasoningParser is a base: use respc.vllm.reasoning_parser_class(name)")
        self._module = _module(self.template)
        self._reasons = _has_reasoning(self._module)
        self._prefix = ""
        self._run: _ReasoningRun | None = None
        self._counter: _ReasoningCounter | None = None
        # characters of the output before the reasoning phase ended: 0 when it was over at the
        # prompt or at the first character, None while unknown (no prompt yet, or still reasoning)
        self._head: int | None = None
        #: whether this parser sent reasoning text (the tool parser then joins a later block to it)
        self._sent_reasoning = False
        #: the reasoning sent with the delta that ended the reasoning phase
        self._transition_reasoning = ""
        #: the output before the end of the reasoning phase (when it ended inside the output) and
        #: all the reasoning this parser returned: the tool parser starts from there (:meth:`handover`)
        self._head_text: str | None = None
        self._sent_text = ""
        #: the respc tool parser of the same request (it registers itself; :func:`_reasoning_partner`)
        self._tool_partner: RespcToolParser | None = None

    # --- the prompt ----------------------------------------------------------------------------
    def set_prompt_token_ids(self, prompt_token_ids: Sequence[int]) -> None:
        """Keep the decoded prompt: the generated parser starts from it (its start anchor)."""
        self._prefix = _decode(self.model_tokenizer, prompt_token_ids)
        self._counter = None
        self._head = 0  # vLLM skips this parser when the prompt ended the reasoning

    def adjust_initial_state_from_prompt(self, prompt_token_ids: Sequence[int]) -> None:
        """Streaming hook with the prompt ids: same as :meth:`set_prompt_token_ids`."""
        self.set_prompt_token_ids(prompt_token_ids)

    def adjust_request(self, request: Any) -> Any:
        """``skip_special_tokens=False`` when a delimiter of the template is a special token."""
        return _keep_special_tokens(self.template, self.model_tokenizer, request)

    # --- end of reasoning ------------------------------------------------------------------------
    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        """True when the reasoning phase is over at the end of ``input_ids`` (the prompt, or prompt
        and output): the reasoning region has closed or another field has begun; always True for a
        template without a reasoning field."""
        if not self._reasons:
            return True
        return _phase_over(self._module, _decode(self.model_tokenizer, input_ids))

    def is_reasoning_end_streaming(self, input_ids: Sequence[int], delta_ids: Iterable[int]) -> bool:
        """While this instance streams: whether its parser has left the reasoning; otherwise
        :meth:`is_reasoning_end` on all ``input_ids``."""
        if self._run is not None:
            return self._run.ended
        return self.is_reasoning_end(input_ids)

    def has_engine_confirmed_reasoning_end(self) -> bool:
        return self._run is not None and self._run.ended

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        """The ids after the end of the reasoning: the shortest head of ``input_ids`` that, after
        the prompt, ends the reasoning phase is cut off (all of them when it never ends).

        Linear in the output: each id is decoded once against the few ids before it and each
        character is parsed once (:func:`_phase_end_head`), with the rule of :func:`_phase_over`
        (the text after the last start anchor in the prompt and the head is read)."""
        if not self._reasons:
            return list(input_ids)
        texts = _token_texts(self.model_tokenizer, input_ids)
        run = self._run
        if run is not None and run.ended and run.boundary is not None:
            # streaming: vLLM passes the ids of the delta that ended the reasoning
            skip = max(0, run.boundary - run.delta_start)
            length = 0
            for k in range(len(input_ids) + 1):
                if length >= skip:
                    return list(input_ids[k:])
                if k < len(texts):
                    length += len(texts[k])
            return []
        k = _phase_end_head(self._module, self._prefix, texts)
        return [] if k is None else list(input_ids[k:])

    # --- extraction -------------------------------------------------------------------------------
    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        """``(reasoning, content)`` of a whole output: the reasoning (stripped as in respc's message)
        and the raw text after the reasoning phase (None when empty). With tool parsing (the
        request has tools, ``tool_choice`` is not "none") all of the message's reasoning, also what
        comes after the phase (a later block, reasoning that goes on after a call inside it): the
        tool parser returns none. Without, the reasoning up to the end of the phase only, as when
        streamed: the rest is in the content passed through as written (docs/serving.md)."""
        run = _ReasoningRun(self._module, self._prefix)
        if run.ended:
            self._head = 0
            return None, model_output or None
        # all of the reasoning only for respc's tool parser of the same request, which returns none;
        # another tool parser (vLLM's hermes beside respc-qwen3) reads the text after the phase as
        # written, so the reasoning is what precedes the phase's end, as when streamed
        foreign = _foreign_tool_parser(self, _composer(self)) is not None
        reasoning, content = run.feed(model_output, whole=_parses_tools(request) and not foreign)
        if content is None:
            reasoning += _reasoning_before_other(run.finalize())
            if run.ended:
                content = model_output[run.boundary:]
        self._head = run.boundary if run.ended else None
        self._head_text = model_output[:run.boundary] if run.ended else None
        self._sent_reasoning = bool(reasoning)
        self._sent_text = reasoning
        return reasoning or None, content or None

    def extract_reasoning_streaming(self, previous_text: str, current_text: str, delta_text: str,
                                    previous_token_ids: Sequence[int], current_token_ids: Sequence[int],
                                    delta_token_ids: Sequence[int]) -> DeltaMessage | None:
        """One delta (any number of tokens): ``reasoning`` text, and at the end of the reasoning
        phase ``content`` with the raw text after it (what vLLM hands to the tool parser)."""
        if self._run is None:
            self._run = _ReasoningRun(self._module, self._prefix, type(self).tool_call_ids)
            self._head = 0 if self._run.ended else None
            if self._run.ended:
                return DeltaMessage(content=delta_text) if delta_text else None
        if self._run.ended:
            return DeltaMessage(content=delta_text) if delta_text else None
        reasoning, content = self._run.feed(delta_text)
        self._sent_reasoning = self._sent_reasoning or bool(reasoning)
        if self._run.ended:
            self._head = self._run.boundary
            self._head_text = "".join(self._run.raw)[:self._run.boundary]
            self._sent_text = self._run.sent
            self._transition_reasoning = reasoning
        if not reasoning and content is None:
            return None
        return DeltaMessage(**_given(reasoning=reasoning or None, content=content or None))

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        """The number of ids of ``token_ids`` (the generated output, prompt excluded) whose text lies
        in the reasoning (see :class:`_ReasoningCounter`); 0 for a template without reasoning.
        vLLM reports it as ``usage.completion_tokens_details.reasoning_tokens``."""
        if not self._reasons or not token_ids:
            return 0
        if self._counter is None or not self._counter.extends(token_ids):
            self._counter = _ReasoningCounter(self._module, self._prefix, self.model_tokenizer)
        return self._counter.update(token_ids)

    def tool_prompt(self) -> str | None:
        """The rendered prompt, for the tool parser of the same request (:class:`RespcToolParser`),
        when the text it reads follows the prompt directly: the reasoning phase was over at the
        prompt or before the output's first character (a template without reasoning, a prompt that
        closed it). None otherwise: the text follows reasoning written in the output."""
        return self._prefix if self._head == 0 else None

    def handover(self) -> tuple[str, str, str] | None:
        """Where the tool parser of the same request starts when the reasoning phase ended inside
        the output: ``(prompt, output before the end of the phase, reasoning returned so far)``.
        The tool parser reads its text with a parser that has read the prompt and that head, so
        the text after the phase is read as respc reads the whole output: a tool call written
        inside the reasoning (the reasoning goes on after it, or the call ends an unclosed block)
        is read in the reasoning's context and typed by the request's tools (docs/serving.md,
        "Calls inside the reasoning"). None when the phase was over at the prompt or the first
        character (then :meth:`tool_prompt`) or has not ended."""
        if not self._head or self._head_text is None:
            return None
        return self._prefix, self._head_text, self._sent_text

    def finish_streaming(self) -> DeltaMessage | None:
        """The output ended inside the reasoning (as far as held text let the parser tell): finalize
        the parser and return what it still held -- reasoning, and content or tool calls that the
        end of the output decided (a tool call written inside an unclosed reasoning block). When
        the end decided that the phase ended earlier and the request's respc tool parser parses
        tools, the text after the phase goes to that tool parser (:meth:`handover`), so its calls
        are typed by the request's tools; when the request has no tool parser at all (``vllm
        serve`` without ``--enable-auto-tool-choice``, :func:`_composer`), that text goes
        out as content, as written, as in a whole output: vLLM's chat layer would drop tool calls
        sent here (docs/serving.md, "tool_choice none and requests without tools"). When the
        request's tool parser is another one (vLLM's ``hermes`` beside ``respc-qwen3``), that text
        is what vLLM's whole-output path makes of it with that parser (:func:`_foreign_rest`)."""
        if self._run is None or self._run.ended:
            return None
        chunks = self._run.finalize()
        tool = self._tool_partner
        owner = _composer(self)
        # no tool parser at all (vLLM started without --enable-auto-tool-choice): vLLM's chat layer
        # drops the tool calls of this delta, so the rest goes out as content, as written (what a
        # whole output gives, extract_reasoning's raw rest): answer text is never dropped
        alone = tool is None and owner is not None and getattr(owner, "_tool_parser", False) is None
        # another tool parser (``--tool-call-parser hermes`` beside ``respc-qwen3``): the rest is
        # what that parser makes of it, as vLLM's whole-output path gives it (_foreign_rest)
        foreign = _foreign_tool_parser(self, owner) if tool is None else None
        if foreign is not None and self._run.ended and self._run.boundary is not None:
            reasoning = _reasoning_before_other(chunks)
            tail = "".join(self._run.raw)[self._run.boundary:]
            self._sent_reasoning = self._sent_reasoning or bool(reasoning)
            rest = _foreign_rest(owner, tail)
            fields = {"reasoning": reasoning or None}
            if rest is not None:
                fields.update(content=rest.content or None, tool_calls=rest.tool_calls or None)
            return DeltaMessage(**_given(**fields)) if any(fields.values()) else None
        if self._run.ended and (self._run.boundary if not alone else self._run.boundary is not None) and (
                alone or (tool is not None and tool._stream is None and not tool._passthrough)):
            reasoning = _reasoning_before_other(chunks)
            raw = "".join(self._run.raw)
            self._head = self._run.boundary
            self._head_text = raw[:self._run.boundary]
            self._sent_text = self._run.sent + reasoning
            self._sent_reasoning = self._sent_reasoning or bool(self._sent_text)
            tail = raw[self._run.boundary:]
            # without tool parsing (tool_choice="none", no tools) the rest is content as written,
            # as for a whole output (extract_reasoning's raw rest)
            rest = tool.take_over(tail) if tool is not None and tool.parses_tools() \
                else DeltaMessage(content=tail) if tail else None
            fields: dict[str, Any] = {"reasoning": reasoning + (rest.reasoning or "") if rest is not None else reasoning}
            if rest is not None:
                fields.update(content=rest.content, tool_calls=rest.tool_calls or None)
            return DeltaMessage(**_given(**{k: v or None for k, v in fields.items()})) if any(fields.values()) \
                else None
        message = _merge_chunks(chunks)
        self._sent_reasoning = self._sent_reasoning or bool(message is not None and message.reasoning)
        return message


class RespcToolParser(ToolParser):
    """vLLM ``ToolParser`` over a generated respc module and :class:`respc.openai.ChatCompletionStream`.

    Subclasses made by :func:`tool_parser_class` set ``template``; ``tool_call_ids`` (``n -> id``,
    None: ``call_`` + random hex) names the calls, for deterministic tests.

    Args:
        tokenizer: vLLM's tokenizer.
        tools: the request's tools (vLLM ``ChatCompletionToolsParam`` or Responses ``FunctionTool``);
            their JSON schemas type the arguments.
    """

    template: str = ""
    tool_call_ids: Callable[[int], str] | None = None
    #: how tool-call arguments stream (``ChatCompletionStream(recover_arguments=...)``): "hold" (each
    #: call in one delta when its region closes; what the client accumulates equals the whole
    #: answer, damaged output included) or "stream" (as the model writes them; a call found
    #: malformed after part of it was sent stays as sent). docs/serving.md, "Known limits".
    recover_arguments: str = "hold"
    #: seconds per search of a delimiter not proven linear (None: runtime.REGEX_TIMEOUT; docs/security.md)
    regex_timeout: float | None = None
    # required / named tool_choice: parse the model's own format (extract_tool_calls), do not force
    # vLLM's JSON list format, which the template does not describe
    supports_required_and_named = False
    # vLLM calls finish_streaming() on the last delta, which finalizes the parser
    engine_based_streaming = True

    def __init__(self, tokenizer: Any, tools: list | None = None, regex_timeout: float | None = None) -> None:
        super().__init__(tokenizer, tools)
        self.regex_timeout = regex_timeout if regex_timeout is not None else type(self).regex_timeout
        if not self.template:
            raise TypeError("RespcToolParser is a base: use respc.vllm.tool_parser_class(name)")
        self._module = _module(self.template)
        cls = type(self)
        if "_primer_text" not in cls.__dict__:
            cls._primer_text = _primer(self.template, self._module)
        self._primer = cls._primer_text
        self._stream: ChatCompletionStream | None = None
        self._out = _DeltaOut()
        self._passthrough = False
        self._partner = _reasoning_partner(self)
        #: the request this parser was built for, when it can be found (:func:`_construction_request`)
        self._request = _construction_request(tools)
        if self._partner is not None:
            self._partner._tool_partner = self
        self._join: str | None = None  # the join text still owed to a later reasoning block
        self._skip = 0  # characters of reasoning the stream sends again that the reasoning parser sent
        self._held: list[dict] = []  # chunks of the stream's first feed (the head handed over)
        self._first_delta = True
        #: answer text the rendered prompt holds (a prefilled assistant message), not sent again
        self._prompt_content = ""

    def _new_stream(self, request: Any, arguments: str | None = None) -> ChatCompletionStream:
        tools = _tool_dicts(getattr(request, "tools", None) or self.tools)
        ids = type(self).tool_call_ids
        arguments = arguments or self.recover_arguments
        handover = self._partner.handover() if self._partner is not None else None
        if handover is not None:
            # the reasoning phase ended inside the output: read on from where it ended, with a
            # parser that has read the prompt and the output before it (a call written inside the
            # reasoning is read in its context; a later block gets the join from the stream); the
            # reasoning the reasoning parser already returned is not sent again
            prompt, head, sent = handover
            parser = self._module.ResponseParser(prompt, tools, errors="recover",
                                                 regex_timeout=self.regex_timeout)
            stream = ChatCompletionStream(parser, ids=ids, recover_arguments=arguments)
            self._join, self._skip = None, len(sent)
            self._prompt_content = ""  # the prompt ended inside the reasoning: it holds no answer
            self._held = stream.feed(head)
            return stream
        prompt = self._partner.tool_prompt() if self._partner is not None else None
        if prompt is not None:
            # the text follows the prompt directly: read it after the prompt (functionary v3.2's
            # prompt ends in '>>>', the start of every opener); the prompt's reasoning events are
            # the reasoning parser's, not sent again
            parser = self._module.ResponseParser(prompt, tools, errors="recover",
                                                 regex_timeout=self.regex_timeout)
            parser.initial_events = [e for e in parser.initial_events if e["field"] != REASONING]
            # answer text the prompt holds (a prefilled assistant message, vLLM's
            # continue_final_message) is the client's, not output: the content sent and returned
            # starts after it (whitespace alone, what a template's turn header leaves, stays as
            # respc's message has it)
            written = "".join(e["text"] for e in parser.initial_events
                              if e["type"] == "region_chunk" and e["field"] == "content")
            self._prompt_content = written if written.strip() else ""
        else:
            parser = self._module.ResponseParser("", tools, errors="recover",
                                                 regex_timeout=self.regex_timeout)
            self._prompt_content = ""
        if prompt is None and self._primer:
            parser.feed(self._primer)  # the events of the primer are the reasoning's: not sent
        # a reasoning block this parser sends after one the reasoning parser sent: the template's
        # join text goes before it, as in respc's message
        self._join = (_reasoning_join(self.template) or None) if (
            self._partner is not None and self._partner._sent_reasoning) else None
        # "hold" by default: streamed equals whole (docs/openai.md, "recover_arguments")
        return ChatCompletionStream(parser, ids=ids, recover_arguments=arguments)

    def adjust_request(self, request: Any) -> Any:
        """``skip_special_tokens=False`` when the request has tools and a delimiter of the template
        is a special token; then vLLM's own adjustments."""
        if _parses_tools(request):
            request = _keep_special_tokens(self.template, self.model_tokenizer, request)
        return super().adjust_request(request)

    def get_remaining_unstreamed_args(self) -> str:
        """Nothing: finalizing the parser sends every argument fragment."""
        return ""

    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        """Tool calls and content of a whole output (the text after the reasoning)."""
        if not _parses_tools(request):
            return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
        # "hold": a whole output gives the message's calls (a call found malformed is no call)
        stream = self._new_stream(request, "hold")
        stream.feed(model_output)
        stream.finalize()
        message = stream.openai_message()
        calls = [ToolCall(id=call["id"], type="function",
                          function=FunctionCall(name=call["function"]["name"], arguments=call["function"]["arguments"]))
                 for call in message.get("tool_calls", ())]
        content = message["content"]
        if self._prompt_content and isinstance(content, str):
            content = _after_prompt(content, [self._prompt_content]) or None  # the prompt's own answer text
        return ExtractedToolCallInformation(tools_called=bool(calls), tool_calls=calls, content=content)

    def extract_tool_calls_streaming(self, previous_text: str, current_text: str, delta_text: str,
                                     previous_token_ids: Sequence[int], current_token_ids: Sequence[int],
                                     delta_token_ids: Sequence[int], request: Any) -> DeltaMessage | None:
        """One delta (any number of tokens): content, reasoning and tool-call deltas."""
        if self._stream is None and not self._passthrough:
            if _parses_tools(request):
                self._stream = self._new_stream(request)
            else:
                self._passthrough = True
        if self._passthrough:
            return DeltaMessage(content=delta_text) if delta_text else None
        message = self._out.feed(self._unprompted(self._joined(self._skipped(
            self._take_held() + self._stream.feed(delta_text)))))
        first, self._first_delta = self._first_delta, False
        if first and message is not None and message.reasoning and self._partner is not None:
            # the delta that ended the reasoning phase: vLLM keeps this parser's reasoning and
            # drops the reasoning parser's for it (DelegatingParser.parse_delta), so both go here
            message.reasoning = self._partner._transition_reasoning + message.reasoning
        return message

    def finish_streaming(self) -> DeltaMessage | None:
        """The last delta came: finalize the parser and return what it still held."""
        if self._stream is None:
            return None
        chunks = self._take_held() + (self._stream.finalize() if self._stream.message is None else [])
        return self._out.finish(self._unprompted(self._joined(self._skipped(chunks))))

    def parses_tools(self) -> bool:
        """Whether this parser reads tool calls for its request: the request has tools and its
        ``tool_choice`` is not "none" (when the request it was built for is not known: it has tools)."""
        return _parses_tools(self._request) if self._request is not None else bool(self.tools)

    def take_over(self, text: str) -> DeltaMessage | None:
        """The whole rest of a streamed output, ``text``, read at its end: the reasoning parser's
        end of stream decided that the reasoning phase ended before ``text``
        (:meth:`RespcReasoningParser.finish_streaming`). Returns everything it gives, as one
        ``DeltaMessage`` (None when nothing); this parser's own ``finish_streaming`` then has
        nothing left."""
        self._stream = self._new_stream(None)
        self._first_delta = False
        chunks = self._take_held() + self._stream.feed(text) + self._stream.finalize()
        return self._out.finish(self._unprompted(self._joined(self._skipped(chunks))))

    def _take_held(self) -> list[dict]:
        held, self._held = self._held, []
        return held

    def _skipped(self, chunks: list[dict]) -> list[dict]:
        """``chunks`` without the first ``_skip`` characters of reasoning (what the reasoning
        parser already returned of the text handed over, :meth:`RespcReasoningParser.handover`)."""
        if not self._skip:
            return chunks
        for chunk in chunks:
            delta = chunk["choices"][0]["delta"] if chunk["choices"] else {}
            text = delta.get(REASONING)
            if not text:
                continue
            cut = min(self._skip, len(text))
            self._skip -= cut
            if cut == len(text):
                del delta[REASONING]
            else:
                delta[REASONING] = text[cut:]
            if not self._skip:
                break
        return chunks

    def _unprompted(self, chunks: list[dict]) -> list[dict]:
        """``chunks`` without the prompt's own answer text at the start of their content (see
        :meth:`_new_stream`)."""
        if not self._prompt_content:
            return chunks
        skip = [self._prompt_content]
        for chunk in chunks:
            delta = chunk["choices"][0]["delta"] if chunk["choices"] else {}
            if delta.get("content"):
                delta["content"] = _after_prompt(delta["content"], skip)
                if not delta["content"]:
                    del delta["content"]
            if not skip[0]:
                break
        self._prompt_content = skip[0]
        return chunks

    def _joined(self, chunks: list[dict]) -> list[dict]:
        """``chunks`` with the join text owed (see :meth:`_new_stream`) before their first reasoning."""
        if self._join is None:
            return chunks
        for chunk in chunks:
            delta = chunk["choices"][0]["delta"] if chunk["choices"] else {}
            if delta.get(REASONING):
                delta[REASONING] = self._join + delta[REASONING]
                self._join = None
                break
        return chunks


def _reasoning_partner(tool_parser: RespcToolParser) -> RespcReasoningParser | None:
    """The respc reasoning parser of the same request and template as ``tool_parser``, or None.

    vLLM's ``DelegatingParser.__init__`` (``vllm/parser/abstract_parser.py``) builds the reasoning
    parser, keeps it as ``self._reasoning_parser``, then builds the tool parser; the composed parser
    is the ``self`` of a frame just above this constructor. Only the reasoning parser is given the
    rendered prompt (``set_prompt_token_ids``), so the tool parser asks it
    (:meth:`RespcReasoningParser.tool_prompt`). Without one (the tool parser built alone, or with
    another reasoning parser) the tool parser reads its text without the prompt."""
    frame = sys._getframe(1)
    for _ in range(6):
        if frame is None:
            break
        owner = frame.f_locals.get("self")
        partner = getattr(owner, "_reasoning_parser", None) if owner is not tool_parser else None
        if isinstance(partner, RespcReasoningParser) and partner.template == tool_parser.template:
            return partner
        frame = frame.f_back
    return None


def _composer(reasoning_parser: RespcReasoningParser) -> Any:
    """The composed parser calling ``reasoning_parser`` (vLLM's ``DelegatingParser``, the ``self`` of a
    frame just above whose ``_reasoning_parser`` it is), or None when there is none (the parser
    called directly). Its ``_tool_parser`` is None when the request has no tool parser at all, as
    when ``vllm serve`` runs without ``--enable-auto-tool-choice``."""
    frame = sys._getframe(2)
    for _ in range(6):
        if frame is None:
            break
        owner = frame.f_locals.get("self")
        if owner is not reasoning_parser and getattr(owner, "_reasoning_parser", None) is reasoning_parser:
            return owner
        frame = frame.f_back
    return None


def _foreign_tool_parser(reasoning_parser: RespcReasoningParser, owner: Any) -> Any:
    """The tool parser composed beside ``reasoning_parser`` when it is not respc's tool parser of the
    same template (``--reasoning-parser respc-qwen3 --tool-call-parser hermes``), else None: that
    parser reads the text after the reasoning phase on its own, as written."""
    tool = getattr(owner, "_tool_parser", None) if owner is not None else None
    if tool is None or tool is reasoning_parser._tool_partner:
        return None
    if isinstance(tool, RespcToolParser) and tool._partner is reasoning_parser:
        return None
    return tool


def _calling(name: str, test: Callable[[Any], bool], depth: int = 12) -> Any:
    """The first value of local ``name`` passing ``test`` in the frames calling this one (at most
    ``depth``), or None."""
    frame = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            break
        value = frame.f_locals.get(name)
        if value is not None and test(value):
            return value
        frame = frame.f_back
    return None


def _foreign_rest(owner: Any, text: str) -> DeltaMessage | None:
    """What vLLM's whole-output path makes of ``text``, the output after the reasoning phase, with a
    tool parser that is not respc's: the composed parser's ``_extract_tool_calls`` (the step of
    ``DelegatingParser.parse`` after the reasoning: tool_choice "none", named, "required" and
    "auto" as vLLM treats them, with the server's ``--enable-auto-tool-choice``), as one
    ``DeltaMessage`` of content and complete tool calls. Used when only the end of a stream decided
    that the reasoning phase ended (a call that ends an unclosed reasoning block): the tool parser
    has then seen none of the text, and the client must get what the non-streamed response gives
    (docs/serving.md, "Another tool parser beside respc's reasoning parser"). The request and the
    server's option are the calling frames' (``parse_delta``'s ``request``, the serving object's
    ``enable_auto_tools``); without ``_extract_tool_calls`` (another vLLM) the text goes out as
    content."""
    request = _calling("request", lambda r: hasattr(r, "tool_choice"))
    server = _calling("self", lambda s: isinstance(getattr(s, "enable_auto_tools", None), bool))
    extract = getattr(owner, "_extract_tool_calls", None)
    if request is None or extract is None:
        return DeltaMessage(content=text) if text else None
    auto = server.enable_auto_tools if server is not None else True
    calls, content = extract(text, request=request, enable_auto_tools=auto)
    tool_calls = [DeltaToolCall(index=n, **_given(id=getattr(c, "id", None)), type="function",
                                function=DeltaFunctionCall(name=c.name, arguments=c.arguments))
                  for n, c in enumerate(calls or [])]
    if not content and not tool_calls:
        return None
    return DeltaMessage(**_given(content=content or None, tool_calls=tool_calls or None))


def _construction_request(tools: Any) -> Any:
    """The request whose ``tools`` vLLM passed to the parser being built, or None.

    vLLM builds the per-request parser as ``parser_cls(tokenizer, request.tools, ...)`` in a frame
    that holds the request as the local ``request`` (``OpenAIServingChat._make_parser``, the
    Responses contexts); the tool parser needs its ``tool_choice`` before vLLM first calls it with
    the request (a call inside unclosed reasoning is finalized by the reasoning parser, when the tool
    parser has not been called yet). Only a request whose ``tools`` is the very object passed is taken."""
    if tools is None:
        return None
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            break
        request = frame.f_locals.get("request")
        if request is not None and getattr(request, "tools", None) is tools and hasattr(request, "tool_choice"):
            return request
        frame = frame.f_back
    return None


def _class_for(template: str, base: type, kind: str) -> type:
    """A subclass of ``base`` named ``Respc<Template><kind>`` for catalogue template ``template``."""
    _module(template)
    name = "Respc" + "".join(part.capitalize() for part in template.split("_")) + kind
    return type(name, (base,), {"template": template, "__module__": __name__})


def reasoning_parser_class(template: str) -> type[RespcReasoningParser]:
    """A :class:`RespcReasoningParser` subclass for catalogue template ``template``.

    Raises:
        ValueError: no generated module ``respc.generated.<template>``.
    """
    return _class_for(template, RespcReasoningParser, "ReasoningParser")


def tool_parser_class(template: str) -> type[RespcToolParser]:
    """A :class:`RespcToolParser` subclass for catalogue template ``template``.

    Raises:
        ValueError: no generated module ``respc.generated.<template>``.
    """
    return _class_for(template, RespcToolParser, "ToolParser")


def register(*templates: str) -> dict[str, tuple[type, type]]:
    """Register ``respc-<name>`` for each catalogue template with vLLM's ``ToolParserManager`` and
    ``ReasoningParserManager`` (the names ``--tool-call-parser`` / ``--reasoning-parser`` take).

    No names: every catalogue template. Returns ``{"respc-<name>": (reasoning class, tool class)}``.
    """
    if not templates:
        from respc.compiler.load import catalogue_names

        templates = tuple(catalogue_names())
    out = {}
    for template in templates:
        reasoning, tool = reasoning_parser_class(template), tool_parser_class(template)
        key = f"respc-{template}"
        ReasoningParserManager.register_module(key, module=reasoning)
        ToolParserManager.register_module(key, module=tool)
        out[key] = (reasoning, tool)
    return out
