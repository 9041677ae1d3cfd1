"""The vLLM plug-in (issue 9, ``respc.vllm``) driven through vLLM's own classes.

The parsers are composed by vLLM's ``ParserManager.get_parser`` (a ``DelegatingParser`` over the
plug-in's ``ReasoningParser`` and ``ToolParser``) and called as vLLM's serving layer calls them:
``set_prompt_token_ids`` + ``parse`` for a whole output, ``parse_delta(..., prompt_token_ids=...,
finished=...)`` per delta, with vLLM's ``ChatCompletionRequest`` and ``DeltaMessage``. Every family
case and corpus/peer vector is fed whole and in random multi-token deltas; the accumulated
reasoning, content and tool calls must equal respc's own message for the same prompt and tools.

There is no model tokenizer offline, so the tokenizer is a character-level one (one token per
character, ``decode`` joins them): deltas of several characters are multi-token deltas.

vLLM cannot be installed whole without a GPU build of torch; these tests need only its parser and
protocol modules (see README, "vLLM plug-in"): ``pip install --no-deps vllm==0.33.0 && pip install
-e '.[vllm]'``. Run them with ``python -m pytest -q -m vllm tests/test_vllm_plugin.py``.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from serving_support import SPLIT_LIMITS, SPLIT_LIMITS_END
from support import CORPUS, SHARED, chunkings, load_jsonl

pytestmark = pytest.mark.vllm

INSTALL = 'python -m pip install --no-deps vllm==0.33.0 && python -m pip install -e ".[test,vllm]"'
pytest.importorskip("vllm.parser.parser_manager", reason=f"vLLM's parser modules are not installed: {INSTALL}")

from vllm.entrypoints.generate.base.protocol import DeltaMessage  # noqa: E402
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.parser.abstract_parser import DelegatingParser  # noqa: E402
from vllm.parser.parser_manager import ParserManager  # noqa: E402
from vllm.reasoning import ReasoningParser, ReasoningParserManager  # noqa: E402
from vllm.tool_parsers import ToolParser, ToolParserManager  # noqa: E402

import respc.vllm as rv  # noqa: E402
from support import CATALOGUE_TEMPLATES as TEMPLATES, PEER2_XFAIL, PEER_PREFIX, PEER_XFAIL as XFAIL  # noqa: E402

FAMILIES = Path(__file__).parent / "cases" / "families"
PEER = SHARED / "corpus" / "peer_vectors.jsonl"
PEER2 = SHARED / "corpus" / "peer_vectors2.jsonl"


class CharTokenizer:
    """One token per character (id = code point); no special tokens unless given."""

    def __init__(self, specials=(), eos=None):
        self.all_special_tokens = list(specials)
        self.eos_token = eos

    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]

    def decode(self, ids, skip_special_tokens=True, **kwargs):
        return "".join(map(chr, ids))

    def get_vocab(self):
        return {}


TOK = CharTokenizer()


def _cases() -> list:
    params = []
    for path in sorted(FAMILIES.glob("*.json")):
        family = json.loads(path.read_text(encoding="utf-8"))
        for case in family.get("cases", []):
            cid = f"{family['family']}-{case['name']}"
            marks = ([pytest.mark.xfail(strict=True, reason="call inside reasoning: " + SPLIT_LIMITS[cid])]
                     if cid in SPLIT_LIMITS else
                     [pytest.mark.xfail(strict=True, reason="end of turn inside reasoning: " + SPLIT_LIMITS_END[cid])]
                     if cid in SPLIT_LIMITS_END else [])
            params.append(pytest.param(family["family"], case["prefix"], case["text"], case.get("tools"),
                                       id=cid, marks=marks))
    for vector in load_jsonl(CORPUS):
        params.append(pytest.param(vector["family"], vector["prefix"], vector["text"], vector.get("tools"),
                                   id=vector["id"]))
    for path, known in ((PEER, XFAIL), (PEER2, PEER2_XFAIL)):
        # the second harvest (issue 25): llama.cpp's and vLLM 0.34's parser-test outputs, e.g. a
        # DSML call block after a prompt that closed the reasoning (deepseek_v4)
        for vector in load_jsonl(path):
            if vector["family"] not in TEMPLATES or vector["id"] in known:
                continue
            params.append(pytest.param(vector["family"], PEER_PREFIX.get(vector["id"], vector["prefix"]),
                                       vector["text"], vector.get("tools"), id=vector["id"]))
    return params


def _parser_cls(family: str):
    rv.register(family)
    name = f"respc-{family}"
    cls = ParserManager.get_parser(tool_parser_name=name, reasoning_parser_name=name, enable_auto_tools=True)
    assert issubclass(cls, DelegatingParser)
    cls.tool_parser_cls.tool_call_ids = staticmethod(lambda n: f"call_{n}")
    cls.reasoning_parser_cls.tool_call_ids = staticmethod(lambda n: f"call_{n}")
    return cls


def _request(tools, message, tool_choice="auto"):
    """A vLLM request with the vector's tools, or tools named after the message's calls."""
    if not tools:
        names = sorted({c["function"]["name"] for c in message.get("tool_calls") or []}) or ["f"]
        tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]
    return ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], tools=tools,
                                 tool_choice=tool_choice), tools


def _expected(family, prefix, text, tools):
    module = importlib.import_module(f"respc.generated.{family}")
    return module.parse_response(text, prefix=prefix, tools=tools, errors="recover")


def _calls(message):
    return [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]


def _args(arguments: str, like):
    return arguments if isinstance(like, str) else json.loads(arguments)


def _stream(cls, request, prompt, pieces, diagnostics: list | None = None):
    """Feed ``pieces`` through vLLM's ``parse_delta``; returns (reasoning, content, calls) as a
    client accumulates them, and appends the tool parser's stream diagnostics to ``diagnostics``."""
    parser = cls(TOK, request.tools)
    deltas = []
    for n, piece in enumerate(pieces):
        delta = parser.parse_delta(piece, TOK.encode(piece), request, prompt_token_ids=TOK.encode(prompt),
                                   finished=n == len(pieces) - 1)
        if delta is not None:
            assert isinstance(delta, DeltaMessage)
            deltas.append(delta)
    reasoning = "".join(d.reasoning or "" for d in deltas) or None
    content = "".join(d.content or "" for d in deltas) or None
    stream = getattr(getattr(parser, "_tool_parser", None), "_stream", None)
    if diagnostics is not None and stream is not None:
        # what the stream declared diverging (recover_arguments="stream", docs/openai.md)
        diagnostics.extend(stream.diagnostics)
    calls: dict[int, list] = {}
    for delta in deltas:
        for call in delta.tool_calls:
            got = calls.setdefault(call.index, [None, "", ""])
            got[0] = got[0] or call.id
            if call.function is not None:
                got[1] += call.function.name or ""
                got[2] += call.function.arguments or ""
    return reasoning, content, [calls[i] for i in sorted(calls)]


