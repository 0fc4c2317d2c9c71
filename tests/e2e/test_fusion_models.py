"""Scope fusion on real TF graphs: Keras LayerNormalization, RMS normalization (Keras
RMSNormalization and T5's norm written out), GELU (erfc, tanh and erf forms), swish and
hard-swish, frozen with TF, converted with the CLI, compiled from the saved IR,
run in onnxruntime and compared with TensorFlow; `--fusion off:NAME` keeps the TF ops."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.tools.models import run_frozen_graph


def convert(path, tmp_path, *options, tag="m"):
    """CLI conversion to IR text; the saved IR compiled and run later. Returns (text, stderr)."""
    ir_path = str(tmp_path / f"{tag}.ir")
    result = run_cli("convert", path, "--emit", "ir", "-o", ir_path, *options)
    assert result.returncode == 0, result.stderr
    return open(ir_path).read(), result.stderr, ir_path


def assert_matches_tf(ir_path, pb_path, outputs, x, tol=1e-5):
    from tf2ir.ir.onnx.compile import compile_to_file
    from tf2ir.ir.text import load
    onnx_path = ir_path[:-3] + ".onnx"
    compile_to_file(load(ir_path), onnx_path)
    expected = run_frozen_graph(pb_path, {"x": x}, outputs)[0]
    assert np.ptp(expected) > 0.1
    assert max_abs_error(run_onnx(onnx_path, {"x": x})[0], expected) <= tol


def ops(text):
    """IR op type → count, from the text form."""
    found = re.findall(r'^\s*node "[^"]*" (\w+)\(', text, re.M)
    return {op: found.count(op) for op in set(found)}


def keras_model(build, shape):
    import keras
    keras.utils.set_random_seed(0)
    inputs = keras.Input(shape)
    return keras.Model(inputs, build(inputs))


def frozen(freeze, model_or_fn, shape, name):
    import tensorflow as tf
    fn = model_or_fn if not hasattr(model_or_fn, "layers") else (
        lambda t: model_or_fn(t, training=False))
    return freeze(fn, tf.TensorSpec((None,) + shape, tf.float32, name="x"), name)


def sample(shape, batch=3, seed=0):
    return np.random.RandomState(seed).normal(0, 2, (batch,) + shape).astype(np.float32)


# -- LayerNorm ----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, options", [
    ((6,), {}),
    ((3, 5), {"axis": [1, 2], "center": False, "epsilon": 1e-4}),
], ids=["dense-ln", "rank3-two-axes-no-beta"])
def test_keras_layer_norm_fuses(freeze, tmp_path, shape, options):
    import keras

    def build(inputs):
        x = keras.layers.Dense(shape[-1])(inputs)
        norm = keras.layers.LayerNormalization(**options)
        y = norm(x)
        rng = np.random.RandomState(1)   # gamma and beta away from 1 and 0
        norm.gamma.assign(rng.uniform(0.5, 1.5, norm.gamma.shape).astype("float32"))
        if norm.beta is not None:
            norm.beta.assign(rng.normal(0, 0.5, norm.beta.shape).astype("float32"))
        return y
    path, outputs = frozen(freeze, keras_model(build, shape), shape, "ln")
    x = sample(shape)

    text, stderr, ir_path = convert(path, tmp_path, "-v")
    found = ops(text)
    assert found.get("LayerNorm") == 1, text
    assert not {"SquaredDifference", "Rsqrt", "ReduceMean", "Neg"} & set(found), text
    assert "begin_norm_axis: int 1" in text   # axis -1 of rank 2, axes [1, 2] of rank 3
    epsilon = float(re.search(r"epsilon: float ([0-9.e-]+)", text).group(1))
    assert epsilon == pytest.approx(options.get("epsilon", 1e-3), rel=1e-6)
    assert "fused    layer_norm: 1 match" in stderr
    assert_matches_tf(ir_path, path, outputs, x)

    text, stderr, ir_path = convert(path, tmp_path, "--fusion", "off:layer_norm", "-v", tag="off")
    found = ops(text)
    assert "LayerNorm" not in found and found.get("SquaredDifference") == 1 and "Rsqrt" in found
    assert "fused" not in stderr
    assert_matches_tf(ir_path, path, outputs, x)


# -- Gelu -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("approximate, gone", [(False, {"Erfc", "Neg"}),
                                               (True, {"Tanh", "Pow"})], ids=["erfc", "tanh"])
def test_dense_with_keras_gelu_fuses(freeze, tmp_path, approximate, gone):
    import keras
    model = keras_model(lambda t: keras.layers.Dense(8)(t), (5,))
    path, outputs = frozen(freeze, lambda t: keras.activations.gelu(model(t), approximate=approximate),
                           (5,), "gelu")
    text, _, ir_path = convert(path, tmp_path)
    found = ops(text)
    assert found.get("Gelu") == 1 and found.get("MatMul") == 1, text
    assert not gone & set(found) and "Mul" not in found, text
    assert f'approximate: str "{"tanh" if approximate else "none"}"' in text
    assert_matches_tf(ir_path, path, outputs, sample((5,)))


def test_written_out_erf_gelu_fuses_and_switches_off(freeze, tmp_path):
    import tensorflow as tf
    path, outputs = freeze(lambda x: tf.tanh(0.5 * x * (1.0 + tf.math.erf(x / tf.sqrt(2.0)))),
                           tf.TensorSpec([None, 7], tf.float32, name="x"), "gelu_erf")
    x = sample((7,))
    text, _, ir_path = convert(path, tmp_path)
    assert ops(text) == {"Gelu": 1, "Tanh": 1}, text
    assert_matches_tf(ir_path, path, outputs, x)

    text, _, ir_path = convert(path, tmp_path, "--fusion", "off:gelu", tag="off")
    found = ops(text)
    assert "Gelu" not in found and found.get("Erf") == 1 and found.get("Sqrt") == 1
    assert_matches_tf(ir_path, path, outputs, x)


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_beside_an_op_that_opset_20_changes_keeps_opset_18(approximate, freeze, tmp_path):
    """Gelu alone makes the model opset 20; beside a DFT (whose axis becomes an input at 20)
    the model stays at 18 and Gelu is written from its formula."""
    import onnx
    import tensorflow as tf

    def gelu_only(x):
        return tf.nn.gelu(x, approximate=approximate)

    def with_fft(x):
        return tf.math.real(tf.signal.rfft(gelu_only(x)))
    for fn, opset in ((gelu_only, 20), (with_fft, 18)):
        path, outputs = freeze(fn, tf.TensorSpec((None, 8), tf.float32, name="x"), fn.__name__)
        text, _, ir_path = convert(path, tmp_path, tag=fn.__name__)
        assert ops(text).get("Gelu") == 1, text
        for batch in (1, 4):
            assert_matches_tf(ir_path, path, outputs, sample((8,), batch=batch), tol=1e-4)
        model = onnx.load(ir_path[:-3] + ".onnx")
        assert [o.version for o in model.opset_import if o.domain == ""] == [opset]
        assert ("Gelu" in {n.op_type for n in model.graph.node}) == (opset == 20)


# -- RMSNorm -----------------------------------------------------------------------------------
def _t5_norm(inputs):
    """T5's layer norm as keras-hub writes it (its weight comes after)."""
    from keras import ops as kops
    return inputs * kops.rsqrt(kops.mean(kops.square(inputs), axis=-1, keepdims=True) + 1e-6)


