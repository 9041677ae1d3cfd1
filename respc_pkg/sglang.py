"""SGLang plug-in: a function-call detector and a reasoning detector backed by a respc parser
(docs/serving.md "SGLang").

Needs SGLang (tested with ``sglang==0.5.23``; README, "SGLang plug-in", gives the install). Both
classes subclass SGLang's own bases and speak its types: :class:`RespcFunctionCallDetector` is a
``sglang.srt.function_call.base_format_detector.BaseFormatDetector`` returning SGLang's
``StreamingParseResult`` with ``ToolCallItem``\\ s; :class:`RespcReasoningDetector` is a
``sglang.srt.parser.reasoning_parser.BaseReasoningFormatDetector`` returning that module's
``StreamingParseResult`` (``normal_text``, ``reasoning_text``). The parser runs with
``errors="recover"``: model output never raises.

Theory of operation
-------------------
SGLang's chat server sends each decoded delta through the reasoning parser first, then the
``normal_text`` it returns through the tool-call parser (``serving_chat.py``). One respc parse holds
reasoning, answer and tool calls together, so the two detectors share the work like this:

* The reasoning detector parses the raw output with the prompt prefix (the chat prompt that may
  pre-open a reasoning block): the rendered prompt, which the plug-in's hooks take from SGLang's
  serving layer (:func:`install_hooks`), else what ``force_reasoning`` says (:func:`sglang_prefix`). ``reasoning_text`` is the reasoning as the message stores it,
  streamed (``respc.openai.ChatCompletionStream``'s reasoning deltas). When SGLang says a tool-call
  parser reads its output (``tool_call_parser_active``), ``normal_text`` is the *raw* output with
  the reasoning text cut out but its delimiters kept (a reasoning opener the prompt holds is sent
  first, as is the prompt's part of a delimiter the prompt ends inside), read from the parser's
  trace of where each raw character went
  (:func:`respc.show._traced`): the tool-call detector sees the answer and the calls as the model
  wrote them, and where reasoning ended. Beside a function-call detector that is not respc's
  (SGLang's ``qwen``), the reasoning's delimiters are cut out too (:func:`_foreign_tool_parser`).
  Otherwise ``normal_text`` is the answer as the message stores it.
* The function-call detector parses that text again with the prefix ``""`` (reasoning blocks are
  now empty).
  ``normal_text`` is the answer, ``calls`` are ``ToolCallItem``\\ s: in streaming, ``tool_index`` is
  the call's number in the output (SGLang sends it as the delta's ``index``), ``name`` comes once,
  then ``parameters`` are JSON text fragments whose concatenation is the call's JSON arguments
  (``ChatCompletionStream`` with ``recover_arguments="stream"``: as the model writes them, as
  with ``errors="strict"``; a call already sent whose body then turns out malformed or cut off
  stays as sent, its raw text is not sent again as ``normal_text``, and the stream's
  ``diagnostics`` name it). In :meth:`RespcFunctionCallDetector.detect_and_parse`, as in SGLang's own
  ``parse_base_json``, ``tool_index`` is the tool's position in the request (-1: not declared) and
  ``parameters`` is ``json.dumps`` of the arguments. Calls to tools the request does not declare are
  kept, as respc's message keeps them (SGLang's own detectors drop them unless
  ``SGLANG_FORWARD_UNKNOWN_TOOLS`` is set).

Register both under one name with :func:`register` (``register("qwen3")`` adds ``respc-qwen3`` to
``FunctionCallParser.ToolCallParserEnum`` and ``ReasoningParser.DetectorMap``), then serve with
``--reasoning-parser respc-qwen3 --tool-call-parser respc-qwen3``; SGLang's plug-in entry point
(group ``sglang.srt.plugins``, loaded before the command line is read) calls :func:`register_plugin`,
which registers every catalogue template. docs/serving.md, "SGLang", says how to launch.

Limits: the tool-call detector alone (no respc reasoning parser in front) reads text without the
prompt prefix, so output that starts inside a reasoning block pre-opened by the prompt, or inside
an opener the prompt began (functionary v3.2's ``>>>``), is misread; use both. The prompt reaches
the detector through the hooks on SGLang's chat-completions and ``/v1/responses`` paths (not when
the detectors are used outside SGLang's serving layer). SGLang's structural tags are not built (``supports_structural_tag`` is False and
``structure_info`` raises); constrained decoding from a template goes through ``respc grammar``
(docs/grammar.md). Templates whose delimiters are special tokens need them in the decoded text
(request ``"skip_special_tokens": false``).
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
from types import SimpleNamespace
from typing import Any, Callable

#: how to get SGLang's parser modules without its GPU stack (README, "SGLang plug-in")
INSTALL = ("pip install 'respc[sglang]' && pip install --no-deps sglang==0.5.23 "
           "(from a checkout: pip install -e '.[test,sglang]')")

try:
    from sglang.srt.function_call.base_format_detector import BaseFormatDetector
    from sglang.srt.function_call.core_types import StreamingParseResult, ToolCallItem
    from sglang.srt.parser.reasoning_parser import BaseReasoningFormatDetector
    from sglang.srt.parser.reasoning_parser import StreamingParseResult as ReasoningParseResult
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(f"respc.sglang needs SGLang's parser modules ({exc}); install them with: {INSTALL}") from exc

from respc.openai import ChatCompletionStream, after_prompt as _after_prompt
from respc.runtime.formats.base import surrogates_escaped as _ascii_surrogates
from respc.show import _traced

__all__ = ["RespcFunctionCallDetector", "RespcReasoningDetector", "install_hooks", "register", "register_plugin",
           "registered_name", "sglang_prefix"]

logger = logging.getLogger(__name__)

#: the name prefix of registered detectors: ``respc-<template>``
NAME_PREFIX = "respc-"
_REASONING = "reasoning_content"


def _module(template: Any) -> Any:
    """The generated module of ``template``: a catalogue name imports ``respc.generated.<name>``;
    anything else (a path, a dict) is compiled in memory (``respc.compile_template``)."""
    if template is None:
        raise ValueError("respc detector: no template given (pass template= or use respc.sglang.register)")
    if isinstance(template, str) and template.isidentifier():
        try:
            return importlib.import_module(f"respc.generated.{template}")
        except ImportError:
            pass
    import respc

    return respc.compile_template(template)


def _tool_dicts(tools: Any) -> list | None:
    """SGLang ``Tool`` models (or OpenAI tool dicts) as the OpenAI tool dicts respc types
    arguments with (template-language.md "Tool-argument typing"); None for no tools."""
    if not tools:
        return None
    return [tool.model_dump(exclude_none=True) if hasattr(tool, "model_dump") else tool for tool in tools]


def _new_stream(module: Any, prefix: str, tools: Any, traced: bool = False,
                recover_arguments: str = "hold", regex_timeout: float | None = None) -> ChatCompletionStream:
    parser_class = _traced(module.ResponseParser) if traced else module.ResponseParser
    parser = parser_class(prefix, _tool_dicts(tools), errors="recover", regex_timeout=regex_timeout)
    return ChatCompletionStream(parser, ids=lambda n: f"call_{n}", completion_id="chatcmpl-respc", created=0,
                                recover_arguments=recover_arguments)


def _deltas(chunks: list[dict]) -> list[dict]:
    return [choice["delta"] for chunk in chunks for choice in chunk.get("choices", ())]


def _arguments_text(arguments: Any) -> str:
    """The arguments as JSON text, a surrogate code point written as its JSON escape
    (``surrogates_escaped``; docs/serving.md)."""
    return _ascii_surrogates(arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False))


class RespcFunctionCallDetector(BaseFormatDetector):
    """SGLang function-call detector reading tool calls with a respc parser (errors="recover").

    Args:
        template: a catalogue name, template path or dict (default: the class attribute
            ``template``, which :func:`register` sets).
        prefix (str): the text before the output the parser reads; ``""`` (default) when a
            :class:`RespcReasoningDetector` has cut the reasoning out in front of it.
        regex_timeout (float | None): seconds per search of a delimiter not proven linear (None:
            ``runtime.REGEX_TIMEOUT``; docs/security.md, "Limits").
        **_sglang: other keyword arguments SGLang may pass (``tokenizer``) are ignored.

    Raises:
        ValueError: no template; TemplateError: a template that does not compile.
    """

    template: Any = None
    #: how tool-call arguments stream: "hold" (each call once its region closes; what the client
    #: accumulates equals the whole answer, damaged output included) or "stream" (as the model
    #: writes them; a call found malformed after part of it was sent stays as sent).
    #: docs/serving.md, "How the two detectors share one parse".
    recover_arguments: str = "hold"

    def __init__(self, template: Any = None, prefix: str = "", regex_timeout: float | None = None,
                 **_sglang: Any) -> None:
        super().__init__()
        self.regex_timeout = regex_timeout
        self.module = _module(template if template is not None else self.template)
        self.prefix = prefix
        self._stream: ChatCompletionStream | None = None
        self._names: dict[int, str] = {}

    # --- one-shot ------------------------------------------------------------------------------
    def _message(self, text: str, tools: Any) -> dict:
        parser = self.module.ResponseParser(self.prefix, _tool_dicts(tools), errors="recover",
                                            regex_timeout=self.regex_timeout)
        parser.feed(text)
        message, _ = parser.finalize()
        return message

    def detect_and_parse(self, text: str, tools: list) -> StreamingParseResult:
        """Parse a whole output. Returns ``StreamingParseResult(normal_text=<answer>, calls=[...])``
        with ``tool_index`` the tool's position in ``tools`` (-1 when not declared) and
        ``parameters`` the arguments as JSON text (a string argument value is sent as is)."""
        message = self._message(text, tools)
        indices = self._get_tool_indices(tools or [])
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function", call)
            name = function.get("name")
            calls.append(ToolCallItem(tool_index=indices.get(name, -1), name=name,
                                      parameters=_arguments_text(function.get("arguments", {}))))
        return StreamingParseResult(normal_text=message.get("content") or "", calls=calls)

    def has_tool_call(self, text: str) -> bool:
        """True when this detector must read ``text``: its parse holds a tool call, or the answer
        differs from the text (delimiters to remove). SGLang hands the raw text on as the answer
        when this is False."""
        message = self._message(text, None)
        return bool(message.get("tool_calls")) or (message.get("content") or "") != text

    # --- streaming -----------------------------------------------------------------------------
    def parse_streaming_increment(self, new_text: str, tools: list) -> StreamingParseResult:
        """Feed the next piece of the output; returns the answer text and call items it completes."""
        if self._stream is None:
            self._stream = _new_stream(self.module, self.prefix, tools, recover_arguments=self.recover_arguments,
                                       regex_timeout=self.regex_timeout)
        return self._result(self._stream.feed(new_text))

    def finish(self, tools: list) -> StreamingParseResult:
        """End of the stream: what the parser held back (a partial delimiter, an open call)."""
        if self._stream is None:
            self._stream = _new_stream(self.module, self.prefix, tools, recover_arguments=self.recover_arguments,
                                       regex_timeout=self.regex_timeout)
        return self._result(self._stream.finalize())

    def _result(self, chunks: list[dict]) -> StreamingParseResult:
        text = []
        calls = []
        for delta in _deltas(chunks):
            if delta.get("content"):
                text.append(delta["content"])
            for call in delta.get("tool_calls") or ():
                index = call["index"]
                function = call.get("function") or {}
                name = function.get("name")
                fragment = function.get("arguments") or ""
                if name is None and not fragment:
                    continue
                while len(self.streamed_args_for_tool) <= index:
                    self.streamed_args_for_tool.append("")
                    self.prev_tool_call_arr.append({})
                if name is not None:
                    self._names[index] = name
                self.streamed_args_for_tool[index] += fragment
                # what SGLang's end-of-stream check compares with: the text streamed, so it finds
                # nothing left to send (its check re-dumps parsed arguments, which may be spaced
                # differently from the fragments)
                self.prev_tool_call_arr[index] = {"name": self._names.get(index),
                                                  "arguments": self.streamed_args_for_tool[index]}
                self.current_tool_id = index
                self.current_tool_name_sent = True
                calls.append(ToolCallItem(tool_index=index, name=name, parameters=fragment))
        return StreamingParseResult(normal_text="".join(text), calls=calls)

    # --- what SGLang asks of every detector -----------------------------------------------------
    def supports_structural_tag(self) -> bool:
        """False: respc builds no SGLang structural tags (``respc grammar`` exports grammars)."""
        return False

    def parses_required_natively(self) -> bool:
        """True: with ``tool_choice="required"`` the model writes its own format, which this
        detector reads (SGLang then does not force its JSON-array schema)."""
        return True

    def structure_info(self) -> Callable[[str], Any]:
        """Not supported: raises ValueError naming the alternative (``respc grammar``)."""
        raise ValueError("respc detectors build no SGLang structural tags; export a grammar with "
                         "`respc grammar TEMPLATE` (docs/grammar.md) for constrained decoding")


class RespcReasoningDetector(BaseReasoningFormatDetector):
    """SGLang reasoning detector reading reasoning blocks with a respc parser (errors="recover").

    Args:
        template: as for :class:`RespcFunctionCallDetector`.
        prefix (str | None): the chat prompt before the output. None: :func:`sglang_prefix` (the
            template's start anchor and reasoning opener when ``force_reasoning``, SGLang's signal
            that the prompt opened a reasoning block, or when the family is in
            :data:`PROMPT_OPENS_REASONING`; else ``""``).
        force_reasoning (bool): see ``prefix``.
        stream_reasoning (bool): False holds reasoning until the answer begins or the stream ends.
        tool_call_parser_active (bool): SGLang passes True when a tool-call parser reads the
            ``normal_text``: it is then the raw output minus reasoning (see the module docstring).
        **_sglang: other keyword arguments SGLang may pass are ignored.
    """

    template: Any = None

    def __init__(self, template: Any = None, prefix: str | None = None, force_reasoning: bool = False,
                 stream_reasoning: bool = True, tool_call_parser_active: bool = False, **_sglang: Any) -> None:
        self.module = _module(template if template is not None else self.template)
        opener, closer = _reasoning_delimiters(self.module)
        # reasoning_default=None: SGLang's chat server, when it cannot read a reasoning toggle from
        # the chat template, forces reasoning by the detector's default ("always" in the base), which
        # would read a whole answer as reasoning; None leaves force_reasoning to what the template
        # opened (TemplateManager.force_reasoning), the only prompt fact SGLang passes on.
        super().__init__(opener, closer, force_reasoning=force_reasoning, stream_reasoning=stream_reasoning,
                         reasoning_default=None)
        if prefix is None:
            prefix = sglang_prefix(self.module, force_reasoning)
        self.prefix = prefix
        #: True once :meth:`use_prompt` gave the rendered prompt (SGLang's serving layer, through
        #: the plug-in's hook); :data:`prefix` is then that prompt
        self.prompt_known = False
        self.raw_normal = tool_call_parser_active
        #: the function-call detector reading ``normal_text`` is not respc's (SGLang's own ``qwen``
        #: beside ``respc-qwen3``; set by the plug-in's hook): the reasoning's delimiters are cut
        #: out with its text, as that detector expects text without reasoning markup
        self.foreign_tool_parser = False
        self._region_slot = {region.name: region.slot for region in self.module.ResponseParser.REGIONS}
        self._reset()

    def use_prompt(self, prompt: str) -> None:
        """Read the output as following ``prompt``, the rendered chat prompt (decoded with special
        tokens kept). Call it before the first piece of output; the plug-in's hook on SGLang's
        ``ReasoningParser`` does (:func:`install_hooks`). The prompt decides the state the output
        starts in (a reasoning block it opened or closed, an opener it ends inside), in place of
        ``force_reasoning`` and :data:`PROMPT_OPENS_REASONING`."""
        self.prefix = prompt
        self.prompt_known = True
        self._reset()

    def _reset(self) -> None:
        self._stream = _new_stream(self.module, self.prefix, None, traced=True)
        # answer text the rendered prompt holds (a prefilled assistant message) is the client's,
        # not output: the normal text starts after it (whitespace alone, what a turn header
        # leaves, is kept as respc's message has it)
        written = "".join(e["text"] for e in self._stream.parser.initial_events
                          if e["type"] == "region_chunk" and e["field"] == "content") if self.prompt_known else ""
        self._skip = [written if written.strip() else ""]
        self._raw = ""
        self._done = 0          # raw output offset up to which text was judged
        self._seen = 0          # trace entries read
        self._held = []         # reasoning held while stream_reasoning is False

    def detect_and_parse(self, text: str) -> ReasoningParseResult:
        """Parse a whole output: ``reasoning_text`` as the message stores it, ``normal_text`` as
        described in the class docstring."""
        self._reset()
        first = self.parse_streaming_increment(text)
        last = self.finish()
        result = ReasoningParseResult(first.normal_text + last.normal_text, first.reasoning_text + last.reasoning_text)
        self._reset()
        return result

    def parse_streaming_increment(self, new_text: str) -> ReasoningParseResult:
        """Feed the next piece of the output; returns the reasoning and normal text it releases."""
        self._raw += new_text
        return self._result(self._stream.feed(new_text), final=False)

    def finish(self) -> ReasoningParseResult:
        """End of the stream: releases what the parser held back."""
        return self._result(self._stream.finalize(), final=True)

    def _result(self, chunks: list[dict], final: bool) -> ReasoningParseResult:
        deltas = _deltas(chunks)
        reasoning = "".join(delta.get(_REASONING) or "" for delta in deltas)
        if self.raw_normal:
            normal = self._raw_normal(final)
        else:
            normal = "".join(delta.get("content") or "" for delta in deltas)
            if normal and self._skip[0]:
                normal = _after_prompt(normal, self._skip)
        if not self.stream_reasoning:
            self._held.append(reasoning)
            if not (normal or final):
                return ReasoningParseResult("", "")
            reasoning, self._held = "".join(self._held), []
        return ReasoningParseResult(normal, reasoning)

    def _is_reasoning(self, entry: list) -> bool:
        kind, detail = entry[0], entry[3]
        if kind == "text":
            return detail.get("field") == _REASONING
        name = detail.rsplit(" ", 1)[-1] if kind == "delimiter" else detail
        return self._region_slot.get(name) == _REASONING

    def _raw_normal(self, final: bool) -> str:
        """The raw output judged since the last call, minus the reasoning text (its delimiters
        stay, so the function-call detector's parse sees where reasoning ended, even for formats
        whose reasoning opens implicitly at the start). A reasoning opener that the prompt prefix
        holds is sent too. Raw text the trace has not placed yet (held by the parser) waits; raw
        text consumed without a trace entry goes with the entry after it; at the end all is judged."""
        trace = self.parser_trace
        entries = sorted(trace[self._seen:], key=lambda entry: (entry[1], entry[2]))
        self._seen = len(trace)
        out = []
        for entry in entries:
            kind, start, end = entry[0], entry[1], entry[2]
            dropped = (kind != "delimiter" or self.foreign_tool_parser) and self._is_reasoning(entry)
            if start < 0:
                # a reasoning delimiter in the prompt, or any delimiter the prompt ends inside
                # (functionary v3.2's '>>>' of '>>>all'): its prompt part goes first, so the
                # function-call detector, which reads without the prompt, sees the delimiter whole
                if kind == "delimiter" and not dropped and (self._is_reasoning(entry) or end > 0):
                    out.append(self.prefix[len(self.prefix) + start:len(self.prefix) + min(end, 0)])
                start = 0
            if end <= self._done:
                continue
            start = max(start, self._done)
            if not dropped:
                out.append(self._raw[self._done:end])
            self._done = end
        if final and self._done < len(self._raw):
            out.append(self._raw[self._done:])
            self._done = len(self._raw)
        return "".join(out)

    @property
    def parser_trace(self) -> list:
        return self._stream.parser._show_trace


def _first(value: Any) -> str:
    value = value[0] if isinstance(value, list) and value else value
    return value if isinstance(value, str) else ""


def _template(module: Any) -> dict:
    """The catalogue template JSON of a generated module (``{}`` for one compiled elsewhere)."""
    name = module.__name__.rsplit(".", 1)[-1]
    try:
        from importlib.resources import files

        return json.loads(files("respc.templates").joinpath(f"{name}.json").read_text("utf-8"))
    except (FileNotFoundError, ModuleNotFoundError, ValueError):
        return {}


def _reasoning_delimiters(module: Any) -> tuple[str, str]:
    """The first literal open and close of the template's reasoning field (``""`` when the
    template has none): SGLang reads ``think_end_token`` for its thinking budget."""
    spec = _template(module).get("fields", {}).get(_REASONING) or {}
    return _first(spec.get("open")), _first(spec.get("close"))


#: catalogue families whose model chat template opens the reasoning in its generation prompt by
#: default (DeepSeek-R1 and MiniMax-M2 end it with ``<think>\n``, Apriel 1.6 Thinker with "Here are
#: my reasoning steps:") while SGLang's own computation of ``force_reasoning`` (the chat template's
#: reasoning pattern, then its reasoning toggle for the request) says it does not. The reasoning
#: detector treats the reasoning as opened for them. Checked against the models' chat templates
#: and SGLang's code by ``tests/test_sglang_serving.py::test_prompt_state_per_family``.
PROMPT_OPENS_REASONING = frozenset({"apriel_1_6_thinker", "deepseek_r1", "minimax_m2"})


def sglang_prefix(module: Any, force_reasoning: bool) -> str:
    """The prefix the reasoning detector uses when SGLang gives none: with ``force_reasoning`` (the
    prompt opened a reasoning block), or for a family of :data:`PROMPT_OPENS_REASONING`, the
    template's first literal start anchor followed by its reasoning opener, else ``""``. SGLang
    passes the rendered prompt only to its own response-template detectors, so this is the most of
    it a plug-in detector gets (docs/serving.md, "What SGLang does not give a plug-in detector")."""
    if not force_reasoning and module.__name__.rsplit(".", 1)[-1] not in PROMPT_OPENS_REASONING:
        return ""
    opener, _ = _reasoning_delimiters(module)
    return _first(_template(module).get("start_anchor")) + opener if opener else ""


def registered_name(template: str) -> str:
    """The SGLang parser name a catalogue template is registered under: ``respc-<name>``."""
    return NAME_PREFIX + template


def register(template: Any, name: str | None = None) -> str:
    """Put respc detectors for ``template`` into SGLang's registries.

    Adds a :class:`RespcFunctionCallDetector` subclass to
    ``FunctionCallParser.ToolCallParserEnum`` and a :class:`RespcReasoningDetector` subclass to
    ``ReasoningParser.DetectorMap``, both under ``name`` (default ``respc-<template>``), so
    ``--tool-call-parser NAME`` and ``--reasoning-parser NAME`` select them. Call it before SGLang
    reads its command line (its argument choices are read from these registries). The template is
    compiled when a detector is first built.

    Returns:
        str: the registered name.
    Raises:
        ValueError: no name given for a template that is not a catalogue name.
    """
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    if name is None:
        if not (isinstance(template, str) and template.isidentifier()):
            raise ValueError(f"respc.sglang.register: pass name= for template {template!r}")
        name = registered_name(template)
    label = "".join(part.capitalize() for part in str(name).replace("-", "_").split("_") if part.isidentifier())
    FunctionCallParser.ToolCallParserEnum[name] = type(f"{label}ToolDetector", (RespcFunctionCallDetector,),
                                                       {"template": template, "__module__": __name__})
    ReasoningParser.DetectorMap[name.lower()] = type(f"{label}ReasoningDetector", (RespcReasoningDetector,),
                                                     {"template": template, "__module__": __name__})
    return name


#: where SGLang builds a chat request's prompt, and where it builds the reasoning parser of a
#: request (hook targets, SGLang 0.5.23)
_CONVERT = "sglang.srt.entrypoints.openai.serving_chat.OpenAIServingChat._convert_to_internal_request"
_REASONING_INIT = "sglang.srt.parser.reasoning_parser.ReasoningParser.__init__"
#: where SGLang builds a ``/v1/responses`` request's prompt (a coroutine function)
_RESPONSES_MAKE = "sglang.srt.entrypoints.openai.serving_responses.OpenAIServingResponses._make_request"


def _uses_respc(serving: Any) -> bool:
    """Whether an ``OpenAIServingChat`` runs a respc detector (reasoning or function call)."""
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    reasoning = ReasoningParser.DetectorMap.get(str(getattr(serving, "reasoning_parser", None) or "").lower())
    tool = FunctionCallParser.ToolCallParserEnum.get(getattr(serving, "tool_call_parser", None) or "")
    return any(isinstance(cls, type) and issubclass(cls, (RespcReasoningDetector, RespcFunctionCallDetector))
               for cls in (reasoning, tool))


def _prompt_of(serving: Any, adapted: Any) -> str:
    """The rendered prompt of an SGLang ``GenerateReqInput``: its text, or its input ids decoded
    with special tokens kept, as SGLang decodes it for its own response-template parsers."""
    text = getattr(adapted, "text", None)
    if isinstance(text, str):
        return text
    ids = getattr(adapted, "input_ids", None)
    if ids and isinstance(ids[0], int):
        tokenizer = serving.tokenizer_manager.tokenizer
        try:
            return tokenizer.decode(ids, skip_special_tokens=False, spaces_between_special_tokens=False)
        except TypeError:
            return tokenizer.decode(ids, skip_special_tokens=False)
    return ""


def _after_convert(result: Any, serving: Any, *args: Any, **kwargs: Any) -> None:
    """Hook after ``OpenAIServingChat._convert_to_internal_request``: keep the rendered prompt on
    the request (``_response_parser_prefix``, which SGLang fills only for its own response-template
    parsers and passes on only to them) when the server runs a respc detector."""
    if not (isinstance(result, tuple) and len(result) == 2):
        return
    try:
        adapted, request = result
        if not getattr(request, "_response_parser_prefix", "") and _uses_respc(serving):
            request._response_parser_prefix = _prompt_of(serving, adapted)
    except Exception as exc:  # noqa: BLE001 - never break a request; the detector then guesses
        logger.warning("respc: could not read the rendered prompt: %s", exc)


def _keep_prompt(serving: Any, request: Any, made: Any) -> None:
    """Keep the rendered prompt of a ``/v1/responses`` request on it (``_response_parser_prefix``,
    as :func:`_after_convert` does for chat): ``made`` is what
    ``OpenAIServingResponses._make_request`` returned, ``(messages, request_prompts,
    engine_prompts, processed_messages)``; the engine prompt is text or input ids."""
    if not (isinstance(made, tuple) and len(made) == 4 and made[2]):
        return
    try:
        if getattr(request, "_response_parser_prefix", "") or not _uses_respc(serving):
            return
        prompt = made[2][0]
        adapted = SimpleNamespace(text=prompt if isinstance(prompt, str) else None,
                                  input_ids=prompt if isinstance(prompt, list) else None)
        request._response_parser_prefix = _prompt_of(serving, adapted)
    except Exception as exc:  # noqa: BLE001 - never break a request; the detector then guesses
        logger.warning("respc: could not read the rendered prompt: %s", exc)


def _around_responses_request(original: Callable, serving: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
    """Hook around ``OpenAIServingResponses._make_request`` (an ``async def``): SGLang's hook
    registry wraps it in a plain function that returns what this returns, so this returns a
    coroutine that awaits the original and then keeps the rendered prompt on the request
    (:func:`_keep_prompt`). An "after" hook would get the original's coroutine, not its result."""
    made = original(serving, request, *args, **kwargs)
    if not inspect.isawaitable(made):
        _keep_prompt(serving, request, made)
        return made

    async def kept() -> Any:
        result = await made
        _keep_prompt(serving, request, result)
        return result

    return kept()


