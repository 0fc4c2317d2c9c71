"""What a converted model may run (issue 21, findings 1, 6, 7, 12, 13): fallback segments run
only op types that compute (ir/onnx/trust.py), checked when `--fallback tf` cuts them and when
a session is built, before TensorFlow sees the GraphDef; kernels come only from the installed
plugins' table, never by a name the model picks; every kernel's and segment's inputs and
results are checked against what the model declares; and no kernel failure or signal aborts
the process (no exception crosses onnxruntime's C++ frames).

The crafted models here are what an attacker would hand over: a TFSubgraph whose GraphDef
writes or reads a host file (also hidden in a library function a PartitionedCall calls), a
node of tf2ir's own dispatch op with a `kernel` key, kernels that lie about their results."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.conftest import run_cli
from tf2ir.ir.onnx import guard

# -- crafted fallback segments -------------------------------------------------------------

FLOAT = 'attr { key: "T" value { type: DT_FLOAT } }'


def _string_const(name: str, value: str, prefix: str = "") -> str:
    return (f'{prefix} {{ name: "{name}" op: "Const" attr {{ key: "dtype" value {{ type: '
            f'DT_STRING }} }} attr {{ key: "value" value {{ tensor {{ dtype: DT_STRING '
            f'tensor_shape {{}} string_val: "{value}" }} }} }} }}')


def _write_file(target: str) -> str:
    """y = Identity(x) after WriteFile(target, "pwned")."""
    return "\n".join([
        'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }',
        _string_const("fname", target, "node"), _string_const("content", "pwned", "node"),
        'node { name: "w" op: "WriteFile" input: "fname" input: "content" }',
        f'node {{ name: "y" op: "Identity" input: "x" input: "^w" {FLOAT} }}'])


def _read_file(target: str) -> str:
    """y = Identity(x); z = ReadFile(target): a host file's bytes as an output."""
    return "\n".join([
        'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }',
        _string_const("fname", target, "node"),
        'node { name: "r" op: "ReadFile" input: "fname" }',
        f'node {{ name: "y" op: "Identity" input: "x" input: "^r" {FLOAT} }}'])


def _write_file_in_function(target: str) -> str:
    """y = StatefulPartitionedCall[f=innocent](x), whose library body writes the file."""
    return "\n".join([
        'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }',
        'node { name: "call" op: "StatefulPartitionedCall" input: "x" '
        'attr { key: "Tin" value { list { type: DT_FLOAT } } } '
        'attr { key: "Tout" value { list { type: DT_FLOAT } } } '
        'attr { key: "f" value { func { name: "innocent" } } } }',
        f'node {{ name: "y" op: "Identity" input: "call" {FLOAT} }}',
        'library { function { signature { name: "innocent" '
        'input_arg { name: "a" type: DT_FLOAT } output_arg { name: "b" type: DT_FLOAT } '
        'is_stateful: true }',
        _string_const("fname", target, "node_def"), _string_const("content", "pwned", "node_def"),
        'node_def { name: "w" op: "WriteFile" input: "fname:output:0" '
        'input: "content:output:0" }',
        f'node_def {{ name: "id" op: "Identity" input: "a" input: "^w" {FLOAT} }}',
        'ret { key: "b" value: "id:output:0" } } }'])


CRAFTED = {"write_file": (_write_file, "WriteFile"), "read_file": (_read_file, "ReadFile"),
           "write_file_in_function": (_write_file_in_function, "WriteFile")}


def _graph_def(text: str) -> bytes:
    from google.protobuf import text_format

    from tf2ir.parser.graph_view import graph_def_class
    return text_format.Parse(text, graph_def_class()()).SerializeToString()


def _segment_model(path, graph_def: bytes, inputs=("x",), takes=("x",), outputs=("y",),
                   shape=(2,), declared=None) -> str:
    """An .onnx whose one node is the TFSubgraph of `graph_def`: the node reads `inputs`,
    the GraphDef's Placeholders `takes` take them."""
    node = helper.make_node(
        "TFSubgraph", list(inputs), ["out"], domain="ai.tf2ir.tf", name="seg",
        graph_def=base64.b64encode(graph_def).decode("ascii"), input_names=list(takes),
        output_names=[f"{n}:0" for n in outputs])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shape))
                      for n in inputs],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT,
                                       list(declared if declared is not None else shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid("ai.tf2ir.tf", 1)])
    onnx.save(model, str(path))
    return str(path)


