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
# ops whose kernels read the table at input 1 with fixed dtypes (DataType enums): TF-text's
# WordPiece looks its vocabulary up as string → int64
_FIXED_TYPES = {"WordpieceTokenizeWithOffsets": (7, 9)}


def captured_resources(concrete) -> Dict[str, object]:
    """Placeholder name in the function's graph → the eager resource handle it captures."""
    import tensorflow as tf
    out = {}
    for external, internal in concrete.graph.captures:
        if internal.dtype == tf.resource and getattr(external, "dtype", None) == tf.resource:
            out[internal.op.name] = external
    return out


# Functional ops that pass tensors into functions: op → (function attrs, input offset of arg 0)
FUNCTION_ATTRS = {"If": (("then_branch", "else_branch"), 1),
                  "StatelessIf": (("then_branch", "else_branch"), 1),
                  "While": (("cond", "body"), 0), "StatelessWhile": (("cond", "body"), 0),
                  "Case": (("branches",), 1), "StatelessCase": (("branches",), 1),
                  "PartitionedCall": (("f",), 0), "StatefulPartitionedCall": (("f",), 0)}
MAX_DEPTH = 32
# Ops that pass a handle on (TF1 control flow too: Switch's two outputs, Merge, frames).
PASS_THROUGH = ("Identity", "Switch", "Merge", "Enter", "Exit", "NextIteration")


def called_functions(node) -> List[str]:
    """The names of the functions NodeDef `node` (a functional op) calls."""
    names: List[str] = []
    for attr in FUNCTION_ATTRS.get(node.op, ((), 0))[0]:
        value = node.attr[attr]
        names += [f.name for f in value.list.func] if attr == "branches" else [value.func.name]
    return names


def _table_types(graph_def, name: str) -> Optional[Tuple[int, int]]:
    """The (key, value) DataType enums that the consumers of table `name` give, through
    Identity nodes and into the functions (If branches, While bodies, calls) it is passed
    to; None when none says."""
    functions = {f.signature.name: f for f in graph_def.library.function}
    found: List[int] = [0, 0]
    _typed_users(list(graph_def.node), {name}, functions, found, set(), 0)
    return (found[0], found[1]) if found[0] and found[1] else None


def _typed_users(nodes, names, functions, found: List[int], seen: set, depth: int) -> None:
    """Fill `found` ([key, value] enums) from the users of the tensors `names` in `nodes`."""
    users: Dict[str, list] = {}
    for node in nodes:
        position = 0
        for ref in node.input:
            if ref.startswith("^"):
                continue
            users.setdefault(ref.split(":")[0], []).append((node, position))
            position += 1
    stack = list(names)
    while stack:
        for node, position in users.get(stack.pop(), ()):
            if (node.op in PASS_THROUGH and (node.op != "Switch" or position == 0)
                    and node.name not in names):
                names = names | {node.name}
                stack.append(node.name)
            attrs = _TYPED_USERS.get(node.op)
            if attrs is not None and position == 0:
                found[0] = found[0] or node.attr[attrs[0]].type
                found[1] = found[1] or (node.attr[attrs[1]].type if attrs[1] else 0)
            if node.op in _FIXED_TYPES and position == 1:
                found[0], found[1] = found[0] or _FIXED_TYPES[node.op][0], \
                    found[1] or _FIXED_TYPES[node.op][1]
            if node.op in FUNCTION_ATTRS and depth < MAX_DEPTH:
                index = position - FUNCTION_ATTRS[node.op][1]
                for fname in called_functions(node):
                    fdef = functions.get(fname)
                    if fdef is None or not 0 <= index < len(fdef.signature.input_arg) \
                            or (fname, index) in seen:
                        continue
                    seen.add((fname, index))
                    _typed_users(list(fdef.node_def), {fdef.signature.input_arg[index].name},
                                 functions, found, seen, depth + 1)


def _export(tf, handle, types) -> Tuple[object, object]:
    """The table's (keys, values) as eager tensors. The dtypes must be the table's: TF's
    kernel aborts the process on others, so they are never guessed."""
    key, value = (tf.as_dtype(t) for t in types)
    return tf.raw_ops.LookupTableExportV2(table_handle=handle, Tkeys=key, Tvalues=value)


