"""Conformance of the set and utility ops (opp/setops.py) against TensorFlow: UniqueWithCounts
(and the V2 forms along an axis), UniqueV2, ListDiff, Bucketize, Roll, Cross and the softmax
cross entropies. NaNs stay apart in unique values as in TF; strings are compared decoded."""

import tempfile

import numpy as np
import pytest

from tests.conformance.harness import check_op, convert_function, rand, spec

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

ALL = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64",
       "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "bfloat16", "float32", "float64")
TESTED_DTYPES = {
    "UniqueWithCounts": ALL + ("bool", "string"),
    "UniqueWithCountsV2": ("float32", "int32", "int64", "string"),
    "UniqueV2": ("float32", "float64", "int32", "string"),
    "ListDiff": ALL + ("string",),
    "Bucketize": ("int32", "int64", "float32", "float64"),
    "Roll": ("float32", "float64", "int32", "int64", "uint8", "bool", "string"),
    "Cross": ALL,
    "SoftmaxCrossEntropyWithLogits": FLOATS,
    "SparseSoftmaxCrossEntropyWithLogits": FLOATS,
}
NAN = np.nan


def values(dtype, n=12):
    """1-D test values of `dtype` with repeats (bfloat16 enters as float32, cast in the graph)."""
    if dtype == "bool":
        return np.array([True, False, False, True, True])
    pool = np.array([3, 1, 0, 1, 2, 3, 7, 0, 2, 5, 1, 3][:n])
    return pool.astype("float32" if dtype == "bfloat16" else dtype)


def as_dtype(fn, dtype):
    """fn of arguments cast to bfloat16 (when `dtype` is), its float outputs back to float32."""
    if dtype != "bfloat16":
        return fn
    def cast_around(*args):
        outputs = tf.nest.flatten(fn(*[tf.cast(a, tf.bfloat16) for a in args]))
        return [tf.cast(y, tf.float32) if y.dtype == tf.bfloat16 else y for y in outputs]
    return cast_around


def check_strings(fn, inputs, specs):
    """check_op for string outputs: onnxruntime gives str where TF gives bytes."""
    import onnxruntime as ort
    with tempfile.TemporaryDirectory() as directory:
        path, _, _, _ = convert_function(fn, specs, directory)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = session.run(None, {s.name: a for s, a in zip(specs, inputs)})
    want = tf.nest.flatten(tf.function(fn)(*[tf.constant(a) for a in inputs]))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        if w.dtype == object:
            w = np.vectorize(lambda b: b.decode(), otypes=[object])(w) if w.size else w
        assert g.shape == w.shape and g.dtype == w.dtype and g.tolist() == w.tolist()


# -- unique with counts, along an axis ---------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL + ("bool",))
def test_unique_with_counts(dtype):
    fn = as_dtype(lambda x: tf.unique_with_counts(x), dtype)
    check_op(fn, [values(dtype)], specs=[spec((None,), "float32" if dtype == "bfloat16" else dtype)])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_unique_keeps_nans_apart_and_zeros_together(dtype):
    x = np.array([1, NAN, -0.0, NAN, 0.0, 1, -NAN, 2], dtype)
    check_op(lambda v: tf.unique_with_counts(v, out_idx=tf.int64), [x])
    got = check_op(lambda v: tf.unique_with_counts(v)[0], [x])[0]
    assert np.signbit(got[2])       # the first zero seen was -0


def test_unique_with_counts_strings_and_empty():
    words = np.array(["b", "a", "b", "", "a", "c"], object)
    check_strings(tf.unique_with_counts, [words], [spec((None,), "string")])
    check_op(tf.unique_with_counts, [np.zeros(0, np.float32)])
    check_op(tf.unique_with_counts, [np.zeros(0, np.int32)])


AXIS_CASES = {
    "rows": (np.array([[1, 2], [3, 4], [1, 2], [1, 3]], np.int32), [0]),
    "columns": (np.array([[1, 2, 1, 2], [0, 4, 0, 5]], np.int64), [-1]),
    "middle": (np.array([[[1, 2], [1, 2], [0, 2]], [[3, 3], [3, 3], [3, 1]]], np.int32), [1]),
    "float_rows": (np.array([[1, NAN], [1, NAN], [0, -0.0], [0, 0], [2, 2]], np.float32), [0]),
    "float_columns": (np.array([[1, NAN, 1, 2], [1.5, 2, 1.5, 2]], np.float64), [1]),
}


