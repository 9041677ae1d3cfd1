"""Pass 4: a Lark grammar of the whole-message language of one template (SPEC section 8).

The grammar describes the text the parser consumes -- the prefix after its last start anchor
followed by the model output -- as a sequence of items: implicit-field text, the implicit field's
close delimiter, and explicit regions ``OPEN body CLOSE?`` (a region without a close runs to the end
of the stream, and the last region may be cut off by it). It is embedded in every generated module
as ``GRAMMAR`` for documentation and tests (an Earley parser with the dynamic lexer and
``regex=True`` accepts every conforming output); the streaming parser never uses it at run time.

Terminals are regexes in the ``regex`` module's syntax with DOTALL (``/.../s``). Lark rejects
terminals that can match the empty string, so a delimiter that can be zero-width (``^``,
``(?:^|<think>)``) gets ``(?!\\G)`` appended (non-empty matches only) and its region may also start
without it.
"""

from __future__ import annotations

try:  # Python 3.11+
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef]

from .ir import Delimiter, Template

__all__ = ["build_grammar"]


def _lark_regex(pattern: str) -> str:
    """Write a regex as a Lark ``/.../s`` literal: unescaped slashes and raw line breaks escaped."""
    out, escaped = [], False
    for ch in pattern:
        if escaped:
            out.append({"\n": "n", "\r": "r"}.get(ch, ch))
            escaped = False
        elif ch == "\\":
            out.append(ch)
            escaped = True
        elif ch == "/":
            out.append("\\/")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        else:
            out.append(ch)
    return "/" + "".join(out) + "/s"


def _can_be_empty(delim: Delimiter) -> bool:
    if delim.literals is not None:
        return False
    try:
        return sre_parse.parse(delim.pattern).getwidth()[0] == 0
    except Exception:  # regex-only syntax: assume it might be empty, the (?!\G) guard is harmless
        return True


def _terminal(delim: Delimiter) -> str:
    if _can_be_empty(delim):
        return f"(?:{delim.pattern})(?!\\G)"
    return f"(?:{delim.pattern})"


def _comment(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)


def build_grammar(template: Template) -> str:
    """Return the Lark grammar text of ``template``'s whole-message language.

    Args:
        template: the IR.

    Returns:
        str: a grammar with start rule ``start``; rule ``region_<i>`` per explicit field ``i``,
        ``implicit_text`` / ``sink_text`` for text outside regions, ``implicit_close`` for the
        implicit field's close delimiter.
    """
    fields = template.fields
    lines = [f"// Whole-message language of {_comment(template.source)} (respc; Earley, dynamic lexer, regex=True)",
             "start: _item*"]
    items = []
    terminals = []
    stops = []
    implicit = fields[template.implicit] if template.implicit is not None else None
    outside = "implicit_text" if implicit is not None else "sink_text"
    items.append(outside)
    if implicit is not None and implicit.close is not None:
        items.append("implicit_close")
        lines.append("implicit_close: ICLOSE")
        terminals.append(f"ICLOSE: {_lark_regex(_terminal(implicit.close))}  "
                         f"// close of {_comment(repr(implicit.name))}")
        stops.append(_terminal(implicit.close))
    for index, field in enumerate(fields):
        if field.is_implicit:
            continue
        items.append(f"region_{index}")
        body = f"BODY_{index}"
        close = f" CLOSE_{index}?" if field.close is not None else ""
        alternatives = [f"OPEN_{index} {body}?{close}"]
        if _can_be_empty(field.open):
            alternatives.append(f"{body}{close}")
        lines.append(f"region_{index}: " + " | ".join(alternatives) + f"  // field {_comment(repr(field.name))}")
        terminals.append(f"OPEN_{index}: {_lark_regex(_terminal(field.open))}")
        stops.append(_terminal(field.open))
        if field.close is not None:
            terminals.append(f"CLOSE_{index}: {_lark_regex(_terminal(field.close))}")
            body_regex = "(?:(?!" + _terminal(field.close) + ")[\\s\\S])+"
            terminals.append(f"{body}: {_lark_regex(body_regex)}")
        else:
            terminals.append(f"{body}: /[\\s\\S]+/s")
    lines.insert(2, "_item: " + " | ".join(items))
    lines.append(f"{outside}: TEXT")
    guard = "|".join(stops)
    text = f"(?:(?!{guard})[\\s\\S])+" if stops else "[\\s\\S]+"
    terminals.append(f"TEXT: {_lark_regex(text)}")
    return "\n".join(lines + terminals) + "\n"
