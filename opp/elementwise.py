"""Elementwise ops beyond the basic arithmetic: more unary math, integer division, comparisons, logical and bitwise ops, selection and clipping.

onnxruntime's CPU kernels lack some dtypes (bfloat16 nearly everywhere, float64 for the inverse
and hyperbolic trig ops, bool/int16/uint16 for Where, Min and Max, signed ints for BitShift), and
ONNX has no Expm1, Log1p or Atan2: lowerings cast around the gaps to a carrier dtype that holds
every value, and compose float64 math from double kernels so that it keeps double precision.
"""

from __future__ import annotations

from typing import Callable, List, Sequence

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.writer import ONNX_DTYPES, tensor_proto
from tf2ir.ir.tensor import FLOAT_TYPES, INT_TYPES, NUMBER_TYPES, numpy_dtype
from tf2ir.opp.common import broadcast_shapes, same_as_input

OPS = OpSet("tf2ir.opp.elementwise")

ALL_TYPES = NUMBER_TYPES + ("bool",)
PI = float(np.pi)
LN2 = float(np.log(2.0))

# -- onnxruntime kernels and carriers --------------------------------------------------------
NO_BF16 = tuple(t for t in NUMBER_TYPES if t != "bfloat16")
FLOAT_KERNELS = ("float16", "float32", "float64")
WHERE_TYPES = ("float16", "float32", "float64", "int8", "int32", "int64", "uint8", "uint32")
MIN_MAX_TYPES = WHERE_TYPES + ("uint64",)
# A dtype's carriers, preferred first: each holds every value of the dtype exactly (uint64 in
# int64 keeps the bits only, which is all that selection needs: Where is the one user).
CARRIERS = {"bfloat16": ("float32",), "float16": ("float32",), "int8": ("int32",),
            "int16": ("int32",), "uint8": ("int32",), "uint16": ("uint32", "int32"),
            "uint32": ("int64",), "uint64": ("int64",), "bool": ("uint8", "int32")}

Body = Callable[["Emitter", List[str], str], str]


class Emitter:
    """Terse ONNX emission for composed lowerings: `o.Add(a, b)` emits one node and returns its
    output name (`out=` names it); `o.c(v)` is a constant of the working dtype."""

    def __init__(self, ctx, dtype: str, out: str = None):
        self.ctx, self.dtype = ctx, dtype
        self.out = out     # the name a body gives its last node (the op's output, or None)

    def c(self, value, dtype=None) -> str:
        return self.ctx.constant(np.array(value, numpy_dtype(dtype or self.dtype)))

    def __getattr__(self, onnx_op: str):
        def emit(*inputs: str, out: str = None, **attrs) -> str:
            return self.ctx.emit(onnx_op, list(inputs), [out] if out else 1, **attrs)[0]
        return emit


def work_dtype(dtype: str, kernels: Sequence[str], what: str = "") -> str:
    """`dtype` when onnxruntime has kernels for it, else its first carrier that has."""
    if dtype in kernels:
        return dtype
    for carrier in CARRIERS.get(dtype, ()):
        if carrier in kernels:
            return carrier
    raise ConversionError(f"{what or 'this op'} has no onnxruntime kernel for {dtype}")


def lowering(body: Body, kernels: Sequence[str], operands: Sequence[int] = (0, 1),
             keeps_dtype: bool = True):
    """A lowering that runs `body(o, input names, dtype) -> output name` in a dtype from
    `kernels`: the `operands` inputs are cast to a carrier where needed, and the result cast
    back when the op's output has the operands' dtype (`keeps_dtype`). The body names its last
    node `o.out` (None when a cast back follows)."""
    def lower(ctx, node):
        dtype = node.inputs[operands[0]].desc.dtype
        work = work_dtype(dtype, kernels, node.op_type)
        names = [ctx.input(i) for i in range(len(node.inputs))]
        if work != dtype:
            for i in operands:
                names[i] = ctx.emit("Cast", [names[i]], to=ONNX_DTYPES[work])[0]
        o = Emitter(ctx, work, ctx.output(0) if work == dtype or not keeps_dtype else None)
        result = body(o, names, work)
        if o.out is None:
            ctx.emit("Cast", [result], [ctx.output(0)], to=ONNX_DTYPES[dtype])
    return lower


