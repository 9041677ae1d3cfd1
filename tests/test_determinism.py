"""Compiler output is deterministic (docs/security.md "Generated module skeleton
and the compiled-scanner cache", STYLE "Determinism").

Each catalogue template is compiled in two fresh interpreters with different ``PYTHONHASHSEED``s
(so any set/dict-order or ``hash()`` dependence in the compiler shows up) and the generated sources
must be byte-identical. The banner must not leak the machine (absolute paths) or the hash seed.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from support import REPO

TEMPLATE_DIR = REPO / "templates"
CATALOGUE = sorted(path.stem for path in TEMPLATE_DIR.glob("*.json"))
SEEDS = ("0", "12345")

# One interpreter compiles every name given on the command line and writes the sources, separated by
# a NUL line, to stdout as UTF-8 bytes (so the comparison is byte for byte).
_COMPILE_ALL = """
import sys
from respc.compiler.api import compile_source
out = []
for name in sys.argv[1:]:
    source = compile_source(
        f"templates/{name}.json",
        source_name=f"templates/{name}.json",
        command=f"respc compile templates/{name}.json -o generated/{name}.py",
    ).source
    out.append(name.encode() + b"\\n" + source.encode("utf-8"))
sys.stdout.buffer.write(b"\\n\\0\\n".join(out))
"""


def _compile_in_subprocess(seed: str, names: list[str]) -> dict[str, bytes]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    result = subprocess.run([sys.executable, "-c", _COMPILE_ALL, *names], cwd=REPO, env=env,
                            capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    sources = {}
    for block in result.stdout.split(b"\n\0\n"):
        name, _, source = block.partition(b"\n")
        sources[name.decode()] = source
    return sources


@pytest.fixture(scope="module")
def compiled_by_seed() -> dict[str, dict[str, bytes]]:
    return {seed: _compile_in_subprocess(seed, CATALOGUE) for seed in SEEDS}


@pytest.mark.parametrize("name", CATALOGUE)
def test_same_bytes_under_different_hash_seeds(compiled_by_seed, name):
    first, second = (compiled_by_seed[seed][name] for seed in SEEDS)
    assert first, f"{name}: empty output"
    assert first == second, f"{name}: generated source differs between PYTHONHASHSEED={SEEDS[0]} and {SEEDS[1]}"


@pytest.mark.parametrize("name", CATALOGUE)
def test_banner_names_relative_source_only(compiled_by_seed, name):
    source = compiled_by_seed[SEEDS[0]][name].decode("utf-8")
    lines = source.splitlines()
    assert "@generated" in lines[1] and lines[2] == f"# template: templates/{name}.json"
    assert str(REPO) not in source, "absolute path leaked into the generated module"
    assert f"respc compile templates/{name}.json -o generated/{name}.py" in source


def test_in_process_compile_matches_subprocess(compiled_by_seed):
    """The same call in this interpreter (another hash seed again, most likely) gives the same bytes."""
    from respc.compiler.api import compile_source

    name = CATALOGUE[0]
    source = compile_source(str(TEMPLATE_DIR / f"{name}.json"), source_name=f"templates/{name}.json",
                            command=f"respc compile templates/{name}.json -o generated/{name}.py").source
    assert source.encode("utf-8") == compiled_by_seed[SEEDS[0]][name]
