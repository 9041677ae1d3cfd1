"""Helpers shared by the test modules: where ../shared is, vector loading, chunkings, the outcomes a shortcut
and its general path are compared by, random damage of the catalogue cases, timings, the families' test files
and a qwen3-like chat template. (Helpers of one subject shared by a few modules are in ``support_*.py``.)"""

from __future__ import annotations

import functools
import gc
import importlib
import json
import os
import random
import sys
import time
import types
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The shared test data (SPEC, conformance vectors, corpus) lives beside the checkout as ../shared;
# RESPC_SHARED names another folder (a missing one shows what runs without it).
SHARED = Path(os.environ["RESPC_SHARED"]) if os.environ.get("RESPC_SHARED") else REPO.parent / "shared"
CONFORMANCE = SHARED / "conformance" / "hf.jsonl"
CORPUS = SHARED / "corpus" / "vectors.jsonl"
CHAT_TEMPLATES = SHARED / "corpus" / "chat_templates"
# Real chat templates of families added after the shared corpus was made, kept in this repository
# (sources in its SOURCES.md); the tests read them beside the shared ones.
OWN_CHAT_TEMPLATES = REPO / "tests" / "cases" / "chat_templates"

#: the catalogue's test cases, one JSON file per family (``{"cases": [...]}``)
FAMILY_DIR = REPO / "tests" / "cases" / "families"

_WHAT = {CONFORMANCE: "the shared conformance vectors", CORPUS: "the shared corpus vectors",
         CHAT_TEMPLATES: "the shared chat templates"}


def missing(path: Path) -> str:
    """The skip reason for a test that needs ``path`` from ../shared, saying what is missing."""
    shown = f"../{path.relative_to(REPO.parent).as_posix()}" if path.is_relative_to(REPO.parent) else str(path)
    what = _WHAT.get(path, "shared test data")
    if os.environ.get("RESPC_SHARED"):
        return f"{shown} not found: {what} are not in the folder RESPC_SHARED names"
    return f"{shown} not found: {what} are not beside this checkout (or set RESPC_SHARED to their folder)"


def params(values: Iterable, needs: Path, id_of: Callable[[object], str] | None = None) -> list:
    """``pytest.mark.parametrize`` values that skip with :func:`missing` when there are none.

    Without this an empty list shows as "got empty parameter set", which does not say that a
    file of ../shared is absent. ``id_of`` gives each value's test id.
    """
    values = list(values)
    if not values:
        return [pytest.param(None, id="missing", marks=pytest.mark.skip(reason=missing(needs)))]
    return [pytest.param(v, id=id_of(v)) if id_of else v for v in values]


#: peer vector id -> why it is expected to fail (``tests/cases/peer_xfail.json``)
PEER_XFAIL: dict[str, dict] = json.loads((REPO / "tests" / "cases" / "peer_xfail.json").read_text(encoding="utf-8"))
#: the known failures of peer_vectors2.jsonl (tests/test_peer_vectors2.py), by vector id
PEER2_XFAIL: dict[str, dict] = json.loads((REPO / "tests" / "cases" / "peer2_xfail.json").read_text(encoding="utf-8"))
#: conformance vector id -> ``{"deviation": "D7" | "D8", "error": text}``: vectors whose expected
#: message is the transformers reference's reading of a body respc refuses (docs/template-language.md,
#: D7 and D8); in strict mode they raise ContentParseError with that text (``tests/cases/conformance_deviations.json``)
CONFORMANCE_DEVIATIONS: dict[str, dict] = json.loads(
    (REPO / "tests" / "cases" / "conformance_deviations.json").read_text(encoding="utf-8"))
