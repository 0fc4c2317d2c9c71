"""`tf2ir verify`: run TensorFlow and onnxruntime on the same inputs, compare every output,
and on a mismatch name the first TF node whose converted tensor diverges."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Dict, Iterator, List, Optional, TextIO, Tuple

import numpy as np

from tf2ir.ir.export import recorded
from tf2ir.ir.prototype import prototypes_of
from tf2ir.tools.options import (  # noqa: F401 (the tolerances: importable from here too)
    DEFAULT_ATOL, DEFAULT_RTOL, EPILOG, MODEL_HELP, add_common, add_fallback_option,
    add_model_source, add_shape_options, model_tags,
)

from tf2ir.tools.verify_core import (  # noqa: F401 (importable from here, as before)
    EXIT_MISMATCH, EXIT_OK, Comparison, Verification, VerifyOptions, _run_onnx, _table,
    as_converted, compare, make_inputs,
)

DEBUG_CHUNK = 256   # intermediate tensors fetched per debug run


# -- the command -------------------------------------------------------------------------
def add_options(parser: argparse.ArgumentParser) -> None:
    """The input and tolerance options, shared by `verify` (and usable by other commands)."""
    parser.add_argument("--inputs-data", action="append", default=[], metavar="FILE.npz|NAME=FILE.npy",
                        help="input values: an .npz keyed by input name, or NAME=FILE.npy "
                             "(repeatable; inputs not given are random)")
    parser.add_argument("--rtol", type=float, default=DEFAULT_RTOL,
                        help=f"relative tolerance (default {DEFAULT_RTOL})")
    parser.add_argument("--atol", type=float, default=DEFAULT_ATOL,
                        help=f"absolute tolerance (default {DEFAULT_ATOL})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--batch", type=int, default=None,
                        help="size of unknown input dimensions (default 1)")


def add_parser(subparsers) -> argparse.ArgumentParser:
    verify = subparsers.add_parser(
        "verify", help="convert a TF model and compare onnxruntime with TensorFlow (a "
                       ".tflite: with the LiteRT interpreter)",
        description="Convert a TensorFlow model (frozen GraphDef, SavedModel or Keras file; "
                    "or a TFLite .tflite model, whose reference is the LiteRT interpreter, "
                    "quantized outputs within one quantization step) to ONNX, run both "
                    "TensorFlow and "
                    "onnxruntime on the same inputs and compare every output. On a mismatch, "
                    "the first TF node whose converted tensor diverges is named, with its op "
                    "type and plugin. Exit 0 on a match, 4 on a mismatch.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    verify.add_argument("model", help=MODEL_HELP)
    verify.add_argument("--onnx", default=None, metavar="OUT.onnx",
                        help="also write the converted model here (kept on a mismatch)")
    add_shape_options(verify)
    add_fallback_option(verify)
    add_options(verify)
    add_common(verify)
    add_model_source(verify)
    return verify


def options_from_args(args) -> VerifyOptions:
    return VerifyOptions(inputs_data=getattr(args, "inputs_data", None) or (),
                         rtol=getattr(args, "rtol", DEFAULT_RTOL),
                         atol=getattr(args, "atol", DEFAULT_ATOL),
                         seed=getattr(args, "seed", 0), batch=getattr(args, "batch", None))


def _source(args) -> dict:
    """How to load the model again for TensorFlow: SavedModel signature and tags."""
    return {"signature": getattr(args, "signature", None), "tags": model_tags(args)}


def verify_after_convert(args, report, graph, emit: str = "onnx", progress=None) -> int:
    """`tf2ir convert --verify`: verify the model just written (default inputs and
    tolerances). A mismatch keeps the output file, for debugging, and returns 4."""
    from tf2ir.tools.progress import PhaseLine, wanted
    if progress is not None:
        return _verify_after_convert(args, report, graph, emit, progress)
    with PhaseLine(wanted(getattr(args, "quiet", False))) as progress:
        return _verify_after_convert(args, report, graph, emit, progress)


def _verify_after_convert(args, report, graph, emit, progress) -> int:
    options, source = options_from_args(args), _source(args)
    if emit == "onnx":
        return verify_conversion(args.model, args.output, report, options, graph=graph,
                                 source=source, progress=progress)
    from tf2ir.ir.onnx.compile import compile_to_file
    with tempfile.TemporaryDirectory(prefix="tf2ir_verify_") as tmp:   # --emit ir: compile a copy
        onnx_path = os.path.join(tmp, "model.onnx")
        compile_to_file(graph, onnx_path, model_name=args.model)
        return verify_conversion(args.model, onnx_path, report, options, graph=graph,
                                 source=source, progress=progress)


# -- verification ------------------------------------------------------------------------
def verify_conversion(model_path: str, onnx_path: str, report=None,
                      options: Optional[VerifyOptions] = None, graph=None,
                      out: Optional[TextIO] = None, source: Optional[dict] = None,
                      progress=None, prototypes=None) -> int:
    """Compare the ONNX model at `onnx_path` with the frozen graph at `model_path`; print
    the per-output table (and the first diverging node when `report`, the conversion's
    report, is given). `source` holds the SavedModel signature and tags; `progress` a
    tools.progress.PhaseLine; plugin ops run by the kernels of the prototype table
    `prototypes` (default: the IR `graph`'s, else the default plugin manager's). Return 0 on
    a match, 4 on a mismatch."""
    import onnx
    result = verify_model(model_path, onnx.load(onnx_path), report, options, graph, source,
                          progress, prototypes)
    print(result.text(), file=out or sys.stdout)
    return result.exit_status


def verify_model(model_path: str, model, report=None, options: Optional[VerifyOptions] = None,
                 graph=None, source: Optional[dict] = None, progress=None, prototypes=None,
                 graph_def=None) -> Verification:
    """Compare the ONNX `model` (a ModelProto) with TensorFlow running the model at
    `model_path` (or `graph_def`, a GraphDef already in memory); `report`, the conversion's,
    lets a mismatch name the first diverging node. The rest as `verify_conversion`."""
    from tf2ir.tools.progress import PhaseLine
    if prototypes is None and graph is not None:
        prototypes = prototypes_of(graph)
    options = options or VerifyOptions()
    progress = progress or PhaseLine(False)
    from tf2ir.tools.verify_tflite import tflite_of, verify_tflite
    tflite = tflite_of(model_path, graph_def)
    if tflite is not None:   # a .tflite: the LiteRT interpreter is the reference
        return verify_tflite(*tflite, model, options, source, progress, prototypes, report)
    tf_graph = (_tf_graph(model_path, **(source or {})) if graph_def is None
                else tf_graph_of(graph_def, model_path))
    feeds = make_inputs(model, options, tf_graph)   # integers within what the graph takes
    names = [o.name for o in model.graph.output]
    tf_feeds, fetches, as_written = _as_converted(model, feeds)
    progress.phase("running TensorFlow")
    expected = as_written(_run_tf(tf_graph, tf_feeds, fetches))
    progress.phase("running onnxruntime")
    actual = _run_onnx(model, feeds, names, prototypes)
    progress.close()
    rows = [compare(n, a, e, options.rtol, options.atol) for n, a, e in zip(names, actual, expected)]
    result = Verification(rows, feeds, options.rtol, options.atol, options.seed)
    # (the intermediate tensors of a model with a changed interface are not TF's to compare)
    if not result.passed and report is not None and recorded(model).default:
        result.first_divergence = first_divergence(model, tf_graph, feeds, report, options,
                                                   graph, progress)
        progress.close()
    return result


# -- running both sides ------------------------------------------------------------------
def _as_converted(model, feeds: Dict[str, np.ndarray]):
    """(TF's feeds, TF's fetches, a function taking TF's outputs to the ONNX model's): see
    verify_core.as_converted; TF fetches tensors by name:port."""
    return as_converted(model, feeds, _tf_tensor_name)


def _tf_tensor_name(onnx_name: str) -> str:
    """ONNX names follow the converter: 'node' for port 0, 'node:N' for port N."""
    node, sep, port = onnx_name.rpartition(":")
    return onnx_name if sep and port.isdigit() else onnx_name + ":0"


def _tf_graph(model_path: str, signature: Optional[str] = None, tags=None):
    """The model as TF graph: a frozen .pb as is; a SavedModel or Keras file frozen again
    (deterministically, so the node names are the ones the conversion saw)."""
    from tf2ir.parser.load import load_model
    frozen, _ = load_model(model_path, signature, tags)
    return tf_graph_of(frozen, model_path)


def tf_graph_of(frozen, model: str):
    """A tf.Graph of GraphDef `frozen` (tf2ir's message class or TF's), refused when it holds
    an op TF's loader may not run."""
    from tf2ir.parser.frozen import import_tensorflow
    from tf2ir.parser.loader_trust import check_read
    tf = import_tensorflow()
    check_read(frozen, model, "verify would run the model in TensorFlow, so it is refused")
    graph_def = tf.compat.v1.GraphDef.FromString(frozen.SerializeToString())
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")
    return graph


