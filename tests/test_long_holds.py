"""Long pending matches stay linear and keep their results (SPEC 4.3, D2; issue: linear time).

Text held behind a regex delimiter that is still pending for 1024 characters or more is searched
again only once it has doubled (``runtime.stream.LONG_HOLD``). The message and the merged events
must not change for any chunking, and work must stay proportional to the output.
"""

from __future__ import annotations

import pytest

import respc
from respc.runtime.stream import LONG_HOLD
from support import merged_events, run_stream

LAZY = {"start_anchor": "A:", "fields": {
    "call": {"open_pattern": r"<call to=(?P<name>\w+).*?<msg>", "close": "</call>",
             "transform": {"name": "{name}", "body": "{content}"}},
    "content": {}}}
GREEDY = {"start_anchor": "A:", "fields": {
    "call": {"open_pattern": "<call name=(?P<name>.*)>", "close": "</call>",
             "transform": {"name": "{name}", "body": "{content}"}},
    "content": {}}}


def _chunked(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 4, 37, 5000])
def test_lazy_open_pending_for_long_then_completing(size):
    filler = "x y " * (LONG_HOLD * 2)
    text = "before <call to=f " + filler + "<msg>body</call> after"
    module = respc.compile_template(LAZY)
    whole, whole_events = run_stream(module, "", [text])
    message, events = run_stream(module, "", _chunked(text, size))
    # `content` does not repeat, so its second block ("after") replaces the first (SPEC 9 quirk)
    assert whole == {"content": "after", "call": {"name": "f", "body": "body"}}
    assert message == whole
    assert merged_events(events) == merged_events(whole_events)


def test_lazy_open_that_never_completes_is_text_at_end_of_stream():
    text = "<call to=f " + "z" * (LONG_HOLD * 8)
    module = respc.compile_template(LAZY)
    message, events = run_stream(module, "", _chunked(text, 4))
    assert message == {"content": text}
    assert [e["type"] for e in merged_events(events)] == ["region_open", "region_chunk", "region_close"]


@pytest.mark.parametrize("size", [3, 4096])
def test_greedy_indeterminate_open_over_long_text(size):
    text = "<call name=a>" + "b" * (LONG_HOLD * 3) + "</call>tail"
    module = respc.compile_template(GREEDY)
    whole, _ = run_stream(module, "", [text])
    message, _ = run_stream(module, "", _chunked(text, size))
    # greedy `.*` runs to the last '>' (that of </call>), whatever the chunking (D2)
    assert message == whole == {"call": {"name": "a>" + "b" * (LONG_HOLD * 3) + "</call", "body": "tail"}}