def _inputs(tmp_path, **arrays) -> str:
    path = str(tmp_path / "inputs.npz")
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_a_segment_that_touches_files_is_refused_before_tensorflow_runs(case, tmp_path):
    """Finding 1: `tf2ir run` and tf2ir.InferenceSession ran such a GraphDef (exit 0, the
    file written, or read back as an output). Now: exit 1, one line naming the segment node,
    the hidden node and its op type; the host file untouched; no -o file."""
    import tf2ir
    from tf2ir.ir.errors import ConversionError
    build, op_type = CRAFTED[case]
    target = tmp_path / "host_file.txt"
    if case == "read_file":
        target.write_text("secret")
    model = _segment_model(tmp_path / "crafted.onnx", _graph_def(build(str(target))))
    out = tmp_path / "out.npz"
    ran = run_cli("run", model, "--inputs-data", _inputs(tmp_path, x=np.ones(2, np.float32)),
                  "-o", str(out))
    lines = ran.stderr.strip().splitlines()
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert len(lines) == 1 and lines[0].startswith("tf2ir: error: model "), ran.stderr
    assert "node 'seg'" in lines[0] and f"{op_type} (node '" in lines[0]
    assert ("innocent/w" if case.endswith("function") else "'w'" if case == "write_file"
            else "'r'") in lines[0]
    assert "reads or writes files" in lines[0]
    assert not out.exists()
    assert target.exists() == (case == "read_file")
    if case == "read_file":
        assert target.read_text() == "secret"
    with pytest.raises(ConversionError, match=op_type):
        tf2ir.InferenceSession(model)
    assert target.exists() == (case == "read_file")


def test_refusals_walk_every_function_and_func_attribute():
    """The check itself, without TensorFlow: nodes of library functions, functions named by
    attributes of non-control-flow ops or missing from the library, op types not listed."""
    from google.protobuf import text_format

    from tf2ir.ir.onnx.trust import ALLOWED, refusals
    from tf2ir.parser.graph_view import graph_def_class
    assert {"Dawsn", "Expint", "Conv2D", "StatelessWhile", "Placeholder"} <= ALLOWED
    # computing ops whose names look like state (a Keras LSTM's segment stacks its list)
    assert {"TensorListStack", "TensorMapLookup", "EncodeJpegVariableQuality"} <= ALLOWED
    assert not {"WriteFile", "ReadFile", "PyFunc", "EagerPyFunc", "PyFuncStateless",
                "ImmutableConst", "MatchingFiles", "PrintV2", "Print", "DebugIdentity",
                "VarHandleOp", "AssignVariableOp", "InitializeTableFromTextFileV2", "SaveV2",
                "RestoreV2", "_Send", "_Recv", "RemoteCall", "TFRecordDataset", "MapDataset",
                "Abort", "DecodeProtoV2", "LoadAndRemapMatrix"} & ALLOWED
    text = _write_file_in_function("/nonexistent") + """
        node { name: "m" op: "MapDataset" attr { key: "f" value { func { name: "innocent" } } } }
        node { name: "c" op: "PartitionedCall" attr { key: "f" value { func { name: "gone" } } } }
        node { name: "q" op: "NoSuchOp" }"""
    found = refusals(text_format.Parse(text, graph_def_class()()))
    assert {(r.where, r.op_type) for r in found} == {
        ("innocent/w", "WriteFile"), ("m", "MapDataset"), ("c", "PartitionedCall"),
        ("q", "NoSuchOp")}
    reasons = {r.op_type: r.reason for r in found}
    assert "does not define" in reasons["PartitionedCall"]
    assert reasons["NoSuchOp"] == "is not an op type a fallback segment may run"