#: peer vector id -> the prompt a family file gives it (``"peer_prefix"`` in ``tests/cases/families/*.json``)
PEER_PREFIX: dict[str, str] = {
    vid: prefix
    for p in sorted((REPO / "tests" / "cases" / "families").glob("*.json"))
    for vid, prefix in json.loads(p.read_text(encoding="utf-8")).get("peer_prefix", {}).items()
}
#: the catalogue's template names (``templates/*.json``)
CATALOGUE_TEMPLATES = {p.stem for p in (REPO / "templates").glob("*.json")}
#: the same, sorted (what a test parametrized over the catalogue iterates)
CATALOGUE_NAMES = sorted(CATALOGUE_TEMPLATES)


def load_jsonl(path: Path) -> list[dict]:
    """Read one JSON object per non-empty line; [] when the file is absent."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def chunkings(text: str, seed: str) -> dict[str, list[str]]:
    """The chunkings every vector is fed in: whole, one character at a time, random pieces of 1 to 7
    characters (:func:`random_pieces`, drawn from ``seed``)."""
    return {"whole": [text], "chars": list(text), "random": random_pieces(text, random.Random(seed), 7)}


def fixed_chunkings(text: str) -> dict[str, list[str]]:
    """Three fixed chunkings of ``text``: whole, one character at a time, and three characters at a time."""
    return {"whole": [text], "ones": list(text), "threes": [text[i:i + 3] for i in range(0, len(text), 3)]}


def run_stream(module, prefix, chunks, tools=None, errors="strict"):
    """Feed ``chunks`` to a fresh parser; return (message, all events incl. initial and final)."""
    parser = module.ResponseParser(prefix, tools, errors=errors)
    events = list(parser.initial_events)
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    message, final = parser.finalize()
    return message, events + final


def outcome(module, prefix, chunks, tools=None) -> tuple:
    """What a fresh parser makes of ``chunks``: ``(message, all events)``, or ``("error", type
    name, message, events so far)`` when feeding or finalizing raises (two paths compared must
    raise the same error after the same events)."""
    parser = module.ResponseParser(prefix, tools)
    events = list(parser.initial_events)
    try:
        for chunk in chunks:
            events.extend(parser.feed(chunk))
        message, final = parser.finalize()
    except Exception as exc:  # noqa: BLE001 - the same error must come from both paths
        return ("error", type(exc).__name__, str(exc), events)
    return (message, events + final)


def exec_module(source: str, name: str) -> types.ModuleType:
    """A generated module's ``source`` run as a fresh module called ``name`` (not kept in
    ``sys.modules``): a variant compiled with some analysis switched off, compared with the real one."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        exec(compile(source, name, "exec"), module.__dict__)  # noqa: S102 - our generated code
    finally:
        del sys.modules[name]
    return module


def merged_events(events: list[dict]) -> list[dict]:
    """Events with consecutive chunks of one region merged: the chunking-independent view (D2)."""
    out: list[dict] = []
    for event in events:
        if (event["type"] == "region_chunk" and out and out[-1]["type"] == "region_chunk"
                and out[-1]["field"] == event["field"]):
            out[-1] = {**out[-1], "text": out[-1]["text"] + event["text"]}
        else:
            out.append(dict(event))
    return out


def chat_templates() -> dict[str, Path]:
    """``{family: path}`` of every real chat template the tests know: the shared corpus's
    (``../shared/corpus/chat_templates/<family>.jinja``, when present) and this repository's own
    (``tests/cases/chat_templates/<family>.jinja``); a family in both takes the shared file."""
    found = {p.stem: p for p in sorted(OWN_CHAT_TEMPLATES.glob("*.jinja"))}
    if CHAT_TEMPLATES.is_dir():
        found.update({p.stem: p for p in sorted(CHAT_TEMPLATES.glob("*.jinja"))})
    return dict(sorted(found.items()))


