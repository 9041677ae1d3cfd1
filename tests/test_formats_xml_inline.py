"""The xml-inline format (runtime/formats/xml_inline.py): its argument reader against the oracle.

The xml-inline argument reader searches partially only where a tag may start (runtime/formats/xml_inline.py
``ArgumentReader.scan``: plain searches and ``str.find`` first, a ``partial=True`` search only from the first
character that can begin the opening or the closing text) and gives exactly what the reader that searched the whole
text partially on every scan gave (tests/old_xml_argument_reader.py, kept as the oracle): the same JSON text after
every piece, the same keys, stop and parameter state, and the same closing answer, for every catalogue ``tag_pattern`` the
reader streams and a few made-up ones, on random bodies (well formed, damaged, cut) and random chunkings.

Last section: the reader converts each parameter to JSON text as it is written, on fixed chunkings."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import regex

from old_xml_argument_reader import OldArgumentReader
from respc.runtime.formats import xml_inline
from respc.runtime.formats.xml_inline import ArgumentReader, stream_plan, string_strip
from support import fixed_chunkings, oracle_pieces

ROOT = Path(__file__).resolve().parent.parent


def _catalogue_patterns() -> list[tuple[str, object]]:
    found = {}

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("tag_pattern"), str):
                found[node["tag_pattern"]] = node.get("value_parser")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in sorted((ROOT / "templates").glob("*.json")):
        walk(json.loads(path.read_text(encoding="utf-8")))
    return sorted(found.items(), key=lambda item: item[0])


#: made-up patterns for the paths the catalogue does not take: a closing that starts with a one-or-more run, one
#: without a literal first character, a case-insensitive one, one whose opening starts with a class, one that
#: Python's ``re`` reads otherwise than ``regex`` (a POSIX class)
MADE_UP = [(r"<v k=(?P<key>\w+)>(?P<value>.*?)\s+</v>", None),
           (r"<a>(?P<key>.*?)</a>(?P<value>.*?)(?:END|\n\n)", None),
           (r"<p (?P<key>\w+)>(?P<value>.*?)(?i:</P>)", None),
           (r"[<{]k=(?P<key>[a-z]+)[>}]\s*(?P<value>.*?)[ \t]*</k>", None),
           (r"<q (?P<key>\w+)>(?P<value>.*?)\n*(?:\]\]>)?</q>", None),
           (r"<t (?P<key>\w+)>(?P<value>.*?)[[:punct:]]/t>", None)]

PATTERNS = [(p, vp) for p, vp in _catalogue_patterns() + MADE_UP if stream_plan({"tag_pattern": p}) is not None]


def _literals(pattern: str) -> list[str]:
    """Literal pieces of ``pattern`` (its tags), used to write random bodies with cut and repeated tag text."""
    pieces = regex.split(r"\(\?P<\w+>[^()]*(?:\([^()]*\))?[^()]*\)|\\s[*+]|\\n[?*]|\[[^\]]*\][*+?]?|\(\?[:i]|[()?*+|]",
                         pattern)
    out = [p.replace("\\", "") for p in pieces if p]
    return out or ["<"]


def _tag(rng: random.Random, pattern: str, key: str, value: str, selector: str | None) -> str:
    """One parameter written as ``pattern`` reads it (by replacing the groups; made-up shapes are close enough)."""
    if pattern.startswith(r"<\|open\|>argument"):  # kimi_k3
        kind = "" if selector is None else f' type="{rng.choice(["string", "number", selector])}"'
        return f'<|open|>argument key="{key}"{kind}<|sep|>{value}<|close|>argument<|sep|>'
    if pattern.startswith(r"<param\s+name="):  # minicpm4
        quote = rng.choice(['"', "'"])
        data = rng.choice([value, f"<![CDATA[{value}]]>", f"<![CDATA[{value}"])
        return f"<param{rng.choice([' ', '  '])}name={quote}{key}{quote}>{data}</param>"
    if pattern.startswith(r"<parameter\s+name\s*="):  # dots
        quote = rng.choice(['"', "'", ""])
        return f"<parameter name{rng.choice(['', ' '])}={quote}{key}{quote}{rng.choice(['', ' '])}>{value}</parameter>"
    text = pattern
    text = regex.sub(r"\(\?P<key>(?:[^()]|\([^()]*\))*\)", lambda m: key, text, count=1)
    text = text.replace("(?P<value>.*?)", "\x00")
    text = regex.sub(r"\(\?: (?:string|type)=\"\(\?P<\w+>\[\^\"\]\*\)\"\)\?",
                     lambda m: "" if selector is None else m.group(0).split("=")[0][3:] + f'="{selector}"', text)
    text = regex.sub(r"\(\?:<ifm\\\|arg_type>\(\?P<type>\[\^<\]\*\)</ifm\\\|arg_type>\\s\*\)\?",
                     lambda m: "" if selector is None else f"<ifm|arg_type>{selector}</ifm|arg_type>\n", text)
    text = regex.sub(r"\(\?=.*\)$", "", text)
    text = text.replace(r"\s*", rng.choice(["", " ", "\n"])).replace(r"\s+", rng.choice([" ", "\n "]))
    text = text.replace(r"\n?", rng.choice(["", "\n"])).replace(r"\n*", rng.choice(["", "\n", "\n\n"]))
    text = text.replace("(?:<!\\[CDATA\\[)?", rng.choice(["", "<![CDATA["])).replace("(?:\\]\\]>)?", rng.choice(["", "]]>"]))
    text = text.replace("(?::[^<>\\s]+)?", rng.choice(["", ":x"])).replace("[^>]*", rng.choice(["", " a"]))
    text = regex.sub(r"\[<\{\]", "<", text)
    text = regex.sub(r"\[>\}\]", ">", text)
    text = regex.sub(r"\(\?i:([^)]*)\)", lambda m: rng.choice([m.group(1), m.group(1).lower()]), text)
    text = regex.sub(r"\(\?:END\|\\n\\n\)", lambda m: rng.choice(["END", "\n\n"]), text)
    text = text.replace("\\", "")
    return text.replace("\x00", value)


def _value(rng: random.Random, literals: list[str]) -> str:
    parts = []
    for _ in range(rng.randrange(0, 6)):
        roll = rng.random()
        if roll < 0.25:
            lit = rng.choice(literals)
            parts.append(lit[:rng.randrange(1, len(lit) + 1)])  # a cut tag, or a whole one (damage)
        else:
            parts.append(rng.choice(["Paris", " ", "\n", "  \n ", "a < b", "3", "x" * rng.randrange(1, 40), "é",
                                     "]]", "]", "<", "\t", "true", '{"a": 1}', "RAISE", "\x1c", "\u2003", "END",
                                     " " * rng.randrange(50, 150), "\n" * rng.randrange(50, 90)]))
    return "".join(parts)


def _body(rng: random.Random, pattern: str, literals: list[str]) -> str:
    parts = [rng.choice(["", "\n", " ", "junk"])]
    for _ in range(rng.randrange(0, 4)):
        key = rng.choice(["city", "n", "days", "x", "kéy", "a b"])
        selector = rng.choice([None, None, "true", "false", "string", "integer", "number"])
        parts.append(_tag(rng, pattern, key, _value(rng, literals), selector))
        parts.append(rng.choice(["", "\n", "\n", " ", "oops", rng.choice(literals)]))
        if rng.random() < 0.15:  # a long stretch the reader cannot decide (a tag's start, then much text)
            parts.append(literals[0] + rng.choice(["k", " ", "\n"]) * rng.randrange(50, 150))
    body = "".join(parts)
    if rng.random() < 0.3:
        body = body[:rng.randrange(len(body) + 1)]  # cut
    return body


def _reader(cls, plan):
    parse = plan[3]

    def value(key, selector, raw):
        if "RAISE" in raw:
            raise ValueError("a value the close decides")
        got = raw if parse is None else parse(raw, selector)
        if key == "n" and isinstance(got, str):
            return int(got) if got.strip().isdigit() else got
        return got

    cache = {}

    def strip(key, selector):
        if (key, selector) not in cache:
            cache[key, selector] = string_strip(lambda raw: value(key, selector, raw))
        return cache[key, selector]

    return cls(plan, value, strip)


def _state(reader) -> tuple:
    cur = reader.cur
    at = None if cur is None else (cur.key, cur.selector, cur.strip, cur.head, "".join(cur.raw), cur.started,
                                   cur.pending)
    # (not ``text``: while no opening can be complete yet the reader keeps the text from the first place one may
    # begin, where the old one kept it from where its partial search said; what either sends is the same)
    return list(reader.keys), reader.begun, reader.dead, at


def _run(cls, plan, pieces: list[str], arguments) -> list:
    reader = _reader(cls, plan)
    got = []
    for piece in pieces:
        reader.feed(piece)
        got.append((reader.scan(), _state(reader)))
    got.append(reader.finish(arguments))
    return got


def test_the_cheap_reader_gives_the_old_readers_text():
    rng = random.Random(2626)
    assert len(PATTERNS) >= 20  # the catalogue's streamed patterns are all here
    for pattern, spec in PATTERNS:
        args = {"tag_pattern": pattern}
        if spec is not None:
            args["value_parser"] = spec
        plan = stream_plan(args)
        literals = _literals(pattern)
        for case in range(45):
            body = _body(rng, pattern, literals)
            arguments = rng.choice([{}, {"city": "Paris"}, None])
            for pieces in (oracle_pieces(rng, body), list(body), [body]):
                new = _run(ArgumentReader, plan, pieces, arguments)
                old = _run(OldArgumentReader, plan, pieces, arguments)
                assert new == old, (pattern, body, pieces)


def test_the_cheap_reader_on_the_issue_shapes():
    """glm4_5 and qwen3_coder calls as the families write them: the same text as the oracle in 4-character and
    1-character pieces, and the arguments object as written."""
    cases = [(r"<arg_key>\s*(?P<key>.*?)\s*</arg_key>\s*<arg_value>(?P<value>.*?)</arg_value>",
              "<arg_key>city</arg_key>\n<arg_value>Paris is a nice city</arg_value>\n<arg_key>days</arg_key>\n"
              "<arg_value>3</arg_value>\n"),
             (r"<parameter=(?P<key>[^>\s]+)>\n?(?P<value>.*?)\n?</parameter>",
              "\n<parameter=city>\nParis < Lyon\n</parameter>\n<parameter=days>\n3\n</parameter>\n")]
    for pattern, body in cases:
        plan = stream_plan({"tag_pattern": pattern})
        for pieces in ([body[i:i + 4] for i in range(0, len(body), 4)], list(body)):
            new = _run(ArgumentReader, plan, pieces, {})
            assert new == _run(OldArgumentReader, plan, pieces, {})
            assert "".join(text for text, _ in new[:-1]) + new[-1][0] == \
                '{"city": "' + ("Paris is a nice city" if "arg_key" in pattern else "Paris < Lyon") + '", "days": "3"}'


def test_long_values_take_no_partial_search(monkeypatch):
    """A long string value fed in 4-character pieces takes a ``partial=True`` search only where a piece holds a
    character that may begin the closing text: none for 10,000 characters of prose without ``<``, and the text the
    reader keeps stays short (what was decided is not read again)."""
    pattern = r"<parameter=(?P<key>[^>\s]+)>\n?(?P<value>.*?)\n?</parameter>"
    plan = stream_plan({"tag_pattern": pattern})
    calls = []

    class Counting:
        def __init__(self, compiled):
            self.compiled = compiled

        def search(self, text, *args, **kwargs):
            if kwargs.get("partial"):
                calls.append(len(text))
            return self.compiled.search(text, *args, **kwargs)

        def __getattr__(self, name):
            return getattr(self.compiled, name)

    counted = (Counting(plan[0]), Counting(plan[1]), Counting(plan[2])) + tuple(plan[3:])
    reader = _reader(ArgumentReader, counted)
    value = "the quick brown fox jumps over the lazy dog " * 230
    body = "<parameter=city>\n" + value + "\n</parameter>"
    longest = 0
    sent = []
    for i in range(0, len(body), 4):
        reader.feed(body[i:i + 4])
        sent.append(reader.scan())
        longest = max(longest, len(reader.text))
    assert "".join(sent) == json.dumps({"city": value.rstrip("\n")})[:-1]
    assert len(calls) < 12, calls
    assert longest < 40
    assert xml_inline.ArgumentReader is ArgumentReader


@pytest.mark.parametrize("pattern, head", [
    (r"<arg_key>\s*(?P<key>.*?)\s*</arg_key>\s*<arg_value>(?P<value>.*?)</arg_value>", "<arg_key>"),
    (r'<parameter name="(?P<key>[^"]+)">\s*(?P<value>.*?)\s*</parameter>', '<parameter name="city">Paris'),
])
def test_long_undecided_text_is_read_in_linear_time(pattern, head):
    """Text the reader cannot decide yet, in 4-character pieces: ``<arg_key>`` followed by a long key that never
    reaches ``<arg_value>`` (the opening waits for its last literal), and a value followed by a long run of spaces
    that ``\\s*</parameter>`` may still close: the text already looked at is not read again (twice the input, at
    most 2.5 times the time; the least of five runs). The old reader's partial search read the whole kept text on
    every piece."""
    import time

    plan = stream_plan({"tag_pattern": pattern})
    filler = "k" if head == "<arg_key>" else " "

    def cost(n: int) -> float:
        body = head + filler * n
        pieces = [body[i:i + 4] for i in range(0, len(body), 4)]
        best = float("inf")
        for _ in range(5):
            reader = _reader(ArgumentReader, plan)
            start = time.process_time()
            for piece in pieces:
                reader.feed(piece)
                reader.scan()
            best = min(best, time.process_time() - start)
        assert reader.keys == [] and not reader.dead
        return best

    small, large = cost(50_000), cost(100_000)
    assert large <= 2.5 * small, (small, large)


# --- conversion as written -----------------------------------------------------------------------

@pytest.mark.parametrize("how", ["whole", "ones", "threes"])
def test_xml_inline_argument_reader_converts_as_written(how):
    """xml-inline's reader (plan ``"xml-parameters"``) turns each parameter into JSON text as it is written: a
    string value character by character (its stripped whitespace held), a typed one once its closing tag is
    complete; a body cut inside a parameter leaves it open (``cur``: truncated); ``finish`` closes the object."""
    plan = stream_plan({"tag_pattern": r"<parameter=(?P<key>[^>\s]+)>\n?(?P<value>.*?)\n?</parameter>"})
    types = {"days": int}

    def value(key, selector, raw):
        return types.get(key, str)(raw)

    def strip(key, selector):
        return string_strip(lambda raw: value(key, selector, raw))

    body = "\n<parameter=city>\nNew York\n</parameter>\n<parameter=days>\n7\n</parameter>\n"
    reader = ArgumentReader(plan, value, strip)
    sent = []
    for piece in fixed_chunkings(body)[how]:
        reader.feed(piece)
        sent.append(reader.scan())
    rest, closed = reader.finish({"city": "New York", "days": 7})
    assert closed and "".join(sent) + rest == '{"city": "New York", "days": 7}'
    if how == "ones":
        assert '{"city": "New' in "".join(sent[:body.index("York")])  # streamed before its closing tag

    cut = ArgumentReader(plan, value, strip)
    for piece in fixed_chunkings("<parameter=city>\nNew Yo")[how]:
        cut.feed(piece)
        cut.scan()
    assert cut.cur is not None and cut.cur.key == "city"


# --- linear_source / linear_closing: the linear forms match what the patterns as written match -----

def _spaced_texts(pattern: str, seed: int) -> list[str]:
    """Random texts spliced from the literal pieces of ``pattern`` (tags, names) and whitespace runs."""
    rng = random.Random(seed)
    literals = [p for p in regex.split(r"\(\?P<\w+>[^)]*\)|\\s[*+]?|[()?*+\[\]^|]", pattern) if p]
    pieces = literals + [" ", "  \n ", "\t", "a", "b c", "<", ">", '"', "x y ", "\n"]
    return ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 14))) for _ in range(400)]


def _rewritten() -> list[str]:
    out = [p for p, _ in _catalogue_patterns() if xml_inline.linear_source(p) != p]
    assert len(out) >= 6, out  # the catalogue's distinct lazy-group-before-\s* patterns (MiniMax-M2, GLM, ...)
    return out + [r"<a>\s*(?P<key>[^<]*?)\s*</a>\s*<v>(?P<value>.*?)\s*</v>"]


@pytest.mark.parametrize("pattern", _rewritten())
def test_linear_source_matches_as_written(pattern):
    """``linear_source`` (docs/security.md "Model output: time and memory") gives every match and group
    the pattern as written gives, on random texts of its tags and whitespace runs."""
    before, after = regex.compile(pattern, regex.DOTALL), regex.compile(xml_inline.linear_source(pattern), regex.DOTALL)
    assert before.pattern != after.pattern
    for text in _spaced_texts(pattern, 7):
        want = [(m.span(), m.groupdict()) for m in before.finditer(text)]
        assert [(m.span(), m.groupdict()) for m in after.finditer(text)] == want, text


@pytest.mark.parametrize("source", [r"\s*</parameter>", r"\s*</arg_key(?::[^<>\s]+)?>", r"\s*</steptml:parameter>"])
def test_linear_closing_finds_as_written(source):
    """``linear_closing`` finds the same leftmost match (and partial match) from every start."""
    before, after = regex.compile(source, regex.DOTALL), regex.compile(xml_inline.linear_closing(source), regex.DOTALL)
    assert before.pattern != after.pattern
    for text in _spaced_texts(source, 11):
        for at in range(len(text) + 1):
            for partial in (False, True):
                got = after.search(text, at, partial=partial)
                want = before.search(text, at, partial=partial)
                assert (got and (got.span(), got.partial)) == (want and (want.span(), want.partial)), (text, at)
