"""Pass 1: find and read a response template (template-language.md "Where a template lives").

A template can be given as a dict, a standalone ``.json`` file, a ``tokenizer_config.json`` holding a
``response_template`` key, a model directory holding such a file, or a bare catalogue name
(``qwen3`` -> ``templates/qwen3.json``, shipped inside the package as ``respc.templates``). A bare
catalogue name always means the catalogue, even where a folder or file of that name exists: a path
says so with a separator (``./qwen3``) or a ``.json`` ending (:func:`is_catalogue_name`).

A model directory, ``tokenizer_config.json``, ``chat_template.json`` or ``chat_template.jinja``
without a ``response_template`` gives the catalogue template of the family its chat template
renders (``compiler/detect.py``; docs/writing-a-template.md "Which family does my model use?
(`respc detect`)"); :attr:`LoadedTemplate.note` says which was used. Only an exact fit is used (a family that parses back every sample message the chat template rendered); with
none, loading fails naming the nearest fits (docs/security.md "Guessed families").
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from respc.runtime.errors import TemplateError

from .catalogue import catalogue_entries, catalogue_names, is_catalogue_name, nearest_names, read_catalogue

__all__ = ["LoadedTemplate", "load_template", "catalogue_names", "catalogue_entries", "is_catalogue_name",
           "MAX_FILE_BYTES"]


@dataclass(frozen=True)
class LoadedTemplate:
    """A template document as read, before validation.

    Attributes:
        document (Any): the parsed JSON value (validated later; may be anything).
        source (str): a printable name of where it came from, used in every error message.
        path (Path | None): the file it was read from, or None for a dict.
        note (str | None): for a model directory, ``tokenizer_config.json`` or chat template: one
            sentence saying whether its ``response_template`` or a detected catalogue family was
            used (and why); for a catalogue name that a folder or file of the same name stands
            beside, that the catalogue is used and how to name the local one; else None.
    """

    document: Any
    source: str
    path: Path | None = None
    note: str | None = None


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
    from .detect import detect  # late: detect imports every generated parser (it never imports this module)

    return detect(chat)


def _from_chat_template(where: Path, why: str, source: str, key: str | None = None) -> LoadedTemplate:
    """The catalogue template of the family the chat template at ``where`` renders.

    ``why`` says why no response template was found; ``source`` and ``key`` label the error.

    Raises:
        TemplateError: no chat template to read there, or no catalogue family fits it exactly (it
            parses back every sample the chat template rendered: ``compiler/detect.py``); the error
            names ``source``, both reasons, the nearest fits with the samples each failed, and says
            to give a template explicitly. An inexact fit is never used.
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
        hint = ("; an inexact fit is never used: give the template explicitly (a catalogue name from "
                "`respc list` or a template .json) if you know the model's format") if found.nearest else ""
        raise TemplateError(f"{why}, and no catalogue family fits its chat template ({reason}){hint}",
                            source=source, key=key)
    switch = f"; thinking switch: {found.thinking_switch}" if found.thinking_switch else ""
    note = (f"{source}: {why}; using the catalogue family {found.family!r} detected from its chat template "
            f"{chat.origin} ({reason}{switch})")
    loaded = _from_catalogue(found.family)
    return LoadedTemplate(loaded.document, loaded.source, loaded.path, note)


def _from_catalogue(name: str) -> LoadedTemplate:
    return LoadedTemplate(*read_catalogue(name))


def load_template(spec: Any) -> LoadedTemplate:
    """Read a template from any of the places template-language.md "Where a template lives" allows.

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
            no catalogue family exactly (the error says both, names the nearest fits and the samples
            each failed, and says to give a template explicitly: an inexact fit is never used); or
            the name matches nothing, or is the empty string (which would otherwise name the
            current folder by accident). A UTF-8 byte order mark at the start of a
            file is dropped.

    A bare catalogue name (:func:`is_catalogue_name`) is the catalogue template even where a folder
    or file of that name exists (``note`` then says so); a path must say it is one (``./qwen3``).
    """
    if isinstance(spec, dict):
        return LoadedTemplate(spec, "<dict>", None)
    if isinstance(spec, str) and spec == "":
        raise TemplateError("an empty string names no template (give a path, . for the current folder, "
                            "or a catalogue name)", source="''")
    if not isinstance(spec, (str, os.PathLike)):
        raise TemplateError(f"a template must be a dict, a path or a catalogue name, "
                            f"not {type(spec).__name__}", source=repr(spec)[:80])
    if is_catalogue_name(spec):
        loaded = _from_catalogue(spec)
        if os.path.lexists(spec):
            kind = "folder" if os.path.isdir(spec) else "file"
            note = (f"{spec!r} is the catalogue template {loaded.source}; the {kind} {spec!r} here is not read "
                    f"(to use it, give its path: ./{spec})")
            return LoadedTemplate(loaded.document, loaded.source, loaded.path, note)
        return loaded
    path = Path(spec)
    if path.is_dir():
        config = path / "tokenizer_config.json"
        if config.is_file():
            return _from_tokenizer_config(config)
        if any((path / name).is_file() for name in _CHAT_TEMPLATE_FILES):
            return _from_chat_template(path, "model directory has no tokenizer_config.json", str(path))
        raise TemplateError("model directory has no tokenizer_config.json (its response_template or chat "
                            "template would give the template) and no chat_template.jinja or "
                            "chat_template.json (a chat template's catalogue family would)",
                            source=str(path))
    if path.is_file():
        if path.name == "tokenizer_config.json":
            return _from_tokenizer_config(path)
        if path.suffix == ".jinja" or path.name == "chat_template.json":
            return _from_chat_template(path, "a chat template, not a response template", str(path))
        document = _read_json(path, str(path))
        if isinstance(document, dict) and "response_template" in document and "fields" not in document:
            return LoadedTemplate(document["response_template"], f"{path}#response_template", path)
        return LoadedTemplate(document, str(path), path)
    name = str(spec)
    if isinstance(spec, str) and "/" not in name and os.sep not in name and not name.endswith(".json"):
        raise TemplateError(f"no such file, and no catalogue template of that name ({nearest_names(name)})",
                            source=name)
    raise TemplateError("no such file or directory", source=name)