def run_checked(module, prefix, text, how, errors="recover", **options):
    """``(message, events, diagnostics)`` of ``text`` fed to a fresh parser in chunking ``how``
    (:func:`chunkings`); for ``"whole"`` the whole-text path of ``parse_response``
    (``runtime.whole.finish``) must give the same message and diagnostics."""
    from respc.runtime import whole

    if how == "whole":
        single = module.ResponseParser(prefix, errors=errors, **options)
        expected = (whole.finish(single, text), single.diagnostics)
    parser = module.ResponseParser(prefix, errors=errors, **options)
    events = list(parser.initial_events)
    for chunk in chunkings(text, text)[how]:
        events += parser.feed(chunk)
    message, final = parser.finalize()
    if how == "whole":
        assert (message, parser.diagnostics) == expected
    return message, events + final, parser.diagnostics


def peer_message(vector: dict, how: str, errors: str) -> dict:
    """The message a peer vector's output parses to: ``how`` is ``"own"`` (the vector's own chunks,
    checked to add up to its text) or a :func:`chunkings` key; the prompt is the family file's
    ``peer_prefix`` for it where one is given (:data:`PEER_PREFIX`), else the vector's."""
    if how == "own":
        chunks = vector["chunks"]
        assert "".join(chunks) == vector["text"], "the vector's own chunks do not add up to its text"
    else:
        chunks = chunkings(vector["text"], vector["id"])[how]
    prefix = PEER_PREFIX.get(vector["id"], vector["prefix"])
    module = importlib.import_module(f"respc.generated.{vector['family']}")
    message, _ = run_stream(module, prefix, chunks, vector.get("tools"), errors)
    return message


def peer_params(vectors: Iterable[dict], xfail: dict[str, dict], reason: Callable[[dict], str]) -> list:
    """``pytest.param(vector, how)`` for every peer vector and every way it is fed (``"whole"``, ``"chars"``,
    ``"random"`` of :func:`chunkings`, and ``"own"`` when it has its own ``chunks``; :func:`peer_message`),
    with the id ``<vector id>-<how>``; a vector listed in ``xfail`` is a strict xfail whose reason is
    ``reason(entry)``, so a fix shows as XPASS and its entry must go."""
    params = []
    for vector in vectors:
        hows = ["whole", "chars", "random"] + (["own"] if "chunks" in vector else [])
        entry = xfail.get(vector["id"])
        marks = [pytest.mark.xfail(strict=True, reason=reason(entry))] if entry else []
        for how in hows:
            params.append(pytest.param(vector, how, marks=marks, id=f"{vector['id']}-{how}"))
    return params


def generated(name: str) -> types.ModuleType:
    """The checked-in generated module of catalogue template ``name`` (``respc.generated.<name>``)."""
    return importlib.import_module(f"respc.generated.{name}")


_COMPILED: dict[str, types.ModuleType] = {}


def compiled(name: str) -> types.ModuleType:
    """Catalogue template ``name`` compiled by ``respc.compile_template`` (once per session)."""
    if name not in _COMPILED:
        import respc

        _COMPILED[name] = respc.compile_template(REPO / "templates" / f"{name}.json")
    return _COMPILED[name]


def family_cases(name: str) -> list[dict]:
    """The test cases of family ``name`` (``tests/cases/families/<name>.json``); [] without a file."""
    path = FAMILY_DIR / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8"))["cases"] if path.is_file() else []


#: every family's test file (``tests/cases/families/<family>.json``: ``cases``, ``corpus_xfail``), by family
FAMILIES = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(FAMILY_DIR.glob("*.json"))}


def random_pieces(text: str, rng: random.Random, longest: int) -> list[str]:
    """``text`` cut into pieces of 1 to ``longest`` characters drawn from ``rng``."""
    pieces, i = [], 0
    while i < len(text):
        step = rng.randint(1, longest)
        pieces.append(text[i:i + step])
        i += step
    return pieces


def random_cuts(text: str, rng: random.Random, count: int) -> list[str]:
    """``text`` cut at ``count`` distinct offsets drawn from ``rng`` (none at either end): ``count + 1``
    non-empty pieces. ``count`` must be at most ``len(text) - 1``."""
    cuts = sorted(rng.sample(range(1, len(text)), count))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


