"""What TFLITE mappings share (DESIGN decision 11): `tflite_op(ir_type, *origin)`, the
registration keyed by framework TFLITE, and the pieces a TFLite operator adds to the IR op it
maps to: its fused activation, its bias, and its NHWC/OHWI layouts as formats.

A TFLite mapping maps to IR ops, never to ONNX: a CONV_2D is the IR's Conv2D (data NHWC, the
filter OHWI declared as format NHWC: N the output channels, C the input ones), a BiasAdd and
its `fused_activation_function`, built as a one-to-many subgraph (`SubgraphBuilder`).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.graph import Value
from tf2ir.plugins.registry import TFLITE, OpRegistration, register_op
from tf2ir.plugins.subgraph import SubgraphBuilder

# TFLite's OHWI conv filter in the format machinery's letters: N out, H, W, C in.
OHWI = "NHWC"


def tflite_op(ir_type: str, *origin_types: str) -> OpRegistration:
    """register_op(ir_type).framework_type("TFLITE").origin_op_type(*origin_types)."""
    return register_op(ir_type).framework_type(TFLITE).origin_op_type(*origin_types)


def inputs_only(src, op) -> None:
    """The parse function of a TFLite op whose IR op takes its inputs, in TF's order, and
    none of its options (it has none, or the IR's defaults are their meaning)."""


def tflite_subgraph(*origin_types: str) -> OpRegistration:
    """A one-to-many TFLITE mapping: .parse_op_to_graph_fn(fn) builds its subgraph."""
    return tflite_op("PartitionedCall", *origin_types)


def data(src, graph: SubgraphBuilder, position: int, fmt: Optional[str] = None,
         ) -> Optional[Value]:
    """The subgraph value of TFLite input `position` (schema order), None when the model
    left that optional input out. `fmt`: the layout the tensor is in (a format; declared on
    the mapped graph's tensor, as IrOp.set_input_format does, so it outlives inlining)."""
    positions = getattr(src, "input_positions", None)
    index = positions[position] if positions and position < len(positions) else position
    if index is None or index >= len(src.inputs):
        return None
    value = graph.call.inputs[index]
    if fmt is not None and value is not None:
        value.desc.set_format(fmt)
    return graph.data(index)


def activation(graph: SubgraphBuilder, value: Value, name, src=None) -> Value:
    """`value` through TFLite's fused activation `name` (an ActivationFunctionType name;
    NONE or None: unchanged)."""
    if name in (None, "NONE", 0):
        return value
    dtype = value.desc.dtype
    if name == "RELU":
        return graph.add_op("Relu", [value], name="relu").outputs[0]
    if name == "RELU6":
        return graph.add_op("Relu6", [value], name="relu6").outputs[0]
    if name == "RELU_N1_TO_1":
        low = graph.const(np.array(-1, dtype=dtype), "low")
        high = graph.const(np.array(1, dtype=dtype), "high")
        return graph.add_op("ClipByValue", [value, low, high], name="relu_n1_to_1").outputs[0]
    if name == "TANH":
        return graph.add_op("Tanh", [value], name="tanh").outputs[0]
    if name == "SIGN_BIT":
        return graph.add_op("Sign", [value], name="sign").outputs[0]
    raise ConversionError(f"fused activation {name!r:.40} is not supported",
                          node=getattr(src, "name", None), op_type=getattr(src, "op_type", None))


def bias_add(graph: SubgraphBuilder, value: Value, bias: Optional[Value]) -> Value:
    """`value` + `bias` along the last (channel) dimension; unchanged without a bias."""
    if bias is None:
        return value
    return graph.add_op("BiasAdd", [value, bias], {"data_format": "NHWC"}, name="bias").outputs[0]


def padding(src) -> str:
    """TFLite's `padding` option as TF's padding attribute."""
    value = src.attr("padding", "SAME")
    if value not in ("SAME", "VALID"):
        raise ConversionError(f"padding {value!r:.40} is not supported", node=src.name,
                              op_type=src.op_type)
    return value


def output_dtype(src, index: int = 0) -> str:
    """The IR dtype output `index` of `src` has in the float view: its TFLite tensor's type,
    float32 where the view dequantizes it (integer data with scales, as the parser's QDQ
    rule says), so a CAST, ARG_MAX or TOPK_V2 mapping types its IR output as consumers read it."""
    tensors = getattr(src, "output_tensors", None) or []
    if index >= len(tensors):
        raise ConversionError(f"output {index} has no TFLite tensor", node=getattr(src, "name", None),
                              op_type=getattr(src, "op_type", None))
    tensor = tensors[index]
    if tensor.quantization is not None and tensor.dtype in ("int8", "uint8", "int16", "int32", "int64"):
        return "float32"
    if tensor.dtype is None:
        raise ConversionError("output type is not supported", node=getattr(src, "name", None),
                              op_type=getattr(src, "op_type", None))
    return tensor.dtype


def input_desc(src, graph: SubgraphBuilder, position: int):
    """The TensorDesc of TFLite input `position` (schema order) as the call sees it, without
    making its Data node (so that `data(..., fmt)` may still declare its format); None when
    the model left that optional input out."""
    positions = getattr(src, "input_positions", None)
    index = positions[position] if positions and position < len(positions) else position
    value = graph.call.inputs[index] if index is not None and index < len(graph.call.inputs) else None
    return None if value is None else value.desc


def required(src, graph: SubgraphBuilder, position: int, fmt: Optional[str] = None) -> Value:
    """`data(src, graph, position, fmt)` for an input the op cannot do without: a model that
    left it out is refused in one line."""
    value = data(src, graph, position, fmt)
    if value is None:
        raise ConversionError(f"input {position} is missing", node=getattr(src, "name", None),
                              op_type=getattr(src, "op_type", None))
    return value
