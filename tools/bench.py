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

Models named by keras.applications name are frozen once (weights=None) into --model-dir;
so are the transformers of tools/bench_models.py (BertEncoder, GPTDecoder, BertBaseLayer2).
The peers are optional, each used when importable (e.g. PYTHONPATH=/tmp/t2o-site:/tmp/ov-site:
/tmp/onnxsim-site) and skipped with a note otherwise (--no-peer skips them all):
tf2onnx converts the same frozen graphs in the same run; OpenVINO converts them too (its
conversion time and peak memory) and its runtime's latency on its own model is context;
onnx-simplifier (the yardstick) says how many nodes it would still remove from tf2ir's model.
Latency: the median of --runs runs after warm-up, the ONNX models' runs interleaved, with
intra_op_num_threads=1 and with all threads; the tf2ir/tf2onnx and tf2ir/TF ratios per model
and their geometric means. TensorFlow and the peers run in child processes only.
--markdown FILE writes the tables in docs/benchmarks.md's form. The latency is measured by
tools/bench_latency.py, the --generate graphs are tools/bench_generate.py's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field

# geometric_mean and the tables, the latency and the generated graphs are part of this
# module's interface too
from tf2ir.tools.bench_generate import (GENERATORS, generate_chain,  # noqa: F401
                                        generate_ladder, generate_wide, parse_generate)
from tf2ir.tools.bench_latency import (DEFAULT_FEED, measure_latency,  # noqa: F401
                                       openvino_latency, peer_available)
from tf2ir.tools.bench_tables import (conversion_table, geometric_mean, latency_table,  # noqa: F401
                                     render_text, write_markdown)
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
    peer: Optional[Measure] = None        # tf2onnx's conversion
    openvino: Optional[Measure] = None    # OpenVINO's conversion (convert_model + save_model)
    # latency in ms: {"tf2ir": {"1": ms, "all": ms}, "tf2onnx": {...}, "tf": {...},
    # "openvino": {...}}
    latency: Dict[str, Dict[str, float]] = field(default_factory=dict)
    max_error: Optional[float] = None     # tf2ir's output against TensorFlow's
    checker_s: Optional[float] = None     # onnx.checker's full check of the written model
    sim_removes: Optional[int] = None     # nodes onnx-simplifier still removes from tf2ir's


def best_of(cmd: List[str], repeat: int) -> Measure:
    runs = [run_measured(cmd) for _ in range(repeat)]
    failed = [r for r in runs if not r.ok]
    if failed:
        return failed[0]
    return Measure(statistics.median(r.seconds for r in runs), max(r.peak_mb for r in runs), True)


