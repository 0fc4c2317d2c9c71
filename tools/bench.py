"""Benchmark: converts frozen models with the `tf2ir` command line, each as a whole child
process, and prints per model the wall time (and, as "checker s", the part of it that
onnx.checker's full check of the written model takes), peak memory and node counts; then
the latency of the converted models in onnxruntime (and of TensorFlow running the frozen
graph).

    python -m tf2ir.tools.bench                       # every keras.applications model (hours)
    python -m tf2ir.tools.bench ResNet50 MobileNetV2 EfficientNetB0
    python -m tf2ir.tools.bench ResNet50 --repeat 5
    python -m tf2ir.tools.bench path/to/frozen.pb
    python -m tf2ir.tools.bench ResNet50 --passes off:all     # tf2ir without its ONNX passes
    python -m tf2ir.tools.bench --generate 100000 --no-latency  # a generated 100,000-node graph
    python -m tf2ir.tools.bench --generate chain:20000 --generate wide:200000 --no-latency

Models named by keras.applications name are frozen once (weights=None) into --model-dir.
If tf2onnx is importable (e.g. PYTHONPATH=/tmp/t2o-site), it converts the same frozen graphs
in the same run (--no-peer to skip). Latency: the median of --runs runs after warm-up, the
models' runs interleaved, with intra_op_num_threads=1 and with all threads; the tf2ir/tf2onnx
ratio per model and their geometric mean. TensorFlow is imported in a child process only.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field

from tf2ir.tools.measure import Measure, run_measured
from typing import Dict, List, Optional, Tuple


@dataclass
class Row:
    model: str
    pb_mb: float
    tf_nodes: int
    ir_nodes: int
    onnx_nodes: int
    tf2ir: Measure
    peer: Optional[Measure] = None
    # latency in ms: {"tf2ir": {"1": ms, "all": ms}, "tf2onnx": {...}, "tf": {...}}
    latency: Dict[str, Dict[str, float]] = field(default_factory=dict)
    max_error: Optional[float] = None     # tf2ir's output against TensorFlow's
    checker_s: Optional[float] = None     # onnx.checker's full check of the written model


def best_of(cmd: List[str], repeat: int) -> Measure:
    runs = [run_measured(cmd) for _ in range(repeat)]
    failed = [r for r in runs if not r.ok]
    if failed:
        return failed[0]
    return Measure(statistics.median(r.seconds for r in runs), max(r.peak_mb for r in runs), True)


def ensure_frozen(name: str, model_dir: str) -> Tuple[str, List[str]]:
    """A path to a frozen .pb for a keras.applications name (built once) or a given file."""
    if os.path.exists(name):
        return name, []
    path = os.path.join(model_dir, f"{name}.pb")
    if not os.path.exists(path):
        subprocess.run([sys.executable, "-m", "tf2ir.tools.models", name, "-o", model_dir],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path, ["Identity:0"]


_COUNT_SCRIPT = """
import json, os, sys, time
import onnx
from tf2ir.parser.pipeline import convert_file
from tf2ir.parser.load import load_graph_def
pb, out = sys.argv[1:]
graph, _ = convert_file(pb)
onnx_nodes = len(onnx.load(out, load_external_data=False).graph.node) if os.path.exists(out) else 0
checks = []
for _ in range(3):   # what convert spends in onnx.checker before its rename (the median of 3)
    start = time.perf_counter()
    onnx.checker.check_model(out, full_check=True)
    checks.append(time.perf_counter() - start)