@pytest.mark.parametrize("family,prefix,text,tools", _cases())
def test_vectors_through_vllm(family, prefix, text, tools):
    message0 = _expected(family, prefix, text, tools)
    request, tools = _request(tools, message0)
    message = _expected(family, prefix, text, tools)
    expected_calls = _calls(message)
    cls = _parser_cls(family)

    # whole output (non-streaming): vLLM's parse after set_prompt_token_ids
    parser = cls(TOK, request.tools)
    parser.set_prompt_token_ids(TOK.encode(prefix))
    reasoning, content, calls = parser.parse(text, request, enable_auto_tools=True)
    assert reasoning == (message.get("reasoning_content") or None)
    assert (content or None) == (message.get("content") or None)
    got = [(c.name, _args(c.arguments, a)) for c, (_, a) in zip(calls or [], expected_calls)]
    assert got == expected_calls and len(calls or []) == len(expected_calls)
    assert [c.id for c in calls or []] == [f"call_{n}" for n in range(len(expected_calls))]

    # streaming, whole and in random multi-token deltas
    pieces = chunkings(text, family + text[:20])
    for how in ("whole", "random"):
        diagnostics: list = []
        reasoning, content, calls = _stream(cls, request, prefix, pieces[how], diagnostics)
        want_calls = list(expected_calls)
        # a call whose repaired arguments differ from what was already streamed has the streamed
        # arguments (declared); a call sent and then found malformed occurs in no vector
        assert not [d for d in diagnostics if d.get("kind") != "streamed-arguments-differ"], how
        for d in diagnostics:
            want_calls[d["index"]] = (want_calls[d["index"]][0], json.loads(d["sent"]))
        assert reasoning == (message.get("reasoning_content") or None), how
        assert content == (message.get("content") or None), how
        assert [(name, _args(args, a)) for (_, name, args), (_, a) in zip(calls, want_calls)] == want_calls, how
        assert len(calls) == len(want_calls), how
        assert [c[0] for c in calls] == [f"call_{n}" for n in range(len(calls))], how


