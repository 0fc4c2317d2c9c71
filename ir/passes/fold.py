"""Constant folding: a node whose inputs are all constants, and whose prototype declares a
numpy `fold` function, is replaced by Const nodes holding its results."""

from __future__ import annotations

from typing import List

import numpy as np

from tf2ir.ir.graph import Graph, Node, Value
from tf2ir.ir.prototype import get_prototype, has_prototype
from tf2ir.ir.tensor import numpy_dtype


FOLD_LIMIT_BYTES = 1 << 20


def fold_constants(graph: Graph) -> int:
    """Fold every foldable node of `graph` in place (in order, so chains fold through),
    then those of its nodes' subgraphs; return how many were folded. Nodes producing graph
    outputs stay; a node owning subgraphs (If, While) is never folded itself."""
    folded = 0
    for node in list(graph.nodes):
        for sub in node.subgraphs.values():
            folded += fold_constants(sub)
        if _fold_node(graph, node):
            folded += 1
    return folded


def _fold_node(graph: Graph, node: Node) -> bool:
    fold = get_prototype(node.op_type).fold_fn if has_prototype(node.op_type) else None
    if node.op_type == "Const" or node.subgraphs or not node.inputs or fold is None:
        return False
    constants = [v.const_value for v in node.inputs if v is not None]
    inputs = [array for array in constants if array is not None]
    if len(inputs) != len(node.inputs) or any(v in graph.outputs for v in node.outputs):
        return False
    try:
        arrays = fold(node, inputs)
    except (ValueError, TypeError, IndexError):
        return False          # the lowering will say what is wrong
    if len(arrays) != len(node.outputs):
        return False
    # Size bound: a result bigger than FOLD_LIMIT_BYTES and than the inputs together stays
    # a node (folding Fill/Tile/broadcasts would blow up the model file).
    if sum(np.asarray(a).nbytes for a in arrays) > max(
            FOLD_LIMIT_BYTES, sum(np.asarray(a).nbytes for a in inputs)):
        return False
    consts: List[Value] = []
    with graph.inserting_before(node):          # the constants take the node's place
        for value, array in zip(node.outputs, arrays):
            array = np.asarray(array, dtype=numpy_dtype(value.desc.dtype))
            const = graph.add_const(array, f"{node.name}/folded", value.desc.format)
            consts.append(const)
            graph.replace_all_uses_with(value, const)
    names = [v.name for v in node.outputs]
    graph.erase_node(node)
    for const, name in zip(consts, names):
        graph.rename_value(const, name)
    return True
