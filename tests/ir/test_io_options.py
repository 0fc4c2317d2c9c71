"""Channels-first and renamed graph inputs/outputs (ExportOptions; ir/io_options.py): each model
is converted, run in onnxruntime and compared with TensorFlow on the same (transposed) data;
the layout pass cancels the Transposes a convolution needed; bad names are one usage error."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tests.conformance.harness import _manager
from tests.conftest import run_cli
from tests.ir.onnx.test_pass_common import check_pass, node, op_types
from tf2ir.ir import Graph, TensorDesc
from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.export import ExportOptions
from tf2ir.ir.infer import infer_graph
from tf2ir.ir.io_options import apply_io_options, interface_map
from tf2ir.ir.onnx.compile import compile_to_model
from tf2ir.ir.onnx.passes.layout import sink_transposes
from tf2ir.parser.pipeline import convert_file
from tf2ir.tools.models import freeze_function, run_frozen_graph

tf = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(0)
W2 = RNG.standard_normal((3, 3, 3, 5)).astype(np.float32)
W1 = RNG.standard_normal((3, 2, 4)).astype(np.float32)
W3 = RNG.standard_normal((2, 2, 2, 2, 3)).astype(np.float32)
NCHW = (0, 3, 1, 2)
FEAT, VEC = "Identity", "Identity_1"     # the frozen function's outputs


def _conv_net(x, s):
    """Two outputs: a conv's activation (NHWC) and a vector; `s` is a rank-2 side input."""
    y = tf.nn.relu(tf.nn.conv2d(x * 2.0 + 1.0, W2, 1, "SAME"))
    y = tf.nn.max_pool2d(y, 2, 2, "VALID")
    return y, tf.reduce_mean(y, axis=[1, 2]) + s


@pytest.fixture(scope="module")
def conv_pb(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("io") / "conv.pb")
    assert freeze_function(_conv_net, [tf.TensorSpec((None, 8, 6, 3), tf.float32, name="x"),
                                       tf.TensorSpec((None, 5), tf.float32, name="s")],
                           path) == [FEAT + ":0", VEC + ":0"]
    return path


def _compile(pb, **options):
    graph, _ = convert_file(pb, _manager())
    model = compile_to_model(graph, pb, export=ExportOptions(**options).check())
    onnx.checker.check_model(model, full_check=True)
    return model


