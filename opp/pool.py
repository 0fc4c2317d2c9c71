"""Pooling: max and average over the spatial windows of 4-D and 5-D data, laid out as the data's
format says (NHWC, NCHW, NDHWC, NCDHW); ksize and strides follow that layout.

TF's SAME padding is given to ONNX as explicit pads when the spatial sizes it depends on are
known. onnxruntime's auto_pad=SAME_UPPER computes the same pads but refuses them when they come
out negative (a kernel smaller than the stride), so with unknown sizes it is used only where
that cannot happen (every kernel at least its stride); otherwise the pads are computed at run
time, the data padded by a Pad node and pooled VALID (average: the padded zeros are left out of
the count by pooling a mask of ones the same way, as TF's SAME average counts only real data)."""

from __future__ import annotations

from typing import List

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.kernels import kernel_types
from tf2ir.ir.tensor import FLOAT_TYPES, NUMBER_TYPES, numpy_dtype
from tf2ir.opp.emitting import Emitter, emit_cast
from tf2ir.opp.layouts import data_layout, spatial_attrs
from tf2ir.opp.conv import (ORT_CONV_TYPES, compute_input, emit_spatial, onnx_pads, same_pads,
                            windowed_shape)

OPS = OpSet("tf2ir.opp.pool")

# onnxruntime's CPU MaxPool kernel takes these dtypes (AveragePool: ORT_CONV_TYPES).
ORT_MAXPOOL_TYPES = kernel_types("MaxPool", NUMBER_TYPES)
# TF's MaxPool dtypes (its op registry; qint8 aside). The integers onnxruntime's MaxPool lacks
# pool in a float that holds each of their values exactly (max commutes with that cast);
# int64 has no such float and is refused.
MAXPOOL_TYPES = FLOAT_TYPES + ("int8", "int16", "int32", "int64", "uint8", "uint16")
EXACT_FLOAT = {"int16": "float32", "uint16": "float32", "int32": "float64"}


def _pool_input(ctx, node, dtype, supported):
    """Input 0 in a dtype the ONNX pooling kernel takes (see EXACT_FLOAT)."""
    if dtype == "int64":
        raise ConversionError("MaxPool on int64 is not supported: onnxruntime's MaxPool has no "
                              "int64 kernel and no float holds every int64 exactly")
    if dtype in EXACT_FLOAT:
        return emit_cast(ctx, ctx.input(0), EXACT_FLOAT[dtype])
    return compute_input(ctx, 0, dtype, supported)


def _pool(op_type, onnx_op, doc):
    types = MAXPOOL_TYPES if onnx_op == "MaxPool" else FLOAT_TYPES
    proto = (OPS.declare(op_type, doc).input("x", types).output("y")
             .attr("ksize", "ints").attr("strides", "ints").attr("padding", "str")
             .attr("explicit_paddings", "ints", []))

    @proto.infer
    def infer(node):
        x = node.inputs[0].desc
        fmt = data_layout(node, 0, len(node.attrs["ksize"]))
        channels = None if x.shape is None else x.shape[fmt.index("C")]
        kernel = spatial_attrs(node.attrs["ksize"], fmt)
        return [TensorDesc(x.dtype, windowed_shape(node, x, kernel, channels, fmt), fmt, fmt)]

    @proto.lower
    def lower(ctx, node):
        fmt = data_layout(node, 0, len(node.attrs["ksize"]))
        dtype = node.inputs[0].desc.dtype
        supported = ORT_CONV_TYPES if onnx_op == "AveragePool" else ORT_MAXPOOL_TYPES
        kernel = spatial_attrs(node.attrs["ksize"], fmt)
        strides = spatial_attrs(node.attrs["strides"], fmt)
        x = _pool_input(ctx, node, dtype, supported)
        pads = _pool_pads(node, fmt, kernel, strides)
        if pads is None:
            _lower_padded_at_run_time(ctx, onnx_op, fmt, x, dtype, supported, kernel, strides)
            return
        extra = {"count_include_pad": 0} if onnx_op == "AveragePool" else {}
        emit_spatial(ctx, fmt, onnx_op, [x], dtype, supported, kernel_shape=kernel,
                     strides=strides, **pads, **extra)
    return proto


