"""The pythonic argument reader takes a run of a string's plain characters in one step (runtime/formats/pythonic.py
``PythonicArgs.feed``) and gives exactly what the reader that read every character through ``_char`` gave
(tests/old_pythonic_argument_reader.py, the oracle): the same ``out`` calls in the same order, the same stop and
state after every piece, on random call lists (well formed, damaged, cut) in random chunkings, with every option."""

from __future__ import annotations

import json
import random

from old_pythonic_argument_reader import OldPythonicArgs
from respc.runtime.formats import pythonic
from respc.runtime.formats.pythonic import PythonicArgs

STATE = ("state", "bare", "n", "key", "begun", "depth", "raw_next", "dead", "complete")


def _string(rng: random.Random) -> str:
    quote = rng.choice(["'", '"', "'''", '"""'])
    prefix = rng.choice(["", "", "", "r", "R", "u", "b"])
    body = "".join(rng.choice(["Paris", " ", "x" * rng.randrange(1, 30), "\\n", "\\'", '\\"', "\\\\", "\\x41", "\\u00e9",
                               "\\N{BULLET}", "\\07", "\\q", "\n", "é", "{", ")", ",", "]", "abc", "a b c", "'", '"', "''", "\\"])
                   for _ in range(rng.randrange(0, 6)))
    close = quote if rng.random() < 0.95 else ""
    return prefix + quote + body + close


def _value(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if roll < 0.5:
        more = " " + _string(rng) if rng.random() < 0.1 else ""  # implicit concatenation
        return _string(rng) + more
    if depth < 2 and roll < 0.65:
        return "[" + ", ".join(_value(rng, depth + 1) for _ in range(rng.randrange(0, 3))) + "]"
    if depth < 2 and roll < 0.75:
        return "{" + ", ".join(_string(rng) + ": " + _value(rng, depth + 1) for _ in range(rng.randrange(0, 3))) + "}"
    return rng.choice(["1", "-2.5", "True", "None", "false", "null", "3", "0.5", "x", "1 2", "(1, 2)", ""])


def _call(rng: random.Random) -> str:
    name = rng.choice(["f", "get_weather", "a.b", "tool_fn", "f_tool", "g", "1x"])
    args = ", ".join(rng.choice(["city", "n", "days", "x"]) + rng.choice(["=", "=", "=", "=", "=", " = ", "==", ""]) + _value(rng)
                     for _ in range(rng.randrange(0, 4)))
    return name + "(" + args + rng.choice([")", ")", ")", ",)", ""])


def _body(rng: random.Random) -> str:
    if rng.random() < 0.3:
        body = _call(rng)
    else:
        body = "[" + ", ".join(_call(rng) for _ in range(rng.randrange(1, 4))) + rng.choice(["]", "]", ""])
    if rng.random() < 0.2:
        body = body[:rng.randrange(len(body) + 1)]
    return rng.choice(["", " ", "\n"]) + body + rng.choice(["", "", " tail", "]"])


def _chunks(rng: random.Random, body: str) -> list[str]:
    pieces, i = [], 0
    while i < len(body):
        step = rng.choice([1, 1, 2, 3, 4, 4, 5, 8, 17, len(body)])
        pieces.append(body[i:i + step])
        i += step
    return pieces


def _run(cls, pieces: list[str], held_keys: dict, options: dict) -> list:
    got = []
    reader = cls(lambda kind, n, text: got.append((kind, n, text)), lambda n, key: held_keys.get(key, False),
                 lambda n, key, value: json.dumps(value, ensure_ascii=False, default=repr), **options)
    states = []
    for piece in pieces:
        reader.feed(piece)
        string = reader.string
        states.append((len(got),) + tuple(getattr(reader, name) for name in STATE)
                      + ("".join(reader.buf), "".join(reader.decoded),
                         None if string is None else (string.q, string.state, string.quotes, string.esc)))
    return [got, states]


def test_reading_string_runs_gives_the_character_readers_pieces():
    rng = random.Random(2664)
    for case in range(900):
        body = _body(rng)
        held_keys = rng.choice([{}, {"n": True}, {"city": True, "x": True}, {"days": None}])
        options = rng.choice([{}, {"allow_bare": False}, {"json_literals": True}, {"strip_suffix": "_tool"}])
        for pieces in (_chunks(rng, body), list(body), [body]):
            new = _run(PythonicArgs, pieces, held_keys, options)
            old = _run(OldPythonicArgs, pieces, held_keys, options)
            assert new == old, (case, body, pieces, held_keys, options)


def test_a_long_string_takes_few_character_steps(monkeypatch):
    """A 10,000-character string value fed whole and in 7-character pieces: a few ``_char`` calls in all (the
    character reader made one per character), and the same JSON text."""
    value = "the quick brown fox jumps over the lazy dog " * 230
    body = "[f(city='" + value + "', n=3)]"
    calls = []
    real = PythonicArgs._char

    def counted(self, c, emit):
        calls.append(c)
        return real(self, c, emit)

    monkeypatch.setattr(pythonic.PythonicArgs, "_char", counted)
    for step in (len(body), 7):
        calls.clear()
        sent = []
        reader = PythonicArgs(lambda kind, n, text: sent.append(text) if kind == "args" else None,
                              lambda n, key: False, lambda n, key, v: json.dumps(v))
        for i in range(0, len(body), step):
            reader.feed(body[i:i + step])
        assert "".join(sent) == json.dumps({"city": value, "n": 3})
        assert len(calls) < 40, (step, len(calls))
