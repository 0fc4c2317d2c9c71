"""Hybrid (dynamic-range) products: float activations times int8 weights, computed as TFLite's
hybrid kernels compute them (DESIGN decision 11: TFLite's dynamic-range models).

A dynamic-range TFLite model holds int8 weights with per-channel symmetric scales and float
activations. Its kernels quantize the float input to int8 at run time, multiply in int32 and
rescale; these ops do the same, so that the product's integer part is TFLite's exactly:

- HybridMatMul (FULLY_CONNECTED): x [rows, depth] float, weights [units, depth] int8. Each row
  is quantized on its own: asymmetric (int8 in [-128, 127] with a zero point, TFLite's
  AsymmetricQuantizeFloats) or symmetric (in [-127, 127], SymmetricQuantizeFloats).
  y = float(sum(q * w) - zero_point * sum(w)) * (row_scale * weight_scale) + bias.
- HybridConv2D (CONV_2D, DEPTHWISE_CONV_2D): x NHWC float, filter int8 in TFLite's layout (OHWI,
  or [1, H, W, C * M] depthwise), each batch image quantized asymmetrically on its own; SAME
  padding pads the float data with zeros first (a zero quantizes to the zero point, which the
  zero-point correction cancels, as TFLite's im2col pads with the zero point). The rescale is
  acc * (image_scale * channel_scale) + bias for CONV_2D and (acc * channel_scale) *
  image_scale + bias for DEPTHWISE_CONV_2D (the orders of TFLite's kernels: float results
  bit-equal to them).

Quantization parameters (asymmetric): rmin = min(0, min x), rmax = max(0, max x); scale =
(rmax - rmin) / 255 and the zero point from the end with the smaller error, rounded half away
from zero and clamped, in float64; the float32 scale's inverse 1.0 / scale in float64, stored
float32; q = round_half_away(x * inverse) + zero_point, clamped, the product exact (TFLite's
x86 kernels round the exact product: a float32 product of 126.5 where the exact one is
126.4999994 rounds to 126 in TFLite, measured). A row of zeros: scale 1, zero point 0.
Symmetric: range = max |x|, scale = range / 127, q = round_half_away(x * (127 / range)).

Lowering: the parameters in float64/float32 element-wise ONNX ops; the product x * inverse in
float64, rounded half away from zero as the Cast to int32 (which truncates) of v + sign(v) *
0.49999999999999994, + zero point + 128, clamped, Cast to uint8 (q + 128); the product
MatMulInteger (uint8 with zero point 128 x int8) / ConvInteger (uint8 x the filter + 128 as
uint8, both zero points 128: onnxruntime's fast uint8 kernels; the same integers as int8 x int8),
int32 accumulation (exact), the zero-point correction in int32, the rescale in float32. The numpy kernels are the same arithmetic.

`--quantized qdq` (ExportOptions.quantized, read as opp/quantize_qdq.py `wanted`) lowers them to
what onnxruntime runs fastest instead, close to TFLite but not its arithmetic: HybridMatMul as
DynamicQuantizeLinear (uint8, one scale for the whole input: a single row quantizes as TFLite
quantizes it, several rows share the widest row's step) -> MatMulInteger -> Cast -> Mul by
x_scale * weight_scale (+ bias), which onnxruntime fuses into one DynamicQuantizeMatMul;
HybridConv2D as a float Conv over the dequantized filter (a float32 initializer: onnxruntime's
ConvInteger runs 4-7 times slower than its float Conv, and has no fused dynamic form), which
differs from TFLite by TFLite's own input quantization error. No float64 in either.
"""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.opp.conv import same_pads, windowed_shape
from tf2ir.opp.layouts import spatial_attrs
from tf2ir.opp.quantize_qdq import wanted

OPS = OpSet("tf2ir.opp.hybrid")

F32 = np.float32
HALF_BELOW_64 = np.nextafter(0.5, 0.0)               # round half away from zero by truncation


# -- the arithmetic in numpy ----------------------------------------------------------------------
def round_half_away(v: np.ndarray) -> np.ndarray:
    """C's round(): halves away from zero (the float64 of the rounded value)."""
    v = np.asarray(v, np.float64)
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def asymmetric_params(rows: np.ndarray):
    """TFLite's AsymmetricQuantizeFloats parameters of each row of [n, size] float32 `rows`:
    (scale float32 [n], inverse float32 [n], zero point int32 [n])."""
    rmin = np.minimum(0, rows.min(axis=1, initial=0)).astype(np.float64)
    rmax = np.maximum(0, rows.max(axis=1, initial=0)).astype(np.float64)
    same = rmin == rmax
    scale = np.where(same, 1.0, (rmax - rmin) / 255.0)
    low, high = rmin / scale, rmax / scale
    zero = np.where(128 + np.abs(low) < 127 + np.abs(high), -128 - low, 127 - high)
    zero = np.where(same, 0, np.clip(round_half_away(zero), -128, 127)).astype(np.int32)
    scale32 = scale.astype(F32)
    return scale32, (1.0 / scale32.astype(np.float64)).astype(F32), zero


