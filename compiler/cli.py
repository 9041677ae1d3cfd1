"""The ``respc`` command line (SPEC section 8).

``respc compile TEMPLATE -o OUT.py [--check]``
    Write the generated parser. With ``--check`` write nothing; exit 1 with a unified diff when
    OUT.py is stale (missing or different).
``respc parse TEMPLATE [FILE|-] (--prefix TEXT | --prefix-file F) [--tools F.json] [--events]``
    Parse model output (FILE, or standard input) and print the message as JSON; with ``--events``
    print one JSON event per line as input arrives (flushed per event), then the message as a last
    line ``{"type": "message", "message": {...}}``.
``respc check TEMPLATE``
    Validate a template and print its warnings: load-time ones (``compiler.validate.check_template``),
    D2 ones (indeterminate regex delimiters) and the linter's findings (``compiler/lint.py``, each
    with field, key and an example); exit 1 when the linter found an error.
``respc grammar TEMPLATE --format lark|gbnf|xgrammar|llguidance [--tools F.json] [--tool-choice C] [--no-parallel] [--no-reasoning]``
    Print the constrained-decoding grammar of the template's output language for one engine
    (``compiler/grammar_render.py``): calls name an offered tool and their arguments follow its
    JSON schema; ``--tool-choice`` is auto, required, none or a tool name.
``respc detect MODEL_DIR | tokenizer_config.json | chat_template.jinja``
    Name the catalogue family whose output format the chat template renders, and its thinking
    switch (``compiler/detect.py``); exit 1 when no family fits, saying why.

Exit status: 0 success; 1 output that cannot be parsed or a stale ``--check``; 2 a bad template or
bad usage. Errors are one line on standard error, never a traceback.
"""

from __future__ import annotations

import argparse
import codecs
import difflib
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

from respc.runtime.errors import TemplateError

from .api import compile_source
from .validate import check_template

__all__ = ["main"]


class _UsageError(Exception):
    """Bad arguments or unreadable input files: exit 2."""


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (the contract of this CLI), not usage + error."""

    def error(self, message: str):  # type: ignore[override]
        raise _ArgumentError(f"{self.prog}: error: {message} (see {self.prog} --help)")


class _ArgumentError(Exception):
    """Raised by :class:`_ArgumentParser` instead of exiting."""


def _display_path(path: str) -> str:
    """A path for banners: relative to the working directory when inside it, never absolute.

    A bare catalogue name (no such file) is kept as given; a path outside the working directory
    is reduced to its file name, so no user or host detail reaches a generated file.
    """
    p = Path(path)
    if not p.exists() and not p.parent.exists():
        return path
    rel = os.path.relpath(p.resolve(), Path.cwd().resolve())
    return p.name if rel.startswith("..") or os.path.isabs(rel) else Path(rel).as_posix()


def _compile(args: argparse.Namespace) -> int:
    source_name = _display_path(args.template)
    out = Path(args.output)
    # The banner names paths relative to the working directory (never absolute); the hint on
    # stderr repeats the command exactly as given, so it works from here.
    command = f"respc compile {source_name} -o {_display_path(args.output)}"
    rerun = f"respc compile {args.template} -o {args.output}"
    compiled = compile_source(args.template, command=command, source_name=source_name)
    if args.check:
        if not out.is_file():
            print(f"respc: {args.output} does not exist; run: {rerun}", file=sys.stderr)
            return 1
        current = _read_text_file(args.output, "generated module")
        if current == compiled.source:
            return 0
        diff = difflib.unified_diff(current.splitlines(keepends=True), compiled.source.splitlines(keepends=True),
                                    fromfile=f"{args.output} (checked in)", tofile=f"{args.output} (regenerated)")
        sys.stdout.writelines(diff)
        print(f"respc: {args.output} is stale; run: {rerun}", file=sys.stderr)
        return 1
    tmp = out.with_name(out.name + ".tmp")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(compiled.source, encoding="utf-8")
        os.replace(tmp, out)
    except OSError as exc:
        if tmp.is_file():
            tmp.unlink()
        raise _UsageError(f"cannot write {args.output!r}: {exc.strerror or exc}") from None
    for warning in compiled.automaton.warnings:
        print(f"respc: warning: {warning}", file=sys.stderr)
    return 0


def _check(args: argparse.Namespace) -> int:
    compiled = compile_source(args.template)
    # load-time warnings (issue 7: rules v1 keeps for the reference's sake), then the D2 ones
    warnings = [*check_template(compiled.template, v2=compiled.template.document.get("version") == 2),
                *compiled.automaton.warnings]
    for warning in warnings:
        print(f"warning: {warning}")
    fields = compiled.template.fields
    notes = dict.fromkeys(
        f"field {fields[w.field].name!r} {w.delimiter.key} {w.delimiter.pattern!r}: a greedy optional part may "
        "still grow, so a match waits while the buffered text could continue it (D2)"
        for state in compiled.automaton.states for w in state.watches if w.extendable and not w.indeterminate)
    for note in notes:
        print(f"note: {note}")
    from .lint import lint

    findings = lint(compiled.template, compiled.automaton)
    for finding in findings:
        print(finding)
    errors = sum(1 for f in findings if f.level == "error")
    lint_warnings = len(findings) - errors
    if errors:
        print(f"{compiled.template.source}: {errors} errors, {len(warnings) + lint_warnings} warnings")
        return 1
    print(f"{compiled.template.source}: ok ({len(compiled.template.fields)} fields, "
          f"{len(compiled.automaton.states)} states, {len(warnings) + lint_warnings} warnings)")
    return 0


def _module(template: str) -> types.ModuleType:
    from .api import compile_template

    return compile_template(template)


def _read_text_file(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8", newline="") as handle:  # keep \r\n: prompts are data
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise _UsageError(f"cannot read {what} {path!r}: {getattr(exc, 'strerror', None) or exc}") from None


def _print_json(value: Any, indent: int | None = None) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=indent) + "\n")
    sys.stdout.flush()


class _NotUTF8(Exception):
    """The model output is not UTF-8; ``offset`` counts bytes from the start of the input."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"input is not UTF-8 at byte {offset}: {reason}")


