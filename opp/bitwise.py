"""Bitwise ops on integers, elementwise: BitwiseAnd, BitwiseOr, BitwiseXor (numpy broadcasting),
Invert, and the shifts LeftShift and RightShift."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.kernels import has_kernel
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import INT_TYPES, numpy_dtype
from tf2ir.opp.declare import declare_binary, declare_unary

OPS = OpSet("tf2ir.opp.bitwise")
DOMAIN = "ai.tf2ir.bitwise"

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
        if has_kernel("BitShift", dtype):     # the unsigned ones
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


# -- Bitcast: a reinterpretation of the bytes (TF's dtypes, quantized ones aside) ---------------
BITCAST_TYPES = ("bfloat16", "float16", "float32", "float64", "int64", "int32", "uint8", "uint16",
                 "uint32", "uint64", "int8", "int16", "complex64", "complex128")
bitcast = (OPS.declare("Bitcast", "The bytes of x read as dtype `type`: the same shape for the "
                                  "same width; a narrower type adds a last dim of the width "
                                  "ratio, a wider one removes a last dim of that size. ONNX "
                                  "opset 18 has no bitcast: a kernel node (tf2ir.InferenceSession).")
           .input("x", BITCAST_TYPES).output("y", BITCAST_TYPES).attr("type", "dtype"))


def _width(dtype: str) -> int:
    return 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize


@bitcast.infer
def _infer_bitcast(node):
    x, out = node.inputs[0].desc, node.attrs["type"]
    if out not in BITCAST_TYPES:
        raise ConversionError(f"Bitcast to {out} is not supported")
    a, b = _width(x.dtype), _width(out)
    shape = x.shape
    if shape is not None and a > b:
        shape = tuple(shape) + (a // b,)
    elif shape is not None and a < b:
        if not shape or shape[-1] not in (None, b // a):
            raise ConversionError(f"Bitcast from {x.dtype} to {out} needs a last dim of {b // a}")
        shape = tuple(shape[:-1])
    return [TensorDesc(out, shape)]


@bitcast.lower
def _lower_bitcast(ctx, node):
    if node.inputs[0].desc.dtype == node.attrs["type"]:
        ctx.op.Identity(ctx.input(0), out=ctx.output(0))
        return
    unsafe = {node.inputs[0].desc.dtype, node.attrs["type"]} & _NO_KERNEL_TYPES
    if unsafe:
        raise ConversionError(f"Bitcast of {', '.join(sorted(unsafe))} is not supported: ONNX "
                              "opset 18 has no bitcast and onnxruntime-extensions' Python kernels "
                              "take no half-float or complex tensors")
    ctx.op.Bitcast(ctx.input(0), out=ctx.output(0), domain=DOMAIN,
                   type=int(ONNX_DTYPES[node.attrs["type"]]))


# dtypes onnxruntime-extensions' Python kernels do not take (onnxruntime aborts on them)
_NO_KERNEL_TYPES = {"float16", "bfloat16", "complex64", "complex128"}


@bitcast.kernel
def bitcast_kernel(x, type=None):
    x = np.asarray(x, order="C")
    out = _ONNX_TO_NUMPY[int(type)] if not isinstance(type, str) else np.dtype(type)
    a, b = x.dtype.itemsize, np.dtype(out).itemsize
    if a > b:       # a new last dim (a scalar too, which numpy's view refuses)
        return x.reshape(x.shape + (1,)).view(out)
    if a < b:
        if not x.shape or x.shape[-1] != b // a:
            raise ValueError(f"Cannot bitcast from {x.dtype} to {np.dtype(out)}: shape "
                             f"{x.shape} needs a last dim of {b // a}")
        return x.view(out).reshape(x.shape[:-1])
    return x.view(out)


_ONNX_TO_NUMPY = {int(code): numpy_dtype(name) for name, code in ONNX_DTYPES.items()
                  if name in BITCAST_TYPES and name != "bfloat16"}