def quantize_rows(rows: np.ndarray, asymmetric: bool):
    """[n, size] float32 → (q int32 in int8's range, scale float32 [n], zero point int32 [n])."""
    rows = np.asarray(rows, F32)
    if asymmetric:
        scale, inverse, zero = asymmetric_params(rows)
        t = round_half_away(rows.astype(np.float64) * inverse[:, None]) + zero[:, None]
        return np.clip(t, -128, 127).astype(np.int32), scale, zero
    top = np.maximum(np.abs(rows.min(axis=1, initial=0)), np.abs(rows.max(axis=1, initial=0)))
    same = top == 0
    top = np.where(same, F32(1), top).astype(F32)
    scale = np.where(same, F32(1), top / F32(127)).astype(F32)
    inverse = (F32(127) / top).astype(np.float64)
    q = np.clip(round_half_away(rows.astype(np.float64) * inverse[:, None]), -127, 127)
    q = q.astype(np.int32)
    return q, scale, np.zeros(len(rows), np.int32)


def _weight_scale(node_or_attr, count: int) -> np.ndarray:
    scale = np.asarray(node_or_attr, F32).reshape(-1)
    if scale.size not in (1, count) or not np.all(np.isfinite(scale) & (scale > 0)):
        raise ConversionError(f"the weights need one positive scale or one per output channel "
                              f"({count}), not {scale.size}")
    return np.broadcast_to(scale, (count,)).astype(F32)


# -- HybridMatMul ---------------------------------------------------------------------------------
hybrid_matmul = (
    OPS.declare("HybridMatMul", "x [rows, depth] float32 times int8 weights [units, depth]^T as "
                                "TFLite's hybrid FULLY_CONNECTED: each row quantized to int8 at "
                                "run time, int32 product, rescaled, + bias.")
    .input("x", ("float32",)).input("weights", ("int8",)).optional_input("bias", ("float32",))
    .output("y", ("float32",))
    .attr("weight_scale", "tensor", doc="float32 scale of the weights: one, or one per unit")
    .attr("asymmetric", "bool", True, doc="quantize rows with a zero point (else symmetric)"))


@hybrid_matmul.infer
def _infer_matmul(node):
    x, w = node.inputs[0].desc, node.inputs[1].desc
    if x.rank not in (None, 2) or w.rank not in (None, 2):
        raise ConversionError(f"HybridMatMul takes x [rows, depth] and weights [units, depth], "
                              f"not ranks {x.rank} and {w.rank}")
    units = None if w.shape is None else w.shape[0]
    if x.shape is not None and w.shape is not None and None not in (x.shape[1], w.shape[1]) \
            and x.shape[1] != w.shape[1]:
        raise ConversionError(f"x has depth {x.shape[1]}, the weights {w.shape[1]}")
    return [TensorDesc("float32", None if x.shape is None else (x.shape[0], units))]


@hybrid_matmul.kernel
def _matmul_kernel(x, weights, bias=None, weight_scale=None, asymmetric=True):
    w = np.asarray(weights).astype(np.int32)
    q, scale, zero = quantize_rows(x, asymmetric)
    acc = q @ w.T - zero[:, None] * w.sum(axis=1)[None, :]
    y = acc.astype(F32) * (scale[:, None] * _weight_scale(weight_scale, w.shape[0])[None, :])
    return y if bias is None else np.asarray(bias, F32)[None, :] + y


# -- HybridConv2D ---------------------------------------------------------------------------------
hybrid_conv = (
    OPS.declare("HybridConv2D", "NHWC float32 data convolved with an int8 filter as TFLite's "
                                "hybrid CONV_2D / DEPTHWISE_CONV_2D: each image quantized to int8 "
                                "at run time, int32 convolution, rescaled, + bias.")
    .input("x", ("float32",)).input("filter", ("int8",)).optional_input("bias", ("float32",))
    .output("y", ("float32",))
    .attr("strides", "ints").attr("padding", "str").attr("dilations", "ints", [1, 1, 1, 1])
    .attr("depthwise", "bool", False, doc="filter [1, H, W, C * M] (else OHWI)")
    .attr("weight_scale", "tensor", doc="float32 scale of the filter: one per output channel"))


