"""Slicing ops: Slice (a block given by begin and size), StridedSlice (TF's strided slicing
with its five bit masks), ReverseV2 and ReverseSequence."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.tensor import INDEX_TYPES
from tf2ir.opp.emitting import emit_along, emit_dim, int64_constant, int64_input
from tf2ir.opp.shapes import (
    INT64_MAX, INT64_MIN, const_ints, onnx_axis, partial_ints, same_as_input, unknown_desc,
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
        to_end = ctx.op.Equal(sizes, ctx.constant(np.array(-1, np.int64)))
        ends = ctx.op.Where(to_end, ctx.constant(np.array(INT64_MAX, np.int64)),
                            ctx.op.Add(starts, sizes))
        # the axes: from size's or begin's length, else x's rank (a length may be unknown)
        lengths = [d.shape[0] for d in (node.inputs[2].desc, node.inputs[1].desc) if d.shape]
        n = next((v for v in lengths + [node.inputs[0].desc.rank] if v is not None), None)
    if n is None:       # dims 0..len(begin)-1, counted at run time
        axes = ctx.op.Range(int64_constant(ctx, 0), ctx.op.Size(starts), int64_constant(ctx, 1))
    else:
        axes = int64_constant(ctx, range(n))
    ctx.op.Slice(ctx.input(0), starts, ends, axes, out=ctx.output(0))


def _fold_slice(node, values):
    x, begin, size = values[0], values[1].reshape(-1), values[2].reshape(-1)
    return [x[tuple(slice(int(b), None if s == -1 else int(b + s)) for b, s in zip(begin, size))]]


slice_op.fold(_fold_slice)

# -- strided slice -------------------------------------------------------------------------
strided_slice = OPS.declare("StridedSlice", "TF strided slicing with its five bit masks.") \
    .input("x").input("begin", INDEX_TYPES).input("end", INDEX_TYPES).input("strides", INDEX_TYPES) \
    .output("y").attr("begin_mask", "int", 0).attr("end_mask", "int", 0) \
    .attr("ellipsis_mask", "int", 0).attr("new_axis_mask", "int", 0).attr("shrink_axis_mask", "int", 0)

_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def slice_layout(rank, n, attrs):
    """TF's sparse slice spec of length `n` laid over the dims of a rank-`rank` input, from the
    masks alone: ('new',) for a new axis, ('full', dim) for a dim the spec leaves whole (the
    ellipsis and the trailing dims), ('dim', dim, i, begin_masked, end_masked, shrink) for a dim
    that spec entry i slices. With `rank` None (unknown) the trailing dims are left out, and an
    ellipsis is an ('ellipsis',) entry after which dims count from the end (negative)."""
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_mask = (attrs[k] for k in _MASKS)
    consuming = sum(1 for i in range(n) if not (ellipsis_mask >> i) & 1
                    and not (new_axis_mask >> i) & 1)
    entries, dim = [], 0
    seen_ellipsis = False
    for i in range(n):
        if (ellipsis_mask >> i) & 1 and not seen_ellipsis:
            seen_ellipsis = True
            if rank is None:    # the dims the rest of the spec consumes, counted from the end
                entries.append(("ellipsis",))
                dim = -sum(1 for j in range(i + 1, n) if not (new_axis_mask >> j) & 1
                           and not ((ellipsis_mask >> j) & 1))
                continue
            for _ in range(rank - consuming):
                entries.append(("full", dim))
                dim += 1
        elif (new_axis_mask >> i) & 1:
            entries.append(("new",))
        else:
            shrink = bool((shrink_mask >> i) & 1)
            entries.append(("dim", dim, i, bool((begin_mask >> i) & 1) and not shrink,
                            bool((end_mask >> i) & 1) and not shrink, shrink))
            dim += 1
    if rank is None:
        return entries
    while dim < rank:
        entries.append(("full", dim))
        dim += 1
    if dim != rank:
        raise ConversionError(f"slice spec of length {n} does not fit rank {rank}")
    return entries


def dense_slice_spec(rank, begin, end, strides, attrs):
    """Expand TF's sparse slice spec into per-output entries.

    Each entry is ('new',) for a new axis, or ('dim', input_dim, start, stop, step, shrink)
    with start/stop None for "from the edge" (begin_mask/end_mask)."""
    entries = []
    for entry in slice_layout(rank, len(begin), attrs):
        if entry[0] == "ellipsis":
            continue
        if entry[0] == "new":
            entries.append(("new",))
        elif entry[0] == "full":
            entries.append(("dim", entry[1], None, None, 1, False))
        else:
            _, dim, i, begin_masked, end_masked, shrink = entry
            if shrink:
                start = begin[i]
                entries.append(("dim", dim, start, None if start == -1 else start + 1, 1, True))
                continue
            if strides[i] == 0:
                raise ConversionError("strides must be non-zero")
            entries.append(("dim", dim, None if begin_masked else begin[i],
                            None if end_masked else end[i], strides[i], False))
    return entries


def spec_length(node):
    """The length of the slice spec: of a constant begin/end/strides, or from the static shape
    of one of them; None when unknown."""
    for index in (1, 2, 3):
        value = const_ints(node, index)
        if value is not None:
            return len(value)
    for index in (1, 2, 3):
        shape = node.inputs[index].desc.shape
        if shape is not None and len(shape) == 1 and shape[0] is not None:
            return shape[0]
    return None


@strided_slice.infer
def _infer_strided_slice(node):
    x, n = node.inputs[0].desc, spec_length(node)
    if x.shape is None or n is None:
        return [TensorDesc(x.dtype, None)]
    begin, end, strides = (partial_ints(node.inputs[i], n) for i in (1, 2, 3))
    shape = []
    for entry in slice_layout(len(x.shape), n, node.attrs):
        if entry[0] == "new":
            shape.append(1)
            continue
        if entry[0] == "full":
            shape.append(x.shape[entry[1]])
            continue
        _, dim, i, begin_masked, end_masked, shrink = entry
        if shrink:
            continue
        start, stop, step = (None if begin_masked else begin[i], None if end_masked else end[i],
                             strides[i])
        size = x.shape[dim]
        known = step is not None and (begin_masked or start is not None) \
            and (end_masked or stop is not None)
        if step == 0:
            raise ConversionError("strides must be non-zero")
        shape.append(None if size is None or not known
                     else len(range(*slice(start, stop, step).indices(size))))
    return [TensorDesc(x.dtype, tuple(shape))]


def _squeeze_and_unsqueeze(ctx, current, layout):
    """Squeeze the shrunk dims of a sliced tensor and insert its new axes, writing output 0."""
    squeeze = [e[1] for e in layout if e[0] == "dim" and e[5]]
    # Output positions of new axes count the dims before them that survive the squeeze; after
    # an ellipsis of unknown length, from the end: minus the output dims from them on.
    unsqueeze, kept = [], 0
    survives = [e[0] == "new" or e[0] == "full" or (e[0] == "dim" and not e[5]) for e in layout]
    after_ellipsis = False
    for k, entry in enumerate(layout):
        after_ellipsis = after_ellipsis or entry[0] == "ellipsis"
        if entry[0] == "new":
            unsqueeze.append(-sum(survives[k:]) if after_ellipsis else kept)
        kept += survives[k]
    if squeeze:
        current = ctx.op.Squeeze(current, ctx.constant(np.array(squeeze, np.int64)),
                                 out=ctx.output(0) if not unsqueeze else None)
    if unsqueeze:
        current = ctx.op.Unsqueeze(current, ctx.constant(np.array(unsqueeze, np.int64)),
                                   out=ctx.output(0))
    if current != ctx.output(0):
        ctx.op.Identity(current, out=ctx.output(0))


@strided_slice.lower
def _lower_strided_slice(ctx, node):
    rank = node.inputs[0].desc.rank
    begin, end, strides = (const_ints(node, i) for i in (1, 2, 3))
    if begin is None or end is None or strides is None or rank is None:
        _lower_runtime_strided_slice(ctx, node, rank)
        return
    starts, stops, axes, steps = [], [], [], []
    entries = dense_slice_spec(rank, begin, end, strides, node.attrs)
    shape = node.inputs[0].desc.shape
    for entry in entries:
        if entry[0] == "new":
            continue
        _, dim, start, stop, step, shrink = entry
        if start is None and stop is None and step == 1:
            continue
        if step < 0 and start is not None and start < -1:
            # TF clamps a start below -dim to -1 (nothing) for a negative step, ONNX to 0.
            if shape[dim] is None:
                _lower_runtime_strided_slice(ctx, node, rank)
                return
            if start + shape[dim] < 0:
                start, stop = 0, 0              # from 0 down to 0: nothing
        starts.append(start if start is not None else (0 if step > 0 else INT64_MAX))
        stops.append(stop if stop is not None else (INT64_MAX if step > 0 else INT64_MIN))
        axes.append(dim)
        steps.append(step)
    current = ctx.input(0)
    reshaped = any(e[0] == "new" or e[5] for e in entries)
    if axes:
        current = ctx.op.Slice(current, ctx.constant(np.array(starts, np.int64)),
                               ctx.constant(np.array(stops, np.int64)),
                               ctx.constant(np.array(axes, np.int64)),
                               ctx.constant(np.array(steps, np.int64)),
                               out=None if reshaped else ctx.output(0))
    layout = slice_layout(rank, len(begin), node.attrs)
    _squeeze_and_unsqueeze(ctx, current, layout)


def _lower_unmasked_slice(ctx, node):
    """A spec of run-time length with no masks but begin and end masks: dims 0..len-1 sliced
    as given (TF's clamp of a start below -dim for a negative step, which leaves nothing, as an
    end of 0); a masked bound runs from the edge the stride's sign says."""
    begins, ends, steps = (int64_input(ctx, i) for i in (1, 2, 3))
    zero = int64_constant(ctx, 0)
    count = ctx.op.Size(begins)
    axes = ctx.op.Range(zero, count, int64_constant(ctx, 1))
    dims = ctx.op.Gather(ctx.op.Shape(ctx.input(0)), axes, axis=0)
    backward = ctx.op.Less(steps, zero)
    nothing = ctx.op.And(ctx.op.Less(ctx.op.Add(begins, dims), zero), backward)
    masks = [node.attrs["begin_mask"], node.attrs["end_mask"]]
    if any(masks):
        # the masks' bits, one per spec entry: cut (or padded with False) to the spec's length
        width = max(m.bit_length() for m in masks)
        falses = ctx.op.Expand(ctx.constant(np.array([False])),
                               ctx.op.Reshape(count, int64_constant(ctx, [1])))
        begin_masked, end_masked = (
            ctx.op.Slice(ctx.op.Concat(
                ctx.constant(np.array([bool((m >> i) & 1) for i in range(width)])), falses, axis=0),
                int64_constant(ctx, [0]), ctx.op.Reshape(count, int64_constant(ctx, [1])))
            for m in masks)
        edge = [int64_constant(ctx, INT64_MAX), int64_constant(ctx, INT64_MIN)]
        begins = ctx.op.Where(begin_masked, ctx.op.Where(backward, edge[0], zero), begins)
        ends = ctx.op.Where(end_masked, ctx.op.Where(backward, *edge[::-1]), ends)
        nothing = ctx.op.And(nothing, ctx.op.Not(begin_masked))
    ends = ctx.op.Where(nothing, zero, ends)
    ctx.op.Slice(ctx.input(0), begins, ends, axes, steps, out=ctx.output(0))