def _after_reasoning_parser(result: Any, parser: Any, *args: Any, **kwargs: Any) -> None:
    """Hook after ``ReasoningParser.__init__``: a respc detector reads the request's rendered prompt
    (:func:`_after_convert`) as its prefix."""
    request = kwargs.get("request", args[3] if len(args) > 3 else None)
    prompt = getattr(request, "_response_parser_prefix", "") if request is not None else ""
    detector = getattr(parser, "detector", None)
    if not isinstance(detector, RespcReasoningDetector):
        return
    if detector.raw_normal:
        detector.foreign_tool_parser = _foreign_tool_parser()
    if prompt:
        detector.use_prompt(prompt)


def _foreign_tool_parser() -> bool:
    """Whether the SGLang serving object building this reasoning parser (the ``self`` of a calling
    frame with ``tool_call_parser``) runs a function-call detector that is not respc's
    (``--reasoning-parser respc-qwen3 --tool-call-parser qwen``)."""
    import sys

    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    frame = sys._getframe(2)
    for _ in range(10):
        if frame is None:
            break
        serving = frame.f_locals.get("self")
        name = getattr(serving, "tool_call_parser", None)
        if isinstance(name, str) and name:
            cls = FunctionCallParser.ToolCallParserEnum.get(name)
            return not (isinstance(cls, type) and issubclass(cls, RespcFunctionCallDetector))
        frame = frame.f_back
    return False