def restore_tables(concrete, graph_def) -> List[str]:
    """Rewrite, in `graph_def` (frozen from `concrete`), every resource Placeholder that
    captures a lookup table as a table initialised from constants; return their names."""
    import tensorflow as tf

    from tf2ir.parser.tftext_resources import restore_sentencepiece
    handles = captured_resources(concrete)
    restored = []
    for node in list(graph_def.node):
        if node.op != "Placeholder" or node.name not in handles \
                or node.attr["dtype"].type != tf.resource.as_datatype_enum:
            continue
        if restore_sentencepiece(tf, graph_def, node, handles[node.name]):
            restored.append(node.name)
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


# -- tables in function bodies and run-time caches (at conversion, no TensorFlow) ------------
TABLE_NODE_OPS = ("HashTableV2", "HashTable", "MutableHashTableV2", "MutableHashTable")
CONST_INIT_OPS = ("LookupTableImportV2", "InitializeTableV2")
STATE_READERS = ("LookupTableSizeV2", "LookupTableExportV2", "LookupTableRemoveV2")


class _Table:
    """A table node of a graph view with its one init from two Const operands."""

    def __init__(self, node, init, keys, values):
        self.node, self.init, self.keys, self.values = node, init, keys, values


def resolve_tables(tf_graph, library: Dict[str, object]) -> None:
    """Make the lookup tables of graph view `tf_graph` (the model's, or a function body's)
    convert where their handles go:

    - a constant table (one LookupTableImportV2/InitializeTableV2 of two Consts) whose handle
      an If, While or Case passes into its functions: each such function is specialised
      (a copy in the library, `<name>_tf2ir_table_<i>`) with the table written into its
      body, so the lookups there read a table of their own graph (nested control flow
      repeats this when the body is converted);
    - a table filled at run time (LookupTableInsertV2, keras-hub BPE's MutableHashTable cache):
      each lookup reads what the table holds when it runs in this graph, its frozen contents
      and the inserts it waits on (control or data edges), the last insert of a key winning;
      the inserts themselves are dropped (a run of the converted model starts with the frozen
      contents: a memo's lookups miss and are recomputed, with the same results). Its size,
      export or removals after inserts, and lookups after a function that inserts, are
      refused (the converted model could not give TensorFlow's result).
    """
    nodes = tf_graph.nodes
    tables = _const_tables(nodes)
    inserts: Dict[str, list] = {}
    for node in nodes.values():
        if node.op_type == "LookupTableInsertV2" and node.inputs:
            table = _table_name(nodes, node.inputs[0])
            if table in tables:
                inserts.setdefault(table, []).append(node)
    writers: Dict[str, List[str]] = {}   # table → functional nodes whose functions insert
    for node in list(nodes.values()):
        if node.op_type in FUNCTION_ATTRS and node.op_type not in CALL_OPS_:
            for table in _sink(tf_graph, library, node, tables):
                writers.setdefault(table, []).append(node.name)
    for table in set(inserts) | set(writers):
        _run_time_table(tf_graph, tables[table], inserts.get(table, []), writers.get(table, []))


CALL_OPS_ = ("PartitionedCall", "StatefulPartitionedCall")   # inlined before this pass


def _table_name(nodes, tensor) -> Optional[str]:
    """The table node a handle tensor comes from, through Identity nodes."""
    seen = 0
    while tensor[0] in nodes and nodes[tensor[0]].op_type == "Identity" and seen < 10000:
        node = nodes[tensor[0]]
        if not node.inputs:
            return None
        tensor, seen = node.inputs[0], seen + 1
    node = nodes.get(tensor[0])
    return node.name if node is not None and node.op_type in TABLE_NODE_OPS else None


def _const_tables(nodes) -> Dict[str, _Table]:
    inits: Dict[str, list] = {}
    for node in nodes.values():
        if node.op_type in CONST_INIT_OPS + ("LookupTableInsertV2",) and node.inputs:
            inits.setdefault(node.inputs[0][0], []).append(node)
    out = {}
    for name, node in nodes.items():
        const = [i for i in inits.get(name, ()) if i.op_type in CONST_INIT_OPS]
        if node.op_type not in TABLE_NODE_OPS or len(const) != 1 or len(const[0].inputs) != 3:
            continue
        keys, values = (nodes.get(src) for src, _ in const[0].inputs[1:])
        if keys is not None and values is not None and keys.op_type == values.op_type == "Const":
            out[name] = _Table(node, const[0], keys, values)
    return out


