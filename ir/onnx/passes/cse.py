"""Common-subexpression elimination on the lowered ONNX graph: a node with the same op,
inputs and attributes as an earlier one is dropped and its outputs read from that one.
Equal small initializers are merged first, so equal constants count as equal inputs."""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Tuple

import numpy as np
import onnx

from tf2ir.ir.onnx.passes.lowered import LoweredGraph

MERGE_CONST_ELEMENTS = 4096
# Ops whose result is not a function of their inputs and attributes.
_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                     "Multinomial", "Bernoulli", "Dropout"}


def _merge_initializers(g: LoweredGraph) -> Dict[str, str]:
    seen: Dict[Tuple, str] = {}
    alias: Dict[str, str] = {}
    for name, array in g.initializers.items():
        if array.size > MERGE_CONST_ELEMENTS or array.dtype == np.object_ or name in g.pinned:
            continue
        key = (array.dtype.str, array.shape, array.tobytes())
        if key in seen:
            alias[name] = seen[key]
        else:
            seen[key] = name
    return alias


def _attribute_key(node: onnx.NodeProto) -> Tuple[bytes, ...]:
    return tuple(a.SerializeToString(deterministic=True)
                 for a in sorted(node.attribute, key=lambda a: a.name))


def eliminate_common_subexpressions(g: LoweredGraph) -> int:
    """Merge duplicate nodes; return how many were removed."""
    alias = _merge_initializers(g)
    key_of: Dict[Tuple, List[Tuple[onnx.NodeProto, List[str]]]] = {}
    removed = []
    pinned = g.pinned
    # A node whose (op, first input) no other node has cannot repeat one: skipped, unless
    # merges renamed inputs (then every node is looked at).
    firsts = Counter((n.op_type, n.input[0] if len(n.input) else "") for n in g.nodes)
    for node in g.nodes:
        if not alias and firsts[(node.op_type, node.input[0] if len(node.input) else "")] < 2:
            continue
        inputs = tuple(node.input)
        if any(name in alias for name in inputs):
            inputs = tuple(alias.get(name, name) for name in inputs)
            node.input[:] = inputs
        outputs = tuple(node.output)
        if node.op_type in _NONDETERMINISTIC or not pinned.isdisjoint(outputs) \
                or g.has_subgraphs(node):
            continue
        # Attributes are serialized only for nodes that share op and inputs with another.
        key = (node.domain, node.op_type, inputs,
               tuple(o == "" for o in outputs) if "" in outputs else len(outputs))
        candidates = key_of.setdefault(key, [])
        earlier = None
        if candidates:
            attrs = _attribute_key(node)
            earlier = next((outs for other, outs in candidates if _attribute_key(other) == attrs),
                           None)
        if earlier is None:
            candidates.append((node, list(node.output)))
            continue
        for out, same in zip(outputs, earlier):
            if out:
                alias[out] = same
        removed.append(id(node))
    g.keep_only(removed)
    return len(removed)
