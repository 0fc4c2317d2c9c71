"""Fake quantization: FakeQuant (TF's FakeQuantWithMinMaxArgs/Vars/VarsPerChannel) and
QuantizeDequantize (QuantizeAndDequantizeV2/V3/V4), composed from ONNX arithmetic in the order
TF's kernels compute, so that the results are TF's to the bit (float32 and float64; bfloat16
and float16 compute in float32, as close as one rounding).

ONNX QuantizeLinear divides by the scale and DequantizeLinear adds no nudged minimum, while TF
multiplies by an inverse scale and rounds half up (FakeQuant) or as round_mode says
(QuantizeDequantize): neither fits exactly, so both ops are arithmetic. With `--quantized
qdq` (ExportOptions.quantized) they become QuantizeLinear/DequantizeLinear pairs where they
can: opp/quantize_qdq.py.

- FakeQuant: quant range [narrow_range ? 1 : 0, 2^num_bits - 1]; scale = (max - min) / range
  width; the zero point min-side, clamped into the range and rounded half away from zero; the
  nudged min and max from it; x clamped to them, then floor((x - min') * inverse - zero' + 0.5)
  * scale, inverse = range width / (max - min) computed apart and zero' = floor(-min' * inverse +
  0.5) (the Vars kernel divides by the scale instead: attribute `divide`); min = max = 0 gives 0.
  min and max broadcast against x (scalars, or [channels] on the last dim).
- QuantizeDequantize: the range [min, max] given (range_given) or the input's own (over the
  tensor, or per slice along `axis`); quantized range [-2^(b-1) (+1 if narrow_range),
  2^(b-1) - 1] signed, [0, 2^b - 1] unsigned; the scale from the side that fits (TF's rule), x
  clamped (a given range only), scaled, rounded (HALF_TO_EVEN or HALF_UP) and scaled back.
"""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, OpSet
from tf2ir.ir.tensor import FLOAT_TYPES
from tf2ir.opp import quantize_qdq
from tf2ir.opp.emitting import Emitter, emit_cast
from tf2ir.opp.shapes import normalize_axis, same_as_input

OPS = OpSet("tf2ir.opp.quantize")

COMPUTE_IN = {"float16": "float32", "bfloat16": "float32"}


def _lowering(body, qdq):
    """A lowering computing `body(o, node, x, min, max)` in float32 or float64, or with
    `--quantized qdq` the QuantizeLinear/DequantizeLinear pair `qdq(ctx, node)` emits where it
    can (opp/quantize_qdq.py)."""
    def lower(ctx, node):
        if quantize_qdq.wanted(ctx) and qdq(ctx, node):
            return
        dtype = node.inputs[0].desc.dtype
        work = COMPUTE_IN.get(dtype, dtype)
        names = [ctx.input(i) for i in range(3)]
        names = [n if not n or node.inputs[i].desc.dtype == work else emit_cast(ctx, n, work)
                 for i, n in enumerate(names)]
        result = body(Emitter(ctx, work), node, *names)
        if work == dtype:
            ctx.op.Identity(result, out=ctx.output(0))
        else:
            emit_cast(ctx, result, dtype, ctx.output(0))
    return lower


def _check_bits(node, low: int, high: int) -> int:
    bits = node.attrs["num_bits"]
    if not low <= bits <= high:
        raise ConversionError(f"num_bits is {bits}, not in [{low}, {high}]")
    return bits


# -- FakeQuant ----------------------------------------------------------------------------------
fake_quant = (OPS.declare("FakeQuant", "x quantized to num_bits over the nudged [min, max] and "
                                       "dequantized (TF's FakeQuantWithMinMax*).")
              .input("x", FLOAT_TYPES).input("min", FLOAT_TYPES).input("max", FLOAT_TYPES)
              .output("y", FLOAT_TYPES)
              .attr("num_bits", "int", 8).attr("narrow_range", "bool", False)
              .attr("divide", "bool", False, doc="divide by the scale, as TF's Vars kernel "
                                                 "does, rather than multiply by its inverse"))


@fake_quant.infer
def _infer_fake_quant(node):
    _check_bits(node, 2, 16)
    return same_as_input(node)


def _fake_quant(o: Emitter, node, x: str, low: str, high: str) -> str:
    quant_min = 1.0 if node.attrs["narrow_range"] else 0.0
    quant_max = float(2 ** node.attrs["num_bits"] - 1)
    scale = o.Div(o.Sub(high, low), o.c(quant_max - quant_min))
    from_min = o.Sub(o.c(quant_min), o.Div(low, scale))
    rounded = o.Floor(o.Add(from_min, o.c(0.5)))        # from_min >= 0 here: half away from 0
    zero = o.Where(o.Less(from_min, o.c(quant_min)), o.c(quant_min),
                   o.Where(o.Greater(from_min, o.c(quant_max)), o.c(quant_max), rounded))
    nudged_min = o.Mul(o.Sub(o.c(quant_min), zero), scale)
    nudged_max = o.Mul(o.Sub(o.c(quant_max), zero), scale)
    inverse = o.Div(o.c(quant_max - quant_min), o.Sub(high, low))   # not 1 / scale: TF's
    quant_zero = o.Floor(o.Add(o.Mul(o.Neg(nudged_min), inverse), o.c(0.5)))
    shifted = o.Sub(o.Max(o.Min(x, nudged_max), nudged_min), nudged_min)
    shifted = o.Div(shifted, scale) if node.attrs["divide"] else o.Mul(shifted, inverse)
    steps = o.Floor(o.Add(o.Sub(shifted, quant_zero), o.c(0.5)))
    result = o.Mul(steps, scale)
    both_zero = o.And(o.Equal(low, o.c(0.0)), o.Equal(high, o.c(0.0)))     # TF: all zeros
    return o.Where(both_zero, o.c(0.0), result)