def _run(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def _io(model):
    graph = model.graph
    dims = {i.name: [d.dim_value or d.dim_param for d in i.type.tensor_type.shape.dim]
            for i in list(graph.input) + list(graph.output)}
    return [i.name for i in graph.input], [o.name for o in graph.output], dims


def _types(model):
    return [n.op_type for n in model.graph.node]


def _feeds():
    return (RNG.standard_normal((2, 8, 6, 3)).astype(np.float32),
            RNG.standard_normal((2, 5)).astype(np.float32))


def test_conv_model_channels_first_in_and_out_keeps_no_transpose(conv_pb):
    x, s = _feeds()
    feat, vec = run_frozen_graph(conv_pb, {"x": x, "s": s}, [FEAT + ":0", VEC + ":0"])
    model = _compile(conv_pb, inputs_as_nchw=("x:0",), outputs_as_nchw=(FEAT,))
    inputs, outputs, dims = _io(model)
    assert inputs == ["x", "s"] and outputs == [FEAT, VEC]
    assert dims["x"][1:] == [3, 8, 6] and dims[FEAT][1:] == [5, 4, 3]
    assert "Transpose" not in _types(model), _types(model)
    got = _run(model, {"x": x.transpose(NCHW), "s": s})
    np.testing.assert_allclose(got[FEAT], feat.transpose(NCHW), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[VEC], vec, rtol=1e-5, atol=1e-5)
    # without the options: the NHWC input keeps its Transpose before the Conv
    plain = _compile(conv_pb)
    assert _types(plain).count("Transpose") == 2 and _io(plain)[2]["x"][1:] == [8, 6, 3]


def test_renamed_inputs_and_outputs_keep_their_values(conv_pb):
    x, s = _feeds()
    feat, vec = run_frozen_graph(conv_pb, {"x": x, "s": s}, [FEAT + ":0", VEC + ":0"])
    model = _compile(conv_pb, rename_inputs={"x:0": "image", "s": "side"},
                     rename_outputs={FEAT: "features", VEC + ":0": "vector"})
    inputs, outputs, _ = _io(model)
    assert inputs == ["image", "side"] and outputs == ["features", "vector"]
    names = {n for node in model.graph.node for n in list(node.input) + list(node.output)}
    assert not names & {"x", "s", FEAT, VEC}
    got = _run(model, {"image": x, "side": s})
    np.testing.assert_allclose(got["features"], feat, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["vector"], vec, rtol=1e-5, atol=1e-5)


def test_rename_and_channels_first_name_the_original_input(conv_pb):
    """Channels-first names are the ORIGINAL names, whatever the rename; inputs may swap
    names."""
    x, s = _feeds()
    feat, vec = run_frozen_graph(conv_pb, {"x": x, "s": s}, [FEAT + ":0", VEC + ":0"])
    model = _compile(conv_pb, inputs_as_nchw=("x",), outputs_as_nchw=(FEAT + ":0",),
                     rename_inputs={"x": "s", "s": "x"}, rename_outputs={FEAT: "out"})
    inputs, outputs, dims = _io(model)
    assert inputs == ["s", "x"] and outputs == ["out", VEC]
    assert dims["s"][1:] == [3, 8, 6] and dims["x"][1:] == [5] and dims["out"][1:] == [5, 4, 3]
    assert "Transpose" not in _types(model)
    got = _run(model, {"s": x.transpose(NCHW), "x": s})
    np.testing.assert_allclose(got["out"], feat.transpose(NCHW), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[VEC], vec, rtol=1e-5, atol=1e-5)
    onnx_in, onnx_out = interface_map(
        ExportOptions(inputs_as_nchw=("x",), outputs_as_nchw=(FEAT + ":0",),
                      rename_inputs={"x": "s", "s": "x"}, rename_outputs={FEAT: "out"}),
        {"s": 4, "x": 2}, {"out": 4, VEC: 2})
    assert onnx_in == {"s": ("x", NCHW), "x": ("s", None)}
    assert onnx_out == {"out": (FEAT, NCHW), VEC: (VEC, None)}


@pytest.mark.parametrize("rank", [3, 5])
def test_rank_3_and_5_channels_second(tmp_path, rank):
    if rank == 3:
        def net(x):
            return tf.nn.relu(tf.nn.conv1d(x, W1, 1, "SAME"))
        shape = (2, 7, 2)
    else:
        def net(x):
            return tf.nn.relu(tf.nn.conv3d(x, W3, [1] * 5, "SAME"))
        shape = (1, 4, 5, 6, 2)
    pb = str(tmp_path / "net.pb")
    out = freeze_function(net, tf.TensorSpec(shape, tf.float32, name="x"), pb)[0]
    x = RNG.standard_normal(shape).astype(np.float32)
    want = run_frozen_graph(pb, {"x": x}, [out])[0]
    name = out.split(":")[0]
    model = _compile(pb, inputs_as_nchw=("x",), outputs_as_nchw=(name,))
    assert "Transpose" not in _types(model), _types(model)
    perm = (0, rank - 1) + tuple(range(1, rank - 1))
    got = _run(model, {"x": x.transpose(perm)})[name]
    np.testing.assert_allclose(got, want.transpose(perm), rtol=1e-5, atol=1e-5)


def test_subgraph_readers_of_a_renamed_channels_first_input():
    """An If's branches read the outer input itself (a Relu of it; the other branch gives it
    as its output): both read the channels-last tensor under the new names."""
    g = Graph()
    x = g.add_input("x", TensorDesc("float32", (1, 3, 4, 2), "NHWC", "NHWC"))
    c = g.add_input("c", TensorDesc("bool", ()))
    then, other = Graph("then"), Graph("else")
    then.outputs = [then.add_node("Relu", [x], name="inner").outputs[0]]
    other.outputs = [x]
    node = g.add_node("If", [c], {"then_branch": then, "else_branch": other}, name="if",
                      output_descs=[TensorDesc("float32")])
    g.outputs = [g.add_node("Neg", [node.outputs[0]], name="y").outputs[0]]
    infer_graph(g)
    model = compile_to_model(g, "hand", export=ExportOptions(
        inputs_as_nchw=("x",), rename_inputs={"x": "image"}, rename_outputs={"y": "out"}))
    onnx.checker.check_model(model, full_check=True)
    inputs, outputs, dims = _io(model)
    assert inputs == ["image", "c"] and outputs == ["out"] and dims["image"] == [1, 2, 3, 4]
    value = RNG.standard_normal((1, 3, 4, 2)).astype(np.float32)
    for flag, want in ((True, -np.maximum(value, 0)), (False, -value)):
        got = _run(model, {"image": value.transpose(NCHW), "c": np.array(flag)})["out"]
        np.testing.assert_allclose(got, want)


def test_applying_twice_changes_nothing_more_and_other_options_are_refused(conv_pb):
    graph, _ = convert_file(conv_pb, _manager())
    options = ExportOptions(inputs_as_nchw=("x",), rename_outputs={VEC: "v"})
    apply_io_options(graph, options)
    x = graph.inputs[0]
    assert x.desc.shape == (None, 3, 8, 6) and x.desc.format == "NCHW"
    (reader, _), = x.uses            # the Transpose back, which the old readers now read
    assert reader.op_type == "Transpose" and reader.outputs[0].desc.shape == (None, 8, 6, 3)
    assert all(user is not reader for value in [reader.outputs[0]] for user, _ in [])
    shape = x.desc.shape
    count = len(graph.nodes)
    apply_io_options(graph, options)
    assert graph.inputs[0].desc.shape == shape and len(graph.nodes) == count
    with pytest.raises(ConversionError) as info:
        apply_io_options(graph, ExportOptions(inputs_as_nchw=("s",)))
    assert info.value.exit_code == ExitStatus.USAGE


@pytest.mark.parametrize("options, fragments", [
    ({"inputs_as_nchw": ("x", "nope", "y:0")},
     ["inputs_as_nchw: 'nope', 'y:0' are not graph inputs", "inputs: 'x', 's'"]),
    ({"outputs_as_nchw": ("x",)}, ["outputs_as_nchw: 'x' is not a graph output",
                                   "outputs: 'Identity', 'Identity_1'"]),
    ({"inputs_as_nchw": ("s",)}, ["inputs_as_nchw: input 's' has rank 2"]),
    ({"outputs_as_nchw": (VEC,)}, ["outputs_as_nchw: output 'Identity_1' has rank 2"]),
    ({"rename_inputs": {"x:1": "a"}}, ["rename_inputs: 'x:1' is not a graph input"]),
    ({"rename_outputs": {FEAT: "s"}}, ["new name 's' of 'Identity' is the name of another value"]),
    ({"rename_inputs": {"x": "z"}, "rename_outputs": {VEC: "z"}},
     ["'x' and 'Identity_1' are both renamed to 'z'"]),
])
def test_bad_names_are_one_usage_error_and_change_nothing(conv_pb, options, fragments):
    graph, _ = convert_file(conv_pb, _manager())
    before = str(graph)
    with pytest.raises(ConversionError) as info:
        compile_to_model(graph, "conv.pb", export=ExportOptions(**options))
    text = str(info.value)
    assert info.value.exit_code == ExitStatus.USAGE and text.startswith("model conv.pb: "), text
    for fragment in fragments:
        assert fragment in text, text
    assert str(graph) == before


def test_unknown_rank_input_is_refused():
    g = Graph()
    t = g.add_input("t", TensorDesc("float32"))
    g.outputs = [g.add_node("Neg", [t], name="y").outputs[0]]
    infer_graph(g)
    with pytest.raises(ConversionError) as info:
        compile_to_model(g, "hand", export=ExportOptions(inputs_as_nchw=("t",)))
    assert str(info.value) == ("model hand: inputs_as_nchw: input 't' has rank unknown; "
                               "channels-first needs a known rank of 3 to 5")


def test_command_line_options_and_their_usage_error(conv_pb, tmp_path):
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", conv_pb, "-o", out, "--inputs-as-nchw", "x",
                     "--outputs-as-nchw", FEAT, "--rename-inputs", "x:image",
                     "--rename-outputs", f"{FEAT}:features,{VEC}:vector")
    assert result.returncode == 0, result.stderr
    model = onnx.load(out)
    assert _io(model)[:2] == (["image", "s"], ["features", "vector"])
    assert "Transpose" not in _types(model)
    bad = str(tmp_path / "bad.onnx")
    result = run_cli("convert", conv_pb, "-o", bad, "--inputs-as-nchw", "image")
    assert result.returncode == ExitStatus.USAGE
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "'image' is not a graph input" in errors[0], result.stderr
    assert not (tmp_path / "bad.onnx").exists()


