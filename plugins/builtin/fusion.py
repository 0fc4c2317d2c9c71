"""Built-in scope fusion passes and the mappings of their fused types: Keras
LayerNormalization → LayerNorm, RMS normalization (Keras RMSNormalization, T5/LLaMA
written out) → RMSNorm, GELU (erf, erfc and tanh forms) → Gelu, swish → Swish
(many-to-one), and hard-swish → HardSigmoid + Mul (many-to-many)."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.plugins import (
    FusionResult, ScopePattern, Structure, at_least, hookimpl, register_op, scope_fusion_pass,
)
from tf2ir.opp import fusion as fusion_ops


def _close(value: Optional[float], target: float) -> bool:
    return value is not None and bool(np.isclose(value, target, rtol=1e-4, atol=1e-6))


def _users(match, node):
    return [n for n in match.nodes if any(src == node.name for src, _ in n.inputs)]


# -- LayerNorm: a Keras LayerNormalization scope ------------------------------------------------
MOMENTS = Structure(
    nodes={"mean": "Mean", "stop": "StopGradient", "sq": "SquaredDifference", "var": "Mean",
           "eps": "AddV2|Add", "rsqrt": "Rsqrt", "x": "*"},
    edges="x -> mean -> stop -> sq -> var -> eps -> rsqrt, x -> sq")
LAYER_NORM_OPS = {"Mean", "StopGradient", "SquaredDifference", "AddV2", "Add", "Sub", "Rsqrt",
                  "Mul", "Neg", "Reshape", "Identity", "Const"}

layer_norm = scope_fusion_pass("layer_norm", "Keras LayerNormalization scope → LayerNorm").pattern(
    ScopePattern(scope=r"(?i)(^|/)[^/]*layer_?norm[^/]*$", name="keras",
                 op_types={"Mean": 2, "SquaredDifference": 1, "Rsqrt": 1, "Mul": at_least(2)},
                 structure=MOMENTS))


def _parameter(match, tensor):
    """A gamma/beta operand: Const-rooted, perhaps read through Identity and Reshape; the
    tensor before the Reshape (shaped like the normalized dims), or None."""
    node = match.graph.nodes[tensor[0]]
    if node.op_type == "Reshape":
        tensor = node.inputs[0]
    return tensor if match.const_value(tensor) is not None else None


def _read_through(match, tensor) -> set:
    """`tensor` and the tensors it reads through Identity nodes: a SavedModel's variables
    reach a layer through the Identity of the inlined call's inputs, outside its scope."""
    chain = set()
    while tensor is not None and tensor not in chain:
        chain.add(tensor)
        node = match.graph.nodes.get(tensor[0])
        tensor = node.inputs[0] if node is not None and node.op_type == "Identity" \
            and node.inputs else None
    return chain


def _trailing_axes(match, x, axes, params=()) -> list:
    """`axes` as negative axes when they are the trailing axes of `x` (its rank from the
    graph, or from a parameter reshaped to x's rank); else the match is declined, saying why."""
    axes = [int(a) for a in np.reshape(axes, -1)]
    rank = match.rank(x)
    for tensor in params:           # Keras and TF reshape gamma/beta to x's rank
        node = match.graph.nodes[tensor[0]] if tensor is not None else None
        if rank is None and node is not None and node.op_type == "Reshape":
            target = match.const_value(node.inputs[1])
            rank = int(np.size(target)) if target is not None and np.ndim(target) == 1 else None
    if not axes or len(set(axes)) != len(axes):
        match.decline(f"it reduces over axes {axes}")
    if rank is None and min(axes) >= 0:
        match.decline(f"the rank of its input is not known before mapping, so axes {axes} "
                      "may not be the trailing axes the fused op normalizes")
    negative = sorted(a - rank if a >= 0 else a for a in axes) if rank is not None else sorted(axes)
    if negative != list(range(-len(axes), 0)) or (rank is not None and -negative[0] > rank):
        match.decline(f"it reduces over axes {axes} of a rank-{rank if rank is not None else '?'}"
                      " input, not its trailing axes")
    for tensor in params:           # gamma/beta must vary only along the normalized axes
        node = match.graph.nodes[tensor[0]] if tensor is not None else None
        if node is not None and node.op_type == "Reshape":
            target = match.const_value(node.inputs[1])
            if target is None or any(int(d) != 1 for k, d in enumerate(np.reshape(target, -1))
                                     if k - np.size(target) not in negative):
                match.decline(f"its scale or offset {tensor[0]} does not vary along the "
                              "normalized axes only")
    return negative