FUNCTIONARY_PROMPT = "<|start_header_id|>assistant<|end_header_id|>\n\n>>>"


def test_tool_parser_reads_after_the_prompt_it_asks_of_the_reasoning_parser():
    """functionary v3.2's prompt ends in '>>>': the tool parser, which vLLM gives only the output,
    asks the request's respc reasoning parser (DelegatingParser's ``_reasoning_parser``) for the
    prompt; built alone it has none and reads 'all\nHello' as text (docs/serving.md)."""
    cls = _parser_cls("functionary_v3_2")
    request, _ = _request(None, {"tool_calls": [{"function": {"name": "get_weather"}}]})
    parser = cls(TOK, request.tools)
    assert parser._tool_parser._partner is parser._reasoning_parser
    parser.set_prompt_token_ids(TOK.encode(FUNCTIONARY_PROMPT))
    assert parser.parse("all\nHello", request, enable_auto_tools=True) == (None, "Hello", None)
    reasoning, content, calls = _stream(cls, request, FUNCTIONARY_PROMPT, ["get_", 'weather\n{"city"', ': "Paris"}'])
    assert (reasoning, content, calls) == (None, None, [["call_0", "get_weather", '{"city": "Paris"}']])
    alone = rv.tool_parser_class("functionary_v3_2")(TOK, request.tools)
    assert alone._partner is None
    assert alone.extract_tool_calls("all\nHello", request).content == "all\nHello"


QWEN3_PROMPT = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
QWEN3_TEXT = ('Checking.\n</think>\n\nLet me look.\n<tool_call>\n{"name": "get_weather", "arguments": '
              '{"city": "Paris", "days": "3"}}\n</tool_call>')
WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]


def test_typed_arguments_and_prompt_opened_reasoning():
    """The prompt opens the reasoning (``<think>\\n`` at its end); the schema types "3" as 3."""
    cls = _parser_cls("qwen3")
    request, _ = _request(WEATHER, {})
    prompt = QWEN3_PROMPT + "<think>\n"
    reasoning, content, calls = _stream(cls, request, prompt, [QWEN3_TEXT[i:i + 3] for i in range(0, len(QWEN3_TEXT), 3)])
    assert (reasoning, content) == ("Checking.", "Let me look.")
    assert calls == [["call_0", "get_weather", '{"city": "Paris", "days": 3}']]


def test_tool_choice_none_and_no_tools_pass_content_through():
    """No tool parsing: the text after the reasoning is content as written, markup and all."""
    cls = _parser_cls("qwen3")
    prompt = QWEN3_PROMPT + "<think>\n"
    after = QWEN3_TEXT.split("</think>", 1)[1]
    for request in (ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}]),
                    _request(WEATHER, {}, tool_choice="none")[0]):
        assert request.tool_choice == "none"
        reasoning, content, calls = _stream(cls, request, prompt, [QWEN3_TEXT[i:i + 5] for i in range(0, len(QWEN3_TEXT), 5)])
        assert (reasoning, content, calls) == ("Checking.", after, [])
        parser = cls(TOK, request.tools)
        parser.set_prompt_token_ids(TOK.encode(prompt))
        assert parser.parse(QWEN3_TEXT, request, enable_auto_tools=True) == ("Checking.", after, [])


