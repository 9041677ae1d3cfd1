"""Pick the catalogue family whose output format a model's chat template renders (issue 11).

Theory of operation. A chat template shows a model's output format in two places: the assistant
turns it renders for history messages, and the format instructions it renders into the prompt (tool
signatures, "return a JSON object within <tool_call></tool_call>"). Model names are never used.

1. The chat template is rendered with fixed sample conversations (``SAMPLES``): a plain answer,
   reasoning and an answer, one tool call, two tool calls. Each assistant turn is cut off the full
   render at the end of the generation prompt (the prompt is the render without the assistant
   message, with ``add_generation_prompt``), under a few input shapes (with and without a system
   message, tool-call arguments as a dict or as a JSON string, tool-call content ``None`` or ``""``),
   because chat templates differ in what they accept. A template whose generation prompt adds text
   that its history turns lack (``<think>\n`` pre-opened for the new turn, while history turns
   drop their reasoning) has its history turns parsed after the text they really follow too.
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

import copy
import functools
import importlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .load import catalogue_entries, catalogue_names

__all__ = ["ChatTemplate", "Detection", "read_chat_template", "detect", "THINKING_SWITCHES"]

# Chat-template variables that turn reasoning on or off, in the order they are tried.
THINKING_SWITCHES = ("enable_thinking", "thinking", "reasoning", "enable_reasoning", "thinking_mode")

_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]


def _call(name: str, arguments: dict) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


# The sample assistant messages (corpus conventions: role assistant, absent keys absent).
SAMPLES: dict[str, dict] = {
    "content": {"content": "The capital of France is Paris."},
    "reasoning": {"reasoning_content": "The user asks for a capital.", "content": "Paris."},
    "tool_call": {"tool_calls": [_call("get_weather", {"city": "Paris"})]},
    "two_tool_calls": {"tool_calls": [_call("get_weather", {"city": "Paris"}),
                                      _call("get_weather", {"city": "Tokyo", "days": 3})]},
}
_SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
_USER = {"role": "user", "content": "Hi there! Can you help me?"}


@dataclass(frozen=True)
class ChatTemplate:
    """A chat template as read from a model.

    Attributes:
        source (str): the Jinja source.
        origin (str): where it was read (a path, for messages).
        bos_token (str): the tokenizer's BOS token text ("" when unknown).
        eos_token (str): the tokenizer's EOS token text ("" when unknown).
    """

    source: str
    origin: str
    bos_token: str = ""
    eos_token: str = ""


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


def _token_text(value: Any) -> str:
    """A special token as tokenizer_config.json gives it: a string or ``{"content": str, ...}``."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else ""