def _run_tf(graph, feeds: Dict[str, np.ndarray], fetches: List[str]) -> List[np.ndarray]:
    """TF's run; its refusal of the input values is one line (tools/verify_inputs.py).
    Grappler's remapper is off: its oneDNN layer-norm fusion computes transformers' BERT
    LayerNorm wrongly (errors near 1 at batch 8; TF 2.21), and the reference is the graph."""
    import tensorflow as tf
    from tensorflow.core.protobuf import rewriter_config_pb2
    from tf2ir.tools.verify_inputs import refusal
    config = tf.compat.v1.ConfigProto()
    config.graph_options.rewrite_options.remapping = rewriter_config_pb2.RewriterConfig.OFF
    with tf.compat.v1.Session(graph=graph, config=config) as session, \
            refusal("TensorFlow", feeds, graph):
        return session.run(fetches, {f"{k}:0": v for k, v in feeds.items()})


# -- the first diverging node ------------------------------------------------------------
def debug_candidates(model, tf_graph, report, graph=None) -> List[Tuple[str, int, str, int]]:
    """(TF node, port, ONNX tensor name, ONNX element type from the IR) for every converted TF tensor that still exists
    as an ONNX node output (folding and inlining remove some), in topological order."""
    from tf2ir.ir.onnx.writer import ONNX_DTYPES
    produced = {name for node in model.graph.node for name in node.output}
    inputs = {i.name for i in model.graph.input}
    seen, candidates = set(), []
    for (node, port), value in report.tensors.items():
        if id(value) in seen:   # Identity-like nodes share their input's value
            continue
        seen.add(id(value))
        if value.name not in produced or value.name in inputs:
            continue
        if graph is not None and not (graph.has_value(value.name) and graph.value(value.name) is value):
            continue
        try:
            op = tf_graph.get_operation_by_name(node)   # fused nodes do not exist in TF
        except (KeyError, ValueError):
            continue
        if op.type in ("Const", "Placeholder") or port >= len(op.outputs):
            continue
        candidates.append((node, port, value.name, ONNX_DTYPES.get(value.desc.dtype, 0)))
    return candidates


