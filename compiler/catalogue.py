"""The template catalogue shipped as ``respc.templates`` (README "Use"; template-language.md "Where a template
lives"): its names, its model list, and reading one template by name.

The front door for catalogue names: ``compiler/load.py`` (a template from anywhere) and ``compiler/detect.py``
(which family a chat template renders) both read the catalogue here, so neither imports the other to reach it
(an import circle otherwise: ``load`` -> ``detect`` -> ``load``).
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from respc.runtime.errors import TemplateError

__all__ = ["catalogue_names", "catalogue_entries", "is_catalogue_name", "read_catalogue", "nearest_names"]


def catalogue_names() -> list[str]:
    """Return the sorted names of the catalogue templates shipped in ``respc.templates``."""
    root = resources.files("respc.templates")
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".json"))


def catalogue_entries() -> list[dict]:
    """The catalogue with its models: one dict per template, in name order.

    Read from ``templates/catalogue.jsonl`` (shipped as ``respc.templates``; one JSON object per
    line: ``family``, ``models`` (str), ``thinking_switch`` (str | None); a test keeps it equal
    to ``tests/cases/families/*.json``). A template without a line there gets ``models: ""``.

    Returns:
        list[dict]: ``{"family": str, "models": str, "thinking_switch": str | None}`` per
        catalogue template.
    """
    resource = resources.files("respc.templates") / "catalogue.jsonl"
    known = {}
    if resource.is_file():
        for line in resource.read_text(encoding="utf-8").splitlines():
            if line.strip():
                entry = json.loads(line)
                known[entry["family"]] = entry
    return [known.get(name, {"family": name, "models": "", "thinking_switch": None}) for name in catalogue_names()]


def nearest_names(name: str) -> str:
    """``did you mean 'qwen3'?`` for a mistyped catalogue name (close names by difflib, or names that
    start with it), else a pointer to ``respc list``; never the whole catalogue."""
    import difflib

    names = catalogue_names()
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.75)
    close += [known for known in names if known.startswith(name) and known not in close][:3 - len(close)]
    if close:
        return "did you mean " + " or ".join(repr(known) for known in close) + "? `respc list` shows them all"
    return f"`respc list` shows the {len(names)} catalogue templates"


def read_catalogue(name: str) -> tuple[Any, str, Path]:
    """The document, source label (``templates/<name>.json``) and path of the catalogue template ``name``.

    Raises:
        TemplateError: its file is not valid JSON.
    """
    resource = resources.files("respc.templates") / f"{name}.json"
    source = f"templates/{name}.json"
    try:
        document = json.loads(resource.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise TemplateError(f"not valid JSON at line {exc.lineno}: {exc.msg}", source=source) from None
    return document, source, Path(str(resource))


def is_catalogue_name(spec: Any) -> bool:
    """True when ``spec`` is a bare catalogue name: a ``str`` holding no path separator and not
    ending in ``.json`` that names a template shipped in ``respc.templates`` (README "Use";
    docs/security.md, "Catalogue names").

    Such a name means the catalogue template even when a folder or file of that name is in the
    working directory, so nothing placed there can stand in for it (docs/security.md "Catalogue names"); a path
    says so: ``./qwen3``, ``models/qwen3``, ``qwen3.json``. An ``os.PathLike`` is always a path.
    """
    if not isinstance(spec, str) or not spec or spec.endswith(".json"):
        return False
    if "/" in spec or os.sep in spec or (os.altsep and os.altsep in spec) or spec in (".", ".."):
        return False
    return (resources.files("respc.templates") / f"{spec}.json").is_file()
