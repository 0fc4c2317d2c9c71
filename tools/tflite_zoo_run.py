"""One TFLite zoo row: a .tflite file through tf2ir, compared with the LiteRT interpreter and
timed in onnxruntime (the tf2ir side of tools/tflite_zoo.py; no TensorFlow imported).

Errors: the largest absolute difference from the interpreter over every output, relative to
the output's spread (max - min of the interpreter's values); for the full-int8 flavour also in
quantization steps (the scale of the int8 tensor each float output was dequantized from, as
tests/conformance/tflite_harness.py counts them). Latency: `timed` runs the converted models
(onnxruntime) and the interpreter (the reference speed) round-robin, `repeats` rounds after the
warm-up each had, and takes each one's median: on a shared machine, models timed at different
moments compare the load of those moments, not the models.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

# The default bounds of a row's "ok": float within FLOAT_RTOL of the spread; dynamic-range
# (the interpreter's hybrid kernels quantize activations on the fly, tf2ir computes them in
# float) within DYNAMIC_RTOL; full int8 within INT8_STEPS quantization steps. One op is within a
# step of the interpreter (the conformance suite); a whole model's differences compound, to the
# 2-7 steps tf2onnx and OpenVINO show as well on the keras.applications models and BERTs.
FLOAT_RTOL = 1e-3
DYNAMIC_RTOL = 0.05
INT8_STEPS = 8.0


@dataclass
class PeerResult:
    """A peer converter's result on one .tflite: converted or the error line, its
    conversion seconds, errors against the interpreter (as the row's) and latency."""
    converted: bool = False
    convert_s: Optional[float] = None
    max_abs_error: Optional[float] = None
    rel_error: Optional[float] = None
    steps: Optional[float] = None
    ms: Optional[float] = None
    error: str = ""


@dataclass
class Row:
    """One model in one flavour; `status` ok, mismatch (converted, outside the bounds),
    build failed (TF's converter), convert failed (tf2ir) or run failed."""
    model: str
    flavour: str
    status: str = "convert failed"
    note: str = ""                                   # e.g. int8 with float fallback
    tflite_ops: int = 0
    op_types: Dict[str, int] = field(default_factory=dict)
    missing: List[str] = field(default_factory=list)  # op types no tf2ir plugin maps
    converted: bool = False
    convert_s: Optional[float] = None
    max_abs_error: Optional[float] = None
    rel_error: Optional[float] = None                # max_abs_error / the output's spread
    steps: Optional[float] = None                    # int8: in quantization steps
    ort_ms: Optional[float] = None
    vs_float: Optional[float] = None                 # ort_ms / the float flavour's ort_ms
    litert_ms: Optional[float] = None
    error: str = ""
    peers: Dict[str, PeerResult] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


# -- what the model holds ------------------------------------------------------------------
def op_types(path: str) -> Dict[str, int]:
    """Operator type → count over every subgraph (WHILE/IF bodies included)."""
    from tf2ir.parser.tflite_model import read_tflite
    model = read_tflite(path)
    return dict(sorted(Counter(op.op_type for sg in model.subgraphs for op in sg.operators).items()))


def missing_ops(types: Sequence[str], manager) -> List[str]:
    """The op types no plugin of `manager` maps (a Flex op: its TF op's TF mapping)."""
    from tf2ir.plugins.registry import TENSORFLOW
    missing = []
    for op in types:
        if op.startswith("Flex"):
            found = manager.lookup(op[len("Flex"):], TENSORFLOW)
        else:
            found = manager.lookup(op, "TFLITE")
        if found is None:
            missing.append(op)
    return missing


def output_scales(path: str) -> Dict[str, float]:
    """Output tensor name → its quantization step (parser/tflite_view.py step_sizes)."""
    from tf2ir.parser.tflite_view import output_step_sizes
    return output_step_sizes(path)


# -- running -------------------------------------------------------------------------------
def timed(runs: Dict[str, Callable[[], object]], repeats: int) -> Dict[str, float]:
    """Median milliseconds of each run, timed round-robin over `repeats` rounds."""
    times: Dict[str, List[float]] = {name: [] for name in runs}
    for _ in range(max(1, repeats)):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - start) * 1000.0)
    return {name: round(statistics.median(t), 3) for name, t in times.items()}


def ort_runner(onnx_path: str, threads: int, feeds: Dict[str, np.ndarray], manager=None):
    """(session, run) for a model in plain onnxruntime on `threads` intra-op threads, fed by
    input name (TFLite's, which tf2ir keeps) or else in input order; a tf2ir model onnxruntime cannot load alone (ops of tf2ir's plugins) through
    tf2ir.InferenceSession with `manager`'s kernels."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    try:
        session = ort.InferenceSession(onnx_path, options, providers=["CPUExecutionProvider"])
    except Exception:
        if manager is None:
            raise
        from tf2ir.tools.runtime import InferenceSession
        session = InferenceSession(onnx_path, sess_options=options, manager=manager)
    names = [i.name for i in session.get_inputs()]
    named = feeds if set(names) == set(feeds) else dict(zip(names, feeds.values()))
    return session, lambda: session.run(None, named)


def tflite_inputs(path: str, arrays: Sequence[np.ndarray]) -> Dict[str, np.ndarray]:
    """The test input arrays keyed by the model's input tensor names (subgraph order)."""
    from tf2ir.parser.tflite_model import read_tflite
    sg = read_tflite(path).subgraphs[0]
    names = [sg.tensors[i].name for i in sg.inputs]
    if len(names) != len(arrays):
        raise ValueError(f"{len(arrays)} test inputs for {len(names)} model inputs")
    return dict(zip(names, arrays))


