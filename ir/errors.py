"""The one error type for failures a user can cause, naming where they happened."""

from __future__ import annotations


class ConversionError(Exception):
    """A user-caused failure: bad file, unknown op, failing plugin, invalid IR, bad option.

    It carries the model, node, op type and plugin involved so the CLI can print one
    line that names the place.
    """

    def __init__(self, message: str, *, model: str | None = None, node: str | None = None,
                 op_type: str | None = None, plugin: str | None = None,
                 exit_code: int = 1):
        super().__init__(message)
        self.message = message
        self.model = model
        self.node = node
        self.op_type = op_type
        self.plugin = plugin
        self.exit_code = exit_code

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
