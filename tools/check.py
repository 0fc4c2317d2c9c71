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
its report lists the op types of the graph as loaded and that one error.

It judges the graph `convert` would convert: the nodes the outputs need. Unsupported nodes
that no output needs (an Assert only a control edge reaches, the unused branch of lowered
control flow) are pruned by `convert`; they are listed apart and do not fail the check."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus, escape
from tf2ir.tools.options import (
    EPILOG, MODEL_HELP, add_common, add_fallback_option, add_fusion_option, add_model_source,
    add_pass_options, add_shape_options, pipeline_from_args,
)

log = logging.getLogger("tf2ir")

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
        "check", help="a dry run of convert: supported op types and every error convert "
                      "would meet, nothing written",
        description="A dry run of convert (mapping, function bodies, lowering, passes, "
                    "onnx.checker; nothing is written). List every TF op type of MODEL with "
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
    report = SupportReport(model, sum(len(v) for v in before.values()), not unsupported,
                           rows, unsupported, front.fusions, pruned_rows, segments)
    if dry_run:
        _dry_run(pipeline, front, model, report)
    return report


def _inline_for_report(pipeline, tf_graph) -> None:
    from tf2ir.parser.functions import inline_functions
    inline_functions(tf_graph, pipeline)


def _by_type(tf_graph, names: List[str]) -> Dict[str, List[str]]:
    found: Dict[str, List[str]] = {}
    for name in names:
        found.setdefault(tf_graph[name].op_type, []).append(name)
    return found


def _op_type_row(manager, op_type: str, count: int, example: str = "") -> OpTypeSupport:
    """One op type's row: the plugin and IR op mapping it, the converter's own, or unsupported."""
    from tf2ir.parser.convert import PASSTHROUGH
    row = OpTypeSupport(op_type, count, "mapped", example=example)
    reg = manager.lookup(op_type)
    if reg is not None:
        row.ir_op_type, row.plugin = reg.ir_type, reg.plugin
    elif op_type in CONVERTER_OPS or op_type in PASSTHROUGH:
        row.status = "converter"
    else:
        row.status = "unsupported"
    return row


# -- the dry run -----------------------------------------------------------------------------
def _front_failed(pipeline, graph_def, model: str, exc: ConversionError) -> SupportReport:
    """The report of a graph whose front half (inlining, fusion, outputs) fails: its op types
    as loaded (every node), and the one error."""
    from tf2ir.parser.graph_view import TfGraph
    tf_graph = TfGraph(graph_def, model)    # the front built it once: it does not fail here
    rows = []
    for op_type, names in sorted(_by_type(tf_graph, list(tf_graph.nodes)).items()):
        rows.append(_op_type_row(pipeline.manager, op_type, len(names), names[0]))
    report = SupportReport(model, len(tf_graph.nodes), False, rows, [], {})
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


def _failed(report: SupportReport, exc: ConversionError, stage: str) -> None:
    report.exit_status, report.convert_error, report.stage = exc.exit_code, str(exc), stage
    report.error_node, report.error_op_type = exc.node or "", exc.op_type or ""
    report.supported = False


def _internal(report: SupportReport, exc: Exception, stage: str) -> None:
    """An exception that is not a ConversionError: `convert` exits 1 with an internal error."""
    log.info("internal error in the dry run", exc_info=True)   # -v: the traceback
    message = f"{type(exc).__name__}: {exc}"
    report.exit_status, report.supported, report.stage = ExitStatus.FAILED, False, stage
    report.convert_error = (f"internal error while handling {escape(report.model)}: "
                            f"{escape(message)} (run with -v for the traceback)")
    report.errors = [Problem("internal error", stage, "", "", message=escape(message))]


_DTYPE_WORD = re.compile(r"\b(u?int(8|16|32|64)|b?float(16|32|64)|bool|string|complex(64|128)|"
                         r"half|double|quint8|qint8|qint32)\b")


def _kind(stage: str, message: str) -> str:
    """What an error refuses, read from its stage and message."""
    low = message.lower()
    if stage == "checker":
        return "checker"
    if stage == "front":
        return "fusion" if "fusion" in low else "failed"
    if stage.endswith("passes"):
        return "pass"
    if "dtype" in low or "data type" in low or _DTYPE_WORD.search(low):
        return "dtype"
    if re.search(r"\b(rank|shape|shapes|dimension|dimensions|dims?)\b", low):
        return "shape"
    return "lowering" if stage in ("lowering", "model") else "failed"


def _problem(exc: ConversionError, stage: str, count: int = 1) -> Problem:
    return Problem(_kind(stage, exc.message), stage, exc.op_type or "", exc.node or "", count,
                   exc.plugin or "", escape(exc.message), exc.exit_code)


_IN_FUNCTION = re.compile(r"^in function (.+?) \('")


def _chain(exc: Optional[BaseException]) -> List[int]:
    """The ids of `exc` and the exceptions it was raised from or while handling."""
    seen: List[int] = []
    while exc is not None and id(exc) not in seen:
        seen.append(id(exc))
        exc = exc.__cause__ or exc.__context__
    return seen


