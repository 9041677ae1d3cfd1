"""Tool-call bodies that are not plain JSON call objects, converted to JSON text as they stream (moved).

The converters live with their formats (docs/formats.md, "Argument readers"): :class:`DialectJson`,
:class:`NameKeyed` and :class:`Converted` in ``runtime/formats/json_.py``, :class:`TextArgs` in
``runtime/formats/text.py``, :class:`XmlTree` in ``runtime/formats/xml_inline.py``; which one a region uses is
its format plan, read by :mod:`respc.openai`. This module keeps the old import path.
"""

from __future__ import annotations

from respc.openai import LABELS, _label as label
from respc.runtime.formats.json_ import Converted, DialectJson, NameKeyed
from respc.runtime.formats.text import TextArgs
from respc.runtime.formats.xml_inline import XmlTree

__all__ = ["label", "LABELS", "Converted", "DialectJson", "NameKeyed", "TextArgs", "XmlTree"]
