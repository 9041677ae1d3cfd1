"""Repairs of damaged region bodies, used only with ``errors="recover"``
(docs/events.md "Recovering from damaged output").

Theory of operation
-------------------
The strict path never changes: a body is parsed exactly as the reference parses it. When that
fails in ``"recover"`` mode the streaming core (``StreamParser._close``) asks the field's processor
for a *repair* before it gives up with ``region_malformed``. A repair is an ordinary parse of a
rewritten body; every rewrite it made is one note (a short English sentence, listed in
``docs/events.md`` under "Repairs and policies"), and the core reports each note as a diagnostic of kind
``"repaired"`` with the region's offsets. A repair that does not lead to a value changes nothing:
the region is then malformed, with its raw text kept, as before.

Repairs (each also has a literal-message test in ``tests/test_recover.py``):

* JSON bodies (:func:`repair_json_text`, one pass, strings tracked): a raw newline, tab, carriage
  return or other control character inside a string is escaped; ``True``/``False``/``None``
  outside strings read as ``true``/``false``/``null``; single-quoted strings become JSON strings;
  a comma right before ``}`` or ``]`` is dropped; brackets (and a string) still open at the
  region's close are closed. It is never tried on a region the stream cut off (that one is
  *truncated*: completing a half-written call would invent its arguments).
* Tool calls (:func:`decode_string_arguments`): an ``arguments`` value that is a string holding a
  JSON object (``"arguments": "{\\"city\\": \\"Paris\\"}"``) is decoded, in any value that looks
  like a tool call (a dict with ``name`` and ``arguments``, or one under ``function``).
* ``transform_each`` meeting one object where a list of objects is expected reads it as a list of
  one (``runtime/transforms.py``).
* ``xml-inline`` (``runtime/formats/xml_inline.py`` ``repair``): a missing closing tag (before the next
  tag or the region's close), a value holding its own closing tag, a body written as a JSON object
  instead of tags, tags only the template's ``recover_tag_pattern`` reads, a body whose only parameter
  ``arguments`` holds the whole argument object.
* ``pythonic`` (``runtime/formats/pythonic.py`` ``repair``): quotes of a keyword argument's string's own
  kind written unescaped inside it.
* ``json`` with ``string_delims`` whose open and close are one token: a string whose opening
  delimiter is missing (``{query:weather in Tokyo<|"|>}``).

Three more live in the streaming core (``runtime/stream.py``), as they concern markup, not bodies:
*opener inside the body* (``_recovered``: a region whose body does not parse and holds its own
opener text again is read from after the last copy, the abandoned start dropped with a
``repaired`` diagnostic), *stray closers* (``_stray_closers``: a closer with no opener in a text region stays text and is
reported, kind ``"stray-closer"``) and *declared repairs* (``_declared_repairs``: a template's
``repair_...`` pattern groups, note ``"declared"``). A template's recover-only openers and closers (keys
``recover_open`` / ``recover_close`` and their ``_pattern`` forms) are declared repairs of a second
parser class that only ``errors="recover"`` builds (compiler/recover_open.py).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["repair_json_text", "decode_string_arguments", "NOTES"]

_CLOSERS = {"{": "}", "[": "]"}
_LITERALS = {"True": "true", "False": "false", "None": "null"}
_ESCAPES = {"\n": ("\\n", "raw newline"), "\t": ("\\t", "raw tab"), "\r": ("\\r", "raw carriage return")}

#: Every repair note (the ``message`` of a ``"repaired"`` diagnostic), by repair. ``{}`` marks
#: the part that names what was repaired.
NOTES = {
    "control": "{} in a string escaped",
    "literal": "Python literal {} read as {}",
    "quote": "single-quoted string read as a JSON string",
    "comma": "trailing comma before {!r} removed",
    "unclosed-string": "string still open at the region's close: closed",
    "brackets": "missing {!r} added at the region's close",
    "arguments": "arguments of {!r} were a JSON-encoded string: decoded",
    "one-object": "one object where a list of them is expected: read as a list of one",
    "opener-inside": "the region's opener {!r} written again inside its body: the start before the last copy "
                     "was abandoned (dropped; the body after it is the value)",
    "inner-close": "value of {!r} holds its closing text {!r}: kept up to the last one",
    "missing-close": "missing {!r} added {}",
    "missing-open": "string closed by {!r} without its opening one: opening added",
    "json-body": "a JSON object as the body instead of tags: read as JSON",
    "recover-tag": "tag {!r} read by the recover-only tag_pattern",
    "wrapper": "the only parameter {!r} holds the argument object: unwrapped",
    "python-quotes": "{} unescaped {!r} inside the string of {!r}: escaped",
    "opener-again": "opener {!r} written again at the start of its region: consumed",
    "doubled-opener": "doubled opener {!r}: the first one was consumed",
    "doubled-closer": "closer {!r} written twice: the second one was consumed",
    "stray-closer": "closer {!r} of {!r} with no opener before it: kept as text of {!r}",
    "declared": "{}: {!r} accepted in the delimiter {!r} (a repair the template declares)",
}


def repair_json_text(text: str) -> tuple[str, list[str]]:
    """Rewrite common damage of a JSON text in one pass (see the module docstring).

    Args:
        text: a region body that failed to parse as JSON.

    Returns:
        tuple[str, list[str]]: the rewritten text and one note per kind of rewrite, in the order
        they were first needed (no note, and the text unchanged, when nothing was rewritten).
    """
    out: list[str] = []
    notes: list[str] = []
    stack: list[str] = []

    def note(message: str) -> None:
        if message not in notes:
            notes.append(message)

    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            quote = c
            if quote == "'":
                note(NOTES["quote"])
            out.append('"')
            i += 1
            while i < n:
                c = text[i]
                if c == "\\" and i + 1 < n:
                    nxt = text[i + 1]
                    out.append("'" if nxt == "'" else c + nxt)  # \' is no JSON escape
                    i += 2
                    continue
                if c == quote:
                    break
                if c == '"':
                    out.append('\\"')  # inside a single-quoted string
                elif c in _ESCAPES:
                    escaped, what = _ESCAPES[c]
                    out.append(escaped)
                    note(NOTES["control"].format(what))
                elif c < " ":
                    out.append(f"\\u{ord(c):04x}")
                    note(NOTES["control"].format("raw control character"))
                else:
                    out.append(c)
                i += 1
            if i >= n:
                note(NOTES["unclosed-string"])
            out.append('"')
            i += 1
            continue
        if c in _CLOSERS:
            stack.append(_CLOSERS[c])
        elif c == "}" or c == "]":
            j = len(out) - 1
            while j >= 0 and out[j].isspace():
                j -= 1
            if j >= 0 and out[j] == ",":
                del out[j]
                note(NOTES["comma"].format(c))
            if stack and stack[-1] == c:
                stack.pop()
        elif c.isalpha() or c == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            if word in _LITERALS:
                note(NOTES["literal"].format(word, _LITERALS[word]))
                word = _LITERALS[word]
            out.append(word)
            i = j
            continue
        out.append(c)
        i += 1
    if stack:
        j = len(out) - 1
        while j >= 0 and out[j].isspace():
            j -= 1
        if j >= 0 and out[j] == ",":
            del out[j]
        closers = "".join(reversed(stack))
        out.append(closers)
        note(NOTES["brackets"].format(closers))
    return "".join(out), notes


def decode_string_arguments(value: Any, notes: list[str]) -> Any:
    """Decode ``arguments`` strings that hold a JSON object, in values that look like tool calls.

    Args:
        value: a region's value after its transform (a call, a list of calls, anything else).
        notes: receives one note per decoded call.

    Returns:
        The same value, changed in place where a call's arguments were decoded.
    """
    items = value if isinstance(value, list) else (value,)
    for item in items:
        if not isinstance(item, dict):
            continue
        for call in (item, item.get("function")):
            if isinstance(call, dict) and "name" in call and isinstance(call.get("arguments"), str):
                raw = call["arguments"]
                if not raw.lstrip().startswith("{"):
                    continue
                try:
                    decoded = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(decoded, dict):
                    call["arguments"] = decoded
                    notes.append(NOTES["arguments"].format(call["name"]))
    return value
