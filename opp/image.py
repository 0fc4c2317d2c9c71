"""Image and convolution ops beyond the basics: transposed and 3-D convolutions, 3-D pooling, batch normalization, resizing, non-max suppression, local response normalization."""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import FLOAT_TYPES, INDEX_TYPES, NUMBER_TYPES
from tf2ir.opp.common import const_ints, same_as_input, spatial_attrs
from tf2ir.opp.nn import _infer_conv, _lower_conv, compute_input, emit_spatial, onnx_filter, same_pads

OPS = OpSet("tf2ir.opp.image")

FLOAT32 = ONNX_DTYPES["float32"]


def partial_ints(value, count: int) -> List[Optional[int]]:
    """The entries of a 1-D integer tensor that are known at conversion time (None for the
    others): a constant, or a Pack of scalars some of which are constants (what Keras builds
    for a transposed convolution's output shape with an unknown batch size)."""
    if value is None:
        return [None] * count
    if value.const_value is not None:
        return [int(v) for v in np.asarray(value.const_value).reshape(-1)]
    producer = value.producer
    if producer is not None and producer.op_type == "Pack" and producer.attrs.get("axis", 0) == 0 \
            and len(producer.inputs) == count:
        known = [p.const_value for p in producer.inputs]
        return [None if v is None or np.asarray(v).size != 1 else int(np.asarray(v).reshape(-1)[0])
                for v in known]
    return [None] * count


# -- 3-D convolution ------------------------------------------------------------------------------
conv3d = (OPS.declare("Conv3D", "3-D convolution; filter DHWCN (TF layout), data NDHWC or NCDHW.")
          .input("x", FLOAT_TYPES).input("filter", FLOAT_TYPES).optional_input("bias", FLOAT_TYPES)
          .output("y").attr("strides", "ints").attr("padding", "str")
          .attr("explicit_paddings", "ints", []).attr("dilations", "ints", [1, 1, 1, 1, 1])
          .attr("data_format", "str", "NDHWC"))
conv3d.infer(lambda node: _infer_conv(node))
conv3d.lower(lambda ctx, node: _lower_conv(ctx, node))


# -- transposed convolution (the gradient of a convolution with respect to its input) ------------
conv_transpose = (OPS.declare(
    "ConvBackpropInput", "Transposed 2-D/3-D convolution: the gradient of Conv2D/Conv3D with respect "
    "to its input of shape `input_sizes`; filter (spatial..., in, out) in TF layout.")
    .input("input_sizes", INDEX_TYPES).input("filter", FLOAT_TYPES).input("x", FLOAT_TYPES)
    .output("y").attr("strides", "ints").attr("padding", "str")
    .attr("explicit_paddings", "ints", []).attr("dilations", "ints", [1, 1, 1, 1])
    .attr("data_format", "str", "NHWC"))


def _transpose_geometry(node):
    """(output spatial sizes, kernel, strides, dilations) of a ConvBackpropInput node."""
    fmt = node.attrs["data_format"]
    sizes = partial_ints(node.inputs[0], len(fmt))
    if len(sizes) != len(fmt):
        raise ConversionError(f"input_sizes has {len(sizes)} values; {fmt} needs {len(fmt)}")
    fshape = node.inputs[1].desc.shape
    if fshape is None or len(fshape) != len(fmt) or None in fshape[:-2]:
        raise ConversionError(f"the filter must be a rank-{len(fmt)} tensor with a known spatial shape")
    strides = spatial_attrs(node.attrs["strides"], fmt)
    dilations = spatial_attrs(node.attrs["dilations"] or [1] * len(fmt), fmt)
    return sizes, list(fshape[:-2]), strides, dilations


@conv_transpose.infer
def _infer_conv_transpose(node):
    fmt = node.attrs["data_format"]
    x, f = node.inputs[2].desc, node.inputs[1].desc
    sizes, _, _, _ = _transpose_geometry(node)
    channel = fmt.index("C")
    if sizes[channel] is None:
        sizes[channel] = f.shape[-2]
    if sizes[0] is None and x.shape is not None:
        sizes[0] = x.shape[0]
    return [TensorDesc(x.dtype, tuple(sizes), fmt, fmt)]


