"""Conformance at other target opsets (issue 23): a representative subset of the suite -- the op
families whose ONNX forms differ by opset (reductions' axes, Split/Squeeze/Unsqueeze, Pad, Clip,
Resize, DFT, TopK, Scatter's reductions, slicing, LayerNormalization 17, Gelu 20, the bitwise
ops of 18, the integer types of 14, onnxruntime's float64 activations) -- compiled at the
oldest target opset (13), at the newest onnxruntime has every kernel for and at the newest it
loads, through the harness's TF2IR_CONFORMANCE_OPSET; `python -m tf2ir.tools.opsets
--conformance` runs the whole suite at every opset."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest

from tests.conformance.harness import (
    OPSET_ENV, check_op, convert_function, converted_op_types, rand, spec)
from tf2ir.ir.onnx.forms import OLDEST_OPSET, newest_runnable_opset
from tf2ir.ir.onnx.kernels import newest_loadable_opset

tf = pytest.importorskip("tensorflow")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# the cases, by family (ids of tests/conformance)
CASES = [
    # reductions: axes an attribute before 18 (ReduceSum before 13), the run-time axes case
    "test_reduce.py::test_reduce_float32[axis2-False-Mean]",
    "test_reduce.py::test_reduce_float32[-1-True-Max]",
    "test_reduce.py::test_reduce_float32[None-True-Sum]",
    "test_reduce.py::test_reduce_float32[1-False-Prod]",
    "test_reduce.py::test_reduce_symbolic_dims[Min]",
    "test_reduce.py::test_reduce_axes_fed_at_run_time[False]",
    "test_reduce.py::test_euclidean_norm[axis2-False]",
    "test_reduce.py::test_all_any[1-False-reduce_all]",
    # split, squeeze, unsqueeze: counts and axes as inputs or attributes
    "test_concat.py::test_split[float32-1]",
    "test_concat.py::test_split_symbolic",
    "test_concat.py::test_split_v[float32-sizes1--1]",
    "test_concat.py::test_split_v_runtime_sizes[float32-1]",
    "test_array.py::test_squeeze[float32-axis1]",
    "test_array.py::test_squeeze_symbolic",
    "test_array.py::test_expand_dims[float32--1]",
    "test_array.py::test_expand_dims_runtime_axis[float32]",
    # pad, clip
    "test_array.py::test_pad_constant[float32]",
    "test_array.py::test_pad_dynamic_paddings",
    "test_array.py::test_mirror_pad[float32-REFLECT]",
    "test_arithmetic.py::test_clip_by_value_scalar_bounds[float32]",
    "test_arithmetic.py::test_clip_by_value_tensor_bounds",
    # resize: modes, axes (18) written as every dim's sizes before
    "test_image.py::test_resize[False-False-ResizeBilinear]",
    "test_image.py::test_resize[True-False-ResizeNearestNeighbor]",
    "test_image.py::test_resize[False-True-ResizeBicubic]",
    "test_image.py::test_resize_symbolic_dims_and_dynamic_size[ResizeBilinear]",
    # DFT (17, its axis an input from 20)
    "test_spectral.py::test_rfft_and_irfft[8-float32]",
    "test_spectral.py::test_complex_fft_ifft[float32]",
    # topk, scatter (reductions add 16, min/max 18), slicing, one-hot
    "test_reduce.py::test_top_k[3-float32]",
    "test_reduce.py::test_top_k_k_is_fed_at_run_time",
    "test_indexing.py::test_scatter_nd_sums_duplicates[float32]",
    "test_indexing.py::test_tensor_scatter_add[float32]",
    "test_segment.py::test_tensor_scatter_max_min_sub[float32]",
    "test_segment.py::test_tensor_scatter_elements_and_unknown_shapes",
    "test_slicing.py::test_strided_slice_masks[basic]",
    "test_slicing.py::test_strided_slice_masks[ellipsis_shrink]",
    "test_slicing.py::test_strided_slice_masks[negative_stride]",
    "test_indexing.py::test_one_hot[1-values0]",
    # the types of 14 (8- and 16-bit integer arithmetic, integer Relu) and onnxruntime's float64
    # activations through function bodies (18): the lowerings' forms before
    "test_arithmetic.py::test_small_integers_compute_wider[int8]",
    "test_arithmetic.py::test_division[FloorDiv-int8]",
    "test_nn.py::test_activation_integers[Relu-int64]",
    "test_nn.py::test_activation[float64-Softplus]",
    # fused LayerNormalization (17) and Gelu (20), and an op of 18 only (skipped before)
    "test_opsets.py::test_keras_layer_normalization",
    "test_opsets.py::test_gelu[False]",
    "test_opsets.py::test_gelu[True]",
    "test_bitwise.py::test_bitwise_binary[BitwiseAnd-int32]",
]
# what a target cannot hold is the one "needs opset" error, which the harness skips: at 13
# the run-time axes of a ReduceMax, DFT (17), ScatterND's add (16) and max/min (18), BitwiseAnd (18)
SKIPPED_AT = {13: {
    "ONNX ReduceMax needs opset 18 or newer; asked for opset 13 (its axes are computed at run time)": 1,
    "ONNX DFT needs opset 17 or newer; asked for opset 13": 2,
    "ONNX ScatterND needs opset 16 or newer; asked for opset 13 (attribute reduction='add' is newer)": 2,
    "ONNX ScatterND needs opset 18 or newer; asked for opset 13 (reduction 'max' is newer)": 2,
    "ONNX BitwiseAnd needs opset 18 or newer; asked for opset 13": 1}}
# the oldest, the newest with every kernel, and the newest onnxruntime loads (the subset holds
# no op it lacks kernels for there: the random ops)
TARGETS = sorted({OLDEST_OPSET, newest_runnable_opset(), newest_loadable_opset()})


# -- cases of their own (run here at the default opset, and by the subset at the others) -------------
def test_keras_layer_normalization():
    import keras
    layer = keras.layers.LayerNormalization(epsilon=1e-3)
    layer.build((2, 5, 8))
    layer.gamma.assign(np.linspace(0.5, 1.5, 8, dtype=np.float32))
    layer.beta.assign(np.linspace(-1, 1, 8, dtype=np.float32))
    check_op(lambda x: layer(x), [rand(2, 5, 8)], atol=1e-4, rtol=1e-4)
    assert "LayerNorm" in converted_op_types(lambda x: layer(x), [spec((2, 5, 8))])  # fused


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu(approximate):
    check_op(lambda x: tf.nn.gelu(x, approximate=approximate), [rand(3, 7) * 2], atol=1e-5)
    assert "Gelu" in converted_op_types(lambda x: tf.nn.gelu(x, approximate=approximate),
                                        [spec((3, 7))])


# -- the variable reaches compile -----------------------------------------------------------------------
def _opset_of(path: str) -> int:
    return [o.version for o in onnx.load(path).opset_import if o.domain == ""][0]


def test_the_opset_variable_compiles_every_case_at_that_opset(monkeypatch, tmp_path):
    fn, specs = (lambda x: tf.reduce_mean(tf.nn.gelu(x), axis=1)), [spec((2, 3))]
    monkeypatch.delenv(OPSET_ENV, raising=False)
    assert _opset_of(convert_function(fn, specs, str(tmp_path))[0]) == 20   # the default: Gelu
    for opset in (OLDEST_OPSET, 17, newest_runnable_opset()):
        monkeypatch.setenv(OPSET_ENV, str(opset))
        assert _opset_of(convert_function(fn, specs, str(tmp_path))[0]) == opset
    # an op with no form at the target: the case is skipped with the compiler's one line
    monkeypatch.setenv(OPSET_ENV, "17")
    with pytest.raises(pytest.skip.Exception,
                       match=r"opset 17: ONNX BitwiseAnd needs opset 18 or newer; asked for opset 17"):
        convert_function(lambda a, b: tf.bitwise.bitwise_and(a, b),
                         [spec((3,), "int32", "a"), spec((3,), "int32", "b")], str(tmp_path))
    monkeypatch.setenv(OPSET_ENV, "seventeen")
    with pytest.raises(ValueError, match=OPSET_ENV):
        convert_function(fn, specs, str(tmp_path))


# -- the subset at the oldest and the newest target ---------------------------------------------------------
_DRIVER = """
import os, sys, pytest
for opset in sys.argv[1].split(","):
    os.environ[%r] = opset
    print("== opset", opset, "==", flush=True)
    code = pytest.main(["-q", "-p", "no:cacheprovider", "-rs", *sys.argv[2:]])
    print("== exit", int(code), "==", flush=True)
