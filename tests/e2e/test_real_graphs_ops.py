"""Op gaps TF allows (issue 20, class 4), each written from the issue's description as a small
TF function, frozen, converted, run in onnxruntime and compared with TensorFlow:
BroadcastArgs/BroadcastGradientArgs (`tf.linspace` in a loop body), complex operands of real
ops after an RFFT, run-time `k` in the MatrixDiag family, SparseReshape of unknown rank, and a
PlaceholderWithDefault whose default is computed."""

from __future__ import annotations

import json
import tempfile

import numpy as np
import pytest

from tests.conformance.harness import convert_function, rand, spec
from tests.conftest import run_cli
from tests.e2e.test_real_graphs_dtypes import compare


def _ir_op_types(graph):
    types = set()
    for node in graph.nodes:
        types.add(node.op_type)
        for sub in getattr(node, "subgraphs", {}).values():
            types |= _ir_op_types(sub)
    return types


# -- BroadcastArgs and BroadcastGradientArgs ---------------------------------------------------
SHAPE_PAIRS = [((3, 1), (1, 4)), ((2, 3), (2, 3)), ((5,), (2, 1, 5)), ((1, 1), (1, 3)),
               ((2, 1, 1), (1,)), ((0, 1), (1, 4)), ((), (2, 2))]


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_broadcast_args_of_run_time_shapes(dtype):
    """The shapes are run-time vectors of unknown length, so nothing folds; pairs of differing
    ranks, identical shapes, 1 against 1 and 0 against 1 (TF's rules, not numpy's zeros)."""
    import tensorflow as tf

    def fn(s0, s1):
        r0, r1 = tf.raw_ops.BroadcastGradientArgs(s0=s0, s1=s1)
        return tf.raw_ops.BroadcastArgs(s0=s0, s1=s1), r0, r1
    first, *more = [(np.array(a, dtype).reshape(-1), np.array(b, dtype).reshape(-1))
                    for a, b in SHAPE_PAIRS]
    graph = compare(fn, first, specs=[spec([None], dtype, "x0"), spec([None], dtype, "x1")],
                    extra_inputs=more)
    assert {"BroadcastArgs", "BroadcastGradientArgs"} <= _ir_op_types(graph)


def test_broadcast_args_folds_known_shapes():
    import tensorflow as tf
    graph = compare(lambda a: a + tf.cast(tf.raw_ops.BroadcastArgs(s0=tf.shape(a), s1=[4, 1, 1]),
                                          tf.float32)[-1],
                    [rand(3, 1)])
    assert "BroadcastArgs" not in _ir_op_types(graph)


def _linspace_loop(n, x):
    """A loop whose body interpolates from zeros to i * x (x of run-time length) in 5 steps."""
    import tensorflow as tf

    def body(i, acc):
        stop = x * tf.cast(i, tf.float32)
        return i + 1, acc + tf.reduce_sum(tf.linspace(tf.zeros_like(x), stop, 5), axis=0)
    return tf.while_loop(lambda i, a: i < n, body, [tf.constant(0), tf.zeros_like(x)])[1]


LOOP_SPECS = [spec([], "int32", "x0"), spec([None], "float32", "x1")]


