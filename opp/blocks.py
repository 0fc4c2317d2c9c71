"""Block rearrangements: SpaceToBatchND and BatchToSpaceND move blocks of the spatial dims into
and out of the batch dim, DepthToSpace and SpaceToDepth into and out of the channels (NHWC)."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.tensor import INDEX_TYPES
from tf2ir.opp.common import INT64_MAX, const_ints, data_layout, int64_constant

OPS = OpSet("tf2ir.opp.blocks")


def _block_and_pairs(node, what: str):
    block, pairs = const_ints(node, 1), const_ints(node, 2)
    if block is None or pairs is None:
        raise ConversionError(f"block_shape and {what} must be constant")
    if any(b < 1 for b in block):
        raise ConversionError(f"block_shape {block} must be positive")
    return block, [pairs[2 * i:2 * i + 2] for i in range(len(block))]


def _shape_pieces(ctx, x: str, pieces) -> str:
    """An int64 shape vector joined from pieces: ints (constants) or (start, end, op, value)
    ranges of x's shape, each combined elementwise with a constant (op 'Mul'/'Div'/None)."""
    shape = ctx.emit("Shape", [x])[0]
    parts = []
    for piece in pieces:
        if isinstance(piece, tuple):
            start, end, op, value = piece
            dims = ctx.emit("Slice", [shape, int64_constant(ctx, [start]), int64_constant(ctx, [end])])[0]
            if op:
                dims = ctx.emit(op, [dims, int64_constant(ctx, value)])[0]
            parts.append(dims)
        else:
            parts.append(int64_constant(ctx, [piece]))
    return ctx.emit("Concat", parts, axis=0)[0]


space_to_batch = OPS.declare("SpaceToBatchND", "Zero-pads the spatial dims and moves blocks of them "
                                                "into the batch dim.") \
    .input("x").input("block_shape", INDEX_TYPES).input("paddings", INDEX_TYPES).output("y")


@space_to_batch.infer
def _infer_space_to_batch(node):
    x = node.inputs[0].desc
    block, pads = _block_and_pairs(node, "paddings")
    if x.shape is None:
        return [TensorDesc(x.dtype, None)]
    m = len(block)
    batch = None if x.shape[0] is None else x.shape[0] * int(np.prod(block))
    spatial = []
    for d, b, (before, after) in zip(x.shape[1:1 + m], block, pads):
        if d is not None and (d + before + after) % b:
            raise ConversionError(f"padded size {d + before + after} is not a multiple of block {b}")
        spatial.append(None if d is None else (d + before + after) // b)
    return [TensorDesc(x.dtype, (batch,) + tuple(spatial) + x.shape[1 + m:])]


@space_to_batch.lower
def _lower_space_to_batch(ctx, node):
    block, pads = _block_and_pairs(node, "paddings")
    rank, m = node.inputs[0].desc.rank, len(block)
    if rank is None:
        raise ConversionError("the input rank must be known")
    x = ctx.input(0)
    if any(p for pair in pads for p in pair):
        onnx_pads = [0] + [p[0] for p in pads] + [0] * (rank - 1 - m) + [0] + [p[1] for p in pads] \
            + [0] * (rank - 1 - m)
        x = ctx.emit("Pad", [x, int64_constant(ctx, onnx_pads)])[0]
    # [B, s1/b1, b1, ..., sM/bM, bM, rest] → [b1..bM, B, s1/b1..sM/bM, rest] → [B*prod(b), ...]
    pieces = [(0, 1, None, None)]
    for i, b in enumerate(block):
        pieces += [(1 + i, 2 + i, "Div", [b]), b]
    pieces.append((1 + m, INT64_MAX, None, None))
    split = ctx.emit("Reshape", [x, _shape_pieces(ctx, x, pieces)])[0]
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] \
        + list(range(2 * m + 1, rank + m))
    moved = ctx.emit("Transpose", [split], perm=perm)[0]
    target = _shape_pieces(ctx, x, [(0, 1, "Mul", [int(np.prod(block))]),
                                    (1, 1 + m, "Div", block), (1 + m, INT64_MAX, None, None)])
    ctx.emit("Reshape", [moved, target], [ctx.output(0)])


batch_to_space = OPS.declare("BatchToSpaceND", "Moves blocks of the batch dim back into the "
                                                "spatial dims, then crops them.") \
    .input("x").input("block_shape", INDEX_TYPES).input("crops", INDEX_TYPES).output("y")


@batch_to_space.infer
def _infer_batch_to_space(node):
    x = node.inputs[0].desc
    block, crops = _block_and_pairs(node, "crops")
    if x.shape is None:
        return [TensorDesc(x.dtype, None)]
    m, total = len(block), int(np.prod(block))
    if x.shape[0] is not None and x.shape[0] % total:
        raise ConversionError(f"batch {x.shape[0]} is not a multiple of the block size {total}")
    batch = None if x.shape[0] is None else x.shape[0] // total
    spatial = [None if d is None else d * b - c[0] - c[1]
               for d, b, c in zip(x.shape[1:1 + m], block, crops)]
    return [TensorDesc(x.dtype, (batch,) + tuple(spatial) + x.shape[1 + m:])]