print(json.dumps([len(load_graph_def(pb).node), len(graph.nodes), onnx_nodes, sorted(checks)[1]]))
"""


def node_counts(pb: str, onnx_path: str) -> Tuple[int, int, int, float]:
    """TF, IR and ONNX node counts and the seconds onnx.checker's full check of the model
    takes (part of the conversion time), computed in a child process: a fork of a large
    parent would inherit its peak RSS and spoil the next measurement."""
    result = subprocess.run([sys.executable, "-c", _COUNT_SCRIPT, pb, onnx_path],
                            capture_output=True, text=True, check=True)
    tf_nodes, ir_nodes, onnx_nodes, checker_s = json.loads(result.stdout)
    return tf_nodes, ir_nodes, onnx_nodes, checker_s


def bench_model(name: str, model_dir: str, out_dir: str, repeat: int, peer: bool,
                passes: List[str], runs: int = 0) -> Row:
    pb, outputs = ensure_frozen(name, model_dir)
    label = os.path.splitext(os.path.basename(pb))[0]
    out = os.path.join(out_dir, f"{label}.onnx")
    switches = [f"--passes={p}" for p in passes]
    ours = best_of([sys.executable, "-m", "tf2ir.tools.cli", "convert", pb, "-o", out] + switches,
                   repeat)
    tf_nodes, ir_nodes, onnx_nodes, checker_s = node_counts(pb, out) if ours.ok else (0, 0, 0, None)
    row = Row(label, os.path.getsize(pb) / 1e6, tf_nodes, ir_nodes, onnx_nodes, ours,
              checker_s=checker_s)
    peer_out = os.path.join(out_dir, f"{label}.tf2onnx.onnx")
    if peer and outputs:
        row.peer = best_of([sys.executable, "-m", "tf2onnx.convert", "--graphdef", pb,
                            "--inputs", "input:0", "--outputs", ",".join(outputs),
                            "--opset", "18", "--output", peer_out], 1)
    if runs and ours.ok:
        models = {"tf2ir": out}
        if row.peer is not None and row.peer.ok:
            models["tf2onnx"] = peer_out
        row.latency, row.max_error = measure_latency(models, pb, outputs, out_dir, runs)
    return row


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
        dims = sessions["tf2ir"].get_inputs()[0].shape
        shape = [d if isinstance(d, int) else 1 if i == 0 else 224 for i, d in enumerate(dims)]
        x = np.random.RandomState(0).uniform(0, 1, shape).astype(np.float32)
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


def measure_latency(models: Dict[str, str], pb: str, outputs: List[str], out_dir: str,
                    runs: int) -> Tuple[Dict[str, Dict[str, float]], Optional[float]]:
    """Latency (ms) of each ONNX model in onnxruntime and of the frozen graph in TensorFlow
    on one random input (batch 1), each measured in a child process; and the largest
    difference between tf2ir's output and TensorFlow's. The onnxruntime child makes the
    input: the parent never loads a model, so the next conversion child, forked from it,
    does not inherit a large peak RSS."""
    import numpy as np
    x_path, ours_path, tf_path = (os.path.join(out_dir, f) for f in ("x.npy", "ours.npy", "tf.npy"))
    spec = {"input": x_path, "models": models, "runs": runs, "output": ours_path}
    result = subprocess.run([sys.executable, "-c", _ORT_LATENCY_SCRIPT, json.dumps(spec)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        print(f"latency: onnxruntime failed: {result.stderr.strip()[-300:]}", file=sys.stderr)
        return {}, None
    for line in result.stderr.splitlines():
        if line.startswith("latency:"):
            print(line, file=sys.stderr)
    latency = json.loads(result.stdout.strip().splitlines()[-1])
    if not outputs or importlib.util.find_spec("tensorflow") is None:
        return latency, None
    spec = {"input": x_path, "pb": pb, "input_name": "input:0", "outputs": outputs,
            "runs": runs, "output": tf_path}
    result = subprocess.run([sys.executable, "-c", _TF_LATENCY_SCRIPT, json.dumps(spec)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        print(f"latency: TensorFlow failed: {result.stderr.strip()[-300:]}", file=sys.stderr)
        return latency, None
    latency["tf"] = json.loads(result.stdout.strip().splitlines()[-1])
    return latency, float(np.abs(np.load(ours_path) - np.load(tf_path)).max())


def geometric_mean(values: List[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def print_latency_table(rows: List[Row]) -> None:
    timed = [r for r in rows if r.latency]
    if not timed:
        return
    print()
    print(f"{'latency ms':<16} {'tf2ir 1t':>9} {'tf2onnx 1t':>10} {'ratio':>6} {'tf2ir all':>9} "
          f"{'tf2onnx all':>11} {'ratio':>6} {'TF 1t':>8} {'TF all':>8} {'max|tf2ir-TF|':>14}")
    ratios: Dict[str, List[float]] = {"1": [], "all": []}

    def cell(value, width, fmt=".1f"):
        return f"{value:>{width}{fmt}}" if value is not None else f"{'-':>{width}}"
    for r in timed:
        ours, peer, tf = (r.latency.get(k, {}) for k in ("tf2ir", "tf2onnx", "tf"))
        line = f"{r.model:<16}"
        for threads, widths in (("1", (9, 10)), ("all", (9, 11))):
            ratio = ours[threads] / peer[threads] if threads in peer else None
            if ratio is not None:
                ratios[threads].append(ratio)
            line += (f" {cell(ours.get(threads), widths[0])} {cell(peer.get(threads), widths[1])}"
                     f" {cell(ratio, 6, '.3f')}")
        line += f" {cell(tf.get('1'), 8)} {cell(tf.get('all'), 8)} {cell(r.max_error, 14, '.2e')}"
        print(line)
    if ratios["1"]:
        print(f"{'geometric mean':<16} {'':>9} {'':>10} {geometric_mean(ratios['1']):>6.3f} "
              f"{'':>9} {'':>11} {geometric_mean(ratios['all']):>6.3f}")


def generate_ladder(path: str, nodes: int, width: int = 16, seed: int = 0) -> str:
    """Write a frozen GraphDef of about `nodes` nodes without TensorFlow: an input (None,
    width) through rungs of MatMul(h, W) + b -> Relu/Tanh -> + h (6 nodes with the Consts)."""
    import numpy as np
    from tensorboard.compat.proto import (attr_value_pb2, graph_pb2, tensor_pb2,
                                          tensor_shape_pb2, types_pb2)
    rng = np.random.RandomState(seed)
    dim = tensor_shape_pb2.TensorShapeProto.Dim
    graph = graph_pb2.GraphDef()

    def add(name, op, inputs=(), **attrs):
        node = graph.node.add(name=name, op=op, input=list(inputs))
        node.attr["dtype" if op in ("Const", "Placeholder") else "T"].type = types_pb2.DT_FLOAT
        for key, value in attrs.items():
            node.attr[key].CopyFrom(value)
        return name

    def const(name, array):
        tensor = tensor_pb2.TensorProto(
            dtype=types_pb2.DT_FLOAT, tensor_content=array.tobytes(),
            tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=[dim(size=d) for d in array.shape]))
        return add(name, "Const", value=attr_value_pb2.AttrValue(tensor=tensor))

    shape = tensor_shape_pb2.TensorShapeProto(dim=[dim(size=-1), dim(size=width)])
    h = add("input", "Placeholder", shape=attr_value_pb2.AttrValue(shape=shape))
    for i in range((nodes - 2) // 6):
        w = const(f"rung{i}/w", (rng.randn(width, width) / width).astype(np.float32))
        b = const(f"rung{i}/b", (rng.randn(width) * 0.1).astype(np.float32))
        m = add(f"rung{i}/matmul", "MatMul", [h, w])
        a = add(f"rung{i}/bias", "AddV2", [m, b])
        act = add(f"rung{i}/act", "Relu" if i % 2 else "Tanh", [a])
        h = add(f"rung{i}/residual", "AddV2", [act, h])
    add("Identity", "Identity", [h])
    return _write_graph(path, graph)


def _write_graph(path: str, graph) -> str:
    from tf2ir.ir.atomic import atomic_output
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(graph.SerializeToString())
    return path


def generate_chain(path: str, nodes: int) -> str:
    """A frozen GraphDef of a constant chain: c, AddV2(c, c), AddV2(that, c), ... `nodes`
    deep, added to an input at the end. Every link folds: constant folding must stay linear."""
    from tensorboard.compat.proto import graph_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
    graph = graph_pb2.GraphDef()
    x = graph.node.add(name="input", op="Placeholder")
    x.attr["dtype"].type = types_pb2.DT_FLOAT
    x.attr["shape"].shape.dim.add(size=4)
    c = graph.node.add(name="c", op="Const")
    c.attr["dtype"].type = types_pb2.DT_FLOAT
    c.attr["value"].tensor.CopyFrom(tensor_pb2.TensorProto(
        dtype=types_pb2.DT_FLOAT, float_val=[1, 2, 3, 4],
        tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=4)])))
    previous = "c"
    for i in range(nodes):
        link = graph.node.add(name=f"link{i}", op="AddV2", input=[previous, "c"])
        link.attr["T"].type = types_pb2.DT_FLOAT
        previous = link.name
    out = graph.node.add(name="Identity", op="AddV2", input=["input", previous])
    out.attr["T"].type = types_pb2.DT_FLOAT
    return _write_graph(path, graph)


def generate_wide(path: str, nodes: int) -> str:
    """A frozen GraphDef of `nodes` nodes with `nodes`/2 outputs: an input, then per output
    AddV2(input, input) -> Relu, every Relu a sink. Pruning and output handling must stay
    linear."""
    from tensorboard.compat.proto import graph_pb2, types_pb2
    graph = graph_pb2.GraphDef()
    x = graph.node.add(name="input", op="Placeholder")
    x.attr["dtype"].type = types_pb2.DT_FLOAT
    x.attr["shape"].shape.dim.add(size=-1)
    for i in range(nodes // 2):
        add = graph.node.add(name=f"add{i}", op="AddV2", input=["input", "input"])
        add.attr["T"].type = types_pb2.DT_FLOAT
        relu = graph.node.add(name=f"out{i}", op="Relu", input=[add.name])
        relu.attr["T"].type = types_pb2.DT_FLOAT
    return _write_graph(path, graph)


GENERATORS = {"ladder": generate_ladder, "chain": generate_chain, "wide": generate_wide}


def parse_generate(spec: str) -> Tuple[str, int]:
    """'20000' (a ladder), 'chain:20000', 'wide:200000' → (kind, nodes)."""
    kind, _, nodes = spec.rpartition(":")
    kind = kind or "ladder"
    if kind not in GENERATORS or not nodes.isdigit():
        raise argparse.ArgumentTypeError(f"bad --generate {spec!r}: NODES or KIND:NODES with "
                                         f"KIND one of {', '.join(GENERATORS)}")
    return kind, int(nodes)


def print_table(rows: List[Row]) -> None:
    head = (f"{'model':<16} {'pb MB':>7} {'TF nodes':>8} {'IR nodes':>8} {'ONNX nodes':>10} "
            f"{'convert s':>9} {'checker s':>9} {'peak MB':>8} {'peak/pb':>7}")
    has_peer = any(r.peer for r in rows)
    if has_peer:
        head += f" {'tf2onnx s':>9} {'tf2onnx MB':>10} {'speed-up':>8}"
    print(head)
    for r in rows:
        m = r.tf2ir
        if not m.ok:
            print(f"{r.model:<16} {r.pb_mb:>7.1f}  FAILED: {m.error}")
            continue
        line = (f"{r.model:<16} {r.pb_mb:>7.1f} {r.tf_nodes:>8} {r.ir_nodes:>8} {r.onnx_nodes:>10} "
                f"{m.seconds:>9.2f} {r.checker_s or 0:>9.2f} {m.peak_mb:>8.0f} "
                f"{m.peak_mb / r.pb_mb:>7.2f}")
        if r.peer:
            p = r.peer
            line += (f" {p.seconds:>9.2f} {p.peak_mb:>10.0f} {p.seconds / m.seconds:>7.1f}x"
                     if p.ok else f"  tf2onnx failed: {p.error[:60]}")
        print(line)
    speedups = [r.peer.seconds / r.tf2ir.seconds for r in rows
                if r.tf2ir.ok and r.peer is not None and r.peer.ok]
    if speedups:
        print(f"conversion speed-up over tf2onnx, geometric mean of {len(speedups)}: "
              f"{geometric_mean(speedups):.1f}x")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*",
                        help="keras.applications names or frozen .pb paths (default: every "
                             "keras.applications model, unless --generate is given)")
    parser.add_argument("--model-dir", default=os.path.join(tempfile.gettempdir(), "tf2ir-models"),
                        help="cache of frozen models (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per model; the median wall time")
    parser.add_argument("--no-peer", action="store_true", help="do not run tf2onnx even if installed")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--runs", type=int, default=20,
                        help="latency: timed runs per model after warm-up (default: %(default)s)")
    parser.add_argument("--no-latency", action="store_true",
                        help="measure conversion only, not the converted models' latency")
    parser.add_argument("--passes", action="append", default=[], metavar="on:NAME,off:NAME",
                        help="passed to `tf2ir convert --passes` (e.g. off:all for a baseline)")
    parser.add_argument("--generate", type=parse_generate, metavar="[KIND:]NODES", action="append",
                        default=[],
                        help="also bench a generated frozen graph of about NODES nodes: a ladder "
                             "of small MatMuls and elementwise ops (the default KIND), chain (a "
                             "constant chain that folds away) or wide (NODES/2 outputs); "
                             "repeatable")
    args = parser.parse_args(argv)
    os.makedirs(args.model_dir, exist_ok=True)
    peer = not args.no_peer and importlib.util.find_spec("tf2onnx") is not None
    runs = 0 if args.no_latency else args.runs
    models = list(args.models)
    if not models and not args.generate:
        from tf2ir.tools.zoo import discover_models   # lists them in a child (imports keras)
        models = discover_models()
    generated_paths = []
    for kind, nodes in args.generate:
        path = os.path.join(args.model_dir, f"{kind}{nodes}.pb")
        if not os.path.exists(path):
            GENERATORS[kind](path, nodes)
        models.append(path)
        generated_paths.append(path)
    rows = []
    with tempfile.TemporaryDirectory() as out_dir:
        for name in models:
            generated = name in generated_paths
            rows.append(bench_model(name, args.model_dir, out_dir, args.repeat,
                                    peer and not generated, args.passes, 0 if generated else runs))
    print_table(rows)
    print_latency_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([asdict(r) for r in rows], f, indent=2)
    return 0 if all(r.tf2ir.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
