"""Red-team round s11: attacks on the recover-only openers and closers, the formats package, the
shared JSON scanner, ``regex_timeout=``, the polynomial-regex check and the new families. Each test
runs an attack exactly as found; each failed before its fix (docs/security.md, "Red team s11")."""

from __future__ import annotations

import pytest

import respc
from respc.compiler.backtracking import backtracking_problem, polynomial_problem
from respc.runtime.errors import TemplateError

# --- polynomial patterns written with regex-module syntax escaped the load-time check ---------------

# the same polynomial shape as ``\s*\s*\S`` (docs/security.md, "Regexes that backtrack for polynomial
# time"), with one escape, class or flag the ``re`` parser cannot read: polynomial_problem gave up
# (None) and the template loaded; 16k spaces then made a strict parser raise RegexTimeoutError
POLY_REGEX_ONLY = [r"\s*\s*\p{L}", r"\s*\s*\S|\p{L}y", r"[[:alpha:]]*\s*\s*\S", r"\s*\s*\S(?V1)",
                   r"\s*\s*\S\m"]


@pytest.mark.parametrize("pattern", POLY_REGEX_ONLY)
def test_polynomial_pattern_with_regex_only_syntax_is_refused(pattern):
    assert polynomial_problem(pattern) is not None
    assert "polynomial" in (backtracking_problem(pattern) or "")
    with pytest.raises(TemplateError, match="polynomial"):
        respc.compile_template({"respc_version": 2, "start_anchor": "S", "fields": {
            "x": {"open_pattern": pattern, "close": "</x>", "content": "text"},
            "content": {"content": "text"}}})


def test_polynomial_recover_open_pattern_with_regex_only_syntax_is_refused():
    """The same through a recover-only opener: the combined opener is checked like any other."""
    with pytest.raises(TemplateError, match="polynomial"):
        respc.compile_template({"respc_version": 2, "start_anchor": "S", "fields": {
            "x": {"open": "<x>", "recover_open_pattern": r"\s*\s*\p{L}", "close": "</x>", "content": "text"},
            "content": {"content": "text"}}})


# --- regex_timeout= beyond what the regex engine can time: every search "timed out" ----------------

# The regex module reads a timeout of 1e15 s or more as already past (TimeoutError at once).
# ``regex_timeout=float("inf")`` (or 1e300) passed the "positive number" check: strict then raised
# RegexTimeoutError on "hi", and recover looped for ever in gpt_oss's scan (the search from the
# end of the text timed out again and again).
@pytest.mark.parametrize("limit", [float("inf"), 1e300, 1e15, True, float("nan")])
def test_regex_timeout_the_engine_cannot_time_is_refused(limit):
    from respc.generated import gpt_oss

    for errors in ("strict", "recover"):
        with pytest.raises(ValueError, match="regex_timeout"):
            gpt_oss.ResponseParser("<|start|>assistant", errors=errors, regex_timeout=limit)
        with pytest.raises(ValueError, match="regex_timeout"):
            gpt_oss.get_response_parser("<|start|>assistant", errors=errors, regex_timeout=limit)


def test_largest_regex_timeout_is_usable():
    from respc.generated import gpt_oss
    from respc.runtime.stream import MAX_REGEX_TIMEOUT

    for errors in ("strict", "recover"):
        message = gpt_oss.parse_response("<|channel|>final<|message|>hi", prefix="<|start|>assistant",
                                         errors=errors, regex_timeout=MAX_REGEX_TIMEOUT)
        assert message == {"role": "assistant", "content": "hi"}
