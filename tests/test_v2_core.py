"""Template language v2 in the streaming core: slots, nesting, regions that end at their value,
rejected openers, alternatives and trailing closes. Every case is fed whole, one character at a
time and in random pieces, and must give the literal expected message every time (D2)."""

from __future__ import annotations

import pytest

from respc.compiler.api import compile_template
from respc.runtime.errors import ContentParseError, TemplateError

from support import REPO, chunkings, merged_events, run_stream

CALL = {"type": "function", "function": {"name": "{content.name}", "arguments": "{content.arguments}"}}

MISTRAL = {
    "respc_version": 2,
    "defaults": {"role": "assistant"},
    "start_anchor": "[/INST]",
    "fields": {
        "tool_calls": {
            "open_pattern": r"\[TOOL_CALLS\](?P<name>[^\[\s]+)\[ARGS\]",
            "end": "value",
            "content": "json",
            "repeats": True,
            "role": "tool_calls",
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": "</s>", "repeats": True, "join": ""},
    },
}

QWEN = {
    "respc_version": 2,
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "content": "json",
            "repeats": True,
            "role": "tool_calls",
            "inside": {"reasoning_content": "end"},
            "transform": CALL,
        },
        "content": {"close": ["<|im_end|>", "</think>"], "repeats": True, "join": ""},
    },
}

# the same, but a call inside reasoning counts only when the reasoning is never closed
QWEN_DEFER = {**QWEN, "fields": {**QWEN["fields"], "tool_calls": {
    **QWEN["fields"]["tool_calls"], "inside": {"reasoning_content": "end-if-unclosed"}}}}

SECTION = {
    "respc_version": 2,
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_middle|>",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>", "repeats": True, "join": ""},
        "section": {
            "open": "<|calls|>",
            "close": "<|/calls|>",
            "slot": None,
            "inside": {"reasoning_content": "nest"},
        },
        "tool_calls": {
            "open": "<|call|>",
            "close": "<|/call|>",
            "content": "json",
            "repeats": True,
            "role": "tool_calls",
            "inside": {"section": "nest"},
            "outside": False,
            "transform": CALL,
        },
        "content": {"close": "<|im_end|>", "repeats": True, "join": ""},
    },
}

LLAMA = {
    "respc_version": 2,
    "defaults": {"role": "assistant"},
    "start_anchor": "<|end_header_id|>\n\n",
    "fields": {
        "tool_calls": {
            "open_pattern": r"<\|python_tag\|>|(?=\{)",
            "close_pattern": r"\s*;",
            "end": "value",
            "content": "json",
            "repeats": True,
            "role": "tool_calls",
            "transform": CALL,
        },
        "content": {"close": "<|eot_id|>", "repeats": True, "join": ""},
    },
}

ONE_SLOT = {
    "respc_version": 2,
    "defaults": {"role": "assistant"},
    "start_anchor": "<|a|>",
    "fields": {
        "calls_json": {
            "open": "<call>",
            "close": "</call>",
            "content": "json",
            "slot": "tool_calls",
            "repeats": True,
            "role": "tool_calls",
            "transform": CALL,
        },
        "calls_kv": {
            "open": "<call>",
            "close": "</call>",
            "content": "kv-lines",
            "slot": "tool_calls",
            "repeats": True,
            "role": "tool_calls",
            "transform": {"type": "function", "function": {"name": "{content.name}", "arguments": {}}},
        },
        "content": {"repeats": True, "join": ""},
    },
}

