"""Pad folding on the lowered ONNX graph: a zero constant Pad of the spatial dims only, read
by Convs alone, becomes those Convs' `pads` (Keras' ZeroPadding2D before a strided Conv).
A separate Pad node also keeps onnxruntime from running the Convs in its NCHWc layout.

Every change goes through the graph's verbs: a Pad -> Transpose pair is swapped by morphing
the two nodes in place (the Pad's node becomes the Transpose, the Transpose's node the Pad,
so the order stays right), and a folded Pad goes once its readers read its input."""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode

_PADDING_MODES = (b"constant", "constant")
_AUTO_PADS = (b"NOTSET", b"VALID", "NOTSET", "VALID")


def _spatial_pads(g: OnnxGraph, pad: OnnxNode) -> Optional[List[int]]:
    """The Pad's pads of the dims after N and C (begins then ends), or None if it is not a
    zero constant pad of those dims only."""
    if pad.attr("mode", b"constant") not in _PADDING_MODES or len(pad.input) < 2 \
            or (len(pad.input) > 3 and pad.input[3]):
        return None
    pads = g.const(pad.input[1])
    value = g.const(pad.input[2]) if len(pad.input) > 2 and pad.input[2] else np.zeros(1)
    if pads is None or value is None or np.any(value != 0) or pads.size % 2 or pads.size < 6:
        return None
    rank = pads.size // 2
    begins, ends = [int(p) for p in pads[:rank]], [int(p) for p in pads[rank:]]
    if any(p < 0 for p in begins + ends) or any(begins[:2]) or any(ends[:2]):
        return None
    return begins[2:] + ends[2:]


def _swap_with_transpose(g: OnnxGraph, pad: OnnxNode) -> OnnxNode:
    """Pad -> Transpose (the Pad's only reader) becomes Transpose -> Pad with permuted pads,
    so a Pad of an NHWC graph input ends up next to the Conv after the Transpose. Returns
    the Pad node after the swap (the Transpose's node morphed), else `pad` itself."""
    transpose = g.only_user(pad.output[0])
    if transpose is None or transpose.op_type != "Transpose" or not transpose.standard \
            or len(pad.input) < 2 or (len(pad.input) > 3 and pad.input[3]):
        return pad
    perm = transpose.attr("perm")
    pads = g.const(pad.input[1])
    if perm is None or pads is None or pads.size != 2 * len(perm):
        return pad
    rank = len(perm)
    moved = np.array([pads[p] for p in perm] + [pads[rank + p] for p in perm], pads.dtype)
    x, rest, pad_attrs = pad.input[0], list(pad.input[2:]), dict(pad.attrs)
    middle = g.fresh(f"{transpose.output[0]}/unpadded")
    g.set_op(pad, "Transpose", [x], attrs={"perm": list(perm)})   # the Pad's node, first
    g.rename_output(pad, 0, middle)
    g.set_op(transpose, "Pad", [middle, g.add_initializer(moved, "pads_permuted"), *rest],
             attrs=pad_attrs)
    g.ranks[middle] = rank
    return transpose


def _non_negative(g: OnnxGraph, producer: Optional[OnnxNode]) -> bool:
    """Whether the output of `producer` is never negative (nor NaN from a non-NaN input)."""
    if producer is None or not producer.standard:
        return False
    if producer.op_type in ("Relu", "Sigmoid", "Softplus", "Abs", "Exp"):
        return True
    if producer.op_type == "Clip" and len(producer.input) > 1 and producer.input[1]:
        low = g.const(producer.input[1])
        return low is not None and low.size == 1 and float(low.reshape(-1)[0]) >= 0
    return False


def _fold_into_max_pool(g: OnnxGraph, pad: OnnxNode, pool: OnnxNode) -> bool:
    """A zero Pad of a non-negative tensor read by one MaxPool alone becomes the MaxPool's
    pads: a MaxPool pads with -inf, which equals padding with 0 when every value is >= 0
    and every window holds at least one real value (each pad smaller than the window)."""
    extra = _spatial_pads(g, pad)
    if extra is None or not _non_negative(g, g.producer(pad.input[0])) \
            or pool.input[0] != pad.output[0] or pool.attr("ceil_mode", 0) \
            or len(pool.output) != 1 or pool.attr("auto_pad", b"NOTSET") not in _AUTO_PADS:
        return False
    kernel = list(pool.attr("kernel_shape", []))
    dilations = list(pool.attr("dilations", None) or [1] * len(kernel))
    spatial = len(extra) // 2
    pads = list(pool.attr("pads", None) or [0] * (2 * spatial))
    if len(kernel) != spatial or len(pads) != 2 * spatial:
        return False
    total = [a + b for a, b in zip(pads, extra)]
    window = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    if any(p >= window[i % spatial] for i, p in enumerate(total)) or any(d != 1 for d in dilations):
        return False
    g.set_attr(pool, "pads", total)
    g.set_attr(pool, "auto_pad", "NOTSET")
    g.set_input(pool, 0, pad.input[0])
    return True


def fold_pads_into_pools(g: OnnxGraph) -> int:
    """Fold zero Pads of non-negative tensors into the MaxPool reading them; return how many."""
    folded = 0
    for pad in g.of_type("Pad"):
        pool = g.only_user(pad.output[0])
        if pool is None or pool.op_type != "MaxPool" or not pool.standard:
            continue
        if _fold_into_max_pool(g, pad, pool):
            g.remove(pad)
            folded += 1
    return folded


def _conv_pads(conv: OnnxNode, y: str, spatial: int) -> Optional[List[int]]:
    """The pads of a Conv that reads `y` as its data input alone, None if it cannot take more."""
    if not conv.standard or conv.op_type != "Conv" or conv.input.count(y) != 1 \
            or conv.input[0] != y or conv.attr("auto_pad", b"NOTSET") not in _AUTO_PADS:
        return None
    pads = list(conv.attr("pads", None) or [0] * (2 * spatial))
    return pads if len(pads) == 2 * spatial else None


def fold_pads_into_convs(g: OnnxGraph) -> int:
    """Fold such Pads into their Convs; return how many Pads went."""
    pads_of = [_swap_with_transpose(g, pad) for pad in g.of_type("Pad")]
    folded = 0
    for pad in pads_of:
        y = pad.output[0]
        extra = _spatial_pads(g, pad)
        readers = g.users(y)
        if extra is None or g.is_pinned(y) or not readers:
            continue
        spatial = len(extra) // 2
        own = [_conv_pads(conv, y, spatial) for conv in readers]
        if any(pads is None for pads in own):
            continue
        for conv, pads in zip(readers, own):
            assert pads is not None     # checked above: every reader has its pads
            g.set_attr(conv, "pads", [a + b for a, b in zip(pads, extra)])
            g.set_attr(conv, "auto_pad", "NOTSET")
            g.set_input(conv, 0, pad.input[0])
        g.remove(pad)
        folded += 1
    return folded
