"""The chat-template round trip of ``respc check TEMPLATE --chat-template F``
(docs/writing-a-template.md "Against the model's chat template").

A response template is right for a model when it reads back what the model's own chat template
writes for an assistant turn. For each sample message of ``compiler/samples.py`` (an answer,
reasoning and an answer, one tool call, two tool calls; ``TOOLS`` offered):

1. render the conversation up to the user turn with the generation prompt (the *prompt*) and with
   the assistant message (the *full* render), with transformers' renderer
   (``compiler/chat_render.py``), in every input shape of :func:`respc.compiler.samples.assistant_message`,
   after each of :func:`respc.compiler.samples.conversations`, with the thinking switch unset, on
   and off;
2. cut the assistant turn off the full render (:func:`respc.compiler.samples.split_turn`) and parse
   it with the template's parser, the prompt (or the text the turn follows) as prefix;
3. the sample passes when some shape gives it back (``role`` aside: a chat template does not
   render it inside the turn; a tool-call ``id`` equal to the one rendered is dropped).

A sample that fails gives findings (:class:`respc.compiler.lint.Finding`, check ``roundtrip``):

- ``error``, one per message key that differs (the field writing that key, the sample, expected vs
  got, the rendered turn as example), taken from the first shape the chat template rendered;
- ``warning`` when the chat template does not render a key of the sample in a history turn (the
  render is the same without it, e.g. reasoning dropped from history, or with only the first item
  of a list, e.g. only the first tool call): that key is not checked. The findings come from the
  rendered shape with the fewest wrong keys, then the fewest unrendered ones;
- ``warning`` when the chat template cannot render the sample in any shape (its error).
"""

from __future__ import annotations

import json
from typing import Any

from .ir import Template
from .lint import Finding
from .chat_render import ChatTemplateLimitError
from .samples import (SAMPLES, SYSTEM, TOOLS, ChatTemplate, assistant_message, conversations, render_sample, split_turn,
                      thinking_switch)

__all__ = ["RoundTrip", "roundtrip"]

_MISSING = object()
_RAISED = object()  # key of the "message" standing for a parse that raised


def _cause(exc: BaseException) -> str:
    """The exception's message on one line."""
    return " ".join(str(exc).split())


#: the most characters of a value a round-trip finding quotes (a wrong family's chat template puts
#: the whole rendered prompt into content; the example of the finding shows where it went)
SHOWN_LIMIT = 120


def _shown(value: Any) -> str:
    """A message value as JSON, or ``(missing)`` for an absent key; a long value is cut to its first
    :data:`SHOWN_LIMIT` characters with the full length said."""
    if value is _MISSING:
        return "(missing)"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOWN_LIMIT else f"{text[:SHOWN_LIMIT]}... ({len(text)} characters)"


class RoundTrip(list):
    """The findings of :func:`roundtrip` (a ``list[Finding]``), with ``passed``: the names of the
    samples that parsed back exactly, in ``SAMPLES`` order, and ``total``: how many were tried."""

    passed: tuple[str, ...] = ()
    total: int = len(SAMPLES)
    #: when no sample parsed back and the template's start anchor is in none of the generation
    #: prompts the chat template rendered: the end of one of them (for ``respc check`` to quote)
    anchorless: str | None = None


def _got(module: Any, prefix: str, turn: str, message: dict) -> dict:
    """The parsed message in the samples' conventions, or ``{_RAISED: message}`` when parsing raised."""
    try:
        parser = module.ResponseParser(prefix, TOOLS)
        parser.feed(turn)
        got = dict(parser.finalize()[0])
    except Exception as exc:  # noqa: BLE001 - a parse failure is a finding, whatever it raised
        return {_RAISED: f"{type(exc).__name__}: {_cause(exc)}"}
    got.pop("role", None)
    given = [c.get("id") for c in message.get("tool_calls", [])]
    calls = got.get("tool_calls")
    if isinstance(calls, list):
        got["tool_calls"] = [
            {k: v for k, v in call.items() if not (k == "id" and i < len(given) and v == given[i])}
            if isinstance(call, dict) else call
            for i, call in enumerate(calls)]
    return got


def _without(sample: dict, key: str) -> dict:
    rest = {k: v for k, v in sample.items() if k != key}
    return rest or {"content": ""}


def _field_of(template: Template, key: str) -> str | None:
    """The field writing message key ``key`` (its slot), or None."""
    return next((f.name for f in template.fields if f.slot == key), None)


def _shape(variables: dict, head: list, as_json: bool) -> str:
    """The input shape, for a finding: ``system + user, enable_thinking=True, arguments as a dict``."""
    system = head[0]["content"] if len(head) > 1 else None
    parts = ["user only" if system is None else
             "system + user" if system == SYSTEM["content"] else f"system {system!r} + user"]
    parts += [f"{k}={v}" for k, v in variables.items()]
    parts.append("arguments as a JSON string" if as_json else "arguments as a dict")
    return ", ".join(parts)


