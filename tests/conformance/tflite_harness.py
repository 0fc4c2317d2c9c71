"""The TFLite conformance harness: a small tf.function is converted to a .tflite model by TF's
TFLiteConverter (float, dynamic-range int8, full int8, 16x8 or float16), converted by tf2ir,
run by onnxruntime and compared with the LiteRT interpreter on the same inputs.

    from tests.conformance.tflite_harness import check_tflite, spec
    def test_conv(tmp_path):
        check_tflite(tmp_path, lambda x: tf.nn.relu(x), [spec([1, 8, 8, 3])], mode="int8")

Float outputs compare within `TOLERANCES`; a quantized model's outputs compare in
quantization steps (the output's scale): within `steps` (default 1) of the interpreter. Each
case's outcome is recorded in RESULTS (mode, bit-exact or the largest difference in steps),
which tests/conformance/test_tflite_summary.py and the closing notes count.

Each conformance module declares TFLITE_TESTED = {"CONV_2D": ("float", "int8", ...)}: the
builtin ops it checks and in which modes (tools/optable.py lists them in docs/ops.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

MODES = ("float", "dynamic", "int8", "int16", "float16")
TOLERANCES = {"float": (1e-5, 1e-5), "float16": (2e-3, 2e-3), "dynamic": (1e-2, 1e-2)}
SEED = 20261127


@dataclass
class Outcome:
    name: str
    mode: str
    exact: bool          # every output bit-exact
    worst: float         # largest difference: in quantization steps (quantized), else absolute


RESULTS: List[Outcome] = []
_MANAGER = None


def spec(shape, dtype="float32", name=None):
    import tensorflow as tf
    return tf.TensorSpec(shape, getattr(tf, dtype), name=name)


def representative(specs: Sequence, seed: int = SEED, count: int = 16, low=-2.0, high=2.0):
    """The representative dataset TF's converter calibrates with: `count` draws over the
    specs (unknown dims as 1), from a fixed seed."""
    def data():
        rng = np.random.default_rng(seed)
        for _ in range(count):
            yield [sample(s, rng, low, high) for s in specs]
    return data


def sample(s, rng, low=-2.0, high=2.0, batch: int = 1) -> np.ndarray:
    shape = [batch if d is None else d for d in s.shape.as_list()]
    dtype = s.dtype.as_numpy_dtype
    if np.issubdtype(dtype, np.floating):
        return rng.uniform(low, high, shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(0, 5, shape).astype(dtype)


def to_tflite(fn: Callable, specs: Sequence, mode: str = "float", io: str = "float",
              select_tf: bool = False, seed: int = SEED, low=-2.0, high=2.0,
              experimental_lowering: bool = True) -> bytes:
    """`fn` over `specs` → .tflite bytes by TFLiteConverter in `mode` (MODES); `io` "int8"
    makes a full-int8 model's inputs and outputs int8 (uint8: "uint8"); `select_tf` allows Flex
    ops (SELECT_TF_OPS)."""
    import tensorflow as tf
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: one of {MODES}")
    function = fn if hasattr(fn, "get_concrete_function") else tf.function(fn)
    concrete = function.get_concrete_function(*specs)
    converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete], function)
    ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if mode != "float":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "float16":
        converter.target_spec.supported_types = [tf.float16]
    if mode in ("int8", "int16"):
        converter.representative_dataset = representative(specs, seed, low=low, high=high)
        ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8 if mode == "int8" else
               tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        if io != "float":
            converter.inference_input_type = getattr(tf, io)
            converter.inference_output_type = getattr(tf, io)
    if select_tf:
        ops = ops + [tf.lite.OpsSet.SELECT_TF_OPS]
    converter.target_spec.supported_ops = ops
    return converter.convert()


def _manager():
    global _MANAGER
    if _MANAGER is None:
        from tf2ir.plugins.manager import PluginManager
        _MANAGER = PluginManager()
    return _MANAGER


def convert_tflite(path: str, onnx_path: str, opset: Optional[int] = None):
    """tf2ir's conversion of the .tflite at `path`, written to `onnx_path` → (IR graph, report)."""
    from tf2ir.ir.export import ExportOptions
    from tf2ir.parser.pipeline import Options, Pipeline
    pipeline = Pipeline(_manager(), Options(export=ExportOptions(opset=opset)))
    graph, report = pipeline.convert_file(path)
    pipeline.compile(graph, onnx_path, model=path)
    return graph, report


def output_scales(path: str) -> Dict[str, float]:
    """Output tensor name → the size of its quantization step: its own scale (a quantized
    output) or, for a float output TFLite dequantized, the scale of the tensor it dequantized
    (parser/tflite_view.py step_sizes). Float outputs of float ops have none."""
    from tf2ir.parser.tflite_view import output_step_sizes
    return output_step_sizes(path)


def check_tflite(tmp_path, fn: Callable, specs: Sequence, *, mode: str = "float",
                 io: str = "float", feeds: Optional[Sequence[Sequence[np.ndarray]]] = None,
                 batches: Sequence[int] = (1, 3), steps: float = 1, atol: Optional[float] = None,
                 rtol: Optional[float] = None, select_tf: bool = False, low=-2.0, high=2.0,
                 name: Optional[str] = None, session=None, opset: Optional[int] = None) -> Outcome:
    """Convert `fn` to TFLite in `mode`, then through tf2ir; run both on `feeds` (default: one
    draw per batch size in `batches` for specs with an unknown first dim, else one) and
    compare every output (an int8/uint8 input gets the float draw quantized with its scale).
    `opset`: the ONNX opset tf2ir writes (default: its own choice). Returns (and records) the
    outcome."""
    from tests.conformance.tflite_harness_run import compare_runs
    data = to_tflite(fn, specs, mode, io, select_tf, low=low, high=high)
    case = name or getattr(fn, "__name__", "case")
    path = os.path.join(str(tmp_path), f"{case}_{mode}.tflite")
    with open(path, "wb") as f:
        f.write(data)
    onnx_path = path[:-len(".tflite")] + ".onnx"
    convert_tflite(path, onnx_path, opset)
    if feeds is None:
        rng = np.random.default_rng(SEED + 1)
        dynamic = any(s.shape.rank and s.shape.as_list()[0] is None for s in specs)
        feeds = [[sample(s, rng, low, high, b) for s in specs] for b in (batches if dynamic else batches[:1])]
    outcome = compare_runs(path, onnx_path, feeds, mode, steps, atol, rtol, case, session)
    RESULTS.append(outcome)
    return outcome