def _hook_target_exists(target: str) -> bool:
    """Whether a hook target (a dotted path) resolves in this SGLang install: its module imports
    (the serving modules need the ``sglang-serving`` extra: fastapi, ...) and names the attribute.
    Any exception the import raises counts as "no"."""
    import pkgutil

    try:
        pkgutil.resolve_name(target)
    except Exception:  # noqa: BLE001 - a missing serving dependency raises ImportError or anything else
        return False
    return True


def install_hooks() -> bool:
    """Register the plug-in's hooks with SGLang's ``HookRegistry`` (applied by SGLang's
    ``load_plugins`` after the plug-ins ran): after ``OpenAIServingChat._convert_to_internal_request``
    and around ``OpenAIServingResponses._make_request`` (``/v1/responses``; a coroutine function,
    :func:`_around_responses_request`) the rendered prompt is kept on the request, and after
    ``ReasoningParser.__init__`` a respc reasoning detector takes it as its prefix
    (:meth:`RespcReasoningDetector.use_prompt`). SGLang
    gives a plug-in detector no prompt otherwise (docs/serving.md, "The prompt").

    A hook is registered only when its target imports in this install (:func:`_hook_target_exists`):
    without SGLang's serving dependencies (no ``OpenAIServingChat`` to serve from) the two serving
    hooks are left out, so SGLang's registry logs no failed patch; nothing then asks the
    detectors for a prompt and they fall back to :func:`sglang_prefix` (docs/serving.md, "The
    prompt"). Returns False when this SGLang has no hook registry, else True."""
    try:
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType
    except ImportError:
        return False
    for target, hook, kind in ((_CONVERT, _after_convert, HookType.AFTER),
                               (_REASONING_INIT, _after_reasoning_parser, HookType.AFTER),
                               (_RESPONSES_MAKE, _around_responses_request, HookType.AROUND)):
        if _hook_target_exists(target):
            HookRegistry.register(target, hook, kind)
    return True


def register_plugin() -> None:
    """SGLang plug-in entry point (group ``sglang.srt.plugins``, name ``respc``): registers every
    catalogue template as ``respc-<name>`` and the hooks that give the reasoning detector the
    rendered prompt (:func:`install_hooks`). Never raises: a failure is logged, and SGLang goes on
    without the respc parsers."""
    try:
        from importlib.resources import files

        names = sorted(p.name[:-5] for p in files("respc.templates").iterdir() if p.name.endswith(".json"))
        for template in names:
            register(template)
        install_hooks()
    except Exception as exc:  # noqa: BLE001 - a plug-in must not stop the server
        logger.warning("respc: could not register SGLang parsers: %s", exc)
