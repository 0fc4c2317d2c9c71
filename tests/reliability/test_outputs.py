"""What tf2ir writes (issue 10, items 2 and 4; DESIGN decisions 5 and 10): every output goes
through a unique temporary file beside the target, is checked by onnx.checker's full check
(by path: external data too) and only then renamed; a model the checker rejects is an error
naming the node and plugin, and nothing is written. Operands whose shapes disagree are a
conversion error naming the TF node at mapping time, before anything is lowered.

These run in-process on the library (the command-line fault scenarios are test_faults.py).
"""

from __future__ import annotations

import os
import threading

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from tensorboard.compat.proto import attr_value_pb2, graph_pb2, tensor_pb2, tensor_shape_pb2
from tensorboard.compat.proto import types_pb2

from tf2ir.ir import ConversionError, Graph, TensorDesc, op_prototype
from tf2ir.ir import text as ir_text
from tf2ir.ir.onnx import writer
from tf2ir.ir.onnx.compile import compile_to_file, ir_locator
from tf2ir.parser.pipeline import convert_file, convert_graph_def

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "data", "sample_cnn.pb")
A = attr_value_pb2.AttrValue
F32 = types_pb2.DT_FLOAT


# -- helpers ------------------------------------------------------------------------------
def relu_graph(size: int = 4, name: str = "g") -> Graph:
    """x (1, size) + a constant of `size` floats, then Relu: a small valid graph whose
    model file grows with `size`."""
    g = Graph(name)
    x = g.add_input("x", TensorDesc("float32", (1, size)))
    c = g.add_const(np.arange(size, dtype=np.float32) - size / 2, "c")
    add = g.add_node("Add", [x, c], name="add", output_descs=[TensorDesc("float32", (1, size))])
    relu = g.add_node("Relu", [add.outputs[0]], name="relu",
                      output_descs=[TensorDesc("float32", (1, size))])
    g.outputs.append(relu.outputs[0])
    return g


def run(path: str, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def files(directory) -> list:
    return sorted(os.listdir(directory))


@pytest.fixture
def bad_lowering(extra_prototypes):
    """IR op RelTestUnknownOp lowers to an ONNX op that does not exist; RelTestNothing
    lowers to nothing at all: models onnx.checker rejects."""
    unknown = op_prototype("RelTestUnknownOp", "lowers to an unknown ONNX op").input("x").output("y")
    unknown.infer(lambda node: [node.inputs[0].desc.copy()])
    unknown.lower(lambda ctx, node: ctx.emit("NoSuchOnnxOp", [ctx.input(0)], [ctx.output(0)]))
    nothing = op_prototype("RelTestNothing", "lowers to nothing").input("x").output("y")
    nothing.infer(lambda node: [node.inputs[0].desc.copy()])
    nothing.lower(lambda ctx, node: None)
    extra_prototypes(unknown, nothing)


def bad_graph(op_type: str) -> Graph:
    g = Graph("bad")
    x = g.add_input("x", TensorDesc("float32", (2, 3)))
    relu = g.add_node("Relu", [x], name="relu", output_descs=[TensorDesc("float32", (2, 3))])
    bad = g.add_node(op_type, [relu.outputs[0]], name="scope/bad",
                     output_descs=[TensorDesc("float32", (2, 3))])
    g.outputs.append(bad.outputs[0])
    g.provenance["scope/bad"] = "my_plugin"
    return g


# -- item 2: a unique temporary, renamed; nothing else left ---------------------------------
def test_the_fixed_temporary_name_is_gone(tmp_path):
    """A directory where the old fixed temporary `OUT.tmp` (and `OUT.ir.weights.tmp`) would
    go cannot stop a write: the temporaries have unique names."""
    out = tmp_path / "m.onnx"
    os.mkdir(f"{out}.tmp")
    compile_to_file(relu_graph(), str(out))
    assert files(tmp_path) == ["m.onnx", "m.onnx.tmp"]
    onnx.checker.check_model(str(out), full_check=True)
    ir_path = tmp_path / "m.ir"
    os.mkdir(f"{ir_path}.tmp")
    os.mkdir(f"{ir_path}.weights.tmp")
    ir_text.save(relu_graph(), str(ir_path))
    assert files(tmp_path) == ["m.ir", "m.ir.tmp", "m.ir.weights", "m.ir.weights.tmp",
                               "m.onnx", "m.onnx.tmp"]


def test_concurrent_writers_leave_one_complete_model(tmp_path):
    """Threads writing different models to one path: every write succeeds and the file is
    always one of the complete models, never a mix, and no temporary is left."""
    graphs = [relu_graph(250_000 + 1000 * i, f"g{i}") for i in range(4)]
    references = []
    for i, graph in enumerate(graphs):
        path = tmp_path / f"ref{i}.onnx"
        compile_to_file(graph, str(path))
        references.append(path.read_bytes())
    out = tmp_path / "shared" / "out.onnx"
    out.parent.mkdir()
    errors = []

    def write(index: int) -> None:
        try:
            for _ in range(3):
                compile_to_file(relu_graph(250_000 + 1000 * index, f"g{index}"), str(out))
        except Exception as exc:     # noqa: BLE001 - any failure fails the test
            errors.append(repr(exc))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert files(out.parent) == ["out.onnx"]
    assert out.read_bytes() in references


def test_a_failed_write_keeps_the_previous_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    out = tmp_path / "m.onnx"
    out.write_bytes(b"the previous model")

    def broken(model, blobs, tmp_path_):
        with open(tmp_path_, "wb") as f:
            f.write(b"half a model")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer, "_write_inline", broken)
    with pytest.raises(OSError):
        compile_to_file(relu_graph(), str(out))
    assert out.read_bytes() == b"the previous model"
    assert files(tmp_path) == ["m.onnx"]


