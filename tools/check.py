"""`tf2ir check MODEL`: which plugin maps each TF op type, what is unsupported and which
scope fusions would apply, without converting (no IR is built, nothing is written).

It judges the graph `convert` would convert: the nodes the outputs need. Unsupported nodes
that no output needs (an Assert only a control edge reaches, the unused branch of lowered
control flow) are pruned by `convert`; they are listed apart and do not fail the check."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional

from tf2ir.ir.errors import ExitStatus
from tf2ir.tools.options import (
    EPILOG, MODEL_HELP, add_common, add_fallback_option, add_fusion_option, add_model_source,
    add_shape_options, pipeline_from_args,
)

# Op types the converter handles itself, without a plugin.
CONVERTER_OPS = {"Placeholder", "Const", "NoOp"}


@dataclass
class OpTypeSupport:
    op_type: str
    count: int
    status: str   # "mapped" | "converter" | "fused" | "unsupported" | "pruned" | "fallback"
    ir_op_type: Optional[str] = None
    plugin: Optional[str] = None
    example: str = ""                # a node of this type (for unsupported ones: one left after fusion)
    fused_by: List[str] = field(default_factory=list)


@dataclass
class SupportReport:
    model: str
    tf_nodes: int
    supported: bool
    op_types: List[OpTypeSupport]
    unsupported: List[OpTypeSupport]
    fusions: Dict[str, int]          # pass name → matches it would fuse
    # op types no plugin maps whose nodes no output needs: convert prunes them
    pruned_unsupported: List[OpTypeSupport] = field(default_factory=list)
    # --fallback tf: the segments TensorFlow would run
    segments: List[SegmentInfo] = field(default_factory=list)


@dataclass
class SegmentInfo:
    name: str                        # the TFSubgraph node that stands for it
    nodes: int
    op_types: Dict[str, int]
    share: float                     # of the converted model's TF nodes
    inputs: int
    outputs: int


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "check", help="report which op types of a model are supported, without converting",
        description="List every TF op type of MODEL with its count and the plugin (and IR op) "
                    "that maps it, the unsupported op types with an example node each, and the "
                    "scope fusions that would apply. Exit 0 when everything is supported, 3 if not.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help=MODEL_HELP)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_shape_options(parser)
    add_fusion_option(parser)
    add_fallback_option(parser)
    add_common(parser)
    add_model_source(parser)
    return parser


def support_report(pipeline, graph_def, model: str, outputs=None) -> SupportReport:
    """The support report of a GraphDef, from the pipeline's front half, so it covers exactly
    the nodes `convert` would map: op types before fusion, support after it."""
    from tf2ir.parser.convert import PASSTHROUGH
    from tf2ir.parser.graph_view import TfGraph

    from tf2ir.parser.fallback import FALLBACK_OP
    manager = pipeline.manager
    front = pipeline.front(graph_def, model, outputs)
    after = _by_type(front.tf_graph, [n for n in front.kept
                                      if front.tf_graph[n].op_type != FALLBACK_OP])
    in_segments: Dict[str, List[str]] = {}
    for segment in front.segments:
        for name in segment.nodes:
            in_segments.setdefault(segment.op_type_of[name], []).append(name)
    # Before fusion: the nodes of the unfused graph the same outputs need.
    before_graph = TfGraph(graph_def, model)
    _inline_for_report(pipeline, before_graph)
    before_kept = before_graph.upstream(sorted({n for n, _ in front.outputs if n in before_graph},
                                               key=list(before_graph.nodes).index))
    before = _by_type(before_graph, before_kept)
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
        row = OpTypeSupport(op_type, len(names), "mapped", example=names[0],
                            fused_by=sorted(fused_types.get(op_type, ())))
        reg = manager.lookup(op_type)
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
    pruned = _by_type(before_graph, [n for n in before_graph.nodes if n not in kept])
    pruned_rows = [OpTypeSupport(op_type, len(names), "pruned", example=names[0])
                   for op_type, names in sorted(pruned.items())
                   if manager.lookup(op_type) is None and op_type not in CONVERTER_OPS
                   and op_type not in PASSTHROUGH]
    total = len(front.kept) - len(front.segments) + sum(len(s.nodes) for s in front.segments)
    segments = [SegmentInfo(s.name, len(s.nodes), s.op_types_counts(), len(s.nodes) / total,
                            len(s.inputs), len(s.outputs)) for s in front.segments]
    return SupportReport(model, sum(len(v) for v in before.values()), not unsupported,
                         rows, unsupported, front.fusions, pruned_rows, segments)


def _inline_for_report(pipeline, tf_graph) -> None:
    from tf2ir.parser.functions import inline_functions
    inline_functions(tf_graph, pipeline)


def _by_type(tf_graph, names: List[str]) -> Dict[str, List[str]]:
    found: Dict[str, List[str]] = {}
    for name in names:
        found.setdefault(tf_graph[name].op_type, []).append(name)
    return found


def run(args) -> int:
    pipeline = pipeline_from_args(args)
    graph_def, outputs = pipeline.load(args.model)
    report = support_report(pipeline, graph_def, args.model, pipeline.options.outputs or outputs)
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        print(format_report(report))
    return ExitStatus.OK if report.supported else ExitStatus.UNSUPPORTED


def format_report(report: SupportReport) -> str:
    """An aligned table: op type, count, IR op, plugin (or why there is none)."""
    header = ("OP TYPE", "COUNT", "IR OP", "PLUGIN")
    table = []
    for row in report.op_types:
        if row.status == "mapped":
            ir_op, plugin = row.ir_op_type, row.plugin
        elif row.status == "converter":
            ir_op, plugin = "-", "(converter: input, constant or dropped)"
        elif row.status == "fused":
            ir_op, plugin = "-", f"(fused by {', '.join(row.fused_by)})"
        elif row.status == "fallback":
            ir_op, plugin = row.ir_op_type, "(run by TensorFlow: --fallback tf)"
        else:
            ir_op, plugin = "-", f"UNSUPPORTED, e.g. '{row.example}'"
        if row.fused_by and row.status != "fused":
            plugin += f"  [fusion: {', '.join(row.fused_by)}]"
        table.append((row.op_type, str(row.count), ir_op, plugin))
    widths = [max(len(r[i]) for r in table + [header]) for i in range(3)]
    lines = [f"{header[0]:<{widths[0]}}  {header[1]:>{widths[1]}}  {header[2]:<{widths[2]}}  "
             f"{header[3]}"]
    lines += [f"{a:<{widths[0]}}  {b:>{widths[1]}}  {c:<{widths[2]}}  {d}" for a, b, c, d in table]
    lines.append(f"{report.tf_nodes} TF nodes, {len(report.op_types)} op types, "
                 f"{len(report.unsupported)} unsupported")
    if report.fusions:
        width = max(len(name) for name in report.fusions)
        for name, count in report.fusions.items():
            lines.append(f"fusion {name:<{width}}  {count} match{'es' if count != 1 else ''}")
    else:
        lines.append("no scope fusion applies")
    if report.unsupported:
        parts = [f"{r.op_type} ({r.count}x, e.g. '{r.example}')" for r in report.unsupported]
        lines.append("unsupported: " + ", ".join(parts))
    for seg in report.segments:
        types = ", ".join(f"{op} {n}" for op, n in sorted(seg.op_types.items()))
        lines.append(f"fallback segment {seg.name}: {seg.nodes} node{'s' * (seg.nodes != 1)} "
                     f"({seg.share:.1%} of the model), {seg.inputs} in, {seg.outputs} out: "
                     f"{types}")
    if report.pruned_unsupported:
        parts = [f"{r.op_type} ({r.count}x, e.g. '{r.example}')"
                 for r in report.pruned_unsupported]
        lines.append("pruned, not converted (no output needs them): " + ", ".join(parts))
    return "\n".join(lines)

