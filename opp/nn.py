"""Neural-network ops: convolutions, pooling, bias, softmax and activations."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, op_prototype
from tf2ir.ir.tensor import FLOAT_TYPES
from tf2ir.opp.common import emit_channels_first, same_as_input, spatial_attrs, window_output


def _explicit_pads(node, data_format):
    pads = list(node.attrs.get("explicit_paddings") or [])
    if node.attrs["padding"] != "EXPLICIT":
        return None
    if len(pads) != 2 * len(data_format):
        raise ConversionError(f"explicit_paddings needs {2 * len(data_format)} values, got {len(pads)}")
    pairs = [pads[2 * i:2 * i + 2] for i in range(len(data_format))]
    return spatial_attrs(pairs, data_format)


def _onnx_pads(node, data_format, kernel):
    """ONNX pads/auto_pad attributes for a TF padding attribute."""
    padding = node.attrs["padding"]
    dilations = spatial_attrs(node.attrs.get("dilations") or [1] * len(data_format), data_format)
    if padding == "SAME" and any(d != 1 for d in dilations):
        # onnxruntime rejects auto_pad SAME_* with dilations: give TF's SAME pads explicitly.
        x = node.inputs[0].desc
        spatial = spatial_attrs(x.shape, data_format) if x.shape is not None else [None]
        if None in spatial:
            raise ConversionError("SAME padding with dilations needs known spatial dims")
        strides = spatial_attrs(node.attrs["strides"], data_format)
        begins, ends = [], []
        for size, k, stride, dilation in zip(spatial, kernel, strides, dilations):
            total = max((-(-size // stride) - 1) * stride + (k - 1) * dilation + 1 - size, 0)
            begins.append(total // 2)
            ends.append(total - total // 2)
        return {"pads": begins + ends}
    if padding == "SAME":
        return {"auto_pad": "SAME_UPPER"}
    if padding == "VALID":
        return {"auto_pad": "VALID"}
    pairs = _explicit_pads(node, data_format)
    return {"pads": [p[0] for p in pairs] + [p[1] for p in pairs]}


def _windowed_shape(node, x, kernel, out_channels, data_format):
    if x.shape is None:
        return None
    strides = spatial_attrs(node.attrs["strides"], data_format)
    dilations = spatial_attrs(node.attrs.get("dilations") or [1] * len(data_format), data_format)
    pairs = _explicit_pads(node, data_format) or [(0, 0)] * len(kernel)
    spatial = spatial_attrs(x.shape, data_format)
    out = [window_output(s, k, st, d, node.attrs["padding"], p)
           for s, k, st, d, p in zip(spatial, kernel, strides, dilations, pairs)]
    if data_format.endswith("C"):
        return (x.shape[0], *out, out_channels)
    return (x.shape[0], out_channels, *out)


def _conv_common(proto):
    return (proto.input("x", FLOAT_TYPES).input("filter", FLOAT_TYPES)
            .optional_input("bias", FLOAT_TYPES).output("y")
            .attr("strides", "ints").attr("padding", "str")
            .attr("explicit_paddings", "ints", []).attr("dilations", "ints", [1, 1, 1, 1])
            .attr("data_format", "str", "NHWC"))


def _onnx_filter(ctx, node, depthwise):
    """The filter in ONNX's OIHW layout (folded when constant) and the group count."""
    w = ctx.const_input(1)
    x_channels = node.inputs[0].desc.shape[node.attrs["data_format"].index("C")] \
        if node.inputs[0].desc.shape is not None else None
    fshape = node.inputs[1].desc.shape
    if depthwise:
        groups = fshape[2]
        new_shape = [fshape[0], fshape[1], 1, fshape[2] * fshape[3]]
    else:
        groups = 1 if x_channels is None else x_channels // fshape[2]
        new_shape = None
    if w is not None:
        if new_shape:
            w = w.reshape(new_shape)
        return ctx.constant(np.ascontiguousarray(w.transpose(3, 2, 0, 1)), "filter_oihw"), groups
    name = ctx.input(1)
    if new_shape:
        name = ctx.emit("Reshape", [name, ctx.constant(np.array(new_shape, np.int64))])[0]
    return ctx.emit("Transpose", [name], perm=[3, 2, 0, 1])[0], groups


def _lower_conv(ctx, node, depthwise=False):
    fmt = node.attrs["data_format"]
    if node.inputs[1].desc.shape is None:
        raise ConversionError("the filter shape must be known")
    weight, groups = _onnx_filter(ctx, node, depthwise)
    inputs = [ctx.input(0), weight]
    if ctx.input(2):
        inputs.append(ctx.input(2))
    dilations = spatial_attrs(node.attrs["dilations"], fmt)
    emit_channels_first(ctx, fmt, "Conv", inputs, strides=spatial_attrs(node.attrs["strides"], fmt),
                        dilations=dilations, group=groups if groups != 1 else None,
                        kernel_shape=list(node.inputs[1].desc.shape[:2]),
                        **_onnx_pads(node, fmt, list(node.inputs[1].desc.shape[:2])))


def _infer_conv(node, depthwise=False):
    x, f = node.inputs[0].desc, node.inputs[1].desc
    fmt = node.attrs["data_format"]
    if f.shape is None or len(f.shape) != 4:
        raise ConversionError("the filter must be a rank-4 HWCN tensor")
    out_channels = None if f.shape[3] is None else (f.shape[2] * f.shape[3] if depthwise else f.shape[3])
    shape = _windowed_shape(node, x, list(f.shape[:2]), out_channels, fmt)
    return [TensorDesc(x.dtype, shape, fmt, fmt)]


