"""The end of the answer is never dropped (issue 24 item 2).

Serving engines strip the stop token, so every output they hand over ends without its closer. At
the end of the output, text the parser held back as a possible delimiter is region text in both
modes; in ``errors="recover"`` a ``truncated-delimiter`` diagnostic says it looked like the start
of one (docs/events.md, "Recovering from damaged output").
"""

from __future__ import annotations

import importlib

import pytest

from respc.compiler import automaton
from respc.compiler.api import compile_source
from support import CATALOGUE_NAMES, REPO, chunkings, family_cases, run_stream

NAMES = CATALOGUE_NAMES


def test_gpt_oss_answer_keeps_its_last_characters():
    gpt_oss = importlib.import_module("respc.generated.gpt_oss")
    assert gpt_oss.parse_response("<|channel|>final<|message|>the cat", prefix="<|start|>assistant",
                                  errors="recover") == {"role": "assistant", "content": "the cat"}
    assert gpt_oss.parse_response("<|channel|>final<|message|>the cat", prefix="<|start|>assistant") == {
        "role": "assistant", "content": "the cat"}
    assert gpt_oss.parse_response("<|channel|>final<|message|>final content", prefix="<|start|>assistant",
                                  errors="recover")["content"] == "final content"


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
def test_held_text_is_text_and_reported(how):
    gpt_oss = importlib.import_module("respc.generated.gpt_oss")
    text = "<|channel|>final<|message|>the cat"
    message, events = run_stream(gpt_oss, "<|start|>assistant", chunkings(text, "gpt")[how], errors="recover")
    assert message == {"role": "assistant", "content": "the cat"}
    assert "".join(e["text"] for e in events if e["type"] == "region_chunk" and e["field"] == "content") == "the cat"
    parser = gpt_oss.ResponseParser("<|start|>assistant", errors="recover")
    for chunk in chunkings(text, "gpt")[how]:
        parser.feed(chunk)
    parser.finalize()
    assert parser.diagnostics == [{"kind": "truncated-delimiter", "field": "content", "start": 33, "end": 34,
                                   "message": "the stream ended inside what may be a delimiter (kept as text)",
                                   "text": "t"}]
    assert text[parser.diagnostics[0]["start"]:parser.diagnostics[0]["end"]] == "t"


def test_firefunction_v2_keeps_a_trailing_f():
    module = importlib.import_module("respc.generated.firefunction_v2")
    for errors in ("strict", "recover"):
        assert module.parse_response("It is sunny. f", prefix="", errors=errors)["content"] == "It is sunny. f"


def _suffixes(name: str) -> list[str]:
    """A plain word and each proper prefix of each delimiter the template watches (a regex
    delimiter's literal leads)."""
    compiled = compile_source(REPO / "templates" / f"{name}.json")
    out = {" word": None}
    for state in compiled.automaton.states:
        for watch in state.watches:
            delimiter = watch.delimiter
            literals = delimiter.literals
            if literals is None:
                literals = automaton.classify_pattern(delimiter.pattern).leads or ()
            for literal in literals:
                for k in range(1, len(literal)):
                    out[literal[:k]] = None
    return list(out)


def _answer(name: str) -> tuple[str, str, str] | None:
    """(prefix, output cut right after its answer, the answer) of the family's first case whose
    message is an answer (after reasoning, when it has some)."""
    for case in family_cases(name):
        message = case["message"]
        content = message.get("content")
        if set(message) <= {"role", "content", "reasoning_content"} and content and content in case["text"]:
            text = case["text"]
            return case["prefix"], text[:text.rindex(content) + len(content)], content
    return None


def test_most_families_have_an_answer_case():
    assert sum(_answer(name) is not None for name in NAMES) == len(NAMES) >= 60


@pytest.mark.parametrize("name", NAMES)
def test_catalogue_answer_followed_by_a_cut_delimiter_keeps_every_character(name):
    """An answer followed by each proper prefix of each watched delimiter (and a plain word) at
    the end of the output: the answer gains exactly that text, in both modes, whole text
    (``parse_response``) and streamed (per character and in random pieces)."""
    prefix, text, content = _answer(name)
    module = importlib.import_module(f"respc.generated.{name}")
    lost = []
    for suffix in _suffixes(name):
        output = text + suffix
        for errors in ("strict", "recover"):
            got = [module.parse_response(output, prefix=prefix, errors=errors)]
            pieces = chunkings(output, suffix)
            got += [run_stream(module, prefix, pieces[how], errors=errors)[0] for how in ("chars", "random")]
            if errors == "recover" and _repaired_opener_at_end(module, prefix, output, suffix):
                # a recover-only opener (docs/template-language.md, "Recover-only openers") that is a
                # proper prefix of the strict one: in recover it is a whole delimiter, consumed with a
                # `repaired` diagnostic over exactly that text, so no character is lost unreported
                continue
            for message in got:
                # (a template may strip the answer's trailing whitespace: "\n" is then no loss)
                if (message.get("content") or "").rstrip() != (content + suffix).rstrip():
                    lost.append((suffix, errors, message.get("content")))
    assert lost == []


def _repaired_opener_at_end(module, prefix: str, output: str, suffix: str) -> bool:
    """The suffix starts with a recover-only opener, consumed with a `repaired` diagnostic over
    exactly its text, and what follows the opener is the opened region's text."""
    parser = module.ResponseParser(prefix, errors="recover")
    parser.feed(output)
    message, _ = parser.finalize()
    start = len(output) - len(suffix)
    for d in parser.diagnostics:
        if d["kind"] == "repaired" and d["start"] == start and suffix.startswith(d["text"]):
            rest = suffix[len(d["text"]):]
            return not rest or any(isinstance(v, str) and v.endswith(rest) for v in message.values())
    return False

