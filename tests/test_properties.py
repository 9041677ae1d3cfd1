"""D2 as a property: chunking never changes the result (docs/template-language.md "D2: chunking never
changes the result").

For every catalogue template (``templates/*.json`` present at collection time) and every template
with regex delimiters used by the conformance vectors (``(?:^|<think>\\s*)``, ``\\n?</response>``,
``<call name=(?P<name>.*)>``, ``$``, ``\\Z``, ...), hypothesis builds model outputs from the
template's own delimiters, realistic region bodies, random unicode text and cut-off delimiters,
and feeds them whole, one character at a time and in random pieces. The message and the merged
event sequence (:func:`support.merged_events`) must be the same for every chunking; a failure to
parse must be the same failure for every chunking.

The output strategy is ``tests/support_properties.py``'s, shared with ``test_differential.py``; this
module stays free of transformers.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from support import CONFORMANCE, missing, params
from support_properties import (
    CATALOGUE,
    CONFORMANCE_REGEX,
    PROPERTY_SETTINGS,
    Material,
    catalogue_material,
    conformance_material,
    delimiter_patterns,
    outcome,
    scenario,
)


def assert_chunking_invariant(material: Material, prefix_text: str, text: str, chunks: list[str], tools) -> None:
    whole = outcome(material.module, prefix_text, [text], tools)
    for how, pieces in (("chars", list(text)), ("random", chunks)):
        got = outcome(material.module, prefix_text, pieces, tools)
        assert got[:3] == whole[:3], (material.name, how, prefix_text, pieces)
    if whole[0] == "ok":
        # the merged view must account for every routed character exactly once per region
        routed = "".join(e["text"] for e in whole[3] if e["type"] == "region_chunk")
        assert routed == "".join(e["text"] for e in whole[2] if e["type"] == "region_chunk")


@pytest.mark.parametrize("name", CATALOGUE)
def test_catalogue_chunking_invariance(name):
    material = catalogue_material(name)

    @PROPERTY_SETTINGS
    @given(scenario(material))
    def check(drawn):
        assert_chunking_invariant(material, *drawn)

    check()


@pytest.mark.parametrize("vector_id", params([first for first, _, _ in CONFORMANCE_REGEX], CONFORMANCE))
def test_regex_delimiter_chunking_invariance(vector_id):
    material = conformance_material(vector_id)

    @PROPERTY_SETTINGS
    @given(scenario(material))
    def check(drawn):
        assert_chunking_invariant(material, *drawn)

    check()


def test_regex_templates_cover_the_hard_patterns():
    """The conformance templates above include every D2-relevant regex shape named in
    docs/template-language.md "D2: chunking never changes the result"."""
    if not CONFORMANCE_REGEX:
        pytest.skip(missing(CONFORMANCE))
    patterns = {p for _, template, _ in CONFORMANCE_REGEX for p in delimiter_patterns(template)}
    for needed in (r"(?:^|<think>\s*)", r"\n?</response>", "<call name=(?P<name>.*)>", "$", r"\Z"):
        assert needed in patterns, needed


@pytest.mark.parametrize("name", CATALOGUE)
def test_family_cases_chunking_invariance(name):
    """Every family case, split in two at every offset, gives the whole-text result."""
    material = catalogue_material(name)
    for case in material.cases:
        text, tools = case["text"], case.get("tools")
        whole = outcome(material.module, case["prefix"], [text], tools)
        for k in range(1, len(text)):
            got = outcome(material.module, case["prefix"], [text[:k], text[k:]], tools)
            assert got[:3] == whole[:3], (name, case["name"], k)