def tensor_comparisons(model, tf_graph, feeds, report, options: VerifyOptions, graph=None,
                       progress=None) -> Iterator[Tuple[str, int, Comparison]]:
    """(TF node, port, comparison) of every converted TF tensor (`debug_candidates`), in
    topological order: the candidates in chunks, each chunk one debug run of both sides
    (a failing run raises)."""
    from onnx import helper
    candidates = debug_candidates(model, tf_graph, report, graph)
    types = _onnx_types(model)
    for start in range(0, len(candidates), DEBUG_CHUNK):
        if progress is not None:
            progress.phase(f"looking for the first divergence: {start}/{len(candidates)} tensors")
        chunk = candidates[start:start + DEBUG_CHUNK]
        debug = type(model)()
        debug.CopyFrom(model)
        existing = {o.name for o in debug.graph.output}
        for _, _, name, ir_elem in chunk:
            if name not in existing:
                elem = types.get(name) or ir_elem
                debug.graph.output.append(helper.make_tensor_value_info(name, elem, None))
        actual = _run_onnx(debug, feeds, [name for _, _, name, _ in chunk],
                           None if graph is None else prototypes_of(graph))
        expected = _run_tf(tf_graph, feeds, [f"{node}:{port}" for node, port, _, _ in chunk])
        for (node, port, name, _), a, e in zip(chunk, actual, expected):
            yield node, port, compare(name, a, e, options.rtol, options.atol)


def first_divergence(model, tf_graph, feeds, report, options: VerifyOptions, graph=None,
                     progress=None) -> str:
    """One line naming the first TF node (topological order) whose converted tensor differs.

    A diverged tensor can feed a node that hides the error (a saturating op, an argmax), so
    divergence is not monotone along the order and a bisection could miss the first one;
    instead the candidates are scanned in chunks (`tensor_comparisons`), stopping at the
    first chunk with a divergence (small models take one run)."""
    count = 0
    try:
        for node, port, row in tensor_comparisons(model, tf_graph, feeds, report, options,
                                                  graph, progress):
            count += 1
            if not row.ok:
                op_type = tf_graph.get_operation_by_name(node).type
                plugin = report.node_plugins.get(node, "(none)")
                detail = row.note or f"max abs err {row.max_abs:.3e}, max rel err {row.max_rel:.3e}"
                return (f"first divergence: node '{node}' (op {op_type}, plugin {plugin}) "
                        f"tensor {node}:{port}: {detail}")
    except Exception as exc:   # a debug run is best effort; the table was printed
        return f"first divergence: not found (debug run failed: {type(exc).__name__}: {exc})"
    return (f"first divergence: not found among {count} intermediate tensors "
            "(the difference appears only at the outputs)")


def _onnx_types(model) -> Dict[str, int]:
    """ONNX element type of every tensor shape inference can type."""
    import onnx
    types = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
        infos = list(inferred.graph.value_info) + list(inferred.graph.output)
    except Exception:
        infos = []
    for info in infos:
        if info.type.HasField("tensor_type"):
            types[info.name] = info.type.tensor_type.elem_type
    return types
