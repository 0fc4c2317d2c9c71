"""Built-in mappings for TF's lookup tables (opp/lookup.py): HashTableV2 and
MutableHashTableV2 initialised from constants, LookupTableFindV2 and LookupTableSizeV2.

A table's contents reach tf2ir as a TF1 graph holds them: the table node and an init node
(LookupTableImportV2, InitializeTableV2 or LookupTableInsertV2) over Const keys and values.
TF2 freezing drops them; tf2ir's freezing (parser/tables.py) puts them back in that form.
The scope fusion pass `lookup_table_init` folds each table with its init into one
HashTableV2 node whose attributes `keys` and `values` hold the contents; that node maps to
the IR LookupTable. A table with no such init (filled from a file, or at run time) is
refused. StaticVocabularyTable needs nothing more: TF writes its out-of-vocabulary buckets
as StringToHashBucketFast (of AsString for int64 keys), NotEqual, AddV2 and SelectV2.
"""

from __future__ import annotations

from tf2ir.ir import ConversionError
from tf2ir.ir.errors import ExitStatus
from tf2ir.opp import lookup as lookup_ops
from tf2ir.plugins import (
    FusionResult, ScopePattern, Structure, hookimpl, register_op, scope_fusion_pass,
)

TABLE_OPS = ("HashTableV2", "MutableHashTableV2")
INIT_OPS = ("LookupTableImportV2", "InitializeTableV2", "LookupTableInsertV2")

table_init = scope_fusion_pass(
    "lookup_table_init", "a hash table and its init from constants → HashTableV2 with "
    "attributes keys and values").pattern(
    ScopePattern(structure=Structure(nodes={"table": "|".join(TABLE_OPS),
                                            "init": "|".join(INIT_OPS)},
                                     edges="table -> init"), name="table_init"))


@table_init
def _fold_table_init(match):
    """The table with its contents as attributes; declined (None) when the keys or values
    are not constants or the table has more than one init."""
    table, init = match.node("table"), match.node("init")
    if len(init.inputs) != 3 or init.inputs[0] != (table.name, 0):
        return None
    inits = [n for n in match.graph.nodes.values()
             if n.op_type in INIT_OPS and any(src == table.name for src, _ in n.inputs)]
    if len(inits) != 1:
        return None
    keys, values = (match.const_value(t) for t in init.inputs[1:])
    if keys is None or values is None or keys.shape != values.shape:
        return None
    return FusionResult(type="HashTableV2", name=table.name, inputs=[],
                        outputs=[(table.name, 0)], description=f"table {table.name}",
                        attrs={"keys": keys.reshape(-1), "values": values.reshape(-1)})


def parse_table(src, op):
    if not src.has_attr("keys") or not src.has_attr("values"):
        raise ConversionError(
            "the table is not initialised from constant keys and values in this graph (one "
            "LookupTableImportV2, InitializeTableV2 or LookupTableInsertV2 of Const operands); "
            "tables read from files or filled at run time cannot convert",
            exit_code=ExitStatus.UNSUPPORTED)
    keys, values = src.attr("keys"), src.attr("values")
    lookup_ops.check_contents(keys, values)
    op.set_attr("keys", keys)
    op.set_attr("values", values)


def _table_of(op):
    """The LookupTable node a lookup's table handle (input 0) comes from."""
    value = op.inputs[0] if op.inputs else None
    producer = getattr(value, "producer", None)
    if producer is None or producer.op_type != "LookupTable":
        raise ConversionError("the table handle does not come from a table of this graph "
                              "(a HashTableV2 initialised from constants); handles passed "
                              "into functions or loops cannot convert",
                              exit_code=ExitStatus.UNSUPPORTED)
    return producer


def parse_find(src, op):
    table = _table_of(op)
    op.set_attr("table_keys", table.attrs["keys"])
    op.set_attr("table_values", table.attrs["values"])
    op.inputs = op.inputs[1:]     # the contents are attributes now; the handle is not read


def parse_size(src, op):
    _table_of(op)                 # the table's value is its size


MAPPINGS = [
    register_op("LookupTable").origin_op_type(*TABLE_OPS).parse_params_fn(parse_table),
    register_op("LookupTableFind").origin_op_type("LookupTableFindV2")
    .parse_params_fn(parse_find),
    register_op("Identity").origin_op_type("LookupTableSizeV2").parse_params_fn(parse_size),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(lookup_ops.OPS)


@hookimpl
def tf2ir_fusion_passes():
    return [table_init]
