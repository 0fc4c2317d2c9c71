"""Detection-model ops (NHWC, TF's CPU kernels' arithmetic) composed from ONNX primitives.

- CropAndResize: boxes sampled on TF's grid, y1 * (H - 1) + i * (y2 - y1) * (H - 1) / (crop_h - 1)
  (the box centre when crop_h is 1), gathered with GatherND; bilinear or nearest (rounded half
  away from zero), extrapolation_value outside the image. ONNX RoiAlign averages instead.
- ResizeArea: TF's area averaging as two constant weight matrices (rows then columns, each
  source cell weighted by its overlap), so the image's height and width and the size must be
  known.
- MaxPoolWithArgmax: ONNX MaxPool with its NCHW-flattened Indices turned into TF's
  ((y * W + x) * C + c), plus the batch offset with include_batch_in_index.
- CTCGreedyDecoder: the best class per step, blanks and (with merge_repeated) repeats dropped,
  as a sparse [batch, longest] tensor; log_probability is minus the sum of the steps' maxima.
"""

from __future__ import annotations

import math

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.kernels import kernel_types, via
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import FLOAT_TYPES, INDEX_TYPES
from tf2ir.opp.emitting import Emitter, emit_cast, int64_constant
from tf2ir.opp.shapes import partial_ints, window_output

OPS = OpSet("tf2ir.opp.detection")
# the image dtypes TF's CropAndResize and ResizeArea kernels take
CROP_TYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16")
F32 = ONNX_DTYPES["float32"]
I64 = ONNX_DTYPES["int64"]
FLOAT_NUMPY = {name: np.dtype(name) for name in FLOAT_TYPES if name != "bfloat16"}


def _image_desc(node, what: str = "image") -> TensorDesc:
    x = node.inputs[0].desc
    if x.rank not in (None, 4):
        raise ConversionError(f"{what} must be 4-D [batch, height, width, channels], "
                              f"not rank {x.rank}")
    return x


def _float32_input(ctx, index: int) -> str:
    dtype = ctx.input_desc(index).dtype
    return ctx.input(index) if dtype == "float32" else emit_cast(ctx, ctx.input(index), "float32")


def _dim(o: Emitter, x: str, axis: int) -> str:
    """Dim `axis` of x as an int64 scalar."""
    return o.Gather(o.Shape(x), o.c(axis, "int64"), axis=0)


def _round_half_away(o: Emitter, v: str) -> str:
    """std::round of non-negative float32 v, exactly (floor(v + 0.5) can round up 0.49999997)."""
    low = o.Floor(v)
    return o.Add(low, o.Cast(o.GreaterOrEqual(o.Sub(v, low), o.c(0.5)), to=F32))


# -- crop and resize -----------------------------------------------------------------------------
crop = OPS.declare("CropAndResize", "Crops of NHWC images (boxes [y1, x1, y2, x2] normalised, "
                                    "box_ind picking the image) resized to crop_size by "
                                    "bilinear or nearest sampling.") \
    .input("image", CROP_TYPES).input("boxes", ("float32",)).input("box_ind", ("int32",)) \
    .input("crop_size", ("int32",)).output("crops", ("float32",)) \
    .attr("method", "str", "bilinear").attr("extrapolation_value", "float", 0.0)


@crop.infer
def _infer_crop(node):
    x = _image_desc(node)
    if node.attrs["method"] not in ("bilinear", "nearest"):
        raise ConversionError(f"method {node.attrs['method']!r} is not bilinear or nearest")
    boxes = node.inputs[1].desc
    if boxes.rank not in (None, 2):
        raise ConversionError(f"boxes must be [num_boxes, 4], not rank {boxes.rank}")
    count = boxes.shape[0] if boxes.shape is not None else None
    height, width = partial_ints(node.inputs[3], 2)
    channels = x.shape[3] if x.shape is not None else None
    return [TensorDesc("float32", (count, height, width, channels))]


