"""The TFLite model zoo: keras.applications models, the bench's transformers and an LSTM,
converted by TF's TFLiteConverter to float, dynamic-range int8 and full int8 (and float16
weights with --flavours ...,float16), then through
tf2ir, compared with the LiteRT interpreter and timed in onnxruntime; optionally the same
.tflite files through the peer converters (tf2onnx --tflite, OpenVINO) in the same run.

    python -m tf2ir.tools.tflite_zoo                       # every model, every flavour
    python -m tf2ir.tools.tflite_zoo --models MobileNetV2,LSTM --flavours float,int8 \\
        --repeats 20 --json zoo.json --markdown zoo.md
    python -m tf2ir.tools.tflite_zoo --quick               # the CI subset (small variants)
    python -m tf2ir.tools.tflite_zoo --peer-python /work/peers/bin/python

Models (tools/tflite_zoo_models.py CATALOGUE): MobileNetV2, MobileNetV3Small, EfficientNetB0,
ResNet50, DenseNet121, InceptionV3, NASNetMobile, Xception (weights=None, seeded weights and
batch-norm statistics, 96x96 inputs), BertEncoder, GPTDecoder, T5Encoder, BertBaseLayer2
(tools/bench_models.py, sequence 128), LSTM (two Keras LSTM layers) and TinyCNN (two convs
and a mean: the CI's model). --quick runs MobileNetV2, BertEncoder and LSTM as small variants
(32x32 alpha 0.35, one 32-wide layer over 16 tokens, 8 units over 8 steps) with 5 repeats.
The .tflite files are built once, in a child process, and cached in --model-dir.

Each row (one model in one flavour): the TFLite operator count and types, the op types no
tf2ir plugin maps yet, tf2ir's conversion seconds (Pipeline.convert_file + compile, in
process), the largest error against the LiteRT interpreter (absolute, relative to the
output's spread, and for full int8 in quantization steps), onnxruntime's median latency and
its ratio to the float flavour's, the interpreter's latency, or the failure line. Status:
ok within the bounds (--float-rtol, --dynamic-rtol, --int8-steps), mismatch, build failed
(TF's converter), convert failed (tf2ir) or run failed. The exit status is 1 when a row is
not ok.

Peers (--peer-python PATH, a Python whose environment has tf2onnx, openvino, onnxruntime,
numpy; never tf2ir's own environment: tf2onnx pins its own dependencies). Set it up once:

    python -m venv /work/peers
    /work/peers/bin/pip install tf2onnx openvino onnxruntime numpy tensorflow-cpu

(tf2onnx imports TensorFlow, so the venv needs its own.) Each peer runs in a child of that
interpreter (tools/tflite_zoo_peer.py, one per model and peer): tf2onnx's from_tflite (what
`python -m tf2onnx.convert --tflite` runs) then onnxruntime; openvino.convert_model then
ov.Core().compile_model on the CPU in f32. Their conversion seconds, error against the same
interpreter outputs and latency go into the row; without --peer-python peers are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict
from typing import Dict, List, Optional

import numpy as np

from tf2ir.tools.tflite_zoo_models import (BUILD_VERSION, CATALOGUE, DEFAULT_FLAVOURS, FLAVOURS,
                                           QUICK, stem)
from tf2ir.tools.tflite_zoo_run import (DYNAMIC_RTOL, FLOAT_RTOL, INT8_STEPS, PeerResult, Row,
                                        compare, one_line, ort_runner, output_scales, run_row,
                                        timed)
from tf2ir.tools.tflite_zoo_tables import format_markdown, missing_notes

DEFAULT_MODEL_DIR = os.path.join(tempfile.gettempdir(), "tf2ir-tflite-zoo")
PEERS = ("tf2onnx", "openvino")
BUILD_TIMEOUT = 1800.0
PEER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tflite_zoo_peer.py")


def _cached(model_dir: str, name: str, flavour: str, quick: bool) -> Optional[dict]:
    sidecar = os.path.join(model_dir, f"{stem(name, quick)}.{flavour}.json")
    if not (os.path.exists(sidecar) and os.path.exists(os.path.join(model_dir, stem(name, quick) + ".npz"))):
        return None
    with open(sidecar) as f:
        info = json.load(f)
    ok = info.get("version") == BUILD_VERSION and ("error" in info or os.path.exists(info["path"]))
    return info if ok else None


def ensure_built(name: str, model_dir: str, flavours: List[str], quick: bool,
                 timeout: float) -> Dict[str, dict]:
    """Each flavour's sidecar (tools/tflite_zoo_models.py: {"path"} or {"error"}), built
    unless cached: the missing flavours in one child, then, if it crashed (TF's converter
    can), each flavour still missing in a child of its own; a crash is the error line."""
    records = {fl: _cached(model_dir, name, fl, quick) for fl in flavours}
    errors: Dict[str, str] = {}
    for batch in ("together", "alone"):
        missing = [fl for fl in flavours if records[fl] is None]
        if not missing:
            break
        groups = [missing] if batch == "together" and len(missing) > 1 else [[fl] for fl in missing]
        for group in groups:
            cmd = [sys.executable, "-m", "tf2ir.tools.tflite_zoo_models", name, ",".join(group),
                   "-o", model_dir] + (["--quick"] if quick else [])
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
                lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
                error = (f"TFLiteConverter crashed (signal {-done.returncode})" if done.returncode < 0
                         else one_line(lines[-1] if lines else f"exit status {done.returncode}"))
            except subprocess.TimeoutExpired:
                error = f"building took over {timeout:.0f} s"
            for fl in group:
                records[fl] = _cached(model_dir, name, fl, quick)
                errors[fl] = error
    return {fl: records[fl] or {"error": errors.get(fl, "not built")} for fl in flavours}


def run_peers(peer_python: str, peer: str, rows: List[Row], paths: Dict[str, str],
              wants: Dict[str, dict], inputs: str, work_dir: str, repeats: int, threads: int,
              timeout: float, runs: Dict[str, dict]) -> None:
    """Run `peer` on the model's .tflite files (one child) and put its result in each row;
    a tf2onnx model joins `runs` (timed in the parent's onnxruntime beside tf2ir's)."""
    items = []
    for row in rows:
        if row.flavour in paths and wants.get(row.flavour) is not None:
            result = os.path.join(work_dir, f"{row.model}.{row.flavour}.{peer}.json")
            items.append({"tflite": paths[row.flavour], "inputs": inputs, "work": work_dir,
                          "result": result, "flavour": row.flavour})
    if not items:
        return
    job = os.path.join(work_dir, f"{rows[0].model}.{peer}.job.json")
    with open(job, "w") as f:
        json.dump({"peer": peer, "repeats": repeats, "threads": threads, "items": items}, f)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH="")
    try:
        done = subprocess.run([peer_python, PEER_SCRIPT, job], capture_output=True, text=True,
                              timeout=timeout, cwd=work_dir, env=env)
        failure = "" if done.returncode == 0 else one_line(
            ([ln for ln in done.stderr.splitlines() if ln.strip()] or [f"exit {done.returncode}"])[-1])
    except subprocess.TimeoutExpired:
        failure = f"took over {timeout:.0f} s"
    by_flavour = {r.flavour: r for r in rows}
    for item in items:
        row, result = by_flavour[item["flavour"]], PeerResult()
        row.peers[peer] = result
        if not os.path.exists(item["result"]):
            result.error = failure or "no result"
            continue
        with open(item["result"]) as f:
            data = json.load(f)
        result.converted, result.convert_s, result.ms = data["converted"], data["convert_s"], data["ms"]
        result.error = data["error"]
        if data.get("onnx") and os.path.exists(data["onnx"]):
            try:
                with np.load(inputs) as feed:
                    arrays = {f"in{i}": feed[f"in{i}"] for i in range(len(feed.files))}
                _, run = ort_runner(data["onnx"], threads, arrays)
                run()          # the warm-up
                runs[row.flavour][peer] = run
            finally:
                os.remove(data["onnx"])
        if data["outputs"]:
            with np.load(data["outputs"]) as out:
                got = [out[f"out{i}"] for i in range(len(out.files))]
            os.remove(data["outputs"])
            try:
                result.max_abs_error, result.rel_error, result.steps = compare(
                    wants[row.flavour], got, output_scales(item["tflite"]))
            except ValueError as exc:
                result.error = one_line(f"outputs: {exc}")


def run_model(name: str, args, manager, work_dir: str) -> List[Row]:
    """Every asked flavour of one model: built (cached), through tf2ir and the peers."""
    rows = [Row(name, fl) for fl in args.flavour_list]
    inputs = os.path.join(args.model_dir, stem(name, args.quick) + ".npz")
    bounds = {"float": args.float_rtol, "float16": args.float_rtol, "dynamic": args.dynamic_rtol,
              "int8": args.int8_steps}
    paths, wants = {}, {}
    runs: Dict[str, dict] = {fl: {} for fl in args.flavour_list}
    built = ensure_built(name, args.model_dir, args.flavour_list, args.quick, args.timeout)
    for row in rows:
        record = built[row.flavour]
        row.note = record.get("note", "")
        if "path" not in record:
            row.status, row.error = "build failed", record.get("error", "not built")
            continue
        with np.load(inputs) as data:
            arrays = [data[f"in{i}"] for i in range(len(data.files))]
        paths[row.flavour] = record["path"]
        wants[row.flavour] = run_row(row, record["path"], arrays, work_dir, manager,
                                     args.threads, bounds, runs[row.flavour], args.quantized)
    if args.peer_python:
        for peer in args.peer_list:
            run_peers(args.peer_python, peer, rows, paths, wants, inputs, work_dir,
                      args.repeats, args.threads, args.timeout, runs)
    for row in rows:      # tf2ir, the interpreter and tf2onnx round-robin: the same load
        ms = timed(runs[row.flavour], args.repeats)
        row.ort_ms, row.litert_ms = ms.get("tf2ir"), ms.get("litert")
        if "tf2onnx" in ms and "tf2onnx" in row.peers:
            row.peers["tf2onnx"].ms = ms["tf2onnx"]
    runs.clear()
    float_ms = next((r.ort_ms for r in rows if r.flavour == "float"), None)
    for row in rows:
        if row.ort_ms and float_ms:
            row.vs_float = round(row.ort_ms / float_ms, 3)
    return rows


def write_json(path: str, rows: List[Row], args) -> None:
    from tf2ir.tools.zoo_reference import _write_text
    settings = {"quick": args.quick, "repeats": args.repeats, "threads": args.threads,
                "quantized": args.quantized, "flavours": args.flavour_list, "peers": args.peer_list if args.peer_python else [],
                "bounds": {"float_rtol": args.float_rtol, "dynamic_rtol": args.dynamic_rtol,
                           "int8_steps": args.int8_steps}}
    _write_text(path, json.dumps({"settings": settings, "rows": [asdict(r) for r in rows]},
                                 indent=1) + "\n")


def parse_args(argv: Optional[List[str]]):
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.tflite_zoo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", help=f"comma-separated, of: {', '.join(CATALOGUE)} "
                        "(default: all but TinyCNN; --quick: " + ", ".join(QUICK) + ")")
    parser.add_argument("--flavours", default=",".join(DEFAULT_FLAVOURS),
                        help="comma-separated, of float, dynamic, int8, float16 (float16 "
                        "weights; default: float,dynamic,int8)")
    parser.add_argument("--repeats", type=int, help="timed runs per latency (median; default 20, "
                        "--quick 5)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads of onnxruntime, the interpreter and the peers (default 1)")
    parser.add_argument("--quick", action="store_true",
                        help="small variants of a representative subset (the CI's run)")
    parser.add_argument("--model-dir", default=DEFAULT_MODEL_DIR,
                        help="cache of the built .tflite files (default: %(default)s)")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--markdown", metavar="FILE", help="also write the tables to FILE")
    parser.add_argument("--missing-notes", metavar="FILE",
                        help="write the op types tf2ir does not map yet, per model, to FILE")
    parser.add_argument("--peer-python", metavar="PATH",
                        help="the Python of the peers' environment (see above); default: no peers")
    parser.add_argument("--peers", default=",".join(PEERS), help="comma-separated (default: all)")
    parser.add_argument("--float-rtol", type=float, default=FLOAT_RTOL,
                        help="float: max error / output spread (default %(default)s)")
    parser.add_argument("--dynamic-rtol", type=float, default=DYNAMIC_RTOL,
                        help="dynamic-range: max error / output spread (default %(default)s)")
    parser.add_argument("--int8-steps", type=float, default=INT8_STEPS,
                        help="full int8: quantization steps (default %(default)s)")
    parser.add_argument("--quantized", choices=("exact", "qdq"), default="exact",
                        help="tf2ir's --quantized: qdq converts dynamic-range models to "
                        "onnxruntime's fastest forms (default: exact, TFLite's hybrid arithmetic)")
    parser.add_argument("--timeout", type=float, default=BUILD_TIMEOUT,
                        help="seconds for one child (a build, a peer) (default %(default)s)")
    args = parser.parse_args(argv)
    models = (args.models.split(",") if args.models else
              list(QUICK) if args.quick else [m for m in CATALOGUE if m != "TinyCNN"])
    unknown = [m for m in models if m not in CATALOGUE]
    args.flavour_list = args.flavours.split(",")
    bad = [f for f in args.flavour_list if f not in FLAVOURS]
    args.peer_list = args.peers.split(",")
    if unknown or bad or any(p not in PEERS for p in args.peer_list):
        parser.error(f"unknown model, flavour or peer: {', '.join(unknown + bad) or args.peers}")
    args.model_list = models
    if args.repeats is None:
        args.repeats = 5 if args.quick else 20
    if args.repeats < 1 or args.threads < 1:
        parser.error("--repeats and --threads must be at least 1")
    if args.peer_python and not os.path.exists(args.peer_python):
        print(f"tflite_zoo: no peer Python at {args.peer_python}: peers skipped", file=sys.stderr)
        args.peer_python = None
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    os.makedirs(args.model_dir, exist_ok=True)
    from tf2ir.plugins.manager import PluginManager
    manager = PluginManager()
    rows: List[Row] = []
    with tempfile.TemporaryDirectory(prefix="tf2ir-tflite-zoo-") as work_dir:
        for name in args.model_list:
            for row in run_model(name, args, manager, work_dir):
                rows.append(row)
                print(f"[{name} {row.flavour}] {row.status}" + (f": {row.error}" if row.error else ""),
                      file=sys.stderr, flush=True)
            if args.json:        # partial results survive an interrupted run
                write_json(args.json, rows, args)
    table = format_markdown(rows, args.peer_list if args.peer_python else [])
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")
    if args.json:
        write_json(args.json, rows, args)
    if args.missing_notes:
        with open(args.missing_notes, "w") as f:
            f.write(missing_notes(rows))
    return 0 if rows and all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