def _first_mismatch(module: Any, chat: ChatTemplate, sample: dict, shapes: list) -> tuple | Exception | None:
    """None when some shape parses ``sample`` back. Else ``(shape, turn, got, unrendered)`` of the
    rendered shape with the fewest wrong keys (differing and rendered), then the fewest keys
    unrendered, then the first; or the exception of the last shape when none rendered."""
    best = None
    error: Exception | None = None
    for variables, head, as_json, empty in shapes:
        message = assistant_message(sample, as_json, empty)
        try:
            prompt = render_sample(chat, head, True, variables)
            full = render_sample(chat, head + [message], False, variables)
        except ChatTemplateLimitError:
            raise
        except Exception as exc:  # noqa: BLE001 - the template refuses this shape
            error = exc
            continue
        unrendered = None
        for prefix, turn in split_turn(full, prompt):
            got = _got(module, prefix, turn, message)
            if got == sample:
                return None
            if unrendered is None:
                unrendered = _unrendered(chat, head, sample, full, variables, as_json, empty)
            wrong = sum(sample.get(k, _MISSING) != got.get(k, _MISSING) and k not in unrendered
                        for k in {*sample, *got})
            rank = (wrong, len(unrendered))
            if best is None or rank < best[0]:
                best = (rank, _shape(variables, head, as_json), turn, got, unrendered)
    return best[1:] if best is not None else error


def roundtrip(module: Any, template: Template, chat: ChatTemplate) -> RoundTrip:
    """Render the sample messages with ``chat`` and parse them back with ``module``.

    Args:
        module: a generated parser module (``ResponseParser(prefix, tools)``) of ``template``.
        template: the template's IR (to name the field of each differing key).
        chat: the model's chat template (:func:`respc.compiler.samples.read_chat_template`).

    Returns:
        RoundTrip: the findings (see the module docstring), ``passed`` the samples read back.
    """
    switch = thinking_switch(chat)
    variable_sets = [{}] + ([{switch: True}, {switch: False}] if switch else [])
    shapes = [(variables, head, as_json, empty) for variables in variable_sets for head in conversations(chat)
              for as_json in (False, True) for empty in (None, "")]
    out = RoundTrip()
    passed = []
    for name, sample in SAMPLES.items():
        first = _first_mismatch(module, chat, sample, shapes)
        if first is None:
            passed.append(name)
            continue
        if not isinstance(first, tuple):
            out.append(Finding("warning", "roundtrip", None, "chat_template",
                               f"sample {name!r}: the chat template {chat.origin} cannot render it "
                               f"({type(first).__name__}: {first}); not checked", json.dumps(sample)))
            continue
        shape, turn, got, unrendered = first
        if _RAISED in got:
            out.append(Finding("error", "roundtrip", None, "parse",
                               f"sample {name!r} ({shape}) rendered by {chat.origin}: parsing the turn raised "
                               f"{got[_RAISED]}", turn))
            continue
        for key in sorted(set(sample) | set(got)):
            want, have = sample.get(key, _MISSING), got.get(key, _MISSING)
            if want == have:
                continue
            if key in unrendered:
                out.append(Finding("warning", "roundtrip", _field_of(template, key), key,
                                   f"sample {name!r}: the chat template {chat.origin} {unrendered[key]}; not "
                                   "checked", turn))
                continue
            out.append(Finding("error", "roundtrip", _field_of(template, key), key,
                               f"sample {name!r} ({shape}) rendered by {chat.origin} parses back differently: "
                               f"expected {_shown(want)}, got {_shown(have)}", turn))
    out.passed = tuple(passed)
    if not passed:
        out.anchorless = _prompt_without_anchor(module, chat, shapes)
    return out


#: how many characters of a generation prompt's end :func:`_prompt_without_anchor` gives
PROMPT_TAIL = 40


def _prompt_without_anchor(module: Any, chat: ChatTemplate, shapes: list) -> str | None:
    """The last :data:`PROMPT_TAIL` characters of a generation prompt ``chat`` renders when the
    template's start anchor occurs in none of those it renders for ``shapes`` (the parser's
    ``prefix-without-anchor`` diagnostic, docs/events.md), else None (also when none renders).
    The usual cause of a round trip in which nothing parses back: ``start_anchor`` is not the
    assistant header the prompt ends with (docs/writing-a-template.md, "Write the template")."""
    tail = None
    seen = set()
    for variables, head, _as_json, _empty in shapes:
        try:
            prompt = render_sample(chat, head, True, variables)
        except ChatTemplateLimitError:
            raise
        except Exception:  # noqa: BLE001 - the template refuses this shape: nothing to look at
            continue
        if prompt in seen:
            continue
        seen.add(prompt)
        parser = module.ResponseParser(prompt, TOOLS, errors="recover")  # recover: never raises on text
        if not any(d["kind"] == "prefix-without-anchor" for d in parser.diagnostics):
            return None
        tail = prompt[-PROMPT_TAIL:]
    return tail


def _unrendered(chat: ChatTemplate, head: list, sample: dict, full: str, variables: dict, as_json: bool,
                empty: Any) -> dict[str, str]:
    """The keys of ``sample`` the chat template does not render (or renders in part), each with a
    phrase saying how: the full render is unchanged without the key, or with only the first item of
    a list value (a template that renders only the first tool call)."""
    keys = {}
    for key, value in sample.items():
        variants = [(_without(sample, key),
                     f"does not render {key} in a history turn (the render is the same without it)")]
        if isinstance(value, list) and len(value) > 1:
            variants.append(({**sample, key: value[:1]},
                             f"renders only the first of the {len(value)} items of {key} in a history turn (the "
                             "render is the same with the first alone)"))
        for variant, how in variants:
            try:
                render = render_sample(chat, head + [assistant_message(variant, as_json, empty)], False, variables)
            except ChatTemplateLimitError:
                raise
            except Exception:  # noqa: BLE001 - cannot tell: the key counts as rendered
                continue
            if render == full:
                keys[key] = how
                break
    return keys
