"""Batch parsing: many model outputs, one output record each, on every core (docs/security.md "Files").

Theory of operation
-------------------
A batch run turns *input records* into *output records*, one for one, in order:

* an input record is a JSON object (one line of a JSONL file, a row of a dict of columns, of a
  DataFrame or of an Arrow table). :class:`Keys` says where its model output, prompt (``prefix``),
  tools and id are; a key may be a dotted path (``outputs.0.text``: dict keys and list indices) and
  may list alternatives separated by ``|`` (the first one present wins). :data:`PRESETS` holds the
  keys of the common dumps;
* an output record is ``{"id": ..., "message": ..., "diagnostics": [...]}``: ``id`` is the record's
  id (``null`` when it has none), ``message`` the parsed assistant message (``null`` when the
  record could not be parsed), ``diagnostics`` a list of ``{"kind": ..., "message": ...}``.

A record whose parse raises (``ValueError``, which covers ``ContentParseError`` and a missing
prefix, ``TypeError``, ``KeyError``, any other ``Exception``), a line that is not JSON, and a record
whose output record cannot be written as strict UTF-8 JSON (a lone surrogate, a NaN: see
:func:`dump_record`) each become ``message: null`` with one diagnostic
``{"kind": "error", "message": "<class>: <text>"}``, and the run goes on. ``errors`` decides what the
caller is told: ``"recover"`` (the default) counts it as a failure; ``"strict"`` also reports it with
its line number (the CLI prints it on stderr and exits 1 at the end). When a generated parser
learns repair of damaged output (the malformed-output issue), its ``ResponseParser`` will take an
``errors=`` keyword: :class:`RecordParser` then passes the mode through (see
``RecordParser.__init__``) and copies the parser's own diagnostics into the record; until then both
modes parse the same way and ``repairs`` is 0.

Parallelism (docs/security.md "Batch segments: workers write their own output"): the parent only
orders and stitches. A plain input file is cut into
*spans*, byte ranges of whole lines of about ``batch_size`` x 16 kB; the parent finds each span's end
by reading a few bytes at the boundary (it never reads a record) and hands out ``(offset, length)``.
A worker reads its span itself (``pread``), parses it, encodes (and, for a ``.gz``/``.zst``
output, compresses) the span's output *segment*, and returns only ``(seq, length, counts, lines,
worker)``. The segment reaches the output without the parent touching it:

* to an output file (Linux, ``fork``): the worker keeps the segment; the parent, taking results
  in input order, knows each segment's offset and sends ``(seq, offset)`` on that worker's control
  pipe; the worker writes the segment there (``pwrite``) into the output's temporary file (its
  descriptor is inherited through ``fork``) before its next task, and all that are left at the end. The parent
  waits for every worker to end before the file is synced and renamed;
* otherwise (standard output, or no ``fork``): the worker writes the segment to its own *segment
  file* in a private folder (``tempfile.mkdtemp``, mode 700: beside the output file, or in
  ``TMPDIR`` for standard output), and the parent appends the segment files in input order with
  ``os.copy_file_range`` (else ``os.sendfile``, else reads and writes), deleting each one. For stdin or a compressed
input the parent must read (and decompress) the lines itself and sends batches of raw lines; the
workers still write their segments. Each worker builds its parser once, from the generated
module's source that the parent compiled (no compiler import in workers). At most ``2 * workers``
work items are in flight (so at most that many segments wait), so memory and disk stay flat
in the number of records; results are taken in submission order, so output order is input order.
The pool (:func:`_ordered_pool`) has no threads besides its task queue's feeder: the parent puts
tasks and waits on the result pipe and the workers' sentinels, so a killed worker is an error,
not a hang. ``workers=1`` parses in the calling process, the same spans when the output is
compressed (a plain output is read line by line), so the bytes are the same.

Compressed outputs: each segment is compressed on its own, one gzip member (level 6, mtime 0, no
file name) or one zstd frame (level 3) per segment, and the file is their concatenation: a valid
gzip stream (``gzip``, ``zcat``, Python's ``gzip`` read every member) and a valid zstd stream
(``zstd -d`` reads every frame; python-zstandard's ``stream_reader`` needs
``read_across_frames=True``). The segmentation depends on the input and ``batch_size`` only, so
the bytes are the same for every worker count and every run; an output with no records is one
empty member or frame.

Every path (CLI, :func:`parse_batch`, :func:`columns_mapper`, ``respc.ray``) serialises a record with
:func:`dump_record`, so their output lines are byte-identical.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import gzip
import inspect
import io
import json
import multiprocessing
import os
import pickle
import signal
import stat
import sys
import time
import types

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]
from dataclasses import dataclass, field, replace
from collections.abc import Mapping  # not typing.Mapping: its isinstance goes through __subclasscheck__
from typing import Any, Callable, Iterable, Iterator

from ..runtime.errors import RespcError
from ..runtime.whole import finish as finish_whole
from .files import atomic_output, same_file, sigint_deferred

__all__ = [
    "Keys",
    "PRESETS",
    "Stats",
    "RecordParser",
    "module_source",
    "parse_batch",
    "columns_mapper",
    "dump_record",
    "open_input",
    "open_output",
    "run_jsonl",
    "default_workers",
    "ERRORS_MODES",
]

ERRORS_MODES = ("recover", "strict")

#: records per batch sent to a worker (the CLI's ``--batch-size`` default)
BATCH_SIZE = 64

#: the exceptions a parse of one record may raise that make it a failed record, not a crash: any
#: Exception (ValueError: ContentParseError, PlaceholderError, missing prefix; TypeError: ids without
#: a tokenizer, a non-text output; KeyError; RecursionError, and a fault of the parser itself), so
#: one record never ends a run of millions. KeyboardInterrupt and SystemExit still stop it.
RECORD_ERRORS = (Exception,)


@dataclass(frozen=True)
class Keys:
    """Where an input record keeps each piece (dotted paths; ``a|b`` = first present).

    Attributes:
        output (str): the model output text (required in every record).
        prefix (str): the prompt sent before generation; a record without it uses the run's default
            prefix (``--prefix``); with neither the record fails (the parser requires a prefix).
        tools (str): the tool list (JSON list) used to type tool-call arguments; default: the run's.
        id (str): copied to the output record's ``id`` (``null`` when absent).
    """

    output: str = "output"
    prefix: str = "prefix"
    tools: str = "tools"
    id: str = "id"


#: Presets for common dumps: name -> (keys, the record shape they read). Each is a documented
#: guess at the usual shape; any key can be overridden on top of a preset.
PRESETS: dict[str, tuple[Keys, str]] = {
    "respc": (Keys(), '{"id": ..., "prefix": "<prompt>", "output": "<model output>", "tools": [...]}'),
    "vllm": (Keys(output="outputs.0.text", prefix="prompt", tools="tools", id="request_id"),
             'vLLM RequestOutput as a dict (LLM.generate): {"request_id": "0", "prompt": "<prompt>", '
             '"outputs": [{"index": 0, "text": "<model output>", ...}], ...}'),
    "sglang": (Keys(output="text", prefix="prompt", tools="tools", id="meta_info.id|id"),
               'SGLang Engine.generate / /generate result, with the prompt added: {"text": "<model output>", '
               '"meta_info": {"id": "...", ...}, "prompt": "<prompt>"}'),
    "datasets": (Keys(output="completion|response|output", prefix="prompt", tools="tools", id="id"),
                 'Hugging Face datasets prompt-completion rows (TRL style): {"id": ..., "prompt": "<prompt>", '
                 '"completion": "<model output>"} (also "response" or "output" for the output)'),
    "openai-batch": (Keys(output="response.body.choices.0.message.content|response.body.choices.0.text",
                          prefix="prefix", tools="tools", id="custom_id"),
                     'OpenAI Batch API output line (also vLLM run_batch): {"id": "batch_req_...", '
                     '"custom_id": "...", "response": {"status_code": 200, "body": {"choices": [{"message": '
                     '{"content": "<raw model output>"}}]}}} (or choices[0].text for /v1/completions); the '
                     'prompt is not in this file: give --prefix'),
}


_MISSING = object()


def _lookup(record: Any, path: str) -> Any:
    """The value at a dotted ``path`` (``a.0.b``; ``a|b`` = first present), or ``_MISSING``.

    A path that is a key of the record as it stands (``"a.b"`` literally) wins over its dotted
    reading. Digits index lists; ``None`` values count as absent for alternatives but are returned
    for the last one.
    """
    for alternative in path.split("|"):
        value = _walk(record, alternative)
        if value is not _MISSING and value is not None:
            return value
    return value


def _walk(record: Any, path: str) -> Any:
    if type(record) is dict:  # the usual record, a JSON object: one lookup, no split
        value = record.get(path, _MISSING)
        if value is not _MISSING or "." not in path:
            return value
    elif isinstance(record, Mapping) and path in record:
        return record[path]
    value = record
    for part in path.split("."):
        if type(value) is dict or isinstance(value, Mapping):
            value = value.get(part, _MISSING)
        elif isinstance(value, (list, tuple)) and part.isdigit():
            index = int(part)
            value = value[index] if index < len(value) else _MISSING
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


@dataclass
class Stats:
    """Counts of a run (the CLI's summary line).

    Attributes:
        records (int): output records written.
        tool_calls (int): messages with at least one tool call.
        repairs (int): diagnostics of kind ``"repair"``/``"repaired"`` (what errors="recover" repaired).
        failures (int): records without a message (``null``: strict mode), or (errors="recover")
            whose message lost the structure of a region that could not be decoded (a ``malformed``
            or ``truncated`` diagnostic; its raw text is kept in the message).
        failed_lines (list[tuple[int, str]]): (line number, error) of each failure, kept only in
            ``"strict"`` mode (the CLI reports them).
        last_line (int), last_id (Any): the input line number and the ``id`` of the last record
            counted (0 and None before the first); what an interrupted run reports.
    """

    records: int = 0
    tool_calls: int = 0
    repairs: int = 0
    failures: int = 0
    failed_lines: list = field(default_factory=list)
    last_line: int = 0
    last_id: Any = None

    def add(self, other: "Stats") -> None:
        self.records += other.records
        self.tool_calls += other.tool_calls
        self.repairs += other.repairs
        self.failures += other.failures
        self.failed_lines.extend(other.failed_lines)
        if other.records:
            self.last_line, self.last_id = other.last_line, other.last_id


def dump_record(record: dict) -> str:
    """One output record as one JSON line (without the newline); the only serialiser of every path.

    Never raises, and the line is always strict JSON that UTF-8 can encode: a record that cannot be
    written so (a lone surrogate such as ``"\\ud800"``, a NaN or infinite number, a value JSON has no
    form for, nesting too deep) is replaced by its error record (:func:`_line`; docs/security.md
    "Files", README "Batch").
    """
    return _line(record)[0]


_ASCII = json.JSONEncoder(ensure_ascii=True, separators=(", ", ": "), allow_nan=False)
_UNICODE = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), allow_nan=False)


def _dumps(record: Any) -> str:
    """``json.dumps(record, ensure_ascii=False, separators=(", ", ": "), allow_nan=False)``, quicker.

    CPython's encoder escapes ASCII-only text faster than it copies other text, so the ASCII form
    is made first: when it holds no ``\\u`` escape, no character was escaped for being non-ASCII
    and it is the same text; else (non-ASCII text, a control character, a lone surrogate) the
    record is written again the usual way.
    """
    text = _ASCII.encode(record)
    if "\\u" in text:
        text = _UNICODE.encode(record)
    return text


def _line(record: dict) -> tuple[str, bytes, str | None]:
    """``(line, its UTF-8, None)`` for a record that can be written as it is, else ``(error line,
    its UTF-8, error)``.

    The error record keeps the record's id when the id itself can be written (else ``null``) and
    says why: ``{"id": ..., "message": null, "diagnostics": [{"kind": "error", "message": "cannot
    write the output record: ..."}]}``.
    """
    try:
        text = _dumps(record)
        return text, text.encode("utf-8"), None
    except UnicodeEncodeError as exc:
        char = exc.object[exc.start]
        error = (f"cannot write the output record: it holds a lone surrogate U+{ord(char):04X}, which UTF-8 "
                 "cannot encode (in the input record, or in what parsing it gave)")
    except ValueError as exc:  # allow_nan=False (json also raises ValueError for a circular reference)
        error = f"cannot write the output record: {_describe(exc)}"
        if "Out of range float" in str(exc):
            error = ("cannot write the output record: it holds a number that is not finite (NaN or an "
                     "infinity), which JSON cannot represent")
    except (TypeError, RecursionError, OverflowError) as exc:
        error = f"cannot write the output record: {_describe(exc)}"
    ident = record.get("id") if isinstance(record, dict) else None
    try:
        _dumps(ident).encode("utf-8")
    except Exception:  # noqa: BLE001 - an id that cannot be written is left out
        ident = None
    error = error.encode("utf-8", "backslashreplace").decode("utf-8")
    text = _dumps({"id": ident, "message": None, "diagnostics": [{"kind": "error", "message": error}]})
    return text, text.encode("utf-8"), error


def module_source(template: Any) -> str:
    """The generated module's source for ``template`` (what workers and Ray actors execute).

    Raises:
        TemplateError: the template breaks a rule of template-language.md "Load-time checks".
    """
    from .api import compile_source

    return compile_source(template).source


def _exec_module(source: str) -> types.ModuleType:
    """Execute generated source into a fresh module (once per process; no compiler import)."""
    module = types.ModuleType("respc._batch_parser")
    module.__file__ = "<respc batch parser>"
    sys.modules[module.__name__] = module
    try:
        exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102 - our own emitted code
    finally:
        del sys.modules[module.__name__]
    return module


def _describe(exc: BaseException, limit: int = 1000) -> str:
    text = " | ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= limit else text[:limit - 1] + "…"


class RecordParser:
    """Turns input records into output records with one generated parser (built once).

    Args:
        source: generated module source (:func:`module_source`).
        keys: where the pieces are in a record.
        prefix: default prefix for records without one (``None``: such records fail).
        tools: default tool list for records without one.
        errors: ``"recover"`` or ``"strict"`` (see the module docstring).

    Picklable (only the arguments are pickled; the module is rebuilt on first use), so a Ray actor or
    a ``datasets`` map can carry it.
    """

    def __init__(self, source: str, keys: Keys = Keys(), prefix: str | None = None,
                 tools: list | None = None, errors: str = "recover") -> None:
        if errors not in ERRORS_MODES:
            raise ValueError(f"errors must be one of {', '.join(map(repr, ERRORS_MODES))}, not {errors!r}")
        self.source = source
        self.keys = keys
        self.prefix = prefix
        self.tools = tools
        self.errors = errors
        self._module: types.ModuleType | None = None
        self._parser_class: Callable[..., Any] | None = None
        self._extra: dict = {}

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_module", "_parser_class", "_extra")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._module = self._parser_class = None
        self._extra = {}

    def _load(self) -> None:
        self._module = _exec_module(self.source)
        self._parser_class = self._module.ResponseParser
        # Recover mode plugs in here: a ResponseParser that takes ``errors=`` (the malformed-output
        # issue) gets the run's mode, and its ``diagnostics`` list (if any) reaches the record.
        try:
            accepts = "errors" in inspect.signature(self._parser_class).parameters
        except (TypeError, ValueError):
            accepts = False
        self._extra = {"errors": self.errors} if accepts else {}

    def parse_record(self, record: Any) -> tuple[dict, str | None]:
        """Parse one input record.

        Returns:
            tuple[dict, str | None]: the output record, and the error text when it failed (else None).
        """
        if self._parser_class is None:
            self._load()
        keys = self.keys
        ident = None
        try:
            if type(record) is not dict and not isinstance(record, Mapping):
                raise ValueError(f"a record must be a JSON object, not {type(record).__name__}")
            ident = _lookup(record, keys.id)
            if ident is _MISSING:
                ident = None
            output = _lookup(record, keys.output)
            if output is _MISSING or output is None:
                raise ValueError(f"record has no model output at key {keys.output!r}")
            prefix = _lookup(record, keys.prefix)
            if prefix is _MISSING or prefix is None:
                if self.prefix is None:
                    raise ValueError(f"record has no prefix at key {keys.prefix!r} and no default prefix "
                                     "was given (--prefix/--prefix-file, or prefix=)")
                prefix = self.prefix
            tools = _lookup(record, keys.tools)
            if tools is _MISSING or tools is None:
                tools = self.tools
            parser = self._parser_class(prefix, tools, **self._extra)
            # a complete output: one end-of-stream pass where that is exact (runtime/whole.py)
            message = finish_whole(parser, output)
        except RECORD_ERRORS as exc:
            error = _describe(exc)
            if ident is _MISSING:
                ident = None
            return {"id": _plain(ident), "message": None,
                    "diagnostics": [{"kind": "error", "message": error}]}, error
        diagnostics = list(getattr(parser, "diagnostics", None) or ())
        return {"id": _plain(ident), "message": message, "diagnostics": diagnostics}, None

    def parse_line(self, line: bytes | str) -> tuple[dict, str | None]:
        """Parse one JSONL line (bytes or str) into an output record (a bad line is a failed record)."""
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, nesting too deep
            error = f"line is not JSON: {_describe(exc)}"
            return {"id": None, "message": None, "diagnostics": [{"kind": "error", "message": error}]}, error
        return self.parse_record(record)

    def parse_lines(self, batch: list[tuple[int, bytes]]) -> tuple[bytes, Stats]:
        """Parse a batch of ``(line number, raw line)``.

        Returns:
            tuple[bytes, Stats]: the output lines, UTF-8, each ending in a newline (encoded here, in
            the worker, so the parent only writes bytes), and the counts.
        """
        out, stats = [], Stats()
        for lineno, line in batch:
            record, error = self.parse_line(line)
            _, data, failed = _line(record)
            if failed is not None:  # the record could not be written as it is: its error record
                record, error = {"id": None, "message": None, "diagnostics": ()}, failed
            _count(stats, record, error, lineno, self.errors)
            out.append(data)
        if batch:  # what an interrupted run names: the batch's last record
            stats.last_line, stats.last_id = lineno, record.get("id")
        out.append(b"")
        return b"\n".join(out), stats


def _plain(value: Any) -> Any:
    """A JSON-able id: numpy/pyarrow scalars become Python values (``item()``/``as_py()``)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    for name in ("as_py", "item"):
        method = getattr(value, name, None)
        if callable(method):
            return method()
    return value


#: diagnostic kinds of the parser (errors="recover") that count as repairs / as lost structure
REPAIRS = ("repair", "repaired")
LOST_STRUCTURE = ("malformed", "truncated")


def _count(stats: Stats, record: dict, error: str | None, lineno: int, errors: str) -> None:
    stats.records += 1
    message = record["message"]
    kinds = [d.get("kind") for d in record["diagnostics"] if isinstance(d, dict)]
    if message is None:
        stats.failures += 1
        if errors == "strict":
            stats.failed_lines.append((lineno, error))
    else:
        if message.get("tool_calls"):
            stats.tool_calls += 1
        if any(kind in LOST_STRUCTURE for kind in kinds):
            # errors="recover": the message is there, but a region could not be decoded
            stats.failures += 1
    stats.repairs += sum(1 for kind in kinds if kind in REPAIRS)


# --- workers -------------------------------------------------------------------------------------
#
# A run of `run_jsonl` is a sequence of *segments*, one per work item: a byte range of whole lines of
# a plain input file (:func:`_spans`), or a batch of raw lines read by the parent (stdin, a compressed
# input). Each segment's output (compressed on its own when the output is .gz/.zst: one gzip member
# or zstd frame) is made by whoever parses it: in this process with one worker, else in a worker,
# which writes it to its own file in a private folder (:func:`_segment_folder`) and returns only
# ``(seq, length, counts, lines)``; the parent appends the segment files in order
# (:func:`_Sink.append`: ``copy_file_range``/``sendfile``, no bytes through Python) and removes them.
# So the segmentation, hence the output bytes, never depends on the number of workers.

_WORKER: RecordParser | None = None
_WORKER_FD: int | None = None
_WORKER_DIR: str | None = None
_WORKER_COMPRESS: str | None = None
_WORKER_BATCH: int = BATCH_SIZE
#: direct mode (a file output, fork): the output file's descriptor, inherited; this worker's end of
#: its control pipe (the parent sends ``(seq, offset)`` there); the segments waiting for an offset
_WORKER_OUT: int | None = None
_WORKER_CONTROL: Any = None
_WORKER_INDEX: int = 0
_WORKER_PENDING: dict = {}


def _init_worker(parser: RecordParser, path: str | None = None, folder: str | None = None,
                 compress: str | None = None, batch_size: int = BATCH_SIZE, out_fd: int | None = None) -> None:
    global _WORKER, _WORKER_FD, _WORKER_DIR, _WORKER_COMPRESS, _WORKER_BATCH, _WORKER_OUT
    # Ctrl-C reaches the whole process group: the parent alone handles it (it stops the pool and
    # says how far the run got), so a worker ignores it instead of printing a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER = parser
    parser._load()  # build the parser once per worker, before the first batch
    _WORKER_DIR, _WORKER_COMPRESS, _WORKER_BATCH, _WORKER_OUT = folder, compress, batch_size, out_fd
    if path is not None:
        _WORKER_FD = os.open(path, os.O_RDONLY)  # ranges are read here, not sent through a pipe


def _parse_span(parser: RecordParser, data: bytes, batch_size: int) -> tuple[bytes, Stats, int]:
    """Parse the whole lines ``data`` (a span of the input); line numbers are relative (the first
    line is 1: :func:`_rebase` makes them absolute). Returns (output bytes, counts, lines in it)."""
    parts, stats = [], Stats()
    for batch in _batches(data.split(b"\n"), batch_size):
        out, part = parser.parse_lines(batch)
        parts.append(out)
        stats.add(part)
    return b"".join(parts), stats, data.count(b"\n")


def _compress(data: bytes, kind: str | None) -> bytes:
    """One segment's output as it goes into the file: as it is, one gzip member (level 6, no name,
    mtime 0, so the bytes depend on the records only) or one zstd frame (level 3). Empty stays empty."""
    if not data or kind is None:
        return data
    if kind == "gz":
        return gzip.compress(data, compresslevel=6, mtime=0)
    return _zstd().ZstdCompressor(level=3).compress(data)


def _compression(path: str) -> str | None:
    """``"gz"``/``"zst"`` by the output's extension (standard output: none)."""
    if path != "-" and path.endswith(".gz"):
        return "gz"
    if path != "-" and path.endswith(".zst"):
        _zstd()  # MissingExtra now, before anything is read
        return "zst"
    return None


def _counts(stats: Stats) -> tuple:
    """A Stats as a plain tuple (cheaper to pickle and unpickle than the dataclass)."""
    return (stats.records, stats.tool_calls, stats.repairs, stats.failures, stats.failed_lines,
            stats.last_line, stats.last_id)


def _from_counts(counts: tuple) -> Stats:
    return Stats(*counts)


def _work_segment(seq: int, item: Any) -> tuple[int, int, tuple, int]:
    """Parse one work item in a worker and write its output segment file ``<folder>/<seq>``.

    ``item`` is ``(offset, length)`` (a span of the worker's input file) or a batch
    of raw lines with their line numbers (when the parent reads the input). Returns ``(seq, bytes
    written, counts, lines in the span)``; a segment with no bytes gets no file.
    """
    assert _WORKER is not None and (_WORKER_DIR is not None or _WORKER_OUT is not None)
    if _WORKER_FD is not None:
        offset, length = item
        data, stats, lines = _parse_span(_WORKER, os.pread(_WORKER_FD, length, offset), _WORKER_BATCH)
    else:
        (data, stats), lines = _WORKER.parse_lines(item), 0
    data = _compress(data, _WORKER_COMPRESS)
    if data and _WORKER_OUT is not None:  # direct mode: written where the parent says (_write_pending)
        _WORKER_PENDING[seq] = data
        return seq, len(data), _counts(stats), lines, _WORKER_INDEX
    if data:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(os.path.join(_WORKER_DIR, str(seq)), flags, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    return seq, len(data), _counts(stats), lines, _WORKER_INDEX


def _write_pending(block: bool) -> None:
    """Direct mode: write each waiting segment whose offset the parent has sent (``pwrite`` into the
    output file); with ``block``, wait until none is left (the end of the run)."""
    control = _WORKER_CONTROL
    if control is None or _WORKER_OUT is None:
        return
    while _WORKER_PENDING and (block or control.poll()):
        seq, offset = control.recv()
        view = memoryview(_WORKER_PENDING.pop(seq))
        while view:
            written = os.pwrite(_WORKER_OUT, view, offset)
            view, offset = view[written:], offset + written


def _spans(path: str, target: int, counter: list) -> Iterator[tuple[int, int]]:
    """``(offset, length)`` spans of whole lines of about ``target`` bytes or more: each ends at the
    first newline at or after ``target`` bytes (the last one at the end of the file).

    The parent reads only the few bytes around each boundary (``pread``), never the records, and
    counts no lines (workers say how many lines each span held). ``counter[0]`` is kept at the end of
    the last span given out (progress).
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        offset = 0
        while offset < size:
            probe = offset + target - 1
            end = size
            while probe < size:
                block = os.pread(fd, 65536, probe)
                if not block:
                    break
                found = block.find(b"\n")
                if found >= 0:
                    end = probe + found + 1
                    break
                probe += len(block)
            yield offset, end - offset
            counter[0] = end
            offset = end
        # a file that grows while it is read: what is past its size at the start is not read
    finally:
        os.close(fd)


def _rebase(stats: Stats, base: int) -> None:
    """Make a span's relative line numbers absolute (``base``: the line number before the span)."""
    if base:
        stats.failed_lines = [(lineno + base, error) for lineno, error in stats.failed_lines]
        if stats.records:
            stats.last_line += base


def _work(seq: int, batch: list[tuple[int, bytes]]) -> tuple[bytes, Stats]:
    assert _WORKER is not None
    return _WORKER.parse_lines(batch)


def default_workers() -> int:
    """The cores this process may use: ``os.process_cpu_count()`` (3.13+), else the affinity mask."""
    counter = getattr(os, "process_cpu_count", None)
    if counter is not None:
        return counter() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def _batches(lines: Iterable[bytes], size: int) -> Iterator[list[tuple[int, bytes]]]:
    """``(line number, line)`` batches of ``size``; blank lines are skipped (no output record)."""
    batch: list[tuple[int, bytes]] = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        batch.append((lineno, line))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _pool_worker(tasks: Any, results: Any, lock: Any, work: Callable, initargs: tuple, index: int = 0,
                 control: Any = None) -> None:
    """A worker process of :func:`_ordered_pool`: build the parser, then ``work(seq, item)`` for each
    task until ``None``; each result (or the exception, as ``(seq, False, exc)``) goes back at once.
    With a ``control`` pipe (direct mode) it writes its waiting segments before each task and all of
    them at the end (:func:`_write_pending`)."""
    global _WORKER_CONTROL, _WORKER_INDEX
    _WORKER_CONTROL, _WORKER_INDEX = control, index
    try:
        _init_worker(*initargs)
    except BaseException as exc:  # noqa: BLE001 - the parent re-raises it
        _send(results, lock, (-1, False, exc))
        return
    while True:
        try:
            _write_pending(block=False)
        except Exception as exc:  # noqa: BLE001 - a full disk: the parent re-raises it
            _send(results, lock, (-1, False, exc))
            return
        task = tasks.get()
        if task is None:
            try:
                _write_pending(block=True)
            except Exception as exc:  # noqa: BLE001
                _send(results, lock, (-1, False, exc))
            return
        seq, item = task
        try:
            value = (seq, True, work(seq, item))
        except Exception as exc:  # noqa: BLE001 - the parent re-raises it
            value = (seq, False, exc)
        _send(results, lock, value)


def _send(results: Any, lock: Any, value: tuple) -> None:
    try:
        data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - an exception that does not pickle: its text does
        data = pickle.dumps((value[0], False, RuntimeError(_describe(value[2] if not value[1] else exc))))
    with lock:
        results.send_bytes(data)


def _ordered_pool(parser: RecordParser, path: str | None, work: Callable, items: Iterable,
                  workers: int, initargs: tuple = (), controls: list | None = None) -> Iterator[Any]:
    """``work(seq, item)`` for each item on ``workers`` processes, results in item order.

    Each worker runs :func:`_init_worker` once (the parser is built there; ``initargs`` follow
    ``parser`` and ``path``), then takes tasks from one queue as it gets free. At most
    ``2 * workers`` items are in flight, so the input is read only as fast as it is parsed (memory,
    and the segment files waiting, stay flat). The parent has no threads of its own but the task
    queue's feeder: it puts tasks and reads results in this thread (``multiprocessing.connection.wait``
    on the result pipe and the workers' sentinels), so its cost per task is one small pickle each
    way. An exception in a worker is raised here; a worker that dies (killed) is a ``RuntimeError``;
    Ctrl-C or any error stops the workers (``terminate``) before it propagates.
    """
    from multiprocessing.connection import wait

    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    tasks = context.Queue()
    reader, writer = context.Pipe(duplex=False)
    lock = context.Lock()
    procs = [context.Process(target=_pool_worker, args=(tasks, writer, lock, work, (parser, path, *initargs), i,
                                                        controls[i] if controls else None),
                             daemon=True) for i in range(workers)]
    done: dict[int, tuple] = {}
    clean = False
    try:
        for proc in procs:
            proc.start()
        source = iter(items)
        submitted = delivered = 0
        exhausted = False
        while True:
            while not exhausted and submitted - delivered < 2 * workers:
                try:
                    item = next(source)
                except StopIteration:
                    exhausted = True
                    break
                tasks.put((submitted, item))
                submitted += 1
            if delivered == submitted:
                break
            while delivered not in done:
                ready = wait([reader, *(proc.sentinel for proc in procs)])
                if reader in ready:
                    seq, ok, value = pickle.loads(reader.recv_bytes())
                    if not ok:
                        raise value
                    done[seq] = value
                else:
                    dead = next(proc for proc in procs if proc.sentinel in ready)
                    dead.join(5)
                    raise RuntimeError(f"a worker process ended unexpectedly (exit code {dead.exitcode})")
            value = done.pop(delivered)
            delivered += 1
            yield value
        for _ in procs:
            tasks.put(None)
        left = list(procs)
        while left:  # a worker may still write its last segments (direct mode): errors come here
            ready = wait([reader, *(proc.sentinel for proc in left)])
            if reader in ready:
                seq, ok, value = pickle.loads(reader.recv_bytes())
                if not ok:
                    raise value
                continue
            for proc in [proc for proc in left if proc.sentinel in ready]:
                proc.join()
                left.remove(proc)
                if proc.exitcode != 0:
                    raise RuntimeError(f"a worker process ended unexpectedly (exit code {proc.exitcode})")
        clean = True
    finally:
        if not clean:
            tasks.cancel_join_thread()  # the feeder must not wait for workers that are gone
            for proc in procs:
                if proc.is_alive():
                    proc.terminate()
            for proc in procs:
                if proc.pid is not None:
                    proc.join()
        tasks.close()
        reader.close()
        writer.close()


def map_line_batches(parser: RecordParser, batches: Iterable[list[tuple[int, bytes]]],
                     workers: int) -> Iterator[tuple[bytes, Stats]]:
    """Parse line batches, in order, on ``workers`` processes (1: in this process); the output comes
    back through the pool (what :func:`run_jsonl` avoids with segment files)."""
    if workers <= 1:
        for batch in batches:
            yield parser.parse_lines(batch)
        return
    yield from _ordered_pool(parser, None, _work, batches, workers)


# --- segments and the sink -----------------------------------------------------------------------

#: the suffix of the private folder that holds a run's segment files (the middle of its name is random)
SEGMENTS_SUFFIX = ".respc-seg"


@contextlib.contextmanager
def _segment_folder(out_path: str) -> Iterator[str]:
    """A new private folder (``tempfile.mkdtemp``: random name, mode 700) for the workers' segment
    files: beside the output file (same file system, so appending a segment can share blocks), or in
    the temporary folder (``TMPDIR``) for standard output. Removed with what is left in it when the
    block ends, however it ends (docs/security.md "Files")."""
    import shutil
    import tempfile

    if out_path == "-":
        folder = tempfile.mkdtemp(prefix="respc-", suffix=SEGMENTS_SUFFIX)
    else:
        target = os.path.realpath(out_path)
        folder = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.", suffix=SEGMENTS_SUFFIX,
                                  dir=os.path.dirname(target))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


#: errors of copy_file_range / sendfile that mean "not between these two files": fall back
_NO_COPY = {getattr(errno, name) for name in ("EXDEV", "EINVAL", "ENOSYS", "EOPNOTSUPP", "ENOTSUP", "EBADF",
                                              "EPERM", "ESPIPE") if hasattr(errno, name)}


class _Sink:
    """The output as the parent writes it: bytes (one worker), or whole segment files appended in
    order (:meth:`append`), copied by the kernel where it can (``os.copy_file_range``, else
    ``os.sendfile``, else 1 MB reads and writes)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        try:
            self.fd = handle.fileno()
        except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
            self.fd = None  # a stream without a file descriptor (a test's captured stdout)
        self.ways = ["copy_file_range", "sendfile"] if self.fd is not None else []
        if self.fd is not None and hasattr(fcntl, "F_SETPIPE_SZ"):  # Linux
            with contextlib.suppress(OSError):
                if stat.S_ISFIFO(os.fstat(self.fd).st_mode):  # a pipe: 1 MB at a time, not 64 kB
                    fcntl.fcntl(self.fd, fcntl.F_SETPIPE_SZ, 1 << 20)

    def write(self, data: bytes) -> None:
        self.handle.write(data)

    def append(self, path: str, length: int) -> None:
        """Append the segment file ``path`` (``length`` bytes) and remove it."""
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        source = os.open(path, flags)
        try:
            os.unlink(path)
            self.handle.flush()
            left = length
            while left and self.ways:
                way = self.ways[0]
                try:
                    if way == "copy_file_range" and hasattr(os, "copy_file_range"):
                        done = os.copy_file_range(source, self.fd, left)
                    elif way == "sendfile" and hasattr(os, "sendfile"):
                        done = os.sendfile(self.fd, source, None, left)
                    else:
                        raise OSError(errno.ENOSYS, way)
                except OSError as exc:
                    if exc.errno not in _NO_COPY:
                        raise
                    self.ways.pop(0)  # not between these files: the next way, from where this one stopped
                    continue
                if done == 0:
                    raise OSError(errno.EIO, f"segment file {path!r} ended {left} bytes early")
                left -= done
            while left:
                block = os.read(source, min(left, 1 << 20))
                if not block:
                    raise OSError(errno.EIO, f"segment file {path!r} ended {left} bytes early")
                self.handle.write(block)
                left -= len(block)
        finally:
            os.close(source)


# --- files ---------------------------------------------------------------------------------------

class Interrupted(Exception):
    """The run was stopped by Ctrl-C (``KeyboardInterrupt``) after ``stats`` records were written.

    Every record counted in ``stats`` is in the output, whole and in order; nothing after it is.

    Attributes:
        stats (Stats): the counts of what was written (``last_line``, ``last_id``: the last record).
    """

    def __init__(self, stats: "Stats") -> None:
        super().__init__(f"interrupted after {stats.records} records")
        self.stats = stats


class MissingExtra(RespcError):
    """A feature needs an optional dependency that is not installed (message names the extra)."""


def _zstd():
    try:
        import zstandard
    except ImportError:
        raise MissingExtra("reading or writing .zst files needs the zstandard package: "
                           'pip install "respc[batch]"') from None
    return zstandard


class _Counting(io.RawIOBase):
    """A raw reader that counts the bytes read from the file (the progress bar's position)."""

    def __init__(self, raw) -> None:
        self.raw = raw
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self.raw.readinto(buffer)
        self.count += n or 0
        return n

    def close(self) -> None:
        self.raw.close()
        super().close()


def open_input(path: str):
    """Open a JSONL input for reading lines of bytes: ``-`` is stdin; ``.gz`` / ``.zst`` decompress.

    Returns:
        tuple[binary file, _Counting | None, int | None]: the line reader, the byte counter of the
        underlying file (None for stdin) and the file size (None when unknown).

    Raises:
        OSError: the file cannot be opened; MissingExtra: ``.zst`` without zstandard.
    """
    if path == "-":
        return sys.stdin.buffer, None, None
    raw = open(path, "rb", buffering=0)  # noqa: SIM115 - closed by the caller
    try:
        size = os.fstat(raw.fileno()).st_size
    except OSError:
        size = None
    counter = _Counting(raw)
    buffered = io.BufferedReader(counter, 1 << 20)
    if path.endswith(".gz"):
        return gzip.GzipFile(fileobj=buffered, mode="rb"), counter, size
    if path.endswith(".zst"):
        try:
            zstandard = _zstd()
        except MissingExtra:
            raw.close()
            raise
        reader = zstandard.ZstdDecompressor().stream_reader(buffered, read_across_frames=True)
        return io.BufferedReader(reader, 1 << 20), counter, size
    return buffered, counter, size


@contextlib.contextmanager
def open_output(path: str) -> Iterator[Any]:
    """A JSONL output to write bytes into, as a context manager: ``-`` is stdout; ``.gz`` / ``.zst``
    compress (one stream; :func:`run_jsonl` compresses per segment instead, see the module docstring).

    A file is written whole (:func:`respc.compiler.files.atomic_output`): the records go to a
    temporary file in the same folder, renamed over ``path`` when the block ends without an error;
    on an error or an interrupt ``path`` keeps its old bytes (or stays absent) and the temporary
    file is removed. A symlink is followed, an existing file keeps its mode.

    Raises:
        OSError: the output cannot be written; MissingExtra: ``.zst`` without zstandard.
    """
    if path == "-":
        with _open_raw(path) as raw:
            yield raw
        return
    zstandard = _zstd() if path.endswith(".zst") else None
    with atomic_output(path) as raw:
        if path.endswith(".gz"):
            # the name gzip.open(path) would put in the header, not the temporary file's
            with gzip.GzipFile(filename=path, mode="wb", compresslevel=6, fileobj=raw) as writer:
                yield writer
        elif zstandard is not None:
            with zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False) as writer:
                yield writer
        else:
            yield raw


# --- progress ------------------------------------------------------------------------------------

class _Progress:
    """Progress on stderr: tqdm (extra ``batch``) when installed, else one line rewritten twice a second.

    Position is the input bytes read (so the ETA holds for compressed files), rate is records/s.
    """

    def __init__(self, total: int | None, stream=None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()
        self.last = 0.0
        self.records = 0
        try:
            from tqdm import tqdm
        except ImportError:
            self.bar = None
        else:
            import shutil

            # a pseudo-terminal that reports 0 columns or 0 rows (`script` without a terminal, some CI
            # runners) would get an empty bar, or none at all: tqdm hides bars below the last row
            size = shutil.get_terminal_size((100, 20))
            self.bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, file=self.stream,
                            desc="respc", ncols=size.columns or 100, nrows=size.lines or 20, mininterval=0.5)

    def update(self, position: int | None, records: int) -> None:
        self.records = records
        now = time.perf_counter()
        elapsed = max(now - self.started, 1e-9)
        if self.bar is not None:
            if position is not None:
                self.bar.update(position - self.bar.n)
            if now - self.last >= 0.5:
                self.bar.set_postfix_str(f"{records} records, {records / elapsed:,.0f} records/s", refresh=False)
                self.last = now
            return
        if now - self.last < 0.5:
            return
        self.last = now
        text = f"respc: {records} records, {records / elapsed:,.0f} records/s"
        if position and self.total:
            fraction = min(position / self.total, 1.0)
            eta = elapsed * (1 - fraction) / fraction if fraction > 0 else 0
            text += f", {100 * fraction:.0f}%, ETA {_clock(eta)}"
        self.stream.write("\r" + text + "\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.last:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def run_jsonl(parser: RecordParser, in_path: str, out_path: str, *, workers: int = 1,
              batch_size: int = BATCH_SIZE, progress: bool | None = None,
              on_failure: Callable[[int, str], None] | None = None) -> tuple[Stats, float]:
    """Parse a JSONL file into an output JSONL file, streaming, in order.

    Args:
        parser: what to do with each record.
        in_path, out_path: paths, ``-`` for stdin/stdout; ``.gz``/``.zst`` by extension.
        workers: processes (1: this process).
        batch_size: records per batch sent to a worker.
        progress: show progress on stderr (None: when stderr is a terminal).
        on_failure: called with (line number, error) for each failed record in ``"strict"`` mode,
            as soon as its batch is written.

    The output file is written whole (:func:`respc.compiler.files.atomic_output`): it appears, or
    replaces the old one, only when the run ends; an error or an interrupt leaves the old file as it
    was, and the workers' segment files, if any (module docstring), are removed with their folder
    however the run ends (a SIGKILL of the parent leaves them, as it leaves the output's temporary
    file). A record that
    fails, or that cannot be written (:func:`dump_record`), is one error record; the run goes on.

    Returns:
        tuple[Stats, float]: the counts and the wall time in seconds.

    Raises:
        OSError: unreadable input / unwritable output (also a segment a worker could not write);
        MissingExtra: ``.zst`` without zstandard; RuntimeError: a worker process died (killed);
        ValueError: ``out_path`` is ``in_path`` (also through a symlink or a hard link), which
        would replace the input (docs/security.md "Files").
        Interrupted: Ctrl-C. Its ``stats`` count the records done; standard output holds exactly
            those, whole and in order; a file ``out_path`` keeps its old bytes (or stays absent),
            as after any error.
    """
    started = time.perf_counter()
    if out_path != "-" and in_path != "-" and same_file(in_path, out_path):
        raise ValueError(f"cannot write {out_path!r}: it is the input file {in_path!r}")
    if progress is None:
        progress = sys.stderr.isatty()
    compress = _compression(out_path)
    # A plain file is cut into spans (byte ranges of whole lines) that whoever parses them reads, so
    # the parent never touches a record. One worker writing an uncompressed output reads lines as
    # before (less memory; the segmentation only shows in a compressed output, as its members).
    spans = (in_path != "-" and not in_path.endswith((".gz", ".zst")) and os.path.isfile(in_path)
             and (workers > 1 or compress is not None))
    stats = Stats()
    bar = None
    with contextlib.ExitStack() as stack:
        if spans:
            # spans of about batch_size records of 16 kB
            size, position = os.path.getsize(in_path), [0]
            items: Iterable = _spans(in_path, max(4096, batch_size * 16384), position)
            where = lambda: position[0]  # noqa: E731
        else:
            reader, counter, size = open_input(in_path)
            if in_path != "-":
                stack.callback(reader.close)
            items = _batches(reader, batch_size)
            where = lambda: counter.count if counter is not None else None  # noqa: E731
        try:
            sink = _Sink(stack.enter_context(_open_raw(out_path)))
            folder, senders = None, None
            if workers > 1 and out_path != "-" and sink.fd is not None and sys.platform.startswith("linux"):
                # direct: each worker writes its segments into the output file itself (pwrite, the
                # descriptor inherited through fork) at the offset the parent sends it
                pipes = [multiprocessing.get_context("fork").Pipe(duplex=False) for _ in range(workers)]
                senders = [send for _, send in pipes]
                for receive, send in pipes:
                    stack.callback(receive.close)
                    stack.callback(send.close)
                results = _ordered_pool(parser, in_path if spans else None, _work_segment, items, workers,
                                        (None, compress, batch_size, sink.fd), [r for r, _ in pipes])
                stack.callback(results.close)  # stops the pool first
            elif workers > 1:
                folder = stack.enter_context(_segment_folder(out_path))
                results = _ordered_pool(parser, in_path if spans else None, _work_segment, items, workers,
                                        (folder, compress, batch_size))
                stack.callback(results.close)  # stops the pool before the folder is removed
            else:
                results = _parse_here(parser, in_path if spans else None, items, compress, batch_size)
            bar = _Progress(size) if progress else None
            base, wrote, offset = 0, False, 0
            for seq, data, counts, lines, index in results:
                part = _from_counts(counts)
                if spans:
                    _rebase(part, base)
                    base += lines
                with sigint_deferred():  # a segment is written and counted whole, or not at all
                    if senders is not None:
                        if data:
                            senders[index].send((seq, offset))
                            offset += data
                    elif folder is None:
                        sink.write(data)
                    elif data:
                        sink.append(os.path.join(folder, str(seq)), data)
                    stats.add(part)
                if on_failure is not None:
                    for lineno, error in part.failed_lines:
                        on_failure(lineno, error)
                if bar is not None:
                    bar.update(where(), stats.records)
                wrote = wrote or bool(data)
            if compress is not None and not wrote:
                sink.write(_empty_stream(compress))
        except KeyboardInterrupt:
            raise Interrupted(stats) from None
        finally:
            if bar is not None:
                bar.close()
    return stats, time.perf_counter() - started


def _empty_stream(kind: str) -> bytes:
    """A valid compressed stream of nothing (an output with no records is still a .gz/.zst file)."""
    return gzip.compress(b"", compresslevel=6, mtime=0) if kind == "gz" else _zstd().ZstdCompressor(level=3).compress(b"")


def _parse_here(parser: RecordParser, path: str | None, items: Iterable, compress: str | None,
                batch_size: int) -> Iterator[tuple[int, bytes, tuple, int]]:
    """The one-worker path: each work item parsed in this process, ``(seq, output bytes, counts,
    lines)`` as :func:`_work_segment` gives them, with the bytes themselves (same segments, same bytes)."""
    fd = os.open(path, os.O_RDONLY) if path is not None else None
    try:
        for seq, item in enumerate(items):
            if fd is not None:
                offset, length = item
                data, stats, lines = _parse_span(parser, os.pread(fd, length, offset), batch_size)
            else:
                (data, stats), lines = parser.parse_lines(item), 0
            yield seq, _compress(data, compress), _counts(stats), lines, 0
    finally:
        if fd is not None:
            os.close(fd)


@contextlib.contextmanager
def _open_raw(path: str) -> Iterator[Any]:
    """The output as raw bytes (compression is per segment, :func:`_compress`): standard output, or
    a file written whole (:func:`respc.compiler.files.atomic_output`)."""
    if path == "-":
        try:
            yield sys.stdout.buffer
        finally:
            sys.stdout.buffer.flush()
        return
    with atomic_output(path) as raw:
        yield raw


# --- Python API ----------------------------------------------------------------------------------

def _rows(records: Any, keys: Keys) -> Iterator[Any]:
    """Rows of ``records``: an iterable of mappings, a dict of columns, a DataFrame or an Arrow table.

    Columnar inputs are read column by column (only the columns the keys name, the first part of
    each dotted path), never through JSON.
    """
    if hasattr(records, "to_batches") and hasattr(records, "column_names"):  # pyarrow Table
        for batch in records.to_batches():
            yield from _rows(batch, keys)
        return
    if hasattr(records, "column_names") and hasattr(records, "column") and hasattr(records, "num_rows"):
        names = [n for n in _needed(keys) if n in records.column_names]  # pyarrow RecordBatch
        yield from _zip_columns({n: records.column(n).to_pylist() for n in names}, records.num_rows)
        return
    if hasattr(records, "columns") and hasattr(records, "iloc"):  # pandas DataFrame
        names = [n for n in _needed(keys) if n in records.columns]
        yield from _zip_columns({n: records[n].tolist() for n in names}, len(records))
        return
    if isinstance(records, Mapping):  # a dict of columns (a datasets batch)
        names = [n for n in _needed(keys) if n in records]
        # the rows are the batch's, also when no column the keys read is there (the output under
        # another name): one error record per row, never none (a datasets map needs one per row)
        lengths = {len(records[n]) for n in names} or {len(column) for column in records.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns have different lengths: {sorted(lengths)}")
        yield from _zip_columns({n: records[n] for n in names}, lengths.pop() if lengths else 0)
        return
    yield from records


def _needed(keys: Keys) -> list[str]:
    """The top-level column names the keys may read (first part of each alternative), in key order."""
    names: list[str] = []
    for path in (keys.output, keys.prefix, keys.tools, keys.id):
        for alternative in path.split("|"):
            for name in (alternative, alternative.split(".", 1)[0]):
                if name not in names:
                    names.append(name)
    return names


def _zip_columns(columns: dict[str, Any], length: int) -> Iterator[dict]:
    names = list(columns)
    for i in range(length):
        yield {name: _plain_cell(columns[name][i]) for name in names}


def _plain_cell(value: Any) -> Any:
    """A cell as the parser wants it: numpy arrays (pandas list cells) as lists, NaN/NA as None."""
    if value is None or isinstance(value, (str, dict, list)):
        return value
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and not isinstance(value, (int, float)):
        return tolist()
    if isinstance(value, float) and value != value:  # NaN: pandas' missing value
        return None
    return _plain(value)


def _chunks(rows: Iterator[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _work_records(seq: int, batch: list[Any]) -> list[dict]:
    assert _WORKER is not None
    return [_WORKER.parse_record(row)[0] for row in batch]


def _keys(keys: Keys | Mapping[str, str] | None, preset: str | None) -> Keys:
    base = Keys()
    if preset is not None:
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; presets: {', '.join(PRESETS)}")
        base = PRESETS[preset][0]
    if keys is None:
        return base
    if isinstance(keys, Keys):
        return keys
    unknown = sorted(set(keys) - {"output", "prefix", "tools", "id"})
    if unknown:
        raise ValueError(f"unknown key name(s) {', '.join(unknown)}; expected output, prefix, tools, id")
    return replace(base, **dict(keys))


def make_parser(template: Any, *, keys: Keys | Mapping[str, str] | None = None, preset: str | None = None,
                prefix: str | None = None, tools: list | None = None, errors: str = "recover") -> RecordParser:
    """A :class:`RecordParser` for ``template`` (compiled here, once). Arguments as :func:`parse_batch`."""
    if errors not in ERRORS_MODES:
        raise ValueError(f"errors must be one of {', '.join(map(repr, ERRORS_MODES))}, not {errors!r}")
    return RecordParser(module_source(template), _keys(keys, preset), prefix, tools, errors)


def parse_batch(records: Any, template: Any, *, keys: Keys | Mapping[str, str] | None = None,
                preset: str | None = None, prefix: str | None = None, tools: list | None = None,
                errors: str = "recover", workers: int = 1, batch_size: int = BATCH_SIZE) -> Iterator[dict]:
    """Parse many model outputs; yields one output record per input record, in order.

    Args:
        records: an iterable of records (mappings), a dict of columns (``{"output": [...], ...}``,
            e.g. a ``datasets`` batch), a pandas DataFrame, or a pyarrow Table / RecordBatch.
            Columnar inputs are read column by column, never through JSON.
        template: anything :func:`respc.compile_template` accepts (compiled once, here).
        keys: where the pieces are (a :class:`Keys`, or a dict overriding some of
            ``output``/``prefix``/``tools``/``id`` on top of ``preset``).
        preset: a name of :data:`PRESETS` (``vllm``, ``sglang``, ``datasets``, ``openai-batch``).
        prefix: the default prefix for records without one (``""`` opts out); None: such records fail.
        tools: the default tool list for records without one.
        errors: ``"recover"`` (default) or ``"strict"``; a failed record is
            ``{"id": ..., "message": None, "diagnostics": [{"kind": "error", "message": ...}]}``
            either way (see the module docstring).
        workers: processes (1: this process; more: a pool, each worker builds the parser once).
        batch_size: records per batch sent to a worker.

    Returns:
        Iterator[dict]: ``{"id", "message", "diagnostics"}`` per record. Lazy: records are read as
        the iterator is consumed (at most ``2 * workers`` batches ahead).

    Raises:
        TemplateError: bad template (raised at once, before the first record); ValueError: bad
        ``errors``/``preset``/``keys``.
    """
    parser = make_parser(template, keys=keys, preset=preset, prefix=prefix, tools=tools, errors=errors)
    return _parse_rows(parser, records, workers, batch_size)


def _parse_rows(parser: RecordParser, records: Any, workers: int, batch_size: int) -> Iterator[dict]:
    rows = _rows(records, parser.keys)
    if workers <= 1:
        for row in rows:
            yield parser.parse_record(row)[0]
        return
    for records in _ordered_pool(parser, None, _work_records, _chunks(rows, batch_size), workers):
        yield from records


class ColumnsMapper:
    """A picklable ``batch -> batch`` function for ``datasets.Dataset.map(batched=True)``.

    Call it with a dict of columns; it returns ``{"id": [...], "message": [...], "diagnostics": [...]}``
    (with ``as_json=True``: ``message`` and ``diagnostics`` as JSON text, for Arrow columns whose
    messages differ in shape, e.g. tool-call arguments of different types). The parser is built on
    the first call in each process.
    """

    def __init__(self, parser: RecordParser, as_json: bool = False) -> None:
        self.parser = parser
        self.as_json = as_json

    def __call__(self, batch: Any) -> dict[str, list]:
        ids, messages, diagnostics = [], [], []
        for row in _rows(batch, self.parser.keys):
            record = self.parser.parse_record(row)[0]
            ids.append(record["id"])
            if self.as_json:
                messages.append(json.dumps(record["message"], ensure_ascii=False))
                diagnostics.append(json.dumps(record["diagnostics"], ensure_ascii=False))
            else:
                messages.append(record["message"])
                diagnostics.append(record["diagnostics"])
        return {"id": ids, "message": messages, "diagnostics": diagnostics}


def columns_mapper(template: Any, *, as_json: bool = False, **options: Any) -> ColumnsMapper:
    """A function for ``Dataset.map(fn, batched=True)``: a dict of columns in, a dict of columns out.

    Args:
        template: as for :func:`parse_batch` (compiled once, here).
        as_json: give ``message``/``diagnostics`` as JSON text instead of nested values.
        **options: ``keys``, ``preset``, ``prefix``, ``tools``, ``errors`` as for :func:`parse_batch`.

    Example::

        ds = ds.map(respc.columns_mapper("qwen3", prefix=""), batched=True)
    """
    return ColumnsMapper(make_parser(template, **options), as_json)
