"""Convolutions: 2-D, depthwise, 3-D and transposed (the gradient with respect to the input),
and the windowing helpers pooling shares. Layouts are read from the formats (DESIGN decision
8): the data's (NHWC, NCHW, NDHWC, NCDHW) and the filter's (HWCN, DHWCN, ...); the 4-/5-element
attributes (strides, dilations, explicit_paddings) follow the data's layout."""

from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import FLOAT_TYPES, INDEX_TYPES
from tf2ir.opp.layouts import (
    TF_FILTER, check_window_attrs, data_layout, filter_layout, spatial_attrs,
)
from tf2ir.opp.shapes import partial_ints, window_output

OPS = OpSet("tf2ir.opp.conv")


# onnxruntime's CPU Conv/ConvTranspose/AveragePool/LRN kernels take float16 and float32 only.
ORT_CONV_TYPES = ("float16", "float32")


def _explicit_pads(node, data_format):
    if node.attrs["padding"] != "EXPLICIT":
        return None
    pads = list(node.attrs.get("explicit_paddings") or [])
    if len(pads) != 2 * len(data_format):
        raise ConversionError(f"explicit_paddings needs {2 * len(data_format)} values, got {len(pads)}")
    pairs = [pads[2 * i:2 * i + 2] for i in range(len(data_format))]
    return spatial_attrs(pairs, data_format)


