"""Writing output files whole, and never over an input (docs/security.md "Files").

Every option of the CLI that writes a file (``compile -o``, ``graph -o``, ``parse --html``,
``parse --jsonl -o``) and :func:`respc.compiler.batch.run_jsonl` write through
:func:`atomic_output`:

* the bytes go to a new temporary file in the target's folder, created by
  :func:`tempfile.mkstemp` (a random name, ``O_CREAT | O_EXCL``: a file or symlink already there under
  any name is never opened, followed or clobbered);
* when the writer finishes, the file is flushed to disk (``fsync``), given the mode of the file it
  replaces (a new file gets ``0o666`` less the umask, as :func:`open` would give it), and renamed over
  the target with :func:`os.replace`, so a reader, a crash or an interrupt never sees half a file:
  the target holds either its old bytes or all the new ones;
* on any exception (``KeyboardInterrupt`` included) the temporary file is removed and the target is
  left as it was;
* a symlink at the target is followed: its target is replaced, the link stays. A hard link is
  broken (the other names keep the old bytes), as with any rename.

:func:`same_file` tells whether an output path names an input file (same path, a symlink, a hard
link: ``st_dev``/``st_ino``); the CLI refuses such an output before reading anything.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import tempfile
import threading
from pathlib import Path
from typing import IO, Iterator

__all__ = ["atomic_output", "write_atomic", "same_file", "new_file_mode"]

#: the suffix of every temporary file (the middle of its name is random)
TMP_SUFFIX = ".respc-tmp"


def new_file_mode() -> int:
    """The permission bits :func:`open` gives a new file: ``0o666`` less this process's umask.

    Reads the umask by setting it and putting it back (there is no other portable way); the CLI
    is single-threaded at this point.
    """
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """A binary file to write ``path``'s new content into; ``path`` is replaced when the block ends.

    Args:
        path: the file to write. A symlink is followed (its target is written, the link kept); its
            folder must exist.

    Yields:
        IO[bytes]: the open temporary file (buffered). Do not close it; wrappers (gzip, zstd) must
        be closed without closing it (``closefd=False`` or ``fileobj=``).

    Raises:
        OSError: ``path`` exists and is not a regular file (``errno.EINVAL``: a device such as
            ``/dev/null``, a FIFO, a socket or a folder is never replaced); the folder cannot hold
            a new file, the disk is full, the rename fails; the target is then left as it was and no
            temporary file remains.
    """
    target = Path(os.path.realpath(path))
    try:
        status = os.stat(target)
    except FileNotFoundError:
        mode = new_file_mode()
    else:
        if not stat.S_ISREG(status.st_mode):
            # a device (/dev/null), FIFO, socket or folder is never replaced by a file, whoever
            # calls (the CLI refuses these first, with its own message; this holds for the API too)
            raise OSError(errno.EINVAL, "not a regular file: respc replaces only regular files", str(path))
        mode = stat.S_IMODE(status.st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=TMP_SUFFIX, dir=target.parent)
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Replace ``path`` with ``data`` through :func:`atomic_output` (same rules and errors)."""
    with atomic_output(path) as handle:
        handle.write(data)


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether ``a`` and ``b`` name the same existing file (also through symlinks and hard links).

    False when either does not exist or cannot be looked at.
    """
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) back while the block runs; it is delivered when the block ends.

    A write to a pipe can complete and still raise ``KeyboardInterrupt`` on its way back, so a count
    kept beside it could say one batch less than was written; inside this block the two stay
    together. Where signals cannot be masked (not POSIX, or not the main thread) the block runs
    as it is.
    """
    mask = getattr(signal, "pthread_sigmask", None)
    if mask is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = mask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        mask(signal.SIG_SETMASK, old)
