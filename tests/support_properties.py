"""What the chunking properties are built from, shared by ``tests/test_properties.py`` and
``tests/test_differential.py`` (docs/template-language.md, "D2: chunking never changes the result"):
each template's material (its delimiters, realistic region bodies, its tools), hypothesis strategies
for outputs, prefixes and random cuts made of it, and the outcome of a streamed parse. Free of
transformers, so that the property tests run without it.
"""

from __future__ import annotations

import json
from functools import lru_cache

import regex
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import respc
from respc.compiler.api import compile_source
from support import CONFORMANCE, FAMILY_DIR, REPO, load_jsonl, merged_events, run_stream


TEMPLATE_DIR = REPO / "templates"
CATALOGUE = sorted(path.stem for path in TEMPLATE_DIR.glob("*.json"))

#: Characters that start or live inside delimiters of the catalogue, plus awkward unicode.
AWKWARD = list("<>[]|{}()\"'=:;/\\ \n\t,._-~`$^*?+") + list("aZ09é中😀\u2028｜▁\x00")
RANDOM_TEXT = st.one_of(
    st.text(st.sampled_from(AWKWARD), max_size=6),
    st.text(max_size=4),  # any unicode, surrogates excluded by hypothesis
)


# --- what a template's outputs are made of ---------------------------------------------------
def _literals(value) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _leading_literal(pattern: str) -> str:
    """The literal text a regex must start with ("" when it starts with anything else)."""
    try:
        from re import _parser as sre_parse  # Python 3.11+
    except ImportError:  # pragma: no cover
        import sre_parse  # type: ignore[no-redef]
    try:
        parsed = sre_parse.parse(pattern)
    except Exception:  # the `regex` dialect may use syntax `re` lacks; no literal then
        return ""
    out = []
    for op, arg in parsed:
        if str(op) != "LITERAL":
            break
        out.append(chr(arg))
    return "".join(out)


def delimiter_patterns(template: dict) -> list[str]:
    """Every regex delimiter of the template (open/close patterns and the start anchor pattern)."""
    patterns = [spec[key] for spec in template["fields"].values()
                for key in ("open_pattern", "close_pattern") if key in spec]
    if "start_anchor_pattern" in template:
        patterns.append(template["start_anchor_pattern"])
    return patterns


def delimiter_tokens(template: dict, samples: list[str]) -> list[str]:
    """Delimiter texts of ``template``: its literals, and for regex delimiters the non-empty
    matches found in ``samples`` (case texts and prefixes) plus each pattern's leading literal."""
    tokens: list[str] = []
    for spec in template["fields"].values():
        tokens += _literals(spec.get("open")) + _literals(spec.get("close"))
    tokens += _literals(template.get("start_anchor"))
    for pattern in delimiter_patterns(template):
        compiled = regex.compile(pattern, regex.DOTALL)
        found = []
        for sample in samples:
            found += [m.group(0) for m in compiled.finditer(sample) if m.group(0)]
        tokens += sorted(set(found), key=lambda s: (len(s), s))[:6]
        lead = _leading_literal(pattern)
        if lead:
            tokens.append(lead)
    return list(dict.fromkeys(t for t in tokens if t))


def region_bodies(module, cases: list[dict]) -> list[str]:
    """Realistic region bodies: the merged chunk texts our parser routes for each case."""
    bodies: list[str] = []
    for case in cases:
        try:
            _, events = run_stream(module, case.get("prefix", ""), [case["text"]], case.get("tools"))
        except (ValueError, KeyError):
            continue
        bodies += [e["text"] for e in merged_events(events) if e["type"] == "region_chunk"]
    return list(dict.fromkeys(b for b in bodies if b))[:40]


class Material:
    """Everything hypothesis draws outputs for one template from."""

    def __init__(self, name: str, template: dict, cases: list[dict]):
        self.name = name
        self.template = template
        self.cases = cases
        self.module = respc.compile_template(template)
        samples = [c["text"] for c in cases] + [c.get("prefix", "") for c in cases]
        self.tokens = delimiter_tokens(template, samples)
        self.bodies = region_bodies(self.module, cases) or ["x"]
        self.texts = list(dict.fromkeys(c["text"] for c in cases if c["text"])) or ["x"]
        self.prefixes = list(dict.fromkeys(c.get("prefix", "") for c in cases))
        anchors = _literals(template.get("start_anchor"))
        if "start_anchor_pattern" in template:
            anchor_re = regex.compile(template["start_anchor_pattern"], regex.DOTALL)
            anchors += [m.group(0) for p in self.prefixes for m in anchor_re.finditer(p)][-3:]
        self.anchors = anchors or [""]
        # empty regions: each explicit field's first open literal straight followed by its first close
        self.empty_regions = [_literals(spec["open"])[0] + _literals(spec["close"])[0]
                              for spec in template["fields"].values() if "open" in spec and "close" in spec]
        self.tools = [None] + [c["tools"] for c in cases if c.get("tools")][:3]
        self.indeterminate = bool(compile_source(template).automaton.warnings)
        self.patterns = [spec[key] for spec in template["fields"].values()
                         for key in ("open_pattern", "close_pattern") if key in spec]

    def __repr__(self) -> str:
        return f"Material({self.name})"


