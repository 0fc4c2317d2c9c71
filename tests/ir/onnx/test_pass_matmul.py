"""MatMul rewrites: attention's query/key/value MatMuls (with their bias Adds) merged into
one MatMul and a Split; batched-matmul Einsums as Transpose/MatMul/Transpose."""

from __future__ import annotations

import numpy as np
import pytest

from tf2ir.ir.onnx.passes.matmul import _batched_matmul, einsums_to_matmuls, merge_sibling_matmuls
from tests.ir.onnx.test_pass_common import check_pass, node, op_types

F32 = np.float32
RNG = np.random.RandomState(0)


def test_sibling_matmuls_and_their_biases_merge():
    inits = {f"w{i}": RNG.randn(8, n).astype(F32) for i, n in enumerate((8, 8, 4))}
    inits.update({f"b{i}": RNG.randn(n).astype(F32) for i, n in enumerate((8, 8, 4))})
    nodes = [node("MatMul", ["x", f"w{i}"], [f"m{i}"]) for i in range(3)]
    nodes += [node("Add", [f"m{i}", f"b{i}"], [f"y{i}"]) if i != 1 else
              node("Add", ["b1", "m1"], ["y1"]) for i in range(3)]
    x = RNG.randn(2, 5, 8).astype(F32)
    outputs = {f"y{i}": (F32, [None, 5, n]) for i, n in enumerate((8, 8, 4))}
    g, count = check_pass(merge_sibling_matmuls, nodes, inits, {"x": (F32, [None, 5, 8])},
                          outputs, {"x": x}, rtol=1e-4)
    assert count == 4 and op_types(g) == ["MatMul", "Add", "Split"]


def test_siblings_without_a_bias_each_merge_without_one():
    inits = {"w0": RNG.randn(8, 8).astype(F32), "w1": RNG.randn(8, 3).astype(F32),
             "b0": RNG.randn(8).astype(F32), "w2": RNG.randn(3, 5).astype(F32)}
    nodes = [node("MatMul", ["x", "w0"], ["m0"]), node("Add", ["m0", "b0"], ["y0"]),
             node("MatMul", ["x", "w1"], ["y1"]), node("Relu", ["x"], ["r"]),
             node("MatMul", ["w2", "x"], ["y2"])]            # x as the second operand: not a sibling
    x = RNG.randn(5, 8).astype(F32)
    g, count = check_pass(merge_sibling_matmuls, nodes, inits, {"x": (F32, [5, 8])},
                          {"y0": (F32, [5, 8]), "y1": (F32, [5, 3]), "r": (F32, [5, 8]),
                           "y2": (F32, [3, 8])}, {"x": x}, rtol=1e-4)
    assert count == 1 and op_types(g).count("MatMul") == 2 and "Add" in op_types(g)


@pytest.mark.parametrize("equation, a_shape, b_shape", [
    ("BTNH,BSNH->BNTS", (2, 5, 3, 4), (2, 6, 3, 4)),      # attention scores
    ("BNTS,BSNH->BTNH", (2, 3, 5, 6), (2, 6, 3, 4)),      # attention context
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    ("ij,kj->ki", (3, 4), (5, 4)),
])
def test_batched_matmul_einsums_become_matmuls(equation, a_shape, b_shape):
    nodes = [node("Einsum", ["a", "b"], ["y"], equation=equation)]
    feeds = {"a": RNG.randn(*a_shape).astype(F32), "b": RNG.randn(*b_shape).astype(F32)}
    expected = np.einsum(equation, feeds["a"], feeds["b"])
    g, count = check_pass(einsums_to_matmuls, nodes, {},
                          {"a": (F32, list(a_shape)), "b": (F32, list(b_shape))},
                          {"y": (F32, list(expected.shape))}, feeds, rtol=1e-4)
    assert count == 1 and "Einsum" not in op_types(g) and "MatMul" in op_types(g)


def test_other_einsums_stay():
    for equation in ("ii->i", "ij,jk", "bij,bjk->bi", "abc,cd->abd", "...ij,...jk->...ik",
                     "ij,ij->ij", "ijk,kl,lm->im"):
        assert _batched_matmul(equation) is None, equation