def _broadcast_operand(match, tensor):
    """The operand a gamma/beta tensor was read through (its Reshape), for the axis check."""
    for node in match.nodes:
        if node.op_type == "Reshape" and node.inputs and node.inputs[0] == tensor:
            return (node.name, 0)
    return tensor


@layer_norm
def layer_norm_result(match) -> Optional[FusionResult]:
    if any(n.op_type not in LAYER_NORM_OPS for n in match.nodes) or len(match.outputs) != 1:
        return None
    x, mean, var = match.tensor("x"), match.node("mean"), match.node("var")
    axes = match.const_value(mean.inputs[1])
    if axes is None or not mean.attr("keep_dims") \
            or not np.array_equal(axes, match.const_value(var.inputs[1])):
        return None
    epsilon, other = match.const_operand("eps")
    if epsilon is None or other != (var.name, 0):
        return None
    gamma = beta = None
    for user in _users(match, match.node("rsqrt")):   # rsqrt * gamma, or x * rsqrt without one
        operand = next(t for t in user.inputs if t[0] != match.node("rsqrt").name)
        if user.op_type == "Mul" and _parameter(match, operand) is not None:
            gamma = _parameter(match, operand)
    for node in match.of_type("AddV2", "Add", "Sub"):
        for operand in node.inputs:
            if node is not match.node("eps") and _parameter(match, operand) is not None:
                beta = _parameter(match, operand)
    if set(match.inputs) - {x} - _read_through(match, gamma) - _read_through(match, beta):
        return None   # an input the LayerNorm would not see
    params = [_broadcast_operand(match, t) for t in (gamma, beta) if t is not None]
    axes = _trailing_axes(match, x, axes, params)
    inputs = [x] + [t for t in (gamma, beta) if t is not None]
    return FusionResult("LayerNormFusion", inputs=inputs, outputs=match.outputs,
                        attrs={"epsilon": epsilon, "axes": axes,
                               "scale": gamma is not None, "center": beta is not None})


def _begin_norm_axis(fused, op, fusion: str) -> int:
    """The first of the reduced `axes`, which must be the trailing axes of the input: the
    built-in passes fuse only such axes (counted from the end) and decline other matches, so
    this refuses only a fused node another plugin's pass made over other axes."""
    x, axes = op.inputs[0], fused.attr("axes")
    rank = x.desc.rank
    if rank is not None:
        axes = sorted(a % rank for a in axes)
        trailing = axes == list(range(axes[0], rank))
    else:
        trailing = sorted(axes) == list(range(-len(axes), 0))
        axes = sorted(axes)
    if not axes or not trailing:
        raise ConversionError(f"normalization over axes {fused.attr('axes')} is not over the "
                              "trailing axes of a known-rank input; convert with "
                              f"--fusion off:{fusion}")
    return int(axes[0])


def parse_layer_norm(fused, op) -> None:
    """Keras reduces over `axes`; the IR op normalizes from begin_norm_axis to the end."""
    axis = _begin_norm_axis(fused, op, "layer_norm")
    rest = iter(op.inputs[1:])
    op.inputs = [op.inputs[0], next(rest) if fused.attr("scale") else None,
                 next(rest) if fused.attr("center") else None]
    op.set_attr("epsilon", float(fused.attr("epsilon")))
    op.set_attr("begin_norm_axis", axis)


def parse_rms_norm(fused, op) -> None:
    axis = _begin_norm_axis(fused, op, "rms_norm")
    op.inputs = [op.inputs[0], op.inputs[1] if fused.attr("scale") else None]
    op.set_attr("epsilon", float(fused.attr("epsilon")))
    op.set_attr("begin_norm_axis", axis)


# -- RMSNorm: x * rsqrt(mean(x^2) + eps) [* gamma], Keras RMSNormalization and T5's norm -------
RMS = {"sq": "Square", "mean": "Mean", "eps": "AddV2|Add", "rsqrt": "Rsqrt", "norm": "Mul",
       "x": "*"}
