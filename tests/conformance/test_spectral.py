"""Conformance of the Fourier transforms and complex numbers (opp/spectral.py) against
TensorFlow. Complex values live inside the graph only (float (real, imaginary) pairs in ONNX):
each test returns real results (tf.abs, tf.math.real/imag, IRFFT), and models with a complex
input or output, or a complex value reaching an op outside the family, are refused."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand, spec
from tf2ir.ir import ConversionError

tf = pytest.importorskip("tensorflow")

REAL = ("float32", "float64")          # complex64 and complex128 inside
TESTED_DTYPES = {
    "RFFT": REAL, "IRFFT": REAL, "RFFT2D": REAL, "IRFFT2D": REAL, "RFFT3D": ("float32",),
    "IRFFT3D": ("float32",), "FFT": REAL, "IFFT": REAL, "FFT2D": ("float32",),
    "IFFT2D": ("float32",), "FFT3D": ("float32",), "IFFT3D": ("float32",),
    "ComplexAbs": REAL, "Real": REAL, "Imag": REAL, "Complex": REAL, "Conj": REAL,
}
TOL = {"float32": {"atol": 1e-4, "rtol": 1e-4}, "float64": {"atol": 1e-11, "rtol": 1e-11}}


def parts(c):
    return [tf.math.real(c), tf.math.imag(c)]


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n", [8, 7, 1])
def test_rfft_and_irfft(dtype, n):
    x = rand(3, n, dtype=dtype)
    check_op(lambda x: [tf.abs(tf.signal.rfft(x))] + parts(tf.signal.rfft(x))
             + [tf.signal.irfft(tf.signal.rfft(x), [n])], [x], **TOL[dtype])


@pytest.mark.parametrize("dtype", REAL)
def test_fft_lengths_pad_and_crop(dtype):
    x = rand(2, 6, dtype=dtype)
    check_op(lambda x: parts(tf.signal.rfft(x, [4])) + parts(tf.signal.rfft(x, [9]))
             + [tf.signal.irfft(tf.signal.rfft(x), [5]), tf.signal.irfft(tf.signal.rfft(x), [12])],
             [x], **TOL[dtype])


@pytest.mark.parametrize("dtype", REAL)
def test_complex_fft_ifft(dtype):
    x, y = rand(2, 3, 7, dtype=dtype), rand(2, 3, 7, dtype=dtype)
    check_op(lambda x, y: parts(tf.signal.fft(tf.complex(x, y)))
             + parts(tf.signal.ifft(tf.complex(x, y))) + parts(tf.math.conj(tf.complex(x, y))),
             [x, y], **TOL[dtype])


@pytest.mark.parametrize("dtype", REAL)
def test_two_dimensional(dtype):
    x = rand(2, 4, 6, dtype=dtype)
    check_op(lambda x: parts(tf.signal.rfft2d(x)) + [tf.signal.irfft2d(tf.signal.rfft2d(x))]
             + [tf.signal.irfft2d(tf.signal.rfft2d(x, [3, 8]), [5, 5])], [x], **TOL[dtype])


def test_three_dimensional_and_complex_2d():
    x, y = rand(2, 3, 4, 5), rand(2, 3, 4, 5)
    check_op(lambda x, y: [tf.abs(tf.signal.fft3d(tf.complex(x, y))),
                           tf.math.imag(tf.signal.ifft3d(tf.complex(x, y))),
                           tf.math.real(tf.signal.fft2d(tf.complex(x, y))),
                           tf.math.real(tf.signal.ifft2d(tf.complex(x, y))),
                           tf.signal.irfft3d(tf.signal.rfft3d(x))], [x, y], **TOL["float32"])


def test_unknown_shapes_and_empty_batches():
    check_op(lambda x: [tf.abs(tf.signal.rfft(x)), tf.signal.irfft(tf.signal.rfft(x))],
             [rand(2, 3, 8)], specs=[spec((None, None, 8))], atol=1e-4,
             extra_inputs=[[rand(0, 4, 8)], [rand(1, 1, 8)]])
    check_op(lambda x, y: tf.math.real(tf.signal.ifft(tf.complex(x, y))), [rand(2, 5), rand(2, 5)],
             specs=[spec((None, None)), spec((None, None), name="x1")], atol=1e-5,
             extra_inputs=[[rand(3, 9), rand(3, 9)]])


@pytest.mark.parametrize("dtype", REAL)
def test_complex_abs_real_imag_broadcast_and_extremes(dtype):
    big = np.finfo(dtype).max / 2
    x = np.array([[0, 3, -big, np.inf, 1e-30], [0, -4, big, 1, np.nan]], dtype)
    y = np.array([2, -1, 0.5], dtype)
    check_op(lambda x, y: [tf.abs(tf.complex(x, x[::-1])), tf.math.real(tf.complex(x, x * 2)),
                           tf.abs(tf.complex(y[:, None], y))], [x, y])


def test_complex_constants():
    c = np.array([1 + 2j, -3.5 - 0.25j, 4j], np.complex64)
    check_op(lambda x: [tf.abs(tf.signal.fft(tf.constant(c))) + x,
                        tf.math.imag(tf.math.conj(tf.constant(c)))], [rand(3)])



def test_complex_model_output_is_refused():
    with pytest.raises(ConversionError, match="onnxruntime has no complex tensors"):
        check_op(lambda x: tf.signal.rfft(x), [rand(2, 8)])


def test_complex_model_input_is_refused():
    c = (rand(4) + 1j * rand(4)).astype(np.complex64)
    with pytest.raises(ConversionError, match="model input .* complex64"):
        check_op(lambda c: tf.abs(c), [c])


def test_complex_value_into_another_family_is_refused():
    with pytest.raises(ConversionError, match="cannot read complex values|complex64"):
        check_op(lambda x: tf.math.real(tf.transpose(tf.signal.rfft(x))), [rand(2, 8)])


def test_complex_reshape_and_shape():
    """Reshape moves pairs (the pair dim kept); Shape, Size and Rank read the complex shape."""
    def fn(x, dims):
        spectrum = tf.reshape(tf.signal.rfft(x), dims)
        return [tf.math.imag(spectrum), tf.shape(spectrum), tf.size(spectrum),
                tf.rank(spectrum)]
    check_op(fn, [rand(2, 6), np.int32([4, 1, -1])],
             extra_inputs=[[rand(2, 6), np.int32([-1])]], specs=[spec((2, 6)), spec((None,), "int32", "x1")])


def test_fft_length_at_run_time():
    """fft_length fed at run time: crop, pad and the inverse's length follow the feed."""
    fn = lambda x, n: [tf.abs(tf.signal.rfft(x, n)),  # noqa: E731
                       tf.signal.irfft(tf.signal.rfft(x), n)]
    check_op(fn, [rand(2, 8), np.int32([8])], specs=[spec((2, 8)), spec((1,), "int32", "x1")],
             extra_inputs=[[rand(2, 8), np.int32([5])], [rand(2, 8), np.int32([12])]], atol=1e-4,
             rtol=1e-4)
