"""Block rearrangements: SpaceToBatchND and BatchToSpaceND move blocks of the spatial dims into
and out of the batch dim, DepthToSpace and SpaceToDepth into and out of the channels (NHWC)."""

from __future__ import annotations

from typing import Optional

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.tensor import INDEX_TYPES
from tf2ir.opp.emitting import int64_constant, int64_input
from tf2ir.opp.layouts import data_layout
from tf2ir.opp.shapes import INT64_MAX, const_ints, partial_ints

OPS = OpSet("tf2ir.opp.blocks")


def _block_and_pairs(node, what: str):
    """(block, [before, after] per block dim) when both are constant, else None."""
    block, pairs = const_ints(node, 1), const_ints(node, 2)
    if block is not None and any(b < 1 for b in block):
        raise ConversionError(f"block_shape {block} must be positive")
    if block is None or pairs is None:
        return None
    if len(pairs) != 2 * len(block):
        raise ConversionError(f"{what} needs {len(block)} pairs, got {len(pairs) / 2:g}")
    return block, [pairs[2 * i:2 * i + 2] for i in range(len(block))]


def _block_count(node) -> Optional[int]:
    """M, the number of block dims: block_shape's length, from its value or static shape."""
    block = const_ints(node, 1)
    if block is not None:
        return len(block)
    shape = node.inputs[1].desc.shape
    if shape is None or len(shape) != 1:
        shape = node.inputs[2].desc.shape
    return None if shape is None or not shape or shape[0] is None else shape[0]


def _infer_blocks(node, what: str, to_batch: bool):
    """The output desc of SpaceToBatchND (`to_batch`) or BatchToSpaceND: dims that depend on
    run-time operands are unknown."""
    x, m = node.inputs[0].desc, _block_count(node)
    if x.shape is None or m is None:
        return [TensorDesc(x.dtype, None if x.rank is None else (None,) * x.rank)]
    if len(x.shape) < 1 + m:
        raise ConversionError(f"{m} block dims need an input of rank >= {1 + m}, not {len(x.shape)}")
    block = const_ints(node, 1) or [None] * m
    _block_and_pairs(node, what)
    pairs = partial_ints(node.inputs[2], 2 * m)
    if len(pairs) != 2 * m:
        raise ConversionError(f"{what} needs {m} pairs, got {len(pairs) / 2:g}")
    total = None if None in block else int(np.prod(block))
    batch = x.shape[0]
    if batch is not None and total is not None:
        if not to_batch and batch % total:
            raise ConversionError(f"batch {batch} is not a multiple of the block size {total}")
        batch = batch * total if to_batch else batch // total
    else:
        batch = None
    spatial = []
    for d, b, before, after in zip(x.shape[1:1 + m], block, pairs[0::2], pairs[1::2]):
        if None in (d, b, before, after):
            spatial.append(None)
        elif to_batch:
            if (d + before + after) % b:
                raise ConversionError(f"padded size {d + before + after} is not a multiple of "
                                      f"block {b}")
            spatial.append((d + before + after) // b)
        else:
            spatial.append(d * b - before - after)
    return [TensorDesc(x.dtype, (batch,) + tuple(spatial) + x.shape[1 + m:])]


def _shape_pieces(ctx, x: str, pieces) -> str:
    """An int64 shape vector joined from pieces: ints (constants) or (start, end, op, value)
    ranges of x's shape, each combined elementwise with a constant (op 'Mul'/'Div'/None)."""
    shape = ctx.op.Shape(x)
    parts = []
    for piece in pieces:
        if isinstance(piece, tuple):
            start, end, op, value = piece
            dims = ctx.op.Slice(shape, int64_constant(ctx, [start]), int64_constant(ctx, [end]))
            if op:
                dims = getattr(ctx.op, op)(dims, int64_constant(ctx, value))
            parts.append(dims)
        else:
            parts.append(int64_constant(ctx, [piece]))
    return ctx.op.Concat(*parts, axis=0)


space_to_batch = OPS.declare("SpaceToBatchND", "Zero-pads the spatial dims and moves blocks of them "
                                                "into the batch dim.") \
    .input("x").input("block_shape", INDEX_TYPES).input("paddings", INDEX_TYPES).output("y")


@space_to_batch.infer
def _infer_space_to_batch(node):
    return _infer_blocks(node, "paddings", to_batch=True)


@space_to_batch.lower
def _lower_space_to_batch(ctx, node):
    known = _block_and_pairs(node, "paddings")
    if known is None:
        _lower_runtime_space_to_batch(ctx, node)
        return
    block, pads = known
    rank, m = node.inputs[0].desc.rank, len(block)
    if rank is None:
        raise ConversionError("the input rank must be known")
    x = ctx.input(0)
    if any(p for pair in pads for p in pair):
        onnx_pads = [0] + [p[0] for p in pads] + [0] * (rank - 1 - m) + [0] + [p[1] for p in pads] \
            + [0] * (rank - 1 - m)
        x = ctx.op.Pad(x, int64_constant(ctx, onnx_pads))
    # [B, s1/b1, b1, ..., sM/bM, bM, rest] → [b1..bM, B, s1/b1..sM/bM, rest] → [B*prod(b), ...]
    pieces = [(0, 1, None, None)]
    for i, b in enumerate(block):
        pieces += [(1 + i, 2 + i, "Div", [b]), b]
    pieces.append((1 + m, INT64_MAX, None, None))
    split = ctx.op.Reshape(x, _shape_pieces(ctx, x, pieces))
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] \
        + list(range(2 * m + 1, rank + m))
    moved = ctx.op.Transpose(split, perm=perm)
    target = _shape_pieces(ctx, x, [(0, 1, "Mul", [int(np.prod(block))]),
                                    (1, 1 + m, "Div", block), (1 + m, INT64_MAX, None, None)])
    ctx.op.Reshape(moved, target, out=ctx.output(0))