def test_the_allowed_op_types_are_tensorflows_computing_ops():
    """Each allowed op type exists in TensorFlow's registry and is stateless, without
    reference arguments or function attributes, unless reviewed (STATEFUL_ALLOWED,
    CONTROL_FLOW); the list is the snapshot of one TF version, checked against the installed."""
    pytest.importorskip("tensorflow")
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session as c_api

    from tf2ir.ir.onnx.trust import ALLOWED, CONTROL_FLOW, STATEFUL_ALLOWED, TEXT
    allowed = ALLOWED
    try:
        import tensorflow_text  # noqa: F401  (registers the TEXT ops)
    except ImportError:
        allowed = ALLOWED - TEXT
    ops = op_def_pb2.OpList()
    ops.ParseFromString(c_api.TF_GetBuffer(c_api.TF_GetAllOpList()))
    registry = {op.name: op for op in ops.op}
    assert allowed - set(registry) == set()
    wrong = []
    for name in sorted(allowed & TEXT):   # reviewed (resources held in memory), but no refs or functions
        args = list(registry[name].input_arg) + list(registry[name].output_arg)
        if any(a.is_ref for a in args) or any("func" in a.type for a in registry[name].attr):
            wrong.append(name)
    for name in sorted(allowed - STATEFUL_ALLOWED - CONTROL_FLOW - TEXT):
        op = registry[name]
        args = list(op.input_arg) + list(op.output_arg)
        if op.is_stateful or any(a.is_ref for a in args) or \
                any("func" in a.type for a in op.attr):
            wrong.append(name)
    assert wrong == []


def test_conversion_refuses_to_cut_file_ops_into_a_segment(tmp_path):
    """`--fallback tf` made a segment of unmapped ReadFile (exit 0, a model that reads the
    host file when run); now every refused op type is named, exit 3, no output."""
    pb = tmp_path / "m.pbtxt"
    pb.write_text("\n".join([
        'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } '
        'attr { key: "shape" value { shape { dim { size: 2 } } } } }',
        _string_const("fname", str(tmp_path / "secret.txt"), "node"),
        'node { name: "r" op: "ReadFile" input: "fname" }',
        'node { name: "m" op: "MatchingFiles" input: "fname" }',
        f'node {{ name: "y" op: "Dawsn" input: "x" {FLOAT} }}']))
    out = tmp_path / "m.onnx"
    result = run_cli("convert", str(pb), "-o", str(out), "--fallback", "tf",
                     "--outputs", "y,r,m")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 3 and not out.exists(), result.stderr
    assert len(lines) == 1 and "--fallback tf cannot give TensorFlow 2 op types" in lines[0]
    assert "MatchingFiles (1 node, e.g. 'm'" in lines[0] and "ReadFile (1 node, e.g. 'r'" in lines[0]


def test_conversion_refuses_an_unmapped_write_file(tmp_path):
    pb = tmp_path / "w.pbtxt"
    pb.write_text(_write_file(str(tmp_path / "pwned.txt")).replace(' input: "^w"', ""))
    out = tmp_path / "w.onnx"
    result = run_cli("convert", str(pb), "-o", str(out), "--fallback", "tf")
    assert result.returncode == 3 and not out.exists(), result.stderr
    assert "WriteFile (1 node, e.g. 'w': reads or writes files)" in result.stderr
    assert not (tmp_path / "pwned.txt").exists()


def test_verify_refuses_to_run_a_graph_with_file_ops_in_tensorflow(tmp_path):
    """`verify` runs the model in TensorFlow: a frozen graph whose output waits on a
    WriteFile by a control edge converts (the edge is dropped), and TF's run wrote the file
    (exit 0); now verify refuses the graph before TensorFlow runs it (exit 3, one line)."""
    pytest.importorskip("tensorflow")
    target = tmp_path / "pwned.txt"
    pb = tmp_path / "w.pbtxt"
    pb.write_text(_write_file(str(target)).replace(
        'op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }',
        'op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } '
        'attr { key: "shape" value { shape { dim { size: 2 } } } }'))
    result = run_cli("verify", str(pb))
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 3, result.stderr
    assert len(lines) == 1 and "WriteFile" in lines[0] and "verify would run" in lines[0]
    assert not target.exists()


