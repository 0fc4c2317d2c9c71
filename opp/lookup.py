"""Lookup tables: a constant hash table and the lookups into it.

TF's table handle (a `resource`) has no tensor form, so a table becomes the IR op
LookupTable, whose attributes hold its contents (`keys`, `values`: 1-D tensors) and whose
one value is its entry count (int64 scalar): LookupTableSizeV2 reads that value. When a
graph is parsed, each LookupTableFindV2 copies the contents of the LookupTable its handle
comes from into a LookupTableFind node of its own (plugins/builtin/lookup.py), which then
no longer reads the handle; the LookupTable node is left only where the size is used, and
folds to a constant.

* LookupTableFind: each key's value, or `default_value` (a run-time scalar) where the key
  is not in the table. The keys map to their positions with ai.onnx.ml LabelEncoder (opset 1,
  a string → int64 hash map, -1 where absent); int32/int64 keys are first cast to their
  decimal strings, exact over the whole int64 range, so the lookup costs O(N) whatever the
  table's size (no N x table-size comparison). The positions gather the values; Where puts
  the default in at -1.
"""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import NUMBER_TYPES, dtype_of_numpy
from tf2ir.opp.emitting import emit_where

OPS = OpSet("tf2ir.opp.lookup")
ML_DOMAIN = "ai.onnx.ml"
KEY_TYPES = ("string", "int32", "int64")
VALUE_TYPES = ("string", "bool") + tuple(t for t in NUMBER_TYPES if t != "bfloat16")


def table_dtype(array: np.ndarray) -> str:
    """The IR dtype of a table's keys or values array."""
    return dtype_of_numpy(np.asarray(array).dtype)


def check_contents(keys: np.ndarray, values: np.ndarray) -> None:
    """ConversionError unless `keys` and `values` are 1-D tensors a table can hold."""
    keys, values = np.asarray(keys), np.asarray(values)
    if keys.ndim != 1 or values.shape != keys.shape:
        raise ConversionError(f"a table's keys and values must be 1-D of one length, not "
                              f"{list(keys.shape)} and {list(values.shape)}")
    if table_dtype(keys) not in KEY_TYPES:
        raise ConversionError(f"table keys of dtype {table_dtype(keys)} are not supported "
                              f"(only {', '.join(KEY_TYPES)})")
    if table_dtype(values) not in VALUE_TYPES:
        raise ConversionError(f"table values of dtype {table_dtype(values)} are not supported")


def key_strings(keys: np.ndarray) -> list:
    """The table's keys as the strings LabelEncoder matches: text as UTF-8 str, integers
    as their decimal form (what ONNX Cast to string writes)."""
    def text(key):
        if isinstance(key, bytes):
            return key.decode("utf-8", "surrogateescape")
        return str(key) if isinstance(key, str) else str(int(key))
    return [text(k) for k in np.asarray(keys).reshape(-1)]


def _key_bytes(keys: np.ndarray) -> list:
    """`key_strings` as the bytes an ONNX attribute or tensor holds: a key that is not
    UTF-8 (GPT-2's byte → unicode table maps single bytes 0x80-0xFF) exactly as it is."""
    return [k.encode("utf-8", "surrogateescape") for k in key_strings(keys)]


# -- LookupTable -------------------------------------------------------------------------
table = (
    OPS.declare("LookupTable", "A constant hash table from `keys` to `values` (1-D tensors "
                "of one length); its value is its entry count.")
    .output("size", ("int64",)).attr("keys", "tensor").attr("values", "tensor"))


@table.infer
def _infer_table(node):
    check_contents(node.attrs["keys"], node.attrs["values"])
    return [TensorDesc("int64", ())]


@table.kernel
def table_size(keys=None, values=None):
    return np.array(np.asarray(keys).size, np.int64)


@table.lower
def _lower_table(ctx, node):
    size = np.array(np.asarray(node.attrs["keys"]).size, np.int64)
    ctx.op.Identity(ctx.constant(size), out=ctx.output(0))


# -- LookupTableFind ---------------------------------------------------------------------
find = (
    OPS.declare("LookupTableFind", "The value of each key in the table (`table_keys` → "
                "`table_values`), or `default_value` for keys not in it.")
    .input("keys", KEY_TYPES).input("default_value", VALUE_TYPES).output("values", VALUE_TYPES)
    .attr("table_keys", "tensor").attr("table_values", "tensor"))


@find.infer
def _infer_find(node):
    keys, values = node.attrs["table_keys"], node.attrs["table_values"]
    check_contents(keys, values)
    key_type, value_type = table_dtype(keys), table_dtype(values)
    if node.inputs[0].desc.dtype != key_type:
        raise ConversionError(f"keys of dtype {node.inputs[0].desc.dtype} looked up in a "
                              f"table of {key_type} keys")
    if node.inputs[1].desc.dtype != value_type:
        raise ConversionError(f"default value of dtype {node.inputs[1].desc.dtype} for a "
                              f"table of {value_type} values")
    default = node.inputs[1].desc.shape
    if default is not None and len(default) != 0:
        raise ConversionError(f"the default value must be a scalar, not of shape {list(default)}")
    return [TensorDesc(value_type, node.inputs[0].desc.shape)]


@find.kernel
def table_find(x, default, table_keys=None, table_values=None):
    x = np.asarray(x)
    positions = {k: i for i, k in enumerate(key_strings(table_keys))}
    index = [positions.get(k, -1) for k in key_strings(x)] if x.size else []
    values = np.asarray(table_values)
    out = [values[i] if i >= 0 else np.asarray(default).reshape(()) for i in index]
    return np.array(out, values.dtype).reshape(x.shape)


@find.lower
def _lower_find(ctx, node):
    keys, values = np.asarray(node.attrs["table_keys"]), np.asarray(node.attrs["table_values"])
    dtype = table_dtype(values)
    x = ctx.input(0)
    if keys.size == 0:     # every key is absent; Gather cannot read an empty table
        ctx.op.Expand(ctx.input(1), ctx.op.Shape(x), out=ctx.output(0))
        return
    if node.inputs[0].desc.dtype != "string":
        x = ctx.op.Cast(x, to=ONNX_DTYPES["string"])
    index = ctx.op.LabelEncoder(x, domain=ML_DOMAIN, classes_strings=_key_bytes(keys),
                                default_int64=-1)
    zero = ctx.constant(np.array(0, np.int64))
    found = ctx.op.GreaterOrEqual(index, zero)
    table_values = ctx.constant(values if dtype != "string" else
                                np.array(_key_bytes(values), object), "table_values")
    picked = ctx.op.Gather(table_values, ctx.op.Max(index, zero))
    if dtype == "string":
        ctx.op.Where(found, picked, ctx.input(1), out=ctx.output(0))
    else:
        emit_where(ctx, found, picked, ctx.input(1), dtype, ctx.output(0))