def test_ir_save_writes_text_and_weights_together(tmp_path, monkeypatch):
    """If the weights cannot be written, neither file changes."""
    path = tmp_path / "m.ir"
    ir_text.save(relu_graph(), str(path))
    before = (path.read_bytes(), (tmp_path / "m.ir.weights").read_bytes())

    def broken(self, where):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ir_text._WeightsWriter, "write", broken)
    with pytest.raises(OSError):
        ir_text.save(relu_graph(8), str(path))
    assert (path.read_bytes(), (tmp_path / "m.ir.weights").read_bytes()) == before
    assert files(tmp_path) == ["m.ir", "m.ir.weights"]


def test_external_data_is_checked_by_path_and_renamed_with_the_model(tmp_path, monkeypatch):
    """Above the protobuf limit (lowered here) the weights go to OUT.data: both files are
    written as temporaries, the model checked while it names its temporary data file, then
    both renamed; the model names OUT.data and runs as the inline one does."""
    graph, _ = convert_file(SAMPLE)
    inline = tmp_path / "inline.onnx"
    compile_to_file(graph, str(inline))
    monkeypatch.setattr(writer, "PROTOBUF_LIMIT", (1 << 20) + 16)
    out = tmp_path / "ext" / "m.onnx"
    out.parent.mkdir()
    compile_to_file(convert_file(SAMPLE)[0], str(out))
    assert files(out.parent) == ["m.onnx", "m.onnx.data"]
    model = onnx.load(str(out), load_external_data=False)
    locations = {entry.value for t in model.graph.initializer for entry in t.external_data
                 if entry.key == "location"}
    assert locations == {"m.onnx.data"}
    onnx.checker.check_model(str(out), full_check=True)
    x = np.random.RandomState(0).uniform(size=(2, 32, 32, 3)).astype(np.float32)
    np.testing.assert_allclose(run(str(out), x), run(str(inline), x), rtol=1e-6, atol=1e-6)


# -- item 4: the checker before the rename --------------------------------------------------
@pytest.mark.parametrize("op_type", ["RelTestUnknownOp", "RelTestNothing"])
def test_a_model_the_checker_rejects_is_an_error_and_nothing_is_written(
        tmp_path, bad_lowering, op_type):
    out = tmp_path / "m.onnx"
    out.write_bytes(b"the previous model")
    with pytest.raises(ConversionError) as info:
        compile_to_file(bad_graph(op_type), str(out), model_name="m.pb")
    error = info.value
    # (a lowering that writes nothing is caught as it returns, before any checker)
    assert ("onnx.checker" if op_type == "RelTestUnknownOp" else
            "its ONNX lowering wrote nothing for output 'scope/bad'") in error.message
    assert "\n" not in str(error)
    assert (error.node, error.op_type, error.plugin, error.model) == \
        ("scope/bad", op_type, "my_plugin", "m.pb")
    assert out.read_bytes() == b"the previous model"
    assert files(tmp_path) == ["m.onnx"]