@conv_transpose.lower
def _lower_conv_transpose(ctx, node):
    fmt = node.attrs["data_format"]
    sizes, kernel, strides, dilations = _transpose_geometry(node)
    out_spatial = spatial_attrs(sizes, fmt)
    x = node.inputs[2].desc
    in_spatial = spatial_attrs(x.shape, fmt) if x.shape is not None else [None] * len(kernel)
    if None in out_spatial or None in in_spatial:
        raise ConversionError("a transposed convolution needs known spatial sizes "
                              "(input_sizes' spatial entries and the input's spatial dims)")
    padding = node.attrs["padding"]
    if padding == "SAME":
        pads = same_pads(out_spatial, kernel, strides, dilations)
    elif padding == "VALID":
        pads = [0] * (2 * len(kernel))
    elif padding == "EXPLICIT":
        explicit = node.attrs["explicit_paddings"]
        if len(explicit) != 2 * len(fmt):
            raise ConversionError(f"explicit_paddings needs {2 * len(fmt)} values, got {len(explicit)}")
        pairs = spatial_attrs([explicit[2 * i:2 * i + 2] for i in range(len(fmt))], fmt)
        pads = [p[0] for p in pairs] + [p[1] for p in pairs]
    else:
        raise ConversionError(f"padding {padding!r} is not SAME, VALID or EXPLICIT")
    # The forward convolution of an `out`-sized input gives `in` outputs; the `extra` input
    # rows its last window did not reach become ONNX's output_padding.
    n = len(kernel)
    extra = []
    for i, (out, inp, k, s, d) in enumerate(zip(out_spatial, in_spatial, kernel, strides, dilations)):
        span = out + pads[i] + pads[n + i] - (k - 1) * d - 1
        if span < 0 or span // s + 1 != inp:
            raise ConversionError(f"input_sizes {sizes} do not fit an input of spatial shape "
                                  f"{in_spatial} with this padding and strides")
        extra.append(span % s)
    dtype = x.dtype
    weight, _ = onnx_filter(ctx, node, 1, dtype=dtype, transposed=True)
    emit_spatial(ctx, fmt, "ConvTranspose", [compute_input(ctx, 2, dtype), weight], dtype,
                 kernel_shape=kernel, strides=strides, dilations=dilations, pads=pads,
                 output_padding=extra if any(extra) else None)


# -- batch normalization ----------------------------------------------------------------------------
def _batch_norm(op_type: str, outputs: int):
    proto = (OPS.declare(op_type, "Batch normalization with the channel's scale, offset, mean and "
                                   "variance; is_training computes batch statistics instead.")
             .input("x", FLOAT_TYPES).input("scale", FLOAT_TYPES).input("offset", FLOAT_TYPES)
             .input("mean", FLOAT_TYPES).input("variance", FLOAT_TYPES).output("y")
             .output("batch_mean").output("batch_variance")
             .output("reserve_space_1").output("reserve_space_2"))
    if outputs == 6:
        proto.output("reserve_space_3")
    proto.attr("epsilon", "float", 1e-4).attr("exponential_avg_factor", "float", 1.0)
    proto.attr("data_format", "str", "NHWC").attr("is_training", "bool", True)
    proto.infer(_infer_batch_norm)
    proto.lower(_lower_batch_norm)
    return proto


def _infer_batch_norm(node):
    x, fmt = node.inputs[0].desc, node.attrs["data_format"]
    if fmt not in ("NHWC", "NCHW", "NDHWC", "NCDHW"):
        raise ConversionError(f"data_format {fmt} is not NHWC, NCHW, NDHWC or NCDHW")
    if x.rank is not None and x.rank != len(fmt):
        raise ConversionError(f"the input must have rank {len(fmt)} for data_format {fmt}")
    param = node.inputs[1].desc.dtype
    channels = None if x.shape is None else x.shape[fmt.index("C")]
    if channels is None:
        channels = (node.inputs[1].desc.shape or (None,))[0]
    stat = TensorDesc(param, (channels,))
    descs = [x.copy()] + [stat] * 4
    if len(node.outputs) == 6:
        descs.append(TensorDesc(param, (0,)))
    return descs


