"""Conformance of the linear algebra ops (opp/linalg.py) against TensorFlow: MatMul, BatchMatMul
(V1-V3), Einsum, MatrixDiag (V1, V3) and MatrixBandPart."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "MatMul": ("float32", "float64", "int32"),
    "BatchMatMulV2": ("float32", "float64", "int32", "int64"),
    "BatchMatMulV3": ("int8", "float32"),
    "BatchMatMul": ("float32",),
    "Einsum": ("float32", "float64", "int32"),
    "MatrixDiag": ("float32",),
    "MatrixDiagV2": ("float32",),
    "MatrixDiagV3": ("float32", "int32"),
    "MatrixBandPart": ("float32", "int32", "bool"),
}


def op_types(fn, specs):
    """The op types of `fn` frozen over `specs` (to be sure a test covers the op it names)."""
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    frozen = convert_variables_to_constants_v2(tf.function(fn).get_concrete_function(*specs))
    return {node.op for node in frozen.graph.as_graph_def().node}


def spec(shape, dtype="float32", index=0):
    return tf.TensorSpec(shape, tf.as_dtype(dtype), name=f"x{index}")


def cases_and_dtypes(cases, dtypes):
    """Every case in the first dtype, then the first case in each other dtype (keeps the file fast)."""
    return [(case, dtypes[0]) for case in cases] + [(cases[0], d) for d in dtypes[1:]]


# -- MatMul --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("transpose_a,transpose_b", [(False, False), (True, False), (False, True),
                                                     (True, True)])
def test_matmul(dtype, transpose_a, transpose_b):
    a = rand(*((4, 3) if transpose_a else (3, 4)), dtype=dtype)
    b = rand(*((5, 4) if transpose_b else (4, 5)), dtype=dtype)
    check_op(lambda a, b: tf.linalg.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b),
             [a, b])


def test_matmul_symbolic_rows_and_const_weight():
    weight = rand(4, 5)
    spec = [tf.TensorSpec((None, 4), tf.float32, name="x0")]
    check_op(lambda a: tf.linalg.matmul(a, tf.constant(weight)), [rand(3, 4)], specs=spec,
             extra_inputs=[[rand(1, 4)]])


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


# name: (diagonal shape, k, num_rows, num_cols, align)
DIAG_BANDS = {
    "super": ((2, 3), 1, -1, -1, "RIGHT_LEFT"),
    "sub": ((3,), -2, -1, -1, "RIGHT_LEFT"),
    "band_right_left": ((2, 3, 4), (-1, 1), -1, -1, "RIGHT_LEFT"),
    "band_left_right": ((3, 4), (-2, 0), -1, -1, "LEFT_RIGHT"),
    "band_left_left": ((2, 4), (0, 1), -1, -1, "LEFT_LEFT"),
    "band_right_right": ((3, 3), (-1, 1), 4, -1, "RIGHT_RIGHT"),
    "rows_and_cols": ((2, 3), 1, 5, 4, "RIGHT_LEFT"),
    "wide": ((3,), -1, 4, 6, "RIGHT_LEFT"),
    "main_rectangular": ((2, 3), 0, 3, 5, "RIGHT_LEFT"),
}


@pytest.mark.parametrize("case", sorted(DIAG_BANDS))
def test_matrix_diag_v3_bands(case):
    """Constant k, num_rows and num_cols: off-diagonals, bands in each alignment, rectangles."""
    shape, k, rows, cols, align = DIAG_BANDS[case]
    fn = lambda d: tf.linalg.diag(d, k=k, num_rows=rows, num_cols=cols, padding_value=-1,  # noqa: E731
                                  align=align)
    check_op(fn, [rand(*shape)])


@pytest.mark.parametrize("case", sorted(DIAG_BANDS))
def test_matrix_diag_v3_runtime_operands(case):
    """k, num_rows, num_cols and padding_value all fed at run time: one model."""
    shape, k, rows, cols, align = DIAG_BANDS[case]
    fn = lambda d, k, r, c, p: tf.linalg.diag(d, k=k, num_rows=r, num_cols=c,  # noqa: E731
                                              padding_value=p, align=align)
    k = np.array(k, np.int32)
    specs = [spec((None,) * len(shape), "int32"), spec(k.shape, "int32", 1), spec((), "int32", 2),
             spec((), "int32", 3), spec((), "int32", 4)]
    check_op(fn, [rand(*shape, dtype="int32"), k, np.int32(rows), np.int32(cols), np.int32(9)],
             specs=specs, extra_inputs=[[rand(*shape, dtype="int32"), k, np.int32(-1), np.int32(-1),
                                         np.int32(0)]])


def test_matrix_diag_v3_runtime_k_scalar():
    fn = lambda d, k: tf.linalg.diag(d, k=k)  # noqa: E731
    assert "MatrixDiagV3" in op_types(fn, [spec((None, 3)), spec((), "int32", 1)])
    check_op(fn, [rand(2, 3), np.int32(2)], specs=[spec((None, 3)), spec((), "int32", 1)],
             extra_inputs=[[rand(1, 3), np.int32(-1)], [rand(4, 3), np.int32(0)]])


def test_matrix_diag_v3_runtime_k_pair_decides_the_rank():
    """With k a run-time pair, k[0] == k[1] means one diagonal (the output has one more dim)
    and k[0] < k[1] a band: the output's rank is known only at run time."""
    fn = lambda d, k: tf.linalg.diag(d, k=k) * 2.0  # noqa: E731
    specs = [spec((2, 3, 4)), spec((2,), "int32", 1)]
    check_op(fn, [rand(2, 3, 4), np.array([-1, 1], np.int32)], specs=specs,
             extra_inputs=[[rand(2, 3, 4), np.array([1, 1], np.int32)],
                           [rand(2, 3, 4), np.array([0, 2], np.int32)]])


