"""Random walks over an exported grammar with the engines' own matchers (issue 27, test support;
docs/grammar.md "What the grammar guarantees").

A walk starts an engine's matcher on a grammar and, step by step, asks it which tokens may come
next (its token mask) and takes one of them at random, until it takes the end token. The vocabulary
is the 256 bytes, the end token, and the grammar's literal strings (delimiters, tool names, keys) as
tokens of their own, so that walks reach the grammar's structure (and put delimiters where the
grammar lets them, such as inside a string value) in a few steps. The walk prefers short texts
and, after ``SOFT`` bytes, tokens that end things; a walk longer than ``HARD`` bytes is dropped.

Each accepted string is then read by the template's generated parser in strict mode and checked by
:func:`unsound`: calls only to offered tools, arguments valid against their schemas (a small JSON
schema validator, :func:`schema_errors`), at least one call with ``required`` or a named tool, none
with ``none``, at most one with ``--no-parallel``.
"""

from __future__ import annotations

import functools
import json

import numpy as np

from respc.compiler.grammar_ir import Lit, Alt, Seq, Rep, Except

#: the tool set of issue 27: strings, integers, an enum, a nullable field, a nested object, arrays
RICH_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "set_alarm", "parameters": {"type": "object", "properties": {
        "time": {"type": "string"}, "volume": {"type": "integer"}, "label": {"type": ["string", "null"]}},
        "required": ["time"]}}},
    {"type": "function", "function": {"name": "book_trip", "parameters": {"type": "object", "properties": {
        "where": {"type": "object", "properties": {"city": {"type": "string"}, "nights": {"type": "integer"}},
                  "required": ["city"]},
        "guests": {"type": "array", "items": {"type": "string"}},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}}, "required": ["where"]}}},
]

EOS = 256
SOFT, HARD = 48, 600
#: printable bytes a free-text step prefers (the rest are taken only when nothing else may come)
_PREFERRED = [ord(c) for c in 'ab Z09_-.,:;=/\n"\'<>{}[]()|!?\\#']
_CLOSERS = set(b'"}])>')


def literals(g) -> list[bytes]:
    """The grammar IR's literal strings of two or more bytes (delimiters, names, keys), sorted."""
    out: set[bytes] = set()
    seen: set[int] = set()

    def visit(n) -> None:
        if id(n) in seen:
            return
        seen.add(id(n))
        if isinstance(n, Lit):
            b = n.text.encode("utf-8")
            if len(b) >= 2 and "\x00" not in n.text:
                out.add(b)
        elif isinstance(n, (Seq, Alt)):
            for x in n.items:
                visit(x)
        elif isinstance(n, Rep):
            visit(n.item)
        elif isinstance(n, Except):
            for x in n.literals:
                if len(x.encode("utf-8")) >= 2:
                    out.add(x.encode("utf-8"))

    for node in g.rules.values():
        visit(node)
    return sorted(out)[:400]


class Vocab:
    """Bytes, the end token (256) and ``extra`` literal tokens from 257 on."""

    def __init__(self, extra: list[bytes]) -> None:
        self.tokens = [bytes([i]) for i in range(256)] + [b"<eos>"] + list(extra)
        self.size = len(self.tokens)


@functools.lru_cache(maxsize=8)
def _xgr_compiler(extra: tuple):
    import xgrammar as xgr
    v = Vocab(list(extra))
    info = xgr.TokenizerInfo(v.tokens, vocab_type=xgr.VocabType.RAW, stop_token_ids=[EOS])
    return xgr.GrammarCompiler(info, cache_enabled=False), v


class _LLTok:
    eos_token_id = EOS
    bos_token_id = None
    special_token_ids = [EOS]

    def __init__(self, tokens) -> None:
        self.tokens = tokens

    def __call__(self, data):
        return list(data if isinstance(data, bytes) else data.encode("utf-8"))


@functools.lru_cache(maxsize=8)
def _ll_tokenizer(extra: tuple):
    import llguidance
    v = Vocab(list(extra))
    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(_LLTok(v.tokens))), v


