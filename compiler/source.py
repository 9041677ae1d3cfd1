"""The front half of the pipeline: a template from anywhere, read into its IR and automaton
(``load -> validate -> automaton``; README "Layout").

:func:`respc.compiler.api.compile_source` goes on to the grammar and the emitted module; the grammar exporters
(``compiler/grammar_render.py``, ``compiler/grammar_structural.py``) need only this half, so they import it
from here and never ``api`` (an import circle otherwise: ``api -> grammar -> grammar_render -> api``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .automaton import Automaton, build_automaton
from .ir import Template
from .load import load_template
from .validate import validate

__all__ = ["ReadTemplate", "read_template"]


@dataclass(frozen=True)
class ReadTemplate:
    """A template read and checked: its IR, its automaton and the loader's note (``LoadedTemplate.note``)."""

    template: Template
    automaton: Automaton
    note: str | None = None


def read_template(spec: Any, *, source_name: str | None = None) -> ReadTemplate:
    """Load, validate and build the automaton of a template.

    Args:
        spec: anything :func:`respc.compiler.load.load_template` accepts (dict, path, name, model directory).
        source_name: overrides the source label (a relative path) errors and banners name.

    Raises:
        TemplateError: as :func:`respc.compiler.api.compile_source`.
    """
    loaded = load_template(spec)
    if source_name is not None:
        loaded = dataclasses.replace(loaded, source=source_name)
    template = validate(loaded)
    return ReadTemplate(template, build_automaton(template), loaded.note)