# -- finding 13: a segment's inputs and outputs ----------------------------------------------

def test_a_segment_given_more_inputs_than_its_graph_takes_is_refused(tmp_path):
    """Finding 13: the extra input was dropped silently; now the session is not built."""
    import tf2ir
    from tf2ir.ir.errors import ConversionError
    text = ('node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }\n'
            f'node {{ name: "y" op: "Identity" input: "x" {FLOAT} }}')
    model = _segment_model(tmp_path / "m.onnx", _graph_def(text), inputs=("x", "extra"))
    with pytest.raises(ConversionError, match=r"node 'seg'.*the node has 2 inputs and 1 "
                                              r"outputs, its graph takes 1 and gives 1"):
        tf2ir.InferenceSession(model)
    stray = _segment_model(tmp_path / "s.onnx", _graph_def(text), takes=("y",))
    with pytest.raises(ConversionError, match="must name distinct Placeholders.*'y'"):
        tf2ir.InferenceSession(stray)


def test_a_segment_whose_result_disagrees_with_the_declared_shape_fails(tmp_path):
    """Finding 12 for segments: TensorFlow's result [2] where the model declares [3]."""
    pytest.importorskip("tensorflow")
    import tf2ir
    from tf2ir.ir.onnx.runtime import KernelError
    text = ('node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }\n'
            f'node {{ name: "y" op: "Identity" input: "x" {FLOAT} }}')
    good = tf2ir.InferenceSession(_segment_model(tmp_path / "g.onnx", _graph_def(text)))
    np.testing.assert_array_equal(good.run(None, {"x": np.ones(2, np.float32)})[0], [1, 1])
    lying = tf2ir.InferenceSession(_segment_model(tmp_path / "m.onnx", _graph_def(text),
                                                  declared=(3,)))
    with pytest.raises(KernelError, match=r"ai.tf2ir.tf:TFSubgraph node 'seg' \(plugin "
                                          r"TensorFlow.*output 0 'out' has shape \[2\], which "
                                          r"the model declares \[3\]"):
        lying.run(None, {"x": np.ones(2, np.float32)})


# -- finding 12: kernels' results ------------------------------------------------------------

def _custom_model(n_inputs: int = 1, shape=(2,), count: int = 1):
    """`count` chained nodes ai.tf2ir.test:Op over float inputs of `shape`."""
    nodes, prev = [], "x0"
    for i in range(count):
        ins = [prev] + [f"x{j}" for j in range(1, n_inputs)]
        nodes.append(helper.make_node("Op", ins, [f"y{i}"], domain="ai.tf2ir.test", name=f"op{i}"))
        prev = f"y{i}"
    inputs = [helper.make_tensor_value_info(f"x{j}", TensorProto.FLOAT, list(shape))
              for j in range(n_inputs)]
    infos = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, list(shape))
             for i in range(count - 1)]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(
        prev, TensorProto.FLOAT, list(shape))], value_info=infos)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                   helper.make_opsetid("ai.tf2ir.test", 1)])


@pytest.mark.parametrize("result, message", [
    (lambda x: np.zeros((7, 3), np.float32), r"output 0 'y0' has shape \[7, 3\], which the "
                                             r"model declares \[2\]"),
    (lambda x: None, r"output 0 'y0' is None"),
    (lambda x: np.array(["a", "b"]), r"output 0 'y0' is <U1, which the model declares float32"),
    (lambda x: np.array([1.5, 2.5]), r"output 0 'y0' is float64, which the model declares "
                                     r"int64"),
])
def test_a_kernel_result_that_disagrees_with_the_node_is_a_kernel_error(result, message):
    """Finding 12: shape [7,3] where [2] is declared, or None, was accepted silently (None
    became a NaN scalar); floats for an int64 output were truncated."""
    from tf2ir.ir.onnx.runtime import InferenceSession, KernelError
    model = _custom_model()
    if "int64" in message:
        model.graph.output[0].type.tensor_type.elem_type = TensorProto.INT64
    session = InferenceSession(model, kernel_for=lambda node: result)
    with pytest.raises(KernelError, match=r"ai.tf2ir.test:Op node 'op0'.*" + message):
        session.run(None, {"x0": np.ones(2, np.float32)})
    honest = InferenceSession(_custom_model(), kernel_for=lambda node: lambda x: x * 2)
    np.testing.assert_array_equal(honest.run(None, {"x0": np.ones(2, np.float32)})[0], [2, 2])


