"""Pass 5 for a second runtime: lay a template out as an ES module for the JavaScript runtime
(``runtime/js/respc.mjs``; docs/javascript.md).

Like :mod:`respc.compiler.emit`, this module decides nothing: it reads the IR (:class:`Template`)
and the region automaton (:class:`Automaton`) the earlier passes built and writes them as one JSON
table the runtime runs. Everything taken from the template reaches the module as JSON data inside
``JSON.parse`` of a string literal written by :func:`json.dumps` (ASCII, every character outside
printable ASCII escaped), never as code, so a hostile template cannot inject anything.

The JavaScript runtime implements a subset of what the Python runtime runs (docs/javascript.md,
"What is refused"). :func:`js_support_problem` names the first thing a template uses outside it;
:func:`emit_js_module` refuses such a template with :class:`JsTargetError` instead of writing a
parser that could give another answer than the Python one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from respc.runtime.formats import plan_of
from respc.runtime.formats.json_ import JSON_ACCEPT_DEFAULT
from respc.runtime.transforms import FIRST, PLACEHOLDER, PLACEHOLDER_V2

from .automaton import Automaton
from .ir import Template

__all__ = ["comment_text", "JS_CODEGEN_VERSION", "JS_RUNTIME_ABI", "JS_RUNTIME_IMPORT", "JS_RUNTIME_PATH", "JsTargetError", "js_support_problem",
           "emit_js_module"]

#: Stamped into every generated JavaScript module; bump it when the generated code changes.
JS_CODEGEN_VERSION = 4
#: The table layout ``runtime/js/respc.mjs`` reads (its ``RUNTIME_ABI``).
JS_RUNTIME_ABI = 3
#: Where a generated module imports the runtime from: ``respc.mjs`` beside it (docs/javascript.md).
JS_RUNTIME_IMPORT = "./respc.mjs"
#: The runtime's file (installed with the package: ``respc/runtime/js/respc.mjs``).
JS_RUNTIME_PATH = Path(__file__).resolve().parent.parent / "runtime" / "js" / "respc.mjs"


class JsTargetError(ValueError):
    """The template uses something ``--target js`` does not support yet (docs/javascript.md,
    "What is refused"); the message is one line naming the feature and the template key."""


def js_support_problem(template: Template, automaton: Automaton) -> str | None:
    """The first reason ``template`` cannot be compiled for the JavaScript runtime, or None.

    The runtime runs template language v1 with literal delimiters (``open``, ``close``,
    ``start_anchor``, none of whose literals extends another of the same delimiter) and regex
    openers (a sequence its walker reads, :func:`_sequence`, or one its backtracking matcher
    runs, :func:`_program`: proven linear, read with the Python meaning, not indeterminate), the
    ``text`` content format and the ``json`` one without dialects, and transforms (with
    ``transform_each``); of v2, roles, json openers the body may reject, ``inside`` with
    ``end-if-unclosed``, ``end: "value"`` on a json body that starts an object, an array or a
    string (not on a call its opener's group names), and v2 transforms. docs/javascript.md
    explains each refusal ("What is refused", "Regex delimiters").

    Returns:
        str | None: ``"--target js does not yet support <feature> (key <key>)"``, or None.
    """
    def no(feature: str, key: str) -> str:
        return f"--target js does not yet support {feature} (key {key})"

    v2 = template.version == 2
    if template.version not in (1, 2):
        return no(f"template language version {template.version}", "respc_version")
    if v2 and template.diagnostics is not None:
        return no("the diagnostics key (v2)", "diagnostics")
    if _unsafe_number(template.defaults):
        return no("a number JavaScript cannot hold exactly (an integer beyond 2**53 - 1)", "defaults")
    surrogate = _lone_surrogate_key(template)
    if surrogate is not None:
        return no("a lone surrogate (a UTF-16 half of a character) in a delimiter", surrogate)
    anchor = template.start_anchor
    if anchor.literals is None:
        return no(f"a start anchor pattern: {_regex_why(anchor.pattern)}", anchor.key)
    if any(not lit for lit in anchor.literals):
        return no("an empty start anchor literal", anchor.key)
    for f in template.fields:
        where = f"fields.{f.name}"
        if v2:
            # v2 runs where it adds only roles, json openers the body rejects and v2 transforms
            if f.slot != f.name:
                return no("slot (v2)", f"{where}.slot")
            if f.end == "value" and (f.content != "json" or set(_accept(f)) - set('{["')):
                # the value's end is read by the json reader's boundary scan of objects, arrays
                # and strings (runtime/js/respc.mjs JsonEnd); a top-level number or literal is not
                return no('end: "value" with a body that may start a number or a literal', f"{where}.end")
            args = _args_plan(plan_of(f))
            if f.end == "value" and args is not None and args["call"] == "args":
                # the Python delta adapter reads such a body with its own json argument reader,
                # which also ends the value (respc/openai.py _one_reader_plans), and can end a
                # damaged one elsewhere than the core's boundary scan: not written in JavaScript
                return no('end: "value" on a call named by its opener\'s group (the delta adapter\'s reader)',
                          f"{where}.end")
            if any(how != "end-if-unclosed" for _, how in f.inside):
                return no("inside (v2: nesting and ending other regions)", f"{where}.inside")
            if not f.outside:
                return no("outside: false (v2)", f"{where}.outside")
            if f.recover_open or f.recover_close:
                return no("recover-only delimiters (v2)", f"{where}.recover_open")
        for delim in (f.open, f.close):
            if delim is None:
                continue
            if delim.literals is None:
                if delim is f.open and isinstance(_sequence(delim.pattern), list):
                    continue  # a sequence pattern (see _sequence): the runtime's walker runs it
                if delim is f.open:
                    program = _program(delim.pattern)
                    if isinstance(program, dict):
                        if any(0xD800 <= ord(c) <= 0xDFFF for lead in _leads(delim.pattern) or () for c in lead):
                            return no("a lone surrogate (a UTF-16 half of a character) in a delimiter", f"{where}.{delim.key}")
                        continue  # the runtime's backtracking matcher runs it (see _program)
                    why = (f"{json.dumps(delim.pattern, ensure_ascii=True)}: {program} (the JavaScript "
                           "runtime's regex matcher does not run it)")
                    return no(f"regex delimiters: {why}", f"{where}.{delim.key}")
                return no(f"regex delimiters: {_regex_why(delim.pattern)}", f"{where}.{delim.key}")
            if delim.can_extend:
                return no("a literal list in which one literal extends another", f"{where}.{delim.key}")
            if any(not lit for lit in delim.literals):
                return no("an empty literal delimiter", f"{where}.{delim.key}")
        if f.content not in ("text", "json"):
            return no(f"the {f.content!r} content format", f"{where}.content")
        if set(f.content_args) - ({"strip", "accept"} if f.content == "json" else {"strip"}):
            # json: its dialects (string_delims, unquoted_keys, python_literals, allow_non_json)
            return no("these content_args", f"{where}.content_args")
        if f.transform is not None and _unsafe_number(f.transform):
            return no("a number JavaScript cannot hold exactly (an integer beyond 2**53 - 1)", f"{where}.transform")
        if f.transform is not None and _integral_float(f.transform):
            # JSON text gives JavaScript 1 for 1.0: the value, its type name and repr would differ
            return no("a float with an integral value (1.0) in a transform", f"{where}.transform")
    for state in automaton.states:
        for w in state.watches:
            if w.action not in ("open", "close", "defer"):
                return no(f"the {w.action!r} transition", f"fields.{template.fields[w.field].name}")
            if w.matcher != "literal" and not (w.action == "open" and not w.indeterminate and (
                    isinstance(_sequence(w.delimiter.pattern), list) or isinstance(_program(w.delimiter.pattern), dict))):
                return no("this delimiter's matching", f"fields.{template.fields[w.field].name}.{w.delimiter.key}")
            if w.matcher == "literal" and (w.indeterminate or w.pending_at_edge):
                return no("this delimiter's matching", f"fields.{template.fields[w.field].name}.{w.delimiter.key}")
    if automaton.after_state:
        return no("a value's optional trailing close (v2)", "fields")
    return None


#: why a JavaScript RegExp cannot stand in for a pattern: a construct it reads differently, or has not
_REGEX_WHY = {
    "lookbehind": "a lookbehind (JavaScript reads one only where the regex module does not backtrack into it)",
    "atomic": "an atomic group or a possessive repeat (JavaScript's RegExp has neither)",
    "class": "a class \\s, \\d or \\w (their characters differ between the regex module and JavaScript)",
    "boundary": "an anchor or word boundary (^, $, \\A, \\Z, \\b: their meaning at a chunk's edge needs the text before it)",
    "syntax": "syntax Python's own reader does not parse (the regex module's)",
}


def _regex_why(pattern: str) -> str:
    """One line naming ``pattern`` (JSON-quoted, ASCII) and why the JavaScript runtime cannot run it
    with the Python meaning: the partial matching the parser needs to decide what to hold back, and
    the first construct JavaScript reads differently if there is one (docs/javascript.md, "What is
    refused")."""
    quoted = json.dumps(pattern, ensure_ascii=True)
    try:
        import re._parser as sre  # Python 3.11+
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse as sre
    try:
        tree = sre.parse(pattern)
    except Exception:  # noqa: BLE001 - any failure means another reader's syntax
        return f"{quoted} has {_REGEX_WHY['syntax']}"

    def first(items) -> str | None:
        for op, av in items:
            name = str(op)
            if name == "ASSERT" and av[0] < 0 or name == "ASSERT_NOT" and av[0] < 0:
                return "lookbehind"
            if name in ("ATOMIC_GROUP", "POSSESSIVE_REPEAT"):
                return "atomic"
            if name == "CATEGORY" or name == "IN" and any(str(o) == "CATEGORY" for o, _ in av):
                return "class"
            if name == "AT":
                return "boundary"
            subs = []
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                subs = [av[2]]
            elif name == "SUBPATTERN":
                subs = [av[-1]]
            elif name == "BRANCH":
                subs = list(av[1])
            elif name in ("ASSERT", "ASSERT_NOT"):
                subs = [av[1]]
            elif name == "ATOMIC_GROUP":
                subs = [av]
            for sub in subs:
                found = first(sub)
                if found is not None:
                    return found
        return None

    found = first(tree)
    partial = (f"{quoted} needs partial matching (JavaScript's RegExp cannot say whether more text could "
               "still complete or change a match, which decides what the parser holds back: D2)")
    return partial if found is None else f"{partial}, and has {_REGEX_WHY[found]}"


#: per regex class source: its members as sorted [first, last] code point ranges (see _class_ranges)
_CLASS_CACHE: dict = {}


def _class_ranges(source: str) -> list[list[int]]:
    """The code points the ``regex`` module's class ``source`` matches (with DOTALL, as delimiters
    are compiled), as sorted [first, last] ranges: one search over every code point."""
    got = _CLASS_CACHE.get(source)
    if got is None:
        import regex

        every = _CLASS_CACHE.get("") or "".join(map(chr, range(0x110000)))
        _CLASS_CACHE[""] = every
        got = [[m.start(), m.end() - 1] for m in regex.finditer(f"(?:{source})+", every, regex.DOTALL)]
        _CLASS_CACHE[source] = got
    return got


def _class_source(op, av) -> str | None:
    """A ``regex`` class source for one parsed single-character item, or None."""
    name = str(op)
    esc = lambda c: "\\U%08x" % c  # noqa: E731 - one code point, escaped
    if name == "LITERAL":
        return f"[{esc(av)}]"
    if name == "NOT_LITERAL":
        return f"[^{esc(av)}]"
    if name == "ANY":
        return "."
    if name != "IN":
        return None
    parts, negate = [], False
    cats = {"CATEGORY_SPACE": "\\s", "CATEGORY_NOT_SPACE": "\\S", "CATEGORY_DIGIT": "\\d",
            "CATEGORY_NOT_DIGIT": "\\D", "CATEGORY_WORD": "\\w", "CATEGORY_NOT_WORD": "\\W"}
    for o, a in av:
        kind = str(o)
        if kind == "NEGATE":
            negate = True
        elif kind == "LITERAL":
            parts.append(esc(a))
        elif kind == "RANGE":
            parts.append(f"{esc(a[0])}-{esc(a[1])}")
        elif kind == "CATEGORY" and str(a) in cats:
            parts.append(cats[str(a)])
        else:
            return None
    return "[" + ("^" if negate else "") + "".join(parts) + "]"


def _sequence(pattern: str) -> list | str:
    """A regex delimiter the JavaScript runtime runs with the Python meaning, as its walker reads it
    (runtime/js/respc.mjs ``walk``), or why not (a str).

    Accepted: a literal (the lead), then literals and runs of one character class (``C*`` or
    ``C+``, greedy, alone in a named group or not), ending with a literal, where no run can take the
    character that must follow it (or the lead's first character). Every start then has one path,
    so it is complete, fails, or runs into the end of the text (a partial match, held: D2), and
    Python's regex module and the walker give the same matches, groups and holds.
    Items: ``["l", text]`` or ``["r", ranges, min, group name or None]``."""
    try:
        import re._parser as sre  # Python 3.11+
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse as sre
    try:
        tree = sre.parse(pattern)
    except Exception:  # noqa: BLE001
        return "syntax"
    if tree.state.flags & ~(sre.SRE_FLAG_UNICODE | sre.SRE_FLAG_DOTALL):
        return "inline flags other than (?s)"  # (?i), (?m), (?x), (?a) change what the items mean
    names = {number: name for name, number in tree.state.groupdict.items()}
    items: list = []

    def run(op, av, group):
        lo, hi, sub = av
        if str(op) != "MAX_REPEAT" or lo not in (0, 1) or hi != sre.MAXREPEAT or len(sub) != 1:
            return False
        source = _class_source(*sub[0])
        if source is None:
            return False
        items.append(["r", _class_ranges(source), lo, group])
        return True

    for op, av in tree:
        name = str(op)
        if name == "LITERAL":
            if items and items[-1][0] == "l":
                items[-1][1] += chr(av)
            else:
                items.append(["l", chr(av)])
        elif name == "MAX_REPEAT":
            if not run(op, av, None):
                return "a repeat other than a greedy C* or C+ of one class"
        elif name == "SUBPATTERN":
            number, add, remove, sub = av
            if add or remove or len(sub) != 1 or str(sub[0][0]) != "MAX_REPEAT" or (number is not None and number not in names):
                return "a group that is not one named run"
            if not run(sub[0][0], sub[0][1], names.get(number)):
                return "a repeat other than a greedy C* or C+ of one class"
        else:
            return f"a construct the walker does not read ({name})"
    if len(items) < 1 or items[0][0] != "l" or items[-1][0] != "l":
        return "no literal at its start and end"
    lead = ord(items[0][1][0])

    def member(ranges, c):
        return any(a <= c <= b for a, b in ranges)

    for k, item in enumerate(items):
        if item[0] != "r":
            continue
        if member(item[1], lead):
            return "a run that can take the pattern's first character"
        for after in items[k + 1:]:  # the characters that can come next must end the run
            if after[0] == "l":
                if member(item[1], ord(after[1][0])):
                    return "a run that can take the character after it"
                break
            if any(member(item[1], a) or member(item[1], b) for a, b in after[1]) or \
                    any(member(after[1], a) or member(after[1], b) for a, b in item[1]):
                return "two runs whose classes overlap"
            if after[2] > 0:
                break
    return items
def _program(pattern: str, linear: bool = True) -> dict | str:
    """A regex delimiter as the JavaScript runtime's backtracking matcher reads it
    (runtime/js/respc.mjs ``rxSearch``), or why it cannot be read with the Python meaning (a str).

    The tree is the standard library's parse of the source, which the ``regex`` module reads alike
    where :func:`respc.compiler.automaton._read_source` says so; each one-character item becomes the
    code point ranges the ``regex`` module's class gives it over every code point (``\\s``, ``\\d``,
    ``\\w`` keep its Unicode meaning). Read: characters, classes, groups, alternation, greedy and
    lazy repeats, possessive repeats and atomic groups, lookaheads, and ``^`` (the text's start).
    Refused: a pattern :func:`respc.compiler.backtracking.linear_time_problem` does not prove
    linear (the Python parser searches it with a time limit), lookbehinds, backreferences, other
    anchors (``$``, ``\\b``, ``\\A``, ``\\Z``: their probe is rewritten), inline flags but
    ``(?s)``, a pattern without a probe (docs/javascript.md,
    "Regex delimiters"); ``linear=False`` (the matcher's own tests) skips the first check.
    Returns ``{"tree", "ngroups", "groups": [[number, name], ...], "first": ranges or None}``."""
    from .automaton import _read_source

    try:
        import re._parser as sre  # Python 3.11+
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse as sre
    from .backtracking import linear_time_problem

    reading = _read_source(pattern)
    slow = linear_time_problem(pattern) if linear else None
    if slow is not None:
        # the Python parser searches such a pattern with a time limit (a regex-timeout
        # diagnostic); the matcher has none, and must stay linear (docs/javascript.md)
        return f"no proof that its searches take linear time ({slow})"
    if reading.probe is None:
        return f"no probe can tell when its match is final ({reading.why})"
    if reading.rewritten:
        return "an end-sensitive assertion ($, \\b, \\Z)"
    if not reading.sre_agrees:
        return "syntax the regex module and Python's own reader read differently"
    try:
        tree = sre.parse(pattern)
    except Exception:  # noqa: BLE001
        return "syntax Python's own reader does not parse"
    if tree.state.flags & ~(sre.SRE_FLAG_UNICODE | sre.SRE_FLAG_DOTALL):
        return "inline flags other than (?s)"

    class Refused(Exception):
        pass

    def one(op, av):
        source = _class_source(op, av)
        if source is None:
            raise Refused(f"a class the matcher does not read ({op})")
        return ["c", _class_ranges(source)]

    def seq(items) -> list:
        out: list = []
        for op, av in items:
            # a run of literal characters: one ["l", text] item, compared as UTF-16 units, so a
            # lone surrogate (which would match half of a pair there) is a one-character class
            plain = str(op) == "LITERAL" and not 0xD800 <= av <= 0xDFFF
            if plain and out and out[-1][0] == "l":
                out[-1][1] += chr(av)
            else:
                out.append(["l", chr(av)] if plain else node(op, av))
        return out[0] if len(out) == 1 else ["s", out]

    def node(op, av):
        name = str(op)
        if name in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            return one(op, av)
        if name == "SUBPATTERN":
            number, add, remove, sub = av
            if add or remove:
                raise Refused("a group with inline flags")
            inner = seq(sub)
            return inner if number is None else ["g", number, inner]
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, sub = av
            body = seq(sub)
            if body[0] == "l" and len(body[1]) == 1:
                body = ["c", [[ord(body[1]), ord(body[1])]]]  # one character: the matcher's run
            rep = ["r", lo, -1 if hi == sre.MAXREPEAT else hi, name != "MIN_REPEAT", body]
            return [">", rep] if name == "POSSESSIVE_REPEAT" else rep
        if name == "BRANCH":
            return ["|", [seq(alt) for alt in av[1]]]
        if name in ("ASSERT", "ASSERT_NOT"):
            direction, sub = av
            if direction < 0:
                raise Refused("a lookbehind")
            return ["=" if name == "ASSERT" else "!", seq(sub)]
        if name == "ATOMIC_GROUP":
            return [">", seq(av)]
        if name == "AT" and str(av) in ("AT_BEGINNING", "AT_BEGINNING_STRING"):
            return ["^"]
        raise Refused(f"a construct the matcher does not read ({name} {av})")

    try:
        program = seq(list(tree))
    except Refused as why:
        return str(why)
    except RecursionError:
        return "nesting too deep"
    _mark_lazy_tails(program, None)
    names = sorted((number, name) for name, number in tree.state.groupdict.items())
    return {"tree": program, "ngroups": tree.state.groups - 1, "groups": [[n, name] for n, name in names],
            "first": _first_ranges(program),
            }


def _mark_lazy_tails(node, follower) -> None:
    """Mark each lazy repeat of one character whose next item is a literal character: the
    ``regex`` module's partial search then reports a partial match where the character after the
    repeat is the text's last one and the literal is not there, whether or not the repeat could
    take that character (``a[^:\\s]+?:`` is partial on ``"ab\\n"``); the matcher does the same
    (runtime/js/respc.mjs ``RxRun.run``). ``follower``: the item after ``node`` (None: none)."""
    kind = node[0]
    if kind == "s":
        items = node[1]
        for k, item in enumerate(items):
            _mark_lazy_tails(item, items[k + 1] if k + 1 < len(items) else follower)
    elif kind == "g":
        _mark_lazy_tails(node[2], follower)
    elif kind in (">", "=", "!"):
        _mark_lazy_tails(node[1], follower if kind == ">" else None)
    elif kind == "|":
        for alt in node[1]:
            _mark_lazy_tails(alt, follower)
    elif kind == "r":
        _mark_lazy_tails(node[4], None)
        while follower is not None and follower[0] == "g":
            follower = follower[2]
        while follower is not None and follower[0] == "s" and follower[1]:
            follower = follower[1][0]
        if not node[3] and node[4][0] == "c" and follower is not None and follower[0] == "l":
            node.append(True)


def _first_ranges(node) -> list | None:
    """The code points a match of ``node`` can start with, as sorted ranges, or None when it may
    start with nothing (it can match the empty string, or starts with an assertion): the matcher
    then tries every start."""
    def first(n) -> tuple[list, bool] | None:
        """(ranges, can be empty) or None (unknown)."""
        kind = n[0]
        if kind == "c":
            return list(n[1]), False
        if kind == "l":
            return [[ord(n[1][0]), ord(n[1][0])]], False
        if kind == "g":
            return first(n[2])
        if kind == ">":
            return first(n[1])
        if kind == "r":
            got = first(n[4])
            return None if got is None else (got[0], got[1] or n[1] == 0)
        if kind == "|":
            out, empty = [], False
            for alt in n[1]:
                got = first(alt)
                if got is None:
                    return None
                out += got[0]
                empty = empty or got[1]
            return out, empty
        if kind == "s":
            out = []
            for item in n[1]:
                got = first(item)
                if got is None:
                    return None
                out += got[0]
                if not got[1]:
                    return out, False
            return out, True
        return None

    got = first(node)
    if got is None or got[1]:
        return None
    merged: list = []
    for a, b in sorted(got[0]):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


def _lone_surrogate_key(template: Template) -> str | None:
    """The key of the first delimiter (a literal, or a literal item of a regex open) holding a lone surrogate (U+D800 to U+DFFF), or None.

    A JavaScript string is UTF-16: the runtime would find such a literal inside a character written
    as a surrogate pair (``"\\ud83d"`` in ``"\\U0001F600"``), where Python, whose strings are code
    points, finds nothing (docs/javascript.md, "What is refused")."""
    def bad(literals) -> bool:
        return any(0xD800 <= ord(c) <= 0xDFFF for lit in literals or () for c in lit)

    def bad_delim(delim) -> bool:
        if delim.literals is not None:
            return bad(delim.literals)
        # a regex open the runtime walks (_sequence): its literal items are searched as UTF-16 text
        items = _sequence(delim.pattern)
        return isinstance(items, list) and bad(item[1] for item in items if item[0] == "l")

    if bad(template.start_anchor.literals):
        return template.start_anchor.key
    for f in template.fields:
        for delim in (f.open, f.close):
            if delim is not None and bad_delim(delim):
                return f"fields.{f.name}.{delim.key}"
    return None


def _unsafe_number(value) -> bool:
    """Whether a JSON value holds an integer a JavaScript number cannot hold exactly."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) > 2**53 - 1
    if isinstance(value, dict):
        return any(_unsafe_number(v) for v in value.values())
    if isinstance(value, list):
        return any(_unsafe_number(v) for v in value)
    return False


def _transform(node, v2: bool, strict: bool = False):
    """A transform as the runtime reads it (runtime/js/respc.mjs ``build``; runtime/transforms.py
    ``_compile``): placeholders are found here, with the Python runtime's own patterns
    (``PLACEHOLDER``, v2 ``PLACEHOLDER_V2``), so the runtime needs no regex: ``["$", root, [key,
    ...], strict]`` a placeholder (``strict``: inside a v2 ``$first`` alternative, where None
    fails too), ``["?", [node, ...]]`` a v2 ``{"$first": [...]}``, ``["{", [[key, node], ...]]``
    an object (keys in order), ``["[", [node, ...]]`` a list, ``["=", value]`` a literal."""
    if isinstance(node, dict):
        if v2 and FIRST in node:
            return ["?", [_transform(v, v2, True) for v in node[FIRST]]]
        return ["{", [[k, _transform(v, v2, strict)] for k, v in node.items()]]
    if isinstance(node, list):
        return ["[", [_transform(v, v2, strict) for v in node]]
    if isinstance(node, str):
        m = (PLACEHOLDER_V2 if v2 else PLACEHOLDER).fullmatch(node)
        if m is not None:
            root, *keys = m.group(1).split(".")
            return ["$", root, keys, strict]
    return ["=", node]


def _integral_float(value) -> bool:
    """Whether a JSON value holds a float with an integral value (``1.0``), which JavaScript reads as ``1``."""
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, dict):
        return any(_integral_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_integral_float(v) for v in value)
    return False


def _accept(field) -> str:
    """The characters a json body may start with (runtime/formats/json_.py ``json_boundary``)."""
    accept = field.content_args.get("accept", JSON_ACCEPT_DEFAULT)
    return accept if isinstance(accept, str) else JSON_ACCEPT_DEFAULT


def _args_plan(plan) -> dict | None:
    """How a tool field's arguments stream to the JavaScript delta adapter (docs/javascript.md,
    "OpenAI deltas"; docs/openai.md "Which formats stream arguments as they are written"): the json
    format's argument reader plan (``runtime/formats/json_.py`` ``stream``) as data,
    ``{"call": "object", "name_key", "arg_keys", "convert"}`` (``convert``: ``"name-keyed"`` or
    None) or ``{"call": "args", "name_group"}``; None: the arguments go out at the close (the
    other argument modes belong to formats the target refuses)."""
    if plan.format != "json" or plan.arguments not in ("json", "name-keyed"):
        return None
    if plan.arguments == "name-keyed":
        return {"call": "object", "name_key": "name", "arg_keys": ["arguments"], "convert": "name-keyed"}
    if plan.call == "object":
        return {"call": "object", "name_key": plan.name_key, "arg_keys": list(plan.arg_keys), "convert": None}
    return {"call": "args", "name_group": plan.name_group}


def _leads(pattern: str) -> tuple | None:
    """Literals every match of ``pattern`` starts with (compiler/automaton.py ``classify_pattern``),
    or None: the fast path looks for them in a chunk (runtime/js/respc.mjs ``plainChunk``)."""
    from .automaton import classify_pattern

    return classify_pattern(pattern).leads or None


def _rx(pattern: str) -> dict:
    """A regex open the backtracking matcher runs (:func:`_program`), as ``rxSearch`` reads it: the
    pattern's tree, groups and first characters, its leads (its probe is built by the runtime from
    the tree: runtime/js/respc.mjs ``makeParser``), and ``edgeFull``: whether
    a complete match at the buffer's edge asks the probe over the whole buffer (runtime/scanners.py
    ``state_scanner``: a pattern searched by its leads or barrier) rather than up to the match."""
    from .automaton import barrier_plan, classify_pattern, late_pattern

    program = _program(pattern)
    leads = _leads(pattern)
    # the Python scanner's helper (factor None, no prefilter, not anchored, leads or a barrier)
    # (compiler/automaton.py plan_scans: a factor, a prefilter when the pattern has a lead)
    facts = classify_pattern(pattern)
    prefilter = bool(facts.lead) and not facts.probe_always
    factor = facts.factor is not None and facts.probe is not None and not facts.probe_always
    edge_full = (not factor and not prefilter and late_pattern(pattern) is None
                 and (leads is not None or barrier_plan(pattern) is not None))
    return {"tree": program["tree"], "ngroups": program["ngroups"], "groups": program["groups"],
            "first": program["first"], "never": False,
            "leads": list(leads) if leads is not None else None, "edgeFull": edge_full}


def _watch(w, patterns: list) -> dict:
    """One watch of a state as the runtime reads it: literals, a sequence (``regex``, its lead
    literal) or a regex the matcher runs (``rx``: its index in ``patterns``, the table's list of
    :func:`_rx` entries, each written once)."""
    if w.delimiter.literals is not None:
        return {"literals": list(w.delimiter.literals), "rank": w.rank}
    items = _sequence(w.delimiter.pattern)
    if isinstance(items, list):
        return {"literals": [], "rank": w.rank, "regex": items, "lead": items[0][1]}
    return {"literals": [], "rank": w.rank, "rx": _pattern_index(w.delimiter.pattern, patterns)}


def _pattern_index(pattern: str, patterns: list) -> int:
    """The index of ``pattern``'s :func:`_rx` entry in ``patterns`` (appended when new)."""
    entry = _rx(pattern)
    if entry not in patterns:
        patterns.append(entry)
    return patterns.index(entry)


