"""Image adjustments and patches (NHWC, TF's kernels' arithmetic), and the image ops ONNX
cannot compute exactly, refused with the reason.

- AdjustContrastv2: per image and channel, (x - mean over H, W) * factor + mean.
- AdjustSaturation, AdjustHue: RGB -> HSV -> RGB as TF's CPU kernels compute them (hue in
  [0, 1), saturation scaled and clamped to [0, 1], hue shifted by delta and wrapped); float16
  images compute in float32, as TF's do.
- ExtractImagePatches: a convolution with a one-hot filter (each output channel copies one
  input pixel of the window, TF's (row, column, channel) order), strides, rates and SAME/VALID
  padding; float16 and float32 (copied exactly through float32), and an infinite or NaN pixel spreads NaN to the patches beside it
  (0 * inf), where TF copies it.
- NonMaxSuppressionV2: ONNX NonMaxSuppression without a score threshold.
- SampleDistortedBoundingBox(V2): refused, since its boxes are drawn by TF's random generator.
"""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.opp.emitting import Emitter, emit_cast, int64_constant
from tf2ir.opp.shapes import same_as_input

OPS = OpSet("tf2ir.opp.imageops")
IMAGE_FLOATS = ("float16", "float32")


def _check_image(node, least: int = 3) -> TensorDesc:
    x = node.inputs[0].desc
    if x.rank is not None and x.rank < least:
        raise ConversionError(f"images must be at least {least}-D [..., height, width, "
                              f"channels], not rank {x.rank}")
    return x


def _float32_input(ctx, index: int) -> str:
    dtype = ctx.lowered.inputs[index].desc.dtype
    return ctx.input(index) if dtype == "float32" else emit_cast(ctx, ctx.input(index), "float32")


def _finish(ctx, node, value: str) -> None:
    dtype = node.output_desc(0).dtype
    if dtype == "float32":
        ctx.op.Identity(value, out=ctx.output(0))
    else:
        emit_cast(ctx, value, dtype, ctx.output(0))


# -- contrast -----------------------------------------------------------------------------------------
contrast = OPS.declare("AdjustContrastv2", "(x - mean) * contrast_factor + mean, the mean over "
                                           "each image's height and width per channel.") \
    .input("images", IMAGE_FLOATS).input("contrast_factor", ("float32",)).output("output")


@contrast.infer
def _infer_contrast(node):
    _check_image(node)
    return same_as_input(node)


@contrast.lower
def _lower_contrast(ctx, node):
    o = Emitter(ctx, "float32")
    x = _float32_input(ctx, 0)
    mean = o.ReduceMean(x, int64_constant(ctx, [-3, -2]), keepdims=1)
    _finish(ctx, node, o.Add(o.Mul(o.Sub(x, mean), ctx.input(1)), mean))


# -- HSV -------------------------------------------------------------------------------------------
def _rgb_to_hsv(o: Emitter, x: str):
    """TF's rgb_to_hsv of the last axis of float32 `x` → (h, s, v), each [..., 1]."""
    ctx = o.ctx
    r, g, b = (o.Slice(x, int64_constant(ctx, [i]), int64_constant(ctx, [i + 1]),
                       int64_constant(ctx, [-1])) for i in range(3))
    v = o.Max(r, g, b)
    span = o.Sub(v, o.Min(r, g, b))
    zero = o.c(0.0)
    s = o.Where(o.Greater(v, zero), o.Div(span, v), zero)
    norm = o.Div(o.c(1.0), o.Mul(o.c(6.0), span))
    h = o.Where(o.Equal(r, v), o.Mul(norm, o.Sub(g, b)),
                o.Where(o.Equal(g, v), o.Add(o.Mul(norm, o.Sub(b, r)), o.c(2.0 / 6.0)),
                        o.Add(o.Mul(norm, o.Sub(r, g)), o.c(4.0 / 6.0))))
    h = o.Where(o.LessOrEqual(span, zero), zero, h)
    h = o.Where(o.Less(h, zero), o.Add(h, o.c(1.0)), h)
    return h, s, v


def _hsv_to_rgb(o: Emitter, h: str, s: str, v: str) -> str:
    """TF's hsv_to_rgb → [..., 3] float32."""
    c = o.Mul(s, v)
    m = o.Sub(v, c)
    dh = o.Mul(h, o.c(6.0))
    category = o.Floor(dh)     # TF truncates a non-negative dh
    # TF: fmodu = dh folded into (0, 2) by adding or subtracting 2
    fmodu = o.Sub(dh, o.Mul(o.c(2.0), o.Floor(o.Div(dh, o.c(2.0)))))
    fmodu = o.Where(o.LessOrEqual(fmodu, o.c(0.0)), o.Add(fmodu, o.c(2.0)), fmodu)
    x = o.Mul(c, o.Sub(o.c(1.0), o.Abs(o.Sub(fmodu, o.c(1.0)))))
    zero = o.Mul(c, o.c(0.0))
    table = {0: (c, x, zero), 1: (x, c, zero), 2: (zero, c, x), 3: (zero, x, c), 4: (x, zero, c),
             5: (c, zero, x)}
    channels = []
    for k in range(3):
        value = zero
        for cat in range(6):
            value = o.Where(o.Equal(category, o.c(float(cat))), table[cat][k], value)
        channels.append(o.Add(value, m))
    return o.Concat(*channels, axis=-1)