def _crop_coords(o: Emitter, boxes: str, lo: int, hi: int, extent: str, count: str) -> str:
    """TF's source coordinates [num_boxes, count] along one axis (extent = size - 1, float)."""
    ctx = o.ctx
    first = o.Gather(boxes, int64_constant(ctx, [lo]), axis=1)     # [N, 1]
    last = o.Gather(boxes, int64_constant(ctx, [hi]), axis=1)
    steps = o.Unsqueeze(o.Cast(o.Range(o.c(0, "int64"), count, o.c(1, "int64")), to=F32),
                        int64_constant(ctx, [0]))                    # [1, count]
    scale = o.Div(o.Mul(o.Sub(last, first), extent), o.Sub(o.Cast(count, to=F32), o.c(1.0)))
    spread = o.Add(o.Mul(first, extent), o.Mul(steps, scale))
    centre = o.Mul(o.Mul(o.c(0.5), o.Add(first, last)), extent)
    return o.Where(o.Greater(count, o.c(1, "int64")), spread, centre)


@crop.lower
def _lower_crop(ctx, node):
    o = Emitter(ctx, "float32")
    image, boxes = _float32_input(ctx, 0), ctx.input(1)
    size = o.Cast(ctx.input(3), to=I64)
    counts = [o.Gather(size, o.c(i, "int64"), axis=0) for i in range(2)]
    extents = [o.Sub(o.Cast(_dim(o, image, axis), to=F32), o.c(1.0)) for axis in (1, 2)]
    ys = _crop_coords(o, boxes, 0, 2, extents[0], counts[0])
    xs = _crop_coords(o, boxes, 1, 3, extents[1], counts[1])
    # ys as [N, h, 1, 1], xs as [N, 1, w, 1], the box's image as [N, 1, 1, 1]
    ys, xs = o.Unsqueeze(ys, int64_constant(ctx, [2, 3])), o.Unsqueeze(xs, int64_constant(ctx, [1, 3]))
    batch = o.Reshape(o.Cast(ctx.input(2), to=I64), int64_constant(ctx, [-1, 1, 1, 1]))
    grid = o.Concat(o.Shape(batch, end=1), o.Reshape(counts[0], int64_constant(ctx, [1])),
                    o.Reshape(counts[1], int64_constant(ctx, [1])), int64_constant(ctx, [1]), axis=0)
    batch = o.Expand(batch, grid)

    def index(v: str, extent: str) -> str:
        return o.Expand(o.Cast(o.Clip(v, o.c(0.0), extent), to=I64), grid)

    def sample(y: str, x: str) -> str:
        return o.GatherND(image, o.Concat(batch, index(y, extents[0]), index(x, extents[1]), axis=3))

    if node.attrs["method"] == "nearest":
        value = sample(_round_half_away(o, ys), _round_half_away(o, xs))
    else:
        top, left = o.Floor(ys), o.Floor(xs)
        bottom, right = o.Ceil(ys), o.Ceil(xs)
        y_lerp, x_lerp = o.Sub(ys, top), o.Sub(xs, left)
        upper_left, upper_right = sample(top, left), sample(top, right)
        lower_left, lower_right = sample(bottom, left), sample(bottom, right)
        upper = o.Add(upper_left, o.Mul(o.Sub(upper_right, upper_left), x_lerp))
        lower = o.Add(lower_left, o.Mul(o.Sub(lower_right, lower_left), x_lerp))
        value = o.Add(upper, o.Mul(o.Sub(lower, upper), y_lerp))

    def inside(v: str, extent: str) -> str:
        return o.Not(o.Or(o.Less(v, o.c(0.0)), o.Greater(v, extent)))

    mask = o.And(inside(ys, extents[0]), inside(xs, extents[1]))
    o.Where(mask, value, o.c(float(node.attrs["extrapolation_value"])), out=ctx.output(0))


# -- area resizing -------------------------------------------------------------------------------
area = OPS.declare("ResizeArea", "NHWC images resized to size, each output pixel the "
                                 "overlap-weighted mean of the source pixels its area covers.") \
    .input("images", CROP_TYPES).input("size", ("int32",)).output("resized_images", ("float32",)) \
    .attr("align_corners", "bool", False)


def _area_size(node):
    size = partial_ints(node.inputs[1], 2)
    if len(size) != 2:
        raise ConversionError(f"size must hold 2 values, not {len(size)}")
    return size


@area.infer
def _infer_area(node):
    x = _image_desc(node, "images")
    height, width = _area_size(node)
    if x.shape is None:
        return [TensorDesc("float32", (None, height, width, None))]
    return [TensorDesc("float32", (x.shape[0], height, width, x.shape[3]))]