def _table(template: Template, automaton: Automaton) -> dict:
    """The JSON table ``makeParser`` reads (runtime/js/respc.mjs)."""
    v2 = template.version == 2
    plans = [plan_of(f) for f in template.fields]
    fields = [{
        "name": f.name,
        "slot": f.slot if f.slot is not None else f.name,
        "join": f.join,
        "repeats": f.repeats,
        "strip": bool(f.content_args.get("strip", True)),
        "content": f.content,
        # the dirty flag of its region_chunk events (the format's plan, as compiler/emit.py writes it)
        "dirty": bool(plan.dirty),
        "transform": None if f.transform is None else _transform(f.transform, v2),
        "each": bool(f.transform_each),
        # D4/D5: the named groups of its open pattern (None in the scope until one matches)
        "groups": list(f.group_names),
        # v2 (compiler/emit.py _region_keywords): typed only the tool-call role's regions; a json
        # opener whose body does not start a value is given back (reject, the accept characters,
        # later fields with the same opener); an empty body is None; lists of calls extend the slot
        "typed": not (v2 and f.role != "tool_calls"),
        "reject": bool(v2 and f.reject and plan.can_reject),
        "accept": _accept(f),
        "alternatives": [k for k in range(index + 1, len(template.fields)) if template.fields[k].open == f.open]
        if v2 and f.reject and plan.can_reject else [],
        "empty_none": bool(v2 and plan.empty_none),
        # v2 end: "value": the json value's end closes the region (compiler/emit.py: ends=True)
        "ends": f.end == "value",
        "extend": bool(v2 and plan.empty_none and f.repeats and f.transform_each),
        # the OpenAI delta adapter (ChatCompletionStream, docs/javascript.md "OpenAI deltas"): how the
        # body streams, the format's plan as runtime/formats/base.py Plan states it
        "text_plan": plan.text,
        "args_plan": _args_plan(plan),
    } for index, (f, plan) in enumerate(zip(template.fields, plans))]
    states = []
    patterns: list = []  # the regex openers the matcher runs (_rx), each once
    for s in automaton.states:
        watches = sorted(s.watches, key=lambda w: w.rank)
        states.append({
            # a regex open (a sequence, see _sequence): its items and its lead literal, no literals
            "watches": [_watch(w, patterns) for w in watches],
            # actions as runtime/stream.py numbers them: OPEN 0, CLOSE 2, DEFER 4 (v2 end-if-unclosed)
            "edges": [[{"open": 0, "close": 2, "defer": 4}[w.action], w.field, w.target] for w in watches],
        })
    # errors="recover": (closer, its field's openers, field) per literal close of three characters
    # or more of a field with an opener (compiler/emit.py, STRAY_CLOSERS)
    stray = []
    for index, f in enumerate(template.fields):
        if f.open is None or f.close is None:
            continue
        for closer in f.close.literals:
            if len(closer.strip()) >= 3:
                # the opener's literals, or its sequence (a regex open): found before the closer
                stray.append([closer, list(f.open.literals) if f.open.literals is not None else
                              {"regex": _sequence(f.open.pattern)} if isinstance(_sequence(f.open.pattern), list)
                              else {"rx": _pattern_index(f.open.pattern, patterns)}, index])
    # Python's repr of every template string a diagnostic or error message quotes (delimiters, message
    # keys): the runtime's own repr follows its Unicode version's printable characters, which differ
    # from the Python that runs the Python parser (docs/javascript.md, "The API")
    quoted = {lit for s in states for w in s["watches"] for lit in w["literals"]}
    quoted.update(f["slot"] for f in fields)
    quoted.update(f["name"] for f in fields)
    quoted.update(lit for c, openers, _ in stray
                  for lit in [c, *(openers if isinstance(openers, list) else ())])
    return {
        "abi": JS_RUNTIME_ABI,
        "v2": template.version == 2,
        "source": template.source,
        "sha256": template.sha256,
        "defaults": template.defaults,
        "required": [f.slot or f.name for f in template.fields if not f.optional],
        "outside": template.implicit,
        "anchors": list(template.start_anchor.literals),
        "fields": fields,
        "states": states,
        "stray": stray,
        "patterns": patterns,
        "reprs": sorted([text, repr(text)] for text in quoted),
    }