def test_interface_map_without_options_is_the_identity():
    ins, outs = interface_map(ExportOptions(), {"a": 4, "b": None}, {"y:1": 2})
    assert ins == {"a": ("a", None), "b": ("b", None)} and outs == {"y:1": ("y:1", None)}
    ins, _ = interface_map(ExportOptions(inputs_as_nchw=("a:0", "c")), {"a": 5, "c": 2}, {})
    assert ins == {"a": ("a", (0, 4, 1, 2, 3)), "c": ("c", None)}


# -- the layout pass through Unsqueeze and Squeeze (a Conv1D's NWC <-> N1WC around its Conv) --
def test_conv1d_shape_transposes_cancel_through_unsqueeze_and_squeeze():
    nodes = [node("Transpose", ["x"], ["nwc"], perm=[0, 2, 1]),
             node("Unsqueeze", ["nwc", "one"], ["n1wc"]),
             node("Transpose", ["n1wc"], ["nc1w"], perm=[0, 3, 1, 2]),
             node("MaxPool", ["nc1w"], ["pooled"], kernel_shape=[1, 2]),
             node("Transpose", ["pooled"], ["p1wc"], perm=[0, 2, 3, 1]),
             node("Squeeze", ["p1wc", "one"], ["pwc"]),
             node("Transpose", ["pwc"], ["y"], perm=[0, 2, 1])]
    inits = {"one": np.array([1], np.int64)}
    feeds = {"x": RNG.standard_normal((2, 3, 6)).astype(np.float32)}
    g, _ = check_pass(sink_transposes, nodes, inits, {"x": (np.float32, [None, 3, 6])},
                      {"y": (np.float32, [None, 3, 5])}, feeds)
    assert op_types(g) == ["Unsqueeze", "MaxPool", "Squeeze"]


