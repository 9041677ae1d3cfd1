"""Pass 1: find and read a response template (SPEC section 1).

A template can be given as a dict, a standalone ``.json`` file, a ``tokenizer_config.json`` holding a
``response_template`` key, a model directory holding such a file, or a bare catalogue name
(``qwen3`` -> ``templates/qwen3.json``, shipped inside the package as ``respc.templates``).

A model directory, ``tokenizer_config.json``, ``chat_template.json`` or ``chat_template.jinja``
without a ``response_template`` gives the catalogue template of the family its chat template
renders (``compiler/detect.py``, issue 11); :attr:`LoadedTemplate.note` says which was used.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from respc.runtime.errors import TemplateError

__all__ = ["LoadedTemplate", "load_template", "catalogue_names", "catalogue_entries", "MAX_FILE_BYTES"]


@dataclass(frozen=True)
class LoadedTemplate:
    """A template document as read, before validation.

    Attributes:
        document (Any): the parsed JSON value (validated later; may be anything).
        source (str): a printable name of where it came from, used in every error message.
        path (Path | None): the file it was read from, or None for a dict.
        note (str | None): for a model directory, ``tokenizer_config.json`` or chat template: one
            sentence saying whether its ``response_template`` or a detected catalogue family was
            used (and why); None for a template file, a dict or a catalogue name.
    """

    document: Any
    source: str
    path: Path | None = None
    note: str | None = None


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


#: bytes of a JSON file read as a template or tokenizer_config.json (docs/security.md, "Limits");
#: larger files are refused before they are read. The catalogue's largest template is 2,577 bytes;
#: a tokenizer_config.json with its chat template and added tokens is rarely above a few MB.
MAX_FILE_BYTES = 64 * 1024 * 1024


def _read_json(path: Path, source: str) -> Any:
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # the read below says why
    if size > MAX_FILE_BYTES:
        raise TemplateError(f"file of {size:,} bytes; the limit is {MAX_FILE_BYTES:,} (docs/security.md, \"Limits\")",
                            source=source)
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


# Files in a model directory that hold a chat template (transformers' order of precedence).
_CHAT_TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")


def _from_tokenizer_config(path: Path) -> LoadedTemplate:
    """``response_template`` of a tokenizer_config.json, else the family its chat template renders."""
    source = str(path)
    config = _read_json(path, source)
    if isinstance(config, dict) and "response_template" in config:
        return LoadedTemplate(config["response_template"], f"{source}#response_template", path,
                              f"{source}: using its response template (key 'response_template')")
    if not isinstance(config, dict):
        raise TemplateError("tokenizer_config.json is not a JSON object", source=source)
    # transformers 5 keeps the chat template next to it (chat_template.jinja); older ones inside it
    where = path.parent if any((path.parent / n).is_file() for n in _CHAT_TEMPLATE_FILES) else path
    return _from_chat_template(where, "tokenizer_config.json has no 'response_template' key", source,
                               "response_template")


@functools.lru_cache(maxsize=32)
def _detect(chat: Any) -> Any:
    from .detect import detect  # late: detect imports this module and every generated parser

    return detect(chat)


def _from_chat_template(where: Path, why: str, source: str, key: str | None = None) -> LoadedTemplate:
    """The catalogue template of the family the chat template at ``where`` renders.

    ``why`` says why no response template was found; ``source`` and ``key`` label the error.

    Raises:
        TemplateError: no chat template to read there, or no catalogue family fits it (naming
            ``source`` and both reasons).
    """
    from .detect import read_chat_template

    try:
        chat = read_chat_template(where)
    except (FileNotFoundError, ValueError) as exc:
        raise TemplateError(f"{why}, and no chat template to detect a family from ({exc})",
                            source=source, key=key) from None
    found = _detect(chat)
    reason = found.reason.removeprefix(f"{chat.origin}: ")
    if found.family is None:
        raise TemplateError(f"{why}, and no catalogue family fits its chat template ({reason})",
                            source=source, key=key)
    switch = f"; thinking switch: {found.thinking_switch}" if found.thinking_switch else ""
    note = (f"{source}: {why}; using the catalogue family {found.family!r} detected from its chat template "
            f"{chat.origin} ({reason}{switch})")
    loaded = _from_catalogue(found.family)
    return LoadedTemplate(loaded.document, loaded.source, loaded.path, note)


def _from_catalogue(name: str) -> LoadedTemplate:
    resource = resources.files("respc.templates") / f"{name}.json"
    source = f"templates/{name}.json"
    try:
        document = json.loads(resource.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise TemplateError(f"not valid JSON at line {exc.lineno}: {exc.msg}", source=source) from None
    return LoadedTemplate(document, source, Path(str(resource)))


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
            template, a ``tokenizer_config.json``, a model directory, a ``chat_template.jinja`` /
            ``chat_template.json``, or a bare catalogue name such as ``"qwen3"``. A model
            directory or tokenizer_config.json gives its ``response_template`` key, else (and a
            chat template always) the catalogue template of the family detected from the chat
            template (``compiler/detect.py``); ``note`` of the result says which.

    Returns:
        LoadedTemplate: the raw document and its source label.

    Raises:
        TemplateError: the file is missing, unreadable, not JSON, or a model directory /
            tokenizer config without ``response_template`` whose chat template is missing or fits
            no catalogue family (the error says both); or the name matches nothing, or is the empty string (which would
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
        if config.is_file():
            return _from_tokenizer_config(config)
        if any((path / name).is_file() for name in _CHAT_TEMPLATE_FILES):
            return _from_chat_template(path, "model directory has no tokenizer_config.json", str(path))
        raise TemplateError("model directory has no tokenizer_config.json (its response_template or chat "
                            "template would give the template) and no chat_template.jinja or "
                            "chat_template.json (a chat template's catalogue family would)" + _hidden_hint(str(spec)),
                            source=str(path))
    if path.is_file():
        if path.name == "tokenizer_config.json":
            return _from_tokenizer_config(path)
        if path.suffix == ".jinja" or path.name == "chat_template.json":
            return _from_chat_template(path, "a chat template, not a response template", str(path))
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
        if (resources.files("respc.templates") / f"{name}.json").is_file():
            return _from_catalogue(name)
        known = ", ".join(catalogue_names()) or "none"
        raise TemplateError(f"no such file, and no catalogue template of that name (catalogue: {known})",
                            source=name)
    raise TemplateError("no such file or directory", source=name)