#: Printable ASCII an HTML page reads as markup inside an inline ``<script>`` (``</script>``,
#: ``<!--``, ``-->``): written as escapes in string literals and comments alike.
_HTML = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


def _comment(text: str) -> str:
    """Text safe on one ``//`` comment line: printable ASCII but ``<``, ``>``, ``&`` and the
    backslash, anything else a ``\\u`` escape (docs/security.md, "JavaScript target");
    :func:`comment_text` reads it back."""
    return "".join(_HTML[c] if c in _HTML else "\\u005c" if c == "\\" else c if " " <= c <= "~"
                   else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}" for c in text)


_COMMENT_ESCAPE = re.compile(r"\\u([0-9a-f]{4})|\\U([0-9a-f]{8})")


def comment_text(line: str) -> str:
    """The text a banner comment line was written from (the inverse of :func:`_comment`): what
    ``compile --target js --check`` takes the checked module's template label and command from."""
    return _COMMENT_ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), line)


def _js_string(text: str) -> str:
    """A JavaScript string literal of ``text`` that means the same under every reading of the file:
    ASCII (``json.dumps`` escapes the rest), and ``<``, ``>``, ``&`` as ``\\u`` escapes, so a page
    that inlines the module in ``<script>`` sees no ``</script>`` or ``<!--`` in it."""
    return "".join(_HTML.get(c, c) for c in json.dumps(text, ensure_ascii=True))


