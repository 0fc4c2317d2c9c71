"""A GraphDef whose large constants view the bytes of a memory-mapped checkpoint shard
(DESIGN decision 4: weights are never copied needlessly).

A protobuf `bytes` field owns a copy of its value, and every read of it makes another, so a
variable frozen into a Const NodeDef would exist three times before it reached the IR. The
native SavedModel reader (parser/saved_model.py) instead gives the converter a
`MappedGraphDef`: the frozen GraphDef's nodes, in order, where each large variable is a
`MappedConst` that quacks like a Const NodeDef (name, op, input, attr) and whose value is a
numpy view of the mapped shard. The IR's constants are those views and the ONNX writer
writes them out once, so a model whose weights exceed 2 GB (more than a GraphDef can hold)
converts with the weights in memory about once. `SerializeToString()` gives a real
GraphDef (copying the bytes) for what needs one, such as `tf2ir verify`.
"""

from __future__ import annotations

from typing import Dict, List

# A variable at least this large is mapped rather than copied into its Const NodeDef.
MAPPED_MIN_BYTES = 4 << 20


class _Dim:
    __slots__ = ("size",)

    def __init__(self, size: int):
        self.size = size


class _Shape:
    __slots__ = ("dim", "unknown_rank")

    def __init__(self, dims: List[int]):
        self.dim = [_Dim(int(d)) for d in dims]
        self.unknown_rank = False


class MappedTensor:
    """The fields of a TensorProto that tensor_to_numpy reads; the content is a view."""

    __slots__ = ("dtype", "tensor_shape", "tensor_content")

    def __init__(self, dtype: int, shape: List[int], content: memoryview):
        self.dtype, self.tensor_shape, self.tensor_content = dtype, _Shape(shape), content


class _TensorAttr:
    __slots__ = ("tensor",)

    def __init__(self, tensor: MappedTensor):
        self.tensor = tensor

    @staticmethod
    def WhichOneof(_group: str) -> str:   # noqa: N802 (protobuf's name)
        return "tensor"


class MappedConst:
    """A Const NodeDef stand-in holding a mapped tensor."""

    def __init__(self, name: str, dtype: int, shape: List[int], content: memoryview,
                 device: str = ""):
        from tensorboard.compat.proto.attr_value_pb2 import AttrValue
        self.name, self.op, self.device, self.input = name, "Const", device, []
        self.attr = {"dtype": AttrValue(type=dtype),
                     "value": _TensorAttr(MappedTensor(dtype, shape, content))}

    def to_proto(self):
        """A real Const NodeDef (the content copied)."""
        from tensorboard.compat.proto.node_def_pb2 import NodeDef
        tensor = self.attr["value"].tensor
        node = NodeDef(name=self.name, op="Const", device=self.device)
        node.attr["dtype"].type = tensor.dtype
        proto = node.attr["value"].tensor
        proto.dtype = tensor.dtype
        for dim in tensor.tensor_shape.dim:
            proto.tensor_shape.dim.add(size=dim.size)
        proto.tensor_content = bytes(tensor.tensor_content)
        return node

    def SerializeToString(self) -> bytes:   # noqa: N802 (protobuf's name)
        return self.to_proto().SerializeToString()


class MappedGraphDef:
    """What the pipeline reads of a GraphDef (`node`, `library`, `versions`), with mapped
    constants in place of some of `graph_def`'s nodes."""

    def __init__(self, graph_def, mapped: Dict[str, MappedConst]):
        self.node = [mapped.get(node.name, node) for node in graph_def.node]
        self.library = graph_def.library
        self.versions = graph_def.versions

    def to_proto(self):
        """A real GraphDef (mapped contents copied): for TensorFlow, and under 2 GB only."""
        from tf2ir.parser.graph_view import graph_def_class
        graph_def = graph_def_class()()
        graph_def.versions.CopyFrom(self.versions)
        graph_def.library.CopyFrom(self.library)
        for node in self.node:
            real = node.to_proto() if isinstance(node, MappedConst) else node
            graph_def.node.add().CopyFrom(real)
        return graph_def

    def SerializeToString(self) -> bytes:   # noqa: N802 (protobuf's name)
        return self.to_proto().SerializeToString()
