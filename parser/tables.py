"""Lookup tables through TF2 freezing. convert_variables_to_constants_v2 turns a captured
table (tf.lookup.StaticHashTable, StaticVocabularyTable, MutableHashTable) into a `resource`
Placeholder and drops its contents. `restore_tables` reads each captured table's contents
from the live table (LookupTableExportV2, with the key and value dtypes its lookups in the
graph name) and writes the table back as a TF1 graph holds one:

    NAME               HashTableV2 (key_dtype, value_dtype; the Placeholder's name)
    NAME/tf2ir_keys    Const
    NAME/tf2ir_values  Const
    NAME/tf2ir_import  LookupTableImportV2(NAME, NAME/tf2ir_keys, NAME/tf2ir_values)

with a control edge from the import to each consumer of the table, so that TensorFlow can
still run the frozen graph, and tf2ir's `lookup_table_init` fusion maps it like a TF1 table.
A MutableHashTable is frozen with the contents it has when the model is frozen.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

# TF ops that say a table's key and value dtypes: op → (key attr, value attr)
_TYPED_USERS = {"LookupTableFindV2": ("Tin", "Tout"), "LookupTableImportV2": ("Tin", "Tout"),
                "LookupTableInsertV2": ("Tin", "Tout"), "LookupTableRemoveV2": ("Tin", None),
                "LookupTableExportV2": ("Tkeys", "Tvalues")}


def captured_resources(concrete) -> Dict[str, object]:
    """Placeholder name in the function's graph → the eager resource handle it captures."""
    import tensorflow as tf
    out = {}
    for external, internal in concrete.graph.captures:
        if internal.dtype == tf.resource and getattr(external, "dtype", None) == tf.resource:
            out[internal.op.name] = external
    return out


def _table_types(graph_def, name: str) -> Optional[Tuple[int, int]]:
    """The (key, value) DataType enums that the consumers of table `name` give, through
    Identity nodes (an inlined call's inputs); None when none says."""
    users: Dict[str, list] = {}
    for node in graph_def.node:
        if node.input and not node.input[0].startswith("^"):
            users.setdefault(node.input[0].split(":")[0], []).append(node)
    key = value = None
    stack, seen = [name], set()
    while stack:
        for node in users.get(stack.pop(), ()):
            if node.name in seen:
                continue
            seen.add(node.name)
            if node.op == "Identity":
                stack.append(node.name)
            attrs = _TYPED_USERS.get(node.op)
            if attrs is not None:
                key = key or node.attr[attrs[0]].type
                value = value or (node.attr[attrs[1]].type if attrs[1] else None)
    return (key, value) if key and value else None


def _export(tf, handle, types) -> Tuple[object, object]:
    """The table's (keys, values) as eager tensors. The dtypes must be the table's: TF's
    kernel aborts the process on others, so they are never guessed."""
    key, value = (tf.as_dtype(t) for t in types)
    return tf.raw_ops.LookupTableExportV2(table_handle=handle, Tkeys=key, Tvalues=value)


def restore_tables(concrete, graph_def) -> List[str]:
    """Rewrite, in `graph_def` (frozen from `concrete`), every resource Placeholder that
    captures a lookup table as a table initialised from constants; return their names."""
    import tensorflow as tf
    handles = captured_resources(concrete)
    restored = []
    for node in list(graph_def.node):
        if node.op != "Placeholder" or node.name not in handles \
                or node.attr["dtype"].type != tf.resource.as_datatype_enum:
            continue
        types = _table_types(graph_def, node.name)
        if types is None:   # no lookup says the dtypes (a handle passed into a function)
            continue
        _write_table(graph_def, node, *_export(tf, handles[node.name], types))
        restored.append(node.name)
    return restored


def _write_table(graph_def, node, keys, values) -> None:
    def fill(const, tensor):
        const.op = "Const"
        const.attr["dtype"].type = tensor.dtype.as_datatype_enum
        const.attr["value"].tensor.ParseFromString(
            _tensor_proto(tensor).SerializeToString())   # TF's and TensorBoard's protos differ
    write_const_table(graph_def, node, keys.dtype.as_datatype_enum,
                      values.dtype.as_datatype_enum, (keys, values), fill)


def write_const_table(graph_def, node, key_type: int, value_type: int, contents, fill) -> None:
    """Turn table `node` of `graph_def` into a TF1 HashTableV2 initialised from two
    constants, `<name>/tf2ir_keys` and `<name>/tf2ir_values`, which `fill(const_node, item)`
    writes from the two items of `contents`; the table's users wait for the import by a
    control edge. (Also the native SavedModel reader's, parser/saved_model.py.)"""
    name = node.name
    node.op = "HashTableV2"
    node.ClearField("attr")
    node.attr["key_dtype"].type = key_type
    node.attr["value_dtype"].type = value_type
    node.attr["shared_name"].s = f"tf2ir_table_{name}".encode()
    node.attr["use_node_name_sharing"].b = False
    node.attr["container"].s = b""
    for suffix, item in zip(("tf2ir_keys", "tf2ir_values"), contents):
        fill(graph_def.node.add(name=f"{name}/{suffix}"), item)
    importer = graph_def.node.add(name=f"{name}/tf2ir_import", op="LookupTableImportV2",
                                  input=[name, f"{name}/tf2ir_keys", f"{name}/tf2ir_values"])
    importer.attr["Tin"].type = key_type
    importer.attr["Tout"].type = value_type
    for user in graph_def.node:
        if user is not importer and any(i.split(":")[0] == name for i in user.input
                                        if not i.startswith("^")):
            user.input.append(f"^{importer.name}")


def _tensor_proto(tensor):
    import tensorflow as tf
    return tf.make_tensor_proto(tensor.numpy())
