"""An op with no form at the asked opset (issue 23): one error naming the model, the node and
its op, the ONNX op and the opsets that hold it, exit status 1 (FAILED: the model converts at
those opsets), and no file; the lowerings' forms by opset (LayerNorm's formula before 17)."""

from __future__ import annotations

import subprocess

import numpy as np
import onnx
import pytest

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.onnx import forms
from tf2ir.ir.onnx.compile import compile_to_file, compile_to_model
from tf2ir.parser.pipeline import convert_file
from tf2ir.tools.models import freeze_function
from tests.conformance.harness import _manager

tf = pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def bitwise_pb(tmp_path_factory):
    pb = str(tmp_path_factory.mktemp("forms") / "band.pb")
    freeze_function(lambda a, b: tf.bitwise.bitwise_and(a, b),
                    [tf.TensorSpec((3,), tf.int32, name="a"), tf.TensorSpec((3,), tf.int32, name="b")],
                    pb)
    return pb


def test_an_op_newer_than_the_target_is_one_error_naming_node_op_and_opset(bitwise_pb, tmp_path):
    out = tmp_path / "m.onnx"
    for opset in (13, 17):
        graph, _ = convert_file(bitwise_pb, _manager())
        with pytest.raises(ConversionError) as info:
            compile_to_file(graph, str(out), model_name="band.pb", opset=opset)
        assert str(info.value) == (
            "model band.pb, node 'BitwiseAnd', op BitwiseAnd, plugin builtin_bitwise: ONNX "
            f"BitwiseAnd needs opset 18 or newer; asked for opset {opset}")
        assert info.value.exit_code == ExitStatus.FAILED and not out.exists()
    graph, _ = convert_file(bitwise_pb, _manager())
    model = compile_to_model(graph, "band.pb", opset=18)
    assert [n.op_type for n in model.graph.node] == ["BitwiseAnd"]


def test_the_command_line_exits_1_with_the_one_line_and_writes_nothing(bitwise_pb, tmp_path):
    out = tmp_path / "m.onnx"
    done = subprocess.run(["tf2ir", "convert", bitwise_pb, "-o", str(out), "--opset", "16"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.startswith("tf2ir: error:")]
    assert lines == [f"tf2ir: error: model {bitwise_pb}, node 'BitwiseAnd', op BitwiseAnd, "
                     "plugin builtin_bitwise: ONNX BitwiseAnd needs opset 18 or newer; asked "
                     "for opset 16"], done.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_opsets_that_hold_a_form_are_named_when_they_are_not_all_newer(monkeypatch):
    """A form that ends (a converter refusing from 21 on) names the opsets that hold it; one
    that no opset holds says so (GroupNormalization's per-group form of 18 is deprecated in
    onnx, 21's is per channel); a form error's reason follows in parentheses."""
    def refuse(node):
        raise node.fail("its meaning changes there")
    monkeypatch.setitem(forms.FORMS, "Relu", [((21, None), refuse)])
    with pytest.raises(ConversionError) as info:
        forms.adapt("Relu", "", ["x"], {}, 22, lambda n: None, lambda a: "c")
    assert str(info.value) == ("op Relu: ONNX Relu has no form at opset 22; opsets 13-20 hold it "
                               "(its meaning changes there)")
    assert info.value.exit_code == ExitStatus.FAILED
    with pytest.raises(ConversionError, match="ONNX GroupNormalization has no form at opset 21; "
                       r"no opset tf2ir writes holds it \(its scale and bias are per channel"):
        forms.adapt("GroupNormalization", "", ["x", "s", "b"], {"num_groups": 2}, 21,
                    lambda n: None, lambda a: "c")
    axes = {"axes": np.array([1], np.int64)}
    with pytest.raises(ConversionError, match=r"ONNX ScatterND needs opset 16 or newer; asked for "
                       r"opset 15 \(attribute reduction='add' is newer\)$"):
        forms.adapt("ScatterND", "", ["x", "i", "u"], {"reduction": b"add"}, 15, axes.get, None)
    # the newest opset onnx defines is a target, whether or not onnxruntime runs it
    newest = onnx.defs.onnx_opset_version()
    assert forms.adapt("Tanh", "", ["x"], {}, newest, axes.get, None) == ("Tanh", ["x"], {})


def _layer_norm_pb(tmp_path):
    import keras
    layer = keras.layers.LayerNormalization(axis=-1, epsilon=1e-3)
    layer.build((2, 4, 6))
    layer.gamma.assign(np.linspace(0.5, 1.5, 6, dtype=np.float32))
    layer.beta.assign(np.linspace(-1, 1, 6, dtype=np.float32))
    pb = str(tmp_path / "ln.pb")
    freeze_function(lambda x: layer(x), [tf.TensorSpec((2, 4, 6), tf.float32, name="x")], pb)
    return pb, layer


def test_layer_norm_is_its_formula_before_17_and_one_node_from_17(tmp_path):
    import onnxruntime as ort
    pb, layer = _layer_norm_pb(tmp_path)
    x = np.random.default_rng(3).standard_normal((2, 4, 6)).astype(np.float32)
    want = layer(x).numpy()
    for opset, has_node in ((13, False), (16, False), (17, True), (None, True)):
        graph, _ = convert_file(pb, _manager())
        assert "LayerNorm" in {n.op_type for n in graph.nodes}
        model = compile_to_model(graph, pb, opset=opset)
        types = {n.op_type for n in model.graph.node}
        assert ("LayerNormalization" in types) == has_node, (opset, types)
        onnx.checker.check_model(model, full_check=True)
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        np.testing.assert_allclose(session.run(None, {"x": x})[0], want, rtol=1e-4, atol=1e-4)
