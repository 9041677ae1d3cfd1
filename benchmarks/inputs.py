"""Benchmark inputs: model outputs of a given size, written in each template family's own format.

An output is ``reasoning, answer, tool calls``, each piece derived from the template itself:

- **reasoning**: the reasoning field's first ``open`` literal (for an ``open_pattern``: what it
  matches in the family's first test case with reasoning), filler prose, its first ``close`` literal
  (skipped when the field has no literal close, or the template has no reasoning field);
- **answer**: filler prose (with ``<`` characters, so the partial-match path is exercised), routed to
  the implicit field;
- **tool calls**: when the tool-call field has literal ``open`` and ``close`` and a ``json`` body,
  ``open + {"name": "get_weather", "arguments": {"city": "Paris"}} + close`` (the body wrapped in a
  list for ``transform_each``). For regex delimiters (or non-JSON bodies) the first tool call found in
  ``tests/cases/families/<family>.json`` ``cases[*].text`` is used (from the ``open_pattern`` match to
  the end of the following close; a section-only call as its whole section; a call that ends with
  its value up to the final end-of-turn token, see :func:`_sample_tool_call`); with no such sample
  the tool calls are left out. With ``real_calls`` (the realistic set of ``whole_speed.py``) the
  family's sample comes first and the calls are written inside the section its sample opens and
  closes (:func:`_sample_wrap`), as the family's real output writes them; a family whose sample
  writes several calls in one region (one list, ``[a(), b()]``) gets that region once
  (``Pieces.tool_list``; its 2 or 3 calls) instead of three regions in a row.

Tool calls are written back to back (no text between them): a whitespace-only block of the implicit
field would be joined by the reference but not by respc (deviation D1,
docs/template-language.md "D1: empty never erases"), and these inputs must give
equal messages with both parsers (``tests/test_bench_smoke.py`` checks that).

Adversarial inputs (:func:`adversarial_inputs`) stress the hold logic: long runs of partial
delimiters, open patterns that stay pending, lazy patterns that never find their end.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import regex

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "templates"
FAMILIES = REPO / "tests" / "cases" / "families"

#: Filler prose: no delimiter watched where it is written, in any catalogue template (checked per
#: template by :func:`_check_filler`), but ``<`` in several positions (``a<b``, ``x < y``, at a chunk
#: edge) so literal partial matching is exercised on every template.
FILLER = (
    "Consider the case where a < b and b<c; then a<c holds too. The weather in Paris stays "
    "mild this week at about 21 degrees, with light wind <10 km/h and a chance of rain near 3 pm. "
)
TOOL_BODY = {"name": "get_weather", "arguments": {"city": "Paris"}}
N_TOOL_CALLS = 3
CHUNK = 4


@dataclass(frozen=True)
class Pieces:
    """The family's own building blocks, derived once per template.

    Attributes:
        reasoning (tuple[str, str] | None): open and close of the reasoning field (for an
            ``open_pattern``, the text it matches in the family's first reasoning case).
        tool_call (str | None): one complete tool call (delimiters included).
        tool_source (str): where ``tool_call`` came from ("literals", "sample", or why it is absent).
    """

    reasoning: tuple[str, str] | None
    tool_call: str | None
    tool_source: str
    #: (before, between, after): what the family's real sample writes around and between its
    #: calls (a section's open and close, its newlines), with ``real_calls`` (:func:`_sample_wrap`)
    tool_wrap: tuple[str, str, str] = ("", "", "")
    #: ``tool_call`` already holds several calls in one region (a family that writes its calls as
    #: one list, ``[a(), b()]``, ``<|tool_call|>[{...}, {...}]``): written once, whatever ``n``
    tool_list: bool = False

    def calls(self, n: int) -> str:
        """``n`` tool calls as the output writes them (``""`` for 0 or no tool call; a
        ``tool_list`` region once)."""
        if not n or not self.tool_call:
            return ""
        n = 1 if self.tool_list else n
        before, between, after = self.tool_wrap
        return before + between.join([self.tool_call] * n) + after


KB, MB = 1_000, 1_000_000


def size_arg(text: str) -> int:
    """An output size on a benchmark's command line: ``10k`` -> 10_000, ``1M`` -> 1_000_000,
    ``2500`` -> 2500 (characters).

    Raises:
        argparse.ArgumentTypeError: not such a size (argparse prints it as a usage error).
    """
    body = text.strip()
    scale = {"k": KB, "K": KB, "m": MB, "M": MB}.get(body[-1:], 1)
    try:
        size = int(float(body[:-1] if scale != 1 else body) * scale)
    except ValueError:
        size = 0
    if size <= 0:
        raise argparse.ArgumentTypeError(f"not an output size: {text!r} (e.g. 10k, 100k, 1M, 2500)")
    return size


def sizes_arg(text: str) -> list[int]:
    """A comma-separated list of :func:`size_arg` sizes (``10k,100k,1M``), in the order given."""
    return [size_arg(part) for part in text.split(",") if part.strip()]


def templates_arg(text: str) -> list[str]:
    """Comma-separated catalogue template names, in the order given.

    Raises:
        argparse.ArgumentTypeError: a name that is not in ``templates/`` (all of them are named).
    """
    wanted = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in set(catalogue())]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown template(s): {', '.join(unknown)} "
                                         f"(the catalogue is templates/*.json)")
    return wanted


def catalogue() -> list[str]:
    """Sorted names of the catalogue templates (``templates/*.json``)."""
    return sorted(p.stem for p in TEMPLATES.glob("*.json"))


def load(name: str) -> dict:
    """The template document of catalogue template ``name``."""
    return json.loads((TEMPLATES / f"{name}.json").read_text(encoding="utf-8"))


#: v1 forms of the catalogue templates written in language v2 (the reference reads only v1)
V1_FORMS = TEMPLATES.parent / "tests" / "cases" / "v1_templates"


def reference_doc(name: str) -> dict:
    """The template the transformers reference runs for ``name``: the catalogue template, or for a
    v2 template its v1 form (``tests/cases/v1_templates``), what a user of the reference would have."""
    doc = load(name)
    if "respc_version" not in doc:
        return doc
    return json.loads((V1_FORMS / f"{name}.json").read_text(encoding="utf-8"))


def reference_missing(name: str) -> str | None:
    """Why the transformers reference cannot run catalogue template ``name``, or None when it can.

    The reference reads only language v1: a v2 template needs its v1 form in
    ``tests/cases/v1_templates/`` (the v2-only families, written after the rewrite, have none).
    """
    if "respc_version" not in load(name) or (V1_FORMS / f"{name}.json").is_file():
        return None
    return "v2-only: no v1 form in tests/cases/v1_templates (the reference reads only language v1)"


def _first(value) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value:
        return value[0]
    return None


def _literals(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    return list(value or [])


def _compile(pattern: str):
    return regex.compile(pattern, regex.DOTALL)


def _close_regex(spec: dict):
    if "close_pattern" in spec:
        return _compile(spec["close_pattern"])
    literals = sorted(_literals(spec.get("close")), key=len, reverse=True)
    if not literals:
        return None
    return _compile("|".join(regex.escape(lit) for lit in literals))


def _tool_field(doc: dict) -> dict | None:
    fields = doc["fields"]
    if "tool_calls" in fields:
        return fields["tool_calls"]
    return None


def _sample_tool_call(name: str, doc: dict, spec: dict, min_calls: int = 1) -> tuple[str, bool] | None:
    """The first complete tool call in the family's test cases, from open match to close end, and
    whether it ends with its value (no close; see below), or None.

    A tool-call field that opens only inside a section (``"outside": false`` with an ``inside``
    naming another explicit field) is sampled as that whole section. A region that ends with its
    value (``"end": "value"``, no close) is sampled from its open to the end of the case's text,
    less the implicit field's close that ends it (``</s>``): such a sample counts only when it
    repeats (:func:`pieces` checks that two in a row give two calls). One with neither a close nor
    ``end`` runs to the end of the stream and cannot be repeated (None).
    """
    path = FAMILIES / f"{name}.json"
    if not path.is_file():
        return None
    fields = doc["fields"]
    if spec.get("outside", True) is False:
        sections = [f for f in (spec.get("inside") or {}) if f != "reasoning_content" and f in fields]
        if sections:
            spec = fields[sections[0]]
    cases = json.loads(path.read_text(encoding="utf-8")).get("cases", [])
    opener = _compile(spec["open_pattern"]) if "open_pattern" in spec else _compile(
        "|".join(regex.escape(lit) for lit in sorted(_literals(spec["open"]), key=len, reverse=True)))
    closer = _close_regex(spec)
    implicit = _implicit_field(doc)
    end_close = _close_regex(fields[implicit]) if implicit is not None else None
    for case in cases:
        message = case.get("message") or {}
        if len(message.get("tool_calls") or []) < min_calls:
            continue
        text = case.get("text", "")
        for m in opener.finditer(text):
            if closer is None:
                if spec.get("end") != "value":
                    return None  # runs to end of stream: cannot be repeated
                cut = len(text)
                if end_close is not None:
                    tail = [c for c in end_close.finditer(text, m.end()) if c.end() == len(text.rstrip())]
                    cut = tail[0].start() if tail else cut
                return (text[m.start():cut], True) if cut > m.start() else None
            c = closer.search(text, m.end())
            if c is not None and c.end() > c.start():
                return text[m.start():c.end()], False
    return None


def _sample_wrap(name: str, doc: dict, spec: dict) -> tuple[str, str, str]:
    """``(before, between, after)`` around the calls of the family's first test case with tool
    calls, as its real output writes them: ``before`` the delimiters of the implicit field's close
    list (a tool-call section's open: ``<｜tool▁calls▁begin｜>``, ``<minimax:tool_call>``) and the
    whitespace right before the first call; ``after`` the same right after the last call (the
    section's close), never the final end-of-turn token; ``between`` the whitespace between two
    calls when the sample has two in a row. ``("", "", "")`` when there is no such sample."""
    path = FAMILIES / f"{name}.json"
    implicit = _implicit_field(doc)
    if not path.is_file() or implicit is None or "open_pattern" not in spec and not _first(spec.get("open")):
        return "", "", ""
    opener = _compile(spec["open_pattern"]) if "open_pattern" in spec else _compile(
        "|".join(regex.escape(lit) for lit in sorted(_literals(spec["open"]), key=len, reverse=True)))
    closer = _close_regex(spec)
    if closer is None:
        return "", "", ""
    marks = _close_regex(doc["fields"][implicit])
    # the reasoning's own close (``</think>``) is not part of the calls' section; a section open
    # that also ends the reasoning (kimi_k2_thinking's second close) is
    think = doc["fields"].get("reasoning_content")
    if think is None or think is doc["fields"][implicit]:
        think = None
    elif "close_pattern" in think:
        think = _compile(think["close_pattern"])
    else:
        think = _compile(regex.escape(_first(think.get("close")) or "")) if _first(think.get("close")) else None
    if marks is None:
        return "", "", ""
    for case in json.loads(path.read_text(encoding="utf-8")).get("cases", []):
        if not (case.get("message") or {}).get("tool_calls"):
            continue
        text = case.get("text", "")
        spans, at = [], 0
        while True:
            m = opener.search(text, at)
            c = closer.search(text, m.end()) if m is not None else None
            if c is None or c.end() <= c.start():
                break
            spans.append((m.start(), c.end()))
            at = c.end()
        if not spans:
            continue
        # the implicit field's closing marks (not the reasoning's close), by where they start and end
        found = [(k.start(), k.end()) for k in marks.finditer(text) if k.end() > k.start()
                 and not (think is not None and think.fullmatch(k.group()))]
        ends = {e: b for b, e in found}
        starts = {b: e for b, e in found}
        start = spans[0][0]
        while True:  # back over whitespace and section marks
            stripped = len(text[:start].rstrip())
            if stripped not in ends:
                break
            start = ends[stripped]
        end, final, last = spans[-1][1], len(text.rstrip()), None
        opened = bool(text[start:spans[0][0]].strip())
        while True:  # on over whitespace and section marks, short of the end-of-turn token
            at = end + len(text[end:]) - len(text[end:].lstrip())
            # (a mark that ends the text is the end-of-turn token, unless it closes an opened section)
            if at not in starts or starts[at] >= final and (not opened or last is not None):
                break
            last, end = at, starts[at]
        call_end = spans[-1][1]
        # marks after a call before the section's close (step3's ``<｜tool_call_end｜>``) end each call
        suffix = text[call_end:last] if last is not None and text[call_end:last].strip() else ""
        between = suffix
        if len(spans) > 1 and not text[spans[0][1]:spans[1][0]].strip():
            between = text[spans[0][1]:spans[1][0]]
        elif len(spans) > 1:
            between = text[spans[0][1]:spans[1][0]] if not marks.sub("", text[spans[0][1]:spans[1][0]]).strip() else ""
        return text[start:spans[0][0]].lstrip(), between, text[call_end:end]
    return "", "", ""


def _sample_reasoning_open(name: str, spec: dict) -> str | None:
    """The text the reasoning ``open_pattern`` matches in the family's first reasoning case."""
    path = FAMILIES / f"{name}.json"
    if not path.is_file() or "open_pattern" not in spec:
        return None
    opener = _compile(spec["open_pattern"])
    for case in json.loads(path.read_text(encoding="utf-8")).get("cases", []):
        if (case.get("message") or {}).get("reasoning_content"):
            m = opener.search(case.get("text", ""))
            if m is not None and (m.group() or m.start() == 0):
                return m.group()  # "" when the region opens at the start of the stream (``^``)
    return None


def pieces(name: str, doc: dict | None = None, real_calls: bool = False) -> Pieces:
    """Derive the reasoning delimiters and one tool call for template ``name`` (see module doc).

    ``real_calls``: take the tool call from the family's own sample first (:func:`_sample_tool_call`:
    the call as the family's real output writes it, its newlines, spacing and section markers
    included), the literal-built call only when there is no usable sample. The realistic set
    (:func:`realistic_build`) uses it, so that the engines' own parsers, which look for the
    family's real spelling, read the same calls respc reads (a family whose sample writes several
    calls in one region gets that region: ``tool_list``); the default (literals first) keeps
    ``bench.py``'s and the adversarial set's inputs as they were."""
    doc = doc if doc is not None else load(name)
    fields = doc["fields"]
    reasoning = None
    spec = fields.get("reasoning_content")
    if spec is not None and _first(spec.get("close")):
        opener = _first(spec.get("open"))
        if opener is None:
            opener = _sample_reasoning_open(name, spec)
        if opener is not None:
            reasoning = (opener, _first(spec["close"]))
    tool_call, source, wrap, tool_list = None, "no tool-call field", ("", "", ""), False
    spec = _tool_field(doc)
    if spec is not None:
        candidates = []
        opener, closer = _first(spec.get("open")), _first(spec.get("close"))
        if opener and closer and spec.get("content", "text") == "json" and "close_pattern" not in spec:
            body = [TOOL_BODY] if spec.get("transform_each") else TOOL_BODY
            candidates.append((opener + json.dumps(body) + closer, "literals", 1))
        sample = _sample_tool_call(name, doc, spec)
        if sample is not None:
            candidates.insert(0 if real_calls else len(candidates), (sample[0], "sample", 2 if sample[1] else 1))
        source = "skipped (regex delimiters, no usable sample)"
        # A field that does not repeat holds one block: a second one is an error (dropping a call
        # is a wrong answer, docs/errors.md), so such a block is tried once and written once
        # (``tool_list``), never twice in a row (mistral_nemo's ``[TOOL_CALLS][...]</s>``).
        once = not spec.get("repeats")
        for text, origin, at_least in candidates:
            if _yields_tool_calls(doc, text, at_least, twice=not once):
                tool_call, source, tool_list = text, origin, once
                break
        if real_calls and tool_call is not None and spec.get("outside", True) is not False:
            wrap = _sample_wrap(name, doc, spec)
            twice = tool_call if once else tool_call + wrap[1] + tool_call
            if wrap != ("", "", "") and not _yields_tool_calls(doc, wrap[0] + twice + wrap[2], 1 if once else 2):
                wrap = ("", "", "")  # the wrapped form does not read back as two calls: keep the bare calls
        listed = _sample_tool_call(name, doc, spec, min_calls=2) if real_calls and tool_call is not None else None
        if listed is not None and _reads_calls(doc, wrap[0] + listed[0] + wrap[2]) >= 2:
            # the family writes several calls in one region: one such region, as its sample does
            tool_call, source, tool_list = listed[0], "sample (several calls in one region)", True
    _check_filler(name, doc)
    return Pieces(reasoning, tool_call, source, wrap, tool_list)


def _reads_calls(doc: dict, text: str) -> int:
    """How many tool calls respc reads in ``text`` (0 when it fails)."""
    import respc

    try:
        calls = respc.compile_template(doc).parse_response(text, "").get("tool_calls")
    except Exception:  # noqa: BLE001 - any failure just disqualifies the candidate
        return 0
    return len(calls) if isinstance(calls, list) else 0


def _yields_tool_calls(doc: dict, text: str, at_least: int = 1, twice: bool = True) -> bool:
    """Whether ``text`` twice in a row (once when not ``twice``: a field that does not repeat)
    parses (with respc) into a message holding at least ``at_least`` tool calls (2: the call
    repeats, it does not run to the end of the stream).

    The generic body ``{"name", "arguments"}`` does not fit every transform (command_r7b wants
    ``tool_name``/``parameters``); then the family's own sample is used instead.
    """
    import respc

    try:
        message = respc.compile_template(doc).parse_response(text * 2 if twice else text, "")
    except Exception:  # noqa: BLE001 - any failure just disqualifies the candidate
        return False
    calls = message.get("tool_calls")
    return bool(calls) and (len(calls) >= at_least if isinstance(calls, list) else at_least == 1)


def _implicit_field(doc: dict) -> str | None:
    """Name of the implicit field (the one without ``open``/``open_pattern``), or None."""
    for field, spec in doc["fields"].items():
        if "open" not in spec and "open_pattern" not in spec:
            return field
    return None


def watched_delimiters(doc: dict, region: str | None) -> list[tuple[str, str, str]]:
    """The delimiters a parser watches while ``region`` is the current region, as
    ``(field, key, literal or pattern)`` triples (``key`` is one of ``open``, ``open_pattern``,
    ``close``, ``close_pattern``).

    The rule is the watch-set rule of ``docs/template-language.md`` ("Watch sets", ``inside``,
    ``outside``): in the implicit field (``region`` None or the implicit field's name) every
    explicit field's open unless that field has ``"outside": false``, plus the implicit field's own
    close; in an explicit region its own close, plus the open of every field whose ``inside`` names
    that region. A close of another region is plain text there.
    """
    fields = doc["fields"]
    implicit = _implicit_field(doc)
    current = implicit if region is None else region
    out = []
    for field, spec in fields.items():
        if field == implicit:
            continue
        opens_here = (spec.get("outside", True) if current == implicit
                      else current in (spec.get("inside") or {}))
        if opens_here:
            out += [(field, "open", lit) for lit in _literals(spec.get("open"))]
            if "open_pattern" in spec:
                out.append((field, "open_pattern", spec["open_pattern"]))
    spec = fields.get(current) if current is not None else None
    if spec is not None:
        out += [(current, "close", lit) for lit in _literals(spec.get("close"))]
        if "close_pattern" in spec:
            out.append((current, "close_pattern", spec["close_pattern"]))
    return out


def _check_filler(name: str, doc: dict) -> None:
    """Refuse a filler that contains a delimiter watched where the filler is written (the answer,
    in the implicit field, and the reasoning region): the input would not mean what we say.

    Only watched delimiters count (:func:`watched_delimiters`): llama3_json's tool-call close
    ``\\s*;`` is searched only inside a tool call, so a ``;`` in the prose is text; olmo3's call
    opener ``(?=[A-Za-z_])`` has ``"outside": false`` and is watched only inside its call section.
    A zero-width match of a watched pattern (a lookahead opener) is an occurrence like any other.

    Raises:
        AssertionError: naming the template, the field, the key and the matched text.
    """
    probe = "x " + FILLER * 2
    regions = [None] + (["reasoning_content"] if "reasoning_content" in doc["fields"] else [])
    for region in regions:
        where = "the answer" if region is None else f"region {region!r}"
        for field, key, delim in watched_delimiters(doc, region):
            if key in ("open", "close"):
                if delim in probe:
                    raise AssertionError(f"{name}: filler in {where} contains the {key} delimiter {delim!r} "
                                         f"of {field!r}")
                continue
            m = _compile(delim).search(probe, 1)
            if m is not None:
                raise AssertionError(f"{name}: filler in {where} matches {key} of {field!r} "
                                     f"at offset {m.start()}: {m.group()!r}")


def _filler(n: int) -> str:
    if n <= 0:
        return ""
    reps = n // len(FILLER) + 1
    text = (FILLER * reps)[:n]
    return text.rstrip() + "." if n > 1 else text


def build(name: str, size: int, doc: dict | None = None, calls: int = N_TOOL_CALLS, prose=None,
          real_calls: bool = False) -> str:
    """A model output of about ``size`` characters for template ``name``: reasoning, answer, tool calls.

    Args:
        name: catalogue template name.
        size: target length in characters (the result is within a few characters of it).
        doc: the template document (default: read from the catalogue).
        calls: how many tool calls end it (0: prose of the same size, for the benchmark's
            "without its calls" figures).
        prose: ``prose(n) -> str`` of about ``n`` characters for the reasoning and the answer
            (default: :data:`FILLER` repeated, the adversarial set; :func:`realistic_prose`
            gives prose at the corpus's density of markup characters).
        real_calls: the tool call as the family's real sample writes it (see :func:`pieces`).

    Returns:
        str: the output text.
    """
    p = pieces(name, doc, real_calls)
    filler = prose if prose is not None else _filler
    calls = p.calls(calls)
    room = max(size - len(calls), 64)
    parts = []
    if p.reasoning is not None:
        opener, closer = p.reasoning
        body = int(room * 0.7) - len(opener) - len(closer)
        parts.append(opener + filler(body) + closer)
        room -= len(parts[0])
    parts.append(filler(room))
    parts.append(calls)
    return "".join(parts)


# --- realistic prose (issue 33) ----------------------------------------------------------------

#: the characters whose density in real outputs decides how often a delimiter search stops on a
#: candidate: the first characters of most delimiters, and line ends
MARKUP = "<[{|\n"
CORPUS = REPO.parent / "shared" / "corpus"
CORPUS_FILES = ("vectors.jsonl", "peer_vectors.jsonl", "peer_vectors2.jsonl")
#: used when ../shared is absent: a few sentences of the kind real answers hold (densities
#: close to the corpus's, measured 2026-12-04: per 1,000 characters '<' 1.57, '[' 0.47,
#: '{' 0.39, '|' 0.31, newline 9.4 over 12,705 characters)
FALLBACK_SAMPLE = (
    "To compare the two lists, first sort them; the loop runs while i < n and stops at the end.\n"
    "The result is stored in results[0], and the summary keeps the counts as {total, failed}.\n"
    "Temperatures stay mild: about 21 degrees in Paris, 18 in Lyon, and the wind is light.\n"
    "If the value is empty or None, the default is used. Use a | b to read either one.\n"
    "Here is what I found about the weather this week, day by day, with a short note on rain.\n"
    "The function returns early when the input is invalid, which keeps the common path short.\n"
    "In short: the answer is yes, provided the limits hold, and x <= 10 in every case.\n"
)


def corpus_density() -> tuple[dict[str, float], str]:
    """Per character of :data:`MARKUP`, how many there are per 1,000 characters of the prose of real
    outputs, and where that was measured.

    The prose is every ``expect.message`` ``reasoning_content`` and ``content`` string of
    ``../shared/corpus/{vectors,peer_vectors,peer_vectors2}.jsonl`` (the text a parser routes as
    reasoning and answer; tool calls are the families' own and come from their samples). Without
    ``../shared`` it is :data:`FALLBACK_SAMPLE`.
    """
    texts, files = [], []
    for fname in CORPUS_FILES:
        path = CORPUS / fname
        if not path.is_file():
            continue
        files.append(fname)
        for line in path.read_text(encoding="utf-8").splitlines():
            message = (json.loads(line).get("expect") or {}).get("message") or {}
            texts += [v for k, v in message.items() if k in ("reasoning_content", "content") and isinstance(v, str)]
    source = f"../shared/corpus ({', '.join(files)})" if files else "built-in fallback sample (no ../shared)"
    text = "".join(texts) if texts else FALLBACK_SAMPLE
    return {c: text.count(c) * 1000 / len(text) for c in MARKUP}, f"{source}, {len(text):,} characters of prose"


_WORDS = (
    "the a of to and in is that it for on with as this be are was by at or from we can not but "
    "which have an will if so then when one all there their more also into only other some these "
    "value result list number function request answer weather city table file user model step "
    "first second next last each every case order point line field name time data code test output "
    "check compare return stays holds runs reads keeps gives makes takes needs shows uses finds "
    "small large short long simple clear mild cold warm early late quick slow exact likely known "
    "Paris Lyon Berlin Tokyo Monday morning evening week degrees rain wind because although however "
    "therefore usually often rarely about around between before after above below without within"
).split()
#: how each markup character is written into prose: the forms real answers use
_FORMS = {
    "<": ("a < b", "i<n", "<10", "x <= y", "n < 5"),
    "[": ("[1]", "items[0]", "[optional]", "row[i]"),
    "{": ("{x}", "{a, b}", "{total}", "{n: 1}"),
    "|": ("a | b", "|x|", "yes | no"),
}


def realistic_prose(density: dict[str, float], seed: int = 0, drop: str = ""):
    """A ``prose(n)`` function for :func:`build`: varied sentences of common words (seeded, the same
    text for the same ``n``) holding each :data:`MARKUP` character at ``density`` per 1,000
    characters (``<`` as ``a < b``, ``i<n``, ``<10``; ``[`` as ``items[0]``; newlines between
    sentences), except those in ``drop`` (a character a template watches where prose is written).
    """
    import random

    def prose(n: int) -> str:
        if n <= 0:
            return ""
        rng = random.Random(seed * 1_000_003 + n)
        words = []
        length = 0
        while length < n + 40:
            sentence = [rng.choice(_WORDS) for _ in range(rng.randint(6, 18))]
            sentence[0] = sentence[0].capitalize()
            text = " ".join(sentence) + rng.choice(".......,;:?")
            words.append(text)
            length += len(text) + 1
        # markup at the measured rates, each at a random word boundary
        pieces = " ".join(words).split(" ")
        for char, forms in _FORMS.items():
            if char in drop:
                continue
            for _ in range(round(n * density.get(char, 0) / 1000)):
                k = rng.randrange(1, len(pieces))
                pieces[k] = rng.choice(forms) + " " + pieces[k]
        text = " ".join(pieces)
        if "\n" not in drop:
            # newlines after sentence ends, at the measured rate
            ends = [m.end() for m in regex.finditer(r"[.?:;] ", text)]
            # (one break in four is a blank line: two newlines)
            chosen = sorted(rng.sample(ends, min(len(ends), round(n * density.get("\n", 0) / 1250))))
            out, last = [], 0
            for at in chosen:
                out.append(text[last:at - 1])
                out.append("\n\n" if rng.random() < 0.25 else "\n")
                last = at
            out.append(text[last:])
            text = "".join(out)
        text = text[:n].rstrip()
        return text + "." if len(text) < n else text

    return prose


def _offending(name: str, doc: dict, probe: str) -> str | None:
    """The first delimiter watched where prose is written (the answer, the reasoning) that occurs
    in ``probe``, as a description, or None (the rule of :func:`_check_filler`)."""
    regions = [None] + (["reasoning_content"] if "reasoning_content" in doc["fields"] else [])
    for region in regions:
        for field, key, delim in watched_delimiters(doc, region):
            if key in ("open", "close"):
                at = probe.find(delim)
            else:
                m = _compile(delim).search(probe, 1)
                at = -1 if m is None else m.start()
            if at >= 0:
                return f"{key} of {field!r} at {probe[max(at - 10, 0):at + 20]!r}"
    return None


def realistic_build(name: str, size: int, density: dict[str, float], doc: dict | None = None,
                    calls: int = N_TOOL_CALLS, real_calls: bool = True) -> tuple[str, str]:
    """:func:`build` with :func:`realistic_prose` at ``density`` and, by default, the family's real
    tool call (``real_calls``, :func:`pieces`): ``(text, dropped)``, where
    ``dropped`` names the markup characters left out for this template because prose holding
    them would contain a delimiter it watches there (checked on the prose itself, see
    :func:`_check_filler`; ``""`` for most)."""
    doc = doc if doc is not None else load(name)
    drop = ""
    while True:
        prose = realistic_prose(density, drop=drop)
        why = _offending(name, doc, "x " + prose(size))
        if why is None:
            return build(name, size, doc, calls, prose, real_calls), drop
        left = [c for c in MARKUP if c not in drop]
        hit = next((c for c in left if c in why), None)
        if hit is None:
            raise AssertionError(f"{name}: realistic prose contains a watched delimiter: {why}")
        drop += hit


def chunks(text: str, size: int = CHUNK) -> list[str]:
    """``text`` cut into pieces of ``size`` characters."""
    return [text[i:i + size] for i in range(0, len(text), size)]


# --- adversarial inputs -------------------------------------------------------------------------

#: A synthetic gpt-oss-like template whose tool-call open pattern is lazy (``.*?``): with no
#: ``<|message|>`` ever arriving, the partial match spans everything after the open's head.
LAZY_TEMPLATE = {
    "version": 1,
    "defaults": {"role": "assistant"},
    "start_anchor": "<|start|>assistant",
    "fields": {
        "tool_calls": {
            "open_pattern": "<\\|channel\\|>commentary to=functions\\.(?P<name>.*?)<\\|message\\|>",
            "close": "<|call|>",
            "content": "json",
            "repeats": True,
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": ["<|end|>", "<|return|>"], "content": "text"},
    },
}


@dataclass(frozen=True)
class Adversarial:
    """One adversarial case: ``head`` then ``unit`` repeated up to the size.

    Attributes:
        label (str): what the case stresses.
        template (str): catalogue name, or ``"lazy_synthetic"`` for :data:`LAZY_TEMPLATE`.
        head (str): written once, first.
        unit (str): repeated.
    """

    label: str
    template: str
    head: str
    unit: str

    def document(self) -> dict:
        return LAZY_TEMPLATE if self.template == "lazy_synthetic" else load(self.template)

    def reference_document(self) -> dict:
        """The template the reference runs (a v2 template's v1 form, see :func:`reference_doc`)."""
        return LAZY_TEMPLATE if self.template == "lazy_synthetic" else reference_doc(self.template)

    def text(self, size: int) -> str:
        reps = max((size - len(self.head)) // len(self.unit), 1)
        return self.head + self.unit * reps


def adversarial_inputs() -> list[Adversarial]:
    """The adversarial cases (each stays pending or partial for its whole length)."""
    return [
        Adversarial("'<' repeated (outside)", "qwen3", "", "<"),
        Adversarial("'</thi' repeated (in reasoning)", "qwen3", "<think>", "</thi"),
        Adversarial("'<' repeated (outside)", "gpt_oss", "", "<"),
        Adversarial("'<|channel|>' repeated (outside)", "gpt_oss", "", "<|channel|>"),
        Adversarial("open head, name never ends: '<tool_call>\\n<function=' + 'a'*", "qwen3_coder",
                    "<tool_call>\n<function=", "a"),
        Adversarial("open head then whitespace forever: '<tool_call>' + ' '*", "qwen3_coder",
                    "<tool_call>", " "),
        Adversarial("open never completes: 'to=functions.x' + 'x'* (no <|message|>)", "gpt_oss",
                    "<|channel|>commentary to=functions.x", "x"),
        Adversarial("'to=functions.x' then prose without <|message|>", "gpt_oss",
                    "<|channel|>commentary to=functions.x ", FILLER),
        Adversarial("lazy '.*?' never finds '<|message|>' (prose)", "lazy_synthetic",
                    "<|channel|>commentary to=functions.x", FILLER),
        Adversarial("lazy '+?' open never completes: kimi '<|tool_call_begin|>functions.' + 'x'*",
                    "kimi_k2", "<|tool_call_begin|> functions.", "x"),
    ]
