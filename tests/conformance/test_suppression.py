"""Conformance of CombinedNonMaxSuppression (opp/suppression.py) against TensorFlow: shared and
per-class boxes, padding per class, clipping, thresholds and sizes at run time. Scores are
distinct, since TF's sort leaves the order of equal scores unspecified."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, spec

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

TESTED_DTYPES = {"CombinedNonMaxSuppression": ("float32",)}


def detections(batch, count, classes, q=1, seed=1):
    """Boxes partly outside [0, 1] and overlapping, some flipped (y2 < y1); distinct scores."""
    rng = np.random.default_rng(seed)
    centre = rng.uniform(0, 1, (batch, count, 1, 2))
    half = rng.uniform(0.05, 0.3, (batch, count, 1, 2))
    boxes = np.concatenate([centre - half, centre + half], -1)
    boxes[:, ::5] = boxes[:, ::5][..., [2, 3, 0, 1]]
    boxes = np.repeat(boxes, q, axis=2) + rng.uniform(-0.05, 0.05, (batch, count, q, 4)) * (q > 1)
    scores = rng.permutation(batch * count * classes).reshape(batch, count, classes)
    return boxes.astype(np.float32), (scores / (batch * count * classes)).astype(np.float32)


def combined(per_class, total, iou, score, pad=False, clip=True):
    return lambda b, s: raw.CombinedNonMaxSuppression(  # noqa: E731
        boxes=b, scores=s, max_output_size_per_class=per_class, max_total_size=total,
        iou_threshold=iou, score_threshold=score, pad_per_class=pad, clip_boxes=clip)


@pytest.mark.parametrize("q", [1, 3])
@pytest.mark.parametrize("pad", [False, True])
@pytest.mark.parametrize("clip", [False, True])
@pytest.mark.parametrize("per_class,total,iou,score", [
    (4, 7, 0.5, 0.1), (2, 20, 0.3, 0.0), (100, 5, 0.6, 0.9), (3, 4, 0.5, 2.0), (12, 36, 1.0, -1.0)])
def test_combined_non_max_suppression(q, pad, clip, per_class, total, iou, score):
    check_op(combined(per_class, total, iou, score, pad, clip), list(detections(2, 12, 3, q)))


def test_combined_non_max_suppression_one_class_one_box():
    check_op(combined(5, 5, 0.5, 0.0), list(detections(3, 1, 1)))


def test_combined_non_max_suppression_at_run_time():
    """Unknown batch, box and class counts; sizes and thresholds fed; no boxes at all."""
    specs = [spec((None, None, 1, 4)), spec((None, None, None), name="x1"),
             spec((), "int32", "x2"), spec((), "int32", "x3"), spec((), name="x4"),
             spec((), name="x5")]
    fn = lambda b, s, n, t, i, c: raw.CombinedNonMaxSuppression(  # noqa: E731
        boxes=b, scores=s, max_output_size_per_class=n, max_total_size=t, iou_threshold=i,
        score_threshold=c, clip_boxes=False)
    sizes = [np.int32(3), np.int32(8), np.float32(0.4), np.float32(0.2)]
    check_op(fn, [*detections(2, 10, 4), *sizes], specs=specs,
             extra_inputs=[[*detections(1, 7, 2, seed=4), np.int32(2), np.int32(3),
                            np.float32(0.7), np.float32(0.0)],
                           [*detections(2, 0, 3), *sizes]])
