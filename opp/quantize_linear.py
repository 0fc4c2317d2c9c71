"""Linear quantization: QuantizeLinear (float -> integer) and DequantizeLinear (integer ->
float32) with a constant scale and zero point, per tensor or per channel along `axis` (the
quantized tensors of TFLite models: DESIGN decision 11).

    q = saturate(round_half_to_even(x / scale) + zero_point)        (QuantizeLinear)
    y = (q - zero_point) * scale                                    (DequantizeLinear)

Both lower to ONNX's QuantizeLinear/DequantizeLinear (a scalar scale and zero point per
tensor, 1-D ones and `axis` per channel), the form onnxruntime's QDQ fusion turns into int8
kernels (QLinearConv, QLinearMatMul, MatMulInteger ...). ONNX quantizes to int8/uint8 (and
dequantizes int32) from opset 13; int16/uint16 need opset 21: for a lower target (tf2ir's
default model opset is 18) they lower to the same arithmetic in float (Div, Round (half to
even), Add, Clip, Cast; DequantizeLinear as Sub in int32 or int64, Cast, Mul). An int64 tensor
(the bias of TFLite's 16x8 models) has no ONNX DequantizeLinear at any opset: it is folded
when constant, else computed the same way.

Folding. A DequantizeLinear of a constant int8/uint8/int16/int32 tensor (a weight, a bias)
is NOT folded into float: onnxruntime fuses DequantizeLinear -> Conv/MatMul -> QuantizeLinear
into int8 kernels only while the DequantizeLinear stays, and the file keeps the weights in
their integer size. A constant int64 one is folded (no ONNX op reads it). QuantizeLinear of a
constant folds. The numpy functions `quantize` and `dequantize` are the ops' kernels.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import FLOAT_TYPES

OPS = OpSet("tf2ir.opp.quantize_linear")

QUANTIZE_TYPES = ("int8", "uint8", "int16", "uint16", "int32")
DEQUANTIZE_TYPES = QUANTIZE_TYPES + ("int64",)
ONNX_Q_TYPES = ("int8", "uint8")                 # ONNX QuantizeLinear output from opset 13
ONNX_DQ_TYPES = ("int8", "uint8", "int32")       # ONNX DequantizeLinear input from opset 13
OPSET_16BIT = 21                                 # int16/uint16 Q/DQ

F32 = np.float32


# -- parameters ---------------------------------------------------------------------------------
def _params(node, dtype: str, rank: Optional[int]) -> Tuple[np.ndarray, np.ndarray, Optional[int]]:
    """(scale float32, zero point int64, axis or None per tensor) of `node`, checked."""
    scale = np.asarray(node.attrs["scale"])
    zero = np.asarray(node.attrs["zero_point"])
    if scale.ndim > 1 or scale.size == 0 or scale.dtype.kind != "f":
        raise ConversionError(f"scale must be a non-empty float scalar or 1-D array, not "
                              f"{scale.dtype} of shape {list(scale.shape)}")
    if zero.size not in (0, 1, scale.size) or zero.ndim > 1 or zero.dtype.kind not in "iu":
        raise ConversionError(f"zero_point must be integers, one or one per scale (given "
                              f"{zero.size} for {scale.size} scales)")
    scale = scale.astype(F32).reshape(-1)
    if not np.all(np.isfinite(scale) & (scale > 0)):
        raise ConversionError(f"scale must be positive and finite: {scale[:4].tolist()}")
    zero = zero.astype(np.int64).reshape(-1) if zero.size else np.zeros(1, np.int64)
    info = np.iinfo(np.dtype(dtype))
    if zero.min() < info.min or zero.max() > info.max:
        raise ConversionError(f"zero_point {zero[:4].tolist()} lies outside {dtype}")
    if scale.size == 1:
        return scale.reshape(()), zero[:1].reshape(()), None
    if zero.size == 1:
        zero = np.repeat(zero, scale.size)
    axis = int(node.attrs["axis"])
    if rank is None:
        raise ConversionError("per-channel quantization of a tensor of unknown rank")
    if not -rank <= axis < rank:
        raise ConversionError(f"axis {axis} is not a dimension of a rank-{rank} tensor")
    return scale, zero, axis % rank


def _check_channels(node, desc: TensorDesc, scale: np.ndarray, axis: Optional[int]) -> None:
    if axis is None or desc.shape is None:
        return
    dim = desc.shape[axis]
    if dim is not None and dim != scale.size:
        raise ConversionError(f"{scale.size} per-channel scales for dimension {axis} of size "
                              f"{dim}")


def _broadcast(values: np.ndarray, rank: int, axis: Optional[int]) -> np.ndarray:
    if axis is None:
        return values
    shape = [1] * rank
    shape[axis] = -1
    return values.reshape(shape)


# -- kernels ------------------------------------------------------------------------------------
def quantize(x, scale, zero_point, axis: Optional[int], dtype: str) -> np.ndarray:
    """ONNX QuantizeLinear in numpy: round(x / scale) half to even, + zero point, saturated."""
    x = np.asarray(x, F32)
    s = _broadcast(np.asarray(scale, F32), x.ndim, axis)
    z = _broadcast(np.asarray(zero_point, np.int64), x.ndim, axis)
    with np.errstate(all="ignore"):
        rounded = np.rint(x / s).astype(np.float64) + z
    info = np.iinfo(np.dtype(dtype))
    rounded = np.nan_to_num(rounded, nan=0.0)    # (ONNX leaves NaN undefined)
    return np.clip(rounded, info.min, info.max).astype(dtype)


def dequantize(q, scale, zero_point, axis: Optional[int]) -> np.ndarray:
    """ONNX DequantizeLinear in numpy: (q - zero point) * scale in float32."""
    q = np.asarray(q)
    s = _broadcast(np.asarray(scale, F32), q.ndim, axis)
    z = _broadcast(np.asarray(zero_point, np.int64), q.ndim, axis)
    return ((q.astype(np.int64) - z).astype(F32) * s).astype(F32)


# -- QuantizeLinear -----------------------------------------------------------------------------
quantize_linear = (
    OPS.declare("QuantizeLinear", "x quantized to `dtype`: round(x / scale) (half to even) + "
                                  "zero_point, saturated; per tensor or per channel along axis.")
    .input("x", FLOAT_TYPES).output("y", QUANTIZE_TYPES)
    .attr("scale", "tensor", doc="float32 scale: one, or one per channel")
    .attr("zero_point", "tensor", doc="integer zero point(s), as many as scales (or one)")
    .attr("axis", "int", 0, doc="the channel dimension of per-channel parameters")
    .attr("dtype", "dtype", "int8", doc="the quantized type"))


@quantize_linear.infer
def _infer_quantize(node):
    dtype = node.attrs["dtype"]
    if dtype not in QUANTIZE_TYPES:
        raise ConversionError(f"cannot quantize to {dtype} (one of {', '.join(QUANTIZE_TYPES)})")
    x = node.inputs[0].desc
    scale, _, axis = _params(node, dtype, x.rank)
    _check_channels(node, x, scale, axis)
    return [TensorDesc(dtype, x.shape, x.format, x.origin_format)]


@quantize_linear.kernel
def _quantize_kernel(x, scale=None, zero_point=None, axis=0, dtype="int8"):
    scale, zero = np.asarray(scale, F32).reshape(-1), np.asarray(zero_point, np.int64).reshape(-1)
    per_tensor = scale.size == 1
    return quantize(x, scale.reshape(()) if per_tensor else scale,
                    zero[:1].reshape(()) if per_tensor else zero,
                    None if per_tensor else axis % max(np.ndim(x), 1), dtype)


def _onnx_params(ctx, scale, zero, dtype):
    return (ctx.constant(np.asarray(scale, F32), "scale"),
            ctx.constant(np.asarray(zero).astype(dtype), "zero_point"))


def _target_opset(ctx) -> int:
    return getattr(ctx, "opset", None) or 0


@quantize_linear.lower
def _lower_quantize(ctx, node):
    dtype = node.attrs["dtype"]
    x = node.inputs[0].desc
    scale, zero, axis = _params(node, dtype, x.rank)
    source = ctx.input(0)
    if x.dtype != "float32":
        source = ctx.op.Cast(source, to=ONNX_DTYPES["float32"])
    if dtype in ONNX_Q_TYPES or dtype in ("int16", "uint16") and _target_opset(ctx) >= OPSET_16BIT:
        s, z = _onnx_params(ctx, scale, zero, dtype)
        ctx.op.QuantizeLinear(source, s, z, out=ctx.output(0), axis=axis)
        return
    # the same arithmetic in float: int16 below opset 21, int32 at any
    rank = x.rank
    s = ctx.constant(_broadcast(scale, rank, axis), "scale")
    rounded = ctx.op.Round(ctx.op.Div(source, s))
    info = np.iinfo(np.dtype(dtype))
    work = "float64" if dtype == "int32" else "float32"
    if work != "float32":
        rounded = ctx.op.Cast(rounded, to=ONNX_DTYPES[work])
    shifted = rounded
    if np.any(zero):
        shifted = ctx.op.Add(rounded, ctx.constant(_broadcast(zero, rank, axis).astype(work),
                                                   "zero_point"))
    clipped = ctx.op.Clip(shifted, ctx.constant(np.array(info.min, work)),
                          ctx.constant(np.array(info.max, work)))
    ctx.op.Cast(clipped, out=ctx.output(0), to=ONNX_DTYPES[dtype])


# -- DequantizeLinear ---------------------------------------------------------------------------
dequantize_linear = (
    OPS.declare("DequantizeLinear", "x (integer) dequantized to float32: (x - zero_point) * "
                                    "scale; per tensor or per channel along axis.")
    .input("x", DEQUANTIZE_TYPES).output("y", ("float32",))
    .attr("scale", "tensor", doc="float32 scale: one, or one per channel")
    .attr("zero_point", "tensor", doc="integer zero point(s), as many as scales (or one)")
    .attr("axis", "int", 0, doc="the channel dimension of per-channel parameters"))


@dequantize_linear.infer
def _infer_dequantize(node):
    x = node.inputs[0].desc
    scale, _, axis = _params(node, x.dtype, x.rank)
    _check_channels(node, x, scale, axis)
    return [TensorDesc("float32", x.shape, x.format, x.origin_format)]


@dequantize_linear.fold
def _fold_dequantize(node, arrays):
    """Only int64 folds (no ONNX op reads it): a dequantized int8/int32 weight or bias stays a
    DequantizeLinear, which onnxruntime's QDQ fusion needs (None: the node stays)."""
    q = arrays[0]
    if q.dtype != np.int64:
        return None
    scale, zero, axis = _params(node, "int64", q.ndim)
    return [dequantize(q, scale, zero, axis)]


