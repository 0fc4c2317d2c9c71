"""`tf2ir check`'s report (tools/check.py): the support of each op type, the errors `convert`
would meet, the fallback segments, and the report as the aligned text `check` prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from tf2ir.ir.errors import ExitStatus

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
    # for a node in a function body: the nodes (If, While, ...) whose functions hold it,
    # outermost first, and the function's name
    within: List[str] = field(default_factory=list)
    function: str = ""
    framework: str = "TENSORFLOW"    # whose op type: TENSORFLOW, or TFLITE (a .tflite's ops)


@dataclass
class Problem:
    """One error `convert` meets, for one op type: its count and an example node."""
    kind: str        # "unsupported op type" | "dtype" | "shape" | "fusion" | "lowering" |
    #                  "pass" | "checker" | "function body" | "failed" | "internal error"
    stage: str       # "front" | "mapping" | "IR passes" | "lowering" | "ONNX passes" | "model"
    #                  | "checker"
    op_type: str
    example: str
    count: int = 1
    plugin: str = ""
    message: str = ""
    exit_status: int = ExitStatus.FAILED
    within: List[str] = field(default_factory=list)   # as OpTypeSupport.within
    function: str = ""


@dataclass
class SupportReport:
    model: str
    tf_nodes: int
    supported: bool                  # convert succeeds (exit_status 0)
    op_types: List[OpTypeSupport]
    unsupported: List[OpTypeSupport]   # function bodies' too (`within` says where)
    fusions: Dict[str, int]          # pass name → matches it would fuse
    # op types no plugin maps whose nodes no output needs: convert prunes them
    pruned_unsupported: List[OpTypeSupport] = field(default_factory=list)
    # --fallback tf: the segments TensorFlow would run
    segments: List[SegmentInfo] = field(default_factory=list)
    # the dry run: the status convert exits with, its error line (without "tf2ir: error: "),
    # every error it meets, the last stage run, and the op types of the function bodies mapped
    exit_status: int = ExitStatus.OK
    convert_error: str = ""
    error_node: str = ""             # the node and op type convert's error line names
    error_op_type: str = ""
    errors: List[Problem] = field(default_factory=list)
    stage: str = ""
    function_op_types: List[OpTypeSupport] = field(default_factory=list)
    framework: str = "TENSORFLOW"    # the model's: TENSORFLOW, or TFLITE for a .tflite


@dataclass
class SegmentInfo:
    name: str                        # the TFSubgraph node that stands for it
    nodes: int
    op_types: Dict[str, int]
    share: float                     # of the converted model's TF nodes
    inputs: int
    outputs: int



def node_frameworks(tf_graph, names) -> Dict[str, str]:
    """op type → the framework of the nodes `names` of that type in `tf_graph` (a TFLite
    view's operators are TFLITE, the TF NodeDefs its Flex ops hold TENSORFLOW)."""
    nodes = tf_graph.nodes
    return {nodes[n].op_type: getattr(nodes[n], "framework", "TENSORFLOW")
            for n in names if n in nodes}


def _op_type_row(manager, op_type: str, count: int, example: str = "",
                 framework: str = "TENSORFLOW") -> OpTypeSupport:
    """One op type's row: the plugin and IR op mapping it, the converter's own, or unsupported."""
    from tf2ir.parser.convert import PASSTHROUGH
    row = OpTypeSupport(op_type, count, "mapped", example=example, framework=framework)
    reg = manager.lookup(op_type, framework)
    if reg is not None:
        row.ir_op_type, row.plugin = reg.ir_type, reg.plugin
    elif op_type in CONVERTER_OPS or op_type in PASSTHROUGH:
        row.status = "converter"
    else:
        row.status = "unsupported"
    return row



def _status_text(row: OpTypeSupport) -> Tuple[str, str]:
    if row.status == "mapped":
        ir_op, plugin = row.ir_op_type or "-", row.plugin or "-"
    elif row.status == "converter":
        ir_op, plugin = "-", "(converter: input, constant or dropped)"
    elif row.status == "fused":
        ir_op, plugin = "-", f"(fused by {', '.join(row.fused_by)})"
    elif row.status == "fallback":
        ir_op, plugin = row.ir_op_type or "-", "(run by TensorFlow: --fallback tf)"
    elif row.example:
        ir_op, plugin = "-", f"UNSUPPORTED, e.g. '{row.example}'"
    else:
        ir_op, plugin = "-", "UNSUPPORTED"
    if row.fused_by and row.status != "fused":
        plugin += f"  [fusion: {', '.join(row.fused_by)}]"
    return ir_op, plugin


def _place(within: List[str], function: str) -> str:
    """' in function F of node 'w'' for a node in a function body."""
    if not within:
        return ""
    what = f" in function {function}" if function else " in a function"
    return what + " of " + " > ".join(f"'{n}'" for n in within)


def format_report(report: SupportReport) -> str:
    """An aligned table: op type, count, IR op, plugin (or why there is none); then the
    verdict of the dry run and every error it met."""
    # a model with another framework's op types (a .tflite) shows each row's framework
    mixed = any(r.framework != "TENSORFLOW" for r in report.op_types + report.function_op_types)
    header = ("FRAMEWORK " * mixed + "OP TYPE", "COUNT", "IR OP", "PLUGIN")

    def op(row: OpTypeSupport) -> str:
        return f"{row.framework:<10}{row.op_type}" if mixed else row.op_type
    table = []
    for row in report.op_types:
        table.append((op(row), str(row.count)) + _status_text(row))
    body_table = [(op(row), str(row.count)) + _status_text(row)
                  for row in report.function_op_types]
    widths = [max(len(r[i]) for r in table + body_table + [header]) for i in range(3)]

    def line(a, b, c, d):
        return f"{a:<{widths[0]}}  {b:>{widths[1]}}  {c:<{widths[2]}}  {d}"
    lines = [line(*header)] + [line(*r) for r in table]
    if body_table:
        lines.append("-- in function bodies (If branches, loop bodies, functions):")
        lines += [line(*r) for r in body_table]
    kind = "TFLite" if report.framework == "TFLITE" else "TF"
    lines.append(f"{report.tf_nodes} {kind} nodes, {len(report.op_types)} op types, "
                 f"{len(report.unsupported)} unsupported")
    if report.fusions:
        width = max(len(name) for name in report.fusions)
        for name, count in report.fusions.items():
            lines.append(f"fusion {name:<{width}}  {count} match{'es' if count != 1 else ''}")
    else:
        lines.append("no scope fusion applies")
    if report.unsupported:
        parts = [f"{r.op_type} ({r.count}x, e.g. '{r.example}'{_place(r.within, r.function)})"
                 for r in report.unsupported]
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
    if report.exit_status == ExitStatus.OK:
        lines.append("convert would succeed: mapped, lowered and checked by onnx.checker "
                     "(nothing written)")
    else:
        lines.append(f"convert would fail (exit {report.exit_status}) at {report.stage}: "
                     f"{report.convert_error}")
        shown = [p for p in report.errors if p.kind != "function body"] or report.errors
        lines.append(f"errors ({len(shown)}):")
        width = max(len(p.kind) for p in shown)
        for p in shown:
            what = f"{p.op_type} ({p.count}x, e.g. '{p.example}')" if p.example else p.op_type
            where = _place(p.within, p.function)
            plugin = f", plugin {p.plugin}" if p.plugin else ""
            lines.append(f"  {p.kind:<{width}}  {what}{where}{plugin}: {p.message}".replace(
                "  : ", "  "))
    return "\n".join(lines)
