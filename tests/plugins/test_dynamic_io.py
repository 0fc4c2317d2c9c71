"""Dynamic inputs/outputs (DynamicInputOutputInfo): ports x0..xN-1 counted by a TF attribute."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.tools.models import run_frozen_graph


def _convert_and_compare(path, outputs, feeds, tmp_path):
    ir_path, onnx_path = str(tmp_path / "m.ir"), str(tmp_path / "m.onnx")
    result = run_cli("convert", path, "-o", ir_path)
    assert result.returncode == 0, result.stderr
    assert run_cli("compile", ir_path, "-o", onnx_path).returncode == 0
    got = run_onnx(onnx_path, feeds)
    expected = run_frozen_graph(path, feeds, outputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if e.dtype.kind in "iub":
            np.testing.assert_array_equal(g, e)
        else:
            assert max_abs_error(g, e) <= 1e-6
    return open(ir_path).read()


def test_concat_pack_unpack_split_splitv_identity_n(freeze, tmp_path):
    import tensorflow as tf

    def fn(a, b):
        c = tf.concat([a, b, a * 2.0], axis=1)                    # ConcatV2, N=3
        s = tf.stack([a, b], axis=0)                              # Pack, N=2
        u0, u1, u2 = tf.unstack(c[:, :3], num=3, axis=1)          # Unpack, num=3
        p0, p1 = tf.split(c, 2, axis=1)                           # Split, num_split=2
        q0, q1, q2 = tf.split(c, [1, -1, 2], axis=1)              # SplitV with -1
        i0, i1 = tf.identity_n([u0 + u1, u2])                     # IdentityN, N=2
        return s, p0, p1 * q0, q1, q2, i0, i1
    spec = [tf.TensorSpec([None, 4], tf.float32, name="a"), tf.TensorSpec([None, 4], tf.float32, name="b")]
    path, outputs = freeze(fn, spec)
    rng = np.random.RandomState(0)
    feeds = {"a": rng.normal(size=(3, 4)).astype(np.float32), "b": rng.normal(size=(3, 4)).astype(np.float32)}
    text = _convert_and_compare(path, outputs, feeds, tmp_path)
    concat_line = next(line for line in text.splitlines() if " ConcatV2(" in line)
    assert "x0=" in concat_line and "x2=" in concat_line and "concat_dim=" in concat_line
    assert "N: int 3" in concat_line
    assert "num_split: int 2" in next(line for line in text.splitlines() if " Split(" in line)
    unpack_line = next(line for line in text.splitlines() if " Unpack(" in line)
    assert unpack_line.count(": float32[") == 3   # three outputs y0..y2
    assert " IdentityN(x0=" in text


def test_boosted_trees_bucketize_the_guides_example(freeze, tmp_path):
    """TF 2.21 still defines the op but ships no kernel for it, so the reference is its
    documented rule (TF's kernel took std::upper_bound): the count of boundaries <= value."""
    import tensorflow as tf
    bounds = [np.array([0.0, 1.0, 2.0], np.float32), np.array([-1.0, 5.0], np.float32)]

    def fn(f0, f1):
        return tf.raw_ops.BoostedTreesBucketize(float_values=[f0, f1], bucket_boundaries=bounds)
    spec = [tf.TensorSpec([None], tf.float32, name="f0"), tf.TensorSpec([None], tf.float32, name="f1")]
    path, _ = freeze(fn, spec)
    feeds = {"f0": np.array([-0.5, 0.0, 0.5, 1.0, 2.5], np.float32),
             "f1": np.array([-3.0, -1.0, 4.0, 5.0, 9.0], np.float32)}
    ir_path, onnx_path = str(tmp_path / "m.ir"), str(tmp_path / "m.onnx")
    result = run_cli("convert", path, "-o", ir_path)
    assert result.returncode == 0, result.stderr
    assert run_cli("compile", ir_path, "-o", onnx_path).returncode == 0
    got = run_onnx(onnx_path, feeds)
    for g, values, b in zip(got, feeds.values(), bounds):
        assert g.dtype == np.int32
        np.testing.assert_array_equal(g, np.searchsorted(b, values, side="right"))
    line = next(line for line in open(ir_path).read().splitlines() if "BoostedTreesBucketize(" in line)
    for port in ("float_values0=", "float_values1=", "bucket_boundaries0=", "bucket_boundaries1="):
        assert port in line
    assert "num_features: int 2" in line and line.count(": int32[") == 2


def test_dynamic_info_rejects_a_bad_port_type():
    from tf2ir.plugins import DynamicInputOutputInfo
    with pytest.raises(ValueError):
        DynamicInputOutputInfo("inout", "x", "N")


def test_count_mismatch_is_reported_with_the_node():
    from tensorboard.compat.proto import graph_pb2
    from tf2ir.ir import ConversionError
    from tf2ir.parser import convert_graph_def
    graph_def = graph_pb2.GraphDef()
    for name in ("a", "b"):
        node = graph_def.node.add(name=name, op="Placeholder")
        node.attr["dtype"].type = 1
        node.attr["shape"].shape.dim.add(size=2)
    axis = graph_def.node.add(name="axis", op="Const")
    axis.attr["value"].tensor.dtype = 3
    axis.attr["value"].tensor.int_val.append(0)
    concat = graph_def.node.add(name="cat", op="ConcatV2", input=["a", "b", "axis"])
    concat.attr["N"].i = 3     # lies: two inputs to join
    with pytest.raises(ConversionError) as info:
        convert_graph_def(graph_def, "hand.pb")
    assert "'cat'" in str(info.value) and "ConcatV2" in str(info.value)
