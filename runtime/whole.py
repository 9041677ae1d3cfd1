"""The whole-text path: parse a complete model output without streaming it
(docs/security.md "Whole text at scan speed").

Theory of operation
-------------------
``parse_response(text)`` used to run the streaming path on the complete text: ``feed(text)``
(one scan pass with ``eos=False``) and then ``finalize()`` (a second pass, ``eos=True``, over
whatever the first one held back). The first pass pays for streaming semantics a complete text
does not need: every regex delimiter is searched with ``partial=True`` (for a pattern without a
literal the ``regex`` module cannot skip ahead in that mode: 4 ms instead of 0.2 ms over 100 kB
of hunyuan prose), every complete match is confirmed by its D2 probe (another partial search),
and each scanner computes a hold at the buffer end.

Strict mode: the text is appended to the parser's buffer unscanned and ``finalize()`` runs the
single end-of-stream pass over all of it: the same scanners, transitions, regions and content
parsers, with ``eos=True``, so regex delimiters take plain searches and nothing is held.

Why the message is the same. With ``eos=False`` a scanner commits a delimiter only when no more
input can change it; with ``eos=True`` it commits the leftmost complete match, which is the same
match whenever the ``eos=False`` scan would have committed it (a partial search returns the
leftmost complete-or-partial match, and a complete match the probe lets through is the one the
engine reaches first in either mode). What the first pass held back, ``finalize()`` scanned again
with ``eos=True`` from the same position and state: exactly what the single pass does there. The
v2 decisions that wait for input (a tentative open, a deferred open, an optional trailing close,
a self-delimiting body's decoder) decide at the end of the stream the way the single pass
decides them.

Recover mode (``errors="recover"``) keeps both passes, because the *truncated delimiter*
diagnostic reports the text the ``eos=False`` pass held at the end of the stream, which only that
pass knows. It still skips ``feed()``'s per-chunk machinery (the unscanned fast path, the
long-hold tail): the text goes into the buffer and the ``eos=False`` pass runs once over all of
it, which is what ``feed(text)`` does on a parser that holds no long pending match, then
``finalize()``. The message and diagnostics are those of ``feed`` + ``finalize`` by construction.

Events. ``finish`` returns the message only, so the parser builds no ``region_open``,
``region_chunk`` or ``region_close`` event on this path (``StreamParser._mute``): a strict error
raised by it carries ``exc.events`` without them. The message, diagnostics and errors are
unchanged (events are never read back by the parser).

Express regions. In strict mode a region opened into a state that watches only its own literal
close (most tool-call regions: ``<tool_call>`` … ``</tool_call>``) is read at once
(``StreamParser._express``, ``runtime/stream.py`` ``_express_table``): the closer is found, the
body sliced, parsed, checked and stored, and the parser is back outside, without the scan, the
routing and the open/close/leave steps the end-of-stream pass would take one by one to the same
result (its state's scanner can only answer that closer; the table's conditions rule out every
hook that could see the body first). The express section of ``tests/test_whole.py`` checks which
regions take it and compares outcomes on damaged bodies of them.

Literal search. In both modes the buffer is a :class:`WholeText`, a ``str`` whose ``find`` looks
for a literal delimiter by its rarest character first, with ``memchr`` (CPython's one-character
``str.find``): about 1 us per 100 kB against 35-55 us for ``str.find`` of a 10-character literal
over prose, and the scanners spend most of a whole-text parse in those searches (the generated
scanners call ``buf.find``). It returns what ``str.find`` returns; when the chosen character turns
out to be frequent in the text it falls back to ``str.find``.

``tests/test_whole.py`` checks message, error and diagnostics equality with the streaming path
(``feed`` + ``finalize``) in both modes on every catalogue case, corpus vector, peer vector,
conformance vector, the recover suites' damaged inputs, and on random inputs built from each
template's delimiters; and ``WholeText.find`` against ``str.find``.

Where it falls back to the streaming path (``feed`` + ``finalize``): token ids (not ``str``), a
parser with a ledger (its entries are cut where the first pass held text), and in recover mode
a parser that holds a long pending match (``feed`` then collects text before it scans again).
"""

from __future__ import annotations

import unicodedata
from typing import Any

__all__ = ["finish", "WholeText", "sentinel"]

