"""Built-in mappings for TF's fake quantization: FakeQuantWithMinMaxArgs/Vars/VarsPerChannel
(IR FakeQuant) and QuantizeAndDequantizeV2/V3/V4 (IR QuantizeDequantize)."""

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.opp import quantize as quantize_ops
from tf2ir.plugins import auto_mapping, hookimpl, register_op


def parse_fake_quant_args(src, op):
    """The Args form carries min and max as attributes: they become constant inputs."""
    auto_mapping(src, op)
    low, high = float(src.attr("min", -6.0)), float(src.attr("max", 6.0))
    if not low < high:
        raise ConversionError(f"min ({low}) must be below max ({high})")
    for name in ("min", "max"):
        op.attrs.pop(name, None)
    op.add_const_input(np.float32(low), "min")
    op.add_const_input(np.float32(high), "max")


def parse_fake_quant_vars(src, op):
    """TF's Vars kernel divides by the scale where the others multiply by its inverse."""
    auto_mapping(src, op)
    op.set_attr("divide", src.op_type == "FakeQuantWithMinMaxVars")


def parse_quantize_v3(src, op):
    """V3 takes num_bits as a tensor, which must be a constant."""
    auto_mapping(src, op)
    if len(op.inputs) != 4:
        raise ConversionError(f"QuantizeAndDequantizeV3 takes 4 inputs, not {len(op.inputs)}")
    bits = op.inputs.pop()
    if bits is None or bits.const_value is None:
        raise ConversionError("num_bits must be a constant")
    op.set_attr("num_bits", int(np.asarray(bits.const_value).reshape(-1)[0]))


MAPPINGS = [
    register_op("FakeQuant").origin_op_type("FakeQuantWithMinMaxArgs")
    .parse_params_fn(parse_fake_quant_args),
    register_op("FakeQuant").origin_op_type("FakeQuantWithMinMaxVars",
                                            "FakeQuantWithMinMaxVarsPerChannel")
    .parse_params_fn(parse_fake_quant_vars),
    register_op("QuantizeDequantize").origin_op_type("QuantizeAndDequantizeV2",
                                                     "QuantizeAndDequantizeV4"),
    register_op("QuantizeDequantize").origin_op_type("QuantizeAndDequantizeV3")
    .parse_params_fn(parse_quantize_v3),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(quantize_ops.OPS)
