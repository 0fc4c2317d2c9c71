"""Every target opset, proven on real models: `python -m tf2ir.tools.opsets [MODELS] [--opsets
13-28]` converts each model at each opset (onnx.checker's full check on the written file), runs
it in onnxruntime where that runtime loads the opset (ir/onnx/kernels.py _runtime_loads),
compares with TensorFlow on one seeded input and prints a table: model x opset -> the largest
absolute error (ok), DIFF and the error (beyond verify's tolerances), "written" (converted and
checked, onnxruntime cannot load that opset) or the conversion's one error line. Past
newest_runnable_opset onnxruntime loads the opset but lacks some op's kernel (the first line
names them): a model without those ops still runs and is compared.

`--conformance` runs the conformance suite (tests/conformance) once per opset instead, through
the harness's TF2IR_CONFORMANCE_OPSET, and counts passed / failed / skipped per opset.

MODELS are names (the bench's: a .pb of that name in --model-dir or --bench-dir, built by
tools/bench.py's ensure_frozen when missing) or .pb paths; a .json beside a .pb (tools/bench.py
feed_spec) gives its input's shape, dtype and the integer bound `high` (token ids)."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, TextIO

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

CNNS = ["ResNet50", "EfficientNetB0", "ConvNeXtTiny", "DenseNet121", "MobileNetV2",
        "MobileNetV3Small"]
TRANSFORMERS = ["BertEncoder", "GPTDecoder", "BertBaseLayer2", "T5Encoder"]
DEFAULT_MODELS = CNNS + TRANSFORMERS
OPSET_ENV = "TF2IR_CONFORMANCE_OPSET"     # read by tests/conformance/harness.py


def parse_opsets(text: str) -> List[int]:
    """'13-28', '13,17,20' or a mix → the opsets, ascending."""
    opsets = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise argparse.ArgumentTypeError(f"{text!r} is not a list of opsets like 13-28,30")
        opsets.update(range(int(lo), int(hi if sep else lo) + 1))
    if not opsets:
        raise argparse.ArgumentTypeError("no opset given")
    return sorted(opsets)


@dataclass
class Cell:
    """One model at one opset."""
    status: str                  # ok | DIFF | written | error
    max_abs: float = 0.0
    line: str = ""
    seconds: float = 0.0

    def text(self) -> str:
        if self.status == "ok":
            return f"ok {self.max_abs:.1e}"
        if self.status == "DIFF":
            return f"DIFF {self.max_abs:.1e}"
        return self.status


@dataclass
class ModelRun:
    name: str
    cells: Dict[int, Cell] = field(default_factory=dict)
    error: str = ""              # the model itself could not be run (TF, inputs)


def model_path(name: str, model_dirs: Sequence[str]) -> str:
    """A .pb path for `name`: the path itself, a .pb of that name in one of `model_dirs`, or
    one tools/bench.py builds into the first."""
    if os.path.exists(name):
        return name
    for directory in model_dirs:
        path = os.path.join(directory, f"{name}.pb")
        if os.path.exists(path):
            return path
    from tf2ir.tools.bench import ensure_frozen
    return ensure_frozen(name, model_dirs[0])[0]


def make_feeds(model, spec: Dict, seed: int = 0) -> Dict[str, np.ndarray]:
    """One seeded array per graph input: floats uniform in [0, high) (an image's range, high
    1 unless the .json says), integers in [0, high) (token ids below the vocabulary);
    unknown dims the .json's shape, else 1 for the first (the batch) and 224 for others."""
    from onnx import helper
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in model.graph.input:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(inp.type.tensor_type.elem_type))
        dims = [d.dim_value if d.HasField("dim_value") else None
                for d in inp.type.tensor_type.shape.dim]
        if spec.get("shape") and len(spec["shape"]) == len(dims):
            dims = [d if d is not None else s for d, s in zip(dims, spec["shape"])]
        shape = tuple(d if d is not None else 1 if i == 0 else 224    # batch 1, an image's
                      for i, d in enumerate(dims))                     # height and width 224
        high = spec.get("high", 1)
        if dtype.kind == "f":
            feeds[inp.name] = rng.uniform(0, high, shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[inp.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            feeds[inp.name] = rng.integers(0, max(int(high), 1), shape).astype(dtype)
    return feeds


def convert_at(pb: str, opset: int, out_path: str):
    """Convert `pb` at `opset` into `out_path` (checked by onnx.checker); the ModelProto."""
    import onnx

    from tf2ir.ir.onnx.compile import compile_to_file
    from tf2ir.parser.pipeline import convert_file
    graph, _ = convert_file(pb)
    compile_to_file(graph, out_path, model_name=pb, opset=opset)
    return onnx.load(out_path)


def run_model(name: str, pb: str, opsets: Sequence[int], loads: Sequence[int], rtol: float,
              atol: float, out: TextIO) -> ModelRun:
    """`name` converted at each of `opsets`, run where onnxruntime can and compared with TF."""
    from tf2ir.ir.errors import ConversionError
    from tf2ir.tools.bench import feed_spec
    from tf2ir.tools.verify import _run_onnx, _run_tf, _tf_graph, _tf_tensor_name, compare
    run = ModelRun(name)
    spec = feed_spec(pb)
    feeds = expected = tf_graph = None
    with tempfile.TemporaryDirectory(prefix="tf2ir-opsets-") as tmp:
        for opset in opsets:
            start = time.perf_counter()
            path = os.path.join(tmp, f"{name}-{opset}.onnx")
            try:
                model = convert_at(pb, opset, path)
            except ConversionError as exc:
                run.cells[opset] = Cell("error", line=str(exc).splitlines()[0])
                _progress(out, name, opset, run.cells[opset])
                continue
            os.remove(path)
            names = [o.name for o in model.graph.output]
            if feeds is None:
                feeds = make_feeds(model, spec)
                tf_graph = _tf_graph(pb)
                expected = _run_tf(tf_graph, feeds, [_tf_tensor_name(n) for n in names])
            if opset not in loads:
                cell = Cell("written")
            else:
                try:
                    actual = _run_onnx(model, feeds, names)
                except Exception as exc:     # the runtime's refusal is the finding
                    cell = Cell("error", line=f"onnxruntime: {str(exc).splitlines()[0][:200]}")
                else:
                    rows = [compare(n, a, e, rtol, atol)
                            for n, a, e in zip(names, actual, expected)]
                    worst = max(r.max_abs for r in rows)
                    cell = Cell("ok" if all(r.ok for r in rows) else "DIFF", worst)
            cell.seconds = time.perf_counter() - start
            run.cells[opset] = cell
            _progress(out, name, opset, cell)
    return run


def _progress(out: TextIO, name: str, opset: int, cell: Cell) -> None:
    extra = f"  {cell.line}" if cell.line else ""
    print(f"  {name} opset {opset}: {cell.text()} ({cell.seconds:.1f} s){extra}", file=out,
          flush=True)


def print_table(runs: List[ModelRun], opsets: Sequence[int], out: TextIO) -> None:
    width = max([len(r.name) for r in runs] + [5])
    print(f"{'MODEL':<{width}}  " + "  ".join(f"{o:>10}" for o in opsets), file=out)
    for run in runs:
        cells = [run.cells[o].text() if o in run.cells else "-" for o in opsets]
        print(f"{run.name:<{width}}  " + "  ".join(f"{c:>10}" for c in cells), file=out)
    lines = sorted({(r.name, c.line) for r in runs for c in r.cells.values() if c.line})
    for name, line in lines:
        print(f"{name}: {line}", file=out)


# -- the conformance suite per opset ------------------------------------------------------------
_SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


def run_conformance(opsets: Sequence[int], pytest_args: Sequence[str], out: TextIO) -> int:
    """The conformance suite (or `pytest_args`' selection of it) once per opset: counts and
    the failing cases' ids. 0 when every run passed."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    targets = list(pytest_args) or [os.path.join(root, "tests", "conformance")]
    worst = 0
    rows = []
    for opset in opsets:
        env = dict(os.environ, **{OPSET_ENV: str(opset)})
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "-rf", *targets], cwd=root, env=env, capture_output=True,
                              text=True)
        counts = {kind.rstrip("s"): int(n) for n, kind in
                  _SUMMARY.findall(proc.stdout.strip().splitlines()[-1] if proc.stdout else "")}
        failed = [line[len("FAILED "):] for line in proc.stdout.splitlines()
                  if line.startswith("FAILED ")]
        rows.append((opset, counts, time.perf_counter() - start))
        print(f"  opset {opset}: " + ", ".join(f"{n} {k}" for k, n in counts.items())
              + f" ({rows[-1][2]:.0f} s)", file=out, flush=True)
        for line in failed:
            print(f"    FAILED {line}", file=out)
        if proc.returncode not in (0, 5):
            worst = 1
    print(f"{'OPSET':>5}  {'PASSED':>6}  {'FAILED':>6}  {'ERROR':>5}  {'SKIPPED':>7}", file=out)
    for opset, counts, _ in rows:
        print(f"{opset:>5}  {counts.get('passed', 0):>6}  {counts.get('failed', 0):>6}  "
              f"{counts.get('error', 0):>5}  {counts.get('skipped', 0):>7}", file=out)
    return worst


def main(argv: Optional[List[str]] = None, out: TextIO = sys.stdout) -> int:
    from tf2ir.ir.onnx.forms import OLDEST_OPSET, newest_runnable_opset
    from onnx import defs
    newest = defs.onnx_opset_version()
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.opsets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", help="bench names or .pb paths (default: the "
                        "bench's CNNs and transformers)")
    parser.add_argument("--opsets", type=parse_opsets, default=list(range(OLDEST_OPSET, newest + 1)),
                        help=f"e.g. 13-{newest} (default) or 13,17,20")
    parser.add_argument("--model-dir", default="/tmp/models")
    parser.add_argument("--bench-dir", default="/tmp/benchmodels")
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--conformance", action="store_true",
                        help="run the conformance suite at each opset instead")
    parser.add_argument("--pytest", nargs="*", default=[], metavar="ARG",
                        help="with --conformance: the test files or pytest arguments to run")
    args = parser.parse_args(argv)
    bad = [o for o in args.opsets if not OLDEST_OPSET <= o <= newest]
    if bad:
        parser.error(f"opset {bad[0]} is not one tf2ir writes: choose {OLDEST_OPSET} to {newest}")
    from tf2ir.ir.onnx.kernels import _kernel_gaps, _runtime_loads
    runnable = newest_runnable_opset()
    loads = [o for o in args.opsets if _runtime_loads(o)]
    gaps = sorted({g for o in args.opsets if o > runnable and o in loads for g in _kernel_gaps(o)})
    print(f"opsets {', '.join(map(str, args.opsets))}; onnxruntime loads "
          f"{', '.join(map(str, loads)) or 'none of them'} and has a kernel for every op up to "
          f"{runnable}" + (f" (not {', '.join(gaps)})" if gaps else ""), file=out, flush=True)
    if args.conformance:
        return run_conformance(args.opsets, args.pytest, out)
    runs = []
    for name in args.models or DEFAULT_MODELS:
        label = os.path.splitext(os.path.basename(name))[0]
        try:
            pb = model_path(name, [args.model_dir, args.bench_dir])
            runs.append(run_model(label, pb, args.opsets, loads, args.rtol, args.atol, out))
        except Exception as exc:          # a model that cannot be built or run in TF
            run = ModelRun(label, error=str(exc).splitlines()[0] if str(exc) else repr(exc))
            print(f"  {label}: {run.error}", file=out, flush=True)
            runs.append(run)
    print_table(runs, args.opsets, out)
    failed = [r for r in runs if r.error or any(c.status in ("DIFF", "error")
                                                for c in r.cells.values())]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