def ensure_frozen(name: str, model_dir: str) -> Tuple[str, List[str]]:
    """A path to a frozen .pb for a keras.applications or bench_models name (built once)
    or a given file, and its output tensor names (none known for a given file without a
    JSON beside it)."""
    from tf2ir.tools.bench_models import MODELS
    if os.path.exists(name):
        return name, feed_spec(name).get("outputs", [])
    path = os.path.join(model_dir, f"{name}.pb")
    if not os.path.exists(path):
        module = "tf2ir.tools.bench_models" if name in MODELS else "tf2ir.tools.models"
        subprocess.run([sys.executable, "-m", module, name, "-o", model_dir],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path, feed_spec(path).get("outputs", ["Identity:0"])


def feed_spec(pb: str) -> Dict:
    """The JSON beside `pb` (input, outputs, shape, dtype, high), or {}."""
    sidecar = os.path.splitext(pb)[0] + ".json"
    if not os.path.exists(sidecar):
        return {}
    with open(sidecar) as f:
        return json.load(f)


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


_OPENVINO_CONVERT_SCRIPT = """
import sys
import openvino as ov
pb, out = sys.argv[1:]
ov.save_model(ov.convert_model(pb), out)
"""

_SIMPLIFY_SCRIPT = """
import sys
import onnx, onnxsim
model = onnx.load(sys.argv[1])
simplified, ok = onnxsim.simplify(model)
print(len(model.graph.node) - len(simplified.graph.node) if ok else -1)
"""


def simplifier_removes(onnx_path: str) -> Optional[int]:
    """How many nodes onnx-simplifier removes from the model (in a child), or None."""
    result = subprocess.run([sys.executable, "-c", _SIMPLIFY_SCRIPT, onnx_path],
                            capture_output=True, text=True)
    if result.returncode != 0:
        print(f"onnxsim: failed: {result.stderr.strip()[-200:]}", file=sys.stderr)
        return None
    removed = int(result.stdout.strip().splitlines()[-1])
    return removed if removed >= 0 else None


@dataclass
class Peers:
    """Which optional peers this run uses."""
    tf2onnx: bool = False
    openvino: bool = False
    onnxsim: bool = False

    @classmethod
    def find(cls, wanted: bool = True) -> "Peers":
        peers = cls(*(wanted and peer_available(m) for m in ("tf2onnx", "openvino", "onnxsim")))
        for name, there in asdict(peers).items():
            if wanted and not there:
                print(f"note: {name} is not importable: its columns are left empty",
                      file=sys.stderr)
        return peers


def bench_model(name: str, model_dir: str, out_dir: str, repeat: int, peer,
                passes: List[str], runs: int = 0) -> Row:
    peers = peer if isinstance(peer, Peers) else Peers(tf2onnx=bool(peer))
    pb, outputs = ensure_frozen(name, model_dir)
    feed = {**DEFAULT_FEED, **feed_spec(pb)}
    label = os.path.splitext(os.path.basename(pb))[0]
    out = os.path.join(out_dir, f"{label}.onnx")
    switches = [f"--passes={p}" for p in passes]
    ours = best_of([sys.executable, "-m", "tf2ir.tools.cli", "convert", pb, "-o", out] + switches,
                   repeat)
    tf_nodes, ir_nodes, onnx_nodes, checker_s = node_counts(pb, out) if ours.ok else (0, 0, 0, None)
    row = Row(label, os.path.getsize(pb) / 1e6, tf_nodes, ir_nodes, onnx_nodes, ours,
              checker_s=checker_s)
    peer_out = os.path.join(out_dir, f"{label}.tf2onnx.onnx")
    if peers.tf2onnx and outputs:
        row.peer = best_of([sys.executable, "-m", "tf2onnx.convert", "--graphdef", pb,
                            "--inputs", feed["input"], "--outputs", ",".join(outputs),
                            "--opset", "18", "--output", peer_out], 1)
    ov_out = os.path.join(out_dir, f"{label}.openvino.xml")
    if peers.openvino and outputs:
        row.openvino = best_of([sys.executable, "-c", _OPENVINO_CONVERT_SCRIPT, pb, ov_out], 1)
    if peers.onnxsim and ours.ok:
        row.sim_removes = simplifier_removes(out)
    if runs and ours.ok:
        models = {"tf2ir": out}
        if row.peer is not None and row.peer.ok:
            models["tf2onnx"] = peer_out
        row.latency, row.max_error = measure_latency(models, pb, outputs, out_dir, runs, feed)
        if row.openvino is not None and row.openvino.ok:
            openvino = openvino_latency(ov_out, out_dir, runs)
            if openvino:
                row.latency["openvino"] = openvino
    return row


def print_latency_table(rows: List[Row]) -> None:
    table = latency_table(rows)
    if table is not None:
        print()
        print(render_text(table))


def print_table(rows: List[Row]) -> None:
    print(render_text(conversion_table(rows)))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*",
                        help="keras.applications names or frozen .pb paths (default: every "
                             "keras.applications model, unless --generate is given)")
    parser.add_argument("--model-dir", default=os.path.join(tempfile.gettempdir(), "tf2ir-models"),
                        help="cache of frozen models (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per model; the median wall time")
    parser.add_argument("--no-peer", action="store_true",
                        help="run no peer (tf2onnx, OpenVINO, onnx-simplifier) even if installed")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--markdown", metavar="FILE",
                        help="also write the tables as markdown (docs/benchmarks.md)")
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
    peers = Peers.find(not args.no_peer)
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
    for name in models:     # built before any is measured: a bad name fails at once
        try:
            ensure_frozen(name, args.model_dir)
        except (subprocess.CalledProcessError, OSError) as exc:
            print(f"bench: cannot build model {name!r} (a keras.applications or "
                  f"tf2ir.tools.bench_models name, or a .pb path): {exc}", file=sys.stderr)
            return 2
    rows = []
    with tempfile.TemporaryDirectory() as out_dir:
        for name in models:
            generated = name in generated_paths
            rows.append(bench_model(name, args.model_dir, out_dir, args.repeat,
                                    Peers() if generated else peers, args.passes,
                                    0 if generated else runs))
    print_table(rows)
    print_latency_table(rows)
    if args.markdown:
        write_markdown(rows, args.markdown)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([asdict(r) for r in rows], f, indent=2)
    return 0 if all(r.tf2ir.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
