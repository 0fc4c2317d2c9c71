"""Conformance of the block rearrangements (opp/blocks.py) against TensorFlow: SpaceToBatchND,
BatchToSpaceND, DepthToSpace and SpaceToDepth."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, convert_function, converted_op_types, rand, spec

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

TESTED_DTYPES = {
    "SpaceToBatchND": ("float32", "int32"),
    "BatchToSpaceND": ("float32", "int32"),
    "DepthToSpace": ("float32", "int32", "bool"),
    "SpaceToDepth": ("float32", "int32", "bool"),
}

DTYPES = ["float32", "int32", "int64", "bool"]


def cases_and_dtypes(cases, dtypes=DTYPES):
    """Every case in the first dtype, then the first case in each other dtype (keeps the file fast)."""
    return [(case, dtypes[0]) for case in cases] + [(cases[0], d) for d in dtypes[1:]]


@pytest.mark.parametrize("case,dtype", cases_and_dtypes(
    [([2, 3], [[1, 1], [2, 1]]), ([2, 2], [[0, 0], [0, 0]]), ([3], [[1, 1]])], ["float32", "int32"]))
def test_space_to_batch_nd(case, dtype):
    block, pads = case
    check_op(lambda x: tf.space_to_batch_nd(x, block, pads), [rand(2, 4, 6, 3, dtype=dtype)])


def test_space_to_batch_nd_symbolic():
    fn = lambda x: tf.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 2]])
    check_op(fn, [rand(1, 4, 4, 2)], specs=[spec((None, None, None, 2))],
             extra_inputs=[[rand(3, 2, 6, 2)]])


@pytest.mark.parametrize("case,dtype", cases_and_dtypes(
    [([2, 3], [[1, 0], [2, 1]]), ([2, 2], [[0, 0], [0, 0]]), ([3], [[1, 1]])], ["float32", "int32"]))
def test_batch_to_space_nd(case, dtype):
    block, crops = case
    batch = 2 * int(np.prod(block))
    check_op(lambda x: tf.batch_to_space(x, block, crops), [rand(batch, 3, 4, 2, dtype=dtype)])


def test_batch_to_space_nd_symbolic():
    fn = lambda x: tf.batch_to_space(x, [2, 2], [[0, 1], [1, 0]])
    check_op(fn, [rand(4, 3, 3, 2)], specs=[spec((None, None, None, 2))],
             extra_inputs=[[rand(8, 2, 5, 2)]])


@pytest.mark.parametrize("block,dtype", cases_and_dtypes([2, 3], ["float32", "int32", "bool"]))
def test_depth_to_space(block, dtype):
    check_op(lambda x: tf.nn.depth_to_space(x, block), [rand(2, 2, 3, 2 * block * block, dtype=dtype)])


def test_depth_to_space_symbolic():
    check_op(lambda x: tf.nn.depth_to_space(x, 2), [rand(1, 2, 3, 8)], specs=[spec((None, None, None, 8))],
             extra_inputs=[[rand(2, 1, 4, 8)]])


@pytest.mark.parametrize("block,dtype", cases_and_dtypes([2, 3], ["float32", "int32", "bool"]))
def test_space_to_depth(block, dtype):
    check_op(lambda x: tf.nn.space_to_depth(x, block), [rand(2, 2 * block, 3 * block, 3, dtype=dtype)])


def test_space_to_depth_symbolic():
    check_op(lambda x: tf.nn.space_to_depth(x, 2), [rand(1, 4, 6, 3)], specs=[spec((None, None, None, 3))],
             extra_inputs=[[rand(2, 2, 2, 3)]])


@pytest.mark.parametrize("op, shape", [("DepthToSpace", (2, 8, 2, 3)), ("SpaceToDepth", (2, 3, 4, 6))])
def test_nchw_data_by_format(op, shape):
    """data_format NCHW becomes the data's format, and the lowering follows it (TF's CPU
    kernels are NHWC only: the reference is TF on the transposed input)."""
    import tempfile

    import onnxruntime as ort
    fn = lambda x: getattr(raw, op)(input=x, block_size=2, data_format="NCHW")  # noqa: E731
    x = rand(*shape)
    nhwc = getattr(tf.nn, "depth_to_space" if op == "DepthToSpace" else "space_to_depth")
    want = np.transpose(nhwc(np.transpose(x, [0, 2, 3, 1]), 2).numpy(), [0, 3, 1, 2])
    with tempfile.TemporaryDirectory() as directory:
        path, graph, _, _ = convert_function(fn, [spec(shape)], directory)
        node = next(n for n in graph.nodes if n.op_type == op)
        assert node.inputs[0].desc.format == "NCHW"
        got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x0": x})[0]
    np.testing.assert_array_equal(got, want)


def test_depth_to_space_rejects_nchw_vect_c():
    from tf2ir.ir import ConversionError
    fn = lambda x: raw.DepthToSpace(input=x, block_size=2, data_format="NCHW_VECT_C")  # noqa: E731
    with pytest.raises(ConversionError, match="NCHW_VECT_C is not supported"):
        converted_op_types(fn, [spec((1, 8, 2, 2, 4), "int8")])
