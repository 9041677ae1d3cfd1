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

A chat template is code from whoever published the model, so a render is bounded
(docs/security.md, "Chat templates (rendered with a deadline and size caps)"): it must finish within
:data:`RENDER_SECONDS` (checked at every
call, attribute or item access and every :data:`_CHECK_EVERY` iterations of a ``for`` loop); no
operator (``*``, ``+``, ``**``, ``%``), string method (``center``, ``ljust``, ``rjust``, ``zfill``,
``expandtabs``, ``replace``, ``join``, ``format``) or filter (``center``, ``indent``, ``join``,
``format``, ``replace``) may build a string or list longer
than :data:`MAX_VALUE`, nor all of them together more than :data:`MAX_BUILT` items; the
rendered text may not exceed :data:`MAX_OUTPUT` characters. Past any of them :func:`render`
raises :class:`ChatTemplateLimitError` (a :class:`~respc.runtime.errors.TemplateError` naming
the chat template and the limit), which the callers (``respc detect``, ``check
--chat-template``, loading a model folder) do not treat as a refusal of one sample input but
pass on.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import threading
import time
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEscapeFormatter, SandboxedFormatter
from markupsafe import Markup

from respc.runtime.errors import TemplateError

__all__ = ["render", "compile_template", "ChatTemplateLimitError", "RENDER_SECONDS", "MAX_OUTPUT",
           "MAX_VALUE", "MAX_BUILT", "MAX_INT_BYTES"]

#: seconds one render may take (the catalogue's chat templates render a sample in milliseconds)
RENDER_SECONDS = 2.0
#: characters of one rendered text (a sample conversation renders to a few kB)
MAX_OUTPUT = 1_000_000
#: items (characters of a string, elements of a list) one operator, string method or filter may build
MAX_VALUE = 1_000_000
#: items all the operators, string methods and filters of one render may build together
MAX_BUILT = 20_000_000
#: a for loop checks the deadline once per this many iterations
_CHECK_EVERY = 256
#: bytes of an integer one ``*`` or ``**`` may build: a product is one C call the deadline cannot
#: interrupt, and multiplying two 1 MB integers takes about a second (100 kB: milliseconds)
MAX_INT_BYTES = 100_000


class ChatTemplateLimitError(TemplateError):
    """A chat template's render ran past a limit of :mod:`respc.compiler.chat_render` (time,
    size of a value it built, rendered size): docs/security.md, "Limits"."""


class _Budget:
    """The limits of the render in progress on this thread."""

    __slots__ = ("deadline", "built", "origin")

    def __init__(self, origin: str) -> None:
        self.deadline = time.monotonic() + RENDER_SECONDS
        self.built = 0
        self.origin = origin

    def fail(self, what: str) -> ChatTemplateLimitError:
        return ChatTemplateLimitError(f"chat template render stopped: {what} (docs/security.md, \"Limits\")",
                                      source=self.origin)

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise self.fail(f"it ran longer than {RENDER_SECONDS:g} s")

    def build_int(self, size: int, what: str) -> None:
        """An integer of ``size`` bytes: at most :data:`MAX_INT_BYTES`, counted as built."""
        if size > MAX_INT_BYTES:
            raise self.fail(f"{what} would build an integer of {size:,} bytes; the limit is {MAX_INT_BYTES:,}")
        self.build(size, what)

    def build(self, size: int, what: str) -> None:
        if size > MAX_VALUE:
            raise self.fail(f"{what} would build {size:,} items; the limit is {MAX_VALUE:,}")
        self.built += size
        if self.built > MAX_BUILT:
            raise self.fail(f"its operators, string methods and filters built more than {MAX_BUILT:,} items")


_STATE = threading.local()


def _budget() -> _Budget:
    budget = getattr(_STATE, "budget", None)
    if budget is None:  # a template rendered outside render(): the size caps hold, not the deadline
        return _Budget("<chat template>")
    return budget


def _size(value: Any) -> int | None:
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else None


def _widths(spec: str) -> int:
    """The largest width or precision written in a %-format or str.format string (0: none)."""
    numbers = [int(m) for m in re.findall(r"\d+", spec) if len(m) < 12]
    return max(numbers, default=0) if re.search(r"\d{7,}", spec) is None else MAX_VALUE + 1


def _star_widths(spec: str, args: Any) -> int:
    """The largest width or precision a %-format string takes from its arguments (``%*d``,
    ``%.*f``: a ``*`` reads the next argument as a number); 0 when it has no ``*``."""
    if "*" not in spec:
        return 0
    items = args if isinstance(args, tuple) else (args,)
    return max((abs(a) for a in items if isinstance(a, int)), default=0)