RMS_EDGES = "x -> sq -> mean -> eps -> rsqrt -> norm, x -> norm"
rms_norm = scope_fusion_pass("rms_norm", "x * rsqrt(mean(x^2) + eps) * gamma → RMSNorm").pattern(
    ScopePattern(structure=Structure({**RMS, "scale": "Mul"}, RMS_EDGES + ", norm -> scale"),
                 name="scaled"),
    ScopePattern(structure=Structure(RMS, RMS_EDGES), name="plain"),
)


@rms_norm
def rms_norm_result(match) -> Optional[FusionResult]:
    if len(match.outputs) != 1:
        return None
    x, mean = match.tensor("x"), match.node("mean")
    axes = match.const_value(mean.inputs[1])
    if axes is None or not mean.attr("keep_dims"):
        return None
    epsilon, other = match.const_operand("eps")
    if epsilon is None or other != (mean.name, 0):
        return None
    # the trailing axes (Keras and T5 write -1); a mean over other axes is not this norm
    axes = _trailing_axes(match, x, axes)
    inputs = [x]
    if "scale" in match.labels:     # gamma: one weight per element of the last axis
        gamma = next(t for t in match.node("scale").inputs if t[0] != match.node("norm").name)
        value = match.const_value(gamma)
        if value is None or np.ndim(value) != 1 or len(axes) != 1 or \
                set(match.inputs) - {x} - _read_through(match, gamma):
            return None
        inputs.append(gamma)
    return FusionResult("RMSNormFusion", inputs=inputs, outputs=match.outputs,
                        attrs={"epsilon": epsilon, "axes": axes, "scale": len(inputs) == 2})


# -- Gelu ---------------------------------------------------------------------------------------
GELU_SCOPE = r"(^|/)Gelu(_\d+)?$"
ERFC_FORM = Structure(   # tf.nn.gelu / keras gelu: 0.5 * x * erfc(-x / sqrt(2))
    nodes={"erfc": "Erfc", "neg": "Neg", "scale": "Mul", "half": "Mul", "out": "Mul", "x": "*"},
    edges="x -> neg -> scale -> erfc -> out, x -> half -> out")
TANH_FORM = Structure(   # approximate=True: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    nodes={"tanh": "Tanh", "pow": "Pow", "cube": "Mul", "inner": "AddV2|Add", "scale": "Mul",
           "one": "AddV2|Add", "half": "Mul", "out": "Mul", "x": "*"},
    edges="x -> pow -> cube -> inner -> scale -> tanh -> one -> out, x -> inner, x -> half -> out")
ERF_FORM = Structure(    # written out: 0.5 * x * (1 + erf(x / sqrt(2)))
    nodes={"erf": "Erf", "div": "RealDiv|Mul", "one": "AddV2|Add", "half": "Mul", "out": "Mul",
           "x": "*"},
    edges="x -> div -> erf -> one -> out, x -> half -> out")
ERF_CDF_FORM = Structure(  # x * (0.5 * (1 + erf(x / sqrt(2))))
    nodes={"erf": "Erf", "div": "RealDiv|Mul", "one": "AddV2|Add", "half": "Mul", "out": "Mul",
           "x": "*"},
    edges="x -> div -> erf -> one -> half -> out, x -> out")

gelu = scope_fusion_pass("gelu", "GELU, exact (erf, erfc) or tanh-approximate → Gelu").pattern(
    ScopePattern(GELU_SCOPE, {"Erf|Erfc": 1, "Mul": at_least(1)}, ERFC_FORM, name="erfc"),
    ScopePattern(GELU_SCOPE, {"Tanh": 1, "Pow": 1}, TANH_FORM, name="tanh"),
    ScopePattern(structure=ERF_FORM, name="erf"),
    ScopePattern(structure=ERF_CDF_FORM, name="erf-cdf"),
)


def _divides_by_sqrt2(match, node, x) -> bool:
    if node.op_type == "RealDiv":
        return node.inputs[0] == x and _close(match.scalar(node.inputs[1]), math.sqrt(2))
    value, other = match.const_operand(node)
    return other == x and _close(value, 1 / math.sqrt(2))