LIAR_PLUGIN = '''
import numpy as np

from tf2ir.ir import op_prototype
from tf2ir.opp.shapes import same_as_input
from tf2ir.plugins import hookimpl

liar = op_prototype("Liar", "declares its input's shape, returns another").input("x").output("y")
liar.infer(same_as_input)


@liar.lower
def lower_liar(ctx, node):
    ctx.emit("Liar", [ctx.input(0)], [ctx.output(0)], domain="ai.tf2ir.liar")


@liar.kernel
def liar_kernel(x):
    return np.zeros((7, 3), x.dtype)


@hookimpl
def tf2ir_op_prototypes():
    return [liar]
'''


def test_a_plugin_kernel_with_a_wrong_shape_is_one_line_naming_node_op_and_plugin(tmp_path):
    """Through `tf2ir run` with the plugin from --plugin-dir: exit 1, one line that names the
    node, its op and the plugin whose kernel it is; no -o file."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "liar_ops.py").write_text(LIAR_PLUGIN)
    model = _custom_model()
    model.graph.node[0].op_type, model.graph.node[0].domain = "Liar", "ai.tf2ir.liar"
    model.opset_import[1].domain = "ai.tf2ir.liar"
    onnx.save(model, str(tmp_path / "liar.onnx"))
    out = tmp_path / "out.npz"
    ran = run_cli("run", str(tmp_path / "liar.onnx"), "--plugin-dir", str(plugins),
                  "--inputs-data", _inputs(tmp_path, x0=np.ones(2, np.float32)), "-o", str(out))
    lines = ran.stderr.strip().splitlines()
    assert ran.returncode == 1 and not out.exists(), ran.stderr
    assert len(lines) == 1, ran.stderr
    assert "ai.tf2ir.liar:Liar node 'op0' (plugin " in lines[0]   # a --plugin-dir plugin
    assert f"{plugins / 'liar_ops.py'})" in lines[0]            # is named by its file
    assert "output 0 'y0' has shape [7, 3], which the model declares [2]" in lines[0]


def test_an_input_that_disagrees_with_the_declared_shape_is_a_kernel_error():
    """A standard op's result, declared [2] in value_info, is [6] when it reaches the kernel."""
    from tf2ir.ir.onnx.runtime import InferenceSession, KernelError
    model = _custom_model()
    graph = model.graph
    graph.node[0].input[0] = "t"
    graph.node.insert(0, helper.make_node("Tile", ["x0", "reps"], ["t"], name="tile"))
    graph.initializer.append(helper.make_tensor("reps", TensorProto.INT64, [1], [3]))
    graph.value_info.append(helper.make_tensor_value_info("t", TensorProto.FLOAT, [2]))
    session = InferenceSession(model, kernel_for=lambda node: (lambda x: x[:2], "p"))
    with pytest.raises(KernelError, match=r"node 'op0'.*input 0 't' has shape \[6\], which "
                                          r"the model declares \[2\]"):
        session.run(None, {"x0": np.ones(2, np.float32)})


# -- finding 6: a model naming tf2ir's dispatch op -------------------------------------------

def _dispatch_model(path) -> str:
    """A string op with a kernel (so the dispatch pool is registered) beside a node of the
    dispatch op itself, whose `kernel` key names no body."""
    from onnxruntime_extensions import PyCustomOpDef
    code = PyCustomOpDef.dt_float
    case = helper.make_node("StringCase", ["s"], ["t"], domain="ai.tf2ir.strings", upper=1,
                            encoding="", name="case")
    rogue = helper.make_node(f"tf2ir_py_{code}__{code}", ["x"], ["y"], domain="ai.onnx.contrib",
                             kernel="no such body", name="rogue")
    graph = helper.make_graph(
        [case, rogue], "g", [helper.make_tensor_value_info("s", TensorProto.STRING, [2]),
                             helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("t", TensorProto.STRING, [2]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 18), helper.make_opsetid("ai.tf2ir.strings", 1),
        helper.make_opsetid("ai.onnx.contrib", 1)])
    onnx.save(model, str(path))
    return str(path)


