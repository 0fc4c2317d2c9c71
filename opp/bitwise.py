"""Bitwise ops on integers, elementwise: BitwiseAnd, BitwiseOr, BitwiseXor (numpy broadcasting),
Invert, and the shifts LeftShift and RightShift."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import OpSet
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import INT_TYPES, numpy_dtype
from tf2ir.opp.common import declare_binary, declare_unary

OPS = OpSet("tf2ir.opp.bitwise")

for _op_type, (_onnx_op, _np_fn) in {"BitwiseAnd": ("BitwiseAnd", np.bitwise_and),
                                     "BitwiseOr": ("BitwiseOr", np.bitwise_or),
                                     "BitwiseXor": ("BitwiseXor", np.bitwise_xor)}.items():
    declare_binary(OPS, _op_type, f"{_onnx_op} of integers, broadcast",
                   lambda o, x, y, dtype, _op=_onnx_op: getattr(o, _op)(x, y, out=o.out),
                   INT_TYPES, INT_TYPES, fold=_np_fn)
declare_unary(OPS, "Invert", "bitwise not of integers", lambda o, x, dtype: o.BitwiseNot(x, out=o.out),
              INT_TYPES, INT_TYPES, fold=np.invert)


def _shift(direction: str):
    """TF shifts clamp the shift to [0, bits - 1]; a signed x shifts its bits as unsigned to
    the left, and arithmetically to the right (the complement of a negative x shifts in zeros).
    ONNX BitShift takes unsigned integers only."""
    def body(o, x, y, dtype):
        bits = numpy_dtype(dtype).itemsize * 8
        unsigned = dtype if dtype.startswith("u") else "u" + dtype
        to_unsigned, to_dtype = ONNX_DTYPES[unsigned], ONNX_DTYPES[dtype]
        shift = o.Max(o.Cast(y, to=ONNX_DTYPES["int64"]), o.c(0, "int64"))
        shift = o.Cast(o.Min(shift, o.c(bits - 1, "int64")), to=to_unsigned)
        if dtype == unsigned:
            return o.BitShift(x, shift, direction=direction, out=o.out)
        if direction == "LEFT":
            return o.Cast(o.BitShift(o.Cast(x, to=to_unsigned), shift, direction="LEFT"),
                          to=to_dtype, out=o.out)
        mask = o.Neg(o.Cast(o.Less(x, o.c(0)), to=to_dtype))        # -1 where x < 0, else 0
        flipped = o.Cast(o.BitwiseXor(x, mask), to=to_unsigned)
        shifted = o.BitShift(flipped, shift, direction="RIGHT")
        return o.BitwiseXor(o.Cast(shifted, to=to_dtype), mask, out=o.out)

    def fold(x, y):
        bits = x.dtype.itemsize * 8
        y = np.clip(np.asarray(y, np.int64), 0, bits - 1).astype(x.dtype)
        return np.left_shift(x, y) if direction == "LEFT" else np.right_shift(x, y)
    return body, fold


for _op_type, _direction in (("LeftShift", "LEFT"), ("RightShift", "RIGHT")):
    _body, _fold = _shift(_direction)
    declare_binary(OPS, _op_type, f"x1 shifted {_direction.lower()} by x2 bits (clamped to [0, bits - 1])",
                   _body, INT_TYPES, INT_TYPES, fold=_fold)