@gelu
def gelu_result(match) -> Optional[FusionResult]:
    x = match.tensor("x")
    checks = [_close(match.const_operand("half")[0], 0.5)]
    if match.pattern.name == "erfc":
        checks.append(_close(match.const_operand("scale")[0], 1 / math.sqrt(2)))
    elif match.pattern.name == "tanh":
        checks += [_close(match.scalar(match.node("pow").inputs[1]), 3.0),
                   _close(match.const_operand("cube")[0], 0.044715),
                   _close(match.const_operand("scale")[0], math.sqrt(2 / math.pi)),
                   _close(match.const_operand("one")[0], 1.0)]
    else:
        checks += [_divides_by_sqrt2(match, match.node("div"), x),
                   _close(match.const_operand("one")[0], 1.0)]
    if not all(checks):
        return None
    approximate = "tanh" if match.pattern.name == "tanh" else "none"
    return FusionResult("GeluFusion", inputs=[x], outputs=[match.tensor("out")],
                        attrs={"approximate": approximate})


# -- Swish (EfficientNet): x * sigmoid(beta * x), Keras wraps it in an IdentityN ----------------
swish = scope_fusion_pass("swish", "x * sigmoid(beta * x) → Swish").pattern(
    ScopePattern(structure=Structure(
        {"sig": "Sigmoid", "scale": "Mul", "out": "Mul", "grad": "IdentityN", "x": "*"},
        "x -> scale -> sig -> out -> grad, x -> out, x -> grad"), name="keras"),
    ScopePattern(structure=Structure(
        {"sig": "Sigmoid", "scale": "Mul", "out": "Mul", "x": "*"},
        "x -> scale -> sig -> out, x -> out"), name="beta"),
    ScopePattern(structure=Structure({"sig": "Sigmoid", "out": "Mul", "x": "*"},
                                     "x -> sig -> out, x -> out"), name="silu"),
)


@swish
def swish_result(match) -> Optional[FusionResult]:
    x, beta = match.tensor("x"), 1.0
    if "scale" in match.labels:
        beta, other = match.const_operand("scale")
        if beta is None or other != x:
            return None
    output = match.tensor("out")
    if "grad" in match.labels:   # keras's custom gradient: IdentityN(y, x, beta), y is :0
        grad = match.node("grad")
        if grad.inputs[0] != output:
            return None
        output = (grad.name, 0)
    return FusionResult("SwishFusion", inputs=[x], outputs=[output], attrs={"beta": beta})


# -- hard-swish (MobileNetV3), many-to-many: HardSigmoid and Mul --------------------------------
hard_swish = scope_fusion_pass("hard_swish", "x * relu6(x + 3) / 6 → HardSigmoid, Mul").pattern(
    ScopePattern(structure=Structure(
        {"relu6": "Relu6", "add": "AddV2|Add", "div": "RealDiv|Mul", "out": "Mul", "x": "*"},
        "x -> add -> relu6 -> div -> out, x -> out")))


@hard_swish
def hard_swish_result(match) -> Optional[FusionResult]:
    x, div = match.tensor("x"), match.node("div")
    three, other = match.const_operand("add")
    if not _close(three, 3.0) or other != x:
        return None
    if div.op_type == "RealDiv" and not _close(match.scalar(div.inputs[1]), 6.0):
        return None
    if div.op_type == "Mul" and not _close(match.const_operand(div)[0], 1 / 6):
        return None
    result = FusionResult(description="hard-swish as HardSigmoid and Mul", inputs=[x],
                          outputs=[match.tensor("out")])
    gate = result.add_inner_node("hard_sigmoid", "HardSigmoid", [result.input(0)],
                                 alpha=1 / 6, beta=0.5)
    product = result.add_inner_node("mul", "Mul", [result.input(0), gate.output(0)])
    result.output_of = [product.output(0)]
    return result


def copy_attrs(fused, op) -> None:
    op.attrs.update(fused.attrs)


PASSES = [layer_norm, rms_norm, gelu, swish, hard_swish]
MAPPINGS = [
    register_op("LayerNorm").origin_op_type("LayerNormFusion").fusion_parse_params_fn(parse_layer_norm),
    register_op("RMSNorm").origin_op_type("RMSNormFusion").fusion_parse_params_fn(parse_rms_norm),
    register_op("Gelu").origin_op_type("GeluFusion").fusion_parse_params_fn(copy_attrs),
    register_op("Swish").origin_op_type("SwishFusion").fusion_parse_params_fn(copy_attrs),
]


@hookimpl
def tf2ir_fusion_passes():
    return PASSES


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(fusion_ops.OPS)