class XgrGrammar:
    """An EBNF grammar or a structural tag (JSON text) compiled once by xgrammar; ``matcher()``
    gives a fresh matcher for one walk."""

    def __init__(self, grammar: str, extra: tuple, structural: bool = False) -> None:
        compiler, self.vocab = _xgr_compiler(extra)
        self.compiled = compiler.compile_structural_tag(grammar) if structural else compiler.compile_grammar(grammar)

    def matcher(self) -> "XgrMatcher":
        return XgrMatcher(self)


class XgrMatcher:
    """xgrammar's GrammarMatcher (one walk)."""

    def __init__(self, grammar: XgrGrammar) -> None:
        import xgrammar as xgr
        self.vocab = grammar.vocab
        self.m = xgr.GrammarMatcher(grammar.compiled)
        self.bm = xgr.allocate_token_bitmask(1, self.vocab.size)
        self.bytes_view = self.bm.numpy().view(np.uint8)

    def allowed(self) -> np.ndarray:
        self.m.fill_next_token_bitmask(self.bm)
        return np.unpackbits(self.bytes_view, bitorder="little", count=self.vocab.size).view(bool)

    def take(self, tok: int) -> bool:
        return self.m.accept_token(int(tok))


class LLGrammar:
    """llguidance's grammar text with its tokenizer; ``matcher()`` gives a fresh LLMatcher."""

    def __init__(self, grammar: str, extra: tuple) -> None:
        self.tok, self.vocab = _ll_tokenizer(extra)
        self.grammar = grammar

    def matcher(self) -> "LLMatcher":
        return LLMatcher(self)


class LLMatcher:
    """llguidance's LLMatcher over a Lark grammar (its dialect), one walk."""

    def __init__(self, grammar: LLGrammar) -> None:
        import llguidance
        self.vocab = grammar.vocab
        self.m = llguidance.LLMatcher(grammar.tok, grammar.grammar, log_level=0)
        if self.m.is_error():
            raise ValueError(self.m.get_error())

    def allowed(self) -> np.ndarray:
        bits = np.unpackbits(np.frombuffer(self.m.compute_bitmask(), dtype=np.uint8), bitorder="little",
                             count=self.vocab.size).view(bool)
        if self.m.is_error():
            raise ValueError(self.m.get_error())
        return bits

    def take(self, tok: int) -> bool:
        ok = self.m.consume_token(int(tok))
        if not ok and self.m.is_error():
            raise ValueError(self.m.get_error())
        return ok


_MASKS: dict = {}


def _masks(size: int):
    """(literal tokens, preferred bytes, closing bytes) as boolean masks over a vocabulary."""
    if size not in _MASKS:
        lit = np.zeros(size, bool)
        lit[EOS + 1:] = True
        pref = np.zeros(size, bool)
        pref[_PREFERRED] = True
        close = np.zeros(size, bool)
        close[list(_CLOSERS)] = True
        byte = np.zeros(size, bool)
        byte[:EOS] = True
        _MASKS[size] = lit, pref, close, byte
    return _MASKS[size]


def delimiter_literals(template) -> set[bytes]:
    """The literal starts of every field's open and close (``respc.compiler.grammar_ir``'s leads):
    the tokens a late walk heads for, so that it opens the call a mode requires and closes what it
    opened."""
    from respc.compiler.grammar_ir import Grammar, delimiter_leads

    out: set[bytes] = set()
    g = Grammar()
    for f in template.fields:
        for delim in (f.open, f.close):
            if delim is not None:
                out.update(x.encode("utf-8") for x in delimiter_leads(delim, g, f.name) if len(x.encode("utf-8")) > 1)
    return out


