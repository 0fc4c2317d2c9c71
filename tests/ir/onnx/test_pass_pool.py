"""Pooling rewrites: spatial ReduceMean/ReduceMax become global pools (the Flatten after
them dropped where only Reshapes read them), zero Pads of non-negative tensors go into
MaxPool pads (only where that is exact), nested Concats of one axis are spliced."""

from __future__ import annotations

import numpy as np

from tf2ir.ir.onnx.passes.concat import flatten_concats
from tf2ir.ir.onnx.passes.pad import fold_pads_into_pools
from tf2ir.ir.onnx.passes.pool import reduce_means_to_global_pools
from tests.ir.onnx.test_pass_common import check_pass, node, op_types

F32 = np.float32
RNG = np.random.RandomState(0)
I64 = lambda *v: np.array(v, np.int64)      # noqa: E731
X = {"x": (F32, [None, 3, 5, 6])}


def _x(channels=3):
    return {"x": RNG.randn(2, channels, 5, 6).astype(F32)}


def test_spatial_means_become_global_pools():
    inits = {"hw": I64(2, 3), "neg": I64(-1, -2), "w": RNG.randn(3, 4).astype(F32),
             "shape": I64(0, 3, 1, 1), "flat": I64(0, -1, 1, 1)}
    nodes = [node("ReduceMean", ["x", "hw"], ["keep"]),                      # keepdims 1
             node("ReduceMax", ["x", "neg"], ["mx"], keepdims=0),
             node("ReduceMean", ["x", "hw"], ["m"], keepdims=0), node("Gemm", ["m", "w"], ["y"]),
             node("ReduceMean", ["x", "hw"], ["se"], keepdims=0),
             node("Reshape", ["se", "shape"], ["r"]), node("Reshape", ["se", "flat"], ["r2"]),
             node("Sigmoid", ["r"], ["z"]), node("Relu", ["r2"], ["u"])]
    g, count = check_pass(reduce_means_to_global_pools, nodes, inits, X,
                          {"keep": (F32, [None, 3, 1, 1]), "mx": (F32, [None, 3]),
                           "y": (F32, [None, 4]), "z": (F32, [None, 3, 1, 1]),
                           "u": (F32, [None, 3, 1, 1])}, _x())
    ops = op_types(g)
    assert "ReduceMean" not in ops and "ReduceMax" not in ops and "Reshape" not in ops
    assert ops.count("GlobalAveragePool") == 3 and ops.count("GlobalMaxPool") == 1
    assert ops.count("Flatten") == 2 and count == 6       # 4 reductions, 2 Reshapes


def test_other_reductions_stay():
    inits = {"c": I64(1), "h": I64(2), "chw": I64(1, 2, 3)}
    nodes = [node("ReduceMean", ["x", "c"], ["a"]), node("ReduceMean", ["x", "h"], ["b"]),
             node("ReduceMean", ["x", "chw"], ["d"]), node("ReduceMean", ["x"], ["e"])]
    g, count = check_pass(reduce_means_to_global_pools, nodes, inits, X,
                          {"a": (F32, [None, 1, 5, 6]), "b": (F32, [None, 3, 1, 6]),
                           "d": (F32, [None, 1, 1, 1]), "e": (F32, [1, 1, 1, 1])}, _x())
    assert count == 0


def _pool_after_pad(producer, pads, kernel=(3, 3), pool_pads=None, **pool):
    if pool_pads:
        pool["pads"] = pool_pads
    inits = {"pads": I64(*pads), "lo": np.array(0.5, F32), "hi": np.array(6, F32)}
    first = {"Relu": node("Relu", ["x"], ["r"]), "Tanh": node("Tanh", ["x"], ["r"]),
             "Clip": node("Clip", ["x", "lo", "hi"], ["r"])}[producer]
    nodes = [first, node("Pad", ["r", "pads"], ["p"]),
             node("MaxPool", ["p"], ["y"], kernel_shape=list(kernel), **pool)]
    return check_pass(fold_pads_into_pools, nodes, inits, X,
                      {"y": (F32, [None, None, None, None])}, _x())


