"""TFLite Flex (Select TF) ops: a custom op whose code is "Flex" + a TF op type and whose
options are a flexbuffer vector [TF op type, serialized NodeDef]. The node becomes that TF
NodeDef with the view's inputs, a TENSORFLOW node the TF plugins map (DESIGN decision 11)."""

from __future__ import annotations

from typing import List, Tuple

from tf2ir.ir.errors import ConversionError
from tf2ir.parser.graph_view import TfNode
from tf2ir.parser.tflite_model import OperatorInfo


class FlexNode(TfNode):
    """The TF node of a Flex op: a TENSORFLOW node, which the TFLite view can still mark as
    its own (`view`) and which remembers the TFLite op type it came from."""

    __slots__ = ("view", "flex_op")

    def __init__(self, node_def, flex_op: str):
        super().__init__(node_def)
        self.view = None
        self.flex_op = flex_op


def _node_def_bytes(options: bytes) -> bytes:
    """The serialized NodeDef of a Flex op's options, a flexbuffer vector [op type, NodeDef]:
    read as the bytes stored (a NodeDef is binary, not text: decoding it as UTF-8 would lose or
    change bytes). ValueError where the options are not that."""
    from flatbuffers import flexbuffers
    root = flexbuffers.GetRoot(bytes(options))
    if not root.IsVector:
        raise ValueError("not a vector")
    vector = root.AsVector
    if len(vector) < 2:
        raise ValueError(f"a vector of {len(vector)}")
    item = vector[1]
    if item.IsString:
        return bytes(item.AsStringBytes)
    if item.IsBlob:
        return bytes(item.AsBlob)
    raise ValueError("its second element is not a string")


def flex_node(op: OperatorInfo, name: str, inputs: List[Tuple[str, int]], model: str) -> TfNode:
    """The TF node of Flex operator `op`, named `name`, reading `inputs`."""
    from google.protobuf import message
    from tensorboard.compat.proto import node_def_pb2
    where = dict(model=model, node=name, op_type=op.op_type)
    if op.custom_options is None:
        raise ConversionError("a Flex op without options (its NodeDef)", **where)
    try:
        data = _node_def_bytes(op.custom_options)
    except Exception as exc:   # the flexbuffers runtime raises plain errors on bad bytes
        raise ConversionError(f"a Flex op whose options are not a flexbuffer [op type, NodeDef] "
                              f"({exc})"[:200], **where) from None
    node_def = node_def_pb2.NodeDef()
    try:
        node_def.ParseFromString(data)
    except (message.DecodeError, ValueError) as exc:
        raise ConversionError(f"a Flex op whose NodeDef does not parse ({exc})"[:200],
                              **where) from None
    if node_def.op != op.op_type[len("Flex"):]:
        raise ConversionError(f"a Flex op whose NodeDef is a {node_def.op!r:.60}, not "
                              f"{op.op_type[len('Flex'):]}", **where)
    node_def.name = name
    del node_def.input[:]
    node_def.input.extend(f"{src}:{port}" for src, port in inputs)
    return FlexNode(node_def, op.op_type)
