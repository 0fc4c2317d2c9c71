"""Neural-network ops: bias, softmax and activations."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, OpSet
from tf2ir.ir.onnx.kernels import FLOAT64_BY_FUNCTION_BODY, WITHOUT_BODIES, has_kernel
from tf2ir.ir.tensor import FLOAT_TYPES
from tf2ir.opp.layouts import CHANNELS_FIRST, check_layout_declared
from tf2ir.opp.shapes import same_as_input

OPS = OpSet("tf2ir.opp.nn")


bias_add = (OPS.declare("BiasAdd", "Adds a 1-D bias along the channel dimension: dim 1 when x's "
                                    "format is NCHW or NCDHW, else the last.")
            .input("x").input("bias").output("y"))


def _channels_first(node) -> bool:
    x = node.inputs[0].desc
    if x.format == "ND" and x.rank != 2:     # 2-D data has its channels last in every layout
        check_layout_declared(node, 0)
    return x.format in CHANNELS_FIRST.values()


@bias_add.infer
def _infer_bias_add(node):
    first = _channels_first(node)
    x, bias = node.inputs[0].desc, node.inputs[1].desc
    if bias.rank not in (None, 1):
        raise ConversionError(f"the bias must be 1-D, it has shape {list(bias.shape or ())}")
    if x.rank is not None and x.rank < 2:
        raise ConversionError(f"BiasAdd needs data of rank 2 or more, it has rank {x.rank}")
    if x.shape is not None and bias.shape is not None:
        channels = x.shape[1 if first and x.rank > 2 else -1]
        if None not in (channels, bias.shape[0]) and channels != bias.shape[0]:
            raise ConversionError(f"the bias has {bias.shape[0]} values, the data "
                                  f"{list(x.shape)} has {channels} channels")
    return same_as_input(node)


@bias_add.lower
def _lower_bias_add(ctx, node):
    rank = node.inputs[0].desc.rank
    bias = ctx.input(1)
    if _channels_first(node) and rank is not None and rank > 2:
        axes = ctx.constant(np.arange(1, rank - 1, dtype=np.int64))
        value = ctx.const_input(1)
        bias = (ctx.constant(value.reshape((-1,) + (1,) * (rank - 2)), "bias")
                if value is not None else ctx.op.Unsqueeze(bias, axes))
    ctx.op.Add(ctx.input(0), bias, out=ctx.output(0))


softmax = (OPS.declare("Softmax", "Softmax along `axis`.").input("x", FLOAT_TYPES).output("y")
           .attr("axis", "int", -1))
softmax.infer(same_as_input)


@softmax.lower
def _lower_softmax(ctx, node):
    ctx.op.Softmax(ctx.input(0), out=ctx.output(0), axis=node.attrs["axis"])


log_softmax = (OPS.declare("LogSoftmax", "Log of softmax along `axis`.").input("x", FLOAT_TYPES)
               .output("y").attr("axis", "int", -1))
log_softmax.infer(same_as_input)


@log_softmax.lower
def _lower_log_softmax(ctx, node):
    ctx.op.LogSoftmax(ctx.input(0), out=ctx.output(0), axis=node.attrs["axis"])


def _activation(op_type, doc, lower, attrs=(), dtypes=FLOAT_TYPES):
    proto = OPS.declare(op_type, doc).input("x", dtypes).output("y")
    for name, kind, default in attrs:
        proto.attr(name, kind, default)
    proto.infer(same_as_input)
    proto.lower(lower)
    return proto


def _unary(onnx_op, **attrs):
    def lower(ctx, node):
        getattr(ctx.op, onnx_op)(ctx.input(0), out=ctx.output(0), **attrs)
    return lower


def _lower_leaky_relu(ctx, node):
    ctx.op.LeakyRelu(ctx.input(0), out=ctx.output(0), alpha=node.attrs["alpha"])


def _lower_relu6(ctx, node):
    dtype = np.dtype(node.inputs[0].desc.dtype)
    ctx.op.Clip(ctx.input(0), ctx.constant(np.array(0, dtype)), ctx.constant(np.array(6, dtype)),
                out=ctx.output(0))


def _lower_selu(ctx, node):
    if node.inputs[0].desc.dtype != "float64":
        ctx.op.Selu(ctx.input(0), out=ctx.output(0), alpha=SELU_ALPHA, gamma=SELU_SCALE)
        return
    # ONNX's alpha/gamma attributes are float32: keep TF's double constants for float64.
    scale = ctx.constant(np.array(SELU_SCALE, np.float64))
    alpha_scale = ctx.constant(np.array(SELU_ALPHA * SELU_SCALE, np.float64))
    x = ctx.input(0)
    zero = ctx.constant(np.array(0, np.float64))
    negative = ctx.op.Mul(ctx.op.Sub(ctx.op.Exp(x), ctx.constant(np.array(1.0))),
                          alpha_scale)
    positive = ctx.op.Mul(x, scale)
    ctx.op.Where(ctx.op.Greater(x, zero), positive, negative, out=ctx.output(0))


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
# the integer types onnxruntime's Relu and Clip kernels (Relu6) both take
RELU_TYPES = FLOAT_TYPES + tuple(t for t in ("int8", "int16", "int32", "int64")
                                 if has_kernel("Relu", t) and has_kernel("Clip", t))

relu = _activation("Relu", "max(x, 0)", _unary("Relu"), dtypes=RELU_TYPES)


def _lower_relu_max(ctx, node):
    """ONNX Relu takes integers from opset 14, and onnxruntime runs int64 at 18 only (its
    function body): elsewhere, Max(x, 0) for integers."""
    dtype = node.inputs[0].desc.dtype
    if dtype in FLOAT_TYPES:
        ctx.op.Relu(ctx.input(0), out=ctx.output(0))
    else:
        ctx.op.Max(ctx.input(0), ctx.constant(np.array(0, np.dtype(dtype))), out=ctx.output(0))


for _opsets in WITHOUT_BODIES:
    relu.lower(_lower_relu_max, opsets=_opsets)


_activation("Relu6", "min(max(x, 0), 6)", _lower_relu6, dtypes=RELU_TYPES)
_activation("Sigmoid", "1 / (1 + exp(-x))", _unary("Sigmoid"))
_activation("Tanh", "hyperbolic tangent", _unary("Tanh"))
elu = _activation("Elu", "exp(x) - 1 for x < 0, else x", _unary("Elu", alpha=1.0))
_activation("Selu", "scaled ELU with TF's constants", _lower_selu)
softplus = _activation("Softplus", "log(1 + exp(x))", _unary("Softplus"))
softsign = _activation("Softsign", "x / (1 + |x|)", _unary("Softsign"))
leaky_relu = _activation("LeakyRelu", "x for x >= 0, else alpha * x",
                         _lower_leaky_relu,
                         attrs=[("alpha", "float", 0.2)])


def _float64_formula_without_bodies(proto, formula):
    """`proto`'s forms for opsets 13-17 and 19 on: in float64 its `formula(ctx, node, x, one)`
    (ONNX's op has no float64 kernel in onnxruntime, which runs its function body at 18 only)."""
    assert proto.op_type in FLOAT64_BY_FUNCTION_BODY
    default = proto.lower_default

    def lower(ctx, node):
        if node.inputs[0].desc.dtype != "float64":
            return default(ctx, node)
        formula(ctx, node, ctx.input(0), ctx.constant(np.array(1.0, np.float64)))
    for opsets in WITHOUT_BODIES:
        proto.lower(lower, opsets=opsets)


def _positive(ctx, x):
    return ctx.op.Greater(x, ctx.constant(np.array(0.0, np.float64)))


_float64_formula_without_bodies(elu, lambda ctx, node, x, one: ctx.op.Where(
    _positive(ctx, x), x, ctx.op.Sub(ctx.op.Exp(x), one), out=ctx.output(0)))
_float64_formula_without_bodies(leaky_relu, lambda ctx, node, x, one: ctx.op.Where(
    _positive(ctx, x), x, ctx.op.Mul(x, ctx.constant(np.array(node.attrs["alpha"], np.float64))),
    out=ctx.output(0)))
_float64_formula_without_bodies(softplus, lambda ctx, node, x, one: ctx.op.Add(   # stable for |x| big
    ctx.op.Relu(x), ctx.op.Log(ctx.op.Add(ctx.op.Exp(ctx.op.Neg(ctx.op.Abs(x))), one)),
    out=ctx.output(0)))
_float64_formula_without_bodies(softsign, lambda ctx, node, x, one: ctx.op.Div(
    x, ctx.op.Add(ctx.op.Abs(x), one), out=ctx.output(0)))
