"""The pythonic format (runtime/formats/pythonic.py): its argument reader against the oracle.

The pythonic argument reader takes a run of a string's plain characters in one step (runtime/formats/pythonic.py
``PythonicArgs.feed``) and gives exactly what the reader that read every character through ``_char`` gave
(tests/old_pythonic_argument_reader.py, the oracle): the same ``out`` calls in the same order, the same stop and
state after every piece, on random call lists (well formed, damaged, cut) in random chunkings, with every option.

Second section, the quick reader of a call list (issue 14): the pythonic reader (``runtime/pythonic.py``
``_quick_calls``: a flat call list with scalar keyword arguments, read with a few C regex matches) has a one-pass
shortcut for the common body and falls back to its general reader on anything else, and the pythonic boundary
decoder (``PythonicBoundary``) takes the end of a body the quick reader reads. On random bodies (well-formed ones,
then truncated, spliced and damaged) the value is the same, with types (``repr`` equality: ``1``, ``1.0`` and
``True`` differ), or the general reader's error is raised, never another answer; the shortcut never raises; the
decoder's end and status are those of its character scan (whole, and fed in pieces); and the shortcut is really
taken on the common bodies (so the comparison is not vacuous). End to end, with the shortcut on and off:
tests/test_formats.py."""

from __future__ import annotations

import json
import random
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from old_pythonic_argument_reader import OldPythonicArgs
from respc.runtime import pythonic as pythonic_parser
from respc.runtime.errors import ContentParseError
from respc.runtime.formats import pythonic
from respc.runtime.formats.pythonic import PythonicArgs
from support import oracle_pieces

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
        for pieces in (oracle_pieces(rng, body), list(body), [body]):
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


# --- the quick reader of a call list -------------------------------------------------------------

def _general_pythonic(text, **kw):
    """parse_pythonic with its shortcut off: the reader's value or error."""
    with mock.patch.object(pythonic_parser, "_quick_calls", lambda *args: None):
        return pythonic_parser.parse_pythonic(text, **kw)


def _pythonic_outcome(fn, text, kw):
    try:
        return "value", repr(fn(text, **kw))
    except ContentParseError as exc:
        return "error", str(exc)


_NAMES = st.sampled_from(["f", "get_weather", "a.b", "x_1", "True", "None", "r", "u", "é", "caf\u00e9", "_", "f1"])
_SCALARS = st.one_of(
    st.text(alphabet="ab '\"\\\n[](),=é\t", max_size=6).map(lambda s: "'" + s + "'"),
    st.text(alphabet="ab '\"\\\n[](),=é", max_size=6).map(lambda s: '"' + s + '"'),
    st.sampled_from(["0", "7", "-3", "05", "1_000", "1.5", "-0.0", "01.5", "1e3", "1.", ".5", "0x1f", "2j",
                     "True", "False", "None", "true", "false", "null", "nan", "- 4", "+4", "[]", "{}", "(1)",
                     "[1, 'a']", "{'k': 2}", "''", "'''x'''", "r'a\\b'", "u'x'", "'a' 'b'", "'\\x41'", "１"]),
)
_SPACES = st.sampled_from(["", " ", "  ", "\n", "\t", "\f", "\x0b", "\u00a0", "\r\n"])


@st.composite
def _call_lists(draw):
    """A call list or a bare call, mostly in the quick subset, sometimes just outside it."""
    def call():
        name = draw(_NAMES)
        args = []
        for _ in range(draw(st.integers(0, 3))):
            key = draw(_NAMES.filter(lambda n: "." not in n))
            args.append(key + draw(_SPACES) + "=" + draw(_SPACES) + draw(_SCALARS) + draw(_SPACES))
        sep = "," + draw(_SPACES)
        tail = draw(st.sampled_from(["", ",", ", "]))
        return name + "(" + draw(_SPACES) + sep.join(args) + (tail if args else "") + ")"

    calls = [call() for _ in range(draw(st.integers(0, 3)))]
    if draw(st.booleans()) or not calls:
        body = "[" + draw(_SPACES) + ("," + draw(_SPACES)).join(calls) + draw(st.sampled_from(["", ","])) + "]"
    else:
        body = calls[0]
    return draw(_SPACES) + body + draw(_SPACES)