#: the piece lengths :func:`oracle_pieces` draws from (``0`` stands for the rest of the text)
_ORACLE_STEPS = (1, 1, 2, 3, 4, 4, 5, 8, 17, 0)


def oracle_pieces(rng: random.Random, body: str) -> list[str]:
    """``body`` cut into pieces drawn from ``rng`` that are mostly short (1 to 5 characters), sometimes 8
    or 17, sometimes the whole rest: how the argument readers' tests feed a reader and its oracle
    (tests/test_formats_json.py, test_formats_pythonic.py, test_formats_xml_inline.py)."""
    pieces, i = [], 0
    while i < len(body):
        step = rng.choice(_ORACLE_STEPS) or len(body)
        pieces.append(body[i:i + step])
        i += step
    return pieces


def feed_outcome(parser_class, prefix, chunks, tools=None, errors="strict", **options) -> tuple:
    """Everything one streamed run of a fresh ``parser_class(prefix, tools, errors=errors, **options)`` shows,
    for comparing a shortcut with the general path: ``(message, events, diagnostics, ledger)`` where
    ``events`` has one list per call (the initial events, each ``feed``'s, ``finalize``'s), so which call
    returned an event counts too; or ``("error", type name, text, events so far)`` when feeding or
    finalizing raises ValueError, KeyError or TypeError (:data:`WHOLE_ERRORS`)."""
    parser = parser_class(prefix, tools, errors=errors, **options)
    events = [parser.initial_events]
    try:
        for chunk in chunks:
            events.append(parser.feed(chunk))
        message, final = parser.finalize()
    except WHOLE_ERRORS as exc:
        return ("error", type(exc).__name__, str(exc), events)
    return message, events + [final], parser.diagnostics, parser.ledger


def flat_outcome(module, prefix: str, chunks: list[str], errors: str) -> dict:
    """One streamed run of ``module.ResponseParser(prefix, None, errors=errors)`` in the shape the
    JavaScript parity harness (tests/js_parity.mjs) prints, so the two compare with ``==``:
    ``{"message", "events", "diagnostics"}`` with the events in one flat list, or ``{"error":
    [type name, text], "events", "diagnostics"}`` when building, feeding or finalizing raises
    (both sides must raise the same error)."""
    events: list = []
    parser = None
    try:
        parser = module.ResponseParser(prefix, None, errors=errors)
        events.extend(parser.initial_events)
        for chunk in chunks:
            events.extend(parser.feed(chunk))
        message, last = parser.finalize()
        events.extend(last)
        return {"message": message, "events": events, "diagnostics": parser.diagnostics}
    except Exception as exc:  # noqa: BLE001 - both sides must raise the same error
        return {"error": [type(exc).__name__, str(exc)], "events": events,
                "diagnostics": parser.diagnostics if parser is not None else []}


def best_time(run: Callable[[], object], repeats: int = 3) -> float:
    """The shortest of ``repeats`` CPU timings (seconds, ``time.process_time``: what other processes
    on a loaded machine take does not count) of ``run()``, each with the garbage collector off (its
    passes grow with the live objects, not with the work measured). The tests compare such times
    at two sizes as a ratio, never with a bound in seconds."""
    best = float("inf")
    enabled = gc.isenabled()
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            run()
            best = min(best, time.process_time() - start)
        finally:
            if enabled:
                gc.enable()
    return best


def doubling_times(small: Callable[[], object], large: Callable[[], object], ratio: float = 2.5,
                   repeats: int = 3, retries: int = 3) -> tuple[float, float]:
    """``(best_time(small), best_time(large))``, where ``large`` does twice the work of ``small``;
    while the second is over ``ratio`` times the first, both are measured again (up to ``retries``
    times, keeping the least of each): noise only adds time, so a parse that really grows faster
    than its input stays over the ratio (docs/security.md, "Model output: time and memory")."""
    a, b = best_time(small, repeats), best_time(large, repeats)
    for _ in range(retries):
        if b <= ratio * a:
            break
        a, b = min(a, best_time(small, repeats)), min(b, best_time(large, repeats))
    return a, b


