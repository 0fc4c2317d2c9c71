"""Affine folding: bias and batch-norm Add/Mul after Conv, Gemm and MatMul go into weights."""

from __future__ import annotations

import numpy as np

from tf2ir.ir.onnx.passes.affine import fold_affine_into_weights
from tests.ir.onnx.test_pass_common import check_pass, node, op_types

F32 = np.float32
RNG = np.random.RandomState(0)


def _conv_inits(bias=True):
    inits = {"w": RNG.randn(6, 3, 3, 3).astype(F32), "bias": RNG.randn(1, 6, 1, 1).astype(F32),
             "scale": RNG.uniform(0.5, 1.5, (6, 1, 1)).astype(F32),
             "shift": RNG.randn(1, 6, 1, 1).astype(F32), "two": np.array(2, F32)}
    if bias:
        inits["b"] = RNG.randn(6).astype(F32)
    return inits


def test_bias_and_batch_norm_fold_into_the_conv():
    nodes = [node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("Add", ["c", "bias"], ["a"]), node("Mul", ["scale", "a"], ["m"]),
             node("Sub", ["m", "shift"], ["s"]), node("Div", ["s", "two"], ["d"]),
             node("Relu", ["d"], ["y"])]
    x = RNG.randn(2, 3, 8, 8).astype(F32)
    g, count = check_pass(fold_affine_into_weights, nodes, _conv_inits(False),
                          {"x": (F32, [None, 3, 8, 8])}, {"y": (F32, [None, 6, 8, 8])}, {"x": x},
                          rtol=1e-4)
    assert count == 4 and op_types(g) == ["Conv", "Relu"]
    assert len(g.nodes[0].input) == 3 and "w" not in g.initializers   # the old weight is freed


def test_a_conv_output_read_twice_or_a_spatial_constant_is_left_alone():
    inits = _conv_inits()
    inits["spatial"] = RNG.randn(1, 1, 8, 8).astype(F32)
    nodes = [node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("Mul", ["c", "spatial"], ["y"]),
             node("Conv", ["x", "w", "b"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("Add", ["c2", "bias"], ["z"]), node("Relu", ["c2"], ["r"])]
    x = RNG.randn(1, 3, 8, 8).astype(F32)
    g, count = check_pass(fold_affine_into_weights, nodes, inits, {"x": (F32, [None, 3, 8, 8])},
                          {"y": (F32, [None, 6, 8, 8]), "z": (F32, [None, 6, 8, 8]),
                           "r": (F32, [None, 6, 8, 8])}, {"x": x})
    assert count == 0 and len(g.nodes) == 5


def test_gemm_and_matmul_absorb_per_column_constants():
    inits = {"w": RNG.randn(4, 5).astype(F32), "wt": RNG.randn(5, 4).astype(F32),
             "c": RNG.randn(5).astype(F32), "s": RNG.uniform(0.5, 2, (1, 5)).astype(F32),
             "t": RNG.randn(5).astype(F32)}
    nodes = [node("Gemm", ["x", "wt", "c"], ["g"], transB=1, beta=0.5, alpha=2.0),
             node("Mul", ["g", "s"], ["g1"]), node("Add", ["t", "g1"], ["y"]),
             node("MatMul", ["x", "w"], ["m"]), node("Mul", ["m", "s"], ["m1"]),
             node("Sub", ["m1", "t"], ["z"])]
    x = RNG.randn(3, 4).astype(F32)
    g, count = check_pass(fold_affine_into_weights, nodes, inits, {"x": (F32, [None, 4])},
                          {"y": (F32, [None, 5]), "z": (F32, [None, 5])}, {"x": x}, rtol=1e-4)
    assert count == 4 and op_types(g) == ["Gemm", "Gemm"]


def test_matmul_of_unknown_rank_keeps_its_add():
    inits = {"w": RNG.randn(4, 5).astype(F32), "t": RNG.randn(5).astype(F32)}
    nodes = [node("MatMul", ["x", "w"], ["m"]), node("Add", ["m", "t"], ["y"])]
    x = RNG.randn(2, 3, 4).astype(F32)
    g, count = check_pass(fold_affine_into_weights, nodes, inits, {"x": (F32, [None, 3, 4])},
                          {"y": (F32, [None, 3, 5])}, {"x": x})
    assert count == 0 and op_types(g) == ["MatMul", "Add"]


def test_a_matmul_s_add_of_zeros_goes_at_any_rank():
    # an untrained Dense: MatMul + BiasAdd(zeros) of a (batch, seq, features) input
    inits = {"w": RNG.randn(4, 5).astype(F32), "zeros": np.zeros(5, F32),
             "t": RNG.randn(5).astype(F32)}
    nodes = [node("MatMul", ["x", "w"], ["m"]), node("Add", ["m", "zeros"], ["y"]),
             node("MatMul", ["x", "w"], ["m2"]), node("Add", ["m2", "t"], ["z"])]
    x = RNG.randn(2, 3, 4).astype(F32)
    g, count = check_pass(fold_affine_into_weights, nodes, inits, {"x": (F32, [None, 3, 4])},
                          {"y": (F32, [None, 3, 5]), "z": (F32, [None, 3, 5])}, {"x": x},
                          ranks={"m": 3, "m2": 3})
    assert count == 1 and op_types(g) == ["MatMul", "MatMul", "Add"]