# -- inference ------------------------------------------------------------------------------
def infer_broadcast(node, operands: Sequence[int] = (0, 1), dtype: str = None) -> List[TensorDesc]:
    """Operands of one dtype broadcast numpy-style; the output has `dtype` (default: theirs)
    and the format of an operand of the output's rank."""
    descs = [node.inputs[i].desc for i in operands]
    for desc in descs[1:]:
        if desc.dtype != descs[0].dtype:
            raise ConversionError(f"operand dtypes differ: {descs[0].dtype} and {desc.dtype}")
    shape = broadcast_shapes(*[d.shape for d in descs])
    full = [d for d in descs if shape is not None and d.rank == len(shape)]
    fmt, origin = (full[0].format, full[0].origin_format) if full else ("ND", "ND")
    return [TensorDesc(dtype or descs[0].dtype, shape, fmt, origin)]


def infer_predicate(node) -> List[TensorDesc]:
    desc = node.inputs[0].desc
    return [TensorDesc("bool", desc.shape, desc.format, desc.origin_format)]


def fold_with(fn):
    """A fold fn from a numpy function of the input arrays (float warnings silenced: TF
    gives inf/nan there too)."""
    def fold(node, values):
        with np.errstate(all="ignore"):
            return [fn(*values)]
    return fold


def _unary(op_type: str, doc: str, body: Body, kernels: Sequence[str], dtypes=FLOAT_TYPES,
           predicate: bool = False, fold=None):
    proto = OPS.declare(op_type, doc).input("x", dtypes).output("y")
    proto.infer(infer_predicate if predicate else same_as_input)
    proto.lower(lowering(lambda o, xs, dtype: body(o, xs[0], dtype), kernels, (0,),
                         keeps_dtype=not predicate))
    if fold is not None:
        proto.fold(fold_with(fold))
    return proto


def _binary(op_type: str, doc: str, body: Body, kernels: Sequence[str], dtypes=NUMBER_TYPES,
            predicate: bool = False, fold=None):
    proto = OPS.declare(op_type, doc).input("x1", dtypes).input("x2", dtypes).output("y")
    proto.infer(lambda node: infer_broadcast(node, dtype="bool" if predicate else None))
    proto.lower(lowering(lambda o, xs, dtype: body(o, xs[0], xs[1], dtype), kernels,
                         keeps_dtype=not predicate))
    if fold is not None:
        proto.fold(fold_with(fold))
    return proto


# -- float64 compositions (and the exact Log1p / Expm1 for every float dtype) ---------------
def log1p_exact(o: Emitter, x: str, out=None) -> str:
    """log(1 + x) without the rounding of 1 + x (Kahan): log(u) * x / (u - 1), u = 1 + x."""
    u = o.Add(x, o.c(1))
    d = o.Sub(u, o.c(1))
    value = o.Where(o.Equal(x, o.c(np.inf)), x, o.Mul(o.Log(u), o.Div(x, d)))
    return o.Where(o.Equal(d, o.c(0)), x, value, out=out)


def expm1_exact(o: Emitter, x: str, out=None) -> str:
    """exp(x) - 1 without cancellation (Kahan): (u - 1) * x / log(u), u = exp(x)."""
    u = o.Exp(x)
    d = o.Sub(u, o.c(1))
    value = o.Mul(d, o.Div(x, o.Log(u)))
    value = o.Where(o.Equal(d, o.c(-1)), d, value)
    value = o.Where(o.Equal(u, o.c(np.inf)), u, value)
    return o.Where(o.Equal(u, o.c(1)), x, value, out=out)


def atan64(o: Emitter, x: str, out=None) -> str:
    """float64 atan: float32 Atan of t = x or 1/x (|t| <= 1), refined by two Newton steps on
    sin(y) - t cos(y) = 0, whose error squares each step (1e-7 -> 1e-14 -> exact)."""
    big = o.Greater(o.Abs(x), o.c(1))
    t = o.Where(big, o.Reciprocal(x), x)
    y = o.Cast(o.Atan(o.Cast(t, to=ONNX_DTYPES["float32"])), to=ONNX_DTYPES["float64"])
    for _ in range(2):
        sin, cos = o.Sin(y), o.Cos(y)
        step = o.Div(o.Sub(sin, o.Mul(t, cos)), o.Add(cos, o.Mul(t, sin)))
        y = o.Sub(y, step)
    return o.Where(big, o.Sub(o.Mul(o.Sign(x), o.c(PI / 2)), y), y, out=out)