def _sink(tf_graph, library, node, tables: Dict[str, _Table]) -> List[str]:
    """Specialise the functions of functional `node` for the constant tables among its
    inputs; the tables whose handles a function inserts into."""
    attrs, offset = FUNCTION_ATTRS[node.op_type]
    passed = {}
    for position, tensor in enumerate(node.inputs):
        table = _table_name(tf_graph.nodes, tensor)
        if table in tables and position >= offset:
            passed[position - offset] = tables[table]
    if not passed:
        return []
    written = []
    node_def = node._def
    for attr in attrs:
        funcs = list(node_def.attr[attr].list.func) if attr == "branches" \
            else [node_def.attr[attr].func]
        for func in funcs:
            fdef = library.get(func.name)
            if fdef is None:
                continue
            func.name, inserting = _specialise(tf_graph, library, fdef, passed)
            written += [t for t in inserting if t not in written]
    node._attrs = None   # the func attrs changed: decode again
    for table in passed.values():   # the table passed in stays initialised where it is made
        if table.init.name not in node.control_inputs:
            node.control_inputs.append(table.init.name)
    return written


def _specialise(tf_graph, library, fdef, passed: Dict[int, _Table]):
    """A copy of `fdef` with each table of `passed` (argument index → table) written into
    its body in place of the argument; its name and the tables its body inserts into."""
    used = {r.split(":")[0] for n in fdef.node_def for r in n.input}
    passed = {i: t for i, t in passed.items()
              if i < len(fdef.signature.input_arg) and fdef.signature.input_arg[i].name in used}
    if not passed:   # nothing reads those arguments (or they were written in already)
        return fdef.signature.name, []
    base = fdef.signature.name
    count = 1
    while f"{base}_tf2ir_table_{count}" in library:
        count += 1
    copy = tf_graph.library.function.add()
    copy.CopyFrom(fdef)
    copy.signature.name = f"{base}_tf2ir_table_{count}"
    library[copy.signature.name] = copy
    taken = {n.name for n in copy.node_def} | {a.name for a in copy.signature.input_arg}
    inserting = []
    for index, table in sorted(passed.items()):
        if index >= len(copy.signature.input_arg):
            continue
        arg = copy.signature.input_arg[index].name
        name = _fresh(f"tf2ir_table_{arg}", taken)
        keys, values, init = (_fresh(f"{name}/{s}", taken) for s in ("keys", "values", "init"))
        for new_name, source in ((name, table.node), (keys, table.keys), (values, table.values)):
            new = copy.node_def.add(name=new_name, op=source.op_type)
            for key, value in source._def.attr.items():
                new.attr[key].CopyFrom(value)
        new = copy.node_def.add(name=init, op=table.init.op_type,
                                input=[f"{name}:table_handle:0", f"{keys}:output:0",
                                       f"{values}:output:0"])
        for key, value in table.init._def.attr.items():
            new.attr[key].CopyFrom(value)
        handle = f"{name}:table_handle:0"
        for node in copy.node_def:
            if any(r == arg or r.startswith(arg + ":") for r in node.input):
                node.input[:] = [handle if r == arg or r.startswith(arg + ":") else r
                                 for r in node.input] + [f"^{init}"]   # the init runs first
                if node.op == "LookupTableInsertV2" and node.input[0] == handle:
                    inserting.append(table.node.name)
    return copy.signature.name, inserting


def _fresh(base: str, taken: set) -> str:
    name, count = base, 0
    while name in taken:
        count += 1
        name = f"{base}_{count}"
    taken.add(name)
    return name


def _ancestors(nodes, name: str) -> set:
    out, stack = set(), [name]
    while stack:
        node = nodes.get(stack.pop())
        if node is None:
            continue
        for src in [s for s, _ in node.inputs] + list(node.control_inputs):
            if src not in out:
                out.add(src)
                stack.append(src)
    return out


def _run_time_table(tf_graph, table: _Table, inserts: list, writers: List[str]) -> None:
    from tf2ir.ir.errors import ConversionError, ExitStatus
    nodes = tf_graph.nodes
    name = table.node.name
    for node in list(nodes.values()):
        if not node.inputs or _table_name(nodes, node.inputs[0]) != name:
            continue
        if node.op_type in STATE_READERS or node.op_type == "LookupTableFindV2":
            up = _ancestors(nodes, node.name)
            writer = next((w for w in writers if w in up), None)
            if node.op_type in STATE_READERS or writer is not None:
                why = (f"after '{writer}', whose function inserts into it" if writer else
                       "which is filled at run time (LookupTableInsertV2)")
                raise ConversionError(
                    f"reads lookup table {name} {why}; tf2ir converts run-time tables only "
                    "where each lookup and the inserts it waits on are in one graph",
                    node=node.name, op_type=node.op_type, exit_code=ExitStatus.UNSUPPORTED)
            before = [i for i in inserts if i.name in up]
            if before:
                ups = {i.name: _ancestors(nodes, i.name) for i in before}
                before.sort(key=lambda i: sum(o.name in ups[i.name] for o in before))
                _dynamic_find(tf_graph, table, node, before)
    for insert in inserts:   # what they wrote is read through the rewritten lookups
        from tensorboard.compat.proto.node_def_pb2 import NodeDef

        from tf2ir.parser.graph_view import TfNode
        noop = TfNode(NodeDef(name=insert.name, op="NoOp"))
        noop.control_inputs = list(insert.control_inputs)
        nodes[insert.name] = noop