@dequantize_linear.kernel
def _dequantize_kernel(x, scale=None, zero_point=None, axis=0):
    scale, zero = np.asarray(scale, F32).reshape(-1), np.asarray(zero_point, np.int64).reshape(-1)
    per_tensor = scale.size == 1
    return dequantize(x, scale.reshape(()) if per_tensor else scale,
                      zero[:1].reshape(()) if per_tensor else zero,
                      None if per_tensor else axis % max(np.ndim(x), 1))


@dequantize_linear.lower
def _lower_dequantize(ctx, node):
    x = node.inputs[0].desc
    scale, zero, axis = _params(node, x.dtype, x.rank)
    if x.dtype in ONNX_DQ_TYPES or x.dtype in ("int16", "uint16") and \
            _target_opset(ctx) >= OPSET_16BIT:
        s, z = _onnx_params(ctx, scale, zero, x.dtype)
        ctx.op.DequantizeLinear(ctx.input(0), s, z, out=ctx.output(0), axis=axis)
        return
    # the same arithmetic: (x - zero point) in int32 (int64 for int64), then float32 * scale
    rank = x.rank
    work = "int64" if x.dtype == "int64" else "int32"
    value = ctx.op.Cast(ctx.input(0), to=ONNX_DTYPES[work])
    if np.any(zero):
        value = ctx.op.Sub(value, ctx.constant(_broadcast(zero, rank, axis).astype(work),
                                               "zero_point"))
    value = ctx.op.Cast(value, to=ONNX_DTYPES["float32"])
    ctx.op.Mul(value, ctx.constant(_broadcast(scale, rank, axis), "scale"), out=ctx.output(0))
