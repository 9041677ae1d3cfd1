"""Pick the catalogue family whose output format a model's chat template renders
(docs/writing-a-template.md "Which family does my model use? (`respc detect`)").

Theory of operation. A chat template shows a model's output format in two places: the assistant
turns it renders for history messages, and the format instructions it renders into the prompt (tool
signatures, "return a JSON object within <tool_call></tool_call>"). Model names are never used.

1. The chat template is rendered with fixed sample conversations (``SAMPLES`` of
   ``compiler/samples.py``): a plain answer, reasoning and an answer, one tool call, two tool
   calls. Each assistant turn is cut off the full render at the end of the generation prompt (the
   prompt is the render without the assistant message, with ``add_generation_prompt``), under a
   few input shapes (with and without a system message, a ``/no_think`` or ``/think`` system
   message when the template mentions one, tool-call arguments as a dict or as a JSON string,
   tool-call content ``None`` or ``""``), because chat templates differ in what they accept; a
   template that fails on every way of offering the sample tools is rendered without tools. A
   template whose generation prompt adds text that its history turns lack (``<think>\n``
   pre-opened for the new turn, while history turns drop their reasoning) has its history turns
   parsed after the text they really follow too.
2. A sample is *rendered* when some shape renders an assistant turn that shows all of its text
   (content, reasoning, each call's name and argument values). A sample the template refuses (every
   shape raises) or renders without part of its text (history reasoning dropped, tool calls left
   out) is *not rendered* and does not count: the template shows nothing of that part of the format.
   One exception: when the template offers tools (the generation prompt changes when tools are
   given) but renders no tool-call sample, while it accepted one and dropped its calls, the tool-call
   samples it accepted are *unconfirmed*: the model is told it may call tools, yet no render shows
   how. A family passes an unconfirmed sample only when the generation prompt spells one of its
   tool-call openers (the format the prompt teaches, e.g. granite's ``<|tool_call|>``).
3. Every catalogue family whose start anchor occurs in the generation prompt parses each rendered
   turn with the prompt as its prefix; it *parses a sample back* when some shape gives the sample
   message back exactly. The rendered and unconfirmed samples it does not pass are its *failed*
   samples. A family is an *exact fit* when it has no failed sample and at least one sample is
   rendered. ``detect`` names a family only when there is an exact fit; otherwise ``family`` is None
   and ``nearest`` holds the (at most three) families that passed the most samples, each with its
   failed samples in ``failed`` and in the reason. A template that renders no sample at all, or
   whose generation prompt holds no family's start anchor, fits no family.
4. A family's *vocabulary* is its literal delimiters (start anchors, literal opens and closes, and the
   literal runs of its regex delimiters, at least three characters). Counted: how many of them occur
   in the renders, and how many in the chat template's source text (a template that cannot render a
   history tool call still spells the tokens it would write).
5. Exact fits are listed best first (``exact``); this is the documented tie rule: more of the
   catalogue delimiters that the chat template shows (in renders or source) in the family's
   vocabulary (a family without the tool format the prompt teaches explains less); then the
   family's thinking switch (``templates/catalogue.jsonl``) is the one the chat template reacts to
   (none for none); then the larger share of its vocabulary found (renders plus source, over its
   size); then more vocabulary in the source; then the name. Exact fits equal on the first two are
   ``tied``. Exact fits have the same format as far as the rendered samples tell (``hermes2pro``
   and ``qwen2_5`` are the same template; ``qwen3_5`` and ``nemotron3_nano`` differ only in an end
   token the chat template never renders); a template that renders only plain answers is fitted
   exactly by every family with its turn format, and all of them are listed.

The thinking switch is the first of ``THINKING_SWITCHES`` whose value (true / false) changes the
generation prompt.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from .catalogue import catalogue_entries, catalogue_names
from .samples import (SAMPLES, THINKING_SWITCHES, TOOLS, ChatTemplate, assistant_message, conversations,
                      read_chat_template, render_or_none, split_turn, thinking_switch)

__all__ = ["ChatTemplate", "Detection", "read_chat_template", "detect", "THINKING_SWITCHES"]

@dataclass(frozen=True)
class Detection:
    """What :func:`detect` found (the rules: the module docstring and ``docs/writing-a-template.md``).

    Attributes:
        family (str | None): the first exact fit, or None when no family parses back every sample
            the chat template rendered (``respc detect`` exits 1).
        tied (tuple[str, ...]): the exact fits as good as ``family`` on the tie criteria (delimiters
            covered, thinking switch), ``family`` first; empty when there is no exact fit.
        exact (tuple[str, ...]): every exact fit, best first (``tied`` is its head).
        nearest (tuple[str, ...]): with no exact fit, the families that came closest (most samples
            parsed back), best first, at most three; empty when there is an exact fit.
        rendered (tuple[str, ...]): the samples the chat template rendered (each shows all of its
            text in some input shape), in ``SAMPLES`` order.
        not_rendered (tuple[str, ...]): the samples it refused or rendered without part of their text;
            they do not count, except ``unconfirmed`` ones.
        unconfirmed (tuple[str, ...]): tool-call samples the chat template accepted but rendered
            without their calls while it offers tools; a family passes them only when the generation
            prompt spells its tool-call opener.
        failed (dict[str, tuple[str, ...]]): per family with its start anchor in the generation
            prompt, the rendered or unconfirmed samples it did not parse back.
        thinking_switch (str | None): the chat-template variable that turns reasoning on/off.
        reason (str): one sentence saying why this family (or why none, naming the nearest fits and
            their failed samples).
        scores (dict[str, tuple]): per family ``(anchor_in_prompt, parsed_back, covered, same_switch,
            share, in_source)`` (see the module docstring).
    """

    family: str | None
    tied: tuple[str, ...]
    thinking_switch: str | None
    reason: str
    scores: dict[str, tuple] = field(repr=False)
    exact: tuple[str, ...] = ()
    nearest: tuple[str, ...] = ()
    rendered: tuple[str, ...] = ()
    not_rendered: tuple[str, ...] = ()
    unconfirmed: tuple[str, ...] = ()
    failed: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)


_REGEX_META = "()[]{}?*+|.^$"


def _literal_runs(pattern: str) -> list[str]:
    """Literal runs of a regex (escapes resolved; a run ends at any operator, class or group; the
    last character before ``?``, ``*`` or ``{`` is dropped), at least three non-blank characters."""
    runs, cur, i = [], "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt.isalnum():          # \s \d \w \b ...: not a literal
                runs.append(cur)
                cur = ""
            else:
                cur += nxt
            i += 2
            continue
        if ch in _REGEX_META:
            if ch in "?*{" and cur:
                cur = cur[:-1]
            runs.append(cur)
            cur = ""
            if ch == "[":
                end = pattern.find("]", i + 2)
                i = end + 1 if end > 0 else i + 1
                continue
            if ch == "(":
                m = re.match(r"\(\?(?:P<\w+>|[:=!]|<[=!])", pattern[i:])
                i += len(m.group(0)) if m else 1
                continue
            i += 1
            continue
        cur += ch
        i += 1
    runs.append(cur)
    return [r for r in runs if len(r.strip()) >= 3]


@dataclass(frozen=True)
class _Family:
    name: str
    anchors: tuple[str, ...]
    vocabulary: tuple[str, ...]
    openers: tuple[str, ...]
    module: Any


def _is_tool_field(name: str, spec: dict) -> bool:
    return name == "tool_calls" or spec.get("slot") == "tool_calls" or spec.get("role") == "tool_calls"


@functools.lru_cache(maxsize=1)
def _families() -> tuple[_Family, ...]:
    """Every catalogue family: its start anchors (literal runs of a pattern), vocabulary, tool-call
    openers and generated parser module."""
    out = []
    root = resources.files("respc.templates")
    for name in catalogue_names():
        doc = json.loads(root.joinpath(f"{name}.json").read_text(encoding="utf-8"))
        anchors = doc.get("start_anchor") or []
        anchors = [anchors] if isinstance(anchors, str) else list(anchors)
        if "start_anchor_pattern" in doc:
            # its literal runs: a pattern may match any text (plamo3's), which would be no evidence
            anchors = _literal_runs(doc["start_anchor_pattern"])
        vocabulary: set[str] = set()
        openers: set[str] = set()
        for field_name, spec in doc["fields"].items():
            for key in ("open", "close"):
                value = spec.get(key)
                for literal in [value] if isinstance(value, str) else value or []:
                    if len(literal.strip()) >= 2:
                        vocabulary.add(literal)
                        if key == "open" and _is_tool_field(field_name, spec):
                            openers.add(literal)
            for key in ("open_pattern", "close_pattern"):
                if key in spec:
                    runs = _literal_runs(spec[key])
                    vocabulary.update(runs)
                    if key == "open_pattern" and _is_tool_field(field_name, spec):
                        # a run that starts with a quote is a JSON key the body begins with, not a delimiter
                        openers.update(r for r in runs if r.lstrip()[:1] not in "\"'")
        module = importlib.import_module(f"respc.generated.{name}")
        out.append(_Family(name, tuple(anchors), tuple(sorted(vocabulary)), tuple(sorted(openers)), module))
    return tuple(out)


def _reverse_name(name: str) -> tuple[int, ...]:
    """A sort key that orders names alphabetically inside a ``reverse=True`` sort."""
    return tuple(-ord(c) for c in name) + (1,)


def _recovers(family: _Family, prompt: str, turn: str, want: dict) -> bool:
    try:
        parser = family.module.ResponseParser(prompt, TOOLS)
        parser.feed(turn)
        got, _ = parser.finalize()
    except Exception:  # noqa: BLE001 - a family that cannot parse this turn does not recover it
        return False
    return got == want


def _texts(sample: dict) -> list[str]:
    """Every text a sample carries: content, reasoning, each call's name and argument values."""
    out = [sample[k] for k in ("content", "reasoning_content") if sample.get(k)]
    for call in sample.get("tool_calls", []):
        out.append(call["function"]["name"])
        out.extend(v if isinstance(v, str) else json.dumps(v) for v in call["function"]["arguments"].values())
    return out


TOOL_SAMPLES = tuple(name for name, sample in SAMPLES.items() if "tool_calls" in sample)


def _offers_tools(chat: ChatTemplate) -> bool:
    """Whether the generation prompt changes when tools are offered (the model is told it may call)."""
    for head in conversations(chat):
        with_tools = render_or_none(chat, head, True, {})
        without = render_or_none(chat, head, True, {}, offer_tools=False)
        if with_tools is not None and without is not None:
            return with_tools != without
    return False


def _listing(names: Any) -> str:
    return ", ".join(names) or "-"


def detect(chat: ChatTemplate) -> Detection:
    """Find the catalogue families that parse back every sample message ``chat`` renders.

    Args:
        chat: the chat template (:func:`read_chat_template`).

    Returns:
        Detection: the exact fits (best first; ``family`` is the first, None when there is none),
        the families tied with it, the nearest fits and their failed samples when no family is
        exact, which samples were rendered, the thinking switch, a one-sentence reason and every
        family's score. The rules: the module docstring and ``docs/writing-a-template.md``
        ("Which family does my model use?").
    """
    switch = thinking_switch(chat)
    variable_sets = [{}] + ([{switch: True}, {switch: False}] if switch else [])
    prompts: list[str] = []
    renders: list[str] = []
    shown: dict[str, dict[tuple[str, str], None]] = {name: {} for name in SAMPLES}
    accepted: dict[str, bool] = {name: False for name in SAMPLES}
    for variables in variable_sets:
        for head in conversations(chat):
            offer = True
            prompt = render_or_none(chat, head, True, variables)
            if prompt is None:
                # a template that fails on every tool shape (llama.cpp's deepseek-r1 template pipes
                # ``map`` into ``tojson``) still shows its turns without tools
                offer = False
                prompt = render_or_none(chat, head, True, variables, offer_tools=False)
            if prompt is None:
                continue
            prompts.append(prompt)
            renders.append(prompt)
            for name, sample in SAMPLES.items():
                texts = _texts(sample)
                for as_json in (False, True):
                    for empty in (None, ""):
                        message = assistant_message(sample, as_json, empty)
                        full = render_or_none(chat, head + [message], False, variables, offer_tools=offer)
                        if full is None:
                            continue
                        accepted[name] = True
                        renders.append(full)
                        for pair in split_turn(full, prompt):
                            if all(t in pair[1] for t in texts):
                                shown[name][pair] = None
    rendered = tuple(n for n in SAMPLES if shown[n])
    not_rendered = tuple(n for n in SAMPLES if not shown[n])
    offers_tools = _offers_tools(chat) if prompts else False
    unconfirmed: tuple[str, ...] = ()
    if offers_tools and not any(shown[n] for n in TOOL_SAMPLES):
        unconfirmed = tuple(n for n in TOOL_SAMPLES if accepted[n])
    rendered_text = "\n".join(renders)
    source = chat.source.replace("\\n", "\n")
    # Every catalogue delimiter the chat template shows: a family that lacks some of them (a tool
    # format the prompt teaches, a reasoning tag) explains less of what the model is told to write.
    shows = {v for family in _families() for v in family.vocabulary if v in rendered_text or v in source}
    switches = {e["family"]: e["thinking_switch"] for e in catalogue_entries()}
    scores: dict[str, tuple] = {}
    failed: dict[str, tuple[str, ...]] = {}
    for family in _families():
        anchored = any(a in p for p in prompts for a in family.anchors)
        parsed = [n for n in rendered
                  if any(_recovers(family, p, t, {"role": "assistant", **SAMPLES[n]}) for p, t in shown[n])]
        taught = any(o in p for o in family.openers for p in prompts)
        in_renders = sum(v in rendered_text for v in family.vocabulary)
        in_source = sum(v in source for v in family.vocabulary)
        share = round((in_renders + in_source) / max(1, len(family.vocabulary)), 6)
        covered = len(shows.intersection(family.vocabulary))
        same_switch = switches.get(family.name) == switch
        scores[family.name] = (anchored, len(parsed), covered, same_switch, share, in_source)
        if anchored:
            failed[family.name] = (tuple(n for n in rendered if n not in parsed)
                                   + (() if taught else unconfirmed))
    # Best first; among equal scores the name decides, so the result never depends on dict order.
    def rank(n: str) -> tuple:
        _, _, covered, same_switch, share, in_source = scores[n]
        return (len(rendered) + len(unconfirmed) - len(failed[n]), covered, same_switch, share, in_source,
                _reverse_name(n))

    anchored_families = sorted(failed, key=rank, reverse=True)
    exact = tuple(n for n in anchored_families if rendered and not failed[n])
    common = dict(scores=scores, rendered=rendered, not_rendered=not_rendered, unconfirmed=unconfirmed,
                  failed=failed)
    if not prompts:
        return Detection(None, (), switch, f"{chat.origin}: the chat template renders no generation prompt "
                                           "for a system + user conversation", **common)
    if not anchored_families:
        return Detection(None, (), switch, f"{chat.origin}: no catalogue family's start anchor occurs in the "
                                           "generation prompt", **common)
    if not rendered:
        return Detection(None, (), switch, f"{chat.origin}: the chat template renders none of the sample "
                                           "messages with all of its text, so no format can be checked",
                         **common)
    if not exact:
        nearest = tuple(anchored_families[:3])
        parts = [f"{n} (failed: {_listing(failed[n])})" for n in nearest]
        why = ""
        if unconfirmed and all(set(unconfirmed) <= set(failed[n]) for n in nearest):
            why = (f"; {_listing(unconfirmed)}: the chat template offers tools but renders no tool call in "
                   "history, and its prompt spells none of these families' tool-call openers")
        return Detection(None, (), switch,
                         f"{chat.origin}: no catalogue family parses back every sample it rendered "
                         f"({_listing(rendered)}); nearest fits: {'; '.join(parts)}{why}",
                         nearest=nearest, **common)
    best = scores[exact[0]]
    tied = tuple(n for n in exact if scores[n][2:4] == best[2:4])
    skipped = [n for n in not_rendered if n not in unconfirmed]
    reason = (f"start anchor in the generation prompt; every sample it rendered parsed back exactly "
              f"({_listing(n for n in rendered)}")
    if unconfirmed:
        reason += f"; {_listing(unconfirmed)} confirmed only by the tool-call opener its prompt teaches"
    reason += ")"
    if skipped:
        reason += f"; not rendered, so not checked: {_listing(skipped)}"
    reason += f"; {best[2]} of the delimiters it shows are this family's"
    if len(exact) > 1:
        reason += f"; exact fits as well: {', '.join(exact[1:])}"
    return Detection(exact[0], tied, switch, reason, exact=exact, **common)
