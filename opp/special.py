"""Special functions, elementwise: Lgamma, Digamma, Polygamma, Zeta (Hurwitz), the regularized
incomplete gamma functions Igamma (P) and Igammac (Q), the regularized incomplete beta function
Betainc, and the exponentially scaled modified Bessel functions BesselI0e and BesselI1e.

ONNX has none of them, so each is composed from ONNX arithmetic in float64 (every input dtype:
bfloat16, float16, float32 and float64; the result is cast back), which makes float32 results
exact to float32 rounding. The methods, and their float64 accuracy against TensorFlow:

- Lgamma, Digamma: shifted up (x + k >= 10, ten fixed steps) to the Stirling / asymptotic series
  (Bernoulli numbers to B16), reflected below x = 0.5 through sin/cos of pi * (x - round(x)).
  Within 1e-13 absolute + 1e-13 relative (absolute near the zeros of lgamma at 1 and 2).
- Zeta(s, q): the direct sum of (q + k)^-s until q + k >= 20 (a Range over the largest count, so
  negative q work), then the Euler-Maclaurin tail with 12 Bernoulli terms; within 1e-12 relative.
  q below -20000 gives NaN (the direct sum would be too long). Polygamma(n, x) is Digamma for
  n = 0 and (-1)^(n+1) n! Zeta(n + 1, x) above: within 1e-12 relative for orders up to 20.
- Igamma, Igammac: the power series of P (x <= 1 or x <= a) or the continued fraction of Q
  (modified Lentz), each an ONNX Loop that stops when every element has converged (at most 2000
  iterations): within 1e-12 absolute + 1e-10 relative for a, x up to 1e4.
- Betainc: the continued fraction of I_x(a, b) (modified Lentz, an ONNX Loop of at most 1000
  iterations), on I_{1-x}(b, a) past x = (a + 1) / (a + b + 2): within 1e-12 absolute + 1e-10
  relative for a, b up to 1e3.
- BesselI0e, BesselI1e: the power series (75 terms) below |x| = 30 and the asymptotic series (25
  terms) above, times exp(-|x|): within 1e-14 relative.

Poles and special values follow TensorFlow's kernels (Eigen): Lgamma is +inf at the poles and at
-inf; Digamma NaN at the poles and -inf; Zeta(s, q) NaN for s < 1, +inf for s = 1, +inf at
non-positive integer q for even s (NaN otherwise), NaN for negative q and non-integer s; Polygamma
NaN for a negative or non-integer order; Igamma/Igammac NaN for x < 0 or a <= 0 (Igamma(a, 0) = 0
before that check); Betainc NaN outside a, b > 0 and 0 <= x <= 1.
"""

from __future__ import annotations

from fractions import Fraction
from math import factorial, log, pi

import numpy as np

from tf2ir.ir import OpSet
from tf2ir.ir.tensor import FLOAT_TYPES, TensorDesc
from tf2ir.opp.emitting import Emitter, emit_cast
from tf2ir.opp.shapes import infer_broadcast

OPS = OpSet("tf2ir.opp.special")

WORK = "float64"
EPS = float(np.finfo(np.float64).eps)
TINY = 1e-30                    # the modified Lentz method's floor for a vanishing denominator
HALF_LOG_2PI = 0.5 * log(2 * pi)
BERNOULLI = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
             Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510), Fraction(43867, 798),
             Fraction(-174611, 330), Fraction(854513, 138), Fraction(-236364091, 2730)]  # B2..B24
SHIFT_TO = 10.0                 # lgamma and digamma shift x up to this before their series
ZETA_SHIFT = 20.0               # zeta sums directly until q + k reaches this
ZETA_MOST_TERMS = 20000
BESSEL_SPLIT = 30.0


