"""The serving engines' own non-streaming parsers, as ``benchmarks/whole_speed.py`` times them
(issue 33, "against the engines' own non-streaming paths").

Per catalogue family, the engine's own parser names are those of ``benchmarks/serving_table.py``
(``VLLM`` and ``SGLANG``: the parsers a ``vllm serve`` / ``sglang serve`` user picks for that model).
One call is what the engine's chat server does for one non-streamed response, parser built per
request as the servers build it:

* **SGLang 0.5.23** (``serving_chat.py``, ``_build_chat_response``): ``ReasoningParser(name,
  stream_reasoning=False, force_reasoning=False).parse_non_stream(text)`` (True for
  :data:`SGLANG_FORCE`), then
  ``FunctionCallParser(tools, name).parse_non_stream(normal_text)``;
* **vLLM 0.33** (``OpenAIServingChat.chat_completion_full_generator``): the composed parser class of
  ``ParserManager.get_parser(tool_parser_name=..., reasoning_parser_name=..., enable_auto_tools=True)``
  built as ``cls(tokenizer, request.tools, chat_template_kwargs=None, model_config=None)``, then
  ``parser.parse(text, request, enable_auto_tools=True)`` (its ``extract_reasoning`` and
  ``extract_tool_calls``). vLLM's parsers look their delimiters up in a tokenizer: each family
  gets the byte-level BPE tokenizer ``serving_table.tokenizer_dir`` trains on the benchmark's own
  output and the template (its special-token spellings as special tokens, its tag-like
  delimiters as added tokens), loaded with vLLM's ``get_tokenizer``.

An engine that is not installed in this environment gives no column (:func:`available` says why);
a family without an engine parser, or whose engine parser cannot be built or run here, gives
``n/a`` with the reason (:func:`whole_call`). The two engines live in different virtual
environments (docs/serving.md): run ``whole_speed.py`` in each (``.venv`` for vLLM,
``.venv-sglang`` for SGLang); every ratio is taken within one run.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from serving_table import SGLANG, VLLM  # noqa: E402

#: families whose SGLang reasoning parser refuses ``force_reasoning=False`` (SGLang's chat server
#: forces it for them with thinking on)
SGLANG_FORCE = {"k2_horizon"}
_TOKENIZERS: dict[str, Any] = {}
_ROOT = tempfile.mkdtemp(prefix="respc-engines-")


def available() -> dict[str, str | None]:
    """``{"sglang": None or why not, "vllm": None or why not}``: None when that engine's parser
    modules import here."""
    out: dict[str, str | None] = {}
    try:
        from sglang.srt.function_call.function_call_parser import FunctionCallParser  # noqa: F401
        from sglang.srt.parser.reasoning_parser import ReasoningParser  # noqa: F401
        out["sglang"] = None
    except Exception as exc:  # noqa: BLE001 - any import failure means no column
        out["sglang"] = f"SGLang's parser modules do not import here ({type(exc).__name__}: {exc})"
    try:
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: F401
        from vllm.parser.parser_manager import ParserManager  # noqa: F401
        out["vllm"] = None
    except Exception as exc:  # noqa: BLE001
        out["vllm"] = f"vLLM's parser modules do not import here ({type(exc).__name__}: {exc})"
    return out


def _tools(names: list[str]) -> list[dict]:
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names or ["f"]]


def _sglang(family: str, text: str, names: list[str]) -> Callable[[], Any]:
    from sglang.srt.entrypoints.openai.protocol import Tool
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    tool, reasoning = SGLANG[family]
    tools = [Tool(**t) for t in _tools(names)]
    force = family in SGLANG_FORCE

    def run() -> Any:
        normal, reasoning_text, calls = text, None, []
        if reasoning:
            reasoning_text, normal = ReasoningParser(reasoning, stream_reasoning=False,
                                                     force_reasoning=force).parse_non_stream(text)
        if tool:
            normal, calls = FunctionCallParser(tools, tool).parse_non_stream(normal or "")
        return reasoning_text, normal, calls

    return run


def _vllm(family: str, text: str, names: list[str]) -> Callable[[], Any]:
    from serving_table import tokenizer_dir
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser.parser_manager import ParserManager
    from vllm.tokenizers import get_tokenizer

    tool, reasoning = VLLM[family]
    if family == "gpt_oss":
        raise LookupError("vLLM serves gpt-oss through its HarmonyParser, which reads the output's token "
                          "ids with openai_harmony's o200k encoding (the model's vocabulary, not available offline)")
    if family not in _TOKENIZERS:
        sys.path.insert(0, str(HERE.parent / "tests"))  # serving_support, which tokenizer_dir reads
        # trained on the output and the template, so every delimiter the template spells like a
        # special token is one (vLLM's parsers look them up by id when they are built)
        template = (HERE.parent / "templates" / f"{family}.json").read_text(encoding="utf-8")
        _TOKENIZERS[family] = get_tokenizer(tokenizer_dir(family, [{"prefix": template, "text": text}], _ROOT))
    tokenizer = _TOKENIZERS[family]
    cls = ParserManager.get_parser(tool_parser_name=tool, reasoning_parser_name=reasoning,
                                   enable_auto_tools=tool is not None, model_name="respc-bench")
    if cls is None:
        raise LookupError("vLLM composes no parser for these names")
    request = ChatCompletionRequest(model="respc-bench", messages=[{"role": "user", "content": "hi"}],
                                    tools=_tools(names), tool_choice="auto")

    def run() -> Any:
        parser = cls(tokenizer, request.tools, chat_template_kwargs=None, model_config=None)
        return parser.parse(text, request, enable_auto_tools=tool is not None)

    return run


def whole_call(engine: str, family: str, text: str, names: list[str]) -> tuple[Callable[[], Any] | None, str, int]:
    """``(fn, "", calls)``: ``fn()`` parses ``text`` once as ``engine``'s server does for a
    non-streamed response (parser built per request), tools named ``names`` declared; already
    called once, which found ``calls`` tool calls (what the engine's parser reads, not checked
    against respc's message: ``benchmarks/serving_table.py`` measures who is right). ``(None, why,
    0)`` when the family has no parser of that engine or it fails here."""
    table = {"sglang": SGLANG, "vllm": VLLM}[engine]
    if family not in table:
        return None, f"no {engine} parser for this family (benchmarks/serving_table.py)", 0
    try:
        fn = (_sglang if engine == "sglang" else _vllm)(family, text, names)
        calls = fn()[2]
    except Exception as exc:  # noqa: BLE001 - an engine parser that cannot run here is reported, not fatal
        first = (str(exc).strip().splitlines() or [""])[0]
        return None, f"{type(exc).__name__}: {first[:160]}", 0
    return fn, "", len(calls or [])
