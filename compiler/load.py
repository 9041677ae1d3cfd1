"""Pass 1: find and read a response template (SPEC section 1).

A template can be given as a dict, a standalone ``.json`` file, a ``tokenizer_config.json`` holding a
``response_template`` key, a model directory holding such a file, or a bare catalogue name
(``qwen3`` -> ``templates/qwen3.json``, shipped inside the package as ``respc.templates``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from respc.runtime.errors import TemplateError

__all__ = ["LoadedTemplate", "load_template", "catalogue_names", "catalogue_entries"]


@dataclass(frozen=True)
class LoadedTemplate:
    """A template document as read, before validation.

    Attributes:
        document (Any): the parsed JSON value (validated later; may be anything).
        source (str): a printable name of where it came from, used in every error message.
        path (Path | None): the file it was read from, or None for a dict.
    """

    document: Any
    source: str
    path: Path | None = None


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


def _read_json(path: Path, source: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")  # a leading byte order mark is not JSON: dropped
    except OSError as exc:
        raise TemplateError(f"cannot read file: {exc.strerror or exc}", source=source) from None
    except UnicodeDecodeError as exc:
        raise TemplateError(f"not UTF-8 text: byte {exc.object[exc.start]:#04x} at offset {exc.start}",
                            source=source) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TemplateError(
            f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", source=source
        ) from None


def _from_tokenizer_config(path: Path) -> LoadedTemplate:
    source = str(path)
    config = _read_json(path, source)
    if not isinstance(config, dict) or "response_template" not in config:
        raise TemplateError("tokenizer_config.json has no 'response_template' key", source=source,
                            key="response_template")
    return LoadedTemplate(config["response_template"], f"{source}#response_template", path)


def _hidden_hint(name: str) -> str:
    """A hint when a local folder or file named ``name`` hides the catalogue template of that name."""
    resource = resources.files("respc.templates") / f"{name}.json"
    if "/" in name or os.sep in name or not resource.is_file():
        return ""
    return (f" (a folder or file {name!r} here hides the catalogue template {name!r}; to use that one, "
            f"give its path: {resource})")


def load_template(spec: Any) -> LoadedTemplate:
    """Read a template from any of the places SPEC section 1 allows.

    Args:
        spec: a ``dict`` (the template itself), a ``str`` / ``os.PathLike`` naming a ``.json``
            template, a ``tokenizer_config.json``, a model directory containing one, or a bare
            catalogue name such as ``"qwen3"``.

    Returns:
        LoadedTemplate: the raw document and its source label.

    Raises:
        TemplateError: the file is missing, unreadable, not JSON, or a tokenizer config without
            ``response_template``; or the name matches nothing, or is the empty string (which would
            otherwise name the current folder by accident). A local folder or file that hides a
            catalogue name and fails to load says so. A UTF-8 byte order mark at the start of a
            file is dropped.
    """
    if isinstance(spec, dict):
        return LoadedTemplate(spec, "<dict>", None)
    if isinstance(spec, str) and spec == "":
        raise TemplateError("an empty string names no template (give a path, . for the current folder, "
                            "or a catalogue name)", source="''")
    if not isinstance(spec, (str, os.PathLike)):
        raise TemplateError(f"a template must be a dict, a path or a catalogue name, "
                            f"not {type(spec).__name__}", source=repr(spec)[:80])
    path = Path(spec)
    if path.is_dir():
        config = path / "tokenizer_config.json"
        if not config.is_file():
            raise TemplateError("model directory has no tokenizer_config.json" + _hidden_hint(str(spec)),
                                source=str(path))
        return _from_tokenizer_config(config)
    if path.is_file():
        if path.name == "tokenizer_config.json":
            return _from_tokenizer_config(path)
        try:
            document = _read_json(path, str(path))
        except TemplateError as exc:
            hint = _hidden_hint(str(spec))
            if not hint:
                raise
            raise TemplateError(exc.detail + hint, source=exc.source) from None
        if isinstance(document, dict) and "response_template" in document and "fields" not in document:
            return LoadedTemplate(document["response_template"], f"{path}#response_template", path)
        return LoadedTemplate(document, str(path), path)
    name = str(spec)
    if name and "/" not in name and os.sep not in name and not name.endswith(".json"):
        resource = resources.files("respc.templates") / f"{name}.json"
        if resource.is_file():
            source = f"templates/{name}.json"
            try:
                document = json.loads(resource.read_text(encoding="utf-8-sig"))
            except json.JSONDecodeError as exc:
                raise TemplateError(f"not valid JSON at line {exc.lineno}: {exc.msg}", source=source) from None
            return LoadedTemplate(document, source, Path(str(resource)))
        known = ", ".join(catalogue_names()) or "none"
        raise TemplateError(f"no such file, and no catalogue template of that name (catalogue: {known})",
                            source=name)
    raise TemplateError("no such file or directory", source=name)
