"""Event shapes emitted by every generated parser (events.md "The events"), declared once.

Events are plain dicts at run time (the reference's shape, so they compare equal to its events);
these TypedDicts document the keys for type checkers and readers.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict, Union

__all__ = ["RegionOpen", "RegionChunk", "RegionClose", "RegionMalformed", "Event"]


class RegionOpen(TypedDict):
    """A region opened: eagerly on an explicit open delimiter, lazily for the implicit field."""

    type: Literal["region_open"]
    field: str


class RegionChunk(TypedDict):
    """A piece of body text routed to ``field``; ``dirty`` is True for json/xml-inline/kv-lines."""

    type: Literal["region_chunk"]
    field: str
    text: str
    dirty: bool


class RegionClose(TypedDict):
    """A region closed; ``value`` is this block's parsed, transformed and tool-typed value."""

    type: Literal["region_close"]
    field: str
    value: Any


class _RegionMalformedBase(TypedDict):
    type: Literal["region_malformed"]
    field: str
    text: str
    error: str
    start: int
    end: int
    into: "str | None"


class RegionMalformed(_RegionMalformedBase, total=False):
    """``errors="recover"`` only: a region whose body could not be parsed (or that the output ended inside)
    ends with this instead of ``region_close`` (docs/events.md, "With errors=\"recover\""). ``text`` is
    its raw text with delimiters, ``start``/``end`` its offsets in the response, ``error`` the failure,
    ``into`` the message key that received the text (None: only the diagnostic holds it); ``region`` the
    region name when it differs from the slot."""

    region: str


Event = Union[RegionOpen, RegionChunk, RegionClose, RegionMalformed]
