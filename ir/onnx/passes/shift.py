"""Shift folding on the lowered ONNX graph (the second half of the `scale` pass): an
Add/Sub of a constant per-channel (or scalar) shift t, read only by Convs without padding
or by Gemms (directly or through one Transpose), goes into their biases: W (x + t) + b =
W x + (b + W t). With padding it cannot: the padded zeros would become -t.

A per-channel shift of a 4-D float32 value that a Conv, Concat or pool writes, which no Conv
takes into its bias (DenseNet's pre-activation batch norm, Concat -> Add(t) -> Relu -> Conv,
once its scale went into the Conv), is written as BatchNormalization(x; scale 1, bias t,
mean 0, variance 1, epsilon 0), which computes x + t exactly: onnxruntime runs it in its
blocked NCHWc layout as a depthwise convolution with the Relu fused, where the Add made it
reorder the tensor to NCHW and back around the Add and the Relu (DenseNet121 at one thread:
about 9% less time)."""

from __future__ import annotations

from typing import Optional

import numpy as np

from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode
from tf2ir.ir.onnx.passes.channels import ChannelFacts, Scale, broadcast_fits, channel_scale


def shift_absorbed(g: OnnxGraph, node: OnnxNode, v: str, t: np.ndarray,
                   rank: int) -> Optional[np.ndarray]:
    """The bias that a Conv without padding or a Gemm reading `v` = x + t (t per
    channel) needs so that it may read x instead; None where it cannot. A padded
    Conv cannot: its zero padding would become -t."""
    if not node.standard or node.input[0] != v or node.input.count(v) != 1 \
            or len(node.input) < 2:
        return None
    w = g.const(node.input[1])
    b = g.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if w is None or w.dtype != t.dtype or (len(node.input) > 2 and node.input[2] and b is None):
        return None
    if node.op_type == "Conv":
        group = node.attr("group", 1)
        pads = node.attr("pads", None) or []
        if w.ndim != rank or w.shape[1] * group != t.size or any(pads) \
                or node.attr("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID", "NOTSET",
                                                            "VALID"):
            return None
        grouped = w.reshape((group, w.shape[0] // group, w.shape[1], -1))
        extra = np.einsum("gock,gc->go", grouped, t.reshape(group, -1)).reshape(-1)
        return (extra if b is None else b + extra).astype(w.dtype)
    if node.op_type == "Gemm":
        trans_b = node.attr("transB", 0)
        k = w.shape[1] if trans_b else w.shape[0]
        if node.attr("transA", 0) or w.ndim != 2 or rank != 2 or k != t.size:
            return None
        extra = node.attr("alpha", 1.0) * (t @ (w.T if trans_b else w))
        if b is not None:
            extra = node.attr("beta", 1.0) * b + extra
        return extra.astype(w.dtype)
    return None


_BLOCKED = {"Conv", "Concat", "MaxPool", "AveragePool"}   # NCHWc producers in onnxruntime


def shift_as_batch_norm(g: OnnxGraph, facts: ChannelFacts, add: OnnxNode) -> bool:
    """Turn Add(x, t) (or Sub(x, t)), t per channel of a rank-4 float32 `x` that a Conv,
    Concat or pool produces, into the BatchNormalization that computes it; whether it did."""
    if len(add.input) != 2 or len(add.output) != 1:
        return False
    for pos in ((1,) if add.op_type == "Sub" else (1, 0)):
        x, t = add.input[1 - pos], g.const(add.input[pos])
        source = g.producer(x)
        if t is None or t.dtype != np.float32 or source is None or not source.standard \
                or source.op_type not in _BLOCKED or facts.rank(x) != 4:
            continue
        shift = channel_scale(t, 4)
        if shift is None or shift.axis not in (None, 1):
            continue
        try:
            size = facts.channels(x, 1)
        except RecursionError:
            size = None
        if size is None or shift.s.size not in (1, size) or not broadcast_fits((t,), size=size):
            continue
        vector = np.broadcast_to(-shift.s if add.op_type == "Sub" else shift.s, (size,))
        ones, zeros = np.ones(size, np.float32), np.zeros(size, np.float32)
        names = [g.add_initializer(ones, "bn_scale"),
                 g.add_initializer(np.ascontiguousarray(vector, np.float32), "bn_shift"),
                 g.add_initializer(zeros, "bn_mean"), g.add_initializer(ones, "bn_variance")]
        g.set_op(add, "BatchNormalization", [x] + names, attrs={"epsilon": 0.0})
        return True
    return False


def fold_shift(g: OnnxGraph, facts: ChannelFacts, add: OnnxNode) -> bool:
    """Add(x, t) with t per channel (axis 1), read only by unpadded Convs or Gemms (or by
    one Transpose they alone read), goes into their biases; whether it went."""
    if len(add.input) != 2 or len(add.output) != 1:
        return False
    for pos in ((1,) if add.op_type == "Sub" else (1, 0)):
        x, t = add.input[1 - pos], g.const(add.input[pos])
        y = add.output[0]
        readers = g.users(y)
        if t is None or g.const(x) is not None or not readers or g.is_pinned(y):
            continue
        if add.op_type == "Sub":
            t = -t
        rank = facts.rank(x)
        if not rank:
            continue
        shift = channel_scale(t, rank)
        if shift is None:
            continue
        transpose = readers[0] if len(readers) == 1 and readers[0].op_type == "Transpose" \
            and readers[0].standard else None
        if transpose is not None:       # x + t -> Transpose -> Conv: the same per channel
            perm = transpose.attr("perm")
            if perm is None or len(perm) != rank or g.is_pinned(transpose.output[0]):
                continue
            axis = None if shift.axis is None else list(perm).index(shift.axis)
            shift = Scale(shift.s, axis, rank)
            y = transpose.output[0]
            readers = g.users(y)
            if not readers:
                continue
        if shift.axis not in (None, 1):
            continue
        try:
            size = facts.channels(y if transpose is not None else x, 1)
        except RecursionError:
            size = None
        w = g.const(readers[0].input[1]) if len(readers[0].input) > 1 else None
        if size is None or shift.s.size not in (1, size) \
                or not broadcast_fits((t,), w, size=size):
            continue   # a bias the size of `w`'s channels at most (docs/reliability.md "Limits")
        vector = np.broadcast_to(shift.s, (size,)).astype(t.dtype)
        biases = [shift_absorbed(g, r, y, vector, rank) for r in readers]
        if any(b is None for b in biases):
            continue
        for reader, bias in zip(readers, biases):
            g.set_input(reader, 2, g.add_initializer(np.ascontiguousarray(bias),
                                                     "bias_shifted"))
            if reader.op_type == "Gemm":
                g.set_attr(reader, "beta", 1.0)
        for reader in ([transpose] if transpose is not None else readers):
            g.set_input(reader, 0, x)
        g.remove(add)
        return True
    return False