def _hsv_op(op_type: str, doc: str, operand: str):
    proto = OPS.declare(op_type, doc).input("images", IMAGE_FLOATS) \
        .input(operand, ("float32",)).output("output")

    @proto.infer
    def _infer(node):
        x = _check_image(node, 1)
        if x.shape is not None and x.shape[-1] not in (None, 3):
            raise ConversionError(f"images must have 3 channels (RGB), not {x.shape[-1]}")
        return same_as_input(node)
    proto.lower(_lower_hsv)
    return proto


def _lower_hsv(ctx, node):
    o = Emitter(ctx, "float32")
    h, s, v = _rgb_to_hsv(o, _float32_input(ctx, 0))
    amount = ctx.input(1)
    if node.op_type == "AdjustSaturation":
        s = o.Clip(o.Mul(s, amount), o.c(0.0), o.c(1.0))
    else:
        h = o.Add(h, amount)
        h = o.Sub(h, o.Mul(o.Floor(h), o.c(1.0)))    # fmod(h, 1), then negative + 1
    _finish(ctx, node, _hsv_to_rgb(o, h, s, v))


_hsv_op("AdjustSaturation", "RGB images with the HSV saturation scaled by scale and clamped "
                            "to [0, 1].", "scale")
_hsv_op("AdjustHue", "RGB images with the HSV hue shifted by delta, wrapped to [0, 1).", "delta")


# -- patches ------------------------------------------------------------------------------------------
patches = OPS.declare("ExtractImagePatches", "Each ksizes window (rates apart, strides apart) "
                                             "of NHWC images as one depth vector in (row, "
                                             "column, channel) order.") \
    .input("images", IMAGE_FLOATS).output("patches") \
    .attr("ksizes", "ints").attr("strides", "ints").attr("rates", "ints") \
    .attr("padding", "str")


def _window(node):
    k, s, r = (node.attrs[a] for a in ("ksizes", "strides", "rates"))
    for name, values in (("ksizes", k), ("strides", s), ("rates", r)):
        if len(values) != 4 or values[0] != 1 or values[3] != 1:
            raise ConversionError(f"{name} must be [1, a, b, 1], not {list(values)}")
    if node.attrs["padding"] not in ("SAME", "VALID"):
        raise ConversionError(f"padding {node.attrs['padding']!r} is not SAME or VALID")
    return k[1:3], s[1:3], r[1:3]


