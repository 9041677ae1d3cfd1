"""Every vector of ../shared/conformance/hf.jsonl through the in-memory compile (the rules of
docs/template-language.md).

Each non-error vector is fed whole, one character at a time and in random pieces; all must give
``expect.message`` (D2). Where the vector lists ``chunks`` and ``expect_events``, the exact event
list is checked too. Error vectors must fail at the stated stage with the stated class and text.
The CLI path runs the same vectors in ``test_cli.py``.
"""

from __future__ import annotations

import pytest

import respc
from respc.runtime import TemplateError
from respc.runtime import ContentParseError
from support import CONFORMANCE, CONFORMANCE_DEVIATIONS, chunkings, load_jsonl, missing, params, run_stream

VECTORS = load_jsonl(CONFORMANCE)
pytestmark = pytest.mark.skipif(not VECTORS, reason=missing(CONFORMANCE))

ERRORS = {"ValueError": ValueError, "KeyError": KeyError, "RuntimeError": RuntimeError}


def _id(vector: dict) -> str:
    return vector["id"]


MESSAGE_VECTORS = [v for v in VECTORS if "message" in v["expect"] and v["id"] not in CONFORMANCE_DEVIATIONS]
# the reference's reading of a body that respc refuses (D7, D8: tests/cases/conformance_deviations.json)
DEVIATING_VECTORS = [v for v in VECTORS if v["id"] in CONFORMANCE_DEVIATIONS]
ERROR_VECTORS = [v for v in VECTORS if "error" in v["expect"]]
EVENT_VECTORS = [v for v in VECTORS if "expect_events" in v]


@pytest.mark.parametrize("vector", params(MESSAGE_VECTORS, CONFORMANCE, _id))
@pytest.mark.parametrize("how", ["whole", "chars", "random", "listed"])
def test_message(vector, how):
    module = respc.compile_template(vector["template"])
    if how == "listed":
        chunks = vector.get("chunks") or [vector["text"]]
    else:
        chunks = chunkings(vector["text"], vector["id"])[how]
    message, _ = run_stream(module, vector["prefix"], chunks, vector.get("tools"))
    assert message == vector["expect"]["message"]


@pytest.mark.parametrize("vector", params(MESSAGE_VECTORS, CONFORMANCE, _id))
def test_parse_response_whole(vector):
    message = respc.parse_response(vector["text"], vector["template"], prefix=vector["prefix"],
                                   tools=vector.get("tools"))
    assert message == vector["expect"]["message"]


@pytest.mark.parametrize("vector", params(EVENT_VECTORS, CONFORMANCE, _id))
def test_events(vector):
    module = respc.compile_template(vector["template"])
    chunks = vector.get("chunks") or [vector["text"]]
    _, events = run_stream(module, vector["prefix"], chunks, vector.get("tools"))
    assert events == vector["expect_events"]


def test_deviation_table_names_real_vectors():
    assert sorted(set(CONFORMANCE_DEVIATIONS) - {v["id"] for v in VECTORS}) == []


@pytest.mark.parametrize("vector", params(DEVIATING_VECTORS, CONFORMANCE, _id))
@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_deviating_vector(vector, how):
    """strict: the error D7/D8 names; recover: the region is malformed and its text kept, no value."""
    module = respc.compile_template(vector["template"])
    chunks = chunkings(vector["text"], vector["id"])[how]
    entry = CONFORMANCE_DEVIATIONS[vector["id"]]
    with pytest.raises(ContentParseError) as caught:
        run_stream(module, vector["prefix"], chunks, vector.get("tools"))
    assert str(caught.value).startswith(entry["error"])
    message, events = run_stream(module, vector["prefix"], chunks, vector.get("tools"), "recover")
    malformed = [e for e in events if e["type"] == "region_malformed"]
    assert len(malformed) == 1 and malformed[0]["error"].startswith("ContentParseError: " + entry["error"])
    field = malformed[0]["field"]
    assert field not in message and message != vector["expect"]["message"]


@pytest.mark.parametrize("vector", params(ERROR_VECTORS, CONFORMANCE, _id))
def test_error(vector):
    expect = vector["expect"]
    error = ERRORS[expect["error"]]
    if expect["stage"] == "load":
        with pytest.raises(TemplateError) as info:
            respc.compile_template(vector["template"])
        assert isinstance(info.value, ValueError)
    else:
        module = respc.compile_template(vector["template"])
        with pytest.raises(error) as info:
            module.parse_response(vector["text"], prefix=vector["prefix"], tools=vector.get("tools"))
    assert expect["match"] in str(info.value)
