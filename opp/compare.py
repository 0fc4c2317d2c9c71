"""Comparisons, elementwise with numpy broadcasting and bool results: Less, LessEqual, Greater,
GreaterEqual, Equal, NotEqual and ApproximateEqual."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.tensor import FLOAT_TYPES
from tf2ir.opp.common import (
    ALL_TYPES, FLOAT_KERNELS, NO_BF16, broadcast_shapes, declare_binary, fold_with, infer_broadcast,
    lowering,
)

OPS = OpSet("tf2ir.opp.compare")

_COMPARISONS = {"Less": ("Less", "<", np.less), "LessEqual": ("LessOrEqual", "<=", np.less_equal),
                "Greater": ("Greater", ">", np.greater),
                "GreaterEqual": ("GreaterOrEqual", ">=", np.greater_equal)}
for _op_type, (_onnx_op, _symbol, _np_fn) in _COMPARISONS.items():
    declare_binary(OPS, _op_type, f"x1 {_symbol} x2, broadcast, as bool",
                   lambda o, x, y, dtype, _op=_onnx_op: getattr(o, _op)(x, y, out=o.out),
                   NO_BF16, predicate=True, fold=_np_fn)


def _equality(op_type: str, negate: bool):
    proto = (OPS.declare(op_type, f"x1 {'!=' if negate else '=='} x2, broadcast, as bool; with "
                                   "incompatible_shape_error false, shapes that do not broadcast give "
                                   f"a scalar {negate}")
             .input("x1", ALL_TYPES).input("x2", ALL_TYPES).output("y", ("bool",))
             .attr("incompatible_shape_error", "bool", True))

    def incompatible(node) -> bool:
        if node.attrs["incompatible_shape_error"]:
            return False
        try:
            broadcast_shapes(node.inputs[0].desc.shape, node.inputs[1].desc.shape)
        except ConversionError:
            return True
        return False

    @proto.infer
    def infer(node):
        if incompatible(node):
            return [TensorDesc("bool", ())]
        return infer_broadcast(node, dtype="bool")

    def body(o, xs, dtype):
        if not negate:
            return o.Equal(xs[0], xs[1], out=o.out)
        return o.Not(o.Equal(xs[0], xs[1]), out=o.out)
    lower_broadcast = lowering(body, NO_BF16 + ("bool",), keeps_dtype=False)

    @proto.lower
    def lower(ctx, node):
        if incompatible(node):
            ctx.emit("Identity", [ctx.constant(np.array(negate))], [ctx.output(0)])
        else:
            lower_broadcast(ctx, node)
    proto.fold(fold_with(np.not_equal if negate else np.equal))


_equality("Equal", negate=False)
_equality("NotEqual", negate=True)

approximate_equal = (OPS.declare("ApproximateEqual", "|x1 - x2| < tolerance, as bool")
                     .input("x1", FLOAT_TYPES).input("x2", FLOAT_TYPES).output("y", ("bool",))
                     .attr("tolerance", "float", 1e-5))


@approximate_equal.infer
def _infer_approximate_equal(node):
    a, b = node.inputs[0].desc, node.inputs[1].desc
    if a.shape is not None and b.shape is not None and (
            len(a.shape) != len(b.shape)
            or any(p is not None and q is not None and p != q for p, q in zip(a.shape, b.shape))):
        raise ConversionError(f"ApproximateEqual needs equal shapes, got {a.shape_text()} "
                              f"and {b.shape_text()}")
    return infer_broadcast(node, dtype="bool")


approximate_equal.lower(lowering(
    lambda o, xs, dtype: o.Less(o.Abs(o.Sub(xs[0], xs[1])), o.c(o.ctx.node.attrs["tolerance"]),
                                out=o.out),
    FLOAT_KERNELS, keeps_dtype=False))
