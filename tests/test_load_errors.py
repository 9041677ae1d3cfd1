"""Load-time errors (docs/template-language.md "Top-level keys", "Field keys",
"Load-time checks") and the template loaders (docs/template-language.md "Where a template lives").

Every load rule of docs/template-language.md is broken once, in a template that is otherwise valid. Each must raise a
``TemplateError`` that is a ``ValueError``, whose ``.field`` / ``.key`` are the field and key at fault
and whose message starts with the source (``<dict>`` or the file path), then the field and key.
The same documents are compiled from a file too, so the message names the path.
"""

from __future__ import annotations

import json

import pytest

import respc
from respc.compiler.api import compile_source
from respc.compiler.load import catalogue_names, load_template
from respc.runtime.errors import RespcError, TemplateError

ANCHOR = "<|assistant|>"


def doc(fields: dict, **top) -> dict:
    """A template with ``fields`` and a start anchor, plus any top-level keys."""
    out = {"start_anchor": ANCHOR, "fields": fields}
    out.update(top)
    return out


def field(**spec) -> dict:
    """A template with a single explicit field ``x`` (open ``<x>``) and an implicit ``content``."""
    base = {"open": "<x>", "close": "</x>"}
    base.update(spec)
    return doc({"x": {k: v for k, v in base.items() if v is not _DROP}, "content": {}})


_DROP = object()

