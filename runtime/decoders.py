"""Incremental boundary decoders (moved): the readers that find where a self-delimiting region body ends
(template v2, ``end: "value"``) live with their formats (docs/formats.md): the :class:`Boundary` protocol and
its statuses in ``runtime/formats/base.py``, :class:`JsonBoundary` in ``runtime/formats/json_.py``,
:class:`PythonicBoundary` in ``runtime/formats/pythonic.py``. This module keeps the old import path.
"""

from __future__ import annotations

from .formats.base import ACCEPTED, REJECTED, UNDECIDED, Boundary
from .formats.json_ import JSON_ACCEPT_DEFAULT, JsonBoundary, json_boundary
from .formats.pythonic import PythonicBoundary, pythonic_boundary

__all__ = [
    "UNDECIDED",
    "ACCEPTED",
    "REJECTED",
    "Boundary",
    "JsonBoundary",
    "PythonicBoundary",
    "json_boundary",
    "pythonic_boundary",
    "JSON_ACCEPT_DEFAULT",
]
