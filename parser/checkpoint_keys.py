"""Where a SavedModel's variables and tables get their values, read without TensorFlow
(parser/saved_model.py).

A variable's checkpoint key comes from the saver's restore op: the RestoreV2 node's
tensor_names and the Assign/AssignVariableOp each restored tensor feeds, followed through
the function calls of TF2's traced restore function (`_Sources`). For the handles a TF2
function captures, the object graph says it as TensorFlow binds them when it loads
(`captured_keys`). A table's contents come from the init ops (LookupTableImportV2 of
constants) or from the restore op (a MutableHashTable's checkpointed keys and values).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set

from tf2ir.parser.resources import CALL_OPS

IMPORT_OPS = ("LookupTableImportV2", "InitializeTableV2", "LookupTableImport", "InitializeTable")
FILE_INIT_OPS = ("InitializeTableFromTextFileV2", "InitializeTableFromTextFile",
                 "InitializeTableFromDataset")
INIT_COLLECTIONS = ("saved_model_main_op", "legacy_init_op", "main_op", "table_initializer",
                    "saved_model_initializers")
INIT_SIGNATURE = "__saved_model_init_op"
MAX_DEPTH = 32
Value = tuple   # ("node", name, port) | ("const", NodeDef) | ("checkpoint", key) | ("other",)


def captured_keys(meta_graph, graph_def, bundle) -> Dict[str, str]:
    """Outer VarHandleOp → checkpoint key through the object graph, as TensorFlow binds a
    TF2 function's captured inputs when it loads: the call's last inputs are the
    function's captures, SavedConcreteFunction.bound_inputs names their objects, and the
    checkpoint's TrackableObjectGraph (matched to the SavedObjectGraph by child names from
    the root) gives each variable object's VARIABLE_VALUE key. Keras 3 models need it: the
    handles the signature reads are not the ones the restore op assigns."""
    saved = meta_graph.object_graph_def
    functions = saved.concrete_functions
    calls = [n for n in graph_def.node if n.op in CALL_OPS and n.attr["f"].func.name in functions
             and functions[n.attr["f"].func.name].bound_inputs]
    key = "_CHECKPOINTABLE_OBJECT_GRAPH"
    if not calls or key not in bundle:
        return {}
    from tensorboard.compat.proto.trackable_object_graph_pb2 import TrackableObjectGraph
    value = bundle.tensor(key)[2].ravel()   # a checksum or layout error is the file's
    try:
        checkpoint = TrackableObjectGraph.FromString(bytes(value[0]))
    except Exception:
        return {}
    keys: Dict[int, str] = {}
    pairs, seen = [(0, 0)], set()
    while pairs:
        ours, theirs = pairs.pop()
        if ours in seen or ours >= len(saved.nodes) or theirs >= len(checkpoint.nodes):
            continue
        seen.add(ours)
        for attribute in checkpoint.nodes[theirs].attributes:
            if attribute.name == "VARIABLE_VALUE":
                keys[ours] = attribute.checkpoint_key
        children = {c.local_name: c.node_id for c in checkpoint.nodes[theirs].children}
        pairs += [(c.node_id, children[c.local_name]) for c in saved.nodes[ours].children
                  if c.local_name in children]
    nodes = {n.name: n for n in graph_def.node}
    out: Dict[str, str] = {}
    for call in calls:
        bound = list(functions[call.attr["f"].func.name].bound_inputs)
        data = [r for r in call.input if not r.startswith("^")]
        for ref, object_id in zip(data[len(data) - len(bound):], bound):
            node = nodes.get(ref.split(":")[0])
            if node is not None and node.op == "VarHandleOp" and object_id in keys:
                out[node.name] = keys[object_id]
    return out


# -- where variables and tables get their values ------------------------------------------------
class _Scope:
    """The outer graph or one function call's body, with its arguments bound to values."""

    def __init__(self, nodes: Dict[str, object], fdef=None, bindings: Sequence[Value] = ()):
        self.nodes, self.fdef = nodes, fdef
        self._decoded = {}
        self.args = {a.name: v for a, v in zip(fdef.signature.input_arg, bindings)} if fdef else {}

    def resolve(self, ref: str, depth: int = 0) -> Value:
        parts = ref.split(":")
        name = parts[0]
        if name in self.args:
            return self.args[name]
        node = self.nodes.get(name)
        if node is None or depth > 64:
            return ("other",)
        last = parts[-1]
        port = int(last) if len(parts) > 1 and last.isascii() and last.isdigit() else 0
        data = [r for r in node.input if not r.startswith("^")]
        if node.op == "Identity" and data:
            return self.resolve(data[0], depth + 1)
        if node.op == "Const":
            return ("const", node)
        if node.op == "RestoreV2" and len(data) == 3:
            names, slices = (self._strings(self.resolve(r, depth + 1)) for r in data[1:])
            if names is None or port >= len(names):
                return ("other",)
            if slices is not None and port < len(slices) and slices[port]:
                return ("sliced", names[port])
            return ("checkpoint", names[port])
        if self.fdef is None:
            return ("node", name, port)
        return ("other",)

    def _strings(self, value: Value) -> Optional[List[str]]:
        if value[0] != "const":
            return None
        cached = self._decoded.get(id(value[1]))
        if cached is None:
            from tf2ir.parser.attrs import tensor_to_numpy
            array = tensor_to_numpy(value[1].attr["value"].tensor).ravel()
            # keys as the checkpoint reader gives them (slice keys are binary)
            cached = [v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else str(v)
                      for v in array]
            self._decoded[id(value[1])] = cached
        return cached


