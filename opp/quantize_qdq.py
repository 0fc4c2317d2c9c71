"""`--quantized qdq`: fake quantization as ONNX QuantizeLinear/DequantizeLinear pairs, the form
onnxruntime's QDQ fusion turns into int8 kernels (QLinearConv, QLinearMatMul, MatMulInteger).

The default ("exact", opp/quantize.py) computes TF's arithmetic to the bit; this form is what
an int8 runtime computes instead, within one quantization step of TF:
- FakeQuant (TF's FakeQuantWithMinMaxArgs/Vars/VarsPerChannel) with num_bits 8 and constant
  min and max: TF's nudged scale and zero point (the same integer lattice TF rounds onto);
  uint8 with the zero point TF's nudging gives, int8 (zero point - 128) for narrow_range; per
  channel along the last axis;
- QuantizeDequantize (QuantizeAndDequantizeV2/V3/V4) with num_bits 8 and a given constant
  range (or a constant input, whose range is measured here): zero point 0, int8 signed,
  uint8 unsigned, the scale TF's side rule gives; per channel along `axis`.
A constant input (a weight) becomes an int8 initializer holding TF's own quantized values
read through DequantizeLinear (bit-exact to TF), which is what onnxruntime's fusion reads.
Anything else (num_bits other than 8, a min or max computed at run time, a range measured at
run time, min == max, dtypes other than float32) keeps the exact arithmetic, with a note.
ONNX rounds half to even and saturates to the integer type's range, TF rounds half up and
clamps to [nudged min, nudged max]: ties and, under narrow_range, values below the range
land one step away.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

F32 = np.float32


def wanted(ctx) -> bool:
    """Whether the user asked for Q/DQ pairs (`--quantized qdq`)."""
    export = getattr(ctx, "export", None)
    return export is not None and export.quantized == "qdq"


def _fallback(ctx, node, why: str) -> bool:
    ctx.note(f"{node.name} ({node.op_type}): {why}; kept as exact float arithmetic, not "
             "QuantizeLinear/DequantizeLinear", warning=True)
    return False


# -- FakeQuant ----------------------------------------------------------------------------------
def fake_quant_params(low: np.ndarray, high: np.ndarray, narrow: bool):
    """TF's nudging for 8 bits, in float32 as TF computes it: (scale, zero point as a float,
    quant_min, quant_max)."""
    low, high = np.asarray(low, F32), np.asarray(high, F32)
    quant_min, quant_max = F32(1.0 if narrow else 0.0), F32(255.0)
    scale = (high - low) / (quant_max - quant_min)
    with np.errstate(all="ignore"):
        from_min = quant_min - low / scale
    zero = np.where(from_min < quant_min, quant_min,
                    np.where(from_min > quant_max, quant_max,
                             np.floor(from_min + F32(0.5)))).astype(F32)
    return scale.astype(F32), zero, quant_min, quant_max


def fake_quant_steps(x: np.ndarray, low: np.ndarray, high: np.ndarray, narrow: bool,
                     divide: bool) -> np.ndarray:
    """TF's FakeQuant of a constant `x` as integer steps above the zero point (the exact
    lowering's arithmetic, opp/quantize.py, in numpy): the dequantized value is steps * scale."""
    low, high = np.asarray(low, F32), np.asarray(high, F32)
    scale, zero, quant_min, quant_max = fake_quant_params(low, high, narrow)
    nudged_min, nudged_max = (quant_min - zero) * scale, (quant_max - zero) * scale
    inverse = (quant_max - quant_min) / (high - low)
    quant_zero = np.floor(-nudged_min * inverse + F32(0.5))
    shifted = np.maximum(np.minimum(np.asarray(x, F32), nudged_max), nudged_min) - nudged_min
    shifted = shifted / scale if divide else shifted * inverse
    return np.floor(shifted - quant_zero + F32(0.5))


def _axis_of(node, low: np.ndarray, rank: Optional[int]) -> Tuple[Optional[int], str]:
    """The per-channel axis (None per tensor), or a reason why there is none."""
    if low.ndim == 0 or low.size == 1 and low.ndim <= 1:
        return None, ""
    if rank is None:
        return None, "per-channel ranges on an input of unknown rank"
    return rank - 1, ""


def lower_fake_quant(ctx, node) -> bool:
    """Emit FakeQuant as Q/DQ (True), or note why not and return False."""
    if node.attrs["num_bits"] != 8:
        return _fallback(ctx, node, f"num_bits is {node.attrs['num_bits']}, not 8")
    if node.inputs[0].desc.dtype != "float32":
        return _fallback(ctx, node, f"its input is {node.inputs[0].desc.dtype}, not float32")
    low, high = ctx.const_input(1), ctx.const_input(2)
    if low is None or high is None:
        return _fallback(ctx, node, "min or max is computed at run time")
    low, high = np.asarray(low, F32), np.asarray(high, F32)
    if not np.all(low < high):
        return _fallback(ctx, node, "min is not below max")
    axis, why = _axis_of(node, low, node.inputs[0].desc.rank)
    if why:
        return _fallback(ctx, node, why)
    if axis is None:
        low, high = low.reshape(()), high.reshape(())
    narrow = bool(node.attrs["narrow_range"])
    scale, zero, _, _ = fake_quant_params(low, high, narrow)
    x = ctx.const_input(0)
    if x is not None:           # a weight: TF's own steps, stored as int8
        steps = fake_quant_steps(x, low, high, narrow, bool(node.attrs["divide"]))
        q = np.clip(steps + (zero - 128), -128, 127).astype(np.int8)
        _dequantize(ctx, ctx.constant(q, "quantized"), scale, (zero - 128).astype(np.int8),
                    axis)
        return True
    # an activation: uint8 with TF's zero point; narrow_range in int8, its range [-127, 127]
    zero_point = (zero - 128).astype(np.int8) if narrow else zero.astype(np.uint8)
    _quantize_dequantize(ctx, scale, zero_point, axis)
    return True