CASES = {
    "value-ends-region": (
        MISTRAL, "[INST]hi[/INST]", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}Sure, one moment.',
        {"role": "assistant", "content": "Sure, one moment.",
         "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    ),
    "value-with-braces-in-strings": (
        MISTRAL, "", '[TOOL_CALLS]f[ARGS]{"a": "}{", "b": [1, {"c": "\\"}"}]} after</s>',
        {"role": "assistant", "content": "after",
         "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": "}{", "b": [1, {"c": "\"}"}]}}}]},
    ),
    "two-values-back-to-back": (
        MISTRAL, "", '[TOOL_CALLS]a[ARGS]{"x": 1}[TOOL_CALLS]b[ARGS]{}',
        {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "a", "arguments": {"x": 1}}},
                                             {"type": "function", "function": {"name": "b", "arguments": {}}}]},
    ),
    "opener-in-prose-is-rejected": (
        QWEN, "", "The token <tool_call> marks where a call starts.",
        {"role": "assistant", "content": "The token <tool_call> marks where a call starts."},
    ),
    "opener-then-whitespace-then-prose": (
        QWEN, "", "Use <tool_call>\n  then JSON.<|im_end|>",
        {"role": "assistant", "content": "Use <tool_call>\n  then JSON."},
    ),
    "rejected-then-real-call": (
        QWEN, "", 'See <tool_call> below.<tool_call>{"name": "f", "arguments": {}}</tool_call>',
        {"role": "assistant", "content": "See <tool_call> below.",
         "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]},
    ),
    "call-ends-open-reasoning": (
        QWEN, "<|im_start|>assistant\n<think>\n",
        'Let me think<tool_call>{"name": "get_weather", "arguments": {"city": "SF"}}</tool_call>',
        {"role": "assistant", "reasoning_content": "Let me think",
         "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "SF"}}}]},
    ),
    "call-after-closed-reasoning": (
        QWEN, "<|im_start|>assistant\n<think>\n",
        'hmm</think>Sure.<tool_call>{"name": "f", "arguments": {}}</tool_call><|im_end|>',
        {"role": "assistant", "reasoning_content": "hmm", "content": "Sure.",
         "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]},
    ),
    "unclosed-reasoning-call-counts": (
        QWEN_DEFER, "<|im_start|>assistant\n<think>\n",
        'Let me think<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>',
        {"role": "assistant", "reasoning_content": "Let me think",
         "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]},
    ),
    "quoted-call-in-closed-reasoning-is-reasoning": (
        QWEN_DEFER, "<|im_start|>assistant\n<think>\n",
        'About <tool_call>{"name": "f", "arguments": {"a": 2}}</tool_call> and <tool_call> hmm\n</think>\n\n'
        '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>',
        {"role": "assistant",
         "reasoning_content": 'About <tool_call>{"name": "f", "arguments": {"a": 2}}</tool_call> and <tool_call> hmm',
         "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]},
    ),
    "deferred-call-that-is-prose-goes-back": (
        QWEN_DEFER, "<|im_start|>assistant\n<think>\n", "I write <tool_call> then",
        {"role": "assistant", "reasoning_content": "I write <tool_call> then"},
    ),
    "empty-call-block-has-no-value": (
        QWEN, "", "<tool_call></tool_call>Done",
        {"role": "assistant", "content": "Done"},
    ),
    "section-nested-in-reasoning-resumes-it": (
        SECTION, "<|im_middle|>",
        '<think>Read it.<|calls|><|call|>{"name": "read", "arguments": {"p": "/a"}}<|/call|><|/calls|> Then answer.'
        '</think>Done.',
        {"role": "assistant", "reasoning_content": "Read it. Then answer.", "content": "Done.",
         "tool_calls": [{"type": "function", "function": {"name": "read", "arguments": {"p": "/a"}}}]},
    ),
    "section-outside-reasoning": (
        SECTION, "<|im_middle|>",
        'Sure.<|calls|><|call|>{"name": "a", "arguments": {}}<|/call|>\n<|call|>{"name": "b", "arguments": {}}<|/call|>'
        '<|/calls|><|im_end|>',
        {"role": "assistant", "content": "Sure.",
         "tool_calls": [{"type": "function", "function": {"name": "a", "arguments": {}}},
                        {"type": "function", "function": {"name": "b", "arguments": {}}}]},
    ),
    "call-opener-outside-section-is-text": (
        SECTION, "<|im_middle|>", "A <|call|> token.",
        {"role": "assistant", "content": "A <|call|> token."},
    ),
    "json-then-trailing-text": (
        LLAMA, "", '{"name": "get_weather", "arguments": {}} Some follow-up text',
        {"role": "assistant", "content": "Some follow-up text",
         "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {}}}]},
    ),
    "semicolon-separated-values": (
        LLAMA, "", '<|python_tag|>{"name": "a", "arguments": {"c": "P"}};{"name": "b", "arguments": {}}',
        {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "a", "arguments": {"c": "P"}}},
                                             {"type": "function", "function": {"name": "b", "arguments": {}}}]},
    ),
    "python-tag-after-intro": (
        LLAMA, "", 'Some intro. <|python_tag|>{"name": "f", "arguments": {}}<|eot_id|>',
        {"role": "assistant", "content": "Some intro.",
         "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]},
    ),
    "alternative-reads-what-the-first-rejects": (
        ONE_SLOT, "", '<call>name: ping</call><call>{"name": "f", "arguments": {"a": 1}}</call>',
        {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "ping", "arguments": {}}},
                                             {"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]},
    ),
}


@pytest.mark.parametrize("how", ["whole", "chars", "random"])
@pytest.mark.parametrize("case", list(CASES))
def test_v2_case(case, how):
    template, prefix, text, expected = CASES[case]
    module = compile_template(template)
    message, _ = run_stream(module, prefix, chunkings(text, case)[how])
    assert message == expected


@pytest.mark.parametrize("case", list(CASES))
def test_v2_events_do_not_depend_on_chunking(case):
    template, prefix, text, _ = CASES[case]
    module = compile_template(template)
    views = {how: merged_events(run_stream(module, prefix, chunks)[1])
             for how, chunks in chunkings(text, case).items()}
    assert views["chars"] == views["whole"]
    assert views["random"] == views["whole"]


def test_slot_events_name_the_slot_and_the_region():
    module = compile_template(ONE_SLOT)
    _, events = run_stream(module, "", ['<call>{"name": "f", "arguments": {}}</call>'])
    assert events[0] == {"type": "region_open", "field": "tool_calls", "region": "calls_json"}
    assert events[-1] == {"type": "region_close", "field": "tool_calls", "region": "calls_json",
                          "value": {"type": "function", "function": {"name": "f", "arguments": {}}}}


def test_discarded_region_emits_nothing():
    # a null-slot region emits no events of its own; only whitespace may stand in it unreported
    module = compile_template(SECTION)
    _, events = run_stream(module, "", ["<|calls|> \n <|/calls|>"])
    assert events == []


def test_text_in_a_discarded_region_is_malformed_not_dropped():
    # docs/events.md, "Text inside a call section": strict names it, recover keeps it in the answer
    module = compile_template(SECTION)
    with pytest.raises(ContentParseError, match=r"Field 'section' \(a call section, slot null\): text that is "
                       r"no call at response offsets 9-13: 'junk'"):
        run_stream(module, "", ["<|calls|>junk<|/calls|>"])
    message, events = run_stream(module, "", ["<|calls|>junk<|/calls|>"], errors="recover")
    assert message == {"role": "assistant", "content": "junk"}
    assert [(e["type"], e["field"], e["region"], e["text"], e["start"], e["end"], e["into"]) for e in events] == [
        ("region_malformed", None, "section", "junk", 9, 13, "content")]


def test_rejected_opener_emits_no_open_for_the_call():
    module = compile_template(QWEN)
    _, events = run_stream(module, "", ["Use <tool_call> later"])
    assert [e["field"] for e in events] == ["content"] * (len(events))
    assert "".join(e["text"] for e in events if e["type"] == "region_chunk") == "Use <tool_call> later"


def test_typing_applies_only_to_the_tool_calls_role():
    template = {
        "respc_version": 2, "start_anchor": "<|a|>",
        "fields": {
            "calls": {"open": "<c>", "close": "</c>", "content": "json", "role": "tool_calls", "repeats": True},
            "other": {"open": "<o>", "close": "</o>", "content": "json"},
        },
    }
    module = compile_template(template)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}}}}}]
    call = '{"function": {"name": "f", "arguments": {"n": "3"}}}'
    message = module.parse_response(f"<c>{call}</c><o>{call}</o>", prefix="", tools=tools)
    assert message["calls"] == [{"function": {"name": "f", "arguments": {"n": 3}}}]
    assert message["other"] == {"function": {"name": "f", "arguments": {"n": "3"}}}


