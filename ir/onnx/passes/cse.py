"""Common-subexpression elimination on the lowered ONNX graph: a node with the same op,
inputs and attributes as an earlier one is dropped and its outputs read from that one.
Equal small initializers are merged first, so equal constants count as equal inputs."""

from __future__ import annotations

from typing import Any, Dict, Set, Tuple

import numpy as np
import onnx
from onnx import helper

from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode

MERGE_CONST_ELEMENTS = 4096
# Ops whose result is not a function of their inputs and attributes.
_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                     "Multinomial", "Bernoulli", "Dropout"}


def _merge_initializers(g: OnnxGraph, pinned: Set[str]) -> None:
    """Make the readers of each small initializer equal to an earlier one read that one."""
    seen: Dict[Tuple, str] = {}
    for name, array in list(g.initializers.items()):
        if array.size > MERGE_CONST_ELEMENTS or array.dtype == np.object_ or name in pinned:
            continue
        key = (array.dtype.str, array.shape, array.tobytes())
        if key in seen:
            g.replace_uses(name, seen[key])
        else:
            seen[key] = name


def _attribute_key(node: OnnxNode) -> Tuple[bytes, ...]:
    """The node's attributes as bytes (Python values and AttributeProtos alike)."""
    return tuple(_attribute_bytes(name, value) for name, value in sorted(node.attrs.items()))


def _attribute_bytes(name: str, value: Any) -> bytes:
    if not isinstance(value, onnx.AttributeProto):
        value = helper.make_attribute(name, value)
    return value.SerializeToString(deterministic=True)


def eliminate_common_subexpressions(g: OnnxGraph) -> int:
    """Merge duplicate nodes; return how many were removed."""
    pinned = g.pinned           # no rewrite here changes what is pinned
    _merge_initializers(g, pinned)
    first: Dict[Tuple, OnnxNode] = {}       # the first node of each (op, inputs) key
    by_attrs: Dict[Tuple, OnnxNode] = {}    # (key, attribute bytes) -> node, once a key repeats
    removed = 0
    for node in g:
        outputs = node.output
        if node.op_type in _NONDETERMINISTIC or not pinned.isdisjoint(outputs) \
                or node.subgraphs:
            continue
        key = (node.domain, node.op_type, node.input,
               tuple(o == "" for o in outputs) if "" in outputs else len(outputs))
        earlier = first.setdefault(key, node)
        if earlier is node:
            continue
        # Attributes are serialized only for nodes that share op and inputs with another.
        by_attrs.setdefault((key, _attribute_key(earlier)), earlier)
        earlier = by_attrs.setdefault((key, _attribute_key(node)), node)
        if earlier is node:
            continue
        for out, same in zip(outputs, earlier.output):
            if out:
                g.replace_uses(out, same)
        g.remove(node)
        removed += 1
    return removed