def test_a_rejected_model_with_external_data_writes_neither_file(
        tmp_path, bad_lowering, monkeypatch):
    monkeypatch.setattr(writer, "PROTOBUF_LIMIT", (1 << 20) + 16)
    graph = bad_graph("RelTestUnknownOp")
    graph.add_const(np.ones(64, np.float32), "unused")
    with pytest.raises(ConversionError, match="onnx.checker"):
        compile_to_file(graph, str(tmp_path / "m.onnx"))
    assert files(tmp_path) == []


def test_an_output_of_unknown_rank_is_checked_without_its_missing_shape(tmp_path, bad_lowering):
    """onnx.checker wants a shape for every graph output; an output of unknown rank (a Reshape
    to a shape fed at run time) has none and onnxruntime runs it: the model is checked as a
    variant without that output (written beside it, then removed) and written."""
    from tf2ir.ir.infer import infer_graph

    def reshaped(extra=None):
        g = Graph("g")
        x = g.add_input("x", TensorDesc("float32", (2, 3)))
        shape = g.add_input("shape", TensorDesc("int64", (None,)))
        y = g.add_node("Reshape", [x, shape], name="reshape").outputs[0]
        if extra:
            y = g.add_node(extra, [y], name="scope/bad").outputs[0]
        g.outputs.append(y)
        infer_graph(g)
        assert y.desc.shape is None
        return g

    out = tmp_path / "m.onnx"
    compile_to_file(reshaped(), str(out))
    assert files(tmp_path) == ["m.onnx"]
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    [y] = session.run(None, {"x": np.ones((2, 3), np.float32), "shape": np.array([3, 2])})
    assert y.shape == (3, 2)
    with pytest.raises(ConversionError, match="onnx.checker") as info:
        compile_to_file(reshaped("RelTestUnknownOp"), str(tmp_path / "bad.onnx"))
    assert info.value.node == "scope/bad"
    assert files(tmp_path) == ["m.onnx"]


def test_string_arrays_of_fixed_width_are_written_as_onnx_strings(tmp_path):
    """A numpy bytes/str array (dtype S or U) is a STRING tensor: its values go to
    string_data, never raw_data (which onnx.checker rejects)."""
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Identity", ["words"], ["y"], name="id")], "g", [],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.STRING, [2])])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 18)])
    model.ir_version = 9
    out = tmp_path / "s.onnx"
    writer.write_model(model, [("words", np.array([b"ab", b"c"]))], str(out))
    [tensor] = onnx.load(str(out)).graph.initializer
    assert tensor.data_type == onnx.TensorProto.STRING and list(tensor.string_data) == [b"ab", b"c"]
    assert not tensor.raw_data


def test_checker_messages_name_the_node():
    assert writer.checker_name("[ShapeInferenceError] Inference error(s): (op_type:Gemm, "
                               "node name: mm/Gemm_node): [ShapeInferenceError] x") == "mm/Gemm_node"
    assert writer.checker_name("No Op registered for Frob with domain_version of 18\n\n==> "
                               "Context: Bad node spec for node. Name: a/b OpType: Frob") == "a/b"
    assert writer.checker_name("Nodes in a graph must be topologically sorted, however input "
                               "'t' of node: \nname: r2 OpType: Relu\n is not output") == "r2"
    assert writer.checker_name("Graph output 'y' is not an output of any node in graph.") == "y"
    assert writer.checker_name("STRING data (tensor name: s) should not be stored") == "s"
    assert writer.checker_name("something else") is None


