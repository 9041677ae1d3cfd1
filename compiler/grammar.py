"""Pass 4: a Lark grammar of the whole-message language (placeholder, replaced below)."""

from __future__ import annotations

from .ir import Template


def build_grammar(template: Template) -> str:
    return ""
