"""Transposes moved above the DequantizeLinear they read (QDQ models: TFLite's quantized
tensors, opp/quantize_linear.py).

A format-sensitive op's lowering puts its NHWC -> NCHW Transpose right before it, so a
quantized activation arrives as DequantizeLinear -> Transpose -> Conv. onnxruntime's QDQ
fusion (DequantizeLinear -> Conv/MatMul/Add... -> QuantizeLinear into QLinearConv and its
kin) needs the DequantizeLinear to feed the op directly. Dequantizing commutes with
transposing, so the Transpose moves onto the integer tensor: Transpose -> DequantizeLinear ->
Conv, a per-axis scale's axis following the permutation. (A DequantizeLinear of constants is
rewritten by the `qdq` pass instead, which applies the Transpose to the initializer.)

The Transpose climbs through the single-reader QuantizeLinear/DequantizeLinear chain above
(a quantized float input's Q -> DQ, a uint8 input's DQ -> Q -> DQ), so that every Q -> DQ pair
stays adjacent: onnxruntime on x86 fuses int8 activations only after turning such pairs into
uint8 ones (QDQS8ToU8). Only nodes read by the next one alone are passed (no value is computed
twice), and nothing changes in a graph without DequantizeLinear.
"""

from __future__ import annotations

from typing import List, Optional

from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode


def _axis_rank(g: OnnxGraph, node: OnnxNode) -> Optional[int]:
    """The rank of `node`'s scale (0 or 1), None when it is not known or larger."""
    scale = g.const(node.input[1]) if len(node.input) > 1 else None
    rank = scale.ndim if scale is not None else g.rank(node.input[1]) if len(node.input) > 1 \
        else None
    if rank is None or rank > 1 or node.attr("block_size", 0) or not node.standard:
        return None
    return 0 if scale is not None and scale.size == 1 else rank


def _chain(g: OnnxGraph, dq: OnnxNode) -> List[OnnxNode]:
    """`dq` and the QuantizeLinear/DequantizeLinear nodes above it that feed only the next
    one (a Q -> DQ pair stays a pair: onnxruntime turns int8 pairs into uint8 ones), top
    last; empty when `dq` reads a constant or its scales are not plain."""
    chain: List[OnnxNode] = []
    node: Optional[OnnxNode] = dq
    while node is not None and node.op_type in ("QuantizeLinear", "DequantizeLinear"):
        if _axis_rank(g, node) is None or g.is_pinned(node.output[0]) \
                or g.use_count(node.output[0]) != 1:
            break
        chain.append(node)
        if g.const(node.input[0]) is not None:
            return []
        node = g.producer(node.input[0])
    return chain


def _hoist(g: OnnxGraph, dq: OnnxNode) -> bool:
    user = g.only_user(dq.output[0])
    if user is None or user.op_type != "Transpose" or not user.standard:
        return False
    chain = _chain(g, dq)
    if not chain:
        return False
    top = chain[-1]
    perm = user.attr("perm")
    rank = g.rank(top.input[0]) if perm is None else len(perm)
    if rank is None:
        return False
    perm = list(perm) if perm is not None else list(reversed(range(rank)))
    out = user.output[0]
    moved = g.add_node("Transpose", [top.input[0]], 1, before=top, perm=perm)
    g.ranks.setdefault(moved.output[0], rank)
    g.set_input(top, 0, moved.output[0])
    for node in chain:
        if _axis_rank(g, node) == 1:
            g.set_attr(node, "axis", perm.index(node.attr("axis", 1) % rank))
    g.remove(user, keep_uses=True)
    g.rename_output(dq, 0, out)
    return True


def hoist_transposes_above_dequantize(g: OnnxGraph) -> int:
    """Move each Transpose that alone reads a DequantizeLinear of a run-time tensor above it
    (see the module's doc); return how many moved."""
    count = 0
    for dq in g.of_type("DequantizeLinear"):
        if dq.graph is g and _hoist(g, dq):
            count += 1
    return count
