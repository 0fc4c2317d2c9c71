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
row, never the end of the run; the exit status is 1 if any row is not ok.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional

import numpy as np

from tf2ir.tools.measure import run_measured

DEFAULT_MODEL_DIR = os.path.join(tempfile.gettempdir(), "tf2ir-models")
DEFAULT_RTOL = 0.01       # max abs error allowed, relative to the spread (ptp) of TF's output
DEFAULT_IMAGE_SIZE = 224  # fed for unknown spatial dims
NOISE_FACTOR = 4.0        # an error within this many times TF's own noise is "unstable"
DEFAULT_TIMEOUT = 3600    # seconds for one child step (build + freeze, or a TF run)
REFERENCE_VERSION = 3     # bump when the cached reference's content changes

_CHILD = "import sys; from tf2ir.tools import zoo; sys.exit(zoo.{}(sys.argv[1:]))"


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


# -- discovery (in a child: the parent never imports keras) --------------------------------
def keras_application_names() -> List[str]:
    """Every model constructor keras.applications exports (imports keras)."""
    import keras
    return sorted(name for name in dir(keras.applications)
                  if name[:1].isupper() and callable(getattr(keras.applications, name)))


def _names_child(argv: List[str]) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    print(json.dumps(keras_application_names()))
    return 0


def discover_models(timeout: float = 600) -> List[str]:
    """keras_application_names(), computed in a child process."""
    result = subprocess.run([sys.executable, "-c", _CHILD.format("_names_child")],
                            capture_output=True, text=True, timeout=timeout, env=_child_env())
    if result.returncode != 0:
        raise RuntimeError(f"cannot list keras.applications: {_last_line(result.stderr)}")
    return json.loads(result.stdout.strip().splitlines()[-1])


# -- the TensorFlow side: build, freeze, reference outputs ---------------------------------
def reference_paths(name: str, model_dir: str, batch: int, seed: int) -> Dict[str, str]:
    stem = os.path.join(model_dir, name)
    ref = f"{stem}.ref{REFERENCE_VERSION}-b{batch}-s{seed}"
    return {"pb": stem + ".pb", "npz": ref + ".npz", "json": ref + ".json"}


def _graph_signature(graph_def) -> Dict[str, object]:
    """The single Placeholder (name, shape without batch, -1 where unknown) and the
    tensors to compare: the graph's sinks and, where a sink is a softmax, its logits
    (a saturated softmax hides errors: its output is one-hot)."""
    placeholders = [n for n in graph_def.node if n.op == "Placeholder"]
    if len(placeholders) != 1:
        raise RuntimeError(f"expected one Placeholder, found {len(placeholders)}")
    dims = [d.size for d in placeholders[0].attr["shape"].shape.dim]
    if len(dims) < 2:
        raise RuntimeError(f"input shape {dims}: expected a batch of images")
    consumed = {i.lstrip("^").split(":")[0] for n in graph_def.node for i in n.input}
    sinks = [n.name for n in graph_def.node
             if n.name not in consumed and n.op not in ("Placeholder", "Const", "NoOp")]
    nodes = {n.name: n for n in graph_def.node}
    logits, softmax_of = [], {}
    for index, sink in enumerate(sinks):
        node = nodes[sink]
        while node.op == "Identity" and node.input and node.input[0] in nodes:
            node = nodes[node.input[0]]
        if node.op == "Softmax":
            source = node.input[0]
            softmax_of[index] = len(sinks) + len(logits)
            logits.append(source if ":" in source else source + ":0")
    return {"input": placeholders[0].name, "input_shape": dims[1:],
            "outputs": [f"{s}:0" for s in sinks] + logits, "tf_nodes": len(graph_def.node),
            "softmax_of": softmax_of}


def _freeze_child(argv: List[str]) -> int:
    """Child: build keras.applications NAME (weights=None, randomized batch norms) and
    freeze it to MODEL_DIR/NAME.pb."""
    name, model_dir = argv
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if name not in keras_application_names():
        raise SystemExit(f"{name} is not a keras.applications model")
    from tf2ir.tools import models
    models.freeze_keras_application(name, model_dir)
    return 0


def _reference_child(argv: List[str]) -> int:
    """Child: run TF on the frozen NAME with the seeded input; write the reference
    (.npz: x, out0, ...) and its description (.json)."""
    name, model_dir, batch, seed = argv[0], argv[1], int(argv[2]), int(argv[3])
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from tf2ir.parser.load import load_graph_def
    paths = reference_paths(name, model_dir, batch, seed)
    graph_def = load_graph_def(paths["pb"])
    info = _graph_signature(graph_def)
    del graph_def
    # Models built without a fixed size (MobileNetV3) keep unknown spatial dims in the
    # frozen graph, which the conversion must handle; they are fed DEFAULT_IMAGE_SIZE.
    shape = [batch] + [d if d >= 0 else DEFAULT_IMAGE_SIZE for d in info["input_shape"]]
    x = np.random.RandomState(seed).uniform(0, 1, shape).astype(np.float32)
    # TF's own noise: how far its outputs move when every input value moves by one ulp,
    # and when the samples run one by one (other kernels' blocking: other rounding).
    # Deep models with random weights can be chaotic; no conversion can beat that.
    feeds = [x, np.nextafter(x, np.float32(2))] + ([x[i:i + 1] for i in range(batch)]
                                                    if batch > 1 else [])
    results = _run_tf(paths["pb"], info["input"], feeds, info["outputs"])
    expected, noise = results[0], []
    for i, e in enumerate(expected):
        moved = [results[1][i]]
        if batch > 1:
            moved.append(np.concatenate([r[i] for r in results[2:]]))
        noise.append(max(_max_abs_diff(e, m) for m in moved if np.shape(m) == np.shape(e)))
    info["tf_noise"] = noise
    _save_npz(paths["npz"], x=x, **{f"out{i}": np.asarray(e) for i, e in enumerate(expected)})
    _write_text(paths["json"], json.dumps(info))
    return 0


