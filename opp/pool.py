"""Pooling: max and average over the spatial windows of 4-D and 5-D data, laid out as the data's
format says (NHWC, NCHW, NDHWC, NCDHW); ksize and strides follow that layout."""

from __future__ import annotations

from tf2ir.ir import TensorDesc, OpSet
from tf2ir.ir.tensor import FLOAT_TYPES
from tf2ir.opp.common import data_layout, spatial_attrs
from tf2ir.opp.conv import ORT_CONV_TYPES, compute_input, emit_spatial, onnx_pads, windowed_shape

OPS = OpSet("tf2ir.opp.pool")

# onnxruntime's CPU MaxPool kernel takes these dtypes (AveragePool: ORT_CONV_TYPES).
ORT_MAXPOOL_TYPES = ("float16", "float32", "float64", "int8", "uint8")


def _pool(op_type, onnx_op, doc):
    proto = (OPS.declare(op_type, doc).input("x", FLOAT_TYPES).output("y")
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
        extra = {"count_include_pad": 0} if onnx_op == "AveragePool" else {}
        dtype = node.inputs[0].desc.dtype
        supported = ORT_CONV_TYPES if onnx_op == "AveragePool" else ORT_MAXPOOL_TYPES
        kernel = spatial_attrs(node.attrs["ksize"], fmt)
        emit_spatial(ctx, fmt, onnx_op, [compute_input(ctx, 0, dtype, supported)], dtype, supported,
                     kernel_shape=kernel, strides=spatial_attrs(node.attrs["strides"], fmt),
                     **onnx_pads(node, fmt, kernel), **extra)
    return proto


_pool("MaxPool", "MaxPool", "Max pooling over spatial windows (2-D or 3-D).")
_pool("AvgPool", "AveragePool", "Average pooling (2-D or 3-D); padding is not counted (TF semantics).")