@batch_to_space.lower
def _lower_batch_to_space(ctx, node):
    block, crops = _block_and_pairs(node, "crops")
    rank, m = node.inputs[0].desc.rank, len(block)
    if rank is None:
        raise ConversionError("the input rank must be known")
    x, total = ctx.input(0), int(np.prod(block))
    # [b1..bM, B, s1..sM, rest] → [B, s1, b1, ..., sM, bM, rest] → [B, s1*b1, ..., rest]
    split = ctx.emit("Reshape", [x, _shape_pieces(ctx, x, list(block) + [(0, 1, "Div", [total]),
                                                                         (1, INT64_MAX, None, None)])])[0]
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, rank + m))
    moved = ctx.emit("Transpose", [split], perm=perm)[0]
    target = _shape_pieces(ctx, x, [(0, 1, "Div", [total]), (1, 1 + m, "Mul", block),
                                    (1 + m, INT64_MAX, None, None)])
    cropped = any(c for pair in crops for c in pair)
    joined = ctx.emit("Reshape", [moved, target], 1 if cropped else [ctx.output(0)])[0]
    if cropped:
        ctx.emit("Slice", [joined, int64_constant(ctx, [c[0] for c in crops]),
                           int64_constant(ctx, [-c[1] if c[1] else INT64_MAX for c in crops]),
                           int64_constant(ctx, range(1, 1 + m))], [ctx.output(0)])


def _depth_op(op_type, doc):
    return OPS.declare(op_type, doc).input("x").output("y").attr("block_size", "int")


def _check_depth_attrs(node):
    """The block size; the layout (NHWC or NCHW) is the input's format."""
    if node.attrs["block_size"] < 2:
        raise ConversionError(f"block_size {node.attrs['block_size']} must be at least 2")
    if node.inputs[0].desc.rank not in (None, 4):
        raise ConversionError(f"{node.op_type} takes a rank-4 input")
    return node.attrs["block_size"]


def _channels_last(node, dims):
    """Shape `dims` as (n, h, w, c) when the input is NCHW, and back (`_as_layout`)."""
    return (dims[0], dims[2], dims[3], dims[1]) if data_layout(node, 0, 4) == "NCHW" else dims


def _as_layout(node, dims):
    return (dims[0], dims[3], dims[1], dims[2]) if data_layout(node, 0, 4) == "NCHW" else dims


depth_to_space = _depth_op("DepthToSpace", "Moves channel blocks into b x b spatial blocks "
                                           "(DCR order: the block position is the outer channel "
                                           "index); NHWC or NCHW by the input's format.")


@depth_to_space.infer
def _infer_depth_to_space(node):
    b, x = _check_depth_attrs(node), node.inputs[0].desc
    if x.shape is None:
        return [TensorDesc(x.dtype, (None,) * 4)]
    n, h, w, c = _channels_last(node, x.shape)
    if c is not None and c % (b * b):
        raise ConversionError(f"channels {c} are not a multiple of block_size^2 = {b * b}")
    return [TensorDesc(x.dtype, _as_layout(node, (n, None if h is None else h * b,
                                                  None if w is None else w * b,
                                                  None if c is None else c // (b * b))))]


@depth_to_space.lower
def _lower_depth_to_space(ctx, node):
    b, x = _check_depth_attrs(node), ctx.input(0)
    if data_layout(node, 0, 4) == "NCHW":      # ONNX's own layout and (DCR) channel order
        ctx.emit("DepthToSpace", [x], [ctx.output(0)], blocksize=b, mode="DCR")
        return
    # [N, H, W, b, b, C'] → [N, H, b, W, b, C'] → [N, H*b, W*b, C']
    split = ctx.emit("Reshape", [x, int64_constant(ctx, [0, 0, 0, b, b, -1])])[0]
    moved = ctx.emit("Transpose", [split], perm=[0, 1, 3, 2, 4, 5])[0]
    target = _shape_pieces(ctx, x, [(0, 1, None, None), (1, 3, "Mul", [b, b]), (3, 4, "Div", [b * b])])
    ctx.emit("Reshape", [moved, target], [ctx.output(0)])


space_to_depth = _depth_op("SpaceToDepth", "Moves b x b spatial blocks into the channels (the "
                                           "block position is the outer channel index); NHWC "
                                           "or NCHW by the input's format.")


@space_to_depth.infer
def _infer_space_to_depth(node):
    b, x = _check_depth_attrs(node), node.inputs[0].desc
    if x.shape is None:
        return [TensorDesc(x.dtype, (None,) * 4)]
    n, h, w, c = _channels_last(node, x.shape)
    for name, d in (("height", h), ("width", w)):
        if d is not None and d % b:
            raise ConversionError(f"{name} {d} is not a multiple of block_size {b}")
    return [TensorDesc(x.dtype, _as_layout(node, (n, None if h is None else h // b,
                                                  None if w is None else w // b,
                                                  None if c is None else c * b * b)))]


@space_to_depth.lower
def _lower_space_to_depth(ctx, node):
    b, x = _check_depth_attrs(node), ctx.input(0)
    if data_layout(node, 0, 4) == "NCHW":      # ONNX's own layout and channel order
        ctx.emit("SpaceToDepth", [x], [ctx.output(0)], blocksize=b)
        return
    # [N, H/b, b, W/b, b, C] → [N, H/b, W/b, b, b, C] → [N, H/b, W/b, b*b*C]
    split = ctx.emit("Reshape", [x, _shape_pieces(ctx, x, [(0, 1, None, None), (1, 2, "Div", [b]), b,
                                                           (2, 3, "Div", [b]), b, (3, 4, None, None)])])[0]
    moved = ctx.emit("Transpose", [split], perm=[0, 1, 3, 2, 4, 5])[0]
    ctx.emit("Reshape", [moved, int64_constant(ctx, [0, 0, 0, -1])], [ctx.output(0)])
