"""The ``respc`` command line (README "Layout").

``respc compile TEMPLATE -o OUT.py [--parents] [--check]``
    Write the generated parser (``-o -``: standard output); a symlink is followed, an existing
    file keeps its mode, anything but a regular file is refused, a missing folder needs
    ``--parents``. With ``--check`` write nothing; exit 1 with a unified diff when OUT.py is
    missing or its template SHA-256 or code differ (its banner's paths do not count).
``respc parse TEMPLATE [FILE|-] (--prefix TEXT | --prefix-file F) [--tools F.json] [--events]``
    Parse model output (FILE, or standard input) and print the message as JSON; with ``--events``
    print one JSON event per line as input arrives (flushed per event), then the message as a last
    line ``{"type": "message", "message": {...}}``.
``respc check TEMPLATE [--chat-template F]``
    Validate a template and print its warnings: load-time ones (``compiler.validate.check_template``),
    D2 ones (indeterminate regex delimiters) and the linter's findings (``compiler/lint.py``, each
    with field, key and an example); with ``--chat-template`` also the round trip through the model's
    chat template (``compiler/roundtrip.py``); exit 1 when the linter found an error.
``respc grammar TEMPLATE --format lark|gbnf|xgrammar|llguidance|xgrammar-structural-tag [--tools F.json] [--tool-choice C] [--no-parallel] [--no-reasoning]``
    Print the constrained-decoding grammar of the template's output language for one engine
    (``compiler/grammar_render.py``): calls name an offered tool and their arguments follow its
    JSON schema; ``--tool-choice`` is auto, required, none or a tool name.
    ``xgrammar-structural-tag`` prints xgrammar's structural tag JSON instead
    (``compiler/grammar_structural.py``), notes on where it is stricter on stderr; a template it
    cannot express (XML or pythonic call bodies) exits 2 naming the fields and why.
``respc detect MODEL_DIR | tokenizer_config.json | chat_template.jinja``
    Name the catalogue family whose output format the chat template renders, and its thinking
    switch (``compiler/detect.py``): only a family that parses back every sample message the chat
    template rendered is named (every such exact fit is listed, best first); exit 1 when no family
    does, naming the nearest fits and the samples each failed.
``respc graph TEMPLATE [--format mermaid|dot|svg] [-o OUT] [--parents]``
    Print (or write) the region automaton as a diagram (see respc.compiler.graph); ``svg`` needs
    Graphviz's ``dot`` (exit 1 with a one-line message when it is not installed). Every option
    that writes a file (``compile -o``, ``graph -o``, ``parse --html``, ``parse --jsonl -o``)
    refuses a missing parent folder unless ``--parents``, refuses a file the command reads (also
    through a symlink or hard link), and writes a temporary file with a random name beside the
    target, renamed over it when complete, keeping its mode (``compiler/files.py``;
    docs/security.md "Files").
``respc list``
    The catalogue: one line per template with the models of its family.

Exit status: 0 success; 1 output that cannot be parsed, a stale ``--check`` or (``detect``) no exact
fit; 2 a bad template or bad usage, including a model folder (or tokenizer_config.json, chat
template) given as TEMPLATE whose chat template no catalogue family fits exactly. Errors are one line
on standard error, never a traceback.
"""

from __future__ import annotations

import argparse
import codecs
import difflib
import io
import json
import os
import re
import stat
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

from respc.runtime.errors import RespcError, TemplateError
from respc.runtime.tools import tool_parameters

from .api import compile_source
from .emit import HEADER
from .emit_js import JS_RUNTIME_PATH, JsTargetError, comment_text, emit_js_module
from .files import sigint_deferred
from .load import is_catalogue_name
from .source import read_template
from .validate import check_template

__all__ = ["main"]


class _UsageError(Exception):
    """Bad arguments or unreadable input files: exit 2."""


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (the contract of this CLI), not usage + error,
    in the style of every other error: ``respc: parse: MESSAGE (see respc parse --help)``."""

    def error(self, message: str):  # type: ignore[override]
        command = self.prog.split(" ", 1)[1] + ": " if " " in self.prog else ""  # "respc parse" -> "parse: "
        raise _ArgumentError(f"respc: {command}{message} (see {self.prog} --help)")


class _ArgumentError(Exception):
    """Raised by :class:`_ArgumentParser` instead of exiting."""


def _git_folder(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that holds ``.git``, or None."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _repository_root(output: str) -> tuple[Path, bool]:
    """The folder the banner's paths are relative to, and whether any git repository is involved.

    The nearest folder at or above the output file's folder that holds ``.git`` (the repository
    the module is checked into); without one (or for standard output), the working directory.
    So the same command run from any folder writes the same banner, and the banner's regenerate
    command works from the repository root (README, "Use").

    Returns:
        tuple[Path, bool]: (the folder, resolved; True when it is the output's repository or the
        working directory lies in one, False when the command ran outside any git repository).
    """
    if output != "-":
        found = _git_folder(Path(os.path.abspath(output)).parent)
        if found is not None:
            return found, True
    cwd = Path.cwd().resolve()
    return cwd, _git_folder(cwd) is not None


def _inside(path: Path, root: Path) -> str | None:
    """``path`` relative to ``root`` in POSIX form, or None when it is not below ``root``."""
    rel = os.path.relpath(path, root)
    return None if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel) else Path(rel).as_posix()


def _catalogue_file(name: str) -> Path | None:
    """The installed catalogue template called ``name``, resolved, or None."""
    from importlib import resources

    resource = resources.files("respc.templates") / f"{name}.json"
    return Path(os.path.realpath(str(resource))) if resource.is_file() else None


def _banner_labels(template: str, output: str) -> tuple[str, str]:
    """The banner's template label and regenerate command for ``respc compile TEMPLATE -o OUTPUT``.

    Paths are relative to :func:`_repository_root`, never absolute, so no user or host detail
    reaches a generated file and the command is independent of the folder it was run from:

    * a template inside the repository: its relative path (``templates/qwen3.json``), written
      ``./NAME`` when it is one bare word (a model folder ``qwen3``), which would name the catalogue;
    * a catalogue template (by name, or the installed file itself) outside it: labelled
      ``templates/NAME.json`` and regenerated by name (``respc compile NAME``);
    * any other template outside it: its file name, with a note that its path must be given;
    * an OUTPUT outside it: its file name, with the same note (README, "Use"). The note says the
      file is outside this repository, or, when neither OUTPUT nor the working directory lies in a
      git repository, that the command ran outside any, so no path is given.

    Returns:
        tuple[str, str]: (template label, regenerate command).
    """
    root, in_repository = _repository_root(output)
    out = "-" if output == "-" else _inside(Path(os.path.abspath(output)), root)
    outside = []  # the file names the command gives without their folder
    if out is None:
        out = Path(output).name
        outside.append(out)

    def command(name: str) -> str:
        line = f"respc compile {name} -o {out}"
        if not outside:
            return line
        names, its = (outside[0], "its path") if len(outside) == 1 else (" and ".join(outside), "their paths")
        if in_repository:
            verb = "is" if len(outside) == 1 else "are"
            return f"{line} ({names} {verb} outside this repository: give {its})"
        # no .git above OUT nor the working directory: there is no repository to be outside of
        return f"{line} (run outside any git repository, so no path is given for {names}: give {its})"

    given = Path(template)
    if is_catalogue_name(template) or not given.exists():  # a catalogue name (the loader resolves it or says why not)
        installed = _catalogue_file(template)
        rel = _inside(installed, root) if installed is not None else None
        if rel is not None:
            return rel, command(rel)
        return f"templates/{template}.json", command(template)
    rel = _inside(Path(os.path.abspath(given)), root)
    if rel is not None:
        if "/" not in rel and not rel.endswith(".json") and rel != ".":
            rel = f"./{rel}"  # a bare word is a catalogue name (README, "Use"): ./qwen3 stays the local folder
        return rel, command(rel)
    if given.suffix == ".json" and _catalogue_file(given.stem) == Path(os.path.realpath(given)):
        return f"templates/{given.stem}.json", command(given.stem)
    name = Path(os.path.abspath(given)).name
    outside.insert(0, name)
    return name, command(name)


_BANNER_FROM = re.compile(r"# template: (.*)\n")
_BANNER_COMMAND = re.compile(r"# regenerate: (.*)\n")


def _banner_of(text: str) -> tuple[str, str] | None:
    """(template label, regenerate command) from a generated module's banner (lines 3 and 5, after
    the fixed header of compiler/emit.py ``HEADER``), or None."""
    if not text.startswith(HEADER):
        return None
    lines = text.splitlines(keepends=True)[2:5]
    if len(lines) < 3:
        return None
    source, command = _BANNER_FROM.fullmatch(lines[0]), _BANNER_COMMAND.fullmatch(lines[2])
    return (source.group(1), command.group(1)) if source and command else None


def _output_kind(path: str) -> str | None:
    """None for a regular file or a new path (after following symlinks), else what is there."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # a new path (a file in its folder's place: _prepare_parent)
        return None
    except OSError as exc:
        raise _UsageError(f"cannot write {path!r}: {exc.strerror or exc}") from None
    if stat.S_ISREG(mode):
        return None
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def _prepare_parent(output: str, parents: bool) -> None:
    """Make sure the folder ``output`` goes in exists: the rule of every option that writes a file
    (``compile -o``, ``graph -o``, ``parse --html``, ``parse --jsonl -o``; README "Use").

    A missing folder is an error unless ``parents`` (then it is created, with its own missing
    parents); a file where a folder should be is named as such.

    Raises:
        _UsageError: one line naming ``output`` and the folder that is missing or is a file.
    """
    parent = Path(os.path.realpath(output)).parent
    if parent.is_dir():
        return
    given = Path(output).parent
    for folder, shown in zip((parent, *parent.parents), (given, *given.parents)):
        if folder.exists():
            if not folder.is_dir():
                raise _UsageError(f"cannot write {output!r}: {str(shown)!r} is a file, not a folder")
            break
    if not parents:
        raise _UsageError(f"cannot write {output!r}: folder {str(given)!r} does not exist "
                          "(create it, or pass --parents)")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _UsageError(f"cannot write {output!r}: cannot create its folder: {exc.strerror or exc}") from None


