"""`tf2ir check`'s errors (tools/check.py): what each error `convert` would meet refuses (its
kind, read from its stage and message), one problem per op type and walk (function bodies'
too), every node whose lowering fails, and the op types of the function bodies mapped."""

from __future__ import annotations

import logging
import re
from typing import Dict, List, Optional, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus, escape
from tf2ir.tools.check_report import (
    OpTypeSupport, Problem, SupportReport, _op_type_row, node_frameworks)

log = logging.getLogger("tf2ir")


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
    from tf2ir.ir.onnx.graph import OnnxGraph
    ctx = LowerContext(graph)
    ctx.model = model
    # a node after a refused one reads names nothing wrote: an open graph takes them, so only
    # the nodes whose own lowering fails are listed
    ctx.onnx = OnnxGraph(ctx.fresh, [v.name for v in graph.inputs], [v.name for v in graph.outputs],
                         ctx.initializers, open_scope=True)
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
    frameworks: Dict[str, str] = {}
    seen = set()
    for walk in walks:
        if not walk.body:
            continue
        name = walk.converter.graph.name
        if walk.error is None and name in seen:
            continue
        seen.add(name)
        frameworks.update(node_frameworks(walk.converter.tf, list(walk.converter.tf.nodes)))
        for op_type, count in walk.converter.report.op_types.items():
            counts[op_type] = counts.get(op_type, 0) + count
    rows = []
    for op_type, count in sorted(counts.items()):
        rows.append(_op_type_row(manager, op_type, count, framework=frameworks.get(
            op_type, "TENSORFLOW")))
    return rows
