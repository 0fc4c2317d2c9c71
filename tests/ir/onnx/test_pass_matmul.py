"""MatMul rewrites: attention's query/key/value MatMuls (with their bias Adds) merged into
one MatMul and a Split; batched-matmul Einsums as Transpose/MatMul/Transpose."""

from __future__ import annotations

import numpy as np
import pytest

from tf2ir.ir.onnx.passes.matmul import (
    _batched_matmul, attention_form, einsums_to_matmuls, merge_sibling_matmuls,
)
from tests.ir.onnx.test_pass_common import check_pass, node, on_onnx_graph, op_types

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


@pytest.mark.parametrize("target, bias_shape, moves", [
    ([0, 5, 2, 4], (2, 4), True),         # Keras' (heads, size) bias after the head split
    ([-1, 2, 4], (1, 2, 4), True),        # leading dims merged too: still exact
    ([0, 5, 4, 2], (4, 1), False),        # the bias broadcasts along a split axis
    ([0, 5, 2, 4], (5, 2, 4), False),     # the bias varies along a leading axis
])
def test_a_bias_after_the_head_split_moves_before_it(target, bias_shape, moves):
    inits = {"w": RNG.randn(8, 8).astype(F32), "shape": np.array(target, np.int64),
             "b": RNG.randn(*bias_shape).astype(F32)}
    nodes = [node("MatMul", ["x", "w"], ["m"]), node("Reshape", ["m", "shape"], ["r"]),
             node("Add", ["r", "b"], ["y"])]
    x = RNG.randn(3, 5, 8).astype(F32)
    out_shape = [15] + target[1:] if target[0] == -1 else [3] + target[1:]
    g, count = check_pass(attention_form, nodes, inits, {"x": (F32, [3, 5, 8])},
                          {"y": (F32, out_shape)}, {"x": x}, rtol=1e-5)
    assert count == int(moves)
    assert op_types(g) == (["MatMul", "Add", "Reshape"] if moves else ["MatMul", "Reshape", "Add"])


@pytest.mark.parametrize("scale, becomes_div", [(0.125, True), (0.5, True), (0.3, False)])
def test_power_of_two_score_scales_become_divs(scale, becomes_div):
    inits = {"c": np.array(scale, F32)}
    nodes = [node("MatMul", ["q", "k"], ["s"]), node("Mul", ["s", "c"], ["t"]),
             node("Softmax", ["t"], ["y"], axis=-1)]
    feeds = {"q": RNG.randn(2, 3, 4).astype(F32), "k": RNG.randn(2, 4, 3).astype(F32)}
    g, count = check_pass(attention_form, nodes, inits,
                          {"q": (F32, [2, 3, 4]), "k": (F32, [2, 4, 3])},
                          {"y": (F32, [2, 3, 3])}, feeds, rtol=1e-7)
    assert count == int(becomes_div)
    assert ("Div" in op_types(g)) == becomes_div


def test_the_passes_run_on_the_onnx_graph():
    for run_pass in (einsums_to_matmuls, attention_form, merge_sibling_matmuls):
        assert on_onnx_graph(run_pass), run_pass.__name__


def test_siblings_apart_merge_before_every_reader():
    """x is made by a node; the first projection's reader comes before the second projection:
    the Split lands after x's producer, before both readers (no reordering afterwards)."""
    inits = {"w0": RNG.randn(8, 6).astype(F32), "w1": RNG.randn(8, 4).astype(F32)}
    nodes = [node("Relu", ["inp"], ["x"]), node("MatMul", ["x", "w0"], ["m0"]),
             node("Neg", ["m0"], ["n0"]), node("MatMul", ["x", "w1"], ["m1"]),
             node("Add", ["n0", "n0"], ["y"])]
    g, count = check_pass(merge_sibling_matmuls, nodes, inits, {"inp": (F32, [5, 8])},
                          {"y": (F32, [5, 6]), "m1": (F32, [5, 4])},
                          {"inp": RNG.randn(5, 8).astype(F32)}, rtol=1e-4)
    assert count == 1 and op_types(g) == ["Relu", "MatMul", "Split", "Neg", "Add"]
    assert list(g.producer("m1").output) == ["m0", "m1"]        # the graph output's name kept


def test_the_hoisted_bias_keeps_the_reshape_and_the_output_name():
    inits = {"w": RNG.randn(8, 8).astype(F32), "shape": np.array([0, 5, 2, 4], np.int64),
             "b": RNG.randn(2, 4).astype(F32)}
    nodes = [node("MatMul", ["x", "w"], ["m"]), node("Reshape", ["m", "shape"], ["r"], allowzero=0),
             node("Add", ["b", "r"], ["y"])]
    g, count = check_pass(attention_form, nodes, inits, {"x": (F32, [3, 5, 8])},
                          {"y": (F32, [3, 5, 2, 4])}, {"x": RNG.randn(3, 5, 8).astype(F32)})
    reshape = g.producer("y")
    assert count == 1 and reshape.op_type == "Reshape" and reshape.name == "Reshape:r"
    assert reshape.attr("allowzero") == 0 and g.producer(reshape.input[0]).op_type == "Add"


def test_an_einsum_writing_a_graph_output_becomes_its_transpose():
    nodes = [node("Einsum", ["a", "b"], ["y"], equation="BNTS,BSNH->BTNH")]
    feeds = {"a": RNG.randn(2, 3, 5, 6).astype(F32), "b": RNG.randn(2, 6, 3, 4).astype(F32)}
    g, count = check_pass(einsums_to_matmuls, nodes, {},
                          {"a": (F32, [2, 3, 5, 6]), "b": (F32, [2, 6, 3, 4])},
                          {"y": (F32, [2, 5, 3, 4])}, feeds, rtol=1e-4)
    assert count == 1 and op_types(g) == ["Transpose", "MatMul", "Transpose"]
    assert g.producer("y").attr("perm") == [0, 2, 1, 3] and g.producer("y").name == "Einsum:y"
