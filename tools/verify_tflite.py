"""`tf2ir verify` of a .tflite model: the reference is the LiteRT interpreter
(tools/tflite_reference.py: ai_edge_litert, else tf.lite), not TensorFlow.

The inputs are drawn as for any model (tools/verify.py make_inputs: the ONNX inputs' dtypes
and shapes, --inputs-data, --seed, --batch), except a quantized input (int8/uint8/int16 with
a scale): its values are standard-normal floats quantized by the input's own scale and zero
point, the values the model was calibrated for. Outputs compare as for TensorFlow (rtol,
atol), except quantized ones: a quantized output (its integers) within one quantization step,
and a float output that TFLite dequantized from a quantized tensor within one step of that
tensor's scale (besides atol/rtol): the interpreter's integer kernels and onnxruntime's may
round one step apart. On a mismatch, the first operator whose output tensor diverges (every
intermediate the interpreter kept, in the order TFLite runs them) is named."""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Tuple

import numpy as np

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.export import recorded


def tflite_of(model_path: str, graph_def=None):
    """(TfLiteModel, subgraph index) when the verified source is a TFLite model (a .tflite
    file, or the view of bytes given to tf2ir.verify), else None."""
    if graph_def is not None:
        tflite = getattr(graph_def, "tflite", None)
        return (tflite, graph_def.subgraph.index) if tflite is not None else None
    import os
    from tf2ir.parser.tflite_model import is_tflite_file, read_tflite
    if not model_path or os.path.isdir(model_path) or not is_tflite_file(model_path):
        return None
    return read_tflite(model_path), None


def verify_tflite(tflite, subgraph: Optional[int], model, options, source=None, progress=None,
                  prototypes=None, report=None, state: Optional[dict] = None):
    """The Verification of ONNX `model` against the interpreter running `tflite` (a
    TfLiteModel; `subgraph` the index converted, None: the one `source`'s signature selects).
    `state`: a dict to receive what a per-node comparison needs after it."""
    from tf2ir.tools.progress import PhaseLine
    progress = progress or PhaseLine(False)
    from tf2ir.parser.tflite_view import signature_subgraph
    from tf2ir.tools.tflite_reference import load_interpreter
    from tf2ir.tools.verify_core import Verification, _run_onnx, compare
    index, signature = signature_subgraph(tflite, (source or {}).get("signature"))
    if subgraph is not None and subgraph != index:
        signature = next((s for s in tflite.signatures if s.subgraph == subgraph), None)
        index = subgraph
    sg = tflite.subgraphs[index]
    feeds = tflite_inputs(model, options, sg)
    references, fetches, as_written = _interface(model, feeds)
    path = tflite.path
    interpreter = load_interpreter(path, content=tflite.data or None, preserve_all=True)
    progress.phase("running the LiteRT interpreter")
    expected = _run_reference(tflite, sg, index, signature, interpreter, references, fetches)
    names = [o.name for o in model.graph.output]
    progress.phase("running onnxruntime")
    actual = _run_onnx(model, feeds, names, prototypes)
    progress.close()
    steps = quantization_steps(sg)
    rows = []
    for name, fetch, a, e in zip(names, fetches, actual, as_written([expected[f] for f in fetches])):
        step = steps.get(fetch)
        if step is None:
            rows.append(compare(name, a, e, options.rtol, options.atol))
            continue
        row = compare(name, a, e, options.rtol, max(options.atol, step * (1 + 1e-6)))
        row.note = ("quantized: within 1 step" if a.dtype.kind in "iu" else
                    f"dequantized: within one step ({step:.3g})")
        rows.append(row)
    result = Verification(rows, feeds, options.rtol, options.atol, options.seed)
    if state is not None:
        state.update(tflite=tflite, index=index, interpreter=interpreter, steps=steps)
    if not result.passed and report is not None and recorded(model).default and index == 0:
        result.first_divergence = first_divergence(model, tflite, index, feeds, report, options,
                                                   interpreter, prototypes, steps)
    return result


