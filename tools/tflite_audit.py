"""A per-layer audit of a quantized .tflite model's conversion: every quantized tensor an
operator computes, as onnxruntime computes it in tf2ir's ONNX model (the integer output of
its QuantizeLinear), against the LiteRT interpreter's (its intermediates, preserve_all), in
quantization steps. Each tensor's difference is *introduced* at its operator (every run-time
input equal, the output not) or *inherited* (an input already differs); the table sums them
per TFLite op type, so that the op whose int8 semantics tf2ir's QDQ form misses stands out.

    python -m tf2ir.tools.tflite_audit model.tflite [--inputs feeds.npz] [--tensors] [--json]

The model is converted with tf2ir's defaults; the inputs are one draw from a fixed seed
(float inputs uniform in [-1, 1], integer ones in [0, 5)) unless an .npz (in0, in1, ... or the
input names) gives them. onnxruntime runs the model once more with every audited tensor made
an output; `consistent` says whether its outputs equal the plain model's (extra outputs can
keep onnxruntime from fusing an op, which would change what it computes)."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


@dataclass
class TensorRow:
    """One operator output: `worst` the largest difference in steps (integers compared as
    integers; a float tensor's in units), `differ` how many elements differ, `introduced`
    whether every run-time input of its operator was equal."""
    index: int
    op_type: str
    tensor: str
    quantized: bool
    size: int
    differ: int
    worst: float
    introduced: bool


@dataclass
class Audit:
    rows: List[TensorRow]
    outputs: Dict[str, float]            # output tensor -> worst steps (or abs diff)
    consistent: bool                     # the debug run's outputs equal the plain run's
    missing: List[str] = field(default_factory=list)   # tensors the ONNX model no longer has


def _convert(path: str, onnx_path: str):
    from tf2ir.parser.pipeline import Options, Pipeline
    from tf2ir.plugins.manager import PluginManager
    pipeline = Pipeline(PluginManager(), Options())
    graph, report = pipeline.convert_file(path)
    pipeline.compile(graph, onnx_path, model=path)
    return report


def default_feeds(path: str, seed: int = 20261128) -> Dict[str, np.ndarray]:
    """One draw per input of subgraph 0: floats uniform in [-1, 1], quantized inputs that
    draw quantized with their scale, other integers in [0, 5)."""
    from tf2ir.tools.tflite_reference import load_interpreter
    rng = np.random.default_rng(seed)
    feeds = {}
    for d in load_interpreter(path).get_input_details():
        shape = [max(int(s), 1) for s in d["shape"]]
        dtype = np.dtype(d["dtype"])
        if dtype.kind == "f":
            feeds[d["name"]] = rng.uniform(-1, 1, shape).astype(dtype)
        elif d["quantization"][0] and dtype in (np.int8, np.uint8, np.int16):
            scale, zero = d["quantization"]
            info = np.iinfo(dtype)
            q = np.round(rng.uniform(-1, 1, shape) / scale) + zero
            feeds[d["name"]] = np.clip(q, info.min, info.max).astype(dtype)
        else:
            feeds[d["name"]] = rng.integers(0, 5, shape).astype(dtype)
    return feeds


def _difference(a: np.ndarray, e: np.ndarray):
    """(elements differing, worst difference): integers in steps, floats in units; a tensor
    the ONNX model holds in another layout (NCHW) compared through the permutation of its
    axes that gives TFLite's shape (the closest, when several do)."""
    if a.ndim > 1 and a.size == e.size and a.ndim <= 5:
        perms = [p for p in itertools.permutations(range(a.ndim))
                 if tuple(a.shape[i] for i in p) == e.shape]
        if not perms:
            return max(a.size, e.size), float("inf")
        return min((_plain_difference(np.transpose(a, p), e) for p in perms),
                   key=lambda d: (d[1], d[0]))
    return _plain_difference(a, e)


def _plain_difference(a: np.ndarray, e: np.ndarray):
    if a.shape != e.shape:
        return max(a.size, e.size), float("inf")
    if a.dtype.kind in "iub" and e.dtype.kind in "iub":
        d = np.abs(a.astype(np.int64) - e.astype(np.int64))
    else:
        d = np.abs(a.astype(np.float64) - e.astype(np.float64))
        d = np.where(np.isnan(d), np.inf, d)
    return int(np.count_nonzero(d)), float(d.max()) if d.size else 0.0


def audit_tflite(path: str, feeds: Optional[Dict[str, np.ndarray]] = None) -> Audit:
    """The audit of the .tflite at `path` on `feeds` (input name -> array; default_feeds)."""
    import onnx
    import onnxruntime as ort
    from onnx import helper
    from tf2ir.ir.onnx.writer import ONNX_DTYPES
    from tf2ir.parser.tflite_model import read_tflite
    from tf2ir.parser.tflite_view import is_quantized
    from tf2ir.tools.tflite_reference import load_interpreter, run_tflite
    feeds = default_feeds(path) if feeds is None else feeds
    sg = read_tflite(path).subgraphs[0]
    with tempfile.TemporaryDirectory(prefix="tf2ir_audit_") as tmp:
        onnx_path = os.path.join(tmp, "model.onnx")
        report = _convert(path, onnx_path)
        model = onnx.load(onnx_path)
    produced = {o for n in model.graph.node for o in n.output}
    graph_inputs = {i.name for i in model.graph.input}
    onnx_name: Dict[str, str] = {}
    elem: Dict[str, int] = {}
    for t in sg.tensors:
        value = report.tensors.get((t.name, 0))
        if value is None or value.desc.dtype not in ONNX_DTYPES:
            continue
        # the layout pass renames a value it leaves transposed (NCHW) "<name>/raw"
        name = next((n for n in (value.name, f"{value.name}/raw") if n in produced or
                     n in graph_inputs), None)
        if name is not None:
            onnx_name[t.name] = name
            elem[name] = ONNX_DTYPES[value.desc.dtype]
    computed = [sg.tensors[o].name for op in sg.operators for o in op.outputs if o >= 0]
    fetch = [t for t in dict.fromkeys(computed) if t in onnx_name]
    missing = [t for t in computed if t not in onnx_name]
    plain_outputs = [o.name for o in model.graph.output]
    plain = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    plain_values = plain.run(plain_outputs, feeds)
    existing = set(plain_outputs)
    for tensor in fetch:
        name = onnx_name[tensor]
        if name not in existing and name not in graph_inputs:
            model.graph.output.append(helper.make_tensor_value_info(name, elem[name], None))
            existing.add(name)
    debug = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = plain_outputs + [onnx_name[t] for t in fetch]
    values = debug.run(names, feeds)
    consistent = all(np.array_equal(a, b) for a, b in zip(plain_values, values))
    actual = dict(zip(names, values))
    actual.update(feeds)
    interpreter = load_interpreter(path, preserve_all=True)
    expected_outputs = run_tflite(path, feeds, interpreter=interpreter)
    by_name = {d["name"]: d["index"] for d in interpreter.get_tensor_details()}
    diffs: Dict[str, tuple] = {}
    for t in sg.tensors:
        if t.name in feeds:
            diffs[t.name] = (0, 0.0)
        elif t.name in onnx_name and t.name in by_name and onnx_name[t.name] in actual:
            diffs[t.name] = _difference(np.asarray(actual[onnx_name[t.name]]),
                                        np.asarray(interpreter.get_tensor(by_name[t.name])))
    rows = []
    for index, op in enumerate(sg.operators):
        inputs = [sg.tensors[i] for i in op.inputs if i >= 0 and sg.tensors[i].data is None]
        equal = all(diffs.get(t.name, (1, 1.0))[0] == 0 for t in inputs)
        for o in op.outputs:
            if o < 0 or sg.tensors[o].name not in diffs:
                continue
            out = sg.tensors[o]
            differ, worst = diffs[out.name]
            shape = out.shape or ()
            size = int(np.prod([d for d in shape if d is not None], dtype=np.int64)) \
                if None not in shape else 0
            rows.append(TensorRow(index, op.op_type, out.name, is_quantized(out), size, differ,
                                  worst, equal and differ > 0))
    outputs = {}
    for i in sg.outputs:
        name = sg.tensors[i].name
        if name in expected_outputs and name in actual:
            outputs[name] = _difference(np.asarray(actual[name]), expected_outputs[name])[1]
    return Audit(rows, outputs, consistent, missing)


def table(audit: Audit, quantized_only: bool = True) -> List[Dict[str, Any]]:
    """Per TFLite op type: tensors audited, how many differ, how many of those at the op
    itself (introduced) and the worst introduced / inherited difference, in steps."""
    by_type: Dict[str, Dict[str, Any]] = {}
    for r in audit.rows:
        if quantized_only and not r.quantized:
            continue
        row = by_type.setdefault(r.op_type, {"op_type": r.op_type, "tensors": 0, "differ": 0,
                                             "introduced": 0, "worst_introduced": 0.0,
                                             "worst_inherited": 0.0, "elements": 0,
                                             "elements_differ": 0})
        row["tensors"] += 1
        row["elements"] += r.size
        row["elements_differ"] += r.differ
        if r.differ:
            row["differ"] += 1
            key = "worst_introduced" if r.introduced else "worst_inherited"
            row["introduced"] += int(r.introduced)
            row[key] = max(row[key], r.worst)
    return sorted(by_type.values(), key=lambda r: str(r["op_type"]))


def markdown(audit: Audit) -> str:
    lines = ["| op type | tensors | differ | introduced | worst introduced | worst inherited "
             "| elements differing |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in table(audit):
        share = r["elements_differ"] / r["elements"] if r["elements"] else 0.0
        lines.append(f"| {r['op_type']} | {r['tensors']} | {r['differ']} | {r['introduced']} | "
                     f"{r['worst_introduced']:g} | {r['worst_inherited']:g} | {share:.2%} |")
    outs = ", ".join(f"{k}: {v:g}" for k, v in audit.outputs.items())
    lines.append(f"\noutputs (steps, or units for float outputs): {outs}; debug run consistent: "
                 f"{audit.consistent}" + (f"; {len(audit.missing)} tensors not in the ONNX model"
                                          if audit.missing else ""))
    return "\n".join(lines)


def _load_feeds(path: str, model: str) -> Dict[str, np.ndarray]:
    from tf2ir.tools.tflite_reference import load_interpreter
    data = np.load(path)
    names = [d["name"] for d in load_interpreter(model).get_input_details()]
    return {n: data[n] if n in data else data[f"in{i}"] for i, n in enumerate(names)}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.tflite_audit",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a quantized .tflite")
    parser.add_argument("--inputs", help=".npz of the inputs (in0, in1, ... or input names)")
    parser.add_argument("--tensors", action="store_true", help="also each differing tensor")
    parser.add_argument("--json", action="store_true", help="the audit as JSON")
    args = parser.parse_args(argv)
    from tf2ir.ir.errors import ConversionError
    try:
        feeds = _load_feeds(args.inputs, args.model) if args.inputs else None
        audit = audit_tflite(args.model, feeds)
    except ConversionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 1) or 1)
    if args.json:
        print(json.dumps({"table": table(audit), "outputs": audit.outputs,
                          "consistent": audit.consistent, "missing": audit.missing,
                          "tensors": [asdict(r) for r in audit.rows]}, indent=1))
        return 0
    print(markdown(audit))
    if args.tensors:
        for r in audit.rows:
            if r.differ:
                print(f"#{r.index} {r.op_type} {r.tensor}: {r.differ}/{r.size} differ, worst "
                      f"{r.worst:g}{' (introduced)' if r.introduced else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
