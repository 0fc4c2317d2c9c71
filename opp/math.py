"""Math functions, elementwise: roots, exponentials and logarithms (Log1p and Expm1 exact near
0), the error function, trigonometric and hyperbolic functions and their inverses (Atan2 too),
rounding, sign, absolute value, negation, squares and the float classes IsNan, IsInf, IsFinite.

onnxruntime's CPU kernels lack some dtypes (float64 for Erf and for the inverse and hyperbolic
trig ops), and ONNX has no Expm1, Log1p or Atan2: float64 math is composed from double kernels
so that it keeps double precision; float64 Erf runs in float32.
"""

from __future__ import annotations

import numpy as np

from tf2ir.ir import OpSet
from tf2ir.ir.onnx.kernels import has_kernel, via
from tf2ir.ir.tensor import FLOAT_TYPES, INT_TYPES, NUMBER_TYPES, numpy_dtype
from tf2ir.opp import complexmath
from tf2ir.opp.angles import atan2 as _atan2, atan64
from tf2ir.opp.carriers import FLOAT_KERNELS, NO_BF16
from tf2ir.opp.declare import declare_binary, declare_unary
from tf2ir.opp.emitting import Emitter, emit_via
from tf2ir.opp.shapes import same_as_input

OPS = OpSet("tf2ir.opp.math")

PI = float(np.pi)
LN2 = float(np.log(2.0))

# no float64 Erf kernel: float32 is the nearest there is (about 1e-7 absolute error)
ERF_VIA = via("Erf", {"float64": "float32"})


def _unary(op_type, doc, emit, dtypes=FLOAT_TYPES):
    proto = OPS.declare(op_type, doc).input("x", dtypes).output("y")
    proto.infer(same_as_input)
    proto.lower(emit)
    return proto


def _direct(onnx_op):
    def lower(ctx, node):
        getattr(ctx.op, onnx_op)(ctx.input(0), out=ctx.output(0))
    return lower


def _lower_square(ctx, node):
    ctx.op.Mul(ctx.input(0), ctx.input(0), out=ctx.output(0))


def _lower_rsqrt(ctx, node):
    root = ctx.op.Sqrt(ctx.input(0))
    ctx.op.Reciprocal(root, out=ctx.output(0))


_unary("Rsqrt", "1 / sqrt(x)", _lower_rsqrt)
_unary("Sqrt", "square root", _direct("Sqrt"))
_unary("Exp", "e ** x", _direct("Exp"))
_unary("Log", "natural logarithm", _direct("Log"))
_unary("Reciprocal", "1 / x", _direct("Reciprocal"))


def _lower_erf(ctx, node):
    emit_via(ctx, "Erf", [ctx.input(0)], ctx.output(0), node.inputs[0].desc.dtype, ERF_VIA)


_unary("Erf", "error function", _lower_erf)


def _lower_erfc(ctx, node):
    dtype = node.inputs[0].desc.dtype
    one = ctx.constant(np.array(1, numpy_dtype(dtype)))
    erf = emit_via(ctx, "Erf", [ctx.input(0)], ctx.fresh("erf"), dtype, ERF_VIA)
    ctx.op.Sub(one, erf, out=ctx.output(0))


_unary("Erfc", "1 - erf(x) (complementary error function)", _lower_erfc)
_unary("Floor", "round down", _direct("Floor"))
_unary("Ceil", "round up", _direct("Ceil"))
_unary("Sin", "sine", _direct("Sin"))
_unary("Cos", "cosine", _direct("Cos"))
neg = _unary("Neg", "-x", _direct("Neg"), NUMBER_TYPES)
_unary("Abs", "|x|", _direct("Abs"), NUMBER_TYPES)
_unary("Square", "x * x", _lower_square, NUMBER_TYPES)


@neg.fold
def _fold_neg(node, values):
    return [np.negative(values[0])]


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
        if not has_kernel(op_type, dtype):     # float64
            return F64_BODIES[op_type](o, x)
        return getattr(o, op_type)(x, out=o.out)
    return declare_unary(OPS, op_type, doc, body, FLOAT_KERNELS, fold=fold)


_trig("Tan", "tangent", np.tan)
_trig("Asin", "arc sine (NaN outside [-1, 1])", np.arcsin)
_trig("Acos", "arc cosine (NaN outside [-1, 1])", np.arccos)
_trig("Atan", "arc tangent", np.arctan)
_trig("Sinh", "hyperbolic sine", np.sinh)
_trig("Cosh", "hyperbolic cosine", np.cosh)
_trig("Asinh", "inverse hyperbolic sine", np.arcsinh)
_trig("Acosh", "inverse hyperbolic cosine (NaN below 1)", np.arccosh)
_trig("Atanh", "inverse hyperbolic tangent (NaN outside [-1, 1])", np.arctanh)
declare_unary(OPS, "Log1p", "log(1 + x), exact near 0", lambda o, x, dtype: log1p_exact(o, x, o.out),
              ("float32", "float64"), fold=np.log1p)
declare_unary(OPS, "Expm1", "exp(x) - 1, exact near 0", lambda o, x, dtype: expm1_exact(o, x, o.out),
              ("float32", "float64"), fold=np.expm1)

# -- sign, rounding, float classes ----------------------------------------------------------
declare_unary(OPS, "Sign", "-1, 0 or 1 by the sign of x (NaN stays NaN)",   # half Sign kernels lose NaN
              lambda o, x, dtype: o.Sign(x, out=o.out), ("float32", "float64") + INT_TYPES, NUMBER_TYPES,
              fold=np.sign)
declare_unary(OPS, "Round", "round half to even (TF Round and Rint); integers are kept",
              lambda o, x, dtype: o.Identity(x, out=o.out) if dtype in INT_TYPES else o.Round(x, out=o.out),
              NO_BF16, NUMBER_TYPES, fold=np.round)
declare_unary(OPS, "IsNan", "x is NaN", lambda o, x, dtype: o.IsNaN(x, out=o.out), FLOAT_KERNELS,
              predicate=True, fold=np.isnan)
declare_unary(OPS, "IsInf", "x is +inf or -inf", lambda o, x, dtype: o.IsInf(x, out=o.out),
              ("float32", "float64"), predicate=True, fold=np.isinf)
declare_unary(OPS, "IsFinite", "x is neither NaN nor infinite",
              lambda o, x, dtype: o.Not(o.Or(o.IsNaN(x), o.IsInf(x)), out=o.out),
              ("float32", "float64"), predicate=True, fold=np.isfinite)


# -- atan2 ---------------------------------------------------------------------------------

declare_binary(OPS, "Atan2", "the angle of (x2, x1): TF's atan2(y=x1, x=x2)", _atan2, ("float32", "float64"),
               FLOAT_TYPES, fold=np.arctan2)


# complex operands (Cos of an FFT's result, ...) on the (real, imaginary) pairs
complexmath.extend(OPS)
