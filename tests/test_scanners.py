"""The scanners the runtime builds from a module's declared literal delimiters (runtime/scanners.py,
issue 31) against the rule they implement, written plainly (docs/template-language.md,
"Matching"): the leftmost hit wins, at one start the longest, then the lowest rank; unless the
stream has ended, text from the leftmost offset where the rest of the buffer is a proper prefix of
a literal is held, and a hit at or after that offset is not committed.
"""

from __future__ import annotations

import random

import pytest

import respc
from respc.runtime import Literal
from respc.runtime.scanners import literal_scanner
from respc.runtime.stream import StreamParser

from support import REPO

CATALOGUE = sorted(p.stem for p in (REPO / "templates").glob("*.json"))


def _reference(literals, buf, pos, eos):
    """The rule itself, by brute force."""
    n = len(buf)
    hold = n
    if not eos:
        for j in range(pos, n):
            if any(len(r.text) > n - j and r.text.startswith(buf[j:]) for r in literals):
                hold = j
                break
    best = None
    for r in literals:
        i = buf.find(r.text, pos)
        if i < 0:
            continue
        key = (i, -len(r.text), r.rank)
        if best is None or key < best:
            best = key
    if best is None or best[0] >= hold:
        return -1, 0, 0, None, hold
    return best[0], best[0] - best[1], best[2], None, hold


def _buffers(literals, rng, count):
    """Buffers made of pieces of the literals (whole, cut, overlapping) and filler."""
    pieces = [r.text for r in literals] + [r.text[:k] for r in literals for k in range(1, len(r.text))]
    pieces += ["a", " ", "<", "\n", "x<y"]
    for _ in range(count):
        yield "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))


def _check(literals, rng, count=300):
    scan, slots, _ = literal_scanner(literals, 3)
    for buf in _buffers(literals, rng, count):
        memo = [None] * (3 + slots)
        positions = sorted(rng.randint(0, len(buf)) for _ in range(3))
        for eos in (False, True):
            memo = [None] * (3 + slots)
            for pos in positions:  # one memo over rising positions, as a parser's run keeps it
                assert scan(buf, pos, eos, memo) == _reference(literals, buf, pos, eos), (literals, buf, pos, eos)


@pytest.mark.parametrize("name", CATALOGUE)
def test_catalogue_declarations_scan_by_the_rule(name):
    """Every literal-only state of every catalogue template: its built scanner gives the rule's
    answer on buffers made of its literals, with the memo carried over rising positions."""
    module = respc.compile_template(REPO / "templates" / f"{name}.json")
    rng = random.Random("scanners/" + name)
    declared = [getattr(module, f"_DELIMITERS_{k}", None) for k in range(len(module.ResponseParser.TRANSITIONS))]
    for literals in declared:
        if literals and all(isinstance(r, Literal) for r in literals):
            _check(literals, rng, 60)


def test_groups_shared_first_characters_and_ties():
    """Three or more literals with one first character are found after one shared search; a
    longer literal at the same start wins, then the lower rank; several first characters hold
    through literal_hold."""
    rng = random.Random(7)
    _check((Literal("<a>", 0), Literal("<ab>", 1), Literal("<abc", 2), Literal("<a>", 3)), rng)
    _check((Literal("[X]", 0), Literal("<Y>", 1), Literal("{Z", 1), Literal("<Y>", 0)), rng)
    _check((Literal(";", 0), Literal("x", 1)), rng)  # one character each: nothing to hold


def test_state_watching_nothing_finds_nothing():
    scan, slots, hold = literal_scanner((), 0)
    assert (slots, hold) == (0, None) and scan("abc", 1, False, []) == (-1, 0, 0, None, 3)


def test_records_must_be_literals_of_text_and_rank():
    """A declaration of another shape (a module not made by respc) is refused when the parser
    class is built, naming the record: no value of it reaches the scanner's source but a checked
    string or integer."""
    class Sneaky(str):
        def __repr__(self):
            return "__import__('os')"

    for bad in ((("<a>", 0),), (Literal(Sneaky("<a>"), 0),), (Literal("<a>", "0"),), (Literal("", 0),)):
        with pytest.raises(TypeError, match="Literal"):
            literal_scanner(bad, 0)
    with pytest.raises(TypeError, match="Literal"):
        type("P", (StreamParser,), {"SCANNERS": ((("<a>", 0),),), "FAST_PATH": ((None, None),)})


def test_scanners_are_compiled_by_their_first_call():
    """A class creation (an import) checks the declarations and compiles no scanner; the first
    call of a state's scanner compiles it and puts it in the class's SCANNERS."""
    from support import exec_module

    source = (REPO / "generated" / "qwen3.py").read_text(encoding="utf-8")
    module = exec_module(source, "qwen3_lazy_scanners")
    parser_class = module.ResponseParser

    def compiled():
        return [scan.__code__.co_filename == "<respc literal scanner>" for scan in parser_class.SCANNERS]

    assert compiled() == [False, False, False]
    parser = parser_class("")
    parser.feed("a <think>b</think> c")
    assert compiled()[0] and compiled()[1]
    assert parser.finalize()[0] == {"role": "assistant", "reasoning_content": "b", "content": "ac"}


