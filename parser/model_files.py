"""Opening the files a model names, as an untrusted model may name them (DESIGN decision 12).

A SavedModel names files inside its directory: `saved_model.pb`, the checkpoint's
`variables.index` and data shards, its assets. Each is resolved (symlinks included) and
refused when it lies outside the directory; each is opened without blocking and refused
unless it is a regular file (a FIFO would block the read forever, a device such as
/dev/zero never end); whole-file reads are bounded by the file's size and a limit.
"""

from __future__ import annotations

import os
import stat
from typing import Optional

from tf2ir.ir.errors import ConversionError


def within(path: str, root: str) -> bool:
    """Whether `path`, resolved (symlinks followed), lies inside directory `root` (resolved)."""
    try:
        real_root, real = os.path.realpath(root), os.path.realpath(path)
    except (ValueError, UnicodeError):   # a NUL or a lone surrogate: no file's name
        return False
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def check_within(path: str, root: Optional[str], what: str, model: Optional[str]) -> None:
    """Refuse `path` (a `what` of the model) when it resolves outside `root`."""
    if root is not None and not within(path, root):
        if not within(path, path):
            raise ConversionError(f"{what} {path!r} is not a file name; refused", model=model)
        raise ConversionError(f"{what} {path} leaves the SavedModel directory (it resolves to "
                              f"{os.path.realpath(path)}); refused", model=model)


def open_regular(path: str, what: str, model: Optional[str], root: Optional[str] = None) -> int:
    """A read-only file descriptor of `path` (a `what` of the model), opened without blocking;
    refused when it leaves `root` or is not a regular file."""
    check_within(path, root, what, model)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ConversionError(f"cannot read {what} {path}: {exc.strerror}", model=model) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConversionError(f"{what} {path} is not a regular file (a FIFO, socket or "
                              "device); refused", model=model)
    return fd


def read_regular(path: str, what: str, model: Optional[str], limit: int,
                 root: Optional[str] = None) -> bytes:
    """The bytes of regular file `path` (see `open_regular`): at most its size when opened,
    and refused when that is over `limit` bytes."""
    fd = open_regular(path, what, model, root)
    with open(fd, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise ConversionError(f"{what} {path} has {size} bytes, more than the {limit} "
                                  f"a {what} may have", model=model)
        try:
            chunks, left = [], size
            while left > 0:
                chunk = f.read(left)
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
        except OSError as exc:
            raise ConversionError(f"cannot read {what} {path}: {exc.strerror}",
                                  model=model) from None
    return b"".join(chunks)


# A TFLite flatbuffer's file identifier, its bytes 4..8.
TFLITE_IDENTIFIER = b"TFL3"


def is_tflite_file(path: str) -> bool:
    """Whether `path` names a TFLite model: by its extension, or a regular file whose
    flatbuffer identifier (bytes 4..8) is TFL3 (here, not in parser/tflite_model.py: every
    model file is asked, and a .pb's conversion need not import the TFLite reader)."""
    if path.lower().endswith(".tflite"):
        return True
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):   # a FIFO would block the read
            return False
        with open(path, "rb") as f:
            head = f.read(8)
    except (OSError, ValueError):
        return False
    return head[4:8] == TFLITE_IDENTIFIER