def _lower_batch_norm(ctx, node):
    x, fmt = node.inputs[0].desc, node.attrs["data_format"]
    dtype, param = x.dtype, node.inputs[1].desc.dtype
    if param not in ("float32", "float64"):
        raise ConversionError(f"scale/offset/mean/variance of dtype {param} are not supported")
    if x.rank is None:
        raise ConversionError("the input's rank must be known")
    rank, channel = len(fmt), fmt.index("C")
    np_param = np.dtype(param)
    eps = node.attrs["epsilon"]
    # The per-channel vectors broadcast against x: (C,) for channels-last, (C, 1, ...) else.
    param_shape = ctx.constant(np.array([-1] + [1] * (rank - 1 - channel), np.int64))

    def to_x(name):
        return name if channel == rank - 1 else ctx.emit("Reshape", [name, param_shape])[0]

    xs = ctx.input(0)
    if dtype != param:
        xs = ctx.emit("Cast", [xs], to=ONNX_DTYPES[param])[0]
    values = [ctx.const_input(i) for i in range(1, 5)]
    if not node.attrs["is_training"]:
        if all(v is not None for v in values):
            scale, offset, mean, var = (np.asarray(v, np_param) for v in values)
            a = scale / np.sqrt(var + np_param.type(eps))
            b = offset - mean * a
            if channel != rank - 1:
                a, b = (v.reshape((-1,) + (1,) * (rank - 1 - channel)) for v in (a, b))
            mul, add = ctx.constant(a, "bn_scale"), ctx.constant(b, "bn_offset")
        else:
            shifted = ctx.emit("Add", [ctx.input(4), ctx.constant(np.array(eps, np_param))])[0]
            std = ctx.emit("Sqrt", [shifted])[0]
            a = ctx.emit("Div", [ctx.input(1), std])[0]
            b = ctx.emit("Sub", [ctx.input(2), ctx.emit("Mul", [ctx.input(3), a])[0]])[0]
            mul, add = to_x(a), to_x(b)
        batch_mean, batch_var, saved_mean, saved_var = ctx.input(3), ctx.input(4), ctx.input(3), ctx.input(4)
        normalized = ctx.emit("Add", [ctx.emit("Mul", [xs, mul])[0], add])[0]
    else:
        axes = ctx.constant(np.array([i for i in range(rank) if i != channel], np.int64))
        mean = ctx.emit("ReduceMean", [xs, axes], keepdims=1)[0]
        centered = ctx.emit("Sub", [xs, mean])[0]
        var = ctx.emit("ReduceMean", [ctx.emit("Mul", [centered, centered])[0], axes], keepdims=1)[0]
        std = ctx.emit("Sqrt", [ctx.emit("Add", [var, ctx.constant(np.array(eps, np_param))])[0]])[0]
        scaled = ctx.emit("Div", [centered, std])[0]
        normalized = ctx.emit("Add", [ctx.emit("Mul", [scaled, to_x(ctx.input(1))])[0],
                                      to_x(ctx.input(2))])[0]
        flat = ctx.constant(np.array([-1], np.int64))
        saved_mean = ctx.emit("Reshape", [mean, flat])[0]
        saved_var = ctx.emit("Reshape", [var, flat])[0]
        # TF reports the unbiased (Bessel-corrected) variance, averaged into the running one.
        shape = ctx.emit("Shape", [xs])[0]
        count = ctx.emit("ReduceProd", [ctx.emit("Gather", [shape, axes], axis=0)[0]], keepdims=0)[0]
        count = ctx.emit("Cast", [count], to=ONNX_DTYPES[param])[0]
        one = ctx.constant(np.array(1, np_param))
        bessel = ctx.emit("Div", [count, ctx.emit("Max", [ctx.emit("Sub", [count, one])[0], one])[0]])[0]
        batch_mean, batch_var = saved_mean, ctx.emit("Mul", [saved_var, bessel])[0]
        factor = node.attrs["exponential_avg_factor"]
        if factor != 1.0:
            if any(node.inputs[i].desc.shape == (0,) for i in (3, 4)):
                raise ConversionError("exponential_avg_factor != 1 needs the running mean and variance")
            keep, new = ctx.constant(np.array(1 - factor, np_param)), ctx.constant(np.array(factor, np_param))
            batch_mean, batch_var = (
                ctx.emit("Add", [ctx.emit("Mul", [ctx.input(i), keep])[0], ctx.emit("Mul", [v, new])[0]])[0]
                for i, v in ((3, batch_mean), (4, batch_var)))
    if dtype != param:
        ctx.emit("Cast", [normalized], [ctx.output(0)], to=ONNX_DTYPES[dtype])
    else:
        ctx.emit("Identity", [normalized], [ctx.output(0)])
    for index, name in enumerate([batch_mean, batch_var, saved_mean, saved_var], start=1):
        ctx.emit("Identity", [name], [ctx.output(index)])
    if len(node.outputs) == 6:
        ctx.emit("Identity", [ctx.constant(np.zeros(0, np_param), "reserve")], [ctx.output(5)])


_batch_norm("FusedBatchNorm", 5)
_batch_norm("FusedBatchNormV3", 6)


# -- local response normalization ---------------------------------------------------------------------
lrn = (OPS.declare("LRN", "Local response normalization over the last (channel) axis: "
                           "x / (bias + alpha * sum of squares over 2*depth_radius+1 channels)^beta.")
       .input("x", FLOAT_TYPES).output("y").attr("depth_radius", "int", 5).attr("bias", "float", 1.0)
       .attr("alpha", "float", 1.0).attr("beta", "float", 0.5))


