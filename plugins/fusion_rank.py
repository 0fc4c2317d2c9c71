"""The rank of a TF tensor where the graph alone says it, for scope fusion passes that must
know whether reduced axes are the trailing ones before they fuse (`ScopeMatch.rank`)."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

Tensor = Tuple[str, int]

# ops whose output 0 has the rank of input 0, and broadcasting ops (the larger rank)
_SAME_RANK = set("""Identity StopGradient Cast Relu Relu6 Elu Selu LeakyRelu Sigmoid Tanh Neg Abs
Exp Log Log1p Sqrt Rsqrt Square Reciprocal Erf Erfc Softplus Softsign Softmax LogSoftmax Floor Ceil
Round Sign BiasAdd FusedBatchNorm FusedBatchNormV3 ClipByValue CheckNumerics EnsureShape
PreventGradient Snapshot LRN Cumsum ReverseV2 Roll""".split())
_BROADCAST = set("""AddV2 Add Sub Mul RealDiv Div DivNoNan Maximum Minimum SquaredDifference Pow
FloorDiv FloorMod Mod BatchMatMulV2 BatchMatMulV3 SelectV2""".split())
_RANK4 = {"Conv2D", "DepthwiseConv2dNative", "MaxPool", "AvgPool", "Conv2DBackpropInput"}


def static_rank(nodes, tensor: Tensor, memo: Dict[Tensor, Optional[int]], depth: int
                ) -> Optional[int]:
    """`ScopeMatch.rank` over a graph's `nodes` (name → TfNode)."""
    if tensor in memo:
        return memo[tensor]
    node = nodes.get(tensor[0])
    if node is None or depth > 200:
        return None
    memo[tensor] = None                       # a cycle (a malformed graph) knows nothing

    def rank_of(t):
        return static_rank(nodes, t, memo, depth + 1)

    def const(t):
        src = nodes.get(t[0])
        return np.asarray(src.attr("value")) if src is not None and src.op_type == "Const" else None
    op, ins, found = node.op_type, node.inputs, None
    if op in ("Placeholder", "PlaceholderWithDefault"):
        shape = node.attr("shape")
        found = len(shape) if shape is not None else (rank_of(ins[0]) if ins else None)
    elif op == "Const":
        found = np.ndim(node.attr("value"))
    elif op in _SAME_RANK and ins and tensor[1] == 0:
        found = rank_of(ins[0])
    elif op == "IdentityN" and tensor[1] < len(ins):
        found = rank_of(ins[tensor[1]])
    elif op in _BROADCAST and len(ins) >= 2:
        ranks = [rank_of(t) for t in ins[-2:]]
        found = None if None in ranks else max(ranks)
    elif op in _RANK4:
        found = 4
    elif op == "MatMul":
        found = 2
    elif op == "Reshape" and len(ins) == 2:
        shape, src = const(ins[1]), nodes.get(ins[1][0])
        if shape is not None and np.ndim(shape) == 1:
            found = int(np.size(shape))
        elif src is not None and src.op_type == "Pack" and all(
                (rank_of(t) == 0) for t in src.inputs):
            found = len(src.inputs)
    elif op == "Transpose" and len(ins) == 2:
        perm = const(ins[1])
        found = int(np.size(perm)) if perm is not None else rank_of(ins[0])
    elif op == "ConcatV2" and len(ins) >= 2:
        found = next((r for r in (rank_of(t) for t in ins[:-1]) if r is not None), None)
    elif op == "ExpandDims" and ins:
        found = None if rank_of(ins[0]) is None else rank_of(ins[0]) + 1
    elif op in ("Mean", "Sum", "Max", "Min", "Prod") and len(ins) == 2:
        base, axes = rank_of(ins[0]), const(ins[1])
        if base is not None and node.attr("keep_dims"):
            found = base
        elif base is not None and axes is not None:
            found = base - len({int(a) % base for a in np.reshape(axes, -1)}) if base else 0
    elif op == "Einsum":
        out = str(node.attr("equation", "")).partition("->")[2]
        found = None if "." in out or "->" not in str(node.attr("equation", "")) \
            else sum(c.isalpha() for c in out)
    memo[tensor] = found
    return found