@lru_cache(maxsize=None)
def catalogue_material(name: str) -> Material:
    template = json.loads((TEMPLATE_DIR / f"{name}.json").read_text(encoding="utf-8"))
    family = FAMILY_DIR / f"{name}.json"
    cases = json.loads(family.read_text(encoding="utf-8"))["cases"] if family.is_file() else []
    return Material(name, template, cases)


def conformance_regex_templates() -> list[tuple[str, dict, list[dict]]]:
    """Distinct templates with regex delimiters among the non-error conformance vectors."""
    groups: dict[str, tuple[str, dict, list[dict]]] = {}
    for vector in load_jsonl(CONFORMANCE):
        template = vector["template"]
        if "error" in vector["expect"] or not delimiter_patterns(template):
            continue
        key = json.dumps(template)  # key order kept: field order ranks delimiters
        if key not in groups:
            groups[key] = (vector["id"], template, [])
        groups[key][2].append({"prefix": vector["prefix"], "text": vector["text"], "tools": vector.get("tools"),
                               "deviation": vector.get("deviation")})
    return list(groups.values())


CONFORMANCE_REGEX = conformance_regex_templates()


@lru_cache(maxsize=None)
def conformance_material(vector_id: str) -> Material:
    for first_id, template, cases in CONFORMANCE_REGEX:
        if first_id == vector_id:
            return Material(vector_id, template, cases)
    raise LookupError(vector_id)


# --- strategies ------------------------------------------------------------------------------
def piece(material: Material) -> st.SearchStrategy[str]:
    """One piece of output: a delimiter, a cut-off delimiter, an empty region, a body, random text
    or whitespace."""
    token = st.sampled_from(material.tokens) if material.tokens else st.just("<")
    cut_token = token.flatmap(lambda t: st.integers(1, max(1, len(t) - 1)).map(lambda k: t[:k]))
    empty_region = st.sampled_from(material.empty_regions) if material.empty_regions else token
    return st.one_of(
        token, token, token,
        cut_token,
        empty_region,
        st.sampled_from(material.bodies),
        RANDOM_TEXT,
        st.sampled_from(["", " ", "\n", "\n\n", "  \n"]),
    )


def output(material: Material, max_pieces: int = 8) -> st.SearchStrategy[str]:
    """A model output: joined pieces, sometimes a real case text with pieces around it."""
    pieces = st.lists(piece(material), max_size=max_pieces).map("".join)
    with_case = st.tuples(pieces, st.sampled_from(material.texts), pieces).map("".join)
    return st.one_of(pieces, pieces, with_case)


def prefix(material: Material) -> st.SearchStrategy[str]:
    """A prefix: empty, a case prefix, or junk + start anchor + a prefill made of pieces."""
    prefill = st.lists(piece(material), max_size=3).map("".join)
    built = st.tuples(RANDOM_TEXT, st.sampled_from(material.anchors), prefill).map("".join)
    options = [st.just(""), built]
    if material.prefixes:
        options.append(st.sampled_from(material.prefixes))
    return st.one_of(*options)


def cut(text: str, cuts: list[int]) -> list[str]:
    """``text`` cut at the given offsets (sorted, deduplicated, clipped)."""
    points = sorted({c for c in cuts if 0 < c < len(text)})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])] or [""]


@st.composite
def scenario(draw, material: Material):
    """(prefix, output, random chunks, tools) for one template."""
    text = draw(output(material))
    cuts = draw(st.lists(st.integers(0, max(0, len(text))), max_size=10))
    return draw(prefix(material)), text, cut(text, cuts), draw(st.sampled_from(material.tools))


def outcome(module, prefix_text: str, chunks: list[str], tools) -> tuple:
    """("ok", message, merged events, raw events) or ("error", exception class name)."""
    try:
        message, events = run_stream(module, prefix_text, chunks, tools)
    except KeyError:
        return ("error", "KeyError")
    except ValueError:
        return ("error", "ValueError")
    return ("ok", message, merged_events(events), events)


PROPERTY_SETTINGS = settings(max_examples=80, deadline=None, derandomize=True,
                             suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