# (id, template, field, key, text the detail must contain)
CASES = [
    # delimiters: literal and pattern are exclusive
    ("open-and-open_pattern", field(open_pattern="<x>"), "x", "open", "cannot specify both 'open' and 'open_pattern'"),
    ("close-and-close_pattern", field(close_pattern="</x>"), "x", "close",
     "cannot specify both 'close' and 'close_pattern'"),
    # literals
    ("open-empty-literal", field(open=""), "x", "open", "'open' literals cannot be empty strings"),
    ("close-empty-literal", field(close=""), "x", "close", "'close' literals cannot be empty strings"),
    ("open-empty-literal-in-list", field(open=["<x>", ""]), "x", "open", "'open' literals cannot be empty strings"),
    ("open-empty-list", field(open=[]), "x", "open", "'open' list must contain at least one literal"),
    ("close-empty-list", field(close=[]), "x", "close", "'close' list must contain at least one literal"),
    ("open-list-non-string", field(open=["<x>", 3]), "x", "open", "'open' list must contain only strings, found 3"),
    ("close-list-non-string", field(close=[None]), "x", "close",
     "'close' list must contain only strings, found None"),
    ("open-not-string-or-list", field(open=5), "x", "open", "'open' must be a string or a list of strings, got int"),
    # patterns
    ("open_pattern-invalid", field(open=_DROP, open_pattern="(<x>"), "x", "open_pattern",
     "invalid open_pattern regex '(<x>'"),
    ("close_pattern-invalid", field(close=_DROP, close_pattern="[</x>"), "x", "close_pattern",
     "invalid close_pattern regex '[</x>'"),
    ("open_pattern-not-string", field(open=_DROP, open_pattern=["<x>"]), "x", "open_pattern",
     "'open_pattern' must be a regex string, got list"),
    # content parser and its arguments
    ("unknown-content-parser", field(content="yaml"), "x", "content", "unknown content parser 'yaml'"),
    ("content_args-not-dict", field(content="json", content_args=["unquoted_keys"]), "x", "content_args",
     "'content_args' must be a dict, got list"),
    ("xml-inline-without-tag_pattern", field(content="xml-inline"), "x", "content_args",
     "xml-inline needs 'tag_pattern'"),
    ("xml-inline-tag_pattern-invalid", field(content="xml-inline", content_args={"tag_pattern": "(?P<key>"}),
     "x", "content_args.tag_pattern", "invalid content_args.tag_pattern regex"),
    # join
    ("join-not-string", field(repeats=True, join=1), "x", "join", "'join' must be a string, got int"),
    ("join-without-repeats", field(join=", "), "x", "join", "'join' requires 'repeats': true"),
    ("join-with-repeats-false", field(join="", repeats=False), "x", "join", "'join' requires 'repeats': true"),
    # flags
    ("repeats-not-bool", field(repeats="yes"), "x", "repeats", "'repeats' must be a bool, got str"),
    ("repeats-int", field(repeats=1), "x", "repeats", "'repeats' must be a bool, got int"),
    ("optional-not-bool", field(optional=0), "x", "optional", "'optional' must be a bool, got int"),
    ("transform_each-not-bool", field(content="json", transform={"a": "{b}"}, transform_each="true"), "x",
     "transform_each", "transform_each must be a bool, got str"),
    ("transform_each-without-transform", field(content="json", transform_each=True), "x", "transform_each",
     "transform_each is set but no transform was provided"),
    # transforms
    ("transform-mixes-placeholder-and-text", field(transform={"v": "pre {content}"}), "x", "transform",
     "mixes a {placeholder} with literal text"),
    ("transform-mixes-in-list", field(transform=["{content}", "a{content}"]), "x", "transform",
     "mixes a {placeholder} with literal text"),
    ("transform-top-string-mixes", field(transform="{content} and more"), "x", "transform",
     "mixes a {placeholder} with literal text"),
    # named groups
    ("open-groups-without-transform", field(open=_DROP, open_pattern="<x (?P<name>\\w+)>"), "x", "open_pattern",
     "declares named group(s) ['name'] but the field has no 'transform'"),
    ("close-groups-without-transform", field(close=_DROP, close_pattern="</x (?P<tail>\\w+)>"), "x",
     "close_pattern", "declares named group(s) ['tail'] but the field has no 'transform'"),
    ("same-group-in-open-and-close-D4",
     field(open=_DROP, close=_DROP, open_pattern="<(?P<n>\\w+)>", close_pattern="</(?P<n>\\w+)>",
           transform={"n": "{n}"}),
     "x", "close_pattern", "named group(s) ['n'] appear in both open_pattern and close_pattern"),
    # field specs
    ("unknown-field-key", field(closes="</x>"), "x", "closes", "unknown keys ['closes']"),
    ("non-dict-field", doc({"x": "<x>"}), "x", None, "a field spec must be a dict, got str"),
    ("non-dict-field-list", doc({"x": ["<x>", "</x>"]}), "x", None, "a field spec must be a dict, got list"),
    ("two-implicit-fields", doc({"content": {}, "other": {"close": "</o>"}}), None, "fields",
     "at most one field may omit 'open'/'open_pattern' (the implicit field); found: content, other"),
    # top level
    ("defaults-not-dict", doc({"content": {}}, defaults=["role", "assistant"]), None, "defaults",
     "'defaults' must be a dict, got list"),
    ("fields-empty", doc({}), None, "fields", "'fields' must be a non-empty dict"),
    ("fields-missing", {"start_anchor": ANCHOR}, None, "fields", "'fields' must be a non-empty dict"),
    ("fields-not-dict", doc([{"open": "<x>"}]), None, "fields", "'fields' must be a non-empty dict"),
    ("unknown-top-level-key", doc({"content": {}}, stop="</s>"), None, "stop",
     "unknown keys in response_template: ['stop']"),
    ("missing-start-anchor", {"fields": {"content": {}}}, None, "start_anchor",
     "must define 'start_anchor' or 'start_anchor_pattern'"),
    ("both-start-anchors", doc({"content": {}}, start_anchor_pattern="<\\|assistant\\|>"), None, "start_anchor",
     "cannot specify both 'start_anchor' and 'start_anchor_pattern'"),
    ("start-anchor-empty", doc({"content": {}}, start_anchor=""), None, "start_anchor",
     "'start_anchor' literals cannot be empty strings"),
    ("start-anchor-empty-list", doc({"content": {}}, start_anchor=[]), None, "start_anchor",
     "'start_anchor' list must contain at least one literal"),
    ("start-anchor-list-non-string", doc({"content": {}}, start_anchor=["a", 1]), None, "start_anchor",
     "'start_anchor' list must contain only strings, found 1"),
    ("start_anchor_pattern-invalid", {"fields": {"content": {}}, "start_anchor_pattern": "(?P<"}, None,
     "start_anchor_pattern", "invalid start_anchor_pattern regex"),
    ("version-2", doc({"content": {}}, version=2), None, "version",
     "unsupported response_template version 2 (only 1 is known; respc's own language v2 is chosen with "
     "\"respc_version\": 2)"),
    ("version-string", doc({"content": {}}, version="1"), None, "version",
     "unsupported response_template version '1'"),
    ("version-bool", doc({"content": {}}, version=True), None, "version",
     "unsupported response_template version True"),
]