@lrn.infer
def _infer_lrn(node):
    if node.inputs[0].desc.rank not in (None, 4):
        raise ConversionError("LRN needs a rank-4 input")
    return same_as_input(node)


@lrn.lower
def _lower_lrn(ctx, node):
    size = 2 * node.attrs["depth_radius"] + 1
    dtype = node.inputs[0].desc.dtype
    # ONNX divides alpha by the window size; TF does not.
    emit_spatial(ctx, "NHWC", "LRN", [compute_input(ctx, 0, dtype)], dtype, size=size,
                 alpha=node.attrs["alpha"] * size, beta=node.attrs["beta"], bias=node.attrs["bias"])


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
        raise ConversionError("images must be a rank-4 NHWC tensor")
    if node.attrs["align_corners"] and node.attrs["half_pixel_centers"]:
        raise ConversionError("align_corners and half_pixel_centers cannot both be true")
    size = partial_ints(node.inputs[1], 2)
    dtype = x.dtype if node.op_type == "ResizeNearestNeighbor" else "float32"
    shape = None if x.shape is None else (x.shape[0], size[0], size[1], x.shape[3])
    return [TensorDesc(dtype, shape, "NHWC", "NHWC")]


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
    x = node.inputs[0].desc
    mode = RESIZE_MODES[node.op_type]
    size = ctx.const_input(1)
    if size is not None:
        sizes = ctx.constant(np.asarray(size, np.int64).reshape(2), "sizes")
    else:
        sizes = ctx.emit("Cast", [ctx.input(1)], to=ONNX_DTYPES["int64"])[0]
    images, compute = ctx.input(0), x.dtype
    if mode != "nearest":
        compute = "float32"       # TF's bilinear and bicubic kernels give float32
    elif x.dtype in ("int16", "uint16"):
        compute = "int32"         # exact, and onnxruntime has an int32 kernel
    elif x.dtype not in ORT_RESIZE_TYPES:
        _lower_nearest_by_gather(ctx, node, sizes)
        return
    if compute != x.dtype:
        images = ctx.emit("Cast", [images], to=ONNX_DTYPES[compute])[0]
    out_dtype = node.outputs[0].desc.dtype
    attrs = _resize_attrs(node)
    resized = ctx.output(0) if out_dtype == compute else ctx.fresh("resized")
    if mode == "cubic":
        _emit_cubic(ctx, images, sizes, resized, attrs)
    else:
        ctx.emit("Resize", [images, "", "", sizes], [resized], axes=[1, 2], **attrs)
    if resized != ctx.output(0):
        ctx.emit("Cast", [resized], [ctx.output(0)], to=ONNX_DTYPES[out_dtype])


def _emit_cubic(ctx, images, sizes, output, attrs):
    """onnxruntime's cubic kernel cannot downsample channels-last data, and its transpose
    optimizer moves a lone NHWC->NCHW Transpose back through Resize: resize (N*C, 1, H, W)
    (or the (H, W) plane of a single-image, single-channel input)."""
    shape = ctx.node.inputs[0].desc.shape
    if shape is not None and shape[0] == 1 and shape[3] == 1:
        # A single plane: onnxruntime then refuses 4-D downsampling it knows of at load time.
        plane = ctx.emit("Reshape", [images, ctx.emit("Shape", [images], start=1, end=3)[0]])[0]
        resized = ctx.emit("Resize", [plane, "", "", sizes], **attrs)[0]
        one = ctx.constant(np.array([1], np.int64))
        ctx.emit("Reshape", [resized, ctx.emit("Concat", [one, sizes, one], axis=0)[0]], [output])
        return
    nchw = ctx.emit("Transpose", [images], perm=[0, 3, 1, 2])[0]
    shape = ctx.emit("Shape", [nchw])[0]
    minus_one_one = ctx.constant(np.array([-1, 1], np.int64))
    flat = ctx.emit("Reshape", [nchw, ctx.emit("Concat", [minus_one_one, ctx.emit(
        "Slice", [shape, ctx.constant(np.array([2], np.int64)), ctx.constant(np.array([4], np.int64))])[0]],
        axis=0)[0]])[0]
    flat_sizes = ctx.emit("Concat", [ctx.emit("Shape", [flat], start=0, end=2)[0], sizes], axis=0)[0]
    resized = ctx.emit("Resize", [flat, "", "", flat_sizes], **attrs)[0]
    batch_channels = ctx.emit("Slice", [shape, ctx.constant(np.array([0], np.int64)),
                                        ctx.constant(np.array([2], np.int64))])[0]
    unflat = ctx.emit("Reshape", [resized, ctx.emit("Concat", [batch_channels, sizes], axis=0)[0]])[0]
    ctx.emit("Transpose", [unflat], [output], perm=[0, 2, 3, 1])


