"""TFLite Flex (Select TF) ops: a custom op whose code is "Flex" + a TF op type and whose
options are a flexbuffer vector [TF op type, serialized NodeDef]. The node becomes that TF
NodeDef with the view's inputs, a TENSORFLOW node the TF plugins map (DESIGN decision 11)."""

from __future__ import annotations

from typing import List, Tuple

from tf2ir.ir.errors import ConversionError
from tf2ir.parser.graph_view import TfNode
from tf2ir.parser.tflite_model import OperatorInfo


def flex_node(op: OperatorInfo, name: str, inputs: List[Tuple[str, int]], model: str) -> TfNode:
    from google.protobuf import message
    from tensorboard.compat.proto import node_def_pb2
    where = dict(model=model, node=name, op_type=op.op_type)
    if op.custom_options is None:
        raise ConversionError("a Flex op without options (its NodeDef)", **where)
    try:
        from flatbuffers import flexbuffers
        decoded = flexbuffers.Loads(op.custom_options)
    except Exception as exc:   # the flexbuffers runtime raises plain errors on bad bytes
        raise ConversionError(f"a Flex op whose options are not a flexbuffer ({exc})"[:200],
                              **where) from None
    if not isinstance(decoded, (list, tuple)) or len(decoded) < 2:
        raise ConversionError("a Flex op whose options are not [op type, NodeDef]", **where)
    node_def = node_def_pb2.NodeDef()
    data = decoded[1]
    try:
        node_def.ParseFromString(data.encode("latin-1") if isinstance(data, str) else bytes(data))
    except (message.DecodeError, UnicodeError, TypeError, ValueError) as exc:
        raise ConversionError(f"a Flex op whose NodeDef does not parse ({exc})", **where) from None
    if node_def.op != op.op_type[len("Flex"):]:
        raise ConversionError(f"a Flex op whose NodeDef is a {node_def.op!r:.60}, not "
                              f"{op.op_type[len('Flex'):]}", **where)
    node_def.name = name
    del node_def.input[:]
    node_def.input.extend(f"{src}:{port}" for src, port in inputs)
    return TfNode(node_def)
