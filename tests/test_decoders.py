"""Boundary decoders (respc.runtime.decoders), the pythonic parser and the content-parser registry.

Every decoder is checked three ways: literal end offsets and statuses on the examples of issue 7;
chunking invariance (hypothesis: the end offset found is the same for every chunking, one
character at a time included, and is where the whole-body reader stops); rejection at the first
significant character(s) and never after acceptance.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from respc.compiler.api import compile_source
from respc.runtime.content import PARSERS, content_args_problems, parse_content
from respc.runtime.decoders import (
    ACCEPTED,
    REJECTED,
    UNDECIDED,
    JsonBoundary,
    PythonicBoundary,
    json_boundary,
    pythonic_boundary,
)
from respc.runtime.errors import ContentParseError, ParserStateError, TemplateError
from respc.runtime.pythonic import read_pythonic

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def feed_pieces(boundary, pieces):
    """Feed ``pieces`` in order; the end offset in their concatenation, or -1."""
    consumed = 0
    for piece in pieces:
        end = boundary.feed(piece)
        if end >= 0:
            assert 0 <= end <= len(piece)
            return consumed + end
        consumed += len(piece)
    return -1


def split(text, cuts):
    points = sorted({c for c in cuts if 0 < c < len(text)})
    return [text[a:b] for a, b in zip([0] + points, points + [len(text)])]


def end_of(factory, text):
    """The end offset found fed whole and fed one character at a time (asserted equal)."""
    whole = feed_pieces(factory(), [text])
    assert feed_pieces(factory(), list(text)) == whole
    return whole


# --- pythonic: whole-body values ----------------------------------------------------------------

PYTHONIC_EXAMPLES = [
    ("[get_weather(city='Martha\\'s Vineyard', units=None), set_config(config={\"enabled\": True})]", {},
     [{"name": "get_weather", "arguments": {"city": "Martha's Vineyard", "units": None}},
      {"name": "set_config", "arguments": {"config": {"enabled": True}}}]),
    ('get_weather(location="NYC")', {}, [{"name": "get_weather", "arguments": {"location": "NYC"}}]),
    ("python.call(code=\"print('hey')\")", {"strip_suffix": ".call"},
     [{"name": "python", "arguments": {"code": "print('hey')"}}]),
    ("python.call(code=\"print('hey')\")", {}, [{"name": "python.call", "arguments": {"code": "print('hey')"}}]),
    ("[process_data(items=['item1','item2'], config={'enabled': True, 'threshold': 0.95})]", {},
     [{"name": "process_data",
       "arguments": {"items": ["item1", "item2"], "config": {"enabled": True, "threshold": 0.95}}}]),
    ("[]", {}, []),
    (" [ ] \n", {}, []),
    ("f()", {}, [{"name": "f", "arguments": {}}]),
    ("[f(), g(x=1,),]", {}, [{"name": "f", "arguments": {}}, {"name": "g", "arguments": {"x": 1}}]),
    ("f(a=-1, b=-2.5e1, c=+3, d=.5, e=1_000, h=0x1f, i=1.)", {},
     [{"name": "f", "arguments": {"a": -1, "b": -25.0, "c": 3, "d": 0.5, "e": 1000, "h": 31, "i": 1.0}}]),
    ("f(t=((1, 2), (3,)), u=(4), v=(), w={1, 2}, x={})", {},
     [{"name": "f", "arguments": {"t": [[1, 2], [3]], "u": 4, "v": [], "w": [1, 2], "x": {}}}]),
    ("f(s=')', t=\"(\", u='a' \"b\")", {}, [{"name": "f", "arguments": {"s": ")", "t": "(", "u": "ab"}}]),
    ("f(s='''it's ) \"x\"''', r=r'\\d\\'', e='\\n\\t\\x41\\u00e9\\101\\q')", {},
     [{"name": "f", "arguments": {"s": "it's ) \"x\"", "r": "\\d\\'", "e": "\n\tAé" + "A\\q"}}]),
    ("a.b.c(k=None)", {"strip_suffix": ".c"}, [{"name": "a.b", "arguments": {"k": None}}]),
    ("call(k=1)", {"strip_suffix": "call"}, [{"name": "call", "arguments": {"k": 1}}]),  # never the whole name
]


@pytest.mark.parametrize("text,args,expected", PYTHONIC_EXAMPLES)
def test_pythonic_values(text, args, expected):
    assert parse_content(text, "pythonic", args) == expected


@pytest.mark.parametrize("text,args,expected", PYTHONIC_EXAMPLES)
def test_pythonic_boundary_ends_where_the_reader_stops(text, args, expected):
    value, end = read_pythonic(text + " and then prose (with parens)", strip_suffix=args.get("strip_suffix"))
    assert value == expected
    assert end == len(text.rstrip())
    assert end_of(pythonic_boundary(args), text + " and then prose (with parens)") == end


@pytest.mark.parametrize("text,offset,what", [
    ("", 0, "expected '[' or a call"),
    ("   ", 3, "expected '[' or a call"),
    ("Sure, I can", 4, "expected '(' after the call name 'Sure'"),
    ("f(1)", 2, "positional arguments have no name"),
    ("f(a=b)", 4, "'b' is not a literal"),
    ("f(a='x)", 4, "unterminated string"),
    ("[f(), g()", 9, "expected ',' or ']' after a call"),
    ("f() tail", 4, "text after the calls"),
    ("f(a=1 b=2)", 6, "expected ',' or ')' in the arguments of 'f'"),
    ("f(a=012)", 4, "leading zeros"),
    ("f(a=1j)", 4, "complex numbers"),
    ("f(a={[1]: 2})", 8, "a dict key must be"),
    ("f (a=1)", 1, "expected '(' after the call name 'f'"),
])
def test_pythonic_errors_name_parser_and_offset(text, offset, what):
    with pytest.raises(ContentParseError) as info:
        parse_content(text, "pythonic", {})
    message = str(info.value)
    assert message.startswith(f"pythonic parser could not parse region at offset {offset}: "), message
    assert what in message
    assert f"Content: {text!r}" in message


def test_pythonic_allow_bare_false_needs_a_list():
    assert parse_content("[f()]", "pythonic", {"allow_bare": False}) == [{"name": "f", "arguments": {}}]
    with pytest.raises(ContentParseError, match="offset 0: expected '\\[' \\(a bare call needs allow_bare\\)"):
        parse_content("f()", "pythonic", {"allow_bare": False})


def test_pythonic_deep_nesting_is_a_content_parse_error():
    with pytest.raises(ContentParseError, match="nesting too deep"):
        parse_content("f(a=" + "[" * 5000 + "]" * 5000 + ")", "pythonic", {})


# --- pythonic: boundary statuses ---------------------------------------------------------------

def statuses(boundary, text):
    """(status after each character, end offset) fed one character at a time."""
    seen = []
    for index, char in enumerate(text):
        end = boundary.feed(char)
        seen.append(boundary.status)
        if end >= 0:
            return seen, index + end
    return seen, -1


def test_pythonic_rejects_prose_at_the_comma():
    seen, end = statuses(PythonicBoundary(), "Sure, I can")
    assert seen == [UNDECIDED] * 4 + [REJECTED] * 7
    assert end == -1
    assert PythonicBoundary().feed("Sure, I can help.") == -1


@pytest.mark.parametrize("text,decided_at,status", [
    ("  [get_weather(", 14, ACCEPTED),   # accepted at the '('
    ("[ ]", 2, ACCEPTED),
    ("[Note: x]", 5, REJECTED),          # at the ':'
    ("[1, 2]", 1, REJECTED),
    ("(x)", 0, REJECTED),
    ("a.b(", 3, ACCEPTED),
    ("a..b(", 2, REJECTED),
    ("a.1(", 2, REJECTED),
    ("f (", 1, REJECTED),
    ("\n\t'x'", 2, REJECTED),
])
def test_pythonic_decides_at_the_first_significant_characters(text, decided_at, status):
    seen, _ = statuses(PythonicBoundary(), text)
    assert seen[:decided_at] == [UNDECIDED] * decided_at
    assert set(seen[decided_at:]) == {status}


def test_pythonic_allow_bare_false_rejects_a_bare_name():
    boundary = PythonicBoundary(allow_bare=False)
    assert boundary.feed("f(") == -1 and boundary.status == REJECTED


def test_pythonic_close_paren_in_string_never_ends_the_call():
    text = "f(a=')', b=\"')'\", c='''\n)'''', d='\\')') then )"
    assert end_of(pythonic_boundary({}), text) == text.index(" then")


def test_pythonic_boundary_waits_at_quotes_split_across_chunks():
    # '' then ' : a triple quote, not an empty string followed by a one-quote string
    for pieces in (["f(a=''", "'x)'''", ") z"], ["f(a='", "''x)''", "') z"], ["f(a=''')'", "'')", " z"]):
        assert feed_pieces(PythonicBoundary(), pieces) == len("".join(pieces)) - 2, pieces


def test_boundary_must_not_be_fed_after_the_end():
    boundary = PythonicBoundary()
    assert boundary.feed("f() x") == 3
    with pytest.raises(ParserStateError, match="fed again after its value ended"):
        boundary.feed("y")


# --- json boundary --------------------------------------------------------------------------------

def test_json_rejects_prose_after_the_opener_at_m():
    # "The token <tool_call> marks where a call starts.": the body after the opener is prose.
    seen, end = statuses(JsonBoundary(), " marks where a call starts.")
    assert seen == [UNDECIDED, REJECTED] + [REJECTED] * (len(" marks where a call starts.") - 2)
    assert end == -1


@pytest.mark.parametrize("body,tail,value", [
    ('{"name": "get_weather", "parameters": {"city": "Paris"}}', " Anything else?",
     {"name": "get_weather", "parameters": {"city": "Paris"}}),
    ('[{"name": "a"}, {"name": "b}"}]', "Sure, one moment.", [{"name": "a"}, {"name": "b}"}]),
    ('\n {"s": "\\"}{"}', " tail", {"s": '"}{'}),
    ('{"a": [1, {"b": []}]}', "]]", {"a": [1, {"b": []}]}),
    ("[]", "", []),
])
def test_json_boundary_literal_ends(body, tail, value):
    assert end_of(json_boundary({}), body + tail) == len(body)
    assert parse_content(body, "json", {}) == value


@pytest.mark.parametrize("args,body,tail,value", [
    ({"string_delims": [['<|"|>', '<|"|>']], "unquoted_keys": True},
     '{location:<|"|>Paris, {"FR"}<|"|>,units:[<|"|>c<|"|>]}', " rest", {"location": 'Paris, {"FR"}', "units": ["c"]}),
    ({"string_delims": [["<<", ">>"]]}, '[<<a]b>>, "<<"]', " x", ["a]b", "<<"]),
    ({"accept": '{["'}, '"a \\" b"', " tail", 'a " b'),
    ({"accept": '"', "string_delims": [["<<", ">>"]]}, "<<x>y>>", " tail", "x>y"),
    ({"accept": "-0123456789"}, "-12.5e3", ", next", -12500.0),
    ({"accept": "tfnTFN", "python_literals": True}, "True", "}", True),
    ({"unquoted_keys": True, "python_literals": True}, "{label: None, enabled: True}", " ok",
     {"label": None, "enabled": True}),
])
def test_json_boundary_dialects(args, body, tail, value):
    assert end_of(json_boundary(args), body + tail) == len(body)
    assert parse_content(body, "json", args) == value


@pytest.mark.parametrize("args,text,decided_at,status", [
    ({}, "   x", 3, REJECTED),
    ({}, '"s"', 0, REJECTED),
    ({}, "7", 0, REJECTED),
    ({"accept": "{[\""}, '  "s"', 2, ACCEPTED),
    ({"string_delims": [['<|"|>', '<|"|>']]}, '<|"|>x', 0, REJECTED),
    ({"string_delims": [['<|"|>', '<|"|>']], "accept": '"'}, '<|"|>x', 4, ACCEPTED),  # at the full opener
    ({"string_delims": [['<|"|>', '<|"|>']], "accept": '"'}, "<|x", 2, REJECTED),
    ({}, "{x", 0, ACCEPTED),
])
def test_json_boundary_accept_rule(args, text, decided_at, status):
    seen, _ = statuses(json_boundary(args)(), text)
    assert seen[:decided_at] == [UNDECIDED] * decided_at
    assert set(seen[decided_at:]) == {status}


def test_json_delimiter_split_across_chunks():
    args = {"string_delims": [['<|"|>', '<|"|>']]}
    pieces = ["[<", '|"', '|>a]<|', '"', "|>] tail"]
    assert feed_pieces(json_boundary(args)(), pieces) == len("".join(pieces)) - len(" tail")


def test_json_top_level_scalar_ends_only_when_more_text_arrives():
    boundary = json_boundary({"accept": "0123456789"})()
    assert boundary.feed("12") == -1
    assert boundary.feed("3") == -1
    assert boundary.feed(" x") == 0


# --- chunking invariance (hypothesis) ------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet='ab"\\{}[]:,\'\n é', max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='ab"}{\\', max_size=4),
                                                                inner, max_size=3),
    max_leaves=10,
)
containers = st.one_of(st.lists(json_values, max_size=3),
                       st.dictionaries(st.text(max_size=4), json_values, max_size=3))
junk = st.sampled_from(["", " tail", "}", "]", ' {"x": 1}', "\n[1]", '"'])
cuts = st.lists(st.integers(min_value=0, max_value=200), max_size=12)


@PROPS
@given(value=containers, lead=st.sampled_from(["", " ", "\n\t"]), rest=junk, cut=cuts)
def test_json_end_is_chunking_invariant(value, lead, rest, cut):
    body = lead + json.dumps(value, ensure_ascii=bool(len(lead) % 2))
    text = body + rest
    assert feed_pieces(JsonBoundary(), split(text, cut)) == len(body)
    assert feed_pieces(JsonBoundary(), list(text)) == len(body)
    assert json.JSONDecoder().raw_decode(text, len(lead))[1] == len(body)


def _lax(value, delims, python):
    """Write a value in the lax dialect: bare keys, strings in delimiters, Python literals."""
    if isinstance(value, str):
        return delims[0] + value + delims[1] if delims else json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_lax(v, delims, python) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_lax(v, delims, python)}" for k, v in value.items()) + "}"
    if python and (value is None or isinstance(value, bool)):
        return repr(value)
    return json.dumps(value)


lax_keys = st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,4}\Z")
lax_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab "{}[],:\\', max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(lax_keys, inner, max_size=3),
    max_leaves=10,
)


@PROPS
@given(value=st.dictionaries(lax_keys, lax_values, max_size=4),
       delims=st.sampled_from([None, ('<|"|>', '<|"|>'), ("<<", ">>")]),
       python=st.booleans(), rest=junk, cut=cuts)
def test_json_dialect_end_is_chunking_invariant_and_value_parses(value, delims, python, rest, cut):
    if delims and any(delims[1] in s for s in _strings(value)):
        return  # a closer inside the text cannot be written in that dialect
    args = {"unquoted_keys": True, "python_literals": python}
    if delims:
        args["string_delims"] = [list(delims)]
    body = _lax(value, delims, python)
    text = body + rest
    assert feed_pieces(json_boundary(args)(), split(text, cut)) == len(body)
    assert feed_pieces(json_boundary(args)(), list(text)) == len(body)
    assert parse_content(text[:len(body)], "json", args) == value


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


py_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-10**6, max_value=10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet="ab'\"()[]{}\\\n,= é", max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.dictionaries(st.text(alphabet="ab'\")", max_size=3), inner, max_size=3),
    max_leaves=10,
)
names = st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,5}(\.[a-z]{1,3})?\Z")
calls = st.lists(st.tuples(names, st.dictionaries(st.from_regex(r"\A[a-z_][a-z0-9_]{0,4}\Z"), py_values,
                                                  max_size=3)), max_size=3)


def _jsonish(value):
    if isinstance(value, (list, tuple)):
        return [_jsonish(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonish(v) for k, v in value.items()}
    return value


def _render_call(name, arguments):
    return f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in arguments.items()) + ")"


@PROPS
@given(items=calls, bare=st.booleans(), rest=st.sampled_from(["", " Sure.", ")", "\n[f()]", "'"]), cut=cuts)
def test_pythonic_end_is_chunking_invariant_and_value_parses(items, bare, rest, cut):
    if bare and len(items) == 1:
        body = _render_call(*items[0])
    else:
        body = "[" + ", ".join(_render_call(n, a) for n, a in items) + "]"
    text = body + rest
    expected = [{"name": n, "arguments": _jsonish(a)} for n, a in items]
    assert feed_pieces(PythonicBoundary(), split(text, cut)) == len(body)
    assert feed_pieces(PythonicBoundary(), list(text)) == len(body)
    value, end = read_pythonic(text)
    assert end == len(body)
    assert value == expected


# --- registry -------------------------------------------------------------------------------------

def test_registry_records_are_consistent():
    for name, record in PARSERS.items():
        assert record.name == name
        assert (record.reader is not None) == record.ends_itself, name
        assert not record.can_reject or record.ends_itself, name
        assert isinstance(record.grammar({}), str)
    assert [n for n, r in PARSERS.items() if r.ends_itself] == ["json", "pythonic"]
    assert [n for n, r in PARSERS.items() if not r.dirty] == ["text", "int", "float", "bool"]


def test_make_content_parser_is_the_records_make():
    assert PARSERS["pythonic"].processor({})("f()") == [{"name": "f", "arguments": {}}]
    assert PARSERS["json"].processor({"python_literals": True})("[None]") == [None]


@pytest.mark.parametrize("name", list(PARSERS))
@pytest.mark.parametrize("body", ["", "  \n"])
def test_make_on_empty_body_returns_or_raises_content_parse_error(name, body):
    args = {"tag_pattern": r"<(?P<key>\w+)>"} if name == "xml-inline" else {}
    try:
        PARSERS[name].processor(args)(body)
    except ContentParseError:
        pass


# --- grammar fragments ----------------------------------------------------------------------------

lark = pytest.importorskip("lark")


def _accepts(name, args, text):
    parser = lark.Lark("start: body\nbody: " + PARSERS[name].grammar(args) + "\n", parser="earley")
    try:
        parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


@pytest.mark.parametrize("name,args,text,ok", [
    ("pythonic", {}, "[get_weather(city='Paris'), f()]", True),
    ("pythonic", {}, 'get_weather(location="NYC")\n', True),
    ("pythonic", {}, "[]", True),
    ("pythonic", {}, "Sure, I can", False),
    ("pythonic", {"allow_bare": False}, "f()", False),
    ("json", {}, '{"a": 1}', True),
    ("json", {}, "not json", False),
    ("json", {"allow_non_json": True}, "not json", True),
    ("int", {}, " 42 ", True),
    ("int", {}, "4.5", False),
    ("int", {"strip": False}, " 42", False),
    ("float", {}, "-1.5e3", True),
    ("float", {}, "abc", False),
    ("text", {}, "anything at all", True),
    ("kv-lines", {}, "a: 1", True),
])
def test_grammar_fragments_accept_and_reject(name, args, text, ok):
    assert _accepts(name, args, text) is ok


# --- load-time checks of the new arguments --------------------------------------------------------

def template(content, content_args):
    doc = {"start_anchor": "<|a|>", "fields": {
        "x": {"open": "<x>", "close": "</x>", "content": content, "content_args": content_args},
        "content": {}}}
    if content == "pythonic":
        doc["respc_version"] = 2  # a parser of template language v2
    return doc


DSML = ('<｜DSML｜parameter name="(?P<key>[^"]+)" string="(?P<string>true|false)">(?P<value>.*?)'
        '</｜DSML｜parameter>')


@pytest.mark.parametrize("content,args,key,detail", [
    ("json", {"python_literals": "yes"}, "content_args", "json 'python_literals' must be a bool, got str"),
    ("json", {"accept": "x{"}, "content_args", "json 'accept' names ['x'], which cannot start a JSON value"),
    ("json", {"accept": "T"}, "content_args", "json 'accept' names ['T']"),
    ("json", {"accept": ""}, "content_args", "json 'accept' must be a non-empty string"),
    ("pythonic", {"strip_suffix": 3}, "content_args", "pythonic 'strip_suffix' must be a non-empty string, got 3"),
    ("pythonic", {"strip_suffix": ""}, "content_args", "pythonic 'strip_suffix' must be a non-empty string"),
    ("pythonic", {"allow_bare": "no"}, "content_args", "pythonic 'allow_bare' must be a bool, got str"),
    ("xml-inline", {"tag_pattern": DSML, "value_parser": {"switch": "strin", "cases": {}}}, "content_args",
     "value_parser switch 'strin' is not a named group of tag_pattern (groups: ['key', 'string', 'value'])"),
    ("xml-inline", {"tag_pattern": DSML, "value_parser": {"switch": "string", "cases": []}}, "content_args",
     "value_parser 'cases' must be a dict of text -> parser spec, got list"),
    ("xml-inline", {"tag_pattern": DSML, "value_parser": {"switch": "string", "cases": {"true": "text"}}},
     "content_args", "value_parser case 'true' must be a dict"),
    ("xml-inline", {"tag_pattern": DSML, "value_parser": {"switch": "string", "cases": {"true": {"name": "yaml"}}}},
     "content_args", "value_parser: unknown content parser 'yaml'"),
    ("xml-inline", {"tag_pattern": DSML, "value_parser": {"switch": "string", "cases": {},
                                                          "default": {"name": "json", "args": {"accept": 1}}}},
     "content_args.value_parser.default.args", "json 'accept' must be a non-empty string"),
    ("xml-inline", {"tag_pattern": DSML, "value_parser": {"switch": "string", "cases": {
        "false": {"name": "xml-inline", "args": {"tag_pattern": "(?P<key>"}}}}},
     "content_args.value_parser.cases.false.args.tag_pattern",
     "invalid content_args.value_parser.cases.false.args.tag_pattern regex"),
    ("xml-inline", {"tag_pattern": DSML, "value_parser": {"switch": "string", "default": 3}}, "content_args",
     "value_parser 'default' must be a dict"),
    ("xml-inline", {"tag_pattern": DSML, "value_parser": {"switch": "string", "other": 1}}, "content_args",
     "value_parser switch has unknown keys ['other']"),
    ("kv-lines", {"value_parser": {"switch": "value", "cases": {}}}, "content_args",
     "kv-lines value_parser can only switch on \"key\", got 'value'"),
    ("kv-lines", {"value_parser": {"name": "json", "args": {"python_literals": 1}}},
     "content_args.value_parser.args", "json 'python_literals' must be a bool, got int"),
])
def test_bad_arguments_are_template_errors(content, args, key, detail):
    with pytest.raises(TemplateError) as info:
        compile_source(template(content, args))
    assert (info.value.field, info.value.key) == ("x", key)
    assert detail in info.value.detail


def test_good_new_arguments_compile():
    for content, args in [
        ("json", {"python_literals": True, "accept": "{[\"tfnTFN-0123456789"}),
        ("pythonic", {"strip_suffix": ".call", "allow_bare": False}),
        ("xml-inline", {"tag_pattern": DSML, "value_parser": {
            "switch": "string", "cases": {"true": {"name": "text"}, "false": {"name": "json"}},
            "default": {"name": "json", "args": {"allow_non_json": True}}}}),
        ("kv-lines", {"value_parser": {"switch": "key", "cases": {"ids": {"name": "json"}}}}),
    ]:
        assert content_args_problems(content, args) == []
        compiled = compile_source(template(content, args))
        assert compiled.template.fields[0].content_args == args


# --- chunking invariance on arbitrary text (valid or not) ----------------------------------------

def outcome(boundary, pieces):
    return feed_pieces(boundary, pieces), boundary.status


noise = st.text(alphabet='{}[]()"\'\\<|>:,= a1T\n', max_size=40)


@PROPS
@given(text=noise, cut=cuts, lead=st.sampled_from(["", "[", "{", "f(", "[f("]))
def test_any_text_same_outcome_on_every_chunking(text, cut, lead):
    text = lead + text
    factories = [json_boundary({}), json_boundary({"string_delims": [['<|"|>', '<|"|>'], ["<<", ">>"]],
                                                   "accept": '{["'}),
                 pythonic_boundary({}), pythonic_boundary({"allow_bare": False})]
    for factory in factories:
        expected = outcome(factory(), [text])
        assert outcome(factory(), split(text, cut)) == expected
        assert outcome(factory(), list(text)) == expected



@PROPS
@given(text=st.text(alphabet='{}[]"\\:, a1\n', max_size=40), rest=junk)
def test_json_quick_path_ends_where_the_scan_ends(text, rest):
    """Fed at once, a body starting with a bracket goes to json's C reader first (the quick path);
    fed a character at a time it is always scanned. Both must give the same end, on any text."""
    for body in ("{" + text + rest, "[" + text + rest, ' {"a": [' + text + rest):
        whole = JsonBoundary()
        assert whole.feed(body) == feed_pieces(JsonBoundary(), list(body)), body
        assert whole.status == ACCEPTED


def test_json_quick_path_is_taken_on_a_whole_value(monkeypatch):
    """A complete body in one piece is read by json's C reader; a dialect body never is."""
    from respc.runtime.formats import json_ as json_format

    calls = []

    def counted(data, i):
        calls.append(i)
        return json.JSONDecoder().raw_decode(data, i)

    monkeypatch.setattr(json_format, "_RAW_DECODE", counted)
    body = ' [{"name": "f", "arguments": {"s": "a}]\\""}}] then prose'
    assert JsonBoundary().feed(body) == body.index(" then")
    assert calls == [1]
    assert JsonBoundary(string_delims=(("<<", ">>"),)).feed('{"a": <<x}>>} z') == 13
    assert calls == [1]


# --- json_boundary's verdict: the status without a decoder (issue 14) ----------------------------

@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=' \t\r\n\x0b{}[]"a1-tn,:\\<', max_size=12),
       accept=st.sampled_from(["{[", "{", '{["', '{["-0123456789tfn', ""]))
def test_json_verdict_is_a_new_decoders_status(text, accept):
    factory = json_boundary({"accept": accept})
    decoder = factory()
    decoder.feed(text)
    assert factory.verdict(text) == decoder.status


def test_json_verdict_examples_and_absence_with_string_delims():
    verdict = json_boundary({}).verdict
    assert [verdict(t) for t in ["", " \n", ' {"a"', "[", "Sure", " \x0b{"]] == [
        UNDECIDED, UNDECIDED, ACCEPTED, ACCEPTED, REJECTED, REJECTED]
    assert not hasattr(json_boundary({"string_delims": [["<|", "|>"]]}), "verdict")
