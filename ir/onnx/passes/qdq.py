"""Quantized weights on the lowered ONNX graph (`--quantized qdq`, opp/quantize_qdq.py): the
form onnxruntime's QDQ fusion turns into int8 kernels is DequantizeLinear(int8 initializer)
read by the Conv/Gemm/MatMul itself, and Conv -> (Relu) -> QuantizeLinear without float
arithmetic between. Two rewrites give it:

1. a chain of Transposes and constant-shape Reshapes between a DequantizeLinear of constants
   and its one reader (a TF filter's HWIO -> OIHW, a depthwise filter's reshape) is applied
   to the integer initializer instead, the scale's axis following (found from the scale and
   zero point broadcast to the weight's shape and moved with it);
2. a per-channel Add/Sub after such a Conv (a BiasAdd) goes into its bias, and a per-channel
   Mul/Div by positive constants (a batch norm's scale) into the weight's scale and the bias;
   a per-column Add/Sub after such a Gemm into its C;
3. a dequantized constant vector added after such a Gemm (a TFLite FULLY_CONNECTED's int32
   bias) becomes its C.

The dequantized weight is unchanged (rewrite 1) or scaled as TF's float arithmetic after the
convolution scales it (rewrite 2, one float rounding apart). Graphs without DequantizeLinear
(every conversion but --quantized qdq) are untouched.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode
from tf2ir.ir.onnx.passes.affine import _absorb, _follower, _per_channel


def _constants(g: OnnxGraph, dq: OnnxNode) -> Optional[Tuple[np.ndarray, np.ndarray,
                                                              np.ndarray]]:
    """(q, scale, zero point) of a DequantizeLinear of constants, else None."""
    q, scale = g.const(dq.input[0]), g.const(dq.input[1])
    zero_name = dq.input[2] if len(dq.input) > 2 else ""
    zero = g.const(zero_name) if zero_name else np.zeros((), q.dtype if q is not None else None)
    if q is None or scale is None or zero is None or scale.ndim > 1 or zero.ndim > 1 \
            or dq.attr("block_size", 0):
        return None
    return q, scale, zero


def _full(q: np.ndarray, values: np.ndarray, axis: int) -> np.ndarray:
    """A scale or zero point broadcast to q's shape (a 1-D one along `axis`)."""
    if values.ndim == 0 or values.size == 1 and q.ndim == 0:
        return np.broadcast_to(values.reshape(()), q.shape)
    shape = [1] * q.ndim
    shape[axis % q.ndim] = -1
    return np.broadcast_to(values.reshape(shape), q.shape)


def _along(full: np.ndarray, zero: np.ndarray) -> Optional[Tuple[Optional[int], np.ndarray,
                                                                 np.ndarray]]:
    """(axis or None, scale, zero point) that broadcast to `full` and `zero` (same shape)."""
    if full.size == 0:
        return None
    if np.all(full == full.flat[0]) and np.all(zero == zero.flat[0]):
        return None, np.array(full.flat[0]), np.array(zero.flat[0])
    for axis in range(full.ndim):
        index = tuple(slice(None) if k == axis else slice(0, 1) for k in range(full.ndim))
        if np.array_equal(np.broadcast_to(full[index], full.shape), full) and \
                np.array_equal(np.broadcast_to(zero[index], zero.shape), zero):
            return axis, full[index].reshape(-1), zero[index].reshape(-1)
    return None


def _reshaped(g: OnnxGraph, node: OnnxNode, array: np.ndarray) -> Optional[np.ndarray]:
    """`array` through one Transpose or constant-shape Reshape node, else None."""
    if node.op_type == "Transpose":
        perm = node.attr("perm")
        return np.transpose(array, perm) if perm is not None else np.transpose(array)
    shape = g.const(node.input[1]) if len(node.input) > 1 else None
    if node.op_type != "Reshape" or shape is None or node.attr("allowzero", 0):
        return None
    dims = [array.shape[i] if d == 0 else int(d) for i, d in enumerate(shape.reshape(-1))]
    try:
        return array.reshape(dims)
    except ValueError:
        return None


def _fold_layout_chain(g: OnnxGraph, dq: OnnxNode) -> int:
    """Rewrite 1 for one DequantizeLinear; how many nodes went."""
    found = _constants(g, dq)
    if found is None:
        return 0
    q, scale, zero = found
    axis = dq.attr("axis", 1)
    arrays = [q, _full(q, scale, axis), _full(q, zero, axis)]
    chain: List[OnnxNode] = []
    user = g.only_user(dq.output[0])
    while user is not None and user.op_type in ("Transpose", "Reshape") and user.standard:
        moved = [_reshaped(g, user, a) for a in arrays]
        if any(m is None for m in moved):
            break
        arrays = [np.ascontiguousarray(m) for m in moved]
        chain.append(user)
        user = g.only_user(user.output[0])
    # the longest prefix of the chain whose scale still runs along one axis
    along = _along(*arrays[1:]) if chain else None
    while chain and along is None:
        chain.pop()
        arrays = [q, _full(q, scale, axis), _full(q, zero, axis)]
        for node in chain:
            arrays = [np.ascontiguousarray(_reshaped(g, node, a)) for a in arrays]
        along = _along(*arrays[1:]) if chain else None
    if along is None:
        return 0
    new_axis, new_scale, new_zero = along
    out = chain[-1].output[0]
    g.set_input(dq, 0, g.add_initializer(arrays[0], "quantized"))
    g.set_input(dq, 1, g.add_initializer(new_scale.astype(scale.dtype), "scale"))
    if len(dq.input) > 2 and dq.input[2]:
        g.set_input(dq, 2, g.add_initializer(new_zero.astype(zero.dtype), "zero_point"))
    g.set_attr(dq, "axis", new_axis)
    for node in chain:
        g.remove(node, keep_uses=True)
    g.rename_output(dq, 0, out)
    return len(chain)


