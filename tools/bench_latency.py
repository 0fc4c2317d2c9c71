"""The benchmark's latency (tools/bench.py): the converted models in onnxruntime (interleaved,
one thread and all threads), the frozen graph in TensorFlow and OpenVINO's own model, each
measured in a child process on one seeded input; and which optional peers are importable."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

# what to feed a model: a float image batch unless its JSON (tools/bench_models.py) says
DEFAULT_FEED = {"input": "input:0", "shape": None, "dtype": "float32", "high": 1}


def peer_available(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


_ORT_LATENCY_SCRIPT = """
import json, statistics, sys, time
import numpy as np
import onnxruntime as ort
spec = json.loads(sys.argv[1])
result, outputs = {}, {}
x = None
for threads in (1, 0):
    sessions = {}
    for label, path in spec["models"].items():
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        try:
            sessions[label] = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        except Exception as exc:      # a peer's invalid model: time the others
            if label == "tf2ir":
                raise
            print(f"latency: {label}: {str(exc)[:200]}", file=sys.stderr)
    if x is None:   # unknown dims: batch 1, 224 elsewhere (an image's height and width)
        dims = spec["feed"]["shape"] or sessions["tf2ir"].get_inputs()[0].shape
        shape = [d if isinstance(d, int) else 1 if i == 0 else 224 for i, d in enumerate(dims)]
        rng = np.random.RandomState(0)
        if spec["feed"]["dtype"].startswith("float"):
            x = rng.uniform(0, spec["feed"]["high"], shape).astype(spec["feed"]["dtype"])
        else:
            x = rng.randint(0, spec["feed"]["high"], shape).astype(spec["feed"]["dtype"])
        np.save(spec["input"], x)
    feeds = {label: {s.get_inputs()[0].name: x} for label, s in sessions.items()}
    times = {label: [] for label in sessions}
    for label, s in sessions.items():
        for _ in range(3):
            outputs[label] = s.run(None, feeds[label])[0]
    for _ in range(spec["runs"]):
        for label, s in sessions.items():    # interleaved: load changes hit every model alike
            start = time.perf_counter()
            s.run(None, feeds[label])
            times[label].append(time.perf_counter() - start)
    for label in sessions:
        result.setdefault(label, {})["1" if threads == 1 else "all"] = \
            1000 * statistics.median(times[label])
np.save(spec["output"], outputs["tf2ir"])
print(json.dumps(result))
"""

_TF_LATENCY_SCRIPT = """
import json, os, statistics, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf
spec = json.loads(sys.argv[1])
x = np.load(spec["input"])
graph_def = tf.compat.v1.GraphDef()
with open(spec["pb"], "rb") as f:
    graph_def.ParseFromString(f.read())
graph = tf.Graph()
with graph.as_default():
    tf.import_graph_def(graph_def, name="")
result = {}
for threads in (1, 0):
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads,
                                      inter_op_parallelism_threads=threads)
    with tf.compat.v1.Session(graph=graph, config=config) as session:
        feeds = {spec["input_name"]: x}
        for _ in range(3):
            out = session.run(spec["outputs"], feeds)[0]
        times = []
        for _ in range(spec["runs"]):
            start = time.perf_counter()
            session.run(spec["outputs"], feeds)
            times.append(time.perf_counter() - start)
    result["1" if threads == 1 else "all"] = 1000 * statistics.median(times)
np.save(spec["output"], out)
print(json.dumps(result))
"""


_OPENVINO_LATENCY_SCRIPT = """
import json, statistics, sys, time
import numpy as np
import openvino as ov
spec = json.loads(sys.argv[1])
x = np.load(spec["input"])
core = ov.Core()
model = core.read_model(spec["model"])
model.reshape({model.inputs[0].get_any_name(): list(x.shape)})
result = {}
for threads in (1, 0):
    config = {"INFERENCE_NUM_THREADS": threads} if threads else {}
    request = core.compile_model(model, "CPU", config).create_infer_request()
    for _ in range(3):
        request.infer([x])
    times = []
    for _ in range(spec["runs"]):
        start = time.perf_counter()
        request.infer([x])
        times.append(time.perf_counter() - start)
    result["1" if threads == 1 else "all"] = 1000 * statistics.median(times)
print(json.dumps(result))
"""


def openvino_latency(model_xml: str, out_dir: str, runs: int) -> Dict[str, float]:
    """OpenVINO's CPU latency (ms) on the model it converted, on the input the onnxruntime
    child saved; context beside tf2ir's, not interleaved with it."""
    spec = {"input": os.path.join(out_dir, "x.npy"), "model": model_xml, "runs": runs}
    result = subprocess.run([sys.executable, "-c", _OPENVINO_LATENCY_SCRIPT, json.dumps(spec)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        print(f"latency: OpenVINO failed: {result.stderr.strip()[-300:]}", file=sys.stderr)
        return {}
    return json.loads(result.stdout.strip().splitlines()[-1])


def measure_latency(models: Dict[str, str], pb: str, outputs: List[str], out_dir: str,
                    runs: int, feed: Optional[Dict] = None
                    ) -> Tuple[Dict[str, Dict[str, float]], Optional[float]]:
    """Latency (ms) of each ONNX model in onnxruntime and of the frozen graph in TensorFlow
    on one random input (batch 1), each measured in a child process; and the largest
    difference between tf2ir's output and TensorFlow's. The onnxruntime child makes the
    input: the parent never loads a model, so the next conversion child, forked from it,
    does not inherit a large peak RSS."""
    import numpy as np
    x_path, ours_path, tf_path = (os.path.join(out_dir, f) for f in ("x.npy", "ours.npy", "tf.npy"))
    feed = feed or DEFAULT_FEED
    spec = {"input": x_path, "models": models, "runs": runs, "output": ours_path, "feed": feed}
    result = subprocess.run([sys.executable, "-c", _ORT_LATENCY_SCRIPT, json.dumps(spec)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        print(f"latency: onnxruntime failed: {result.stderr.strip()[-300:]}", file=sys.stderr)
        return {}, None
    for line in result.stderr.splitlines():
        if line.startswith("latency:"):
            print(line, file=sys.stderr)
    latency = json.loads(result.stdout.strip().splitlines()[-1])
    if not outputs or not peer_available("tensorflow"):
        return latency, None
    spec = {"input": x_path, "pb": pb, "input_name": feed["input"], "outputs": outputs,
            "runs": runs, "output": tf_path}
    result = subprocess.run([sys.executable, "-c", _TF_LATENCY_SCRIPT, json.dumps(spec)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        print(f"latency: TensorFlow failed: {result.stderr.strip()[-300:]}", file=sys.stderr)
        return latency, None
    latency["tf"] = json.loads(result.stdout.strip().splitlines()[-1])
    return latency, float(np.abs(np.load(ours_path) - np.load(tf_path)).max())
