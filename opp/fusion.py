"""Ops that scope fusion produces: LayerNorm, RMSNorm, Gelu, Swish, HardSigmoid (ONNX opset
18; Gelu is ONNX opset 20's, so a model with it is opset 20). Forms by target opset
(`@proto.lower(opsets=...)`): LayerNorm's ONNX LayerNormalization from 17 (its formula
before), Gelu's ONNX Gelu from 20 (its formula before)."""

from __future__ import annotations

import math

import numpy as np

from tf2ir.ir import ConversionError, OpSet
from tf2ir.ir.tensor import FLOAT_TYPES
from tf2ir.opp.emitting import emit_cast
from tf2ir.opp.shapes import normalize_axis, same_as_input

OPS = OpSet("tf2ir.opp.fusion")

layer_norm = (OPS.declare("LayerNorm", "Normalizes over the axes from begin_norm_axis to the "
                                        "last: (x - mean) / sqrt(var + epsilon) * gamma + beta.")
              .input("x", FLOAT_TYPES).optional_input("gamma", FLOAT_TYPES)
              .optional_input("beta", FLOAT_TYPES).output("y")
              .attr("epsilon", "float", 1e-5).attr("begin_norm_axis", "int", -1))


@layer_norm.infer
def _infer_layer_norm(node):
    x = node.inputs[0].desc
    if x.rank is not None:
        normalize_axis(node.attrs["begin_norm_axis"], x.rank)
    return same_as_input(node)


@layer_norm.lower
def _lower_layer_norm(ctx, node):
    axis = node.attrs["begin_norm_axis"]
    scale = ctx.input(1)
    if not scale:   # ONNX needs a scale: ones shaped like the normalized dims
        dtype = np.dtype(node.inputs[0].desc.dtype)
        dims = ctx.op.Shape(ctx.input(0), start=axis)
        scale = ctx.op.Expand(ctx.constant(np.ones(1, dtype), "one"), dims)
    inputs = [ctx.input(0), scale] + ([ctx.input(2)] if ctx.input(2) else [])
    ctx.op.LayerNormalization(*inputs, out=ctx.output(0), axis=axis,
                              epsilon=node.attrs["epsilon"])


@layer_norm.lower(opsets=(13, 16))
def _lower_layer_norm_16(ctx, node):
    """Before ONNX LayerNormalization (opset 17): (x - mean) / sqrt(var + epsilon) * gamma
    + beta over the axes from begin_norm_axis to the last, at x's dtype."""
    x, desc = ctx.input(0), node.inputs[0].desc
    axis = node.attrs["begin_norm_axis"]
    if axis >= 0:
        if desc.rank is None:
            raise ConversionError(f"begin_norm_axis {axis} counts from the front and the rank "
                                  "is unknown: opset 17 or newer (LayerNormalization) holds it")
        axis -= desc.rank
    dtype = np.dtype(desc.dtype)
    axes = ctx.constant(np.arange(axis, 0, dtype=np.int64), "axes")
    centred = ctx.op.Sub(x, ctx.op.ReduceMean(x, axes, keepdims=1))
    var = ctx.op.ReduceMean(ctx.op.Mul(centred, centred), axes, keepdims=1)
    eps = ctx.constant(np.array(node.attrs["epsilon"], dtype), "epsilon")
    normal = ctx.op.Div(centred, ctx.op.Sqrt(ctx.op.Add(var, eps)))
    if ctx.input(1) and ctx.input(2):
        ctx.op.Add(ctx.op.Mul(normal, ctx.input(1)), ctx.input(2), out=ctx.output(0))
    elif ctx.input(1) or ctx.input(2):
        op = ctx.op.Mul if ctx.input(1) else ctx.op.Add
        op(normal, ctx.input(1) or ctx.input(2), out=ctx.output(0))
    else:
        ctx.op.Identity(normal, out=ctx.output(0))


rms_norm = (OPS.declare("RMSNorm", "Scales by the root mean square over the axes from "
                                    "begin_norm_axis to the last: x / sqrt(mean(x^2) + epsilon) "
                                    "* gamma (T5, LLaMA; no mean subtracted, no beta).")
            .input("x", FLOAT_TYPES).optional_input("gamma", FLOAT_TYPES).output("y")
            .attr("epsilon", "float", 1e-6).attr("begin_norm_axis", "int", -1))


rms_norm.infer(_infer_layer_norm)


