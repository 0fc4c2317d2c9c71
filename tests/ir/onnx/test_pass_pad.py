"""Pad folding: zero spatial Pads go into the Convs that read them, through a Transpose."""

from __future__ import annotations

import numpy as np

from tf2ir.ir.onnx.passes.pad import fold_pads_into_convs
from tests.ir.onnx.test_pass_common import check_pass, node, op_types

F32 = np.float32
RNG = np.random.RandomState(0)
I64 = lambda *v: np.array(v, np.int64)      # noqa: E731


def test_an_nhwc_input_pad_moves_below_the_transpose_into_the_conv():
    inits = {"pads": I64(0, 1, 2, 0, 0, 2, 1, 0), "w": RNG.randn(4, 3, 3, 3).astype(F32)}
    nodes = [node("Pad", ["x", "pads"], ["p"]), node("Transpose", ["p"], ["t"], perm=[0, 3, 1, 2]),
             node("Conv", ["t", "w"], ["y"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="VALID")]
    x = RNG.randn(2, 7, 6, 3).astype(F32)
    g, count = check_pass(fold_pads_into_convs, nodes, inits, {"x": (F32, [None, 7, 6, 3])},
                          {"y": (F32, [None, 4, 4, 4])}, {"x": x}, rtol=1e-4)
    assert count == 1 and op_types(g) == ["Transpose", "Conv"]
    assert list(g.nodes[1].attr("pads")) == [1, 2, 2, 1]


def test_pads_add_to_a_conv_s_own_pads_for_every_reader():
    inits = {"pads": I64(0, 0, 1, 1, 0, 0, 1, 1), "w": RNG.randn(2, 3, 3, 3).astype(F32)}
    nodes = [node("Pad", ["x", "pads"], ["p"]),
             node("Conv", ["p", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 0, 0, 1]),
             node("Conv", ["p", "w"], ["z"], kernel_shape=[3, 3])]
    x = RNG.randn(1, 3, 5, 5).astype(F32)
    g, count = check_pass(fold_pads_into_convs, nodes, inits, {"x": (F32, [None, 3, 5, 5])},
                          {"y": (F32, [None, 2, 6, 6]), "z": (F32, [None, 2, 5, 5])}, {"x": x},
                          rtol=1e-4)
    assert count == 1 and op_types(g) == ["Conv", "Conv"]


def test_pads_that_are_not_plain_zero_spatial_pads_stay():
    cases = [  # (pads, value, conv attrs, other reader)
        (I64(0, 1, 0, 0, 0, 0, 0, 0), None, {}, False),            # channel dim padded
        (I64(0, 0, 1, 1, 0, 0, 1, 1), np.array(1.0, F32), {}, False),  # value 1
        (I64(0, 0, 1, 1, 0, 0, 1, 1), None, {"auto_pad": "SAME_UPPER"}, False),
        (I64(0, 0, 1, 1, 0, 0, 1, 1), None, {}, True),             # also read by Relu
    ]
    for pads, value, attrs, other in cases:
        inits = {"pads": pads, "w": RNG.randn(2, 3 + int(pads[1]), 1, 1).astype(F32)}
        if value is not None:
            inits["v"] = value
        nodes = [node("Pad", ["x", "pads"] + (["v"] if value is not None else []), ["p"]),
                 node("Conv", ["p", "w"], ["y"], kernel_shape=[1, 1], **attrs)]
        outputs = {"y": (F32, [None] * 4)}
        if other:
            nodes.append(node("Relu", ["p"], ["r"]))
            outputs["r"] = (F32, [None] * 4)
        g, count = check_pass(fold_pads_into_convs, nodes, inits, {"x": (F32, [1, 3, 4, 4])},
                              outputs, {"x": RNG.randn(1, 3, 4, 4).astype(F32)})
        assert count == 0 and op_types(g)[0] == "Pad"


def test_a_pad_transpose_swap_keeps_the_transpose_s_output_name():
    # The Transpose's output is a graph output: after the swap the Pad writes it (the two
    # nodes are morphed in place, so the order holds without sorting; check_pass checks it)
    inits = {"pads": I64(0, 1, 2, 0, 0, 2, 1, 0), "w": RNG.randn(4, 3, 3, 3).astype(F32)}
    nodes = [node("Pad", ["x", "pads"], ["p"]), node("Transpose", ["p"], ["t"], perm=[0, 3, 1, 2]),
             node("Conv", ["t", "w"], ["y"], kernel_shape=[3, 3])]
    x = RNG.randn(2, 7, 6, 3).astype(F32)
    g, count = check_pass(fold_pads_into_convs, nodes, inits, {"x": (F32, [None, 7, 6, 3])},
                          {"t": (F32, [None, 3, 10, 9]), "y": (F32, [None, 4, 8, 7])},
                          {"x": x}, rtol=1e-4)
    assert count == 0 and op_types(g) == ["Transpose", "Pad", "Conv"]
    assert g.producer("t").op_type == "Pad" and g.rank(g.nodes[0].output[0]) == 4
    assert g.const(g.nodes[1].input[1]).tolist() == [0, 0, 1, 2, 0, 0, 2, 1]


def test_a_pad_stays_whole_when_one_of_its_convs_cannot_take_it():
    # one reader pads SAME_UPPER: no Conv is rewired (none reads x while another reads p)
    inits = {"pads": I64(0, 0, 1, 1, 0, 0, 1, 1), "w": RNG.randn(2, 3, 3, 3).astype(F32)}
    nodes = [node("Pad", ["x", "pads"], ["p"]),
             node("Conv", ["p", "w"], ["y"], kernel_shape=[3, 3]),
             node("Conv", ["p", "w"], ["z"], kernel_shape=[3, 3], auto_pad="SAME_UPPER")]
    g, count = check_pass(fold_pads_into_convs, nodes, inits, {"x": (F32, [None, 3, 5, 5])},
                          {"y": (F32, [None, 2, 5, 5]), "z": (F32, [None, 2, 7, 7])},
                          {"x": RNG.randn(1, 3, 5, 5).astype(F32)}, rtol=1e-4)
    assert count == 0 and [n.input[0] for n in g.nodes[1:]] == ["p", "p"]
    assert g.nodes[1].attr("pads") is None