def tflite_inputs(model, options, sg) -> Dict[str, np.ndarray]:
    """make_inputs' feeds, a quantized input's drawn as its quantized floats (see above)."""
    from tf2ir.tools.runtime import load_inputs_data
    from tf2ir.tools.verify_core import make_inputs
    from tf2ir.parser.tflite_view import is_quantized
    feeds = make_inputs(model, options)
    given = set(options.inputs_data) if isinstance(options.inputs_data, Mapping) \
        else set(load_inputs_data(options.inputs_data)) if options.inputs_data else set()
    tensors = {sg.tensors[i].name: sg.tensors[i] for i in sg.inputs}
    rng = np.random.default_rng(options.seed + 1)
    for name, feed in feeds.items():
        t = tensors.get(name)
        if name in given or t is None or not is_quantized(t) or feed.dtype.kind not in "iu":
            continue
        q = t.quantization
        real = rng.standard_normal(feed.shape)
        info = np.iinfo(feed.dtype)
        values = np.round(real / float(q.scale[0])) + int(q.zero_point[0])
        feeds[name] = np.clip(values, info.min, info.max).astype(feed.dtype)
    return feeds


def quantization_steps(sg) -> Dict[str, float]:
    """Tensor name → the tolerance of one quantization step in its own units: 1 for a
    quantized integer tensor, the input's scale for a DEQUANTIZE's float output."""
    from tf2ir.parser.tflite_view import is_quantized, step_sizes
    quantized = {t.name for t in sg.tensors if is_quantized(t)}
    steps = {name: size for name, size in step_sizes(sg).items() if name not in quantized}
    steps.update((name, 1.0) for name in quantized)
    return steps


def _interface(model, feeds: Dict[str, np.ndarray]):
    """(the interpreter's feeds, its fetches (tensor names), ONNX-layout outputs) through
    the renames and channels-first options recorded in the model (verify_core.as_converted)."""
    from tf2ir.tools.verify_core import as_converted
    return as_converted(model, feeds)


def _run_reference(tflite, sg, index: int, signature, interpreter, feeds, fetches):
    from tf2ir.tools.tflite_reference import run_signature, run_tflite
    from tf2ir.tools.verify_inputs import refusal
    with refusal("the LiteRT interpreter", feeds):
        if index == 0:
            return run_tflite(tflite.path, feeds, fetches, interpreter=interpreter)
        if signature is None:
            raise ConversionError(f"subgraph {index} has no signature the interpreter can run",
                                  model=tflite.path, exit_code=ExitStatus.USAGE)
        names = {i: t.name for i, t in enumerate(sg.tensors)}
        outputs = run_signature(tflite.path, signature.key, feeds,
                                {k: names[v] for k, v in signature.inputs.items()},
                                {k: names[v] for k, v in signature.outputs.items()},
                                interpreter=interpreter)
    missing = [f for f in fetches if f not in outputs]
    if missing:
        raise ConversionError(f"'{missing[0]}' is not an output of signature {signature.key}",
                              model=tflite.path, exit_code=ExitStatus.USAGE)
    return outputs


def tensor_comparisons(model, tflite, index: int, feeds, report, options, interpreter,
                       prototypes, steps: Dict[str, float]):
    """(operator node, op type, TFLite tensor, comparison) of each converted operator output
    still in the ONNX model, in TFLite's order: one debug run of onnxruntime, the
    interpreter's intermediates as kept by its last run (preserve_all)."""
    from onnx import helper
    from tf2ir.parser.tflite_view import TfLiteGraph
    from tf2ir.tools.verify_core import _run_onnx, compare
    candidates = _candidates(model, tflite.subgraphs[index], report, TfLiteGraph(tflite, index))
    if not candidates:
        return
    debug = type(model)()
    debug.CopyFrom(model)
    existing = {o.name for o in debug.graph.output}
    for *_, onnx_name in candidates:
        if onnx_name not in existing:
            debug.graph.output.append(helper.make_tensor_value_info(onnx_name, 0, None))
    actual = _run_onnx(debug, feeds, [c[3] for c in candidates], prototypes)
    by_name = {d["name"]: d["index"] for d in interpreter.get_tensor_details()}
    for (op, op_type, tensor, onnx_name), a in zip(candidates, actual):
        if tensor in by_name:
            step = steps.get(tensor, 0.0)
            yield op, op_type, tensor, compare(onnx_name, a, interpreter.get_tensor(by_name[tensor]),
                                               options.rtol, max(options.atol, step * (1 + 1e-6)))


