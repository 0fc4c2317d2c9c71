"""Conformance of the slicing ops (opp/slicing.py) against TensorFlow: StridedSlice with every
mask, Slice, ReverseV2 and ReverseSequence."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, converted_op_types, rand, spec

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "StridedSlice": ("float32", "int32", "int64", "bool"),
    "Slice": ("float32", "int32", "int64", "bool"),
    "ReverseV2": ("float32", "int32", "int64", "bool"),
    "ReverseSequence": ("float32", "int32"),
}

DTYPES = ["float32", "int32", "int64", "bool"]


def cases_and_dtypes(cases, dtypes=DTYPES):
    """Every case in the first dtype, then the first case in each other dtype (keeps the file fast)."""
    return [(case, dtypes[0]) for case in cases] + [(cases[0], d) for d in dtypes[1:]]


# -- StridedSlice -------------------------------------------------------------------------
SLICES = {
    "basic": lambda x: x[1:3, 0:4:2],
    "begin_end_mask": lambda x: x[:, ::2, 1:],
    "negative_stride": lambda x: x[::-1, 3:0:-2],
    "negative_begin": lambda x: x[-2:, -3::-1],
    "out_of_range": lambda x: x[1:100, -100:2],
    "start_below_dim_backward": lambda x: x[-100::-1, -6:-9:-1],   # TF: nothing, ONNX: clamps to 0
    "ellipsis_shrink": lambda x: x[..., 1],
    "ellipsis_middle": lambda x: x[1:, ..., ::-1],
    "shrink_last": lambda x: x[-1, :, -1],
    "new_axis": lambda x: x[:, tf.newaxis, 1:],
    "new_axis_edges": lambda x: x[tf.newaxis, ..., tf.newaxis],
    "shrink_then_new": lambda x: x[1, tf.newaxis, ::-1],
    "all_masks": lambda x: x[tf.newaxis, -1, ..., 1:3, tf.newaxis],
}


@pytest.mark.parametrize("case", sorted(SLICES))
def test_strided_slice_masks(case):
    check_op(SLICES[case], [rand(4, 5, 6)])


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_strided_slice_dtypes(dtype):
    check_op(lambda x: x[::-1, 1, tf.newaxis], [rand(3, 4, dtype=dtype)])


def test_strided_slice_explicit_masks():
    fn = lambda x: tf.strided_slice(x, [1, 0, 2], [3, 0, 5], [1, 1, -1], begin_mask=0b100,
                                    end_mask=0b110, shrink_axis_mask=0b010)
    check_op(fn, [rand(4, 5, 6)])


def test_strided_slice_symbolic_dims():
    check_op(lambda x: x[1:, ::-2, tf.newaxis, -1], [rand(4, 5, 6)],
             specs=[spec((None, None, 6))], extra_inputs=[[rand(7, 3, 6)]])


def test_strided_slice_backward_from_below_symbolic_dim():
    """x[-3::-1] is empty on a dim shorter than 3 (TF clamps the start to -1), which a
    constant Slice cannot say when the dim is unknown."""
    check_op(lambda x: x[-3::-1], [rand(5, 2)], specs=[spec((None, 2))],
             extra_inputs=[[rand(2, 2)], [rand(3, 2)]])


def test_strided_slice_dynamic_begin():
    fn = lambda x, b: tf.strided_slice(x, tf.stack([b, 0]), tf.stack([b + 2, 3]), [1, 1])
    check_op(fn, [rand(5, 4), np.int32(1)], specs=[spec((None, 4)), spec((), "int32", "x1")],
             extra_inputs=[[rand(6, 4), np.int32(3)]])


def test_constant_strided_slice_and_shape_fold():
    import tempfile
    from tests.conformance.harness import convert_function
    table = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    fn = lambda x: x + table[-1, ::-2, tf.newaxis, 1:3] + tf.cast(tf.shape(table)[2], tf.float32)
    with tempfile.TemporaryDirectory() as directory:
        _, graph, _, _ = convert_function(fn, [spec((2, 1, 2))], directory)
    assert not {n.op_type for n in graph.nodes} & {"StridedSlice", "Shape"}
    check_op(fn, [rand(2, 1, 2)])


# -- Slice ---------------------------------------------------------------------------------
@pytest.mark.parametrize("bounds,dtype", cases_and_dtypes(
    [([1, 0, 2], [2, -1, 3]), ([0, 2, 0], [-1, 1, -1]), ([2, 3, 5], [0, 1, 1])]))
def test_slice(bounds, dtype):
    begin, size = bounds
    check_op(lambda x: tf.slice(x, begin, size), [rand(3, 4, 6, dtype=dtype)])


def test_slice_symbolic_and_dynamic_bounds():
    fn = lambda x, b, s: tf.slice(x, b, s)
    check_op(fn, [rand(4, 5), np.array([1, 2], np.int64), np.array([-1, 2], np.int64)],
             specs=[spec((None, 5)), spec((2,), "int64", "x1"), spec((2,), "int64", "x2")],
             extra_inputs=[[rand(6, 5), np.array([3, 0], np.int64), np.array([2, -1], np.int64)]])


# -- reversing -----------------------------------------------------------------------------
@pytest.mark.parametrize("axis,dtype", cases_and_dtypes([[0, 2], [0], [-1], []]))
def test_reverse_v2(axis, dtype):
    check_op(lambda x: tf.reverse(x, axis), [rand(2, 3, 4, dtype=dtype)])


def test_reverse_v2_symbolic():
    check_op(lambda x: tf.reverse(x, [0, 1]), [rand(3, 4)], specs=[spec((None, None))],
             extra_inputs=[[rand(1, 2)]])


@pytest.mark.parametrize("seq_axis,batch_axis,dtype", [(1, 0, "float32"), (0, 1, "int32"),
                                                      (2, 0, "float32"), (2, 1, "int32")])
def test_reverse_sequence(seq_axis, batch_axis, dtype):
    x = rand(3, 4, 5, dtype=dtype)
    lengths = np.array([0, 1, 3, 4, 5][:x.shape[batch_axis]], np.int64)
    lengths = np.minimum(lengths, x.shape[seq_axis])
    check_op(lambda v: tf.reverse_sequence(v, lengths, seq_axis=seq_axis, batch_axis=batch_axis), [x])


def test_reverse_sequence_symbolic():
    fn = lambda x, n: tf.reverse_sequence(x, n, seq_axis=1, batch_axis=0)
    check_op(fn, [rand(2, 5, 3), np.array([5, 2], np.int32)],
             specs=[spec((None, None, 3)), spec((None,), "int32", "x1")],
             extra_inputs=[[rand(3, 4, 3), np.array([1, 4, 3], np.int32)]])


FOLDED = {"ReverseV2", "Slice"}


def constant_slices(x):
    five = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
    parts = [tf.reverse(five, [0]),
             tf.slice(tf.constant([9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0]), [1], [-1])[:5]]
    return x + sum(parts[1:], parts[0])


def test_constant_slices_fold():
    ops = converted_op_types(constant_slices, [spec((5,))])
    assert not ops & FOLDED, f"not folded: {ops & FOLDED}"
    check_op(constant_slices, [rand(5)])


# -- StridedSlice with run-time begin/end/strides --------------------------------------------
# name: (masks, feeds of (begin, end, strides)); every feed runs through the same model.
RUNTIME_SLICES = {
    "plain": ({}, [([1, -4, 0], [3, -1, 6], [1, 2, 1]), ([0, 0, 5], [4, 5, 0], [2, 1, -1])]),
    "negative_strides": ({}, [([-1, 3, 5], [0, 0, -7], [-1, -2, -1]),
                              ([3, -1, 2], [-100, 1, 100], [-2, -1, 3])]),
    "out_of_range": ({}, [([-100, 1, 3], [100, 100, -100], [1, 1, -1]),
                          ([-5, -6, -100], [0, -9, 0], [-1, -1, -2])]),
    "begin_end_masks": ({"begin_mask": 0b101, "end_mask": 0b110},
                        [([1, 1, 2], [3, 4, 5], [1, 1, 1]), ([1, 1, 2], [3, 4, 5], [-1, -2, -1]),
                         ([-2, 0, 4], [0, -1, 0], [-2, 1, 2])]),
    "shrink": ({"shrink_axis_mask": 0b101, "begin_mask": 0b010},
               [([-1, 0, 2], [0, 3, 3], [1, 1, 1]), ([2, 2, -1], [3, 0, 0], [1, -1, 1])]),
    "ellipsis_new_axis": ({"ellipsis_mask": 0b010, "new_axis_mask": 0b001},
                          [([0, 0, 1], [0, 0, 4], [1, 1, 2]), ([0, 0, -1], [0, 0, 0], [1, 1, -1])]),
    "all_masks": ({"new_axis_mask": 0b10001, "shrink_axis_mask": 0b00010, "ellipsis_mask": 0b00100,
                   "end_mask": 0b01000},
                  [([0, -1, 0, 1, 0], [0, 0, 0, 3, 0], [1, 1, 1, 2, 1]),
                   ([0, 2, 0, 4, 0], [0, 0, 0, 0, 0], [1, 1, 1, -1, 1])]),
}


@pytest.mark.parametrize("case", sorted(RUNTIME_SLICES))
def test_strided_slice_runtime_bounds_and_strides(case):
    masks, feeds = RUNTIME_SLICES[case]
    fn = lambda x, b, e, s: tf.strided_slice(x, b, e, s, **masks)  # noqa: E731
    n = len(feeds[0][0])
    specs = [spec((4, 5, 6))] + [spec((n,), "int32", f"x{i}") for i in (1, 2, 3)]
    runs = [[rand(4, 5, 6)] + [np.array(v, np.int32) for v in feed] for feed in feeds]
    check_op(fn, runs[0], specs=specs, extra_inputs=runs[1:])


def test_strided_slice_runtime_begin_only_int64_symbolic():
    """Constant end and strides, a run-time begin (int64) and symbolic dims: XLNet's
    relative-attention shift slices x[:, b:] this way."""
    fn = lambda x, b: x[:, b[0]:, ::-1][b[1]]  # noqa: E731
    check_op(fn, [rand(3, 6, 2), np.array([2, -1], np.int64)],
             specs=[spec((None, None, 2)), spec((2,), "int64", "x1")],
             extra_inputs=[[rand(4, 5, 2), np.array([-3, 0], np.int64)]])


def test_strided_slice_runtime_unknown_rank():
    """The input's rank is unknown (a reshape to a run-time shape); no ellipsis, so the spec
    needs only its own dims."""
    def fn(x, shape, b):
        y = tf.strided_slice(tf.reshape(x, shape), b, [0, 3], [-1, 1], end_mask=1,
                             shrink_axis_mask=0b10)
        return tf.reshape(y, [-1])
    check_op(fn, [rand(4, 5, 2), np.array([4, 10], np.int32), np.array([1, -1], np.int32)],
             specs=[spec((4, 5, 2)), spec((None,), "int32", "x1"), spec((2,), "int32", "x2")],
             extra_inputs=[[rand(4, 5, 2), np.array([2, 5, 4], np.int32),
                            np.array([-2, 1], np.int32)]])


@pytest.mark.parametrize("dtype", ["int32", "bool"])
def test_strided_slice_runtime_dtypes(dtype):
    fn = lambda x, s: tf.strided_slice(x, [0, 1], [0, 3], s, begin_mask=1, end_mask=1)  # noqa: E731
    check_op(fn, [rand(4, 5, dtype=dtype), np.array([-1, 1], np.int32)],
             specs=[spec((4, 5), dtype), spec((2,), "int32", "x1")],
             extra_inputs=[[rand(4, 5, dtype=dtype), np.array([2, 1], np.int32)]])


def test_constant_strided_slice_stays_compact():
    """Constant bounds keep one Slice (and one Reshape for the masks' Squeeze and Unsqueeze,
    which the reshape_chain pass merges): no run-time bound arithmetic."""
    import onnx
    import tempfile
    from tests.conformance.harness import convert_function
    with tempfile.TemporaryDirectory() as directory:
        path, _, _, _ = convert_function(lambda x: x[tf.newaxis, -1, ..., 1:3, ::-1], [spec((4, 5, 6))],
                                         directory)
        ops = [n.op_type for n in onnx.load(path).graph.node]
    assert sorted(ops) == ["Reshape", "Slice"], ops