def reference(path: str, feeds: Dict[str, np.ndarray],
              threads: int) -> Tuple[Dict[str, np.ndarray], Callable[[], object]]:
    """The interpreter's outputs (by tensor name, in output order) and its run (timed later)."""
    from tf2ir.tools.tflite_reference import load_interpreter, run_tflite
    it = load_interpreter(path, num_threads=threads)
    want = run_tflite(path, feeds, interpreter=it)
    return want, it.invoke


def compare(want: Dict[str, np.ndarray], got: Sequence[np.ndarray],
            scales: Dict[str, float]) -> Tuple[float, float, Optional[float]]:
    """(max abs error, max error / spread, max steps or None) of `got` (in output order)."""
    if len(got) != len(want):
        raise ValueError(f"{len(got)} outputs, the interpreter has {len(want)}")
    worst, rel, steps = 0.0, 0.0, None
    for (name, w), g in zip(want.items(), got):
        g = np.asarray(g)
        if g.shape != w.shape:
            raise ValueError(f"output {name}: shape {g.shape}, the interpreter's {w.shape}")
        diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
        d = float(diff.max()) if diff.size else 0.0
        if np.isnan(d):
            d = float("inf")
        spread = float(np.ptp(w)) if w.size else 0.0
        worst, rel = max(worst, d), max(rel, d / spread if spread else float(d > 0))
        if name in scales:
            s = d / scales[name] if w.dtype.kind == "f" else d
            steps = s if steps is None else max(steps, s)
    return worst, rel, steps


def within(flavour: str, rel: float, steps: Optional[float], bounds: Dict[str, float]) -> bool:
    if flavour == "int8" and steps is not None:
        return steps <= bounds["int8"] + 1e-3
    return rel <= bounds.get(flavour, bounds["dynamic"])


def convert(path: str, onnx_path: str, manager, quantized: str = "exact") -> float:
    """tf2ir's conversion of `path` to `onnx_path` (Pipeline.convert_file + compile, what
    `tf2ir convert --quantized QUANTIZED` runs); returns its seconds."""
    from tf2ir.ir.export import ExportOptions
    from tf2ir.parser.pipeline import Options, Pipeline
    start = time.perf_counter()
    pipeline = Pipeline(manager, Options(export=ExportOptions(quantized=quantized)))
    graph, _ = pipeline.convert_file(path)
    pipeline.compile(graph, onnx_path, model=path)
    return time.perf_counter() - start


def run_row(row: Row, path: str, arrays: Sequence[np.ndarray], work_dir: str, manager,
            threads: int, bounds: Dict[str, float], runs: Dict[str, Callable[[], object]],
            quantized: str = "exact") -> Optional[Dict[str, np.ndarray]]:
    """Fill `row` for the .tflite at `path` (all but its latencies: `runs` gets "litert"
    and, converted, "tf2ir": what to time); returns the interpreter's outputs (None when
    the interpreter could not run it)."""
    from tf2ir.ir.errors import ConversionError
    row.op_types = op_types(path)
    row.tflite_ops = sum(row.op_types.values())
    row.missing = missing_ops(list(row.op_types), manager)
    feeds = tflite_inputs(path, arrays)
    try:
        want, runs["litert"] = reference(path, feeds, threads)
    except Exception as exc:
        row.status, row.error = "run failed", one_line(f"LiteRT interpreter: {exc}")
        return None
    onnx_path = os.path.join(work_dir, f"{row.model}.{row.flavour}.onnx")
    try:
        row.convert_s = round(convert(path, onnx_path, manager, quantized), 3)
    except ConversionError as exc:
        row.error = one_line(str(exc).replace(f"model {path}, ", "").replace(f"model {path}: ", ""))
        return want
    except Exception as exc:       # a tf2ir defect: the row says so, the zoo goes on
        row.error = one_line(f"internal error: {type(exc).__name__}: {exc}")
        return want
    row.converted, row.status = True, "run failed"
    try:
        session, run = ort_runner(onnx_path, threads, feeds, manager)
        names = [o.name for o in session.get_outputs()]
        got = dict(zip(names, run()))
        order = [got[n] for n in want] if set(want) <= set(got) else list(got.values())
        row.max_abs_error, row.rel_error, row.steps = compare(want, order, output_scales(path))
        runs["tf2ir"] = run
    except Exception as exc:
        row.error = one_line(f"{type(exc).__name__}: {exc}")
        return want
    finally:
        for p in (onnx_path, onnx_path + ".data"):
            if os.path.exists(p):
                os.remove(p)
    row.status = "ok" if within(row.flavour, row.rel_error, row.steps, bounds) else "mismatch"
    if row.status == "mismatch":
        row.error = (f"{row.steps:.1f} quantization steps from the interpreter" if row.steps is not None
                     and row.flavour == "int8" else f"error {row.rel_error:.2g} x the output's spread")
    return want