IDS = [case[0] for case in CASES]


def _prefix(source: str, field_name, key) -> str:
    parts = [source]
    if field_name is not None:
        parts.append(f"field {field_name!r}")
    if key is not None:
        parts.append(f"key {key!r}")
    return ", ".join(parts) + ": "


def test_cases_are_unique():
    assert len(set(IDS)) == len(IDS) == 49


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_rule_from_dict(case):
    _, template, field_name, key, detail = case
    with pytest.raises(TemplateError) as info:
        compile_source(template)
    error = info.value
    assert isinstance(error, ValueError)
    assert isinstance(error, RespcError)
    assert (error.field, error.key) == (field_name, key)
    assert error.source == "<dict>"
    message = str(error)
    assert message.startswith(_prefix("<dict>", field_name, key)), message
    assert detail in message
    assert detail in error.detail


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_rule_from_file_names_path(case, tmp_path):
    _, template, field_name, key, detail = case
    path = tmp_path / "bad_template.json"
    path.write_text(json.dumps(template), encoding="utf-8")
    with pytest.raises(ValueError) as info:
        respc.compile_template(str(path))
    error = info.value
    assert type(error) is TemplateError
    assert (error.source, error.field, error.key) == (str(path), field_name, key)
    assert str(error).startswith(_prefix(str(path), field_name, key))
    assert detail in str(error)


def test_valid_base_template_compiles():
    """The templates above are valid once the one broken rule is taken out."""
    module = respc.compile_template(field())
    assert module.parse_response("hi <x>there</x>", prefix="") == {"x": "there", "content": "hi"}
    assert module.FIELD_NAMES == ("x", "content")


def test_unknown_content_parser_lists_available():
    with pytest.raises(TemplateError) as info:
        compile_source(field(content="yaml"))
    for name in ("text", "int", "float", "bool", "json", "xml-inline", "kv-lines"):
        assert repr(name) in str(info.value)


def test_unknown_field_key_lists_allowed():
    with pytest.raises(TemplateError) as info:
        compile_source(field(stop="x"))
    assert "(allowed: ['open', 'open_pattern', 'close', 'close_pattern', 'content', 'content_args', " \
           "'repeats', 'join', 'optional', 'transform', 'transform_each'])" in str(info.value)


def test_template_not_an_object(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(TemplateError) as info:
        compile_source(str(path))
    assert str(info.value) == f"{path}: a response template must be a JSON object, got list"
    assert (info.value.field, info.value.key) == (None, None)


@pytest.mark.parametrize("spec, kind", [(42, "int"), (None, "NoneType"), (["qwen3"], "list")])
def test_spec_of_wrong_type(spec, kind):
    with pytest.raises(TemplateError) as info:
        load_template(spec)
    assert str(info.value).endswith(f"a template must be a dict, a path or a catalogue name, not {kind}")


# -- loaders (docs/template-language.md "Where a template lives") -----------------------------------
GOOD = {
    "defaults": {"role": "assistant"},
    "start_anchor": ANCHOR,
    "fields": {"reasoning": {"open": "<r>", "close": "</r>"}, "content": {}},
}


def _parses(module) -> None:
    assert module.parse_response("<r>why</r>answer", prefix="") == {
        "role": "assistant", "reasoning": "why", "content": "answer"}


def test_load_template_file(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(GOOD), encoding="utf-8")
    compiled = compile_source(str(path))
    assert compiled.template.source == str(path)
    assert compile_source(path).template.source == str(path)  # os.PathLike too
    _parses(respc.compile_template(path))


def test_load_tokenizer_config(tmp_path):
    path = tmp_path / "tokenizer_config.json"
    path.write_text(json.dumps({"model_max_length": 4096, "response_template": GOOD}), encoding="utf-8")
    loaded = load_template(str(path))
    assert loaded.source == f"{path}#response_template"
    assert loaded.document == GOOD
    _parses(respc.compile_template(str(path)))


def test_load_model_directory(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"response_template": GOOD}), encoding="utf-8")
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    loaded = load_template(str(tmp_path))
    assert loaded.source == f"{tmp_path / 'tokenizer_config.json'}#response_template"
    _parses(respc.compile_template(tmp_path))


