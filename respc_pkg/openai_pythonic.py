"""Pythonic tool calls converted to JSON argument text as they are written (moved).

The reader, :class:`PythonicArgs`, lives with its format in ``runtime/formats/pythonic.py`` (docs/formats.md,
"Argument readers"); :mod:`respc.openai` wires it to the stream. This module keeps the old import path.
"""

from __future__ import annotations

from respc.runtime.formats.pythonic import PythonicArgs, reader_options

__all__ = ["PythonicArgs", "reader_options"]