def _large_log(o: Emitter, a: str) -> str:
    """log(2a), for asinh/acosh of a > 2**28 where a*a would lose everything or overflow."""
    return o.Add(o.Log(a), o.c(LN2))


def _tan64(o, x):
    return o.Div(o.Sin(x), o.Cos(x), out=o.out)


def _atan64_body(o, x):
    return atan64(o, x, o.out)


def _asin64(o, x):
    """atan(x / sqrt((1 - x)(1 + x))): +-inf at +-1 gives +-pi/2."""
    return atan64(o, o.Div(x, o.Sqrt(o.Mul(o.Sub(o.c(1), x), o.Add(o.c(1), x)))), o.out)


def _acos64(o, x):
    """2 atan(sqrt((1 - x) / (1 + x)))."""
    half = atan64(o, o.Sqrt(o.Div(o.Sub(o.c(1), x), o.Add(o.c(1), x))))
    return o.Mul(o.c(2), half, out=o.out)


def _sinh64(o, x):
    """sign(x) * (e + e / (e + 1)) / 2 with e = expm1(|x|): no cancellation near 0."""
    e = expm1_exact(o, o.Abs(x))
    half = o.Mul(o.c(0.5), o.Add(e, o.Div(e, o.Add(e, o.c(1)))))
    half = o.Where(o.Equal(e, o.c(np.inf)), e, half)
    return o.Mul(o.Sign(x), half, out=o.out)


def _cosh64(o, x):
    """h + 1/(4h) with h = exp(|x| - ln 2) = e**|x| / 2: finite as far as cosh is."""
    h = o.Exp(o.Sub(o.Abs(x), o.c(LN2)))
    return o.Add(h, o.Div(o.c(0.25), h), out=o.out)


def _asinh64(o, x):
    """sign(x) * log1p(a + a*a / (1 + sqrt(1 + a*a))), a = |x|."""
    a = o.Abs(x)
    square = o.Mul(a, a)
    small = log1p_exact(o, o.Add(a, o.Div(square, o.Add(o.c(1), o.Sqrt(o.Add(o.c(1), square))))))
    value = o.Where(o.Greater(a, o.c(2.0 ** 28)), _large_log(o, a), small)
    return o.Mul(o.Sign(x), value, out=o.out)


def _acosh64(o, x):
    """log1p(t + sqrt(2t + t*t)), t = x - 1 (NaN below 1, as TF)."""
    t = o.Sub(x, o.c(1))
    small = log1p_exact(o, o.Add(t, o.Sqrt(o.Add(o.Mul(o.c(2), t), o.Mul(t, t)))))
    return o.Where(o.Greater(x, o.c(2.0 ** 28)), _large_log(o, x), small, out=o.out)


def _atanh64(o, x):
    """sign(x) * log1p(2a / (1 - a)) / 2, a = |x|."""
    a = o.Abs(x)
    value = log1p_exact(o, o.Div(o.Mul(o.c(2), a), o.Sub(o.c(1), a)))
    return o.Mul(o.Sign(x), o.Mul(o.c(0.5), value), out=o.out)


F64_BODIES = {"Tan": _tan64, "Atan": _atan64_body, "Asin": _asin64, "Acos": _acos64,
              "Sinh": _sinh64, "Cosh": _cosh64, "Asinh": _asinh64, "Acosh": _acosh64,
              "Atanh": _atanh64}


def _trig(op_type: str, doc: str, fold):
    """A float unary op with an ONNX op of its name (float16/32 kernels only) and a float64
    composition in F64_BODIES."""
    def body(o, x, dtype):
        if dtype == "float64":
            return F64_BODIES[op_type](o, x)
        return getattr(o, op_type)(x, out=o.out)
    return _unary(op_type, doc, body, FLOAT_KERNELS, fold=fold)