def _lower_runtime_strided_slice(ctx, node, rank):
    """begin, end or strides known only at run time (the masks are attributes): one Slice
    over every dim the spec slices, masked bounds filled by the sign of the stride (with
    Where when the strides are run-time values), a shrunk dim sliced [b, b+1)."""
    n = spec_length(node)
    if n is None and not any(node.attrs.get(f"{m}_mask") for m in
                             ("ellipsis", "new_axis", "shrink_axis")):
        _lower_unmasked_slice(ctx, node)        # tf.signal.frame on a signal of unknown rank
        return
    if n is None:
        raise ConversionError("the slice spec's length must be known (begin, end or strides "
                              "of a static shape) where it has an ellipsis, new axis or "
                              "shrink mask")
    layout = slice_layout(rank, n, node.attrs)
    ranged = [e for e in layout if e[0] == "dim"]
    current = ctx.input(0)
    if ranged:
        positions = [e[2] for e in ranged]
        shrink = np.array([e[5] for e in ranged])
        begin_masked = np.array([e[3] for e in ranged])
        end_masked = np.array([e[4] for e in ranged])

        def pick(index):
            name = int64_input(ctx, index)
            if positions == list(range(n)):
                return name
            return ctx.op.Gather(name, int64_constant(ctx, positions), axis=0)

        def choose(mask, a, b):       # mask: a constant bool vector
            if mask.all():
                return a
            return ctx.op.Where(ctx.constant(mask), a, b) if mask.any() else b

        begins, ends = pick(1), pick(2)
        strides = const_ints(node, 3)
        if strides is not None:
            steps = [1 if s else strides[p] for p, s in zip(positions, shrink)]
            if 0 in steps:
                raise ConversionError("strides must be non-zero")
            forward = np.array(steps) > 0
            step = int64_constant(ctx, steps)
            start_fill = int64_constant(ctx, np.where(forward, 0, INT64_MAX))
            end_fill = int64_constant(ctx, np.where(forward, INT64_MAX, INT64_MIN))
        else:
            step = choose(shrink, int64_constant(ctx, [1] * len(ranged)), pick(3))
            forward = ctx.op.Greater(step, int64_constant(ctx, 0))
            start_fill = ctx.op.Where(forward, int64_constant(ctx, 0),
                                      int64_constant(ctx, INT64_MAX))
            end_fill = ctx.op.Where(forward, int64_constant(ctx, INT64_MAX),
                                    int64_constant(ctx, INT64_MIN))
        starts = choose(begin_masked, start_fill, begins)
        stops = choose(end_masked, end_fill, ends)
        if strides is None or (~forward & ~begin_masked).any():
            # TF clamps a start below -dim to -1 (nothing) for a negative step, ONNX to 0:
            # such a slice ends at 0, which leaves it empty too.
            dims = ctx.op.Gather(ctx.op.Shape(current), int64_constant(ctx, [e[1] for e in ranged]),
                                 axis=0)
            below = ctx.op.Less(ctx.op.Add(begins, dims), int64_constant(ctx, 0))
            backward = ctx.op.Less(step, int64_constant(ctx, 0)) if strides is None \
                else ctx.constant(~forward)
            nothing = ctx.op.And(ctx.op.And(below, backward), ctx.constant(~begin_masked))
            stops = ctx.op.Where(nothing, int64_constant(ctx, 0), stops)
        if shrink.any():     # [b, b+1), and [-1, the end) for b = -1
            last = ctx.op.Equal(begins, int64_constant(ctx, -1))
            after = ctx.op.Where(last, int64_constant(ctx, INT64_MAX),
                                 ctx.op.Add(begins, int64_constant(ctx, 1)))
            stops = choose(shrink, after, stops)
        reshaped = any(e[0] == "new" for e in layout) or shrink.any()
        current = ctx.op.Slice(current, starts, stops, int64_constant(ctx, [e[1] for e in ranged]),
                               step, out=None if reshaped else ctx.output(0))
    _squeeze_and_unsqueeze(ctx, current, layout)


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
    # Slice counts a negative axis from the end of the run-time rank
    axes = sorted({onnx_axis(a, node.inputs[0].desc.rank) for a in axes})
    if not axes:
        ctx.op.Identity(ctx.input(0), out=ctx.output(0))
        return
    n = len(axes)
    ctx.op.Slice(ctx.input(0), int64_constant(ctx, [-1] * n), int64_constant(ctx, [INT64_MIN] * n),
                 int64_constant(ctx, axes), int64_constant(ctx, [-1] * n), out=ctx.output(0))