def _reasoning_call_cases() -> list:
    """Family cases whose message has reasoning and tool calls (calls after, inside or ending it)."""
    params = []
    for path in sorted(FAMILIES.glob("*.json")):
        family = json.loads(path.read_text(encoding="utf-8"))
        for case in family.get("cases", []):
            message = _expected(family["family"], case["prefix"], case["text"], case.get("tools"))
            if message.get("reasoning_content") and message.get("tool_calls"):
                params.append(pytest.param(family["family"], case["prefix"], case["text"], case.get("tools"),
                                           id=f"{family['family']}-{case['name']}"))
    return params


@pytest.mark.parametrize("family,prefix,text,tools", _reasoning_call_cases())
def test_tool_choice_none_streamed_equals_whole(family, prefix, text, tools):
    """tool_choice="none" with tools (issue 25: what the client accumulates from the stream equals
    the non-streamed message): streamed, whole and in random deltas, the reasoning, content and
    (no) tool calls equal vLLM's ``parse`` of the whole output; a call inside unclosed reasoning,
    which only the end of the stream decides, is no call and its text is content as written."""
    message = _expected(family, prefix, text, tools)
    request, _ = _request(tools, message, tool_choice="none")
    cls = _parser_cls(family)
    parser = cls(TOK, request.tools)
    parser.set_prompt_token_ids(TOK.encode(prefix))
    reasoning, content, calls = parser.parse(text, request, enable_auto_tools=True)
    assert not calls
    pieces = chunkings(text, family + text[:20])
    for how in ("whole", "random"):
        got = _stream(cls, request, prefix, pieces[how])
        assert got == (reasoning or None, content or None, []), how


def test_reasoning_end_from_the_prompt():
    """is_reasoning_end reads the prompt through the template's start anchor."""
    reasoning = ReasoningParserManager.get_reasoning_parser(next(iter(rv.register("qwen3"))))(TOK)
    assert reasoning.is_reasoning_end(TOK.encode(QWEN3_PROMPT + "<think>\n")) is False
    assert reasoning.is_reasoning_end(TOK.encode(QWEN3_PROMPT + "<think>\n\n</think>\n\n")) is True
    assert reasoning.is_reasoning_end(TOK.encode(QWEN3_PROMPT)) is False  # the model may still think
    assert reasoning.is_reasoning_end(TOK.encode(QWEN3_PROMPT + "<think>\nhm</think>Hi")) is True
    reasoning.set_prompt_token_ids(TOK.encode(QWEN3_PROMPT + "<think>\n"))
    ids = TOK.encode("a</think>rest")
    assert reasoning.extract_content_ids(ids) == TOK.encode("rest")
    hermes = ReasoningParserManager.get_reasoning_parser(next(iter(rv.register("hermes2pro"))))
    assert hermes(TOK).is_reasoning_end(TOK.encode("")) is True  # no reasoning field


def test_adjust_request_keeps_special_delimiters():
    """skip_special_tokens=False when a delimiter is a special token (not for the EOS token)."""
    tok = CharTokenizer(specials=["[TOOL_CALLS]", "</s>"], eos="</s>")
    rv.register("mistral_nemo", "hermes2pro")
    for name, expected in (("respc-mistral_nemo", False), ("respc-hermes2pro", None)):
        tool = ToolParserManager.get_tool_parser(name)(tok, None)
        request, _ = _request(WEATHER, {})
        assert tool.adjust_request(request).skip_special_tokens is expected, name
    tool = ToolParserManager.get_tool_parser("respc-mistral_nemo")(tok, None)
    no_tools = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}])
    assert tool.adjust_request(no_tools).skip_special_tokens is None  # no tools: nothing to parse
    assert rv.special_delimiters("mistral_nemo", tok) == ["[TOOL_CALLS]"]
    # delimiters written in a pattern (mistral_small_3_2's open_pattern escapes them)
    tok = CharTokenizer(specials=["[TOOL_CALLS]", "[ARGS]", "[INST]", "</s>"], eos="</s>")
    assert rv.special_delimiters("mistral_small_3_2", tok) == ["[ARGS]", "[TOOL_CALLS]"]


