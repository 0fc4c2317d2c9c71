"""What the runtime session reads off a model before it runs: the declared type and shape of
every value, a node's first input type (for native libraries that serve some types only), and
the string constants onnxruntime-extensions' bridge to Python kernels could not take."""

from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple

import onnx
from onnx import helper

from tf2ir.ir.errors import ConversionError

Declared = Tuple[int, Optional[Tuple[Optional[int], ...]]]   # elem type, shape (None: unknown)


def value_infos(model: onnx.ModelProto) -> Dict[str, Declared]:
    """Element type and shape (None: unknown; a dim None: not static) of every value the
    model (after onnx shape inference) names."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:   # custom ops onnx does not know can stop inference: use what is given
        inferred = model
    infos: Dict[str, Declared] = {}

    def collect(graph: onnx.GraphProto) -> None:
        for info in list(graph.input) + list(graph.output) + list(graph.value_info):
            kind = info.type.WhichOneof("value")
            tensor = info.type.tensor_type
            if kind == "tensor_type" and tensor.elem_type:
                shape = None
                if tensor.HasField("shape"):
                    shape = tuple(d.dim_value if d.HasField("dim_value") else None
                                  for d in tensor.shape.dim)
                infos[info.name] = (tensor.elem_type, shape)
        for init in graph.initializer:
            infos[init.name] = (init.data_type, tuple(init.dims))
        for node in graph.node:
            for attr in node.attribute:
                for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                    collect(sub)
    collect(inferred.graph)
    return infos


def input_type_of(proto: onnx.ModelProto) -> Callable[[onnx.NodeProto], Optional[str]]:
    """node → the numpy dtype name of its first input (None: none or unknown), inferring the
    model's value types on the first question only."""
    found: Dict[str, Dict[str, Declared]] = {}

    def input_type(node: onnx.NodeProto) -> Optional[str]:
        if not node.input or not node.input[0]:
            return None
        if "declared" not in found:
            found["declared"] = value_infos(proto)
        elem = found["declared"].get(node.input[0], (0, None))[0]
        return helper.tensor_dtype_to_np_dtype(elem).name if elem else None
    return input_type


def refuse_undecodable_strings(proto: onnx.ModelProto, node: onnx.NodeProto) -> None:
    """onnxruntime-extensions hands strings to Python kernels as text and aborts the process
    on bytes that are not UTF-8: a model with Python kernels may not hold such a string
    constant (a native kernel takes any bytes)."""
    def tensors(graph: onnx.GraphProto):
        yield from graph.initializer
        for n in graph.node:
            for attr in n.attribute:
                if attr.HasField("t"):
                    yield attr.t
                for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                    yield from tensors(sub)
    for tensor in tensors(proto.graph):
        if tensor.data_type != onnx.TensorProto.STRING:
            continue
        for value in tensor.string_data:
            try:
                value.decode("utf-8")
            except UnicodeDecodeError:
                raise ConversionError(
                    f"string constant '{tensor.name}' holds bytes that are not UTF-8 "
                    f"({value[:40]!r}), which the Python kernels of this model's plugin ops "
                    "cannot take (onnxruntime-extensions would abort the process): build the "
                    "native kernels (a C++ compiler at install) or convert a model without them",
                    node=node.name or None, op_type=node.op_type) from None