def test_onnx_names_lead_back_to_the_ir_node_and_its_plugin():
    graph, report = convert_file(SAMPLE)
    assert graph.provenance and graph.provenance == report.node_plugins
    locate = ir_locator(graph)
    where = locate("functional_1/conv2d_1/convolution/Conv_node_2")
    assert where == {"node": "functional_1/conv2d_1/convolution", "op_type": "Conv2D",
                     "plugin": "builtin_conv"}
    assert locate("Identity")["node"] == "functional_1/dense_1/Softmax"   # a value's producer
    assert locate("nothing/like/this") == {}


# -- item 4: shapes that disagree are a conversion error naming the TF node ----------------
def _shape(dims):
    return tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d)
                                                  for d in dims])


def _graph(x_dims, w_shape, op, **attrs):
    g = graph_pb2.GraphDef()
    x = g.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = F32
    x.attr["shape"].shape.CopyFrom(_shape(x_dims))
    w = g.node.add(name="w", op="Const")
    w.attr["dtype"].type = F32
    w.attr["value"].tensor.CopyFrom(tensor_pb2.TensorProto(
        dtype=F32, tensor_shape=_shape(w_shape),
        tensor_content=np.ones(w_shape, np.float32).tobytes()))
    node = g.node.add(name="the_op", op=op, input=["x", "w"])
    node.attr["T"].type = F32
    for key, value in attrs.items():
        node.attr[key].CopyFrom(value)
    return g


STRIDES = {"strides": A(list=A.ListValue(i=[1, 1, 1, 1])), "padding": A(s=b"SAME")}
STRIDES_3D = {"strides": A(list=A.ListValue(i=[1, 1, 1, 1, 1])), "padding": A(s=b"SAME")}
DISAGREEING = {
    "matmul": ([2, 3], [5, 4], "MatMul", {}, "contracted dims"),
    "matmul_transposed": ([2, 3], [4, 5], "MatMul", {"transpose_b": A(b=True)}, "contracted"),
    "batch_matmul": ([7, 2, 3], [7, 5, 4], "BatchMatMulV2", {}, "inner dims"),
    "conv2d": ([1, 8, 8, 3], [3, 3, 5, 4], "Conv2D", STRIDES, "channels"),
    "depthwise": ([1, 8, 8, 3], [3, 3, 5, 2], "DepthwiseConv2dNative", STRIDES, "channels"),
    "conv3d": ([1, 4, 8, 8, 3], [3, 3, 3, 5, 4], "Conv3D", STRIDES_3D, "channels"),
    "bias_add": ([1, 8, 8, 3], [5], "BiasAdd", {}, "the bias has 5 values"),
    "bias_add_nchw": ([1, 3, 8, 8], [8], "BiasAdd", {"data_format": A(s=b"NCHW")}, "3 channels"),
    "bias_add_2d_bias": ([1, 8, 8, 3], [1, 3], "BiasAdd", {}, "must be 1-D"),
}


@pytest.mark.parametrize("case", sorted(DISAGREEING))
def test_operands_that_disagree_are_a_conversion_error_at_mapping(case):
    x_dims, w_shape, op, attrs, needle = DISAGREEING[case]
    with pytest.raises(ConversionError) as info:
        convert_graph_def(_graph(x_dims, w_shape, op, **attrs), "m.pb")
    assert info.value.node == "the_op" and info.value.model == "m.pb"
    assert needle in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("x_dims, w_shape, op, attrs", [
    ([2, 3], [3, 4], "MatMul", {}),
    ([4, 2], [5, 4], "MatMul", {"transpose_a": A(b=True), "transpose_b": A(b=True)}),
    ([1, 8, 8, 4], [3, 3, 2, 6], "Conv2D", STRIDES),          # grouped: 2 groups
    ([1, 8, 8, 3], [3, 3, 3, 2], "DepthwiseConv2dNative", STRIDES),
    ([-1, 8, 8, -1], [3, 3, 5, 4], "Conv2D", STRIDES),       # unknown channels: no verdict
    ([1, 3, 8, 8], [3], "BiasAdd", {"data_format": A(s=b"NCHW")}),
])
def test_operands_that_agree_convert(x_dims, w_shape, op, attrs):
    graph, _ = convert_graph_def(_graph(x_dims, w_shape, op, **attrs), "m.pb")
    assert graph.nodes[-1].name == "the_op"
