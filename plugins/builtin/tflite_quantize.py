"""Built-in TFLITE mappings of quantization (DESIGN decision 11: quantized tensors become QDQ).

The TFLite view computes every operator in float: a quantized tensor is its float value
quantized by a synthetic `TFLiteQuantize` node and dequantized by a `TFLiteDequantize` node
(attrs scale, zero_point, axis, dtype), which map to the IR's QuantizeLinear and
DequantizeLinear (opp/quantize_linear.py), so that the model onnxruntime runs holds
QuantizeLinear/DequantizeLinear pairs around float ops and its QDQ fusion picks int8 kernels.

The builtin operators are then plain in the float view: QUANTIZE (float -> int8, or a
requantization) reads the dequantized float and yields float, the quantization being the
synthetic node after it (Identity); DEQUANTIZE is a Cast to float32, which folds a float16
constant (the float16 TFLite flavour's weights) once, and is the identity for an int8 input
already dequantized.
"""

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.opp import quantize_linear
from tf2ir.plugins import hookimpl
from tf2ir.plugins.tflite import tflite_op


def _quant_attrs(src, op, with_dtype: bool) -> None:
    scale = np.asarray(src.attr("scale"), np.float32).reshape(-1)
    zero = src.attr("zero_point")
    zero = np.zeros(scale.shape, np.int64) if zero is None else np.asarray(zero, np.int64)
    if not scale.size:
        raise ConversionError(f"tensor '{src.attr('tensor', src.name)}' is quantized without a "
                              "scale")
    op.set_attr("scale", scale)
    op.set_attr("zero_point", zero.reshape(-1))
    op.set_attr("axis", int(src.attr("axis", 0) or 0))
    if with_dtype:
        op.set_attr("dtype", src.attr("dtype"))


def parse_quantize(src, op):
    """TFLiteQuantize: the float value quantized to the tensor's type."""
    _quant_attrs(src, op, True)


def parse_dequantize(src, op):
    """TFLiteDequantize: the quantized tensor read as float32 (its type is the input's)."""
    _quant_attrs(src, op, False)


def parse_quantize_op(src, op):
    """QUANTIZE in the float view: its float input as it is (the synthetic TFLiteQuantize
    after it quantizes)."""


def parse_dequantize_op(src, op):
    """DEQUANTIZE in the float view: float32 of its input (a float16 constant, or an int8
    tensor the view already dequantized)."""
    op.set_attr("dst_type", "float32")


MAPPINGS = [
    tflite_op("QuantizeLinear", "TFLiteQuantize").parse_params_fn(parse_quantize),
    tflite_op("DequantizeLinear", "TFLiteDequantize").parse_params_fn(parse_dequantize),
    tflite_op("Identity", "QUANTIZE").parse_params_fn(parse_quantize_op),
    tflite_op("Cast", "DEQUANTIZE").parse_params_fn(parse_dequantize_op),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(quantize_linear.OPS)
