"""Broadcast shape arithmetic: BroadcastArgs (the shape two shapes broadcast to) and
BroadcastGradientArgs (the axes each operand's gradient is summed over), on 1-D int32/int64
shape vectors known only at run time (`tf.linspace` in a loop body computes them).

Both left-pad the shorter shape with 1s to the longer one's length. BroadcastArgs takes, per
axis, the dim that is not 1 (TF's rule: 1 against n gives n, 0 included). BroadcastGradientArgs
gives two empty lists when the shapes are identical, else for each operand the axes where its
padded shape is 1 (TF's BCast reduction indices, checked against TF over all shapes of rank
<= 3 with dims 0..3). Incompatible shapes, which TF rejects at run time, are not checked."""

from __future__ import annotations

from typing import Tuple

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.opp.emitting import Emitter

OPS = OpSet("tf2ir.opp.broadcast")
SHAPE_TYPES = ("int32", "int64")

broadcast_args = (OPS.declare("BroadcastArgs", "The shape s0 and s1 broadcast to (numpy rules).")
                  .input("s0", SHAPE_TYPES).input("s1", SHAPE_TYPES).output("r0", SHAPE_TYPES))
gradient_args = (OPS.declare("BroadcastGradientArgs", "The axes of the broadcast shape of s0 and "
                                                      "s1 that each operand's gradient sums over.")
                 .input("s0", SHAPE_TYPES).input("s1", SHAPE_TYPES)
                 .output("r0", SHAPE_TYPES).output("r1", SHAPE_TYPES))


def _vectors(node) -> Tuple[TensorDesc, TensorDesc]:
    a, b = node.inputs[0].desc, node.inputs[1].desc
    if a.dtype != b.dtype:
        raise ConversionError(f"{node.op_type}: s0 is {a.dtype}, s1 is {b.dtype}")
    for desc in (a, b):
        if desc.rank not in (None, 1):
            raise ConversionError(f"{node.op_type} takes 1-D shapes, not rank {desc.rank}")
    return a, b


@broadcast_args.infer
def _infer_broadcast_args(node):
    a, b = _vectors(node)
    lengths = [None if d.shape is None else d.shape[0] for d in (a, b)]
    return [TensorDesc(a.dtype, (None if None in lengths else max(lengths),))]


@gradient_args.infer
def _infer_gradient_args(node):
    a, _ = _vectors(node)
    return [TensorDesc(a.dtype, (None,)), TensorDesc(a.dtype, (None,))]


def _padded(ctx):
    """(s0, s1 as int64 left-padded with 1s to one length, their sizes)."""
    o = Emitter(ctx, "int64")
    shapes = [o.Cast(ctx.input(i), to=ONNX_DTYPES["int64"]) for i in (0, 1)]
    sizes = [o.Size(s) for s in shapes]
    rank = o.Max(*sizes)
    padded = [o.Concat(o.Expand(o.c([1]), o.Reshape(o.Sub(rank, n), o.c([1]))), s, axis=0)
              for s, n in zip(shapes, sizes)]
    return o, padded, sizes


@broadcast_args.lower
def _lower_broadcast_args(ctx, node):
    o, (a, b), _ = _padded(ctx)
    out = o.Where(o.Equal(a, o.c(1)), b, a)
    ctx.op.Cast(out, out=ctx.output(0), to=ONNX_DTYPES[node.output_desc(0).dtype])


@gradient_args.lower
def _lower_gradient_args(ctx, node):
    o, (a, b), (n0, n1) = _padded(ctx)
    mismatches = o.ReduceSum(o.Cast(o.Not(o.Equal(a, b)), to=ONNX_DTYPES["int64"]), keepdims=0)
    same = o.And(o.Equal(n0, n1), o.Equal(mismatches, o.c(0)))
    for i, padded in enumerate((a, b)):
        axes = o.NonZero(o.And(o.Equal(padded, o.c(1)), o.Not(same)))          # [1, n]
        ctx.op.Cast(o.Reshape(axes, o.c([-1])), out=ctx.output(i),
                    to=ONNX_DTYPES[node.output_desc(i).dtype])


def _pad(a, b):
    rank = max(len(a), len(b))
    return ([1] * (rank - len(a)) + list(a), [1] * (rank - len(b)) + list(b))


@broadcast_args.fold
def _fold_broadcast_args(node, values):
    a, b = _pad(*[np.asarray(v).reshape(-1) for v in values])
    return [np.array([y if x == 1 else x for x, y in zip(a, b)], np.asarray(values[0]).dtype)]


@gradient_args.fold
def _fold_gradient_args(node, values):
    s0, s1 = [np.asarray(v).reshape(-1) for v in values]
    dtype = s0.dtype
    if s0.shape == s1.shape and (s0 == s1).all():
        return [np.zeros(0, dtype), np.zeros(0, dtype)]
    a, b = _pad(s0, s1)
    return [np.array([i for i, d in enumerate(p) if d == 1], dtype) for p in (a, b)]