def test_a_model_naming_the_dispatch_op_is_refused_not_an_abort(tmp_path):
    """Finding 6: exit 134 (pybind11 terminate, KeyError: 'no such body'); now exit 1 and one
    line naming the node and op, before onnxruntime runs anything."""
    import tf2ir
    from tf2ir.ir.errors import ConversionError
    model = _dispatch_model(tmp_path / "rogue.onnx")
    ran = run_cli("run", model, "--inputs-data",
                  _inputs(tmp_path, s=np.array(["a", "b"]), x=np.ones(2, np.float32)))
    lines = ran.stderr.strip().splitlines()
    assert ran.returncode == 1, ran.stderr
    assert len(lines) == 1 and "node 'rogue'" in lines[0] and "dispatch op" in lines[0]
    assert "terminate" not in ran.stderr
    with pytest.raises(ConversionError, match="dispatch op ai.onnx.contrib:tf2ir_py_"):
        tf2ir.InferenceSession(model)


def test_a_dispatch_key_with_no_body_is_a_kernel_error_not_an_abort():
    """The last guard: a body gone from the table (what a forged key amounts to) while
    onnxruntime runs is a KernelError. In a child process: before the fix it aborted."""
    script = textwrap.dedent("""
        import numpy as np
        from tests.reliability.test_trust_runtime import _custom_model
        from tf2ir.ir.onnx import runtime
        session = runtime.InferenceSession(_custom_model(), kernel_for=lambda n: lambda x: x)
        for key in session._keys:
            runtime._BODIES.pop(key)
        try:
            session.run(None, {"x0": np.ones(2, np.float32)})
        except runtime.KernelError as exc:
            print("KernelError:", exc)
    """)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=root)
    assert done.returncode == 0, done.stderr
    assert "KernelError: no Python kernel is bound to key" in done.stdout


def test_a_string_result_holding_other_objects_is_a_kernel_error_not_an_abort():
    """Found beside finding 12: a string output holding an int or None passed the old check
    (an object array) and aborted in onnxruntime-extensions' conversion (pybind11
    cast_error, terminate). In a child process: before the fix it aborted."""
    script = textwrap.dedent("""
        import numpy as np
        from onnx import TensorProto
        from tests.reliability.test_trust_runtime import _custom_model
        from tf2ir.ir.onnx import runtime
        model = _custom_model()
        for info in list(model.graph.input) + list(model.graph.output):
            info.type.tensor_type.elem_type = TensorProto.STRING
        for value in ([1, 2], ["a", None]):
            session = runtime.InferenceSession(
                model, kernel_for=lambda n: lambda x: np.array(value, dtype=object))
            try:
                session.run(None, {"x0": np.array(["a", "b"], dtype=object)})
            except runtime.KernelError as exc:
                print("KernelError:", exc)
    """)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "KernelError: the Python kernel of ai.tf2ir.test:Op node 'op0': output 0 'y0' is "
        f"object holding {kind}, which the model declares string" for kind in ("int", "NoneType")]


# -- finding 7: a signal while a kernel runs -------------------------------------------------

SLOW_PLUGIN = '''
import os
import time

from tf2ir.ir import op_prototype
from tf2ir.opp.shapes import same_as_input
from tf2ir.plugins import hookimpl

slow = op_prototype("SlowStep", "x + 1, slowly").input("x").output("y")
slow.infer(same_as_input)


@slow.lower
def lower_slow(ctx, node):
    ctx.emit("SlowStep", [ctx.input(0)], [ctx.output(0)], domain="ai.tf2ir.slow")


@slow.kernel
def slow_kernel(x):
    marker = os.environ.get("SLOW_MARKER")
    if marker and not os.path.exists(marker):
        open(marker, "w").close()
    time.sleep(0.05)
    return x + 1


@hookimpl
def tf2ir_op_prototypes():
    return [slow]
'''