conv2d = _conv_common(op_prototype("Conv2D", "2-D convolution; filter HWCN (TF layout)."))
conv2d.infer(lambda node: _infer_conv(node))
conv2d.lower(lambda ctx, node: _lower_conv(ctx, node))

depthwise = _conv_common(op_prototype("DepthwiseConv2D", "Depthwise 2-D convolution; filter HWCM."))
depthwise.infer(lambda node: _infer_conv(node, depthwise=True))
depthwise.lower(lambda ctx, node: _lower_conv(ctx, node, depthwise=True))


def _pool(op_type, onnx_op, doc):
    proto = (op_prototype(op_type, doc).input("x", FLOAT_TYPES).output("y")
             .attr("ksize", "ints").attr("strides", "ints").attr("padding", "str")
             .attr("explicit_paddings", "ints", []).attr("data_format", "str", "NHWC"))

    @proto.infer
    def infer(node):
        x, fmt = node.inputs[0].desc, node.attrs["data_format"]
        channels = None if x.shape is None else x.shape[fmt.index("C")]
        kernel = spatial_attrs(node.attrs["ksize"], fmt)
        return [TensorDesc(x.dtype, _windowed_shape(node, x, kernel, channels, fmt), fmt, fmt)]

    @proto.lower
    def lower(ctx, node):
        fmt = node.attrs["data_format"]
        extra = {"count_include_pad": 0} if onnx_op == "AveragePool" else {}
        emit_channels_first(ctx, fmt, onnx_op, [ctx.input(0)],
                            kernel_shape=spatial_attrs(node.attrs["ksize"], fmt),
                            strides=spatial_attrs(node.attrs["strides"], fmt),
                            **_onnx_pads(node, fmt, spatial_attrs(node.attrs["ksize"], fmt)), **extra)
    return proto


_pool("MaxPool", "MaxPool", "Max pooling over spatial windows.")
_pool("AvgPool", "AveragePool", "Average pooling; padding is not counted (TF semantics).")

bias_add = (op_prototype("BiasAdd", "Adds a 1-D bias along the channel dimension.")
            .input("x").input("bias").output("y").attr("data_format", "str", "NHWC"))


@bias_add.infer
def _infer_bias_add(node):
    return same_as_input(node)


@bias_add.lower
def _lower_bias_add(ctx, node):
    fmt, rank = node.attrs["data_format"], node.inputs[0].desc.rank
    bias = ctx.input(1)
    if fmt.startswith("NC") and rank is not None and rank > 2:
        axes = ctx.constant(np.arange(1, rank - 1, dtype=np.int64))
        value = ctx.const_input(1)
        bias = (ctx.constant(value.reshape((-1,) + (1,) * (rank - 2)), "bias")
                if value is not None else ctx.emit("Unsqueeze", [bias, axes])[0])
    ctx.emit("Add", [ctx.input(0), bias], [ctx.output(0)])


softmax = (op_prototype("Softmax", "Softmax along `axis`.").input("x", FLOAT_TYPES).output("y")
           .attr("axis", "int", -1))
softmax.infer(same_as_input)
softmax.lower(lambda ctx, node: ctx.emit("Softmax", [ctx.input(0)], [ctx.output(0)],
                                         axis=node.attrs["axis"]))

log_softmax = (op_prototype("LogSoftmax", "Log of softmax along `axis`.").input("x", FLOAT_TYPES)
               .output("y").attr("axis", "int", -1))
log_softmax.infer(same_as_input)
log_softmax.lower(lambda ctx, node: ctx.emit("LogSoftmax", [ctx.input(0)], [ctx.output(0)],
                                             axis=node.attrs["axis"]))


def _activation(op_type, doc, lower, attrs=()):
    proto = op_prototype(op_type, doc).input("x", FLOAT_TYPES).output("y")
    for name, kind, default in attrs:
        proto.attr(name, kind, default)
    proto.infer(same_as_input)
    proto.lower(lower)
    return proto


def _unary(onnx_op, **attrs):
    return lambda ctx, node: ctx.emit(onnx_op, [ctx.input(0)], [ctx.output(0)], **attrs)


def _lower_relu6(ctx, node):
    dtype = np.dtype(node.inputs[0].desc.dtype)
    ctx.emit("Clip", [ctx.input(0), ctx.constant(np.array(0, dtype)), ctx.constant(np.array(6, dtype))],
             [ctx.output(0)])


_activation("Relu", "max(x, 0)", _unary("Relu"))
_activation("Relu6", "min(max(x, 0), 6)", _lower_relu6)
_activation("Sigmoid", "1 / (1 + exp(-x))", _unary("Sigmoid"))
_activation("Tanh", "hyperbolic tangent", _unary("Tanh"))
_activation("Elu", "exp(x) - 1 for x < 0, else x", _unary("Elu", alpha=1.0))
_activation("Selu", "scaled ELU with TF's constants",
            _unary("Selu", alpha=1.6732632423543772, gamma=1.0507009873554805))
_activation("Softplus", "log(1 + exp(x))", _unary("Softplus"))
_activation("Softsign", "x / (1 + |x|)", _unary("Softsign"))
_activation("LeakyRelu", "x for x >= 0, else alpha * x",
            lambda ctx, node: ctx.emit("LeakyRelu", [ctx.input(0)], [ctx.output(0)],
                                       alpha=node.attrs["alpha"]),
            attrs=[("alpha", "float", 0.2)])