def tool_call(name: str, arguments) -> dict:
    """An OpenAI-style tool call of function ``name`` with ``arguments`` (a mapping, or text)."""
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def delimiter_pieces(name: str) -> list[str]:
    """Texts random inputs are spliced from: every literal delimiter and its halves, the literal
    parts of regex ones, slices of the catalogue cases, and characters that start or continue
    values (quotes, brackets, whitespace), and the cases whole."""
    doc = json.loads((REPO / "templates" / f"{name}.json").read_text(encoding="utf-8"))
    out = [" ", "\n", "  ", "<", "|", "[", "]", "{", "}", '"', ",", ":", "x", "ab c", '{"name": "f"', "}", "\\"]
    for spec in doc["fields"].values():
        for key in ("open", "close"):
            value = spec.get(key)
            for literal in ([value] if isinstance(value, str) else value or []):
                out.extend((literal, literal[: len(literal) // 2], literal[len(literal) // 2:]))
        for key in ("open_pattern", "close_pattern"):
            pattern = spec.get(key)
            if isinstance(pattern, str):
                out.extend(part for part in pattern.replace("\\", "").split("(") if part)
    for case in family_cases(name):
        text = case["text"]
        out.append(text)
        out.extend(text[k:k + 13] for k in range(0, len(text), 5))
    return out


#: the errors a parse may raise that the whole-text tests compare (type, text, field, offsets)
WHOLE_ERRORS = (ValueError, KeyError, TypeError)


def whole_outcome(parser_class, prefix, text, tools, errors, single: bool):
    """(message or error description, diagnostics) of one path: ``whole.finish`` (``single``) or
    feed and finalize."""
    from respc.runtime import whole

    parser = parser_class(prefix, tools, errors=errors)
    try:
        if single:
            message = whole.finish(parser, text)
        else:
            parser.feed(text)
            message = parser.finalize()[0]
    except WHOLE_ERRORS as exc:
        message = ("error", type(exc).__name__, str(exc), getattr(exc, "field", None),
                   getattr(exc, "start", None), getattr(exc, "end", None), getattr(exc, "partial_message", None))
    return message, parser.diagnostics


def same_whole_and_stream(parser_class, prefix, text, tools=None):
    """Both paths agree in both modes; returns the strict outcome."""
    outcomes = []
    for errors in ("strict", "recover"):
        streamed = whole_outcome(parser_class, prefix, text, tools, errors, False)
        single = whole_outcome(parser_class, prefix, text, tools, errors, True)
        assert single == streamed, (errors, text[:200])
        outcomes.append(streamed)
    return outcomes[0]


@functools.cache
def catalogue_parser(name: str):
    """The ``ResponseParser`` of the checked-in generated module of catalogue template ``name``."""
    return importlib.import_module(f"respc.generated.{name}").ResponseParser

#: characters the random damage of :func:`damage_ops` inserts: those delimiters and JSON are made of, and arbitrary ones
DAMAGE_NOISE = "<>/|{}[]\"':,=\n\t _abc<|>\\xé😀\x00"


def _delimiter_patterns(template: dict) -> list:
    """Every ``open``/``close`` literal and ``open_pattern``/``close_pattern`` regex of ``template``'s
    fields, compiled with the ``regex`` module (a pattern it cannot compile is left out)."""
    import regex

    out = []
    for field in template["fields"].values():
        for key in ("open", "close"):
            value = field.get(key)
            for literal in ([value] if isinstance(value, str) else value or []):
                if literal:
                    out.append(regex.compile(regex.escape(literal)))
        for key in ("open_pattern", "close_pattern"):
            value = field.get(key)
            for pattern in ([value] if isinstance(value, str) else value or []):
                try:
                    out.append(regex.compile(pattern, regex.DOTALL))
                except regex.error:
                    pass
    return out


@functools.cache
def damage_cases() -> list[tuple[str, str, str, list[tuple[int, int]]]]:
    """``(template name, prefix, output, delimiter spans)`` of every case of every catalogue template with
    a family file (:func:`family_cases`): the outputs :func:`damage` damages, with the sorted non-empty
    ``(start, end)`` spans where the template's delimiters match in them."""
    cases = []
    for name in CATALOGUE_NAMES:
        if not (FAMILY_DIR / f"{name}.json").is_file():
            continue
        delims = _delimiter_patterns(json.loads((REPO / "templates" / f"{name}.json").read_text(encoding="utf-8")))
        for case in family_cases(name):
            text = case["text"]
            spans = sorted({(m.start(), m.end()) for d in delims for m in d.finditer(text) if m.end() > m.start()})
            cases.append((name, case.get("prefix", ""), text, spans))
    return cases


@functools.cache
def damage_ops():
    """The hypothesis strategy of :func:`damage`'s ``ops``: one to three ``(op, a, b, noise)``, ``op`` one of
    truncate, delete, double, swap, insert, space, part-twice, stray."""
    from hypothesis import strategies as st

    return st.lists(st.tuples(st.sampled_from(["truncate", "delete", "double", "swap", "insert", "space", "part-twice",
                                               "stray"]),
                              st.integers(0, 10_000), st.integers(0, 10_000),
                              st.text(alphabet=DAMAGE_NOISE, min_size=1, max_size=6)), min_size=1, max_size=3)


def damage(text: str, spans: list[tuple[int, int]], ops: list[tuple[str, int, int, str]]) -> str:
    """``text`` after each of ``ops`` (:func:`damage_ops`) in turn: truncated, noise inserted, or a delimiter
    occurrence of ``spans`` (:func:`damage_cases`) deleted, doubled, swapped with another, a space put in
    it, a piece of it written twice, or its text written somewhere else (docs/events.md, recover mode)."""
    for op, a, b, noise in ops:
        if op == "truncate":
            text = text[:a % (len(text) + 1)]
        elif op == "insert":
            k = a % (len(text) + 1)
            text = text[:k] + noise + text[k:]
        elif spans:
            s, e = spans[a % len(spans)]
            if e > len(text):
                continue
            if op == "delete":
                text = text[:s] + text[e:]
            elif op == "double":
                text = text[:e] + text[s:e] + text[e:]
            elif op == "space":
                k = s + b % (e - s + 1)
                text = text[:k] + " " + text[k:]
            elif op == "part-twice":
                i, j = sorted((s + b % (e - s + 1), s + (b // 7) % (e - s + 1)))
                text = text[:j] + text[i:j] + text[j:]
            elif op == "stray":
                k = b % (len(text) + 1)
                text = text[:k] + text[s:e] + text[k:]
            elif op == "swap":
                s2, e2 = spans[b % len(spans)]
                if (s2, e2) != (s, e) and e2 <= len(text) and (e <= s2 or e2 <= s):
                    (s, e), (s2, e2) = sorted([(s, e), (s2, e2)])
                    text = text[:s] + text[s2:e2] + text[e:s2] + text[s:e] + text[e2:]
        spans = [(s, e) for s, e in spans if e <= len(text)]
    return text


#: a qwen3-like chat template (ChatML turns, <think> reasoning, <tool_call> JSON calls), written for
#: tests/test_detect.py and tests/test_lint_roundtrip.py
QWEN_LIKE = """{%- for m in messages %}<|im_start|>{{ m.role }}
{% if m.reasoning_content %}<think>
{{ m.reasoning_content }}
</think>

{% endif %}{% if m.content %}{{ m.content }}{% endif %}{% for c in m.tool_calls or [] %}<tool_call>
{{ {"name": c.function.name, "arguments": c.function.arguments} | tojson }}
</tool_call>{% endfor %}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and not enable_thinking %}<think>

</think>

{% endif %}{% endif %}"""
