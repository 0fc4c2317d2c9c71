"""Half precision (ir/onnx/precision.py, precision_convert.py): small TF graphs converted with
--precision fp16 and --weights fp16 run in onnxruntime's CPU provider and match TensorFlow.

Tolerances: float16 rounds each stored tensor to 2^-11 (4.9e-4) of its value; these graphs
chain at most ~6 rounded tensors (input, weights, a few activations), so their outputs stay
within ~3e-3 of the output's scale; the bound is 1e-2 of TF's largest output (a 3x margin).
--weights fp16 rounds only the weights: 3e-3. float32 conversions of the same graphs match to
1e-5, so each check also asserts that the fp16 model differs from the float32 one (it did
compute in float16)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tests.conformance.harness import _manager
from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.export import ExportOptions
from tf2ir.ir.onnx.compile import compile_to_model
from tf2ir.parser.pipeline import convert_file
from tf2ir.tools.models import freeze_function, run_frozen_graph

tf = pytest.importorskip("tensorflow")

F32, F16 = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16
RNG = np.random.default_rng(0)
W_CONV = RNG.standard_normal((3, 3, 4, 16)).astype(np.float32) * 0.3
GAMMA = RNG.uniform(0.5, 1.5, 16).astype(np.float32)
BETA = RNG.standard_normal(16).astype(np.float32)
MEAN = RNG.standard_normal(16).astype(np.float32) * 0.1
VAR = RNG.uniform(0.5, 2.0, 16).astype(np.float32)
W_MM = RNG.standard_normal((64, 64)).astype(np.float32) * 0.125
TABLE = RNG.standard_normal((50, 64)).astype(np.float32)
W_A = RNG.standard_normal((32, 32)).astype(np.float32) * 0.2
W_B = RNG.standard_normal((32, 32)).astype(np.float32) * 0.2


def _conv_bn_relu(x):
    y = tf.nn.conv2d(x, W_CONV, 1, "SAME")
    y, _, _ = tf.compat.v1.nn.fused_batch_norm(y, GAMMA, BETA, MEAN, VAR, is_training=False)
    return tf.nn.relu(y)


def _attention(x, ids):
    """matmul + softmax + layer norm; `ids` (int32) index an embedding table."""
    h = tf.gather(TABLE, ids) + x
    scores = tf.nn.softmax(tf.matmul(h, W_MM) @ tf.transpose(h, (0, 2, 1)) / 8.0)
    y = scores @ h + h
    mean, var = tf.nn.moments(y, axes=[-1], keepdims=True)
    return (y - mean) * tf.math.rsqrt(var + 1e-3) * 1.5 + 0.25


def _branchy(x, flag):
    return tf.cond(flag, lambda: tf.nn.relu(x @ W_A), lambda: tf.tanh(x @ W_B) * 2.0)


CASES = {
    "conv": (_conv_bn_relu, [tf.TensorSpec((1, 12, 12, 4), tf.float32, name="x")],
             lambda: [RNG.standard_normal((1, 12, 12, 4)).astype(np.float32)]),
    "attention": (_attention, [tf.TensorSpec((2, 16, 64), tf.float32, name="x"),
                               tf.TensorSpec((2, 16), tf.int32, name="ids")],
                  lambda: [RNG.standard_normal((2, 16, 64)).astype(np.float32),
                           RNG.integers(0, 50, (2, 16)).astype(np.int32)]),
    "if": (_branchy, [tf.TensorSpec((4, 32), tf.float32, name="x"),
                      tf.TensorSpec((), tf.bool, name="flag")],
           lambda: [RNG.standard_normal((4, 32)).astype(np.float32), np.array(False)]),
}


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    folder = tmp_path_factory.mktemp("precision")
    made = {}
    for name, (fn, specs, _) in CASES.items():
        path = str(folder / f"{name}.pb")
        made[name] = (path, freeze_function(fn, specs, path))
    return made


def _compile(pb, **options):
    graph, _ = convert_file(pb, _manager())
    model = compile_to_model(graph, pb, export=ExportOptions(**options).check())
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    return model


def _run(model, feeds, optimized=None):
    options = ort.SessionOptions()
    if optimized:
        options.optimized_model_filepath = optimized
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: feeds[i.name] for i in session.get_inputs()})


def _feeds(name, frozen):
    fn, specs, make = CASES[name]
    arrays = make()
    pb, outputs = frozen[name]
    feeds = {s.name: a for s, a in zip(specs, arrays)}
    want = run_frozen_graph(pb, {f"{k}:0": v for k, v in feeds.items()}, outputs)[0]
    return pb, feeds, want


def _elem_types(infos):
    return {v.name: v.type.tensor_type.elem_type for v in infos}


def _cast_pairs(graph):
    """Casts whose input another Cast writes (the rewrite must never pile them up)."""
    cast_out = {n.output[0] for n in graph.node if n.op_type == "Cast"}
    return [n.name for n in graph.node if n.op_type == "Cast" and n.input[0] in cast_out]


def _init_dtype_of(model, op_type):
    """The dtypes of the initializers the `op_type` nodes read directly."""
    inits = {i.name: i.data_type for i in model.graph.initializer}
    return {inits[n] for node in model.graph.node if node.op_type == op_type
            for n in node.input if n in inits}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fp16_runs_and_matches_tf(name, frozen):
    pb, feeds, want = _feeds(name, frozen)
    scale = float(np.abs(want).max())
    got32 = _run(_compile(pb), feeds)[0]
    model = _compile(pb, precision="fp16")
    got16 = _run(model, feeds)[0]
    assert got16.dtype == np.float32          # io stays float32 by default
    assert np.abs(got32 - want).max() <= 1e-5 * scale
    err = float(np.abs(got16 - want).max())
    assert err <= 1e-2 * scale, f"fp16 error {err} vs scale {scale}"
    assert err > np.abs(got32 - want).max(), "the fp16 model computed nothing in float16"
    # the interface: float inputs and outputs float32, the int input untouched
    inputs = _elem_types(model.graph.input)
    assert inputs["x"] == F32 and set(_elem_types(model.graph.output).values()) == {F32}
    if name == "attention":
        assert inputs["ids"] == onnx.TensorProto.INT32
    assert not _cast_pairs(model.graph)


def test_fp16_weights_and_kept_ops(frozen):
    """Compute ops read float16 weights; Softmax and LayerNormalization (or its reductions)
    read and write float32 between Casts."""
    pb, _, _ = _feeds("attention", frozen)
    model = _compile(pb, precision="fp16")
    assert _init_dtype_of(model, "MatMul") == {F16}
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    types = _elem_types(list(inferred.graph.value_info) + list(inferred.graph.output))
    kept = [n for n in inferred.graph.node if n.op_type in ("Softmax", "LayerNormalization")]
    assert kept
    for node in kept:
        assert types[node.output[0]] == F32, node.op_type
    matmuls = [n for n in inferred.graph.node if n.op_type == "MatMul"]
    assert matmuls and all(types[n.output[0]] == F16 for n in matmuls)


def test_fp16_if_subgraphs_are_consistent(frozen):
    pb, feeds, want = _feeds("if", frozen)
    model = _compile(pb, precision="fp16")
    ifs = [n for n in model.graph.node if n.op_type == "If"]
    assert ifs, "the cond did not stay an If"
    for branch in (a.g for a in ifs[0].attribute):
        assert set(_elem_types(branch.output).values()) == {F16}
        assert not _cast_pairs(branch)
    for flag in (False, True):
        feeds["flag"] = np.array(flag)
        want = run_frozen_graph(pb, {f"{k}:0": v for k, v in feeds.items()},
                                frozen["if"][1])[0]
        got = _run(model, feeds)[0]
        assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()


def test_io_precision_fp16(frozen):
    pb, feeds, want = _feeds("attention", frozen)
    model = _compile(pb, precision="fp16", io_precision="fp16")
    inputs = _elem_types(model.graph.input)
    assert inputs == {"x": F16, "ids": onnx.TensorProto.INT32}
    assert set(_elem_types(model.graph.output).values()) == {F16}
    feeds["x"] = feeds["x"].astype(np.float16)
    got = _run(model, feeds)[0]
    assert got.dtype == np.float16
    assert np.abs(got.astype(np.float32) - want).max() <= 1e-2 * np.abs(want).max()


def _initializer_bytes(model):
    return sum(onnx.numpy_helper.to_array(i).nbytes for i in model.graph.initializer)


@pytest.mark.parametrize("name", ["conv", "attention"])
def test_weights_fp16_halves_storage_computes_float32(name, frozen, tmp_path):
    pb, feeds, want = _feeds(name, frozen)
    full = _compile(pb)
    model = _compile(pb, weights="fp16")
    ratio = _initializer_bytes(model) / _initializer_bytes(full)
    assert 0.45 <= ratio <= 0.55, ratio
    # every compute node still reads float32: the weights go through Casts to float32 alone
    casts = [n for n in model.graph.node if n.op_type == "Cast"]
    assert casts and all(a.i == F32 for n in casts for a in n.attribute if a.name == "to")
    optimized = str(tmp_path / "opt.onnx")
    got = _run(model, feeds, optimized)[0]
    assert np.abs(got - want).max() <= 3e-3 * np.abs(want).max()
    # onnxruntime folds the decompressing Casts when the session is made
    assert "Cast" not in {n.op_type for n in onnx.load(optimized).graph.node}


def test_io_precision_alone_is_a_usage_error(frozen):
    pb, _, _ = _feeds("conv", frozen)
    graph, _ = convert_file(pb, _manager())
    with pytest.raises(ConversionError) as info:
        compile_to_model(graph, pb, export=ExportOptions(io_precision="fp16"))
    assert info.value.exit_code == ExitStatus.USAGE
    assert "--precision fp16" in str(info.value)
