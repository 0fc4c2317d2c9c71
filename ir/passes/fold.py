"""Constant folding: a node whose inputs are all constants, and whose prototype declares a
numpy `fold` function, is replaced by Const nodes holding its results.

Bounded and linear: a node whose result would be larger than FOLD_LIMIT_BYTES and than its
inputs together stays a node, and the bound is applied before the fold function runs, from
the output shapes inference gives (so Fill, Tile, Range or a broadcast never allocate a
huge array first); a node whose output shape stays unknown is not folded. The folded
nodes are erased together at the end, so a chain of n foldable nodes folds in O(n).

Fold functions and kernels are plugin code: what they raise, and a result that is not what
the node declares (count, dtype, rank, shape), is an error naming the plugin and the node
right here, not a wrong constant that a node downstream trips over. A built-in op that
cannot fold stays a node instead (its lowering says what is wrong).
"""

from __future__ import annotations

import math
import reprlib
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from tf2ir.ir.errors import NODE_FAILURES, ConversionError
from tf2ir.ir.fold_limits import FOLD_LIMIT_BYTES, fold_limit  # the rule both folders share
from tf2ir.ir.graph import Graph, Node, Value
from tf2ir.ir.prototype import OpPrototype, prototypes_of
from tf2ir.ir.tensor import TensorDesc, numpy_dtype


# What a built-in fold function may raise for inputs it cannot fold (the node stays).
FOLD_FAILURES = NODE_FAILURES + (MemoryError,)


def fold_constants(graph: Graph) -> int:
    """Fold every foldable node of `graph` in place (in order, so chains fold through),
    then those of its nodes' subgraphs; return how many were folded. Nodes producing graph
    outputs stay; a node owning subgraphs (If, While) is never folded itself."""
    folded = 0
    replaced: Dict[int, List[Node]] = {}
    erased: List[Node] = []
    renames: List[Tuple[Value, str]] = []
    with graph.inserting_before(None):
        for node in list(graph.nodes):
            for sub in node.subgraphs.values():
                folded += fold_constants(sub)
            consts = _fold_node(graph, node)
            if consts is None:
                continue
            folded += 1
            replaced[id(node)] = [c.producer for c in consts if c.producer is not None]
            erased.append(node)
            renames.extend((const, value.name) for const, value in zip(consts, node.outputs))
    # The constants take the folded nodes' places and then their output names.
    graph.erase_nodes(erased, placed=replaced)
    for const, name in renames:
        graph.rename_value(const, name)
    return folded


def _output_bytes(desc: TensorDesc) -> Optional[int]:
    """The bytes of a value of `desc`, or None when its shape or dtype is not known."""
    if not desc.is_fully_known():
        return None
    try:
        itemsize = numpy_dtype(desc.dtype).itemsize
    except (ValueError, ImportError):
        return None
    return math.prod(d for d in desc.shape or () if d is not None) * itemsize


def _result_bytes(node: Node) -> Optional[List[int]]:
    """The bytes of each output of `node`, from its output descs or, where they are not
    fully known (a graph built without inference), from its prototype's inference; None
    when they stay unknown."""
    sizes = [_output_bytes(v.desc) for v in node.outputs]
    if all(size is not None for size in sizes):
        return [s for s in sizes if s is not None]
    proto = prototypes_of(node.graph).get(node.op_type)
    if proto.infer_fn is None:
        return None
    with proto.calling("shape inference", node):   # sys.exit() in it names the plugin
        try:
            descs = proto.infer_fn(node)
        except Exception:     # inference fails later, where it names the node
            return None
    sizes = [_output_bytes(desc) for desc in descs]
    if len(sizes) != len(node.outputs) or any(size is None for size in sizes):
        return None
    return [s for s in sizes if s is not None]


def _fold_node(graph: Graph, node: Node) -> Optional[List[Value]]:
    """The constants that replace `node` (their uses moved onto them), or None."""
    proto = prototypes_of(graph).find(node.op_type)
    fold = proto.fold_fn if proto is not None else None
    if proto is None or fold is None or node.op_type == "Const" or node.subgraphs \
            or not node.inputs:
        return None
    constants = [v.const_value for v in node.inputs if v is not None]
    inputs = [array for array in constants if array is not None]
    if len(inputs) != len(node.inputs) or any(v in graph.outputs for v in node.outputs):
        return None
    # Size bound, before anything is computed: a result bigger than FOLD_LIMIT_BYTES and
    # than the inputs together stays a node (folding Fill/Tile/broadcasts would blow up the
    # model file, and computing them could exhaust memory).
    limit = fold_limit(inputs)
    sizes = _result_bytes(node)
    if sizes is None or sum(sizes) > limit:
        return None
    what = "its kernel" if getattr(fold, "by_kernel", False) else "its fold function"
    with proto.calling(what, node):
        try:
            with np.errstate(all="ignore"):
                results = fold(node, inputs)
        except FOLD_FAILURES:
            if proto.builtin:
                return None   # the lowering will say what is wrong
            raise
        arrays = _checked_results(proto, what, node, results)
    if arrays is None or sum(a.nbytes for a in arrays) > limit:
        return None
    consts: List[Value] = []
    for value, array in zip(node.outputs, arrays):
        const = graph.add_const(array, f"{node.name}/folded", value.desc.format)
        consts.append(const)
        graph.replace_all_uses_with(value, const)
    return consts


def _checked_results(proto: OpPrototype, what: str, node: Node,
                     results: Any) -> Optional[List[np.ndarray]]:
    """The arrays `what` returned for `node`, one per output, each of the dtype, rank and
    shape the output declares. A plugin's wrong result raises (the ConversionError is
    located on the plugin and node by the caller's `calling`); a built-in's (whose results
    may need casting to the output's dtype) leaves the node unfolded."""
    def wrong(message: str) -> Optional[List[np.ndarray]]:
        if proto.builtin:
            return None
        raise ConversionError(f"{what} returned {message}")

    if not isinstance(results, (list, tuple)):
        return wrong(f"{type(results).__name__} {_short(results)}, expected a list of "
                     f"{len(node.outputs)} arrays (one per output)")
    if len(results) != len(node.outputs):
        return wrong(f"{len(results)} results for {len(node.outputs)} outputs")
    arrays = []
    for port, (value, result) in enumerate(zip(node.outputs, results)):
        desc = value.desc
        dtype = numpy_dtype(desc.dtype)
        expected = f"a {desc.dtype} array of shape {desc.shape_text()}"
        if proto.builtin:
            try:
                array = np.asarray(result, dtype=dtype)
            except (ValueError, TypeError, OverflowError):
                return None
        elif not isinstance(result, (np.ndarray, np.generic)):
            return wrong(f"{type(result).__name__} {_short(result)} for output {port}, "
                         f"expected {expected}")
        else:
            array = np.asarray(result)
            if dtype == np.object_ and array.dtype.kind in "SU":   # strings: any numpy form
                array = array.astype(np.object_)
            if array.dtype != dtype:
                return wrong(f"a {array.dtype} array for output {port}, expected {expected}")
        if desc.shape is not None and (array.ndim != len(desc.shape) or any(
                d is not None and d != n for d, n in zip(desc.shape, array.shape))):
            return wrong(f"shape {list(array.shape)} for output {port}, expected {expected}")
        arrays.append(array)
    return arrays


def _short(value: Any) -> str:
    return reprlib.repr(value)   # bounded, whatever a plugin returned
