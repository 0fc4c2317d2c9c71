"""Conformance of the bitwise ops (opp/bitwise.py) against TensorFlow: BitwiseAnd, BitwiseOr,
BitwiseXor, Invert, LeftShift and RightShift."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, single_op_graph

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "BitwiseAnd": ("int32", "uint8"),
    "BitwiseOr": ("int64", "int16"),
    "BitwiseXor": ("int8", "uint32"),
    "Invert": ("int8", "int32", "uint16", "uint64"),
    "LeftShift": ("int8", "int32", "int64", "uint8", "uint16"),
    "RightShift": ("int8", "int32", "int64", "uint8", "uint16"),
}


def spec(shape, dtype, i):
    return tf.TensorSpec(shape, dtype, name=f"x{i}")


def full_range(*shape, dtype):
    info = np.iinfo(dtype)
    return np.random.default_rng(7).integers(info.min, info.max, size=shape, dtype=dtype,
                                             endpoint=True)


BITWISE = {"BitwiseAnd": tf.bitwise.bitwise_and, "BitwiseOr": tf.bitwise.bitwise_or,
           "BitwiseXor": tf.bitwise.bitwise_xor}


@pytest.mark.parametrize("op,dtype", [("BitwiseAnd", "int32"), ("BitwiseAnd", "uint8"),
                                      ("BitwiseOr", "int64"), ("BitwiseOr", "int16"),
                                      ("BitwiseXor", "int8"), ("BitwiseXor", "uint32")])
def test_bitwise_binary(op, dtype):
    check_op(BITWISE[op], [full_range(3, 4, dtype=dtype), full_range(4, dtype=dtype)])


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "uint64"])
def test_invert(dtype):
    check_op(tf.bitwise.invert, [full_range(3, 4, dtype=dtype)])


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint16"])
def test_shifts_clamp_the_shift(dtype):
    """Shifts below 0 and at or past the bit width are clamped to [0, bits - 1] by TF."""
    bits = np.dtype(dtype).itemsize * 8
    x = full_range(3, 8, dtype=dtype)
    x[0, :4] = np.array([255, 128, 5, 1] if dtype.startswith("u") else [-1, -128, 5, 1], dtype)
    low = [0, 0] if dtype.startswith("u") else [-2, -1]
    y = np.array(low + [0, 1, bits // 2, bits - 1, bits, bits + 2], dtype)
    check_op(lambda a, b: [tf.bitwise.left_shift(a, b), tf.bitwise.right_shift(a, b)], [x, y])


def test_right_shift_symbolic():
    specs = [spec([None], tf.int32, 0), spec([None], tf.int32, 1)]
    check_op(tf.bitwise.right_shift, [np.int32([-100, 100]), np.int32([3, 33])], specs=specs,
             extra_inputs=[[np.int32([-1, -2147483648, 7]), np.int32([31, 1, -1])]])


# -- without TensorFlow: folding --------------------------------------------------------------
def test_constant_shift_folds():
    from tf2ir.ir.passes import fold_constants
    g, _ = single_op_graph("LeftShift", [np.int8([1, 1, -1]), np.int8([-1, 9, 7])])
    assert fold_constants(g) == 1
    folded = g.outputs[0].producer.inputs[0].const_value
    assert folded.dtype == np.int8
    np.testing.assert_array_equal(folded, np.int8([1, -128, -128]))