def test_load_catalogue_name():
    loaded = load_template("qwen3")
    assert loaded.source == "templates/qwen3.json"
    assert loaded.document["start_anchor"] == "<|im_start|>assistant\n"
    assert "qwen3" in catalogue_names()
    assert respc.compile_template("qwen3").parse_response("<think>a</think>b<|im_end|>", prefix="") == {
        "role": "assistant", "reasoning_content": "a", "content": "b"}


def test_error_in_tokenizer_config_template_names_source(tmp_path):
    bad = {**GOOD, "fields": {"reasoning": {"open": "<r>", "join": "x"}, "content": {}}}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"response_template": bad}), encoding="utf-8")
    with pytest.raises(TemplateError) as info:
        compile_source(str(tmp_path))
    assert str(info.value) == (f"{tmp_path / 'tokenizer_config.json'}#response_template, field 'reasoning', "
                               "key 'join': 'join' requires 'repeats': true")


def test_json_syntax_error_has_line_and_column(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "start_anchor": "a",\n  "fields": {"content": {},}\n}\n', encoding="utf-8")
    with pytest.raises(TemplateError) as info:
        compile_source(str(path))
    assert isinstance(info.value, ValueError)
    assert str(info.value) == (f"{path}: not valid JSON at line 3, column 28: "
                               "Expecting property name enclosed in double quotes")
    assert info.value.source == str(path)


def test_json_syntax_error_in_tokenizer_config(tmp_path):
    path = tmp_path / "tokenizer_config.json"
    path.write_text('{"response_template": ', encoding="utf-8")
    with pytest.raises(TemplateError) as info:
        compile_source(str(path))
    assert str(info.value) == f"{path}: not valid JSON at line 1, column 23: Expecting value"


def test_tokenizer_config_without_key(tmp_path):
    path = tmp_path / "tokenizer_config.json"
    path.write_text(json.dumps({"chat_template": "{{ messages }}"}), encoding="utf-8")
    with pytest.raises(TemplateError) as info:
        compile_source(str(path))
    assert (info.value.field, info.value.key) == (None, "response_template")
    # without the key the chat template decides (compiler/detect.py); this one fits no family
    assert str(info.value) == (f"{path}, key 'response_template': tokenizer_config.json has no 'response_template' "
                               "key, and no catalogue family fits its chat template (no catalogue family's start "
                               "anchor occurs in the generation prompt)")


def test_model_directory_without_tokenizer_config(tmp_path):
    with pytest.raises(TemplateError) as info:
        compile_source(str(tmp_path))
    assert str(info.value) == (f"{tmp_path}: model directory has no tokenizer_config.json (its response_template "
                               "or chat template would give the template) and no chat_template.jinja or "
                               "chat_template.json (a chat template's catalogue family would)")


def test_missing_path(tmp_path):
    path = tmp_path / "nowhere" / "t.json"
    with pytest.raises(TemplateError) as info:
        respc.compile_template(str(path))
    assert isinstance(info.value, ValueError)
    assert str(info.value) == f"{path}: no such file or directory"


def test_missing_json_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TemplateError) as info:
        compile_source("missing.json")
    assert str(info.value) == "missing.json: no such file or directory"


def test_unknown_catalogue_name():
    with pytest.raises(TemplateError) as info:
        compile_source("no_such_family")
    message = str(info.value)
    assert message == ("no_such_family: no such file, and no catalogue template of that name (`respc list` shows "
                       f"the {len(catalogue_names())} catalogue templates)")


def test_wrapped_response_template_file(tmp_path):
    """A plain .json file whose object is {"response_template": {...}} is unwrapped."""
    path = tmp_path / "exported.json"
    path.write_text(json.dumps({"response_template": GOOD}), encoding="utf-8")
    loaded = load_template(str(path))
    assert loaded.source == f"{path}#response_template"
    _parses(respc.compile_template(str(path)))


def test_not_utf8_file_is_template_error(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"start_anchor": "\xe9", "fields": {"content": {}}}')
    with pytest.raises(ValueError) as info:
        compile_source(str(path))
    assert type(info.value) is TemplateError
    assert str(info.value).startswith(f"{path}: ")