def _damage(draw, text: str) -> str:
    how = draw(st.sampled_from(["none", "cut", "insert", "delete"]))
    if how == "none" or not text:
        return text
    at = draw(st.integers(0, len(text)))
    if how == "cut":
        return text[:at]
    if how == "delete":
        return text[:at] + text[at + 1:]
    return text[:at] + draw(st.sampled_from(list("()[]{},='\"\\ .x0-") + ["==", "'''", "\n"])) + text[at:]


_PY_ARGS = [{}, {"json_literals": True}, {"allow_bare": False}, {"strip_suffix": ".b"}]


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_pythonic_quick_matches_the_reader(data):
    text = _damage(data.draw, data.draw(_call_lists()))
    kw = data.draw(st.sampled_from(_PY_ARGS))
    words = pythonic_parser._JSON_WORDS if kw.get("json_literals") else pythonic_parser._PY_WORDS
    quick = pythonic_parser._quick_calls(text, kw.get("allow_bare", True), kw.get("strip_suffix"), words)
    general = _pythonic_outcome(_general_pythonic, text, kw)
    if quick is not None:
        assert general == ("value", repr(quick)), text
    assert _pythonic_outcome(pythonic_parser.parse_pythonic, text, kw) == general


def test_pythonic_quick_is_taken_on_common_bodies():
    """The bodies the catalogue's models write: read by the shortcut, to the reader's value."""
    bodies = ["[get_weather(city='Paris', unit='celsius')]", 'get_weather(city="Paris")',
              '[get_weather(city="Paris", unit="celsius")]', "[a.b(x=-1, y=2.50, z=True, w=None,), g()]",
              "[ ]", "\n[f(n=0, m=10)]\n"]
    for body in bodies:
        quick = pythonic_parser._quick_calls(body, True, None, pythonic_parser._PY_WORDS)
        assert quick is not None, body
        assert repr(quick) == repr(_general_pythonic(body)), body
    assert pythonic_parser._quick_calls("[f(a=1.5)]", True, None, pythonic_parser._PY_WORDS) == [
        {"name": "f", "arguments": {"a": 1.5}}]
    assert type(pythonic_parser._quick_calls("[f(a=1)]", True, None, pythonic_parser._PY_WORDS)[0]["arguments"]["a"]) is int
    # outside the subset: the reader decides
    for body in ["[f(a='x\\'y')]", "[f(a=[1])]", "[f(a='a' 'b')]", "[f(a=1e3)]", "[f(True=1)]", "[f(a=b)]",
                 "[f(a=1) g()]", "[f(é=1)]", "[f(a=" + "9" * 5000 + ")]"]:
        assert pythonic_parser._quick_calls(body, True, None, pythonic_parser._PY_WORDS) is None, body


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_pythonic_boundary_quick_matches_the_scan(data):
    """The boundary decoder fed a whole body (what a complete text gives it): the quick path ends
    the value where the character scan ends it, with the same status, or is not taken."""
    text = _damage(data.draw, data.draw(_call_lists())) + data.draw(
        st.sampled_from(["", " tail", "<|eot_id|>", "]", ")", "'", "\n[g()]", "(x)"]))
    allow_bare = data.draw(st.booleans())
    quick = pythonic.PythonicBoundary(allow_bare)
    got = (quick.feed(text), quick.status)
    with mock.patch.object(pythonic, "_quick_pythonic", lambda *args: None):
        scan = pythonic.PythonicBoundary(allow_bare)
        assert got == (scan.feed(text), scan.status), text
        pieces = pythonic.PythonicBoundary(allow_bare)  # and in 3-character pieces, as streamed
        at = -1
        for k in range(0, len(text), 3):
            end = pieces.feed(text[k:k + 3])
            if end >= 0:
                at = k + end
                break
    if got[0] >= 0:
        assert at == got[0], text


def test_pythonic_boundary_quick_is_taken():
    taken = []

    def watched(*args):
        got = pythonic_parser.quick_read(*args)
        taken.append(got is not None)
        return got

    with mock.patch.object(pythonic, "_quick_pythonic", watched):
        for body, end in (("[get_weather(city='Paris', unit='celsius')]<|eot|>", 43),
                          ('get_weather(city="Paris")</function_calls>', 25), (" [f()] x", 6),
                          (" [ ] x", 4)):
            decoder = pythonic.PythonicBoundary(True)
            assert decoder.feed(body) == end and decoder.status == pythonic.ACCEPTED
    assert taken == [True, True, True]  # (no ')' in the last one: the scan reads it)
