"""What a user of the installed package sees: ``help(respc)`` and the package metadata (issue 30).

The installed package must not point at files a user does not have (the repository's paths, the
design notes outside the project) and must name its public API; the metadata a package index shows
must stand alone (no links relative to the repository).
"""

from __future__ import annotations

import pydoc
import re
import sys
from pathlib import Path

import pytest

import respc

ROOT = Path(__file__).resolve().parent.parent

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")


def test_help_lists_the_public_api_one_line_each():
    text = pydoc.render_doc(respc, renderer=pydoc.plaintext)
    for name in respc.__all__:
        lines = [line for line in text.splitlines() if re.match(rf"\s*{re.escape(name)}\b", line.strip())
                 or line.strip().startswith(name)]
        assert lines, f"help(respc) does not name {name}"
    for name in ("compile_template", "parse_response", "get_response_parser", "parse_batch", "columns_mapper"):
        assert getattr(respc, name).__doc__, name
    assert set(respc.__all__) <= set(dir(respc))


def test_help_points_at_nothing_a_user_lacks():
    text = pydoc.render_doc(respc, renderer=pydoc.plaintext)
    text = text.split("\nFILE\n")[0]  # where the package is installed: pydoc's own section
    for word in ("SPEC", "pyproject", "respc_pkg/", "compiler/", "../shared", "issue "):
        assert word not in text, f"help(respc) mentions {word!r}"


def test_metadata_names_licence_authors_and_classifiers():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert all((ROOT / name).is_file() for name in project["license-files"])
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    assert project["authors"] and project["classifiers"]
    assert any(c.startswith("Programming Language :: Python :: 3.1") for c in project["classifiers"])


def test_long_description_has_no_repository_relative_links():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    text = (ROOT / project["readme"]).read_text()
    links = re.findall(r"\]\(([^)]+)\)", text) + re.findall(r'src="([^"]+)"', text)
    relative = [link for link in links if not re.match(r"[a-z]+://|#", link)]
    assert not relative, f"{project['readme']} links to repository files a package index cannot show: {relative}"


def test_the_installed_code_cites_only_the_projects_own_docs():
    """Docstrings and comments name the project's docs (template-language.md, events.md, README),
    never the design notes kept outside the project (SPEC sections, ../shared)."""
    found = []
    for folder in ("compiler", "runtime", "respc_pkg", "generated"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if re.search(r"\bSPEC(\.md\b| sections?\b| \d)|\.\./shared", line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found[:20])
