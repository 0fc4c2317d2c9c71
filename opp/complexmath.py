"""Complex operands of elementwise ops (what an FFT's result meets: Cos of a complex tensor, a
spectrum times a filter, ...), on the pair form of tf2ir.opp.spectral: a complex64 (complex128)
value is a float32 (float64) tensor with a trailing dim of 2 holding (real, imaginary).

`extend(OPS)` (called by the op families that declare these ops: math, arithmetic) lets each
op of COMPLEX_LOWERINGS take complex64/complex128 as TF does: its inputs accept them, and a
complex node lowers on the pairs (a real one as before). With z = a + bi:
  Add, Sub, Neg: on the pairs;  Mul, Square: (ac - bd) + (ad + bc)i;
  RealDiv, Div: ((ac + bd) + (bc - ad)i) / (c² + d²) (Smith's scaling is not applied: a divisor
    past sqrt(float max) overflows where TF's does not);
  Exp: e^a (cos b + i sin b);  Log: log|z| + i atan2(b, a);  Sqrt: principal root;
  Sin: sin a cosh b + i cos a sinh b;  Cos: cos a cosh b - i sin a sinh b;
  Reciprocal: 1 / z.
Cosh and Sinh are computed from Exp (onnxruntime has no float64 Cosh/Sinh kernels). A complex
result is still only read by ops that know the pair form (spectral's guard refuses the rest,
naming the op)."""

from __future__ import annotations

from typing import Callable, Dict, Tuple

from tf2ir.opp.emitting import Emitter
from tf2ir.opp.spectral import COMPLEX, ELEMENTWISE, REAL_OF, check_pair_outputs, pair_input

Pair = Tuple[str, str]


def _parts(o: Emitter, pair: str) -> Pair:
    return (o.Gather(pair, o.c(0, "int64"), axis=-1), o.Gather(pair, o.c(1, "int64"), axis=-1))


def _join(o: Emitter, re: str, im: str, out: str = None) -> str:
    last = o.c([-1], "int64")
    re, im = o.Unsqueeze(re, last), o.Unsqueeze(im, last)
    # one part may be broadcast against the other (a real scalar part against a tensor)
    return o.Concat(o.Expand(re, o.Shape(im)), o.Expand(im, o.Shape(re)), axis=-1, out=out)


def _mul(o, x: Pair, y: Pair) -> Pair:
    (a, b), (c, d) = x, y
    return o.Sub(o.Mul(a, c), o.Mul(b, d)), o.Add(o.Mul(a, d), o.Mul(b, c))


def _div(o, x: Pair, y: Pair) -> Pair:
    (a, b), (c, d) = x, y
    norm = o.Add(o.Mul(c, c), o.Mul(d, d))
    return (o.Div(o.Add(o.Mul(a, c), o.Mul(b, d)), norm),
            o.Div(o.Sub(o.Mul(b, c), o.Mul(a, d)), norm))


def _cosh_sinh(o, b: str) -> Pair:
    up, down = o.Exp(b), o.Exp(o.Neg(b))
    half = o.c(0.5)
    return o.Mul(o.Add(up, down), half), o.Mul(o.Sub(up, down), half)


def _exp(o, z: Pair) -> Pair:
    a, b = z
    scale = o.Exp(a)
    return o.Mul(scale, o.Cos(b)), o.Mul(scale, o.Sin(b))


def _sin(o, z: Pair) -> Pair:
    a, b = z
    cosh, sinh = _cosh_sinh(o, b)
    return o.Mul(o.Sin(a), cosh), o.Mul(o.Cos(a), sinh)


def _cos(o, z: Pair) -> Pair:
    a, b = z
    cosh, sinh = _cosh_sinh(o, b)
    return o.Mul(o.Cos(a), cosh), o.Neg(o.Mul(o.Sin(a), sinh))


def _abs(o, z: Pair) -> str:
    a, b = z
    return o.Sqrt(o.Add(o.Mul(a, a), o.Mul(b, b)))


def _log(o, z: Pair) -> Pair:
    from tf2ir.opp.angles import atan2 as _atan2
    a, b = z
    return o.Log(_abs(o, z)), _atan2(o, b, a, o.dtype)


def _sqrt(o, z: Pair) -> Pair:
    """The principal root: re = sqrt((|z| + a) / 2), im = sign(b) sqrt((|z| - a) / 2)
    (b = -0 counts as negative, as C's csqrt)."""
    from tf2ir.opp.angles import signbit
    a, b = z
    r, half = _abs(o, z), o.c(0.5)
    re = o.Sqrt(o.Mul(o.Add(r, a), half))
    im = o.Sqrt(o.Max(o.Mul(o.Sub(r, a), half), o.c(0.0)))
    return re, o.Where(signbit(o, b), o.Neg(im), im)


def _reciprocal(o, z: Pair) -> Pair:
    return _div(o, (o.c(1.0), o.c(0.0)), z)


UNARY: Dict[str, Callable] = {
    "Neg": lambda o, z: (o.Neg(z[0]), o.Neg(z[1])), "Square": lambda o, z: _mul(o, z, z),
    "Exp": _exp, "Log": _log, "Sqrt": _sqrt, "Sin": _sin, "Cos": _cos,
    "Reciprocal": _reciprocal,
}
BINARY: Dict[str, Callable] = {
    "Add": lambda o, x, y: (o.Add(x[0], y[0]), o.Add(x[1], y[1])),
    "Sub": lambda o, x, y: (o.Sub(x[0], y[0]), o.Sub(x[1], y[1])),
    "Mul": _mul, "RealDiv": _div, "Div": _div,
}
COMPLEX_LOWERINGS = tuple(UNARY) + tuple(BINARY)
assert set(COMPLEX_LOWERINGS) == set(ELEMENTWISE), "spectral's guard lists these ops"


def _lower_complex(ctx, node) -> None:
    check_pair_outputs(node)
    o = Emitter(ctx, REAL_OF[node.inputs[0].desc.dtype])
    operands = [_parts(o, pair_input(ctx, node, i)) for i in range(len(node.inputs))]
    if node.op_type in UNARY:
        re, im = UNARY[node.op_type](o, *operands)
    else:
        re, im = BINARY[node.op_type](o, *operands)
    _join(o, re, im, out=ctx.output(0))


def extend(ops) -> None:
    """Let the ops of `ops` named in COMPLEX_LOWERINGS take complex operands."""
    for proto in ops:
        if proto.op_type not in COMPLEX_LOWERINGS:
            continue
        for port in proto.inputs:
            if port.dtypes is not None:
                port.dtypes = tuple(port.dtypes) + tuple(t for t in COMPLEX if t not in port.dtypes)
        real_lower = proto.lower_fn

        def lower(ctx, node, _real=real_lower):
            if node.inputs[0].desc.dtype in COMPLEX:
                _lower_complex(ctx, node)
            else:
                _real(ctx, node)
        proto.lower_fn = lower
