"""The compiler pipeline and the Python conveniences (events.md "The parser object"; README "Layout").

``load -> validate -> automaton -> grammar -> emit``; :func:`compile_source` returns the module
text, :func:`compile_template` executes it into an in-memory module (cached by template hash), and
:func:`parse_response` / :func:`get_response_parser` are drop-ins for the transformers functions of
the same names with the template as second argument.
"""

from __future__ import annotations

import logging
import sys
import threading
import types
from dataclasses import dataclass
from typing import Any

from .automaton import Automaton
from .emit import emit_module
from .grammar import build_grammar
from .ir import Template
from .source import read_template

__all__ = ["Compiled", "compile_source", "compile_template", "parse_response", "get_response_parser", "export_grammar",
           "export_structural_tag"]


@dataclass(frozen=True)
class Compiled:
    """Everything one compilation produced.

    Attributes:
        template (Template): the IR.
        automaton (Automaton): the region automaton (``warnings`` lists D2 holds).
        grammar (str): the Lark grammar of the whole-message language.
        source (str): the generated module's Python source.
        note (str | None): for a model directory, tokenizer_config.json or chat template, which
            response template was used: its ``response_template`` key or a detected catalogue
            family (:attr:`respc.compiler.load.LoadedTemplate.note`); else None.
    """

    template: Template
    automaton: Automaton
    grammar: str
    source: str
    note: str | None = None


def compile_source(spec: Any, *, command: str | None = None, source_name: str | None = None) -> Compiled:
    """Compile a template into generated-module source.

    Args:
        spec: anything :func:`respc.compiler.load.load_template` accepts (dict, path, name).
        command: the regenerate command stamped in the banner (default: ``respc compile <source>``).
        source_name: overrides the source label stamped in the banner (a relative path).

    Returns:
        Compiled: IR, automaton, grammar and module source.

    Raises:
        TemplateError: the template breaks a rule of template-language.md "Load-time checks", or ``spec`` is a model
            directory / tokenizer_config.json / chat template without a ``response_template`` whose
            chat template no catalogue family fits exactly (``compiler/detect.py``; the error names
            the nearest fits and says to pass a template explicitly; an inexact fit is never used).
    """
    read = read_template(spec, source_name=source_name)
    template, automaton = read.template, read.automaton
    grammar = build_grammar(template, automaton)
    if command is None:
        command = f"respc compile {template.source}" if template.source != "<dict>" else "respc.compile_template(...)"
    source = emit_module(template, automaton, command=command, grammar=grammar)
    return Compiled(template, automaton, grammar, source, read.note)


_CACHE: dict[tuple[str, str], types.ModuleType] = {}
_LOCK = threading.Lock()


def compile_template(template: Any) -> types.ModuleType:
    """Compile a template and import the generated module in memory (README "Layout").

    Args:
        template: a dict, a path (``.json``, ``tokenizer_config.json``, model directory,
            ``chat_template.jinja``) or a catalogue name. A model directory without a
            ``response_template`` gives the catalogue family detected from its chat template; which
            one is logged at INFO level on the ``respc`` logger. Only an exact fit is used (a family
            that parses back every sample message the chat template rendered, see
            ``docs/writing-a-template.md``); with none this raises.

    Returns:
        module: exposing ``ResponseParser``, ``get_response_parser``, ``parse_response``,
        ``FIELD_NAMES``, ``GRAMMAR``. Cached by the template's SHA-256 and source label, so
        compiling the same template from the same place twice returns the same module.

    Raises:
        TemplateError: the template breaks a rule of template-language.md "Load-time checks", or a model directory's
            chat template fits no catalogue family exactly (the error names the nearest fits and says to pass a
            template explicitly).
    """
    compiled = compile_source(template)
    if compiled.note:
        logging.getLogger("respc").info("%s", compiled.note)
    key = (compiled.template.sha256, compiled.template.source)
    with _LOCK:
        module = _CACHE.get(key)
        if module is None:
            name = f"respc._compiled_{key[0][:16]}"
            module = types.ModuleType(name)
            module.__file__ = f"<respc generated from {compiled.template.source}>"
            code = compile(compiled.source, module.__file__, "exec")
            sys.modules[name] = module
            try:
                exec(code, module.__dict__)  # noqa: S102 - our own emitted code; template data is only repr()'d
            finally:
                del sys.modules[name]
            _CACHE[key] = module
    return module


def get_response_parser(template: Any, *, prefix: Any = None, tools: list | None = None, tokenizer: Any = None,
                        errors: str = "strict", regex_timeout: float | None = None):
    """Drop-in for ``tokenizer.get_response_parser``: a streaming parser for ``template`` (events.md "The parser
    object").

    ``errors="recover"`` never raises on model output (see docs/events.md, region_malformed).
    ``regex_timeout``: seconds one search of a regex delimiter not proven linear may run (None:
    ``runtime.REGEX_TIMEOUT``; docs/security.md, "Limits").

    Raises:
        TemplateError: as :func:`compile_template` (a bad template, or a model directory whose chat
            template no catalogue family fits exactly); ValueError: ``regex_timeout`` not a
            positive number."""
    return compile_template(template).ResponseParser(prefix, tools, tokenizer, errors, regex_timeout=regex_timeout)


def parse_response(response: Any, template: Any, *, prefix: Any = None, tools: list | None = None,
                   tokenizer: Any = None, errors: str = "strict", regex_timeout: float | None = None) -> Any:
    """Drop-in for ``tokenizer.parse_response`` with the template as second argument (events.md "The parser object").

    Returns:
        dict | list[dict]: one message, or one per item of a batch.

    Raises:
        TemplateError: bad template, or a model directory whose chat template no catalogue family
        fits exactly (never an inexact guess: the error names the nearest fits); ValueError:
        missing prefix, failed parse, ``regex_timeout`` not a positive number; TypeError: ids
        without a tokenizer; RegexTimeoutError (a ValueError): strict, a search of a delimiter not
        proven linear ran past ``regex_timeout`` seconds (None: ``runtime.REGEX_TIMEOUT``;
        docs/security.md, "Limits").
    """
    return compile_template(template).parse_response(response, prefix, tools, tokenizer, errors,
                                                     regex_timeout=regex_timeout)


def export_grammar(template: Any, fmt: str = "lark", **options: Any) -> str:
    """The grammar of a template's whole-message language in an export format (docs/grammar.md): the front
    door of :func:`respc.compiler.grammar_render.export_grammar`, which takes the same arguments (``tools``,
    ``tool_choice``, ``parallel``, ``reasoning``) and raises the same errors (``TemplateError``,
    ``GrammarExportError``, ``ValueError`` for an unknown format)."""
    from .grammar_render import export_grammar as export

    return export(template, fmt, **options)


def export_structural_tag(template: Any, **options: Any) -> tuple[dict, list[str]]:
    """xgrammar's structural tag of a template (docs/grammar.md): the front door of
    :func:`respc.compiler.grammar_structural.export_structural_tag` (same arguments and errors)."""
    from .grammar_structural import export_structural_tag as export

    return export(template, **options)
