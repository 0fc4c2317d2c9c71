"""Conformance of the pooling ops (2-D and 3-D max and average pooling, MaxPoolV2) against
TensorFlow."""

import pytest

from tests.conformance.harness import check_op, convert_function, rand

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "MaxPool": ("float16", "float32", "float64"),
    "AvgPool": ("float32", "float64"),
    "MaxPool3D": ("float32",),
    "AvgPool3D": ("float32",),
    "MaxPoolV2": ("float32",),
}

_TF_DTYPE = {"float16": tf.float16, "float32": tf.float32, "float64": tf.float64,
             "int32": tf.int32, "int64": tf.int64}


def _spec(shape, dtype="float32", name="x0"):
    return tf.TensorSpec(shape, _TF_DTYPE[dtype], name=name)


def _frozen_op_types(fn, specs):
    import tempfile
    from tensorflow.core.framework import graph_pb2
    with tempfile.TemporaryDirectory() as directory:
        _, _, _, pb = convert_function(fn, specs, directory)
        graph = graph_pb2.GraphDef()
        with open(pb, "rb") as f:
            graph.ParseFromString(f.read())
    return {n.op for n in graph.node}


# -- pooling ------------------------------------------------------------------------------------
POOL_CASES = {
    "same_2x2_s2": ((2, 7, 7, 3), (2, 2), (2, 2), "SAME"),
    "same_3x3_s1": ((1, 5, 6, 2), (3, 3), (1, 1), "SAME"),
    "same_3x2_s2x1": ((1, 6, 5, 2), (3, 2), (2, 1), "SAME"),
    "valid_3x3_s2": ((1, 8, 9, 2), (3, 3), (2, 2), "VALID"),
    "valid_2x3_s1x3": ((2, 5, 9, 1), (2, 3), (1, 3), "VALID"),
}


@pytest.mark.parametrize("op", ["MaxPool", "AvgPool"])
@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_pool(op, case):
    shape, ksize, strides, padding = POOL_CASES[case]
    pool = tf.nn.max_pool2d if op == "MaxPool" else tf.nn.avg_pool2d
    check_op(lambda x: pool(x, ksize, strides, padding), [rand(*shape)])


@pytest.mark.parametrize("op,dtype", [("MaxPool", "float16"), ("MaxPool", "float64"),
                                      ("AvgPool", "float64")])
def test_pool_dtypes(op, dtype):
    pool = tf.nn.max_pool2d if op == "MaxPool" else tf.nn.avg_pool2d
    check_op(lambda x: pool(x, 3, 2, "SAME"), [rand(1, 7, 7, 2, dtype=dtype)],
             atol=1e-6 if dtype == "float64" else None, rtol=1e-6 if dtype == "float64" else None)


@pytest.mark.parametrize("op", ["MaxPool", "AvgPool"])
def test_pool_symbolic_dims(op):
    pool = tf.nn.max_pool2d if op == "MaxPool" else tf.nn.avg_pool2d
    check_op(lambda x: pool(x, 3, 2, "SAME"), [rand(1, 7, 6, 2)], specs=[_spec((None, None, None, 2))],
             extra_inputs=[[rand(2, 4, 9, 2)]])


# -- 3-D pooling and MaxPoolV2 ---------------------------------------------------------------------
POOL3D_CASES = {
    "same_2_s2": ((1, 5, 6, 7, 2), (2, 2, 2), (2, 2, 2), "SAME"),
    "same_3_s1": ((2, 4, 5, 3, 1), (3, 3, 2), (1, 1, 1), "SAME"),
    "valid_3_s2": ((1, 7, 6, 8, 2), (3, 2, 3), (2, 1, 2), "VALID"),
}


@pytest.mark.parametrize("op", ["MaxPool3D", "AvgPool3D"])
@pytest.mark.parametrize("case", sorted(POOL3D_CASES))
def test_pool3d(op, case):
    shape, ksize, strides, padding = POOL3D_CASES[case]
    pool = tf.nn.max_pool3d if op == "MaxPool3D" else tf.nn.avg_pool3d
    check_op(lambda x: pool(x, ksize, strides, padding), [rand(*shape)])


def test_pool3d_symbolic_dims():
    check_op(lambda x: tf.nn.avg_pool3d(x, 3, 2, "SAME"), [rand(1, 5, 4, 6, 2)],
             specs=[_spec((None, None, None, None, 2))], extra_inputs=[[rand(2, 3, 7, 4, 2)]])


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_max_pool_v2(padding):
    fn = lambda x: tf.raw_ops.MaxPoolV2(  # noqa: E731
        input=x, ksize=tf.constant([1, 3, 2, 1]), strides=tf.constant([1, 2, 2, 1]), padding=padding)
    assert "MaxPoolV2" in _frozen_op_types(fn, [_spec((1, 7, 6, 2))])
    check_op(fn, [rand(1, 7, 6, 2)], specs=[_spec((None, 7, 6, 2))], extra_inputs=[[rand(3, 7, 6, 2)]])


# -- SAME padding with a kernel smaller than its stride (onnxruntime refuses auto_pad SAME_UPPER
# there: its pads come out negative), known and unknown spatial sizes -------------------------------
SMALL_KERNEL_CASES = {
    "2d_k1_s2": ((1, 6, 7, 3), (1, 1), (2, 2), [(2, 4, 5, 3), (1, 9, 8, 3)]),
    "2d_k2x1_s3": ((2, 6, 8, 2), (2, 1), (3, 3), [(1, 7, 9, 2), (1, 3, 2, 2)]),
    "2d_mixed": ((1, 6, 7, 2), (3, 1), (2, 3), [(1, 5, 6, 2)]),
    "3d_k1_s2": ((1, 4, 5, 6, 2), (1, 2, 1), (2, 3, 2), [(2, 3, 6, 5, 2)]),
}


@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("case", sorted(SMALL_KERNEL_CASES))
@pytest.mark.parametrize("known", [True, False], ids=["known", "unknown"])
def test_same_pool_kernel_smaller_than_stride(op, case, known):
    shape, ksize, strides, more = SMALL_KERNEL_CASES[case]
    pool = {(4, "max"): tf.nn.max_pool2d, (4, "avg"): tf.nn.avg_pool2d,
            (5, "max"): tf.nn.max_pool3d, (5, "avg"): tf.nn.avg_pool3d}[len(shape), op]
    fn = lambda x: pool(x, ksize, strides, "SAME")  # noqa: E731
    if known:
        check_op(fn, [rand(*shape)])
        return
    specs = [_spec((None,) * (len(shape) - 1) + (shape[-1],))]
    check_op(fn, [rand(*shape)], specs=specs, extra_inputs=[[rand(*s)] for s in more])


@pytest.mark.parametrize("op,dtype", [("max", "float16"), ("avg", "float64")])
def test_same_pool_kernel_smaller_than_stride_dtypes(op, dtype):
    pool = tf.nn.max_pool2d if op == "max" else tf.nn.avg_pool2d
    check_op(lambda x: pool(x, 1, 2, "SAME"), [rand(1, 6, 5, 2, dtype=dtype)],
             specs=[_spec((None, None, None, 2), dtype)], extra_inputs=[[rand(2, 3, 4, 2, dtype=dtype)]],
             atol=1e-6 if dtype == "float64" else None, rtol=1e-6 if dtype == "float64" else None)
