"""``respc test TEMPLATE CASES``: check a template against your own outputs and expected messages.

A case is one model output with the message it must give::

    {"name": "two_calls", "prefix": "<|im_start|>assistant\\n", "text": "...",
     "tools": [...], "message": {"role": "assistant", "content": "...", ...}}

``CASES`` is a JSON Lines file of such objects (one per line; blank lines are skipped), or a JSON
file holding a list of them or an object with a ``"cases"`` list (the shape of the catalogue's own
``tests/cases/families/<family>.json``). Keys: ``text`` (required), ``message`` or
``expect.message`` (required: the shape of the corpus vectors), ``prefix`` (default ``""``),
``tools`` (default none), ``name`` or ``id`` (default ``line N`` / ``case N``), ``errors``
(``"strict"``, the default, or ``"recover"``), and ``diagnostics``: when given, the list of
diagnostic ``kind``s the parse must report, in order (an entry may also be ``[kind, start, end]``,
as the catalogue's own cases write them). ``source``, ``why`` and ``note`` are notes
for people, not read. Any other key is an error naming the file, the case and the key, with the
nearest known key when one is close (a misspelt ``"erros"`` is never dropped silently).

Every case is parsed the three ways the catalogue's own tests feed theirs (docs/writing-a-template.md,
"Feed it in pieces"): whole, one character at a time, and in random pieces of 1 to 7 characters
(seeded by the case's name, so a failure repeats). A case passes when all three give exactly the
expected message (and diagnostics).
"""

from __future__ import annotations

import difflib
import json
import random
import types
from dataclasses import dataclass, field
from typing import Any, Iterator

__all__ = ["Case", "CaseResult", "read_cases", "run_case", "chunkings", "CaseFileError"]


class CaseFileError(ValueError):
    """The cases file cannot be read as cases: the message names the file, the line or case, and the key."""


@dataclass
class Case:
    """One output and the message it must give.

    Attributes:
        name (str): what failures are reported under.
        text (str): the model output.
        message (dict): the expected message.
        prefix (str): the prompt's tail ("" reads the output from its start).
        tools (list | None): tool schemas, to type the arguments.
        errors (str): ``"strict"`` or ``"recover"``.
        diagnostics (list | None): the expected diagnostic kinds (or ``[kind, start, end]``), in order
            (None: not checked).
    """

    name: str
    text: str
    message: dict
    prefix: str = ""
    tools: list | None = None
    errors: str = "strict"
    diagnostics: list | None = None


@dataclass
class CaseResult:
    """What one case gave: ``failures`` maps a chunking (``whole``, ``chars``, ``random``) to a
    multi-line description of what differed (a unified diff of the messages, or the error)."""

    case: Case
    failures: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures


def chunkings(text: str, seed: str) -> dict[str, list[str]]:
    """The three ways a case is fed: ``whole``, ``chars`` (one character each) and ``random``
    (pieces of 1 to 7 characters, from a generator seeded with ``seed``)."""
    rng = random.Random(seed)
    pieces, i = [], 0
    while i < len(text):
        step = rng.randint(1, 7)
        pieces.append(text[i:i + step])
        i += step
    return {"whole": [text], "chars": list(text), "random": pieces}


#: The keys a case may have: those respc test reads, then notes it keeps for people (the catalogue's
#: own cases say where a sample comes from, ``source``, and why it is there, ``why`` / ``note``).
CASE_KEYS = ("text", "message", "expect", "prefix", "tools", "name", "id", "errors", "diagnostics",
             "source", "why", "note")
#: The keys of a case's ``expect`` object.
EXPECT_KEYS = ("message",)


def _unknown_keys(data: dict, known: tuple, where: str, source: str, inside: str = "") -> None:
    """Raise CaseFileError for the first key of ``data`` not in ``known``, naming the file, the case
    (``line N`` / ``case N``, and its name when it has one) and the key, and suggesting the nearest
    known key (difflib) when one is close: a misspelt ``"erros"`` is never dropped silently."""
    for key in data:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f" (did you mean '{inside}{close[0]}'?)" if close else ""
        raise CaseFileError(f"{source}: {where}: unknown key {inside + str(key)!r}{hint}; the known keys are "
                            f"{', '.join(inside + k for k in known)}")


