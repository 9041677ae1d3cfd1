"""Pick the catalogue family whose output format a model's chat template renders (issue 11).

Theory of operation. A chat template shows a model's output format in two places: the assistant
turns it renders for history messages, and the format instructions it renders into the prompt (tool
signatures, "return a JSON object within <tool_call></tool_call>"). Model names are never used.

1. The chat template is rendered with fixed sample conversations (``SAMPLES`` of
   ``compiler/samples.py``): a plain answer, reasoning and an answer, one tool call, two tool
   calls. Each assistant turn is cut off the full render at the end of the generation prompt (the
   prompt is the render without the assistant message, with ``add_generation_prompt``), under a
   few input shapes (with and without a system message, a ``/no_think`` or ``/think`` system
   message when the template mentions one, tool-call arguments as a dict or as a JSON string,
   tool-call content ``None`` or ``""``), because chat templates differ in what they accept. A
   template whose generation prompt adds text that its history turns lack (``<think>\n``
   pre-opened for the new turn, while history turns drop their reasoning) has its history turns
   parsed after the text they really follow too.
2. Every catalogue family's generated parser parses each turn with the prompt as its prefix; a sample
   is *recovered* by a family when some shape gives the sample message back exactly.
3. A family's *vocabulary* is its literal delimiters (start anchors, literal opens and closes, and the
   literal runs of its regex delimiters, at least three characters). Counted: how many of them occur
   in the renders, and how many in the chat template's source text (a template that cannot render a
   history tool call still spells the tokens it would write).
4. Ranking, best first: the family's start anchor occurs in the generation prompt; samples recovered;
   how many of the catalogue delimiters that the chat template shows (in renders or source) are in
   the family's vocabulary (a family without the tool format the prompt teaches explains less);
   the family's thinking switch (``templates/catalogue.jsonl``) is the one the chat template reacts
   to (none for none). Families equal on these four are ``tied``: they have the same format as far
   as these samples tell (``hermes2pro`` and ``qwen2_5`` are the same template; ``qwen3_5`` and
   ``nemotron3_nano`` differ only in an end token the chat template never renders). Within a tie,
   ``family`` is the one with the larger share of its vocabulary found (renders plus source, over
   its size), then more vocabulary in the source, then the name.

A family *fits* when its start anchor occurs in the generation prompt and it recovered a sample or
found part of its vocabulary; otherwise ``detect`` reports no family and says why.

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

from .load import catalogue_entries, catalogue_names
from .samples import (SAMPLES, THINKING_SWITCHES, TOOLS, ChatTemplate, assistant_message, conversations,
                      read_chat_template, render_or_none, split_turn, thinking_switch)

__all__ = ["ChatTemplate", "Detection", "read_chat_template", "detect", "THINKING_SWITCHES"]

@dataclass(frozen=True)
class Detection:
    """What :func:`detect` found.

    Attributes:
        family (str | None): the best-fitting catalogue family, or None when none fits.
        tied (tuple[str, ...]): every family with the best fit (``family`` first, then by preference).
        thinking_switch (str | None): the chat-template variable that turns reasoning on/off.
        reason (str): one sentence saying why this family (or why none).
        scores (dict[str, tuple]): per family ``(anchor_in_prompt, recovered, covered, same_switch,
            share, in_source)`` (see the module docstring); ``tied`` share the first four.
    """

    family: str | None
    tied: tuple[str, ...]
    thinking_switch: str | None
    reason: str
    scores: dict[str, tuple] = field(repr=False)


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
    module: Any


@functools.lru_cache(maxsize=1)
def _families() -> tuple[_Family, ...]:
    """Every catalogue family: its start anchors, vocabulary and generated parser module."""
    out = []
    root = resources.files("respc.templates")
    for name in catalogue_names():
        doc = json.loads(root.joinpath(f"{name}.json").read_text(encoding="utf-8"))
        anchors = doc.get("start_anchor") or []
        anchors = [anchors] if isinstance(anchors, str) else list(anchors)
        if "start_anchor_pattern" in doc:
            anchors = _literal_runs(doc["start_anchor_pattern"])
        vocabulary: set[str] = set()
        for spec in doc["fields"].values():
            for key in ("open", "close"):
                value = spec.get(key)
                for literal in [value] if isinstance(value, str) else value or []:
                    if len(literal.strip()) >= 2:
                        vocabulary.add(literal)
            for key in ("open_pattern", "close_pattern"):
                if key in spec:
                    vocabulary.update(_literal_runs(spec[key]))
        module = importlib.import_module(f"respc.generated.{name}")
        out.append(_Family(name, tuple(anchors), tuple(sorted(vocabulary)), module))
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


def detect(chat: ChatTemplate) -> Detection:
    """Rank the catalogue families by how well their format matches what ``chat`` renders.

    Returns:
        Detection: the best family (None when none fits), the families tied with it, the thinking
        switch, a one-sentence reason and every family's score.
    """
    switch = thinking_switch(chat)
    variable_sets = [{}] + ([{switch: True}, {switch: False}] if switch else [])
    prompts: list[str] = []
    renders: list[str] = []
    turns: dict[str, list[tuple[str, str]]] = {name: [] for name in SAMPLES}
    for variables in variable_sets:
        for head in conversations(chat):
            prompt = render_or_none(chat, head, True, variables)
            if prompt is None:
                continue
            prompts.append(prompt)
            renders.append(prompt)
            for name, sample in SAMPLES.items():
                for as_json in (False, True):
                    for empty in (None, ""):
                        message = assistant_message(sample, as_json, empty)
                        full = render_or_none(chat, head + [message], False, variables)
                        if full is not None:
                            renders.append(full)
                            turns[name].extend(split_turn(full, prompt))
    rendered = "\n".join(renders)
    source = chat.source.replace("\\n", "\n")
    # Every catalogue delimiter the chat template shows: a family that lacks some of them (a tool
    # format the prompt teaches, a reasoning tag) explains less of what the model is told to write.
    shown = {v for family in _families() for v in family.vocabulary if v in rendered or v in source}
    switches = {e["family"]: e["thinking_switch"] for e in catalogue_entries()}
    scores: dict[str, tuple] = {}
    for family in _families():
        anchored = any(a in p for p in prompts for a in family.anchors)
        recovered = sum(
            any(_recovers(family, prompt, turn, {"role": "assistant", **SAMPLES[name]})
                for prompt, turn in dict.fromkeys(turns[name]))
            for name in SAMPLES)
        in_renders = sum(v in rendered for v in family.vocabulary)
        in_source = sum(v in source for v in family.vocabulary)
        share = round((in_renders + in_source) / max(1, len(family.vocabulary)), 6)
        covered = len(shown.intersection(family.vocabulary))
        same_switch = switches.get(family.name) == switch
        scores[family.name] = (anchored, recovered, covered, same_switch, share, in_source)
    # Best first; among equal scores the name decides, so the result never depends on dict order.
    order = sorted(scores, key=lambda n: (scores[n], _reverse_name(n)), reverse=True)
    best = scores[order[0]]
    # Tied: the same fit (the first four criteria). Vocabulary share and in-source counts only order
    # the tied families: a delimiter the chat template never shows (an end token the tokenizer adds,
    # a tool format the template cannot render) is no evidence against a family.
    tied = tuple(n for n in order if scores[n][:4] == best[:4])
    if not prompts:
        return Detection(None, (), switch, f"{chat.origin}: the chat template renders no generation prompt "
                                           "for a system + user conversation", scores)
    if not best[0] or (best[1] == 0 and best[4] == 0):
        why = ("no catalogue family's start anchor occurs in the generation prompt" if not best[0] else
               "no catalogue family's delimiters occur in what it renders")
        return Detection(None, (), switch, f"{chat.origin}: {why}", scores)
    family = tied[0]
    reason = (f"start anchor in the generation prompt; {best[1]} of {len(SAMPLES)} sample messages parsed "
              f"back exactly; {best[2]} of the delimiters it shows are this family's")
    if len(tied) > 1:
        reason += f"; {', '.join(tied[1:])} fit as well (the same format as far as these samples tell)"
    return Detection(family, tied, switch, reason, scores)
