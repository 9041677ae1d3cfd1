"""respc.runtime: what every generated parser shares (SPEC section 8).

Content parsers (SPEC 5), transforms (SPEC 6), tool-argument typing (SPEC 7), error classes and
event shapes. Imports only ``regex`` and the standard library -- never lark or jinja2 -- so a
generated module stays cheap to import in a server.
"""

from __future__ import annotations

from .errors import ContentParseError, ParserStateError, RespcError, TemplateError
from .events import Event, RegionChunk, RegionClose, RegionOpen

#: Bumped only when generated modules need a different runtime; generated modules check it.
RUNTIME_ABI = 1

__all__ = [
    "RUNTIME_ABI",
    "RespcError",
    "TemplateError",
    "ContentParseError",
    "ParserStateError",
    "Event",
    "RegionOpen",
    "RegionChunk",
    "RegionClose",
]
