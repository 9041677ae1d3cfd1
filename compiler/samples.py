"""The sample conversations that ``respc detect`` and ``respc check --chat-template`` render.

A chat template shows a model's output format in the assistant turns it renders for history
messages. This module holds what both tools feed it and how a turn is cut off a render:

- ``SAMPLES``: the sample assistant messages (a plain answer, reasoning and an answer, one tool
  call, two tool calls) in the corpus conventions (role assistant, absent keys absent), with
  ``TOOLS`` offered and a ``SYSTEM`` + ``USER`` (or ``USER`` only) conversation before them
  (:func:`conversations`; also with a ``/no_think`` or ``/think`` system message for the templates
  that read one);
- :func:`assistant_message`: a sample in one of the input shapes chat templates accept (tool-call
  arguments as a dict or a JSON string, ``content`` ``None`` or ``""`` beside tool calls, ids
  ``call00000``, nine alphanumerics as Mistral templates demand);
- :func:`render_sample`: a render with transformers' renderer (``compiler/chat_render.py``), tools
  given as OpenAI gives them and else bare (templates that read ``tool.name``), with the variables
  FireFunction-style templates read (``functions``, ``datetime``);
- :func:`split_turn`: the assistant turn of a history render and the text it follows;
- :func:`thinking_switch`: the chat-template variable that turns reasoning on and off;
- :class:`ChatTemplate` and :func:`read_chat_template`: a chat template read from a model.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .chat_render import ChatTemplateLimitError, render

__all__ = ["THINKING_SWITCHES", "TOOLS", "SAMPLES", "SYSTEM", "USER", "ChatTemplate", "read_chat_template",
           "SYSTEM_FLAGS", "conversations", "assistant_message", "render_sample", "render_or_none", "split_turn",
           "thinking_switch"]

# Chat-template variables that turn reasoning on or off, in the order they are tried.
THINKING_SWITCHES = ("enable_thinking", "thinking", "reasoning", "enable_reasoning", "thinking_mode")

def _function_tool(name: str, description: str, properties: dict, required: list[str]) -> dict:
    """A tool as OpenAI gives it: ``{"type": "function", "function": {name, description, parameters}}``."""
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


# The tools offered (rendered into the prompt, and given to the parsers for argument typing). Every
# parameter has a description: some chat templates print it unguarded (Command R+'s tool_use template
# writes ``param_fields.description`` and fails on a parameter without one).
TOOLS = [_function_tool("get_weather", "Get the current weather for a city.",
                        {"city": {"type": "string", "description": "City name"},
                         "days": {"type": "integer", "description": "Forecast length in days"}}, ["city"])]


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
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
USER = {"role": "user", "content": "Hi there! Can you help me?"}

# Thinking switches that some chat templates read from the system message (SmolLM3, Nemotron Nano 2).
SYSTEM_FLAGS = ("/no_think", "/think")


def conversations(chat: ChatTemplate) -> list[list[dict]]:
    """The conversations before the assistant turn: system + user, user only, and system + user
    with each of ``SYSTEM_FLAGS`` that the chat template's source mentions."""
    out = [[SYSTEM, USER], [USER]]
    for flag in SYSTEM_FLAGS:
        if flag in chat.source:
            out.append([{"role": "system", "content": f"{SYSTEM['content']} {flag}"}, USER])
    return out


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


def render_sample(chat: ChatTemplate, messages: list[dict], generation_prompt: bool, variables: dict,
                  offer_tools: bool = True) -> str:
    """Render ``messages`` with ``chat`` (see the module docstring for the tool shapes tried).

    Args:
        chat: the chat template.
        messages: the conversation (not modified).
        generation_prompt: ``add_generation_prompt``.
        variables: further chat-template variables (a thinking switch).
        offer_tools: False renders with no tools (``tools`` None, ``functions`` absent), to see
            whether the chat template offers tools at all.

    Returns:
        str: the render with the first tool shape the template accepts.

    Raises:
        ChatTemplateLimitError: the render ran past a limit of ``compiler/chat_render.py``
            (docs/security.md, "Limits"); raised at once, never retried.
        Exception: what the template raised for the last tool shape (``raise_exception`` gives a
            ``jinja2.exceptions.TemplateError``; a sandbox refusal a ``SecurityError``; a template
            may fail in any other way on an input shape it rejects).
    """
    bare = [t["function"] for t in TOOLS]
    if not offer_tools:
        return render(chat.source, messages, tools=None, add_generation_prompt=generation_prompt,
                      bos_token=chat.bos_token, eos_token=chat.eos_token, **variables)
    error: Exception | None = None
    for tools in (TOOLS, bare):
        try:
            return render(chat.source, messages, tools=tools, add_generation_prompt=generation_prompt,
                          bos_token=chat.bos_token, eos_token=chat.eos_token, origin=chat.origin,
                          **{"functions": json.dumps(bare), "datetime": "2025-01-01", **variables})
        except ChatTemplateLimitError:
            raise  # not a refusal of this input shape: the template itself is hostile or broken
        except Exception as exc:  # noqa: BLE001 - a chat template may fail in any way on an input shape
            error = exc
    assert error is not None
    raise error


def render_or_none(chat: ChatTemplate, messages: list[dict], generation_prompt: bool, variables: dict,
                   offer_tools: bool = True) -> str | None:
    """:func:`render_sample`, or None when the template refuses these inputs (a
    :class:`~respc.compiler.chat_render.ChatTemplateLimitError` is raised, not swallowed)."""
    try:
        return render_sample(chat, messages, generation_prompt, variables, offer_tools)
    except ChatTemplateLimitError:
        raise
    except Exception:  # noqa: BLE001 - see render_sample
        return None


def assistant_message(sample: dict, arguments_as_json: bool, empty_content: Any) -> dict:
    message = {"role": "assistant", **copy.deepcopy(sample)}
    if "tool_calls" in message:
        message.setdefault("content", empty_content)
        for index, call in enumerate(message["tool_calls"]):
            call["id"] = f"call{index:05d}"
            if arguments_as_json:
                call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
    return message


def split_turn(full: str, prompt: str) -> list[tuple[str, str]]:
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


def thinking_switch(chat: ChatTemplate) -> str | None:
    for name in THINKING_SWITCHES:
        on = render_or_none(chat, [SYSTEM, USER], True, {name: True})
        off = render_or_none(chat, [SYSTEM, USER], True, {name: False})
        if on is not None and off is not None and on != off:
            return name
    return None
