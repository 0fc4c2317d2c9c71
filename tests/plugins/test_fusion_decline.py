"""Scope fusions decline (issue 20, class 3): a pattern that matches while a condition of the
fusion does not hold leaves the nodes to their own plugins, with a `-v` line saying why; only
a pass the user switched on by name (`--fusion on:NAME`) turns that decline into an error."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.parser.scope_fusion import requested_by_name
from tf2ir.tools.models import run_frozen_graph

GAMMA = np.array([0.5, 1.5, 2.0, 0.8], np.float32)
BETA = np.array([0.1, -0.3, 0.2, 0.0], np.float32)


def group_norm_over_time(x):
    """transformers' TFWav2Vec2GroupNorm with one group per channel, in a scope named
    `layer_norm` as the model names it: moments over the time axis, then batch_normalization
    with gamma and beta reshaped to [1, 1, C]."""
    import tensorflow as tf
    with tf.name_scope("layer_norm"):
        mean, variance = tf.nn.moments(x, [1], keepdims=True)
        return tf.nn.batch_normalization(x, mean, variance, tf.reshape(BETA, [1, 1, 4]),
                                         tf.reshape(GAMMA, [1, 1, 4]), 1e-5)


def rms_over_middle_axis(x):
    import tensorflow as tf
    return x * tf.math.rsqrt(tf.reduce_mean(tf.square(x), axis=[1], keepdims=True) + 1e-6)


def _freeze(freeze, fn, shape, name):
    import tensorflow as tf
    return freeze(fn, tf.TensorSpec(shape, tf.float32, name="x"), name)


def _convert(path, tmp_path, *options):
    out = str(tmp_path / "m.onnx")
    return run_cli("convert", path, "-o", out, *options), out


@pytest.mark.parametrize("fn, fusion, shape, options", [
    (group_norm_over_time, "layer_norm", (None, 5, 4), ()),
    (rms_over_middle_axis, "rms_norm", (None, 5, 4), ()),
    # the graph does not say the rank (known only from --inputs, at mapping): axes [1] may
    # or may not be the trailing ones, so the fusion declines rather than guess
    (group_norm_over_time, "layer_norm", None, ("--inputs", "x:?,5,4")),
], ids=["group-norm-over-time", "rms-over-middle-axis", "unknown-rank"])
def test_declined_match_converts_unfused_and_matches_tf(freeze, tmp_path, fn, fusion, shape,
                                                         options):
    path, outputs = _freeze(freeze, fn, shape, fusion)
    result, out = _convert(path, tmp_path, "-v", *options)
    assert result.returncode == 0, result.stderr
    assert f"fusion {fusion} declines" in result.stderr
    assert "trailing axes" in result.stderr
    import onnx
    op_types = {n.op_type for n in onnx.load(out).graph.node}
    assert "LayerNormalization" not in op_types and "ReduceMean" in op_types
    x = np.random.RandomState(0).normal(1, 2, (2, 5, 4)).astype(np.float32)
    expected = run_frozen_graph(path, {"x": x}, outputs)[0]
    assert np.ptp(expected) > 0.1
    assert max_abs_error(run_onnx(out, {"x": x})[0], expected) <= 1e-5


def test_declines_only_silently_without_v(freeze, tmp_path):
    path, _ = _freeze(freeze, group_norm_over_time, (None, 5, 4), "gn")
    result, out = _convert(path, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "declines" not in result.stderr and os.path.exists(out)


def test_a_pass_asked_for_by_name_turns_its_decline_into_an_error(freeze, tmp_path):
    path, _ = _freeze(freeze, group_norm_over_time, (None, 5, 4), "gn")
    result, out = _convert(path, tmp_path, "--fusion", "on:layer_norm")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "fusion pass layer_norm: declines this match" in lines[0]
    assert "axes [1] of a rank-3 input" in lines[0] and "node 'layer_norm'" in lines[0]
    assert not os.path.exists(out)
    # ... and a later word that switches it (or all) back on without the name does not
    result, out = _convert(path, tmp_path, "--fusion", "on:layer_norm,off:all,on:all")
    assert result.returncode == 0, result.stderr


def test_trailing_layer_norm_still_fuses(freeze, tmp_path):
    """The same scope over the channel axis is a LayerNorm: fused, and matches the formula.
    (Not TF's run of the frozen graph: its CPU grappler rewrites this pattern into a fused
    layer norm that differs by 1.6e-3 here.)"""
    import tensorflow as tf

    def fn(x):
        with tf.name_scope("layer_norm"):
            mean, variance = tf.nn.moments(x, [2], keepdims=True)
            return tf.nn.batch_normalization(x, mean, variance, BETA, GAMMA, 1e-5)
    path, outputs = _freeze(freeze, fn, (None, 5, 4), "ln")
    result, out = _convert(path, tmp_path, "--fusion", "on:layer_norm")
    assert result.returncode == 0, result.stderr
    import onnx
    assert "LayerNormalization" in {n.op_type for n in onnx.load(out).graph.node}
    x = np.random.RandomState(1).normal(1, 2, (2, 5, 4)).astype(np.float64)
    expected = (x - x.mean(2, keepdims=True)) / np.sqrt(x.var(2, keepdims=True) + 1e-5) \
        * GAMMA + BETA
    got = run_onnx(out, {"x": x.astype(np.float32)})[0]
    assert max_abs_error(got, expected) <= 1e-5


@pytest.mark.parametrize("words, named", [
    (None, set()), ("on:all", set()), ("on:gelu", {"gelu"}), ("on:gelu,off:gelu", set()),
    ("on:gelu,off:all", set()), (["on:gelu", "on:swish,off:swish"], {"gelu"}),
    ({"all": False, "gelu": True}, {"gelu"}),
])
def test_requested_by_name(words, named):
    assert requested_by_name(words) == named
