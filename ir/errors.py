"""The one error type for failures a user can cause, naming where they happened."""

from __future__ import annotations

import re
import signal
from enum import IntEnum
from typing import Dict, Optional, Tuple, Type


class ExitStatus(IntEnum):
    """The one table of exit statuses of every tf2ir command (the CLI's --help prints it)."""

    OK = 0             # success
    FAILED = 1         # conversion failed (bad file, plugin failure, invalid IR)
    USAGE = 2          # usage error (bad option or argument)
    UNSUPPORTED = 3    # unsupported op types: the model has op types no plugin maps
    MISMATCH = 4       # verification mismatch: outputs differ from TensorFlow
    SIGHUP = 129       # hung up (128 + the signal's number)
    SIGINT = 130       # interrupted (Ctrl-C)
    SIGTERM = 143      # terminated


EXIT_STATUS_TEXT = {
    ExitStatus.OK: "success",
    ExitStatus.FAILED: "conversion failed (bad file, plugin failure or a plugin that cannot "
                       "load, invalid IR)",
    ExitStatus.USAGE: "usage error (bad option or argument)",
    ExitStatus.UNSUPPORTED: "unsupported op types: the model has op types no plugin maps",
    ExitStatus.MISMATCH: "verification mismatch (verify, convert --verify): outputs differ "
                         "from TensorFlow",
    ExitStatus.SIGINT: "interrupted (SIGINT); 129 and 143 for SIGHUP and SIGTERM",
}


class ConversionError(Exception):
    """A user-caused failure: bad file, unknown op, failing plugin, invalid IR, bad option.

    It carries the model, node, op type and plugin involved so the CLI can print one
    line that names the place. Constructed with an `exit_code` that has a subclass of its own
    (USAGE, UNSUPPORTED, MISMATCH), it is an instance of that subclass (`UsageError`,
    `UnsupportedOpsError`, `VerificationMismatch`), so `except tf2ir.UsageError` catches every
    usage error however it was raised; it is a ConversionError all the same.
    """

    status: int = ExitStatus.FAILED   # the exit status of the class (a subclass's own)

    def __new__(cls, message: str = "", *args: object, exit_code: Optional[int] = None,
                **where: object) -> "ConversionError":
        if cls is ConversionError and exit_code is not None:
            cls = _BY_STATUS.get(int(exit_code), ConversionError)
        return super().__new__(cls, message)

    def __init__(self, message: str, *, model: str | None = None, node: str | None = None,
                 op_type: str | None = None, plugin: str | None = None,
                 exit_code: Optional[int] = None):
        super().__init__(message)
        self.message = message
        self.model = model
        self.node = node
        self.op_type = op_type
        self.plugin = plugin
        self.exit_code = int(exit_code if exit_code is not None else type(self).status)

    def where(self) -> str:
        parts = []
        if self.model:
            parts.append(f"model {escape(self.model)}")
        if self.node:
            parts.append(f"node '{escape(self.node)}'")
        if self.op_type:
            parts.append(f"op {escape(self.op_type)}")
        if self.plugin:
            parts.append(f"plugin {escape(self.plugin)}")
        return ", ".join(parts)

    def __str__(self) -> str:
        """One line: names and message with their control characters escaped."""
        where = self.where()
        return f"{where}: {escape(self.message)}" if where else escape(self.message)

    def located(self, **where) -> "ConversionError":
        """Fill in the places this error does not name yet (outer layers know the model)."""
        for key, value in where.items():
            if getattr(self, key) is None and value is not None:
                setattr(self, key, value)
        return self


class UsageError(ConversionError):
    """A bad option or argument (exit status 2)."""
    status = ExitStatus.USAGE


class UnsupportedOpsError(ConversionError):
    """The model has op types no plugin maps (exit status 3)."""
    status = ExitStatus.UNSUPPORTED


class VerificationMismatch(ConversionError):
    """The converted model's outputs differ from TensorFlow's (exit status 4)."""
    status = ExitStatus.MISMATCH


# ConversionError(..., exit_code=S) is an instance of the subclass of status S, if any.
_BY_STATUS: Dict[int, Type[ConversionError]] = {
    int(c.status): c for c in (UsageError, UnsupportedOpsError, VerificationMismatch)}


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escape(text: object) -> str:
    """`text` with its control characters (newline, tab, escape, line separators, ...)
    written as Python escapes (`\\n`, `\\t`, `\\x1b`), so that a node name, op type or
    plugin name never splits a one-line error; any other text is unchanged."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


# Raised inside plugin code, these would end tf2ir with the plugin's exit code (3 reads as
# "unsupported ops", 0 as success); the places that call plugin code turn them into a
# plugin failure with `plugin_exit`.
PLUGIN_EXITS = (SystemExit, KeyboardInterrupt)


def plugin_exit(exc: BaseException, what: str, **where) -> ConversionError:
    """The ConversionError for a SystemExit or KeyboardInterrupt that `what` (e.g. "plugin
    my_ops") raised. A KeyboardInterrupt is re-raised while SIGINT has Python's default
    handler: tf2ir is then used as a library and it may be a real Ctrl-C (the command line
    installs its own handler, which never raises KeyboardInterrupt)."""
    if isinstance(exc, KeyboardInterrupt) and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        raise exc
    how = (f"called sys.exit({exc.code!r})" if isinstance(exc, SystemExit)
           else "raised KeyboardInterrupt")
    return ConversionError(f"{what} {how}; plugin code must raise an exception, not end tf2ir",
                           **where)


# What tf2ir's own (built-in) plugins raise for a node they cannot handle: a failure of the
# node. Anything else they raise is a bug in tf2ir (an internal error, traceback with -v).
NODE_FAILURES: Tuple[Type[Exception], ...] = (ValueError, TypeError, KeyError, IndexError,
                                              ArithmeticError, NotImplementedError)


class plugin_code:  # noqa: N801 (a context manager, named as the function it was)
    """Run plugin code (a parse function, inference, lowering, fold function or kernel, a
    hook): whatever it raises becomes one ConversionError naming the plugin and `where`
    (model, node, op_type), `what` (e.g. "its ONNX lowering") saying which code failed.
    SystemExit too, and KeyboardInterrupt as `plugin_exit` says; other BaseExceptions (a
    signal's Interrupted, GeneratorExit) pass. For a `builtin` plugin only NODE_FAILURES are
    the node's failure, left for outer layers to blame on the plugin that mapped the node
    (a built-in op fails on what a mapping gave it); any other exception is tf2ir's bug and
    passes unchanged (an internal error). A class rather than a generator: it wraps every
    node's parse function and inference, and entering it must cost next to nothing."""

    __slots__ = ("what", "plugin", "builtin", "where")

    def __init__(self, what: str, plugin: Optional[str], builtin: bool = False, **where):
        self.what, self.builtin, self.where = what, builtin, where
        self.plugin = None if builtin else plugin or None

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, exc, _traceback) -> None:   # None: an exception passes on
        if kind is None:
            return
        plugin, where = self.plugin, self.where
        if issubclass(kind, ConversionError):
            raise exc.located(plugin=plugin, **where)
        if issubclass(kind, Exception):
            if self.builtin and not isinstance(exc, NODE_FAILURES):
                return   # tf2ir's own bug: the exception passes unchanged
            raise ConversionError(f"{self.what} failed: {kind.__name__}: {exc}", plugin=plugin,
                                  **where) from exc
        if issubclass(kind, PLUGIN_EXITS):
            raise plugin_exit(exc, self.what, plugin=plugin, **where) from exc
