"""TFLite's hybrid (dynamic-range) kernels as the IR's hybrid ops (opp/hybrid.py).

A model TFLiteConverter makes with `optimizations=[tf.lite.Optimize.DEFAULT]` and no
representative data keeps float activations and int8 weights (per-channel symmetric scales):
FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D then run TFLite's hybrid kernels, which quantize
the float input to int8 at run time, multiply in int32 and rescale. The view dequantizes the
weights (a TFLiteDequantize node) so that the float mappings serve every model; for a hybrid
operator the float product differs from TFLite's by the input's quantization error. These
functions, called by the FULLY_CONNECTED and convolution mappings, map a hybrid operator to
HybridMatMul / HybridConv2D instead, which reproduce TFLite's arithmetic (its integer product
exactly), reading the int8 weights from the model (the dequantized weights go unused);
`--quantized qdq` lowers those ops to onnxruntime's fast dynamic-quantization forms instead.

An operator is hybrid when its input 0 is float32 and its weights an int8 constant with
scales and zero points 0 (and its bias, if any, float32): `hybrid_weights` says so.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from tf2ir.opp import hybrid
from tf2ir.plugins import hookimpl
from tf2ir.plugins.tflite import data


def hybrid_weights(src, position: int = 1) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """(int8 weights, float32 scales) of input `position` when `src` is a hybrid operator
    (float input 0, int8 constant symmetric weights, float or no bias); else None."""
    tensors = getattr(src, "input_tensors", None) or []
    if len(tensors) <= position:
        return None
    x, w = tensors[0], tensors[position]
    bias = tensors[2] if len(tensors) > 2 and position == 1 else None
    if x is None or w is None or x.dtype != "float32" or w.dtype != "int8" or w.data is None:
        return None
    if bias is not None and bias.dtype != "float32":
        return None
    quant = w.quantization
    if quant is None or quant.scale is None or not np.asarray(quant.scale).size:
        return None
    if quant.zero_point is not None and np.any(np.asarray(quant.zero_point)):
        return None
    scale = np.asarray(quant.scale, np.float32).reshape(-1)
    if not np.all(np.isfinite(scale) & (scale > 0)):
        return None
    return np.asarray(w.data, np.int8), scale


def fully_connected(src, graph, flat):
    """The output [rows, units] of a hybrid FULLY_CONNECTED over the [rows, depth] input
    `flat` (bias included, activation not); None when the operator is not hybrid."""
    found = hybrid_weights(src)
    if found is None:
        return None
    weights, scale = found
    if weights.ndim != 2 or scale.size not in (1, weights.shape[0]):
        return None
    attrs = {"weight_scale": scale,
             "asymmetric": bool(src.attr("asymmetric_quantize_inputs", False))}
    w = graph.const(weights, "weights_int8")
    return graph.add_op("HybridMatMul", [flat, w, data(src, graph, 2)], attrs,
                        name="hybrid_matmul").outputs[0]


def conv_2d(src, graph, x, window_attrs, depthwise: bool = False):
    """The output of a hybrid CONV_2D (`depthwise`: DEPTHWISE_CONV_2D) over NHWC `x` (bias
    included, activation not); None when the operator is not hybrid or its filter has no
    per-channel scales (TFLite's hybrid convolutions are per channel)."""
    found = hybrid_weights(src)
    if found is None:
        return None
    weights, scale = found
    if weights.ndim != 4:
        return None
    out = weights.shape[3] if depthwise else weights.shape[0]
    if scale.size != out or out < 2:
        return None
    channels = x.desc.shape[3] if x.desc.shape is not None and len(x.desc.shape) == 4 else None
    if depthwise and (channels is None or out % channels):
        return None
    attrs = {"strides": window_attrs["strides"], "dilations": window_attrs["dilations"],
             "padding": window_attrs["padding"], "depthwise": depthwise, "weight_scale": scale}
    w = graph.const(weights, "filter_int8")
    return graph.add_op("HybridConv2D", [x, w, data(src, graph, 2)], attrs,
                        name="hybrid_depthwise" if depthwise else "hybrid_conv").outputs[0]


@hookimpl
def tf2ir_op_prototypes():
    return list(hybrid.OPS)