#: a literal's sentinel may miss this many times in one search before ``str.find`` takes over,
#: when the misses come closer together than ``_MISS_SPAN`` characters on average
_MISSES = 16
#: characters per miss under which a sentinel counts as frequent in the text: a miss costs about
#: what ``str.find`` of a 10-character literal over 1-2 kB of prose does (real prose has
#: a ``|`` every 3 kB, and ``<|eot_id|>`` over 100 kB took 35 us with 16 misses then ``str.find``)
_MISS_SPAN = 1024
#: characters searched with ``str.find`` from the start and after each miss before the sentinel
#: is looked for (a C search of 512 characters costs about what one sentinel hit checked in Python does)
_NEAR = 512
#: per literal: (its sentinel character, the sentinel's offset in it)
_PLANS: dict[str, tuple[str, int]] = {}
_PLAN_LIMIT = 4096

_RARE_ASCII = frozenset("|^~")
_UNCOMMON_ASCII = frozenset("_>=@#$%&*+\\`}]")
_COMMON = frozenset("abcdefghijklmnopqrstuvwxyz \n")


def _rarity(char: str) -> float:
    """How common ``char`` is in model prose, code and markup: 0 (rare) to 3 (letters, spaces);
    under 2 it can be a sentinel. ``[`` and ``"`` (1.5) are, but any other uncommon character of
    the same literal is preferred (``[TOOL_CALLS]`` is looked for by its ``_``); a text dense in
    them costs at most ``_MISSES`` misses before ``str.find`` takes over (``"name"``: a JSON call's
    key, otherwise common letters, which ``str.find`` reads at about 1 ns a character)."""
    code = ord(char)
    if code < 128:
        if char in _COMMON:
            return 3
        if char in _RARE_ASCII or (code < 32 and char not in "\t\r"):
            return 0
        if char in '["':
            return 1.5
        return 1 if char in _UNCOMMON_ASCII else 2
    # special-token characters (fullwidth bars, U+2581, box drawing) are symbols or punctuation;
    # letters (CJK, accented) are common in prose
    return 0 if unicodedata.category(char)[0] in "SPZC" else 2


def _plan(literal: str) -> tuple[str, int]:
    """The sentinel of ``literal``: its rarest character (the first of the rarest) and its offset;
    ``("", 0)`` when every character is common (rarity 2 or 3): ``str.find`` is used then."""
    best = min(range(len(literal)), key=lambda k: _rarity(literal[k]))
    plan = (literal[best], best) if _rarity(literal[best]) < 2 else ("", 0)
    if len(_PLANS) < _PLAN_LIMIT:
        _PLANS[literal] = plan
    return plan


def sentinel(literal: str) -> tuple[str, int]:
    """The character :meth:`WholeText.find` looks for first when searching ``literal`` (two or
    more characters) and its offset in it; ``("", 0)`` when it has no uncommon character (then
    ``find`` is ``str.find``). The compiler asks it which regex leads are worth finding first
    (``compiler/automaton.py`` ``_checked_leads``)."""
    plan = _PLANS.get(literal)
    return plan if plan is not None else _plan(literal)


