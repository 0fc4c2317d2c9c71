"""Built-in TFLITE mapping of the `TFLite_Detection_PostProcess` custom op (SSD postprocessing;
its options a flexbuffer map the view decodes into attributes): box decoding and non-max
suppression in IR ops.

Inputs: box encodings [1, N, >= 4] (ty, tx, th, tw), class scores [1, N, classes (+1 for a
background class, first)], anchors [N, 4] (y, x, h, w). Boxes decode to corners:
centre = t / scale * anchor size + anchor centre, half size = exp(t / scale) * size / 2.
Outputs: boxes [1, D, 4] (ymin, xmin, ymax, xmax), classes [1, D], scores [1, D] (float),
num_detections [1], D = max_detections * max_classes_per_detection, unused rows zero.

* use_regular_nms: per-class NMS (detections_per_class per class), the best max_detections
  over all classes: the IR's CombinedNonMaxSuppression, without clipping or per-class padding.
* else (fast NMS): each anchor's best max_classes_per_detection classes (TopK); NMS over the
  anchors' best scores (the IR's NonMaxSuppression padded to max_detections); each kept anchor
  gives its box with each of its top classes.

TFLite keeps scores >= nms_score_threshold, TF's NMS (and ONNX's) those above it: the
threshold passes as the float32 just below it, which keeps exactly the same scores.
"""

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.plugins import hookimpl
from tf2ir.plugins.tflite import required, tflite_subgraph


def _op(graph, op_type, inputs, attrs=None, name=None, num_outputs=None):
    node = graph.add_op(op_type, inputs, attrs, name=name, num_outputs=num_outputs)
    return node.outputs if num_outputs else node.outputs[0]


def _c(graph, value, dtype, name):
    return graph.const(np.asarray(value, dtype), name)


def _decode(src, graph, encodings, anchors):
    """[N, 4] corner boxes of the encodings (their first four values) at the anchors."""
    enc = _op(graph, "Slice", [encodings, _c(graph, [0, 0], np.int32, "begin"),
                               _c(graph, [-1, 4], np.int32, "size")], name="encodings")
    ty, tx, th, tw = _op(graph, "Unpack", [enc], {"num": 4, "axis": 1}, "enc", 4)
    ay, ax, ah, aw = _op(graph, "Unpack", [anchors], {"num": 4, "axis": 1}, "anchor", 4)

    def scaled(t, key):
        scale = float(src.attr(key, 0.0) or 0.0)
        if scale == 0.0:
            raise ConversionError(f"option {key} is zero")
        return _op(graph, "RealDiv", [t, _c(graph, scale, np.float32, key)], name=f"{key}_t")

    half = _c(graph, 0.5, np.float32, "half")
    yc = _op(graph, "Add", [_op(graph, "Mul", [scaled(ty, "y_scale"), ah], name="dy"), ay],
             name="yc")
    xc = _op(graph, "Add", [_op(graph, "Mul", [scaled(tx, "x_scale"), aw], name="dx"), ax],
             name="xc")
    hh = _op(graph, "Mul", [_op(graph, "Mul", [half, _op(graph, "Exp", [scaled(th, "h_scale")],
                                                          name="eh")], name="hh0"), ah], name="hh")
    hw = _op(graph, "Mul", [_op(graph, "Mul", [half, _op(graph, "Exp", [scaled(tw, "w_scale")],
                                                          name="ew")], name="hw0"), aw], name="hw")
    corners = [_op(graph, "Sub", [yc, hh], name="ymin"), _op(graph, "Sub", [xc, hw], name="xmin"),
               _op(graph, "Add", [yc, hh], name="ymax"), _op(graph, "Add", [xc, hw], name="xmax")]
    return _op(graph, "Pack", corners, {"N": 4, "axis": 1}, name="boxes")


