"""Built-in mapping for TF's set operations between dense rows, DenseToDenseSetOperation
(opp/densesets.py)."""

from tf2ir.opp import densesets
from tf2ir.plugins import hookimpl, register_op

MAPPINGS = [register_op("DenseToDenseSetOperation").origin_op_type("DenseToDenseSetOperation")]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(densesets.OPS)
