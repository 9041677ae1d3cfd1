"""Named records of a generated module's parser tables (docs/security.md "Declared scanners and named records").

A generated module declares its tables with these records, built by keyword, so that a reviewer
reads ``FastPath(triggers='<', heads=...)`` instead of a positional tuple. Each is a
:class:`typing.NamedTuple`: :class:`~respc.runtime.stream.StreamParser` unpacks them exactly as it
unpacked the plain tuples modules of codegen 3 wrote, so both run on this runtime
(README.md, "Layout").
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["FastPath", "HoldRun", "HoldLiterals", "StrayCloser", "HeldAutomaton"]


class FastPath(NamedTuple):
    """``FAST_PATH`` entry of one state (runtime/stream.py, "fast path").

    Attributes:
        triggers (str | None): the characters any watched delimiter can start with; None: unknown.
        heads (frozenset[str] | None): the first three characters of every watched delimiter (two
            when one has only two known); None: not known for all.
    """

    triggers: str | None
    heads: frozenset | None


class HoldRun(NamedTuple):
    """One ``HOLD_RUNS`` entry: a watched delimiter that is a run of one class then a literal.

    Attributes:
        chars (str): the characters of the class.
        literal (str): the literal after the run.
    """

    chars: str
    literal: str


class HoldLiterals(NamedTuple):
    """``HOLD_LITERALS`` entry of a state that watches literal delimiters only.

    Attributes:
        literals (tuple[str, ...]): the literals.
        span (int): the longest proper prefix's length.
        firsts (str): their first characters.
        prefixes (frozenset[str] | LiteralPrefixes): their proper prefixes.
    """

    literals: tuple
    span: int
    firsts: str
    prefixes: object


class StrayCloser(NamedTuple):
    """One ``STRAY_CLOSERS`` entry: a literal close of an explicit field (errors="recover").

    Attributes:
        closer (str): the literal close.
        opener (str): its field's open pattern.
        field (int): the field's index.
    """

    closer: str
    opener: str
    field: int


class HeldAutomaton(NamedTuple):
    """One delimiter's position automaton in ``HOLD_REGEX`` (compiler/held.py, runtime/held.py).

    Attributes:
        edge (str | None): its pattern when a complete match can go on, else None.
        tests (tuple[str, ...]): per position its test: one character, or the regex source of a
            class matching one character.
        first (tuple[int, ...]): the positions a match starts with.
        follow (tuple[tuple[int, ...], ...]): per position, those that can come next.
        last (tuple[int, ...]): the positions a match can end with.
        late (bool): the automaton reads the delimiter's start anchors as matching nothing, so it
            is the delimiter's only for held text that starts after offset 0 of the buffer
            (compiler/held.py, "Start anchors"; runtime ``StreamParser._held_regex`` scans at 0).
    """

    edge: str | None
    tests: tuple
    first: tuple
    follow: tuple
    last: tuple
    late: bool = False
