"""Normalization: fused batch normalization (4-D and 5-D data) and local response
normalization, over the channel dimension the data's format says (NHWC, NCHW, NDHWC, NCDHW)."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import FLOAT_TYPES
from tf2ir.opp.layouts import data_layout
from tf2ir.opp.shapes import same_as_input
from tf2ir.opp.conv import compute_input, emit_spatial

OPS = OpSet("tf2ir.opp.norm")


# -- batch normalization ----------------------------------------------------------------------------
def _batch_norm(op_type: str, outputs: int):
    proto = (OPS.declare(op_type, "Batch normalization with the channel's scale, offset, mean and "
                                   "variance (the channel as x's format says); is_training computes "
                                   "batch statistics instead.")
             .input("x", FLOAT_TYPES).input("scale", FLOAT_TYPES).input("offset", FLOAT_TYPES)
             .input("mean", FLOAT_TYPES).input("variance", FLOAT_TYPES).output("y")
             .output("batch_mean").output("batch_variance")
             .output("reserve_space_1").output("reserve_space_2"))
    if outputs == 6:
        proto.output("reserve_space_3")
    proto.attr("epsilon", "float", 1e-4).attr("exponential_avg_factor", "float", 1.0)
    proto.attr("is_training", "bool", True)
    proto.infer(_infer_batch_norm)
    proto.lower(_lower_batch_norm)
    return proto


def _infer_batch_norm(node):
    x = node.inputs[0].desc
    fmt = data_layout(node, 0) if x.rank is not None or x.format != "ND" else None
    param = node.inputs[1].desc.dtype
    channels = None if x.shape is None else x.shape[fmt.index("C")]
    if channels is None:
        channels = (node.inputs[1].desc.shape or (None,))[0]
    stat = TensorDesc(param, (channels,))
    y = x.copy()
    if y.shape is None and fmt is not None:
        y.shape = (None,) * len(fmt)      # TF's shape function: the format's rank
    descs = [y] + [stat] * 4
    if len(node.outputs) == 6:
        descs.append(TensorDesc(param, (0,)))
    return descs


def _lower_batch_norm(ctx, node):
    x = node.inputs[0].desc
    dtype, param = x.dtype, node.inputs[1].desc.dtype
    if param not in ("float32", "float64"):
        raise ConversionError(f"scale/offset/mean/variance of dtype {param} are not supported")
    if x.rank is None and x.format == "ND":
        raise ConversionError("the input's rank or format (NHWC, NCHW, NDHWC, NCDHW) must be known")
    # of unknown rank, x has its format's (TF's shape function checks x against data_format)
    fmt = data_layout(node, 0)
    rank, channel = len(fmt), fmt.index("C")
    np_param = np.dtype(param)
    eps = node.attrs["epsilon"]
    # The per-channel vectors broadcast against x: (C,) for channels-last, (C, 1, ...) else.
    param_shape = ctx.constant(np.array([-1] + [1] * (rank - 1 - channel), np.int64))

    def to_x(name):
        return name if channel == rank - 1 else ctx.op.Reshape(name, param_shape)

    xs = ctx.input(0)
    if dtype != param:
        xs = ctx.op.Cast(xs, to=ONNX_DTYPES[param])
    values = [ctx.const_input(i) for i in range(1, 5)]
    if not node.attrs["is_training"]:
        if all(v is not None for v in values):
            scale, offset, mean, var = (np.asarray(v, np_param) for v in values)
            a = scale / np.sqrt(var + np_param.type(eps))
            b = offset - mean * a
            if channel != rank - 1:
                a, b = (v.reshape((-1,) + (1,) * (rank - 1 - channel)) for v in (a, b))
            mul, add = ctx.constant(a, "bn_scale"), ctx.constant(b, "bn_offset")
        else:
            shifted = ctx.op.Add(ctx.input(4), ctx.constant(np.array(eps, np_param)))
            std = ctx.op.Sqrt(shifted)
            a = ctx.op.Div(ctx.input(1), std)
            b = ctx.op.Sub(ctx.input(2), ctx.op.Mul(ctx.input(3), a))
            mul, add = to_x(a), to_x(b)
        batch_mean, batch_var, saved_mean, saved_var = ctx.input(3), ctx.input(4), ctx.input(3), ctx.input(4)
        normalized = ctx.op.Add(ctx.op.Mul(xs, mul), add)
    else:
        axes = ctx.constant(np.array([i for i in range(rank) if i != channel], np.int64))
        mean = ctx.op.ReduceMean(xs, axes, keepdims=1)
        centered = ctx.op.Sub(xs, mean)
        var = ctx.op.ReduceMean(ctx.op.Mul(centered, centered), axes, keepdims=1)
        std = ctx.op.Sqrt(ctx.op.Add(var, ctx.constant(np.array(eps, np_param))))
        scaled = ctx.op.Div(centered, std)
        normalized = ctx.op.Add(ctx.op.Mul(scaled, to_x(ctx.input(1))),
                                to_x(ctx.input(2)))
        flat = ctx.constant(np.array([-1], np.int64))
        saved_mean = ctx.op.Reshape(mean, flat)
        saved_var = ctx.op.Reshape(var, flat)
        # TF reports the unbiased (Bessel-corrected) variance, averaged into the running one.
        shape = ctx.op.Shape(xs)
        count = ctx.op.ReduceProd(ctx.op.Gather(shape, axes, axis=0), keepdims=0)
        count = ctx.op.Cast(count, to=ONNX_DTYPES[param])
        one = ctx.constant(np.array(1, np_param))
        bessel = ctx.op.Div(count, ctx.op.Max(ctx.op.Sub(count, one), one))
        batch_mean, batch_var = saved_mean, ctx.op.Mul(saved_var, bessel)
        factor = node.attrs["exponential_avg_factor"]
        if factor != 1.0:
            if any(node.inputs[i].desc.shape == (0,) for i in (3, 4)):
                raise ConversionError("exponential_avg_factor != 1 needs the running mean and variance")
            keep, new = ctx.constant(np.array(1 - factor, np_param)), ctx.constant(np.array(factor, np_param))
            batch_mean, batch_var = (
                ctx.op.Add(ctx.op.Mul(ctx.input(i), keep), ctx.op.Mul(v, new))
                for i, v in ((3, batch_mean), (4, batch_var)))
    if dtype != param:
        ctx.op.Cast(normalized, out=ctx.output(0), to=ONNX_DTYPES[dtype])
    else:
        ctx.op.Identity(normalized, out=ctx.output(0))
    for index, name in enumerate([batch_mean, batch_var, saved_mean, saved_var], start=1):
        ctx.op.Identity(name, out=ctx.output(index))
    if len(node.outputs) == 6:
        ctx.op.Identity(ctx.constant(np.zeros(0, np_param), "reserve"), out=ctx.output(5))


_batch_norm("FusedBatchNorm", 5)
_batch_norm("FusedBatchNormV3", 6)


# -- local response normalization ---------------------------------------------------------------------
lrn = (OPS.declare("LRN", "Local response normalization over the channel axis (NHWC or NCHW, as "
                           "x's format says): x / (bias + alpha * sum of squares over "
                           "2*depth_radius+1 channels)^beta.")
       .input("x", FLOAT_TYPES).output("y").attr("depth_radius", "int", 5).attr("bias", "float", 1.0)
       .attr("alpha", "float", 1.0).attr("beta", "float", 0.5))


@lrn.infer
def _infer_lrn(node):
    if node.inputs[0].desc.rank not in (None, 4):
        raise ConversionError("LRN needs a rank-4 input")
    data_layout(node, 0, 4)
    return same_as_input(node)


@lrn.lower
def _lower_lrn(ctx, node):
    size = 2 * node.attrs["depth_radius"] + 1
    dtype, fmt = node.inputs[0].desc.dtype, data_layout(node, 0, 4)
    # ONNX divides alpha by the window size; TF does not.
    emit_spatial(ctx, fmt, "LRN", [compute_input(ctx, 0, dtype)], dtype, size=size,
                 alpha=node.attrs["alpha"] * size, beta=node.attrs["beta"], bias=node.attrs["bias"])