# -- ONNX helpers ------------------------------------------------------------------------------
def _horner(o: Emitter, z: str, coefficients) -> str:
    """sum(c_k z^k) for coefficients c_0, c_1, ... (Horner, from the top)."""
    coefficients = [float(c) for c in coefficients]
    acc = o.c(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = o.Add(o.Mul(acc, z), o.c(c))
    return acc


def _where(o: Emitter, cond: str, yes, no) -> str:
    as_name = lambda v: v if isinstance(v, str) else o.c(v)     # noqa: E731
    return o.Where(cond, as_name(yes), as_name(no))


def _is_integer(o: Emitter, x: str) -> str:
    return o.Equal(o.Floor(x), x)


def _broadcast(o: Emitter, names):
    """The operands expanded to their common shape (Expand broadcasts both ways)."""
    out = list(names)
    for i, name in enumerate(out):
        for other in names:
            if other is not name:
                out[i] = o.Expand(out[i], o.Shape(other))
    return out


def _loop(ctx, states, step, most: int):
    """An ONNX Loop over float64 `states` running `step(o, states) -> (new states, keep going)`
    at most `most` times; returns the final states."""
    from tf2ir.ir.onnx.compile import subgraph_value_info
    body = ctx.subcontext()
    names = [body.fresh(h) for h in ["i", "go"] + [f"s{k}" for k in range(len(states))]]
    new, go = step(Emitter(body, WORK), names[2:])
    state = TensorDesc(WORK, None)
    graph = body.make_subgraph(
        ctx.fresh("iterate"), [subgraph_value_info(names[0], TensorDesc("int64", ())),
                               subgraph_value_info(names[1], TensorDesc("bool", ()))]
        + [subgraph_value_info(n, state) for n in names[2:]],
        [(go, TensorDesc("bool", ()))] + [(n, state) for n in new])
    first = [ctx.constant(np.array(most, np.int64)), ctx.constant(np.array(True))]
    return ctx.op.Loop(*first + list(states), outputs=len(states), body=graph)


def _any(o: Emitter, flags: str) -> str:
    """Whether any of the bool `flags` is set (False for none): a bool scalar."""
    flat = o.Cast(o.Reshape(flags, o.c([-1], "int64")), to=7)
    return o.Cast(o.ReduceMax(o.Concat(flat, o.c([0], "int64"), axis=0), keepdims=0), to=9)


# -- lgamma, digamma ---------------------------------------------------------------------------
def _shift_up(o: Emitter, x: str):
    """For x >= 0.5: (y, prod, recip) with y = x + k >= SHIFT_TO, prod = x (x+1) ... (y-1) and
    recip = 1/x + ... + 1/(y-1)."""
    y, prod, recip = x, o.c(1.0), o.c(0.0)
    for _ in range(int(SHIFT_TO)):
        low = o.Less(y, o.c(SHIFT_TO))
        prod = o.Where(low, o.Mul(prod, y), prod)
        recip = o.Where(low, o.Add(recip, o.Reciprocal(y)), recip)
        y = o.Where(low, o.Add(y, o.c(1.0)), y)
    return y, prod, recip


def lgamma_positive(o: Emitter, x: str) -> str:
    """log(gamma(x)) for x >= 0.5 (and +inf): Stirling's series after the shift."""
    y, prod, _ = _shift_up(o, x)
    z = o.Reciprocal(y)
    series = o.Mul(z, _horner(o, o.Mul(z, z), [b / (2 * k * (2 * k - 1)) for k, b in
                                             enumerate(BERNOULLI[:8], 1)]))
    main = o.Sub(o.Mul(o.Sub(y, o.c(0.5)), o.Sub(o.Log(y), o.c(1.0))), o.c(0.5 - HALF_LOG_2PI))
    return o.Sub(o.Add(main, series), o.Log(prod))


def _reflected(o: Emitter, x: str):
    """(below, x' = 1 - x below 0.5 else x, d = x - round(x)): the reflection's pieces."""
    below = o.Less(x, o.c(0.5))
    return below, o.Where(below, o.Sub(o.c(1.0), x), x), o.Sub(x, o.Round(x))


def lgamma(o: Emitter, x: str) -> str:
    below, moved, d = _reflected(o, x)
    positive = lgamma_positive(o, moved)
    sine = o.Sin(o.Mul(o.c(pi), o.Abs(d)))
    reflected = o.Sub(o.Log(o.Div(o.c(pi), sine)), positive)
    value = o.Where(below, reflected, positive)
    return _where(o, o.Equal(x, o.c(-np.inf)), np.inf, value)


def digamma(o: Emitter, x: str) -> str:
    below, moved, d = _reflected(o, x)
    y, _, recip = _shift_up(o, moved)
    z2 = o.Reciprocal(o.Mul(y, y))
    tail = o.Mul(z2, _horner(o, z2, [b / (2 * k) for k, b in enumerate(BERNOULLI[:7], 1)]))
    positive = o.Sub(o.Sub(o.Sub(o.Log(y), o.Div(o.c(0.5), y)), tail), recip)
    angle = o.Mul(o.c(pi), d)
    reflected = o.Sub(positive, o.Div(o.Mul(o.c(pi), o.Cos(angle)), o.Sin(angle)))
    value = o.Where(below, reflected, positive)
    pole = o.Or(o.And(below, o.Equal(d, o.c(0.0))), o.Equal(x, o.c(-np.inf)))
    return _where(o, pole, np.nan, value)


# -- Hurwitz zeta and polygamma -------------------------------------------------------------------
def zeta(o: Emitter, s: str, q: str) -> str:
    s, q = _broadcast(o, [s, q])
    count = o.Clip(o.Ceil(o.Sub(o.c(ZETA_SHIFT), q)), o.c(0.0), o.c(float(ZETA_MOST_TERMS)))
    count = o.Where(o.IsNaN(count), o.c(0.0), count)
    most = o.ReduceMax(o.Concat(o.Reshape(count, o.c([-1], "int64")), o.c([0.0]), axis=0),
                       keepdims=0)
    k = o.Range(o.c(0.0), most, o.c(1.0))
    last = o.c([-1], "int64")
    terms = o.Pow(o.Add(o.Unsqueeze(q, last), k), o.Neg(o.Unsqueeze(s, last)))
    terms = o.Where(o.Less(k, o.Unsqueeze(count, last)), terms, o.c(0.0))
    direct = o.ReduceSum(terms, last, keepdims=0)
    a = o.Add(q, count)
    a_s = o.Pow(a, o.Neg(s))
    tail = o.Add(o.Div(o.Mul(a_s, a), o.Sub(s, o.c(1.0))), o.Mul(o.c(0.5), a_s))
    factor = o.Div(o.Mul(s, a_s), a)                   # s (s+1) ... (s+2j-2) a^(-s-2j+1)
    inverse_square = o.Reciprocal(o.Mul(a, a))
    for j, b in enumerate(BERNOULLI, 1):
        if j > 1:
            grow = o.Mul(o.Add(s, o.c(2.0 * j - 3)), o.Add(s, o.c(2.0 * j - 2)))
            factor = o.Mul(factor, o.Mul(grow, inverse_square))
        tail = o.Add(tail, o.Mul(o.c(float(b / factorial(2 * j))), factor))
    value = _where(o, o.Equal(q, o.c(np.inf)), 0.0, o.Add(direct, tail))
    whole_q, whole_s = _is_integer(o, q), _is_integer(o, s)
    even_s = o.And(whole_s, _is_integer(o, o.Mul(s, o.c(0.5))))
    at_pole = o.And(o.LessOrEqual(q, o.c(0.0)), whole_q)
    value = _where(o, at_pole, _where(o, even_s, np.inf, np.nan), value)
    negative_q = o.And(o.Less(q, o.c(0.0)), o.Not(whole_q))
    nan = o.Or(o.Less(s, o.c(1.0)), o.And(negative_q, o.Not(whole_s)))
    nan = o.Or(nan, o.Less(q, o.c(ZETA_SHIFT - ZETA_MOST_TERMS)))
    value = _where(o, o.Equal(s, o.c(1.0)), np.inf, value)
    return _where(o, o.Or(nan, o.Or(o.IsNaN(s), o.IsNaN(q))), np.nan, value)


def polygamma(o: Emitter, n: str, x: str) -> str:
    n, x = _broadcast(o, [n, x])
    order = o.Where(o.Less(n, o.c(0.0)), o.c(0.0), n)
    factorial_n = o.Exp(lgamma_positive(o, o.Add(order, o.c(1.0))))
    odd = o.Sub(order, o.Mul(o.c(2.0), o.Floor(o.Mul(order, o.c(0.5)))))
    sign = o.Sub(o.Mul(o.c(2.0), odd), o.c(1.0))          # (-1)^(n+1)
    value = o.Mul(o.Mul(sign, factorial_n), zeta(o, o.Add(order, o.c(1.0)), x))
    value = o.Where(o.Equal(n, o.c(0.0)), digamma(o, x), value)
    bad = o.Or(o.Less(n, o.c(0.0)), o.Not(_is_integer(o, n)))
    return _where(o, bad, np.nan, value)


# -- incomplete gamma ------------------------------------------------------------------------
def _incomplete_gamma(ctx, o: Emitter, a: str, x: str, upper: bool) -> str:
    a, x = _broadcast(o, [a, x])
    bad = o.Or(o.Or(o.Less(x, o.c(0.0)), o.LessOrEqual(a, o.c(0.0))),
               o.Or(o.IsNaN(a), o.IsNaN(x)))
    infinite = o.Or(o.IsInf(a), o.IsInf(x))
    given_a, given_x = a, x
    usable = o.Not(o.Or(o.Or(bad, infinite), o.Equal(x, o.c(0.0))))
    a = o.Where(usable, a, o.c(1.0))
    x = o.Where(usable, x, o.c(0.5))
    fraction = o.And(o.Greater(x, o.c(1.0)), o.Greater(x, a))
    log_front = o.Sub(o.Sub(o.Mul(a, o.Log(x)), x), lgamma(o, a))

    def series(e, state):           # P: sum_n x^n / ((a+1) ... (a+n)), until a term is tiny
        total, term, r = state
        r = e.Add(r, e.c(1.0))
        term = e.Mul(term, e.Div(x, r))
        total = e.Add(total, term)
        busy = e.And(e.Not(fraction), e.Greater(e.Abs(term), e.Mul(e.Abs(total), e.c(EPS / 4))))
        return [total, term, r], _any(e, busy)

    one = o.Expand(o.c(1.0), o.Shape(x))
    total, _, _ = _loop(ctx, [one, one, a], series, 2000)
    p_series = o.Mul(o.Exp(log_front), o.Div(total, a))

    def lentz(e, state):            # Q's continued fraction, modified Lentz
        b, c, d, h, i = state
        i = e.Add(i, e.c(1.0))
        an = e.Mul(e.Neg(i), e.Sub(i, a))
        b = e.Add(b, e.c(2.0))
        d = _floor_tiny(e, e.Add(e.Mul(an, d), b))
        c = _floor_tiny(e, e.Add(b, e.Div(an, c)))
        d = e.Reciprocal(d)
        delta = e.Mul(d, c)
        h = e.Mul(h, delta)
        busy = e.And(fraction, e.Greater(e.Abs(e.Sub(delta, e.c(1.0))), e.c(EPS)))
        return [b, c, d, h, i], _any(e, busy)

    b = o.Sub(o.Add(x, o.c(1.0)), a)
    d = o.Reciprocal(_floor_tiny(o, b))
    _, _, _, h, _ = _loop(ctx, [b, o.Expand(o.c(1.0 / TINY), o.Shape(x)), d, d,
                                o.Expand(o.c(0.0), o.Shape(x))], lentz, 2000)
    q_fraction = o.Mul(o.Exp(log_front), h)
    if upper:
        value = o.Where(fraction, q_fraction, o.Sub(o.c(1.0), p_series))
        special = [(o.Equal(given_x, o.c(0.0)), 1.0), (o.IsInf(given_x), 0.0),
                   (o.IsInf(given_a), 1.0)]
    else:
        value = o.Where(fraction, o.Sub(o.c(1.0), q_fraction), p_series)
        special = [(o.IsInf(given_x), 1.0), (o.IsInf(given_a), 0.0)]
    for cond, result in reversed(special):
        value = _where(o, cond, result, value)
    value = _where(o, bad, np.nan, value)
    if not upper:       # TF's Igamma is 0 at x = 0 before it checks a
        value = _where(o, o.Equal(given_x, o.c(0.0)), 0.0, value)
    return value


def _floor_tiny(o: Emitter, v: str) -> str:
    return o.Where(o.Less(o.Abs(v), o.c(TINY)), o.c(TINY), v)


# -- incomplete beta --------------------------------------------------------------------------
def betainc(ctx, o: Emitter, a: str, b: str, x: str) -> str:
    a, b, x = _broadcast(o, [a, b, x])
    bad = o.Or(o.Or(o.LessOrEqual(a, o.c(0.0)), o.LessOrEqual(b, o.c(0.0))),
               o.Or(o.Less(x, o.c(0.0)), o.Greater(x, o.c(1.0))))
    bad = o.Or(bad, o.Or(o.IsNaN(x), o.Or(o.IsNaN(a), o.IsNaN(b))))
    edge = o.Or(o.Equal(x, o.c(0.0)), o.Equal(x, o.c(1.0)))
    usable, given_x = o.Not(o.Or(bad, edge)), x
    a, b = o.Where(usable, a, o.c(1.0)), o.Where(usable, b, o.c(1.0))
    x = o.Where(usable, x, o.c(0.5))
    swap = o.Greater(x, o.Div(o.Add(a, o.c(1.0)), o.Add(o.Add(a, b), o.c(2.0))))
    p, q = o.Where(swap, b, a), o.Where(swap, a, b)
    y = o.Where(swap, o.Sub(o.c(1.0), x), x)
    y1 = o.Where(swap, x, o.Sub(o.c(1.0), x))              # 1 - y, exact on either side
    log_beta = o.Sub(o.Add(lgamma(o, p), lgamma(o, q)), lgamma(o, o.Add(p, q)))
    front = o.Div(o.Exp(o.Sub(o.Add(o.Mul(p, o.Log(y)), o.Mul(q, o.Log(y1))), log_beta)), p)

    def lentz(e, state):
        c, d, h, m = state
        m = e.Add(m, e.c(1.0))
        m2 = e.Mul(m, e.c(2.0))
        even = e.Div(e.Mul(e.Mul(m, e.Sub(q, m)), y),
                     e.Mul(e.Add(e.Sub(p, e.c(1.0)), m2), e.Add(p, m2)))
        d = e.Reciprocal(_floor_tiny(e, e.Add(e.c(1.0), e.Mul(even, d))))
        c = _floor_tiny(e, e.Add(e.c(1.0), e.Div(even, c)))
        h = e.Mul(h, e.Mul(d, c))
        odd = e.Div(e.Neg(e.Mul(e.Mul(e.Add(p, m), e.Add(e.Add(p, q), m)), y)),
                    e.Mul(e.Add(p, m2), e.Add(e.Add(p, e.c(1.0)), m2)))
        d = e.Reciprocal(_floor_tiny(e, e.Add(e.c(1.0), e.Mul(odd, d))))
        c = _floor_tiny(e, e.Add(e.c(1.0), e.Div(odd, c)))
        delta = e.Mul(d, c)
        h = e.Mul(h, delta)
        return [c, d, h, m], _any(e, e.Greater(e.Abs(e.Sub(delta, e.c(1.0))), e.c(EPS)))

    first = o.Sub(o.c(1.0), o.Div(o.Mul(o.Add(p, q), y), o.Add(p, o.c(1.0))))
    d = o.Reciprocal(_floor_tiny(o, first))
    ones = o.Expand(o.c(1.0), o.Shape(y))
    _, _, h, _ = _loop(ctx, [ones, d, d, o.Mul(ones, o.c(0.0))], lentz, 1000)
    part = o.Mul(front, h)
    value = o.Where(swap, o.Sub(o.c(1.0), part), part)
    value = _where(o, edge, given_x, value)
    return _where(o, bad, np.nan, value)


# -- Bessel I0e, I1e ---------------------------------------------------------------------------
def bessel_ie(o: Emitter, x: str, order: int) -> str:
    ax = o.Abs(x)
    small = o.Less(ax, o.c(BESSEL_SPLIT))
    near = o.Where(small, ax, o.c(1.0))
    y = o.Mul(o.Mul(near, near), o.c(0.25))
    # term by term, y^k / (k! (k + order)!) = the last term * y / (k (k + order)): onnxruntime's
    # graph optimizer merges float64 constants that agree as float32, so none may be that tiny
    term = power = o.c(1.0 / factorial(order))
    for k in range(1, 75):
        term = o.Mul(term, o.Mul(y, o.c(1.0 / (k * (k + order)))))
        power = o.Add(power, term)
    if order:
        power = o.Mul(power, o.Mul(near, o.c(0.5)))
    power = o.Mul(power, o.Exp(o.Neg(near)))
    far = o.Where(small, o.c(BESSEL_SPLIT), ax)
    mu, coefficients, c = 4.0 * order * order, [1.0], 1.0
    for k in range(1, 25):
        c *= -(mu - (2 * k - 1) ** 2) / (8.0 * k)
        coefficients.append(c)
    asymptotic = o.Div(_horner(o, o.Reciprocal(far), coefficients),
                       o.Sqrt(o.Mul(far, o.c(2 * pi))))
    value = o.Where(small, power, asymptotic)
    return o.Mul(value, o.Sign(x)) if order else value


# -- declarations -------------------------------------------------------------------------------
def _declare(op_type: str, doc: str, inputs, body):
    """An elementwise op of `inputs` (broadcast) computed by `body(ctx, o, *names)` in float64."""
    proto = OPS.declare(op_type, doc)
    for name in inputs:
        proto.input(name, FLOAT_TYPES)
    proto.output("y", FLOAT_TYPES)

    @proto.infer
    def infer(node):
        return infer_broadcast(node, tuple(range(len(inputs))))

    @proto.lower
    def _lower(ctx, node):
        dtype = node.inputs[0].desc.dtype
        names = [ctx.input(i) if dtype == WORK else emit_cast(ctx, ctx.input(i), WORK)
                 for i in range(len(inputs))]
        result = body(ctx, Emitter(ctx, WORK), *names)
        if dtype == WORK:
            ctx.op.Identity(result, out=ctx.output(0))
        else:
            emit_cast(ctx, result, dtype, ctx.output(0))
    return proto


_declare("Lgamma", "log |gamma(x)|", ["x"], lambda ctx, o, x: lgamma(o, x))
_declare("Digamma", "the logarithmic derivative of gamma", ["x"], lambda ctx, o, x: digamma(o, x))
_declare("Zeta", "the Hurwitz zeta function sum_k (q + k)^-x", ["x", "q"],
         lambda ctx, o, s, q: zeta(o, s, q))
_declare("Polygamma", "the a-th derivative of digamma at x", ["a", "x"],
         lambda ctx, o, n, x: polygamma(o, n, x))
_declare("Igamma", "the regularized lower incomplete gamma function P(a, x)", ["a", "x"],
         lambda ctx, o, a, x: _incomplete_gamma(ctx, o, a, x, upper=False))
_declare("Igammac", "the regularized upper incomplete gamma function Q(a, x)", ["a", "x"],
         lambda ctx, o, a, x: _incomplete_gamma(ctx, o, a, x, upper=True))
_declare("Betainc", "the regularized incomplete beta function I_x(a, b)", ["a", "b", "x"],
         lambda ctx, o, a, b, x: betainc(ctx, o, a, b, x))
_declare("BesselI0e", "exp(-|x|) I0(x)", ["x"], lambda ctx, o, x: bessel_ie(o, x, 0))
_declare("BesselI1e", "exp(-|x|) I1(x)", ["x"], lambda ctx, o, x: bessel_ie(o, x, 1))
