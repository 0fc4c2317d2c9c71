"""The ONNX opset a compiled model declares: the lowerings write the op versions of OPSET
(18); a model with an op only a newer opset has (Gelu, 20) declares that opset, unless an op
it holds would change meaning there, in which case the compiler lowers it again within
OPSET. Other target opsets (13 to the newest onnx and onnxruntime share): ir/onnx/forms.py."""

from __future__ import annotations

import functools
from typing import List, Set

import onnx

from tf2ir.ir.onnx.node import walk_protos

OPSET = 18          # the opset whose op versions the lowerings write
MAX_OPSET = 20      # the newest opset a lowering's form may serve by default (Gelu's, 20)


@functools.lru_cache(maxsize=None)
def _since_version(op_type: str) -> int:
    """The opset that introduced the version of `op_type` the lowerings write: its version
    at OPSET, or for an op only a newer opset defines, its first version."""
    for opset in (OPSET, MAX_OPSET):
        try:
            return onnx.defs.get_schema(op_type, opset, "").since_version
        except onnx.defs.SchemaError:
            continue
    return OPSET


@functools.lru_cache(maxsize=None)
def _version_at(op_type: str, opset: int) -> int:
    """The version of `op_type` that `opset` holds (its since_version there)."""
    try:
        return onnx.defs.get_schema(op_type, opset, "").since_version
    except onnx.defs.SchemaError:
        return _since_version(op_type)


def changed_by_raising(nodes) -> List[str]:
    """The op types of `nodes` (or the set of default-domain op types `standard_op_types`
    gave) that choose_opset's opset would give another meaning than the version the
    lowerings wrote (at 20 DFT's axis becomes an input, GridSample's modes are renamed): a
    model with any must stay at OPSET."""
    types = nodes if isinstance(nodes, (set, frozenset)) else standard_op_types(nodes)
    opset = choose_opset(types)
    return sorted(t for t in types if _version_at(t, opset) != _since_version(t))


def choose_opset(nodes) -> int:
    """The lowest default-domain opset from OPSET up that holds every op of `nodes` (and of
    their subgraphs; or of the op types `standard_op_types` gave) as written: OPSET unless an
    op is newer (Gelu makes it 20). Not lower than OPSET: onnxruntime runs some ops it has no
    kernel for (Softplus, Elu, Softsign in float64) through their ONNX function bodies, which
    need the opset the bodies use."""
    types = nodes if isinstance(nodes, (set, frozenset)) else standard_op_types(nodes)
    return max([_since_version(t) for t in types] + [OPSET])


def standard_op_types(nodes) -> Set[str]:
    """The default-domain op types of `nodes` and of their subgraphs (one walk)."""
    return {n.op_type for n in all_nodes(nodes) if n.domain in ("", "ai.onnx")}


all_nodes = walk_protos    # (`nodes` and those of their subgraphs: ir/onnx/node.py's walk)