@pytest.mark.parametrize("name", CATALOGUE)
def test_literal_prefixes_are_the_compilers(name):
    """runtime.literal_prefixes, which a module of ABI 4 generated before regex states were
    declared still calls for the held-prefix test of a state that watches literals and a regex
    delimiter (no module generated now calls it; docs/security.md "Declared scanners and named
    records"), gives the compiler's own set for every catalogue state."""
    from respc.compiler.automaton import plan_scans
    from respc.compiler.source import read_template
    from respc.runtime import literal_prefixes

    read = read_template(REPO / "templates" / f"{name}.json")
    for plan in plan_scans(read.template, read.automaton).plans:
        if plan.hold is None:
            continue
        built = literal_prefixes(plan.hold.literals)
        if plan.hold.prefixes is None:
            assert not isinstance(built, frozenset)
            assert all(lit[:k] in built for lit in plan.hold.literals for k in range(1, len(lit)))
        else:
            assert built == frozenset(plan.hold.prefixes)
    with pytest.raises(TypeError, match="tuple of str"):
        literal_prefixes(["<a>"])


def test_pattern_records_are_checked_when_the_class_is_made():
    """A regex state's records (runtime/scanners.py Pattern) of another shape are refused when the
    parser class is created, naming the record: only a delimiter bound to a checked ``_D<k>``
    global, ``repr`` of exact str and int values and decisions on exact bools reach the source
    the runtime writes (docs/security.md, "Declared scanners and named records")."""
    from respc.runtime import LazyPattern, Pattern

    class Sneaky(str):
        def __repr__(self):
            return "__import__('os')"

    scope: dict = {}
    good = LazyPattern("<a>", scope=scope, name="_D0")
    scope["_D0"] = good
    evil = LazyPattern("<a>", scope=scope, name="_D0 or __import__('os')")
    probe = LazyPattern("(?>(?:<a>))(?!)")
    bad = [Pattern(evil, rank=0, probe=probe), Pattern(good, rank="0", probe=probe),
           Pattern(good, rank=0, probe=probe, factor=Sneaky("<a>")),
           Pattern(good, rank=0, probe=probe, leads=[Sneaky("<")]), Pattern(good, rank=0, probe=probe, leads=(Sneaky("<"),)),
           Pattern(good, rank=0, probe=probe, barrier=("<a>",)), Pattern(good, rank=0, probe="(?!)"),
           Pattern(good, rank=0, probe=probe, prefilter=1), Pattern(good, rank=0, probe=probe, reach=True),
           Pattern("<a>", rank=0, probe=probe), Pattern(good, rank=0, factor="<a>")]  # a factor needs a probe
    for record in bad:
        with pytest.raises(TypeError, match="Pattern"):
            type("P", (StreamParser,), {"SCANNERS": ((record,),), "FAST_PATH": ((None, None),)})
    built = type("P", (StreamParser,), {"SCANNERS": ((Pattern(good, rank=0, probe=probe, leads=("<a>",)),),),
                                        "FAST_PATH": ((None, None),)})
    scan = built.SCANNERS[0]
    memo = [None] * built.MEMO_SLOTS
    assert built.MEMO_SLOTS == 3 and scan("x<a>y", 0, False, memo)[:3] == (1, 4, 0)


def test_regex_states_are_written_by_the_runtime():
    """No generated module writes a scanner: every state declares records, and a recover class
    (errors="recover") takes the strict class's delimiters, probes, back searches and
    declarations where they are the same (issue 31; docs/security.md "Declared scanners and named
    records")."""
    for path in sorted((REPO / "generated").glob("[!_]*.py")):
        text = path.read_text(encoding="utf-8")
        assert "def _scan_" not in text and "memo[" not in text and "_LEADS" not in text, path.name
    for name in ("gpt_oss", "gemma4", "kimi_k2_thinking", "qwen3_coder"):
        module = respc.compile_template(REPO / "templates" / f"{name}.json")
        strict = {k: v.pattern for k, v in vars(module).items() if k[:2] in ("_D", "_P", "_B") and hasattr(v, "pattern")}
        mine = {k[2:]: v.pattern for k, v in vars(module).items() if k[:4] in ("_R_D", "_R_P", "_R_B")
                and hasattr(v, "pattern")}
        assert mine and all(strict.get(k) != pattern for k, pattern in mine.items()), name
        shared = [k for k, records in enumerate(module._RecoverParser._DECLARED)
                  if records is module.ResponseParser._DECLARED[k]]
        assert shared, name


