"""Conformance of the random ops (opp/random.py) against TensorFlow: by shape, dtype and
distribution, since a converted model draws from TF's distribution but never TF's values.
Samples of N values are compared with TF's own samples (two-sample Kolmogorov-Smirnov
distance) and with the distribution's moments and range, with generous bounds. Seeded ops
make onnxruntime's draws reproducible, so these tests do not flake."""

import logging
import tempfile

import numpy as np
import pytest

from tests.conformance.harness import convert_function, single_op_graph, spec

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "RandomUniform": ("float16", "bfloat16", "float32", "float64"),
    "RandomStandardNormal": ("float16", "float32", "float64"),
    "TruncatedNormal": ("float16", "bfloat16", "float32", "float64"),
    "RandomUniformInt": ("int32", "int64"),
    "Multinomial": ("float16", "float32", "float64"),
    "RandomShuffle": ("float32", "int32", "int64", "string"),
    "StatelessRandomUniform": ("float32",),
    "StatelessRandomUniformV2": ("float32", "float64"),
    "StatelessRandomNormal": ("float32",),
    "StatelessRandomNormalV2": ("float32", "float64"),
    "StatelessTruncatedNormal": ("float32",),
    "StatelessTruncatedNormalV2": ("float32", "float64"),
    "StatelessRandomUniformInt": ("int32", "int64"),
    "StatelessRandomUniformIntV2": ("int32", "int64"),
    "StatelessRandomUniformFullInt": ("int32", "int64"),
    "StatelessRandomUniformFullIntV2": ("int32", "int64", "uint32", "uint64"),
    "StatelessMultinomial": ("float32",),
    "StatelessRandomGetKeyCounter": ("int64",),
    "StatelessRandomGetKeyCounterAlg": ("int64",),
    "StatelessRandomGetAlg": ("int32",),
}

N = 100_000
KS_BOUND = 0.015          # TF's and the converted draw's CDFs, N samples each
TRUNCATED_VARIANCE = 0.7737413          # of the standard normal truncated at +-2
DUMMY = spec((1,), "float32")           # the functions below take one unused argument


def run_converted(fn, inputs=(np.zeros(1, np.float32),), specs=(DUMMY,)):
    """Convert `fn` and run it once in onnxruntime → (onnxruntime's outputs, TF's outputs)."""
    import onnxruntime as ort
    with tempfile.TemporaryDirectory() as directory:
        path, _, _, _ = convert_function(fn, list(specs), directory)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        by_name = {s.name: a for s, a in zip(specs, inputs)}
        got = session.run(None, {i.name: by_name[i.name] for i in session.get_inputs()})
    want = [np.asarray(t) for t in tf.nest.flatten(tf.function(fn)(*[tf.constant(a) for a in inputs]))]
    for g, w in zip(got, want):
        assert (g.shape, g.dtype) == (w.shape, w.dtype), f"{g.shape} {g.dtype}, TF {w.shape} {w.dtype}"
    return got, want


def ks_distance(a, b) -> float:
    a, b = np.sort(np.ravel(a).astype(np.float64)), np.sort(np.ravel(b).astype(np.float64))
    points = np.concatenate([a, b])
    return float(np.max(np.abs(np.searchsorted(a, points, "right") / a.size
                               - np.searchsorted(b, points, "right") / b.size)))


def as_f32(fn, dtype):
    """bfloat16 results leave the graph as float32 (onnxruntime cannot hand bfloat16 to numpy)."""
    return (lambda x: tf.cast(fn(x), tf.float32)) if dtype == "bfloat16" else fn


# -- floats: uniform, normal, truncated normal -----------------------------------------------
MANTISSA = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_uniform(dtype):
    fn = as_f32(lambda x: tf.random.uniform([N], dtype=dtype, seed=7), dtype)
    (got,), (want,) = run_converted(fn)
    assert 0 <= got.min() and got.max() < 1
    steps = got.astype(np.float64) * 2.0 ** MANTISSA[dtype]
    np.testing.assert_array_equal(steps, np.floor(steps))        # TF's grid k / 2**m
    assert abs(got.mean() - 0.5) < 0.01 and abs(got.var() - 1 / 12) < 0.005
    assert ks_distance(got, want) < KS_BOUND


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_standard_normal(dtype):
    (got,), (want,) = run_converted(lambda x: tf.random.normal([N], dtype=dtype, seed=3))
    assert abs(got.astype(np.float64).mean()) < 0.02 and abs(got.astype(np.float64).var() - 1) < 0.03
    assert ks_distance(got, want) < KS_BOUND


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_truncated_normal(dtype):
    fn = as_f32(lambda x: tf.random.truncated_normal([N], dtype=dtype, seed=5), dtype)
    (got,), (want,) = run_converted(fn)
    values = got.astype(np.float64)
    assert -2 <= values.min() and values.max() <= 2 and values.max() > 1.99
    assert abs(values.mean()) < 0.02 and abs(values.var() - TRUNCATED_VARIANCE) < 0.02
    assert ks_distance(got, want) < KS_BOUND