@pytest.mark.parametrize("key, value", [("slot", "x"), ("end", "value"), ("inside", {}), ("outside", True),
                                        ("role", "tool_calls"), ("reject", "error")])
def test_v2_keys_need_respc_version_2(key, value):
    template = {"start_anchor": "<|a|>", "fields": {"a": {"open": "<a>", "close": "</a>", "content": "json", key: value}}}
    with pytest.raises(TemplateError) as info:
        compile_template(template)
    assert (info.value.field, info.value.key) == ("a", key)
    assert '"respc_version": 2' in str(info.value)


@pytest.mark.parametrize("spec, key, words", [
    ({"open": "<a>", "end": "value"}, "end", "ends itself"),
    ({"open": "<a>", "content": "json", "inside": {"nope": "nest"}}, "inside", "not another explicit field"),
    ({"open": "<a>", "content": "json", "inside": {"b": "push"}}, "inside", "must be one of"),
    ({"open": "<a>", "outside": False}, "outside", "nothing can open"),
    ({"open": "<a>", "slot": ""}, "slot", "non-empty string"),
    ({"open": "<a>", "role": "calls"}, "role", "must be one of"),
])
def test_v2_key_errors(spec, key, words):
    template = {"respc_version": 2, "start_anchor": "<|a|>", "fields": {"a": spec, "b": {"open": "<b>"}}}
    with pytest.raises(TemplateError) as info:
        compile_template(template)
    assert (info.value.field, info.value.key) == ("a", key)
    assert words in str(info.value)