def _pool_pads(node, fmt, kernel, strides):
    """The ONNX pads/auto_pad attributes of a pooling node; None when TF's SAME pads must be
    computed at run time (unknown spatial sizes and a kernel smaller than its stride)."""
    if node.attrs["padding"] != "SAME":
        return onnx_pads(node, fmt, kernel)
    x = node.inputs[0].desc
    spatial = spatial_attrs(x.shape, fmt) if x.shape is not None else [None] * len(kernel)
    pads = same_pads(spatial, kernel, strides, [1] * len(kernel))
    if pads is not None:
        return {"pads": pads}
    if all(k >= s for k, s in zip(kernel, strides)):
        return {"auto_pad": "SAME_UPPER"}    # its pads are TF's and never negative here
    return None


def _lower_padded_at_run_time(ctx, onnx_op, fmt, x, dtype, supported, kernel, strides):
    """Pool `x` (already in a `supported` dtype) with TF's SAME pads computed from its run-time
    spatial sizes: a Pad node, then VALID pooling."""
    work = dtype if dtype in supported else EXACT_FLOAT.get(dtype, "float32")
    o = Emitter(ctx, "int64")
    spatial = [i for i, c in enumerate(fmt) if c not in "NC"]
    sizes = o.Gather(o.Shape(x), o.c(spatial), axis=0)
    pads = _same_pads_at_run_time(o, fmt, sizes, kernel, strides)
    pool = {"kernel_shape": kernel, "strides": strides, "auto_pad": "VALID"}
    if onnx_op == "MaxPool":
        lowest = ctx.constant(np.array(-np.inf, numpy_dtype(work)) if work in FLOAT_TYPES
                              else np.array(np.iinfo(numpy_dtype(work)).min, numpy_dtype(work)))
        padded = o.Pad(x, pads, lowest)
        emit_spatial(ctx, fmt, "MaxPool", [padded], dtype, supported, **pool)
        return
    # Average over real data only: pool the zero-padded data and a zero-padded mask of ones
    # (N and C of size 1) alike; their ratio is the sum over the real elements by their count.
    zero = ctx.constant(np.array(0, numpy_dtype(work)))
    ones_shape = o.Concat(*_around_spatial(o, fmt, sizes, 1), axis=0)
    mask = o.Expand(ctx.constant(np.array(1, numpy_dtype(work))), ones_shape)
    means = [ctx.fresh("mean"), ctx.fresh("count")]
    for data, name in zip((o.Pad(x, pads, zero), o.Pad(mask, pads, zero)), means):
        emit_spatial(ctx, fmt, "AveragePool", [data], work, supported, output=name, **pool)
    if work == dtype:
        o.Div(*means, out=ctx.output(0))
    else:
        emit_cast(ctx, o.Div(*means), dtype, ctx.output(0))


def _same_pads_at_run_time(o: Emitter, fmt: str, sizes: str, kernel: List[int],
                           strides: List[int]) -> str:
    """The int64 pads (begins, then ends; none for N and C) of TF's SAME padding of spatial
    `sizes`: total = max((ceil(size / stride) - 1) * stride + kernel - size, 0), the smaller
    half before."""
    stride = o.c(strides)
    out = o.Div(o.Add(sizes, o.c([s - 1 for s in strides])), stride)
    total = o.Max(o.Sub(o.Add(o.Mul(o.Sub(out, o.c(1)), stride), o.c(kernel)), sizes), o.c(0))
    before = o.Div(total, o.c(2))
    after = o.Sub(total, before)
    return o.Concat(*_around_spatial(o, fmt, before, 0), *_around_spatial(o, fmt, after, 0),
                    axis=0)


def _around_spatial(o: Emitter, fmt: str, spatial: str, fill: int) -> List[str]:
    """The 1-D pieces of a per-axis vector of a `fmt` tensor: `fill` for N and C around the
    `spatial` entries."""
    if fmt.endswith("C"):
        return [o.c([fill]), spatial, o.c([fill])]
    return [o.c([fill, fill]), spatial]


_pool("MaxPool", "MaxPool", "Max pooling over spatial windows (2-D or 3-D).")
_pool("AvgPool", "AveragePool", "Average pooling (2-D or 3-D); padding is not counted (TF semantics).")
