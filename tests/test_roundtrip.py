"""Chat-template round trip: render a message with a family's real chat template, parse it back.

For every family with a real chat template in ``../shared/corpus/chat_templates/<family>.jinja`` (or,
for families added later, ``tests/cases/chat_templates/<family>.jinja``) and a catalogue template ``templates/<family>.json``, and for every message M in ``MESSAGES``:

1. render ``[system?, user, assistant(M)]`` without the generation prompt (the *full* render) and
   ``[system?, user]`` with it (the *prompt*), using ``compiler/chat_render.py`` (transformers' renderer);
2. split the assistant turn off the full render: when the full render starts with the prompt, the turn
   is the rest and the prompt is the parser's ``prefix``; otherwise (the template writes a history turn
   differently from what it prompts for, e.g. a ``<think>`` that the prompt pre-opens and the history
   turn omits or closes at once) the turn starts at the end of the longest common prefix of the two
   renders, moved back to the start of a ``<...>`` tag it would cut, and ``prefix`` is still the prompt
   (what the parser sees in real use) unless the family's config says ``"prefix_from": "full"`` (then
   it is the full render up to the split);
3. parse the turn with the parser compiled from ``templates/<family>.json`` through respc's public API
   (``respc.compile_template(template).parse_response(text, prefix=..., tools=TOOLS)``), whole and one
   character at a time, and require M back in the corpus conventions (``role: assistant``,
   ``reasoning_content``, ``content``, ``tool_calls`` as ``{"type": "function", "function": {"name",
   "arguments": dict}}``, no ids, empty keys absent).

Per-family settings: ``tests/cases/roundtrip/<family>.json`` (optional; every key optional):

``render_kwargs``      dict, extra chat-template variables (``{"enable_thinking": true}``, ...).
``bos_token``          str, default ``""``.
``eos_token``          str, default ``""``.
``system``             bool or str, default true: start the conversation with a system message (a
                       string replaces its text, e.g. to carry a ``/no_think`` switch).
``render_tools``       bool, default true: pass ``TOOLS`` to the chat template (the parser always gets
                       them, for argument typing).
``tools_format``       ``"function"`` (default: ``{"type": "function", "function": {...}}``) or ``"bare"``
                       (``{"name", "description", "parameters"}``, for templates that read
                       ``tool.name`` directly).
``object_schemas``     dict, default ``{}``: keys added to every ``"type": "object"`` schema below a
                       tool's parameters in the tools the chat template renders (Command R+'s
                       tool_use template prints an object parameter's ``additionalProperties`` and
                       fails without one); the parser gets ``TOOLS`` unchanged.
``reasoning_key``      str, default ``"reasoning_content"``: the message key the chat template reads the
                       reasoning from (the renderer also aliases ``thinking``, as transformers does).
``arguments_as``       ``"dict"`` (default) or ``"json"``: how ``tool_calls[i].function.arguments`` is
                       handed to the chat template (a JSON string when the template concatenates it).
``tool_call_content``  value of ``content`` in a message that only carries tool calls; default
                       ``null`` (use ``""`` for templates that would print ``None``).
``tool_call_id``       format string for tool-call ids (``{index}``, ``{name}``), default
                       ``"call{index:05d}"`` (nine alphanumerics, as Mistral templates demand); ``null``
                       gives no ids.
``prefix_from``        ``"prompt"`` (default) or ``"full"``: where ``prefix`` comes from when the full render
                       does not start with the prompt (see step 2).
``skip``               ``{message name: reason}``: the message does not apply to the family (e.g. a
                       model without reasoning); ``"*"`` applies to every message not listed.
``xfail``              ``{message name: reason}``: strict xfail, the round trip is known to fail for the
                       stated reason; ``"*"`` applies to every message not listed.

Without ``../shared`` only this repository's own chat templates run; a family skips while its
``templates/<family>.json`` does not exist yet.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from respc.compiler.chat_render import render

from support import CHAT_TEMPLATES, REPO, chat_templates, missing, tool_call
CONFIG_DIR = Path(__file__).resolve().parent / "cases" / "roundtrip"
CATALOGUE = REPO / "templates"

if not chat_templates():  # (this repository's own chat templates run without ../shared)
    pytest.skip(missing(CHAT_TEMPLATES), allow_module_level=True)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"},
                    "days": {"type": "integer", "description": "Forecast length in days"},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "plan_trip",
            "description": "Plan a trip.",
            "parameters": {
                "type": "object",
                "properties": {
                    "destination": {
                        "type": "object",
                        "description": "Where to go",
                        "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
                    },
                    "stops": {"type": "array", "items": {"type": "string"}, "description": "Stops on the way"},
                    "budget": {"type": "number", "description": "Budget in euros"},
                    "flexible": {"type": "boolean", "description": "Whether dates may move"},
                },
                "required": ["destination"],
            },
        },
    },
]


# The assistant messages M, in the corpus conventions (the expected parse results, minus the role).
MESSAGES: dict[str, dict] = {
    "reasoning_and_content": {
        "reasoning_content": "The user says hello. A short friendly greeting is enough.",
        "content": "Hello! How can I help you today?",
    },
    "content_only": {"content": "The capital of France is Paris."},
    "one_tool_call": {"tool_calls": [tool_call("get_weather", {"city": "Paris", "unit": "celsius"})]},
    "reasoning_tool_call": {
        "reasoning_content": "I need the weather in Paris, so I will call the tool.",
        "tool_calls": [tool_call("get_weather", {"city": "Paris"})],
    },
    "several_tool_calls": {
        "tool_calls": [
            tool_call("get_weather", {"city": "Paris", "unit": "celsius"}),
            tool_call("get_weather", {"city": "Tokyo", "days": 3}),
        ]
    },
    "nested_arguments": {
        "tool_calls": [
            tool_call(
                "plan_trip",
                {
                    "destination": {"city": "Rome", "country": "Italy"},
                    "stops": ["Florence", "Pisa"],
                    "budget": 1200.5,
                    "flexible": True,
                },
            )
        ]
    },
    "unicode_content": {"content": "Ça va très bien — 東京は晴れです ☀️ Привет!"},
    "unicode_arguments": {"tool_calls": [tool_call("get_weather", {"city": "Zürich — 苏黎世"})]},
}

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
USER = {"role": "user", "content": "Hi there! Can you help me?"}


def _families() -> list[str]:
    return sorted(chat_templates())


def _config(family: str) -> dict:
    path = CONFIG_DIR / f"{family}.json"
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def _params() -> list:
    params = []
    for family in _families():
        config = _config(family)
        skip, xfail = config.get("skip", {}), config.get("xfail", {})
        for name in MESSAGES:
            marks = []
            if name in skip or (name not in xfail and "*" in skip):
                marks.append(pytest.mark.skip(reason=skip.get(name, skip.get("*"))))
            elif name in xfail or "*" in xfail:
                marks.append(pytest.mark.xfail(strict=True, reason=xfail.get(name, xfail.get("*"))))
            params.append(pytest.param(family, name, marks=marks, id=f"{family}-{name}"))
    return params


def _assistant_message(expected: dict, config: dict) -> dict:
    """Build the chat-template input for M, in the shape this family's chat template reads."""
    message: dict = {"role": "assistant"}
    if "reasoning_content" in expected:
        message[config.get("reasoning_key", "reasoning_content")] = expected["reasoning_content"]
    if "tool_calls" in expected:
        message["content"] = expected.get("content", config.get("tool_call_content"))
        id_format = config.get("tool_call_id", "call{index:05d}")
        calls = []
        for index, call in enumerate(copy.deepcopy(expected["tool_calls"])):
            function = call["function"]
            if config.get("arguments_as", "dict") == "json":
                function["arguments"] = json.dumps(function["arguments"], ensure_ascii=False)
            if id_format is not None:
                call["id"] = id_format.format(index=index, name=function["name"])
            calls.append(call)
        message["tool_calls"] = calls
    else:
        message["content"] = expected.get("content", "")
    return message


