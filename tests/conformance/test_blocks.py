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


# -- run-time block_shape, paddings and crops ------------------------------------------------
# which operands are graph inputs: (block_shape, paddings/crops)
RUNTIME_OPERANDS = {"both": (True, True), "block": (True, False), "pairs": (False, True)}


def _runtime_fn(op, block, pairs, which):
    """`op` over x and whichever of block/pairs `which` feeds at run time (the rest constant)."""
    fed_block, fed_pairs = RUNTIME_OPERANDS[which]

    def fn(x, *fed):
        fed = list(fed)
        b = fed.pop(0) if fed_block else block
        p = fed.pop(0) if fed_pairs else pairs
        return op(x, b, p)
    return fn


def _runtime_feeds(x_runs, block_runs, pair_runs, which, dtype="int32"):
    fed_block, fed_pairs = RUNTIME_OPERANDS[which]
    runs = []
    for x, b, p in zip(x_runs, block_runs, pair_runs):
        runs.append([x] + ([np.array(b, dtype)] if fed_block else [])
                    + ([np.array(p, dtype)] if fed_pairs else []))
    m = len(block_runs[0])
    specs = [spec((None,) * (x_runs[0].ndim - 1) + x_runs[0].shape[-1:], x_runs[0].dtype.name)]
    if fed_block:
        specs.append(spec((m,), dtype, "x1"))
    if fed_pairs:
        specs.append(spec((m, 2), dtype, f"x{len(specs)}"))
    return runs, specs


# which: runs of (x shape, block_shape, paddings), the operands `which` names fed at run time
SPACE_TO_BATCH_RUNS = {
    "both": [((2, 4, 6, 3), [2, 3], [[1, 1], [2, 1]]), ((1, 6, 3, 3), [2, 3], [[0, 2], [0, 0]]),
             ((3, 4, 6, 3), [1, 2], [[0, 0], [1, 1]])],
    "block": [((2, 4, 6, 3), [2, 3], [[1, 1], [2, 1]]), ((1, 4, 6, 3), [3, 3], [[1, 1], [2, 1]])],
    "pairs": [((2, 4, 6, 3), [2, 3], [[1, 1], [2, 1]]), ((1, 6, 3, 3), [2, 3], [[0, 2], [0, 0]]),
              ((3, 4, 6, 3), [2, 3], [[0, 0], [1, 2]])],
}


@pytest.mark.parametrize("which", sorted(RUNTIME_OPERANDS))
def test_space_to_batch_nd_runtime(which):
    shapes, blocks, pads = zip(*SPACE_TO_BATCH_RUNS[which])
    runs, specs = _runtime_feeds([rand(*shape) for shape in shapes], blocks, pads, which)
    fn = _runtime_fn(tf.space_to_batch_nd, blocks[0], pads[0], which)
    check_op(fn, runs[0], specs=specs, extra_inputs=runs[1:])


@pytest.mark.parametrize("which", sorted(RUNTIME_OPERANDS))
def test_batch_to_space_nd_runtime(which):
    blocks, crops = [[2, 3], [2, 3], [3, 1]], [[[1, 0], [2, 1]], [[0, 0], [0, 3]], [[2, 1], [0, 0]]]
    if which == "block":
        crops = [crops[0]] * 3
    if which == "pairs":
        blocks = [blocks[0]] * 3
    xs = [rand(2 * int(np.prod(b)), 3, 4, 2, dtype="int32") for b in blocks]
    runs, specs = _runtime_feeds(xs, blocks, crops, which, "int64")
    fn = _runtime_fn(tf.batch_to_space, blocks[0], crops[0], which)
    check_op(fn, runs[0], specs=specs, extra_inputs=runs[1:])


def test_space_to_batch_nd_runtime_one_block_dim_rest_dims():
    fn = lambda x, b, p: tf.space_to_batch_nd(x, b, p)  # noqa: E731
    check_op(fn, [rand(2, 5, 3, 2), np.array([3], np.int32), np.array([[1, 0]], np.int32)],
             specs=[spec((2, 5, 3, 2)), spec((1,), "int32", "x1"), spec((1, 2), "int32", "x2")],
             extra_inputs=[[rand(2, 5, 3, 2), np.array([2], np.int32), np.array([[0, 1]], np.int32)]])


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
