"""Concatenation and its inverses: ConcatV2 and Pack join tensors along a dim; Unpack, Split
and SplitV take one apart."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.tensor import INDEX_TYPES
from tf2ir.opp.emitting import emit_dim, int64_input
from tf2ir.opp.shapes import const_ints, normalize_axis, onnx_axis, scalar_int

OPS = OpSet("tf2ir.opp.concat")

pack = OPS.declare("Pack", "Stacks x0..xN-1 along a new dim `axis`.") \
    .dynamic_input("x", count_attr="N").output("y").attr("N", "int").attr("axis", "int", 0)


def _known_rank(values):
    """The rank of the first of `values` whose rank is known (all have the same), or None."""
    return next((v.desc.rank for v in values if v.desc.rank is not None), None)


@pack.infer
def _infer_pack(node):
    first = node.inputs[0].desc
    if first.shape is None:
        return [TensorDesc(first.dtype, None)]
    a = normalize_axis(node.attrs["axis"], len(first.shape) + 1)
    return [TensorDesc(first.dtype, first.shape[:a] + (len(node.inputs),) + first.shape[a:])]


@pack.lower
def _lower_pack(ctx, node):
    # TF counts a negative axis from the end of the output, as Unsqueeze and Concat do.
    rank = _known_rank(node.inputs)
    a = onnx_axis(node.attrs["axis"], None if rank is None else rank + 1)
    axes = ctx.constant(np.array([a], np.int64))
    parts = [ctx.op.Unsqueeze(ctx.input(i), axes) for i in range(len(node.inputs))]
    ctx.op.Concat(*parts, out=ctx.output(0), axis=a)


@pack.fold
def _fold_pack(node, values):
    return [np.stack(values, axis=node.attrs["axis"])]

concat = OPS.declare("ConcatV2", "Joins x0..xN-1 along the dim given by input `concat_dim`.") \
    .dynamic_input("x", count_attr="N").input("concat_dim", INDEX_TYPES).output("y").attr("N", "int")


@concat.infer
def _infer_concat(node):
    parts = [v.desc for v in node.inputs[:-1]]
    axis = const_ints(node, len(node.inputs) - 1)
    if axis is None or any(p.shape is None for p in parts):
        rank = next((p.rank for p in parts if p.rank is not None), None)
        return [TensorDesc(parts[0].dtype, None if rank is None else (None,) * rank)]
    a = normalize_axis(axis[0], len(parts[0].shape))
    sizes = [p.shape[a] for p in parts]
    shape = list(parts[0].shape)
    shape[a] = None if None in sizes else sum(sizes)
    return [TensorDesc(parts[0].dtype, tuple(shape), parts[0].format, parts[0].origin_format)]


@concat.lower
def _lower_concat(ctx, node):
    axis = const_ints(node, len(node.inputs) - 1)
    if axis is None:
        raise ConversionError("the concat axis must be constant")
    a = onnx_axis(axis[0], _known_rank(node.inputs[:-1]))
    ctx.op.Concat(*[ctx.input(i) for i in range(len(node.inputs) - 1)], out=ctx.output(0), axis=a)


@concat.fold
def _fold_concat(node, values):
    return [np.concatenate(values[:-1], axis=scalar_int(values[-1]))]

unpack = OPS.declare("Unpack", "Unstacks x along `axis` into y0..yN-1 (N = num).") \
    .input("x").dynamic_output("y", count_attr="num").attr("num", "int").attr("axis", "int", 0)


@unpack.infer
def _infer_unpack(node):
    x = node.inputs[0].desc
    if x.shape is None:
        return [TensorDesc(x.dtype, None) for _ in node.outputs]
    a = normalize_axis(node.attrs["axis"], len(x.shape))
    if x.shape[a] not in (None, node.attrs["num"]):
        raise ConversionError(f"dim {a} has size {x.shape[a]}, not num={node.attrs['num']}")
    shape = x.shape[:a] + x.shape[a + 1:]
    return [TensorDesc(x.dtype, shape) for _ in node.outputs]


@unpack.lower
def _lower_unpack(ctx, node):
    a = onnx_axis(node.attrs["axis"], node.inputs[0].desc.rank)
    axes = ctx.constant(np.array([a], np.int64))
    parts = ctx.op.Split(ctx.input(0), outputs=len(node.outputs), axis=a, num_outputs=len(node.outputs))
    for i, part in enumerate(parts):
        ctx.op.Squeeze(part, axes, out=ctx.output(i))


def _split_sizes(total, sizes, count):
    """Concrete split sizes (one -1 in `sizes` takes the rest), or None when unknown."""
    if sizes is None:
        if total is None or total % count:
            return None if total is None else [-1]
        return [total // count] * count
    if -1 in sizes:
        if total is None:
            return None
        sizes = list(sizes)
        sizes[sizes.index(-1)] = total - sum(s for s in sizes if s != -1)
    return list(sizes)


def _infer_split(node, x_index, axis, sizes, runtime_sizes=False):
    x = node.inputs[x_index].desc
    count = len(node.outputs)
    if x.shape is None or axis is None:
        return [TensorDesc(x.dtype, None if x.rank is None else (None,) * x.rank) for _ in node.outputs]
    a = normalize_axis(axis, len(x.shape))
    parts = None if runtime_sizes else _split_sizes(x.shape[a], sizes, count)
    if parts == [-1]:
        raise ConversionError(f"dim {a} of size {x.shape[a]} does not split into {count} parts")
    out = []
    for i in range(count):
        shape = list(x.shape)
        shape[a] = None if parts is None else parts[i]
        out.append(TensorDesc(x.dtype, tuple(shape), x.format, x.origin_format))
    return out


def _lower_split(ctx, node, x_index, axis_index, sizes):
    axis = const_ints(node, axis_index)
    if axis is None:
        raise ConversionError("the split axis must be constant")
    a = onnx_axis(axis[0], node.inputs[x_index].desc.rank)
    outputs = [ctx.output(i) for i in range(len(node.outputs))]
    if sizes is None:
        ctx.op.Split(ctx.input(x_index), outputs=outputs, axis=a, num_outputs=len(outputs))
        return
    shape = node.inputs[x_index].desc.shape
    parts = _split_sizes(shape[a] if shape else None, sizes, len(outputs))
    if parts is None:
        raise ConversionError("split sizes with -1 need a known dim size")
    ctx.op.Split(ctx.input(x_index), ctx.constant(np.array(parts, np.int64)), outputs=outputs, axis=a)


split = OPS.declare("Split", "Splits x into num_split equal parts y0..yN-1 along split_dim.") \
    .input("split_dim", INDEX_TYPES).input("x").dynamic_output("y", count_attr="num_split") \
    .attr("num_split", "int")


@split.infer
def _infer_split_op(node):
    return _infer_split(node, 1, (const_ints(node, 0) or [None])[0], None)


@split.lower
def _lower_split_op(ctx, node):
    _lower_split(ctx, node, 1, 0, None)


split_v = OPS.declare("SplitV", "Splits x into parts of size_splits (one may be -1) along split_dim.") \
    .input("x").input("size_splits", INDEX_TYPES).input("split_dim", INDEX_TYPES) \
    .dynamic_output("y", count_attr="num_split").attr("num_split", "int")


@split_v.infer
def _infer_split_v(node):
    return _infer_split(node, 0, (const_ints(node, 2) or [None])[0], const_ints(node, 1),
                        runtime_sizes=const_ints(node, 1) is None)


@split_v.lower
def _lower_split_v(ctx, node):
    sizes, axis = const_ints(node, 1), const_ints(node, 2)
    shape = node.inputs[0].desc.shape
    if sizes is not None and (-1 not in sizes or (shape is not None and axis is not None
                                                  and shape[normalize_axis(axis[0], len(shape))]
                                                  is not None)):
        _lower_split(ctx, node, 0, 2, sizes)
        return
    # Sizes known at run time (or a -1 entry over a dim known at run time): the -1 entry
    # takes what the others leave of the dim.
    if axis is None:
        raise ConversionError("the split axis must be constant")
    a = onnx_axis(axis[0], node.inputs[0].desc.rank)    # emit_dim reads a negative one too
    parts = int64_input(ctx, 1)
    rest = ctx.op.Equal(parts, ctx.constant(np.array(-1, np.int64)))
    zero = ctx.constant(np.array(0, np.int64))
    others = ctx.op.ReduceSum(ctx.op.Where(rest, zero, parts), keepdims=0)
    remainder = ctx.op.Sub(emit_dim(ctx, ctx.input(0), a), others)
    parts = ctx.op.Where(rest, remainder, parts)
    ctx.op.Split(ctx.input(0), parts, outputs=[ctx.output(i) for i in range(len(node.outputs))], axis=a)
