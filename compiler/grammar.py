"""Pass 4: the Lark grammar of the whole-message language of one template (README "Layout").

Embedded in every generated module as ``GRAMMAR`` (documentation and tests; the streaming parser
never uses it at run time). It is the exact export (docs/grammar.md) of
:mod:`respc.compiler.grammar_ir` rendered for Lark (:mod:`respc.compiler.grammar_render`) without
tools: free text holds no watched delimiter, regions are closed (or cut off by the end of the
stream), JSON bodies are JSON, call names are identifiers and arguments JSON objects. It REJECTS
malformed outputs (unbalanced braces, a tool region without its close followed by text). Parse it
with Lark's Earley parser, ``lexer="dynamic"``, ``regex=True``. ``respc grammar`` writes the same
language with the offered tools for serving engines.
"""

from __future__ import annotations

from .automaton import Automaton
from .ir import Template

__all__ = ["build_grammar"]


def build_grammar(template: Template, automaton: Automaton | None = None) -> str:
    """Return the Lark grammar text of ``template``'s whole-message language.

    Args:
        template: the IR.
        automaton: its automaton (built when None).

    Returns:
        str: a grammar with start rule ``start``; ``region_<i>`` per explicit field ``i``, ``text``
        for text outside regions, ``implicit_close`` for the implicit field's close; comment lines
        ``// inexact: ...`` say what it approximates.
    """
    from .grammar_ir import build_grammar_ir
    from .grammar_render import render

    return render(build_grammar_ir(template, None, automaton=automaton), "lark")