def _walk_problems(walks, final: ConversionError) -> List[Problem]:
    """The problems of the walks `final` comes from: the model's walk, and each function
    body's whose error the failure of a node of an enclosing walk carries (a body converted
    and declined by a plugin is not `convert`'s error). One per op type and walk."""
    if not walks:
        return []
    top = walks[0]
    places: Dict[int, Tuple[List[str], str]] = {id(top): ([], "")}
    order = [top]
    for walk in walks:    # in start order: a body's walk starts while its caller's runs
        if id(walk) not in places or walk.error is None:
            continue
        within, _ = places[id(walk)]
        for problem in walk.converter.failures.values():
            chain = set(_chain(problem.error))
            named = _IN_FUNCTION.match(problem.error.message if problem.error else "")
            for inner in walks:
                if inner.body and inner.parent is walk and inner.error is not None \
                        and id(inner.error) in chain and id(inner) not in places:
                    places[id(inner)] = (within + [problem.example],
                                         named.group(1) if named else "")
                    order.append(inner)
    problems: List[Problem] = []
    for walk in order:
        within, function = places[id(walk)]
        callers = {id(w) for w in order if w is not walk and w.parent is walk}
        for op_type, p in sorted(walk.converter.unsupported.items()):
            problems.append(Problem("unsupported op type", "mapping", op_type, p.example, p.count,
                                    message=p.message, exit_status=ExitStatus.UNSUPPORTED,
                                    within=within, function=function))
        for op_type, p in sorted(walk.converter.failures.items()):
            error = p.error
            problem = Problem(_kind("mapping", p.message), "mapping", op_type, p.example,
                              p.count, (error.plugin or "") if error else "", escape(p.message),
                              error.exit_code if error else ExitStatus.FAILED, within, function)
            carried = set(_chain(error))
            if any(w.error is not None and id(w.error) in carried for w in order
                   if id(w) in callers):
                problem.kind = "function body"   # its body's errors are listed themselves
            problems.append(problem)
    return problems


def _add_body_unsupported(report: SupportReport) -> None:
    """Unsupported op types met in function bodies join the report's unsupported list."""
    for problem in report.errors:
        if problem.kind == "unsupported op type" and problem.within:
            report.unsupported.append(OpTypeSupport(
                problem.op_type, problem.count, "unsupported", example=problem.example,
                within=list(problem.within), function=problem.function))


def _lowering_problems(graph, model: str) -> List[Problem]:
    """Every node of `graph` (after the IR passes) whose ONNX lowering fails, one problem per
    op type (count, first node): `convert` stops at the first of them."""
    from tf2ir.ir.onnx.compile import LowerContext
    ctx = LowerContext(graph)
    ctx.model = model
    found: Dict[str, Problem] = {}
    for node in list(graph.nodes):
        try:
            ctx.lower_node(node)
        except ConversionError as exc:
            if node.op_type in found:
                found[node.op_type].count += 1
            else:
                found[node.op_type] = _problem(exc.located(node=node.name, op_type=node.op_type),
                                               "lowering")
        except Exception as exc:   # noqa: BLE001 - an internal error of this node's lowering
            if node.op_type in found:
                found[node.op_type].count += 1
            else:
                found[node.op_type] = Problem("internal error", "lowering", node.op_type,
                                              node.name, message=escape(f"{type(exc).__name__}: "
                                                                        f"{exc}"))
    return list(found.values())


def _function_rows(manager, walks) -> List[OpTypeSupport]:
    """The op types of the function bodies mapped (each function once), by type."""
    counts: Dict[str, int] = {}
    seen = set()
    for walk in walks:
        if not walk.body:
            continue
        name = walk.converter.graph.name
        if walk.error is None and name in seen:
            continue
        seen.add(name)
        for op_type, count in walk.converter.report.op_types.items():
            counts[op_type] = counts.get(op_type, 0) + count
    rows = []
    for op_type, count in sorted(counts.items()):
        rows.append(_op_type_row(manager, op_type, count))
    return rows


def run(args) -> int:
    pipeline = pipeline_from_args(args)
    graph_def, outputs = pipeline.load(args.model)
    report = support_report(pipeline, graph_def, args.model, pipeline.options.outputs or outputs)
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        print(format_report(report))
    return report.exit_status


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
    header = ("OP TYPE", "COUNT", "IR OP", "PLUGIN")
    table = []
    for row in report.op_types:
        table.append((row.op_type, str(row.count)) + _status_text(row))
    body_table = [(row.op_type, str(row.count)) + _status_text(row)
                  for row in report.function_op_types]
    widths = [max(len(r[i]) for r in table + body_table + [header]) for i in range(3)]

    def line(a, b, c, d):
        return f"{a:<{widths[0]}}  {b:>{widths[1]}}  {c:<{widths[2]}}  {d}"
    lines = [line(*header)] + [line(*r) for r in table]
    if body_table:
        lines.append("-- in function bodies (If branches, loop bodies, functions):")
        lines += [line(*r) for r in body_table]
    lines.append(f"{report.tf_nodes} TF nodes, {len(report.op_types)} op types, "
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
