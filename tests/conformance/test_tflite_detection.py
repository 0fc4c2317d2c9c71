"""TFLite_Detection_PostProcess (SSD postprocessing, a custom op) against the LiteRT
interpreter. TF's converter emits it for a SavedModel function declared with
`experimental_implements` naming the op and its attributes (as the TF object detection API's
TFLite export does); tf2ir decodes the boxes and runs NMS in IR ops."""

import numpy as np
import pytest

from tests.conformance.tflite_harness import convert_tflite

tf = pytest.importorskip("tensorflow")

TFLITE_TESTED = {"TFLite_Detection_PostProcess": ("float",)}

N, C = 12, 3


def _model(tmp_path, regular, per_detection, threshold, max_detections=5):
    rng = np.random.default_rng(7)
    centres = rng.uniform(0.2, 0.8, (N, 2))
    anchors = np.concatenate([centres, rng.uniform(0.2, 0.4, (N, 2))], 1).astype(np.float32)
    attrs = {"max_detections": ("i", max_detections), "max_classes_per_detection":
             ("i", per_detection), "detections_per_class": ("i", 3),
             "use_regular_nms": ("b", "true" if regular else "false"),
             "nms_score_threshold": ("f", threshold), "nms_iou_threshold": ("f", 0.4),
             "y_scale": ("f", 10.0), "x_scale": ("f", 10.0), "h_scale": ("f", 5.0),
             "w_scale": ("f", 5.0), "num_classes": ("i", C)}
    signature = " ".join(['name: "TFLite_Detection_PostProcess"'] + [
        f'attr {{ key: "{k}" value {{ {kind}: {v} }} }}' for k, (kind, v) in attrs.items()])

    @tf.function(experimental_implements=signature)
    def postprocess(boxes, scores, anchors):
        zero = tf.constant(0.0)
        return zero, zero, zero, zero

    class Detector(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, N, 4]), tf.TensorSpec([1, N, C + 1])])
        def detect(self, boxes, scores):
            return postprocess(boxes, scores, tf.constant(anchors))

    module = Detector()
    saved = tmp_path / "saved"
    tf.saved_model.save(module, str(saved), signatures=module.detect)
    converter = tf.lite.TFLiteConverter.from_saved_model(str(saved))
    converter.allow_custom_ops = True
    path = tmp_path / "detect.tflite"
    path.write_bytes(converter.convert())
    return path


@pytest.mark.parametrize("regular,per_detection,threshold", [
    (False, 1, 0.1), (False, 2, 0.3), (True, 1, 0.2), (False, 1, 0.85), (True, 1, 0.85)],
    ids=["fast", "fast_two_classes", "regular", "fast_few", "regular_few"])
def test_detection_postprocess(tmp_path, regular, per_detection, threshold):
    from tf2ir.parser.tflite_model import read_tflite
    from tf2ir.tools.runtime import InferenceSession
    from tf2ir.tools.tflite_reference import run_tflite
    path = _model(tmp_path, regular, per_detection, threshold)
    assert [op.op_type for op in read_tflite(str(path)).subgraphs[0].operators] == \
        ["TFLite_Detection_PostProcess"]
    onnx_path = tmp_path / "detect.onnx"
    convert_tflite(str(path), str(onnx_path))
    sess = InferenceSession(str(onnx_path))
    names = {i.name.split("_")[-1].split(":")[0]: i.name for i in sess.get_inputs()}
    rng = np.random.default_rng(11)
    counts = set()
    for _ in range(4):
        feeds = {names["boxes"]: rng.normal(0, 1, (1, N, 4)).astype(np.float32),
                 names["scores"]: rng.uniform(0, 1, (1, N, C + 1)).astype(np.float32)}
        want = run_tflite(str(path), feeds)
        got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
        assert set(got) == set(want)
        outputs = sorted(want)        # PartitionedCall:0..3: boxes, classes, scores, count
        count = int(want[outputs[3]][0])
        counts.add(count)
        assert got[outputs[3]].tolist() == [count]
        rows = count * per_detection  # TFLite's fast NMS leaves rows past the count unset
        np.testing.assert_allclose(got[outputs[0]][:, :rows], want[outputs[0]][:, :rows],
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got[outputs[1]][:, :rows], want[outputs[1]][:, :rows])
        np.testing.assert_array_equal(got[outputs[2]][:, :rows], want[outputs[2]][:, :rows])
        assert not got[outputs[2]][:, rows:].any()    # tf2ir zero-fills them
    if threshold > 0.5:
        assert min(counts) < 5      # some feeds leave rows unused