def test_a_zero_pad_of_a_relu_goes_into_the_max_pool():
    for producer in ("Relu", "Clip"):
        g, count = _pool_after_pad(producer, (0, 0, 1, 1, 0, 0, 1, 1), strides=[2, 2])
        assert count == 1 and op_types(g) == [producer, "MaxPool"]
    g, count = _pool_after_pad("Relu", (0, 0, 0, 2, 0, 0, 2, 0), pool_pads=[1, 0, 0, 0])
    assert count == 1 and op_types(g) == ["Relu", "MaxPool"]


def test_a_pad_that_maxpool_cannot_take_exactly_stays():
    # Tanh may be negative; a pad as wide as the window gives windows of padding alone;
    # a channel pad; ceil_mode
    for producer, pads, extra in (("Tanh", (0, 0, 1, 1, 0, 0, 1, 1), {}),
                                  ("Relu", (0, 0, 3, 0, 0, 0, 0, 0), {}),
                                  ("Relu", (0, 1, 1, 1, 0, 0, 1, 1), {}),
                                  ("Relu", (0, 0, 1, 1, 0, 0, 1, 1), {"ceil_mode": 1})):
        g, count = _pool_after_pad(producer, pads, **extra)
        assert count == 0 and "Pad" in op_types(g), (producer, pads, extra)


def test_nested_concats_of_one_axis_are_spliced():
    nodes = [node("Relu", ["x"], ["r"]), node("Concat", ["x", "r"], ["inner"], axis=1),
             node("Concat", ["inner", "x"], ["y"], axis=-3),               # spliced
             node("Concat", ["r", "x"], ["other"], axis=2),
             node("Concat", ["other", "other"], ["v"], axis=1),             # another axis
             node("Concat", ["r", "r"], ["shared"], axis=1),
             node("Concat", ["shared", "x"], ["z"], axis=1), node("Relu", ["shared"], ["w"])]
    g, count = check_pass(flatten_concats, nodes, {}, X,
                          {"y": (F32, [None, 9, 5, 6]), "v": (F32, [None, 6, 10, 6]),
                           "z": (F32, [None, 9, 5, 6]), "w": (F32, [None, 6, 5, 6])},
                          _x(), ranks={"y": 4, "v": 4, "z": 4})
    assert count == 1 and op_types(g).count("Concat") == 5      # only inner went
    assert list(next(n for n in g.nodes if n.output[0] == "y").input) == ["x", "r", "x"]


def test_hard_swish_and_hard_sigmoid_fuse():
    from tf2ir.ir.onnx.passes.activation import fuse_hard_activations
    inits = {"zero": np.array(0, F32), "six": np.array(6, F32), "sixth": np.array(1 / 6, F32),
             "five": np.array(5, F32)}
    nodes = [node("HardSigmoid", ["x"], ["h"], alpha=1 / 6, beta=0.5), node("Mul", ["h", "x"], ["y"]),
             node("Clip", ["x", "zero", "six"], ["c"]), node("Mul", ["c", "sixth"], ["z"]),
             node("Clip", ["x", "zero", "five"], ["c2"]), node("Mul", ["sixth", "c2"], ["u"]),
             node("HardSigmoid", ["x"], ["h2"]), node("Mul", ["x", "h2"], ["v"])]   # alpha 0.2
    x = {"x": RNG.uniform(-8, 8, (2, 3, 5, 6)).astype(F32)}
    outputs = {n: (F32, [None, 3, 5, 6]) for n in "yzuv"}
    g, count = check_pass(fuse_hard_activations, nodes, inits, X, outputs, x)
    assert count == 2 and op_types(g)[:2] == ["HardSwish", "HardSigmoid"]
    assert op_types(g).count("Clip") == 1 and op_types(g).count("HardSigmoid") == 2