_trig("Tan", "tangent", np.tan)
_trig("Asin", "arc sine (NaN outside [-1, 1])", np.arcsin)
_trig("Acos", "arc cosine (NaN outside [-1, 1])", np.arccos)
_trig("Atan", "arc tangent", np.arctan)
_trig("Sinh", "hyperbolic sine", np.sinh)
_trig("Cosh", "hyperbolic cosine", np.cosh)
_trig("Asinh", "inverse hyperbolic sine", np.arcsinh)
_trig("Acosh", "inverse hyperbolic cosine (NaN below 1)", np.arccosh)
_trig("Atanh", "inverse hyperbolic tangent (NaN outside [-1, 1])", np.arctanh)
_unary("Log1p", "log(1 + x), exact near 0", lambda o, x, dtype: log1p_exact(o, x, o.out),
       ("float32", "float64"), fold=np.log1p)
_unary("Expm1", "exp(x) - 1, exact near 0", lambda o, x, dtype: expm1_exact(o, x, o.out),
       ("float32", "float64"), fold=np.expm1)

# -- sign, rounding, float classes ----------------------------------------------------------
_unary("Sign", "-1, 0 or 1 by the sign of x (NaN stays NaN)",   # half Sign kernels lose NaN
       lambda o, x, dtype: o.Sign(x, out=o.out), ("float32", "float64") + INT_TYPES, NUMBER_TYPES,
       fold=np.sign)
_unary("Round", "round half to even (TF Round and Rint); integers are kept",
       lambda o, x, dtype: o.Identity(x, out=o.out) if dtype in INT_TYPES else o.Round(x, out=o.out),
       NO_BF16, NUMBER_TYPES, fold=np.round)
_unary("IsNan", "x is NaN", lambda o, x, dtype: o.IsNaN(x, out=o.out), FLOAT_KERNELS,
       predicate=True, fold=np.isnan)
_unary("IsInf", "x is +inf or -inf", lambda o, x, dtype: o.IsInf(x, out=o.out),
       ("float32", "float64"), predicate=True, fold=np.isinf)
_unary("IsFinite", "x is neither NaN nor infinite",
       lambda o, x, dtype: o.Not(o.Or(o.IsNaN(x), o.IsInf(x)), out=o.out),
       ("float32", "float64"), predicate=True, fold=np.isfinite)


# -- division and remainders ----------------------------------------------------------------
def _signs_differ(o: Emitter, r: str, y: str) -> str:
    """r != 0 and sign(r) != sign(y): where a truncated quotient/remainder needs the floor fix."""
    return o.And(o.Not(o.Equal(r, o.c(0))), o.Xor(o.Less(r, o.c(0)), o.Less(y, o.c(0))))


def _trunc(o: Emitter, v: str, out=None) -> str:
    return o.Where(o.Less(v, o.c(0)), o.Ceil(v), o.Floor(v), out=out)


def _floor_div(o, x, y, dtype):
    if dtype in INT_TYPES:   # ONNX Div truncates integers: step down where the signs differ
        q = o.Div(x, y)
        fix = _signs_differ(o, o.Sub(x, o.Mul(q, y)), y)
        return o.Sub(q, o.Cast(fix, to=ONNX_DTYPES[dtype]), out=o.out)
    return o.Floor(o.Div(x, y), out=o.out)


def _floor_mod(o, x, y, dtype):
    if dtype in INT_TYPES:   # fmod=0 is Python's integer modulo: the sign of the divisor
        return o.Mod(x, y, fmod=0, out=o.out)
    r = o.Mod(x, y, fmod=1)
    return o.Where(_signs_differ(o, r, y), o.Add(r, y), r, out=o.out)


def _is_integer(x) -> bool:
    return np.issubdtype(np.asarray(x).dtype, np.integer)


def _checked(fn):
    """A division fold that refuses an integer division by zero: TF and onnxruntime fail
    there at run time, and folding must not turn that into a number."""
    def run(x, y):
        if _is_integer(x) and np.any(np.asarray(y) == 0):
            raise ValueError("integer division by zero")
        return fn(x, y)
    return run


def _np_trunc_div(x, y):
    if _is_integer(x):
        q = np.floor_divide(x, y)
        return q + ((q * y != x) & ((np.asarray(x) < 0) != (np.asarray(y) < 0)))
    return np.trunc(np.true_divide(x, y))


def _np_floor_div(x, y):
    return np.floor_divide(x, y) if _is_integer(x) else np.floor(np.true_divide(x, y))


def _np_floor_mod(x, y):
    if _is_integer(x):
        return np.mod(x, y)
    r = np.fmod(x, y)
    return np.where((r != 0) & ((r < 0) != (y < 0)), r + y, r)