@pytest.mark.parametrize("how", ["keras", "t5", "unscaled"])
def test_rms_norm_fuses_into_the_form_onnxruntime_fuses(how, freeze, tmp_path):
    import keras
    import onnx
    import onnxruntime as ort

    def build(inputs):
        x = keras.layers.Dense(8)(inputs)
        if how == "keras":
            norm = keras.layers.RMSNormalization(epsilon=1e-5)
            x = norm(x)
            norm.scale.assign(np.linspace(0.5, 1.5, 8).astype(np.float32))
        elif how == "t5":
            x = _t5_norm(x) * np.linspace(1.5, 0.5, 8).astype(np.float32)
        else:
            x = _t5_norm(x)
        return keras.layers.Dense(3)(x)
    path, outputs = frozen(freeze, keras_model(build, (5, 6)), (5, 6), how)
    text, stderr, ir_path = convert(path, tmp_path, "-v")
    found = ops(text)
    assert found.get("RMSNorm") == 1 and not {"Rsqrt", "Square", "Mean"} & set(found), text
    assert "fused    rms_norm: 1 match" in stderr
    for batch in (1, 3):
        assert_matches_tf(ir_path, path, outputs, sample((5, 6), batch=batch))
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(ir_path[:-3] + ".onnx", options, providers=["CPUExecutionProvider"])
    fused = [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node]
    if how != "unscaled":     # onnxruntime's fusion needs the scale's Mul
        assert "SimplifiedLayerNormalization" in fused and "Sqrt" not in fused, fused

    text, _, ir_path = convert(path, tmp_path, "--fusion", "off:rms_norm", tag="off")
    assert "RMSNorm" not in ops(text) and "Rsqrt" in ops(text)
    assert_matches_tf(ir_path, path, outputs, sample((5, 6)))


