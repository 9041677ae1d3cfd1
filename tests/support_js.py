"""Shared by ``tests/test_js_target.py`` (JavaScript parity, docs/javascript.md) and
``benchmarks/replaced_text.py``: the templates the JavaScript target accepts, their vectors, random
outputs made of a template's delimiters, the written synthetic templates, json-region outputs and
OpenAI delta outputs, and the Python side of the delta adapter's message.
"""

from __future__ import annotations

import random

from respc.compiler.emit_js import _program, _sequence, js_support_problem
from respc.compiler.source import read_template
from support import CONFORMANCE, CORPUS, PEER_PREFIX, REPO, SHARED, family_cases, load_jsonl

PEERS = [SHARED / "corpus" / "peer_vectors.jsonl", SHARED / "corpus" / "peer_vectors2.jsonl"]


def _accepted_catalogue() -> list[str]:
    names = []
    for path in sorted((REPO / "templates").glob("*.json")):
        read = read_template(str(path))
        if js_support_problem(read.template, read.automaton) is None:
            names.append(path.stem)
    return names


def _conformance_templates() -> list[tuple[str, dict, list[dict]]]:
    """The conformance vectors whose inline template the JavaScript target accepts."""
    out = []
    for vector in load_jsonl(CONFORMANCE):
        try:
            read = read_template(vector["template"])
        except ValueError:
            continue
        if js_support_problem(read.template, read.automaton) is None:
            out.append((vector["id"], vector["template"], [vector]))
    return out


def _vectors_of(name: str) -> list[dict]:
    """Corpus vectors, peer vectors and family cases of catalogue template ``name``."""
    vectors = [v for v in load_jsonl(CORPUS) if v.get("family") == name]
    for path in PEERS:
        for v in load_jsonl(path):
            if v.get("family") == name:
                vectors.append(dict(v, prefix=PEER_PREFIX.get(v["id"], v["prefix"])))
    for case in family_cases(name):
        if "text" in case and "prefix" in case:
            vectors.append({"id": f"{name}/{case.get('name')}", "prefix": case["prefix"], "text": case["text"]})
    return vectors


def _random_outputs(template, seed: str, count: int) -> list[dict]:
    """Outputs made of the template's delimiters, pieces of them, whitespace and words (some
    astral characters, so offsets must count code points): a property test of parity."""
    rng = random.Random(seed)
    delims = [lit for f in template.fields for d in (f.open, f.close) if d is not None for lit in d.literals or ()]
    for f in template.fields:
        if f.open is not None and f.open.literals is None:
            delims += (_sequence_samples(f.open.pattern, rng) if isinstance(_sequence(f.open.pattern), list)
                       else _program_samples(f.open.pattern, rng))
    anchor = rng.choice(template.start_anchor.literals)
    words = ["hi", "a b", " ", "\n", "\n\n", "\t", "\u00a0", "\x1c", "\U0001F600", "caf\u00e9", "x<y", "'\""]
    if any(f.content == "json" for f in template.fields):
        # bodies of json fields: calls whole, damaged (recover repairs), cut, with a closer of the
        # template inside a string, non-finite numbers, calls without a name, lists of calls
        closer = rng.choice(delims) if delims else "</x>"
        words = words + [
            '{"name": "f", "arguments": {"a": 1, "b": [true, null]}}', '{"tool_name": "g", "parameters": {"q": "x"}}',
            '[{"name": "f", "arguments": {}}, {"tool_name": "t", "parameters": {"p": 2.5}}]',
            '{"name": "f", "arguments": "{\\"x\\": 2}"}', '{"name": "f", "arguments": {"s": "' + closer + '"}}',
            '{"name": "f", "args": {"a": "' + closer + '"', "{'name': 'f', 'arguments': {'a': True}}",
            '{"name": "f", "arguments": {"a": 1,}}', '{"name": "f", "arguments": {"a": NaN}}', '{"name": 5}',
            '{"name": "a b"}', '{"name": "f", "arguments": [1]}', '{"function": 1e16}', '{"x": -0.0, "content": 1.5e-7}',
            '{"name": "f"', '"', "}", "{", "]", '\\"', '{"name": "\U0001F600", "arguments": {"k": "\n"}}',
            '{"fn": {"name": "f", "args": {}}}', '"text"', "[1, 2]", "not json"]
    cases = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(0, 9)):
            roll = rng.random()
            if roll < 0.4 and delims:
                lit = rng.choice(delims)
                parts.append(lit if rng.random() < 0.8 else lit[:rng.randint(1, max(1, len(lit) - 1))])
            else:
                parts.append(rng.choice(words))
        text = "".join(parts)
        prefix = rng.choice(["", "user said hi" + anchor, anchor + rng.choice(delims + [""]) if delims else anchor,
                             "no anchor here", "x" + anchor.replace("\n", "\\n"),
                             anchor + "\U0001F600 " + rng.choice(delims + [""]) + "\U0001F600"])
        cases.append({"id": f"random/{len(cases)}", "prefix": prefix, "text": text})
    return cases


