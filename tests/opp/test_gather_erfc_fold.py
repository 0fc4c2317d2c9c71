"""GatherV2 and Erfc lowerings against TensorFlow, and constant folding of the shape ops
TF emits for a tensordot (a Transpose whose permutation is a ConcatV2 of constants)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.opp.test_lowering import Feed, check, check_exact, rand
from tf2ir.ir import Graph, TensorDesc
from tf2ir.ir.onnx.compile import compile_to_model
from tf2ir.ir.passes import fold_constants
from tf2ir.ir.infer import infer_graph

tf = pytest.importorskip("tensorflow")


@pytest.mark.parametrize("axis, indices", [(0, [2, 0, 2]), (1, [[1], [0]]), (-1, 3)])
def test_gather_v2(axis, indices):
    x = rand(3, 4, 5)
    indices = np.array(indices, np.int32)
    check_exact("GatherV2", [Feed(x), Feed(indices), np.int32(axis)], {},
                tf.gather(x, indices, axis=axis).numpy())


def test_gather_v2_of_a_shape_keeps_the_rank():
    x = np.array([4, 7, 9], np.int64)
    _, inferred = check("GatherV2", [Feed(x, (None,)), np.array([0, 2], np.int32), np.int32(0)], {},
                        np.array([4, 9], np.int64))
    assert inferred == (2,)


def test_erfc():
    x = rand(2, 6, low=-3, high=3)
    check_exact("Erfc", [Feed(x)], {}, tf.math.erfc(x).numpy(), atol=1e-6)


def test_fold_constants_makes_a_computed_permutation_constant():
    import onnxruntime as ort
    g = Graph("main")
    x = g.add_input("x", TensorDesc("float32", (2, 3, 4)))
    free = g.add_const(np.array([2, 0], np.int32), "free")
    axes = g.add_const(np.array([1], np.int32), "axes")
    perm = g.add_node("ConcatV2", [free, axes, g.add_const(np.int32(0), "axis")], {"N": 2}, name="perm")
    t = g.add_node("Transpose", [x, perm.outputs[0]], name="t")
    g.outputs = [t.outputs[0]]
    infer_graph(g)
    assert fold_constants(g) == 1
    assert g.value("perm").const_value.tolist() == [2, 0, 1]
    assert [n.op_type for n in g.nodes].count("ConcatV2") == 0 and g.is_topologically_sorted()
    assert fold_constants(g) == 0          # graph outputs are never folded away
    value = rand(2, 3, 4)
    session = ort.InferenceSession(compile_to_model(g).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, {"x": value})[0], value.transpose(2, 0, 1))
