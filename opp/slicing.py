"""Slicing ops: Slice (a block given by begin and size), StridedSlice (TF's strided slicing
with its five bit masks), ReverseV2 and ReverseSequence."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.tensor import INDEX_TYPES
from tf2ir.opp.common import (
    INT64_MAX, INT64_MIN, const_ints, emit_dim, int64_constant, int64_input, normalize_axis,
    same_as_input, unknown_desc,
)

OPS = OpSet("tf2ir.opp.slicing")

slice_op = OPS.declare("Slice", "The block of x starting at `begin` with `size` (-1: to the end).") \
    .input("x").input("begin", INDEX_TYPES).input("size", INDEX_TYPES).output("y")


@slice_op.infer
def _infer_slice(node):
    x, begin, size = node.inputs[0].desc, const_ints(node, 1), const_ints(node, 2)
    if size is None:
        size_shape = node.inputs[2].desc.shape
        return [unknown_desc(size_shape[0] if size_shape else x.rank, x.dtype)]
    shape = []
    for i, s in enumerate(size):
        if s != -1:
            shape.append(s)
        elif begin is None or x.shape is None or x.shape[i] is None:
            shape.append(None)
        else:
            shape.append(x.shape[i] - begin[i])
    return [TensorDesc(x.dtype, tuple(shape))]


@slice_op.lower
def _lower_slice(ctx, node):
    begin, size = const_ints(node, 1), const_ints(node, 2)
    starts = int64_input(ctx, 1)
    if begin is not None and size is not None:
        ends = int64_constant(ctx, [INT64_MAX if s == -1 else b + s for b, s in zip(begin, size)])
        n = len(size)
    else:
        sizes = int64_input(ctx, 2)
        to_end = ctx.emit("Equal", [sizes, ctx.constant(np.array(-1, np.int64))])[0]
        ends = ctx.emit("Where", [to_end, ctx.constant(np.array(INT64_MAX, np.int64)),
                                  ctx.emit("Add", [starts, sizes])[0]])[0]
        n = node.inputs[2].desc.shape[0] if node.inputs[2].desc.shape else node.inputs[0].desc.rank
        if n is None:
            raise ConversionError("the slice rank must be known")
    ctx.emit("Slice", [ctx.input(0), starts, ends, int64_constant(ctx, range(n))], [ctx.output(0)])


def _fold_slice(node, values):
    x, begin, size = values[0], values[1].reshape(-1), values[2].reshape(-1)
    return [x[tuple(slice(int(b), None if s == -1 else int(b + s)) for b, s in zip(begin, size))]]


slice_op.fold(_fold_slice)

# -- strided slice -------------------------------------------------------------------------
strided_slice = OPS.declare("StridedSlice", "TF strided slicing with its five bit masks.") \
    .input("x").input("begin", INDEX_TYPES).input("end", INDEX_TYPES).input("strides", INDEX_TYPES) \
    .output("y").attr("begin_mask", "int", 0).attr("end_mask", "int", 0) \
    .attr("ellipsis_mask", "int", 0).attr("new_axis_mask", "int", 0).attr("shrink_axis_mask", "int", 0)


def dense_slice_spec(rank, begin, end, strides, attrs):
    """Expand TF's sparse slice spec into per-output entries.

    Each entry is ('new',) for a new axis, or ('dim', input_dim, start, stop, step, shrink)
    with start/stop None for "from the edge" (begin_mask/end_mask)."""
    masks = {k: attrs[k] for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                   "new_axis_mask", "shrink_axis_mask")}
    n = len(begin)
    consuming = sum(1 for i in range(n) if not (masks["ellipsis_mask"] >> i) & 1
                    and not (masks["new_axis_mask"] >> i) & 1)
    entries, dim = [], 0
    seen_ellipsis = False
    for i in range(n):
        if (masks["ellipsis_mask"] >> i) & 1 and not seen_ellipsis:
            seen_ellipsis = True
            for _ in range(rank - consuming):
                entries.append(("dim", dim, None, None, 1, False))
                dim += 1
        elif (masks["new_axis_mask"] >> i) & 1:
            entries.append(("new",))
        else:
            shrink = bool((masks["shrink_axis_mask"] >> i) & 1)
            start = None if (masks["begin_mask"] >> i) & 1 and not shrink else begin[i]
            stop = None if (masks["end_mask"] >> i) & 1 and not shrink else end[i]
            if shrink:
                stop = None if start == -1 else start + 1
                entries.append(("dim", dim, start, stop, 1, True))
            else:
                if strides[i] == 0:
                    raise ConversionError("strides must be non-zero")
                entries.append(("dim", dim, start, stop, strides[i], False))
            dim += 1
    while dim < rank:
        entries.append(("dim", dim, None, None, 1, False))
        dim += 1
    if dim != rank:
        raise ConversionError(f"slice spec of length {n} does not fit rank {rank}")
    return entries


@strided_slice.infer
def _infer_strided_slice(node):
    x = node.inputs[0].desc
    begin, end, strides = (const_ints(node, i) for i in (1, 2, 3))
    if x.shape is None or strides is None:
        return [TensorDesc(x.dtype, None)]
    bounds_known = begin is not None and end is not None
    if not bounds_known:  # the rank still follows from the strides and the masks
        begin = end = [0] * len(strides)
    shape = []
    for entry in dense_slice_spec(len(x.shape), begin, end, strides, node.attrs):
        if entry[0] == "new":
            shape.append(1)
            continue
        _, dim, start, stop, step, shrink = entry
        if shrink:
            continue
        size = x.shape[dim]
        if not bounds_known and (start, stop, step) != (None, None, 1):
            size = None
        shape.append(None if size is None else len(range(*slice(start, stop, step).indices(size))))
    return [TensorDesc(x.dtype, tuple(shape))]


@strided_slice.lower
def _lower_strided_slice(ctx, node):
    rank = node.inputs[0].desc.rank
    begin, end, strides = (const_ints(node, i) for i in (1, 2, 3))
    masks = [node.attrs[k] for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                     "new_axis_mask", "shrink_axis_mask")]
    if begin is None or end is None or strides is None:
        if any(masks) or strides is None:
            raise ConversionError("non-constant begin/end needs constant strides and no masks")
        n = len(strides)
        ctx.emit("Slice", [ctx.input(0), int64_input(ctx, 1), int64_input(ctx, 2),
                           ctx.constant(np.arange(n, dtype=np.int64)),
                           ctx.constant(np.array(strides, np.int64))], [ctx.output(0)])
        return
    if rank is None:
        raise ConversionError("the input rank must be known")
    starts, stops, axes, steps, squeeze, unsqueeze = [], [], [], [], [], []
    for out_pos, entry in enumerate(dense_slice_spec(rank, begin, end, strides, node.attrs)):
        if entry[0] == "new":
            unsqueeze.append(out_pos)
            continue
        _, dim, start, stop, step, shrink = entry
        if shrink:
            squeeze.append(dim)
        if start is None and stop is None and step == 1:
            continue
        starts.append(start if start is not None else (0 if step > 0 else INT64_MAX))
        stops.append(stop if stop is not None else (INT64_MAX if step > 0 else INT64_MIN))
        axes.append(dim)
        steps.append(step)
    # Output positions of new axes count the shrunk dims that vanish before them.
    unsqueeze = [p - sum(1 for e in dense_slice_spec(rank, begin, end, strides, node.attrs)[:p]
                         if e[0] == "dim" and e[5]) for p in unsqueeze]
    current = ctx.input(0)
    steps_after = [bool(squeeze), bool(unsqueeze)]
    if axes:
        final = not any(steps_after)
        current = ctx.emit("Slice", [current, ctx.constant(np.array(starts, np.int64)),
                                     ctx.constant(np.array(stops, np.int64)),
                                     ctx.constant(np.array(axes, np.int64)),
                                     ctx.constant(np.array(steps, np.int64))],
                           [ctx.output(0)] if final else 1)[0]
    if squeeze:
        final = not unsqueeze
        current = ctx.emit("Squeeze", [current, ctx.constant(np.array(squeeze, np.int64))],
                           [ctx.output(0)] if final else 1)[0]
    if unsqueeze:
        current = ctx.emit("Unsqueeze", [current, ctx.constant(np.array(unsqueeze, np.int64))],
                           [ctx.output(0)])[0]
    if current != ctx.output(0):
        ctx.emit("Identity", [current], [ctx.output(0)])


@strided_slice.fold
def _fold_strided_slice(node, values):
    x = values[0]
    begin, end, strides = ([int(v) for v in np.asarray(a).reshape(-1)] for a in values[1:4])
    index = []
    for entry in dense_slice_spec(x.ndim, begin, end, strides, node.attrs):
        if entry[0] == "new":
            index.append(np.newaxis)
        else:
            _, _, start, stop, step, shrink = entry
            index.append(start if shrink else slice(start, stop, step))
    return [np.asarray(x[tuple(index)])]


# -- reversing -----------------------------------------------------------------------------
reverse = OPS.declare("ReverseV2", "Reverses x along each dim in `axis`.") \
    .input("x").input("axis", INDEX_TYPES).output("y")
reverse.infer(same_as_input)


@reverse.lower
def _lower_reverse(ctx, node):
    axes = const_ints(node, 1)
    if axes is None:
        raise ConversionError("the reversed axes must be constant")
    rank = node.inputs[0].desc.rank
    if rank is None:
        raise ConversionError("the input rank must be known")
    axes = sorted({normalize_axis(a, rank) for a in axes})
    if not axes:
        ctx.emit("Identity", [ctx.input(0)], [ctx.output(0)])
        return
    n = len(axes)
    ctx.emit("Slice", [ctx.input(0), int64_constant(ctx, [-1] * n), int64_constant(ctx, [INT64_MIN] * n),
                       int64_constant(ctx, axes), int64_constant(ctx, [-1] * n)], [ctx.output(0)])


reverse.fold(lambda node, values: [np.flip(values[0], tuple(int(a) for a in values[1].reshape(-1)))])

reverse_sequence = OPS.declare(
    "ReverseSequence", "Per batch entry b, reverses the first seq_lengths[b] items along seq_dim.") \
    .input("x").input("seq_lengths", INDEX_TYPES).output("y") \
    .attr("seq_dim", "int").attr("batch_dim", "int", 0)
reverse_sequence.infer(same_as_input)


@reverse_sequence.lower
def _lower_reverse_sequence(ctx, node):
    # index[t] = len - 1 - t for t < len, else t; then GatherElements along seq_dim.
    rank = node.inputs[0].desc.rank
    if rank is None:
        raise ConversionError("the input rank must be known")
    seq = normalize_axis(node.attrs["seq_dim"], rank)
    batch = normalize_axis(node.attrs["batch_dim"], rank)
    if seq == batch:
        raise ConversionError("seq_dim and batch_dim must differ")

    def along(axis):
        return int64_constant(ctx, [-1 if i == axis else 1 for i in range(rank)])

    one = ctx.constant(np.array(1, np.int64))
    steps = ctx.emit("Range", [ctx.constant(np.array(0, np.int64)), emit_dim(ctx, ctx.input(0), seq), one])[0]
    t = ctx.emit("Reshape", [steps, along(seq)])[0]
    lengths = ctx.emit("Reshape", [int64_input(ctx, 1), along(batch)])[0]
    inside = ctx.emit("Less", [t, lengths])[0]
    mirrored = ctx.emit("Sub", [ctx.emit("Sub", [lengths, one])[0], t])[0]
    index = ctx.emit("Where", [inside, mirrored, t])[0]
    index = ctx.emit("Expand", [index, ctx.emit("Shape", [ctx.input(0)])[0]])[0]
    ctx.emit("GatherElements", [ctx.input(0), index], [ctx.output(0)], axis=seq)