def _write_file(output: str, data: bytes, parents: bool, inputs: tuple = ()) -> None:
    """Write ``data`` to ``output``: the one rule of every option that writes a file (``compile -o``,
    ``graph -o``, ``parse --html``; ``parse --jsonl -o`` checks the same in :func:`_check_output`;
    README "Use", docs/security.md "Files").

    A symlink is followed and its target written; anything that exists and is not a regular file
    (a directory, FIFO, device, socket) is refused; a file the command reads (``inputs``) is refused;
    an existing file keeps its permission bits; a missing parent folder is an error unless
    ``parents``. The bytes go to a new temporary file with a random name beside the target and are
    renamed over it (:func:`respc.compiler.files.atomic_output`), so a reader never sees half a
    file and no file or link already there is opened.

    Raises:
        _UsageError: the path cannot be written (one line naming it and why).
    """
    from .files import write_atomic

    _check_output(output, parents, inputs)
    try:
        write_atomic(output, data)
    except OSError as exc:
        raise _UsageError(f"cannot write {output!r}: {exc.strerror or exc}") from None


def _check_output(output: str, parents: bool, inputs: tuple = ()) -> None:
    """Refuse ``output`` when it is not a regular file, when it is one of ``inputs`` (the files
    the command reads; also through a symlink or a hard link), or when its folder is missing
    (created with ``parents``).

    Raises:
        _UsageError: one line naming ``output`` and why.
    """
    from .files import same_file

    kind = _output_kind(output)
    if kind is not None:
        raise _UsageError(f"cannot write {output!r}: it is {kind}, not a regular file (give a file path)")
    for path in inputs:
        if path is not None and path != "-" and same_file(path, output):
            raise _UsageError(f"cannot write {output!r}: it is the input file {path!r} (writing it would "
                              "replace what is being read; give another output path)")
    _prepare_parent(output, parents)


def _write_module(output: str, source: str, parents: bool, template: str | None = None) -> None:
    """Write the generated module ``source`` to ``output`` by :func:`_write_file` (README "Layout", README
    "Use"); ``template`` (a file the command read) is refused as the output."""
    _write_file(output, source.encode("utf-8"), parents, (template,))


def _display_path(path: str) -> str:
    """A path to show (graph and page titles, source labels): relative to the working directory
    when inside it, its file name when outside, a bare catalogue name as given; never absolute."""
    p = Path(path)
    if not p.exists() and not p.parent.exists():
        return path
    rel = os.path.relpath(p.resolve(), Path.cwd().resolve())
    return p.name if rel.startswith("..") or os.path.isabs(rel) else Path(rel).as_posix()


def _compile(args: argparse.Namespace) -> int:
    source_name, command = _banner_labels(args.template, args.output)
    # The hint on stderr repeats the command exactly as given, so it works from here.
    rerun = f"respc compile {args.template} -o {args.output}"
    if args.target == "js":
        return _compile_js(args, command, source_name)
    if args.with_runtime:
        raise _UsageError("--with-runtime needs --target js")
    compiled = compile_source(args.template, command=command, source_name=source_name)
    _say_which_template(compiled.note)
    if args.check:
        return _check_fresh(args, compiled, rerun)
    if args.output == "-":
        sys.stdout.write(compiled.source)
        sys.stdout.flush()
    else:
        _write_module(args.output, compiled.source, args.parents, args.template)
    for warning in compiled.automaton.warnings:
        print(f"respc: warning: {warning}", file=sys.stderr)
    if args.output != "-":
        print(f"respc: wrote {args.output} ({compiled.template.source}, "
              f"{_count(len(compiled.template.fields), 'field')})", file=sys.stderr)
    return 0


