"""Generated parsers and the runtime stay light (docs/security.md "Generated module skeleton and
the compiled-scanner cache", STYLE "A generated module").

In a fresh interpreter: importing a generated module (compiled to a temporary file, imported by
path) must not import ``lark``, ``jinja2`` or ``transformers`` (nor the compiler), and
``respc.runtime`` must pull in nothing beyond the standard library and ``regex``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from respc.compiler.api import compile_source
from support import REPO

TEMPLATE_DIR = REPO / "templates"
CATALOGUE = sorted(path.stem for path in TEMPLATE_DIR.glob("*.json"))
FORBIDDEN = ("lark", "jinja2", "transformers", "respc.compiler")


def _run(code: str, *args: str) -> dict:
    result = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


_IMPORT_GENERATED = """
import importlib.util, json, sys
before = set(sys.modules)
spec = importlib.util.spec_from_file_location("respc_generated_under_test", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
message = module.parse_response(sys.argv[2], prefix="")
print(json.dumps({"new": sorted(set(sys.modules) - before), "all": sorted(sys.modules), "message": message}))
"""


@pytest.fixture(scope="module", params=[n for n in ("qwen3", "gpt_oss", "gemma4") if n in CATALOGUE] or CATALOGUE[:1])
def generated_path(request, tmp_path_factory):
    name = request.param
    path = tmp_path_factory.mktemp("gen") / f"{name}.py"
    path.write_text(compile_source(str(TEMPLATE_DIR / f"{name}.json"), source_name=f"templates/{name}.json").source,
                    encoding="utf-8")
    return path


def test_generated_module_imports_no_compiler_dependencies(generated_path):
    result = _run(_IMPORT_GENERATED, str(generated_path), "Hello there")
    for name in FORBIDDEN:
        loaded = [m for m in result["all"] if m == name or m.startswith(name + ".")]
        assert not loaded, f"importing {generated_path.name} loaded {loaded}"
    assert "respc.runtime" in result["new"]
    assert result["message"]["content"] == "Hello there"


def _third_party(modules: list[str]) -> list[str]:
    stdlib = sys.stdlib_module_names
    return sorted(m for m in modules if m.split(".")[0] not in stdlib and m.split(".")[0] not in ("regex", "respc"))


_IMPORT_RUNTIME = """
import json, sys
before = set(sys.modules)
import respc.runtime
print(json.dumps({"new": sorted(set(sys.modules) - before)}))
"""


def test_runtime_imports_only_stdlib_and_regex():
    new = _run(_IMPORT_RUNTIME)["new"]
    assert "respc.runtime" in new
    assert "regex" in new  # the runtime's one dependency (a fresh interpreter has not loaded it)
    assert _third_party(new) == [], "respc.runtime imported non-stdlib modules"
    assert not [m for m in new if m.startswith("respc.compiler")]


def test_third_party_filter_is_not_vacuous():
    """The stdlib filter above does flag a third-party module."""
    assert _third_party(["json", "regex._regex", "respc.runtime", "lark", "jinja2.ext"]) == ["jinja2.ext", "lark"]


@pytest.mark.parametrize("module,engine", [("respc.sglang", "sglang"), ("respc.vllm", "vllm")])
def test_plugin_without_its_engine_says_how_to_install_it(module, engine):
    """``import respc.sglang`` / ``respc.vllm`` without the engine: an ImportError naming the module that
    is missing and the install command (README, "SGLang plug-in" / "vLLM plug-in"), not a bare one."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec(engine) is not None:
        pytest.skip(f"{engine} is installed here")
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: {module} needs "), last
    assert f"No module named '{engine}'" in last and f"--no-deps {engine}==" in last, last
