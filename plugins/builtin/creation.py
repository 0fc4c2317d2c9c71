"""Built-in mappings for TF's tensor-creation ops: Fill, ZerosLike, OnesLike, Range, LinSpace,
Tile and BroadcastTo."""

from tf2ir.opp import creation as creation_ops
from tf2ir.plugins import hookimpl, register_op

MAPPINGS = [
    register_op("Fill").origin_op_type("Fill"),
    register_op("ZerosLike").origin_op_type("ZerosLike"),
    register_op("OnesLike").origin_op_type("OnesLike"),
    register_op("Range").origin_op_type("Range"),
    register_op("LinSpace").origin_op_type("LinSpace"),
    register_op("Tile").origin_op_type("Tile"),
    register_op("BroadcastTo").origin_op_type("BroadcastTo"),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(creation_ops.OPS)
