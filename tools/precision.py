"""Measure half precision: for each model, the error against TensorFlow, the file size and the
1-thread onnxruntime latency of the float32 conversion, `--weights fp16` and `--precision fp16`.

    python -m tf2ir.tools.precision [MODELS] [--runs N] [--keep OPS] [--out DIR]

MODELS are .pb paths or bench names (looked up in /tmp/models and /tmp/benchmodels; default:
the bench's CNNs and transformers); a .json beside a .pb gives its feed (tools/bench.py's
feed_spec: input, outputs, shape, dtype, high), else one float32 image in [0, 1). The error is
the largest absolute difference from TensorFlow's output, and that divided by the largest
absolute value of TensorFlow's output ("rel"). `--keep` replaces the op types that stay float32
under fp16 (comma-separated; "none" for none): how ir/onnx/precision.py's list was measured.
`--accumulation` prints instead what a float16 accumulator loses on a runtime whose kernels sum
in float16 (onnxruntime's CPU provider computes most float16 ops in float32 between its own
Casts, so the models' errors do not show it): the mean of x and of x^2 (x standard normal) over
the element counts of a pooled 7x7 map, a transformer's hidden and inner widths, and a 224x224
image."""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from typing import Dict, List, Optional

import numpy as np

from tf2ir.ir.export import ExportOptions
from tf2ir.tools.bench import feed_spec
from tf2ir.tools.models import run_frozen_graph

MODEL_DIRS = ("/tmp/models", "/tmp/benchmodels")
DEFAULT_MODELS = ("ResNet50", "EfficientNetB0", "ConvNeXtTiny", "DenseNet121", "MobileNetV2",
                  "MobileNetV3Small", "BertEncoder", "GPTDecoder", "BertBaseLayer2", "T5Encoder")
VARIANTS = {"fp32": ExportOptions(), "weights fp16": ExportOptions(weights="fp16"),
            "fp16": ExportOptions(precision="fp16")}


def model_path(name: str) -> str:
    """A .pb path for `name` (tools/opsets.py's rule: built by tools/bench.py when missing)."""
    from tf2ir.tools.opsets import model_path as find
    return find(name, MODEL_DIRS)


def make_feed(pb: str, spec: Dict) -> Dict[str, np.ndarray]:
    from tf2ir.parser.load import load_graph_def
    name = spec.get("input", "input:0")
    shape = spec.get("shape")
    if shape is None:
        node = next(n for n in load_graph_def(pb).node if n.name == name.split(":")[0])
        dims = [d.size for d in node.attr["shape"].shape.dim]
        shape = [d if d > 0 else 1 if i == 0 else 224 for i, d in enumerate(dims)]
    rng = np.random.RandomState(0)
    dtype = spec.get("dtype", "float32")
    if dtype.startswith("float"):
        return {name: rng.uniform(0, spec.get("high", 1), shape).astype(dtype)}
    return {name: rng.randint(0, spec.get("high", 2), shape).astype(dtype)}


def convert(pb: str, out: str, export: ExportOptions, keep=None) -> None:
    from tf2ir.ir.onnx import compile as compile_module
    from tf2ir.ir.onnx.precision import apply_precision
    from tf2ir.parser.pipeline import Options, Pipeline
    pipeline = Pipeline(options=Options(export=export))
    graph, _ = pipeline.convert_file(pb)
    saved = compile_module.apply_precision
    if keep is not None:
        compile_module.apply_precision = functools.partial(apply_precision, keep=keep)
    try:
        pipeline.compile(graph, out, model=os.path.basename(pb))
    finally:
        compile_module.apply_precision = saved


def run_onnx(path: str, feed: Dict[str, np.ndarray], runs: int):
    """(first output, median 1-thread latency in ms)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feeds = {i.name: feed.get(i.name, feed.get(f"{i.name}:0", next(iter(feed.values()))))
             for i in session.get_inputs()}
    for _ in range(3):        # warm-up: the first runs allocate
        out = session.run(None, feeds)[0]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - start)
    return np.asarray(out), 1000 * statistics.median(times)


def file_bytes(path: str) -> int:
    data = path + ".data"
    return os.path.getsize(path) + (os.path.getsize(data) if os.path.exists(data) else 0)


def measure(name: str, out_dir: str, runs: int, keep=None) -> List[Dict]:
    pb = model_path(name)
    spec = feed_spec(pb)
    feed = make_feed(pb, spec)
    ref = np.asarray(run_frozen_graph(pb, feed, spec.get("outputs", ["Identity:0"])[:1])[0],
                     np.float64)
    scale = float(np.abs(ref).max()) or 1.0
    rows = []
    for label, export in VARIANTS.items():
        out = os.path.join(out_dir, f"{os.path.splitext(os.path.basename(pb))[0]}."
                           f"{label.replace(' ', '_')}.onnx")
        convert(pb, out, export, keep)
        got, latency = run_onnx(out, feed, runs)
        err = float(np.abs(got.astype(np.float64) - ref).max())
        rows.append({"model": os.path.splitext(os.path.basename(pb))[0], "variant": label,
                     "abs": err, "rel": err / scale, "bytes": file_bytes(out), "ms": latency})
    return rows


def accumulation(out=sys.stdout) -> None:
    rng = np.random.default_rng(0)
    print(f"{'elements':>8} {'mean of':>8} {'fp16 sum rel err':>16}", file=out)
    for n in (49, 768, 3072, 50176):
        x = rng.standard_normal(n).astype(np.float32)
        for what, v in (("x", x), ("x^2", x * x)):
            want = v.astype(np.float64).mean()
            got = float(np.cumsum(v.astype(np.float16), dtype=np.float16)[-1]) / n
            print(f"{n:>8} {what:>8} {abs(got - want) / abs(want):>16.2e}", file=out)


def print_table(rows: List[Dict], out=sys.stdout) -> None:
    print(f"{'model':<17} {'variant':<13} {'max abs err':>11} {'rel':>9} {'MB':>9} "
          f"{'1-thread ms':>11}", file=out)
    for r in rows:
        print(f"{r['model']:<17} {r['variant']:<13} {r['abs']:>11.3e} {r['rel']:>9.2e} "
              f"{r['bytes'] / 1e6:>9.3f} {r['ms']:>11.2f}", file=out)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.precision",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=list(DEFAULT_MODELS))
    parser.add_argument("--runs", type=int, default=20, help="timed runs per model (median)")
    parser.add_argument("--keep", help="op types kept float32 under fp16 (comma-separated, "
                        "'none'); default: ir/onnx/precision.py's KEEP_FP32")
    parser.add_argument("--out", help="folder for the converted models (default: a temporary "
                        "one, removed)")
    parser.add_argument("--accumulation", action="store_true",
                        help="print the error of float16 accumulation instead")
    args = parser.parse_args(argv)
    if args.accumulation:
        accumulation()
        return 0
    keep = None
    if args.keep is not None:
        keep = frozenset() if args.keep == "none" else frozenset(
            w.strip() for w in args.keep.split(",") if w.strip())
    rows: List[Dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = args.out or tmp
        os.makedirs(out_dir, exist_ok=True)
        for name in args.models:
            rows += measure(name, out_dir, args.runs, keep)
            print_table(rows[-len(VARIANTS):], sys.stderr)
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
