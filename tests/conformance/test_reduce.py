"""Conformance of the reductions and linear algebra ops (arg-max/min, All/Any, EuclideanNorm,
L2Loss, Cumsum/Cumprod, BatchMatMul, Einsum, MatrixDiag) against TensorFlow."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand
from tf2ir.ir import ConversionError

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "ArgMax": ("float32", "float64", "int16", "int32", "int64", "uint8", "bool"),
    "ArgMin": ("float32", "float64", "int32", "int64"),
    "All": ("bool",),
    "Any": ("bool",),
    "EuclideanNorm": ("float32", "float64", "int32"),
    "L2Loss": ("float32", "float64"),
    "Cumsum": ("float32", "float64", "int8", "int32", "int64"),
    "Cumprod": ("float32", "float64", "int16", "int32", "int64"),
    "BatchMatMulV2": ("float32", "float64", "int32", "int64"),
    "BatchMatMulV3": ("int8", "float32"),
    "BatchMatMul": ("float32",),
    "Einsum": ("float32", "float64", "int32"),
    "MatrixDiag": ("float32",),
    "MatrixDiagV3": ("float32", "int32"),
}


def op_types(fn, specs):
    """The op types of `fn` frozen over `specs` (to be sure a test covers the op it names)."""
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    frozen = convert_variables_to_constants_v2(tf.function(fn).get_concrete_function(*specs))
    return {node.op for node in frozen.graph.as_graph_def().node}


def spec(shape, dtype="float32", index=0):
    return tf.TensorSpec(shape, tf.as_dtype(dtype), name=f"x{index}")


def ties(*shape, dtype="float32"):
    """Few distinct values, so rows hold ties."""
    return np.random.default_rng(3).integers(0, 3, size=shape).astype(dtype)


# -- ArgMax / ArgMin --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "int32", "int64", "uint8", "bool"])
def test_arg_max_dtypes_with_ties(dtype):
    x = ties(3, 4, 5, dtype=dtype)
    check_op(lambda x: (tf.math.argmax(x, axis=1), tf.math.argmax(x, axis=-1, output_type=tf.int32)),
             [x])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_arg_min_dtypes_with_ties(dtype):
    x = ties(3, 4, 5, dtype=dtype)
    check_op(lambda x: (tf.math.argmin(x, axis=0), tf.math.argmin(x, axis=-2, output_type=tf.int32)),
             [x])


def test_arg_max_int16_output_type():
    check_op(lambda x: tf.math.argmax(x, axis=0, output_type=tf.int16), [ties(5, 3)])


def test_constant_inputs_fold():
    """Shape-like uses (arg-max, All, Cumsum, Cumprod over constants) fold to constants."""
    import tempfile
    from tests.conformance.harness import convert_function
    table = rand(3, 4)

    def fn(x):
        index = tf.math.argmax(tf.constant(table), axis=1, output_type=tf.int32)
        sizes = tf.math.cumprod(tf.math.cumsum(index + 1, exclusive=True) + 1, reverse=True)
        flag = tf.cast(tf.math.reduce_all(tf.constant([True, False])), tf.int32)
        return x + sizes + flag
    check_op(fn, [rand(3, dtype="int32")])
    with tempfile.TemporaryDirectory() as directory:
        _, graph, _, _ = convert_function(fn, [spec((3,), "int32")], directory)
    assert not {"ArgMax", "Cumsum", "Cumprod", "ReduceAll"} & {n.op_type for n in graph.nodes}


def test_arg_max_symbolic_dims():
    specs = [spec((None, 6, None))]
    check_op(lambda x: (tf.math.argmax(x, axis=1), tf.math.argmin(x, axis=2)), [rand(2, 6, 3)],
             specs=specs, extra_inputs=[[rand(1, 6, 7)]])


def test_arg_max_dimension_must_be_constant():
    specs = [spec((2, 3)), spec((), "int32", 1)]
    with pytest.raises(ConversionError, match="constant scalar dimension"):
        check_op(lambda x, axis: tf.math.argmax(x, axis=axis), [rand(2, 3), np.int32(1)], specs=specs)


# -- All / Any --------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [tf.math.reduce_all, tf.math.reduce_any])
@pytest.mark.parametrize("axis,keepdims", [(1, False), (-1, True), ([0, 2], False), ([], True),
                                           (None, False)])
def test_all_any(op, axis, keepdims):
    # rows of all-True and all-False must occur too
    x = rand(3, 4, 2, dtype="bool")
    x[0, :, :] = True
    x[1, :, :] = False
    check_op(lambda x: op(x, axis=axis, keepdims=keepdims), [x])


def test_all_any_symbolic_and_empty_dims():
    """A zero-length axis: all() is True and any() is False, as in TF."""
    specs = [spec((None, 3), "bool")]
    check_op(lambda x: (tf.math.reduce_all(x, axis=0), tf.math.reduce_any(x, axis=0)),
             [rand(4, 3, dtype="bool")], specs=specs, extra_inputs=[[np.zeros((0, 3), bool)]])


# -- EuclideanNorm / L2Loss -------------------------------------------------------------------
@pytest.mark.parametrize("axis,keepdims", [(1, False), (-1, True), ([0, 2], False), ([], False)])
def test_euclidean_norm(axis, keepdims):
    check_op(lambda x: tf.math.reduce_euclidean_norm(x, axis=axis, keepdims=keepdims), [rand(2, 3, 4)])


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_euclidean_norm_dtypes(dtype):
    x = rand(3, 4, dtype=dtype, low=-9, high=9)
    check_op(lambda x: tf.math.reduce_euclidean_norm(x, axis=1), [x])


def test_euclidean_norm_symbolic():
    check_op(lambda x: tf.math.reduce_euclidean_norm(x, axis=-1, keepdims=True), [rand(2, 5)],
             specs=[spec((None, None))], extra_inputs=[[rand(3, 1)]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_l2_loss(dtype):
    check_op(tf.nn.l2_loss, [rand(3, 4, 2, dtype=dtype)])
    check_op(tf.nn.l2_loss, [rand(3, 4, dtype=dtype)], specs=[spec((None, 4), dtype)],
             extra_inputs=[[rand(1, 4, dtype=dtype)]])


# -- Cumsum / Cumprod -------------------------------------------------------------------------
@pytest.mark.parametrize("op", [tf.math.cumsum, tf.math.cumprod])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, False), (False, True), (True, True)])
def test_cumulative(op, axis, exclusive, reverse):
    x = rand(3, 4, 2, low=-1.5, high=1.5)
    x[0, 1, :] = 0.0   # zeros and negatives: a cumulative product must stay exact
    check_op(lambda x: op(x, axis=axis, exclusive=exclusive, reverse=reverse), [x])


@pytest.mark.parametrize("op,dtype", [
    (tf.math.cumsum, "float64"), (tf.math.cumsum, "int8"), (tf.math.cumsum, "int32"),
    (tf.math.cumsum, "int64"),
    (tf.math.cumprod, "float64"), (tf.math.cumprod, "int16"), (tf.math.cumprod, "int32"),
    (tf.math.cumprod, "int64"),
])
def test_cumulative_dtypes(op, dtype):
    x = rand(3, 5, dtype=dtype)
    check_op(lambda x: (op(x, axis=1), op(x, axis=0, exclusive=True, reverse=True)), [x])


@pytest.mark.parametrize("op", [tf.math.cumsum, tf.math.cumprod])
def test_cumulative_symbolic(op):
    check_op(lambda x: op(x, axis=1, reverse=True), [rand(2, 3)], specs=[spec((None, None))],
             extra_inputs=[[rand(4, 1)], [rand(1, 6)]])


def test_cumsum_axis_fed_at_run_time():
    specs = [spec((2, 3)), spec((), "int32", 1)]
    check_op(lambda x, axis: tf.math.cumsum(x, axis=axis, exclusive=True), [rand(2, 3), np.int32(1)],
             specs=specs, extra_inputs=[[rand(2, 3), np.int32(-2)]])


def test_cumprod_axis_must_be_constant():
    specs = [spec((2, 3)), spec((), "int32", 1)]
    with pytest.raises(ConversionError, match="constant axis"):
        check_op(lambda x, axis: tf.math.cumprod(x, axis=axis), [rand(2, 3), np.int32(1)], specs=specs)


# -- BatchMatMul ------------------------------------------------------------------------------
@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_mat_mul_adjoints(adj_x, adj_y):
    a = rand(2, *((4, 3) if adj_x else (3, 4)))
    b = rand(2, *((5, 4) if adj_y else (4, 5)))
    check_op(lambda a, b: tf.linalg.matmul(a, b, adjoint_a=adj_x, adjoint_b=adj_y), [a, b])


@pytest.mark.parametrize("shape_a,shape_b", [((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (2, 2, 4, 5)),
                                             ((2, 3, 4), (1, 4, 5))])
def test_batch_mat_mul_broadcasts_batch_dims(shape_a, shape_b):
    check_op(lambda a, b: tf.raw_ops.BatchMatMulV2(x=a, y=b), [rand(*shape_a), rand(*shape_b)])


@pytest.mark.parametrize("dtype", ["float64", "int32", "int64"])
def test_batch_mat_mul_dtypes(dtype):
    check_op(lambda a, b: tf.linalg.matmul(a, b, transpose_b=True),
             [rand(2, 3, 4, dtype=dtype), rand(2, 5, 4, dtype=dtype)])


def test_batch_mat_mul_v1_and_symbolic_batch():
    fn = lambda a, b: tf.raw_ops.BatchMatMul(x=a, y=b, adj_y=True)  # noqa: E731
    assert "BatchMatMul" in op_types(fn, [spec((None, 3, 4)), spec((None, 5, 4), index=1)])
    check_op(fn, [rand(2, 3, 4), rand(2, 5, 4)], specs=[spec((None, 3, 4)), spec((None, 5, 4), index=1)],
             extra_inputs=[[rand(6, 3, 4), rand(6, 5, 4)]])


def test_batch_mat_mul_v3_widens_int8_to_int32():
    fn = lambda a, b: tf.raw_ops.BatchMatMulV3(x=a, y=b, Tout=tf.int32, adj_x=True)  # noqa: E731
    a, b = rand(2, 4, 3, dtype="int8", low=-60, high=60), rand(2, 4, 5, dtype="int8", low=-60, high=60)
    check_op(fn, [a, b])
    check_op(lambda a, b: tf.raw_ops.BatchMatMulV3(x=a, y=b, Tout=tf.float32), [rand(3, 4), rand(2, 4, 2)])


# -- Einsum -----------------------------------------------------------------------------------
@pytest.mark.parametrize("equation,shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("bi,bi->b", [(3, 4), (3, 4)]),
    ("ij,kl->ijkl", [(2, 3), (4, 1)]),
    ("abc->", [(2, 3, 4)]),
    ("BTNH,BFNH->BNFT", [(2, 3, 2, 4), (2, 5, 2, 4)]),
])
def test_einsum(equation, shapes):
    check_op(lambda *xs: tf.einsum(equation, *xs), [rand(*s) for s in shapes])


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_einsum_dtypes(dtype):
    check_op(lambda a, b: tf.einsum("bij,bjk->bik", a, b), [rand(2, 3, 4, dtype=dtype),
                                                          rand(2, 4, 5, dtype=dtype)])


def test_einsum_symbolic_batch():
    fn = lambda q, k: tf.einsum("bhqd,bhkd->bhqk", q, k)  # noqa: E731
    specs = [spec((None, 2, None, 4)), spec((None, 2, None, 4), index=1)]
    assert "Einsum" in op_types(fn, specs)
    check_op(fn, [rand(1, 2, 3, 4), rand(1, 2, 5, 4)], specs=specs,
             extra_inputs=[[rand(3, 2, 1, 4), rand(3, 2, 2, 4)]])


# -- MatrixDiag -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_matrix_diag_v3(dtype):
    fn = tf.linalg.diag
    assert "MatrixDiagV3" in op_types(fn, [spec((None, 3), dtype)])
    check_op(fn, [rand(2, 3, dtype=dtype)], specs=[spec((None, None), dtype)],
             extra_inputs=[[rand(4, 1, dtype=dtype)], [rand(1, 5, dtype=dtype)]])
    check_op(lambda d: tf.linalg.diag(d, padding_value=7), [rand(4, dtype=dtype)])


def test_matrix_diag_v1():
    check_op(lambda d: tf.raw_ops.MatrixDiag(diagonal=d), [rand(2, 3, 4)])


def test_matrix_diag_off_diagonal_is_a_clear_error():
    with pytest.raises(ConversionError, match="k=\\[1\\]"):
        check_op(lambda d: tf.linalg.diag(d, k=1), [rand(2, 3)])
