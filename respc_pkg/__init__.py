"""respc: compile LLM response templates into standalone streaming parsers.

A response template (JSON) says how one model family delimits reasoning, answer and tool calls in
its raw output; respc turns it into a Python module with a streaming ``ResponseParser`` (``feed`` /
``finalize``, region events, the final assistant message). The template language is in the
project's docs, ``docs/template-language.md``; events and messages in ``docs/events.md``; the
command line is ``respc --help``.

Public API (each is imported on first use, so ``import respc`` stays cheap):

    compile_template(template)            -> module: compile a template (path, catalogue name,
                                             model folder or dict) and import its parser module
    parse_response(text, template, ...)   -> dict: parse one whole output (a list: a batch), like
                                             transformers' ``tokenizer.parse_response``
    get_response_parser(template, ...)    -> ResponseParser: a streaming parser for one output
    parse_batch(records, template, ...)   -> iterator of output records: many outputs, in order,
                                             on several processes
    columns_mapper(template, ...)         -> callable for ``datasets.Dataset.map(batched=True)``
    show.html(module, text, ...)          -> str: one HTML page showing how an output was parsed
    __version__                           -> str: this package's version

Modules beside it: ``respc.generated`` (the catalogue's parsers: ``from respc.generated import
qwen3``), ``respc.openai`` (OpenAI Chat Completions and Responses streams, ``docs/openai.md``),
``respc.vllm`` and ``respc.sglang`` (serving plug-ins, ``docs/serving.md``), ``respc.ray`` and
``respc.spark`` (batch), ``respc.runtime`` (what generated parsers share), ``respc.compiler`` (the
passes and the CLI).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["compile_template", "parse_response", "get_response_parser", "parse_batch", "columns_mapper",
           "show", "__version__"]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
