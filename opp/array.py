"""Array ops: constants, reshaping, slicing, padding, packing, concatenation, casts."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import DTYPES, INDEX_TYPES, dtype_of_numpy
from tf2ir.opp.common import (
    INT64_MAX, INT64_MIN, cast_from_int64, const_ints, int64_input, normalize_axis, same_as_input,
)

OPS = OpSet("tf2ir.opp.array")

const = OPS.declare("Const", "A constant tensor (its data lives in the weights file).") \
    .output("y").attr("value", "tensor")


@const.infer
def _infer_const(node):
    value = node.attrs["value"]
    desc = node.outputs[0].desc
    return [TensorDesc(dtype_of_numpy(value.dtype), tuple(value.shape), desc.format, desc.origin_format)]


const.lower(lambda ctx, node: ctx.initializer(ctx.output(0), node.attrs["value"]))

identity = OPS.declare("Identity", "Returns its input.").input("x").output("y")
identity.infer(same_as_input)
identity.lower(lambda ctx, node: ctx.emit("Identity", [ctx.input(0)], [ctx.output(0)]))

cast = OPS.declare("Cast", "Converts to `dst_type`.").input("x").output("y").attr("dst_type", "dtype")
cast.infer(lambda node: [TensorDesc(node.attrs["dst_type"], node.inputs[0].desc.shape)])
cast.lower(lambda ctx, node: ctx.emit("Cast", [ctx.input(0)], [ctx.output(0)],
                                      to=ONNX_DTYPES[node.attrs["dst_type"]]))

# -- shapes ---------------------------------------------------------------------------------
reshape = OPS.declare("Reshape", "Gives x the shape `shape` (one -1 dim is inferred).") \
    .input("x").input("shape", INDEX_TYPES).output("y")


@reshape.infer
def _infer_reshape(node):
    x, dims = node.inputs[0].desc, const_ints(node, 1)
    if dims is None:
        shape_len = node.inputs[1].desc.shape
        rank = shape_len[0] if shape_len and len(shape_len) == 1 else None
        return [TensorDesc(x.dtype, None if rank is None else (None,) * rank)]
    out = [None if d == -1 else d for d in dims]
    if -1 in dims and x.is_fully_known():
        known = int(np.prod([d for d in dims if d != -1]))
        total = int(np.prod(x.shape))
        if known == 0 or total % known:
            raise ConversionError(f"cannot reshape {list(x.shape)} to {dims}")
        out[dims.index(-1)] = total // known
    elif x.is_fully_known() and int(np.prod(x.shape)) != int(np.prod(dims)):
        raise ConversionError(f"cannot reshape {list(x.shape)} ({int(np.prod(x.shape))} values) to {dims}")
    return [TensorDesc(x.dtype, tuple(out))]


@reshape.lower
def _lower_reshape(ctx, node):
    dims = const_ints(node, 1)
    allow_zero = 1 if dims is not None and 0 in dims else None
    ctx.emit("Reshape", [ctx.input(0), int64_input(ctx, 1)], [ctx.output(0)], allowzero=allow_zero)


squeeze = OPS.declare("Squeeze", "Removes size-1 dims (all of them when `axis` is empty).") \
    .input("x").output("y").attr("axis", "ints", [])


@squeeze.infer
def _infer_squeeze(node):
    x, axes = node.inputs[0].desc, node.attrs["axis"]
    if x.shape is None:
        return [TensorDesc(x.dtype, None)]
    if not axes:
        if any(d is None for d in x.shape):
            raise ConversionError("squeezing all size-1 dims needs a known shape")
        return [TensorDesc(x.dtype, tuple(d for d in x.shape if d != 1))]
    axes = {normalize_axis(a, len(x.shape)) for a in axes}
    for a in axes:
        if x.shape[a] not in (None, 1):
            raise ConversionError(f"cannot squeeze dim {a} of size {x.shape[a]}")
    return [TensorDesc(x.dtype, tuple(d for i, d in enumerate(x.shape) if i not in axes))]


@squeeze.lower
def _lower_squeeze(ctx, node):
    axes = node.attrs["axis"]
    if not axes:
        shape = node.inputs[0].desc.shape
        axes = [i for i, d in enumerate(shape) if d == 1]
    ctx.emit("Squeeze", [ctx.input(0), ctx.constant(np.array(axes, np.int64))], [ctx.output(0)])


expand_dims = OPS.declare("ExpandDims", "Inserts a size-1 dim at `axis`.") \
    .input("x").input("axis", INDEX_TYPES).output("y")


@expand_dims.infer
def _infer_expand_dims(node):
    x, axis = node.inputs[0].desc, const_ints(node, 1)
    if x.shape is None or axis is None:
        return [TensorDesc(x.dtype, None if x.rank is None else (None,) * (x.rank + 1))]
    a = normalize_axis(axis[0], len(x.shape) + 1)
    return [TensorDesc(x.dtype, x.shape[:a] + (1,) + x.shape[a:])]


@expand_dims.lower
def _lower_expand_dims(ctx, node):
    axis = const_ints(node, 1)
    if axis is None:
        raise ConversionError("the axis must be constant")
    a = normalize_axis(axis[0], node.inputs[0].desc.rank + 1)
    ctx.emit("Unsqueeze", [ctx.input(0), ctx.constant(np.array([a], np.int64))], [ctx.output(0)])


shape_op = OPS.declare("Shape", "The shape of x as a 1-D tensor of `dtype`.") \
    .input("x").output("y", INDEX_TYPES).attr("dtype", "dtype", "int32")
shape_op.infer(lambda node: [TensorDesc(node.attrs["dtype"], (node.inputs[0].desc.rank,))])


@shape_op.lower
def _lower_shape(ctx, node):
    shape = ctx.emit("Shape", [ctx.input(0)])[0]
    cast_from_int64(ctx, shape, node.attrs["dtype"], ctx.output(0))


transpose = OPS.declare("Transpose", "Permutes dims by `perm`.") \
    .input("x").input("perm", INDEX_TYPES).output("y")


@transpose.infer
def _infer_transpose(node):
    x, perm = node.inputs[0].desc, const_ints(node, 1)
    if perm is None:
        return [TensorDesc(x.dtype, None if x.rank is None else (None,) * x.rank)]
    shape = None if x.shape is None else tuple(x.shape[p] for p in perm)
    return [TensorDesc(x.dtype, shape)]


@transpose.lower
def _lower_transpose(ctx, node):
    perm = const_ints(node, 1)
    if perm is None:
        raise ConversionError("the permutation must be constant")
    ctx.emit("Transpose", [ctx.input(0)], [ctx.output(0)], perm=perm)


# -- padding --------------------------------------------------------------------------------
pad = OPS.declare("Pad", "Pads with a constant (0 unless `constant_values` is given).") \
    .input("x").input("paddings", INDEX_TYPES).optional_input("constant_values").output("y") \
    .attr("mode", "str", "CONSTANT")


@pad.infer
def _infer_pad(node):
    x, pads = node.inputs[0].desc, const_ints(node, 1)
    if x.shape is None or pads is None:
        return [TensorDesc(x.dtype, None if x.rank is None else (None,) * x.rank, x.format, x.origin_format)]
    shape = tuple(None if d is None else d + pads[2 * i] + pads[2 * i + 1] for i, d in enumerate(x.shape))
    return [TensorDesc(x.dtype, shape, x.format, x.origin_format)]


@pad.lower
def _lower_pad(ctx, node):
    mode = node.attrs["mode"].upper()
    if mode not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ConversionError(f"pad mode {mode} is not CONSTANT, REFLECT or SYMMETRIC")
    pads = ctx.const_input(1)
    if mode == "SYMMETRIC":
        if pads is None:
            raise ConversionError("MirrorPad SYMMETRIC needs constant paddings")
        _lower_symmetric_pad(ctx, np.asarray(pads, np.int64).reshape(-1, 2))
        return
    if pads is not None:
        pads_name = ctx.constant(np.asarray(pads, np.int64).T.reshape(-1), "pads")
    else:
        pairs = int64_input(ctx, 1)
        flipped = ctx.emit("Transpose", [pairs], perm=[1, 0])[0]
        pads_name = ctx.emit("Reshape", [flipped, ctx.constant(np.array([-1], np.int64))])[0]
    inputs = [ctx.input(0), pads_name] + ([ctx.input(2)] if ctx.input(2) else [])
    ctx.emit("Pad", inputs, [ctx.output(0)], mode={"CONSTANT": "constant", "REFLECT": "reflect"}[mode])


def _lower_symmetric_pad(ctx, pads):
    """SYMMETRIC mirrors the edge values too (ONNX Pad's reflect does not): per padded axis,
    concatenate the reversed leading slice, x and the reversed trailing slice."""
    current = ctx.input(0)
    padded = [axis for axis, (before, after) in enumerate(pads) if before or after]

    def reversed_slice(source, axis, start, stop):
        return ctx.emit("Slice", [source, ctx.constant(np.array([start], np.int64)),
                                  ctx.constant(np.array([stop], np.int64)),
                                  ctx.constant(np.array([axis], np.int64)),
                                  ctx.constant(np.array([-1], np.int64))])[0]

    for axis in padded:
        before, after = (int(p) for p in pads[axis])
        parts = []
        if before:
            parts.append(reversed_slice(current, axis, before - 1, INT64_MIN))
        parts.append(current)
        if after:
            parts.append(reversed_slice(current, axis, -1, -after - 1))
        final = axis == padded[-1]
        current = ctx.emit("Concat", parts, [ctx.output(0)] if final else 1, axis=axis)[0]
    if not padded:
        ctx.emit("Identity", [current], [ctx.output(0)])


# -- packing --------------------------------------------------------------------------------
pack = OPS.declare("Pack", "Stacks x0..xN-1 along a new dim `axis`.") \
    .dynamic_input("x", count_attr="N").output("y").attr("N", "int").attr("axis", "int", 0)


@pack.infer
def _infer_pack(node):
    first = node.inputs[0].desc
    if first.shape is None:
        return [TensorDesc(first.dtype, None)]
    a = normalize_axis(node.attrs["axis"], len(first.shape) + 1)
    return [TensorDesc(first.dtype, first.shape[:a] + (len(node.inputs),) + first.shape[a:])]


@pack.lower
def _lower_pack(ctx, node):
    a = normalize_axis(node.attrs["axis"], node.inputs[0].desc.rank + 1)
    axes = ctx.constant(np.array([a], np.int64))
    parts = [ctx.emit("Unsqueeze", [ctx.input(i), axes])[0] for i in range(len(node.inputs))]
    ctx.emit("Concat", parts, [ctx.output(0)], axis=a)


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
    a = normalize_axis(axis[0], node.inputs[0].desc.rank)
    ctx.emit("Concat", [ctx.input(i) for i in range(len(node.inputs) - 1)], [ctx.output(0)], axis=a)


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
    a = normalize_axis(node.attrs["axis"], node.inputs[0].desc.rank)
    axes = ctx.constant(np.array([a], np.int64))
    parts = ctx.emit("Split", [ctx.input(0)], len(node.outputs), axis=a, num_outputs=len(node.outputs))
    for i, part in enumerate(parts):
        ctx.emit("Squeeze", [part, axes], [ctx.output(i)])


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


def _infer_split(node, x_index, axis, sizes):
    x = node.inputs[x_index].desc
    count = len(node.outputs)
    if x.shape is None or axis is None:
        return [TensorDesc(x.dtype, None if x.rank is None else (None,) * x.rank) for _ in node.outputs]
    a = normalize_axis(axis, len(x.shape))
    parts = _split_sizes(x.shape[a], sizes, count)
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
    a = normalize_axis(axis[0], node.inputs[x_index].desc.rank)
    outputs = [ctx.output(i) for i in range(len(node.outputs))]
    if sizes is None:
        ctx.emit("Split", [ctx.input(x_index)], outputs, axis=a, num_outputs=len(outputs))
        return
    shape = node.inputs[x_index].desc.shape
    parts = _split_sizes(shape[a] if shape else None, sizes, len(outputs))
    if parts is None:
        raise ConversionError("split sizes with -1 need a known dim size")
    ctx.emit("Split", [ctx.input(x_index), ctx.constant(np.array(parts, np.int64))], outputs, axis=a)


split = OPS.declare("Split", "Splits x into num_split equal parts y0..yN-1 along split_dim.") \
    .input("split_dim", INDEX_TYPES).input("x").dynamic_output("y", count_attr="num_split") \
    .attr("num_split", "int")
split.infer(lambda node: _infer_split(node, 1, (const_ints(node, 0) or [None])[0], None))
split.lower(lambda ctx, node: _lower_split(ctx, node, 1, 0, None))

split_v = OPS.declare("SplitV", "Splits x into parts of size_splits (one may be -1) along split_dim.") \
    .input("x").input("size_splits", INDEX_TYPES).input("split_dim", INDEX_TYPES) \
    .dynamic_output("y", count_attr="num_split").attr("num_split", "int")
split_v.infer(lambda node: _infer_split(node, 0, (const_ints(node, 2) or [None])[0], const_ints(node, 1)))


@split_v.lower
def _lower_split_v(ctx, node):
    sizes = const_ints(node, 1)
    if sizes is None:
        raise ConversionError("size_splits must be constant")
    _lower_split(ctx, node, 0, 2, sizes)


identity_n = OPS.declare("IdentityN", "Returns x0..xN-1 as y0..yN-1.") \
    .dynamic_input("x", count_attr="N").dynamic_output("y", count_attr="N").attr("N", "int")
identity_n.infer(lambda node: [TensorDesc(v.desc.dtype, v.desc.shape, v.desc.format, v.desc.origin_format)
                               for v in node.inputs])


@identity_n.lower
def _lower_identity_n(ctx, node):
    for i in range(len(node.inputs)):
        ctx.emit("Identity", [ctx.input(i)], [ctx.output(i)])


# -- strided slice --------------------------------------------------------------------------
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


shape_op.fold(lambda node, values: [np.array(values[0].shape, DTYPES[node.attrs["dtype"]])])


# -- gather ---------------------------------------------------------------------------------
gather_v2 = OPS.declare("GatherV2", "Slices of x at `indices` along the dim given by input `axis`.") \
    .input("x").input("indices", INDEX_TYPES).input("axis", INDEX_TYPES).output("y") \
    .attr("batch_dims", "int", 0)


def _batch_dims(node, indices_rank):
    batch = node.attrs["batch_dims"]
    if batch < 0:
        if indices_rank is None:
            raise ConversionError("a negative batch_dims needs the indices rank")
        batch += indices_rank
    return batch


@gather_v2.infer
def _infer_gather_v2(node):
    x, indices, axis = node.inputs[0].desc, node.inputs[1].desc, const_ints(node, 2)
    batch = _batch_dims(node, indices.rank)
    if x.shape is None or indices.shape is None or axis is None:
        rank = None if x.rank is None or indices.rank is None else x.rank + indices.rank - 1 - batch
        return [TensorDesc(x.dtype, None if rank is None else (None,) * rank)]
    a = normalize_axis(axis[0], len(x.shape))
    if batch and not batch <= a:
        raise ConversionError(f"batch_dims {batch} must not exceed the axis {a}")
    return [TensorDesc(x.dtype, x.shape[:a] + indices.shape[batch:] + x.shape[a + 1:])]


@gather_v2.lower
def _lower_gather_v2(ctx, node):
    axis = const_ints(node, 2)
    if axis is None:
        raise ConversionError("the gather axis must be constant")
    a = normalize_axis(axis[0], node.inputs[0].desc.rank)
    batch = _batch_dims(node, node.inputs[1].desc.rank)
    if batch == 0:
        ctx.emit("Gather", [ctx.input(0), ctx.input(1)], [ctx.output(0)], axis=a)
        return
    _lower_batched_gather(ctx, node, a, batch)


def _lower_batched_gather(ctx, node, axis, batch):
    """batch_dims > 0: GatherND with batch_dims over indices[..., None], after moving the
    gathered axis right behind the batch dims (and the gathered dims back after)."""
    rank, index_rank = node.inputs[0].desc.rank, node.inputs[1].desc.rank
    if index_rank is None:
        raise ConversionError("batch_dims needs the indices rank")
    x = ctx.input(0)
    middle = axis - batch                      # x dims between the batch dims and the axis
    if middle:
        perm = list(range(batch)) + [axis] + list(range(batch, axis)) + list(range(axis + 1, rank))
        x = ctx.emit("Transpose", [x], perm=perm)[0]
    indices = ctx.emit("Unsqueeze", [int64_input(ctx, 1), ctx.constant(np.array([-1], np.int64))])[0]
    if not middle:
        ctx.emit("GatherND", [x, indices], [ctx.output(0)], batch_dims=batch)
        return
    gathered = ctx.emit("GatherND", [x, indices], batch_dims=batch)[0]
    k = index_rank - batch                     # the gathered dims, now right after the batch
    out_rank = rank - 1 + k
    perm = (list(range(batch)) + list(range(batch + k, batch + k + middle))
            + list(range(batch, batch + k)) + list(range(batch + k + middle, out_rank)))
    ctx.emit("Transpose", [gathered], [ctx.output(0)], perm=perm)