def _slow_model(path, count: int = 40, size: int = 200_000) -> str:
    nodes, prev = [], "x"
    for i in range(count):
        nodes.append(helper.make_node("SlowStep", [prev], [f"y{i}"], domain="ai.tf2ir.slow",
                                      name=f"slow{i}"))
        prev = f"y{i}"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [size])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [size])],
        value_info=[helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [size])
                    for i in range(count - 1)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                      helper.make_opsetid("ai.tf2ir.slow", 1)]),
              str(path))
    return str(path)


def test_sigterm_while_kernels_run_is_one_line_and_143(tmp_path):
    """Finding 7: SIGTERM during `tf2ir run` with a plugin kernel aborted (exit 134, C++
    terminate) at most timings. Each run here gets SIGTERM at another moment after its first
    kernel started (in the kernel's sleep, in onnxruntime-extensions' conversions, in
    onnxruntime between kernels): exit 143, one line, no -o file, nothing left beside it."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "slow_ops.py").write_text(SLOW_PLUGIN)
    model = _slow_model(tmp_path / "slow.onnx")
    data = _inputs(tmp_path, x=np.zeros(200_000, np.float32))
    runs = []
    for i, delay in enumerate([0.0, 0.01, 0.03, 0.07, 0.15, 0.4]):
        folder = tmp_path / f"run{i}"
        folder.mkdir()
        env = {**os.environ, "SLOW_MARKER": str(folder / "started")}
        process = subprocess.Popen(
            [sys.executable, "-m", "tf2ir.tools.cli", "run", model, "--inputs-data", data,
             "--plugin-dir", str(plugins), "-o", str(folder / "out.npz")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        runs.append((process, folder, delay))
    started, signalled = {}, set()   # each run: SIGTERM `delay` s after its first kernel
    deadline = time.monotonic() + 120
    while len(signalled) < len(runs):
        assert time.monotonic() < deadline, "a kernel never started"
        for i, (process, folder, delay) in enumerate(runs):
            now = time.monotonic()
            if i not in started and (folder / "started").exists():
                started[i] = now
            if i in signalled or i not in started or now < started[i] + delay:
                assert i in started or process.poll() is None, process.communicate()
                continue
            assert process.poll() is None, (delay, "the run ended before its signal")
            process.send_signal(signal.SIGTERM)
            signalled.add(i)
        time.sleep(0.002)
    for process, folder, delay in runs:
        _, stderr = process.communicate(timeout=60)
        lines = stderr.strip().splitlines()
        assert process.returncode == 143, (delay, process.returncode, stderr)
        assert lines == ["tf2ir: interrupted by SIGTERM"], (delay, stderr)
        assert sorted(os.listdir(folder)) == ["started"], (delay, os.listdir(folder))


def test_a_signal_held_during_a_python_run_raises_after_onnxruntime_returns():
    """tf2ir.InferenceSession in a plain Python program: SIGINT while a kernel runs is the
    KeyboardInterrupt Python's default handler raises, after onnxruntime returned (the
    kernels still to come are skipped), and the handlers are back as they were."""
    from tf2ir.ir.onnx.runtime import InferenceSession
    calls = []

    def kernel(x):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)
            deadline = time.monotonic() + 10   # the handler runs here (held, no exception in
            while not guard.SIGNALLED and time.monotonic() < deadline:   # the kernel), however
                time.sleep(0.01)               # long a busy machine takes to deliver it
        return x + 1
    # a plain program's SIGINT handler, whatever an earlier test in this process left
    found = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        session = InferenceSession(_custom_model(count=5), kernel_for=lambda node: kernel)
        with pytest.raises(KeyboardInterrupt):
            session.run(None, {"x0": np.ones(2, np.float32)})
        assert len(calls) == 2, calls
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        np.testing.assert_array_equal(session.run(None, {"x0": np.ones(2, np.float32)})[0],
                                      np.full(2, 6.0))
    finally:
        signal.signal(signal.SIGINT, found)
