"""Comparisons, elementwise with numpy broadcasting and bool results: Less, LessEqual, Greater,
GreaterEqual, Equal, NotEqual and ApproximateEqual."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.tensor import FLOAT_TYPES
from tf2ir.opp.carriers import ALL_TYPES, FLOAT_KERNELS, NO_BF16
from tf2ir.opp.declare import declare_binary, fold_with
from tf2ir.opp.emitting import lowering
from tf2ir.opp.shapes import broadcast_shapes, infer_broadcast

OPS = OpSet("tf2ir.opp.compare")
EQUALITY_TYPES = ALL_TYPES + ("string",)     # TF's Equal/NotEqual take every dtype

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
                                   f"a scalar {negate}; strings compare by their bytes")
             .input("x1", EQUALITY_TYPES).input("x2", EQUALITY_TYPES).output("y", ("bool",))
             .attr("incompatible_shape_error", "bool", True))

    def incompatible(node) -> bool:
        if node.attrs["incompatible_shape_error"]:
            return False
        try:
            broadcast_shapes(node.inputs[0].desc.shape, node.inputs[1].desc.shape)
        except ConversionError:
            return True
        return False

    def decided_at_run_time(node) -> bool:
        """Shapes not fully known that need not broadcast: TF gives the scalar or the
        comparison by the run-time shapes."""
        a, b = node.inputs[0].desc, node.inputs[1].desc
        return not node.attrs["incompatible_shape_error"] and not (
            a.is_fully_known() and b.is_fully_known())

    @proto.infer
    def infer(node):
        if incompatible(node):
            return [TensorDesc("bool", ())]
        if decided_at_run_time(node):
            infer_broadcast(node, dtype="bool")          # the dtype checks
            return [TensorDesc("bool", None)]             # a scalar or the broadcast shape
        return infer_broadcast(node, dtype="bool")

    def body(o, xs, dtype):
        if not negate:
            return o.Equal(xs[0], xs[1], out=o.out)
        return o.Not(o.Equal(xs[0], xs[1]), out=o.out)
    lower_broadcast = lowering(body, NO_BF16 + ("bool",), keeps_dtype=False)

    @proto.lower
    def lower(ctx, node):
        if incompatible(node):
            ctx.op.Identity(ctx.constant(np.array(negate)), out=ctx.output(0))
        elif decided_at_run_time(node):
            _lower_checked_equality(ctx, node, negate, lower_broadcast)
        elif node.inputs[0].desc.dtype == "string":
            _lower_string_equality(ctx, node, negate)
        else:
            lower_broadcast(ctx, node)

    @proto.fold
    def fold(node, values):
        return [_equal(*values) != negate]


def _equal(a, b) -> np.ndarray:
    """Elementwise equality as a bool array (strings too: numpy's object == is elementwise)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == object or b.dtype == object:
        x, y = np.broadcast_arrays(a, b)
        return np.array([p == q for p, q in zip(x.reshape(-1), y.reshape(-1))],
                        bool).reshape(x.shape)
    return np.asarray(np.equal(a, b))


class _BranchContext:
    """The lowering context seen by an equality lowered inside an If branch: the branch's own
    node list, the op's inputs (outer names), a fresh name for its output."""

    def __init__(self, child, node, output: str):
        self._child, self.node, self._output = child, node, output

    def __getattr__(self, name):
        return getattr(self._child, name)

    def input(self, index: int) -> str:
        return self.node.inputs[index].name

    def output(self, index: int) -> str:
        return self._output

    def const_input(self, index: int):
        return self.node.inputs[index].const_value


def _broadcastable(ctx, a: str, b: str) -> str:
    """A bool scalar: whether run-time shapes `a` and `b` (int64 vectors) broadcast."""
    i64 = lambda v: ctx.constant(np.array(v, np.int64))                       # noqa: E731
    rank = [ctx.op.Shape(s) for s in (a, b)]
    widest = ctx.op.Max(*rank)
    padded = [ctx.op.Concat(ctx.op.Expand(i64([1]), ctx.op.Sub(widest, r)),
                            s, axis=0) for s, r in zip((a, b), rank)]
    fits = ctx.op.Or(ctx.op.Equal(*padded),
                     ctx.op.Or(*[ctx.op.Equal(p, i64(1))
                                     for p in padded]))
    misfits = ctx.op.Cast(ctx.op.Not(fits), to=7)
    worst = ctx.op.ReduceMax(ctx.op.Concat(i64([0]), misfits, axis=0),
                             keepdims=0)
    return ctx.op.Equal(worst, i64(0))


def _lower_checked_equality(ctx, node, negate: bool, lower_broadcast) -> None:
    """incompatible_shape_error=False over shapes known only at run time: an If on whether the
    shapes broadcast, the comparison or the scalar `negate`."""
    ok = _broadcastable(ctx, *[ctx.op.Shape(ctx.input(k)) for k in (0, 1)])
    out_desc = TensorDesc("bool", None)
    branches = {}
    for key in ("then_branch", "else_branch"):
        child = ctx.subcontext()
        result = child.fresh(f"{key}/y")
        if key == "then_branch":
            branch = _BranchContext(child, node, result)
            if node.inputs[0].desc.dtype == "string":
                _lower_string_equality(branch, node, negate)
            else:
                lower_broadcast(branch, node)
        else:
            child.op.Identity(ctx.constant(np.array(negate)), out=result)
        branches[key] = child.make_subgraph(ctx.fresh(key), [], [(result, out_desc)])
    ctx.op.If(ok, out=ctx.output(0), **branches)


def _lower_string_equality(ctx, node, negate: bool) -> None:
    """A string compared with one constant string (Keras StringLookup's mask token, ""): ONNX
    ai.onnx.ml LabelEncoder finds it (index 0, else -1), which plain onnxruntime runs. Two
    run-time strings: the StringEqual kernel (opset 18's Equal has no string kernel)."""
    for k in (0, 1):
        value, other = ctx.const_input(k), node.inputs[1 - k].desc
        if value is not None and np.size(value) == 1 and (
                np.ndim(value) == 0 or other.rank is not None and np.ndim(value) <= other.rank):
            text = np.asarray(value).reshape(-1)[0]
            text = text.decode("utf-8", "surrogateescape") if isinstance(text, bytes) else str(text)
            index = ctx.op.LabelEncoder(ctx.input(1 - k), domain="ai.onnx.ml",
                                        classes_strings=[text], default_int64=-1)
            compare = "Less" if negate else "GreaterOrEqual"
            getattr(ctx.op, compare)(index, ctx.constant(np.array(0, np.int64)), out=ctx.output(0))
            return
    ctx.op.StringEqual(ctx.input(0), ctx.input(1), out=ctx.output(0),
                       domain="ai.tf2ir.strings", negate=int(negate))


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