def _dynamic_find(tf_graph, table: _Table, find, inserts: list) -> None:
    """Rewrite LookupTableFindV2 `find` as TF ops over the table's contents when it runs:
    the frozen keys and values followed by each insert's (reversed, so the last wins),
    matched by Equal, the first match taken by ArgMax, `default` where none matches."""
    import numpy as np
    from tensorboard.compat.proto.node_def_pb2 import NodeDef

    from tf2ir.parser.graph_view import TfNode
    from tf2ir.parser.resources import set_const
    nodes = tf_graph.nodes
    key, value = find._def.attr["Tin"].type, find._def.attr["Tout"].type
    i32, boolean = 3, 10
    base = f"{find.name}/tf2ir_run_time"
    taken = set(nodes)

    def add(op, inputs, attrs, name=None, control=()):
        node_def = NodeDef(name=name or _fresh(f"{base}/{op}", taken), op=op,
                           input=[s if p == 0 else f"{s}:{p}" for s, p in inputs])
        for k, v in attrs.items():
            if isinstance(v, bool):
                node_def.attr[k].b = v
            elif k in ("N", "batch_dims"):
                node_def.attr[k].i = v
            else:
                node_def.attr[k].type = v
        node = TfNode(node_def)
        node.control_inputs = list(control)
        nodes[node.name] = node
        return (node.name, 0)

    def const(array):
        node_def = NodeDef(name=_fresh(f"{base}/const", taken))
        set_const(node_def, i32, list(np.shape(array)), np.asarray(array, np.int32))
        nodes[node_def.name] = TfNode(node_def)
        return (node_def.name, 0)
    flat, zero, one = const([-1]), const(0), const(1)
    sources = [((table.keys.name, 0), (table.values.name, 0))] + \
        [(i.inputs[1], i.inputs[2]) for i in inserts]
    parts = {dtype: [add("Reshape", [tensor, flat], {"T": dtype, "Tshape": i32})
                     for tensor in tensors]
             for dtype, tensors in ((key, [s[0] for s in sources]),
                                    (value, [s[1] for s in sources]))}
    reversed_ = {}
    for dtype, tensors in parts.items():
        joined = add("ConcatV2", tensors + [zero], {"N": len(tensors), "T": dtype, "Tidx": i32})
        reversed_[dtype] = add("ReverseV2", [joined, const([0])], {"T": dtype, "Tidx": i32})
    query = add("Reshape", [find.inputs[1], flat], {"T": key, "Tshape": i32})
    equal = add("Equal", [add("ExpandDims", [query, one], {"T": key, "Tdim": i32}),
                          add("ExpandDims", [reversed_[key], zero], {"T": key, "Tdim": i32})],
                {"T": key, "incompatible_shape_error": True})
    hits = add("Pad", [add("Cast", [equal], {"SrcT": boolean, "DstT": i32}),
                       const([[0, 0], [0, 1]])], {"T": i32, "Tpaddings": i32})
    index = add("ArgMax", [hits, one], {"T": i32, "Tidx": i32, "output_type": i32})
    found = add("Greater", [add("Max", [hits, one], {"T": i32, "Tidx": i32,
                                                     "keep_dims": False}), zero], {"T": i32})
    default = find.inputs[2]
    padded = add("ConcatV2", [reversed_[value],
                              add("Reshape", [default, flat], {"T": value, "Tshape": i32}),
                              zero], {"N": 2, "T": value, "Tidx": i32})
    picked = add("GatherV2", [padded, index, zero],
                 {"Tparams": value, "Tindices": i32, "Taxis": i32, "batch_dims": 0})
    chosen = add("SelectV2", [found, picked, default], {"T": value})
    shape = add("Shape", [find.inputs[1]], {"T": key, "out_type": i32})
    add("Reshape", [chosen, shape], {"T": value, "Tshape": i32}, name=find.name,
        control=find.control_inputs)
