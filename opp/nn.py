"""Neural-network ops: convolutions, pooling, bias, softmax and activations."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import FLOAT_TYPES
from tf2ir.opp.common import same_as_input, spatial_attrs, window_output

OPS = OpSet("tf2ir.opp.nn")


# onnxruntime's CPU Conv/ConvTranspose/AveragePool/LRN kernels take float16 and float32 only.
ORT_CONV_TYPES = ("float16", "float32")
ORT_MAXPOOL_TYPES = ("float16", "float32", "float64", "int8", "uint8")


def _explicit_pads(node, data_format):
    pads = list(node.attrs.get("explicit_paddings") or [])
    if node.attrs["padding"] != "EXPLICIT":
        return None
    if len(pads) != 2 * len(data_format):
        raise ConversionError(f"explicit_paddings needs {2 * len(data_format)} values, got {len(pads)}")
    pairs = [pads[2 * i:2 * i + 2] for i in range(len(data_format))]
    return spatial_attrs(pairs, data_format)


def same_pads(sizes, kernel, strides, dilations):
    """TF's SAME padding as ONNX pads (begins then ends), the larger half at the end; None
    when a spatial size it depends on is unknown (with stride 1 it never depends on it)."""
    begins, ends = [], []
    for size, k, stride, dilation in zip(sizes, kernel, strides, dilations):
        effective = (k - 1) * dilation + 1
        if stride == 1:
            total = effective - 1
        elif size is None:
            return None
        else:
            total = max((-(-size // stride) - 1) * stride + effective - size, 0)
        begins.append(total // 2)
        ends.append(total - total // 2)
    return begins + ends


def onnx_pads(node, data_format, kernel):
    """ONNX pads/auto_pad attributes for a TF padding attribute (SAME, VALID, EXPLICIT)."""
    padding = node.attrs["padding"]
    rank = len(data_format)
    dilations = spatial_attrs(node.attrs.get("dilations") or [1] * rank, data_format)
    if padding == "SAME" and any(d != 1 for d in dilations):
        # onnxruntime rejects auto_pad SAME_* with dilations: give TF's SAME pads explicitly.
        x = node.inputs[0].desc
        spatial = spatial_attrs(x.shape, data_format) if x.shape is not None else [None] * (rank - 2)
        pads = same_pads(spatial, kernel, spatial_attrs(node.attrs["strides"], data_format), dilations)
        if pads is None:
            raise ConversionError("SAME padding with dilations and strides needs known spatial dims")
        return {"pads": pads}
    if padding == "SAME":
        return {"auto_pad": "SAME_UPPER"}
    if padding == "VALID":
        return {"auto_pad": "VALID"}
    if padding != "EXPLICIT":
        raise ConversionError(f"padding {padding!r} is not SAME, VALID or EXPLICIT")
    pairs = _explicit_pads(node, data_format)
    return {"pads": [p[0] for p in pairs] + [p[1] for p in pairs]}


def compute_input(ctx, index, dtype, supported=ORT_CONV_TYPES):
    """The node's input `index` in a dtype onnxruntime's kernel takes: float32 when `dtype` is
    not in `supported` (a constant input is cast here, at compile time)."""
    if dtype in supported:
        return ctx.input(index)
    value = ctx.const_input(index)
    if value is not None:
        return ctx.constant(np.asarray(value, np.float32), "as_float32")
    return ctx.emit("Cast", [ctx.input(index)], to=ONNX_DTYPES["float32"])[0]


def emit_spatial(ctx, data_format, op_type, inputs, dtype, supported=ORT_CONV_TYPES, output=None,
                 **attrs):
    """Emit the channels-first ONNX `op_type` for a channels-last or -first TF op writing
    `output` (the node's output 0 by default). The first input is transposed to channels-first
    and back for NHWC/NDHWC; inputs must already be in the compute dtype (`compute_input`), and
    the result is cast back to `dtype` when that is not a `supported` one."""
    output = output or ctx.output(0)
    cast_back = dtype not in supported
    channels_last = data_format.endswith("C")
    rank = len(data_format)
    x = inputs[0]
    if channels_last:
        x = ctx.emit("Transpose", [x], perm=[0, rank - 1] + list(range(1, rank - 1)))[0]
    direct = not channels_last and not cast_back
    y = ctx.emit(op_type, [x] + list(inputs[1:]), [output] if direct else 1, **attrs)[0]
    if channels_last:
        y = ctx.emit("Transpose", [y], [output] if not cast_back else 1,
                     perm=[0] + list(range(2, rank)) + [1])[0]
    if cast_back:
        ctx.emit("Cast", [y], [output], to=ONNX_DTYPES[dtype])


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


def onnx_filter(ctx, node, index=1, depthwise=False, transposed=False, dtype=None):
    """Input `index`, a TF filter (spatial..., in, out), in ONNX's (out, in, spatial...) layout
    - which is also ConvTranspose's (in, out, spatial...) - in the compute dtype for data of
    `dtype` (folded when constant), and the group count."""
    fmt = node.attrs["data_format"]
    x_shape = node.inputs[0].desc.shape if not transposed else None
    x_channels = x_shape[fmt.index("C")] if x_shape is not None else None
    fshape = list(node.inputs[index].desc.shape)
    rank = len(fshape)
    groups, new_shape = 1, None
    if depthwise:
        groups = fshape[2]
        new_shape = [fshape[0], fshape[1], 1, fshape[2] * fshape[3]]
    elif x_channels is not None and fshape[-2]:
        groups = x_channels // fshape[-2]
    perm = [rank - 1, rank - 2] + list(range(rank - 2))
    dtype = dtype or node.inputs[0].desc.dtype
    w = ctx.const_input(index)
    if w is not None:
        w = np.asarray(w, np.float32) if dtype not in ORT_CONV_TYPES else w
        if new_shape:
            w = w.reshape(new_shape)
        return ctx.constant(np.ascontiguousarray(w.transpose(perm)), "filter_onnx"), groups
    name = compute_input(ctx, index, dtype)
    if new_shape:
        name = ctx.emit("Reshape", [name, ctx.constant(np.array(new_shape, np.int64))])[0]
    return ctx.emit("Transpose", [name], perm=perm)[0], groups


def _lower_conv(ctx, node, depthwise=False):
    fmt = node.attrs["data_format"]
    fshape = node.inputs[1].desc.shape
    if fshape is None or None in fshape[:-2]:
        raise ConversionError("the filter's spatial shape must be known")
    dtype = node.inputs[0].desc.dtype
    weight, groups = onnx_filter(ctx, node, 1, depthwise)
    inputs = [compute_input(ctx, 0, dtype), weight]
    if ctx.input(2):
        inputs.append(compute_input(ctx, 2, dtype))
    kernel = list(fshape[:-2])
    emit_spatial(ctx, fmt, "Conv", inputs, dtype, strides=spatial_attrs(node.attrs["strides"], fmt),
                 dilations=spatial_attrs(node.attrs["dilations"], fmt),
                 group=groups if groups != 1 else None, kernel_shape=kernel,
                 **onnx_pads(node, fmt, kernel))


def _infer_conv(node, depthwise=False):
    x, f = node.inputs[0].desc, node.inputs[1].desc
    fmt = node.attrs["data_format"]
    if f.shape is None or len(f.shape) != len(fmt):
        raise ConversionError(f"the filter must be a rank-{len(fmt)} tensor (spatial dims, in, out)")
    if x.shape is not None and len(x.shape) != len(fmt):
        raise ConversionError(f"the input must have rank {len(fmt)} for data_format {fmt}")
    out_channels = None if f.shape[-1] is None else (f.shape[2] * f.shape[3] if depthwise else f.shape[-1])
    shape = _windowed_shape(node, x, list(f.shape[:-2]), out_channels, fmt)
    return [TensorDesc(x.dtype, shape, fmt, fmt)]


conv2d = _conv_common(OPS.declare("Conv2D", "2-D convolution; filter HWCN (TF layout)."))
conv2d.infer(lambda node: _infer_conv(node))
conv2d.lower(lambda ctx, node: _lower_conv(ctx, node))

depthwise = _conv_common(OPS.declare("DepthwiseConv2D", "Depthwise 2-D convolution; filter HWCM."))
depthwise.infer(lambda node: _infer_conv(node, depthwise=True))
depthwise.lower(lambda ctx, node: _lower_conv(ctx, node, depthwise=True))


def _pool(op_type, onnx_op, doc):
    proto = (OPS.declare(op_type, doc).input("x", FLOAT_TYPES).output("y")
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
        dtype = node.inputs[0].desc.dtype
        supported = ORT_CONV_TYPES if onnx_op == "AveragePool" else ORT_MAXPOOL_TYPES
        kernel = spatial_attrs(node.attrs["ksize"], fmt)
        emit_spatial(ctx, fmt, onnx_op, [compute_input(ctx, 0, dtype, supported)], dtype, supported,
                     kernel_shape=kernel, strides=spatial_attrs(node.attrs["strides"], fmt),
                     **onnx_pads(node, fmt, kernel), **extra)
    return proto


_pool("MaxPool", "MaxPool", "Max pooling over spatial windows.")
_pool("AvgPool", "AveragePool", "Average pooling; padding is not counted (TF semantics).")

bias_add = (OPS.declare("BiasAdd", "Adds a 1-D bias along the channel dimension.")
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


softmax = (OPS.declare("Softmax", "Softmax along `axis`.").input("x", FLOAT_TYPES).output("y")
           .attr("axis", "int", -1))
softmax.infer(same_as_input)
softmax.lower(lambda ctx, node: ctx.emit("Softmax", [ctx.input(0)], [ctx.output(0)],
                                         axis=node.attrs["axis"]))

log_softmax = (OPS.declare("LogSoftmax", "Log of softmax along `axis`.").input("x", FLOAT_TYPES)
               .output("y").attr("axis", "int", -1))
log_softmax.infer(same_as_input)
log_softmax.lower(lambda ctx, node: ctx.emit("LogSoftmax", [ctx.input(0)], [ctx.output(0)],
                                             axis=node.attrs["axis"]))


def _activation(op_type, doc, lower, attrs=(), dtypes=FLOAT_TYPES):
    proto = OPS.declare(op_type, doc).input("x", dtypes).output("y")
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


def _lower_selu(ctx, node):
    if node.inputs[0].desc.dtype != "float64":
        ctx.emit("Selu", [ctx.input(0)], [ctx.output(0)], alpha=SELU_ALPHA, gamma=SELU_SCALE)
        return
    # ONNX's alpha/gamma attributes are float32: keep TF's double constants for float64.
    scale = ctx.constant(np.array(SELU_SCALE, np.float64))
    alpha_scale = ctx.constant(np.array(SELU_ALPHA * SELU_SCALE, np.float64))
    x = ctx.input(0)
    zero = ctx.constant(np.array(0, np.float64))
    negative = ctx.emit("Mul", [ctx.emit("Sub", [ctx.emit("Exp", [x])[0], ctx.constant(np.array(1.0))])[0],
                                alpha_scale])[0]
    positive = ctx.emit("Mul", [x, scale])[0]
    ctx.emit("Where", [ctx.emit("Greater", [x, zero])[0], positive, negative], [ctx.output(0)])


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
# onnxruntime's Relu and Clip kernels take these integer types
RELU_TYPES = FLOAT_TYPES + ("int8", "int32", "int64")

_activation("Relu", "max(x, 0)", _unary("Relu"), dtypes=RELU_TYPES)
_activation("Relu6", "min(max(x, 0), 6)", _lower_relu6, dtypes=RELU_TYPES)
_activation("Sigmoid", "1 / (1 + exp(-x))", _unary("Sigmoid"))
_activation("Tanh", "hyperbolic tangent", _unary("Tanh"))
_activation("Elu", "exp(x) - 1 for x < 0, else x", _unary("Elu", alpha=1.0))
_activation("Selu", "scaled ELU with TF's constants", _lower_selu)
_activation("Softplus", "log(1 + exp(x))", _unary("Softplus"))
_activation("Softsign", "x / (1 + |x|)", _unary("Softsign"))
_activation("LeakyRelu", "x for x >= 0, else alpha * x",
            lambda ctx, node: ctx.emit("LeakyRelu", [ctx.input(0)], [ctx.output(0)],
                                       alpha=node.attrs["alpha"]),
            attrs=[("alpha", "float", 0.2)])
