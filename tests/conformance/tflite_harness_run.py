"""Running one TFLite conformance case both ways and comparing (tflite_harness.py's half that
needs no TensorFlow)."""

from __future__ import annotations

from typing import Sequence

import numpy as np


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
        values = dict(zip(names, feed))
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