batch_to_space = OPS.declare("BatchToSpaceND", "Moves blocks of the batch dim back into the "
                                                "spatial dims, then crops them.") \
    .input("x").input("block_shape", INDEX_TYPES).input("crops", INDEX_TYPES).output("y")


@batch_to_space.infer
def _infer_batch_to_space(node):
    return _infer_blocks(node, "crops", to_batch=False)


@batch_to_space.lower
def _lower_batch_to_space(ctx, node):
    known = _block_and_pairs(node, "crops")
    if known is None:
        _lower_runtime_batch_to_space(ctx, node)
        return
    block, crops = known
    rank, m = node.inputs[0].desc.rank, len(block)
    if rank is None:
        raise ConversionError("the input rank must be known")
    x, total = ctx.input(0), int(np.prod(block))
    # [b1..bM, B, s1..sM, rest] → [B, s1, b1, ..., sM, bM, rest] → [B, s1*b1, ..., rest]
    split = ctx.op.Reshape(x, _shape_pieces(ctx, x, list(block) + [(0, 1, "Div", [total]),
                                                                  (1, INT64_MAX, None, None)]))
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, rank + m))
    moved = ctx.op.Transpose(split, perm=perm)
    target = _shape_pieces(ctx, x, [(0, 1, "Div", [total]), (1, 1 + m, "Mul", block),
                                    (1 + m, INT64_MAX, None, None)])
    cropped = any(c for pair in crops for c in pair)
    joined = ctx.op.Reshape(moved, target, out=None if cropped else ctx.output(0))
    if cropped:
        ctx.op.Slice(joined, int64_constant(ctx, [c[0] for c in crops]),
                     int64_constant(ctx, [-c[1] if c[1] else INT64_MAX for c in crops]),
                     int64_constant(ctx, range(1, 1 + m)), out=ctx.output(0))


# -- run-time block shapes, paddings and crops ------------------------------------------------
def _runtime_geometry(ctx, node):
    """(rank, M, block as an int64 [M] tensor, the pairs' [M] columns of befores and afters)
    for block_shape and paddings/crops of which at least one is known only at run time."""
    rank, m = node.inputs[0].desc.rank, _block_count(node)
    if rank is None or m is None:
        raise ConversionError("run-time block_shape/paddings need the input rank and the "
                              "length of block_shape")
    block, pairs = int64_input(ctx, 1), int64_input(ctx, 2)
    columns = [ctx.op.Gather(pairs, int64_constant(ctx, side), axis=1) for side in (0, 1)]
    return rank, m, block, columns


