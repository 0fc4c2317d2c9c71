"""Op gaps TF allows (issue 20, class 4), each written from the issue's description as a small
TF function, frozen, converted, run in onnxruntime and compared with TensorFlow:
BroadcastArgs/BroadcastGradientArgs (`tf.linspace` in a loop body), complex operands of real
ops after an RFFT, run-time `k` in the MatrixDiag family, SparseReshape of unknown rank, and a
PlaceholderWithDefault whose default is computed."""

from __future__ import annotations

import json
import tempfile

import numpy as np
import pytest

from tests.conformance.harness import convert_function, rand, spec
from tests.conftest import run_cli
from tests.e2e.test_real_graphs_dtypes import compare


def _ir_op_types(graph):
    types = set()
    for node in graph.nodes:
        types.add(node.op_type)
        for sub in getattr(node, "subgraphs", {}).values():
            types |= _ir_op_types(sub)
    return types


# -- BroadcastArgs and BroadcastGradientArgs ---------------------------------------------------
SHAPE_PAIRS = [((3, 1), (1, 4)), ((2, 3), (2, 3)), ((5,), (2, 1, 5)), ((1, 1), (1, 3)),
               ((2, 1, 1), (1,)), ((0, 1), (1, 4)), ((), (2, 2))]


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_broadcast_args_of_run_time_shapes(dtype):
    """The shapes are run-time vectors of unknown length, so nothing folds; pairs of differing
    ranks, identical shapes, 1 against 1 and 0 against 1 (TF's rules, not numpy's zeros)."""
    import tensorflow as tf

    def fn(s0, s1):
        r0, r1 = tf.raw_ops.BroadcastGradientArgs(s0=s0, s1=s1)
        return tf.raw_ops.BroadcastArgs(s0=s0, s1=s1), r0, r1
    first, *more = [(np.array(a, dtype).reshape(-1), np.array(b, dtype).reshape(-1))
                    for a, b in SHAPE_PAIRS]
    graph = compare(fn, first, specs=[spec([None], dtype, "x0"), spec([None], dtype, "x1")],
                    extra_inputs=more)
    assert {"BroadcastArgs", "BroadcastGradientArgs"} <= _ir_op_types(graph)


def test_broadcast_args_folds_known_shapes():
    import tensorflow as tf
    graph = compare(lambda a: a + tf.cast(tf.raw_ops.BroadcastArgs(s0=tf.shape(a), s1=[4, 1, 1]),
                                          tf.float32)[-1],
                    [rand(3, 1)])
    assert "BroadcastArgs" not in _ir_op_types(graph)


def _linspace_loop(n, x):
    """A loop whose body interpolates from zeros to i * x (x of run-time length) in 5 steps."""
    import tensorflow as tf

    def body(i, acc):
        stop = x * tf.cast(i, tf.float32)
        return i + 1, acc + tf.reduce_sum(tf.linspace(tf.zeros_like(x), stop, 5), axis=0)
    return tf.while_loop(lambda i, a: i < n, body, [tf.constant(0), tf.zeros_like(x)])[1]


LOOP_SPECS = [spec([], "int32", "x0"), spec([None], "float32", "x1")]


def test_linspace_in_a_while_loop_body_converts_and_check_agrees():
    """tf.linspace of tensors writes BroadcastArgs; in a tf.while_loop body it is in the
    function library, where `check` and `convert` both must find it mapped."""
    graph = compare(_linspace_loop, [np.array(3, np.int32), rand(4)], specs=LOOP_SPECS,
                    extra_inputs=[[np.array(0, np.int32), rand(2)],
                                  [np.array(7, np.int32), rand(1)]])
    assert "BroadcastArgs" in _ir_op_types(graph)
    with tempfile.TemporaryDirectory() as directory:
        _, _, _, pb = convert_function(_linspace_loop, LOOP_SPECS, directory)
        result = run_cli("check", pb, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["supported"] is True
