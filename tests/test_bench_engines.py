"""The engine columns of benchmarks/whole_speed.py (issue 33): the serving engines' own
non-streaming parsers (benchmarks/engines.py). No timing is asserted: that a column appears exactly
when its engine imports, with a printed line saying why it does not, and that each engine's parser
runs on the benchmark's input through the classes its server calls (markers ``vllm`` / ``sglang``,
in each engine's environment)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import engines  # noqa: E402  (benchmarks/engines.py)
import inputs  # noqa: E402

pytest.importorskip("transformers.utils.chat_parsing")


def _text(name: str, size: int = 2000) -> tuple[str, list[str]]:
    density, _ = inputs.corpus_density()
    text, _ = inputs.realistic_build(name, size, density, inputs.load(name))
    message = importlib.import_module(f"respc.generated.{name}").parse_response(text, "")
    return text, sorted({c["function"]["name"] for c in message.get("tool_calls") or []})


def test_no_engine_column_without_the_engine(monkeypatch, capsys):
    """An engine that does not import gives no column, and a line saying why."""
    import whole_speed

    monkeypatch.setattr(engines, "available", lambda: {"sglang": "not here (test)", "vllm": "absent (test)"})
    rows = whole_speed.measure(["qwen3"], [2000], ["realistic"], 1, whole_speed.PER_CALL_US)
    out = capsys.readouterr().out
    assert "no sglang column: not here (test)" in out and "no vllm column: absent (test)" in out
    head = next(line for line in out.splitlines() if line.startswith("| template"))
    assert "sglang" not in head and "vllm" not in head
    assert rows[0]["engines"] == [] and "sglang_us" not in rows[0]


def _engine_row(engine: str, monkeypatch, capsys) -> dict:
    import whole_speed

    monkeypatch.setattr(engines, "available", lambda: {e: None if e == engine else "other engine (test)"
                                                         for e in ("sglang", "vllm")})
    (row,) = whole_speed.measure(["hermes2pro"], [2000], ["realistic"], 1, whole_speed.PER_CALL_US)
    head = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| template"))
    assert f"{engine} µs" in head and f"{engine}/ours" in head
    return row


@pytest.mark.sglang
def test_sglang_column(monkeypatch, capsys):
    pytest.importorskip("sglang.srt.function_call.function_call_parser")
    row = _engine_row("sglang", monkeypatch, capsys)
    assert row["sglang_us"] > 0 and row["sglang_ratio"] > 0 and row["sglang_calls"] == row["ours_calls"] == 3
    fn, why, _ = engines.whole_call("sglang", "xlam", *_text("xlam"))
    assert fn is None and why.startswith("no sglang parser")


@pytest.mark.vllm
def test_vllm_column(monkeypatch, capsys):
    pytest.importorskip("vllm.parser.parser_manager")
    row = _engine_row("vllm", monkeypatch, capsys)
    assert row["vllm_us"] > 0 and row["vllm_ratio"] > 0 and row["vllm_calls"] == row["ours_calls"] == 3
    fn, why, _ = engines.whole_call("vllm", "gpt_oss", *_text("gpt_oss"))
    assert fn is None and "Harmony" in why


@pytest.mark.parametrize("name, written", [
    ("qwen3", '<tool_call>\n{"name": "get_weather"'),
    ("deepseek_v3", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"),
    ("kimi_k2", "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"),
    ("kimi_k2_thinking", "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"),
    ("minimax_m2", '<minimax:tool_call>\n<invoke name="get_weather">\n'),
])
def test_realistic_calls_as_the_family_writes_them(name, written):
    """The realistic set writes each family's tool calls as its real sample does (newlines, spacing,
    the tool-call section around them), so the engines' parsers, which want that form, read them;
    respc reads the same three calls, and the section opens once and closes once."""
    text, _ = _text(name)
    assert written in text
    message = importlib.import_module(f"respc.generated.{name}").parse_response(text, "")
    assert len(message["tool_calls"]) == inputs.N_TOOL_CALLS
    for mark in ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<|tool_calls_section_begin|>",
                 "<minimax:tool_call>", "</minimax:tool_call>"):
        assert text.count(mark) in (0, 1)
    # the adversarial set (and bench.py) keep the literal-built calls
    assert inputs.pieces(name).tool_wrap == ("", "", "")


@pytest.mark.parametrize("name, written, calls", [
    ("lfm2", '<|tool_call_start|>[get_weather(city="Paris"), get_time(tz="Europe/Paris")]<|tool_call_end|>', 2),
    ("llama4_pythonic", "[get_weather(city='Paris'), get_time(tz='Europe/Paris'), ping()]", 3),
])
def test_realistic_calls_one_list_when_the_family_writes_one(name, written, calls):
    """A family whose real output writes its calls as one list gets one such list (its sample's),
    not three lists in a row (which the engines read as one call)."""
    text, _ = _text(name)
    assert text.endswith(written) and text.count(written) == 1
    message = importlib.import_module(f"respc.generated.{name}").parse_response(text, "")
    assert len(message["tool_calls"]) == calls