def _dims(ctx, shape, start, end):
    return ctx.op.Slice(shape, int64_constant(ctx, [start]), int64_constant(ctx, [end]))


def _lower_runtime_space_to_batch(ctx, node):
    rank, m, block, (before, after) = _runtime_geometry(ctx, node)
    zeros = int64_constant(ctx, [0])
    rest = [int64_constant(ctx, [0] * (rank - 1 - m))] if rank > 1 + m else []
    pads = ctx.op.Concat(zeros, before, *rest, zeros, after, *rest, axis=0)
    x = ctx.op.Pad(ctx.input(0), pads)
    shape = ctx.op.Shape(x)
    batch, spatial, tail = _dims(ctx, shape, 0, 1), _dims(ctx, shape, 1, 1 + m), _dims(ctx, shape, 1 + m, INT64_MAX)
    blocks = ctx.op.Div(spatial, block)
    # [B, s1/b1, b1, ..., sM/bM, bM, rest] → [b1..bM, B, s1/b1..sM/bM, rest] → [B*prod(b), ...]
    one = int64_constant(ctx, [1])
    pairs = ctx.op.Concat(ctx.op.Unsqueeze(blocks, one), ctx.op.Unsqueeze(block, one), axis=1)
    interleaved = ctx.op.Reshape(pairs, int64_constant(ctx, [-1]))
    split = ctx.op.Reshape(x, ctx.op.Concat(batch, interleaved, tail, axis=0))
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] \
        + list(range(2 * m + 1, rank + m))
    moved = ctx.op.Transpose(split, perm=perm)
    total = ctx.op.ReduceProd(block, keepdims=1)
    target = ctx.op.Concat(ctx.op.Mul(batch, total), blocks, tail, axis=0)
    ctx.op.Reshape(moved, target, out=ctx.output(0))


def _lower_runtime_batch_to_space(ctx, node):
    rank, m, block, (before, after) = _runtime_geometry(ctx, node)
    x = ctx.input(0)
    shape = ctx.op.Shape(x)
    total = ctx.op.ReduceProd(block, keepdims=1)
    batch = ctx.op.Div(_dims(ctx, shape, 0, 1), total)
    spatial, tail = _dims(ctx, shape, 1, 1 + m), _dims(ctx, shape, 1 + m, INT64_MAX)
    # [b1..bM, B, s1..sM, rest] → [B, s1, b1, ..., sM, bM, rest] → [B, s1*b1, ..., rest]
    split = ctx.op.Reshape(x, ctx.op.Concat(block, batch, spatial, tail, axis=0))
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, rank + m))
    moved = ctx.op.Transpose(split, perm=perm)
    grown = ctx.op.Mul(spatial, block)
    joined = ctx.op.Reshape(moved, ctx.op.Concat(batch, grown, tail, axis=0))
    ctx.op.Slice(joined, before, ctx.op.Sub(grown, after), int64_constant(ctx, range(1, 1 + m)),
                 out=ctx.output(0))


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
        ctx.op.DepthToSpace(x, out=ctx.output(0), blocksize=b, mode="DCR")
        return
    # [N, H, W, b, b, C'] → [N, H, b, W, b, C'] → [N, H*b, W*b, C']
    split = ctx.op.Reshape(x, int64_constant(ctx, [0, 0, 0, b, b, -1]))
    moved = ctx.op.Transpose(split, perm=[0, 1, 3, 2, 4, 5])
    target = _shape_pieces(ctx, x, [(0, 1, None, None), (1, 3, "Mul", [b, b]), (3, 4, "Div", [b * b])])
    ctx.op.Reshape(moved, target, out=ctx.output(0))


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
        ctx.op.SpaceToDepth(x, out=ctx.output(0), blocksize=b)
        return
    # [N, H/b, b, W/b, b, C] → [N, H/b, W/b, b, b, C] → [N, H/b, W/b, b*b*C]
    split = ctx.op.Reshape(x, _shape_pieces(ctx, x, [(0, 1, None, None), (1, 2, "Div", [b]), b,
                                                    (2, 3, "Div", [b]), b, (3, 4, None, None)]))
    moved = ctx.op.Transpose(split, perm=[0, 1, 3, 2, 4, 5])
    ctx.op.Reshape(moved, int64_constant(ctx, [0, 0, 0, -1]), out=ctx.output(0))
