"""The written cases of text the message replaces after it streamed (docs/openai.md, "Text a later
block replaces"), shared by ``tests/test_openai_replaced.py`` (the Python adapter) and
``tests/test_js_target.py`` (the JavaScript one, for parity): the templates, the hand-written
cases with their expected diagnostics, and an output of many blocks after a replacement.
"""

from __future__ import annotations


#: an implicit ``content`` field that neither joins nor repeats, around json tool calls
ASSIGNED = {"defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n", "fields": {
    "thinking": {"open": "<think>", "close": "</think>", "content": "text"},
    "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json",
                   "transform": {"type": "function", "function": "{content}"}},
    "content": {"close": "<|im_end|>", "content": "text"}}}
#: a non-empty default for ``content``, joined (``JOINED``) or assigned (``DEFAULTED``)
JOINED = {"defaults": {"role": "assistant", "content": "Hi"}, "start_anchor": "A:", "fields": {
    "thinking": {"open": "<think>", "close": "</think>", "content": "text"},
    "content": {"close": "<eos>", "content": "text", "repeats": True, "join": "\n"}}}
DEFAULTED = {"defaults": {"role": "assistant", "content": "Hi"}, "start_anchor": "A:", "fields": {
    "content": {"close": "<eos>", "content": "text"}}}

REPLACED = "the message replaced text already sent"


def _range(start: int, end: int, text: str) -> dict:
    return {"field": "content", "problem": REPLACED, "start": start, "end": end, "text": text}


#: (template, output, errors modes, accumulated content, message content, diagnostics), written by hand
CASES = [
    # each later block replaces the one before: two ranges, one per replacement
    (ASSIGNED, "a<|im_end|>b<|im_end|>c", ("strict", "recover"), "abc", "c", [_range(0, 1, "a"), _range(1, 2, "b")]),
    # the implicit field before and after a call
    (ASSIGNED, 'Before.<tool_call>{"name": "f", "arguments": {}}</tool_call>After.', ("strict", "recover"),
     "Before.After.", "After.", [_range(0, 7, "Before.")]),
    # an empty later block replaces nothing (D1): no diagnostic, and none at its close
    (ASSIGNED, "a<|im_end|> <|im_end|> <|im_end|>", ("strict", "recover"), "a", "a", []),
    # a malformed call's raw text goes to the implicit field, then a later block replaces the value
    (ASSIGNED, "a <tool_call>{bad</tool_call> b", ("recover",), "a<tool_call>{bad</tool_call>b", "b",
     [_range(0, 28, "a<tool_call>{bad</tool_call>")]),
    # a long replaced value: the offsets give the range, the excerpt its first EXCERPT characters
    (ASSIGNED, "x" * 200 + "<|im_end|>y", ("strict", "recover"), "x" * 200 + "y", "y", [_range(0, 200, "x" * 80)]),
    # astral characters count one (code points, as Python's offsets)
    (ASSIGNED, "\U0001F600a<|im_end|>b", ("strict", "recover"), "\U0001F600ab", "b", [_range(0, 2, "\U0001F600a")]),
    # a non-empty default is message text: it goes out after the role, joined blocks follow it
    (JOINED, "a<eos>b", ("strict", "recover"), "Hi\na\nb", "Hi\na\nb", []),
    (JOINED, "<think>t</think>", ("strict", "recover"), "Hi", "Hi", []),
    # ... and a block of an assigned field replaces it
    (DEFAULTED, "a<eos>b", ("strict", "recover"), "Hiab", "b", [_range(0, 2, "Hi"), _range(2, 3, "a")]),
    (DEFAULTED, " <eos>", ("strict", "recover"), "Hi", "Hi", []),
]


def replaced_blocks(n: int) -> str:
    """A replacement, then ``n`` blocks: each replaces the one before, and an empty block after each
    (which replaces nothing; with errors="recover" the doubled closer is dropped instead)."""
    return "a<|im_end|>b<|im_end|>" + "xyz<|im_end|> <|im_end|>" * n