def _compile_js(args: argparse.Namespace, command: str, source_name: str | None) -> int:
    """``compile --target js``: the template's ES module for the JavaScript runtime
    (compiler/emit_js.py; docs/javascript.md), or with ``--check`` whether OUT holds it. A template
    that uses something the runtime does not support yet is refused (exit 2, one line naming the
    feature and the key); nothing is written."""
    if args.with_runtime and args.check:
        raise _UsageError("--with-runtime writes files; --check writes nothing: give one of them")
    if args.with_runtime and args.output == "-":
        raise _UsageError("--with-runtime writes respc.mjs beside OUT: give -o a file, not -")
    if args.output != "-" and _is_runtime_name(args.output):
        raise _UsageError(f"-o {args.output}: the module imports ./respc.mjs (the JavaScript runtime) from its own "
                          "folder, so it cannot be that file: give OUT another name")
    read = read_template(args.template, source_name=source_name)
    _say_which_template(read.note)
    command = command.replace(" -o ", " --target js -o ", 1) if " -o " in command else command
    try:
        source = emit_js_module(read.template, read.automaton, command=command)
        if args.check:
            return _check_fresh_js(args, source)
    except JsTargetError as exc:
        print(f"respc: {exc}", file=sys.stderr)
        return 2
    if args.output == "-":
        sys.stdout.write(source)
        sys.stdout.flush()
        return 0
    _write_module(args.output, source, args.parents, args.template)
    beside = os.path.join(os.path.dirname(args.output), "respc.mjs")
    if args.with_runtime:
        _write_module(beside, JS_RUNTIME_PATH.read_text(encoding="utf-8"), False, args.template)
        print(f"respc: wrote {beside} (the JavaScript runtime)", file=sys.stderr)
    hint = "" if args.with_runtime else "; it imports ./respc.mjs: add --with-runtime to write it beside"
    print(f"respc: wrote {args.output} ({read.template.source}, {_count(len(read.template.fields), 'field')}, "
          f"JavaScript{hint})", file=sys.stderr)
    return 0


def _is_runtime_name(output: str) -> bool:
    """Whether ``output`` is (or, through a link, is the same file as) the ``respc.mjs`` a generated
    module imports from its own folder: the name compared without case (a case-insensitive file
    system reads ``RESPC.mjs`` as that file), or the same file where both exist."""
    if os.path.basename(output).casefold() == "respc.mjs":
        return True
    beside = os.path.join(os.path.dirname(output), "respc.mjs")
    try:
        return os.path.samefile(output, beside)
    except OSError:
        return False


_JS_BANNER = re.compile(r"// template: (.*)\n// template sha256: [0-9a-f]+\n// regenerate: (.*)\n")


def _check_fresh_js(args: argparse.Namespace, expected: str) -> int:
    """``compile --target js --check``: 0 when OUT holds the module for this template, else 1 and a
    diff; as for Python modules (:func:`_check_fresh`), the banner's template label and command are
    taken from the checked file."""
    rerun = f"respc compile {args.template} --target js -o {args.output}"
    current = _checked_file(args, rerun)
    if current is None:
        return 1
    labels = _JS_BANNER.match(current, current.find("\n") + 1)
    if current != expected and current.startswith("// @generated by respc") and labels is not None:
        read = read_template(args.template, source_name=comment_text(labels.group(1)))
        expected = emit_js_module(read.template, read.automaton, command=comment_text(labels.group(2)))
    return _fresh_or_diff(args, current, expected, rerun)


def _check_fresh(args: argparse.Namespace, compiled, rerun: str) -> int:
    """``compile --check``: 0 when the file holds the module for this template, else 1 and a diff.

    What counts is the template's SHA-256 and the code: the banner's template label and
    regenerate command (and the ``SOURCE`` label) are taken from the checked file, so a module
    compiled from another folder or with the template named another way is still fresh.
    """
    current = _checked_file(args, rerun)
    if current is None:
        return 1
    expected = compiled.source
    labels = _banner_of(current)
    if current != expected and labels is not None:
        expected = compile_source(args.template, source_name=labels[0], command=labels[1]).source
    return _fresh_or_diff(args, current, expected, rerun)


def _checked_file(args: argparse.Namespace, rerun: str) -> str | None:
    """The text of the module ``compile --check`` checks (``args.output``), or None when it does not
    exist (said on standard error with the command that writes it). Raises _UsageError for ``-`` or
    a path that is not a regular file."""
    if args.output == "-":
        raise _UsageError("--check needs a file to check, not - (standard output)")
    kind = _output_kind(args.output)
    if kind is not None:
        raise _UsageError(f"cannot check {args.output!r}: it is {kind}, not a regular file")
    if not os.path.exists(args.output):
        print(f"respc: {args.output} does not exist; run: {rerun}", file=sys.stderr)
        return None
    return _read_text_file(args.output, "generated module")


def _fresh_or_diff(args: argparse.Namespace, current: str, expected: str, rerun: str) -> int:
    """0 when the checked module is ``expected``; else its unified diff on standard output, a line
    naming the command that regenerates it on standard error, and 1."""
    if current == expected:
        return 0
    diff = difflib.unified_diff(current.splitlines(keepends=True), expected.splitlines(keepends=True),
                                fromfile=f"{args.output} (checked in)", tofile=f"{args.output} (regenerated)")
    sys.stdout.writelines(diff)
    print(f"respc: {args.output} is stale; run: {rerun}", file=sys.stderr)
    return 1


def _count(number: int, noun: str) -> str:
    """``1 warning``, ``2 warnings``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _join_notes(fields) -> list[str]:
    """``respc check`` notes for a repeating text field whose pieces are stripped, then joined with a
    separator that holds no whitespace (docs/template-language.md, ``join``): the whitespace between
    two pieces is lost."""
    notes = []
    for f in fields:
        if (f.repeats and isinstance(f.join, str) and not any(c.isspace() for c in f.join)
                and f.content == "text" and (f.content_args or {}).get("strip", True)):
            notes.append(f"field {f.name!r} strips each piece, then joins them with {f.join!r}: the whitespace "
                         "between two pieces is lost ('In Python:\\n' and '>>> print(1)' give 'In Python:>>> "
                         "print(1)'); a join such as '\\n', or content_args {\"strip\": false}, keeps it")
    return notes


def _check(args: argparse.Namespace) -> int:
    compiled = compile_source(args.template)
    # load-time warnings (docs/template-language.md "Load-time checks": rules v1 keeps for the
    # reference's sake), then the D2 ones
    warnings = [*check_template(compiled.template, v2=compiled.template.version >= 2),
                *compiled.automaton.warnings]
    fields = compiled.template.fields
    notes = dict.fromkeys(
        f"field {fields[w.field].name!r} {w.delimiter.key} {w.delimiter.pattern!r}: a greedy optional part may "
        "still grow, so a match waits while the buffered text could continue it (D2)"
        for state in compiled.automaton.states for w in state.watches if w.extendable and not w.indeterminate)
    notes.update(dict.fromkeys(_join_notes(fields)))
    from .lint import lint

    findings = lint(compiled.template, compiled.automaton)
    round_trip = _round_trip(args, compiled)
    findings = [*findings, *round_trip]
    # a load-time warning that a lint error restates (an unknown placeholder root) is printed once
    restated = {f"field {f.field!r} key {f.key!r}: placeholder root {f.example[1:-1]!r} "
                for f in findings if f.level == "error" and f.check == "placeholder"}
    shown = [w for w in warnings if not any(w.startswith(r) for r in restated)]
    for warning in shown:
        print(f"warning: {warning}")
    for note in notes:
        print(f"note: {note}")
    for finding in findings:
        print(finding)
    if args.chat_template is not None:
        anchorless = ("" if round_trip.anchorless is None else
                      "; the template's start anchor is in none of the generation prompts the chat template "
                      f"renders (one ends {round_trip.anchorless!r}): start_anchor must be their assistant "
                      "header, byte for byte")
        print(f"note: round trip with {args.chat_template}: {len(round_trip.passed)} of {round_trip.total} sample "
              f"messages parse back ({', '.join(round_trip.passed) or 'none'})" + anchorless
              + ("; the chat template may be another family's: try `respc detect "
                 f"{args.chat_template}`" if not round_trip.passed and any(f.level == "error" for f in round_trip)
                 else ""))
    errors = sum(1 for f in findings if f.level == "error")
    total = len(shown) + len(findings) - errors
    if errors:
        print(f"{compiled.template.source}: {_count(errors, 'error')}, {_count(total, 'warning')}")
        return 1
    print(f"{compiled.template.source}: ok ({_count(len(fields), 'field')}, "
          f"{_count(len(compiled.automaton.states), 'state')}, {_count(total, 'warning')})")
    return 0


def _round_trip(args: argparse.Namespace, compiled) -> list:
    """``check --chat-template F``: the round-trip findings (compiler/roundtrip.py); [] without F."""
    from .roundtrip import RoundTrip, roundtrip
    from .samples import read_chat_template

    if args.chat_template is None:
        return RoundTrip()
    try:
        chat = read_chat_template(args.chat_template)
    except (FileNotFoundError, ValueError) as exc:
        raise _UsageError(f"--chat-template: {exc}") from None
    return roundtrip(_module(args.template), compiled.template, chat)


def _module(template: str) -> types.ModuleType:
    from .api import compile_template

    return compile_template(template)


def _say_which_template(note: str | None) -> None:
    """For a model directory, tokenizer_config.json or chat template: a stderr note saying whether
    its ``response_template`` or a detected catalogue family is used
    (docs/writing-a-template.md "Which family does my model use? (`respc detect`)")."""
    if note:
        print(f"respc: note: {note}", file=sys.stderr)


def _model_note(template: str) -> str | None:
    """:attr:`LoadedTemplate.note` of TEMPLATE when it is a path (detection is cached), else None."""
    from .load import load_template

    return load_template(template).note if os.path.lexists(template) else None


_BOM = "\ufeff"


def _read_text_file(path: str, what: str) -> str:
    """A UTF-8 file's text, ``\\r\\n`` kept (prompts are data), a leading byte order mark dropped."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
            return text[1:] if text.startswith(_BOM) else text
    except UnicodeDecodeError as exc:
        raise _UsageError(f"cannot read {what} {path!r}: not UTF-8 at byte {exc.start} (counted from the "
                          f"start): {exc.reason}") from None
    except OSError as exc:
        raise _UsageError(f"cannot read {what} {path!r}: {exc.strerror or exc}") from None