def _lower_nearest_by_gather(ctx, node, sizes):
    """Nearest resizing of a dtype onnxruntime's Resize lacks: resize a map of flat source
    indices (int32), then gather the pixels it names."""
    shape = ctx.emit("Shape", [ctx.input(0)])[0]
    dims = [ctx.emit("Gather", [shape, ctx.constant(np.array([i], np.int64))], axis=0)[0] for i in range(4)]
    hw = ctx.emit("Mul", [dims[1], dims[2]])[0]
    flat_hw = ctx.emit("Reshape", [hw, ctx.constant(np.array([], np.int64))])[0]
    index = ctx.emit("Range", [ctx.constant(np.array(0, np.int64)), flat_hw,
                               ctx.constant(np.array(1, np.int64))])[0]
    index = ctx.emit("Cast", [index], to=ONNX_DTYPES["int32"])[0]
    one = ctx.constant(np.array([1], np.int64))
    index = ctx.emit("Reshape", [index, ctx.emit("Concat", [one, dims[1], dims[2], one], axis=0)[0]])[0]
    picked = ctx.emit("Resize", [index, "", "", sizes], axes=[1, 2], **_resize_attrs(node))[0]
    picked = ctx.emit("Reshape", [picked, ctx.constant(np.array([-1], np.int64))])[0]
    minus_one = ctx.constant(np.array([-1], np.int64))
    rows = ctx.emit("Reshape", [ctx.input(0), ctx.emit("Concat", [dims[0], minus_one, dims[3]], axis=0)[0]])[0]
    gathered = ctx.emit("Gather", [rows, picked], axis=1)[0]
    out_shape = ctx.emit("Concat", [dims[0], sizes, dims[3]], axis=0)[0]
    ctx.emit("Reshape", [gathered, out_shape], [ctx.output(0)])


_resize("ResizeBilinear", "Bilinear resizing of NHWC images to `size`; float32 output.")
_resize("ResizeNearestNeighbor", "Nearest-neighbour resizing of NHWC images to `size`.")
_resize("ResizeBicubic", "Bicubic resizing of NHWC images to `size`; float32 output.")


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
    boxes = ctx.emit("Unsqueeze", [as_float[0], unsqueeze0])[0]
    scores = ctx.emit("Unsqueeze", [as_float[1], ctx.constant(np.array([0, 1], np.int64))])[0]
    one = ctx.constant(np.array([1], np.int64))
    limit = ctx.emit("Reshape", [ctx.emit("Cast", [ctx.input(2)], to=ONNX_DTYPES["int64"])[0], one])[0]
    iou = ctx.emit("Reshape", [as_float[3], one])[0]
    score_threshold = ctx.emit("Reshape", [as_float[4], one])[0]
    selected = ctx.emit("NonMaxSuppression", [boxes, scores, limit, iou, score_threshold])[0]
    indices = ctx.emit("Gather", [selected, ctx.constant(np.array(2, np.int64))], axis=1)[0]
    count = ctx.emit("Shape", [indices])[0]
    pad = node.attrs["pad_to_max_output_size"]
    if pad:
        # zeros after the selected ones up to max_output_size (TF pads with index 0, score 0)
        missing = ctx.emit("Sub", [limit, count])[0]
        missing = ctx.emit("Max", [missing, ctx.constant(np.array([0], np.int64))])[0]
        pads = ctx.emit("Concat", [ctx.constant(np.array([0], np.int64)), missing], axis=0)[0]
    outputs = iter(range(1, len(node.outputs)))

    def finish(name, dtype, output):
        if pad:
            name = ctx.emit("Pad", [name, pads])[0]
        ctx.emit("Cast", [name], [output], to=ONNX_DTYPES[dtype])

    finish(indices, "int32", ctx.output(0))
    if node.attrs["selected_scores"]:
        picked = ctx.emit("Gather", [ctx.input(1), indices], axis=0)[0]
        finish(picked, node.inputs[1].desc.dtype, ctx.output(next(outputs)))
    if node.attrs["num_extra"] > (1 if node.attrs["selected_scores"] else 0):
        valid = ctx.emit("Reshape", [count, ctx.constant(np.array([], np.int64))])[0]
        ctx.emit("Cast", [valid], [ctx.output(next(outputs))], to=ONNX_DTYPES["int32"])