def _area_scale(source: int, target: int, align: bool) -> np.float32:
    if align and target > 1:
        return np.float32(source - 1) / np.float32(target - 1)
    return np.float32(source) / np.float32(target)


def area_weights(source: int, target: int, align: bool) -> np.ndarray:
    """[target, source] float32: the share of each source cell in each target cell, as TF's
    kernel computes it (cells past the edge clamp to it)."""
    scale = _area_scale(source, target, align)
    weights = np.zeros((target, source), np.float32)
    for out in range(target):
        start, stop = np.float32(out) * scale, np.float32(out + 1) * scale
        for i in range(math.floor(start), math.ceil(stop)):
            ends_after = np.float32(i + 1) > stop
            if np.float32(i) < start:
                share = scale if ends_after else np.float32(i + 1) - start
            else:
                share = stop - np.float32(i) if ends_after else np.float32(1.0)
            weights[out, min(max(i, 0), source - 1)] += share
    return weights


@area.lower
def _lower_area(ctx, node):
    x = node.inputs[0].desc
    height, width = _area_size(node)
    if min(d for d in (height, width, 1) if d is not None) < 1:
        raise ConversionError(f"size {[height, width]} must be positive")
    align = node.attrs["align_corners"]
    if x.shape is None or x.shape[1] is None or x.shape[2] is None or None in (height, width):
        _lower_area_at_run_time(ctx, align)
        return
    rows = area_weights(x.shape[1], height, align)               # [out_h, H]
    columns = area_weights(x.shape[2], width, align).T           # [W, out_w]
    scale = 1.0 / float(_area_scale(x.shape[1], height, align) * _area_scale(x.shape[2], width, align))
    o = Emitter(ctx, "float32")
    nchw = o.Transpose(_float32_input(ctx, 0), perm=[0, 3, 1, 2])
    summed = o.MatMul(ctx.constant(rows, "area_rows"),
                      o.MatMul(nchw, ctx.constant(columns, "area_columns")))
    o.Transpose(o.Mul(summed, o.c(np.float32(scale))), perm=[0, 2, 3, 1], out=ctx.output(0))


def _run_time_area_weights(o: Emitter, source: str, target: str, align: bool):
    """(weights [target, source], scale) in float32 from int64 scalars: `area_weights` and
    `_area_scale` at run time. A cell's share is its overlap with [out * scale, (out + 1) *
    scale); the shares of cells past the edge (TF clamps them to it) go to the last cell."""
    f32 = lambda v: o.Cast(v, to=F32)                                           # noqa: E731
    s, t = f32(source), f32(target)
    scale = o.Div(s, t)
    if align:
        one = o.c(1.0, "float32")
        scale = o.Where(o.Greater(target, o.c(1)), o.Div(o.Sub(s, one), o.Max(o.Sub(t, one), one)),
                        scale)
    outs = o.Unsqueeze(f32(o.Range(o.c(0), target, o.c(1))), o.c([1]))        # [T, 1]
    cells = o.Unsqueeze(f32(o.Range(o.c(0), source, o.c(1))), o.c([0]))       # [1, S]
    start, stop = o.Mul(outs, scale), o.Mul(o.Add(outs, o.c(1.0, "float32")), scale)
    zero = o.c(0.0, "float32")
    shares = o.Max(zero, o.Sub(o.Min(o.Add(cells, o.c(1.0, "float32")), stop), o.Max(cells, start)))
    beyond = o.Max(zero, o.Sub(stop, o.Max(s, start)))                          # [T, 1]
    last = f32(o.Equal(cells, f32(o.Sub(source, o.c(1)))))                      # [1, S]
    return o.Add(shares, o.Mul(beyond, last)), scale