def test_plugin_module_registers_through_vllm(monkeypatch):
    """vLLM's own plug-in loader imports respc.vllm_plugin by module name."""
    monkeypatch.setenv("RESPC_VLLM_TEMPLATES", "qwen3, gemma4")
    sys.modules.pop("respc.vllm_plugin", None)
    ToolParserManager.import_tool_parser("respc.vllm_plugin")
    assert sorted(sys.modules["respc.vllm_plugin"].REGISTERED) == ["respc-gemma4", "respc-qwen3"]
    assert issubclass(ToolParserManager.get_tool_parser("respc-gemma4"), ToolParser)
    assert issubclass(ReasoningParserManager.get_reasoning_parser("respc-gemma4"), ReasoningParser)
    with pytest.raises(ValueError, match="no catalogue template named 'nope'"):
        rv.register("nope")


class PieceTokenizer:
    """Tokens of three characters each (the last may be shorter): multi-character tokens whose
    edges do not fall on the delimiters' edges."""

    def __init__(self):
        self.vocab: list[str] = []
        self.all_special_tokens: list[str] = []
        self.eos_token = None

    def encode(self, text, add_special_tokens=False):
        ids = []
        for k in range(0, len(text), 3):
            self.vocab.append(text[k:k + 3])
            ids.append(len(self.vocab) - 1)
        return ids

    def decode(self, ids, skip_special_tokens=True, **kwargs):
        return "".join(self.vocab[i] for i in ids)


class ByteTokenizer:
    """One token per UTF-8 byte; a character of several bytes decodes to U+FFFD until whole."""

    all_special_tokens: list = []
    eos_token = None

    def encode(self, text, add_special_tokens=False):
        return list(text.encode("utf-8"))

    def decode(self, ids, skip_special_tokens=True, **kwargs):
        return bytes(ids).decode("utf-8", errors="replace")


def _reasoning_parser(family, tokenizer, prompt):
    parser = ReasoningParserManager.get_reasoning_parser(next(iter(rv.register(family))))(tokenizer)
    parser.set_prompt_token_ids(tokenizer.encode(prompt))
    return parser


def test_count_reasoning_tokens():
    """count_reasoning_tokens: the output tokens whose text overlaps the reasoning between its
    delimiters (vLLM's usage.completion_tokens_details.reasoning_tokens)."""
    output = "<think>\nabc\n</think>\n\nHi"
    chars = _reasoning_parser("qwen3", TOK, QWEN3_PROMPT)
    assert chars.count_reasoning_tokens(TOK.encode(output)) == len("\nabc\n")
    # the prompt opened the reasoning: every output character up to </think>
    opened = _reasoning_parser("qwen3", TOK, QWEN3_PROMPT + "<think>\n")
    assert opened.count_reasoning_tokens(TOK.encode("hm</think>Hi")) == 2
    # three-character tokens: "<th" "ink" ">\na" "bc\n" "</t" ...: two overlap "\nabc\n"
    pieces = PieceTokenizer()
    ids = pieces.encode(output)
    prompt_ids = pieces.encode(QWEN3_PROMPT)
    parser = ReasoningParserManager.get_reasoning_parser(next(iter(rv.register("qwen3"))))(pieces)
    parser.set_prompt_token_ids(prompt_ids)
    assert parser.count_reasoning_tokens(ids) == 2
    # a character split over two byte tokens: both count
    byte = _reasoning_parser("qwen3", ByteTokenizer(), QWEN3_PROMPT)
    assert byte.count_reasoning_tokens(ByteTokenizer().encode("<think>é</think>ok")) == 2
    # no reasoning field: 0
    assert _reasoning_parser("hermes2pro", TOK, "").count_reasoning_tokens(TOK.encode(output)) == 0