def read_chat_template(path: str | Path) -> ChatTemplate:
    """Read a chat template from a ``.jinja`` file, a ``tokenizer_config.json`` (or
    ``chat_template.json``) or a model directory holding one of them.

    In a model directory ``chat_template.jinja`` wins over ``chat_template.json`` over
    ``tokenizer_config.json`` (transformers' order); BOS/EOS come from ``tokenizer_config.json``
    when present. A ``chat_template`` that is a list of named templates gives the one named
    ``default``, else the first.

    Raises:
        FileNotFoundError: the path does not exist or a directory holds no chat template.
        ValueError: a JSON file without a usable ``chat_template``, or invalid JSON.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or directory")
    config: dict = {}
    if p.is_dir():
        if (p / "tokenizer_config.json").is_file():
            config = _read_json(p / "tokenizer_config.json")
        for name in ("chat_template.jinja", "chat_template.json", "tokenizer_config.json"):
            if (p / name).is_file():
                p = p / name
                break
        else:
            raise FileNotFoundError(f"{path}: no chat_template.jinja, chat_template.json or tokenizer_config.json")
    if p.suffix == ".json":
        data = _read_json(p)
        config = config or data
        template = data.get("chat_template")
        if isinstance(template, list):
            named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
            template = named.get("default", next(iter(named.values()), None))
        if not isinstance(template, str):
            raise ValueError(f"{p}: key 'chat_template' is missing or not a string")
        source = template
    else:
        source = p.read_text(encoding="utf-8")
    return ChatTemplate(source, str(p), _token_text(config.get("bos_token")), _token_text(config.get("eos_token")))


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


class _Generation(jinja2.ext.Extension):
    """``{% generation %}…{% endgeneration %}`` (transformers' assistant-mask tag): body as is."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render_body"), [], [], body).set_lineno(lineno)

    @staticmethod
    def _render_body(caller):
        return caller()


def _fail(message: str):
    raise jinja2.exceptions.TemplateError(message)


@functools.lru_cache(maxsize=16)
def _jinja(source: str) -> jinja2.Template:
    """The chat template compiled in a sandbox with transformers' helpers (tojson without HTML
    escaping, raise_exception, strftime_now, loop controls)."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[_Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda v, ensure_ascii=False, indent=None, separators=None, sort_keys=False: (
        json.dumps(v, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys))
    env.globals["raise_exception"] = _fail
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(source)


def _render(chat: ChatTemplate, messages: list[dict], generation_prompt: bool, variables: dict) -> str | None:
    """Render, or None when the template refuses these inputs (any exception of the template)."""
    shown = []
    for m in copy.deepcopy(messages):
        if m.get("reasoning_content") is not None:
            m["thinking"] = m["reasoning_content"]  # transformers shows both names
        shown.append(m)
    # Tools as OpenAI gives them, else bare ({"name", "description", "parameters"}: templates that
    # read tool.name); FireFunction-style templates read a JSON string ``functions`` and ``datetime``.
    bare = [t["function"] for t in _TOOLS]
    for tools in (_TOOLS, bare):
        context = {"functions": json.dumps(bare), "datetime": "2025-01-01", **variables}
        try:
            return _jinja(chat.source).render(messages=shown, tools=copy.deepcopy(tools), documents=None,
                                              add_generation_prompt=generation_prompt,
                                              bos_token=chat.bos_token, eos_token=chat.eos_token, **context)
        except Exception:  # noqa: BLE001 - a chat template may fail in any way on an input shape it rejects
            continue
    return None


def _assistant(sample: dict, arguments_as_json: bool, empty_content: Any) -> dict:
    message = {"role": "assistant", **copy.deepcopy(sample)}
    if "tool_calls" in message:
        message.setdefault("content", empty_content)
        for index, call in enumerate(message["tool_calls"]):
            call["id"] = f"call{index:05d}"
            if arguments_as_json:
                call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
    return message


def _split_turn(full: str, prompt: str) -> list[tuple[str, str]]:
    """The assistant turn of a history render ``full`` as ``(prefix, turn)`` pairs to parse.

    When ``full`` starts with the generation prompt, the turn is what follows it. Otherwise the
    generation prompt adds text the history turn lacks (``<think>\\n`` that a template pre-opens for
    a new turn but drops, with the reasoning, from history turns): the turn is what follows the
    common prefix (moved back to a cut ``<...>`` tag), parsed once with that prefix (what the history
    turn really follows) and once with the generation prompt.
    """
    if full.startswith(prompt):
        return [(prompt, full[len(prompt):])]
    k = 0
    while k < min(len(full), len(prompt)) and full[k] == prompt[k]:
        k += 1
    tag = full.rfind("<", 0, k)
    if tag >= 0 and ">" not in full[tag:k]:
        k = tag
    return [(full[:k], full[k:]), (prompt, full[k:])]


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


def _thinking_switch(chat: ChatTemplate) -> str | None:
    for name in THINKING_SWITCHES:
        on = _render(chat, [_SYSTEM, _USER], True, {name: True})
        off = _render(chat, [_SYSTEM, _USER], True, {name: False})
        if on is not None and off is not None and on != off:
            return name
    return None


def _reverse_name(name: str) -> tuple[int, ...]:
    """A sort key that orders names alphabetically inside a ``reverse=True`` sort."""
    return tuple(-ord(c) for c in name) + (1,)


def _recovers(family: _Family, prompt: str, turn: str, want: dict) -> bool:
    try:
        parser = family.module.ResponseParser(prompt, _TOOLS)
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
    switch = _thinking_switch(chat)
    variable_sets = [{}] + ([{switch: True}, {switch: False}] if switch else [])
    prompts: list[str] = []
    renders: list[str] = []
    turns: dict[str, list[tuple[str, str]]] = {name: [] for name in SAMPLES}
    for variables in variable_sets:
        for head in ([_SYSTEM, _USER], [_USER]):
            prompt = _render(chat, head, True, variables)
            if prompt is None:
                continue
            prompts.append(prompt)
            renders.append(prompt)
            for name, sample in SAMPLES.items():
                for as_json in (False, True):
                    for empty in (None, ""):
                        full = _render(chat, head + [_assistant(sample, as_json, empty)], False, variables)
                        if full is not None:
                            renders.append(full)
                            turns[name].extend(_split_turn(full, prompt))
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