_binary("Div", "x1 / x2: true division for floats, truncating for integers (TF Div)",
        lambda o, x, y, dtype: o.Div(x, y, out=o.out), NO_BF16,
        fold=_checked(lambda x, y: _np_trunc_div(x, y) if _is_integer(x) else np.true_divide(x, y)))
_binary("TruncateDiv", "x1 / x2 rounded toward zero",
        lambda o, x, y, dtype: o.Div(x, y, out=o.out) if dtype in INT_TYPES
        else _trunc(o, o.Div(x, y), o.out), NO_BF16, fold=_checked(_np_trunc_div))
_binary("FloorDiv", "floor(x1 / x2)", _floor_div, NO_BF16, fold=_checked(_np_floor_div))
_binary("FloorMod", "x1 - floor(x1 / x2) * x2: the remainder with the sign of x2", _floor_mod,
        NO_BF16, fold=_checked(_np_floor_mod))
_binary("TruncateMod", "C fmod: the remainder with the sign of x1 (TF Mod and TruncateMod)",
        lambda o, x, y, dtype: o.Mod(x, y, fmod=1, out=o.out), NO_BF16, fold=_checked(np.fmod))


def _unless_zero(test: int, compute: str):
    """0 where input `test` is 0, else `compute`(x1, x2) (input 0 is x1)."""
    def body(o, x, y, dtype):
        zero = o.c(0)
        value = o.Log(y) if compute == "Xlogy" else y
        result = o.Mul(x, value) if compute in ("Mul", "Xlogy") else o.Div(x, value)
        return o.Where(o.Equal((x, y)[test], zero), zero, result, out=o.out)
    return body


_binary("DivNoNan", "x1 / x2, and 0 where x2 is 0", _unless_zero(1, "Div"), FLOAT_KERNELS,
        FLOAT_TYPES)
_binary("MulNoNan", "x1 * x2, and 0 where x2 is 0 (even for inf or NaN x1)", _unless_zero(1, "Mul"),
        FLOAT_KERNELS, FLOAT_TYPES)
_binary("Xlogy", "x1 * log(x2), and 0 where x1 is 0", _unless_zero(0, "Xlogy"), FLOAT_KERNELS,
        FLOAT_TYPES)
_binary("Xdivy", "x1 / x2, and 0 where x1 is 0", _unless_zero(0, "Div"), FLOAT_KERNELS,
        FLOAT_TYPES)


def _signbit(o: Emitter, v: str) -> str:
    """v is negative, -0 or -inf (1 / -0 is -inf)."""
    return o.Or(o.Less(v, o.c(0)), o.Less(o.Reciprocal(v), o.c(0)))


def _atan2(o, y, x, dtype):
    """atan(y / x) moved by +-pi where x is negative (or -0), with C's atan2 cases for zeros
    (signed) and two infinities; TF's Atan2 takes y first."""
    atan = o.Atan if dtype == "float32" else (lambda v: atan64(o, v))
    both_inf = o.And(o.IsInf(y), o.IsInf(x))
    ratio = o.Where(both_inf, o.Mul(o.Sign(y), o.Sign(x)), o.Div(y, x))
    zero_y = o.And(o.Equal(y, o.c(0)), o.Not(o.IsNaN(x)))
    base = o.Where(zero_y, y, atan(ratio))
    half_turn = o.Where(_signbit(o, y), o.c(-PI), o.c(PI))
    return o.Where(_signbit(o, x), o.Add(base, half_turn), base, out=o.out)


_binary("Atan2", "the angle of (x2, x1): TF's atan2(y=x1, x=x2)", _atan2, ("float32", "float64"),
        FLOAT_TYPES, fold=np.arctan2)

# -- comparisons ----------------------------------------------------------------------------
_COMPARISONS = {"Less": ("Less", "<", np.less), "LessEqual": ("LessOrEqual", "<=", np.less_equal),
                "Greater": ("Greater", ">", np.greater),
                "GreaterEqual": ("GreaterOrEqual", ">=", np.greater_equal)}