def emit_js_module(template: Template, automaton: Automaton, *, command: str) -> str:
    """The ES module source of ``template``'s streaming parser (docs/javascript.md, "The API").

    Args:
        template: the validated IR; automaton: its region automaton (compiler/automaton.py).
        command: the regenerate command stamped in the banner.

    Returns:
        str: ASCII module text; the same template and compiler give the same bytes.

    Raises:
        JsTargetError: the template uses something the JavaScript runtime does not support yet.
    """
    problem = js_support_problem(template, automaton)
    if problem is not None:
        raise JsTargetError(problem)
    # the table's JSON text, one line per value (readable diffs), each line one string literal
    lines = json.dumps(_table(template, automaton), ensure_ascii=True, indent=1).split("\n")
    table = "".join(f"  {_js_string(line)},\n" for line in lines)
    return (
        "// @generated by respc -- do not edit.\n"
        f"// template: {_comment(template.source)}\n"
        f"// template sha256: {template.sha256}\n"
        f"// regenerate: {_comment(command)}\n"
        f"// respc js codegen {JS_CODEGEN_VERSION}\n"
        "// Streaming response parser (docs/javascript.md): new ResponseParser(prefix, {tools, errors}),\n"
        "// parser.initialEvents, parser.feed(text) -> events, parser.finalize() -> {message, events},\n"
        "// parseResponse(text, {prefix, tools, errors}) -> message.\n"
        f"import {{ makeParser, parseWith }} from {json.dumps(JS_RUNTIME_IMPORT)};\n"
        "\n"
        "// the template as data: JSON text read by JSON.parse (a key such as __proto__ is a plain key)\n"
        f"export const TABLE = JSON.parse([\n{table}].join(\"\\n\"));\n"
        "\n"
        "export const ResponseParser = makeParser(TABLE);\n"
        "\n"
        "export function parseResponse(text, options = {}) {\n"
        "  return parseWith(ResponseParser, text, options);\n"
        "}\n"
    )
