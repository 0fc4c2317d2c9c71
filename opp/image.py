"""Image ops: resizing (NHWC or NCHW images, as their format says) and non-max suppression."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.writer import ONNX_DTYPES, tensor_proto
from tf2ir.ir.tensor import NUMBER_TYPES
from tf2ir.opp.layouts import data_layout
from tf2ir.opp.shapes import const_ints, partial_ints
from tf2ir.opp.conv import compute_input

OPS = OpSet("tf2ir.opp.image")


# -- resizing ---------------------------------------------------------------------------------------
RESIZE_MODES = {"ResizeBilinear": "linear", "ResizeNearestNeighbor": "nearest", "ResizeBicubic": "cubic"}
# onnxruntime's Resize kernels take these dtypes; the others go through float32 or int32.
ORT_RESIZE_TYPES = ("float16", "float32", "int32", "int8", "uint8")


def _resize(op_type: str, doc: str):
    proto = (OPS.declare(op_type, doc).input("images", NUMBER_TYPES).input("size", ("int32",))
             .output("resized_images").attr("align_corners", "bool", False)
             .attr("half_pixel_centers", "bool", False))
    proto.infer(_infer_resize)
    proto.lower(_lower_resize)
    return proto


def _infer_resize(node):
    x = node.inputs[0].desc
    if x.rank not in (None, 4):
        raise ConversionError("images must be a rank-4 tensor (NHWC or NCHW)")
    if node.attrs["align_corners"] and node.attrs["half_pixel_centers"]:
        raise ConversionError("align_corners and half_pixel_centers cannot both be true")
    fmt = data_layout(node, 0, 4)
    size = partial_ints(node.inputs[1], 2)
    dtype = x.dtype if node.op_type == "ResizeNearestNeighbor" else "float32"
    shape = None
    if x.shape is not None:
        channels = x.shape[fmt.index("C")]
        shape = (x.shape[0], *size, channels) if fmt == "NHWC" else (x.shape[0], channels, *size)
    return [TensorDesc(dtype, shape, fmt, fmt)]


def _resize_attrs(node):
    mode = RESIZE_MODES[node.op_type]
    align, half = node.attrs["align_corners"], node.attrs["half_pixel_centers"]
    attrs = {"mode": mode}
    attrs["coordinate_transformation_mode"] = ("align_corners" if align else "half_pixel" if half
                                               else "asymmetric")
    if mode == "nearest":
        # TF: floor(x * scale) legacy, round(x * scale) aligned, floor((x + 0.5) * scale) with
        # half-pixel centers, which is ONNX's half_pixel rounded half up.
        attrs["nearest_mode"] = "floor" if not (align or half) else "round_prefer_ceil"
    if mode == "cubic":
        # TF's Keys kernel: a = -0.5 with half-pixel centers (samples outside the image get
        # weight 0, the rest renormalized), its legacy a = -0.75 with edge replication.
        attrs["cubic_coeff_a"] = -0.5 if half else -0.75
        attrs["exclude_outside"] = 1 if half else 0
    return attrs


def _lower_resize(ctx, node):
    x, fmt = node.inputs[0].desc, data_layout(node, 0, 4)
    mode = RESIZE_MODES[node.op_type]
    size = ctx.const_input(1)
    if size is not None:
        sizes = ctx.constant(np.asarray(size, np.int64).reshape(2), "sizes")
    else:
        sizes = ctx.op.Cast(ctx.input(1), to=ONNX_DTYPES["int64"])
        # onnx's shape inference must know that a run-time size has 2 entries (else it
        # rejects the Resize), and inside a subgraph (an If branch) it reads no outer-scope
        # initializer: a Pack of scalars there has no known length. A Reshape to [2] whose
        # shape is a Constant node of this graph states it wherever the Resize is.
        two = ctx.op.Constant(value=tensor_proto("two", np.array([2], np.int64)))
        sizes = ctx.op.Reshape(sizes, two)
    images, compute = ctx.input(0), x.dtype
    if mode != "nearest":
        compute = "float32"       # TF's bilinear and bicubic kernels give float32
    elif x.dtype in ("int16", "uint16"):
        compute = "int32"         # exact, and onnxruntime has an int32 kernel
    elif x.dtype not in ORT_RESIZE_TYPES:
        if fmt == "NHWC":
            _lower_nearest_by_gather(ctx, node, sizes, images, ctx.output(0))
            return
        nhwc = ctx.op.Transpose(images, perm=[0, 2, 3, 1])
        resized = ctx.fresh("resized")
        _lower_nearest_by_gather(ctx, node, sizes, nhwc, resized)
        ctx.op.Transpose(resized, out=ctx.output(0), perm=[0, 3, 1, 2])
        return
    if compute != x.dtype:
        images = ctx.op.Cast(images, to=ONNX_DTYPES[compute])
    out_dtype = node.outputs[0].desc.dtype
    attrs = _resize_attrs(node)
    resized = ctx.output(0) if out_dtype == compute else ctx.fresh("resized")
    if mode == "cubic":
        _emit_cubic(ctx, images, sizes, resized, attrs, fmt)
    else:
        ctx.op.Resize(images, "", "", sizes, out=resized, axes=[1, 2] if fmt == "NHWC" else [2, 3],
                      **attrs)
    if resized != ctx.output(0):
        ctx.op.Cast(resized, out=ctx.output(0), to=ONNX_DTYPES[out_dtype])


def _emit_cubic(ctx, images, sizes, output, attrs, fmt):
    """onnxruntime's cubic kernel cannot downsample channels-last data, and its transpose
    optimizer moves a lone NHWC->NCHW Transpose back through Resize: resize (N*C, 1, H, W)
    (or the (H, W) plane of a single-image, single-channel input)."""
    shape = ctx.node.inputs[0].desc.shape
    if shape is not None and shape[0] == 1 and shape[fmt.index("C")] == 1:
        # A single plane: onnxruntime then refuses 4-D downsampling it knows of at load time.
        start = fmt.index("H")
        spatial = ctx.op.Shape(images, start=start, end=start + 2)
        plane = ctx.op.Reshape(images, spatial)
        resized = ctx.op.Resize(plane, "", "", sizes, **attrs)
        one = ctx.constant(np.array([1], np.int64))
        dims = [one, sizes, one] if fmt == "NHWC" else [one, one, sizes]
        ctx.op.Reshape(resized, ctx.op.Concat(*dims, axis=0), out=output)
        return
    nchw = images if fmt == "NCHW" else ctx.op.Transpose(images, perm=[0, 3, 1, 2])
    shape = ctx.op.Shape(nchw)
    minus_one_one = ctx.constant(np.array([-1, 1], np.int64))
    spatial = ctx.op.Slice(shape, ctx.constant(np.array([2], np.int64)),
                           ctx.constant(np.array([4], np.int64)))
    flat = ctx.op.Reshape(nchw, ctx.op.Concat(minus_one_one, spatial, axis=0))
    flat_sizes = ctx.op.Concat(ctx.op.Shape(flat, start=0, end=2), sizes, axis=0)
    resized = ctx.op.Resize(flat, "", "", flat_sizes, **attrs)
    batch_channels = ctx.op.Slice(shape, ctx.constant(np.array([0], np.int64)),
                                  ctx.constant(np.array([2], np.int64)))
    unflat_shape = ctx.op.Concat(batch_channels, sizes, axis=0)
    if fmt == "NCHW":
        ctx.op.Reshape(resized, unflat_shape, out=output)
        return
    unflat = ctx.op.Reshape(resized, unflat_shape)
    ctx.op.Transpose(unflat, out=output, perm=[0, 2, 3, 1])


def _lower_nearest_by_gather(ctx, node, sizes, images, output):
    """Nearest resizing of NHWC `images` of a dtype onnxruntime's Resize lacks into `output`:
    resize a map of flat source indices (int32), then gather the pixels it names."""
    shape = ctx.op.Shape(images)
    dims = [ctx.op.Gather(shape, ctx.constant(np.array([i], np.int64)), axis=0) for i in range(4)]
    hw = ctx.op.Mul(dims[1], dims[2])
    flat_hw = ctx.op.Reshape(hw, ctx.constant(np.array([], np.int64)))
    index = ctx.op.Range(ctx.constant(np.array(0, np.int64)), flat_hw,
                         ctx.constant(np.array(1, np.int64)))
    index = ctx.op.Cast(index, to=ONNX_DTYPES["int32"])
    one = ctx.constant(np.array([1], np.int64))
    index = ctx.op.Reshape(index, ctx.op.Concat(one, dims[1], dims[2], one, axis=0))
    picked = ctx.op.Resize(index, "", "", sizes, axes=[1, 2], **_resize_attrs(node))
    picked = ctx.op.Reshape(picked, ctx.constant(np.array([-1], np.int64)))
    minus_one = ctx.constant(np.array([-1], np.int64))
    rows = ctx.op.Reshape(images, ctx.op.Concat(dims[0], minus_one, dims[3], axis=0))
    gathered = ctx.op.Gather(rows, picked, axis=1)
    out_shape = ctx.op.Concat(dims[0], sizes, dims[3], axis=0)
    ctx.op.Reshape(gathered, out_shape, out=output)


_resize("ResizeBilinear", "Bilinear resizing of images (NHWC or NCHW) to `size`; float32 output.")
_resize("ResizeNearestNeighbor", "Nearest-neighbour resizing of images (NHWC or NCHW) to `size`.")
_resize("ResizeBicubic", "Bicubic resizing of images (NHWC or NCHW) to `size`; float32 output.")


# -- non-max suppression --------------------------------------------------------------------------------
nms = (OPS.declare("NonMaxSuppression", "Greedy selection of boxes by descending score, dropping boxes "
                                         "that overlap a selected one by more than iou_threshold.")
       .input("boxes", ("float16", "float32")).input("scores", ("float16", "float32"))
       .input("max_output_size", ("int32",)).input("iou_threshold", ("float16", "float32"))
       .input("score_threshold", ("float16", "float32"))
       .optional_input("soft_nms_sigma", ("float16", "float32"))
       .output("selected_indices", ("int32",)).dynamic_output("extra", count_attr="num_extra")
       .attr("num_extra", "int", 0).attr("pad_to_max_output_size", "bool", False)
       .attr("selected_scores", "bool", False))
# num_extra: 0 (V3); 1, valid_outputs (V4); 2, selected_scores then valid_outputs (V5).


@nms.infer
def _infer_nms(node):
    boxes, scores = node.inputs[0].desc, node.inputs[1].desc
    if boxes.rank not in (None, 2) or scores.rank not in (None, 1):
        raise ConversionError("boxes must be [num_boxes, 4] and scores [num_boxes]")
    limit = const_ints(node, 2)
    count = limit[0] if limit and node.attrs["pad_to_max_output_size"] else None
    descs = [TensorDesc("int32", (count,))]
    if node.attrs["selected_scores"]:
        descs.append(TensorDesc(scores.dtype, (count,)))
    if node.attrs["num_extra"] > len(descs) - 1:
        descs.append(TensorDesc("int32", ()))
    return descs


@nms.lower
def _lower_nms(ctx, node):
    if ctx.input(5):
        sigma = ctx.const_input(5)
        if sigma is None or float(np.asarray(sigma).reshape(-1)[0]) != 0.0:
            raise ConversionError("soft-NMS (soft_nms_sigma != 0) has no ONNX equivalent; "
                                  "only soft_nms_sigma = 0 is supported")
    as_float = [compute_input(ctx, i, node.inputs[i].desc.dtype, ("float32",)) for i in range(5)]
    unsqueeze0 = ctx.constant(np.array([0], np.int64))
    boxes = ctx.op.Unsqueeze(as_float[0], unsqueeze0)
    scores = ctx.op.Unsqueeze(as_float[1], ctx.constant(np.array([0, 1], np.int64)))
    one = ctx.constant(np.array([1], np.int64))
    limit = ctx.op.Reshape(ctx.op.Cast(ctx.input(2), to=ONNX_DTYPES["int64"]), one)
    iou = ctx.op.Reshape(as_float[3], one)
    score_threshold = ctx.op.Reshape(as_float[4], one)
    selected = ctx.op.NonMaxSuppression(boxes, scores, limit, iou, score_threshold)
    indices = ctx.op.Gather(selected, ctx.constant(np.array(2, np.int64)), axis=1)
    count = ctx.op.Shape(indices)
    pad = node.attrs["pad_to_max_output_size"]
    if pad:
        # zeros after the selected ones up to max_output_size (TF pads with index 0, score 0)
        missing = ctx.op.Sub(limit, count)
        missing = ctx.op.Max(missing, ctx.constant(np.array([0], np.int64)))
        pads = ctx.op.Concat(ctx.constant(np.array([0], np.int64)), missing, axis=0)
    outputs = iter(range(1, len(node.outputs)))

    def finish(name, dtype, output):
        if pad:
            name = ctx.op.Pad(name, pads)
        ctx.op.Cast(name, out=output, to=ONNX_DTYPES[dtype])

    finish(indices, "int32", ctx.output(0))
    if node.attrs["selected_scores"]:
        picked = ctx.op.Gather(ctx.input(1), indices, axis=0)
        finish(picked, node.inputs[1].desc.dtype, ctx.output(next(outputs)))
    if node.attrs["num_extra"] > (1 if node.attrs["selected_scores"] else 0):
        valid = ctx.op.Reshape(count, ctx.constant(np.array([], np.int64)))
        ctx.op.Cast(valid, out=ctx.output(next(outputs)), to=ONNX_DTYPES["int32"])
