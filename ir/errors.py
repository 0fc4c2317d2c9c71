"""The one error type for failures a user can cause, naming where they happened."""

from __future__ import annotations

from enum import IntEnum


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
    ExitStatus.FAILED: "conversion failed (bad file, plugin failure, invalid IR)",
    ExitStatus.USAGE: "usage error (bad option or argument)",
    ExitStatus.UNSUPPORTED: "unsupported op types: the model has op types no plugin maps",
    ExitStatus.MISMATCH: "verification mismatch (verify, convert --verify): outputs differ "
                         "from TensorFlow",
    ExitStatus.SIGINT: "interrupted (SIGINT); 129 and 143 for SIGHUP and SIGTERM",
}


class ConversionError(Exception):
    """A user-caused failure: bad file, unknown op, failing plugin, invalid IR, bad option.

    It carries the model, node, op type and plugin involved so the CLI can print one
    line that names the place.
    """

    def __init__(self, message: str, *, model: str | None = None, node: str | None = None,
                 op_type: str | None = None, plugin: str | None = None,
                 exit_code: int = ExitStatus.FAILED):
        super().__init__(message)
        self.message = message
        self.model = model
        self.node = node
        self.op_type = op_type
        self.plugin = plugin
        self.exit_code = int(exit_code)

    def where(self) -> str:
        parts = []
        if self.model:
            parts.append(f"model {self.model}")
        if self.node:
            parts.append(f"node '{self.node}'")
        if self.op_type:
            parts.append(f"op {self.op_type}")
        if self.plugin:
            parts.append(f"plugin {self.plugin}")
        return ", ".join(parts)

    def __str__(self) -> str:
        where = self.where()
        return f"{where}: {self.message}" if where else self.message

    def located(self, **where) -> "ConversionError":
        """Fill in the places this error does not name yet (outer layers know the model)."""
        for key, value in where.items():
            if getattr(self, key) is None and value is not None:
                setattr(self, key, value)
        return self