def _stream_chunks(path: str):
    """Yield text as it arrives: from a file or stdin, decoded incrementally as UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    if path == "-":
        fd, close = sys.stdin.fileno(), False
    else:
        try:
            fd, close = os.open(path, os.O_RDONLY), True
        except OSError as exc:
            raise _UsageError(f"cannot read output file {path!r}: {exc.strerror}") from None
    done = 0  # bytes fully decoded before the current read
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
                raise _NotUTF8(done - pending + exc.start, exc.reason) from None
            done += len(data)
            if text:
                yield text
            if not data:
                break
    finally:
        if close:
            os.close(fd)


def _parse(args: argparse.Namespace) -> int:
    module = _module(args.template)
    prefix = args.prefix if args.prefix is not None else _read_text_file(args.prefix_file, "prefix file")
    tools = None
    if args.tools:
        try:
            tools = json.loads(_read_text_file(args.tools, "tools file"))
        except json.JSONDecodeError as exc:
            raise _UsageError(f"tools file {args.tools!r} is not JSON: {exc.msg} at line {exc.lineno}") from None
        if not isinstance(tools, list):
            raise _UsageError(f"tools file {args.tools!r} must hold a JSON list of tools")
    if not args.events:
        text = "".join(_stream_chunks(args.file))
        _print_json(module.parse_response(text, prefix, tools), indent=2)
        return 0
    parser = module.ResponseParser(prefix, tools)
    for event in parser.initial_events:
        _print_json(event)
    for chunk in _stream_chunks(args.file):
        for event in parser.feed(chunk):
            _print_json(event)
    message, events = parser.finalize()
    for event in events:
        _print_json(event)
    _print_json({"type": "message", "message": message})
    return 0


def _detect(args: argparse.Namespace) -> int:
    """``respc detect PATH``: print ``family: NAME`` (then equally good fits, the thinking switch and why);
    exit 1 when no family fits (the reason on stderr), 2 when PATH cannot be read."""
    from .detect import detect, read_chat_template

    try:
        chat = read_chat_template(args.path)
    except (FileNotFoundError, ValueError) as exc:
        raise _UsageError(str(exc)) from None
    found = detect(chat)
    if found.family is None:
        print(f"respc: no catalogue family fits: {found.reason}", file=sys.stderr)
        return 1
    print(f"family: {found.family}")
    if len(found.tied) > 1:
        print(f"equally good fit: {', '.join(n for n in found.tied if n != found.family)}")
    print(f"thinking switch: {found.thinking_switch or '-'}")
    print(f"why: {found.reason}")
    return 0


def _grammar(args: argparse.Namespace) -> int:
    from .grammar_ir import GrammarExportError
    from .grammar_render import export_grammar

    tools = None
    if args.tools:
        try:
            tools = json.loads(_read_text_file(args.tools, "tools file"))
        except json.JSONDecodeError as exc:
            raise _UsageError(f"{args.tools}: not JSON: {exc}") from None
    try:
        text = export_grammar(args.template, args.format, tools=tools, tool_choice=args.tool_choice,
                              parallel=not args.no_parallel, reasoning=not args.no_reasoning)
    except GrammarExportError as exc:
        raise _UsageError(str(exc)) from None
    sys.stdout.write(text)
    return 0


def _version() -> str:
    from respc import __version__

    return __version__


def _parser() -> argparse.ArgumentParser:
    top = _ArgumentParser(prog="respc", description="Compile LLM response templates into streaming parsers.")
    top.add_argument("--version", action="version", version=f"respc {_version()}")
    sub = top.add_subparsers(dest="command", required=True)
    comp = sub.add_parser("compile", help="emit the parser module of a template")
    comp.add_argument("template", help="template .json, tokenizer_config.json, model directory or catalogue name")
    comp.add_argument("-o", "--output", required=True, help="the module to write, e.g. qwen3_parser.py")
    comp.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff when OUT is stale")
    comp.set_defaults(run=_compile)
    parse = sub.add_parser("parse", help="parse model output with a template")
    parse.add_argument("template", help="template .json, tokenizer_config.json, model directory or catalogue name")
    parse.add_argument("file", nargs="?", default="-", help="model output file, or - for standard input")
    group = parse.add_mutually_exclusive_group(required=True)
    group.add_argument("--prefix", help='the prompt before generation ("" opts out)')
    group.add_argument("--prefix-file", help="a file holding the prompt before generation")
    parse.add_argument("--tools", help="a JSON file with a list of tools, to type tool-call arguments")
    parse.add_argument("--events", action="store_true", help="print one JSON event per line as input arrives")
    parse.set_defaults(run=_parse)
    check = sub.add_parser("check", help="validate a template and show its D2 warnings and notes")
    check.add_argument("template", help="template .json, tokenizer_config.json, model directory or catalogue name")
    check.set_defaults(run=_check)
    gram = sub.add_parser("grammar", help="print the constrained-decoding grammar of a template")
    gram.add_argument("template", help="template .json, tokenizer_config.json, model directory or catalogue name")
    gram.add_argument("--format", default="lark", choices=["lark", "gbnf", "xgrammar", "llguidance"])
    gram.add_argument("--tools", help="a JSON file with a list of tools (OpenAI style)")
    gram.add_argument("--tool-choice", default="auto", help="auto, required, none or a tool name")
    gram.add_argument("--no-parallel", action="store_true", help="at most one tool call")
    gram.add_argument("--no-reasoning", action="store_true", help="leave the reasoning region out")
    gram.set_defaults(run=_grammar)
    det = sub.add_parser("detect", help="name the catalogue family whose format a chat template renders")
    det.add_argument("path", help="model directory, tokenizer_config.json or chat_template.jinja")
    det.set_defaults(run=_detect)
    return top


def _one_line(exc: BaseException, limit: int = 400) -> str:
    """An exception's message as one line (its lines joined), shortened to ``limit`` characters."""
    text = " | ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
    return text if len(text) <= limit else text[:limit - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 unparseable output / stale, 2 bad template or usage)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help printed its text
        return int(exc.code or 0) and 2
    except _ArgumentError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        return args.run(args)
    except TemplateError as exc:
        print(f"respc: bad template: {exc}", file=sys.stderr)
        return 2
    except _UsageError as exc:
        print(f"respc: {exc}", file=sys.stderr)
        return 2
    except _NotUTF8 as exc:
        print(f"respc: {exc}", file=sys.stderr)
        return 1
    except (ValueError, KeyError, TypeError) as exc:
        print(f"respc: cannot parse output: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
