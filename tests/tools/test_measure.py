"""tools/measure.py's speed check (issue 22): the chain model, the floor, the phase lines."""

from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import numpy_helper
from tensorboard.compat.proto import graph_pb2

from tf2ir.parser.pipeline import convert_graph_def
from tf2ir.tools import measure


def test_the_chain_alternates_relu_and_neg_each_reading_the_one_before():
    graph_def = measure.chain_graph_def(5, width=3)
    assert [(n.name, n.op, list(n.input)) for n in graph_def.node] == [
        ("x", "Placeholder", []), ("n0", "Relu", ["x"]), ("n1", "Neg", ["n0"]),
        ("n2", "Relu", ["n1"]), ("n3", "Neg", ["n2"]), ("n4", "Relu", ["n3"])]
    graph, report = convert_graph_def(graph_def, "chain")
    assert report.ir_nodes == 5 and graph.outputs[0].desc.shape == (1, 3)


def test_the_floor_writes_every_constant_as_an_initializer(tmp_path):
    graph_def = graph_pb2.GraphDef()
    weights = np.arange(6, dtype=np.float32).reshape(2, 3)
    node = graph_def.node.add(name="w", op="Const")
    tensor = node.attr["value"].tensor
    tensor.dtype = 1
    for size in weights.shape:
        tensor.tensor_shape.dim.add(size=size)
    tensor.tensor_content = weights.tobytes()
    splat = graph_def.node.add(name="s", op="Const")   # TF's repeated last value
    splat.attr["value"].tensor.dtype = 3
    splat.attr["value"].tensor.tensor_shape.dim.add(size=4)
    splat.attr["value"].tensor.int_val.extend([7])
    graph_def.node.add(name="r", op="Relu", input=["w"])
    model, out = tmp_path / "m.pb", tmp_path / "m.onnx"
    model.write_bytes(graph_def.SerializeToString())
    assert measure.main(["--floor-of", str(model), str(out)]) == 0
    arrays = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(out)).graph.initializer}
    assert set(arrays) == {"w", "s"}
    np.testing.assert_array_equal(arrays["w"], weights)
    np.testing.assert_array_equal(arrays["s"], np.full(4, 7, np.int32))


def test_a_command_measures_its_phase_lines():
    code = "import sys; sys.stderr.write('tf2ir: mapping  1.250 s\\ntf2ir: compile  0.5 s\\n')"
    result = measure.run_measured([sys.executable, "-c", code])
    assert result.ok and result.phases == {"mapping": 1.25, "compile": 0.5}


def test_convert_is_measured_beside_the_floor(tmp_path, capsys):
    model = tmp_path / "chain.pb"
    assert measure.main(["--make", "chain", str(model), "--chain-nodes", "20"]) == 0
    assert measure.main(["-n", "1", "--convert", str(model)]) == 0
    lines = capsys.readouterr().out.splitlines()
    convert = next(line for line in lines if line.endswith(f"tf2ir convert {model}"))
    assert "failed" not in convert
    assert any(line.endswith(f"floor {model}") and "failed" not in line for line in lines)
    assert any("mapping" in line and "compile" in line for line in lines)
    assert any(line.strip().startswith("cpu ratio to the floor") for line in lines)
