"""Angles, shared by the real and complex math families: float64 atan refined from float32,
the sign bit (-0 included) and C's atan2, composed from ONNX ops (ONNX has no Atan2)."""

from __future__ import annotations

import numpy as np

from tf2ir.ir.onnx.kernels import has_kernel
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.opp.emitting import Emitter

PI = float(np.pi)


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


def signbit(o: Emitter, v: str) -> str:
    """v is negative, -0 or -inf (1 / -0 is -inf)."""
    return o.Or(o.Less(v, o.c(0)), o.Less(o.Reciprocal(v), o.c(0)))


def atan2(o, y, x, dtype):
    """atan(y / x) moved by +-pi where x is negative (or -0), with C's atan2 cases for zeros
    (signed) and two infinities; TF's Atan2 takes y first."""
    atan = o.Atan if has_kernel("Atan", dtype) else (lambda v: atan64(o, v))
    both_inf = o.And(o.IsInf(y), o.IsInf(x))
    ratio = o.Where(both_inf, o.Mul(o.Sign(y), o.Sign(x)), o.Div(y, x))
    zero_y = o.And(o.Equal(y, o.c(0)), o.Not(o.IsNaN(x)))
    base = o.Where(zero_y, y, atan(ratio))
    half_turn = o.Where(signbit(o, y), o.c(-PI), o.c(PI))
    return o.Where(signbit(o, x), o.Add(base, half_turn), base, out=o.out)