def same_pads(sizes, kernel, strides, dilations):
    """TF's SAME padding as ONNX pads (begins then ends), the larger half at the end; None
    when a spatial size it depends on is unknown (with stride 1 it never depends on it)."""
    begins, ends = [], []
    for size, k, stride, dilation in zip(sizes, kernel, strides, dilations):
        effective = (k - 1) * dilation + 1
        if stride == 1:
            total = effective - 1
        elif size is None:
            return None
        else:
            total = max((-(-size // stride) - 1) * stride + effective - size, 0)
        begins.append(total // 2)
        ends.append(total - total // 2)
    return begins + ends


def onnx_pads(node, data_format, kernel):
    """ONNX pads/auto_pad attributes for a TF padding attribute (SAME, VALID, EXPLICIT)."""
    padding = node.attrs["padding"]
    rank = len(data_format)
    dilations = spatial_attrs(node.attrs.get("dilations") or [1] * rank, data_format)
    if padding == "SAME" and any(d != 1 for d in dilations):
        # onnxruntime rejects auto_pad SAME_* with dilations: give TF's SAME pads explicitly.
        x = node.inputs[0].desc
        spatial = spatial_attrs(x.shape, data_format) if x.shape is not None else [None] * (rank - 2)
        if None in kernel:
            raise ConversionError("SAME padding with dilations needs the filter's spatial shape")
        pads = same_pads(spatial, kernel, spatial_attrs(node.attrs["strides"], data_format), dilations)
        if pads is None:
            raise ConversionError("SAME padding with dilations and strides needs known spatial dims")
        return {"pads": pads}
    if padding == "SAME":
        return {"auto_pad": "SAME_UPPER"}
    if padding == "VALID":
        return {"auto_pad": "VALID"}
    if padding != "EXPLICIT":
        raise ConversionError(f"padding {padding!r} is not SAME, VALID or EXPLICIT")
    pairs = _explicit_pads(node, data_format)
    return {"pads": [p[0] for p in pairs] + [p[1] for p in pairs]}


def compute_input(ctx, index, dtype, supported=ORT_CONV_TYPES):
    """The node's input `index` in a dtype onnxruntime's kernel takes: float32 when `dtype` is
    not in `supported` (a constant input is cast here, at compile time)."""
    if dtype in supported:
        return ctx.input(index)
    value = ctx.const_input(index)
    if value is not None:
        return ctx.constant(np.asarray(value, np.float32), "as_float32")
    return ctx.op.Cast(ctx.input(index), to=ONNX_DTYPES["float32"])


def emit_spatial(ctx, data_format, op_type, inputs, dtype, supported=ORT_CONV_TYPES, output=None,
                 **attrs):
    """Emit the channels-first ONNX `op_type` for data laid out in `data_format`, writing
    `output` (the node's output 0 by default): for NHWC/NDHWC the first input is transposed to
    channels-first and the result back. Inputs must already be in the compute dtype
    (`compute_input`); the result is cast back to `dtype` when that is not a `supported` one."""
    output = output or ctx.output(0)
    cast_back = dtype not in supported
    channels_last = data_format.endswith("C")
    rank = len(data_format)
    x = inputs[0]
    if channels_last:
        x = ctx.op.Transpose(x, perm=[0, rank - 1] + list(range(1, rank - 1)))
    direct = not channels_last and not cast_back
    y = getattr(ctx.op, op_type)(x, *inputs[1:], out=output if direct else None, **attrs)
    if channels_last:
        y = ctx.op.Transpose(y, out=output if not cast_back else None,
                             perm=[0] + list(range(2, rank)) + [1])
    if cast_back:
        ctx.op.Cast(y, out=output, to=ONNX_DTYPES[dtype])


def windowed_shape(node, x, kernel, out_channels, data_format):
    """The output shape of a window op (convolution, pooling) over data `x` in `data_format`."""
    check_window_attrs(node, len(data_format))
    if x.shape is None:
        return None
    strides = spatial_attrs(node.attrs["strides"], data_format)
    dilations = spatial_attrs(node.attrs.get("dilations") or [1] * len(data_format), data_format)
    pairs = _explicit_pads(node, data_format) or [(0, 0)] * len(kernel)
    spatial = spatial_attrs(x.shape, data_format)
    out = [window_output(s, k, st, d, node.attrs["padding"], p)
           for s, k, st, d, p in zip(spatial, kernel, strides, dilations, pairs)]
    if data_format.endswith("C"):
        return (x.shape[0], *out, out_channels)
    return (x.shape[0], out_channels, *out)


# -- layouts ----------------------------------------------------------------------------------------
def conv_layouts(node, x_index: int = 0, f_index: int = 1) -> Tuple[str, str]:
    """(data layout, filter layout) of a convolution, from its inputs' formats."""
    rank = node.inputs[f_index].desc.rank or len(node.attrs["strides"])
    fmt = data_layout(node, x_index, rank)
    return fmt, filter_layout(node, f_index, len(fmt))


def to_tf_filter(filter_format: str) -> List[int]:
    """The permutation from a filter laid out in `filter_format` to TF's (spatial..., in, out)."""
    return [filter_format.index(c) for c in TF_FILTER[len(filter_format)]]


def tf_filter_shape(node, f_index: int, filter_format: str) -> Optional[List[Optional[int]]]:
    """The filter's shape in TF's order (spatial..., in, out); None when its rank is not the
    format's. A filter of unknown rank has the format's (TF's convolutions require it), every
    dim unknown."""
    shape = node.inputs[f_index].desc.shape
    if shape is None:
        return [None] * len(filter_format)
    if len(shape) != len(filter_format):
        return None
    return [shape[p] for p in to_tf_filter(filter_format)]


def onnx_filter(ctx, node, index=1, depthwise=False, transposed=False, dtype=None):
    """Input `index`, a filter in the layout its format says, in ONNX's (out, in, spatial...)
    layout - which is also ConvTranspose's (in, out, spatial...) - in the compute dtype for data
    of `dtype` (folded when constant), and the group count."""
    fmt, ffmt = conv_layouts(node, 2 if transposed else 0, index)
    to_tf = to_tf_filter(ffmt)
    fshape = tf_filter_shape(node, index, ffmt)
    x_shape = node.inputs[0].desc.shape if not transposed else None
    x_channels = x_shape[fmt.index("C")] if x_shape is not None else None
    rank = len(fshape)
    groups, new_shape = 1, None
    if depthwise:
        if None in fshape[2:]:
            raise ConversionError("a depthwise filter needs known channel and multiplier dims")
        groups = fshape[2]
        # an unknown spatial dim is copied by Reshape (0), which a run-time filter takes
        new_shape = [fshape[0] or 0, fshape[1] or 0, 1, fshape[2] * fshape[3]]
    elif x_channels is not None and fshape[-2]:
        groups = x_channels // fshape[-2]
    weight = _onnx_weight(ctx, node, index, dtype or node.inputs[0].desc.dtype, to_tf, new_shape)
    if not depthwise and not transposed and (x_channels is None or not fshape[-2]):
        # The data's channels are unknown until run time, and with them the group count
        # (channels / the filter's input channels): never group=1 by guess. A grouped
        # convolution is one convolution by the block-diagonal filter, built at run time.
        ctx.note(f"{node.name}: the data's channel count is unknown; its group count is "
                 f"taken at run time (a block-diagonal filter)")
        weight = _block_diagonal(ctx, weight, ctx.input(0), fmt.index("C"), rank,
                                 _compute_dtype(dtype or node.inputs[0].desc.dtype))
    return weight, groups


def _compute_dtype(dtype: str) -> str:
    return dtype if dtype in ORT_CONV_TYPES else "float32"


def _onnx_weight(ctx, node, index, dtype, to_tf, new_shape):
    """The filter at input `index` in ONNX's layout and the compute dtype for `dtype`."""
    rank = len(to_tf)
    perm = [rank - 1, rank - 2] + list(range(rank - 2))       # TF's layout → ONNX's
    w = ctx.const_input(index)
    if w is not None:
        w = np.asarray(w, np.float32) if dtype not in ORT_CONV_TYPES else w
        w = w.transpose(to_tf)
        if new_shape:
            w = w.reshape(new_shape)
        # a view of the IR weights, not a copy: the writer copies it out slice by slice
        return ctx.constant(w.transpose(perm), "filter_onnx")
    name = compute_input(ctx, index, dtype)
    if not new_shape:
        return ctx.op.Transpose(name, perm=[to_tf[p] for p in perm])
    if to_tf != sorted(to_tf):
        name = ctx.op.Transpose(name, perm=to_tf)
    name = ctx.op.Reshape(name, ctx.constant(np.array(new_shape, np.int64)))
    return ctx.op.Transpose(name, perm=perm)


def _block_diagonal(ctx, w, x, channel_axis, rank, dtype):
    """ONNX filter `w` (out, in/groups, spatial...) of a convolution over data `x` whose
    channel count (dim `channel_axis`) is known at run time only, as the group-1 filter
    (out, in, spatial...) of the same grouped convolution: w tiled along its input channels,
    zero where an output channel's group is not the input channel's."""
    i64 = lambda v: ctx.constant(np.array(v, np.int64))
    dim = lambda t, a: ctx.op.Gather(ctx.op.Shape(t), i64(a), axis=0)
    out, per_group_in, channels = dim(w, 0), dim(w, 1), dim(x, channel_axis)
    groups = ctx.op.Div(channels, per_group_in)
    repeats = ctx.op.Concat(i64([1]), ctx.op.Unsqueeze(groups, i64([0])), i64([1] * (rank - 2)),
                            axis=0)
    tiled = ctx.op.Tile(w, repeats)
    per_group_out = ctx.op.Div(out, groups)
    out_group = ctx.op.Div(ctx.op.Range(i64(0), out, i64(1)), per_group_out)
    in_group = ctx.op.Div(ctx.op.Range(i64(0), channels, i64(1)), per_group_in)
    same = ctx.op.Equal(ctx.op.Unsqueeze(out_group, i64([1])), ctx.op.Unsqueeze(in_group, i64([0])))
    mask = ctx.op.Cast(same, to=ONNX_DTYPES[dtype])
    mask = ctx.op.Unsqueeze(mask, i64(list(range(2, rank))))
    return ctx.op.Mul(tiled, mask)


# -- Conv2D, DepthwiseConv2D, Conv3D ------------------------------------------------------------------
def _lower_conv(ctx, node, depthwise=False):
    fmt, ffmt = conv_layouts(node)
    fshape = tf_filter_shape(node, 1, ffmt)
    if fshape is None:
        raise ConversionError(f"the filter must be a rank-{len(fmt)} tensor ({ffmt})")
    dtype = node.inputs[0].desc.dtype
    weight, groups = onnx_filter(ctx, node, 1, depthwise)
    inputs = [compute_input(ctx, 0, dtype), weight]
    if ctx.input(2):
        inputs.append(compute_input(ctx, 2, dtype))
    # A filter of unknown spatial shape (a run-time filter): ONNX Conv reads kernel_shape from W.
    kernel = list(fshape[:-2])
    known = None not in kernel
    emit_spatial(ctx, fmt, "Conv", inputs, dtype, strides=spatial_attrs(node.attrs["strides"], fmt),
                 dilations=spatial_attrs(node.attrs["dilations"], fmt),
                 group=groups if groups != 1 else None, kernel_shape=kernel if known else None,
                 **onnx_pads(node, fmt, kernel))


def _infer_conv(node, depthwise=False):
    x = node.inputs[0].desc
    fmt, ffmt = conv_layouts(node)
    f = tf_filter_shape(node, 1, ffmt)
    if f is None:
        raise ConversionError(f"the filter must be a rank-{len(fmt)} tensor ({ffmt})")
    if depthwise:
        out_channels = None if None in f[-2:] else f[-2] * f[-1]
    else:
        out_channels = f[-1]
    _check_channels(x, fmt, f, depthwise)
    shape = windowed_shape(node, x, f[:-2], out_channels, fmt)
    return [TensorDesc(x.dtype, shape, fmt, fmt)]


def _check_channels(x, fmt, f, depthwise) -> None:
    """The data's channels must be the filter's input channels (depthwise), or a multiple of
    them whose groups divide the output channels (grouped convolution)."""
    channels = None if x.shape is None or len(x.shape) != len(fmt) else x.shape[fmt.index("C")]
    f_in, f_out = f[-2], f[-1]
    if channels is None or f_in is None:
        return
    if depthwise:
        if channels != f_in:
            raise ConversionError(f"the data has {channels} channels, the depthwise filter "
                                  f"{list(f)} takes {f_in}")
        return
    if f_in == 0 or channels % f_in or (f_out is not None and f_out % (channels // f_in)):
        raise ConversionError(f"the data has {channels} channels, which the filter {list(f)} "
                              f"(input channels {f_in}, output channels {f_out}) cannot take")


def _conv_common(proto, rank):
    return (proto.input("x", FLOAT_TYPES).input("filter", FLOAT_TYPES)
            .optional_input("bias", FLOAT_TYPES).output("y")
            .attr("strides", "ints").attr("padding", "str")
            .attr("explicit_paddings", "ints", []).attr("dilations", "ints", [1] * rank))


conv2d = _conv_common(OPS.declare("Conv2D", "2-D convolution; data NHWC or NCHW, filter HWCN, as "
                                            "their formats say."), 4)
conv2d.infer(_infer_conv)
conv2d.lower(_lower_conv)

depthwise = _conv_common(OPS.declare("DepthwiseConv2D", "Depthwise 2-D convolution; filter HWCN "
                                                         "with N the channel multiplier."), 4)


@depthwise.infer
def _infer_depthwise(node):
    return _infer_conv(node, depthwise=True)


@depthwise.lower
def _lower_depthwise(ctx, node):
    _lower_conv(ctx, node, depthwise=True)


conv3d = _conv_common(OPS.declare("Conv3D", "3-D convolution; data NDHWC or NCDHW, filter DHWCN, "
                                            "as their formats say."), 5)
conv3d.infer(_infer_conv)
conv3d.lower(_lower_conv)


# -- transposed convolution (the gradient of a convolution with respect to its input) ------------
conv_transpose = (OPS.declare(
    "ConvBackpropInput", "Transposed 2-D/3-D convolution: the gradient of Conv2D/Conv3D with respect "
    "to its input of shape `input_sizes` (in the data's layout); filter HWCN/DHWCN as for Conv2D.")
    .input("input_sizes", INDEX_TYPES).input("filter", FLOAT_TYPES).input("x", FLOAT_TYPES)
    .output("y").attr("strides", "ints").attr("padding", "str")
    .attr("explicit_paddings", "ints", []).attr("dilations", "ints", [1, 1, 1, 1]))


def _transpose_geometry(node):
    """(layout, output sizes, kernel, strides, dilations, TF filter shape) of a
    ConvBackpropInput node."""
    fmt, ffmt = conv_layouts(node, 2, 1)
    sizes = partial_ints(node.inputs[0], len(fmt))
    if len(sizes) != len(fmt):
        raise ConversionError(f"input_sizes has {len(sizes)} values; {fmt} needs {len(fmt)}")
    fshape = tf_filter_shape(node, 1, ffmt)
    if fshape is None or None in fshape[:-2]:
        raise ConversionError(f"the filter must be a rank-{len(fmt)} tensor with a known spatial shape")
    check_window_attrs(node, len(fmt))
    strides = spatial_attrs(node.attrs["strides"], fmt)
    dilations = node.attrs["dilations"] or [1] * len(fmt)
    if len(dilations) != len(fmt) and set(dilations) == {1}:
        dilations = [1] * len(fmt)
    return fmt, sizes, fshape, strides, spatial_attrs(dilations, fmt)


@conv_transpose.infer
def _infer_conv_transpose(node):
    x = node.inputs[2].desc
    fmt, sizes, fshape, _, _ = _transpose_geometry(node)
    channel = fmt.index("C")
    if sizes[channel] is None:
        sizes[channel] = fshape[-2]
    if sizes[0] is None and x.shape is not None:
        sizes[0] = x.shape[0]
    return [TensorDesc(x.dtype, tuple(sizes), fmt, fmt)]


@conv_transpose.lower
def _lower_conv_transpose(ctx, node):
    fmt, sizes, fshape, strides, dilations = _transpose_geometry(node)
    kernel = fshape[:-2]
    out_spatial = spatial_attrs(sizes, fmt)
    x = node.inputs[2].desc
    in_spatial = spatial_attrs(x.shape, fmt) if x.shape is not None else [None] * len(kernel)
    padding = node.attrs["padding"]
    if padding not in ("SAME", "VALID", "EXPLICIT"):
        raise ConversionError(f"padding {padding!r} is not SAME, VALID or EXPLICIT")
    if None in out_spatial or None in in_spatial:
        _lower_runtime_conv_transpose(ctx, node, fmt, kernel, strides, dilations, out_spatial)
        return
    if padding == "SAME":
        pads = same_pads(out_spatial, kernel, strides, dilations)
    elif padding == "VALID":
        pads = [0] * (2 * len(kernel))
    else:
        pairs = _explicit_pads(node, fmt)
        pads = [p[0] for p in pairs] + [p[1] for p in pairs]
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


def _lower_runtime_conv_transpose(ctx, node, fmt, kernel, strides, dilations, out_spatial):
    """Output spatial sizes known only at run time (input_sizes a tensor, or the input's
    spatial dims unknown): ONNX ConvTranspose without padding gives the full output, of which
    TF's output is the window [before, before + out) per spatial dim - the rows past the full
    output (which no input reaches) are zeros. `before` is TF's padding before: SAME's half of
    its total (computed from the run-time size when a stride is above 1), 0 for VALID."""
    dtype, n = node.inputs[2].desc.dtype, len(kernel)
    first = 1 if fmt.endswith("C") else 2                     # the first spatial dim
    axes = list(range(first, first + n))
    weight, _ = onnx_filter(ctx, node, 1, dtype=dtype, transposed=True)
    full = ctx.fresh("full")
    emit_spatial(ctx, fmt, "ConvTranspose", [compute_input(ctx, 2, dtype), weight], dtype,
                 output=full, kernel_shape=kernel, strides=strides, dilations=dilations)

    def ints(values):
        return ctx.constant(np.array(values, np.int64))

    if None in out_spatial:
        sizes = ctx.input(0)
        if ctx.input_desc(0).dtype != "int64":
            sizes = ctx.op.Cast(sizes, to=ONNX_DTYPES["int64"])
        out = ctx.op.Gather(sizes, ints(axes), axis=0)
    else:
        out = ints(out_spatial)
    effective = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    padding = node.attrs["padding"]
    if padding == "EXPLICIT":
        before = ints([p[0] for p in _explicit_pads(node, fmt)])
    elif padding == "VALID":
        before = ints([0] * n)
    elif None not in out_spatial or all(st == 1 for st in strides):
        before = ints(same_pads(out_spatial if None not in out_spatial else [None] * n, kernel,
                                strides, dilations)[:n])
    else:   # SAME: total = max((ceil(out / s) - 1) * s + effective - out, 0)
        step = ints(strides)
        blocks = ctx.op.Div(ctx.op.Add(out, ints([st - 1 for st in strides])), step)
        span = ctx.op.Mul(ctx.op.Sub(blocks, ints(1)), step)
        total = ctx.op.Sub(ctx.op.Add(span, ints(effective)), out)
        total = ctx.op.Max(total, ints(0))
        before = ctx.op.Div(total, ints(2))
    stop = ctx.op.Add(before, out)
    window = ctx.op.Slice(full, before, stop, ints(axes))
    reached = ctx.op.Gather(ctx.op.Shape(full), ints(axes), axis=0)
    missing = ctx.op.Max(ctx.op.Sub(stop, reached), ints(0))
    rank = len(fmt)
    pads = ctx.op.Concat(ints([0] * (rank + first)), missing, ints([0] * (rank - first - n)),
                         axis=0)
    ctx.op.Pad(window, pads, out=ctx.output(0))