class WholeText(str):
    """A complete model output held as the parser buffer: ``find`` is quicker, nothing else changes.

    ``find(sub, start, end)`` returns exactly what ``str.find`` returns. For ``sub`` of two or
    more characters, one of them uncommon (rarity 0 or 1), and non-negative ``start``/``end`` it
    searches the next ``_NEAR`` characters with ``str.find``, then looks for ``sub``'s sentinel
    (its rarest character, see :func:`_rarity`) with the one-character ``str.find`` (``memchr``)
    and checks the hit with ``startswith``; a hit that does not check is a miss, and the search goes
    on the same way after it. The first hit that checks is the first occurrence: every occurrence
    not inside a window already searched puts the sentinel at or after the window's last possible
    start plus the sentinel's offset. After ``_MISSES`` misses closer together than
    ``_MISS_SPAN`` characters on average the rest is searched with ``str.find``. Slices and concatenations are plain ``str``.

    A search to the end of the text (``end`` None) for ``sub`` without a sentinel (all its
    characters common: ``str.find`` at about 1 ns a character) is remembered per ``sub`` (where it
    started, what it found): a later one from a start between the two gets the same answer
    without a search, since no occurrence lies between them. Two scanner states that watch the
    same such literal (hyperclovax_seed_think's two ``"name"`` openers) search the text once.
    """

    __slots__ = ("_seen",)

    def find(self, sub: Any, start: Any = None, end: Any = None) -> int:
        """``str.find(sub, start, end)``: the lowest index of ``sub`` in ``self[start:end]``, or -1."""
        if start.__class__ is int and start >= 0:
            if end is None:
                # the first window, before any set-up: a hit there is the first occurrence (one
                # that starts before it would end inside it), and a window that reaches the end
                # of the text was the whole search. A tool call's delimiters, the next tag of a
                # call body, a text's last kilobyte: most searches of a parse end here.
                i = str.find(self, sub, start, start + _NEAR)
                if i >= 0 or len(self) - start <= _NEAR:
                    return i
            elif end.__class__ is int and end >= 0 and (end if end < len(self) else len(self)) - start <= _NEAR:
                # what is left to search fits the first window (the search below would do only this)
                return str.find(self, sub, start, end)
        if sub.__class__ is not str:
            return str.find(self, sub, start, end)  # its errors too
        plan = _PLANS.get(sub)
        if plan is None:
            if len(sub) < 2:
                return str.find(self, sub, start, end)
            plan = _plan(sub)
        if start is None:
            start = 0
        elif start.__class__ is not int or start < 0:
            return str.find(self, sub, start, end)
        if end is None:
            n = len(self)
        elif end.__class__ is not int or end < 0:
            return str.find(self, sub, start, end)
        else:
            n = end if end < len(self) else len(self)
        char, k = plan
        if not char:
            if end is not None:
                return str.find(self, sub, start, end)
            # no sentinel: str.find over the rest, remembered (see the class docstring)
            try:
                seen = self._seen
            except AttributeError:
                seen = self._seen = {}
            hit = seen.get(sub)
            if hit is not None and hit[0] <= start and (hit[1] < 0 or start <= hit[1]):
                return hit[1]
            i = str.find(self, sub, start)
            seen[sub] = (start, i)
            return i
        m = len(sub)
        near = _NEAR if _NEAR > m else m
        stop = n - m + k + 1  # a sentinel at or after stop leaves no room for sub before n
        misses = 0
        began = start
        while True:
            # the C search over a short window first: delimiters often come close together
            w = start + near
            if w >= n or (misses >= _MISSES and start - began < misses * _MISS_SPAN):
                return str.find(self, sub, start, n) if start < n else -1
            if not misses:
                i = str.find(self, sub, start, w)
                if i >= 0:
                    return i
                start = w - m + 1  # every occurrence that ends by w was looked at
            if stop <= start + k:
                return -1  # (and a negative stop would count from the end)
            j = str.find(self, char, start + k, stop)
            if j < 0:
                return -1
            if self.startswith(sub, j - k):
                return j - k
            misses += 1
            start = j - k + 1


def _whole_ok(parser: Any) -> bool:
    """True when the whole-text path gives what ``feed`` + ``finalize`` give (see above): no
    ledger, not finalized, and in recover mode no long pending match (``feed`` would collect the
    text unscanned, so its ``eos=False`` pass would hold from an earlier place)."""
    return parser.ledger is None and not parser._done and not (parser._recover and parser._rescan_at)


def finish(parser: Any, text: str) -> dict:
    """Give ``parser`` the rest of the output, ``text``, and finalize it; return the message.

    The same as ``parser.feed(text)`` followed by ``parser.finalize()[0]`` (the events are not
    returned): in strict mode one end-of-stream pass, in recover mode the ``eos=False`` pass once
    over the whole text and then ``finalize()``, both over a :class:`WholeText` buffer (see the
    module docstring); through ``feed`` where neither is exact.

    Args:
        parser (StreamParser): a generated ``ResponseParser``, not yet finalized.
        text (str): the complete rest of the model output.

    Returns:
        dict: the assistant message, as ``finalize()`` returns it.

    Raises:
        The errors of ``feed`` and ``finalize``: ``ParserStateError`` (finalized or failed
        earlier), ``ValueError`` / ``KeyError`` / ``TypeError`` from a region body (strict), a
        missing required field.
    """
    if text.__class__ is not str or not _whole_ok(parser) or (not text and parser._recover):
        parser.feed(text)  # (feed("") runs the eos=False pass only when it is not on its fast path)
        return parser.finalize()[0]
    # no event of this parser is returned: none is built (region_open, region_chunk and
    # region_close were five or six dicts per tool call; an error raised here carries no events)
    parser._mute = True
    # what feed() would have collected, in order: a long hold's tail, then the new text
    parser._flush_tail()
    parser._buf = WholeText(parser._buf + text)
    if parser._recover:
        # feed(text) on a parser holding no long match: the text joins the buffer, one eos=False pass
        parser._guarded([], False)
    return parser.finalize()[0]
