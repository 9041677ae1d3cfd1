"""Red team s12 (second pass): attacks on the runtime-written scanners' declared records
(runtime/scanners.py), the whole-text express path and the OpenAI adapter's cheap argument readers,
each run exactly as found; every test here failed before its fix (docs/security.md, "Red team s12b:
declared scanner records").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO

KIMI = REPO / "generated" / "kimi_k2.py"
#: the record line of kimi_k2's state 0 that the attacks hand-edit
LINE = "_rt.Literal('<|im_end|>', rank=1)"

PROBE = """
import sys
sys.path.insert(0, '.')
try:
    import kk
    print('IMPORTED', kk.parse_response('hi<|im_end|>', prefix=''))
except BaseException as exc:
    print('REFUSED', type(exc).__name__, str(exc)[:300])
"""


def _import_edited(tmp_path: Path, old: str, new: str) -> str:
    """Write kimi_k2's module with ``old`` replaced by ``new`` to disk and import it in a fresh
    interpreter (``python -I``); returns what the probe printed."""
    text = KIMI.read_text(encoding="utf-8")
    assert old in text
    (tmp_path / "kk.py").write_text(text.replace(old, new, 1), encoding="utf-8")
    done = subprocess.run([sys.executable, "-I", "-c", PROBE], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.mark.parametrize("rank", ["-2", "7", "10**5000"])
def test_a_literal_rank_out_of_its_states_edges_is_refused_at_import(tmp_path, rank):
    """A hand-edited module whose literal record's rank is not an index of its state's edges:
    ``rank=-2`` made ``<|im_end|>`` (content's closer) open a tool call by Python's negative
    indexing (strict: a "truncated" tool-call error on ``hi<|im_end|>``; no error at import);
    ``rank=7`` and ``rank=10**5000`` raised a bare IndexError. Now the class is refused when it is
    made, with a TypeError naming the state (and no repr of a 5000-digit int, which raised
    ValueError)."""
    out = _import_edited(tmp_path, LINE, f"_rt.Literal('<|im_end|>', rank={rank})")
    assert out.startswith("REFUSED TypeError state 0 declares"), out
    assert "TRANSITIONS edge" in out


@pytest.mark.parametrize("reach", ["-3", "10**5000"])
def test_a_negative_or_huge_pattern_reach_is_refused_at_import(tmp_path, reach):
    """A Pattern record's ``reach`` (characters a match starts before its factor) must be a
    non-negative int that can be written out: ``reach=-3`` was accepted, ``10**5000`` failed at the
    first scan with "Exceeds the limit (4300 digits)"; now both are refused at import."""
    out = _import_edited(tmp_path, "prefilter=True, leads", f"reach={reach}, prefilter=True, leads")
    assert out.startswith("REFUSED TypeError a scanner takes Literal and Pattern records"), out


#: pythonic and JSON bodies whose escapes give surrogate code points in a message value
SURROGATE_OUTPUTS = [("llama4_pythonic", "", "[get_weather(city='\\ud800')]<|eot|>"),
                     ("llama4_pythonic", "", "[get_weather(city='\\ud83d\\ude00')]<|eot|>"),
                     ("hermes2pro", "<|im_start|>assistant\n",
                      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "\\ud800"}}\n</tool_call>')]


@pytest.mark.parametrize("name,prefix,text", SURROGATE_OUTPUTS)
def test_server_sent_events_of_a_surrogate_escape_encode_as_utf8(name, prefix, text):
    """``[get_weather(city='\\ud800')]`` (a Python escape the pythonic reader keeps, as Python does)
    made ``feed_sse``/``finalize_sse`` and ``responses_sse`` return text with a raw surrogate:
    ``.encode("utf-8")``, what a server does to write it, raised UnicodeEncodeError mid-stream.
    Now the events write it as its JSON escape: the text encodes, equals ``sse()`` of the dict
    chunks, and a JSON reader of the events gets the message's arguments back (the same UTF-16 text),
    whole and per character."""
    import importlib
    import json

    from respc.openai import ChatCompletionStream, ResponsesStream, sse

    module = importlib.import_module(f"respc.generated.{name}")
    for chunks in ([text], list(text)):
        stream = ChatCompletionStream(module.ResponseParser(prefix, None), ids=lambda n: "c", completion_id="x",
                                      created=0)
        got = "".join(stream.feed_sse(c) for c in chunks) + stream.finalize_sse()
        got.encode("utf-8")
        dicts = ChatCompletionStream(module.ResponseParser(prefix, None), ids=lambda n: "c", completion_id="x",
                                     created=0)
        assert sse([x for c in chunks for x in dicts.feed(c)] + dicts.finalize()) + "data: [DONE]\n\n" == got
        arguments = "".join(call["function"].get("arguments") or ""
                            for line in got.split("\n") if line.startswith("data: {")
                            for chunk in [json.loads(line[6:])] if chunk["choices"]
                            for call in chunk["choices"][0]["delta"].get("tool_calls") or [])
        want = stream.message["tool_calls"][0]["function"]["arguments"]["city"]
        assert json.loads(arguments)["city"].encode("utf-16-le", "surrogatepass") == want.encode(
            "utf-16-le", "surrogatepass")
        responses = ResponsesStream(module.ResponseParser(prefix, None))
        ("".join(responses.feed_sse(c) for c in chunks) + responses.finalize_sse()).encode("utf-8")


def test_two_threads_building_scanners_with_a_full_cache_raise_nothing(monkeypatch):
    """The compiled-scanner cache (runtime/scanners.py ``_code``, at most ``CODE_CACHE_SIZE``
    entries) dropped its oldest entry with ``del cache[next(iter(cache))]``: two threads building
    scanners at once when it was full both picked the same entry and the second ``del`` raised
    KeyError out of the first ``feed`` (8 threads of 3,000 first uses: 3 KeyErrors). Made
    deterministic here: the cache holds one entry of a size of one, and a drop waits (up to half a
    second) until the other thread drops too, which is how the two collided."""
    import threading

    from respc.runtime import scanners
    from respc.runtime.scanners import Literal, literal_scanner

    barrier = threading.Barrier(2, timeout=0.5)

    class Cache(dict):
        def __delitem__(self, key):
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                pass  # one at a time (the fixed code): go on
            super().__delitem__(key)

    monkeypatch.setattr(scanners, "_CODE_CACHE", Cache({("old", "<x>"): None}))
    monkeypatch.setattr(scanners, "CODE_CACHE_SIZE", 1)
    failures: list = []

    def build(n: int) -> None:
        try:
            literal_scanner((Literal(f"<thread{n}>", 0),), 0)
        except Exception as exc:  # noqa: BLE001 (what the thread raised is the finding)
            failures.append(repr(exc))

    threads = [threading.Thread(target=build, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(scanners._CODE_CACHE) == 1


@pytest.mark.parametrize("name,prefix,text", SURROGATE_OUTPUTS)
@pytest.mark.parametrize("recover", [False, True], ids=["strict", "recover"])
def test_argument_text_of_a_surrogate_escape_is_ascii_safe(name, prefix, text, recover):
    """The dict chunks' argument fragments and ``openai_message()``'s ``arguments`` held a raw
    surrogate (respc re-dumps read arguments with ``ensure_ascii=False``), which a server's
    pydantic ``model_dump_json`` cannot write. Now argument text writes it as its JSON escape:
    the fragments (whole and per character) add up to the message's ``arguments``, which encode as
    UTF-8 and read back as the value (the same UTF-16 text); nothing else changes."""
    import importlib
    import json

    from respc.openai import ChatCompletionStream, openai_message
    from respc.runtime.formats.base import surrogates_escaped

    module = importlib.import_module(f"respc.generated.{name}")
    errors = "recover" if recover else "strict"
    whole = None
    for chunks in ([text], list(text)):
        stream = ChatCompletionStream(module.ResponseParser(prefix, None, errors=errors), ids=lambda n: "c")
        out = [x for c in chunks for x in stream.feed(c)] + stream.finalize()
        fragments = "".join(call["function"].get("arguments") or "" for chunk in out if chunk["choices"]
                            for call in chunk["choices"][0]["delta"].get("tool_calls") or [])
        arguments = stream.openai_message()["tool_calls"][0]["function"]["arguments"]
        assert fragments == arguments and not stream.diagnostics
        arguments.encode("utf-8")
        want = stream.message["tool_calls"][0]["function"]["arguments"]
        assert json.loads(arguments)["city"].encode("utf-16-le", "surrogatepass") == want["city"].encode(
            "utf-16-le", "surrogatepass")
        assert whole in (None, arguments)
        whole = arguments
    # the transformers-shaped message's conversion too
    openai_message(stream.message)["tool_calls"][0]["function"]["arguments"].encode("utf-8")
    # the helper: surrogates only, one by one, pieces concatenate
    assert surrogates_escaped('{"a": "\ud800é\U0001f600"}') == '{"a": "\\ud800é\U0001f600"}'
    assert surrogates_escaped("plain") == "plain" and surrogates_escaped("é") == "é"
    assert surrogates_escaped("\udc00") + surrogates_escaped("\ud800") == surrogates_escaped("\udc00\ud800")
