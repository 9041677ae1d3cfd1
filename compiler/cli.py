"""The ``respc`` command line (SPEC section 8).

``respc compile TEMPLATE -o OUT.py [--check]``
    Write the generated parser. With ``--check`` write nothing; exit 1 with a unified diff when
    OUT.py is stale (missing or different).
``respc parse TEMPLATE [FILE|-] (--prefix TEXT | --prefix-file F) [--tools F.json] [--events]``
    Parse model output (FILE, or standard input) and print the message as JSON; with ``--events``
    print one JSON event per line as input arrives (flushed per event), then the message as a last
    line ``{"type": "message", "message": {...}}``.
``respc check TEMPLATE``
    Validate a template and print its D2 warnings (indeterminate regex delimiters).

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
    for warning in compiled.automaton.warnings:
        print(f"warning: {warning}")
    fields = compiled.template.fields
    notes = dict.fromkeys(
        f"field {fields[w.field].name!r} {w.delimiter.key} {w.delimiter.pattern!r}: a greedy optional part may "
        "still grow, so a match waits while the buffered text could continue it (D2)"
        for state in compiled.automaton.states for w in state.watches if w.extendable and not w.indeterminate)
    for note in notes:
        print(f"note: {note}")
    print(f"{compiled.template.source}: ok ({len(compiled.template.fields)} fields, "
          f"{len(compiled.automaton.states)} states, {len(compiled.automaton.warnings)} warnings)")
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
    return tools


def _parse(args: argparse.Namespace) -> int:
    if args.jsonl is not None:
        return _parse_jsonl(args)
    if args.prefix is None and args.prefix_file is None:
        raise _UsageError("parse: error: one of the arguments --prefix --prefix-file is required "
                          "(see respc parse --help)")
    module = _module(args.template)
    prefix = args.prefix if args.prefix is not None else _read_text_file(args.prefix_file, "prefix file")
    tools = _read_tools(args.tools)
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
    batch.add_argument("--errors", choices=ERRORS_MODES, default="recover",
                       help="recover (default): a bad record becomes message null with a diagnostic; strict: "
                       "also report it with its line number and exit 1 at the end")
    batch.add_argument("--workers", type=int, default=None, metavar="N", help="processes (default: the cores available)")
    batch.add_argument("--batch-size", type=int, default=None, metavar="N", help="records per batch sent to a worker")
    batch.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="progress bar on stderr (default: when stderr is a terminal)")


def _parse_jsonl(args: argparse.Namespace) -> int:
    """``respc parse TEMPLATE --jsonl IN -o OUT``: every record parsed, a summary line on stderr."""
    from . import batch

    if args.events or args.file != "-":
        raise _UsageError("parse: error: --jsonl reads its records from IN.jsonl; it takes no FILE and no --events")
    if args.workers is not None and args.workers < 1 or args.batch_size is not None and args.batch_size < 1:
        raise _UsageError("parse: error: --workers and --batch-size must be at least 1")
    prefix = args.prefix if args.prefix is not None else (
        _read_text_file(args.prefix_file, "prefix file") if args.prefix_file is not None else None)
    tools = _read_tools(args.tools)
    overrides = {key: getattr(args, f"{key}_key") for key in ("output", "prefix", "tools", "id")
                 if getattr(args, f"{key}_key") is not None}
    parser = batch.make_parser(args.template, keys=overrides, preset=args.preset, prefix=prefix, tools=tools,
                               errors=args.errors)
    workers = args.workers or batch.default_workers()

    def report(lineno: int, error: str) -> None:
        print(f"respc: {args.jsonl}: line {lineno}: {error}", file=sys.stderr)

    try:
        stats, seconds = batch.run_jsonl(parser, args.jsonl, args.output, workers=workers,
                                         batch_size=args.batch_size or batch.BATCH_SIZE, progress=args.progress,
                                         on_failure=report)
    except batch.MissingExtra as exc:
        raise _UsageError(str(exc)) from None
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        name = getattr(exc, "filename", None) or "?"
        raise _UsageError(f"cannot read or write {name!r}: {exc.strerror or exc}") from None
    rate = stats.records / seconds if seconds > 0 else 0.0
    print(f"respc: {stats.records} records, {stats.tool_calls} messages with tool calls, {stats.repairs} repairs, "
          f"{stats.failures} failures, {seconds:.1f} s ({rate:,.0f} records/s, {workers} workers)", file=sys.stderr)
    return 1 if args.errors == "strict" and stats.failures else 0


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
    group = parse.add_mutually_exclusive_group()  # required without --jsonl (checked in _parse)
    group.add_argument("--prefix", help='the prompt before generation ("" opts out); with --jsonl: the '
                       'default for records without one')
    group.add_argument("--prefix-file", help="a file holding the prompt before generation")
    parse.add_argument("--tools", help="a JSON file with a list of tools, to type tool-call arguments")
    parse.add_argument("--events", action="store_true", help="print one JSON event per line as input arrives")
    _add_jsonl_arguments(parse)
    parse.set_defaults(run=_parse)
    check = sub.add_parser("check", help="validate a template and show its D2 warnings and notes")
    check.add_argument("template", help="template .json, tokenizer_config.json, model directory or catalogue name")
    check.set_defaults(run=_check)
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