class Sources:
    """Variable node → checkpoint key and table node → (keys, values) sources, read from
    the restore op and the init ops (through the functions they call)."""

    def __init__(self, meta_graph, nodes: Dict[str, object], model: str):
        self.model = model
        self.library = {f.signature.name: f for f in meta_graph.graph_def.library.function}
        self.variables: Dict[str, str] = {}
        self.tables: Dict[str, tuple] = {}    # name → ("checkpoint"|"const", keys, values)
        self.table_problems: Dict[str, object] = {}   # name → the node only TF can run
        roots = []
        restore = meta_graph.saver_def.restore_op_name
        if restore:
            roots.append(restore.split(":")[0])
        init = meta_graph.signature_def.get(INIT_SIGNATURE)
        if init is not None:
            roots += [t.name.split(":")[0] for t in init.outputs.values()]
        for key in INIT_COLLECTIONS:
            if key in meta_graph.collection_def:
                roots += [n.split(":")[0].lstrip("^")
                          for n in meta_graph.collection_def[key].node_list.value]
        closure: Set[str] = set()
        stack = [r for r in roots if r in nodes]
        while stack:
            name = stack.pop()
            if name in closure:
                continue
            closure.add(name)
            stack.extend(r.lstrip("^").split(":")[0] for r in nodes[name].input
                         if r.lstrip("^").split(":")[0] in nodes)
        outer = _Scope(nodes)
        self._scan(outer, [nodes[n] for n in closure], 0)

    def _scan(self, scope: _Scope, body, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        for node in body:
            data = [r for r in node.input if not r.startswith("^")]
            op = node.op
            if op in ("AssignVariableOp", "Assign") and len(data) >= 2:
                target, value = scope.resolve(data[0]), scope.resolve(data[1])
                if target[0] == "node" and value[0] in ("checkpoint", "sliced"):
                    self.variables.setdefault(target[1], value[1])
            elif op in IMPORT_OPS and len(data) >= 3:
                target = scope.resolve(data[0])
                if target[0] == "node":
                    keys, values = scope.resolve(data[1]), scope.resolve(data[2])
                    kinds = {keys[0], values[0]}
                    if kinds <= {"checkpoint"}:
                        self.tables[target[1]] = ("checkpoint", keys[1], values[1])
                    elif kinds <= {"const"}:
                        self.tables.setdefault(target[1], ("const", keys[1], values[1]))
                    else:
                        self.table_problems.setdefault(target[1], node)
            elif op in FILE_INIT_OPS:
                target = scope.resolve(data[0]) if data else ("other",)
                if target[0] == "node":
                    self.table_problems.setdefault(target[1], node)
            elif op in CALL_OPS:
                fdef = self.library.get(node.attr["f"].func.name)
                if fdef is not None:
                    child = _Scope({n.name: n for n in fdef.node_def}, fdef,
                                   [scope.resolve(r) for r in data])
                    self._scan(child, list(fdef.node_def), depth + 1)


