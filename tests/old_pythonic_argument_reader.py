"""The pythonic format's argument reader as it was before it read string runs in one step
(runtime/formats/pythonic.py ``PythonicArgs.feed``, commit 46e62c8): every character through ``_char``. Only
``feed`` changed, so the oracle is the reader with its old ``feed``. Kept for tests/test_formats_pythonic.py.
Not product code; never imported by respc."""

from __future__ import annotations

from respc.runtime.formats.pythonic import PythonicArgs, _Bad


class OldPythonicArgs(PythonicArgs):
    """:class:`PythonicArgs` reading one character at a time."""

    def feed(self, text: str) -> None:
        if self.dead:
            return
        emit: list[str] = []
        try:
            for c in text:
                self._char(c, emit)
        except _Bad:
            self.dead = True
        self._flush(emit)