def walk(matcher, rng, soft: int = SOFT, goals: frozenset = frozenset()) -> str | None:
    """One random string the matcher accepts (ended by the end token), or None when the walk ran
    past ``HARD`` bytes or the matcher allowed nothing; after ``soft`` bytes it ends as soon as it
    may and prefers tokens that close things."""
    out = bytearray()
    vocab = matcher.vocab
    lit_m, pref_m, close_m, byte_m = _masks(vocab.size)
    p_end = rng.choice((0.02, 0.05, 0.15))
    p_lit = rng.choice((0.2, 0.4, 0.7))
    while len(out) <= HARD:
        allowed = matcher.allowed()
        ends = bool(allowed[EOS])
        late = len(out) > soft
        if ends and (late or rng.random() < p_end):
            return out.decode("utf-8", "replace")
        lits = np.flatnonzero(allowed & lit_m)
        wanted = [t for t in lits if vocab.tokens[t] in goals] if late and goals else ()
        if wanted and rng.random() < 0.5:
            pool = wanted
        elif len(lits) and (rng.random() < (0.8 if late else p_lit)):
            pool = lits
        else:
            pool = np.flatnonzero(allowed & close_m) if late else ()
            if not len(pool):
                pool = np.flatnonzero(allowed & pref_m)
            if not len(pool):
                pool = np.flatnonzero(allowed & byte_m)
            if not len(pool):
                pool = lits
        if not len(pool):
            return out.decode("utf-8", "replace") if ends else None
        tok = int(pool[rng.randrange(len(pool))])
        if not matcher.take(tok):
            raise AssertionError(f"matcher refused a token of its own mask: {vocab.tokens[tok]!r} after {bytes(out)!r}")
        out += vocab.tokens[tok]
    return None


_PREFERRED_SET = set(_PREFERRED)


# --- checking a parsed message -----------------------------------------------------------

def schema_errors(value, schema, where: str = "$") -> list[str]:
    """Where ``value`` breaks JSON ``schema`` (the subset the export writes: type (a list too),
    enum, const, properties, required, additionalProperties, items, anyOf/oneOf); [] when valid."""
    if schema is True or schema is None or schema == {}:
        return []
    errs: list[str] = []
    if "const" in schema and value != schema["const"]:
        errs.append(f"{where}: {value!r} is not the const {schema['const']!r}")
    if "enum" in schema and not any(value == e and type(value) is type(e) for e in schema["enum"]):
        errs.append(f"{where}: {value!r} not in enum")
    for combo in ("anyOf", "oneOf"):
        if combo in schema and all(schema_errors(value, s, where) for s in schema[combo]):
            errs.append(f"{where}: matches no {combo} alternative")
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_is_type(value, k) for k in kinds):
            return errs + [f"{where}: {value!r} is not {kind}"]
    if isinstance(value, dict) and (kind in ("object", None) or isinstance(kind, list)):
        props = schema.get("properties") or {}
        for k in schema.get("required") or ():
            if k not in value:
                errs.append(f"{where}: required {k!r} missing")
        for k, v in value.items():
            if k in props:
                errs += schema_errors(v, props[k], f"{where}.{k}")
            elif schema.get("additionalProperties") is False or (props and schema.get("additionalProperties") is None):
                errs.append(f"{where}: undeclared {k!r}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errs += schema_errors(item, schema["items"], f"{where}[{i}]")
    return errs


def _is_type(value, kind: str) -> bool:
    return {"string": lambda v: isinstance(v, str), "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "boolean": lambda v: isinstance(v, bool), "null": lambda v: v is None,
            "object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list)}[kind](value)


def unsound(parse, text: str, tools: list, choice: str, parallel: bool) -> str | None:
    """Why the parser's strict reading of ``text`` breaks the export's promise, or None.

    ``parse(text) -> message`` (may raise). ``tools``: the offered tools (OpenAI style)."""
    try:
        message = parse(text)
    except Exception as exc:  # noqa: BLE001 - any error is a finding
        return f"strict parse raised {type(exc).__name__}: {exc}"
    messages = message if isinstance(message, list) else [message]
    calls = [c for m in messages for c in (m.get("tool_calls") or [])]
    offered = {t["function"]["name"]: t["function"].get("parameters") for t in tools}
    if choice not in ("auto", "required", "none"):
        offered = {choice: offered[choice]}
    if choice == "none" and calls:
        return f"{len(calls)} call(s) with tool_choice none"
    if choice not in ("auto", "none") and not calls:
        return f"no call with tool_choice {choice}"
    if not parallel and len(calls) > 1:
        return f"{len(calls)} calls with --no-parallel"
    for call in calls:
        fn = call.get("function", call)
        name = fn.get("name")
        if name not in offered:
            return f"call to {name!r}, not offered"
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                return f"arguments of {name!r} are not JSON: {args!r}"
        errs = schema_errors(args, offered[name] or {"type": "object"})
        if errs:
            return f"arguments of {name!r}: {errs[0]}"
    return None