def split_turn(prompt: str, full: str, prefix_from: str = "prompt") -> tuple[str, str]:
    """Return ``(prefix, assistant_turn)`` for a full render and the generation prompt (see top)."""
    if full.startswith(prompt):
        return prompt, full[len(prompt):]
    common = 0
    for a, b in zip(prompt, full):
        if a != b:
            break
        common += 1
    tag_start = full.rfind("<", 0, common)
    if tag_start != -1 and ">" not in full[tag_start:common]:
        common = tag_start  # never cut a special token or tag in two
    prefix = full[:common] if prefix_from == "full" else prompt
    return prefix, full[common:]


def _with_object_keys(tools: list[dict], extra: dict) -> list[dict]:
    """A copy of ``tools`` whose parameter schemas of type object (below the top level) carry ``extra``."""
    def walk(schema):
        if isinstance(schema, dict):
            for value in schema.values():
                walk(value)
            if schema.get("type") == "object" and "properties" in schema and schema is not top:
                for key, value in extra.items():
                    schema.setdefault(key, copy.deepcopy(value))
        elif isinstance(schema, list):
            for value in schema:
                walk(value)
    tools = copy.deepcopy(tools)
    for tool in tools:
        top = tool.get("function", tool)["parameters"]
        walk(top)
    return tools


def _render_pair(family: str, config: dict, message: dict) -> tuple[str, str]:
    source = chat_templates()[family].read_text(encoding="utf-8")
    system = config.get("system", True)
    if isinstance(system, str):
        history = [{"role": "system", "content": system}, USER]
    else:
        history = ([SYSTEM] if system else []) + [USER]
    kwargs = dict(config.get("render_kwargs", {}))
    kwargs["bos_token"] = config.get("bos_token", "")
    kwargs["eos_token"] = config.get("eos_token", "")
    tools = None
    if config.get("render_tools", True):
        tools = TOOLS if config.get("tools_format", "function") == "function" else [t["function"] for t in TOOLS]
        if config.get("object_schemas"):
            tools = _with_object_keys(tools, config["object_schemas"])
    prompt = render(source, history, tools=tools, add_generation_prompt=True, **kwargs)
    full = render(source, history + [message], tools=tools, add_generation_prompt=False, **kwargs)
    return prompt, full


@pytest.mark.parametrize(("family", "name"), _params())
def test_roundtrip(family: str, name: str) -> None:
    template_path = CATALOGUE / f"{family}.json"
    if not template_path.is_file():
        pytest.skip(f"templates/{family}.json is not written yet")
    respc = pytest.importorskip("respc")
    config = _config(family)
    expected = {"role": "assistant", **copy.deepcopy(MESSAGES[name])}
    prompt, full = _render_pair(family, config, _assistant_message(MESSAGES[name], config))
    prefix, text = split_turn(prompt, full, config.get("prefix_from", "prompt"))

    with template_path.open(encoding="utf-8") as f:
        module = respc.compile_template(json.load(f))

    whole = module.parse_response(text, prefix=prefix, tools=TOOLS)
    assert whole == expected, f"assistant turn {text!r} after prefix tail {prefix[-80:]!r}"

    parser = module.ResponseParser(prefix, tools=TOOLS)
    for char in text:
        parser.feed(char)
    streamed, _ = parser.finalize()
    assert streamed == expected, f"per-character feed of {text!r}"
