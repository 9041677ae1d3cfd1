"""Unit tests for respc.runtime.content (docs/template-language.md "Content parsers", deviation D6),
plus a differential check
against the transformers reference parsers (skipped when transformers is not installed).

Tests of deviation D6 carry ``D6`` in their names and are excluded from the differential
strategies (the generated inputs cannot trigger D6 behaviour).
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from respc.runtime import ContentParseError
from respc.runtime.content import (
    CONTENT_PARSER_NAMES,
    PARSERS,
    STREAMABLE_PARSERS,
    make_content_parser,
    parse_content,
)

XML_PATTERN = r"<parameter=(?P<key>\w+)>\s*(?P<value>.*?)\s*</parameter>"


# --- constants -------------------------------------------------------------------------------

def test_parser_names_in_spec_order():
    assert CONTENT_PARSER_NAMES == ("text", "int", "float", "bool", "json", "xml-inline", "kv-lines",
                                    "pythonic", "xml-tree")
    assert CONTENT_PARSER_NAMES == tuple(PARSERS)


def test_streamable_parsers_are_the_scalar_ones():
    assert STREAMABLE_PARSERS == frozenset({"text", "int", "float", "bool"})
    assert isinstance(STREAMABLE_PARSERS, frozenset)


# --- text / int / float / bool -----------------------------------------------------------------

def test_text_strips_by_default():
    assert parse_content("  hi there \n", "text", {}) == "hi there"


def test_text_strip_false_keeps_whitespace():
    assert parse_content("  hi \n", "text", {"strip": False}) == "  hi \n"


def test_make_text_parser_is_str_strip():
    assert make_content_parser("text", {}) is str.strip
    assert make_content_parser("text", {"strip": False})(" a ") == " a "


def test_int_parses_stripped_text():
    assert parse_content(" 42\n", "int", {}) == 42


def test_int_python_syntax_quirks():
    assert parse_content("1_000", "int", {}) == 1000
    assert parse_content("+7", "int", {}) == 7
    assert parse_content("-0", "int", {}) == 0


def test_int_failure_is_content_parse_error_quoting_content():
    with pytest.raises(ContentParseError, match=r"(?s)int parser.*'4\.5'") as info:
        parse_content("4.5", "int", {})
    assert isinstance(info.value, ValueError)
    assert "invalid literal" in str(info.value)


def test_int_empty_fails():
    with pytest.raises(ValueError, match="int"):
        parse_content("   ", "int", {})


def test_float_parses():
    assert parse_content(" 2.5 ", "float", {}) == 2.5
    assert parse_content("1e3", "float", {}) == 1000.0
    assert math.isinf(parse_content("-inf", "float", {}))


def test_float_failure():
    with pytest.raises(ContentParseError, match=r"(?s)float parser.*'abc'"):
        parse_content("abc", "float", {})


@pytest.mark.parametrize("text,expected", [
    ("true", True), (" TRUE ", True), ("1", True), ("True\n", True),
    ("false", False), ("yes", False), ("0", False), ("", False), ("10", False),
])
def test_bool_accepts_only_true_and_1(text, expected):
    assert parse_content(text, "bool", {}) is expected


def test_bool_strip_false_sees_whitespace():
    assert parse_content(" true", "bool", {"strip": False}) is False
    assert parse_content("true", "bool", {"strip": False}) is True


# --- json ----------------------------------------------------------------------------------------

def test_json_plain():
    assert parse_content(' {"a": [1, 2.5, null, true]} ', "json", {}) == {"a": [1, 2.5, None, True]}
    assert parse_content("[]", "json", {}) == []
    assert parse_content('"s"', "json", {}) == "s"


def test_json_failure_message_names_parser_and_content():
    with pytest.raises(ContentParseError, match="json parser could not parse region as JSON") as info:
        parse_content("not json", "json", {})
    assert "'not json'" in str(info.value)


def test_json_allow_non_json_returns_stripped_text():
    assert parse_content("  plain words \n", "json", {"allow_non_json": True}) == "plain words"


def test_json_allow_non_json_with_strip_false():
    assert parse_content(" x ", "json", {"allow_non_json": True, "strip": False}) == " x "


def test_json_allow_non_json_still_parses_json():
    assert parse_content("1.50", "json", {"allow_non_json": True}) == 1.5


def test_json_unquoted_keys():
    assert parse_content('{a:1,b:{c:"x"}}', "json", {"unquoted_keys": True}) == {"a": 1, "b": {"c": "x"}}


def test_json_unquoted_keys_numeric_key_quoted_like_reference():
    assert parse_content("{1:2}", "json", {"unquoted_keys": True}) == {"1": 2}


def test_json_unquoted_keys_leaves_quoted_keys():
    assert parse_content('{"a":1,b:2}', "json", {"unquoted_keys": True}) == {"a": 1, "b": 2}


def test_json_failure_after_dialect_names_both_texts():
    with pytest.raises(ContentParseError, match="could not parse after dialect transforms") as info:
        parse_content("{a:1,b:", "json", {"unquoted_keys": True})
    assert "'{a:1,b:'" in str(info.value) and '\'{"a":1,"b":\'' in str(info.value)


def test_json_string_delims_become_json_strings():
    args = {"string_delims": [["<|\"|>", "<|\"|>"]], "unquoted_keys": True}
    text = '{location:<|"|>Paris, "FR"<|"|>,units:[<|"|>c<|"|>,<|"|>f<|"|>]}'
    assert parse_content(text, "json", args) == {"location": 'Paris, "FR"', "units": ["c", "f"]}


def test_json_string_delims_multiline_and_backslash():
    args = {"string_delims": [["<<", ">>"]]}
    assert parse_content('{"a": <<line1\nline\\2>>}', "json", args) == {"a": "line1\nline\\2"}


def test_json_string_delims_unclosed_is_left_alone():
    args = {"string_delims": [["<<", ">>"]], "allow_non_json": True}
    assert parse_content("{<<a: 1}", "json", args) == "{<<a: 1}"


def test_json_string_delims_first_pair_wins_at_same_position():
    args = {"string_delims": [["<", ">"], ["<<", ">>"]]}
    # The first pair opens at "<" and closes at the first ">": body "<x".
    assert parse_content('[<<x>>]', "json", {**args, "allow_non_json": True}) == "[<<x>>]"
    assert parse_content('[<<x>]', "json", args) == ["<x"]


def test_json_string_delims_later_pair_used_when_first_has_no_close():
    args = {"string_delims": [["<<", "!!"], ["<<", ">>"]]}
    assert parse_content("[<<x>>]", "json", args) == ["x"]


def test_D6_unquoted_keys_after_whitespace():
    assert parse_content("{a: 1, c: 2}", "json", {"unquoted_keys": True}) == {"a": 1, "c": 2}
    assert parse_content("{\n  a: 1,\n  c: [1]\n}", "json", {"unquoted_keys": True}) == {"a": 1, "c": [1]}


def test_D6_unquoted_keys_never_touch_strings():
    assert parse_content('{"s": "x,y:z", k: 1}', "json", {"unquoted_keys": True}) == {"s": "x,y:z", "k": 1}
    assert parse_content('{"s": "{a:b}"}', "json", {"unquoted_keys": True}) == {"s": "{a:b}"}


def test_D6_unquoted_keys_escaped_quote_in_string():
    text = r'{"s": "say \"x,y:z\"", k: 2}'
    assert parse_content(text, "json", {"unquoted_keys": True}) == {"s": 'say "x,y:z"', "k": 2}


def test_D6_string_delims_no_reserved_sentinels():
    args = {"string_delims": [["<<", ">>"]]}
    assert parse_content("[<<a\x01b\x02c>>]", "json", args) == ["a\x01b\x02c"]


def test_D6_string_delims_not_applied_inside_json_strings():
    args = {"string_delims": [["<<", ">>"]]}
    assert parse_content('{"a": "<<x>>", "b": <<y>>}', "json", args) == {"a": "<<x>>", "b": "y"}


def test_D6_allow_non_json_falls_back_on_control_characters():
    args = {"string_delims": [["<<", ">>"]], "allow_non_json": True}
    assert parse_content('{"a": "x\x01"}', "json", args) == '{"a": "x\x01"}'


def test_D6_allow_non_json_falls_back_on_bad_dialect_args():
    args = {"string_delims": [["only-one"]], "allow_non_json": True}
    assert parse_content(" {} ", "json", args) == "{}"
    with pytest.raises(ContentParseError, match="json"):
        parse_content("{}", "json", {"string_delims": [["only-one"]]})


def test_D6_delimited_key_and_unquoted_key_together():
    args = {"string_delims": [["<<", ">>"]], "unquoted_keys": True}
    assert parse_content("{<<k 1>>: 1, k2: <<v, w: x>>}", "json", args) == {"k 1": 1, "k2": "v, w: x"}


def test_json_python_literals_outside_strings():
    args = {"unquoted_keys": True, "python_literals": True}
    assert parse_content("{label: None, enabled: True, off: False}", "json", args) == {
        "label": None, "enabled": True, "off": False}
    assert parse_content("[True,False,None, true]", "json", {"python_literals": True}) == [True, False, None, True]


def test_D6_python_literals_never_touch_strings():
    args = {"python_literals": True, "unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]}
    text = '{"s": "True or None", d: <|"|>False, None<|"|>, x: None}'
    assert parse_content(text, "json", args) == {"s": "True or None", "d": "False, None", "x": None}
    assert parse_content('{"None": "x \\" True"}', "json", {"python_literals": True}) == {"None": 'x " True'}


def test_json_python_literals_whole_words_only():
    with pytest.raises(ContentParseError, match="could not parse after dialect transforms") as info:
        parse_content("[Nonesuch, xTrue, True]", "json", {"python_literals": True})
    assert "'[Nonesuch, xTrue, true]'" in str(info.value)


def test_json_python_literals_off_by_default():
    with pytest.raises(ContentParseError, match="json parser could not parse region as JSON"):
        parse_content("[None]", "json", {})


# --- xml-inline -----------------------------------------------------------------------------------

def test_xml_inline_basic():
    text = "<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>"
    assert parse_content(text, "xml-inline", {"tag_pattern": XML_PATTERN}) == {"city": "Paris", "days": "3"}


def test_xml_inline_dotall_value_spans_lines():
    text = "<parameter=body>\nline 1\nline 2\n</parameter>"
    assert parse_content(text, "xml-inline", {"tag_pattern": XML_PATTERN}) == {"body": "line 1\nline 2"}


def test_xml_inline_last_duplicate_wins_by_default():
    text = "<parameter=a>1</parameter><parameter=a>2</parameter>"
    assert parse_content(text, "xml-inline", {"tag_pattern": XML_PATTERN}) == {"a": "2"}


def test_xml_inline_merge_duplicates_collects_list():
    text = "<parameter=a>1</parameter><parameter=b>x</parameter><parameter=a>2</parameter><parameter=a>3</parameter>"
    args = {"tag_pattern": XML_PATTERN, "merge_duplicates": True}
    assert parse_content(text, "xml-inline", args) == {"a": ["1", "2", "3"], "b": "x"}


def test_xml_inline_merge_duplicates_extends_parsed_list_like_reference():
    text = "<parameter=a>[1]</parameter><parameter=a>2</parameter>"
    args = {"tag_pattern": XML_PATTERN, "merge_duplicates": True, "value_parser": {"name": "json"}}
    assert parse_content(text, "xml-inline", args) == {"a": [1, 2]}


def test_xml_inline_value_parser():
    text = "<parameter=n>7</parameter><parameter=s>abc</parameter>"
    args = {"tag_pattern": XML_PATTERN, "value_parser": {"name": "json", "args": {"allow_non_json": True}}}
    assert parse_content(text, "xml-inline", args) == {"n": 7, "s": "abc"}


def test_xml_inline_value_parser_default_name_is_text():
    args = {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>", "value_parser": {}}
    assert parse_content("<a>  x  </a>", "xml-inline", args) == {"a": "x"}


def test_xml_inline_value_parser_error_propagates():
    args = {"tag_pattern": XML_PATTERN, "value_parser": {"name": "int"}}
    with pytest.raises(ContentParseError, match="int parser"):
        parse_content("<parameter=n>seven</parameter>", "xml-inline", args)


def test_xml_inline_missing_value_group_gives_empty_string():
    assert parse_content("<a><b>", "xml-inline", {"tag_pattern": r"<(?P<key>\w+)>"}) == {"a": "", "b": ""}


def test_xml_inline_no_matches_is_empty_dict():
    # D7: text no match accounts for is an error; "unmatched": "skip" reads as the reference does
    assert parse_content(" \n", "xml-inline", {"tag_pattern": XML_PATTERN}) == {}
    assert parse_content("nothing", "xml-inline", {"tag_pattern": XML_PATTERN, "unmatched": "skip"}) == {}
    with pytest.raises(ContentParseError, match="xml-inline: text at offset 0 of the body matches no tag_pattern: 'nothing'"):
        parse_content("nothing", "xml-inline", {"tag_pattern": XML_PATTERN})


def test_xml_inline_missing_tag_pattern_raises_at_parse_time():
    parser = make_content_parser("xml-inline", {})  # no error yet
    with pytest.raises(ContentParseError, match="'tag_pattern' content_arg is required"):
        parser("<a>1</a>")


def test_xml_inline_pattern_without_key_group():
    with pytest.raises(ContentParseError, match="named group 'key'"):
        parse_content("<a>1</a>", "xml-inline", {"tag_pattern": r"<(?P<k>\w+)>"})


def test_xml_inline_invalid_pattern_is_content_parse_error():
    with pytest.raises(ContentParseError, match="tag_pattern"):
        parse_content("<a>", "xml-inline", {"tag_pattern": "(unclosed"})


def test_xml_inline_tag_pattern_compiled_once():
    from respc.runtime.formats import xml_inline as xml_inline_format

    xml_inline_format._compile_tag_pattern.cache_clear()
    for _ in range(3):
        parse_content("<a>", "xml-inline", {"tag_pattern": r"<(?P<key>\w+)>"})
    info = xml_inline_format._compile_tag_pattern.cache_info()
    assert (info.misses, info.hits) == (1, 2)


DSML = ('<｜DSML｜parameter name="(?P<key>[^"]+)" string="(?P<string>true|false)">(?P<value>.*?)'
        '</｜DSML｜parameter>')
DSML_SWITCH = {"switch": "string", "cases": {"true": {"name": "text", "args": {"strip": False}},
                                             "false": {"name": "json"}}}


def test_xml_inline_value_parser_switch_on_a_group():
    text = ('<｜DSML｜parameter name="ids" string="false">[4, 8, 15]</｜DSML｜parameter>\n'
            '<｜DSML｜parameter name="query" string="true"> [not json] </｜DSML｜parameter>')
    args = {"tag_pattern": DSML, "value_parser": DSML_SWITCH}
    assert parse_content(text, "xml-inline", args) == {"ids": [4, 8, 15], "query": " [not json] "}


def test_xml_inline_switch_default_and_missing_default():
    pattern = r"<(?P<key>\w+)(?: t=(?P<t>\w+))?>(?P<value>.*?)</(?P=key)>"
    text = "<a t=n>7</a><b t=s> x </b><c>[1]</c>"
    switch = {"switch": "t", "cases": {"n": {"name": "int"}}}
    assert parse_content(text, "xml-inline", {"tag_pattern": pattern, "value_parser": switch}) == {
        "a": 7, "b": " x ", "c": "[1]"}
    switch["default"] = {"name": "json", "args": {"allow_non_json": True}}
    assert parse_content(text, "xml-inline", {"tag_pattern": pattern, "value_parser": switch}) == {
        "a": 7, "b": "x", "c": [1]}


def test_xml_inline_switch_errors_at_parse_time():
    args = {"tag_pattern": DSML, "value_parser": {"switch": "nope", "cases": {}}}
    parser = make_content_parser("xml-inline", args)
    with pytest.raises(ContentParseError, match="value_parser switch group 'nope' is not a named group"):
        parser("x")
    args = {"tag_pattern": DSML, "value_parser": {"switch": "string", "cases": []}}
    with pytest.raises(ContentParseError, match="malformed value_parser switch"):
        parse_content('<｜DSML｜parameter name="a" string="true">1</｜DSML｜parameter>', "xml-inline", args)


def test_xml_inline_switch_case_error_propagates():
    args = {"tag_pattern": DSML, "value_parser": DSML_SWITCH}
    with pytest.raises(ContentParseError, match="json parser could not parse region as JSON"):
        parse_content('<｜DSML｜parameter name="a" string="false">oops</｜DSML｜parameter>', "xml-inline", args)


# --- kv-lines -------------------------------------------------------------------------------------

def test_kv_lines_defaults():
    text = "name: alice\n\nage : 30\n  \nurl: http://x:1\n"
    assert parse_content(text, "kv-lines", {}) == {"name": "alice", "age": "30", "url": "http://x:1"}


def test_kv_lines_line_without_separator_is_an_error():
    # D7 (docs/template-language.md): a non-blank line without kv_sep is text no pair accounts for
    text = "name: alice\n\nage : 30\n no separator\nurl: http://x:1\n"
    with pytest.raises(ContentParseError, match="kv-lines: the line at offset 23 of the body has no ':': 'no separator'"):
        parse_content(text, "kv-lines", {})
    assert parse_content(text, "kv-lines", {"unmatched": "skip"}) == {"name": "alice", "age": "30", "url": "http://x:1"}


def test_kv_lines_custom_separators():
    assert parse_content("a=1;b = 2;;", "kv-lines", {"line_sep": ";", "kv_sep": "="}) == {"a": "1", "b": "2"}
    assert parse_content("a=1;b = 2;;c", "kv-lines", {"line_sep": ";", "kv_sep": "=", "unmatched": "skip"}) == {
        "a": "1", "b": "2"}


def test_kv_lines_strip_false():
    assert parse_content("a = 1 ;b=2", "kv-lines", {"line_sep": ";", "kv_sep": "=", "strip": False}) == {
        "a ": " 1 ", "b": "2"}


def test_kv_lines_value_parser():
    args = {"value_parser": {"name": "int"}}
    assert parse_content("a: 1\nb: 22", "kv-lines", args) == {"a": 1, "b": 22}


def test_kv_lines_last_key_wins():
    assert parse_content("a: 1\na: 2", "kv-lines", {}) == {"a": "2"}


def test_kv_lines_empty_separator_is_content_parse_error():
    with pytest.raises(ContentParseError, match="kv-lines"):
        parse_content("a:1", "kv-lines", {"line_sep": ""})


def test_kv_lines_value_parser_switch_on_key():
    args = {"value_parser": {"switch": "key", "cases": {"ids": {"name": "json"}, "n": {"name": "int"}}}}
    assert parse_content("ids: [1, 2]\nn: 3\nname: [x]", "kv-lines", args) == {
        "ids": [1, 2], "n": 3, "name": "[x]"}


def test_kv_lines_switch_on_another_group_fails_at_parse_time():
    parser = make_content_parser("kv-lines", {"value_parser": {"switch": "value", "cases": {}}})
    with pytest.raises(ContentParseError, match="value_parser can only switch on 'key'"):
        parser("a: 1")


# --- pythonic -------------------------------------------------------------------------------------

def test_pythonic_through_parse_content():
    assert parse_content("[get_weather(city='Paris')]", "pythonic", {}) == [
        {"name": "get_weather", "arguments": {"city": "Paris"}}]


def test_pythonic_bad_strip_suffix_fails_at_parse_time():
    parser = make_content_parser("pythonic", {"strip_suffix": 3})
    with pytest.raises(ContentParseError, match="pythonic: strip_suffix must be a string, got 3"):
        parser("f()")


# --- dispatch ------------------------------------------------------------------------------------

def test_unknown_parser_is_content_parse_error():
    with pytest.raises(ContentParseError, match="unknown content parser 'yaml'"):
        parse_content("x", "yaml", {})


def test_unknown_value_parser_raises_only_when_used():
    args = {"tag_pattern": XML_PATTERN, "value_parser": {"name": "yaml"}}
    parser = make_content_parser("xml-inline", args)
    assert parser(" \n ") == {}
    with pytest.raises(ContentParseError, match="yaml"):
        parser("<parameter=a>1</parameter>")


def test_make_content_parser_matches_parse_content():
    for name, args, text in [
        ("int", {}, " 5 "), ("float", {}, "2.5"), ("bool", {}, "True"),
        ("json", {"unquoted_keys": True}, "{a:1}"), ("kv-lines", {}, "a: b"),
    ]:
        assert make_content_parser(name, args)(text) == parse_content(text, name, args)


# --- differential against the transformers reference --------------------------------------------

@pytest.fixture(scope="module")
def ref_parse():
    module = pytest.importorskip("transformers.utils.chat_parsing.content_parsers")
    return module.parse_content


def _same(text, name, args, ref_parse):
    try:
        expected = ("ok", ref_parse(text, name, args))
    except ValueError:
        expected = ("error",)
    try:
        got = ("ok", parse_content(text, name, args))
    except ContentParseError:
        got = ("error",)
    if expected[0] == got[0] == "ok" and isinstance(expected[1], float) and math.isnan(expected[1]):
        assert math.isnan(got[1])
    else:
        assert got == expected, (text, name, args)


numberish = st.one_of(
    st.text(max_size=12),
    st.from_regex(r"\A\s*[-+]?\d{0,4}(_\d)?(\.\d{0,3})?([eE][-+]?\d{1,3})?\s*\Z"),
    st.sampled_from(["nan", "inf", "-Infinity", "true", "1", "TRUE ", "0", "false"]),
)
DIFF = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@DIFF
@given(text=numberish, name=st.sampled_from(["text", "int", "float", "bool"]), strip=st.booleans())
def test_differential_scalars(ref_parse, text, name, strip):
    _same(text, name, {"strip": strip}, ref_parse)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@DIFF
@given(value=json_values, noise=st.sampled_from(["", " ", "\n", "x", "}", "]"]), allow=st.booleans())
def test_differential_json_plain(ref_parse, value, noise, allow):
    _same(json.dumps(value) + noise, "json", {"allow_non_json": allow}, ref_parse)


# Keys and string values that cannot trigger D6 (no ",", "{", ":", quotes or delimiters).
safe_key = st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,5}\Z")
safe_str = st.text(alphabet="abc XYZ019_.-", max_size=6)
lax_values = st.recursive(
    st.none() | st.booleans() | st.integers() | safe_str.map(lambda s: ("str", s)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(safe_key, inner, max_size=3),
    max_leaves=8,
)


def _lax(value, delims):
    """Write a value in the lax dialect: bare keys, strings in custom delimiters or quotes."""
    if isinstance(value, tuple):
        return (delims[0] + value[1] + delims[1]) if delims else json.dumps(value[1])
    if isinstance(value, list):
        return "[" + ",".join(_lax(v, delims) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_lax(v, delims)}" for k, v in value.items()) + "}"
    return json.dumps(value)


@DIFF
@given(value=st.dictionaries(safe_key, lax_values, max_size=4),
       delims=st.sampled_from([None, ("<|\"|>", "<|\"|>"), ("<<", ">>"), ("'", "'")]),
       allow=st.booleans(), truncate=st.booleans())
def test_differential_json_dialects(ref_parse, value, delims, allow, truncate):
    text = _lax(value, delims)
    if truncate:
        text = text[:-1]
    args = {"unquoted_keys": True, "allow_non_json": allow}
    if delims:
        args["string_delims"] = [list(delims)]
    _same(text, "json", args, ref_parse)


xml_entries = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]),
                                 st.text(alphabet="ab 12.\n{}\"[]", max_size=6)), max_size=5)


@DIFF
@given(entries=xml_entries, merge=st.booleans(),
       value_parser=st.sampled_from([None, {"name": "text"}, {"name": "int"},
                                     {"name": "json", "args": {"allow_non_json": True}}]))
def test_differential_xml_inline(ref_parse, entries, merge, value_parser):
    text = "junk".join(f"<parameter={k}>{v}</parameter>" for k, v in entries)
    # the reference skips unmatched text: compared with "unmatched": "skip" (D7); by default the
    # "junk" between two tags is an error
    args = {"tag_pattern": XML_PATTERN, "merge_duplicates": merge, "unmatched": "skip"}
    if value_parser is not None:
        args["value_parser"] = value_parser
    _same(text, "xml-inline", args, ref_parse)
    try:
        parse_content(text, "xml-inline", args)
    except ContentParseError:
        return  # a value the value_parser refuses fails first
    if len(entries) > 1:
        with pytest.raises(ContentParseError, match="matches no tag_pattern: 'junk'"):
            parse_content(text, "xml-inline", {**args, "unmatched": "error"})


@DIFF
@given(text=st.text(alphabet="ab:=;\n 1", max_size=20),
       line_sep=st.sampled_from([None, "\n", ";"]), kv_sep=st.sampled_from([None, ":", "="]),
       strip=st.sampled_from([None, True, False]),
       value_parser=st.sampled_from([None, {"name": "bool"}, {"name": "json", "args": {"allow_non_json": True}}]))
def test_differential_kv_lines(ref_parse, text, line_sep, kv_sep, strip, value_parser):
    args = {k: v for k, v in [("line_sep", line_sep), ("kv_sep", kv_sep), ("strip", strip),
                             ("value_parser", value_parser)] if v is not None}
    _same(text, "kv-lines", {**args, "unmatched": "skip"}, ref_parse)  # the reference skips (D7)
    lines = text.split(args.get("line_sep", "\n"))
    if all(not line.strip() or args.get("kv_sep", ":") in line for line in lines):
        _same(text, "kv-lines", args, ref_parse)  # nothing to skip: the default reads the same


# --- xml-tree (v2) ----------------------------------------------------------------------------

NS = "]<]minimax[>["
TREE = {"tag_prefix": NS}


def test_xml_tree_leaf_is_the_text_unchanged():
    assert parse_content(" 42 ", "xml-tree", TREE) == " 42 "
    assert parse_content("a <b> c", "xml-tree", TREE) == "a <b> c"
    assert parse_content("", "xml-tree", TREE) == ""


def test_xml_tree_children_are_an_object_and_items_a_list():
    # MiniMax-M3's to_xml: a mapping as one element per key, a list as <item> elements
    # (the create_order call of vLLM's tests/tool_parsers/test_minimax_m3_tool_parser.py)
    shipping = f"{NS}<city>Singapore{NS}</city>{NS}<zip>018956{NS}</zip>"
    assert parse_content(shipping, "xml-tree", TREE) == {"city": "Singapore", "zip": "018956"}
    items = (f"{NS}<item>{NS}<sku>book-001{NS}</sku>{NS}<qty>2{NS}</qty>{NS}</item>\n"
             f"{NS}<item>{NS}<sku>pen-007{NS}</sku>{NS}</item>")
    assert parse_content(items, "xml-tree", TREE) == [{"sku": "book-001", "qty": "2"}, {"sku": "pen-007"}]
    nested = f"{NS}<item>{NS}<item>1{NS}</item>{NS}<item>2{NS}</item>{NS}</item>"
    assert parse_content(nested, "xml-tree", TREE) == [["1", "2"]]


def test_xml_tree_repeated_name_collects_a_list_per_object():
    body = (f"{NS}<tag>a{NS}</tag>{NS}<tag>b{NS}</tag>{NS}<tag>c{NS}</tag>"
            f"{NS}<sub>{NS}<tag>x{NS}</tag>{NS}</sub>")
    assert parse_content(body, "xml-tree", TREE) == {"tag": ["a", "b", "c"], "sub": {"tag": "x"}}


def test_xml_tree_same_name_nesting_closes_at_the_matching_tag():
    assert parse_content(f"{NS}<a>{NS}<a>x{NS}</a>{NS}</a>", "xml-tree", TREE) == {"a": {"a": "x"}}


@pytest.mark.parametrize("body", [f"{NS}<a>x", f"{NS}<a>x{NS}</a> tail", f"{NS}<a>x{NS}</b>", f"{NS}<a>{NS}</a>{NS}</a>"])
def test_xml_tree_damaged_elements_keep_the_text(body):
    assert parse_content(body, "xml-tree", TREE) == body


def test_xml_tree_default_prefix_and_item_tag():
    assert parse_content("<to><city>Oslo</city></to>", "xml-tree", {}) == {"to": {"city": "Oslo"}}
    assert parse_content("<li>a</li><li>b</li>", "xml-tree", {"item_tag": "li"}) == ["a", "b"]


def test_xml_tree_as_value_parser_of_xml_inline():
    args = {"tag_pattern": r"<(?P<key>[^\s<>/]+)>(?P<value>.*?)</(?P=key)>",
            "value_parser": {"name": "xml-tree"}}
    assert parse_content("<to><city>Oslo</city></to><n>3</n>", "xml-inline", args) == {"to": {"city": "Oslo"}, "n": "3"}


@pytest.mark.parametrize("args,path,words", [
    ({"tag_prefix": 3}, "tag_prefix", "must be a string"),
    ({"item_tag": "a b"}, "item_tag", "must be a tag name"),
    ({"item_tag": ""}, "item_tag", "must be a tag name"),
    ({"prefix": "x"}, "", "unknown arguments ['prefix']"),
])
def test_xml_tree_bad_arguments_are_named(args, path, words):
    problems = PARSERS["xml-tree"].check(args, "content_args")
    assert problems and problems[0][0] == path and words in problems[0][1]


def test_xml_tree_bad_arguments_fail_at_parse_time():
    with pytest.raises(ContentParseError, match="xml-tree"):
        parse_content("x", "xml-tree", {"tag_prefix": 3})