def _weight_dq(g: OnnxGraph, node: OnnxNode) -> Optional[OnnxNode]:
    dq = g.producer(node.input[1]) if len(node.input) > 1 else None
    if dq is None or dq.op_type != "DequantizeLinear" or _constants(g, dq) is None:
        return None
    return dq


def _fold_followers(g: OnnxGraph, node: OnnxNode) -> int:
    """Rewrite 2 for one Conv or Gemm whose weight is dequantized; how many nodes went."""
    count = 0
    while True:
        dq = _weight_dq(g, node)
        found = _follower(g, node) if dq is not None else None
        constants = _constants(g, dq) if dq is not None else None
        if dq is None or found is None or constants is None:
            return count
        m, c = found
        q, scale, zero = constants
        bias_name = node.input[2] if len(node.input) > 2 else ""
        bias = g.const(bias_name) if bias_name else None
        if bias_name and bias is None or c.dtype != scale.dtype:
            return count
        if node.op_type == "Gemm":
            if m.op_type not in ("Add", "Sub") or node.attr("alpha", 1.0) != 1.0 \
                    or node.attr("beta", 1.0) != 1.0:
                return count
            columns = q.shape[0] if node.attr("transB", 0) else q.shape[1]
            s = _per_channel(c, 2, 1, columns)
        else:
            s = _per_channel(c, q.ndim, 1, q.shape[0])
        if s is None or (bias is not None and bias.shape != s.shape):
            return count
        if m.op_type in ("Add", "Sub"):
            bias = (bias if bias is not None else np.zeros_like(s)) + \
                (s if m.op_type == "Add" else -s)
        else:
            s = s if m.op_type == "Mul" else np.reciprocal(s)
            per_axis = scale.ndim == 1 and scale.size > 1
            if not np.all(s > 0) or g.use_count(dq.output[0]) != 1 or \
                    per_axis and dq.attr("axis", 1) % q.ndim != 0:
                return count
            g.set_input(dq, 1, g.add_initializer((np.broadcast_to(scale, s.shape) * s)
                                                 .astype(scale.dtype), "scale_folded"))
            if len(dq.input) > 2 and dq.input[2]:
                g.set_input(dq, 2, g.add_initializer(np.ascontiguousarray(
                    np.broadcast_to(zero, s.shape)), "zero_point"))
            g.set_attr(dq, "axis", 0)
            bias = bias * s if bias is not None else None
        if bias is not None:
            g.set_input(node, 2, g.add_initializer(bias.astype(c.dtype), "bias_folded"))
        _absorb(g, node, m)
        count += 1


def _dequantized_bias_into_gemm(g: OnnxGraph, node: OnnxNode) -> int:
    """Rewrite 3: a Gemm without C whose weight is dequantized and whose one reader adds a
    dequantized constant vector, one per column (a TFLite FULLY_CONNECTED's int32 bias), takes
    that vector as its C: onnxruntime then fuses the bias into its QGemm."""
    weight_dq = _weight_dq(g, node)
    weight = _constants(g, weight_dq) if weight_dq is not None else None
    if len(node.input) > 2 and node.input[2] or weight is None \
            or node.attr("alpha", 1.0) != 1.0 or node.attr("beta", 1.0) != 1.0:
        return 0
    m = g.only_user(node.output[0])
    if m is None or m.op_type != "Add" or not m.standard or len(m.input) != 2:
        return 0
    other = m.input[1] if m.input[0] == node.output[0] else m.input[0]
    bias_dq = g.producer(other)
    bias = _constants(g, bias_dq) if bias_dq is not None and \
        bias_dq.op_type == "DequantizeLinear" else None
    q = weight[0]
    columns = q.shape[0] if node.attr("transB", 0) else q.shape[1]
    if bias is None or other == node.output[0] or bias[0].shape != (columns,):
        return 0
    g.set_input(node, 2, other)
    _absorb(g, node, m)
    return 1


def fold_into_quantized_weights(g: OnnxGraph) -> int:
    """Rewrites 1 to 3 (see the module's doc); return how many nodes went."""
    if not g.of_type("DequantizeLinear"):
        return 0
    count = 0
    for dq in g.of_type("DequantizeLinear"):
        if dq.graph is g:
            count += _fold_layout_chain(g, dq)
    for node in g.of_type("Conv", "Gemm"):
        if len(node.output) == 1 and (node.op_type == "Conv" or len(node.input) >= 2):
            count += _fold_followers(g, node)
            if node.op_type == "Gemm":
                count += _dequantized_bias_into_gemm(g, node)
    return count
