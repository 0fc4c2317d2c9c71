"""Half precision (ExportOptions.precision / weights / io_precision, ir/export.py): the ONNX
graph after its passes, with weights (and compute) in float16."""

from __future__ import annotations

from typing import Optional

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.export import ExportOptions


def apply_precision(ctx, export: ExportOptions, model: Optional[str] = None) -> None:
    """Rewrite the lowered ONNX graph of `ctx` (a LowerContext after the passes) in place."""
    if export.precision == "fp32" and export.weights == "fp32":
        return
    raise ConversionError("half precision is not implemented yet", model=model,
                          exit_code=ExitStatus.USAGE)
