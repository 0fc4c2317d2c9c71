"""The IR: graphs of typed nodes and values, op prototypes, verification, passes,
the text form, and compilation to ONNX."""

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.tensor import DTYPES, FORMATS, TensorDesc
from tf2ir.ir.graph import Graph, Node, Value
from tf2ir.ir.prototype import (
    OpPrototype, OpSet, PrototypeRegistry, get_prototype, has_prototype, op_prototype,
    prototypes_of, registered_prototypes,
)

__all__ = [
    "ConversionError", "DTYPES", "FORMATS", "TensorDesc", "Graph", "Node", "Value",
    "OpPrototype", "OpSet", "PrototypeRegistry", "get_prototype", "has_prototype", "op_prototype",
    "prototypes_of", "registered_prototypes",
]
