"""int8 graph inputs and outputs given the Q -> DQ pairs onnxruntime's x86 int8 kernels need
(QDQ models: TFLite's full-int8 models with int8 inputs/outputs, opp/quantize_linear.py).

onnxruntime on x86 fuses int8 activations (DequantizeLinear -> Conv -> QuantizeLinear into
QLinearConv) only after its QDQS8ToU8 rewrite turns each int8 QuantizeLinear ->
DequantizeLinear pair into a uint8 one. An int8 graph input read by a DequantizeLinear has
no QuantizeLinear before it, and an int8 graph output written by a QuantizeLinear no
DequantizeLinear after it: the op between them stays a float Conv. This pass gives both the
uint8 pair that rewrite would have made (zero point + 128, the same scale: the same reals):

    x (int8 input) [-> Transpose/Reshape] -> DQ -> Conv     becomes
    x [-> Transpose/Reshape] -> DQ -> Q(uint8) -> DQ(uint8) -> Conv

    Conv -> Q -> [Transpose/Reshape ->] y (int8 output)     becomes
    Conv -> Q(uint8) -> DQ(uint8) -> Q -> [Transpose/Reshape ->] y

(An int8 pair would do as well in principle, but onnxruntime's cleanup drops a DQ -> Q of
equal parameters before the rewrite sees it.) Dequantizing and quantizing again with the
same scale gives back the same integers ((q - z) * s / s rounds to q - z exactly), so the
values are unchanged; the added DequantizeLinear/QuantizeLinear run once per input or output
element. uint8 tensors (which onnxruntime fuses as they are) and graphs without int8
Q/DQ of graph inputs and outputs are untouched.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode

_LAYOUT = ("Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten")


def _int8_params(g: OnnxGraph, node: OnnxNode) -> bool:
    """`node` (Q or DQ) has constant per-tensor parameters and an int8 zero point."""
    if len(node.input) < 3 or not node.standard or node.attr("block_size", 0):
        return False
    scale, zero = g.const(node.input[1]), g.const(node.input[2])
    return scale is not None and zero is not None and zero.dtype == np.int8 and scale.size == 1


def _from_graph_input(g: OnnxGraph, name: str) -> bool:
    """`name` is a graph input, or computed from one by layout ops alone."""
    while True:
        producer = g.producer(name)
        if producer is None:
            return name in g.inputs
        if producer.op_type not in _LAYOUT or not producer.standard:
            return False
        name = producer.input[0]


def _to_graph_output(g: OnnxGraph, name: str) -> bool:
    """`name` is a graph output, or reaches one through layout ops it alone feeds."""
    while True:
        if g.is_pinned(name):
            return name in g.outputs
        user = g.only_user(name)
        if user is None or user.op_type not in _LAYOUT or not user.standard \
                or user.input[0] != name:
            return False
        name = user.output[0]


def _uint8_zero(g: OnnxGraph, node: OnnxNode) -> str:
    """An initializer of `node`'s int8 zero point moved to uint8 (+ 128: the same reals)."""
    zero = g.const(node.input[2])
    assert zero is not None       # _int8_params checked it
    return g.add_initializer((zero.astype(np.int16) + 128).astype(np.uint8), "zero_point_u8")


def _pair_input(g: OnnxGraph, dq: OnnxNode) -> bool:
    source = dq.input[0]
    producer: Optional[OnnxNode] = g.producer(source)
    if producer is not None and producer.op_type == "QuantizeLinear" \
            or g.const(source) is not None or not _from_graph_input(g, source):
        return False
    scale, zero = dq.input[1], dq.input[2]
    zero_u8 = _uint8_zero(g, dq)
    first = g.add_node("DequantizeLinear", [source, scale, zero], 1, before=dq,
                       axis=dq.attr("axis"))
    requant = g.add_node("QuantizeLinear", [first.output[0], scale, zero_u8], 1, before=dq,
                         axis=dq.attr("axis"))
    g.dtypes[requant.output[0]] = "uint8"
    g.set_input(dq, 0, requant.output[0])
    g.set_input(dq, 2, zero_u8)
    return True


def _pair_output(g: OnnxGraph, q: OnnxNode) -> bool:
    out = q.output[0]
    if not _to_graph_output(g, out) or any(u.op_type == "DequantizeLinear" for u in g.users(out)):
        return False
    scale, zero = q.input[1], q.input[2]
    zero_u8 = _uint8_zero(g, q)
    inner = g.fresh(f"{out}/uint8")
    g.rename_output(q, 0, inner)
    g.set_input(q, 2, zero_u8)
    g.dtypes[inner] = "uint8"
    dq = g.add_node("DequantizeLinear", [inner, scale, zero_u8], 1, after=q, axis=q.attr("axis"))
    g.add_node("QuantizeLinear", [dq.output[0], scale, zero], [out], after=dq,
               axis=q.attr("axis"))
    return True


def pair_int8_graph_io(g: OnnxGraph) -> int:
    """Give each int8 graph input read through DequantizeLinear, and each int8 graph output
    a QuantizeLinear writes, the Q -> DQ pair onnxruntime's int8 kernels need (see the
    module's doc); return how many were paired."""
    count = 0
    for dq in g.of_type("DequantizeLinear"):
        if dq.graph is g and _int8_params(g, dq) and _pair_input(g, dq):
            count += 1
    for q in g.of_type("QuantizeLinear"):
        if q.graph is g and _int8_params(g, q) and _pair_output(g, q):
            count += 1
    return count