@rms_norm.lower
def _lower_rms_norm(ctx, node):
    """Standard ops in the form onnxruntime fuses into one SimplifiedLayerNormalization
    kernel (Pow by 2, ReduceMean, Add, Sqrt, Div, Mul by the scale) and that keeps the
    model at opset 18, where ONNX's own RMSNormalization would need opset 23."""
    x, desc = ctx.input(0), node.inputs[0].desc
    dtype = np.dtype(desc.dtype)
    axis = node.attrs["begin_norm_axis"]
    if axis >= 0:                   # inference checked it against the known rank
        axis -= desc.rank
    square = ctx.op.Pow(x, ctx.constant(np.array(2, dtype), "two"))
    mean = ctx.op.ReduceMean(square, ctx.constant(np.arange(axis, 0, dtype=np.int64),
                                                        "axes"), keepdims=1)
    shifted = ctx.op.Add(mean, ctx.constant(np.array(node.attrs["epsilon"], dtype),
                                                  "epsilon"))
    root = ctx.op.Sqrt(shifted)
    if not ctx.input(1):
        ctx.op.Div(x, root, out=ctx.output(0))
        return
    ctx.op.Mul(ctx.op.Div(x, root), ctx.input(1), out=ctx.output(0))


gelu = (OPS.declare("Gelu", "x * Phi(x), Phi the normal CDF; approximate 'tanh' uses "
                             "0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).")
        .input("x", FLOAT_TYPES).output("y").attr("approximate", "str", "none"))


@gelu.infer
def _infer_gelu(node):
    if node.attrs["approximate"] not in ("none", "tanh"):
        raise ConversionError(f"approximate must be 'none' or 'tanh', not {node.attrs['approximate']!r}")
    return same_as_input(node)


@gelu.lower
def _lower_gelu(ctx, node):
    """The formula from its ops, which every target opset has (ONNX Gelu is opset 20's)."""
    dtype = node.inputs[0].desc.dtype
    x = ctx.input(0) if dtype == "float32" else emit_cast(ctx, ctx.input(0), "float32")

    def c(value):
        return ctx.constant(np.array(value, np.float32), "gelu")
    if node.attrs["approximate"] == "tanh":
        cubic = ctx.op.Mul(ctx.op.Pow(x, c(3.0)), c(0.044715))
        inner = ctx.op.Mul(ctx.op.Add(x, cubic), c(math.sqrt(2 / math.pi)))
        phi = ctx.op.Tanh(inner)
    else:           # erf has a float32 kernel only in onnxruntime's CPU backend
        phi = ctx.op.Erf(ctx.op.Div(x, c(math.sqrt(2.0))))
    half_x = ctx.op.Mul(x, c(0.5))
    if dtype == "float32":
        ctx.op.Mul(half_x, ctx.op.Add(phi, c(1.0)), out=ctx.output(0))
    else:
        emit_cast(ctx, ctx.op.Mul(half_x, ctx.op.Add(phi, c(1.0))), dtype,
                  ctx.output(0))


@gelu.lower(opsets=(20, None))
def _lower_gelu_20(ctx, node):
    """ONNX Gelu (opset 20 on): one node that onnxruntime runs as one kernel and fuses with a
    preceding bias."""
    ctx.op.Gelu(ctx.input(0), out=ctx.output(0), approximate=node.attrs["approximate"])


swish = (OPS.declare("Swish", "x * sigmoid(beta * x) (SiLU for beta 1).")
         .input("x", FLOAT_TYPES).output("y").attr("beta", "float", 1.0))
swish.infer(same_as_input)


@swish.lower
def _lower_swish(ctx, node):
    x, beta = ctx.input(0), node.attrs["beta"]
    scaled = x if beta == 1.0 else ctx.op.Mul(
        x, ctx.constant(np.array(beta, np.dtype(node.inputs[0].desc.dtype))))
    ctx.op.Mul(x, ctx.op.Sigmoid(scaled), out=ctx.output(0))


hard_sigmoid = (OPS.declare("HardSigmoid", "max(0, min(1, alpha * x + beta)).")
                .input("x", FLOAT_TYPES).output("y")
                .attr("alpha", "float", 0.2).attr("beta", "float", 0.5))
hard_sigmoid.infer(same_as_input)


@hard_sigmoid.lower
def _lower_hard_sigmoid(ctx, node):
    ctx.op.HardSigmoid(ctx.input(0), out=ctx.output(0), alpha=node.attrs["alpha"], beta=node.attrs["beta"])
