"""The zoo's TensorFlow side (tools/zoo.py): keras.applications listed, each model built and
frozen once, TensorFlow's outputs on a seeded input and TensorFlow's own noise (a 1-ulp input
change, one sample at a time, its other CPU kernels), each in a child process and cached in
the model folder; and the child processes' helpers (run_child: exit code, stderr, peak RSS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import Dict, List, Optional

import numpy as np

DEFAULT_IMAGE_SIZE = 224  # fed for unknown spatial dims
DEFAULT_TIMEOUT = 3600    # seconds for one child step (build + freeze, or a TF run)
REFERENCE_VERSION = 3     # bump when the cached reference's content changes

# A child runs one of these functions by its name in tools/zoo.py (which imports them all).
_CHILD = "import sys; from tf2ir.tools import zoo; sys.exit(zoo.{}(sys.argv[1:]))"


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


# -- child processes and files ---------------------------------------------------------------
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
