"""IR passes: short functions that rewrite a Graph in place through its mutation verbs, one
`PassRecord` each (kind "ir"), and the one pass manager that runs every kind of pass."""

from typing import List

from tf2ir.ir.graph import Graph
from tf2ir.ir.passes.fold import fold_constants
from tf2ir.ir.passes.inline import inline_subgraphs
from tf2ir.ir.passes.manager import PassManager, PassRecord, resolve_switches


def _inline(graph: Graph) -> int:
    before = len(graph.nodes)
    inline_subgraphs(graph)
    return int(len(graph.nodes) != before)


IR_PASSES: List[PassRecord] = [
    PassRecord("inline", "ir", _inline, "PartitionedCall subgraphs (one-to-many mappings) "
               "inlined into their graph", required=True),
    PassRecord("ir-fold", "ir", fold_constants, "IR nodes whose inputs are all constants "
               "folded by their prototype's fold function (size-bounded)", after=("inline",)),
]

__all__ = ["IR_PASSES", "PassManager", "PassRecord", "fold_constants", "inline_subgraphs",
           "resolve_switches"]