@pytest.mark.parametrize("case", sorted(AXIS_CASES))
def test_unique_along_an_axis(case):
    x, axis = AXIS_CASES[case]
    fn = lambda v: [raw.UniqueV2(x=v, axis=tf.constant(axis, tf.int64)),  # noqa: E731
                    raw.UniqueWithCountsV2(x=v, axis=tf.constant(axis, tf.int32), out_idx=tf.int64)]
    check_op(fn, [x])
    unknown = [spec((None,) * x.ndim, x.dtype.name)]
    check_op(fn, [x], specs=unknown, extra_inputs=[[x[:0] if axis == [0] else x[..., :0]]])


def test_unique_v2_of_a_vector_and_of_string_rows():
    check_op(lambda v: raw.UniqueV2(x=v, axis=tf.constant([], tf.int64)), [values("int32")])
    words = np.array([["a", "b"], ["a", "b"], ["c", "b"]], object)
    check_strings(lambda v: raw.UniqueWithCountsV2(x=v, axis=[0]), [words],
                  [spec((None, 2), "string")])


# -- set difference ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
def test_list_diff(dtype):
    x = values(dtype)
    y = np.array([1, 9, 3], "float32" if dtype == "bfloat16" else dtype)
    fn = as_dtype(lambda a, b: tf.compat.v1.setdiff1d(a, b), dtype)
    check_op(fn, [x, y])


def test_list_diff_nans_empties_and_unknown_sizes():
    x = np.array([1, NAN, 0.0, 2, NAN, -0.0, 5], np.float32)
    specs = [spec((None,)), spec((None,), name="x1")]
    fn = lambda a, b: tf.compat.v1.setdiff1d(a, b, index_dtype=tf.int64)  # noqa: E731
    check_op(fn, [x, np.array([NAN, -0.0, 7], np.float32)], specs=specs,
             extra_inputs=[[x, np.zeros(0, np.float32)], [np.zeros(0, np.float32), x],
                           [x, np.array([NAN], np.float32)]])


def test_list_diff_strings():
    words = np.array(["to", "be", "or", "not", "to", "be"], object)
    check_strings(lambda a, b: tf.compat.v1.setdiff1d(a, b), [words, np.array(["be", "x"], object)],
                  [spec((None,), "string"), spec((None,), "string", "x1")])


# -- bucketize ------------------------------------------------------------------------------------
BOUNDARIES = [-1.0, 0.0, 0.5, 3.0]


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_bucketize(dtype):
    x = rand(3, 4, dtype=dtype, low=-4, high=4)
    if dtype.startswith("float"):
        x = np.concatenate([x.ravel(), np.array([-1, 0, 0.5, 3, NAN, np.inf, -np.inf, -0.0],
                                                dtype)])
    check_op(lambda v: [raw.Bucketize(input=v, boundaries=BOUNDARIES),
                        raw.Bucketize(input=v, boundaries=[]),
                        raw.Bucketize(input=v, boundaries=[0.25])], [x])


def test_bucketize_compares_as_tf_does_and_keeps_unknown_shapes():
    """int32 values are compared in float32 (16777217 rounds to a boundary of 16777216)."""
    x = np.array([16777217, 16777215, -3], np.int32)
    check_op(lambda v: raw.Bucketize(input=v, boundaries=[16777216.0]), [x])
    check_op(lambda v: raw.Bucketize(input=v, boundaries=[0.1, 0.2]), [rand(2, 3)],
             specs=[spec((None, None))], extra_inputs=[[rand(0, 4)]])


# -- roll --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool"])
def test_roll(dtype):
    x = rand(3, 4, 5, dtype=dtype)
    check_op(lambda v: [tf.roll(v, 2, 0), tf.roll(v, [1, -7, 3], [0, 1, -1]),
                        tf.roll(v, [2, 2], [-1, 2]), tf.roll(v, 0, 1), tf.roll(v, -3, -3)], [x])


def test_roll_strings_and_empty():
    words = np.array([["a", "b", "c"], ["d", "e", "f"]], object)
    check_strings(lambda v: tf.roll(v, [1, 1], [0, 1]), [words], [spec((2, 3), "string")])
    check_op(lambda v: tf.roll(v, 3, 1), [rand(2, 0)])


def test_roll_shift_and_axis_at_run_time():
    specs = [spec((None, None, None)), spec((2,), "int32", "x1"), spec((2,), "int64", "x2")]
    fn = lambda v, s, a: tf.roll(v, s, a)  # noqa: E731
    check_op(fn, [rand(2, 3, 4), np.array([1, -5], np.int32), np.array([2, -1])], specs=specs,
             extra_inputs=[[rand(3, 1, 2), np.array([4, 2], np.int32), np.array([0, 0])],
                           [rand(0, 2, 2), np.array([1, 1], np.int32), np.array([0, 1])]])
    specs = [spec((None, 4)), spec((), "int64", "x1")]
    check_op(lambda v, s: tf.roll(v, s, -1), [rand(3, 4), np.array(-9)], specs=specs,
             extra_inputs=[[rand(1, 4), np.array(4)]])