def _case(data: Any, where: str, source: str) -> Case:
    if not isinstance(data, dict):
        raise CaseFileError(f"{source}: {where}: a case must be a JSON object, not {type(data).__name__}")
    label = data.get("name") or data.get("id")
    _unknown_keys(data, CASE_KEYS, f"{where} ({label})" if label else where, source)
    if isinstance(data.get("expect"), dict):
        _unknown_keys(data["expect"], EXPECT_KEYS, f"{where} ({label})" if label else where, source, "expect.")
    name = str(data.get("name") or data.get("id") or where)
    text = data.get("text")
    if not isinstance(text, str):
        raise CaseFileError(f"{source}: {name}: key 'text' (the model output) must be a string")
    message = data.get("message")
    if message is None and isinstance(data.get("expect"), dict):
        message = data["expect"].get("message")
    if not isinstance(message, dict):
        raise CaseFileError(f"{source}: {name}: key 'message' (or 'expect': {{'message': ...}}) must be the "
                            "expected message, a JSON object")
    prefix = data.get("prefix", "")
    if not isinstance(prefix, str):
        raise CaseFileError(f"{source}: {name}: key 'prefix' must be a string")
    tools = data.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise CaseFileError(f"{source}: {name}: key 'tools' must be a list of tools")
    errors = data.get("errors", "strict")
    if errors not in ("strict", "recover"):
        raise CaseFileError(f"{source}: {name}: key 'errors' must be 'strict' or 'recover', not {errors!r}")
    kinds = data.get("diagnostics")
    if kinds is not None and not (isinstance(kinds, list) and all(map(_is_expected_diagnostic, kinds))):
        raise CaseFileError(f"{source}: {name}: key 'diagnostics' must be a list of diagnostic kinds (strings) "
                            "or of [kind, start, end]")
    return Case(name, text, message, prefix, tools, errors, kinds)


def _is_expected_diagnostic(entry: Any) -> bool:
    """A ``diagnostics`` entry: a kind, or ``[kind, start, end]`` (the catalogue's own cases)."""
    if isinstance(entry, str):
        return True
    return (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
            and all(isinstance(n, int) and not isinstance(n, bool) for n in entry[1:]))


def read_cases(path: str, text: str) -> list[Case]:
    """Read the cases of a JSON Lines or JSON file (see the module docstring for the keys).

    Args:
        path: the file's name, for messages.
        text: its contents.

    Returns:
        list[Case]: in file order.

    Raises:
        CaseFileError: a line or the file is not JSON, or a case lacks ``text`` or ``message``, has
            a key of the wrong type or an unknown key (naming the file, the line or case and the key,
            docs/writing-a-template.md); no case at all.
    """
    stripped = text.strip()
    document: Any = None
    if stripped.startswith("["):
        document = json.loads(stripped) if _is_json(stripped) else None
    elif stripped.startswith("{") and "\n" in stripped and _is_json(stripped):
        document = json.loads(stripped)
    if isinstance(document, dict) and isinstance(document.get("cases"), list):
        document = document["cases"]
    if isinstance(document, list):
        cases = [_case(item, f"case {i}", path) for i, item in enumerate(document, 1)]
    else:
        cases = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CaseFileError(f"{path}: line {lineno} is not JSON: {exc.msg} at column {exc.colno}") from None
            cases.append(_case(data, f"line {lineno}", path))
    if not cases:
        raise CaseFileError(f"{path}: no cases (one JSON object per line with 'text' and 'message')")
    return cases


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _dump(value: Any) -> list[str]:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True).splitlines(keepends=True)


def _feed(module: types.ModuleType, case: Case, chunks: list[str]) -> tuple[Any, list]:
    parser = module.ResponseParser(case.prefix, case.tools, errors=case.errors)
    for chunk in chunks:
        parser.feed(chunk)
    message, _ = parser.finalize()
    return message, list(getattr(parser, "diagnostics", ()) or ())


def run_case(module: types.ModuleType, case: Case) -> CaseResult:
    """Parse one case whole, per character and in random pieces; describe each way it went wrong.

    Args:
        module: a generated parser module (``respc.compile_template(...)``).
        case: the case.

    Returns:
        CaseResult: empty ``failures`` when every chunking gave the expected message (and kinds).
    """
    result = CaseResult(case)
    for how, chunks in chunkings(case.text, case.name).items():
        try:
            message, diagnostics = _feed(module, case, chunks)
        except Exception as exc:  # noqa: BLE001 - any error of the parser is what the user must see
            result.failures[how] = f"raised {type(exc).__name__}: {exc}\n"
            continue
        problems = []
        if message != case.message:
            problems.append("".join(difflib.unified_diff(_dump(case.message), _dump(message), "expected message",
                                                         "parsed message")))
        # each got diagnostic in the form its expected entry takes: a kind, or [kind, start, end]
        kinds = [[d.get("kind"), d.get("start"), d.get("end")]
                 if i < len(case.diagnostics or ()) and isinstance(case.diagnostics[i], list) else d.get("kind")
                 for i, d in enumerate(diagnostics)]
        if case.diagnostics is not None and kinds != case.diagnostics:
            problems.append(f"diagnostics: expected {case.diagnostics}, got {kinds}\n")
        if problems:
            result.failures[how] = "".join(problems)
    return result


def run_cases(module: types.ModuleType, cases: list[Case]) -> Iterator[CaseResult]:
    """:func:`run_case` for each case, in order."""
    for case in cases:
        yield run_case(module, case)
