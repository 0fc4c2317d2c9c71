"""Elementwise arithmetic on two operands (numpy broadcasting): Add, Sub, Mul, Maximum, Minimum,
Pow, SquaredDifference, the TF divisions and remainders (RealDiv, Div, FloorDiv, FloorMod,
TruncateDiv, TruncateMod), the variants that give 0 instead of NaN (DivNoNan, MulNoNan, Xlogy,
Xdivy), and ClipByValue."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.kernels import ARITHMETIC_FROM_14, BEFORE_14, SMALL_INTS_FROM_14, kernel_types
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import FLOAT_TYPES, INT_TYPES, NUMBER_TYPES
from tf2ir.opp import complexmath
from tf2ir.opp.carriers import ARITHMETIC_VIA, FLOAT_KERNELS, MINMAX_VIA, NO_BF16
from tf2ir.opp.declare import declare_binary, fold_with
from tf2ir.opp.emitting import Emitter, emit_via, lowering
from tf2ir.opp.shapes import broadcast_shapes, infer_broadcast

OPS = OpSet("tf2ir.opp.arithmetic")


def _infer_binary(node):
    a, b = node.inputs[0].desc, node.inputs[1].desc
    if a.dtype != b.dtype:
        raise ConversionError(f"operand dtypes differ: {a.dtype} and {b.dtype}")
    fmt = a.format if a.rank == broadcast_rank(a, b) else b.format
    return [TensorDesc(a.dtype, broadcast_shapes(a.shape, b.shape), fmt, fmt)]


def broadcast_rank(a, b):
    return None if a.rank is None or b.rank is None else max(a.rank, b.rank)


def _binary(op_type, onnx_op, doc, dtypes=NUMBER_TYPES, via=None, numpy_fn=None):
    proto = OPS.declare(op_type, doc).input("x1", dtypes).input("x2", dtypes).output("y")
    proto.infer(_infer_binary)
    if numpy_fn is not None:   # shape arithmetic (dims times dims, ...) folds to constants
        @proto.fold
        def fold(node, values):
            return [np.asarray(numpy_fn(values[0], values[1]), values[0].dtype)]

    @proto.lower
    def lower(ctx, node):
        emit_via(ctx, onnx_op, [ctx.input(0), ctx.input(1)], ctx.output(0), node.inputs[0].desc.dtype,
                 via or {})
    return proto


def _small_ints_in_int32_before_14(proto, onnx_op: str) -> None:
    """`proto`'s form for opset 13, where ONNX `onnx_op` takes no 8- or 16-bit integers."""
    assert onnx_op in ARITHMETIC_FROM_14
    via = {t: "int32" for t in SMALL_INTS_FROM_14}

    @proto.lower(opsets=BEFORE_14)
    def lower(ctx, node):
        emit_via(ctx, onnx_op, [ctx.input(0), ctx.input(1)], ctx.output(0),
                 node.inputs[0].desc.dtype, via)


_small_ints_in_int32_before_14(
    _binary("Add", "Add", "x1 + x2 (numpy broadcasting)", numpy_fn=np.add), "Add")
_small_ints_in_int32_before_14(_binary("Sub", "Sub", "x1 - x2", numpy_fn=np.subtract), "Sub")
_small_ints_in_int32_before_14(_binary("Mul", "Mul", "x1 * x2", numpy_fn=np.multiply), "Mul")
_binary("RealDiv", "Div", "x1 / x2 for floating point", FLOAT_TYPES)
_binary("Maximum", "Max", "elementwise maximum", via=MINMAX_VIA, numpy_fn=np.maximum)
_binary("Minimum", "Min", "elementwise minimum", via=MINMAX_VIA, numpy_fn=np.minimum)
_binary("Pow", "Pow", "x1 ** x2", via=ARITHMETIC_VIA)

squared_difference = _binary("SquaredDifference", "Sub", "(x1 - x2) ** 2")


@squared_difference.lower
def _lower_squared_difference(ctx, node):
    diff = ctx.op.Sub(ctx.input(0), ctx.input(1))
    ctx.op.Mul(diff, diff, out=ctx.output(0))


# -- division and remainders ----------------------------------------------------------------
def _signs_differ(o: Emitter, r: str, y: str) -> str:
    """r != 0 and sign(r) != sign(y): where a truncated quotient/remainder needs the floor fix."""
    return o.And(o.Not(o.Equal(r, o.c(0))), o.Xor(o.Less(r, o.c(0)), o.Less(y, o.c(0))))


def _trunc(o: Emitter, v: str, out=None) -> str:
    return o.Where(o.Less(v, o.c(0)), o.Ceil(v), o.Floor(v), out=out)


def _floor_div(o, x, y, dtype):
    if dtype in INT_TYPES:   # ONNX Div truncates integers: step down where the signs differ
        q = o.Div(x, y)
        fix = _signs_differ(o, o.Sub(x, o.Mul(q, y)), y)
        return o.Sub(q, o.Cast(fix, to=ONNX_DTYPES[dtype]), out=o.out)
    return o.Floor(o.Div(x, y), out=o.out)