def test_slots_must_agree_on_repeats_and_join():
    template = {"respc_version": 2, "start_anchor": "<|a|>", "fields": {
        "a": {"open": "<a>", "slot": "s", "repeats": True},
        "b": {"open": "<b>", "slot": "s"},
    }}
    with pytest.raises(TemplateError) as info:
        compile_template(template)
    assert (info.value.field, info.value.key) == ("b", "slot")


def test_generated_module_names_the_features_it_needs():
    from respc.compiler.api import compile_source

    source = compile_source(SECTION).source
    # what the module declares only (ABI 4 and 5, issue 31): no name of how the runtime searches
    assert "_rt.check_abi(7, __name__, ('slots', 'nest', 'reject', 'typed-roles', 'empty-none'))" in source


def test_abi_4_modules_name_declared_features_only():
    """Every catalogue module (ABI 7) names only features of runtime.DECLARED_FEATURES (issue 31);
    the runtime still runs a module of ABI 6, 5, 4 and 3."""
    import ast

    from respc.runtime.stream import DECLARED_FEATURES, check_abi

    for path in sorted((REPO / "generated").glob("[!_]*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "_rt.check_abi"]
        assert len(calls) == 1, path.name
        args = [ast.literal_eval(a) for a in calls[0].args if not isinstance(a, ast.Name)]
        assert args[0] == 7, path.name
        assert set(args[1] if len(args) > 1 else ()) <= DECLARED_FEATURES, path.name
    check_abi(6, "old", ("slots", "regex-timeout", "recover-openers"))
    check_abi(5, "old", ("slots", "regex-timeout", "recover-openers"))
    check_abi(4, "old", ("slots", "regex-timeout"))
    check_abi(3, "old", ("slots", "fast-heads", "held-json"))
    with pytest.raises(ImportError, match="ABI 2"):
        check_abi(2, "older")


def test_runtime_without_a_feature_refuses_the_module():
    from respc.runtime.stream import check_abi

    with pytest.raises(ImportError, match=r"needs runtime feature\(s\) \['time-travel'\]"):
        check_abi(3, "m", ("slots", "time-travel"))


def test_rejected_zero_width_opener_makes_progress():
    template = {"respc_version": 2, "start_anchor": "<|a|>", "fields": {
        "calls": {"open_pattern": r"(?=[x{])", "end": "value", "content": "json", "repeats": True},
        "content": {"repeats": True, "join": ""},
    }}
    module = compile_template(template)
    for how, chunks in chunkings('ax {"k": 1} xy', "zw").items():
        message, _ = run_stream(module, "", chunks)
        assert message == {"content": "axxy", "calls": [{"k": 1}]}, how  # each block stripped, joined


def test_v2_transform_forms_work_in_generated_parsers():
    template = {"respc_version": 2, "start_anchor": "<|a|>", "fields": {
        "tool_calls": {"open": "<c>", "close": "</c>", "content": "json", "role": "tool_calls", "repeats": True,
                       "transform_each": True,
                       "transform": {"type": "function", "function": {
                           "name": "{content.$key}", "arguments": "{content.$value}"}}},
        "content": {"repeats": True, "join": ""},
    }}
    module = compile_template(template)
    message = module.parse_response('<c>[{"plan": {"steps": [{"do": {"x": 1}}]}}, {"run": {}}]</c>', prefix="")
    assert message["tool_calls"] == [  # transform_each + repeats: one flat list (extend)
        {"type": "function", "function": {"name": "plan", "arguments": {"steps": [{"do": {"x": 1}}]}}},
        {"type": "function", "function": {"name": "run", "arguments": {}}},
    ]


def test_v2_parser_needs_respc_version_2():
    template = {"start_anchor": "<|a|>", "fields": {"a": {"open": "<a>", "close": "</a>", "content": "pythonic"}}}
    with pytest.raises(TemplateError) as info:
        compile_template(template)
    assert (info.value.field, info.value.key) == ("a", "content")
    assert '"respc_version": 2' in str(info.value)
