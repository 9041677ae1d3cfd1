"""The documentation in docs/ stays true to the code.

* Every key the validator accepts (``compiler/validate.py`` TOP_LEVEL_KEYS, FIELD_KEYS and, once the
  v2 core is in, FIELD_KEYS_V2) and every content parser name (``runtime/content.py``
  CONTENT_PARSER_NAMES) is documented in docs/template-language.md: as a Markdown heading or in
  backticks.
* Every template example of the docs loads. The marker: a fenced block opened with ```json whose text
  contains ``"fields"`` is a template example (blocks of messages or events never have that key). It
  must be valid JSON and compile with :func:`respc.compiler.api.compile_source`. An example that uses
  v2 keys (``"respc_version": 2``) is skipped, saying why, only while the installed compiler has no
  FIELD_KEYS_V2; an example that needs a content parser still being added (PENDING_PARSERS) is
  skipped only while that parser is unknown.
* The links between the docs and to headings of docs/template-language.md resolve, and the README
  links the three documents and no longer sends readers to ../shared/SPEC.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from respc.compiler import validate as validate_module
from respc.compiler.api import compile_source
from respc.runtime.content import CONTENT_PARSER_NAMES

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
LANGUAGE = DOCS / "template-language.md"
DOC_FILES = ("template-language.md", "writing-a-template.md", "events.md")

FIELD_KEYS_V2 = getattr(validate_module, "FIELD_KEYS_V2", None)
NEEDS_V2_CORE = "needs the v2 core (compiler/validate.py has no FIELD_KEYS_V2 yet)"

#: Content parsers the docs describe that arrive with another branch of issue 7. An example using
#: one is skipped only while the installed runtime lacks it; any other unknown name fails.
PENDING_PARSERS = ("pythonic",)

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*$", re.M)
_BACKTICKED = re.compile(r"`([^`\n]+)`")


def _text(name: str) -> str:
    """The text of docs/<name>; "" when it is missing (test_docs_exist reports that)."""
    path = DOCS / name
    return path.read_text(encoding="utf-8") if path.is_file() else ""


@pytest.mark.parametrize("doc", DOC_FILES)
def test_docs_exist(doc):
    assert (DOCS / doc).is_file(), f"docs/{doc} is missing"


def _documented_names(markdown: str) -> set[str]:
    """Names written as a heading or in backticks (inline code), outside fenced blocks."""
    prose = _FENCE.sub("", markdown)
    names = set(_BACKTICKED.findall(prose))
    for heading in _HEADING.findall(prose):
        names.add(heading.strip())
        names.update(_BACKTICKED.findall(heading))
    return names


def _keys() -> list[str]:
    keys = list(validate_module.TOP_LEVEL_KEYS) + list(validate_module.FIELD_KEYS)
    return list(dict.fromkeys(keys))


@pytest.mark.parametrize("key", _keys())
def test_every_v1_key_is_documented(key):
    assert key in _documented_names(_text("template-language.md")), (
        f"key {key!r} of compiler/validate.py is not documented in docs/template-language.md "
        "(as a heading or in backticks)")


@pytest.mark.skipif(FIELD_KEYS_V2 is None, reason=NEEDS_V2_CORE)
@pytest.mark.parametrize("key", list(FIELD_KEYS_V2 or ()))
def test_every_v2_key_is_documented(key):
    assert key in _documented_names(_text("template-language.md")), (
        f"v2 key {key!r} of compiler/validate.py is not documented in docs/template-language.md")


@pytest.mark.parametrize("name", CONTENT_PARSER_NAMES)
def test_every_content_parser_is_documented(name):
    assert name in _documented_names(_text("template-language.md")), (
        f"content parser {name!r} of runtime/content.py is not documented in docs/template-language.md")


def _template_blocks() -> list[tuple[str, str]]:
    """(id, block text) of every template example: a ```json block containing "fields"."""
    found = []
    for doc in DOC_FILES:
        markdown = _text(doc)
        for match in _FENCE.finditer(markdown):
            lang, body = match.group(1), match.group(2)
            if lang == "json" and '"fields"' in body:
                line = markdown.count("\n", 0, match.start()) + 1
                found.append((f"{doc}:{line}", body))
    return found


TEMPLATE_BLOCKS = _template_blocks()


def test_the_docs_have_template_examples():
    # guards the marker: a change that made it match nothing would silently test nothing
    per_doc = {doc: sum(1 for where, _ in TEMPLATE_BLOCKS if where.startswith(doc + ":")) for doc in DOC_FILES}
    assert per_doc["template-language.md"] >= 20, per_doc
    assert per_doc["writing-a-template.md"] >= 2, per_doc


@pytest.mark.parametrize("where, body", TEMPLATE_BLOCKS, ids=[where for where, _ in TEMPLATE_BLOCKS])
def test_template_example_loads(where, body):
    try:
        document = json.loads(body)
    except json.JSONDecodeError as exc:
        pytest.fail(f"{where}: template example is not valid JSON: {exc}")
    assert isinstance(document, dict), f"{where}: a template example must be a JSON object"
    if document.get("respc_version") == 2 and FIELD_KEYS_V2 is None:
        pytest.skip(NEEDS_V2_CORE)
    used = {spec.get("content") for spec in document.get("fields", {}).values() if isinstance(spec, dict)}
    for name in PENDING_PARSERS:
        if name in used and name not in CONTENT_PARSER_NAMES:
            pytest.skip(f"needs the {name!r} content parser (runtime/content.py does not have it yet)")
    compiled = compile_source(document)
    assert compiled.template.fields, where


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(markdown: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in _HEADING.findall(_FENCE.sub("", markdown)):
        base = _anchor(heading)
        count = seen.get(base, 0)
        out.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    out.update(re.findall(r'<a id="([^"]+)"></a>', markdown))
    return out


ALL_DOCS = sorted(path.name for path in DOCS.glob("*.md"))


@pytest.mark.parametrize("doc", [f"docs/{name}" for name in ALL_DOCS] + ["README.md"])
def test_links_resolve(doc):
    source = REPO / doc
    markdown = _FENCE.sub("", source.read_text(encoding="utf-8") if source.is_file() else "")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", markdown):
        if target.startswith(("http://", "https://")):
            continue
        path, _, fragment = target.partition("#")
        linked = source.parent / path if path else source
        if not linked.is_file():
            broken.append(target)
        elif fragment and linked.suffix == ".md" and fragment not in _anchors(linked.read_text(encoding="utf-8")):
            broken.append(target)
    assert not broken, f"{doc}: links that do not resolve: {broken}"


def test_readme_links_the_docs_and_not_the_shared_spec():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for doc in DOC_FILES:
        assert f"(docs/{doc})" in readme, f"README does not link docs/{doc}"
    assert "shared/SPEC.md" not in readme
    for doc in DOC_FILES:
        assert "shared/SPEC" not in _text(doc) and "../shared" not in _text(doc), doc


# --- the worked example of docs/writing-a-template.md ---------------------------------------------
# Blocks marked <!-- doc-test: template NAME -->, <!-- doc-test: output NAME --> and
# <!-- doc-test: message TEMPLATE OUTPUT PREFIX --> (an HTML comment: invisible when rendered).
# Each message block must be exactly what that template gives for that output and prompt, whole
# and fed one character at a time.

_MARKED = re.compile(r"<!-- doc-test: (\w+) ([^>]*?) -->[ \t]*\n[ \t]*```\w*\n(.*?)\n[ \t]*```", re.S)
#: the prompts the guide's samples were generated from ("thinking": the generation prompt pre-opens <think>)
GUIDE_PROMPTS = {
    "thinking": "<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n<|im_start|>assistant\n<think>\n",
    "none": "",
}


def _marked(doc: str) -> dict[tuple[str, str], str]:
    out = {}
    for kind, name, body in _MARKED.findall(_text(doc)):
        lines = body.split("\n")
        indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
        out[(kind, name.strip())] = "\n".join(line[indent:] for line in lines)
    return out


GUIDE = _marked("writing-a-template.md")
GUIDE_CASES = [name for kind, name in GUIDE if kind == "message"]


def test_the_guide_has_checked_examples():
    assert len(GUIDE_CASES) >= 3, sorted(GUIDE)


@pytest.mark.parametrize("case", GUIDE_CASES)
def test_guide_message_is_what_the_template_gives(case):
    template_name, output_name, prompt_name = case.split()
    document = json.loads(GUIDE[("template", template_name)])
    if document.get("respc_version") == 2 and FIELD_KEYS_V2 is None:
        pytest.skip(NEEDS_V2_CORE)
    from respc.compiler.api import compile_template

    module = compile_template(document)
    text = GUIDE[("output", output_name)]
    prompt = GUIDE_PROMPTS[prompt_name]
    expected = json.loads(GUIDE[("message", case)])
    assert module.parse_response(text, prefix=prompt) == expected
    parser = module.ResponseParser(prompt)
    for character in text:
        parser.feed(character)
    assert parser.finalize()[0] == expected


def test_guide_check_output_is_what_respc_check_prints(tmp_path):
    """The `respc check my_qwen3.json` output the guide shows (step 4) is what the command prints
    for the guide's template, line for line (a new lint note must reach the guide)."""
    import subprocess
    import sys

    shown = GUIDE[("check", "qwen3-v1")]
    (tmp_path / "my_qwen3.json").write_text(GUIDE[("template", "qwen3-v1")], encoding="utf-8")
    ran = subprocess.run([sys.executable, "-m", "respc", "check", "my_qwen3.json"], cwd=tmp_path,
                         capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert ran.returncode == 0, ran.stderr
    printed = (ran.stdout + ran.stderr).strip().splitlines()
    assert sorted(printed) == sorted(shown.strip().splitlines())


@pytest.mark.parametrize("doc", ALL_DOCS)
def test_docs_cite_nothing_a_wheel_user_lacks(doc):
    """docs/ ships with the package: no ../shared path, no SPEC.md, no issue or session number (the
    maintainers' reference data, issue texts and session notes are not part of it), also where a line
    break splits one."""
    prose = _text(doc)
    found = re.findall(r"\.\./shared|\bSPEC\.md|\b[Ii]ssues?\s+#?\d+|\b[Ss]essions?\s+\d+", prose)
    assert not found, f"docs/{doc} cites {found}"


# --- what a generated module contains: README "Layout", docs/security.md "Generated module skeleton"


def _section(text: str, heading: str) -> str:
    """The text under the ``## `` heading that starts with ``heading``, up to the next ``## ``."""
    match = re.search(rf"^## {re.escape(heading)}[^\n]*\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"no '## {heading}' section"
    return match.group(1)


def _generated_modules() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted((REPO / "generated").glob("*.py"))
            if path.name != "__init__.py"}


def test_the_layout_names_every_call_and_record_a_module_writes():
    """Every call a catalogue module makes, and every ``_rt.`` name it uses, is named in the README's
    "Layout" (and every call in docs/security.md's "Generated module skeleton"); every ``_rt.`` name
    the two sections cite exists in the runtime and is written by some module (a record the emitter
    no longer writes, such as ``HoldLiterals``, is not described as part of a module)."""
    import ast

    import respc.runtime as runtime

    layout = _section((REPO / "README.md").read_text(encoding="utf-8"), "Layout")
    skeleton = _section(_text("security.md"), "Generated module skeleton")
    calls, names = set(), set()
    for text in _generated_modules().values():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call):
                calls.add(ast.unparse(node.func))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "_rt":
                names.add(node.attr)
    for where, prose in (("README.md Layout", layout), ("docs/security.md skeleton", skeleton)):
        missing = sorted(c for c in calls if not re.search(rf"`[^`\n]*(?<![\w.]){re.escape(c)}[`(<]", prose))
        assert not missing, f"{where} does not name these calls of generated modules: {missing}"
        cited = set(re.findall(r"`_rt\.(\w+)", prose))
        stale = sorted(n for n in cited if n not in names or not hasattr(runtime, n))
        assert not stale, f"{where} cites _rt names no generated module writes: {stale}"
    unnamed = sorted(n for n in names if f"_rt.{n}" not in layout)
    assert not unnamed, f"README.md Layout does not name these _rt names of generated modules: {unnamed}"


def test_the_layout_gives_the_sections_of_a_module_in_order():
    """The ``# -- `` section headings the README's "Layout" quotes are every module's headings, in the
    order a module writes them (the recover class's repeat after ``# -- errors="recover"``)."""
    layout = _section((REPO / "README.md").read_text(encoding="utf-8"), "Layout")
    quoted = [h.strip() for h in re.findall(r"`(# -- [^`]+)`", layout)]
    assert len(quoted) >= 6, quoted
    for name, text in _generated_modules().items():
        headings = [line for line in text.splitlines() if line.startswith("# -- ")]
        ranks = []
        for line in headings:
            found = [i for i, h in enumerate(quoted) if line.startswith(h)]
            assert found, f"generated/{name}: heading {line!r} is not in the README's Layout"
            ranks.append(found[0])
        strict = ranks[:ranks.index(quoted.index('# -- errors="recover"'))] if quoted.index('# -- errors="recover"') in ranks else ranks
        assert strict == sorted(strict), f"generated/{name}: sections {headings} not in the README's order"
        assert text.index("class ResponseParser(") < text.index("_rt.module_api(ResponseParser)") < text.index("GRAMMAR =")


def test_the_readme_names_every_line_respc_detect_prints():
    """Each line `respc detect` prints for a bundled chat template starts with a label the README's
    paragraph on `respc detect` quotes (`family:`, ..., `why:`), and the README quotes no other."""
    import subprocess
    import sys

    chat_template = REPO / "tests" / "cases" / "chat_templates" / "command_r_plus.jinja"
    ran = subprocess.run([sys.executable, "-m", "respc", "detect", str(chat_template)], cwd=REPO,
                         capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert ran.returncode == 0, ran.stderr
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    paragraph = readme[readme.index("`respc detect MODEL_DIR"):readme.index("The tie rule")]
    labels = [line.split(":", 1)[0] + ":" for line in ran.stdout.splitlines()]
    assert labels, ran.stdout
    quoted = re.findall(r"`([a-z][a-z ]*:)", paragraph)
    for label in labels:
        assert label in quoted, f"respc detect prints {label!r}, which the README does not describe"
    assert set(quoted) <= set(labels) | {"not rendered (not checked):"}, quoted


def test_the_javascript_examples_run_as_written(tmp_path):
    """docs/javascript.md: the install command (`respc compile kimi_vl --target js -o web/kimi_vl.mjs
    --with-runtime --parents`, in an empty folder: without `--parents` it exits 2), then its two ```js examples, verbatim, under Node in that folder: the API tour
    on a whole output, and the streaming example reading a local server that sends the output in
    pieces (only `url`, `body`, `prompt`, `show` and the output are supplied around it)."""
    import shutil
    import subprocess
    import sys

    node = shutil.which("node")
    if node is None:
        pytest.skip("node (Node.js 20 or later) is not installed")
    doc = _text("javascript.md")
    install = re.search(r"^respc compile kimi_vl --target js -o web/kimi_vl\.mjs --with-runtime( --parents)?", doc, re.M)
    assert install, "docs/javascript.md no longer shows the install command this test runs"
    ran = subprocess.run([sys.executable, "-m", "respc", *install.group(0).split()[1:]], cwd=tmp_path,
                         capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert ran.returncode == 0, ran.stderr
    api, stream = [body for lang, body in _FENCE.findall(doc) if lang == "js"][:2]
    api_script = (
        'const prefix = "<|im_assistant|>assistant<|im_middle|>";\n'
        'const text = "\\u25c1think\\u25b7hm\\u25c1/think\\u25b7Hi";\n'
        + api.replace("./kimi_vl.mjs", "./web/kimi_vl.mjs")
        + '\nconsole.log(JSON.stringify([message, parseResponse(text, { prefix: "" })]));\n')
    (tmp_path / "api.mjs").write_text(api_script, encoding="utf-8")
    ran = subprocess.run([node, "api.mjs"], cwd=tmp_path, capture_output=True, text=True, encoding="utf-8",
                         timeout=60)
    assert ran.returncode == 0, ran.stderr
    expected = {"role": "assistant", "reasoning_content": "hm", "content": "Hi"}
    assert json.loads(ran.stdout.strip().splitlines()[-1]) == [expected, expected]
    server = (
        'import http from "node:http";\n'
        'const pieces = ["\\u25c1think\\u25b7I sho", "uld answer.\\u25c1/thi", "nk\\u25b7Hel", "lo there"];\n'
        'const server = http.createServer((req, res) => { res.writeHead(200);\n'
        '  let i = 0; const tick = setInterval(() => { if (i < pieces.length) res.write(pieces[i++]);\n'
        '    else { clearInterval(tick); res.end(); } }, 5); });\n'
        'await new Promise((done) => server.listen(0, "127.0.0.1", done));\n'
        'const url = `http://127.0.0.1:${server.address().port}/`, body = "{}", prompt = "";\n'
        'const shown = []; const show = (field, text) => shown.push([field, text]);\n')
    script = (server + stream.replace("./kimi_vl.mjs", "./web/kimi_vl.mjs")
              + "\nserver.close();\nconsole.log(JSON.stringify({ message, shown }));\n")
    (tmp_path / "stream.mjs").write_text(script, encoding="utf-8")
    ran = subprocess.run([node, "stream.mjs"], cwd=tmp_path, capture_output=True, text=True, encoding="utf-8",
                         timeout=60)
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    assert result["message"] == {"role": "assistant", "reasoning_content": "I should answer.", "content": "Hello there"}
    assert "".join(text for field, text in result["shown"] if field == "content") == "Hello there"


def test_the_readme_openai_example_runs_as_written():
    """README "OpenAI streaming": the ```python block, verbatim, with only `prompt_text`, `tools`,
    `engine_output` and `send` supplied; the chunks it sends add up to the final message."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = next(body for lang, body in _FENCE.findall(readme)
                 if lang == "python" and "ChatCompletionStream(" in body)
    tools = json.loads((REPO / "examples" / "tools.json").read_text(encoding="utf-8"))
    sent = []
    scope = {"prompt_text": "<|im_start|>assistant\n<think>\n", "tools": tools, "send": sent.append,
             "engine_output": ["a</think>Hi <tool_call>{\"name\": \"get_weather\", \"argu",
                               "ments\": {\"city\": \"Paris\"}}</tool_call>"]}
    exec(compile(block, "README.md", "exec"), scope)
    final = scope["final"]
    deltas = [choice["delta"] for chunks in sent for chunk in chunks for choice in chunk["choices"]]
    assert "".join(d.get("content", "") for d in deltas) == final["content"] == "Hi"
    arguments = "".join(call["function"].get("arguments", "") for d in deltas for call in d.get("tool_calls", ()))
    assert json.loads(arguments) == {"city": "Paris"}
    assert final["tool_calls"][0]["function"]["name"] == "get_weather"


def test_guide_tools_type_the_arguments(tmp_path):
    """The guide's "Tool schemas" step, as written: its `tools.json` and its command give `days` as
    the integer 3 (the sample wrote the string "3")."""
    import subprocess
    import sys

    (tmp_path / "my_qwen3.json").write_text(GUIDE[("template", "qwen3-v1")], encoding="utf-8")
    (tmp_path / "sample1.txt").write_text(GUIDE[("output", "sample1")], encoding="utf-8", newline="")
    (tmp_path / "prompt.txt").write_text(GUIDE_PROMPTS["thinking"], encoding="utf-8", newline="")
    (tmp_path / "tools.json").write_text(GUIDE[("tools", "weather")], encoding="utf-8")
    command = re.search(r"^respc parse my_qwen3\.json sample1\.txt .*--tools tools\.json$",
                        _text("writing-a-template.md"), re.M).group(0)
    ran = subprocess.run([sys.executable, "-m", "respc", *command.split()[1:]], cwd=tmp_path,
                         capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert ran.returncode == 0, ran.stderr
    arguments = json.loads(ran.stdout)["tool_calls"][0]["function"]["arguments"]
    assert arguments == {"city": "Paris", "days": 3}


def test_the_readme_quotes_what_respc_detect_says_for_a_new_format(tmp_path):
    """A chat template of a made-up format (no catalogue family's start anchor in its prompt): `respc
    detect` exits 1 with the one line the README quotes, word for word."""
    import subprocess
    import sys

    (tmp_path / "zorp.jinja").write_text(
        "{%- for m in messages %}<|zorp|>{{ m.role }}\n{{ m.content }}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}<|zorp|>bot\n{% endif %}", encoding="utf-8")
    ran = subprocess.run([sys.executable, "-m", "respc", "detect", "zorp.jinja"], cwd=tmp_path,
                         capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert ran.returncode == 1 and ran.stdout == ""
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    quoted = re.search(r"`(respc: no catalogue family fits: F: [^`]+)`", readme)
    assert quoted, "the README does not quote respc detect's line for a new format"
    assert ran.stderr == quoted.group(1).replace(": F: ", ": zorp.jinja: ", 1) + "\n"


def test_the_javascript_delta_example_runs_as_written(tmp_path):
    """docs/javascript.md "OpenAI deltas": its ```js server example, verbatim but for the port (0, so
    the system picks a free one), under Node beside `respc compile hermes2pro --target js
    --with-runtime`: an engine server sends a hermes2pro output in pieces, a client reads the
    example's server-sent events, and what it accumulates is the answer and the tool call, with
    finish reason tool_calls and `data: [DONE]` last."""
    import shutil
    import subprocess
    import sys

    node = shutil.which("node")
    if node is None:
        pytest.skip("node (Node.js 20 or later) is not installed")
    doc = _text("javascript.md")
    section = doc.split("## OpenAI deltas", 1)[1]
    example = [body for lang, body in _FENCE.findall(section) if lang == "js"][0]
    assert "server.listen(8000);" in example, "the example no longer listens as this test expects"
    ran = subprocess.run([sys.executable, "-m", "respc", "compile", "hermes2pro", "--target", "js", "-o",
                          "hermes2pro.mjs", "--with-runtime"], cwd=tmp_path, capture_output=True, text=True,
                         encoding="utf-8", timeout=120)
    assert ran.returncode == 0, ran.stderr
    lines = example.split("\n")
    imports = "\n".join(line for line in lines if line.startswith("import "))
    body = "\n".join(line for line in lines if not line.startswith("import "))
    engine = (
        'const pieces = ["Let me ch", "eck. <tool_c", \'all>{"name": "get_weather", "argu\', \'ments": {"city": "Pa\',\n'
        '  \'ris", "days": 2.0}}</tool_call>\'];\n'
        'const engine = http.createServer((req, res) => { res.writeHead(200);\n'
        '  let i = 0; const tick = setInterval(() => { if (i < pieces.length) res.write(pieces[i++]);\n'
        '    else { clearInterval(tick); res.end(); } }, 5); });\n'
        'await new Promise((done) => engine.listen(0, "127.0.0.1", done));\n'
        'const engineUrl = `http://127.0.0.1:${engine.address().port}/`, prompt = "";\n')
    client = (
        '\nawait new Promise((done) => server.once("listening", done));\n'
        'const got = await (await fetch(`http://127.0.0.1:${server.address().port}/`)).text();\n'
        'server.close(); engine.close();\n'
        'console.log(JSON.stringify(got));\n')
    script = imports + "\n" + engine + body.replace("server.listen(8000);", 'server.listen(0, "127.0.0.1");') + client
    (tmp_path / "serve.mjs").write_text(script, encoding="utf-8")
    ran = subprocess.run([node, "serve.mjs"], cwd=tmp_path, capture_output=True, text=True, encoding="utf-8",
                         timeout=60)
    assert ran.returncode == 0, ran.stderr
    events = json.loads(ran.stdout.strip().splitlines()[-1]).split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""]
    content, calls, reasons = "", {}, []
    for event in events[:-2]:
        assert event.startswith("data: ")
        choice = json.loads(event[len("data: "):])["choices"][0]
        content += choice["delta"].get("content", "")
        reasons.append(choice["finish_reason"])
        for call in choice["delta"].get("tool_calls", ()):
            have = calls.setdefault(call["index"], {"name": "", "arguments": ""})
            for key, value in call.get("function", {}).items():
                have[key] += value
    assert content == "Let me check."
    assert calls == {0: {"name": "get_weather", "arguments": '{"city": "Paris", "days": 2.0}'}}
    assert reasons[-1] == "tool_calls" and reasons[:-1] == [None] * (len(reasons) - 1)


def test_events_truncated_regions_quote_the_errors_a_cut_output_gives():
    """docs/events.md "Truncated regions": the error quoted for a region cut before its close
    (qwen3 ``Sure.<tool_call>``) and, for a json body cut inside its value (``<tool_call>{"name":
    "f", "argu``), the json parser's own error, in strict mode and in the recover diagnostic
    (kind ``truncated``) alike; both texts are quoted in the section."""
    from respc.compiler.api import compile_template
    from respc.runtime.errors import ContentParseError

    section = _text("events.md").split("### Truncated regions", 1)[1].split("\n### ", 1)[0]
    prose = " ".join(section.split())
    module = compile_template("qwen3")
    for text, quoted in (("Sure.<tool_call>", "Field 'tool_calls': the output ended inside this region "
                                              "before its close (truncated);"),
                         ('Sure.<tool_call>{"name": "f", "argu', "Field 'tool_calls': json parser could not "
                                                                 "parse region as JSON.")):
        with pytest.raises(ContentParseError) as raised:
            module.parse_response(text, prefix="")
        assert str(raised.value).startswith(quoted), (text, str(raised.value))
        assert f"`{quoted}" in prose, f"docs/events.md no longer quotes {quoted!r}"
        parser = module.ResponseParser("", errors="recover")
        parser.feed(text)
        message, _ = parser.finalize()
        assert message == {"role": "assistant", "content": "Sure."}
        [diagnostic] = parser.diagnostics
        assert diagnostic["kind"] == "truncated" and diagnostic["message"] == f"ContentParseError: {raised.value}"


GUIDE_RECOVER_CASES = [name for kind, name in GUIDE if kind == "recover"]


def test_the_guide_shows_a_cut_off_output():
    assert GUIDE_RECOVER_CASES and [name for kind, name in GUIDE if kind == "stderr"], sorted(GUIDE)


@pytest.mark.parametrize("case", GUIDE_RECOVER_CASES)
def test_guide_recover_message_is_what_the_template_gives(case):
    """docs/writing-a-template.md, "Cut-off and damaged output": the message shown for
    ``errors="recover"`` is what the guide's template gives, whole and one character at a time,
    and the same output raises in strict mode."""
    from respc.compiler.api import compile_template
    from respc.runtime.errors import ContentParseError

    template_name, output_name, prompt_name = case.split()
    module = compile_template(json.loads(GUIDE[("template", template_name)]))
    text = GUIDE[("output", output_name)]
    prompt = GUIDE_PROMPTS[prompt_name]
    expected = json.loads(GUIDE[("recover", case)])
    assert module.parse_response(text, prefix=prompt, errors="recover") == expected
    parser = module.ResponseParser(prompt, errors="recover")
    for character in text:
        parser.feed(character)
    assert parser.finalize()[0] == expected
    assert [d["kind"] for d in parser.diagnostics] == ["truncated"]
    with pytest.raises(ContentParseError):
        module.parse_response(text, prefix=prompt)


@pytest.mark.parametrize("case", [name for kind, name in GUIDE if kind == "stderr"])
def test_guide_stderr_is_what_respc_parse_prints(tmp_path, case):
    """The standard error the guide shows for `respc parse my_qwen3.json sample3.txt --prefix-file
    prompt.txt` (exit 1) and the same with `--errors recover` (exit 0, the recover message on
    standard output), line for line."""
    import subprocess
    import sys

    template_name, output_name, prompt_name, mode = case.split()
    (tmp_path / "my_qwen3.json").write_text(GUIDE[("template", template_name)], encoding="utf-8")
    (tmp_path / f"{output_name}.txt").write_text(GUIDE[("output", output_name)], encoding="utf-8", newline="")
    (tmp_path / "prompt.txt").write_text(GUIDE_PROMPTS[prompt_name], encoding="utf-8", newline="")
    command = ["parse", "my_qwen3.json", f"{output_name}.txt", "--prefix-file", "prompt.txt"]
    if mode == "recover":
        shown = re.search(rf"^respc parse my_qwen3\.json {output_name}\.txt .*--errors recover$",
                          _text("writing-a-template.md"), re.M)
        assert shown, "the guide no longer shows the --errors recover command"
        command = shown.group(0).split()[1:]
    ran = subprocess.run([sys.executable, "-m", "respc", *command], cwd=tmp_path, capture_output=True,
                         text=True, encoding="utf-8", timeout=120)
    assert ran.stderr == GUIDE[("stderr", case)] + "\n"
    if mode == "recover":
        assert ran.returncode == 0
        assert json.loads(ran.stdout) == json.loads(GUIDE[("recover", f"{template_name} {output_name} {prompt_name}")])
    else:
        assert (ran.returncode, ran.stdout) == (1, "")


_REPO_PATH = re.compile(r"(?:compiler|runtime|respc_pkg|tests|templates|generated|benchmarks|examples|docs|respc)"
                        r"/[\w./-]+(?:::\w+)?")


@pytest.mark.parametrize("doc", [f"docs/{name}" for name in ALL_DOCS] + ["README.md"])
def test_repository_paths_the_docs_name_exist(doc):
    """A backticked path under one of the repository's folders (`runtime/stream.py`,
    `tests/test_x.py::test_y`) names a file or folder the repository has; the package's own
    folder is `respc_pkg/` (installed as `respc`), so `respc/openai.py` names nothing."""
    prose = (REPO / doc).read_text(encoding="utf-8")
    named = {m for m in _BACKTICKED.findall(prose) if _REPO_PATH.fullmatch(m)}
    missing = sorted(p for p in named if not (REPO / p.split("::", 1)[0]).exists())
    assert not missing, f"{doc} names paths the repository does not have: {missing}"
    # a test named by its file (`tests/test_x.py::test_y`) is defined in that file
    for path, _, name in (p.partition("::") for p in named if "::" in p):
        source = (REPO / path).read_text(encoding="utf-8")
        defined = re.search(rf"^\s*(?:async )?(?:def|class) {re.escape(name)}\b", source, re.M)
        assert defined, f"{doc} names {path}::{name}, which {path} does not define"


def test_the_layout_names_every_module_of_the_compiler_and_the_runtime():
    """README "Layout": each module of `compiler/` and `runtime/` (and the JavaScript runtime) is
    named, so a contributor finds where a pass lives (`emit_js.py` and `recover_open.py` were not)."""
    layout = _section((REPO / "README.md").read_text(encoding="utf-8"), "Layout")
    modules = [p.name for folder in ("compiler", "runtime") for p in sorted((REPO / folder).glob("*.py"))
               if p.name != "__init__.py"] + ["js/respc.mjs"]
    unnamed = [name for name in modules if f"`{name}`" not in layout]
    assert not unnamed, f"README.md Layout does not name {unnamed}"
