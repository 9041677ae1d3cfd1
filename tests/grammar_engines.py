"""Acceptance checks with the engines' own matchers (test support for grammar export, issue 10;
docs/grammar.md "How it is verified").

Each ``accepts_<format>(grammar_text, text) -> bool`` feeds ``text`` byte by byte (a byte-level
vocabulary of 256 tokens plus an end token) to the engine's matcher and says whether the whole text
is accepted and the grammar may end there. Lark parses with Earley (dynamic lexer, ``regex=True``).
"""

from __future__ import annotations

import functools

import lark

EOS = 256
_BYTES = [bytes([i]) for i in range(256)]


def lark_parser(grammar: str) -> lark.Lark:
    return lark.Lark(grammar, parser="earley", lexer="dynamic", regex=True)


@functools.lru_cache(maxsize=64)
def _lark_cached(grammar: str) -> lark.Lark:
    return lark_parser(grammar)


def accepts_lark(grammar: str, text: str) -> bool:
    try:
        _lark_cached(grammar).parse(text)
        return True
    except lark.exceptions.LarkError:
        return False


class _ByteTok:
    eos_token_id = EOS
    bos_token_id = None
    tokens = _BYTES + [b"<eos>"]
    special_token_ids = [EOS]

    def __call__(self, data):
        return list(data if isinstance(data, bytes) else data.encode("utf-8"))


@functools.lru_cache(maxsize=1)
def _ll_tokenizer():
    import llguidance
    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTok()))


def llguidance_error(grammar: str) -> str | None:
    import llguidance
    ok, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, _ll_tokenizer())
    return None if ok else "; ".join(messages)


def accepts_llguidance(grammar: str, text: str) -> bool:
    import llguidance
    matcher = llguidance.LLMatcher(_ll_tokenizer(), grammar, log_level=0)
    if matcher.is_error():
        raise ValueError(matcher.get_error())
    for b in text.encode("utf-8"):
        if not matcher.consume_token(b):
            return False
    return matcher.is_accepting()


@functools.lru_cache(maxsize=1)
def _xgr_compiler():
    import xgrammar as xgr
    info = xgr.TokenizerInfo(_BYTES + [b"<eos>"], vocab_type=xgr.VocabType.RAW, stop_token_ids=[EOS])
    return xgr.GrammarCompiler(info, cache_enabled=False)


@functools.lru_cache(maxsize=64)
def xgrammar_compiled(grammar: str):
    import xgrammar as xgr
    return _xgr_compiler().compile_grammar(xgr.Grammar.from_ebnf(grammar))


def accepts_xgrammar(grammar: str, text: str) -> bool:
    import xgrammar as xgr
    matcher = xgr.GrammarMatcher(xgrammar_compiled(grammar))
    for b in text.encode("utf-8"):
        if not matcher.accept_token(b):
            return False
    return matcher.accept_token(EOS)


ACCEPTS = {"lark": accepts_lark, "llguidance": accepts_llguidance, "xgrammar": accepts_xgrammar}


@functools.lru_cache(maxsize=64)
def _structural_compiled(tag_json: str):
    import xgrammar as xgr
    return _xgr_compiler().compile_grammar(xgr.Grammar.from_structural_tag(tag_json))


def accepts_structural_tag(tag_json: str, text: str) -> bool:
    """Whether xgrammar's matcher, compiled from a structural tag (JSON text), accepts ``text``
    byte by byte and may end there."""
    import xgrammar as xgr
    matcher = xgr.GrammarMatcher(_structural_compiled(tag_json))
    for b in text.encode("utf-8"):
        if not matcher.accept_token(b):
            return False
    return matcher.accept_token(EOS)