def _sequence_samples(pattern: str, rng: random.Random) -> list[str]:
    """Texts a regex open of the runtime's sequence form (compiler/emit_js.py ``_sequence``) matches,
    or nearly: each run 0 to 3 characters drawn from names, spaces, newlines, astral characters and
    the characters that end runs (so some samples are cut or fail)."""
    pool = ["get_weather", "f", " ", "\n", "\t", "\x1c", "\u00a0", "\U0001F600", "<", "`", ":", "x.y", "\u3000"]
    out = []
    for _ in range(6):
        text = []
        for item in _sequence(pattern):
            if item[0] == "l":
                text.append(item[1])
            else:
                text.extend(rng.choice(pool) for _ in range(rng.randint(item[2], 3)))
        out.append("".join(text))
    return out


def _program_samples(pattern: str, rng: random.Random) -> list[str]:
    """Texts a regex open the runtime's matcher runs (compiler/emit_js.py ``_program``) matches, or
    nearly: each repeat taken 0 to 3 times past its minimum, each class's character drawn from the
    pool of :func:`_sequence_samples` when one is in it (else its first member), a
    lookahead's text written after it, and now and then an item left out."""
    pool = ["g", "f", " ", "\n", "\t", "\x1c", "\u00a0", "\U0001F600", "<", "`", ":", ".", "\u3000", "1", "[", "{"]

    def one(ranges) -> str:
        fits = [c for c in pool if any(a <= ord(c) <= b for a, b in ranges)]
        if fits:
            return rng.choice(fits)
        return chr(ranges[0][0])  # (not a range's last member: unassigned ones repr apart by Unicode version)

    def walk(node) -> str:
        kind = node[0]
        if rng.random() < 0.03:
            return ""  # an item left out: the sample may fail or stop short
        if kind == "l":
            return node[1]
        if kind == "c":
            return one(node[1])
        if kind == "s":
            return "".join(walk(item) for item in node[1])
        if kind == "|":
            return walk(rng.choice(node[1]))
        if kind in ("g",):
            return walk(node[2])
        if kind in (">", "="):
            return walk(node[1])
        if kind == "r":
            top = node[1] + rng.randint(0, 3)
            count = top if node[2] < 0 else min(top, node[2])
            return "".join(walk(node[4]) for _ in range(count))
        return ""  # "^", "!": nothing to write

    tree = _program(pattern, linear=False)["tree"]
    return [walk(tree) for _ in range(6)]


#: Templates that use what the catalogue's accepted ones do not: no implicit field (text outside
#: every region is dropped), ``strip: false``, a required field, repeats without join (a list), a
#: field that neither repeats nor joins (D1), an opener that is also another field's closer, close
#: lists, a start anchor list, a three-character closer (recover: doubled and stray closers).
SYNTHETIC = {
    "no_implicit": {"start_anchor": "ASSISTANT:", "fields": {
        "thought": {"open": "<t>", "close": "</t>", "content": "text", "repeats": True},
        "answer": {"open": ["<a>", "<ans>"], "close": ["</a>", "</ans>", "<end>"], "content": "text",
                   "content_args": {"strip": False}, "optional": False}}},
    "d1_single": {"defaults": {"role": "assistant", "content": ""}, "start_anchor": ["<s>", "<start>"], "fields": {
        "reasoning": {"open": "[[", "close": "]]", "content": "text"},
        "content": {"close": ["<eos>", "[["], "content": "text", "content_args": {"strip": False}}}},
    "shared_delims": {"start_anchor": "\n>>", "fields": {
        "a": {"open": "<x>", "close": "<y>", "content": "text", "repeats": True, "join": " | "},
        "b": {"open": "<y>", "close": "<x>", "content": "text", "repeats": True},
        "content": {"close": "\u00a0\U0001F600\u00a0", "content": "text", "repeats": True, "join": "\n"}}},
    # keys JavaScript objects treat specially are plain message keys
    "proto_keys": {"defaults": {"constructor": "x", "role": "assistant"}, "start_anchor": "<s>", "fields": {
        "__proto__": {"open": "<p>", "close": "</p>", "content": "text"},
        "toString": {"open": "<q>", "close": "</q>", "content": "text", "repeats": True},
        "content": {"close": "<eos>", "content": "text"}}},
}


