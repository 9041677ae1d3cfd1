"""Every error respc raises on purpose has the one root, RespcError (runtime/errors.py; issue 26), and the
event types list every event a parser emits (events.md "The events")."""

from __future__ import annotations

import typing

from respc.compiler.batch import MissingExtra
from respc.compiler.grammar_ir import GrammarExportError
from respc.compiler.graph import GraphvizMissing
from respc.runtime import events
from respc.runtime.errors import RespcError


def test_missing_extra_and_graphviz_are_respc_errors():
    assert issubclass(MissingExtra, RespcError)
    assert issubclass(GraphvizMissing, RespcError) and issubclass(GraphvizMissing, RuntimeError)


def test_grammar_export_error_is_a_respc_error():
    assert issubclass(GrammarExportError, RespcError) and issubclass(GrammarExportError, ValueError)


def test_events_list_region_malformed():
    """events.md "With errors=\"recover\"": region_malformed carries field, text, error, start, end, into
    (and region when the region name differs from its slot)."""
    kinds = {typing.get_type_hints(t)["type"].__args__[0] for t in typing.get_args(events.Event)}
    assert kinds == {"region_open", "region_chunk", "region_close", "region_malformed"}
    keys = set(typing.get_type_hints(events.RegionMalformed))
    assert {"type", "field", "text", "error", "start", "end", "into"} <= keys