def _conv_geometry(node_attrs, w_shape):
    """(out channels, kernel [kh, kw]) of a TFLite filter shape."""
    if len(w_shape) != 4:
        raise ConversionError(f"the filter must have rank 4, not {len(w_shape)}")
    return w_shape[3 if node_attrs["depthwise"] else 0], list(w_shape[1:3])


@hybrid_conv.infer
def _infer_conv(node):
    x, w = node.inputs[0].desc, node.inputs[1].desc
    if w.shape is None or x.rank not in (None, 4):
        raise ConversionError("HybridConv2D needs NHWC data and a filter of known shape")
    out, kernel = _conv_geometry(node.attrs, w.shape)
    return [TensorDesc("float32", windowed_shape(node, x, kernel, out, "NHWC"), "NHWC", "NHWC")]


def _pads(attrs, spatial, kernel):
    """[top, left, bottom, right] of the padding."""
    if attrs["padding"] == "VALID":
        return [0, 0, 0, 0]
    pads = same_pads(spatial, kernel, spatial_attrs(attrs["strides"], "NHWC"),
                     spatial_attrs(attrs["dilations"], "NHWC"))
    if pads is None:
        raise ConversionError("SAME padding with strides needs the data's spatial size")
    return pads


@hybrid_conv.kernel
def _conv_kernel(x, filter, bias=None, strides=None, padding="SAME", dilations=(1, 1, 1, 1),
                 depthwise=False, weight_scale=None):
    attrs = {"strides": strides, "padding": padding, "dilations": dilations,
             "depthwise": depthwise}
    x = np.asarray(x, F32)
    w = np.asarray(filter).astype(np.int64)
    out, (kh, kw) = _conv_geometry(attrs, w.shape)
    top, left, bottom, right = _pads(attrs, list(x.shape[1:3]), [kh, kw])
    x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    q, scale, zero = quantize_rows(x.reshape(len(x), -1), True)
    q = (q - zero[:, None]).reshape(x.shape).astype(np.int64)
    (sh, sw), (dh, dw) = strides[1:3], dilations[1:3]
    oh = (x.shape[1] - (kh - 1) * dh - 1) // sh + 1
    ow = (x.shape[2] - (kw - 1) * dw - 1) // sw + 1
    channels = x.shape[3]
    acc = np.zeros((len(x), oh, ow, out), np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = q[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            if depthwise:
                acc += np.repeat(patch, out // channels, axis=3) * w[0, i, j]
            else:
                acc += patch @ w[:, i, j, :].T
    ws = _weight_scale(weight_scale, out)
    image = scale[:, None, None, None]
    accf = acc.astype(F32)
    y = (accf * ws) * image if depthwise else accf * (image * ws)
    return y if bias is None else y + np.asarray(bias, F32)


# -- lowering -------------------------------------------------------------------------------------
class _Emit:
    """ONNX ops of a lowering with typed scalar constants."""

    def __init__(self, ctx):
        self.ctx, self.op = ctx, ctx.op

    def c(self, value, dtype="float32"):
        return self.ctx.constant(np.array(value, dtype))

    def cast(self, value, dtype):
        return self.op.Cast(value, to=ONNX_DTYPES[dtype])

    def quantize(self, x, inverse, zero, low):
        """uint8 of q + 128, q = round_half_away(x * inverse) + zero clamped to [low, 127]: the
        product of float32 x and float32 `inverse` in float64 (exact), + sign *
        0.49999999999999994, truncated by a Cast to int32, + zero + 128 (zero int32, or None),
        clamped, as uint8. The integer products read it with zero point 128 (the same integers
        as int8 q: onnxruntime's uint8 kernels are the fast ones)."""
        o = self.op
        v = o.Mul(self.cast(x, "float64"), self.cast(inverse, "float64"))
        v = self.cast(o.Add(v, o.Mul(o.Sign(v), self.c(HALF_BELOW_64, "float64"))), "int32")
        v = o.Add(v, self.c(128, "int32") if zero is None else o.Add(zero, self.c(128, "int32")))
        return self.cast(o.Clip(v, self.c(low + 128, "int32"), self.c(255, "int32")), "uint8")


def _emit_quantize(e: _Emit, x: str, axes, asymmetric: bool):
    """(q + 128 uint8, scale float32, zero point int32) of float32 `x` quantized per slice
    (the reduction `axes` kept as 1s), as `quantize_rows`."""
    o, axes_c = e.op, e.c(list(axes), "int64")
    low, high = o.ReduceMin(x, axes_c, keepdims=1), o.ReduceMax(x, axes_c, keepdims=1)
    if not asymmetric:
        top = o.Max(o.Abs(low), o.Abs(high))
        same = o.Equal(top, e.c(0))
        top = o.Where(same, e.c(1), top)
        scale = o.Where(same, e.c(1), o.Div(top, e.c(127)))
        # zero point 0, computed at run time: the int32 correction it feeds stands between
        # MatMulInteger and its Cast, where onnxruntime's MatMulIntegerToFloat fusion (ORT
        # 1.32) would otherwise take the [rows, units] rescale for a per-column one
        zero = e.cast(o.Less(top, e.c(0)), "int32")
        return e.quantize(x, o.Div(e.c(127), top), None, -127), scale, zero
    rmin = e.cast(o.Min(low, e.c(0)), "float64")
    rmax = e.cast(o.Max(high, e.c(0)), "float64")
    same = o.Equal(rmin, rmax)
    scale = o.Where(same, e.c(1, "float64"), o.Div(o.Sub(rmax, rmin), e.c(255, "float64")))
    lo, hi = o.Div(rmin, scale), o.Div(rmax, scale)
    from_min = o.Less(o.Add(e.c(128, "float64"), o.Abs(lo)), o.Add(e.c(127, "float64"), o.Abs(hi)))
    zero = o.Where(from_min, o.Sub(e.c(-128, "float64"), lo), o.Sub(e.c(127, "float64"), hi))
    zero = o.Mul(o.Sign(zero), o.Floor(o.Add(o.Abs(zero), e.c(0.5, "float64"))))
    zero = o.Where(same, e.c(0, "float64"), o.Clip(zero, e.c(-128, "float64"),
                                                   e.c(127, "float64")))
    scale32 = e.cast(scale, "float32")
    inverse = e.cast(o.Div(e.c(1, "float64"), e.cast(scale32, "float64")), "float32")
    zero = e.cast(zero, "int32")
    return e.quantize(x, inverse, zero, -128), scale32, zero


@hybrid_matmul.lower
def _lower_matmul(ctx, node):
    w = ctx.const_input(1)
    if w is None:
        raise ConversionError("HybridMatMul needs constant weights")
    w = np.asarray(w, np.int8)
    if wanted(ctx):
        _fast_matmul(ctx, node, w)
        return
    e, o = _Emit(ctx), ctx.op
    q, scale, zero = _emit_quantize(e, ctx.input(0), [1], bool(node.attrs["asymmetric"]))
    acc = o.MatMulInteger(q, ctx.constant(np.ascontiguousarray(w.T), "weights_t"),
                          e.c(128, "uint8"))
    sums = ctx.constant(w.astype(np.int32).sum(axis=1).astype(np.int32)[None, :], "weight_sums")
    acc = o.Sub(acc, o.Mul(zero, sums))
    ws = _weight_scale(node.attrs["weight_scale"], w.shape[0])
    factor = o.Mul(scale, ctx.constant(ws[None, :], "weight_scale"))
    bias = ctx.input(2) if len(node.inputs) > 2 else None
    if not bias:
        o.Mul(e.cast(acc, "float32"), factor, out=ctx.output(0))
        return
    o.Add(o.Reshape(bias, e.c([1, -1], "int64")), o.Mul(e.cast(acc, "float32"), factor),
          out=ctx.output(0))


@hybrid_conv.lower
def _lower_conv(ctx, node):
    w = ctx.const_input(1)
    if w is None:
        raise ConversionError("HybridConv2D needs a constant filter")
    w, attrs = np.asarray(w, np.int8), node.attrs
    depthwise = bool(attrs["depthwise"])
    out, kernel = _conv_geometry(attrs, w.shape)
    x = node.inputs[0].desc
    spatial = [None, None] if x.shape is None else list(x.shape[1:3])
    top, left, bottom, right = _pads(attrs, spatial, kernel)
    if depthwise:
        channels = None if x.shape is None else x.shape[3]
        if channels is None or out % channels:
            raise ConversionError("a hybrid depthwise convolution needs the data's channels")
        w_onnx, groups = np.transpose(w, (3, 0, 1, 2)), channels            # [C*M, 1, H, W]
    else:
        w_onnx, groups = np.transpose(w, (0, 3, 1, 2)), 1                  # OIHW
    w_onnx = np.ascontiguousarray(w_onnx)
    if wanted(ctx):
        _fast_conv(ctx, node, w_onnx, groups, kernel, [top, left, bottom, right])
        return
    e, o = _Emit(ctx), ctx.op
    data = ctx.input(0)
    if any((top, left, bottom, right)):
        data = o.Pad(data, e.c([0, top, left, 0, 0, bottom, right, 0], "int64"), e.c(0))
    q, scale, zero = _emit_quantize(e, data, [1, 2, 3], True)
    w_u8 = (w_onnx.astype(np.int16) + 128).astype(np.uint8)      # uint8 x uint8: the fast kernel
    acc = o.ConvInteger(o.Transpose(q, perm=[0, 3, 1, 2]), ctx.constant(w_u8, "filter_oihw"),
                        e.c(128, "uint8"), e.c(128, "uint8"),
                        group=groups, kernel_shape=kernel,
                        strides=spatial_attrs(attrs["strides"], "NHWC"),
                        dilations=spatial_attrs(attrs["dilations"], "NHWC"))
    sums = w_onnx.astype(np.int32).sum(axis=(1, 2, 3)).astype(np.int32).reshape(1, -1, 1, 1)
    acc = e.cast(o.Sub(acc, o.Mul(zero, ctx.constant(sums, "filter_sums"))), "float32")
    ws = ctx.constant(_weight_scale(attrs["weight_scale"], out).reshape(1, -1, 1, 1), "filter_scale")
    if depthwise:
        y = o.Mul(o.Mul(acc, ws), scale)
    else:
        y = o.Mul(acc, o.Mul(scale, ws))
    bias = ctx.input(2) if len(node.inputs) > 2 else None
    if bias:
        y = o.Add(y, o.Reshape(bias, e.c([1, -1, 1, 1], "int64")))
    o.Transpose(y, perm=[0, 2, 3, 1], out=ctx.output(0))


# -- --quantized qdq: the fast forms --------------------------------------------------------------
def _bias(ctx, node, shape):
    """The bias reshaped to `shape` (a constant folded), or None."""
    if len(node.inputs) < 3 or not ctx.input(2):
        return None
    value = ctx.const_input(2)
    if value is not None:
        return ctx.constant(np.asarray(value, F32).reshape(shape), "bias")
    return ctx.op.Reshape(ctx.input(2), ctx.constant(np.array(shape, np.int64)))


def _fast_matmul(ctx, node, w):
    """DynamicQuantizeLinear (uint8, one scale for the whole input) -> MatMulInteger with the
    int8 weights -> Cast -> Mul by x_scale * weight_scale (+ bias): onnxruntime fuses it into
    one DynamicQuantizeMatMul. One row (a batch of 1) quantizes as TFLite quantizes it."""
    o = ctx.op
    ws = _weight_scale(node.attrs["weight_scale"], w.shape[0])
    q, scale, zero = o.DynamicQuantizeLinear(ctx.input(0), outputs=3)
    acc = o.MatMulInteger(q, ctx.constant(np.ascontiguousarray(w.T), "weights_t"), zero)
    y = o.Mul(o.Cast(acc, to=ONNX_DTYPES["float32"]),
              o.Mul(scale, ctx.constant(ws, "weight_scale")))
    bias = _bias(ctx, node, [1, -1])
    if bias is None:
        o.Identity(y, out=ctx.output(0))
    else:
        o.Add(y, bias, out=ctx.output(0))


def _fast_conv(ctx, node, w_onnx, groups, kernel, pads):
    """A float Conv over the dequantized filter (a float32 initializer): onnxruntime has no
    fast dynamically quantized convolution (ConvInteger runs 4-7 times slower than the
    float Conv on MobileNetV2); the layout pass sinks the Transposes between convolutions."""
    o, attrs = ctx.op, node.attrs
    ws = _weight_scale(attrs["weight_scale"], len(w_onnx)).reshape(-1, 1, 1, 1)
    inputs = [o.Transpose(ctx.input(0), perm=[0, 3, 1, 2]),
              ctx.constant(np.ascontiguousarray(w_onnx.astype(F32) * ws), "filter")]
    bias = _bias(ctx, node, [1, -1, 1, 1])
    if bias is not None and ctx.const_input(2) is not None:
        inputs.append(ctx.constant(np.asarray(ctx.const_input(2), F32).reshape(-1), "bias"))
        bias = None
    y = o.Conv(*inputs, group=groups if groups != 1 else None, kernel_shape=kernel,
               strides=spatial_attrs(attrs["strides"], "NHWC"),
               dilations=spatial_attrs(attrs["dilations"], "NHWC"), pads=pads)
    if bias is not None:
        y = o.Add(y, bias)
    o.Transpose(y, perm=[0, 2, 3, 1], out=ctx.output(0))