def first_divergence(model, tflite, index: int, feeds, report, options, interpreter,
                     prototypes, steps: Dict[str, float]) -> str:
    """One line naming the first operator (TFLite's order) whose output tensor, still in the
    ONNX model, differs from the interpreter's."""
    count = 0
    try:
        for op, op_type, tensor, row in tensor_comparisons(model, tflite, index, feeds, report,
                                                           options, interpreter, prototypes, steps):
            count += 1
            if not row.ok:
                plugin = report.node_plugins.get(op, "(none)")
                detail = row.note or f"max abs err {row.max_abs:.3e}, max rel err {row.max_rel:.3e}"
                return (f"first divergence: operator '{op}' (op {op_type}, plugin {plugin}) "
                        f"tensor {tensor}: {detail}")
    except Exception as exc:   # best effort, as verify's: the table was printed
        return f"first divergence: not found (debug run failed: {type(exc).__name__}: {exc})"
    return (f"first divergence: not found among {count} intermediate tensors "
            "(the difference appears only at the outputs)")


def node_errors(model_path: str, onnx_model, report, graph, options, source=None, graph_def=None):
    """tools/report.py node_errors for a .tflite (None when the model is not one): the
    outputs' rows and each operator's error against the interpreter."""
    from tf2ir.ir.prototype import prototypes_of
    from tf2ir.tools.verify_core import EXIT_MISMATCH, EXIT_OK, node_error_table, note_node_error
    found = tflite_of(model_path, graph_def)
    if found is None:
        return None
    state: Dict[str, object] = {}
    result = verify_tflite(*found, onnx_model, options, source, prototypes=prototypes_of(graph),
                           report=None, state=state)
    errors = node_error_table(result.outputs, options)
    try:
        for op, _, _, row in tensor_comparisons(onnx_model, state["tflite"], state["index"],
                                                result.inputs, report, options,
                                                state["interpreter"], prototypes_of(graph),
                                                state["steps"]):
            note_node_error(errors, op, row)
    except Exception as exc:   # best effort, as for TensorFlow
        errors["note"] = f"per-node errors incomplete: {type(exc).__name__}: {exc}"
    return (EXIT_OK if result.passed else EXIT_MISMATCH), errors


def _candidates(model, sg, report, view) -> List[Tuple[str, str, str, str]]:
    """(operator node, its op type, TFLite tensor name, ONNX tensor name) of each converted
    operator output that the ONNX model still computes: a tensor's node is named after it
    (a quantized tensor's is its TFLiteQuantize node, whose input is the operator)."""
    from tf2ir.parser.tflite_view import QUANTIZE
    produced = {name for node in model.graph.node for name in node.output}
    inputs = {i.name for i in model.graph.input}
    tensor_names = {t.name for t in sg.tensors}
    found, seen = [], set()
    for (name, port), value in report.tensors.items():
        if port != 0 or name not in tensor_names or name not in view.nodes or id(value) in seen:
            continue
        seen.add(id(value))
        node = view.nodes[name]
        if node.op_type in ("Placeholder", "Const"):
            continue
        if node.op_type == QUANTIZE and node.inputs:
            node = view.nodes.get(node.inputs[0][0], node)
        if value.name in produced and value.name not in inputs:
            found.append((node.name, node.op_type, name, value.name))
    return found
