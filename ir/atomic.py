"""Never lose a file (DESIGN decision 10): every output is written to a unique temporary file
beside its target and renamed over it only when complete and checked.

`check_output_path` refuses, before any work, an output that is one of the inputs or that
exists and is not a regular file (a device such as /dev/full, a directory, a FIFO).
`atomic_output(path)` yields the temporary path to write; on success it is renamed over
`path` (one atomic `os.replace`), on any failure it is removed. The temporaries in flight
are registered so that a signal handler can remove them (`remove_temporaries`). Several
files that belong together (an IR and its weights, a model and its external data) are
written with `atomic_outputs`, renamed only when all are complete.
"""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from contextlib import contextmanager
from typing import Iterator, List, Sequence, Set

from tf2ir.ir.errors import ConversionError, ExitStatus

_IN_FLIGHT: Set[str] = set()      # temporaries being written (removed on a signal)
_LOCK = threading.Lock()


def check_output_path(path: str, inputs: Sequence[str] = (), what: str = "output") -> None:
    """Refuse `path` as an output when it is the same file as an input (after following
    links) or exists and is not a regular file: a usage error, before any work."""
    real = os.path.realpath(path)
    for source in inputs:
        if not source:
            continue
        same = os.path.realpath(source) == real
        if not same and os.path.exists(path) and os.path.exists(source):
            try:
                same = os.path.samefile(path, source)
            except OSError:
                same = False
        if same:
            raise ConversionError(f"{what} {path} is the input {source}: refusing to overwrite "
                                  "it; choose another output path", exit_code=ExitStatus.USAGE)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise ConversionError(f"{what} {path}: the directory {parent} does not exist",
                                  exit_code=ExitStatus.USAGE) from None
        if not os.access(parent, os.W_OK | os.X_OK):
            raise ConversionError(f"{what} {path}: the directory {parent} is not writable",
                                  exit_code=ExitStatus.USAGE) from None
        return
    except OSError as exc:
        raise ConversionError(f"{what} {path}: {exc.strerror}", exit_code=ExitStatus.USAGE) from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise ConversionError(f"{what} {path} is {kind}: give a file path to write",
                              exit_code=ExitStatus.USAGE)


def _temporary(path: str) -> str:
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                                   dir=directory)
    except OSError as exc:   # a read-only or missing directory: name the output, not the temp
        raise ConversionError(f"cannot write {path}: {exc.strerror} (in {directory})") from None
    os.close(fd)
    with _LOCK:
        _IN_FLIGHT.add(tmp)
    return tmp


def _discard(tmp: str) -> None:
    with _LOCK:
        _IN_FLIGHT.discard(tmp)
    try:
        os.remove(tmp)
    except FileNotFoundError:
        pass


@contextmanager
def atomic_outputs(paths: Sequence[str]) -> Iterator[List[str]]:
    """Temporary paths for `paths`, renamed over them (in order) when the block completes;
    removed when it raises (the targets are then as they were)."""
    temporaries: List[str] = []
    try:
        for path in paths:
            temporaries.append(_temporary(path))
        yield list(temporaries)
        for tmp, path in zip(temporaries, paths):
            mode = 0o666 & ~_umask()
            os.chmod(tmp, mode)           # mkstemp makes 0600; a plain open would give this
            os.replace(tmp, path)
            with _LOCK:
                _IN_FLIGHT.discard(tmp)
    finally:
        for tmp in temporaries:
            if tmp in _IN_FLIGHT:
                _discard(tmp)


@contextmanager
def atomic_output(path: str) -> Iterator[str]:
    """One temporary path for `path` (see `atomic_outputs`)."""
    with atomic_outputs([path]) as (tmp,):
        yield tmp


@contextmanager
def scratch_file(beside: str) -> Iterator[str]:
    """A temporary path beside `beside` for a file that is never kept (e.g. a variant of an
    output written only to be checked): removed when the block ends, and on a signal."""
    tmp = _temporary(beside)
    try:
        yield tmp
    finally:
        _discard(tmp)


def remove_temporaries() -> None:
    """Remove every temporary still being written (for signal handlers)."""
    with _LOCK:
        pending = list(_IN_FLIGHT)
        _IN_FLIGHT.clear()
    for tmp in pending:
        try:
            os.remove(tmp)
        except OSError:
            pass


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
