"""Three-way shape runs (issue 20) of the array, conv, reduce, segment, slicing and spectral
families: a representative case of each lowering this round taught to compute at run time what
it used to need at conversion time (the input rank, the slice spec's length, fft_length). Every
case runs with every placeholder dim unknown and with every argument of unknown rank, against
TensorFlow over the same relaxed specs (the whole suite: python -m tf2ir.tools.shapes3). Before,
each was refused in rank mode, and strided_runtime_masks and rfft_irfft in dims mode too."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

LENGTHS = np.array([3, 1, 4], np.int32)
IDS = np.array([[0, 2, 2], [-1, 0, 4]], np.int32)
BOUNDS = [np.int32([1, 1, 2]), np.int32([3, 4, 5]), np.int32([-1, -2, 1])]

CASES = {
    # ONNX's ArgMax/ArgMin, Slice, Scan count a negative axis from the end themselves
    "arg_negative_axes": (lambda x: [tf.math.argmax(x, -1), tf.math.argmin(x, -2)],
                          [rand(2, 3, 4)]),
    "cumprod_negative_axis": (lambda x: [tf.math.cumprod(x, -1, exclusive=True, reverse=True),
                                         tf.math.cumprod(x, 1)], [rand(2, 3, 4)]),
    "reverse_negative_axes": (lambda x: tf.reverse(x, [-1, 0]), [rand(2, 3, 4)]),
    # the lengths laid along batch_dim by a Reshape target built at run time
    "reverse_sequence": (lambda x, n: tf.reverse_sequence(x, n, seq_axis=1, batch_axis=0),
                         [rand(3, 4, 2), LENGTHS]),
    # after an ellipsis of unknown length the dims and new axes count from the end
    "strided_ellipsis": (lambda x: [x[tf.newaxis, -1, ..., 1:3, tf.newaxis], x[1:, ..., ::-1]],
                         [rand(4, 5, 6)]),
    # begin/end masks over a spec whose length is known at run time only
    "strided_runtime_masks": (lambda x, b, e, s: tf.strided_slice(x, b, e, s, begin_mask=0b101,
                                                                  end_mask=0b110),
                              [rand(4, 5, 6)] + BOUNDS),
    "slice_runtime_length": (lambda x, b, s: tf.slice(x, b, s),
                             [rand(4, 5), np.int64([1, 2]), np.int64([-1, 2])]),
    # coordinates as rows [size, rank]: mirrored (SYMMETRIC) or permuted (a run-time perm)
    "mirror_pad_symmetric": (lambda x, p: tf.pad(x, p, mode="SYMMETRIC"),
                             [rand(2, 3, 4), np.int32([[1, 1], [0, 2], [3, 1]])]),
    "transpose_default": (lambda x: tf.transpose(x), [rand(2, 3, 4)]),
    "bincount_rows": (lambda x: [raw.DenseBincount(input=x, size=5, weights=[],
                                                   binary_output=False),
                                 tf.math.bincount(x, minlength=9)],
                      [np.array([[1, 3, 3, 0], [4, 4, 2, 9]], np.int32)]),
    "unsorted_segment_ids_2d": (lambda x, ids: tf.math.unsorted_segment_max(x, ids, 5),
                                [rand(2, 3, 2), IDS]),
    # a run-time filter of unknown rank has the rank TF's Conv2D requires
    "conv2d_filter_input": (lambda x, w: tf.nn.conv2d(x, w, 1, "SAME"),
                            [rand(1, 5, 5, 2), rand(3, 3, 2, 4)]),
    # axes from the end, fft_length at run time (tf.signal reads it from the shape)
    "rfft_irfft": (lambda x: [tf.abs(tf.signal.rfft(x)),
                              tf.signal.irfft(tf.signal.rfft(x), tf.shape(x)[-1:])],
                   [rand(3, 8)]),
    "fft_ifft": (lambda a, b: [tf.abs(tf.signal.fft(tf.complex(a, b))),
                               tf.math.real(tf.signal.ifft(tf.complex(a, b)))],
                 [rand(2, 6), rand(2, 6)]),
}


@pytest.mark.parametrize("mode", ["dims", "rank"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_relaxed_shapes_convert_and_match(monkeypatch, mode, case):
    monkeypatch.setenv("TF2IR_CONFORMANCE_SHAPES", mode)
    fn, inputs = CASES[case]
    check_op(fn, inputs, atol=1e-4, rtol=1e-4)


def test_bincount_counts_every_value_of_a_matrix():
    """TF's Bincount (unlike DenseBincount) counts a 2-D arr as one vector: was binned by row."""
    x, weights = np.array([[1, 2, 2], [2, 3, 0]], np.int32), rand(2, 3)
    check_op(lambda x: [raw.Bincount(arr=x, size=4, weights=tf.constant([], tf.float32)),
                        raw.Bincount(arr=x, size=5, weights=weights)], [x])
