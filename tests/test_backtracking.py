"""Patterns that backtrack for exponential time are refused at load (issue 23 item 4).

The attack: an ``open_pattern`` of ``(a|aa)+b`` made ``"a"*30 + "!"`` take 2.6 s (doubling every
two characters); ``respc check`` did not even report it, and ``compile`` and ``parse`` accepted it.
``compiler/backtracking.py`` finds such patterns; ``validate`` refuses them (docs/security.md,
"Limits").
"""

from __future__ import annotations

import json
import time

import pytest
import regex

import respc
from respc.compiler.backtracking import MAX_MEETINGS, backtracking_problem, polynomial_problem
from respc.compiler.cli import main
from respc.runtime.errors import TemplateError

ATTACK = {"start_anchor_pattern": "^",
          "fields": {"t": {"open_pattern": "(a|aa)+b", "close": "</t>", "content": "text"},
                     "content": {"content": "text"}}}
TEXT = "a" * 30 + "!"


def test_issue_pattern_is_refused_by_compile_template():
    t0 = time.perf_counter()
    with pytest.raises(TemplateError) as info:
        respc.compile_template(ATTACK)
    assert time.perf_counter() - t0 < 5
    message = str(info.value)
    assert "field 't'" in message and "'open_pattern'" in message and "(a|aa)+b" in message
    assert "exponential" in message


def test_issue_pattern_is_refused_by_the_cli(tmp_path, capsys):
    template = tmp_path / "attack.json"
    template.write_text(json.dumps(ATTACK), encoding="utf-8")
    output = tmp_path / "output.txt"
    output.write_text(TEXT, encoding="utf-8")
    t0 = time.perf_counter()
    assert main(["compile", str(template), "-o", str(tmp_path / "out.py")]) != 0
    assert main(["parse", str(template), str(output), "--prefix", ""]) != 0
    assert main(["parse", str(template), str(output), "--prefix", "", "--errors", "recover"]) != 0
    assert time.perf_counter() - t0 < 10
    err = capsys.readouterr().err
    assert err.count("(a|aa)+b") == 3 and "exponential" in err
    assert not (tmp_path / "out.py").exists()


@pytest.mark.parametrize("pattern", [
    "(a|aa)+b", "(a|a)*b", r"(\w|\d)+x", "(?:a|a){40}b", "(?:a|a)" * 2 * MAX_MEETINGS + "b", r"(.*?,){11}P",
    "(a+)+b", "(x+x+)+y", r"(?:\s*,\s*)*x", r"(?=(a|aa)+b)x", r"<(?:\w+\s*)+>",
    r"(\p{L}|a)+b", r"(a|aa)+\1", r"(?V1)([[a-z]--[aeiou]]|b)+!", r"(?r)(a|aa)+b", r"(?i:a|A)+b", r"(?R)?x", r"([[:alpha:]]|b)+!",
])
def test_exponential_patterns_are_found(pattern):
    assert backtracking_problem(pattern) is not None


@pytest.mark.parametrize("pattern", [
    r"(?:a|ab)*c", r"(?:[a-z]++\.)*y", r"\s*+\s*x", r"<(?:[^<]|<(?!/t))*</t>", r"[a-z]{1,5000}x",
    "(?:a|a)" * (MAX_MEETINGS - 2) + "b", r"\p{L}+x", r"(\w+)=\1", r"x\Ky", r"(?r)ab:", r"\G<t>", r"(?V1)[[a-z]--[aeiou]]+x", r"([[:alpha:]])(?1)=",
])
def test_safe_patterns_are_accepted(pattern):
    assert backtracking_problem(pattern) is None


def test_the_issue_pattern_is_exponential_in_the_engine():
    # what the refusal prevents: 6 more characters, 8 times the time (2**(6/2)), best of 3
    compiled = regex.compile("(a|aa)+b", regex.DOTALL)

    def cost(text):
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            compiled.search(text)
            best = min(best, time.perf_counter() - t0)
        return best

    assert cost("a" * 20 + "!") > 4 * cost("a" * 14 + "!")


def test_catalogue_patterns_pass():
    for name in respc.compiler.load.catalogue_names():
        document = respc.compiler.load.load_template(name).document
        for spec in (document, *document["fields"].values()):
            for key in ("open_pattern", "close_pattern", "start_anchor_pattern"):
                if key in spec:
                    assert backtracking_problem(spec[key]) is None, (name, key)
                    assert polynomial_problem(spec[key]) is None, (name, key)


# -- polynomial backtracking (docs/security.md, "Regexes that backtrack for polynomial time") -----

@pytest.mark.parametrize("pattern", [
    r"\s*\s*\S", r"\s*\s*x", r"\w+\d+", r".*x.*y", r"(\w+)\s*\1", r"x*y\s*\s*",
    r"to=functions\.(?P<name>[^<\s]+)(?P<again>\s*to=functions\.[^<\s]+)?<", r"(?=\s*\s*!)x",
])
def test_polynomial_patterns_are_found(pattern):
    assert "polynomial" in polynomial_problem(pattern)
    assert backtracking_problem(pattern) == polynomial_problem(pattern)  # refused at load the same way


@pytest.mark.parametrize("pattern", [
    r"\s*\S", r"\s*+\s*\S", r"(?>\s*)\s*\S", r"a*|a*", r"(?:ab)*(?:ac*|ac*)", r"(?:a|ab)*c",
    r"<(?:[^<]|<(?!/t))*</t>", r"[a-z]{1,5000}x", r"Action:[ \t]*(?:\n[ \t]*)?```json\s*",
    r"to=functions\.(?P<name>[^<\s]++)(?P<again>\s*to=functions\.[^<\s]++)?<",
    # polynomial in one attempt, but two attempts from different offsets are never in the loop
    # on the same text: loaded, searched under the time limit (the reference's gpt-oss opener)
    r"Action:[ \t]*\n?[ \t]*```json", r"<\|channel\|>commentary to=functions\.(?P<name>\w+).*?<\|message\|>",
])
def test_linear_per_attempt_patterns_are_accepted(pattern):
    assert polynomial_problem(pattern) is None and backtracking_problem(pattern) is None


def test_polynomial_pattern_is_refused_naming_key_and_pattern():
    template = {"respc_version": 2, "start_anchor": "S", "fields": {
        "t": {"open_pattern": "\\s*\\s*\\S", "close": "</t>", "content": "text"},
        "content": {"content": "text", "repeats": True}}}
    with pytest.raises(TemplateError) as info:
        respc.compile_template(template)
    message = str(info.value)
    assert "field 't'" in message and "'open_pattern'" in message and repr("\\s*\\s*\\S") in message
    assert "polynomial" in message


def test_the_catalogue_rewrites_removed_polynomial_time():
    # gpt_oss's tool-call opener before its name was possessive: 250 repeats of "to=functions."
    # took 1.9 s for one search, 500 took 21 s; now the attempt at each offset is linear
    pattern = respc.compiler.load.load_template("gpt_oss").document["fields"]["tool_calls"]["open_pattern"]
    compiled = regex.compile(pattern, regex.DOTALL)
    t0 = time.perf_counter()
    compiled.search("to=functions." * 250 + "!")
    assert time.perf_counter() - t0 < 0.5
