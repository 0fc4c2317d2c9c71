"""`tf2ir check MODEL`: a dry run of `convert`. Which plugin maps each TF op type, what is
unsupported, which scope fusions apply, and every error `convert` would meet, without
writing anything.

It runs the conversion `convert` runs: load, graph view, inlining, scope fusion, mapping
(each function body and raised loop or If body through the same pipeline, when the node
that holds it is mapped), the IR passes, the lowering to ONNX, the ONNX passes and
onnx.checker's full check (of a model compiled into a temporary directory that is removed).
Its exit status is the one `convert` would exit with (0, 1, 2 or 3), and its error line is
`convert`'s. The errors are listed by op type, each with a count and an example node: the
unsupported op types (function bodies' too), the mapping failures (dtype, shape and other
refusals), and, when mapping succeeds, every node whose lowering fails (not only the
first), or the pass or checker rejection. A stage after one that fails is not run, as
`convert` does not reach it. Errors before the report can be built (loading, a damaged graph,
bad --inputs/--outputs) are one line on stderr, as `convert` prints them, except a graph
that loads and fails in the front half (a fusion refusal, control flow that does not raise):
its report lists the op types of the graph as loaded and that one error. (The report's types
and text are tools/check_report.py; the errors, by op type, tools/check_problems.py.)

It judges the graph `convert` would convert: the nodes the outputs need. Unsupported nodes
that no output needs (an Assert only a control edge reaches, the unused branch of lowered
control flow) are pruned by `convert`; they are listed apart and do not fail the check."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from dataclasses import asdict
from typing import Dict, List

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.plugins.registry import TENSORFLOW
# The report's types and text, and the errors the dry run meets, importable from here too.
from tf2ir.tools.check_problems import (  # noqa: F401
    _add_body_unsupported, _chain, _failed, _function_rows, _internal, _kind, _lowering_problems,
    _problem, _walk_problems)
from tf2ir.tools.check_report import (  # noqa: F401
    CONVERTER_OPS, OpTypeSupport, Problem, SegmentInfo, SupportReport, _op_type_row, _place,
    _status_text, format_report, node_frameworks)
from tf2ir.tools.options import (
    EPILOG, MODEL_HELP, add_common, add_fallback_option, add_fusion_option, add_model_source,
    add_opset_option, add_pass_options, add_shape_options, pipeline_from_args,
)


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "check", help="a dry run of convert: supported op types and every error convert "
                      "would meet, nothing written",
        description="A dry run of convert (mapping, function bodies, lowering, passes, "
                    "onnx.checker; nothing is written). List every op type of MODEL (TF's, "
                    "or a .tflite's, framework TFLITE) with "
                    "its count and the plugin (and IR op) that maps it, the unsupported op "
                    "types with an example node each, the scope fusions that apply, and every "
                    "error convert would meet. Exit with convert's status: 0 when it converts, "
                    "3 for op types no plugin maps, 1 for other conversion errors, 2 for "
                    "usage errors.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help=MODEL_HELP)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_shape_options(parser)
    add_fusion_option(parser)
    add_pass_options(parser)
    add_fallback_option(parser)
    add_opset_option(parser)
    add_common(parser)
    add_model_source(parser)
    return parser


def support_report(pipeline, graph_def, model: str, outputs=None,
                   dry_run: bool = True) -> SupportReport:
    """The support report of a GraphDef, from the pipeline's front half, so it covers exactly
    the nodes `convert` would map: op types before fusion, support after it; with `dry_run`,
    then the rest of `convert` (mapping, compiling, checking) with every error it meets."""
    from tf2ir.parser.convert import PASSTHROUGH
    from tf2ir.parser.graph_view import TfGraph

    from tf2ir.parser.fallback import FALLBACK_OP
    manager = pipeline.manager
    try:
        front = pipeline.front(graph_def, model, outputs)
    except ConversionError as exc:
        if exc.exit_code == ExitStatus.USAGE or not dry_run:
            raise
        return _front_failed(pipeline, graph_def, model, exc)
    after = _by_type(front.tf_graph, [n for n in front.kept
                                      if front.tf_graph[n].op_type != FALLBACK_OP])
    in_segments: Dict[str, List[str]] = {}
    for segment in front.segments:
        for name in segment.nodes:
            in_segments.setdefault(segment.op_type_of[name], []).append(name)
    # Before fusion: the nodes of the unfused graph the same outputs need.
    before_graph = _unfused_graph(pipeline, graph_def, model)
    before_kept = before_graph.upstream(sorted({n for n, _ in front.outputs if n in before_graph},
                                               key=list(before_graph.nodes).index))
    before = _by_type(before_graph, before_kept)
    frameworks = {**node_frameworks(front.tf_graph, front.kept),
                  **node_frameworks(before_graph, before_kept)}
    fused_types: Dict[str, set] = {}   # op type → the passes that absorbed or made its nodes
    for name in front.kept:
        node = front.tf_graph[name]
        if getattr(node, "pass_name", ""):
            fused_types.setdefault(node.op_type, set()).add(node.pass_name)
        for inner in getattr(node, "inner_nodes", ()):
            fused_types.setdefault(inner.op_type, set()).add(node.pass_name)

    rows, unsupported = [], []
    for op_type in sorted(set(before) | set(after)):
        names = before.get(op_type) or after[op_type]
        left = after.get(op_type, [])
        framework = frameworks.get(op_type, TENSORFLOW)
        row = OpTypeSupport(op_type, len(names), "mapped", example=names[0],
                            fused_by=sorted(fused_types.get(op_type, ())), framework=framework)
        reg = manager.lookup(op_type, framework)
        if reg is not None:
            row.ir_op_type, row.plugin = reg.ir_type, reg.plugin
        elif op_type in CONVERTER_OPS or op_type in PASSTHROUGH:
            row.status = "converter"
        elif op_type in in_segments:
            row.status, row.ir_op_type, row.plugin = "fallback", FALLBACK_OP, "TensorFlow"
        elif not left:
            row.status = "fused"
        else:
            row.status, row.example, row.count = "unsupported", left[0], len(left)
            unsupported.append(row)
        rows.append(row)
    kept = set(before_kept)
    pruned_names = [n for n in before_graph.nodes if n not in kept]
    pruned = _by_type(before_graph, pruned_names)
    pruned_frameworks = node_frameworks(before_graph, pruned_names)
    pruned_rows = [OpTypeSupport(op_type, len(names), "pruned", example=names[0],
                                 framework=pruned_frameworks[op_type])
                   for op_type, names in sorted(pruned.items())
                   if manager.lookup(op_type, pruned_frameworks[op_type]) is None
                   and op_type not in CONVERTER_OPS and op_type not in PASSTHROUGH]
    total = len(front.kept) - len(front.segments) + sum(len(s.nodes) for s in front.segments)
    segments = [SegmentInfo(s.name, len(s.nodes), s.op_types_counts(), len(s.nodes) / total,
                            len(s.inputs), len(s.outputs)) for s in front.segments]
    report = SupportReport(model, sum(len(v) for v in before.values()), not unsupported,
                           rows, unsupported, front.fusions, pruned_rows, segments,
                           framework=getattr(front.tf_graph, "framework", TENSORFLOW))
    if dry_run:
        _dry_run(pipeline, front, model, report)
    return report


def _unfused_graph(pipeline, graph_def, model: str):
    """The graph as loaded, before scope fusion (which rewrites the front's view in place):
    a GraphDef's view with its functions inlined, or a TFLite model's view built again."""
    from tf2ir.parser.graph_view import TfGraph
    if isinstance(graph_def, TfGraph):   # a TFLite model's view (parser/tflite_view.py)
        return type(graph_def)(graph_def.tflite, graph_def.subgraph.index, graph_def.model)
    tf_graph = TfGraph(graph_def, model)
    _inline_for_report(pipeline, tf_graph)
    return tf_graph


def _inline_for_report(pipeline, tf_graph) -> None:
    from tf2ir.parser.functions import inline_functions
    inline_functions(tf_graph, pipeline)


def _by_type(tf_graph, names: List[str]) -> Dict[str, List[str]]:
    found: Dict[str, List[str]] = {}
    for name in names:
        found.setdefault(tf_graph[name].op_type, []).append(name)
    return found


# -- the dry run -----------------------------------------------------------------------------
def _front_failed(pipeline, graph_def, model: str, exc: ConversionError) -> SupportReport:
    """The report of a graph whose front half (inlining, fusion, outputs) fails: its op types
    as loaded (every node), and the one error."""
    from tf2ir.parser.graph_view import TfGraph
    if isinstance(graph_def, TfGraph):   # a TFLite model's view: built again, unfused
        tf_graph = type(graph_def)(graph_def.tflite, graph_def.subgraph.index, graph_def.model)
    else:
        tf_graph = TfGraph(graph_def, model)    # the front built it once: it does not fail here
    frameworks = node_frameworks(tf_graph, list(tf_graph.nodes))
    rows = []
    for op_type, names in sorted(_by_type(tf_graph, list(tf_graph.nodes)).items()):
        rows.append(_op_type_row(pipeline.manager, op_type, len(names), names[0],
                                 frameworks[op_type]))
    report = SupportReport(model, len(tf_graph.nodes), False, rows, [], {},
                           framework=getattr(tf_graph, "framework", TENSORFLOW))
    _failed(report, exc, "front")
    report.errors = [_problem(exc, "front")]
    return report


def _dry_run(pipeline, front, model: str, report: SupportReport) -> None:
    """Map, compile and check as `convert` does, filling the report's verdict and errors."""
    from tf2ir.parser.pipeline import Walk
    walks: List[Walk] = []
    saved, pipeline.walks = pipeline.walks, walks
    report.stage = "mapping"
    try:
        graph, _ = pipeline.map(front)
    except ConversionError as exc:
        _failed(report, exc, "mapping")
        report.errors = _walk_problems(walks, exc) or [_problem(exc, "mapping")]
        _add_body_unsupported(report)
        return
    except Exception as exc:   # noqa: BLE001 - tf2ir's bug: convert's "internal error" too
        _internal(report, exc, "mapping")
        return
    finally:
        pipeline.walks = saved
        report.function_op_types = _function_rows(pipeline.manager, walks)
    _compile(pipeline, graph, model, report)


def _compile(pipeline, graph, model: str, report: SupportReport) -> None:
    """`convert`'s compile and onnx.checker, into a temporary directory that is removed."""
    from tf2ir.ir.onnx.compile import pass_manager
    options = pipeline.options
    manager = pass_manager(options.passes, options.check_passes)
    stages = {"ir": ("IR passes", "lowering"), "onnx": ("ONNX passes", "model")}
    run = manager.run

    def tracked(g, kind=None):
        report.stage = stages.get(kind, (report.stage,))[0]
        counts = run(g, kind)
        report.stage = stages.get(kind, (report.stage, report.stage))[1]
        return counts
    manager.run = tracked    # type: ignore[method-assign]
    report.stage = "IR passes"
    try:
        with tempfile.TemporaryDirectory(prefix="tf2ir-check-") as directory:
            pipeline.compile(graph, os.path.join(directory, "model.onnx"), model=model,
                             manager=manager)
    except ConversionError as exc:
        stage = "checker" if exc.message.startswith("the ONNX model fails onnx.checker") \
            else report.stage
        _failed(report, exc, stage)
        report.errors = _lowering_problems(graph, model) if stage == "lowering" else []
        if not report.errors or (report.errors[0].example, report.errors[0].op_type) != \
                (exc.node or "", exc.op_type or ""):
            report.errors.insert(0, _problem(exc, stage))
        return
    except Exception as exc:   # noqa: BLE001
        _internal(report, exc, report.stage)
        return
    report.stage = "checker"


def check_source(pipeline, source) -> SupportReport:
    """`tf2ir check` and `tf2ir.check`: the support report of `source` (tools/api_core.Source:
    a model file, or a GraphDef in memory) with `pipeline`'s plugins and options."""
    if source.path is not None:
        graph_def, outputs = pipeline.load(source.path)
    else:
        graph_def, outputs = source.graph_def, source.outputs
    return support_report(pipeline, graph_def, source.label, pipeline.options.outputs or outputs)


def run(args) -> int:
    from tf2ir.tools.api_core import Source
    report = check_source(pipeline_from_args(args), Source(args.model, path=args.model))
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        print(format_report(report))
    return report.exit_status
