"""Token ids split inside a character are decoded whole, however many come in one feed (issue 24
item 5, docs/events.md "Token ids").

The tokenizer is a real byte-level BPE built here with ``tokenizers`` (every byte one token, the
GPT-2 byte alphabet, its ByteLevel decoder: U+FFFD for a character whose bytes are not all there)."""

from __future__ import annotations

import importlib

import pytest

from support import CATALOGUE_NAMES, family_cases

tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers package is not installed (pip install -e '.[test]')")

NAMES = CATALOGUE_NAMES


def _byte_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE({c: i for i, c in enumerate(alphabet)}, []))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok


TOK = _byte_tokenizer()


def _run(module, prefix, feeds, errors):
    parser = module.ResponseParser(prefix, tokenizer=TOK, errors=errors)
    events = [e for ids in feeds for e in parser.feed(ids)]
    message, final = parser.finalize()
    return message, events + final


@pytest.mark.parametrize("errors", ["strict", "recover"])
def test_one_feed_of_nine_ids_ending_inside_a_character(errors):
    qwen3 = importlib.import_module("respc.generated.qwen3")
    ids = TOK.encode("Hello! 中").ids
    assert len(ids) == 10 and TOK.decode(ids[:9]).endswith("\ufffd")  # 9 ids, the last 2 inside 中
    message, events = _run(qwen3, "", [ids[:9], ids[9:]], errors)
    assert message == {"role": "assistant", "content": "Hello! 中"}
    chunks = [e["text"] for e in events if e["type"] == "region_chunk"]
    assert chunks == ["Hello! ", "中"]


@pytest.mark.parametrize("errors", ["strict", "recover"])
def test_feeds_of_three_ids_over_four_byte_emoji(errors):
    qwen3 = importlib.import_module("respc.generated.qwen3")
    ids = TOK.encode("😀😀😀😀 ok").ids
    message, events = _run(qwen3, "", [ids[k:k + 3] for k in range(0, len(ids), 3)], errors)
    assert message == {"role": "assistant", "content": "😀😀😀😀 ok"}
    assert all("\ufffd" not in e["text"] for e in events if e["type"] == "region_chunk")


def test_the_outputs_own_replacement_characters_are_kept_and_not_held():
    qwen3 = importlib.import_module("respc.generated.qwen3")
    parser = qwen3.ResponseParser("", tokenizer=TOK)
    # a lone continuation byte (0x80) is invalid wherever it is: U+FFFD of the output itself
    cont = TOK.encode("\u00e9").ids[1:]  # é is C3 A9: A9 alone is a continuation byte
    events = parser.feed(TOK.encode("ab").ids + cont * 6)
    assert "".join(e["text"] for e in events if e["type"] == "region_chunk") == "ab" + "\ufffd" * 6
    assert parser.finalize()[0]["content"] == "ab" + "\ufffd" * 6


def _answer(name: str):
    for case in family_cases(name):
        message = case["message"]
        content = message.get("content")
        if set(message) <= {"role", "content", "reasoning_content"} and content and content in case["text"]:
            return case["prefix"], case["text"], content
    return None


@pytest.mark.parametrize("name", NAMES)
def test_every_family_keeps_split_characters(name):
    prefix, text, content = _answer(name)
    at = text.rindex(content) + len(content)
    text = text[:at] + " 中😀é" + text[at:]
    ids = TOK.encode(text).ids
    for errors in ("strict", "recover"):
        for size in (3, 9):
            message, _ = _run(importlib.import_module(f"respc.generated.{name}"), prefix,
                              [ids[k:k + size] for k in range(0, len(ids), size)], errors)
            assert message["content"].rstrip() == content + " 中😀é", (errors, size)
