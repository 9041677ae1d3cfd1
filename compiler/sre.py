"""Template patterns read by the standard library's regex parser, for analysis only.

The passes (automaton, held-text plans, backtracking analysis, grammar, linter) read a template's
patterns, written for the `regex` module, with ``re``'s own parser. That parser warns "Possible
nested set" about ``[[``, which in the `regex` flavour is a POSIX class such as ``[[:alpha:]]``,
not a mistake; the warning would only reach the user as noise, so it is silenced here and nowhere
else.
"""

from __future__ import annotations

import warnings
from typing import Any

try:  # Python 3.11+
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

__all__ = ["parse_pattern"]


def parse_pattern(pattern: str, flags: int = 0) -> Any:
    """``re``'s parse tree of ``pattern`` (a ``SubPattern``), without its FutureWarnings.

    Raises:
        re.error: the standard library cannot read the pattern (``regex``-only syntax among others).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return _sre_parse.parse(pattern, flags)
