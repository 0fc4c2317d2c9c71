"""The keras.applications model zoo: build, freeze, convert and verify every model.

    python -m tf2ir.tools.zoo                          # every keras.applications model
    python -m tf2ir.tools.zoo MobileNetV3Small DenseNet121 --json zoo.json -j 2

Each model is built with weights=None (nothing is downloaded), its batch-norm statistics
randomized (tools.models) and frozen once into --model-dir; TensorFlow runs it on a seeded
random input; the `tf2ir` command line converts it in a child process (wall time and the
child's peak RSS via os.wait4, as in tools.bench); onnxruntime runs the result; one row per
model compares the two. Every TensorFlow and onnxruntime step runs in a child process, so
the parent stays small (a child inherits its parent's peak RSS) and a big model's memory is
released before the next one. One model's failure (build, conversion, run, mismatch) is a
row, never the end of the run; the exit status is 1 if any row is not ok. The TensorFlow side
(listing, building, freezing, references, child processes) is tools/zoo_reference.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional

import numpy as np

from tf2ir.tools.measure import run_measured
# The TensorFlow side and the child helpers; the children run as zoo.<function> (_CHILD).
from tf2ir.tools.zoo_reference import (  # noqa: F401
    _CHILD, DEFAULT_IMAGE_SIZE, DEFAULT_TIMEOUT, REFERENCE_VERSION, _child_env, _freeze_child,
    _graph_signature, _kernel_noise_child, _last_line, _max_abs_diff, _names_child, _read_json,
    _reference_child, _run_tf, _save_npz, _write_text, discover_models, keras_application_names,
    prepare_reference, reference_paths, run_child)

DEFAULT_MODEL_DIR = os.path.join(tempfile.gettempdir(), "tf2ir-models")
DEFAULT_RTOL = 0.01       # max abs error allowed, relative to the spread (ptp) of TF's output
NOISE_FACTOR = 4.0        # an error within this many times TF's own noise is "unstable"


@dataclass
class ZooRow:
    """One model's result; `status` is ok, unstable (the difference is TF's own numerical
    noise, see OutputCheck), mismatch, build failed, convert failed or run failed."""
    model: str
    status: str
    tf_nodes: int = 0
    converted: bool = False
    max_abs_error: Optional[float] = None   # of the model's output
    spread: Optional[float] = None          # max - min of TF's output
    tolerance: Optional[float] = None
    max_rel_error: Optional[float] = None   # max over compared tensors of error / spread
    convert_s: Optional[float] = None
    peak_mb: Optional[float] = None         # the conversion child's peak RSS
    tf_peak_mb: Optional[float] = None      # the TF children's (freeze, run); None if cached
    error: str = ""
    checks: Optional[List[dict]] = None     # an OutputCheck per compared tensor

    @property
    def ok(self) -> bool:
        """Converted and matching TF as far as TF itself is reproducible."""
        return self.status in ("ok", "unstable")


# -- the converted side -----------------------------------------------------------------------
def _onnx_child(argv: List[str]) -> int:
    """Child: run ONNX model argv[0] on x of reference argv[1]; write outputs to argv[2]."""
    import onnxruntime as ort
    onnx_path, ref_path, got_path = argv
    with np.load(ref_path) as ref:
        x = ref["x"]
    session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    outputs = session.run(None, {session.get_inputs()[0].name: x})
    _save_npz(got_path, **{f"out{i}": np.asarray(o) for i, o in enumerate(outputs)})
    return 0


@dataclass
class OutputCheck:
    """One compared tensor: the error against TF, TF's spread (max - min) and TF's own
    noise; verdict ok (error <= rtol x spread), unstable (above that tolerance but within
    NOISE_FACTOR x TF's own noise) or mismatch."""
    tensor: str
    max_abs_error: float
    spread: float
    tf_noise: float
    tolerance: float
    verdict: str
    note: str = ""


def judge(tensor: str, expected: np.ndarray, got: np.ndarray, tf_noise: float,
          rtol: float) -> OutputCheck:
    """Compare one output with TF's; raises ValueError on a shape mismatch. The tolerance
    is relative to the spread of TF's output, so a broken conversion cannot hide behind
    small absolute numbers."""
    if expected.shape != got.shape:
        raise ValueError(f"{tensor} shape {got.shape}, TensorFlow {expected.shape}")
    error = _max_abs_diff(expected, got)
    spread = float(np.ptp(expected)) if expected.size else 0.0
    tolerance = rtol * spread
    if error <= tolerance:
        verdict = "ok"
    elif error <= NOISE_FACTOR * tf_noise:
        # TF itself moves by tf_noise under a 1-ulp input change; a deep net with random
        # batch norms amplifies any reordering of float ops as much (EfficientNetB4: TF
        # noise 0.6% of the spread, tf2ir 1.5%, and 0.7% with onnxruntime's fusions off).
        verdict = "unstable"
    else:
        verdict = "mismatch"
    return OutputCheck(tensor, error, spread, tf_noise, tolerance, verdict)


def _verdict_message(check: OutputCheck, rtol: float) -> str:
    if check.note:
        return f"{check.tensor}: {check.note}"
    if check.verdict == "mismatch":
        return (f"{check.tensor}: max abs error {check.max_abs_error:.3g} > {rtol:g} x spread "
                f"{check.spread:.3g}")
    return (f"{check.tensor}: error {check.max_abs_error:.3g} (spread {check.spread:.3g}) is "
            f"TF's own noise: TF moves by {check.tf_noise:.3g} (1-ulp input change, one sample "
            "at a time, or its other CPU kernels)")


def run_model(name: str, model_dir: str, work_dir: str, batch: int = 2, seed: int = 0,
              rtol: float = DEFAULT_RTOL, timeout: float = DEFAULT_TIMEOUT) -> ZooRow:
    """Build (cached), convert, run and compare one keras.applications model; every
    failure becomes the row's status and one-line error."""
    try:
        info = prepare_reference(name, model_dir, batch, seed, timeout)
    except Exception as exc:   # anything: a row, never the end of the zoo
        return ZooRow(name, "build failed", error=_one_line(str(exc)))
    row = ZooRow(name, "convert failed", tf_nodes=info["tf_nodes"], tf_peak_mb=info["tf_peak_mb"])
    onnx_path = os.path.join(work_dir, f"{name}.onnx")
    got_path = os.path.join(work_dir, f"{name}.got.npz")
    try:
        measure = run_measured([sys.executable, "-m", "tf2ir.tools.cli", "convert", info["pb"],
                                "-o", onnx_path, "-q", "--outputs", ",".join(info["outputs"])])
        row.convert_s, row.peak_mb = round(measure.seconds, 2), round(measure.peak_mb, 1)
        if not measure.ok:
            row.error = _short_error(measure.error, info["pb"])
            return row
        row.converted, row.status = True, "run failed"
        cmd = [sys.executable, "-c", _CHILD.format("_onnx_child"), onnx_path, info["npz"], got_path]
        code, stderr, _ = run_child(cmd, timeout)
        if code is None:
            row.error = f"onnxruntime took over {timeout:.0f} s"
            return row
        if code != 0:
            row.error = _one_line(_last_line(stderr) or f"exit status {code}")
            return row
        with np.load(info["npz"]) as ref, np.load(got_path) as out:
            expected = [ref[f"out{i}"] for i in range(len(ref.files) - 1)]
            got = [out[f"out{i}"] for i in range(len(out.files))]
        if len(got) != len(expected):
            row.status, row.error = "mismatch", f"{len(got)} outputs, TF has {len(expected)}"
            return row
        try:
            checks = [judge(t, e, g, n, rtol) for t, e, g, n
                      in zip(info["outputs"], expected, got, info["tf_noise"])]
        except ValueError as exc:
            row.status, row.error = "mismatch", str(exc)
            return row
        for softmax, logits in info.get("softmax_of", {}).items():
            # A softmax of chaotic logits cannot be judged (saturated: one-hot, any argmax).
            check = checks[int(softmax)]
            if check.verdict == "mismatch" and checks[logits].verdict == "unstable":
                check.verdict, check.note = "unstable", "softmax of the unstable logits"
        row.checks = [asdict(c) for c in checks]
        row.max_abs_error, row.spread, row.tolerance = (
            checks[0].max_abs_error, checks[0].spread, checks[0].tolerance)
        row.max_rel_error = max(c.max_abs_error / c.spread if c.spread else
                                float(c.max_abs_error > 0) for c in checks)
        for verdict in ("mismatch", "unstable"):
            bad = [c for c in checks if c.verdict == verdict]
            if bad:
                row.status, row.error = verdict, "; ".join(_verdict_message(c, rtol) for c in bad)
                return row
        row.status = "ok"
        return row
    finally:
        for path in (onnx_path, onnx_path + ".data", got_path):
            if os.path.exists(path):
                os.remove(path)


# -- output ---------------------------------------------------------------------------------
def format_table(rows: List[ZooRow]) -> str:
    width = max([len(r.model) for r in rows] + [5])
    lines = [f"{'model':<{width}} {'TF nodes':>8} {'converted':>9} {'max abs err':>11} "
             f"{'rel err':>8} {'convert s':>9} {'peak MB':>8}  status"]
    for r in rows:
        error = "-" if r.max_abs_error is None else f"{r.max_abs_error:.2e}"
        rel = "-" if r.max_rel_error is None else f"{r.max_rel_error:.0e}"
        seconds = "-" if r.convert_s is None else f"{r.convert_s:.1f}"
        peak = "-" if r.peak_mb is None else f"{r.peak_mb:.0f}"
        status = r.status + (f": {r.error}" if r.error else "")
        lines.append(f"{r.model:<{width}} {r.tf_nodes:>8} {'yes' if r.converted else 'no':>9} "
                     f"{error:>11} {rel:>8} {seconds:>9} {peak:>8}  {status}")
    ok, unstable = sum(r.ok for r in rows), sum(r.status == "unstable" for r in rows)
    lines.append(f"{ok}/{len(rows)} models convert and match TensorFlow"
                 + (f" ({unstable} within TF's own numerical noise only)" if unstable else ""))
    lines.append("max abs err: of the model's output; rel err: max over the output and its "
                 "logits of error / (max - min of TF's values)")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.zoo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAMES",
                        help="keras.applications model names (default: all of them)")
    parser.add_argument("--model-dir", default=DEFAULT_MODEL_DIR,
                        help="cache of frozen models and TF references (default: %(default)s)")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--batch", type=int, default=2, help="input batch size (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random input (default 0)")
    parser.add_argument("--rtol", type=float, default=DEFAULT_RTOL,
                        help="allowed max abs error relative to the output's spread "
                             "(default %(default)s)")
    parser.add_argument("-j", "--jobs", type=int, default=1,
                        help="models in parallel (timings and peaks then share the machine)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds for one TF or onnxruntime child step (default %(default)s)")
    args = parser.parse_args(argv)
    if args.batch < 1 or args.jobs < 1:
        parser.error("--batch and -j must be at least 1")
    os.makedirs(args.model_dir, exist_ok=True)
    names = args.names
    if not names:
        names = discover_models()
    rows: Dict[str, ZooRow] = {}
    with tempfile.TemporaryDirectory(prefix="tf2ir-zoo-") as work_dir:
        def one(name):
            row = run_model(name, args.model_dir, work_dir, args.batch, args.seed, args.rtol,
                            args.timeout)
            rows[name] = row
            print(f"[{len(rows)}/{len(names)}] {name}: {row.status}"
                  + (f": {row.error}" if row.error else ""), file=sys.stderr, flush=True)
            if args.json:   # partial results survive an interrupted run
                _write_json(args.json, [rows[n] for n in names if n in rows])
            return row
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            ordered = list(pool.map(one, names))
    print(format_table(ordered))
    if args.json:
        _write_json(args.json, ordered)
    return 0 if all(r.ok for r in ordered) else 1


# -- small helpers --------------------------------------------------------------------------
def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _short_error(line: str, pb: str) -> str:
    """The CLI's error line without its prefix and the (long) model path."""
    line = line.removeprefix("tf2ir: error: ")
    for prefix in (f"model {pb}, ", f"model {pb}: "):
        line = line.replace(prefix, "")
    return _one_line(line)


def _write_json(path: str, rows: List[ZooRow]) -> None:
    _write_text(path, json.dumps([asdict(r) for r in rows], indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
