"""Conformance of DenseToDenseSetOperation (opp/densesets.py) against TensorFlow: the four set
operations over rows with repeats, every integer dtype, unknown leading dims and empty rows;
strings refused (exit 3)."""

import tempfile

import numpy as np
import pytest

from tests.conformance.harness import check_op, convert_function, rand, spec

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

SET_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16")
TESTED_DTYPES = {"DenseToDenseSetOperation": SET_TYPES}
OPERATIONS = ("a-b", "b-a", "intersection", "union")


def set_op(operation):
    return lambda a, b: raw.DenseToDenseSetOperation(  # noqa: E731
        set1=a, set2=b, set_operation=operation)


@pytest.mark.parametrize("dtype", SET_TYPES)
@pytest.mark.parametrize("operation", OPERATIONS)
def test_dense_to_dense_set_operation(dtype, operation):
    a = rand(3, 6, dtype=dtype, low=0, high=3)
    b = rand(3, 4, dtype=dtype, low=0, high=3)
    check_op(set_op(operation), [a, b])


@pytest.mark.parametrize("operation", OPERATIONS)
def test_dense_to_dense_set_operation_rank_3(operation):
    a = rand(2, 3, 5, dtype="int32", low=-2, high=2)
    b = rand(2, 3, 2, dtype="int32", low=-2, high=2)
    check_op(set_op(operation), [a, b])


@pytest.mark.parametrize("operation", OPERATIONS)
def test_dense_to_dense_set_operation_unknown_shape(operation):
    specs = [spec((None, None, None), "int64"), spec((None, None, None), "int64", "x1")]
    a = rand(2, 2, 4, dtype="int64", low=0, high=2)
    b = rand(2, 2, 3, dtype="int64", low=0, high=2)
    check_op(set_op(operation), [a, b], specs=specs,
             extra_inputs=[[a[:, :, :0], b], [a, b[:, :, :0]], [a[:1, :0], b[:1, :0]],
                           [np.full((1, 2, 3), np.iinfo(np.int64).max), b[:1]]])


def test_dense_to_dense_set_operation_of_strings_is_refused():
    from tf2ir.ir import ConversionError
    with tempfile.TemporaryDirectory() as directory:
        with pytest.raises(ConversionError, match="no sort for strings") as info:
            convert_function(set_op("union"), [spec((2, 3), "string"),
                                               spec((2, 2), "string", "x1")], directory)
    assert info.value.exit_code == 3