def _kernel_noise_child(argv: List[str]) -> int:
    """Child, run with TF_ENABLE_ONEDNN_OPTS=0: TF's outputs with its other CPU kernels
    (other blocking, other rounding) on the reference input; their distance from the
    reference joins tf_noise. (EfficientNetV2B2's logits move by 23% of their spread.)"""
    name, model_dir, batch, seed = argv[0], argv[1], int(argv[2]), int(argv[3])
    paths = reference_paths(name, model_dir, batch, seed)
    with open(paths["json"]) as f:
        info = json.load(f)
    with np.load(paths["npz"]) as ref:
        x, expected = ref["x"], [ref[f"out{i}"] for i in range(len(info["outputs"]))]
    # Whole batch and one sample at a time, as _reference_child: EfficientNetV2B2's first
    # sample moves by 55 in a batch of 2 but by 4714 alone (spread 2.1e4).
    feeds = [x] + ([x[i:i + 1] for i in range(len(x))] if len(x) > 1 else [])
    results = _run_tf(paths["pb"], info["input"], feeds, info["outputs"])
    kernel = []
    for i, e in enumerate(expected):
        moved = [results[0][i]] + ([np.concatenate([r[i] for r in results[1:]])]
                                   if len(results) > 1 else [])
        kernel.append(max(_max_abs_diff(e, m) for m in moved if np.shape(m) == np.shape(e)))
    info["tf_kernel_noise"] = kernel
    info["tf_noise"] = [max(n, k) for n, k in zip(info["tf_noise"], kernel)]
    _write_text(paths["json"], json.dumps(info))
    return 0


def _run_tf(pb: str, input_name: str, feeds: List[np.ndarray], outputs: List[str]):
    """TF's outputs for each input array, from one imported graph and session."""
    import tensorflow as tf
    graph_def = tf.compat.v1.GraphDef()
    with open(pb, "rb") as f:
        graph_def.ParseFromString(f.read())
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")
    del graph_def
    with tf.compat.v1.Session(graph=graph) as session:
        return [session.run(outputs, {f"{input_name}:0": x}) for x in feeds]


def _max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def prepare_reference(name: str, model_dir: str, batch: int = 2, seed: int = 0,
                      timeout: float = DEFAULT_TIMEOUT) -> Dict[str, object]:
    """The frozen model and TF's outputs on the seeded input, made in child processes
    unless cached in model_dir (a reference is reused while it is newer than its .pb)."""
    paths = reference_paths(name, model_dir, batch, seed)
    fresh = (os.path.exists(paths["json"]) and os.path.exists(paths["npz"])
             and os.path.exists(paths["pb"])
             and os.path.getmtime(paths["json"]) >= os.path.getmtime(paths["pb"]))
    info: Dict[str, object] = {"tf_peak_mb": None}
    args = [name, model_dir, str(batch), str(seed)]
    # Freezing and running are separate children: the peak is the larger of the two,
    # not their sum (TF keeps much of a big model's build memory until exit).
    steps = [] if fresh else [("_reference_child", args, {})]
    if not os.path.exists(paths["pb"]):
        steps.insert(0, ("_freeze_child", [name, model_dir], {}))
    if not fresh or "tf_kernel_noise" not in _read_json(paths["json"]):
        steps.append(("_kernel_noise_child", args, {"TF_ENABLE_ONEDNN_OPTS": "0"}))
    if steps:
        peaks = []
        for function, args, env in steps:
            code, stderr, peak_mb = run_child(
                [sys.executable, "-c", _CHILD.format(function), *args], timeout, env)
            if code is None:
                what = "building" if function == "_freeze_child" else "running"
                raise RuntimeError(f"{what} {name} in TensorFlow took over {timeout:.0f} s")
            if code != 0:
                raise RuntimeError(_last_line(stderr) or f"exit status {code}")
            peaks.append(peak_mb)
        info["tf_peak_mb"] = round(max(peaks), 1)
    with open(paths["json"]) as f:
        info.update(json.load(f))
    info.update(paths)
    return info


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
def _child_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env.update(extra or {})
    return env


def _read_json(path: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def run_child(cmd: List[str], timeout: float, env: Optional[Dict[str, str]] = None):
    """Run a child process with `env` added to ours: (exit code or None when killed at
    `timeout`, stderr, its peak RSS in MB from os.wait4)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=_child_env(env))
    killed = threading.Event()

    def kill():
        killed.set()
        proc.kill()
    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        stderr = proc.stderr.read().decode(errors="replace")
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
        proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return (None if killed.is_set() else proc.returncode), stderr, usage.ru_maxrss / 1024.0


def _last_line(text: str) -> str:
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _short_error(line: str, pb: str) -> str:
    """The CLI's error line without its prefix and the (long) model path."""
    line = line.removeprefix("tf2ir: error: ")
    for prefix in (f"model {pb}, ", f"model {pb}: "):
        line = line.replace(prefix, "")
    return _one_line(line)


def _write_text(path: str, text: str) -> None:
    from tf2ir.ir.atomic import atomic_output
    with atomic_output(path) as tmp:
        with open(tmp, "w") as f:
            f.write(text)


def _save_npz(path: str, **arrays) -> None:
    from tf2ir.ir.atomic import atomic_output
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as f:      # a file object: np.savez would append .npz to a name
            np.savez(f, **arrays)


def _write_json(path: str, rows: List[ZooRow]) -> None:
    _write_text(path, json.dumps([asdict(r) for r in rows], indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
