"""The json format (runtime/formats/json_.py): its argument reader against the oracle.

The json argument reader reads by runs (runtime/formats/json_.py ``ArgumentReader.feed``: compiled regexes over
string runs, whitespace, scalars and nested values) and gives exactly what the character-by-character reader gave
(tests/old_json_argument_reader.py, the reader as it was, kept as the oracle): the same pieces in the same order
(``out`` calls, argument fragments cut at the same places), the same end, the same stop and the same structural
state after every piece, on random bodies (well formed, damaged, cut) and random chunkings, in both modes.

Last section: one reader gives where the value ends, whether it is complete, and the argument pieces, on fixed
chunkings; it finds the end the core's boundary reader (``JsonBoundary``) finds, also as the core's boundary decoder
(``ReaderBoundary``, the body read once)."""

from __future__ import annotations

import random

import pytest

from old_json_argument_reader import OldArgumentReader
from respc.runtime.formats.json_ import ArgumentReader, JsonBoundary, ReaderBoundary
from support import fixed_chunkings, oracle_pieces

KEYS = ("name", ("arguments", "parameters"))
ALL_HELD = {"city": True, "n": True, "days": True, "x": True, "kéy": True}
STATE = ("end", "pos", "dead", "dead_at", "instr", "esc", "expect", "n", "name", "argdepth", "hold", "comma", "curkey",
         "holdkey")


def _string(rng: random.Random) -> str:
    parts = ['"']
    for _ in range(rng.randrange(0, 5)):
        parts.append(rng.choice(["Paris", "a b", "}", "]", ",", ":", "{", "[", '\\"', "\\\\", "\\n", "\\u00e9", "\n",
                                 "\t", "\x01", "é", "TFN", "True", "x" * rng.randrange(1, 30), "\\x", "\\"]))
    if rng.random() < 0.93:
        parts.append('"')
    return "".join(parts)


def _ws(rng: random.Random) -> str:
    return rng.choice(["", "", "", " ", "\n  ", "\t", " \r\n "])