def _lower_area_at_run_time(ctx, align: bool) -> None:
    """ResizeArea whose image size or target size is known at run time: the two weight
    matrices computed from them (the constant form's arithmetic, in float32)."""
    o = Emitter(ctx, "int64")
    shape = o.Shape(ctx.input(0))
    size = o.Cast(ctx.input(1), to=I64)
    dim = lambda v, k: o.Gather(v, o.c(k), axis=0)                            # noqa: E731
    rows, row_scale = _run_time_area_weights(o, dim(shape, 1), dim(size, 0), align)
    columns, column_scale = _run_time_area_weights(o, dim(shape, 2), dim(size, 1), align)
    nchw = o.Transpose(_float32_input(ctx, 0), perm=[0, 3, 1, 2])
    summed = o.MatMul(rows, o.MatMul(nchw, o.Transpose(columns, perm=[1, 0])))
    scale = o.Div(o.c(1.0, "float32"), o.Mul(row_scale, column_scale))
    o.Transpose(o.Mul(summed, scale), perm=[0, 2, 3, 1], out=ctx.output(0))


# -- max pooling with argmax -----------------------------------------------------------------------
# onnxruntime's MaxPool with Indices takes these; other dtypes pool in a carrier that holds them
POOL_KERNELS = kernel_types("MaxPool", ("float16", "float32", "float64", "int8", "uint8"))
POOL_CARRIERS = via("MaxPool", {"bfloat16": "float32", "int16": "float64", "uint16": "float64",
                                "int32": "float64", "uint32": "float64"})

argmax_pool = OPS.declare("MaxPoolWithArgmax", "Max pooling of NHWC input and each maximum's "
                                               "flat index ((y * W + x) * C + c, plus the "
                                               "batch offset with include_batch_in_index).") \
    .input("input", POOL_KERNELS + tuple(POOL_CARRIERS)).output("output") \
    .output("argmax", INDEX_TYPES).attr("ksize", "ints").attr("strides", "ints") \
    .attr("padding", "str").attr("Targmax", "dtype", "int64") \
    .attr("include_batch_in_index", "bool", False)


def _pool_window(node):
    k, s = node.attrs["ksize"], node.attrs["strides"]
    for name, values in (("ksize", k), ("strides", s)):
        if len(values) != 4 or values[0] != 1 or values[3] != 1 or min(values) < 1:
            raise ConversionError(f"{name} must be [1, a, b, 1] with a, b >= 1, not {list(values)}")
    if node.attrs["padding"] not in ("SAME", "VALID"):
        raise ConversionError(f"padding {node.attrs['padding']!r} is not SAME or VALID")
    return list(k[1:3]), list(s[1:3])


@argmax_pool.infer
def _infer_argmax_pool(node):
    x = _image_desc(node, "input")
    k, s = _pool_window(node)
    if x.shape is None:
        shape = (None,) * 4
    else:
        dims = [window_output(x.shape[1 + i], k[i], s[i], 1, node.attrs["padding"]) for i in (0, 1)]
        shape = (x.shape[0], *dims, x.shape[3])
    return [TensorDesc(x.dtype, shape), TensorDesc(node.attrs["Targmax"], shape)]


@argmax_pool.lower
def _lower_argmax_pool(ctx, node):
    dtype = node.inputs[0].desc.dtype
    k, s = _pool_window(node)
    o = Emitter(ctx, "int64")
    x = ctx.input(0)
    if dtype in POOL_CARRIERS:
        x = emit_cast(ctx, x, POOL_CARRIERS[dtype])
    nchw = o.Transpose(x, perm=[0, 3, 1, 2])
    pad = "SAME_UPPER" if node.attrs["padding"] == "SAME" else "VALID"
    pooled, flat = ctx.op.MaxPool(nchw, outputs=2, kernel_shape=k, strides=s, auto_pad=pad)
    if dtype in POOL_CARRIERS:
        pooled = emit_cast(ctx, pooled, dtype)
    o.Transpose(pooled, perm=[0, 2, 3, 1], out=ctx.output(0))
    # ONNX: ((n * C + c) * H + y) * W + x  →  TF: (y * W + x) * C + c  [+ n * H * W * C]
    shape = o.Shape(nchw)
    channels = o.Gather(shape, o.c(1), axis=0)
    plane = o.Mul(o.Gather(shape, o.c(2), axis=0), o.Gather(shape, o.c(3), axis=0))
    flat = o.Transpose(flat, perm=[0, 2, 3, 1])
    spot, image_channel = o.Mod(flat, plane), o.Div(flat, plane)
    channel = o.Mod(image_channel, channels)
    index = o.Add(o.Mul(spot, channels), channel)
    if node.attrs["include_batch_in_index"]:
        index = o.Add(index, o.Mul(o.Sub(image_channel, channel), plane))
    if node.attrs["Targmax"] == "int64":
        o.Identity(index, out=ctx.output(1))
    else:
        emit_cast(ctx, index, node.attrs["Targmax"], ctx.output(1))