# -- cross product -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
def test_cross(dtype):
    a, b = (rand(4, 2, 3, dtype="float32" if dtype == "bfloat16" else dtype) for _ in range(2))
    tolerance = {"bfloat16": 0.1, "float16": 0.02}.get(dtype)
    check_op(as_dtype(tf.linalg.cross, dtype), [a, b], atol=tolerance, rtol=tolerance)


def test_cross_unknown_shapes():
    specs = [spec((None, 3)), spec((None, 3), name="x1")]
    check_op(tf.linalg.cross, [rand(2, 3), rand(2, 3)], specs=specs,
             extra_inputs=[[rand(0, 3), rand(0, 3)]])


# -- softmax cross entropy -------------------------------------------------------------------------------
XENT_TOLERANCE = {"float16": 2e-2, "bfloat16": 5e-2}


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_cross_entropy(dtype):
    labels = np.abs(rand(4, 5))
    labels /= labels.sum(axis=1, keepdims=True)
    logits = rand(4, 5, low=-6, high=6)
    fn = as_dtype(lambda f, l: [raw.SoftmaxCrossEntropyWithLogits(features=f, labels=l),
                                raw.SoftmaxCrossEntropyWithLogits(features=f[:1], labels=l)], dtype)
    work = "float32" if dtype == "bfloat16" else dtype
    tolerance = XENT_TOLERANCE.get(dtype)
    check_op(fn, [logits.astype(work), labels.astype(work)], atol=tolerance, rtol=tolerance)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("index", ["int32", "int64"])
def test_sparse_softmax_cross_entropy(dtype, index):
    labels = np.array([0, 4, 2, 2], index)
    fn = as_dtype(lambda f: raw.SparseSoftmaxCrossEntropyWithLogits(features=f, labels=labels), dtype)
    tolerance = XENT_TOLERANCE.get(dtype)
    check_op(fn, [rand(4, 5, low=-6, high=6, dtype="float32" if dtype == "bfloat16" else dtype)],
             atol=tolerance, rtol=tolerance)


def test_cross_entropies_with_unknown_shapes_and_large_logits():
    specs = [spec((None, None)), spec((None, None), name="x1"), spec((None,), "int64", "x2")]
    fn = lambda f, l, i: [tf.nn.softmax_cross_entropy_with_logits(l, f),  # noqa: E731
                          tf.nn.sparse_softmax_cross_entropy_with_logits(i, f)]
    big = np.array([[1000.0, -1000.0, 0.0], [-50.0, 80.0, 80.0]], np.float32)
    check_op(fn, [big, np.array([[1, 0, 0], [0, 0.5, 0.5]], np.float32), np.array([1, 2])],
             specs=specs, extra_inputs=[[rand(0, 4), rand(0, 4), np.zeros(0, np.int64)]])


# -- without TensorFlow: inference ---------------------------------------------------------------------
def inferred(op_type, operands, attrs=None, outputs=2):
    """The output descs of one `op_type` node with `outputs` outputs over `operands` (arrays
    become constants, descs inputs, None an absent optional input)."""
    from tf2ir.ir import Graph
    from tf2ir.ir.infer import infer_graph
    g = Graph(op_type)
    inputs = [None if v is None else g.add_const(v, f"c{i}") if isinstance(v, np.ndarray)
              else g.add_input(f"in{i}", v) for i, v in enumerate(operands)]
    node = g.add_node(op_type, inputs, attrs or {}, "op", num_outputs=outputs)
    g.outputs.extend(node.outputs)
    infer_graph(g)
    return [(o.desc.dtype, o.desc.shape) for o in node.outputs]


def test_shapes_are_inferred():
    from tf2ir.ir import TensorDesc
    assert inferred("UniqueWithCounts", [TensorDesc("int32", (6,)), None], {"out_idx": "int64"},
                    3) == [("int32", (None,)), ("int64", (6,)), ("int64", (None,))]
    assert inferred("UniqueV2", [TensorDesc("float32", (4, 5, 6)), np.array([-2])]) == [
        ("float32", (4, None, 6)), ("int32", (5,))]
    assert inferred("SparseSoftmaxCrossEntropyWithLogits", [
        TensorDesc("float16", (None, 7)), TensorDesc("int32", (None,))]) == [
        ("float16", (None,)), ("float16", (None, 7))]
    assert inferred("Bucketize", [TensorDesc("int64", (2, None))], {"boundaries": [1.0]},
                    1) == [("int32", (2, None))]
    assert inferred("Roll", [TensorDesc("float32", None), np.array([1, 2]), np.array([0, -1])],
                    outputs=1) == [("float32", None)]