def detection_postprocess(src, graph) -> None:
    encodings, predictions, anchors = (required(src, graph, p) for p in (0, 1, 2))
    num_classes = int(src.attr("num_classes", 0))
    max_det = int(src.attr("max_detections", 0))
    per_det = int(src.attr("max_classes_per_detection", 1))
    shape = predictions.desc.shape
    if shape is None or len(shape) != 3 or shape[2] is None:
        raise ConversionError("the class predictions need a static [1, N, classes] shape")
    offset = shape[2] - num_classes
    if offset not in (0, 1) or num_classes <= 0 or max_det <= 0 or per_det <= 0:
        raise ConversionError(f"num_classes {num_classes} does not fit {shape[2]} class scores "
                              "(or max_detections / max_classes_per_detection is not positive)")
    iou = _c(graph, float(src.attr("nms_iou_threshold", 0.5)), np.float32, "iou")
    threshold = np.nextafter(np.float32(src.attr("nms_score_threshold", 0.0)),
                             np.float32(-np.inf))
    score_threshold = _c(graph, threshold, np.float32, "score_threshold")
    squeeze = {"axis": [0]}
    boxes = _decode(src, graph, _op(graph, "Squeeze", [encodings], squeeze, "enc2d"),
                    anchors)
    scores = _op(graph, "Slice", [_op(graph, "Squeeze", [predictions], squeeze, "scores2d"),
                                  _c(graph, [0, offset], np.int32, "begin"),
                                  _c(graph, [-1, num_classes], np.int32, "size")], name="scores")
    if src.attr("use_regular_nms", False):
        outs = _regular(src, graph, boxes, scores, max_det, iou, score_threshold)
    else:
        outs = _fast(graph, boxes, scores, max_det, min(per_det, num_classes), per_det, iou,
                     score_threshold)
    graph.set_outputs(outs)


def _regular(src, graph, boxes, scores, max_det, iou, score_threshold):
    per_class = int(src.attr("detections_per_class", 100))
    nms = graph.add_op("CombinedNonMaxSuppression", [
        _op(graph, "Reshape", [boxes, _c(graph, [1, -1, 1, 4], np.int32, "shape")], name="b4"),
        _op(graph, "ExpandDims", [scores, _c(graph, 0, np.int32, "axis")], name="s3"),
        _c(graph, per_class, np.int32, "per_class"), _c(graph, max_det, np.int32, "total"),
        iou, score_threshold], {"pad_per_class": False, "clip_boxes": False}, name="nms")
    found_boxes, found_scores, found_classes, valid = nms.outputs
    count = _op(graph, "Cast", [valid], {"dst_type": "float32"}, name="num_detections")
    return [found_boxes, found_classes, found_scores, count]


def _fast(graph, boxes, scores, max_det, k, per_det, iou, score_threshold):
    if per_det != k:
        raise ConversionError(f"max_classes_per_detection {per_det} exceeds num_classes {k}: "
                              "TFLite leaves the extra rows unset")
    values, indices = _op(graph, "TopK", [scores, _c(graph, k, np.int32, "k")],
                          name="top_classes", num_outputs=2)
    best = _op(graph, "Squeeze", [_op(graph, "Slice", [values, _c(graph, [0, 0], np.int32, "b"),
                                                        _c(graph, [-1, 1], np.int32, "s")],
                                      name="best2d")], {"axis": [1]}, name="best")
    selected, valid = graph.add_op(
        "NonMaxSuppression", [boxes, best, _c(graph, max_det, np.int32, "max_det"), iou,
                              score_threshold, None],
        {"num_extra": 1, "pad_to_max_output_size": True}, name="nms", num_outputs=2).outputs
    axis = _c(graph, 0, np.int32, "axis0")
    row = _op(graph, "Range", [_c(graph, 0, np.int32, "start"), _c(graph, max_det, np.int32, "limit"),
                               _c(graph, 1, np.int32, "delta")], name="rows")
    keep = _op(graph, "ExpandDims", [_op(graph, "Less", [row, valid], name="kept"),
                                     _c(graph, 1, np.int32, "axis1")], name="keep")

    def pick(table, name, dims):
        got = _op(graph, "GatherV2", [table, selected, axis], name=f"{name}_all")
        zero = _c(graph, 0, np.float32, f"{name}_zero")
        if got.desc.dtype != "float32":
            got = _op(graph, "Cast", [got], {"dst_type": "float32"}, name=f"{name}_float")
        got = _op(graph, "SelectV2", [keep, got, zero], name=f"{name}_kept")
        return _op(graph, "Reshape", [got, _c(graph, dims, np.int32, f"{name}_shape")], name=name)

    picked_boxes = pick(boxes, "picked_boxes", [max_det, 1, 4])
    picked_boxes = _op(graph, "Tile", [picked_boxes, _c(graph, [1, k, 1], np.int32, "reps")],
                       name="boxes_per_class")
    out_boxes = _op(graph, "Reshape", [picked_boxes, _c(graph, [1, max_det * k, 4], np.int32,
                                                        "box_shape")], name="detection_boxes")
    classes = pick(indices, "detection_classes", [1, max_det * k])
    found_scores = pick(values, "detection_scores", [1, max_det * k])
    count = _op(graph, "Reshape", [_op(graph, "Cast", [valid], {"dst_type": "float32"},
                                       name="count"), _c(graph, [1], np.int32, "one")],
                name="num_detections")
    return [out_boxes, classes, found_scores, count]


MAPPINGS = [
    tflite_subgraph("TFLite_Detection_PostProcess").parse_op_to_graph_fn(detection_postprocess),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