def test_linspace_in_a_while_loop_body_converts_and_check_agrees():
    """tf.linspace of tensors writes BroadcastArgs; in a tf.while_loop body it is in the
    function library, where `check` and `convert` both must find it mapped."""
    graph = compare(_linspace_loop, [np.array(3, np.int32), rand(4)], specs=LOOP_SPECS,
                    extra_inputs=[[np.array(0, np.int32), rand(2)],
                                  [np.array(7, np.int32), rand(1)]])
    assert "BroadcastArgs" in _ir_op_types(graph)
    with tempfile.TemporaryDirectory() as directory:
        _, _, _, pb = convert_function(_linspace_loop, LOOP_SPECS, directory)
        result = run_cli("check", pb, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["supported"] is True


# -- complex operands of real ops after an FFT -------------------------------------------------
def test_cos_of_an_rfft_result():
    """The issue's case: TF's Cos accepts complex64; its result's real part is the output."""
    import tensorflow as tf
    graph = compare(lambda x: tf.math.real(tf.cos(tf.signal.rfft(x))), [rand(2, 8)],
                    specs=[spec([None, 8], "float32", "x0")], extra_inputs=[[rand(5, 8)]])
    assert "Cos" in _ir_op_types(graph)


def _const(tf, z, re, im):
    return tf.complex(tf.constant(re, z.dtype.real_dtype), tf.constant(im, z.dtype.real_dtype))


COMPLEX_FNS = {
    "sin_exp": lambda tf, z: tf.sin(z) + tf.exp(z * 0.25),
    "mul_div": lambda tf, z: z * tf.math.conj(z) * _const(tf, z, 2, -1) / (z + _const(tf, z, 3, 1)),
    "sub_neg_square": lambda tf, z: tf.square(z) - (-z),
    # log and sqrt away from their branch cut, the negative real axis, where the Nyquist bin
    # lies with an imaginary part that is 0 in TF and +-1e-16 in ONNX's DFT
    "log_sqrt_reciprocal": lambda tf, z: (tf.math.log(z * _const(tf, z, 1, .5))
                                          + tf.sqrt(z * _const(tf, z, 1, -.5)) + tf.math.reciprocal(z)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(COMPLEX_FNS))
def test_elementwise_math_on_a_spectrum(name, dtype):
    """A filter applied to an RFFT's spectrum and transformed back; the magnitude and phase of
    the result are outputs too (complex64 from float32, complex128 from float64). The phase is
    taken after a turn by atan(0.5): an RFFT's DC and Nyquist bins have imaginary parts of zero,
    whose sign (which the two sides need not compute alike) flips a negative one's angle."""
    import tensorflow as tf

    def fn(x):
        z = COMPLEX_FNS[name](tf, tf.signal.rfft(x))
        turned = z * _const(tf, z, 1.0, 0.5)
        return tf.signal.irfft(z), tf.abs(z), tf.math.angle(turned), tf.math.imag(z)
    # (a fixed draw: the phase and log of bins near zero are ill-conditioned, and the shared
    # generator's draw depends on which tests ran before)
    x = np.random.default_rng(13).uniform(-2, 2, (3, 8)).astype(dtype)
    compare(fn, [x], specs=[spec([None, 8], dtype, "x0")])


def test_complex_operand_of_an_op_without_a_complex_lowering_is_refused():
    import tensorflow as tf
    from tf2ir.ir import ConversionError
    with tempfile.TemporaryDirectory() as directory, pytest.raises(
            ConversionError, match=r"node 'Tan', op Tan, .*has dtype complex64; allowed"):
        convert_function(lambda x: tf.math.real(tf.tan(tf.signal.rfft(x))), [spec([2, 8])],
                         directory)


# -- the MatrixDiag family with a run-time k ---------------------------------------------------
K_SCALARS = [np.array(k, np.int32) for k in (1, 0, -2, 3)]


@pytest.mark.parametrize("align", ["RIGHT_LEFT", "LEFT_RIGHT"])
def test_diag_part_and_set_diag_with_a_run_time_k(align):
    """k is an input: one diagonal chosen at run time, read and then replaced, on a batch of
    4x5 matrices whose sizes are unknown too."""
    import tensorflow as tf

    def fn(x, k):
        part = tf.linalg.diag_part(x, k=k, padding_value=-9.0, align=align)
        return part, tf.linalg.set_diag(x, part * 2.0 + 1.0, k=k, align=align)
    x = rand(2, 4, 5)
    graph = compare(fn, [x, K_SCALARS[0]], specs=[spec([None, None, None], "float32", "x0"),
                                                  spec([], "int32", "x1")],
                    extra_inputs=[[x, k] for k in K_SCALARS[1:]] + [[rand(3, 6, 2), K_SCALARS[0]]])
    assert {"MatrixDiagPart", "MatrixSetDiag"} <= _ir_op_types(graph)


K_PAIRS = [np.array(k, np.int32) for k in ((-1, 1), (0, 2), (1, 1), (-3, -1))]


def test_a_band_of_diagonals_with_a_run_time_k_pair():
    """k = (k0, k1) at run time: the num_diags dim exists only when k0 < k1, so the band's rank
    is unknown to the converter; it is flattened (and its shape returned) to compare."""
    import tensorflow as tf

    def fn(x, k):
        band = tf.raw_ops.MatrixDiagPartV3(input=x, k=k, padding_value=0.5, align="LEFT_LEFT")
        new = tf.raw_ops.MatrixDiagPartV2(input=x, k=k, padding_value=0.0)
        full = tf.raw_ops.MatrixSetDiagV3(input=x, diagonal=band + 1.0, k=k, align="LEFT_LEFT")
        return tf.reshape(band, [-1]), tf.shape(band), tf.reshape(new, [-1]), full
    x = rand(4, 4)
    compare(fn, [x, K_PAIRS[0]], specs=[spec([None, None], "float32", "x0"), spec([2], "int32", "x1")],
            extra_inputs=[[x, k] for k in K_PAIRS[1:]])


def test_matrix_diag_v3_with_a_run_time_k():
    import tensorflow as tf

    def fn(d, k):
        return tf.linalg.diag(d, k=k, num_rows=-1, num_cols=-1, padding_value=-1.0)
    compare(fn, [rand(2, 3), K_SCALARS[0]], specs=[spec([None, None], "float32", "x0"),
                                                   spec([], "int32", "x1")],
            extra_inputs=[[rand(2, 3), k] for k in K_SCALARS[1:]])


# -- SparseReshape of unknown rank -------------------------------------------------------------
def test_sparse_reshape_of_unknown_rank():
    """The SparseTensor's parts and the new shape are inputs of unknown lengths: one model
    reshapes rank 2 to 2 (with -1), 3 to 1, 1 to 3 and 2 to 4."""
    import tensorflow as tf

    def fn(indices, values, shape, new_shape):
        out = tf.sparse.reshape(tf.sparse.SparseTensor(indices, values, shape), new_shape)
        return out.indices, out.values, out.dense_shape
    i64 = lambda *v: np.array(v, np.int64)
    cases = [[i64([0, 1], [1, 2]), rand(2), i64(2, 3), i64(3, -1)],
             [i64([0, 1, 2], [1, 0, 3], [1, 2, 0]), rand(3), i64(2, 3, 4), i64(-1)],
             [i64([1], [5]), rand(2), i64(6), i64(1, 2, 3)],
             [i64([0, 0], [2, 5]), rand(2), i64(3, 6), i64(3, 1, 2, -1)]]
    graph = compare(fn, cases[0], specs=[spec([None, None], "int64", "x0"),
                                         spec([None], "float32", "x1"),
                                         spec([None], "int64", "x2"), spec([None], "int64", "x3")],
                    extra_inputs=cases[1:])
    assert "SparseReshape" in _ir_op_types(graph)


# -- PlaceholderWithDefault with a computed default --------------------------------------------
def _scaled(x):
    """`rate` defaults to a value computed from x (its mean, per row); a TF user may feed it."""
    import tensorflow as tf
    rate = tf.raw_ops.PlaceholderWithDefault(input=tf.reduce_mean(x, axis=1), shape=[None],
                                             name="rate")
    return x * tf.expand_dims(rate, 1)


def _tf_run(pb, feeds):
    """The frozen graph run by TensorFlow with `feeds` ({tensor name: array}), as a TF1 user
    feeds a PlaceholderWithDefault."""
    import tensorflow as tf
    graph_def = tf.compat.v1.GraphDef()
    with open(pb, "rb") as f:
        graph_def.ParseFromString(f.read())
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(graph_def, name="")
        out = [op for op in graph.get_operations() if op.type == "Identity"][-1].outputs[0]
        with tf.compat.v1.Session(graph=graph) as session:
            return session.run(out, feeds)


def test_placeholder_with_a_computed_default_not_fed_is_computed():
    """Without --inputs naming it, the default is computed and the model has no input for it
    (ONNX's optional input, an initializer, holds only a constant)."""
    import onnxruntime as ort
    x = rand(3, 4)
    with tempfile.TemporaryDirectory() as directory:
        path, _, _, pb = convert_function(_scaled, [spec([None, 4])], directory)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        assert [i.name for i in session.get_inputs()] == ["x0"]
        got = session.run(None, {"x0": x})[0]
        np.testing.assert_allclose(got, _tf_run(pb, {"x0:0": x}), rtol=1e-6)


def test_placeholder_with_a_computed_default_named_by_inputs_is_a_fed_input():
    """--inputs rate:? makes the PlaceholderWithDefault a required model input: the fed value
    is used, as TF uses a fed value, and the default's computation is gone."""
    import onnx
    import onnxruntime as ort
    x, rate = rand(3, 4), rand(3)
    with tempfile.TemporaryDirectory() as directory:
        path, _, _, pb = convert_function(_scaled, [spec([None, 4])], directory,
                                          input_shapes={"rate": (None,)})
        model = onnx.load(path)
        assert sorted(i.name for i in model.graph.input) == ["rate", "x0"]
        assert "rate" not in {t.name for t in model.graph.initializer}      # required, not optional
        assert "ReduceMean" not in {n.op_type for n in model.graph.node}
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = session.run(None, {"x0": x, "rate": rate})[0]
        np.testing.assert_allclose(got, _tf_run(pb, {"x0:0": x, "rate:0": rate}), rtol=1e-6)


def test_inputs_naming_another_op_is_refused():
    from tf2ir.ir import ConversionError
    with tempfile.TemporaryDirectory() as directory, pytest.raises(
            ConversionError, match="not a Placeholder or PlaceholderWithDefault"):
        convert_function(_scaled, [spec([None, 4])], directory, input_shapes={"Mean": (None,)})
