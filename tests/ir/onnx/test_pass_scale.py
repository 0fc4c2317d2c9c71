"""Scale sinking: a per-channel Mul after a Concat (DenseNet's pre-activation batch norm)
moves through Add, positive-scale Relu/MaxPool, pools and zero Pads into the weights of
the Convs/Gemms reading it; a negative scale stops at Relu and MaxPool."""

from __future__ import annotations

import numpy as np

from tf2ir.ir.onnx.passes.scale import channel_scale, sink_scales_into_weights
from tests.ir.onnx.test_pass_common import check_pass, node, op_types

F32 = np.float32
RNG = np.random.RandomState(0)
I64 = lambda *v: np.array(v, np.int64)      # noqa: E731


def _dense_block(scale, consumer_pads=(1, 1, 1, 1), group=1, between=("Relu",)):
    """x (3 ch) and Conv(x) (5 ch), concatenated (8 ch), read by Mul(scale) -> Add(shift)
    -> the ops `between` -> Conv(3x3, `consumer_pads`) and also by the output `cat`."""
    inits = {"w1": RNG.randn(5, 3, 1, 1).astype(F32), "s": scale.reshape(1, 8, 1, 1),
             "t": RNG.randn(1, 8, 1, 1).astype(F32),
             "w2": RNG.randn(4, 8 // group, 3, 3).astype(F32), "b2": RNG.randn(4).astype(F32),
             "pads": I64(0, 0, 1, 1, 0, 0, 1, 1)}
    nodes = [node("Conv", ["x", "w1"], ["c1"], kernel_shape=[1, 1]),
             node("Concat", ["x", "c1"], ["cat"], axis=1),
             node("Mul", ["cat", "s"], ["m"]), node("Add", ["m", "t"], ["a"])]
    v = "a"
    for i, op in enumerate(between):
        attrs = {"MaxPool": dict(kernel_shape=[2, 2]), "AveragePool": dict(kernel_shape=[2, 2])}
        inputs = [v, "pads"] if op == "Pad" else [v]
        nodes.append(node(op, inputs, [f"v{i}"], **attrs.get(op, {})))
        v = f"v{i}"
    nodes.append(node("Conv", [v, "w2", "b2"], ["y"], kernel_shape=[3, 3], pads=list(consumer_pads),
                      group=group))
    return nodes, inits


def _check(nodes, inits, spatial=6):
    x = RNG.randn(2, 3, 6, 6).astype(F32)
    return check_pass(sink_scales_into_weights, nodes, inits, {"x": (F32, [None, 3, 6, 6])},
                      {"y": (F32, [None, 4, None, None]), "cat": (F32, [None, 8, 6, 6])}, {"x": x}, rtol=1e-4)


def test_a_positive_scale_goes_through_add_and_relu_into_a_padded_conv():
    nodes, inits = _dense_block(RNG.uniform(0.3, 2, 8).astype(F32))
    g, count = _check(nodes, inits)
    # the Mul went; the shift left (t / s, before a padded Conv) is a BatchNormalization
    assert count == 2 and op_types(g) == ["Conv", "Concat", "BatchNormalization", "Relu", "Conv"]
    assert "s" not in {i for n in g.nodes for i in n.input}


def test_through_pad_max_pool_and_average_pool_into_a_grouped_conv():
    nodes, inits = _dense_block(RNG.uniform(0.3, 2, 8).astype(F32), group=2,
                                between=("Relu", "Pad", "MaxPool", "AveragePool"))
    g, count = _check(nodes, inits)
    assert count == 2 and "Mul" not in op_types(g) and "Add" not in op_types(g)


def test_a_negative_scale_is_not_pushed_through_relu_or_max_pool():
    scale = RNG.uniform(0.3, 2, 8).astype(F32)
    scale[3] = -0.5
    for between in (("Relu",), ("MaxPool",), ("LeakyRelu",)):
        nodes, inits = _dense_block(scale, between=between)
        g, count = _check(nodes, inits)
        assert count == 0 and "Mul" in op_types(g), between


def test_a_negative_scale_with_nothing_non_linear_between_goes_into_the_conv():
    scale = RNG.uniform(-2, 2, 8).astype(F32)
    scale[scale == 0] = 1
    nodes, inits = _dense_block(scale, between=("AveragePool",))
    g, count = _check(nodes, inits)
    assert count == 2 and "Mul" not in op_types(g) and "Add" not in op_types(g)


def test_through_global_pooling_and_spatial_mean_into_a_gemm():
    inits = {"w1": RNG.randn(5, 3, 1, 1).astype(F32), "s": RNG.uniform(0.5, 2, (8, 1, 1)).astype(F32),
             "t": RNG.randn(8, 1, 1).astype(F32), "axes": I64(2, 3),
             "wg": RNG.randn(8, 4).astype(F32), "wt": RNG.randn(4, 8).astype(F32)}
    nodes = [node("Conv", ["x", "w1"], ["c1"], kernel_shape=[1, 1]),
             node("Concat", ["x", "c1"], ["cat"], axis=1),
             node("Mul", ["s", "cat"], ["m"]), node("Sub", ["t", "m"], ["a"]),
             node("ReduceMean", ["a", "axes"], ["r"], keepdims=0),
             node("Gemm", ["r", "wg"], ["y"]), node("Gemm", ["r", "wt"], ["z"], transB=1),
             node("MatMul", ["r", "wg"], ["u"])]
    x = RNG.randn(2, 3, 6, 6).astype(F32)
    g, count = check_pass(sink_scales_into_weights, nodes, inits, {"x": (F32, [None, 3, 6, 6])},
                          {"y": (F32, [None, 4]), "z": (F32, [None, 4]), "u": (F32, [None, 4]),
                           "cat": (F32, [None, 8, 6, 6])}, {"x": x}, rtol=1e-4)
    assert count == 1 and "Mul" not in op_types(g)


def test_a_scale_that_broadcasts_the_input_or_meets_a_non_absorber_stays():
    # x has 1 channel: Mul by 8 per-channel values makes 8 channels, so it cannot go
    inits = {"s": RNG.uniform(0.5, 2, (1, 8, 1, 1)).astype(F32), "w": RNG.randn(4, 8, 1, 1).astype(F32)}
    nodes = [node("Mul", ["x", "s"], ["m"]), node("Conv", ["m", "w"], ["y"], kernel_shape=[1, 1])]
    x = RNG.randn(2, 1, 4, 4).astype(F32)
    g, count = check_pass(sink_scales_into_weights, nodes, inits, {"x": (F32, [None, 1, 4, 4])},
                          {"y": (F32, [None, 4, 4, 4])}, {"x": x})
    assert count == 0
    # a reader that is not a Conv (Sigmoid) keeps the Mul; so does a Conv reading it as weight
    inits = {"s": RNG.uniform(0.5, 2, (1, 3, 1, 1)).astype(F32), "w": RNG.randn(4, 3, 1, 1).astype(F32)}
    nodes = [node("Mul", ["x", "s"], ["m"]), node("Sigmoid", ["m"], ["z"]),
             node("Conv", ["m", "w"], ["y"], kernel_shape=[1, 1])]
    x = RNG.randn(2, 3, 4, 4).astype(F32)
    g, count = check_pass(sink_scales_into_weights, nodes, inits, {"x": (F32, [None, 3, 4, 4])},
                          {"y": (F32, [None, 4, 4, 4]), "z": (F32, [None, 3, 4, 4])}, {"x": x})
    assert count == 0


def test_channel_scale_reads_the_varying_axis():
    assert channel_scale(np.ones((1, 8, 1, 1), F32), 4).axis == 1
    assert channel_scale(np.ones((8, 1, 1), F32), 4).axis == 1
    assert channel_scale(np.ones(8, F32), 2).axis == 1
    assert channel_scale(np.ones((), F32), 4).axis is None
    assert channel_scale(np.ones((2, 8, 1, 1), F32), 4) is None
    assert channel_scale(np.ones((1, 1, 1, 1, 8), F32), 4) is None


def _shift_then(conv_attrs, shift_shape=(1, 3, 1, 1), group=1):
    inits = {"t": np.asarray(RNG.randn(*shift_shape), F32), "w": RNG.randn(4, 3 // group, 3, 3).astype(F32),
             "b": RNG.randn(4).astype(F32)}
    nodes = [node("Add", ["x", "t"], ["a"]),
             node("Conv", ["a", "w", "b"], ["y"], kernel_shape=[3, 3], group=group, **conv_attrs)]
    x = RNG.randn(2, 3, 6, 6).astype(F32)
    return check_pass(sink_scales_into_weights, nodes, inits, {"x": (F32, [None, 3, 6, 6])},
                      {"y": (F32, [None, 4, None, None])}, {"x": x}, rtol=1e-4)


def test_a_shift_goes_into_the_bias_of_an_unpadded_conv_only():
    for attrs in ({}, {"auto_pad": "VALID"}, {"strides": [2, 2]}):
        g, count = _shift_then(attrs)
        assert count == 1 and op_types(g) == ["Conv"], attrs
    g, count = _shift_then({}, shift_shape=())          # a scalar shift
    assert count == 1 and op_types(g) == ["Conv"]
    for padded in ({"pads": [1, 1, 1, 1]}, {"pads": [0, 0, 1, 0]}, {"auto_pad": "SAME_UPPER"}):
        g, count = _shift_then(padded)                  # zero padding would become -t
        assert count == 0 and op_types(g) == ["Add", "Conv"], padded


def _shift_after(producer, op="Add", shift_first=False, dtype=F32):
    """`producer` of x (Conv, Concat, Sigmoid, or None: x itself), then op(x, t) with t per
    channel, then Relu, read by a padded Conv (which cannot take t into its bias) in float32
    (onnxruntime has no float64 Conv)."""
    inits = {"t": RNG.randn(1, 3, 1, 1).astype(dtype), "w": RNG.randn(4, 3, 3, 3).astype(dtype),
             "w0": RNG.randn(3, 3, 1, 1).astype(dtype)}
    first = {"Conv": [node("Conv", ["x", "w0"], ["p"], kernel_shape=[1, 1])],
             "Concat": [node("Concat", ["x"], ["p"], axis=1)],
             "Sigmoid": [node("Sigmoid", ["x"], ["p"])], None: []}[producer]
    v = "p" if first else "x"
    nodes = first + [node(op, ["t", v] if shift_first else [v, "t"], ["a"]),
                     node("Relu", ["a"], ["r" if dtype == F32 else "y"])]
    if dtype == F32:
        nodes.append(node("Conv", ["r", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    x = RNG.randn(2, 3, 6, 6).astype(dtype)
    return check_pass(sink_scales_into_weights, nodes, inits, {"x": (dtype, [None, 3, 6, 6])},
                      {"y": (dtype, [None, 4 if dtype == F32 else 3, 6, 6])}, {"x": x}, rtol=1e-4)


def test_a_shift_of_a_conv_or_concat_no_conv_takes_is_an_exact_batch_norm():
    for producer, op, shift_first in (("Conv", "Add", False), ("Concat", "Add", True),
                                      ("Concat", "Sub", False)):
        g, count = _shift_after(producer, op, shift_first)
        assert count == 1 and op_types(g)[1:] == ["BatchNormalization", "Relu", "Conv"]
        bn = g.nodes[1]
        scale, bias, mean, var = (g.const(name) for name in bn.input[1:])
        t = g.const("t").reshape(-1)
        assert bn.attr("epsilon") == 0.0 and bn.input[0] == "p"
        np.testing.assert_array_equal(bias, -t if op == "Sub" else t)
        assert np.all(scale == 1) and np.all(mean == 0) and np.all(var == 1)
        assert all(a.dtype == F32 and a.shape == (3,) for a in (scale, bias, mean, var))


def test_a_shift_of_another_producer_or_type_stays_an_add():
    # a graph input or a Sigmoid (onnxruntime runs neither in its blocked layout), t - x,
    # float64 (no blocked kernels)
    for producer, op, shift_first, dtype in ((None, "Add", False, F32),
                                             ("Sigmoid", "Add", False, F32),
                                             ("Conv", "Sub", True, F32),
                                             ("Concat", "Add", False, np.float64)):
        g, count = _shift_after(producer, op, shift_first, dtype)
        assert count == 0 and op in op_types(g), (producer, op, dtype)
        assert "BatchNormalization" not in op_types(g)


def test_a_shift_goes_into_a_gemm_bias():
    inits = {"t": RNG.randn(6).astype(F32), "w": RNG.randn(4, 6).astype(F32),
             "c": RNG.randn(4).astype(F32)}
    nodes = [node("Add", ["t", "x"], ["a"]),
             node("Gemm", ["a", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)]
    x = RNG.randn(3, 6).astype(F32)
    g, count = check_pass(sink_scales_into_weights, nodes, inits, {"x": (F32, [None, 6])},
                          {"y": (F32, [None, 4])}, {"x": x}, rtol=1e-4)
    assert count == 1 and op_types(g) == ["Gemm"]


def test_input_normalization_goes_through_the_nhwc_transpose_into_the_stem_conv():
    # ConvNeXt/EfficientNet stems: (x - mean) / std on NHWC, Transpose, Conv
    inits = {"mean": RNG.randn(3).astype(F32), "std": RNG.uniform(0.5, 2, 3).astype(F32),
             "w": RNG.randn(4, 3, 2, 2).astype(F32), "b": RNG.randn(4).astype(F32),
             "k": np.array(1 / 255, F32)}
    x = {"x": RNG.uniform(0, 255, (2, 6, 6, 3)).astype(F32)}
    for stem, removed in (("valid", 2), ("padded", 1)):
        pads = [0, 0, 1, 1] if stem == "padded" else [0, 0, 0, 0]
        nodes = [node("Sub", ["x", "mean"], ["s"]), node("Div", ["s", "std"], ["d"]),
                 node("Transpose", ["d"], ["t"], perm=[0, 3, 1, 2]),
                 node("Conv", ["t", "w", "b"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                      pads=pads)]
        g, count = check_pass(sink_scales_into_weights, nodes, inits, {"x": (F32, [None, 6, 6, 3])},
                              {"y": (F32, [None, 4, None, None])}, x, rtol=1e-4)
        # with padding the mean stays: the padded zeros would become -mean / std
        assert count == removed and "Div" not in op_types(g), stem
        assert ("Sub" in op_types(g)) == (stem == "padded")
    nodes = [node("Mul", ["x", "k"], ["m"]), node("Transpose", ["m"], ["t"], perm=[0, 3, 1, 2]),
             node("Conv", ["t", "w"], ["y"], kernel_shape=[2, 2], pads=[1, 1, 1, 1])]
    g, count = check_pass(sink_scales_into_weights, nodes, inits, {"x": (F32, [None, 6, 6, 3])},
                          {"y": (F32, [None, 4, 7, 7])}, x, rtol=1e-4)
    assert count == 1 and op_types(g) == ["Transpose", "Conv"]


def test_a_long_chain_that_ends_in_no_absorber_is_walked_once(monkeypatch):
    """Each Mul of a chain Mul -> Relu -> Mul -> ... -> Sigmoid follows the rest of the
    chain and fails at the Sigmoid: the pass walks each value once, not once per Mul."""
    from tf2ir.ir.onnx.passes import scale as scale_module
    from tests.ir.onnx.test_pass_common import onnx_graph
    n, nodes, inits, v = 300, [], {}, "x"
    for i in range(n):
        inits[f"s{i}"] = RNG.uniform(0.5, 2, (1, 3, 1, 1)).astype(F32)
        nodes += [node("Mul", [v, f"s{i}"], [f"m{i}"]), node("Relu", [f"m{i}"], [f"r{i}"])]
        v = f"r{i}"
    nodes.append(node("Sigmoid", [v], ["y"]))
    g = onnx_graph(nodes, inits, {"x": (F32, [None, 3, 4, 4])}, {"y": (F32, [None, 3, 4, 4])})
    for each in g.nodes:                  # channels known, as the IR's shapes tell them
        g.shapes[each.output[0]] = (None, 3, 4, 4)
    calls = []
    original = scale_module._Sinker.passes_through

    def counting(self, *args):
        calls.append(1)
        return original(self, *args)
    monkeypatch.setattr(scale_module._Sinker, "passes_through", counting)
    assert sink_scales_into_weights(g) == 0
    g.check()
    assert 2 * n - 2 <= len(calls) <= 4 * n      # the first Mul's walk, then no more
