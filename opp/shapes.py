"""Shape helpers shared by the op families: broadcasting, axes, constant integer inputs,
window sizes, and the inference functions many prototypes register as they are."""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc
from tf2ir.ir.tensor import Shape

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


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


def normalize_axis(axis: int, rank: Optional[int]) -> int:
    """`axis` in 0..rank-1 (0 for a scalar). With the rank unknown (None) a non-negative axis
    stands as given and a negative one is a ConversionError: it counts from an end no one
    knows (a lowering whose ONNX op counts from the end itself uses `onnx_axis`)."""
    if rank is None:
        if axis < 0:
            raise ConversionError(f"axis {axis} counts from the end, and the input rank is "
                                  f"unknown: it must be known")
        return axis
    if not -rank <= axis < max(rank, 1):
        raise ConversionError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def onnx_axis(axis: int, rank: Optional[int]) -> int:
    """`axis` for an ONNX op that counts a negative axis from the end of its own run-time
    rank (Gather, Concat, Unsqueeze, Squeeze, Split, ...): normalized where `rank` is known,
    as given where it is not."""
    return axis if rank is None else normalize_axis(axis, rank)


# -- constant integer inputs ----------------------------------------------------------------
def const_ints(node, index: int) -> Optional[List[int]]:
    """The constant integer input `index` as a list, or None if it is not constant."""
    value = node.inputs[index].const_value if index < len(node.inputs) and node.inputs[index] is not None else None
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def partial_ints(value, count: int) -> List[Optional[int]]:
    """The entries of a 1-D integer tensor that are known at conversion time (None for the
    others): a constant, or a Pack of scalars some of which are constants (what Keras builds
    for a transposed convolution's output shape with an unknown batch size)."""
    if value is None:
        return [None] * count
    if value.const_value is not None:
        return [int(v) for v in np.asarray(value.const_value).reshape(-1)]
    producer = value.producer
    if producer is not None and producer.op_type == "Pack" and producer.attrs.get("axis", 0) == 0 \
            and len(producer.inputs) == count:
        known = [p.const_value for p in producer.inputs]
        return [None if v is None or np.asarray(v).size != 1 else int(np.asarray(v).reshape(-1)[0])
                for v in known]
    return [None] * count


def scalar_int(array) -> int:
    """The first (only) entry of an integer array, as an int."""
    return int(np.asarray(array).reshape(-1)[0])


def window_output(size: Optional[int], kernel: Optional[int], stride: int, dilation: int,
                  padding: str, pads=(0, 0)) -> Optional[int]:
    """The output size of a window op along one spatial dim; None when it depends on an
    unknown size or kernel (SAME padding needs only the size: ceil(size / stride))."""
    if size is None:
        return None
    if padding == "SAME":
        return -(-size // stride)
    if kernel is None:
        return None
    effective = (kernel - 1) * dilation + 1
    if padding == "VALID":
        return max((size - effective) // stride + 1, 0)
    return (size + pads[0] + pads[1] - effective) // stride + 1


# -- inference --------------------------------------------------------------------------------
def same_as_input(node, index: int = 0) -> List[TensorDesc]:
    desc = node.inputs[index].desc
    return [desc.copy()]


def unknown_desc(desc_or_rank, dtype: str) -> TensorDesc:
    """A desc of `dtype` whose dims are all unknown: of the rank of `desc_or_rank` (a desc or
    a rank; None: unknown rank)."""
    rank = desc_or_rank if isinstance(desc_or_rank, int) or desc_or_rank is None else desc_or_rank.rank
    return TensorDesc(dtype, None if rank is None else (None,) * rank)


def infer_from_shape_input(node, index: int, dtype: str) -> List[TensorDesc]:
    """The output desc of an op whose output shape is its input `index` (a 1-D shape tensor)."""
    dims = const_ints(node, index)
    if dims is not None:
        return [TensorDesc(dtype, tuple(dims))]
    shape = node.inputs[index].desc.shape
    return [unknown_desc(shape[0] if shape else None, dtype)]


def infer_broadcast(node, operands: Sequence[int] = (0, 1), dtype: str = None) -> List[TensorDesc]:
    """Operands of one dtype broadcast numpy-style; the output has `dtype` (default: theirs)
    and the format of an operand of the output's rank."""
    descs = [node.inputs[i].desc for i in operands]
    for desc in descs[1:]:
        if desc.dtype != descs[0].dtype:
            raise ConversionError(f"operand dtypes differ: {descs[0].dtype} and {desc.dtype}")
    shape = broadcast_shapes(*[d.shape for d in descs])
    full = [d for d in descs if shape is not None and d.rank == len(shape)]
    fmt, origin = (full[0].format, full[0].origin_format) if full else ("ND", "ND")
    return [TensorDesc(dtype or descs[0].dtype, shape, fmt, origin)]


def infer_predicate(node) -> List[TensorDesc]:
    """A bool output with input 0's shape and format."""
    desc = node.inputs[0].desc
    return [TensorDesc("bool", desc.shape, desc.format, desc.origin_format)]