def _value(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if depth < 3 and roll < 0.15:
        items = [_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
        tail = "," + _ws(rng) if items and rng.random() < 0.15 else ""  # a trailing comma (damage)
        return "[" + _ws(rng) + ("," + _ws(rng)).join(items) + tail + _ws(rng) + "]"
    if depth < 3 and roll < 0.3:
        return _object(rng, depth + 1)
    if roll < 0.55:
        return _string(rng)
    return rng.choice(["1", "-2.5e3", "0", "true", "false", "null", "True", "False", "None", "NaN", "nope", "12x",
                       "1 2", "3 ,", "-1 .5\n", "tru", "Nonesuch", "]", "}", ":", '1"a"', "{", "5]"])


def _object(rng: random.Random, depth: int = 0) -> str:
    pairs = []
    for _ in range(rng.randrange(0, 4)):
        key = rng.choice(['"city"', '"n"', '"days"', '"k\\u00e9y"', '"bad\\q"', '"x"', "bare", '"a\nb"'])
        pairs.append(key + _ws(rng) + rng.choice([":", ":", ":", ""]) + _ws(rng) + _value(rng, depth))
    tail = "," + _ws(rng) if pairs and rng.random() < 0.15 else ""
    return "{" + _ws(rng) + ("," + _ws(rng)).join(pairs) + tail + _ws(rng) + rng.choice(["}", "}", "}", "]", ""])


def _call(rng: random.Random) -> str:
    name = rng.choice(['"get_weather"', '"f"', '"na\\u006de"', '"\\z"', "3", '"a\tb"'])
    args = _object(rng)
    key = rng.choice(['"arguments"', '"parameters"', '"arguments"', '"other"'])
    pairs = [f'"name":{_ws(rng)}{name}', f"{key}:{_ws(rng)}{args}"]
    if rng.random() < 0.3:
        pairs.reverse()
    if rng.random() < 0.15:
        pairs.insert(1, f'"id": {_value(rng)}')
    if rng.random() < 0.05:
        pairs.append('"name": "again"')
    return "{" + _ws(rng) + ("," + _ws(rng)).join(pairs) + _ws(rng) + rng.choice(["}", "}", "}", ""])


def _body(rng: random.Random, mode: str) -> str:
    if mode == "args":
        body = _ws(rng) + _object(rng)
    elif rng.random() < 0.3:
        body = _ws(rng) + "[" + ("," + _ws(rng)).join(_call(rng) for _ in range(rng.randrange(1, 4))) + "]"
    else:
        body = _ws(rng) + _call(rng)
    if rng.random() < 0.2:
        body = body[:rng.randrange(len(body) + 1)]  # cut
    return body + rng.choice(["", "", " tail", "</tool_call>", '{"again": 1}', "\n"])


def _run(cls, mode: str, pieces: list[str], held_keys: dict, boundary: bool):
    got = []
    states = []

    def held(n, key):
        return held_keys.get(key, False)

    def typed(n, key, raw):
        return None if "x" in raw else "<" + raw + ">"

    reader = cls(mode, KEYS if mode == "object" else (), lambda kind, n, payload: got.append((kind, n, payload)),
                 held, typed)
    decoder = ReaderBoundary(reader, JsonBoundary()) if boundary else None
    ends = []
    for piece in pieces:
        if decoder is not None:
            if reader.end >= 0 or decoder._base >= 0:
                break
            ends.append(decoder.feed(piece))
        else:
            reader.feed(piece)
        states.append(tuple(getattr(reader, name) for name in STATE) + (list(reader.stack), reader.word))
    return got, states, ends


@pytest.mark.parametrize("mode", ["object", "args"])
def test_reading_by_runs_gives_the_character_readers_pieces(mode):
    rng = random.Random(2612 if mode == "object" else 2613)
    for case in range(700):
        body = _body(rng, mode)
        held_keys = rng.choice([{}, {"n": True}, {"days": True, "x": None}, {"city": True}, {"n": None}, ALL_HELD])
        for pieces in (oracle_pieces(rng, body), list(body), [body]):
            for boundary in (False, True):
                new = _run(ArgumentReader, mode, pieces, held_keys, boundary)
                old = _run(OldArgumentReader, mode, pieces, held_keys, boundary)
                assert new == old, (case, body, pieces, held_keys, boundary)


def test_reading_by_runs_on_the_issue_shapes():
    """Typical tool-call bodies, one character at a time and whole: the same pieces and end as the oracle, and the
    argument text is the arguments object as written."""
    bodies = ['{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
              '[{"name": "f", "arguments": {"a": [1, 2.5, {"b": null}], "s": "x\\"y"}}, {"name": "g", "parameters": {}}]',
              '{"name": "f", "arguments": {"a": True, "b": [None, ], "c": "raw\ttab",}}']
    for body in bodies:
        for pieces in (list(body), [body]):
            assert _run(ArgumentReader, "object", pieces, {}, True) == _run(OldArgumentReader, "object", pieces, {}, True)
    got, _, _ = _run(ArgumentReader, "object", [bodies[0]], {}, False)
    assert "".join(p for kind, _, p in got if kind == "args") == '{"city": "Paris"}'


def test_long_runs_are_read_in_steps_not_characters(monkeypatch):
    """The reader does not step character by character: a long string value, a long number, a long array of
    numbers and a long run of whitespace take a few calls of the one-character path (``_char``) in all, not one
    per character (the character reader took about 6,000 here), fed whole or in 7-character pieces; the pieces
    are the character reader's."""
    body = ('{"name": "f", "arguments": {"s": "' + "x" * 5000 + '", "n": ' + "1234567890" * 100 + ', "a": ['
            + ", ".join(["12345"] * 500) + '], "w":' + " " * 3000 + '"v"}}')
    calls = []
    char = ArgumentReader._char

    def counted(self, c, emit):
        calls.append(c)
        return char(self, c, emit)

    monkeypatch.setattr(ArgumentReader, "_char", counted)
    for pieces in ([body], [body[i:i + 7] for i in range(0, len(body), 7)]):
        calls.clear()
        got = _run(ArgumentReader, "object", pieces, {}, False)
        assert len(calls) < 20, (len(calls), calls[:40])
        assert got == _run(OldArgumentReader, "object", pieces, {}, False)
        assert got[1][-1][0] == len(body)  # (the end, just past the last "}")


# --- one reader: the end, completeness and pieces, and the boundary reader -----------------------

def _read_arguments(mode, keys, pieces):
    got = []
    reader = ArgumentReader(mode, keys, lambda kind, n, payload: got.append((kind, n, payload)),
                            lambda n, key: False, lambda n, key, raw: raw)
    for piece in pieces:
        reader.feed(piece)
    args = "".join(p for kind, _, p in got if kind == "args")
    return reader, [(k, n, p) for k, n, p in got if k != "args"], args


@pytest.mark.parametrize("how", ["whole", "ones", "threes"])
def test_json_argument_reader_gives_end_completeness_and_pieces(how):
    """One reader gives where the value ends, whether it is complete, and the argument pieces, on every
    chunking: a call object followed by other text ends after its ``}``; a list of calls after its ``]``; a
    cut body is not complete; an arguments body (``"args"``) ends at its own ``}``."""
    body = '{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}  trailing text'
    reader, marks, args = _read_arguments("object", ("name", ("arguments",)), fixed_chunkings(body)[how])
    assert reader.complete and reader.end == body.index("}}") + 2
    assert marks == [("call", 0, ""), ("name", 0, "get_weather"), ("start", 0, ""), ("end", 0, "")]
    assert args == '{"city": "Paris", "days": [1, 2]}'

    body = '[{"name": "f", "arguments": {}}, {"name": "g", "arguments": {"x": "a,b"}}] after'
    reader, marks, args = _read_arguments("object", ("name", ("arguments",)), fixed_chunkings(body)[how])
    assert reader.complete and reader.end == body.index("]") + 1
    assert [m for m in marks if m[0] == "name"] == [("name", 0, "f"), ("name", 1, "g")]

    cut = '{"name": "f", "arguments": {"city": "Par'
    reader, marks, args = _read_arguments("object", ("name", ("arguments",)), fixed_chunkings(cut)[how])
    assert not reader.complete and reader.end == -1 and not reader.dead
    assert args == '{"city": "Par'

    body = '{"city": "Paris"}<|call|>'
    reader, marks, args = _read_arguments("args", (), fixed_chunkings(body)[how])
    assert reader.complete and reader.end == len('{"city": "Paris"}') and args == '{"city": "Paris"}'


def _boundary_end(decoder, pieces):
    """Where ``decoder`` fed ``pieces`` says the value ends (an offset into their text), or -1."""
    at = 0
    for piece in pieces:
        got = decoder.feed(piece)
        if got >= 0:
            return at + got
        at += len(piece)
    return -1


#: call bodies with brackets and quotes inside strings, a list of calls, a cut one, text after the value
_BODIES = [
    '{"name": "f", "arguments": {"s": "a}]\\"", "n": [1, {"x": null}]}} tail',
    '[{"name": "f", "arguments": {}}, {"name": "g", "arguments": {"q": "[{"}}]</tool_call>',
    '{"name": "f", "parameters": {"a": "\\\\"}}\n\nmore',
    '{"name": "f", "arguments": {"a": 1}',
    '  {"name": "f", "arguments": {"u": "\\u00e9}"}}{"again": 1}',
]


@pytest.mark.parametrize("body", _BODIES)
def test_json_readers_agree_on_the_end(body):
    """The json format's two incremental readers (the core's boundary reader and the adapter's argument reader,
    both in ``runtime/formats/json_.py``) find the same end of the value, on every chunking; a body cut before
    it is incomplete for both."""
    for how, pieces in fixed_chunkings(body).items():
        end = _boundary_end(JsonBoundary(), pieces)
        reader, _, _ = _read_arguments("object", ("name", ("arguments", "parameters")), pieces)
        assert reader.end == end, how


@pytest.mark.parametrize("mode", ["object", "args"])
@pytest.mark.parametrize("body", [
    *_BODIES,
    '{"city": "Paris"}<|call|>{"x": 1}',
    # where the argument reader stops (damage, shapes it does not forward), the boundary reader goes on
    '{"name": "f", "name": "g", "arguments": {"a": "}"}} tail',
    '{"name": 3, "arguments": {"a": ["]"]}} tail',
    '{"name": "f", "arguments": {"a": [}]}}} tail',
    '{"name": "f", "arguments": {"a": nope, "b": "}"}} tail',
    '{"name": "f", "arguments": {"a": 1 ] "}"}} tail',
    '{"name": "\\x", "arguments": {"s": "}"}} tail',
    '{"name": "f", "arguments": {"a": 1}, "arguments": {"b": "]"}} tail',
    '[1, {"a": "]"}] tail',
    '"a string"',
    'not json',
    '\f{"a": 1}',
])
def test_reader_boundary_finds_the_boundary_end(mode, body):
    """The json argument reader serving as the core's boundary decoder (``ReaderBoundary``: the body read
    once) finds the end ``JsonBoundary`` finds, on every chunking, also where the argument reader stops
    (a repeated key, a name that is not a string, a mismatched bracket, a bare word, a key that does not
    decode), and stops reading at that end."""
    for how, pieces in fixed_chunkings(body).items():
        want = _boundary_end(JsonBoundary(), pieces)
        got = []
        reader = ArgumentReader(mode, ("name", ("arguments", "parameters")) if mode == "object" else (),
                                lambda kind, n, payload: got.append((kind, n)), lambda n, key: False,
                                lambda n, key, raw: raw)
        decoder = ReaderBoundary(reader, JsonBoundary())
        assert _boundary_end(decoder, pieces) == want, how
        if want >= 0 and not reader.dead:
            assert reader.end == want, how
        assert all(n <= 1 for _, n in got), how  # (nothing after the end was read as a call)