class _CappedFields:
    """A sandboxed ``str.format`` formatter that checks each field's width as the field is
    formatted: the format spec it gets is the resolved one, so a width written as a field of its
    own (``'{0:{1}}'.format('a', 99999999)``, ``{1[0]}``, ``format_map``) is seen before the
    padded text is built."""

    def format_field(self, value: Any, format_spec: str) -> Any:
        if format_spec:
            _budget().build(_widths(format_spec), "str.format")
        return super().format_field(value, format_spec)  # type: ignore[misc]


class _CappedFormatter(_CappedFields, SandboxedFormatter):
    pass


class _CappedEscapeFormatter(_CappedFields, SandboxedEscapeFormatter):
    pass


def _loop_guard(iterable: Any) -> Any:
    """Every ``for`` loop's iterable: checks the deadline every :data:`_CHECK_EVERY` items."""
    budget = _budget()
    count = 0
    for item in iterable:
        count += 1
        if count % _CHECK_EVERY == 0:
            budget.tick()
        yield item


_WIDTH_METHODS = {"center", "ljust", "rjust", "zfill", "expandtabs"}


class _LimitedEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox with a deadline and caps on what a template can build (module docstring)."""

    intercepted_binops = frozenset({"*", "+", "**", "%", "//"})
    respc_loop_guard = staticmethod(_loop_guard)

    def _parse(self, source: str, name: str | None, filename: str | None) -> jinja2.nodes.Template:
        tree = super()._parse(source, name, filename)
        for node in tree.find_all(jinja2.nodes.For):
            # an attribute of the environment, which no template variable can shadow
            node.iter = jinja2.nodes.Call(jinja2.nodes.EnvironmentAttribute("respc_loop_guard"), [node.iter], [],
                                          None, None, lineno=node.lineno)
        return tree

    def call_binop(self, context: Any, operator_: str, left: Any, right: Any) -> Any:
        budget = _budget()
        budget.tick()
        if operator_ == "*":
            for seq, times in ((left, right), (right, left)):
                n = _size(seq)
                if n is not None and isinstance(times, int):
                    budget.build(n * max(times, 0), "'*'")
            if isinstance(left, int) and isinstance(right, int):
                budget.build_int((abs(left).bit_length() + abs(right).bit_length()) // 8, "'*'")
        elif operator_ == "+":
            a, b = _size(left), _size(right)
            if a is not None and b is not None:
                budget.build(a + b, "'+'")
        elif operator_ == "**":
            if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
                budget.build_int(abs(left).bit_length() * right // 8, "'**'")
        elif operator_ == "%" and isinstance(left, str):
            budget.build(len(left) + max(_widths(left), _star_widths(left, right)), "'%'")
        return super().call_binop(context, operator_, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        budget = _budget()
        budget.tick()
        owner = getattr(__obj, "__self__", None)
        name = getattr(__obj, "__name__", "")
        if isinstance(owner, str) and name in _WIDTH_METHODS:
            numbers = [a for a in (*args, *kwargs.values()) if isinstance(a, int)]
            widest = max(numbers, default=8 if name == "expandtabs" else 0)
            budget.build(len(owner) * (widest if name == "expandtabs" else 1) + widest, f"str.{name}")
        elif isinstance(owner, str) and name == "replace" and len(args) >= 2:
            old, new = args[0], args[1]
            if isinstance(old, str) and isinstance(new, str):
                count = owner.count(old) if old else len(owner) + 1
                budget.build(len(owner) + count * len(new), "str.replace")
        elif isinstance(owner, str) and name == "join" and args:
            items = list(args[0]) if not isinstance(args[0], (list, tuple, str)) else args[0]
            args = (items, *args[1:])
            budget.build(sum(len(x) if isinstance(x, str) else 0 for x in items) + len(owner) * len(items),
                         "str.join")
        return super().call(__context, __obj, *args, **kwargs)

    def getattr(self, obj: Any, attribute: str) -> Any:
        _budget().tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _budget().tick()
        return super().getitem(obj, argument)

    def wrap_str_format(self, value: Any) -> Any:
        """``str.format`` / ``format_map`` of a template: sandboxed as jinja2 does it (attribute
        and item access in fields go through the sandbox), with every field's resolved width
        checked by :class:`_CappedFields` and the format string's own length and widths up front."""
        if super().wrap_str_format(value) is None:
            return None
        spec = value.__self__
        str_type = type(spec)
        is_format_map = value.__name__ == "format_map"
        if isinstance(spec, Markup):
            formatter: SandboxedFormatter = _CappedEscapeFormatter(self, escape=spec.escape)
        else:
            formatter = _CappedFormatter(self)

        def checked(*args: Any, **kwargs: Any) -> str:
            _budget().build(len(spec) + _widths(spec), "str.format")
            if is_format_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one argument and no keyword arguments")
                kwargs, args = args[0], ()
            return str_type(formatter.vformat(spec, args, kwargs))

        return functools.update_wrapper(checked, value)


