"""What every `tf2ir verify` shares, whichever the reference (TensorFlow, tools/verify.py; the
LiteRT interpreter, tools/verify_tflite.py): the options, one output's comparison, the
verification's verdict, the inputs drawn and the onnxruntime side."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.tools.options import DEFAULT_ATOL, DEFAULT_RTOL

EXIT_OK = ExitStatus.OK
EXIT_MISMATCH = ExitStatus.MISMATCH


@dataclass
class VerifyOptions:
    """How to make the inputs and how close the outputs must be."""
    # FILE.npz or NAME=FILE.npy items, or (tf2ir.verify) {input name: array}
    inputs_data: Union[Sequence[str], Mapping[str, np.ndarray]] = ()
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    seed: int = 0
    batch: Optional[int] = None        # value of unknown dimensions (default 1)


@dataclass
class Comparison:
    name: str
    shape: Tuple[int, ...]
    max_abs: float
    max_rel: float
    ok: bool
    note: str = ""


@dataclass
class Verification:
    """One verification: each output's comparison with TensorFlow, the inputs both sides ran
    on, and on a mismatch the line naming the first diverging node (when it was looked for)."""
    outputs: List[Comparison]
    inputs: Dict[str, np.ndarray]
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    seed: int = 0
    first_divergence: Optional[str] = None

    @property
    def passed(self) -> bool:
        return all(row.ok for row in self.outputs)

    @property
    def exit_status(self) -> int:
        return EXIT_OK if self.passed else EXIT_MISMATCH

    def summary(self) -> str:
        """The verdict line `tf2ir verify` prints under its table."""
        rows, bad = self.outputs, [r for r in self.outputs if not r.ok]
        inputs = ", ".join(f"{k} {list(v.shape)} {v.dtype}" for k, v in self.inputs.items())
        tolerance = f"rtol={self.rtol:g} atol={self.atol:g} (inputs: {inputs}; seed {self.seed})"
        if not bad:
            return (f"verification passed: {len(rows)} output{'s' if len(rows) != 1 else ''} "
                    f"within {tolerance}")
        return (f"verification FAILED: {len(bad)} of {len(rows)} outputs differ beyond "
                f"{tolerance}")

    def text(self) -> str:
        """What `tf2ir verify` prints: the per-output table, the verdict, the divergence."""
        lines = _table(self.outputs) + [self.summary()]
        if self.first_divergence is not None and not self.passed:
            lines.append(self.first_divergence)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()


def compare(name: str, actual, expected, rtol: float, atol: float) -> Comparison:
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        return Comparison(name, tuple(actual.shape), float("inf"), float("inf"), False,
                          f"shape {list(actual.shape)} != TF {list(expected.shape)}")
    if actual.dtype.kind in "OSU" or expected.dtype.kind in "OSU":
        same = bool(np.all(actual == expected))
        return Comparison(name, tuple(actual.shape), 0.0 if same else float("inf"),
                          0.0 if same else float("inf"), same)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    if a.size == 0:
        return Comparison(name, tuple(a.shape), 0.0, 0.0, True)
    both_nan = np.isnan(a) & np.isnan(e)
    diff = np.where(both_nan, 0.0, np.abs(a - e))
    diff = np.where(np.isnan(diff), np.inf, diff)   # NaN on one side only
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(diff == 0, 0.0, diff / np.abs(e))
    rel = np.where(np.isnan(rel), np.inf, rel)
    ok = bool(np.all(diff <= atol + rtol * np.abs(np.nan_to_num(e))))
    return Comparison(name, tuple(a.shape), float(diff.max()), float(rel.max()), ok)


def _table(rows: List[Comparison]) -> List[str]:
    width = max([len(r.name) for r in rows] + [6])
    shape_width = max([len(str(list(r.shape))) for r in rows] + [5])
    lines = [f"{'OUTPUT':<{width}}  {'SHAPE':<{shape_width}}  {'MAX ABS ERR':>11}  "
             f"{'MAX REL ERR':>11}  OK"]
    for r in rows:
        note = f"  {r.note}" if r.note else ""
        lines.append(f"{r.name:<{width}}  {str(list(r.shape)):<{shape_width}}  "
                     f"{r.max_abs:>11.3e}  {r.max_rel:>11.3e}  {'yes' if r.ok else 'NO'}{note}")
    return lines


def make_inputs(model, options: VerifyOptions, tf_graph=None) -> Dict[str, np.ndarray]:
    """One array per ONNX graph input: the user's (.npz / NAME=.npy) or random, seeded,
    of the input's dtype and shape with unknown dimensions set to `options.batch` or 1;
    random integers within what the TF graph `tf_graph` (a tf.Graph or GraphDef) can take
    (tools/verify_inputs.py: below the rows of the tables an input indexes, 0/1 for a mask)."""
    from onnx import helper
    from tf2ir.tools.runtime import load_inputs_data
    from tf2ir.tools.verify_inputs import bounds_for, draw
    given = dict(options.inputs_data) if isinstance(options.inputs_data, Mapping) \
        else load_inputs_data(options.inputs_data)   # tf2ir.verify: {name: array}
    bounds = bounds_for(model, tf_graph, list(given), options.batch)
    rng = np.random.default_rng(options.seed)
    feeds = {}
    for inp in model.graph.input:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(inp.type.tensor_type.elem_type))
        if inp.name in given:
            feeds[inp.name] = np.asarray(given.pop(inp.name)).astype(dtype, copy=False)
            continue
        dims = inp.type.tensor_type.shape.dim
        shape = tuple(d.dim_value if d.HasField("dim_value") else (options.batch or 1)
                      for d in dims)
        feeds[inp.name] = draw(rng, dtype, shape, bounds.get(inp.name))
    if given:
        raise ConversionError(f"--inputs-data names {', '.join(sorted(given))}, which "
                              f"{'is not an input' if len(given) == 1 else 'are not inputs'} of "
                              f"the model (inputs: {', '.join(feeds)})", exit_code=ExitStatus.USAGE)
    return feeds


def _run_onnx(model, feeds: Dict[str, np.ndarray], names: List[str],
              prototypes=None) -> List[np.ndarray]:
    """Run `model` in onnxruntime; plugin ops run by the kernels of the conversion's plugins
    (prototype table `prototypes`, its pipeline's; None: the default plugin manager's),
    fallback segments by TensorFlow. A refusal of the input values is one line."""
    from tf2ir.tools.runtime import InferenceSession
    from tf2ir.tools.verify_inputs import refusal
    with tempfile.TemporaryDirectory(prefix="tf2ir_verify_") as tmp:
        source = model
        if model.ByteSize() >= 1_800_000_000:   # over protobuf's 2 GB: external data
            import onnx
            source = os.path.join(tmp, "model.onnx")
            onnx.save_model(model, source, save_as_external_data=True)
        session = InferenceSession(source, prototypes=prototypes)
        with refusal("onnxruntime", feeds, model):
            return session.run(names, feeds)


def as_converted(model, feeds: Dict[str, np.ndarray], fetch_name=lambda name: name):
    """(the reference's feeds, its fetches, a function taking its outputs to the ONNX
    model's) for a model converted with renamed or channels-first inputs and outputs, or
    float16 ones (the options compile recorded in it, ir/export.py): the reference (TF, the
    LiteRT interpreter) sees the original names and layouts; `fetch_name` spells an original
    output name as the reference fetches it."""
    from tf2ir.ir.export import recorded
    from tf2ir.ir.io_options import interface_map

    def ranks(values) -> Dict[str, int]:
        return {v.name: len(v.type.tensor_type.shape.dim) for v in values}
    export = recorded(model)
    inputs, outputs = interface_map(export, ranks(model.graph.input), ranks(model.graph.output))
    references = {}
    for name, feed in feeds.items():
        original, perm = inputs.get(name, (name, None))
        if export.io_precision == "fp16" and feed.dtype == np.float16:
            feed = feed.astype(np.float32)
        references[original] = feed if perm is None else np.transpose(feed, np.argsort(perm))
    order = [outputs.get(o.name, (o.name, None)) for o in model.graph.output]

    def as_written(arrays: List[np.ndarray]) -> List[np.ndarray]:
        return [a if perm is None else np.transpose(a, perm) for a, (_, perm) in zip(arrays, order)]
    return references, [fetch_name(original) for original, _ in order], as_written


# -- the report's per-node errors (tools/report.py, tools/verify_tflite.py) ------------------
def finite(x: float) -> float:
    """`x` for the report's JSON: NaN and infinities as 1e300."""
    return float(x) if x == x and abs(x) != float("inf") else 1e300


def node_error_table(rows: Sequence[Comparison], options: VerifyOptions) -> Dict[str, object]:
    """The report's errors: the outputs' rows, the tolerances, no node compared yet."""
    return {"outputs": [{"name": r.name, "shape": list(r.shape), "abs": finite(r.max_abs),
                         "rel": finite(r.max_rel), "ok": r.ok, "note": r.note} for r in rows],
            "rtol": options.rtol, "atol": options.atol, "seed": options.seed,
            "nodes": {}, "first": None}


def note_node_error(errors: Dict[str, object], node: str, row: Comparison) -> None:
    """Keep node `node`'s worst comparison in `errors`; the first failing node is `first`."""
    nodes: Dict[str, Dict[str, object]] = errors["nodes"]   # type: ignore[assignment]
    entry = {"abs": finite(row.max_abs), "rel": finite(row.max_rel), "ok": row.ok}
    if node not in nodes or entry["rel"] > nodes[node]["rel"]:   # type: ignore[operator]
        nodes[node] = entry
    if not row.ok and errors["first"] is None:
        errors["first"] = node
