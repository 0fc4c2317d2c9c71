"""Compare `tf2ir optimize` with onnxsim and onnxslim on ONNX models (e.g. tf2onnx's outputs
of the bench models), side by side in one run:

    python -m tf2ir.tools.optimize_compare /tmp/t2o/*.onnx --work-dir /tmp/cmp

For each model, four variants: the model as is, after onnxsim, after onnxslim, after `tf2ir
optimize`. Per variant: node count, onnxruntime latency (median ms) at 1 thread and at all
threads (the variants' runs interleaved in rounds, so a busy machine slows all alike), and the
largest absolute difference of every output from the model as is, on the same random inputs.
onnxsim and onnxslim are imported from wherever this Python finds them (run it from a
virtual environment that has them, e.g. one made with --system-site-packages); a missing
peer is shown as such."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

VARIANTS = ("as is", "onnxsim", "onnxslim", "tf2ir")


def _onnxsim(src: str, dst: str) -> None:
    import onnx
    import onnxsim
    model, ok = onnxsim.simplify(onnx.load(src))
    if not ok:
        raise RuntimeError("onnxsim could not validate its result")
    onnx.save(model, dst)


def _onnxslim(src: str, dst: str) -> None:
    import contextlib
    import onnxslim
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):   # its summary
        onnxslim.slim(src, dst)


def _tf2ir(src: str, dst: str) -> None:
    from tf2ir.tools.optimize import optimize_file
    optimize_file(src, dst)


MAKERS: Dict[str, Callable[[str, str], None]] = {
    "onnxsim": _onnxsim, "onnxslim": _onnxslim, "tf2ir": _tf2ir}


def random_feeds(path: str, seed: int = 0, high: int = 100) -> Dict[str, np.ndarray]:
    """One random array per graph input (unknown dims as 1; integers in [0, high))."""
    import onnx
    from onnx import helper
    model = onnx.load(path, load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in tensor.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        if np.issubdtype(dtype, np.integer):
            feeds[value.name] = rng.integers(0, high, size=shape).astype(dtype)
        elif dtype == np.bool_:
            feeds[value.name] = rng.random(shape) < 0.5
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def _session(path: str, threads: int):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def node_count(path: str) -> int:
    import onnx
    return len(onnx.load(path, load_external_data=False).graph.node)


def measure(paths: Dict[str, str], feeds, threads: int, rounds: int, runs: int) -> Dict[str, float]:
    """Median latency (ms) per variant, the variants' runs interleaved over `rounds`."""
    sessions = {v: _session(p, threads) for v, p in paths.items()}
    times: Dict[str, List[float]] = {v: [] for v in sessions}
    for session in sessions.values():
        session.run(None, feeds)   # warm up
    for _ in range(rounds):
        for variant, session in sessions.items():
            for _ in range(runs):
                start = time.perf_counter()
                session.run(None, feeds)
                times[variant].append((time.perf_counter() - start) * 1e3)
    return {v: statistics.median(t) for v, t in times.items()}


def compare_model(path: str, work_dir: str, rounds: int, runs: int, high: int,
                  threads: Tuple[int, ...]) -> Dict[str, Dict[str, object]]:
    stem = os.path.splitext(os.path.basename(path))[0]
    paths = {"as is": path}
    rows: Dict[str, Dict[str, object]] = {v: {} for v in VARIANTS}
    for variant, make in MAKERS.items():
        dst = os.path.join(work_dir, f"{stem}.{variant}.onnx")
        start = time.perf_counter()
        try:
            make(path, dst)
        except Exception as exc:   # a peer that fails or is missing: shown, not fatal
            rows[variant]["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
            continue
        rows[variant]["seconds"] = time.perf_counter() - start
        paths[variant] = dst
    feeds = random_feeds(path, high=high)
    reference = _session(path, 0).run(None, feeds)
    for variant, p in paths.items():
        rows[variant]["nodes"] = node_count(p)
        outputs = _session(p, 0).run(None, feeds)
        rows[variant]["max_diff"] = max(float(np.max(np.abs(a.astype(np.float64) - b)))
                                        if a.size else 0.0 for a, b in zip(outputs, reference))
    for n in threads:
        for variant, ms in measure(paths, feeds, n, rounds, runs).items():
            rows[variant][f"ms_{n or 'all'}"] = ms
    return rows


def format_table(results: Dict[str, Dict[str, Dict[str, object]]], threads) -> str:
    cols = ["nodes"] + [f"ms_{n or 'all'}" for n in threads] + ["max_diff", "seconds"]
    heads = {"nodes": "nodes", "max_diff": "max |diff|", "seconds": "opt s",
             **{f"ms_{n or 'all'}": f"ms {n or 'all'} thr" for n in threads}}
    lines = ["| model | variant | " + " | ".join(heads[c] for c in cols) + " |",
             "|---|---|" + "---:|" * len(cols)]
    for model, rows in results.items():
        for variant in VARIANTS:
            row = rows[variant]
            if "error" in row:
                lines.append(f"| {model} | {variant} | {row['error']} |" + " |" * (len(cols) - 1))
                continue
            cells = []
            for c in cols:
                v = row.get(c)
                cells.append("" if v is None else f"{v:.2e}" if c == "max_diff"
                             else f"{v:.2f}" if isinstance(v, float) else str(v))
            lines.append(f"| {model} | {variant} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.optimize_compare",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", help="ONNX models")
    parser.add_argument("--work-dir", required=True, help="where the variants are written")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--runs", type=int, default=10, help="runs per variant per round")
    parser.add_argument("--high", type=int, default=100,
                        help="integer inputs are drawn from [0, HIGH) (token ids)")
    parser.add_argument("--threads", default="1,0",
                        help="onnxruntime intra-op threads to measure, 0 = all (default 1,0)")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    threads = tuple(int(t) for t in args.threads.split(","))
    results = {}
    for path in args.models:
        name = os.path.splitext(os.path.basename(path))[0]
        print(f"{name} ...", file=sys.stderr, flush=True)
        results[name] = compare_model(path, args.work_dir, args.rounds, args.runs, args.high,
                                      threads)
    print(format_table(results, threads))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
