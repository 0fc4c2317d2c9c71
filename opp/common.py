"""Shared inference and lowering helpers for the op families."""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc
from tf2ir.ir.tensor import Shape

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
NHWC_TO_NCHW = [0, 3, 1, 2]
NCHW_TO_NHWC = [0, 2, 3, 1]


def broadcast_shapes(*shapes: Shape) -> Shape:
    """numpy broadcasting over shapes with unknown dims (None) and unknown ranks."""
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ConversionError(f"shapes {[list(s) for s in shapes]} do not broadcast")
        if known:
            out.append(known.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def same_as_input(node, index: int = 0) -> List[TensorDesc]:
    desc = node.inputs[index].desc
    return [desc.copy()]


def normalize_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ConversionError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def const_ints(node, index: int) -> Optional[List[int]]:
    """The constant integer input `index` as a list, or None if it is not constant."""
    value = node.inputs[index].const_value if index < len(node.inputs) and node.inputs[index] is not None else None
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def int64_input(ctx, index: int) -> str:
    """The node's input `index` as an int64 tensor (folded when constant)."""
    value = ctx.const_input(index)
    if value is not None:
        return ctx.constant(np.asarray(value, dtype=np.int64), "i64")
    if ctx.input_desc(index).dtype == "int64":
        return ctx.input(index)
    return ctx.emit("Cast", [ctx.input(index)], to=7)[0]


def cast_from_int64(ctx, name: str, dtype: str, output: Optional[str] = None) -> str:
    """Cast an int64 ONNX tensor to `dtype` (writing `output` when given)."""
    from tf2ir.ir.onnx.writer import ONNX_DTYPES
    if dtype == "int64":
        if output:
            ctx.emit("Identity", [name], [output])
            return output
        return name
    return ctx.emit("Cast", [name], [output] if output else 1, to=ONNX_DTYPES[dtype])[0]


def spatial_attrs(values: Sequence[int], data_format: str) -> List[int]:
    """The spatial entries of a 4-/5-element TF attribute laid out in `data_format`."""
    return list(values[1:-1]) if data_format.endswith("C") else list(values[2:])


def emit_channels_first(ctx, data_format: str, op_type: str, inputs: List[str],
                        **attrs) -> None:
    """Emit ONNX `op_type` (channels-first) for the node's output 0. For NHWC/NDHWC data
    the first input is transposed to channels-first and the result transposed back."""
    if not data_format.endswith("C"):
        ctx.emit(op_type, inputs, [ctx.output(0)], **attrs)
        return
    rank = len(data_format)
    to_first = [0, rank - 1] + list(range(1, rank - 1))
    to_last = [0] + list(range(2, rank)) + [1]
    x = ctx.emit("Transpose", [inputs[0]], perm=to_first)[0]
    y = ctx.emit(op_type, [x] + list(inputs[1:]), **attrs)[0]
    ctx.emit("Transpose", [y], [ctx.output(0)], perm=to_last)


def window_output(size: Optional[int], kernel: int, stride: int, dilation: int,
                  padding: str, pads=(0, 0)) -> Optional[int]:
    if size is None:
        return None
    effective = (kernel - 1) * dilation + 1
    if padding == "SAME":
        return -(-size // stride)
    if padding == "VALID":
        return max((size - effective) // stride + 1, 0)
    return (size + pads[0] + pads[1] - effective) // stride + 1
