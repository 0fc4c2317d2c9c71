"""Rank-free gathers: lowerings that compute the coordinates of every output position as rows
[size, rank] and gather x's values at computed source coordinates, for what ONNX has no op of
unknown rank for: a Transpose by a run-time permutation (ONNX's takes a constant one) and a
SYMMETRIC MirrorPad of run-time paddings and rank."""

from __future__ import annotations

from tf2ir.opp.emitting import Emitter, int64_input


def strides_row(o, dims: str) -> str:
    """[1, rank]: per dim of the shape row `dims` ([1, rank]), the product of the dims after it."""
    steps = o.Range(o.c(0), o.Squeeze(o.Shape(dims, start=1), o.c([0])), o.c(1))
    later = o.Less(o.Unsqueeze(steps, o.c([1])), o.Unsqueeze(steps, o.c([0])))
    return o.Reshape(o.ReduceProd(o.Where(later, dims, o.c(1)), o.c([1]), keepdims=0),
                     o.c([1, -1]))


def coordinates(o, dims: str) -> str:
    """[size, rank]: the coordinates of every position of a tensor of shape row `dims`."""
    position = o.Unsqueeze(o.Range(o.c(0), o.ReduceProd(dims, keepdims=0), o.c(1)), o.c([1]))
    return o.Mod(o.Div(position, strides_row(o, dims)), dims)


def gather_flat(ctx, o, source: str, strides: str, out_dims: str) -> None:
    """The op's output of shape row `out_dims`: x at the coordinate rows `source`, whose flat
    indices are their sums times x's `strides` (a [1, rank] row)."""
    flat = o.ReduceSum(o.Mul(source, strides), o.c([1]), keepdims=0)
    values = o.Gather(o.Reshape(ctx.input(0), o.c([-1])), flat, axis=0)
    o.Reshape(values, o.Reshape(out_dims, o.c([-1])), out=ctx.output(0))


def lower_flat_symmetric_pad(ctx):
    """SYMMETRIC with run-time paddings and rank: every output position's coordinates map to
    their mirrored source coordinates as above."""
    o = Emitter(ctx, "int64")
    pairs = o.Reshape(int64_input(ctx, 1), o.c([-1, 2]))
    before, after = (o.Reshape(o.Gather(pairs, o.c(side), axis=1), o.c([1, -1])) for side in (0, 1))
    dims = o.Reshape(o.Shape(ctx.input(0)), o.c([1, -1]))
    out_dims = o.Add(o.Add(dims, before), after)
    source = o.Sub(coordinates(o, out_dims), before)
    source = o.Where(o.Less(source, o.c(0)), o.Sub(o.c(-1), source), source)
    source = o.Where(o.GreaterOrEqual(source, dims), o.Sub(o.Sub(o.Add(dims, dims), o.c(1)), source),
                     source)
    gather_flat(ctx, o, source, strides_row(o, dims), out_dims)


def lower_runtime_transpose(ctx):
    """Transpose by a run-time permutation (ONNX's takes a constant one): output coordinate k
    is input coordinate perm[k], so the source's flat index sums coordinates times the
    input's strides taken in perm's order."""
    o = Emitter(ctx, "int64")
    perm = o.Reshape(int64_input(ctx, 1), o.c([-1]))
    dims = o.Reshape(o.Shape(ctx.input(0)), o.c([1, -1]))
    out_dims = o.Gather(dims, perm, axis=1)
    gather_flat(ctx, o, coordinates(o, out_dims), o.Gather(strides_row(o, dims), perm, axis=1),
                out_dims)
