"""Reading library functions in fusion passes (plugins/function_match.py): references resolved
through Identity, patterns with commutative ops, bound op types, ports and constants, and
constant evaluation of weights sliced inside a body."""

from __future__ import annotations

import numpy as np
from tensorboard.compat.proto import function_pb2

from tf2ir.plugins.function_match import Bind, Const, FunctionView, P, Port, Ref, match


def _const(fdef, name, value):
    node = fdef.node_def.add(name=name, op="Const")
    tensor = node.attr["value"].tensor
    array = np.asarray(value)
    tensor.dtype = {np.dtype("float32"): 1, np.dtype("int32"): 3}[array.dtype]
    for d in array.shape:
        tensor.tensor_shape.dim.add(size=d)
    tensor.tensor_content = array.tobytes()


def _body():
    """out = tanh(x @ w[:, :2]) * sigmoid(split(b)[1]) + 1.0, b and w arguments."""
    fdef = function_pb2.FunctionDef()
    for name in ("x", "w", "b"):
        fdef.signature.input_arg.add(name=name, type=1)
    fdef.signature.output_arg.add(name="out", type=1)
    _const(fdef, "begin", np.array([0, 0], np.int32))
    _const(fdef, "end", np.array([0, 2], np.int32))
    _const(fdef, "strides", np.array([1, 1], np.int32))
    _const(fdef, "dim", np.array(0, np.int32))
    _const(fdef, "one", np.array(1.0, np.float32))
    fdef.node_def.add(name="read", op="Identity", input=["w"])
    cols = fdef.node_def.add(name="cols", op="StridedSlice",
                             input=["read:output:0", "begin:output:0", "end:output:0",
                                    "strides:output:0"])
    cols.attr["begin_mask"].i = 1
    cols.attr["end_mask"].i = 1
    fdef.node_def.add(name="mm", op="MatMul", input=["x", "cols:output:0"])
    split = fdef.node_def.add(name="split", op="Split", input=["dim:output:0", "b"])
    split.attr["num_split"].i = 2
    fdef.node_def.add(name="th", op="Tanh", input=["mm:product:0"])
    fdef.node_def.add(name="sg", op="Sigmoid", input=["split:output:1"])
    fdef.node_def.add(name="mul", op="Mul", input=["sg:y:0", "th:y:0"])
    fdef.node_def.add(name="add", op="AddV2", input=["one:output:0", "mul:z:0"])
    fdef.node_def.add(name="result", op="Identity", input=["add:z:0", "^th"])
    fdef.ret["out"] = "result:output:0"
    return FunctionView(fdef)


def test_references_resolve_through_identity():
    view = _body()
    assert view.outputs == [Ref("add", 0)]
    assert view.inputs("cols")[0] == Ref.arg(1) and view.inputs("sg") == [Ref("split", 1)]
    assert view.users(Ref.arg(1)) == ["cols"]
    assert float(view.const(Ref("one", 0))) == 1.0


def test_patterns_match_either_operand_order_and_bind_op_types():
    view = _body()
    pattern = P("AddV2|Add", P("Mul", P("$act", "m"), P("$gate", Port(P("Split", "d", "b"), 1))),
                Const(1.0))
    found = match(view, view.outputs[0], pattern)
    assert found is not None
    assert found["$act"] == "Tanh" and found["$gate"] == "Sigmoid"
    assert found["b"] == Ref.arg(2) and found["m"] == Ref("mm", 0)
    assert match(view, view.outputs[0], P("Add", "a", Const(2.0))) is None
    # the same variable must bind the same tensor, the same $op the same op type
    assert match(view, Ref("mul", 0), P("Mul", "a", "a")) is None
    assert match(view, Ref("mul", 0), P("Mul", P("$f", "u"), P("$f", "v"))) is None
    assert match(view, Ref("mul", 0), Bind("product", P("Mul", "u", "v")))["product"] == \
        Ref("mul", 0)


def test_weights_evaluate_through_slices_and_splits():
    view = _body()
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(6, dtype=np.float32)
    args = {1: w, 2: b}
    np.testing.assert_array_equal(view.evaluate(Ref("cols", 0), args.get), w[:, :2])
    np.testing.assert_array_equal(view.evaluate(Ref("split", 1), args.get), b[3:])
    assert view.evaluate(Ref("mm", 0), args.get) is None     # x is not a constant
