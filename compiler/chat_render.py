"""Render a model's chat template the way transformers' ``apply_chat_template`` does.

Used by ``respc detect`` (``compiler/detect.py``), the chat-template round trip of ``respc check
--chat-template`` (``compiler/roundtrip.py``) and ``tests/test_roundtrip.py``; it needs only jinja2
(a core dependency), never transformers. The environment mirrors transformers 5.23
(``utils/chat_template_utils.py``):

- ``jinja2.sandbox.ImmutableSandboxedEnvironment`` with ``trim_blocks``, ``lstrip_blocks`` and the
  ``loopcontrols`` extension;
- a ``tojson`` filter that does not HTML-escape (``json.dumps`` with ``ensure_ascii=False`` and the
  ``indent`` / ``separators`` / ``sort_keys`` options);
- globals ``raise_exception(message)`` (raises ``jinja2.exceptions.TemplateError``) and
  ``strftime_now(fmt)``, and restricted ``dict`` / ``namespace`` helpers;
- the reasoning of a message is visible under ``reasoning_content`` and ``thinking`` alike
  (transformers aliases the names it knows: ``reasoning_content``, ``thinking``, ``reasoning``);
- variables ``messages``, ``tools``, ``documents``, ``add_generation_prompt``, ``bos_token``,
  ``eos_token`` plus any keyword (``enable_thinking``, ``thinking``, ...).

The generation-tracking ``{% generation %}`` tag is accepted and renders its body unchanged.
"""

from __future__ import annotations

import copy
import functools
import json
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = ["render", "compile_template"]

# Names under which a message's reasoning may be given; the first is the one chat templates read.
_REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")


class _GenerationTag(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: renders the body as is (no mask tracking)."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    @staticmethod
    def _body(caller: Any) -> str:
        return caller()


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(value: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
            sort_keys: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


class _SafeDict:
    """``dict(...)`` for templates without exposing the ``dict`` type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict:
        return dict.fromkeys(*args, **kwargs)


class _SafeNamespace(jinja2.utils.Namespace):
    """``namespace(...)`` that refuses underscore-prefixed attribute names."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 - same trick as jinja2.utils.Namespace
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs)
        for name in attrs:
            _SafeNamespace._check(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _SafeNamespace._check(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(f"namespace attribute {name!r} is not allowed")


@functools.lru_cache(maxsize=64)
def compile_template(source: str) -> jinja2.Template:
    """Compile chat-template source into a ``jinja2.Template`` (cached by source text)."""
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationTag, jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _SafeDict()
    env.globals["namespace"] = _SafeNamespace
    return env.from_string(source)


def _alias_reasoning(message: dict) -> dict:
    for key in _REASONING_KEYS:
        if message.get(key) is not None:
            value = message[key]
            return {"thinking": value, **message, "reasoning_content": value}
    return message


def render(template_source: str, messages: list[dict], *, tools: list[dict] | None = None,
           add_generation_prompt: bool, **kwargs: Any) -> str:
    """Render ``messages`` with a chat template.

    Args:
        template_source: the Jinja source of the chat template.
        messages: OpenAI-style messages (dicts); they are deep-copied, never modified.
        tools: optional JSON-schema tools, passed as the ``tools`` variable.
        add_generation_prompt: whether to append the assistant generation prompt.
        **kwargs: further template variables (``bos_token``, ``eos_token``, ``enable_thinking``, ...).

    Returns:
        The rendered prompt text.

    Raises:
        jinja2.exceptions.TemplateError: the template called ``raise_exception`` or is invalid.
    """
    template = compile_template(template_source)
    chat = [_alias_reasoning(m) for m in copy.deepcopy(messages)]
    return template.render(
        messages=chat,
        tools=copy.deepcopy(tools),
        documents=kwargs.pop("documents", None),
        add_generation_prompt=add_generation_prompt,
        **kwargs,
    )