def test_a_state_declared_the_same_is_compiled_once():
    """A scanner source compiled once in a process is not compiled again (runtime/scanners.py
    ``_code``; README.md, "Layout"): a second module of the same template gets the same code
    object, each in its own globals, and parses the same."""
    import types

    from respc.compiler.api import compile_source
    from respc.runtime import scanners

    source = compile_source(REPO / "templates" / "glm4_5.json").source  # a regex state, no time limit
    classes = []
    for name in ("same_code_a", "same_code_b"):
        module = types.ModuleType(name)
        exec(compile(source, f"<{name}>", "exec"), module.__dict__)
        scanners.build_now(module.ResponseParser)
        classes.append(module.ResponseParser)
    codes = [[s.__code__ for s in c.SCANNERS if hasattr(s, "__code__")] for c in classes]
    assert codes[0] and all(a is b for a, b in zip(codes[0], codes[1], strict=True))
    text = "<think>a</think>b<tool_call>f\n<arg_key>x</arg_key>\n<arg_value>1</arg_value>\n</tool_call>"
    assert classes[0]("").feed(text) == classes[1]("").feed(text)


def _without_finals(parser_class):
    """``parser_class`` with every Pattern record's ``final`` dropped: the general path, which
    asks the D2 probe after every complete match (a subclass with the same declarations, and its
    bounded patterns still searched under their time limit)."""
    from respc.runtime import Pattern

    scanners = tuple(scan if records is None else
                     tuple(r._replace(final=None) if isinstance(r, Pattern) else r for r in records)
                     for records, scan in zip(parser_class._DECLARED, parser_class.SCANNERS))
    body = {"__slots__": (), "SCANNERS": scanners}
    if parser_class.REGEX_BOUNDED:
        body["REGEX_BOUNDED"] = parser_class.REGEX_BOUNDED
    return type("General", (parser_class,), body)


#: catalogue templates with a Pattern record that declares final literals (at least these)
_FINAL_NAMES = sorted(name for name in CATALOGUE
                      if "final=(" in (REPO / "generated" / f"{name}.py").read_text(encoding="utf-8"))


def test_final_literals_are_proven_where_they_end_matches_for_good():
    """compiler/automaton.py ``final_literals``: a literal qualifies only when no text the
    pattern can still be writing holds it before its end."""
    from respc.compiler.automaton import final_literals

    assert final_literals(r"<tool:[ \t]*(?P<name>[^>\s]+)[ \t]*>") == (">",)
    assert final_literals(r"<\|call\|>|<\|end\|>") == ("<|call|>", "<|end|>")
    # a class that can read the literal's characters, or a repeat after it: no proof
    assert final_literals(r"<f=(?P<name>.+)>") is None
    assert final_literals(r"<a>\s*") is None
    assert final_literals(r"x(?:<a>)+") is None
    assert final_literals(r"<a><a>") == ("<a><a>",)
    # the first "<a>" can go on ("b<a>"): only the whole text ends a match for good
    assert final_literals(r"<a>(?:b<a>)?") == ("<a>b<a>",)
    # an end assertion (the probe rewrites it) or a lookbehind: no proof
    assert final_literals(r"<a>$") is None
    assert final_literals(r"(?<=x)<a>") is None
    assert len(_FINAL_NAMES) >= 10 and {"gpt_oss", "muse_glimmer"} <= set(_FINAL_NAMES)


@pytest.mark.parametrize("name", _FINAL_NAMES)
def test_final_literals_change_no_event(name):
    """A match that ends with a final literal is taken without its D2 probe (runtime/scanners.py
    ``Pattern.final``): against the general path, which asks the probe, the catalogue's cases
    and random texts spliced from the template's delimiters give the same events and message in
    every chunking (errors strict and recover)."""
    from support import delimiter_pieces, family_cases, random_pieces

    module = respc.compile_template(REPO / "templates" / f"{name}.json")
    rng = random.Random(f"final-{name}")
    pieces = delimiter_pieces(name)
    texts = [case["text"] for case in family_cases(name)]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(2, 12))) for _ in range(40)]
    fast_classes = {"strict": module.ResponseParser}
    recover = getattr(module, "_RecoverParser", None)
    general_classes = {"strict": _without_finals(module.ResponseParser)}
    if recover is not None:
        fast_classes["recover"], general_classes["recover"] = recover, _without_finals(recover)
    for errors, fast in fast_classes.items():
        general = general_classes[errors]
        for text in texts:
            cuts = [[text], list(text), random_pieces(text, rng, 6), random_pieces(text, rng, 17)]
            for chunks in cuts:
                outcomes = []
                for cls in (fast, general):
                    try:
                        parser = cls("", errors=errors)
                        events = list(parser.initial_events)
                        for chunk in chunks:
                            events.extend(parser.feed(chunk))
                        message, final = parser.finalize()
                        outcomes.append((message, events + final))
                    except Exception as exc:  # noqa: BLE001 - both paths must raise alike
                        outcomes.append(("error", type(exc).__name__, str(exc)))
                assert outcomes[0] == outcomes[1], (name, errors, text, chunks)
