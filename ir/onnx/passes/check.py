"""--check-passes (and TF2IR_CHECK_PASSES=1, which the test suite sets): the graph checked after
every pass that rewrote it, so a pass that breaks it is named at once."""

from __future__ import annotations

import onnx

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.graph import Graph
from tf2ir.ir.onnx.graph import GraphInvariantError, OnnxGraph
from tf2ir.ir.onnx.opset import OPSET, changed_by_raising, choose_opset
from tf2ir.ir.verify import check_graph


def check_after_pass(graph) -> None:
    """--check-passes: an IR graph is checked against the prototypes; a lowered ONNX graph's
    invariants (order, use lists, producers) are checked from scratch and its default-domain
    nodes by onnx's node checker."""
    if isinstance(graph, Graph):
        check_graph(graph)
        return
    assert isinstance(graph, OnnxGraph)
    try:
        graph.check()
    except GraphInvariantError as exc:
        raise ConversionError(str(exc)) from None
    protos = graph.to_protos()
    # each node at the version it was written for: the opset the model would declare, or 18
    # for an op that opset gives another meaning (build_model then lowers again at 18)
    changed = set(changed_by_raising(protos))
    contexts = {}
    for opset in {choose_opset(protos), OPSET}:
        contexts[opset] = onnx.checker.C.CheckerContext()
        contexts[opset].opset_imports, contexts[opset].ir_version = {"": opset}, 9
    for node, proto in zip(graph, protos):
        if node.standard and not node.subgraphs:
            try:
                onnx.checker.check_node(proto, contexts[
                    OPSET if node.op_type in changed else max(contexts)])
            except onnx.checker.ValidationError as exc:
                raise ConversionError(f"ONNX node {node.name!r} ({node.op_type}): "
                                      f"{str(exc).splitlines()[0]}") from None
