"""Conformance of the selection ops (opp/select.py) against TensorFlow: Select (v1, with a
scalar, elementwise or row condition) and SelectV2 (tf.where)."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand, single_op_graph

tf = pytest.importorskip("tensorflow")
R = tf.raw_ops

TESTED_DTYPES = {
    "Select": ("float32", "int32", "bool", "int16", "uint64"),
    "SelectV2": ("float32", "bool", "int16", "int64", "uint8", "float16"),
}


def spec(shape, dtype, i):
    return tf.TensorSpec(shape, dtype, name=f"x{i}")


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "int16", "uint64"])
def test_select_v1_row_vector_condition(dtype):
    cond = rand(4, dtype="bool")
    check_op(lambda c, x, y: R.Select(condition=c, x=x, y=y),
             [cond, rand(4, 2, 3, dtype=dtype), rand(4, 2, 3, dtype=dtype)])


@pytest.mark.parametrize("cond_shape", [(), (4, 3)], ids=["scalar", "same_shape"])
def test_select_v1_scalar_and_elementwise(cond_shape):
    check_op(lambda c, x, y: R.Select(condition=c, x=x, y=y),
             [rand(*cond_shape, dtype="bool"), rand(4, 3), rand(4, 3)])


def test_select_v1_symbolic_rows():
    specs = [spec([None], tf.bool, 0), spec([None, 3], tf.float32, 1), spec([None, 3], tf.float32, 2)]
    check_op(lambda c, x, y: R.Select(condition=c, x=x, y=y),
             [rand(2, dtype="bool"), rand(2, 3), rand(2, 3)], specs=specs,
             extra_inputs=[[rand(5, dtype="bool"), rand(5, 3), rand(5, 3)]])


@pytest.mark.parametrize("dtype", ["float32", "bool", "int16", "int64", "uint8", "float16"])
def test_select_v2_broadcasts_all(dtype):
    """condition [2, 1, 3], x [4, 3], y a scalar: output [2, 4, 3]."""
    check_op(tf.where, [rand(2, 1, 3, dtype="bool"), rand(4, 3, dtype=dtype), rand(dtype=dtype)])


def test_select_v2_symbolic():
    specs = [spec([None, 1], tf.bool, 0), spec([None, 3], tf.float32, 1), spec([3], tf.float32, 2)]
    check_op(tf.where, [rand(2, 1, dtype="bool"), rand(2, 3), rand(3)], specs=specs,
             extra_inputs=[[rand(6, 1, dtype="bool"), rand(6, 3), rand(3)]])


# -- without TensorFlow: inference, errors, folding -----------------------------------------
@pytest.mark.parametrize("op_type,operands,message", [
    ("Select", [((3,), "bool"), ((4, 2), "float32"), ((4, 2), "float32")], "first dim"),
    ("SelectV2", [((2,), "bool"), ((3,), "float32"), ((3,), "float32")], "do not broadcast"),
])
def test_user_errors_are_conversion_errors(op_type, operands, message):
    from tf2ir.ir import ConversionError, TensorDesc
    with pytest.raises(ConversionError, match=message):
        single_op_graph(op_type, [TensorDesc(dtype, shape) for shape, dtype in operands])


def test_select_v1_condition_of_ranks_known_only_at_run_time():
    """With x's rank unknown, a vector condition is laid along x's leading dim at run time
    (issue 20): rows, elementwise and scalar conditions from one model."""
    import onnxruntime as ort
    from tf2ir.ir import TensorDesc
    from tf2ir.ir.onnx.compile import compile_to_model
    g, node = single_op_graph("Select", [TensorDesc("bool", None), TensorDesc("float32", None),
                                         TensorDesc("float32", None)])
    session = ort.InferenceSession(compile_to_model(g).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    x, y = rand(3, 2, 2), rand(3, 2, 2)
    for cond in (np.array([True, False, True]), rand(3, 2, 2, dtype="bool"), np.array(False)):
        rows = cond.reshape(cond.shape + (1,) * (3 - cond.ndim))
        got, = session.run(None, {"in0": cond, "in1": x, "in2": y})
        np.testing.assert_array_equal(got, np.where(rows, x, y))


def test_symbolic_shapes_are_inferred():
    from tf2ir.ir import TensorDesc
    _, node = single_op_graph("SelectV2", [TensorDesc("bool", (None, 1)),
                                           TensorDesc("int16", (None, 3)), TensorDesc("int16", (3,))])
    assert (node.outputs[0].desc.dtype, node.outputs[0].desc.shape) == ("int16", (None, 3))


def test_constant_operands_fold():
    from tf2ir.ir.passes import fold_constants
    g, _ = single_op_graph("SelectV2", [np.array([True, False]), np.int32([1, 2]),
                                        np.array(0, np.int32)])
    assert fold_constants(g) == 1
    folded = g.outputs[0].producer.inputs[0].const_value
    assert folded.dtype == np.int32
    np.testing.assert_array_equal(folded, np.int32([1, 0]))