#: json regions (runtime/stream.py _close, _recovered, _inside_at_close, _close_deferred): each
#: written for one path of the Python core, run on hermes2pro (repeating calls, one object each)
#: and jamba (one region, a list of calls: transform_each)
JSON_REGIONS = [
    # a closer inside a JSON string, a later closer leaves the value whole (recover: kept as text)
    'hi <tool_call>{"name": "f", "arguments": {"a": "</tool_call>"}}</tool_call> bye',
    '<tool_calls>[{"name": "f", "arguments": {"a": "</tool_calls> x"}}]</tool_calls> bye',
    # ... and an opener of the field after it: ambiguous, malformed
    '<tool_call>{"name": "f", "arguments": {"a": "</tool_call> <tool_call>x"}}</tool_call> end',
    '<tool_calls>[{"name": "f", "arguments": {"a": "</tool_calls><tool_calls>"}}]</tool_calls>',
    # the output ends inside the string after the held closer (with an opener after it, or not)
    '<tool_call>{"name": "f", "arguments": {"a": "</tool_call> rest <tool_call>',
    '<tool_calls>[{"name": "f", "arguments": {"a": "</tool_calls> rest \U0001F600',
    # an escaped quote, nesting, a closer after the value ended
    '<tool_call>{"name": "f", "arguments": {"a": "\\"</tool_call>", "b": [{"c": "}"}]}}</tool_call>',
    # the opener written again inside the body (recover: the start before it dropped)
    '<tool_call>junk <tool_call>{"name": "f", "arguments": {}}</tool_call>',
    '<tool_calls>[{"name": <tool_calls>[{"name": "g", "arguments": {"x": 1}}]</tool_calls>',
    # truncated: a whole value, a cut value, whitespace only, nothing
    '<tool_call>{"name": "f", "arguments": {"a": 1}}', '<tool_call>{"name": "f", "arguments": {"a": 1',
    '<tool_call>  \n ', '<tool_call>', '<tool_calls>[{"name": "f", "arguments": {}}]  ',
    # recover repairs: Python literals, trailing comma, missing brackets, raw newline, string arguments
    "<tool_call>{'name': 'f', 'arguments': {'a': True, 'b': None}}</tool_call>",
    '<tool_calls>[{"name": "f", "arguments": {"a": 1,},}]</tool_calls>',
    '<tool_call>{"name": "f", "arguments": {"a": "x\ny"</tool_call>',
    '<tool_call>{"name": "f", "arguments": "{\\"x\\": [1, 2.5]}"}</tool_call>',
    '<tool_calls>{"name": "f", "arguments": {"a": 1}}</tool_calls>',
    # checks after the transform: no name, a bad name, arguments no object, non-finite numbers
    '<tool_call>{"arguments": {}}</tool_call>', '<tool_call>{"name": "a b"}</tool_call>',
    '<tool_call>{"name": 1.0e16, "arguments": {}}</tool_call>', '<tool_call>[1, "x", null]</tool_call>',
    '<tool_call>{"name": "f", "arguments": [1e-5, 0.0001]}</tool_call>',
    '<tool_call>{"name": "f", "arguments": {"a": [NaN]}}</tool_call>',
    '<tool_calls>[{"name": "f", "arguments": {"a": -Infinity}}]</tool_calls>', '<tool_calls>[1]</tool_calls>',
    '<tool_calls>"x"</tool_calls>', '<tool_calls>[{"arguments": {}}]</tool_calls>',
    # placeholders that cannot be filled; keys in code point order
    '<tool_call>{"nam": "f"}</tool_call>', '<tool_calls>[{"\U0001F600": 1, "\uffff": 2, "a": 3}]</tool_calls>',
    # the field written twice (jamba's does not repeat), malformed text into the answer
    '<tool_calls>[]</tool_calls> a <tool_calls>[{"name": "f", "arguments": {}}]</tool_calls> b '
    '<tool_calls>[{"name": "g", "arguments": {}}]</tool_calls>',
    'a <tool_call>oops</tool_call> b <tool_call>{"name": "f"}</tool_call> c <tool_call>[</tool_call>',
]


#: (errors, recover_arguments) of every delta case: strict, and recover with both argument policies
DELTA_MODES = [("strict", "hold"), ("recover", "hold"), ("recover", "stream")]
_CALL_BEGIN = "<\uff5ctool\u2581call\u2581begin\uff5c>function<\uff5ctool\u2581sep\uff5c>"


