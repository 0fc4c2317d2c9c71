"""The bfloat16 pass: ops onnxruntime's CPU backend has no bfloat16 kernel for run in float32
between Casts; its kernel table is checked against the installed onnxruntime."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

from tf2ir.ir.names import fresh_name
from tf2ir.ir.onnx.passes.bfloat16 import BFLOAT16_CPU_KERNELS, OPSET, compute_bfloat16_in_float32
from tf2ir.ir.onnx.graph import OnnxGraph

BF16, FLOAT = onnx.TensorProto.BFLOAT16, onnx.TensorProto.FLOAT


def bfloat16_cpu_kernels(opset: int = OPSET) -> set:
    """The probe: standard ops whose onnxruntime CPU kernel, for the op's version at `opset`,
    lists tensor(bfloat16) in its type constraints (onnxruntime's own kernel registry)."""
    from onnxruntime.capi import _pybind_state
    found = set()
    for kernel in _pybind_state.get_all_opkernel_def():
        if kernel.provider != "CPUExecutionProvider" or kernel.domain not in ("", "ai.onnx"):
            continue
        try:
            since = onnx.defs.get_schema(kernel.op_name, opset, "").since_version
        except onnx.defs.SchemaError:
            continue
        low, high = kernel.version_range
        if low <= since <= high and any("bfloat16" in t for types in kernel.type_constraints.values()
                                        for t in types):
            found.add(kernel.op_name)
    return found


def _session(op_type: str, inputs, **attrs):
    """A session over one `op_type` node of bfloat16 inputs (names and element types)."""
    infos = [helper.make_tensor_value_info(n, t, None) for n, t in inputs]
    graph = helper.make_graph([helper.make_node(op_type, [n for n, _ in inputs], ["y"], **attrs)],
                              "probe", infos, [helper.make_value_info("y", onnx.TypeProto())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 9
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_kernel_table_holds_for_the_installed_onnxruntime():
    probed = bfloat16_cpu_kernels()
    assert BFLOAT16_CPU_KERNELS <= probed, f"no bfloat16 kernel: {BFLOAT16_CPU_KERNELS - probed}"
    # the registry's word, confirmed by sessions: with a kernel, without one
    _session("Transpose", [("x", BF16)], perm=[1, 0])
    _session("Reshape", [("x", BF16), ("s", onnx.TensorProto.INT64)])
    for op_type in ("Add", "MatMul"):
        assert op_type not in BFLOAT16_CPU_KERNELS
        with pytest.raises(Exception, match="NOT_IMPLEMENTED|Could not find an implementation"):
            _session(op_type, [("a", BF16), ("b", BF16)])


def _lowered(nodes, inits, inputs, outputs, dtypes):
    taken = {o for n in nodes for o in n.output} | set(inits) | set(inputs)

    def fresh(hint):
        name = fresh_name(hint, taken)
        taken.add(name)
        return name
    return OnnxGraph.from_protos(nodes, fresh, inputs=inputs, outputs=outputs,
                                 initializers=dict(inits), dtypes=dtypes)


def _run(g: OnnxGraph, feeds):
    inits = [onnx.numpy_helper.from_array(np.asarray(a), n) for n, a in g.initializers.items()]
    graph = helper.make_graph(g.to_protos(), "t", [helper.make_tensor_value_info(n, FLOAT, None)
                                             for n in g.inputs],
                              [helper.make_tensor_value_info(n, FLOAT, None) for n in g.outputs],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 9
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def bf16(array):
    return np.asarray(array, np.float32).astype(ml_dtypes.bfloat16)


def test_unsupported_ops_run_in_float32_between_casts():
    w = bf16([[0.5, -1.0, 2.0]])
    nodes = [helper.make_node("Cast", ["x"], ["xb"], to=BF16),
             helper.make_node("Add", ["xb", "w"], ["sum"]),
             helper.make_node("Transpose", ["sum"], ["t"], perm=[1, 0]),
             helper.make_node("Relu", ["t"], ["r"]),
             helper.make_node("Mul", ["r", "xb_t"], ["m"]),
             helper.make_node("Transpose", ["xb"], ["xb_t"], perm=[1, 0]),
             helper.make_node("Cast", ["m"], ["y"], to=FLOAT)]
    nodes = nodes[:4] + [nodes[5], nodes[4], nodes[6]]
    dtypes = {"x": "float32", "xb": "bfloat16", "y": "float32"}
    g = _lowered(nodes, {"w": w}, ["x"], ["y"], dtypes)
    assert compute_bfloat16_in_float32(g) == 3                       # Add, Relu, Mul
    g.check()
    kept = [n for n in g.nodes if n.op_type == "Transpose"]
    assert len(kept) == 2 and all(n.input[0] in ("sum", "xb") for n in kept)   # bfloat16 still
    float_w = [n for n, a in g.initializers.items() if n != "w"]
    assert len(float_w) == 1 and g.initializers[float_w[0]].dtype == np.float32
    casts = [n for n in g.nodes if n.op_type == "Cast"]
    assert len(casts) == 2 + 4 + 3      # the graph's, 4 to float32 (xb, t, r, xb_t), 3 back
    x = np.array([[1.25, -3.5, 0.1], [2.0, 0.3, -0.7]], np.float32)
    xb = bf16(x).astype(np.float32)
    expected = np.maximum(bf16(xb + bf16(w).astype(np.float32)).astype(np.float32).T, 0) * xb.T
    np.testing.assert_allclose(_run(g, {"x": x})[0], bf16(expected).astype(np.float32))


def test_subgraph_nodes_and_dtype_attributes_are_rewritten():
    then = helper.make_graph([helper.make_node("Neg", ["xb"], ["neg"])], "then", [],
                             [helper.make_tensor_value_info("neg", BF16, None)])
    other = helper.make_graph([helper.make_node("EyeLike", ["x"], ["eye"], dtype=BF16)], "else",
                              [], [helper.make_tensor_value_info("eye", BF16, None)])
    nodes = [helper.make_node("Cast", ["x"], ["xb"], to=BF16),
             helper.make_node("If", ["c"], ["picked"], then_branch=then, else_branch=other),
             helper.make_node("Cast", ["picked"], ["y"], to=FLOAT)]
    g = _lowered(nodes, {}, ["x", "c"], ["y"], {"x": "float32", "c": "bool", "xb": "bfloat16",
                                              "y": "float32"})
    assert compute_bfloat16_in_float32(g) == 2                       # Neg, EyeLike
    g.check()
    x = np.array([[1.5, -2.0], [0.25, 3.0]], np.float32)
    inits = {"c": np.array(True)}
    g.initializers.update(inits)
    g.inputs.remove("c")
    np.testing.assert_allclose(_run(g, {"x": x})[0], -x)
    g.initializers["c"] = np.array(False)
    np.testing.assert_allclose(_run(g, {"x": x})[0], np.eye(2, dtype=np.float32))


def test_graphs_without_bfloat16_are_left_alone():
    nodes = [helper.make_node("Add", ["x", "x"], ["y"])]
    g = _lowered(nodes, {}, ["x"], ["y"], {"x": "float32", "y": "float32"})
    assert compute_bfloat16_in_float32(g) == 0 and len(g.nodes) == 1


def test_a_rewritten_node_writing_a_graph_output_keeps_its_name():
    """`sum` (bfloat16) is a graph output and read further: the float32 Add writes a new name
    and the Cast back to bfloat16 writes `sum`, before its reader."""
    nodes = [helper.make_node("Cast", ["x"], ["xb"], to=BF16),
             helper.make_node("Add", ["xb", "xb"], ["sum"]),
             helper.make_node("Cast", ["sum"], ["y"], to=FLOAT)]
    g = _lowered(nodes, {}, ["x"], ["sum", "y"], {"x": "float32", "xb": "bfloat16",
                                                 "sum": "bfloat16", "y": "float32"})
    assert compute_bfloat16_in_float32(g) == 1
    g.check()
    back = g.producer("sum")
    assert back.op_type == "Cast" and back.attr("to") == BF16
    add = g.producer(back.input[0])
    assert add.op_type == "Add" and g.producer(add.input[0]).attr("to") == FLOAT
    assert add.input[0] == add.input[1]                 # one float32 copy of xb, shared
    assert [n.op_type for n in g.nodes] == ["Cast", "Cast", "Add", "Cast", "Cast"]
    g.outputs.remove("sum")
    x = np.array([[1.25, -3.5]], np.float32)
    np.testing.assert_allclose(_run(g, {"x": x})[0], bf16(bf16(x).astype(np.float32) * 2)
                               .astype(np.float32))
