"""One TFLite zoo row: a .tflite file through tf2ir, compared with the LiteRT interpreter and
timed in onnxruntime (the tf2ir side of tools/tflite_zoo.py; no TensorFlow imported).

Errors: the largest absolute difference from the interpreter over every output, relative to
the output's spread (max - min of the interpreter's values); for the full-int8 flavour also in
quantization steps (the scale of the int8 tensor each float output was dequantized from, as
tests/conformance/tflite_harness.py counts them). Latency: median of `repeats` runs after one
warm-up, on `threads` threads, in onnxruntime for the ONNX model and in the LiteRT interpreter
for the .tflite (the reference speed).
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
# float) within DYNAMIC_RTOL; full int8 within INT8_STEPS quantization steps.
FLOAT_RTOL = 1e-3
DYNAMIC_RTOL = 0.05
INT8_STEPS = 2.0


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
    """Output tensor name → its quantization step: its own scale, or for a float output
    that a DEQUANTIZE made, the scale of the tensor it dequantized (per-tensor only)."""
    from tf2ir.parser.tflite_model import read_tflite
    sg = read_tflite(path).subgraphs[0]
    producer = {o: op for op in sg.operators for o in op.outputs}
    scales = {}
    for index in sg.outputs:
        tensor, op = sg.tensors[index], producer.get(index)
        q = tensor.quantization
        if q is None and op is not None and op.op_type == "DEQUANTIZE":
            q = sg.tensors[op.inputs[0]].quantization
        if q is not None and q.scale.size == 1:
            scales[tensor.name] = float(q.scale[0])
    return scales


# -- running -------------------------------------------------------------------------------
def median_ms(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000.0)
    return round(statistics.median(times), 3)


def tflite_inputs(path: str, arrays: Sequence[np.ndarray]) -> Dict[str, np.ndarray]:
    """The test input arrays keyed by the model's input tensor names (subgraph order)."""
    from tf2ir.parser.tflite_model import read_tflite
    sg = read_tflite(path).subgraphs[0]
    names = [sg.tensors[i].name for i in sg.inputs]
    if len(names) != len(arrays):
        raise ValueError(f"{len(arrays)} test inputs for {len(names)} model inputs")
    return dict(zip(names, arrays))


def reference(path: str, feeds: Dict[str, np.ndarray], repeats: int,
              threads: int) -> Tuple[Dict[str, np.ndarray], float]:
    """The interpreter's outputs (by tensor name, in output order) and median latency."""
    from tf2ir.tools.tflite_reference import load_interpreter, run_tflite
    it = load_interpreter(path, num_threads=threads)
    want = run_tflite(path, feeds, interpreter=it)
    return want, median_ms(it.invoke, repeats)


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


def convert(path: str, onnx_path: str, manager) -> float:
    """tf2ir's conversion of `path` to `onnx_path` (Pipeline.convert_file + compile, what
    `tf2ir convert` runs); returns its seconds."""
    from tf2ir.parser.pipeline import Options, Pipeline
    start = time.perf_counter()
    pipeline = Pipeline(manager, Options())
    graph, _ = pipeline.convert_file(path)
    pipeline.compile(graph, onnx_path, model=path)
    return time.perf_counter() - start


def run_row(row: Row, path: str, arrays: Sequence[np.ndarray], work_dir: str, manager,
            repeats: int, threads: int, bounds: Dict[str, float]) -> Tuple[Row, Dict[str, np.ndarray]]:
    """Fill `row` for the .tflite at `path`; returns it and the interpreter's outputs
    (None when the interpreter could not run it)."""
    from tf2ir.ir.errors import ConversionError
    row.op_types = op_types(path)
    row.tflite_ops = sum(row.op_types.values())
    row.missing = missing_ops(list(row.op_types), manager)
    feeds = tflite_inputs(path, arrays)
    try:
        want, row.litert_ms = reference(path, feeds, repeats, threads)
    except Exception as exc:
        row.status, row.error = "run failed", one_line(f"LiteRT interpreter: {exc}")
        return row, None
    onnx_path = os.path.join(work_dir, f"{row.model}.{row.flavour}.onnx")
    try:
        row.convert_s = round(convert(path, onnx_path, manager), 3)
    except ConversionError as exc:
        row.error = one_line(str(exc).replace(f"model {path}, ", "").replace(f"model {path}: ", ""))
        return row, want
    except Exception as exc:       # a tf2ir defect: the row says so, the zoo goes on
        row.error = one_line(f"internal error: {type(exc).__name__}: {exc}")
        return row, want
    row.converted, row.status = True, "run failed"
    try:
        import onnxruntime as ort
        from tf2ir.tools.runtime import InferenceSession
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        session = InferenceSession(onnx_path, sess_options=options, manager=manager)
        names = [o.name for o in session.get_outputs()]
        got = dict(zip(names, session.run(None, feeds)))
        order = [got[n] for n in want] if set(want) <= set(got) else list(got.values())
        row.max_abs_error, row.rel_error, row.steps = compare(want, order, output_scales(path))
        row.ort_ms = median_ms(lambda: session.run(None, feeds), repeats)
    except Exception as exc:
        row.error = one_line(f"{type(exc).__name__}: {exc}")
        return row, want
    finally:
        for p in (onnx_path, onnx_path + ".data"):
            if os.path.exists(p):
                os.remove(p)
    row.status = "ok" if within(row.flavour, row.rel_error, row.steps, bounds) else "mismatch"
    if row.status == "mismatch":
        row.error = (f"{row.steps:.1f} quantization steps from the interpreter" if row.steps is not None
                     and row.flavour == "int8" else f"error {row.rel_error:.2g} x the output's spread")
    return row, want