#: outputs written for the adapter's paths (docs/openai.md): integral floats sent at the close (2.0,
#: not 2), a trailing comma held and dropped, a call cut off by the end (truncated: never a call
#: with "hold"; kept as sent, named in diagnostics, with "stream" once a delta of it left), a body
#: that turns out malformed after its arguments streamed, Python literals, missing brackets completed,
#: raw control characters, lone surrogates escaped, a name that comes after the arguments
DELTA_OUTPUTS = {
    "hermes2pro": [
        'a <tool_call>{"name": "f", "arguments": {"a": 2.0, "b": [1e16, -0.0], "c": 1.5, "d": 1E2}}</tool_call> b',
        '<tool_call>{"name": "f", "arguments": {"a": "x", "b": 1,  }}</tool_call>',
        '<tool_call>{"name": "f", "arguments": {"a": "cut off',
        '<tool_call>{"name": "f", "arguments": {"a": 1, "b": "two"}} junk</tool_call> after',
        "<tool_call>{'name': 'f', 'arguments': {'a': True, 'b': None, 'c': False}}</tool_call>",
        '<tool_call>{"name": "f", "arguments": {"a": [1, {"b": 2</tool_call>',
        '<tool_call>{"name": "f", "arguments": {"a": "x\ny\t\x01"}}</tool_call>',
        # (a lone low surrogate: a lone high one waits for the next chunk in JavaScript, docs/javascript.md)
        '<tool_call>{"name": "f", "arguments": {"s": "\udc00 \\ud800 \U0001F600", "\udc00k": 1}}</tool_call>',
        '<tool_call>{"arguments": {"a": 1}, "name": "late"}</tool_call><tool_call>{"name": "g", "arguments": {}}',
        '<tool_call>{"name": "f", "arguments": {"a": 1}, "arguments": {"a": 2}}</tool_call>',
        '<tool_call>{"name": "f", "arguments": "{\\"x\\": 1.0}"}</tool_call>',
    ],
    "jamba": [
        '<tool_calls>[{"name": "f", "arguments": {"a": 1.0}}, {"name": "g", "arguments": {"b": [2.0, 3]}}]</tool_calls>',
        '<tool_calls>[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {"b": "cut',
        '<tool_calls>[{"name": "f", "arguments": {"a": 1},}, ]</tool_calls> x',
    ],
    "apertus": [
        '<|tools_prefix|>[{"get_weather": {"city": "Paris", "n": 2.0}}, {"f": {}}]<|tools_suffix|>',
        '<|tools_prefix|>[{"get_weather": {"city": "Par',
        '<|inner_prefix|> think <|inner_suffix|><|tools_prefix|>[{"a": {"x": 1}} ,{"b" : {"y": [True]}}]<|tools_suffix|>',
    ],
    "deepseek_v3": [
        _CALL_BEGIN + 'get_weather\n```json\n{"city": "Paris", "d": 3.0}\n```<\uff5ctool\u2581call\u2581end\uff5c>',
        _CALL_BEGIN + 'get_weather\n```json\n{"city": "Pa',
        _CALL_BEGIN + 'f\n```json\n{"a": 1} oops\n```<\uff5ctool\u2581call\u2581end\uff5c> after',
    ],
    "granite_20b_fc": [
        '<function_call> {"name": "f", "arguments": {"a": 2.0}} text <function_call> {"name": "g", "arguments": {"b": "c',
    ],
}


def parser_message(module, prefix: str, chunks: list[str], errors: str) -> dict:
    """The non-streamed message (the whole output at once) in OpenAI shape, ids call_0, call_1, ..."""
    from respc.openai import openai_message

    parser = module.ResponseParser(prefix, None, errors=errors)
    parser.feed("".join(chunks))
    message, _ = parser.finalize()
    return openai_message(message, ids=lambda n: f"call_{n}")


def _accumulated(feeds: list[list[dict]]) -> dict:
    """What a client accumulates from the chunks (content, reasoning, calls by index)."""
    out: dict = {"role": "assistant", "content": ""}
    calls: dict = {}
    for chunks in feeds:
        for chunk in chunks:
            for choice in chunk["choices"]:
                delta = choice["delta"]
                for key in ("content", "reasoning_content"):
                    if key in delta:
                        out[key] = out.get(key, "") + delta[key]
                for call in delta.get("tool_calls", ()):
                    have = calls.setdefault(call["index"], {"id": None, "type": "function",
                                                            "function": {"name": "", "arguments": ""}})
                    have["id"] = call.get("id", have["id"])
                    for key, value in call.get("function", {}).items():
                        have["function"][key] += value
    out["content"] = out["content"] or None
    if calls:
        out["tool_calls"] = [calls[k] for k in sorted(calls)]
    return out