@pytest.mark.parametrize("axes", [[0], [2, 4], [-1], [1, 3]])
def test_unsqueeze_and_squeeze_of_a_transposed_value_compute_the_same(axes):
    """No Transpose after the Unsqueeze to guide it: each new axis follows its dim."""
    nodes = [node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]),
             node("Unsqueeze", ["t", "axes"], ["u"]), node("Sigmoid", ["u"], ["s"]),
             node("Squeeze", ["s", "axes"], ["q"]), node("Relu", ["q"], ["r"]),
             node("Transpose", ["r"], ["y"], perm=[0, 3, 1, 2]), node("Neg", ["s"], ["z"])]
    inits = {"axes": np.array(axes, np.int64)}
    feeds = {"x": RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)}
    z_shape = list(np.expand_dims(np.zeros((2, 4, 5, 3)), axes).shape)
    g, _ = check_pass(sink_transposes, nodes, inits, {"x": (np.float32, [2, 3, 4, 5])},
                      {"y": (np.float32, [2, 3, 4, 5]), "z": (np.float32, z_shape)}, feeds)
    assert g.nodes[0].op_type == "Unsqueeze" and g.nodes[0].input[0] == "x"   # moved past
    assert op_types(g).count("Transpose") == 1                                  # z's


def test_neutral_normalisation_goes_from_a_channels_first_input(tmp_path):
    """Keras' Rescaling, then its Normalization layer before its weights are adapted: x - 0 and
    x / 1 per channel.
    Sunk below the input's Transpose the constants are (1, C, 1, 1), which the identity pass
    removes only knowing x's shape: the layout pass gives the names it makes their shapes."""
    zeros, ones = np.zeros(3, np.float32), np.ones(3, np.float32)

    def net(x):
        y = tf.pad((x * 2.0 - zeros) / ones, [[0, 0], [1, 1], [1, 1], [0, 0]])
        return tf.nn.conv2d(y, W2, 2, "VALID")
    pb = str(tmp_path / "norm.pb")
    out = freeze_function(net, tf.TensorSpec((None, 9, 7, 3), tf.float32, name="x"), pb)[0]
    x = RNG.standard_normal((2, 9, 7, 3)).astype(np.float32)
    want = run_frozen_graph(pb, {"x": x}, [out])[0]
    model = _compile(pb, inputs_as_nchw=("x",))
    assert _types(model) == ["Conv", "Transpose"], _types(model)
    got = _run(model, {"x": x.transpose(NCHW)})[out.split(":")[0]]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