# -- CTC greedy decoding -------------------------------------------------------------------------
ctc = OPS.declare("CTCGreedyDecoder", "Greedy CTC decoding of [max_time, batch, classes] "
                                      "logits: the best class per step within each sequence's "
                                      "length, blanks (and repeats, with merge_repeated) "
                                      "dropped, as a sparse tensor; and minus the sum of the "
                                      "maxima.") \
    .input("inputs", ("float32", "float64")).input("sequence_length", ("int32",)) \
    .output("decoded_indices", ("int64",)).output("decoded_values", ("int64",)) \
    .output("decoded_shape", ("int64",)).output("log_probability", ("float32", "float64")) \
    .attr("merge_repeated", "bool", False).attr("blank_index", "int", -1)


@ctc.infer
def _infer_ctc(node):
    x = node.inputs[0].desc
    if x.rank not in (None, 3):
        raise ConversionError(f"inputs must be [max_time, batch, num_classes], not rank {x.rank}")
    batch = x.shape[1] if x.shape is not None else None
    return [TensorDesc("int64", (None, 2)), TensorDesc("int64", (None,)),
            TensorDesc("int64", (2,)), TensorDesc(x.dtype, (batch, 1))]


@ctc.lower
def _lower_ctc(ctx, node):
    dtype = node.inputs[0].desc.dtype
    o = Emitter(ctx, "int64")
    logits = ctx.input(0)
    best = o.ArgMax(logits, axis=2, keepdims=0, select_last_index=0)        # [T, B]
    steps = o.Gather(o.Shape(logits), o.c(0), axis=0)
    classes = o.Gather(o.Shape(logits), o.c(2), axis=0)
    time = o.Unsqueeze(o.Range(o.c(0), steps, o.c(1)), int64_constant(ctx, [1]))   # [T, 1]
    lengths = o.Unsqueeze(o.Cast(ctx.input(1), to=I64), int64_constant(ctx, [0]))  # [1, B]
    live = o.Less(time, lengths)
    peak = o.ReduceMax(logits, int64_constant(ctx, [2]), keepdims=0)
    zero = ctx.constant(np.array(0, FLOAT_NUMPY[dtype]))
    total = o.ReduceSum(o.Where(live, o.Neg(peak), zero), int64_constant(ctx, [0]), keepdims=0)
    o.Unsqueeze(total, int64_constant(ctx, [1]), out=ctx.output(3))
    blank = node.attrs["blank_index"]
    blank = o.Add(classes, o.c(blank)) if blank < 0 else o.c(blank)
    keep = o.And(live, o.Not(o.Equal(best, blank)))
    if node.attrs["merge_repeated"]:
        first = o.Expand(o.c([[-1]]), o.Concat(o.c([1]), o.Shape(best, start=1), axis=0))
        before = o.Concat(first, o.Slice(best, o.c([0]), o.Reshape(o.Sub(steps, o.c(1)), o.c([1]))),
                          axis=0)                                          # the previous step's
        keep = o.And(keep, o.Not(o.Equal(best, before)))
    keep, best = o.Transpose(keep, perm=[1, 0]), o.Transpose(best, perm=[1, 0])   # [B, T]
    spots = o.Transpose(o.NonZero(keep), perm=[1, 0])                            # [N, 2] (b, t)
    o.GatherND(best, spots, out=ctx.output(1))
    kept = o.Cast(keep, to=I64)
    column = o.Sub(o.CumSum(kept, o.c(1)), o.c(1))
    o.Concat(o.Gather(spots, o.c([0]), axis=1), o.Unsqueeze(o.GatherND(column, spots), o.c([1])),
             axis=1, out=ctx.output(0))
    longest = o.ReduceMax(o.Concat(o.c([0]), o.ReduceSum(kept, o.c([1]), keepdims=0), axis=0),
                          o.c([0]), keepdims=1)
    o.Concat(o.Shape(keep, end=1), longest, axis=0, out=ctx.output(2))

