"""Batched, per-class non-max suppression (CombinedNonMaxSuppression), from ONNX
NonMaxSuppression run on one (image, class) pair per ONNX batch entry.

Each pair keeps up to max_output_size_per_class boxes scoring above score_threshold whose IoU
with a kept box of the pair is at most iou_threshold; an image's kept boxes are then ranked by
score (TopK over a dense [batch, classes * per-class limit] table) and the best max_total_size
(with pad_per_class, at most per-class limit * classes) returned, zero-padded, boxes clipped to
[0, 1] with clip_boxes. Ties in score are ordered by (class, rank in class) where TF's sort
leaves their order unspecified.
"""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.opp.emitting import Emitter, emit_cast

OPS = OpSet("tf2ir.opp.suppression")
I64 = ONNX_DTYPES["int64"]

combined = OPS.declare("CombinedNonMaxSuppression", "Per-class greedy non-max suppression of "
                                                    "each image's boxes, the kept boxes of "
                                                    "all classes ranked by score.") \
    .input("boxes", ("float32",)).input("scores", ("float32",)) \
    .input("max_output_size_per_class", ("int32",)).input("max_total_size", ("int32",)) \
    .input("iou_threshold", ("float32",)).input("score_threshold", ("float32",)) \
    .output("nmsed_boxes", ("float32",)).output("nmsed_scores", ("float32",)) \
    .output("nmsed_classes", ("float32",)).output("valid_detections", ("int32",)) \
    .attr("pad_per_class", "bool", False).attr("clip_boxes", "bool", True)


def _const_int(node, index: int):
    value = node.inputs[index].const_value
    return None if value is None else int(np.asarray(value).reshape(-1)[0])


def _detections(node):
    """The number of detections per image when known at conversion time."""
    total = _const_int(node, 3)
    if total is None or not node.attrs["pad_per_class"]:
        return total
    per_class, scores = _const_int(node, 2), node.inputs[1].desc
    classes = scores.shape[2] if scores.shape is not None else None
    return None if per_class is None or classes is None else min(total, per_class * classes)


@combined.infer
def _infer_combined(node):
    boxes, scores = node.inputs[0].desc, node.inputs[1].desc
    if boxes.rank not in (None, 4) or scores.rank not in (None, 3):
        raise ConversionError("boxes must be [batch, num_boxes, q, 4] and scores "
                              "[batch, num_boxes, num_classes]")
    batch = next((d.shape[0] for d in (boxes, scores) if d.shape is not None), None)
    count = _detections(node)
    return [TensorDesc("float32", (batch, count, 4)), TensorDesc("float32", (batch, count)),
            TensorDesc("float32", (batch, count)), TensorDesc("int32", (batch,))]


def _scalar(o: Emitter, name: str, dtype: str) -> str:
    return o.Reshape(emit_cast(o.ctx, name, dtype), o.c([], "int64"))


