"""The IR graph's interface as the user asks for it (ExportOptions, ir/export.py): inputs and
outputs channels-first, and renamed inputs and outputs. Applied to the verified IR graph
before the passes, so the layout passes cancel the transposes this adds."""

from __future__ import annotations

from typing import Optional

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.export import ExportOptions
from tf2ir.ir.graph import Graph


def apply_io_options(graph: Graph, export: ExportOptions, model: Optional[str] = None) -> None:
    """Rewrite `graph`'s interface in place as `export` asks (nothing when it asks nothing)."""
    if not (export.inputs_as_nchw or export.outputs_as_nchw or export.rename_inputs
            or export.rename_outputs):
        return
    raise ConversionError("channels-first and renamed inputs/outputs are not implemented yet",
                          model=model, exit_code=ExitStatus.USAGE)
