"""Smoke test of the benchmark (benchmarks/inputs.py, benchmarks/bench.py): no timing is asserted.

The benchmark compares respc with the transformers reference on generated outputs; those outputs are
only meaningful if both parsers agree on them (same message) and they contain what the benchmark
says they contain (reasoning, answer, tool calls). Checked at 2 kB in detail for two families (qwen3:
literal delimiters; gpt_oss: tool calls from a regex ``open_pattern``) and for every catalogue
template. Then ``bench.bench_template`` and the issue-14 targets table at 1 kB / 3 kB: a v2-only
template's row (reference n/a), llama3_json and olmo3 (once refused by the filler check),
deepseek_v3_2 (``v1 form``), the reference budget, and the table's shape.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench  # noqa: E402  (benchmarks/bench.py)
import inputs  # noqa: E402

import respc  # noqa: E402

chat_parsing = pytest.importorskip("transformers.utils.chat_parsing")


@pytest.mark.parametrize("name", ["qwen3", "gpt_oss"])
def test_generated_inputs_parse_equal(name):
    doc = inputs.load(name)
    text = inputs.build(name, 2000, doc)
    assert 1900 <= len(text) <= 2100
    chunks = inputs.chunks(text)
    assert "".join(chunks) == text and all(len(c) <= inputs.CHUNK for c in chunks)

    module = respc.compile_template(doc)
    ours = module.ResponseParser("")
    for chunk in chunks:
        ours.feed(chunk)
    ours_message, _ = ours.finalize()

    ref = chat_parsing.ResponseParser(inputs.reference_doc(name), prefix="")
    for chunk in chunks:
        ref.feed(chunk)
    ref_message, _ = ref.finalize()

    assert ours_message == ref_message
    assert module.parse_response(text, "") == chat_parsing.parse_response(text, inputs.reference_doc(name), prefix="") == ref_message
    # the input holds what the benchmark claims: long reasoning, an answer, three tool calls
    assert len(ours_message["reasoning_content"]) > 1000
    assert "<" in ours_message["content"]
    assert len(ours_message["tool_calls"]) == inputs.N_TOOL_CALLS
    assert ours_message["tool_calls"][0]["function"]["name"] == "get_weather"


def test_adversarial_inputs_are_built():
    for case in inputs.adversarial_inputs():
        text = case.text(2000)
        assert text.startswith(case.head) and 2000 - len(case.unit) < len(text) <= 2000


# --- every catalogue template gets an input (issue 14: the table covers the whole catalogue) ----------

@pytest.mark.parametrize("name", inputs.catalogue())
def test_every_catalogue_template_gets_an_input(name):
    """The 2 kB (or larger) input of every template holds what ``inputs.pieces`` claims, and where the reference
    can run (a v1 template, or a v2 one with its v1 form) both give the same message; a v2 template
    may differ only where its v1 form (what the reference runs) equals the reference under respc."""
    doc = inputs.load(name)
    pieces = inputs.pieces(name, doc)
    # 2 kB, or more where three sampled tool calls are large (minimax_m3's is about 1 kB)
    size = max(2000, 4 * inputs.N_TOOL_CALLS * len(pieces.tool_call or ""))
    text = inputs.build(name, size, doc)
    assert size - 100 <= len(text) <= size + 100
    message = respc.compile_template(doc).parse_response(text, "")
    assert "a < b" in message["content"]
    if pieces.reasoning is not None:
        assert len(message["reasoning_content"]) > 500
    if pieces.tool_call is not None:
        assert len(message["tool_calls"]) >= 1
    else:
        assert "tool_calls" not in message
    missing = inputs.reference_missing(name)
    if missing is not None:
        assert "respc_version" in doc and not (inputs.V1_FORMS / f"{name}.json").exists()
        return
    ref_doc = inputs.reference_doc(name)
    ref_message = chat_parsing.parse_response(text, ref_doc, prefix="")
    if name == "deepseek_v3_2":
        # v2 reads string="false" parameters as JSON; the v1 form (what the reference runs) cannot
        assert message != ref_message
        assert message["tool_calls"][0]["function"]["arguments"]["days"] == 7
        assert ref_message["tool_calls"][0]["function"]["arguments"]["days"] == "7"
        assert respc.compile_template(ref_doc).parse_response(text, "") == ref_message
    elif name == "granite3":
        # granite3's tool calls repeat (each <|tool_call|> block adds its calls, docs/events.md
        # "Overwritten values"); its v1 form, what the reference runs, keeps only the last block
        assert len(message["tool_calls"]) == inputs.N_TOOL_CALLS > 1
        assert ref_message["tool_calls"] == message["tool_calls"][-1:]
        assert {k: v for k, v in message.items() if k != "tool_calls"} == {
            k: v for k, v in ref_message.items() if k != "tool_calls"}
    else:
        assert message == ref_message


def test_filler_check_counts_only_watched_delimiters():
    # llama3_json: the tool-call close '\s*;' is watched only inside a tool call, so the filler's ';' is text
    llama = inputs.load("llama3_json")
    answer = inputs.watched_delimiters(llama, None)
    assert ("tool_calls", "open_pattern", llama["fields"]["tool_calls"]["open_pattern"]) in answer
    assert not any(key == "close_pattern" for _, key, _ in answer)
    assert ("content", "close", "<|eot_id|>") in answer
    # olmo3: the call opener (?=[A-Za-z_]) has "outside": false, it opens only inside the call section
    olmo = inputs.load("olmo3")
    assert [f for f, _, _ in inputs.watched_delimiters(olmo, None) if f == "tool_calls"] == []
    assert ("tool_calls", "open_pattern", "(?=[A-Za-z_])") in inputs.watched_delimiters(olmo, "call_section")
    inputs.pieces("llama3_json", llama)
    inputs.pieces("olmo3", olmo)


@pytest.mark.parametrize("fields, message", [
    # an implicit-field close in the prose: the answer would end there
    ({"content": {"close": "; then"}}, "filler in the answer contains the close delimiter '; then' of 'content'"),
    # a zero-width opener that matches the prose is an occurrence like any other
    ({"call": {"open_pattern": "(?=Paris)", "close": "</c>"}, "content": {}},
     "filler in the answer matches open_pattern of 'call' at offset"),
    # in the reasoning region its own close and the openers nested there count
    ({"reasoning_content": {"open": "<think>", "close": "b<c"}, "content": {}},
     "filler in region 'reasoning_content' contains the close delimiter 'b<c' of 'reasoning_content'"),
    ({"reasoning_content": {"open": "<think>", "close": "</think>"},
      "call": {"open": "km/h", "close": "</c>", "outside": False, "inside": {"reasoning_content": "nest"}},
      "content": {}},
     "filler in region 'reasoning_content' contains the open delimiter 'km/h' of 'call'"),
])
def test_filler_check_refuses_a_watched_delimiter(fields, message):
    with pytest.raises(AssertionError, match=re.escape(message)):
        inputs._check_filler("synthetic", {"fields": fields})


# --- bench.py's rows and the per-template targets table, at small sizes -----------------------------

SMOKE = ["qwen3", "solar_open", "llama3_json", "olmo3", "deepseek_v3_2"]


def _args(budget: float = 10.0):
    return argparse.Namespace(errors="strict", ref_budget=budget, ref_cap=100_000, ref_1m=False)


@pytest.fixture(scope="module")
def smoke_results():
    return [bench.bench_template(name, [1000, 3000], _args(), chat_parsing.ResponseParser,
                                 chat_parsing.parse_response) for name in SMOKE]


def test_bench_rows(smoke_results):
    by_name = {r["template"]: r for r in smoke_results}
    for res in smoke_results:
        assert sorted(res["sizes"]) == [1000, 3000]
        for row in res["sizes"].values():
            assert row["ours_us"] > 0 and row["floor_us"] > 0 and row["ours_parse_ms"] > 0
            # the median of the per-round ratios (ours and the floor of one round back to back)
            assert len(row["ours_runs_us"]) == len(row["floor_runs_us"]) >= 1
            assert row["ours_us"] == statistics.median(row["ours_runs_us"])
            assert row["ours_floor"] == statistics.median(
                o / f for o, f in zip(row["ours_runs_us"], row["floor_runs_us"]))
    # a v2-only template: ours and the floor timed, the reference n/a with the reason
    solar = by_name["solar_open"]
    assert solar["reference"].startswith("v2-only: no v1 form")
    for row in solar["sizes"].values():
        assert row["ref_us"] is None and row["ref_parse_ms"] is None and row["ref_ours"] is None
        assert row["ref_parse_skip"] == "n/a" and row["equal"] == "n/a"
    # llama3_json and olmo3 (the filler check used to refuse them) and qwen3: equal to the reference
    for name in ("qwen3", "llama3_json", "olmo3"):
        for row in by_name[name]["sizes"].values():
            assert row["equal"] == "yes" and row["ref_us"] > 0 and row["ref_parse_ms"] > 0
    # deepseek_v3_2: differs from the reference only where its v1 form does not (string="false")
    assert {row["equal"] for row in by_name["deepseek_v3_2"]["sizes"].values()} == {"v1 form"}


def test_target_table_shape(smoke_results, tmp_path):
    headers, rows, summary = bench.target_table(smoke_results, [1000, 3000])
    assert [r[0] for r in rows] == SMOKE
    assert all(len(r) == len(headers) for r in rows)
    assert headers[:4] == ["template", "o/f 1 kB", "o/f 3 kB", "<=3"]
    assert headers[-1] == "met"
    marks = [i for i, h in enumerate(headers) if h.startswith(("<=", ">="))]
    assert len(marks) == 6 == len(summary)
    for row in rows:
        assert all(row[i] in ("yes", "NO", "n/a") for i in marks)
        applicable = [row[i] for i in marks if row[i] != "n/a"]
        assert row[-1] == f"{applicable.count('yes')}/{len(applicable)}"
    solar = rows[SMOKE.index("solar_open")]
    assert solar[headers.index("ref/o 1 kB")] == "n/a" and solar[headers.index(">=5")] == "n/a"
    assert solar[headers.index("whole ref/o 3 kB")] == "n/a"
    qwen = rows[0]
    res = smoke_results[0]["sizes"]
    assert qwen[1] == f"{res[1000]['ours_floor']:.1f}"
    assert qwen[headers.index("<=3")] == ("yes" if max(res[s]["ours_floor"] for s in res) <= 3 else "NO")
    # the flat-cost figure: ours/floor at the largest size over ours/floor at the smallest
    flat = res[3000]["ours_floor"] / res[1000]["ours_floor"]
    assert qwen[headers.index("3 kB/1 kB")] == f"{flat:.2f}"
    assert qwen[headers.index("<=1.1")] == ("yes" if flat <= 1.1 else "NO")
    by_target = {s["target"]: s for s in summary}
    ref_target = by_target["stream reference/ours >= 5 at 1 kB"]
    assert ref_target["of"] == 4 and ref_target["na"] == 1
    assert ref_target["met"] == sum(r[headers.index(">=5")] == "yes" for r in rows)
    md = tmp_path / "targets.md"
    bench.report_target_table(smoke_results, [1000, 3000], str(md))
    lines = md.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "| " + " | ".join(headers) + " |"
    assert len([line for line in lines if line.startswith("| ")]) == 1 + len(SMOKE)
    reasons = bench.miss_reasons(smoke_results, [1000, 3000], summary)
    assert [line for line in lines if line.startswith("- ")] == [f"- {s['line']}" for s in summary] + \
        [f"- {line}" for line in reasons]
    # one reason line per missed target and template, naming both, with the figure the table shows
    assert len(reasons) == sum(len(s["misses"]) for s in summary)
    for entry in summary:
        for name, worst in entry["misses"]:
            assert any(line.startswith(f"{name} — {entry['target']}: ") for line in reasons)
    calls = smoke_results[0]["calls"]  # qwen3: measured, not assumed
    assert calls["stream_us_per_call"] > 0 and calls["calls_whole_ms"] > 0 and calls["prose_ours_floor"] > 0
    assert [res["calls"] is None for res in smoke_results] == [inputs.pieces(n).tool_call is None for n in SMOKE]


def test_extrapolate():
    assert bench.extrapolate([], 1000) is None
    assert bench.extrapolate([(1000, 0.01)], 10_000) == pytest.approx(1.0)        # one size: quadratic
    assert bench.extrapolate([(1000, 0.01), (10_000, 0.1)], 100_000) == pytest.approx(1.0)   # measured: linear
    assert bench.extrapolate([(1000, 0.01), (10_000, 0.05)], 100_000) == pytest.approx(0.5)  # below 1: linear
    assert bench.extrapolate([(1000, 0.001), (10_000, 1.0)], 100_000) == pytest.approx(100.0)  # above 2: 2


def test_reference_over_budget_is_skipped_with_its_estimate():
    res = bench.bench_template("qwen3", [1000, 3000], _args(budget=1e-9), chat_parsing.ResponseParser,
                               chat_parsing.parse_response)
    small, large = res["sizes"][1000], res["sizes"][3000]
    assert small["ref_us"] > 0 and small["ref_parse_ms"] > 0 and small["equal"] == "yes"
    assert large["ref_us"] is None and large["ref_parse_ms"] is None
    assert large["ref_skip"].startswith("> budget (~") and large["ref_parse_skip"].startswith("> budget (~")
    assert large["ref_parse_est_ms"] == pytest.approx(small["ref_parse_ms"] * 9)  # 3x the size, quadratic
    assert large["equal"] == "not run" and large["ours_us"] > 0
    headers, rows, _ = bench.target_table([res], [1000, 3000])
    cell = rows[0][headers.index("whole ref/o 3 kB")]
    assert cell == f"~{large['ref_parse_est_ms'] / large['ours_parse_ms']:.0f}"


def test_size_tables_name_the_reference_gaps(smoke_results, capsys):
    bench.report_sizes(smoke_results, [1000, 3000], _args())
    out = capsys.readouterr().out
    assert out.count("reference n/a (v2-only, no v1 form in tests/cases/v1_templates") == 2
    assert out.count("cannot express: deepseek_v3_2") == 2
    assert "messages differ from the reference" not in out
    solar = [line for line in out.splitlines() if line.startswith("solar_open ")]
    assert len(solar) == 2 and all(line.split().count("n/a") == 4 for line in solar)  # ref, peak ref, parse ref, equal


def test_reference_tail_estimate_stops_at_its_budget():
    doc = inputs.reference_doc("qwen3")
    text = inputs.build("qwen3", 30_000)
    assert bench.ref_tail_estimate(chat_parsing.ResponseParser, doc, text, 4000, budget=0.0) is None
    assert bench.ref_tail_estimate(chat_parsing.ResponseParser, doc, text, 4000, budget=60.0) > 0


def test_command_line_sizes_and_names_are_checked(capsys):
    """The benchmark scripts read sizes and template names with inputs.size_arg / sizes_arg /
    templates_arg: bad values are usage errors that say what was wrong, not tracebacks."""
    assert inputs.sizes_arg("10k, 1M,2500") == [10_000, 1_000_000, 2500]
    assert inputs.size_arg("0.5k") == 500
    for bad in ("1Q", "", "k", "-3", "0"):
        with pytest.raises(argparse.ArgumentTypeError, match="not an output size"):
            inputs.size_arg(bad)
    assert inputs.templates_arg("qwen3, gpt_oss") == ["qwen3", "gpt_oss"]
    with pytest.raises(argparse.ArgumentTypeError, match="unknown template.*nosuch"):
        inputs.templates_arg("qwen3,nosuch")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--sizes", "10k,1Q"])
    assert exit_info.value.code == 2
    assert "argument --sizes: not an output size: '1Q'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--profile", "nosuch:10k"])
    assert "--profile: unknown template 'nosuch'" in capsys.readouterr().err


#: the templates whose tool-call field does not repeat (a second block is an error, docs/errors.md)
#: and whose family sample writes a call: each once gave no tool call at all in its inputs
#: ("skipped (regex delimiters, no usable sample)"), its block tried twice in a row
ONE_BLOCK = [n for n in inputs.catalogue()
             if (inputs._tool_field(inputs.load(n)) or {"repeats": True}).get("repeats") is not True
             and n != "phi4_mini"]


@pytest.mark.parametrize("name", ["mistral_nemo"] + [n for n in ONE_BLOCK if n != "mistral_nemo"])
@pytest.mark.parametrize("real_calls", [True, False])
def test_a_block_that_does_not_repeat_is_written_once(name, real_calls):
    """mistral_nemo's ``[TOOL_CALLS][...]</s>`` (literal delimiters) gave no call in the realistic
    input of benchmarks/whole_speed.py: a field that does not repeat holds its calls in one block."""
    doc = inputs.load(name)
    pieces = inputs.pieces(name, doc, real_calls=real_calls)
    assert pieces.tool_call is not None and pieces.tool_list, pieces.tool_source
    text = inputs.build(name, 3000, doc, real_calls=real_calls)
    assert len(respc.compile_template(doc).parse_response(text, "")["tool_calls"]) >= 1