@combined.lower
def _lower_combined(ctx, node):
    o = Emitter(ctx, "int64")
    boxes, scores = ctx.input(0), ctx.input(1)
    shape = o.Shape(scores)
    batch, count, classes = (o.Gather(shape, o.c(i), axis=0) for i in range(3))
    pairs = o.Mul(batch, classes)
    # one ONNX batch entry per (image, class): boxes [B*C, N, 4], scores [B*C, 1, N]
    boxes = o.Expand(boxes, o.Concat(o.c([1, 1]), o.Unsqueeze(classes, o.c([0])), o.c([1]), axis=0))
    boxes = o.Reshape(o.Transpose(boxes, perm=[0, 2, 1, 3]), o.Concat(
        o.Unsqueeze(pairs, o.c([0])), o.Unsqueeze(count, o.c([0])), o.c([4]), axis=0), allowzero=1)
    scores = o.Reshape(o.Transpose(scores, perm=[0, 2, 1]),
                       o.Concat(o.Unsqueeze(pairs, o.c([0])), o.Unsqueeze(count, o.c([0])), axis=0),
                       allowzero=1)
    per_class = o.Min(_scalar(o, ctx.input(2), "int64"), count)
    per_class = o.Max(per_class, o.c(0))
    picked = o.NonMaxSuppression(boxes, o.Unsqueeze(scores, o.c([1])),
                                 o.Reshape(per_class, o.c([1])),
                                 o.Reshape(ctx.input(4), o.c([1])), o.Reshape(ctx.input(5), o.c([1])))
    pair = o.Gather(picked, o.c(0), axis=1)                          # [K]
    where = o.Concat(o.Unsqueeze(pair, o.c([1])), o.Gather(picked, o.c([2]), axis=1), axis=1)
    kept_scores, kept_boxes = o.GatherND(scores, where), o.GatherND(boxes, where)
    # a kept box's slot in its image's table: class * per_class + its rank in the pair
    _, first, inverse, _ = ctx.op.Unique(pair, outputs=4, sorted=1)
    kept = o.Gather(o.Shape(pair), o.c(0), axis=0)
    rank = o.Sub(o.Range(o.c(0), kept, o.c(1)), o.Gather(first, inverse))
    image, klass = o.Div(pair, classes), o.Mod(pair, classes)
    slot = o.Add(o.Mul(klass, per_class), rank)
    width = o.Mul(classes, per_class)
    table_shape = o.Concat(o.Unsqueeze(batch, o.c([0])), o.Unsqueeze(width, o.c([0])), axis=0)
    at = o.Concat(o.Unsqueeze(image, o.c([1])), o.Unsqueeze(slot, o.c([1])), axis=1)
    lowest = ctx.constant(np.array(-np.inf, np.float32))
    table = o.ScatterND(o.Expand(lowest, table_shape), at, kept_scores)
    which = o.ScatterND(o.Expand(o.c(-1), table_shape), at, o.Range(o.c(0), kept, o.c(1)))
    total = _scalar(o, ctx.input(3), "int64")
    if node.attrs["pad_per_class"]:
        total = o.Min(total, o.Mul(_scalar(o, ctx.input(2), "int64"), classes))
    k = o.Min(total, width)
    best, columns = ctx.op.TopK(table, o.Reshape(k, o.c([1])), outputs=2, axis=1, largest=1, sorted=1)
    chosen = o.GatherElements(which, columns, axis=1)                     # [B, k], -1 where empty
    valid = o.GreaterOrEqual(chosen, o.c(0))
    # -1 picks a last zero entry appended to the kept boxes and classes (there may be none)
    zero = ctx.constant(np.array(0, np.float32))
    kept_boxes = o.Concat(kept_boxes, ctx.constant(np.zeros((1, 4), np.float32)), axis=0)
    klass = o.Concat(klass, o.c([0]), axis=0)
    picked_boxes = o.Gather(kept_boxes, chosen, axis=0)              # [B, k, 4]
    if node.attrs["clip_boxes"]:
        picked_boxes = o.Clip(picked_boxes, zero, ctx.constant(np.array(1, np.float32)))
    out_classes = o.Cast(o.Gather(klass, chosen, axis=0), to=ONNX_DTYPES["float32"])
    pads = o.Concat(o.c([0, 0, 0]), o.Reshape(o.Sub(total, k), o.c([1])), axis=0)
    pads2 = o.Concat(o.c([0, 0, 0, 0]), o.Reshape(o.Sub(total, k), o.c([1])), o.c([0]), axis=0)
    o.Pad(o.Where(o.Unsqueeze(valid, o.c([2])), picked_boxes, zero), pads2, out=ctx.output(0))
    o.Pad(o.Where(valid, best, zero), pads, out=ctx.output(1))
    o.Pad(o.Where(valid, out_classes, zero), pads, out=ctx.output(2))
    counted = o.ReduceSum(o.Cast(valid, to=I64), o.c([1]), keepdims=0)
    emit_cast(ctx, counted, "int32", ctx.output(3))