def _patch_size(size, k, s, r, padding):
    if size is None:
        return None
    span = (k - 1) * r + 1
    return -(-size // s) if padding == "SAME" else max(0, (size - span) // s + 1)


@patches.infer
def _infer_patches(node):
    x = node.inputs[0].desc
    if x.rank not in (None, 4):
        raise ConversionError(f"images must be 4-D NHWC, not rank {x.rank}")
    k, s, r = _window(node)
    if x.shape is None:
        return [TensorDesc(x.dtype, (None,) * 4)]
    n, height, width, c = x.shape
    dims = [_patch_size(d, *args, node.attrs["padding"])
            for d, args in zip((height, width), zip(k, s, r))]
    return [TensorDesc(x.dtype, (n, *dims, None if c is None else c * k[0] * k[1]))]


@patches.lower
def _lower_patches(ctx, node):
    x = node.inputs[0].desc
    channels = None if x.shape is None else x.shape[3]
    (kh, kw), strides, rates = _window(node)
    same = node.attrs["padding"] == "SAME"
    if channels is None or same and (x.shape[1] is None or x.shape[2] is None):
        _lower_patches_at_run_time(ctx, node, (kh, kw), strides, rates, same)
        return
    weights = np.zeros((kh * kw * channels, channels, kh, kw), np.float32)
    for i in range(kh):
        for j in range(kw):
            for c in range(channels):
                weights[(i * kw + j) * channels + c, c, i, j] = 1
    nchw = ctx.op.Transpose(_float32_input(ctx, 0), perm=[0, 3, 1, 2])
    pads = None
    if node.attrs["padding"] == "SAME":
        pads = [0, 0, 0, 0]
        for axis, (size, k, s, r) in enumerate(zip(x.shape[1:3], (kh, kw), strides, rates)):
            total = max(0, (-(-size // s) - 1) * s + (k - 1) * r + 1 - size)
            pads[axis], pads[axis + 2] = total // 2, total - total // 2
    out = ctx.op.Conv(nchw, ctx.constant(weights, "one_hot"), strides=list(strides),
                      dilations=list(rates), pads=pads)
    _finish(ctx, node, ctx.op.Transpose(out, perm=[0, 2, 3, 1]))


def _lower_patches_at_run_time(ctx, node, kernel, strides, rates, same: bool) -> None:
    """Channels (or, with SAME, height and width) known at run time: each channel as an image
    of its own ([N*C, 1, H, W], padded as TF pads SAME by the run-time size), one
    convolution with a one-hot filter per window cell, then [N, oh, ow, kh*kw, C] flattened."""
    (kh, kw), o = kernel, Emitter(ctx, "int64")
    nchw = o.Transpose(_float32_input(ctx, 0), perm=[0, 3, 1, 2])
    shape = o.Shape(nchw)
    n, c, hw = o.Shape(nchw, end=1), o.Shape(nchw, start=1, end=2), o.Shape(nchw, start=2)
    images = o.Reshape(nchw, o.Concat(o.Mul(n, c), o.c([1]), hw, axis=0), allowzero=1)
    if same:
        before, after = [], []
        for axis, (k, s, r) in enumerate(zip(kernel, strides, rates)):
            size = o.Gather(shape, o.c([2 + axis]))
            count = o.Div(o.Add(size, o.c([s - 1])), o.c([s]))
            total = o.Max(o.c([0]), o.Sub(o.Add(o.Mul(o.Sub(count, o.c([1])), o.c([s])),
                                                o.c([(k - 1) * r + 1])), size))
            before.append(o.Div(total, o.c([2])))
            after.append(o.Sub(total, before[-1]))
        images = o.Pad(images, o.Concat(o.c([0, 0]), *before, o.c([0, 0]), *after, axis=0))
    weights = np.zeros((kh * kw, 1, kh, kw), np.float32)
    for i in range(kh):
        for j in range(kw):
            weights[i * kw + j, 0, i, j] = 1
    out = o.Conv(images, ctx.constant(weights, "one_hot"), strides=list(strides),
                 dilations=list(rates))                                     # [N*C, kh*kw, oh, ow]
    ohw = o.Shape(out, start=2)
    cells = o.Reshape(out, o.Concat(n, c, o.c([kh * kw]), ohw, axis=0), allowzero=1)
    cells = o.Transpose(cells, perm=[0, 3, 4, 2, 1])                           # [N, oh, ow, kh*kw, C]
    _finish(ctx, node, o.Reshape(cells, o.Concat(n, ohw, o.Mul(c, o.c([kh * kw])), axis=0),
                                 allowzero=1))


# -- non-max suppression without a score threshold -----------------------------------------------------
nms2 = OPS.declare("NonMaxSuppressionV2", "Greedy selection of up to max_output_size boxes by "
                                          "descending score, dropping boxes that overlap a "
                                          "selected one by more than iou_threshold.") \
    .input("boxes", IMAGE_FLOATS).input("scores", IMAGE_FLOATS) \
    .input("max_output_size", ("int32",)).input("iou_threshold", IMAGE_FLOATS) \
    .output("selected_indices", ("int32",))


@nms2.infer
def _infer_nms2(node):
    boxes, scores = node.inputs[0].desc, node.inputs[1].desc
    if boxes.rank not in (None, 2) or scores.rank not in (None, 1):
        raise ConversionError("boxes must be [num_boxes, 4] and scores [num_boxes]")
    return [TensorDesc("int32", (None,))]


@nms2.lower
def _lower_nms2(ctx, node):
    o = Emitter(ctx, "int64")
    boxes = o.Unsqueeze(_float32_input(ctx, 0), int64_constant(ctx, [0]))
    scores = o.Unsqueeze(_float32_input(ctx, 1), int64_constant(ctx, [0, 1]))
    limit = o.Reshape(o.Cast(ctx.input(2), to=ONNX_DTYPES["int64"]), int64_constant(ctx, [1]))
    iou = o.Reshape(_float32_input(ctx, 3), int64_constant(ctx, [1]))
    selected = o.NonMaxSuppression(boxes, scores, limit, iou)
    indices = o.Gather(selected, o.c(2), axis=1)
    o.Cast(indices, to=ONNX_DTYPES["int32"], out=ctx.output(0))


# -- refused ----------------------------------------------------------------------------------------------
for _name in ("SampleDistortedBoundingBox", "SampleDistortedBoundingBoxV2"):
    OPS.declare(_name, "A random crop box (refused: TF's random draw).") \
        .dynamic_input("inputs").output("begin").output("size").output("bboxes") \
        .refuse("its box is drawn by TF's random generator (Philox, with rejection sampling "
                "over area and aspect ratio), which ONNX cannot reproduce; an exact conversion "
                "is impossible")