def test_count_reasoning_tokens_grows_with_the_output():
    """vLLM's continuous usage calls it with the growing output each step: the counts are those of
    each prefix counted afresh, and a call with other ids starts again."""
    output = TOK.encode("<think>\nlong thought\n</think>\n\nAnswer <think>more</think> end")
    parser = _reasoning_parser("qwen3", TOK, QWEN3_PROMPT)
    steps = [parser.count_reasoning_tokens(output[:k]) for k in range(0, len(output) + 1, 5)]
    fresh = [_reasoning_parser("qwen3", TOK, QWEN3_PROMPT).count_reasoning_tokens(output[:k])
             for k in range(0, len(output) + 1, 5)]
    assert steps == fresh
    assert steps[-1] == len("\nlong thought\n") + len("more")  # (qwen3's reasoning region repeats)
    assert steps == sorted(steps) and steps[2] == 3  # the first 10 ids: "<think>\nlo"
    assert parser.count_reasoning_tokens(TOK.encode("<think>xy</think>")) == 2  # other ids: counted afresh


def test_gpt_oss_models_take_vllms_harmony_parsers():
    """A model whose ``model_type`` is ``gpt_oss`` makes vLLM compose its ``HarmonyParser``
    (``ParserManager.get_parser(..., is_harmony=True)``, as the chat and Responses serving objects
    call it), which accepts only vLLM's own gpt-oss parsers: ``respc-gpt_oss`` is refused when a
    request builds the parser, with vLLM's message; ``--reasoning-parser openai_gptoss
    --tool-call-parser openai`` (what docs/serving.md, "gpt-oss", tells users) builds. Issue 25 item 4."""
    from vllm.parser import ParserManager

    rv.register("gpt_oss")
    respc_cls = ParserManager.get_parser(tool_parser_name="respc-gpt_oss", reasoning_parser_name="respc-gpt_oss",
                                         enable_auto_tools=True, is_harmony=True)
    with pytest.raises(ValueError, match="Harmony requires GptOssReasoningParser, got RespcGptOssReasoningParser"):
        respc_cls(TOK)
    own = ParserManager.get_parser(tool_parser_name="openai", reasoning_parser_name="openai_gptoss",
                                   enable_auto_tools=True, is_harmony=True)
    assert own.__name__ == "HarmonyParser"
    own(TOK)


#: outputs whose escapes give surrogate code points in an argument value (red team s12b): a pythonic
#: call's Python escape (the reader keeps it, as Python does) and a JSON body's escape
SURROGATE_OUTPUTS = [("llama4_pythonic", "", "[get_weather(city='\\ud800')]<|eot|>"),
                     ("llama4_pythonic", "", "[get_weather(city='\\ud83d\\ude00')]<|eot|>"),
                     ("hermes2pro", "<|im_start|>assistant\n",
                      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "\\ud800"}}\n</tool_call>')]


@pytest.mark.parametrize("family,prefix,text", SURROGATE_OUTPUTS)
def test_arguments_with_a_surrogate_serialize(family, prefix, text):
    """``[get_weather(city='\\ud800')]``: the plug-in's calls (whole) and ``DeltaMessage``\\ s
    (streamed) held the argument text with a raw surrogate, and pydantic's ``model_dump_json``,
    what vLLM does to send them, raised. Now the argument text writes it as its JSON escape: every
    delta serializes, the streamed fragments add up to the whole output's arguments, and they read
    back as the message's value (the same UTF-16 text)."""
    request, tools = _request(None, {"tool_calls": [{"function": {"name": "get_weather"}}]})
    want = _expected(family, prefix, text, tools)["tool_calls"][0]["function"]["arguments"]["city"]
    cls = _parser_cls(family)
    parser = cls(TOK, request.tools)
    parser.set_prompt_token_ids(TOK.encode(prefix))
    _, _, calls = parser.parse(text, request, enable_auto_tools=True)
    (call,) = calls
    call.model_dump_json()
    whole = call.arguments
    assert json.loads(whole)["city"].encode("utf-16-le", "surrogatepass") == want.encode("utf-16-le", "surrogatepass")
    for pieces in ([text], list(text)):
        parser = cls(TOK, request.tools)
        arguments = ""
        for n, piece in enumerate(pieces):
            delta = parser.parse_delta(piece, TOK.encode(piece), request, prompt_token_ids=TOK.encode(prefix),
                                       finished=n == len(pieces) - 1)
            if delta is not None:
                delta.model_dump_json()
                arguments += "".join(c.function.arguments or "" for c in delta.tool_calls if c.function)
        assert arguments == whole
