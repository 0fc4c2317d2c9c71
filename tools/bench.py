"""Benchmark: converts frozen models with the `tf2ir` command line, each as a whole child
process, and prints per model the wall time, peak memory and node counts.

    python -m tf2ir.tools.bench                       # ResNet50 MobileNetV2 EfficientNetB0
    python -m tf2ir.tools.bench ResNet50 --repeat 5
    python -m tf2ir.tools.bench path/to/frozen.pb

Models named by keras.applications name are frozen once (weights=None) into --model-dir.
If tf2onnx is installed, it converts the same frozen graphs in the same run (--no-peer to skip).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import List, Optional, Tuple

DEFAULT_MODELS = ["ResNet50", "MobileNetV2", "EfficientNetB0"]


@dataclass
class Measure:
    seconds: float
    peak_mb: float
    ok: bool
    error: str = ""


@dataclass
class Row:
    model: str
    pb_mb: float
    tf_nodes: int
    ir_nodes: int
    onnx_nodes: int
    tf2ir: Measure
    peer: Optional[Measure] = None


def run_measured(cmd: List[str]) -> Measure:
    """Run `cmd` as a child process: wall seconds and its own peak RSS (os.wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    error = "" if proc.returncode == 0 else stderr.decode(errors="replace").strip().splitlines()[-1:]
    return Measure(seconds, usage.ru_maxrss / 1024.0, proc.returncode == 0,
                   error[0] if error else "")


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
import json, os, sys
import onnx
from tf2ir.parser.convert import convert_file
from tf2ir.parser.load import load_graph_def
pb, out = sys.argv[1:]
graph, _ = convert_file(pb)
onnx_nodes = len(onnx.load(out, load_external_data=False).graph.node) if os.path.exists(out) else 0
print(json.dumps([len(load_graph_def(pb).node), len(graph.nodes), onnx_nodes]))
"""


def node_counts(pb: str, onnx_path: str) -> Tuple[int, int, int]:
    """TF, IR and ONNX node counts, computed in a child process: a fork of a large parent
    would inherit its peak RSS and spoil the next measurement."""
    result = subprocess.run([sys.executable, "-c", _COUNT_SCRIPT, pb, onnx_path],
                            capture_output=True, text=True, check=True)
    return tuple(json.loads(result.stdout))


def bench_model(name: str, model_dir: str, out_dir: str, repeat: int, peer: bool) -> Row:
    pb, outputs = ensure_frozen(name, model_dir)
    label = os.path.splitext(os.path.basename(pb))[0]
    out = os.path.join(out_dir, f"{label}.onnx")
    ours = best_of([sys.executable, "-m", "tf2ir.tools.cli", "convert", pb, "-o", out], repeat)
    tf_nodes, ir_nodes, onnx_nodes = node_counts(pb, out) if ours.ok else (0, 0, 0)
    row = Row(label, os.path.getsize(pb) / 1e6, tf_nodes, ir_nodes, onnx_nodes, ours)
    if peer and outputs:
        peer_out = os.path.join(out_dir, f"{label}.tf2onnx.onnx")
        row.peer = best_of([sys.executable, "-m", "tf2onnx.convert", "--graphdef", pb,
                            "--inputs", "input:0", "--outputs", ",".join(outputs),
                            "--opset", "18", "--output", peer_out], 1)
    return row


def print_table(rows: List[Row]) -> None:
    head = (f"{'model':<16} {'pb MB':>7} {'TF nodes':>8} {'IR nodes':>8} {'ONNX nodes':>10} "
            f"{'convert s':>9} {'peak MB':>8} {'peak/pb':>7}")
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
                f"{m.seconds:>9.2f} {m.peak_mb:>8.0f} {m.peak_mb / r.pb_mb:>7.2f}")
        if r.peer:
            p = r.peer
            line += (f" {p.seconds:>9.2f} {p.peak_mb:>10.0f} {p.seconds / m.seconds:>7.1f}x"
                     if p.ok else f"  tf2onnx failed: {p.error[:60]}")
        print(line)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", default=DEFAULT_MODELS,
                        help="keras.applications names or frozen .pb paths")
    parser.add_argument("--model-dir", default=os.path.join(tempfile.gettempdir(), "tf2ir-models"),
                        help="cache of frozen models (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per model; the median wall time")
    parser.add_argument("--no-peer", action="store_true", help="do not run tf2onnx even if installed")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    os.makedirs(args.model_dir, exist_ok=True)
    peer = not args.no_peer and importlib.util.find_spec("tf2onnx") is not None
    rows = []
    with tempfile.TemporaryDirectory() as out_dir:
        for name in args.models:
            rows.append(bench_model(name, args.model_dir, out_dir, args.repeat, peer))
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([asdict(r) for r in rows], f, indent=2)
    return 0 if all(r.tf2ir.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
