"""Issue 20, class 1: lowerings that assumed a known shape. Each model is written from the
issue's description, converted and compared with TensorFlow (tests/conformance/harness.py).
An argument of unknown rank is fed as its values flattened plus its shape, reshaped inside
the graph (a graph input must have a rank; inside the graph TF and tf2ir both lose it)."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand, spec
from tf2ir.ir.errors import ConversionError

tf = pytest.importorskip("tensorflow")

FLAT = [spec((None,)), spec((None,), "int32", "x1")]


def flat(a):
    """An array as (its values, its shape): the two inputs of an argument of unknown rank."""
    return [a.reshape(-1), np.array(a.shape, np.int32)]


def test_frame_of_unknown_rank():
    # tf.signal.frame on a signal of unknown rank: a StridedSlice whose spec length is known
    # at run time only, and a GatherV2 along a run-time axis ("the gather axis must be
    # constant", before that "bad operand type for unary -").
    fn = lambda x, s: tf.signal.frame(tf.reshape(x, s), 16, 8)
    check_op(fn, flat(rand(2, 64)), specs=FLAT, extra_inputs=[flat(rand(3, 2, 40))])


def test_stft_of_unknown_rank():
    # Framing converts, and the RFFT too: its axes count from the end (it was refused, "the
    # input's rank must be known").
    fn = lambda x, s: tf.abs(tf.signal.stft(tf.reshape(x, s), 16, 8, 16))
    check_op(fn, flat(rand(2, 64)), specs=FLAT, extra_inputs=[flat(rand(3, 2, 40))], atol=1e-4,
             rtol=1e-4)


@pytest.mark.parametrize("axis", [0, -1, -2])
def test_gather_and_pack_with_negative_axes_on_unknown_rank(axis):
    # Pack: "unsupported operand type(s) for +: 'NoneType' and 'int'"; GatherV2 and
    # ConcatV2: "bad operand type for unary -". ONNX counts a negative axis itself.
    def fn(x, s):
        t = tf.reshape(x, s)
        stacked = tf.stack([t, t * 2.0], axis=axis)
        return tf.gather(stacked, [1, 0], axis=axis), tf.concat([t, t], axis=-1)
    check_op(fn, flat(rand(2, 3, 4)), specs=FLAT, extra_inputs=[flat(rand(5, 2))])


def test_windowed_attention_partition():
    # Swin-style window partition of a token tensor whose grid is known at run time only.
    ws = 2

    def fn(x, s):
        t = tf.reshape(x, s)                    # [B, H, W, C] of unknown rank
        shape = tf.shape(t)
        b, h, w = shape[0], shape[1], shape[2]
        win = tf.reshape(t, tf.stack([b, h // ws, ws, w // ws, ws, 3]))
        win = tf.transpose(win, [0, 1, 3, 2, 4, 5])
        win = tf.reshape(win, [-1, ws * ws, 3])
        coords = tf.stack(tf.meshgrid(tf.range(ws), tf.range(ws), indexing="ij"), axis=-1)
        return win, coords
    check_op(fn, flat(rand(2, 4, 6, 3)), specs=FLAT)


def test_grouped_conv_after_reshape_with_run_time_height_and_width():
    # The channels come from the reshape target's constant entry (4 groups of 2): before,
    # they were unknown and the filter was written with group=1, which onnxruntime refused.
    w = rand(3, 3, 2, 8)

    def fn(x):
        b, n = tf.shape(x)[0], tf.shape(x)[1]
        h = tf.cast(tf.sqrt(tf.cast(n, tf.float32)), tf.int32)
        y = tf.reshape(x, tf.stack([b, h, n // h, 8]))
        return tf.nn.conv2d(y, w, 1, "SAME")
    check_op(fn, [rand(2, 16, 8)], specs=[spec((None, None, 8))], atol=1e-4, rtol=1e-4,
             extra_inputs=[[rand(1, 9, 8)]])


@pytest.mark.parametrize("channels", [8, 2])
def test_conv_with_channels_unknown_until_run_time(channels):
    # Nothing in the graph knows the channels: the group count (channels / 2) is taken at
    # run time, 4 groups for 8 channels, 1 for 2 - one model, both right.
    w = rand(3, 3, 2, 8)
    fn = lambda x: tf.nn.relu(tf.nn.conv2d(x, w, 2, "VALID") + 1.0)
    check_op(fn, [rand(2, 7, 6, channels)], specs=[spec((None, None, None, None))],
             atol=1e-4, rtol=1e-4)


def test_keras_grouped_conv2d_after_reshape():
    import keras
    layer = keras.layers.Conv2D(6, 3, padding="same", groups=3)
    layer.build((None, None, None, 6))

    def fn(x):
        n = tf.shape(x)[1]
        return layer(tf.reshape(x, tf.stack([tf.shape(x)[0], 2, n // 2, 6])))
    check_op(fn, [rand(1, 8, 6)], specs=[spec((None, None, 6))], atol=1e-4, rtol=1e-4)


def test_resize_in_if_branch_with_packed_outer_scalars():
    # The size is a Pack of two int32 scalars from outside the branch: onnx.checker read its
    # length as 0 inside the subgraph (no outer initializer is visible there) and refused it.
    def fn(x, h, w, flag):
        return tf.cond(flag, lambda: tf.image.resize(x, tf.stack([h, w])),
                       lambda: tf.image.resize(x, [5, 5]))
    scalars = [np.array(6, np.int32), np.array(7, np.int32)]
    check_op(fn, [rand(1, 4, 4, 3), *scalars, np.array(True)], atol=1e-4, rtol=1e-4,
             extra_inputs=[[rand(1, 4, 4, 3), *scalars, np.array(False)]])


@pytest.mark.parametrize("case", ["squeeze", "reduce_sum", "reduce_any", "segment", "diag"])
def test_outputs_of_unknown_rank(case):
    # Graph outputs of unknown rank are checked without their missing shape.
    fns = {
        "squeeze": (lambda x, s: tf.squeeze(tf.reshape(x, s)), flat(rand(2, 1, 3))),
        "reduce_sum": (lambda x, s, a: tf.reduce_sum(tf.reshape(x, s), axis=a),
                       flat(rand(2, 3, 4)) + [np.array([1, 2], np.int32)]),
        "reduce_any": (lambda x, s, a: tf.reduce_any(tf.reshape(x, s) > 0, axis=a),
                       flat(rand(2, 3, 4)) + [np.array([0], np.int32)]),
        "segment": (lambda x, s, i: tf.math.unsorted_segment_sum(tf.reshape(x, s), i, 3),
                    flat(rand(4, 3)) + [np.array([0, 2, 2, 1], np.int32)]),
        "diag": (lambda x, s: tf.linalg.diag(tf.reshape(x, s)), flat(rand(2, 3))),
    }
    fn, inputs = fns[case]
    specs = FLAT + ([spec((None,), "int32", "x2")] if len(inputs) == 3 else [])
    check_op(fn, inputs, specs=specs)


def test_negative_axis_on_unknown_rank_is_a_clean_refusal():
    # A lowering that needs a negative axis normalized (batch_dims below it) says so.
    fn = lambda x, s, i: tf.gather(tf.reshape(x, s), i, axis=-1, batch_dims=1)
    with pytest.raises(ConversionError) as error:
        check_op(fn, flat(rand(2, 3)) + [np.array([[0], [2]], np.int32)],
                 specs=FLAT + [spec((2, 1), "int32", "x2")])
    assert error.value.op_type == "GatherV2" and "unknown" in error.value.message


# -- the three-way shape runs: a small representative subset in CI (the rest: tools/shapes3) --
THREE_WAY = {
    "gather": (lambda x: tf.gather(x, [2, 0], axis=-1), [rand(2, 3)]),
    "pack_concat": (lambda x, y: tf.concat([tf.stack([x, y], axis=-1), tf.expand_dims(x, -1)], -1),
                    [rand(2, 3), rand(2, 3)]),
    "split": (lambda x: tf.split(x, 2, axis=-1), [rand(2, 4)]),
    "one_hot": (lambda i: tf.one_hot(i, 4, axis=0), [np.array([[1, 3], [0, 2]], np.int32)]),
    "conv": (lambda x: tf.nn.conv2d(x, np.ones((2, 2, 1, 4), np.float32), 1, "VALID"),
             [rand(1, 4, 4, 2)]),
    "resize": (lambda x: tf.image.resize(x, [3, 5]), [rand(1, 4, 4, 2)]),
}


@pytest.mark.parametrize("mode", ["dims", "rank"])
@pytest.mark.parametrize("case", sorted(THREE_WAY))
def test_three_way_shape_modes(monkeypatch, mode, case):
    monkeypatch.setenv("TF2IR_CONFORMANCE_SHAPES", mode)
    fn, inputs = THREE_WAY[case]
    check_op(fn, inputs, atol=1e-4, rtol=1e-4)


def test_shapes3_sorts_outcomes():
    from tf2ir.tools.shapes3 import classify, summary
    clean = ConversionError("axis -1 counts from the end", node="n", op_type="GatherV2")
    try:
        try:
            -None
        except TypeError as exc:
            raise ConversionError("lowering to ONNX failed", op_type="Pack") from exc
    except ConversionError as exc:
        internal = exc
    assert classify(clean)[0] == "refusal"
    assert classify(internal)[:2] == ("failure", "internal TypeError [Pack]: bad operand type "
                                                 "for unary -: '…'")
    assert classify(AssertionError("output 0: shape (2,), TF (3,)"))[0] == "failure"
    text = summary("dims", {"a::t[1]": {"outcome": "pass"},
                            "a::t[2]": {"outcome": "failure", "class": "mismatch: x"}})
    assert text.startswith("dims     cases     2: pass 1, refusal 0, failure 1")
    assert "failure    1  mismatch: x  (e.g. t[2])" in text