""" % OPSET_ENV


@pytest.fixture(scope="module")
def runs():
    """The subset run at each target in one process (TensorFlow imported once): opset →
    (exit status, its pytest output)."""
    env = dict(os.environ)
    env.pop("TF2IR_CONFORMANCE_SHAPES", None)
    ids = [os.path.join("tests", "conformance", case) for case in CASES]
    done = subprocess.run([sys.executable, "-c", _DRIVER, ",".join(map(str, TARGETS)), *ids],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    parts = re.split(r"^== opset (\d+) ==$", done.stdout, flags=re.M)[1:]
    out = {}
    for opset, text in zip(parts[0::2], parts[1::2]):
        code = re.search(r"^== exit (\d+) ==$", text, re.M)
        out[int(opset)] = (int(code.group(1)) if code else -1, text)
    assert sorted(out) == TARGETS, done.stdout[-2000:] + done.stderr[-2000:]
    return out


@pytest.mark.parametrize("opset", TARGETS)
def test_the_representative_cases_pass_at(runs, opset):
    code, text = runs[opset]
    tail = text[-3000:]
    assert code == 0, tail
    summary = [line for line in text.splitlines() if re.search(r"\d+ (passed|skipped)", line)][-1]
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|skipped|failed)", summary)}
    skipped = SKIPPED_AT.get(opset, {})
    assert counts.get("skipped", 0) == sum(skipped.values()), tail
    assert counts.get("passed") == len(CASES) - sum(skipped.values()), tail
    for why, count in skipped.items():     # skipped for the compiler's one line, nothing else
        assert re.search(rf"SKIPPED \[{count}\] \S+: opset {opset}: {re.escape(why)}$", text,
                         re.M), tail