def _floor_mod(o, x, y, dtype):
    if dtype in INT_TYPES:   # fmod=0 is Python's integer modulo: the sign of the divisor
        return o.Mod(x, y, fmod=0, out=o.out)
    r = o.Mod(x, y, fmod=1)
    return o.Where(_signs_differ(o, r, y), o.Add(r, y), r, out=o.out)


def _is_integer(x) -> bool:
    return np.issubdtype(np.asarray(x).dtype, np.integer)


def _checked(fn):
    """A division fold that refuses an integer division by zero: TF and onnxruntime fail
    there at run time, and folding must not turn that into a number."""
    def run(x, y):
        if _is_integer(x) and np.any(np.asarray(y) == 0):
            raise ValueError("integer division by zero")
        return fn(x, y)
    return run


def _np_trunc_div(x, y):
    if _is_integer(x):
        q = np.floor_divide(x, y)
        return q + ((q * y != x) & ((np.asarray(x) < 0) != (np.asarray(y) < 0)))
    return np.trunc(np.true_divide(x, y))


def _np_floor_div(x, y):
    return np.floor_divide(x, y) if _is_integer(x) else np.floor(np.true_divide(x, y))


def _np_floor_mod(x, y):
    if _is_integer(x):
        return np.mod(x, y)
    r = np.fmod(x, y)
    return np.where((r != 0) & ((r < 0) != (y < 0)), r + y, r)


declare_binary(OPS, "Div", "x1 / x2: true division for floats, truncating for integers (TF Div)",
               lambda o, x, y, dtype: o.Div(x, y, out=o.out), NO_BF16,
               fold=_checked(lambda x, y: _np_trunc_div(x, y) if _is_integer(x) else np.true_divide(x, y)),
               arithmetic=True)
declare_binary(OPS, "TruncateDiv", "x1 / x2 rounded toward zero",
               lambda o, x, y, dtype: o.Div(x, y, out=o.out) if dtype in INT_TYPES
               else _trunc(o, o.Div(x, y), o.out), NO_BF16, fold=_checked(_np_trunc_div), arithmetic=True)
declare_binary(OPS, "FloorDiv", "floor(x1 / x2)", _floor_div, NO_BF16, fold=_checked(_np_floor_div),
               arithmetic=True)
declare_binary(OPS, "FloorMod", "x1 - floor(x1 / x2) * x2: the remainder with the sign of x2", _floor_mod,
               NO_BF16, fold=_checked(_np_floor_mod), arithmetic=True)
declare_binary(OPS, "TruncateMod", "C fmod: the remainder with the sign of x1 (TF Mod and TruncateMod)",
               lambda o, x, y, dtype: o.Mod(x, y, fmod=1, out=o.out), NO_BF16, fold=_checked(np.fmod))


def _unless_zero(test: int, compute: str):
    """0 where input `test` is 0, else `compute`(x1, x2) (input 0 is x1)."""
    def body(o, x, y, dtype):
        zero = o.c(0)
        value = o.Log(y) if compute == "Xlogy" else y
        result = o.Mul(x, value) if compute in ("Mul", "Xlogy") else o.Div(x, value)
        return o.Where(o.Equal((x, y)[test], zero), zero, result, out=o.out)
    return body


declare_binary(OPS, "DivNoNan", "x1 / x2, and 0 where x2 is 0", _unless_zero(1, "Div"), FLOAT_KERNELS,
               FLOAT_TYPES)
declare_binary(OPS, "MulNoNan", "x1 * x2, and 0 where x2 is 0 (even for inf or NaN x1)",
               _unless_zero(1, "Mul"), FLOAT_KERNELS, FLOAT_TYPES)
declare_binary(OPS, "Xlogy", "x1 * log(x2), and 0 where x1 is 0", _unless_zero(0, "Xlogy"), FLOAT_KERNELS,
               FLOAT_TYPES)
declare_binary(OPS, "Xdivy", "x1 / x2, and 0 where x1 is 0", _unless_zero(0, "Div"), FLOAT_KERNELS,
               FLOAT_TYPES)

# -- clipping ----------------------------------------------------------------------------------
# onnxruntime's Min and Max kernels (ClipByValue's carriers are chosen among them)
MIN_MAX_TYPES = kernel_types("Max", NUMBER_TYPES)

clip_by_value = (OPS.declare("ClipByValue", "x clipped to [low, high] as TF computes it, "
                                             "max(min(x, high), low); low and high broadcast")
                 .input("x", NUMBER_TYPES).input("low", NUMBER_TYPES).input("high", NUMBER_TYPES)
                 .output("y"))


@clip_by_value.infer
def _infer_clip_by_value(node):
    return infer_broadcast(node, (0, 1, 2))


clip_by_value.lower(lowering(lambda o, xs, dtype: o.Max(o.Min(xs[0], xs[2]), xs[1], out=o.out),
                             MIN_MAX_TYPES, (0, 1, 2)))
clip_by_value.fold(fold_with(lambda x, low, high: np.maximum(np.minimum(x, high), low)))


# complex operands (a spectrum times a filter, ...) on the (real, imaginary) pairs
complexmath.extend(OPS)