#: JSON values printed to standard output so far (what an interrupted run reports).
_printed = [0]


def _print_json(value: Any, indent: int | None = None) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=indent) + "\n"
    with sigint_deferred():  # Ctrl-C lands between two values, each written and counted whole
        sys.stdout.write(text)
        sys.stdout.flush()
        _printed[0] += 1


class _Interrupted(Exception):
    """Ctrl-C, with one line saying what was written before it: exit 130."""


def _stream_chunks(path: str):
    """Yield text as it arrives: from a file or stdin, decoded incrementally as UTF-8.

    A byte order mark at the very start is dropped: it marks the encoding, it is not output.

    Raises:
        _UsageError: the file cannot be opened or read, or is not UTF-8 (naming it and the byte
            offset from the start of the input): exit 2, like any file that cannot be read.
    """
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    if path == "-":
        fd, close = sys.stdin.fileno(), False
    else:
        try:
            fd, close = os.open(path, os.O_RDONLY), True
        except OSError as exc:
            raise _UsageError(f"cannot read output file {path!r}: {exc.strerror}") from None
    done = 0  # bytes fully decoded before the current read
    first = True
    try:
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError as exc:
                raise _UsageError(f"cannot read output file {path!r}: {exc.strerror}") from None
            pending = len(decoder.getstate()[0])
            try:
                text = decoder.decode(data, final=not data)
            except UnicodeDecodeError as exc:
                where = "standard input" if path == "-" else f"output file {path!r}"
                raise _UsageError(f"cannot read {where}: not UTF-8 at byte {done - pending + exc.start} "
                                  f"(counted from the start): {exc.reason}") from None
            done += len(data)
            if first and text:
                first = False
                text = text[1:] if text.startswith(_BOM) else text
            if text:
                yield text
            if not data:
                break
    finally:
        if close:
            os.close(fd)


