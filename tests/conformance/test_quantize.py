"""Conformance of fake quantization (opp/quantize.py) against TensorFlow, to the bit: FakeQuant
with min/max attributes, tensors and per channel (num_bits, narrow_range, a zero point nudged
either way, ties), and QuantizeAndDequantizeV2/V3/V4 (given or measured range, signed or not,
narrow range, both round modes, per axis)."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand, spec

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

QDQ_TYPES = ("float32", "float64")      # TF has no CPU kernel for the halves
TESTED_DTYPES = {
    "FakeQuantWithMinMaxArgs": ("float32",), "FakeQuantWithMinMaxVars": ("float32",),
    "FakeQuantWithMinMaxVarsPerChannel": ("float32",),
    "QuantizeAndDequantizeV2": QDQ_TYPES, "QuantizeAndDequantizeV3": ("float32", "float64"),
    "QuantizeAndDequantizeV4": QDQ_TYPES,
}
EXACT = {"atol": 0, "rtol": 0}


def data():
    """Values across and beyond the ranges, ties of the rounding and the infinities."""
    values = np.concatenate([rand(60, low=-8, high=8), np.float32(
        [0.5, 1.5, -2.5, 6.0235, -6.02, 0, -0.0, np.inf, -np.inf, 2.7, -3.1, 1e-8])])
    return values.reshape(8, 9)


BITS = [(8, False), (4, True), (2, False), (16, False), (7, True)]


@pytest.mark.parametrize("bits,narrow", BITS)
@pytest.mark.parametrize("low,high", [(-5.3, 6.1), (0.2, 3.0), (-4.0, -0.5), (-6.0, 6.0)])
def test_fake_quant_args_and_vars(bits, narrow, low, high):
    check_op(lambda x, a, b: [
        raw.FakeQuantWithMinMaxArgs(inputs=x, min=low, max=high, num_bits=bits,
                                    narrow_range=narrow),
        raw.FakeQuantWithMinMaxVars(inputs=x, min=a, max=b, num_bits=bits, narrow_range=narrow)],
        [data(), np.float32(low), np.float32(high)], **EXACT)


@pytest.mark.parametrize("bits,narrow", BITS[:3])
def test_fake_quant_per_channel_unknown_shape(bits, narrow):
    x = data().reshape(24, 3)
    low, high = np.float32([-3.1, 0.5, -1]), np.float32([2.7, 4, 0.1])
    check_op(lambda x, a, b: raw.FakeQuantWithMinMaxVarsPerChannel(
        inputs=x, min=a, max=b, num_bits=bits, narrow_range=narrow), [x, low, high],
        specs=[spec((None, 3)), spec((3,), name="x1"), spec((3,), name="x2")],
        extra_inputs=[[x[:0], low, high]], **EXACT)


QDQ_CASES = [dict(), dict(range_given=True), dict(signed_input=False, range_given=True),
             dict(narrow_range=True, num_bits=4), dict(round_mode="HALF_UP"),
             dict(num_bits=3, signed_input=False), dict(axis=1), dict(axis=0, num_bits=5)]


def _qdq_inputs(kw, dtype):
    x = np.where(np.isinf(data()), 1.0, data()).astype(dtype)
    axis = kw.get("axis", -1)
    count = () if axis == -1 else (x.shape[axis],)
    return [x, np.full(count, -3.0, dtype), np.full(count, 2.0, dtype)]


@pytest.mark.parametrize("version", ["V2", "V4"])
@pytest.mark.parametrize("kw", QDQ_CASES, ids=[str(k) for k in QDQ_CASES])
@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_quantize_and_dequantize(version, kw, dtype):
    op = getattr(raw, "QuantizeAndDequantize" + version)
    check_op(lambda x, a, b: op(input=x, input_min=a, input_max=b, **kw), _qdq_inputs(kw, dtype),
             **EXACT)


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_quantize_and_dequantize_v3_unknown_shape(dtype):
    x, a, b = _qdq_inputs({}, dtype)
    check_op(lambda x, a, b: raw.QuantizeAndDequantizeV3(input=x, input_min=a, input_max=b,
                                                         num_bits=5, range_given=True), [x, a, b],
             specs=[spec((None, None), dtype), spec((), dtype, "x1"), spec((), dtype, "x2")],
             extra_inputs=[[x[:3, :1], a, b]], **EXACT)
