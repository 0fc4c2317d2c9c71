"""Pad folding on the lowered ONNX graph: a zero constant Pad of the spatial dims only, read
by Convs alone, becomes those Convs' `pads` (Keras' ZeroPadding2D before a strided Conv).
A separate Pad node also keeps onnxruntime from running the Convs in its NCHWc layout."""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from tf2ir.ir.onnx.passes.lowered import LoweredGraph, attr_value, set_attr


def _spatial_pads(g: LoweredGraph, pad) -> Optional[List[int]]:
    """The Pad's pads of the dims after N and C (begins then ends), or None if it is not a
    zero constant pad of those dims only."""
    mode = attr_value(pad, "mode", b"constant")
    if mode not in (b"constant", "constant") or len(pad.input) < 2 \
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


def _swap_with_transpose(g: LoweredGraph, pad, users) -> None:
    """Pad -> Transpose (the Pad's only reader) becomes Transpose -> Pad with permuted pads,
    so a Pad of an NHWC graph input ends up next to the Conv after the Transpose."""
    y = pad.output[0]
    readers = users.get(y, [])
    if len(readers) != 1 or readers[0].op_type != "Transpose" or y in g.pinned \
            or (len(pad.input) > 3 and pad.input[3]):
        return
    transpose = readers[0]
    perm = attr_value(transpose, "perm")
    pads = g.const(pad.input[1])
    if perm is None or pads is None or pads.size != 2 * len(perm):
        return
    rank = len(perm)
    moved = np.array([pads[p] for p in perm] + [pads[rank + p] for p in perm], pads.dtype)
    x, out = pad.input[0], transpose.output[0]
    middle = g.fresh(f"{out}/unpadded")
    transpose.input[0], transpose.output[0] = x, middle
    pad.input[0], pad.output[0] = middle, out
    pad.input[1] = g.add_initializer(moved, "pads_permuted")
    g.ranks[middle] = rank
    users[middle] = [pad]


_NON_NEGATIVE = {"Relu", "Sigmoid", "Softplus", "Abs", "Exp"}


def _non_negative(g: LoweredGraph, producer) -> bool:
    """Whether the output of `producer` is never negative (nor NaN from a non-NaN input)."""
    if producer is None or producer.domain not in ("", "ai.onnx"):
        return False
    if producer.op_type in _NON_NEGATIVE:
        return True
    if producer.op_type == "Clip" and len(producer.input) > 1 and producer.input[1]:
        low = g.const(producer.input[1])
        return low is not None and low.size == 1 and float(low.reshape(-1)[0]) >= 0
    return False


def _fold_into_max_pool(g: LoweredGraph, pad, pool, producer) -> bool:
    """A zero Pad of a non-negative tensor read by one MaxPool alone becomes the MaxPool's
    pads: a MaxPool pads with -inf, which equals padding with 0 when every value is >= 0
    and every window holds at least one real value (each pad smaller than the window)."""
    extra = _spatial_pads(g, pad)
    if extra is None or not _non_negative(g, producer) or pool.input[0] != pad.output[0] \
            or attr_value(pool, "ceil_mode", 0) or len(pool.output) != 1 \
            or attr_value(pool, "auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID"):
        return False
    kernel = list(attr_value(pool, "kernel_shape", []))
    dilations = list(attr_value(pool, "dilations", None) or [1] * len(kernel))
    spatial = len(extra) // 2
    pads = list(attr_value(pool, "pads", None) or [0] * (2 * spatial))
    if len(kernel) != spatial or len(pads) != 2 * spatial:
        return False
    total = [a + b for a, b in zip(pads, extra)]
    window = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    if any(p >= window[i % spatial] for i, p in enumerate(total)) or any(d != 1 for d in dilations):
        return False
    set_attr(pool, "pads", total)
    set_attr(pool, "auto_pad", "NOTSET")
    pool.input[0] = pad.input[0]
    return True


def fold_pads_into_pools(g: LoweredGraph) -> int:
    """Fold zero Pads of non-negative tensors into the MaxPool reading them; return how many."""
    pads_of = [n for n in g.nodes if n.op_type == "Pad" and n.domain in ("", "ai.onnx")]
    if not pads_of:
        return 0
    users, producers = g.consumers(), g.producers()
    dead = []
    for pad in pads_of:
        readers = users.get(pad.output[0], [])
        if pad.output[0] in g.pinned or len(readers) != 1 or readers[0].op_type != "MaxPool" \
                or readers[0].domain not in ("", "ai.onnx"):
            continue
        if _fold_into_max_pool(g, pad, readers[0], producers.get(pad.input[0])):
            dead.append(id(pad))
    g.keep_only(dead)
    return len(dead)


def fold_pads_into_convs(g: LoweredGraph) -> int:
    """Fold such Pads into their Convs; return how many Pads went."""
    pads_of = [n for n in g.nodes if n.op_type == "Pad" and n.domain in ("", "ai.onnx")]
    if not pads_of:
        return 0
    users = g.consumers()
    for pad in pads_of:
        _swap_with_transpose(g, pad, users)
    g.toposort()
    dead = []
    for pad in pads_of:
        y = pad.output[0]
        readers = users.get(y, [])
        extra = _spatial_pads(g, pad)
        if extra is None or y in g.pinned or not readers or any(
                r.op_type != "Conv" or r.domain not in ("", "ai.onnx") or list(r.input).count(y) != 1
                or r.input[0] != y or attr_value(r, "auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID")
                for r in readers):
            continue
        spatial = len(extra) // 2
        for conv in readers:
            pads = list(attr_value(conv, "pads", None) or [0] * (2 * spatial))
            if len(pads) != 2 * spatial:
                break
            set_attr(conv, "pads", [a + b for a, b in zip(pads, extra)])
            set_attr(conv, "auto_pad", "NOTSET")
            conv.input[0] = pad.input[0]
        else:
            dead.append(id(pad))
    g.keep_only(dead)
    return len(dead)