# -- QuantizeDequantize -------------------------------------------------------------------------
def qdq_params(low: np.ndarray, high: np.ndarray, signed: bool, narrow: bool):
    """TF's side rule for 8 bits, in float32: (scale factor, inverse = ONNX's scale, the
    adjusted min and max, q_min, q_max)."""
    low, high = np.asarray(low, F32), np.asarray(high, F32)
    if signed:
        q_min, q_max = F32(-128 + (1 if narrow else 0)), F32(127)
    else:
        q_min, q_max = F32(0), F32(255)
    biggest = np.finfo(F32).max
    with np.errstate(all="ignore"):
        from_min = np.where(q_min * low > 0, q_min / low, biggest).astype(F32)
        from_max = np.where(q_max * high > 0, q_max / high, biggest).astype(F32)
        min_side = from_min < from_max
        factor = np.where(min_side, from_min, from_max).astype(F32)
        inverse = np.where(min_side, low / (q_min if q_min else F32(1)),
                           high / q_max).astype(F32)
    new_high = np.where(min_side, q_max * inverse, high).astype(F32)
    new_low = np.where(min_side, low, q_min * inverse).astype(F32)
    return factor, inverse, new_low, new_high, q_min, q_max


def lower_quantize_dequantize(ctx, node) -> bool:
    """Emit QuantizeDequantize as Q/DQ (True), or note why not and return False."""
    attrs = node.attrs
    if attrs["num_bits"] != 8:
        return _fallback(ctx, node, f"num_bits is {attrs['num_bits']}, not 8")
    if node.inputs[0].desc.dtype != "float32":
        return _fallback(ctx, node, f"its input is {node.inputs[0].desc.dtype}, not float32")
    x = ctx.const_input(0)
    per_axis, rank = attrs["axis"] != -1, node.inputs[0].desc.rank
    if per_axis and rank is None:
        return _fallback(ctx, node, "a per-axis range on an input of unknown rank")
    axis = None if not per_axis else attrs["axis"] % rank
    if attrs["range_given"]:
        low, high = ctx.const_input(1), ctx.const_input(2)
        if low is None or high is None:
            return _fallback(ctx, node, "min or max is computed at run time")
        low, high = np.asarray(low, F32), np.asarray(high, F32)
    elif x is not None:         # a constant's own range, measured now
        x = np.asarray(x, F32)
        others = tuple(d for d in range(x.ndim) if d != axis) if per_axis else None
        low, high = x.min(axis=others), x.max(axis=others)
    else:
        return _fallback(ctx, node, "its range is measured at run time (range_given is false)")
    if not per_axis:
        low, high = low.reshape(()), high.reshape(())
    signed, narrow = bool(attrs["signed_input"]), bool(attrs["narrow_range"])
    factor, inverse, new_low, new_high, q_min, q_max = qdq_params(low, high, signed, narrow)
    if not np.all((inverse > 0) & np.isfinite(inverse)):
        return _fallback(ctx, node, "its range gives no positive scale")
    int_type = np.int8 if signed else np.uint8
    zero = np.zeros(inverse.shape, int_type)
    if x is not None:           # a weight: TF's own rounded values
        shape = [1] * x.ndim
        if per_axis:
            shape[axis] = -1
        scaled = x
        if attrs["range_given"]:
            scaled = np.maximum(np.minimum(x, new_high.reshape(shape)), new_low.reshape(shape))
        scaled = scaled * factor.reshape(shape)
        rounded = (np.floor(scaled + F32(0.5)) if attrs["round_mode"] == "HALF_UP"
                   else np.round(scaled))
        q = np.clip(rounded, q_min, q_max).astype(int_type)
        _dequantize(ctx, ctx.constant(q, "quantized"), inverse, zero, axis)
        return True
    _quantize_dequantize(ctx, inverse, zero, axis)
    return True


# -- emitting -----------------------------------------------------------------------------------
def _dequantize(ctx, quantized: str, scale: np.ndarray, zero: np.ndarray, axis) -> None:
    ctx.op.DequantizeLinear(quantized, ctx.constant(np.asarray(scale, F32), "scale"),
                            ctx.constant(zero, "zero_point"), out=ctx.output(0),
                            axis=axis if np.ndim(scale) else None)


def _quantize_dequantize(ctx, scale: np.ndarray, zero: np.ndarray, axis) -> None:
    scale_name = ctx.constant(np.asarray(scale, F32), "scale")
    zero_name = ctx.constant(zero, "zero_point")
    per_axis = axis if np.ndim(scale) else None
    quantized = ctx.op.QuantizeLinear(ctx.input(0), scale_name, zero_name, axis=per_axis)
    ctx.op.DequantizeLinear(quantized, scale_name, zero_name, out=ctx.output(0), axis=per_axis)
