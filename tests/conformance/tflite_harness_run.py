"""Running one TFLite conformance case both ways and comparing (tflite_harness.py's half that
needs no TensorFlow)."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def quantized_feeds(path: str, feed: Sequence[np.ndarray]) -> list:
    """`feed` (float draws, one per model input) as the model's inputs take them: a float
    array for a quantized integer input (io "int8"/"uint8") quantized with that input's scale
    and zero point, as TFLite's QUANTIZE rounds (half away from zero) and saturated."""
    from tf2ir.parser.tflite_model import read_tflite
    sg = read_tflite(path).subgraphs[0]
    out = []
    for index, x in zip(sg.inputs, feed):
        t = sg.tensors[index]
        x = np.asarray(x)
        if x.dtype.kind == "f" and t.dtype in ("int8", "uint8", "int16") and t.quantization:
            q = t.quantization
            scaled = x.astype(np.float32) / np.float32(q.scale[0])
            steps = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)
            info = np.iinfo(np.dtype(t.dtype))
            x = np.clip(steps + int(q.zero_point[0]), info.min, info.max).astype(t.dtype)
        out.append(x)
    return out


def compare_runs(path: str, onnx_path: str, feeds, mode: str, steps: float, atol, rtol, case: str,
                 session=None):
    from tests.conformance.tflite_harness import TOLERANCES, Outcome, output_scales
    from tf2ir.tools.runtime import InferenceSession
    from tf2ir.tools.tflite_reference import load_interpreter, run_tflite
    sess = session or InferenceSession(onnx_path)
    names = [i.name for i in sess.get_inputs()]
    scales = output_scales(path)
    quantized = mode in ("int8", "int16")
    exact, worst = True, 0.0
    for feed in feeds:
        values = dict(zip(names, quantized_feeds(path, feed)))
        want = run_tflite(path, values, interpreter=load_interpreter(path))
        got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, values)))
        assert set(got) == set(want), f"{case}: outputs {sorted(got)} vs the interpreter's {sorted(want)}"
        for name, w in want.items():
            g = got[name]
            assert g.shape == w.shape, f"{case} {name}: shape {g.shape} vs the interpreter's {w.shape}"
            assert g.dtype == w.dtype, f"{case} {name}: dtype {g.dtype} vs the interpreter's {w.dtype}"
            if not np.array_equal(g, w, equal_nan=g.dtype.kind == "f"):
                exact = False
            if quantized and name in scales:
                diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
                if w.dtype.kind == "f":
                    diff = diff / scales[name]
                d = float(diff.max()) if diff.size else 0.0
                worst = max(worst, d)
                assert d <= steps + 1e-3, f"{case} {name}: {d:.2f} quantization steps from the interpreter (allowed {steps})"
            elif w.dtype.kind in "fc":
                a, r = TOLERANCES.get(mode, (1e-2, 1e-2))
                a, r = atol if atol is not None else a, rtol if rtol is not None else r
                diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
                worst = max(worst, float(diff.max()) if diff.size else 0.0)
                np.testing.assert_allclose(g, w, atol=a, rtol=r, err_msg=f"{case} {name}")
            else:
                np.testing.assert_array_equal(g, w, err_msg=f"{case} {name}")
    return Outcome(case, mode, exact, worst)
