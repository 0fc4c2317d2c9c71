"""Mapping scenarios of the CANN guide on real TF graphs: auto mapping, computed attributes
(TopKV2 → TopK), format-sensitive ops (NHWC/NCHW data, HWCN filters)."""

from __future__ import annotations

import numpy as np

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.tools.models import run_frozen_graph


def _node_line(text, op_type):
    return next(line for line in text.splitlines() if f" {op_type}(" in line)


def test_topkv2_maps_to_topk_with_computed_attributes(freeze, tmp_path):
    import tensorflow as tf
    path, outputs = freeze(lambda x: tf.math.top_k(x, k=3, sorted=True),
                           tf.TensorSpec([None, 6], tf.float32, name="x"))
    ir_path, onnx_path = str(tmp_path / "m.ir"), str(tmp_path / "m.onnx")
    assert run_cli("convert", path, "-o", ir_path).returncode == 0
    line = _node_line(open(ir_path).read(), "TopK")
    assert "sorted: bool true" in line and "dim: int -1" in line and "largest: bool true" in line
    assert "T:" not in line            # a dtype attribute: it lives on the tensors
    assert run_cli("compile", ir_path, "-o", onnx_path).returncode == 0
    x = np.random.RandomState(0).permutation(24).reshape(4, 6).astype(np.float32)
    values, indices = run_onnx(onnx_path, {"x": x})
    ref_values, ref_indices = run_frozen_graph(path, {"x": x}, outputs)
    np.testing.assert_array_equal(values, ref_values)
    assert indices.dtype == np.int32
    np.testing.assert_array_equal(indices, ref_indices)


def test_auto_mapping_converts_and_appends_attributes(freeze, tmp_path):
    """Conv2D: declared attrs converted; use_cudnn_on_gpu (undeclared) appended; _-attrs dropped."""
    import tensorflow as tf
    w = np.random.RandomState(0).normal(size=(3, 3, 2, 4)).astype(np.float32)
    path, _ = freeze(lambda x: tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME", dilations=1),
                     tf.TensorSpec([1, 8, 8, 2], tf.float32, name="x"))
    ir_path = str(tmp_path / "m.ir")
    assert run_cli("convert", path, "-o", ir_path).returncode == 0
    line = _node_line(open(ir_path).read(), "Conv2D")
    assert "strides: ints [1, 2, 2, 1]" in line and 'padding: str "SAME"' in line
    assert "use_cudnn_on_gpu: bool true" in line
    assert "_output_shapes" not in line and "T:" not in line


def test_formats_in_the_ir_nhwc_data_and_hwcn_filter(freeze, tmp_path):
    import tensorflow as tf
    w = np.random.RandomState(1).normal(size=(3, 3, 2, 4)).astype(np.float32)
    path, _ = freeze(lambda x: tf.reshape(tf.nn.relu(tf.nn.conv2d(x, w, 1, "VALID")), [-1, 144]),
                     tf.TensorSpec([None, 8, 8, 2], tf.float32, name="x"))
    ir_path = str(tmp_path / "m.ir")
    assert run_cli("convert", path, "-o", ir_path).returncode == 0
    text = open(ir_path).read()
    assert "input %x: float32[?,8,8,2] NHWC" in text
    assert "float32[3,3,2,4] HWCN" in text                      # the filter Const's output
    assert _node_line(text, "Conv2D").endswith("float32[?,6,6,4] NHWC")
    assert _node_line(text, "Relu").endswith("NHWC")       # elementwise ops keep the format
    assert _node_line(text, "Reshape").endswith("float32[?,144]")  # ND: no format shown


def _to_nchw(graph_def):
    """Rewrite a frozen NHWC conv/pool/bias graph into data_format NCHW (TF's CPU kernels
    refuse NCHW convolutions, so the reference stays the NHWC graph)."""
    perm = [0, 3, 1, 2]
    for node in graph_def.node:
        if "data_format" in node.attr:
            node.attr["data_format"].s = b"NCHW"
            for key in ("strides", "ksize", "dilations"):
                if key in node.attr and len(node.attr[key].list.i) == 4:
                    values = list(node.attr[key].list.i)
                    del node.attr[key].list.i[:]
                    node.attr[key].list.i.extend([values[p] for p in perm])
        if node.op == "Placeholder":
            dims = node.attr["shape"].shape.dim
            sizes = [d.size for d in dims]
            for d, p in zip(dims, perm):
                d.size = sizes[p]
    return graph_def


def test_nchw_graph_converts_correctly(freeze, tmp_path):
    import tensorflow as tf
    from tf2ir.parser.load import load_graph_def
    rng = np.random.RandomState(2)
    w = rng.normal(size=(3, 3, 3, 5)).astype(np.float32)
    dw = rng.normal(size=(3, 3, 5, 2)).astype(np.float32)
    bias = rng.normal(size=(10,)).astype(np.float32)

    def fn(x):
        y = tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME")
        y = tf.nn.depthwise_conv2d(y, dw, strides=[1, 1, 1, 1], padding="VALID")
        y = tf.nn.bias_add(y, bias)
        y = tf.nn.max_pool2d(y, 2, 2, "VALID")
        return tf.nn.avg_pool2d(y, 2, 1, "SAME")
    path, outputs = freeze(fn, tf.TensorSpec([None, 16, 16, 3], tf.float32, name="x"))
    nchw = tmp_path / "nchw.pb"
    nchw.write_bytes(_to_nchw(load_graph_def(path)).SerializeToString())
    ir_path, onnx_path = str(tmp_path / "m.ir"), str(tmp_path / "m.onnx")
    result = run_cli("convert", str(nchw), "-o", ir_path)
    assert result.returncode == 0, result.stderr
    text = open(ir_path).read()
    assert "input %x: float32[?,3,16,16] NCHW" in text
    assert _node_line(text, "Conv2D").endswith("float32[?,5,8,8] NCHW")
    assert run_cli("compile", ir_path, "-o", onnx_path).returncode == 0
    x = rng.normal(size=(2, 16, 16, 3)).astype(np.float32)
    expected = run_frozen_graph(path, {"x": x}, outputs)[0]
    got = run_onnx(onnx_path, {"x": x.transpose(0, 3, 1, 2)})[0]
    assert max_abs_error(got, expected.transpose(0, 3, 1, 2)) <= 1e-4