def _capped_filter(name: str, original: Any) -> Any:
    """Filter ``name`` with the size of its result checked before it is built."""
    at = 1 if hasattr(original, "jinja_pass_arg") else 0  # pass_environment / pass_eval_context

    def filter_(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        budget.tick()
        value, rest = args[at], args[at + 1:]
        if name == "join":
            items = list(value)
            sep = rest[0] if rest else kwargs.get("d", "")
            size = len(items) * len(sep if isinstance(sep, str) else "") + sum(
                len(x) if isinstance(x, str) else 8 for x in items)
            args = (*args[:at], items, *rest)
        elif name == "format":
            size = len(str(value)) + max(_widths(str(value)), _star_widths(str(value), tuple(rest)))
        elif name == "replace":
            text, old, new = str(value), str(rest[0]) if rest else "", str(rest[1]) if len(rest) > 1 else ""
            size = len(text) + (text.count(old) if old else len(text) + 1) * len(new)
        else:  # center, indent: the text and its width (once per line)
            width = rest[0] if rest else kwargs.get("width", 0)
            width = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
            text = str(value)
            size = len(text) + max(width, 0) * (1 + text.count("\n"))
        budget.build(size, f"the {name!r} filter")
        return original(*args, **kwargs)

    if hasattr(original, "jinja_pass_arg"):
        filter_.jinja_pass_arg = original.jinja_pass_arg  # type: ignore[attr-defined]
    return filter_


def _capped_lipsum(n: int = 5, *args: Any, **kwargs: Any) -> Any:
    _budget().build(int(n) * 1000, "lipsum")
    return jinja2.utils.generate_lorem_ipsum(n, *args, **kwargs)

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
    env = _LimitedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationTag, jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _SafeDict()
    env.globals["namespace"] = _SafeNamespace
    env.globals["lipsum"] = _capped_lipsum
    for name in ("center", "indent", "join", "format", "replace"):
        env.filters[name] = _capped_filter(name, env.filters[name])
    return env.from_string(source)


def _alias_reasoning(message: dict) -> dict:
    for key in _REASONING_KEYS:
        if message.get(key) is not None:
            value = message[key]
            return {"thinking": value, **message, "reasoning_content": value}
    return message


def render(template_source: str, messages: list[dict], *, tools: list[dict] | None = None,
           add_generation_prompt: bool, origin: str = "<chat template>", **kwargs: Any) -> str:
    """Render ``messages`` with a chat template.

    Args:
        template_source: the Jinja source of the chat template.
        messages: OpenAI-style messages (dicts); they are deep-copied, never modified.
        tools: optional JSON-schema tools, passed as the ``tools`` variable.
        add_generation_prompt: whether to append the assistant generation prompt.
        **kwargs: further template variables (``bos_token``, ``eos_token``, ``enable_thinking``, ...).

    Returns:
        The rendered prompt text.

        origin: where the chat template came from, named by a limit's error.

    Raises:
        jinja2.exceptions.TemplateError: the template called ``raise_exception`` or is invalid.
        ChatTemplateLimitError: the render ran past a limit (module docstring; docs/security.md,
            "Limits"): longer than :data:`RENDER_SECONDS`, a value over :data:`MAX_VALUE` items,
            more than :data:`MAX_BUILT` built in all, or output over :data:`MAX_OUTPUT` characters.
    """
    budget = _STATE.budget = _Budget(origin)
    try:
        template = compile_template(template_source)
        chat = [_alias_reasoning(m) for m in copy.deepcopy(messages)]
        pieces = []
        size = 0
        for piece in template.generate(
            messages=chat,
            tools=copy.deepcopy(tools),
            documents=kwargs.pop("documents", None),
            add_generation_prompt=add_generation_prompt,
            **kwargs,
        ):
            size += len(piece)
            if size > MAX_OUTPUT:
                raise budget.fail(f"it rendered more than {MAX_OUTPUT:,} characters")
            budget.tick()
            pieces.append(piece)
        return "".join(pieces)
    except RecursionError:
        raise budget.fail("it recursed too deeply") from None
    finally:
        _STATE.budget = None
