"""respc: compile LLM response templates into standalone streaming parsers.

The package maps the repository's folders (see pyproject.toml): ``respc.compiler`` (load, validate,
IR, automaton, grammar, emit, CLI), ``respc.runtime`` (what generated parsers share),
``respc.generated`` (the catalogue's parsers) and ``respc.templates`` (the catalogue).

Convenience API, drop-in for the transformers functions of the same names (SPEC section 3):
:func:`compile_template`, :func:`parse_response`, :func:`get_response_parser`; ``respc.show.html(...)``
draws a parse as a self-contained HTML page (respc_pkg/show.py).

Batch parsing (compiler/batch.py): :func:`parse_batch` (records, a dict of columns, a DataFrame or an
Arrow table in; an iterator of output records out) and :func:`columns_mapper` (for
``datasets.Dataset.map(batched=True)``); Ray Data in :mod:`respc.ray`.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["compile_template", "parse_response", "get_response_parser", "parse_batch", "columns_mapper",
           "show", "__version__"]


def __getattr__(name: str) -> Any:
    # Lazy on purpose: `import respc.runtime` (what every generated module does) must not pull in
    # the compiler and with it lark and jinja2.
    if name in ("compile_template", "parse_response", "get_response_parser"):
        from respc.compiler import api

        return getattr(api, name)
    if name == "show":
        import importlib

        return importlib.import_module("respc.show")
    if name in ("parse_batch", "columns_mapper"):
        from respc.compiler import batch

        return getattr(batch, name)
    raise AttributeError(f"module 'respc' has no attribute {name!r}")