def test_shapes_known_at_run_time_and_empty():
    specs = [spec((None, None), "float32")]
    fn = lambda x: [tf.random.uniform(tf.shape(x), seed=1), tf.random.normal(tf.shape(x)),  # noqa: E731
                    tf.random.truncated_normal(tf.shape(x)),
                    tf.random.uniform(tf.shape(x), 0, 9, dtype=tf.int64)]
    for shape in [(3, 5), (0, 4), (2, 0)]:
        got, _ = run_converted(fn, [np.zeros(shape, np.float32)], specs)
        assert all(g.shape == shape for g in got)
    (scalar,), _ = run_converted(lambda x: tf.random.uniform([]))
    assert scalar.shape == ()


# -- integers ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_uniform_int(dtype):
    (got,), (want,) = run_converted(lambda x: tf.random.uniform([N], -5, 7, dtype=dtype, seed=2))
    assert got.min() == -5 and got.max() == 6
    np.testing.assert_allclose(np.bincount(got + 5) / N, np.full(12, 1 / 12), atol=0.005)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_uniform_int_bounds_at_run_time(dtype):
    specs = [spec((), dtype, "lo"), spec((), dtype, "hi")]
    fn = lambda lo, hi: tf.random.uniform([N], lo, hi, dtype=dtype)  # noqa: E731
    low, high = (-2 ** 40, 2 ** 40) if dtype == "int64" else (-2 ** 30, 2 ** 31 - 1)
    (got,), (want,) = run_converted(fn, [np.array(low, dtype), np.array(high, dtype)], specs)
    assert low <= got.min() and got.max() < high
    # a span over 2**31 keeps TF's modulo bias (values below 2**32 - span twice as likely)
    assert ks_distance(got, want) < KS_BOUND


# -- categorical draws and shuffling -------------------------------------------------------------
@pytest.mark.parametrize("dtype,out", [("float32", "int64"), ("float64", "int32"), ("float16", "int64")])
def test_multinomial(dtype, out):
    logits = np.array([np.log([0.1, 0.2, 0.7]), [0.0, -np.inf, 0.0]], dtype)
    (got,), (want,) = run_converted(
        lambda x: tf.random.categorical(tf.constant(logits), N, dtype=out, seed=4))
    assert got.shape == (2, N)
    np.testing.assert_allclose(np.bincount(got[0], minlength=3) / N, [0.1, 0.2, 0.7], atol=0.01)
    np.testing.assert_allclose(np.bincount(got[1], minlength=3) / N, [0.5, 0.0, 0.5], atol=0.01)
    assert not np.any(got[1] == 1)


def test_multinomial_samples_and_batch_at_run_time():
    specs = [spec((None, 4), "float32"), spec((), "int32", "n")]
    fn = lambda logits, n: tf.random.categorical(logits, n)  # noqa: E731
    logits = np.array([[0, 0, 0, 0], [-80, -80, 0, -80], [0, -np.inf, -np.inf, 0]], np.float32)
    (got,), _ = run_converted(fn, [logits, np.array(N, np.int32)], specs)
    assert got.shape == (3, N)
    assert set(np.unique(got[1])) == {2} and set(np.unique(got[2])) == {0, 3}
    np.testing.assert_allclose(np.bincount(got[0]) / N, np.full(4, 0.25), atol=0.01)
    (empty,), _ = run_converted(fn, [logits, np.array(0, np.int32)], specs)
    assert empty.shape == (3, 0)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_random_shuffle_is_a_uniform_permutation(dtype):
    x = np.arange(N).astype(dtype)
    (got,), _ = run_converted(lambda v: tf.random.shuffle(v, seed=9), [x], [spec((None,), dtype)])
    np.testing.assert_array_equal(np.sort(got), x)
    position = np.argsort(got)                 # where each value went
    assert abs(np.corrcoef(position, np.arange(N))[0, 1]) < 0.02
    assert np.sum(got == x) < 10               # fixed points: Poisson(1)


@pytest.mark.parametrize("dtype", ["int32", "string"])
def test_random_shuffle_moves_whole_rows(dtype):
    rows = np.arange(60).reshape(20, 3)
    x = rows.astype(str).astype(object) if dtype == "string" else rows.astype(dtype)
    (got,), _ = run_converted(tf.random.shuffle, [x], [spec((None, 3), dtype)])
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, x.tolist()))
    for shape in [(0, 3), ()]:
        value = np.zeros(shape, np.float32)
        (same,), _ = run_converted(tf.random.shuffle, [value], [spec(shape, "float32")])
        np.testing.assert_array_equal(same, value)


# -- stateless ops: a draw from TF's distribution, with a warning -----------------------------------
raw = tf.raw_ops
SEED = np.array([17, 42], np.int64)
STATELESS_FLOAT = {
    "StatelessRandomUniform": lambda dtype: tf.random.stateless_uniform([N], SEED, dtype=dtype),
    "StatelessRandomNormal": lambda dtype: tf.random.stateless_normal([N], SEED, dtype=dtype),
    "StatelessTruncatedNormal": lambda dtype: tf.random.stateless_truncated_normal([N], SEED, dtype=dtype),
    "StatelessRandomUniformV1": lambda dtype: raw.StatelessRandomUniform(shape=[N], seed=SEED, dtype=dtype),
    "StatelessRandomNormalV1": lambda dtype: raw.StatelessRandomNormal(shape=[N], seed=SEED, dtype=dtype),
    "StatelessTruncatedNormalV1": lambda dtype: raw.StatelessTruncatedNormal(shape=[N], seed=SEED, dtype=dtype),
}


