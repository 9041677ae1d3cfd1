"""The quick proof of a plain tool call (runtime/stream.py ``_plain_call``, issue 33) never lets
through a value that the two checks it stands for (``check_tool_call_names``, ``_non_finite``)
refuse, and the rewritten ``_non_finite`` finds the same value the plain walk finds."""

from __future__ import annotations

import math

import pytest

from respc.runtime import stream, tools
from respc.runtime.errors import ContentParseError

NAN, INF = float("nan"), float("inf")

VALUES = [
    {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 7}}},
    {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
    {"type": "function", "function": {"name": "get_weather"}},
    {"function": {"name": "get_weather", "arguments": None}},
    {"function": {"name": "get_weather", "arguments": 3}},
    {"function": {"name": "get_weather", "arguments": True}},
    {"function": {"name": "get_weather", "arguments": [1]}},
    {"function": {"name": "get_weather", "arguments": {"x": NAN}}},
    {"function": {"name": "get_weather", "arguments": {"x": 1.5}}},
    {"function": {"name": "get_weather", "arguments": {"x": [INF]}}},
    {"function": {"name": "get_weather", "arguments": {INF: 1}}},
    {"function": {"name": "get_weather", "arguments": {}}, "id": INF},
    {"function": {"name": "get_weather", "arguments": {}, "extra": -INF}},
    {"function": {"name": "get weather", "arguments": {}}},
    {"function": {"name": "", "arguments": {}}},
    {"function": {"name": ["get_weather"], "arguments": {}}},
    {"function": {"arguments": {}}},
    {"function": "get_weather"},
    {"name": "get_weather", "arguments": {"x": NAN}},
    {1: "a", "function": {"name": "get_weather"}},
    # nested arguments (xlam's lists and objects): plain when nothing inside is non-finite
    {"function": {"name": "get_weather", "arguments": {"stops": ["Paris", {"k": None}], "o": {"t": {"c": 1}}}}},
    {"function": {"name": "get_weather", "arguments": {"stops": ["Paris", {"k": NAN}]}}},
    {"function": {"name": "get_weather", "arguments": {"o": {INF: 1}}}},
    {"function": {"name": "get_weather", "arguments": {"o": {1.5: 1, "x": (2, -INF)}}}},
    {"function": {"name": "get weather", "arguments": {"o": [1]}}},
]


def _checks(value):
    """What the two checks say: the error message, or None when both let it through."""
    try:
        tools.check_tool_call_names(value, "tool_calls")
    except ContentParseError as exc:
        return str(exc)
    bad = stream._non_finite(value)
    return None if bad is None else f"non-finite {bad!r}"


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_plain_call_only_when_both_checks_pass(value):
    tools.check_tool_call_names(VALUES[0], "tool_calls")  # get_weather is a name checked before
    verdict = _checks(value)
    if stream._plain_call(value):
        assert verdict is None
    # and the first three, the common shapes, take the quick way
    if value is VALUES[0] or value is VALUES[1] or value is VALUES[2] or value is VALUES[20]:
        assert stream._plain_call(value)


def _walk(value):
    """The first non-finite float, in the order _non_finite documents (dict keys, then values)."""
    if isinstance(value, float):
        return value if not math.isfinite(value) else None
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str) and _walk(key) is not None:
                return key
        items = value.values()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return None
    for item in items:
        found = _walk(item)
        if found is not None:
            return found
    return None


@pytest.mark.parametrize("value", VALUES + [[1, {"a": (2, INF)}, NAN], (NAN,), 1e999, "x", None, True],
                         ids=range(len(VALUES) + 6))
def test_non_finite_finds_the_first(value):
    got, want = stream._non_finite(value), _walk(value)
    assert (got is None) == (want is None)
    if want is not None:
        assert got is want or (math.isnan(got) and math.isnan(want)) or got == want


LISTS = [[VALUES[0], VALUES[1]], [], [VALUES[0], VALUES[7]], [VALUES[0], VALUES[13]], [VALUES[2], "x"],
         [VALUES[0], [VALUES[0]]], [VALUES[0], {"function": {"name": "get_weather", "arguments": {"x": INF}}}],
         [VALUES[4], VALUES[0]]]


@pytest.mark.parametrize("value", LISTS, ids=range(len(LISTS)))
def test_plain_calls_only_when_both_checks_pass(value):
    # a list of calls (a transform_each region, mistral_nemo's [TOOL_CALLS][...]) takes the quick
    # way only when the two checks pass it as well
    tools.check_tool_call_names(VALUES[0], "tool_calls")
    verdict = _checks(value)
    if stream._plain_calls(value):
        assert verdict is None
    if value is LISTS[0] or value is LISTS[1]:
        assert stream._plain_calls(value)
    else:
        assert not stream._plain_calls(value)