@reverse.fold
def _fold_reverse(node, values):
    return [np.flip(values[0], tuple(int(a) for a in values[1].reshape(-1)))]


reverse_sequence = OPS.declare(
    "ReverseSequence", "Per batch entry b, reverses the first seq_lengths[b] items along seq_dim.") \
    .input("x").input("seq_lengths", INDEX_TYPES).output("y") \
    .attr("seq_dim", "int").attr("batch_dim", "int", 0)
reverse_sequence.infer(same_as_input)


@reverse_sequence.lower
def _lower_reverse_sequence(ctx, node):
    # index[t] = len - 1 - t for t < len, else t; then GatherElements along seq_dim.
    # with the rank unknown the dims stand as given: ONNX counts a negative one from the end
    rank = node.inputs[0].desc.rank
    seq = onnx_axis(node.attrs["seq_dim"], rank)
    batch = onnx_axis(node.attrs["batch_dim"], rank)
    if seq == batch:
        raise ConversionError("seq_dim and batch_dim must differ")

    def along(axis):
        return emit_along(ctx, ctx.input(0), axis, rank)

    one = ctx.constant(np.array(1, np.int64))
    steps = ctx.op.Range(ctx.constant(np.array(0, np.int64)), emit_dim(ctx, ctx.input(0), seq), one)
    t = ctx.op.Reshape(steps, along(seq))
    lengths = ctx.op.Reshape(int64_input(ctx, 1), along(batch))
    inside = ctx.op.Less(t, lengths)
    mirrored = ctx.op.Sub(ctx.op.Sub(lengths, one), t)
    index = ctx.op.Where(inside, mirrored, t)
    index = ctx.op.Expand(index, ctx.op.Shape(ctx.input(0)))
    ctx.op.GatherElements(ctx.input(0), index, out=ctx.output(0), axis=seq)