fake_quant.lower(_lowering(_fake_quant, quantize_qdq.lower_fake_quant))


# -- QuantizeDequantize ---------------------------------------------------------------------------
quantize_dequantize = (
    OPS.declare("QuantizeDequantize", "x quantized to num_bits over [min, max] (given, or the "
                                      "input's range) and dequantized, per tensor or per slice "
                                      "along axis (TF's QuantizeAndDequantizeV2/V3/V4).")
    .input("x", FLOAT_TYPES).input("min", FLOAT_TYPES).input("max", FLOAT_TYPES)
    .output("y", FLOAT_TYPES)
    .attr("signed_input", "bool", True).attr("num_bits", "int", 8)
    .attr("range_given", "bool", False).attr("round_mode", "str", "HALF_TO_EVEN")
    .attr("narrow_range", "bool", False).attr("axis", "int", -1))


@quantize_dequantize.infer
def _infer_quantize_dequantize(node):
    _check_bits(node, 1, 63 if node.attrs["signed_input"] else 62)
    if node.attrs["round_mode"] not in ("HALF_TO_EVEN", "HALF_UP"):
        raise ConversionError(f"round_mode {node.attrs['round_mode']!r} is not HALF_TO_EVEN or "
                              "HALF_UP")
    axis, rank = node.attrs["axis"], node.inputs[0].desc.rank
    if axis < -1:
        raise ConversionError(f"axis is {axis}: TF takes -1 (per tensor) or a dim")
    if axis != -1 and rank is not None:
        normalize_axis(axis, rank)
    return same_as_input(node)


def _per_slice(o: Emitter, node, value: str) -> str:
    """A per-channel [channels] tensor shaped to broadcast along the node's axis."""
    rank, axis = node.inputs[0].desc.rank, node.attrs["axis"]
    if rank is None:        # [-1] and rank - axis - 1 ones, at run time (axis is >= 0 here)
        ones = o.Expand(o.c([1], "int64"), o.Sub(o.Shape(o.Shape(o.ctx.input(0))),
                                                 o.c([axis + 1], "int64")))
        return o.Reshape(value, o.Concat(o.c([-1], "int64"), ones, axis=0))
    axis = normalize_axis(axis, rank)
    return o.Reshape(value, o.c([-1] + [1] * (rank - axis - 1), "int64"))


def _quantize_dequantize(o: Emitter, node, x: str, low: str, high: str) -> str:
    attrs = node.attrs
    bits, signed, narrow = attrs["num_bits"], attrs["signed_input"], attrs["narrow_range"]
    per_axis = attrs["axis"] != -1
    if attrs["range_given"]:
        if per_axis:
            low, high = _per_slice(o, node, low), _per_slice(o, node, high)
    elif per_axis:
        rank, axis = node.inputs[0].desc.rank, attrs["axis"]
        if rank is None:    # every dim but axis (>= 0 here), at run time
            one = o.c(1, "int64")
            others = o.Concat(o.Range(o.c(0, "int64"), o.c(axis, "int64"), one),
                              o.Range(o.c(axis + 1, "int64"), o.Size(o.Shape(x)), one), axis=0)
        else:
            axis = normalize_axis(axis, rank)
            others = o.c([d for d in range(rank) if d != axis], "int64")
        # a rank-1 x has no other dims: each value is its own range
        low, high = (o.ReduceMin(x, others, keepdims=1, noop_with_empty_axes=1),
                     o.ReduceMax(x, others, keepdims=1, noop_with_empty_axes=1))
    else:
        low, high = o.ReduceMin(x, keepdims=0), o.ReduceMax(x, keepdims=0)
    if signed:
        q_min, q_max = float(-(1 << (bits - 1)) + (1 if narrow else 0)), float((1 << (bits - 1)) - 1)
    else:
        q_min, q_max = 0.0, float((1 << bits) - 1)
    biggest = o.c(np.finfo(np.float32 if o.dtype == "float32" else np.float64).max)
    from_min = o.Where(o.Greater(o.Mul(o.c(q_min), low), o.c(0.0)), o.Div(o.c(q_min), low), biggest)
    from_max = o.Where(o.Greater(o.Mul(o.c(q_max), high), o.c(0.0)), o.Div(o.c(q_max), high),
                       biggest)
    min_side = o.Less(from_min, from_max)
    scale = o.Where(min_side, from_min, from_max)
    inverse = o.Where(min_side, o.Div(low, o.c(q_min if q_min else 1.0)), o.Div(high, o.c(q_max)))
    high = o.Where(min_side, o.Mul(o.c(q_max), inverse), high)
    low = o.Where(min_side, low, o.Mul(o.c(q_min), inverse))
    if attrs["range_given"]:          # TF clamps only a given range (a measured one holds x)
        x = o.Max(o.Min(x, high), low)
    scaled = o.Mul(x, scale)
    if attrs["round_mode"] == "HALF_UP":
        rounded = o.Floor(o.Add(scaled, o.c(0.5)))
    else:
        rounded = o.Round(scaled)
    return o.Mul(rounded, inverse)


quantize_dequantize.lower(_lowering(_quantize_dequantize,
                                     quantize_qdq.lower_quantize_dequantize))