def test_matrix_diag_v2_packs_left():
    fn = lambda d: tf.raw_ops.MatrixDiagV2(diagonal=d, k=(-1, 1), num_rows=-1, num_cols=-1,  # noqa: E731
                                           padding_value=0.5)
    check_op(fn, [rand(2, 3, 3)])
    fn = lambda d, k: tf.raw_ops.MatrixDiagV2(diagonal=d, k=k, num_rows=-1, num_cols=4,  # noqa: E731
                                              padding_value=0.0)
    check_op(fn, [rand(2, 3), np.int32(1)], specs=[spec((2, 3)), spec((), "int32", 1)])


def test_matrix_diag_v3_main_diagonal_stays_compact():
    """tf.linalg.diag's main diagonal keeps its short lowering: no run-time geometry."""
    import tempfile
    import onnx
    from tests.conformance.harness import convert_function
    with tempfile.TemporaryDirectory() as directory:
        path, _, _, _ = convert_function(tf.linalg.diag, [spec((None, 3))], directory)
        ops = {n.op_type for n in onnx.load(path).graph.node}
    assert ops <= {"Shape", "Gather", "Squeeze", "Range", "Unsqueeze", "Equal", "Where"}, ops


def test_matrix_diag_v3_constant_folds():
    from tests.conformance.harness import converted_op_types
    table = np.arange(6, dtype=np.float32).reshape(2, 3)
    fn = lambda x: x + tf.linalg.diag(table, k=(-1, 0), align="LEFT_RIGHT")  # noqa: E731
    assert "MatrixDiagV3" not in converted_op_types(fn, [spec((3, 3))])
    check_op(fn, [rand(3, 3)])


# -- MatrixBandPart ------------------------------------------------------------------------
@pytest.mark.parametrize("bands,dtype", cases_and_dtypes([(1, 2), (0, -1), (-1, 0), (0, 0), (-1, -1)],
                                                        ["float32", "int32", "bool"]))
def test_matrix_band_part(bands, dtype):
    lower, upper = bands
    check_op(lambda x: tf.linalg.band_part(x, lower, upper), [rand(2, 4, 5, dtype=dtype)])


def test_matrix_band_part_symbolic_dynamic_bands():
    fn = lambda x, lo, up: tf.linalg.band_part(x, lo, up)
    check_op(fn, [rand(3, 4), np.int64(1), np.int64(-1)],
             specs=[spec((None, None)), spec((), "int64", 1), spec((), "int64", 2)],
             extra_inputs=[[rand(5, 2), np.int64(0), np.int64(1)]])