for _op_type, (_onnx_op, _symbol, _np_fn) in _COMPARISONS.items():
    _binary(_op_type, f"x1 {_symbol} x2, broadcast, as bool",
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

# -- logical --------------------------------------------------------------------------------
for _op_type, (_onnx_op, _np_fn) in {"LogicalAnd": ("And", np.logical_and),
                                     "LogicalOr": ("Or", np.logical_or)}.items():
    _binary(_op_type, f"x1 {_onnx_op.lower()} x2, broadcast",
            lambda o, x, y, dtype, _op=_onnx_op: getattr(o, _op)(x, y, out=o.out),
            ("bool",), ("bool",), fold=_np_fn)
_unary("LogicalNot", "not x", lambda o, x, dtype: o.Not(x, out=o.out), ("bool",), ("bool",),
       fold=np.logical_not)

# -- bitwise --------------------------------------------------------------------------------
for _op_type, (_onnx_op, _np_fn) in {"BitwiseAnd": ("BitwiseAnd", np.bitwise_and),
                                     "BitwiseOr": ("BitwiseOr", np.bitwise_or),
                                     "BitwiseXor": ("BitwiseXor", np.bitwise_xor)}.items():
    _binary(_op_type, f"{_onnx_op} of integers, broadcast",
            lambda o, x, y, dtype, _op=_onnx_op: getattr(o, _op)(x, y, out=o.out),
            INT_TYPES, INT_TYPES, fold=_np_fn)
_unary("Invert", "bitwise not of integers", lambda o, x, dtype: o.BitwiseNot(x, out=o.out),
       INT_TYPES, INT_TYPES, fold=np.invert)


def _shift(direction: str):
    """TF shifts clamp the shift to [0, bits - 1]; a signed x shifts its bits as unsigned to
    the left, and arithmetically to the right (the complement of a negative x shifts in zeros).
    ONNX BitShift takes unsigned integers only."""
    def body(o, x, y, dtype):
        bits = numpy_dtype(dtype).itemsize * 8
        unsigned = dtype if dtype.startswith("u") else "u" + dtype
        to_unsigned, to_dtype = ONNX_DTYPES[unsigned], ONNX_DTYPES[dtype]
        shift = o.Max(o.Cast(y, to=ONNX_DTYPES["int64"]), o.c(0, "int64"))
        shift = o.Cast(o.Min(shift, o.c(bits - 1, "int64")), to=to_unsigned)
        if dtype == unsigned:
            return o.BitShift(x, shift, direction=direction, out=o.out)
        if direction == "LEFT":
            return o.Cast(o.BitShift(o.Cast(x, to=to_unsigned), shift, direction="LEFT"),
                          to=to_dtype, out=o.out)
        mask = o.Neg(o.Cast(o.Less(x, o.c(0)), to=to_dtype))        # -1 where x < 0, else 0
        flipped = o.Cast(o.BitwiseXor(x, mask), to=to_unsigned)
        shifted = o.BitShift(flipped, shift, direction="RIGHT")
        return o.BitwiseXor(o.Cast(shifted, to=to_dtype), mask, out=o.out)

    def fold(x, y):
        bits = x.dtype.itemsize * 8
        y = np.clip(np.asarray(y, np.int64), 0, bits - 1).astype(x.dtype)
        return np.left_shift(x, y) if direction == "LEFT" else np.right_shift(x, y)
    return body, fold


for _op_type, _direction in (("LeftShift", "LEFT"), ("RightShift", "RIGHT")):
    _body, _fold = _shift(_direction)
    _binary(_op_type, f"x1 shifted {_direction.lower()} by x2 bits (clamped to [0, bits - 1])",
            _body, INT_TYPES, INT_TYPES, fold=_fold)


# -- selection and clipping -----------------------------------------------------------------
def _merge_shapes(a, b, what: str):
    if a is None or b is None:
        return a if b is None else b
    if len(a) != len(b) or any(p is not None and q is not None and p != q for p, q in zip(a, b)):
        raise ConversionError(f"{what}: shapes {list(a)} and {list(b)} differ")
    return tuple(p if p is not None else q for p, q in zip(a, b))


select = (OPS.declare("Select", "TF Select (v1): condition is a scalar, x1's shape, or a vector "
                                 "choosing whole rows of x1 and x2 (which have one shape)")
          .input("condition", ("bool",)).input("x1", ALL_TYPES).input("x2", ALL_TYPES).output("y"))


def _select_rows(node) -> bool:
    """True when a vector condition picks rows of a higher-rank x1 (raises when unknowable)."""
    cond, x = node.inputs[0].desc, node.inputs[1].desc
    if cond.rank == 1 and x.rank is None or cond.rank is None and x.rank not in (0, 1):
        raise ConversionError("Select (v1) needs the ranks of condition and x to tell an "
                              "elementwise condition from a row condition")
    return cond.rank == 1 and x.rank > 1


@select.infer
def _infer_select(node):
    cond, x, y = (v.desc for v in node.inputs)
    if x.dtype != y.dtype:
        raise ConversionError(f"x1 and x2 dtypes differ: {x.dtype} and {y.dtype}")
    shape = _merge_shapes(x.shape, y.shape, "Select x1 and x2")
    if cond.rank not in (None, 0) and shape is not None:
        if _select_rows(node):
            _merge_shapes(cond.shape, shape[:1], "Select's vector condition and x1's first dim")
        else:
            shape = _merge_shapes(cond.shape, shape, "Select condition and x1")
    return [TensorDesc(x.dtype, shape, x.format, x.origin_format)]


def _select_body(o, xs, dtype):
    cond = xs[0]
    if _select_rows(o.ctx.node):
        axes = list(range(1, o.ctx.node.inputs[1].desc.rank))
        cond = o.Unsqueeze(cond, o.ctx.constant(np.array(axes, np.int64)))
    return o.Where(cond, xs[1], xs[2], out=o.out)


def _fold_select(node, values):
    cond, x, y = values
    if cond.ndim == 1 and x.ndim > 1:
        cond = cond.reshape((-1,) + (1,) * (x.ndim - 1))
    return [np.where(cond, x, y)]


select.lower(lowering(_select_body, WHERE_TYPES, (1, 2)))
select.fold(_fold_select)

select_v2 = (OPS.declare("SelectV2", "condition ? x1 : x2, all three broadcast (TF SelectV2, "
                                     "tf.where)")
             .input("condition", ("bool",)).input("x1", ALL_TYPES).input("x2", ALL_TYPES).output("y"))


@select_v2.infer
def _infer_select_v2(node):
    out = infer_broadcast(node, (1, 2))[0]
    out.shape = broadcast_shapes(node.inputs[0].desc.shape, out.shape)
    return [out]


select_v2.lower(lowering(lambda o, xs, dtype: o.Where(xs[0], xs[1], xs[2], out=o.out),
                         WHERE_TYPES, (1, 2)))
select_v2.fold(fold_with(np.where))

clip_by_value = (OPS.declare("ClipByValue", "x clipped to [low, high] as TF computes it, "
                                             "max(min(x, high), low); low and high broadcast")
                 .input("x", NUMBER_TYPES).input("low", NUMBER_TYPES).input("high", NUMBER_TYPES)
                 .output("y"))
clip_by_value.infer(lambda node: infer_broadcast(node, (0, 1, 2)))
clip_by_value.lower(lowering(lambda o, xs, dtype: o.Max(o.Min(xs[0], xs[2]), xs[1], out=o.out),
                             MIN_MAX_TYPES, (0, 1, 2)))
clip_by_value.fold(fold_with(lambda x, low, high: np.maximum(np.minimum(x, high), low)))


# -- zeros and ones like --------------------------------------------------------------------
def _fill_like(op_type: str, value: int):
    proto = OPS.declare(op_type, f"a tensor of {value}s with x's shape and dtype") \
        .input("x", ALL_TYPES).output("y")
    proto.infer(same_as_input)

    @proto.lower
    def lower(ctx, node):
        desc = node.inputs[0].desc
        work = "float32" if desc.dtype == "bfloat16" else desc.dtype
        shape = (ctx.constant(np.array(desc.shape, np.int64)) if desc.is_fully_known()
                 else ctx.emit("Shape", [ctx.input(0)])[0])
        fill = tensor_proto("value", np.array([value], numpy_dtype(work)))
        if work == desc.dtype:
            ctx.emit("ConstantOfShape", [shape], [ctx.output(0)], value=fill)
        else:
            filled = ctx.emit("ConstantOfShape", [shape], value=fill)[0]
            ctx.emit("Cast", [filled], [ctx.output(0)], to=ONNX_DTYPES[desc.dtype])
    proto.fold(fold_with(np.zeros_like if value == 0 else np.ones_like))


_fill_like("ZerosLike", 0)
_fill_like("OnesLike", 1)