def test_a_mean_that_is_not_over_the_last_axis_stays_unfused(freeze, tmp_path):
    from keras import ops as kops     # (`ops` here counts IR ops)

    def build(inputs):
        return inputs * kops.rsqrt(kops.mean(kops.square(inputs), axis=1, keepdims=True) + 1e-6)
    path, outputs = frozen(freeze, keras_model(build, (5, 6)), (5, 6), "middle_axis")
    text, _, ir_path = convert(path, tmp_path)
    assert "RMSNorm" not in ops(text) and "Rsqrt" in ops(text)
    assert_matches_tf(ir_path, path, outputs, sample((5, 6)))


# -- swish (many-to-one) and hard-swish (many-to-many) ---------------------------------------------
def test_swish_fuses_and_is_reported(freeze, tmp_path):
    import keras
    from tf2ir.parser.pipeline import convert_file

    def build(inputs):
        x = keras.layers.Conv2D(4, 3, activation="swish")(inputs)
        x = keras.layers.GlobalAveragePooling2D()(x)
        return keras.layers.Dense(3, activation="silu")(x)
    path, outputs = frozen(freeze, keras_model(build, (6, 6, 2)), (6, 6, 2), "swish")
    text, stderr, ir_path = convert(path, tmp_path, "-v")
    found = ops(text)
    assert found.get("Swish") == 2 and "Sigmoid" not in found and "IdentityN" not in found, text
    assert "beta: float 1" in text
    assert "fused    swish: 2 matches" in stderr
    assert_matches_tf(ir_path, path, outputs, sample((6, 6, 2)))

    _, report = convert_file(path)
    assert report.fusions == {"swish": 2}
    _, report = convert_file(path, fusion={"swish": False})
    assert report.fusions == {}


def test_hard_swish_becomes_two_ir_ops(freeze, tmp_path):
    """Many-to-many: x * relu6(x + 3) / 6 (4 TF ops) → HardSigmoid and Mul."""
    import keras

    def build(inputs):
        x = keras.layers.Dense(6)(inputs)
        return keras.layers.Activation("hard_swish")(x)
    path, outputs = frozen(freeze, keras_model(build, (4,)), (4,), "hard_swish")
    x = sample((4,)) * 2
    text, stderr, ir_path = convert(path, tmp_path, "-v")
    found = ops(text)
    assert found.get("HardSigmoid") == 1 and found.get("Mul") == 1, text
    assert not {"Relu6", "RealDiv", "Add"} & set(found), text
    assert "fused    hard_swish: 1 match" in stderr
    assert_matches_tf(ir_path, path, outputs, x)

    text, _, ir_path = convert(path, tmp_path, "--fusion", "off:hard_swish", tag="off")
    assert "HardSigmoid" not in ops(text) and "Relu6" in ops(text)
    assert_matches_tf(ir_path, path, outputs, x)


# -- the option's errors --------------------------------------------------------------------------
@pytest.mark.parametrize("option, value, needle", [
    ("--fusion", "of:gelu", "bad --fusion value 'of:gelu'"),
    ("--fusion", "off:no_such_pass", "--fusion names unknown pass 'no_such_pass'"),
    ("--passes", "off:nonsense", "unknown pass 'nonsense'"),
    ("--passes", "layout", "bad --passes value 'layout'")])
def test_bad_pass_switch_is_a_usage_error(tmp_path, option, value, needle):
    import os
    sample_pb = os.path.join(os.path.dirname(__file__), "..", "data", "sample_cnn.pb")
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", sample_pb, "-o", out, option, value)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], result.stderr
    assert not os.path.exists(out)


def test_passes_off_gives_the_same_results(tmp_path):
    """The passes change the graph, not what it computes: off:all keeps the Transposes
    and batch-norm arithmetic of the lowering, and both models agree."""
    import os

    import onnx
    sample_pb = os.path.join(os.path.dirname(__file__), "..", "data", "sample_cnn.pb")
    outs = {}
    for label, switch in (("on", []), ("off", ["--passes", "off:all"])):
        outs[label] = str(tmp_path / f"{label}.onnx")
        result = run_cli("convert", sample_pb, "-o", outs[label], *switch)
        assert result.returncode == 0, result.stderr
    sizes = {k: len(onnx.load(v).graph.node) for k, v in outs.items()}
    assert sizes["on"] < sizes["off"], sizes
    model = onnx.load(outs["on"])
    dims = [d.dim_value or 1 for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.RandomState(0).uniform(0, 1, [2] + dims[1:]).astype(np.float32)
    name = model.graph.input[0].name
    on, off = (run_onnx(outs[k], {name: x})[0] for k in ("on", "off"))
    np.testing.assert_allclose(on, off, rtol=1e-4, atol=1e-5)