def _read_tools(path: str | None) -> list | None:
    """The tool list of ``--tools`` (None without it); a file that is not a JSON list is a usage error."""
    if not path:
        return None
    try:
        tools = json.loads(_read_text_file(path, "tools file"))
    except json.JSONDecodeError as exc:
        raise _UsageError(f"tools file {path!r} is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(tools, list):
        raise _UsageError(f"tools file {path!r} must hold a JSON list of tools")
    try:
        tool_parameters(tools)
    except RespcError as exc:
        raise _UsageError(f"tools file {path!r}: {_cause_first(exc)}") from None
    return tools


#: ``respc parse``'s output modes: at most one may be given.
_PARSE_MODES = (("events", "--events"), ("openai", "--openai"), ("responses", "--responses"), ("html", "--html"),
                ("jsonl", "--jsonl"))

#: Options of batch mode only: (attribute, flag, its value when not given).
_BATCH_ONLY = (("output", "-o/--output", "-"), ("preset", "--preset", None), ("workers", "--workers", None),
               ("batch_size", "--batch-size", None), ("progress", "--progress/--no-progress", None),
               *((f"{key}_key", f"--{key}-key", None) for key in ("output", "prefix", "tools", "id")))


def _refuse_conflicts(args: argparse.Namespace) -> None:
    """Options of ``respc parse`` that would be ignored together are a usage error naming both.

    Raises:
        _UsageError: two output modes (``--events``, ``--openai``, ``--responses``, ``--html``,
            ``--jsonl``), a batch option without ``--jsonl``, ``--model`` without ``--openai`` or
            ``--responses``, or ``--parents`` with nothing to write.
    """
    given = [flag for attr, flag in _PARSE_MODES if getattr(args, attr) not in (None, False)]
    if len(given) > 1:
        raise _UsageError(f"parse: {given[0]} and {given[1]} do not combine (each is a way to print the "
                          "result: choose one)")
    if args.jsonl is None:
        for attr, flag, unset in _BATCH_ONLY:
            if getattr(args, attr) != unset:
                raise _UsageError(f"parse: {flag} applies only with --jsonl (batch mode); without it, it would "
                                  "be ignored")
    if args.model is not None and not (args.openai or args.responses):
        raise _UsageError("parse: --model applies only with --openai or --responses; without them, it would be "
                          "ignored")
    if args.parents and args.html is None and args.output == "-":
        raise _UsageError("parse: --parents applies only with --html or --jsonl ... -o OUT.jsonl (there is no "
                          "file to write)")


def _parse(args: argparse.Namespace) -> int:
    _refuse_conflicts(args)
    if args.model is None:
        args.model = "respc"
    if args.errors is None:  # one output: the reference's behaviour; a batch must not stop
        args.errors = "recover" if args.jsonl is not None else "strict"
    _say_which_template(_model_note(args.template))
    if args.jsonl is not None:
        return _parse_jsonl(args)
    if args.prefix is None and args.prefix_file is None:  # --html needs it too
        raise _UsageError("parse: the prefix is required: the prompt text just before the model's output (the "
                          "chat template's assistant header, such as '<|im_start|>assistant' and a newline; "
                          "it tells whether the prompt already opened reasoning). Give --prefix-file PROMPT.txt "
                          "or --prefix TEXT, or --prefix \"\" to read the output from its start (see respc parse "
                          "--help)")
    if getattr(args, "html", None):
        return _parse_html(args)
    module = _module(args.template)
    prefix = args.prefix if args.prefix is not None else _read_text_file(args.prefix_file, "prefix file")
    tools = _read_tools(args.tools)
    if args.openai or args.responses:
        return _parse_openai(args, module, prefix, tools)
    if not args.events:
        text = "".join(_stream_chunks(args.file))
        parser = module.ResponseParser(prefix, tools, errors=args.errors)
        parser.feed(text)
        message = parser.finalize()[0]
        _print_diagnostics(parser)
        _print_json(message, indent=2)
        return 0
    parser = module.ResponseParser(prefix, tools, errors=args.errors)
    for event in parser.initial_events:
        _print_json(event)
    try:
        for chunk in _stream_chunks(args.file):
            for event in parser.feed(chunk):
                _print_json(event)
        message, events = parser.finalize()
    except (ValueError, KeyError, TypeError) as exc:
        # strict: the events the failing call produced before the error (exc.events, see
        # runtime/stream.py _carry_events) come first, then main() prints the error
        for event in getattr(exc, "events", None) or ():
            _print_json(event)
        _print_diagnostics(parser)
        raise
    for event in events:
        _print_json(event)
    _print_diagnostics(parser)
    _print_json({"type": "message", "message": message})
    return 0


def _add_errors_option(parse: argparse.ArgumentParser) -> None:
    """``respc parse --errors strict|recover`` (docs/events.md "Recovering from damaged output")."""
    parse.add_argument("--errors", choices=("strict", "recover"), default=None,
                       help="strict (the default for one output): a body that cannot be parsed is an error "
                            "(exit 1); recover (the default with --jsonl): nothing raises, repairs and losses "
                            "are printed to stderr, one per line (with --jsonl: a bad record becomes message "
                            "null with a diagnostic; strict also reports it with its line number and exits 1)")


def _print_diagnostics(parser: Any) -> None:
    """Print the parser's diagnostics to stderr, one line each, in either ``--errors`` mode:
    ``respc: KIND at START-END [field F]: MESSAGE`` (the message's first line; the raw text is in
    ``--events``). Standard output is the same in both modes; in strict the parser records only
    what it did not raise on (such as ``prefix-without-anchor``: a prompt whose text went to the
    answer), so an output the reference reads cleanly prints nothing here."""
    _print_diagnostic_lines(parser.diagnostics)


def _print_diagnostic_lines(diagnostics: list) -> None:
    """The lines of :func:`_print_diagnostics` for a list of diagnostics (``parse --html`` has
    :attr:`respc.show.Layout.diagnostics`, the parser's with their offsets)."""
    for d in diagnostics:
        where = f" field {d['field']}" if d.get("field") else ""
        message = str(d["message"]).splitlines()[0] if d["message"] else ""
        print(f"respc: {d['kind']} at {d['start']}-{d['end']}{where}: {message}", file=sys.stderr)
    sys.stderr.flush()


#: Lines of a ContentParseError message that quote the body (cut first when the line is long).
_QUOTED = ("Content:", "Original:", "Transformed:")


def _cause_first(exc: BaseException, limit: int = 400) -> str:
    """An error as one line: what failed and why first, then where (field, offsets), then the
    quoted body, cut to what is left of ``limit`` characters -- so a long body never hides the
    cause (a JSON error's ``Error:`` line comes before the ``Content:`` it quotes)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    quoted = [line for line in lines if line.startswith(_QUOTED)]
    head = [line for line in lines if not line.startswith(_QUOTED + ("Error:",))]
    head += [line for line in lines if line.startswith("Error:")]
    if getattr(exc, "start", None) is not None:
        head.append(f"at {exc.start}-{exc.end} (response offsets of the region, delimiters included)")
    text = " | ".join(head) or type(exc).__name__
    for line in quoted:
        room = limit - len(text) - 3
        if room < 20:
            break
        text += " | " + (line if len(line) <= room else line[:room - 1] + "…")
    return text


def _parse_openai(args: argparse.Namespace, module: types.ModuleType, prefix: str, tools: list | None) -> int:
    """``respc parse --openai``: print ``chat.completion.chunk`` dicts as server-sent events
    (``data: {...}`` and a blank line each, then ``data: [DONE]``; the text of
    ``ChatCompletionStream.feed_sse``/``finalize_sse``), flushed after each piece of input so they
    stream through a pipe. ``--responses``: Responses API events (``event:`` and ``data:``
    lines, ``ResponsesStream.feed_sse``/``finalize_sse``). Tool-call ids are ``call_0``,
    ``call_1``, ... (deterministic). ``--errors`` reaches the parser (recover: arguments wait for
    their call's close, ``recover_arguments="hold"``), and its diagnostics go to stderr at the end."""
    from respc.openai import ChatCompletionStream, ResponsesStream

    parser = module.ResponseParser(prefix, tools, errors=args.errors)
    if args.responses:
        stream = ResponsesStream(parser, model=args.model, ids=lambda n: f"call_{n}",
                                 tools=[tool for tool in tools or () if isinstance(tool, dict)])
    else:
        stream = ChatCompletionStream(parser, model=args.model, ids=lambda n: f"call_{n}")
    write, flush = sys.stdout.write, sys.stdout.flush
    for text in _stream_chunks(args.file):
        events = stream.feed_sse(text)
        if events:
            write(events)
            flush()
    write(stream.finalize_sse())
    flush()
    _print_diagnostics(parser)
    return 0


def _test(args: argparse.Namespace) -> int:
    """``respc test TEMPLATE CASES``: parse each case whole, per character and in random pieces and
    compare with its expected message (compiler/casecheck.py has the file format). Prints one line per
    passing case with ``-v``, a diff per failing case, and a summary; exit 0 when every case passes, 1
    when one fails, 2 for a bad template or cases file."""
    from .casecheck import CaseFileError, read_cases, run_cases

    try:
        cases = read_cases(args.cases, _read_text_file(args.cases, "cases file"))
    except CaseFileError as exc:
        raise _UsageError(str(exc)) from None
    module = _module(args.template)
    failed = 0
    for result in run_cases(module, cases):
        if result.ok:
            if args.verbose:
                print(f"ok    {result.case.name}")
            continue
        failed += 1
        groups: dict[str, list[str]] = {}
        for how, text in result.failures.items():
            groups.setdefault(text, []).append(how)
        for text, hows in groups.items():
            print(f"FAIL  {result.case.name} ({', '.join(hows)})")
            # every line ends with a line break (a diff's last line has none), so the next FAIL starts a line
            sys.stdout.write("".join(f"      {line}\n" for line in text.splitlines()))
        sys.stdout.flush()
    print(f"respc test: {_count(len(cases), 'case')}, {len(cases) - failed} right and {failed} wrong (each "
          "fed whole, per character and in random pieces)", file=sys.stderr)
    return 1 if failed else 0


def _detect(args: argparse.Namespace) -> int:
    """``respc detect PATH``: name a family only when it parses back every sample the chat template
    rendered (``compiler/detect.py``). Exit 0 printing ``family: NAME``, every exact fit (best first,
    by the tie rule), the thinking switch, the samples not rendered and why; exit 1 when no family
    fits exactly (one line on stderr naming the nearest fits and the samples each failed); 2 when
    PATH cannot be read."""
    from .detect import detect, read_chat_template

    try:
        chat = read_chat_template(args.path)
    except (FileNotFoundError, ValueError) as exc:
        raise _UsageError(str(exc)) from None
    found = detect(chat)
    if found.family is None:
        hint = ("; to parse its output anyway, give a template explicitly (a catalogue name from respc list, "
                "or a template .json)") if found.nearest else ""
        print(f"respc: no catalogue family fits: {found.reason}{hint}", file=sys.stderr)
        return 1
    print(f"family: {found.family}")
    print(f"exact fits: {', '.join(found.exact)}")
    print(f"thinking switch: {found.thinking_switch or '-'}")
    skipped = [n for n in found.not_rendered if n not in found.unconfirmed]
    taught = f"; only the tool-call opener the prompt teaches: {', '.join(found.unconfirmed)}" if found.unconfirmed else ""
    print(f"samples parsed back: {', '.join(found.rendered)}{taught}; not rendered (not checked): "
          f"{', '.join(skipped) or '-'}")
    print(f"why: {found.reason}")
    return 0


def _graph(args: argparse.Namespace) -> int:
    """``respc graph``: the region automaton as Mermaid, DOT or SVG (respc.compiler.graph)."""
    from .graph import build_graph, render

    compiled = compile_source(args.template, source_name=_display_path(args.template))
    try:
        text = render(build_graph(compiled.template, compiled.automaton), args.format)
    except RuntimeError as exc:  # GraphvizMissing (names the package to install), or dot failed
        print(f"respc: {_cause_first(exc)}", file=sys.stderr)
        return 1
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return 0
    _write_text(args.output, text, args.parents, (args.template,))
    # one line on stderr, as `compile -o` and `parse --html` say what they wrote (README "Use")
    print(f"respc: wrote {args.output} ({compiled.template.source}, {args.format})", file=sys.stderr)
    return 0


def _add_graph_command(sub: Any) -> None:
    from .graph import FORMATS

    graph = sub.add_parser("graph", help="draw the region automaton (states, delimiters, the implicit field)",
                           description="Draw the region automaton of a template (its states, the delimiters "
                                       "that move between them, the implicit field) as Mermaid, DOT or SVG.")
    graph.add_argument("template", help="template .json, tokenizer_config.json, model directory or catalogue name")
    graph.add_argument("--format", choices=FORMATS, default="mermaid", help="mermaid (default), dot, or svg (Graphviz)")
    graph.add_argument("-o", "--output", help="write the diagram to this file instead of standard output")
    graph.add_argument("--parents", action="store_true", help="create OUT's missing parent folders")
    graph.set_defaults(run=_graph)


def _write_text(path: str, text: str, parents: bool, inputs: tuple = ()) -> None:
    """Write ``text`` (UTF-8, newlines as given) to ``path`` by :func:`_write_file`."""
    _write_file(path, text.encode("utf-8"), parents, inputs)


def _parse_html(args: argparse.Namespace) -> int:
    """``respc parse ... --html OUT.html``: write the page of respc.show, then print the message as usual.

    A parse error still writes the page (with the error as a diagnostic at its offset), then
    exits 1 with the usual one-line message.
    """
    from respc import show

    if args.events:
        raise _UsageError("--html does not combine with --events (the page needs the whole output)")
    module = _module(args.template)
    prefix = args.prefix if args.prefix is not None else _read_text_file(args.prefix_file, "prefix file")
    tools = _read_tools(args.tools) if args.tools else None
    text = "".join(_stream_chunks(args.file))
    result = show.layout(module, text, prefix=prefix, tools=tools, template=args.template, errors=args.errors)
    name = "standard input" if args.file == "-" else _display_path(args.file)
    _write_text(args.html, show.render(result, title=f"respc parse {_display_path(args.template)} {name}"),
                args.parents, (args.file, args.prefix_file, args.tools, args.template))
    for diagnostic in result.diagnostics:
        if diagnostic["kind"] == "error":
            print(f"respc: cannot parse output: {diagnostic['message']} (marked on the page at output offsets "
                  f"{diagnostic['start']}-{diagnostic['end']}: from the failing region's body to where parsing "
                  f"stopped, its opener not included; see {args.html})", file=sys.stderr)
            return 1
    _print_diagnostic_lines(result.diagnostics)  # as without --html (--errors recover: the repairs and losses)
    print(f"respc: wrote {_display_path(args.html)} (open it in a browser)", file=sys.stderr)
    _print_json(result.message, indent=2)
    return 0



def _add_html_option(parse: Any) -> None:
    parse.add_argument("--html", metavar="OUT.html",
                       help="also write a self-contained page showing which region each character went to")
def _add_jsonl_arguments(parse: argparse.ArgumentParser) -> None:
    """The options of ``respc parse --jsonl`` (batch mode, compiler/batch.py)."""
    from .batch import ERRORS_MODES, PRESETS

    batch = parse.add_argument_group("batch mode (--jsonl)")
    batch.add_argument("--jsonl", metavar="IN.jsonl", help="parse one record per line (- for stdin; .gz/.zst)")
    batch.add_argument("-o", "--output", default="-", metavar="OUT.jsonl",
                       help="where the output records go (default -: stdout; .gz/.zst compress)")
    batch.add_argument("--preset", choices=list(PRESETS), help="record keys of a common dump (see README)")
    for key in ("output", "prefix", "tools", "id"):
        batch.add_argument(f"--{key}-key", metavar="PATH",
                           help=f"record key of the {key} (dotted path, a|b = first present)")
    batch.add_argument("--workers", type=int, default=None, metavar="N", help="processes (default: the cores available)")
    batch.add_argument("--batch-size", type=int, default=None, metavar="N", help="records per batch sent to a worker")
    batch.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="progress bar on stderr (default: when stderr is a terminal)")


def _parse_jsonl(args: argparse.Namespace) -> int:
    """``respc parse TEMPLATE --jsonl IN -o OUT``: every record parsed, a summary line on stderr."""
    from . import batch

    if args.events or args.file != "-":
        raise _UsageError("parse: --jsonl reads its records from IN.jsonl; it takes no FILE and no --events")
    if args.workers is not None and args.workers < 1 or args.batch_size is not None and args.batch_size < 1:
        raise _UsageError("parse: --workers and --batch-size must be at least 1")
    prefix = args.prefix if args.prefix is not None else (
        _read_text_file(args.prefix_file, "prefix file") if args.prefix_file is not None else None)
    tools = _read_tools(args.tools)
    overrides = {key: getattr(args, f"{key}_key") for key in ("output", "prefix", "tools", "id")
                 if getattr(args, f"{key}_key") is not None}
    parser = batch.make_parser(args.template, keys=overrides, preset=args.preset, prefix=prefix, tools=tools,
                               errors=args.errors)
    workers = args.workers or batch.default_workers()
    inputs = (args.jsonl, args.prefix_file, args.tools)
    if args.output != "-":
        _check_output(args.output, args.parents, inputs)
    else:
        _check_stdout(inputs)

    def report(lineno: int, error: str) -> None:
        print(f"respc: {args.jsonl}: line {lineno}: {error}", file=sys.stderr)

    try:
        stats, seconds = batch.run_jsonl(parser, args.jsonl, args.output, workers=workers,
                                         batch_size=args.batch_size or batch.BATCH_SIZE, progress=args.progress,
                                         on_failure=report)
    except batch.MissingExtra as exc:
        raise _UsageError(str(exc)) from None
    except batch.Interrupted as exc:
        done = exc.stats
        where = repr(args.output)
        last = (f"; the last was line {done.last_line}" + (f", id {done.last_id!r}" if done.last_id is not None
                                                          else "")) if done.records else ""
        if args.output == "-":
            raise _Interrupted(f"interrupted: {_count(done.records, 'record')} written to standard output, whole "
                               f"and in input order{last}") from None
        raise _Interrupted(f"interrupted after {_count(done.records, 'record')}{last}; {where} was not written (a "
                           "run writes its output file only when it ends)") from None
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        name = getattr(exc, "filename", None) or "?"
        raise _UsageError(f"cannot read or write {name!r}: {exc.strerror or exc}") from None
    rate = stats.records / seconds if seconds > 0 else 0.0
    print(f"respc: {_count(stats.records, 'record')}, {_count(stats.tool_calls, 'message')} with tool calls, "
          f"{_count(stats.repairs, 'repair')}, {_count(stats.failures, 'failure')}, {seconds:.1f} s "
          f"({rate:,.0f} records/s, {_count(workers, 'worker')})", file=sys.stderr)
    return 1 if args.errors == "strict" and stats.failures else 0


def _check_stdout(inputs: tuple) -> None:
    """Refuse a standard output that is one of the files the command reads (``>> IN.jsonl``: the
    run would read its own output back, without end; docs/security.md "Files").

    Raises:
        _UsageError: naming the input file.
    """
    try:
        out = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return
    if not stat.S_ISREG(out.st_mode):
        return
    for path in inputs:
        if path is None or path == "-":
            continue
        try:
            if os.path.samestat(out, os.stat(path)):
                raise _UsageError(f"cannot write standard output: it is the input file {path!r} (writing it "
                                  "would replace what is being read; give another output path)")
        except OSError:
            continue


def _grammar(args: argparse.Namespace) -> int:
    from .grammar_ir import GrammarExportError
    from .grammar_render import STRUCTURAL_TAG, export_grammar
    from .grammar_structural import export_structural_tag

    tools = None
    if args.tools:
        try:
            tools = json.loads(_read_text_file(args.tools, "tools file"))
        except json.JSONDecodeError as exc:
            raise _UsageError(f"{args.tools}: not JSON: {exc}") from None
    try:
        if args.format == STRUCTURAL_TAG:
            tag, notes = export_structural_tag(args.template, tools=tools, tool_choice=args.tool_choice,
                                               parallel=not args.no_parallel, reasoning=not args.no_reasoning)
            text = json.dumps(tag, indent=2, ensure_ascii=False) + "\n"
            for note in notes:
                print(f"respc: note: {note}", file=sys.stderr)
        else:
            text = export_grammar(args.template, args.format, tools=tools, tool_choice=args.tool_choice,
                                  parallel=not args.no_parallel, reasoning=not args.no_reasoning)
    except GrammarExportError as exc:
        raise _UsageError(str(exc)) from None
    except TemplateError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        # a fault of the export itself, not of any output: say so (docs/grammar.md "Templates that refuse an export")
        print(f"respc: cannot export the grammar of {args.template}: {type(exc).__name__}: {exc} (a respc bug: "
              "please report it with the template and the tools)", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


def _version() -> str:
    from respc import __version__

    return __version__


_TEMPLATE_HELP = ("template .json, tokenizer_config.json, model directory or catalogue name "
                  "(respc list shows the catalogue)")


def _non_empty(what: str, hint: str):
    """An argparse ``type`` refusing the empty string (it would name the current folder by accident)."""
    def check(value: str) -> str:
        if value == "":
            raise argparse.ArgumentTypeError(f"{what} must not be empty ({hint})")
        return value
    return check


def _epilog() -> str:
    from .load import catalogue_names

    names = textwrap.fill(", ".join(catalogue_names()), width=100, initial_indent="  ", subsequent_indent="  ")
    return ("exit status: 0 ok; 1 output that cannot be parsed, or a stale or missing --check target;\n"
            "  (detect) no family fits exactly; 2 a bad template (a model folder whose chat template no\n"
            "  family fits exactly among them), bad usage, or a file that cannot be read or written;\n"
            "  130 interrupted (Ctrl-C). Errors are one line on standard error.\n"
            "catalogue templates (use the name as TEMPLATE; respc list shows their models):\n" + names)


def _template_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("template", metavar="TEMPLATE", help=_TEMPLATE_HELP,
                        type=_non_empty("TEMPLATE", "a path, . for the current folder, or a catalogue name"))


def _add_compile(sub) -> None:
    comp = sub.add_parser("compile", help="emit the parser module of a template",
                          description="Emit the parser module of a template.")
    _template_argument(comp)
    comp.add_argument("-o", "--output", required=True, metavar="OUT",
                      type=_non_empty("-o/--output", "a file path, or - for standard output"),
                      help="the module to write, e.g. qwen3_parser.py (- for standard output); a symlink is "
                           "followed, an existing file keeps its permissions, anything but a regular "
                           "file is refused")
    comp.add_argument("--parents", action="store_true", help="create OUT's missing parent folders")
    comp.add_argument("--target", choices=("python", "js"), default="python",
                      help="python (default): a Python module; js: an ES module for the JavaScript runtime "
                           "runtime/js/respc.mjs (docs/javascript.md; templates it cannot run yet are refused)")
    comp.add_argument("--with-runtime", action="store_true",
                      help="with --target js: also write the JavaScript runtime respc.mjs beside OUT")
    comp.add_argument("--check", action="store_true",
                      help="write nothing; exit 1 with a diff when OUT (-o/--output) is missing or stale (its "
                           "template SHA-256 or code differ; the banner's paths do not count)")
    comp.set_defaults(run=_compile)


def _add_parse(sub) -> None:
    parse = sub.add_parser("parse", help="parse model output with a template",
                           description="Parse model output with a template and print the message as JSON. "
                                       "A UTF-8 byte order mark at the start of FILE, standard input or "
                                       "--prefix-file is dropped.")
    _template_argument(parse)
    parse.add_argument("file", metavar="FILE", nargs="?", default="-",
                       help="model output file; - or omitted: standard input")
    group = parse.add_mutually_exclusive_group()  # required without --jsonl (checked in _parse)
    group.add_argument("--prefix", help='the prompt before generation ("" opts out); with --jsonl: the '
                       'default for records without one')
    group.add_argument("--prefix-file", help="a file holding the prompt before generation")
    parse.add_argument("--tools", help="a JSON file with a list of tools, to type tool-call arguments")
    parse.add_argument("--events", action="store_true", help="print one JSON event per line as input arrives")
    _add_html_option(parse)
    parse.add_argument("--parents", action="store_true",
                       help="create the missing parent folders of --html OUT.html and -o OUT.jsonl")
    _add_jsonl_arguments(parse)
    _add_errors_option(parse)


    parse.add_argument("--openai", action="store_true",
                       help="print OpenAI chat.completion.chunk server-sent events as input arrives")
    parse.add_argument("--responses", action="store_true",
                       help="print OpenAI Responses API server-sent events (event: and data: lines) as input "
                            "arrives")
    parse.add_argument("--model", default=None, help="the model name in --openai chunks and --responses events "
                       "(default: respc)")
    parse.set_defaults(run=_parse)


def _add_check(sub) -> None:
    check = sub.add_parser("check", help="validate a template and show its D2 warnings and notes",
                           description="Validate a template and show its D2 warnings and notes.")
    _template_argument(check)
    check.add_argument("--chat-template", metavar="F",
                       help="the model's chat template (chat_template.jinja, tokenizer_config.json or model "
                            "directory): render sample messages with it and require TEMPLATE to parse them back")
    check.set_defaults(run=_check)


def _add_test(sub) -> None:
    test = sub.add_parser("test", help="check a template against your own outputs and expected messages",
                          description="Parse each case of CASES (JSON Lines: text, message or expect.message, "
                                      "optional prefix, tools, name, errors, diagnostics; or a JSON list, or an "
                                      "object with a 'cases' list) whole, one character at a time and in random "
                                      "pieces, and show a diff wherever the message differs. Exit 0 when every "
                                      "case passes, 1 when one fails, 2 for a bad template or cases file (an "
                                      "unknown key in a case is named, with the nearest known key).")
    _template_argument(test)
    test.add_argument("cases", metavar="CASES", help="the cases file (.jsonl or .json)")
    test.add_argument("-v", "--verbose", action="store_true", help="also name each case that passes")
    test.set_defaults(run=_test)


def _add_detect(sub) -> None:


    gram = sub.add_parser("grammar", help="print the constrained-decoding grammar of a template",
                          description="Print the constrained-decoding grammar of a template's output language "
                                      "for one engine: tool calls name an offered tool and their arguments "
                                      "follow its JSON schema.")
    gram.add_argument("template", help="template .json, tokenizer_config.json, model directory or catalogue name")
    gram.add_argument("--format", default="lark",
                      choices=["lark", "gbnf", "xgrammar", "llguidance", "xgrammar-structural-tag"],
                      help="grammar format (default: lark); xgrammar-structural-tag prints xgrammar's "
                           "structural tag JSON (response_format) and notes on stderr")
    gram.add_argument("--tools", help="a JSON file with a list of tools (OpenAI style)")
    gram.add_argument("--tool-choice", default="auto",
                      help="auto (the default), required, none or a tool name")
    gram.add_argument("--no-parallel", action="store_true", help="at most one tool call")
    gram.add_argument("--no-reasoning", action="store_true", help="leave the reasoning region out")
    gram.set_defaults(run=_grammar)
    det = sub.add_parser("detect", help="name the catalogue family whose format a chat template renders",
                         description="Name the catalogue family whose output format a model's chat template "
                                     "renders, and its thinking switch. A family is named only when it parses "
                                     "back every sample message the chat template rendered (all such exact "
                                     "fits are listed); exit 1 when none does, naming the nearest fits.")
    det.add_argument("path", help="model directory, tokenizer_config.json or chat_template.jinja")
    det.set_defaults(run=_detect)


def _list(args: argparse.Namespace) -> int:
    """``respc list [WORD ...]``: one line per catalogue template: name, models, thinking switch; with
    words, only the families whose name or models contain every word (case-insensitive); exit 1 when
    none does."""
    from .load import catalogue_entries

    entries = catalogue_entries()
    if args.filter:
        words = [word.lower() for word in args.filter]
        entries = [e for e in entries
                   if all(word in e["family"].lower() or word in (e["models"] or "").lower() for word in words)]
        if not entries:
            print(f"respc: list: no catalogue family or model matches {' '.join(args.filter)!r} (respc list shows "
                  "them all)", file=sys.stderr)
            return 1
    width = max((len(e["family"]) for e in entries), default=0)
    for entry in entries:
        switch = f" [thinking switch: {entry['thinking_switch']}]" if entry["thinking_switch"] else ""
        print(f"{entry['family']:<{width}}  {entry['models'] or '(no models listed)'}{switch}")
    return 0


def _add_list(sub) -> None:
    lister = sub.add_parser("list", help="list the catalogue templates and the models of each family",
                            description="List the catalogue templates (usable by name as TEMPLATE) and the "
                                        "models of each family; with WORDs, only the families whose name or "
                                        "models contain every word (case-insensitive); exit 1 when none does.")
    lister.add_argument("filter", nargs="*", metavar="WORD", help="keep families whose name or models contain it")
    lister.set_defaults(run=_list)


def _parser() -> argparse.ArgumentParser:
    top = _ArgumentParser(prog="respc", description="Compile LLM response templates into streaming parsers.",
                          epilog=_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"respc {_version()}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    top.set_defaults(_commands=sub.choices)
    _add_compile(sub)
    _add_parse(sub)
    _add_check(sub)
    _add_test(sub)
    _add_list(sub)
    _add_detect(sub)
    _add_graph_command(sub)
    return top


def _unrecognized(args: argparse.Namespace, extra: list[str], top: argparse.ArgumentParser) -> None:
    """Report options the command does not know as that command's usage error, with the nearest known
    option (``respc: parse: unrecognized arguments: --prefix-filx (did you mean --prefix-file?) (see
    respc parse --help)``), not the top-level one.

    Raises:
        _ArgumentError: always.
    """
    import difflib

    command = getattr(args, "_commands", {}).get(getattr(args, "command", None), top)
    known = [option for action in command._actions for option in action.option_strings]
    hints = []
    for word in extra:
        if word.startswith("-"):
            close = difflib.get_close_matches(word.split("=", 1)[0], known, n=1, cutoff=0.6)
            if close:
                hints.append(f"did you mean {close[0]}?")
    command.error(f"unrecognized arguments: {' '.join(extra)}" + (f" ({' '.join(hints)})" if hints else ""))


def _intermixed(args: argparse.Namespace, extra: list[str], argv: list[str]) -> tuple[argparse.Namespace, list]:
    """Parse the command's words again with positionals allowed after options: argparse gives an
    optional positional its default as soon as an option follows the one before it, so ``respc
    parse qwen3 --prefix-file prompt.txt output.txt`` left ``output.txt`` unrecognized (and FILE
    standard input). Returns the new namespace and what it still leaves, or ``args, extra`` as
    they were when there is no command or the command cannot be parsed so (argparse's
    ``parse_known_intermixed_args``)."""
    command = getattr(args, "_commands", {}).get(getattr(args, "command", None))
    if command is None or args.command not in argv:
        return args, extra
    try:
        again, left = command.parse_known_intermixed_args(argv[argv.index(args.command) + 1:])
    except TypeError:  # a command argparse cannot parse intermixed: report the words as before
        return args, extra
    for name, value in vars(args).items():  # what the top-level parser set (the command's name, ...)
        if not hasattr(again, name):
            setattr(again, name, value)
    return again, left


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 unparseable output / stale, 2 bad template or usage,
    130 interrupted by Ctrl-C: one line on stderr says what was written)."""
    parser = _parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:
            args, extra = _intermixed(args, extra, sys.argv[1:] if argv is None else argv)
        if extra:
            _unrecognized(args, extra, parser)
    except SystemExit as exc:  # --help printed its text
        return int(exc.code or 0) and 2
    except _ArgumentError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        return args.run(args)
    except _Interrupted as exc:
        print(f"respc: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        done = f"{_count(_printed[0], 'JSON value')} written to standard output" if _printed[0] else "nothing written"
        print(f"respc: interrupted ({done})", file=sys.stderr)
        return 130
    except TemplateError as exc:
        print(f"respc: bad template: {exc}", file=sys.stderr)
        return 2
    except _UsageError as exc:
        print(f"respc: {exc}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, TypeError) as exc:
        print(f"respc: cannot parse output: {type(exc).__name__}: {_cause_first(exc)}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