STATELESS_CASES = [(op, dtype) for op in sorted(STATELESS_FLOAT)
                   for dtype in (("float32",) if op.endswith("V1") else ("float32", "float64"))]


@pytest.mark.parametrize("op,dtype", STATELESS_CASES)
def test_stateless_floats(op, dtype, caplog):
    with caplog.at_level(logging.WARNING, logger="tf2ir"):
        (got,), (want,) = run_converted(lambda x: STATELESS_FLOAT[op](dtype))
    assert "stateless random ops return one fixed draw per seed" in caplog.text
    assert ks_distance(got, want) < KS_BOUND
    if "Truncated" in op:
        assert np.abs(got).max() <= 2


def test_stateless_ops_fed_by_every_philox_state_op():
    def fn(x):
        key, counter, alg = raw.StatelessRandomGetKeyCounterAlg(seed=SEED)
        other_alg = raw.StatelessRandomGetAlg()
        return [raw.StatelessRandomNormalV2(shape=[N], key=key, counter=counter, alg=alg),
                raw.StatelessRandomUniformV2(shape=tf.shape(x), key=key, counter=counter,
                                             alg=other_alg)]
    (normal, uniform), (want, _) = run_converted(fn, [np.zeros((2, 3), np.float32)],
                                                 [spec((None, 3), "float32")])
    assert ks_distance(normal, want) < KS_BOUND and uniform.shape == (2, 3)


STATELESS_INT = {
    "StatelessRandomUniformIntV2": lambda dtype: tf.random.stateless_uniform(
        [N], SEED, minval=-3, maxval=5, dtype=dtype),
    "StatelessRandomUniformInt": lambda dtype: raw.StatelessRandomUniformInt(
        shape=[N], seed=SEED, minval=tf.constant(-3, dtype), maxval=tf.constant(5, dtype)),
}


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("op", sorted(STATELESS_INT))
def test_stateless_uniform_int(op, dtype):
    (got,), _ = run_converted(lambda x: STATELESS_INT[op](dtype))
    np.testing.assert_allclose(np.bincount(got + 3) / N, np.full(8, 1 / 8), atol=0.006)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64"])
def test_stateless_full_range_ints(dtype):
    fns = [lambda x: tf.random.stateless_uniform([N], SEED, minval=None, maxval=None, dtype=dtype)]
    if dtype in ("int32", "int64"):
        fns.append(lambda x: raw.StatelessRandomUniformFullInt(shape=[N], seed=SEED, dtype=dtype))
    info = np.iinfo(dtype)
    for fn in fns:
        (got,), (want,) = run_converted(fn)
        scaled = (got.astype(np.float64) - float(info.min)) / (float(info.max) - float(info.min))
        assert scaled.min() < 0.001 and scaled.max() > 0.999
        assert abs(scaled.mean() - 0.5) < 0.01 and abs(scaled.var() - 1 / 12) < 0.005


def test_stateless_multinomial():
    logits = np.log(np.array([[0.3, 0.7], [0.9, 0.1]], np.float32))
    (got,), _ = run_converted(lambda x: tf.random.stateless_categorical(logits, N, SEED))
    np.testing.assert_allclose((got == 1).mean(axis=1), [0.7, 0.1], atol=0.01)


def test_philox_state_is_refused_when_read():
    from tf2ir.ir import ConversionError
    fn = lambda x: raw.StatelessRandomGetKeyCounter(seed=SEED)  # noqa: E731
    with tempfile.TemporaryDirectory() as directory:
        with pytest.raises(ConversionError, match="Philox key, counter and algorithm") as info:
            convert_function(fn, [DUMMY], directory)
    assert info.value.exit_code == 3


# -- seeds, inference -----------------------------------------------------------------------------
def test_seeded_draws_repeat_from_session_to_session():
    fn = lambda x: tf.random.uniform([8], seed=11)  # noqa: E731
    first, _ = run_converted(fn)
    second, _ = run_converted(fn)
    np.testing.assert_array_equal(first[0], second[0])


def test_shapes_are_inferred():
    from tf2ir.ir import TensorDesc
    _, node = single_op_graph("RandomUniform", [np.array([2, 3], np.int32)], {"dtype": "float16"})
    assert (node.outputs[0].desc.dtype, node.outputs[0].desc.shape) == ("float16", (2, 3))
    _, node = single_op_graph("TruncatedNormal", [TensorDesc("int64", (3,))], {"dtype": "float32"})
    assert node.outputs[0].desc.shape == (None, None, None)
    _, node = single_op_graph("Multinomial", [TensorDesc("float32", (None, 5)), np.array(7, np.int32)],
                              {"output_dtype": "int32"})
    assert (node.outputs[0].desc.dtype, node.outputs[0].desc.shape) == ("int32", (None, 7))
