"""respc.runtime: what every generated parser shares (README "Layout").

Content parsers (template-language.md "Content parsers"), transforms (template-language.md "Transforms"),
tool-argument typing (template-language.md "Tool-argument typing"), error classes and event shapes. Imports only
``regex`` and the standard library -- never lark or jinja2 -- so a generated module stays cheap to import in a
server.
"""

from __future__ import annotations

from .content import CONTENT_PARSER_NAMES, STREAMABLE_PARSERS, make_content_parser, parse_content
from .errors import (
    ContentParseError,
    ParserStateError,
    PlaceholderError,
    RespcError,
    TemplateError,
    UnknownPlaceholderError,
)
from .events import Event, RegionChunk, RegionClose, RegionOpen
from .tools import (
    DocstringParsingException,
    ToolSpecError,
    ToolTypes,
    TypeHintParsingException,
    coerce_tool_calls,
    compile_tool_types,
    get_json_schema,
    tool_parameters,
)
from .transforms import (
    PLACEHOLDER,
    PLACEHOLDER_V2,
    apply_transform,
    compile_transform,
    make_field_processor,
    placeholder_errors,
    placeholder_roots,
    transform_errors,
)

from .formats.base import Plan
from .scanners import HELD_LITERALS, Literal, Pattern, literal_prefixes
from .tables import FastPath, HeldAutomaton, HoldLiterals, HoldRun, StrayCloser
from .stream import (
    AFTER,
    CLOSE,
    DEFER,
    FEATURES,
    NEST,
    OPEN,
    PREFIX_REQUIRED,
    RUNTIME_ABI,
    Edge,
    LazyPattern,
    LiteralPrefixes,
    Region,
    StreamParser,
    barrier_search,
    check_abi,
    lead_start,
    lead_search,
    literal_hold,
    make_boundary,
    parse_many,
    module_api,
    partial_barrier,
    partial_late,
    partial_search,
    regrouped,
    to_text,
    window_partial,
)

__all__ = [
    # streaming machinery (events.md "The parser object"; template-language.md "Matching")
    "RUNTIME_ABI",
    "FEATURES",
    "OPEN",
    "NEST",
    "CLOSE",
    "AFTER",
    "DEFER",
    "Edge",
    "Region",
    "Plan",
    "Literal",
    "Pattern",
    "HELD_LITERALS",
    "literal_prefixes",
    "FastPath",
    "HoldRun",
    "HoldLiterals",
    "StrayCloser",
    "HeldAutomaton",
    "make_boundary",
    "StreamParser",
    "check_abi",
    "to_text",
    "literal_hold",
    "lead_search",
    "barrier_search",
    "partial_search",
    "partial_late",
    "partial_barrier",
    "window_partial",
    "lead_start",
    "LazyPattern",
    "LiteralPrefixes",
    "parse_many",
    "module_api",
    "regrouped",
    "PREFIX_REQUIRED",
    # errors
    "RespcError",
    "TemplateError",
    "ContentParseError",
    "PlaceholderError",
    "UnknownPlaceholderError",
    "ParserStateError",
    # events (events.md "The events")
    "Event",
    "RegionOpen",
    "RegionChunk",
    "RegionClose",
    # content parsers (template-language.md "Content parsers")
    "STREAMABLE_PARSERS",
    "CONTENT_PARSER_NAMES",
    "parse_content",
    "make_content_parser",
    # transforms (template-language.md "Transforms")
    "PLACEHOLDER",
    "PLACEHOLDER_V2",
    "placeholder_errors",
    "placeholder_roots",
    "transform_errors",
    "compile_transform",
    "apply_transform",
    "make_field_processor",
    # tool-argument typing (template-language.md "Tool-argument typing")
    "ToolTypes",
    "ToolSpecError",
    "DocstringParsingException",
    "TypeHintParsingException",
    "tool_parameters",
    "compile_tool_types",
    "coerce_tool_calls",
    "get_json_schema",
]
