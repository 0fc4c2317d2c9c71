"""What TensorFlow's SavedModel loader may run, checked before TensorFlow sees the directory.

When the native reader (parser/saved_model.py) refuses a SavedModel, TensorFlow loads it
(parser/frozen.py): it runs the saver's restore op (TF1), the init ops (`saved_model_main_op`,
`legacy_init_op`, the `__saved_model_init_op` signature), the functions the object graph
names (resource creators and initializers, saveable save/restore functions), then tf2ir
traces and freezes a signature, and `verify` runs the frozen graph. A crafted SavedModel could
put `WriteFile`, `ReadFile`, `PyFunc` or `MatchingFiles` in any of them. So before TensorFlow
loads it, every node the loader can reach is checked against `trust.LOADER_ALLOWED` (the
compute ops a fallback segment may run plus the state a SavedModel keeps for variables,
tables and loops):

- the outer graph: the nodes the restore op, the init ops, every signature's tensors and
  the asset tensors reach (data and control inputs); a TF1 training graph's other ops
  (optimizer updates, summaries) are never run by the loader and are not checked;
- the function library: every function, except those reachable only from the saver's save
  tensor (TF2's `_traced_save`: SaveV2, MergeV2Checkpoints, ShardedFilename, which the loader
  never runs); SaveV2 anywhere else is refused.

Two allowed ops read files, so where they read is checked too: a RestoreV2 (Restore,
RestoreSlice) must take its prefix from the saver's filename tensor, which the loader feeds
with the SavedModel's own `variables/variables` (in a function: from an argument every caller
feeds so); a file-initialised table must take its file name from an asset, a Placeholder, a
constant inside the SavedModel directory, or a variable assigned only from those. Any other
source (a Const naming another checkpoint, a StringJoin that builds a path) is refused.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

from tf2ir.ir.onnx import trust
from tf2ir.parser.model_files import within

NOT_LISTED = "is not an op type TensorFlow's SavedModel loader may run here"
RESTORE_OPS = frozenset({"RestoreV2", "Restore", "RestoreSlice"})
FILE_TABLE_OPS = frozenset({"InitializeTableFromTextFile", "InitializeTableFromTextFileV2"})
CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
INIT_COLLECTIONS = ("saved_model_main_op", "legacy_init_op")
PASS_THROUGH = frozenset({"Identity", "Snapshot"})


def _name(ref: str) -> str:
    return ref.lstrip("^").split(":")[0]


def _callees(node, functions) -> List[str]:
    names = [node.op] if node.op in functions else []
    for key in sorted(node.attr):
        value = node.attr[key]
        if value.HasField("func"):
            names.append(value.func.name)
        if value.HasField("list"):
            names += [f.name for f in value.list.func]
    return [n for n in names if n in functions]


def _tensor_names(info) -> List[str]:
    """The graph tensors a signature's TensorInfo names (dense, sparse or composite)."""
    kind = info.WhichOneof("encoding")
    if kind == "name":
        return [info.name]
    if kind == "coo_sparse":
        sparse = info.coo_sparse
        return [sparse.values_tensor_name, sparse.indices_tensor_name,
                sparse.dense_shape_tensor_name]
    if kind == "composite_tensor":
        return [n for c in info.composite_tensor.components for n in _tensor_names(c)]
    return []


def _upstream(nodes, roots) -> Set[str]:
    seen: Set[str] = set()
    stack = [_name(r) for r in roots if r]
    while stack:
        name = stack.pop()
        if name in seen or name not in nodes:
            continue
        seen.add(name)
        stack += [_name(i) for i in nodes[name].input]
    return seen


def _closure(functions, roots) -> Set[str]:
    seen: Set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in seen or name not in functions:
            continue
        seen.add(name)
        for node in functions[name].node_def:
            stack += _callees(node, functions)
    return seen


class _Body:
    """The outer graph (`function` None) or one function: its nodes by name, its args."""

    def __init__(self, nodes, function=None):
        self.nodes = {n.name: n for n in nodes}
        self.function = function
        self.args = [a.name for a in function.signature.input_arg] if function is not None else []
        self.label = f"function '{function.signature.name}'" if function is not None else ""

    def where(self, node) -> str:
        return f"{self.function.signature.name}/{node.name}" if self.function is not None \
            else node.name


def loader_refusals(meta_graph, root: Optional[str] = None) -> List[trust.Refusal]:
    """Every node of `meta_graph` TensorFlow's loader may reach and may not run (see the
    module docstring); `root` is the SavedModel directory constant file names must stay in."""
    graph = meta_graph.graph_def
    functions = {f.signature.name: f for f in graph.library.function}
    outer = _Body(graph.node)
    saver = meta_graph.saver_def
    roots = [saver.restore_op_name, saver.filename_tensor_name]
    for key in INIT_COLLECTIONS:
        if key in meta_graph.collection_def:
            roots += list(meta_graph.collection_def[key].node_list.value)
    for signature in meta_graph.signature_def.values():
        for info in list(signature.inputs.values()) + list(signature.outputs.values()):
            roots += _tensor_names(info)
    assets = {_name(a.tensor_info.name) for a in meta_graph.asset_file_def}
    if "asset_filepaths" in meta_graph.collection_def:
        assets |= {_name(n) for n in meta_graph.collection_def["asset_filepaths"].node_list.value}
    roots += sorted(assets)
    reached = _upstream(outer.nodes, roots)
    saved_only = _upstream(outer.nodes, [saver.save_tensor_name]) - reached
    save_functions = _closure(functions, [c for n in saved_only
                                          for c in _callees(outer.nodes[n], functions)])
    function_roots = [c for n in reached for c in _callees(outer.nodes[n], functions)]
    function_roots += list(meta_graph.object_graph_def.concrete_functions)
    function_roots += [name for name in functions if name not in save_functions]
    checked = _closure(functions, function_roots)

    found = trust.check_nodes([outer.nodes[n] for n in sorted(reached)], "", functions,
                              trust.LOADER_ALLOWED, NOT_LISTED)
    bodies = [outer] + [_Body(functions[name].node_def, functions[name])
                        for name in sorted(checked)]
    for body in bodies[1:]:
        found += trust.check_nodes(body.function.node_def, f"{body.function.signature.name}/",
                                   functions, trust.LOADER_ALLOWED, NOT_LISTED)
    found += _file_sources(bodies, reached, functions, _Sources(saver, assets, root))
    return found


class _Sources:
    """Which values may name a file: the saver's filename tensor for a checkpoint prefix;
    an asset, a Placeholder, a constant inside `root`, or a variable assigned only from
    those, for a table's file."""

    def __init__(self, saver, assets: Set[str], root: Optional[str]):
        self.filename = _name(saver.filename_tensor_name)
        self.assets = assets
        self.root = root

    def check(self, body: _Body, ref: str, kind: str, needs: List[Tuple[str, int, str]],
              depth: int = 0) -> Optional[str]:
        """None when `ref` in `body` is a source for `kind` ("prefix" or "file") or an
        argument (then (function, index, kind) joins `needs`); else why not."""
        for _ in range(64):
            name = _name(ref)
            if body.function is not None and name in body.args and ":" not in ref:
                needs.append((body.function.signature.name, body.args.index(name), kind))
                return None
            node = body.nodes.get(name)
            if node is None:
                return f"'{name}', which the {body.label or 'graph'} does not define"
            if node.op not in PASS_THROUGH or not node.input:
                break
            ref = node.input[0]
        if body.function is None and kind == "prefix" and node.name == self.filename:
            return None
        if kind == "file":
            if body.function is None and (node.name in self.assets or node.op == "Placeholder"):
                return None
            if node.op == "Const":
                values = node.attr["value"].tensor.string_val
                text = values[0].decode("utf-8", "replace") if len(values) == 1 else None
                if text is not None and (self.root is None or within(text, self.root)):
                    return None
            if node.op == "ReadVariableOp" and node.input and depth < 8:
                handle = _name(node.input[0])
                writes = [n for n in body.nodes.values() if n.input and _name(n.input[0]) == handle
                          and n.op != "ReadVariableOp" and n.op in ("AssignVariableOp", "Assign")]
                if writes and all(len(w.input) > 1 and self.check(body, w.input[1], kind, needs,
                                                                  depth + 1) is None
                                  for w in writes):
                    return None
        what = "the saver's filename tensor" if kind == "prefix" else "the SavedModel's assets"
        return f"'{node.name}' ({node.op}), not {what}"


def _file_sources(bodies: List[_Body], reached: Set[str], functions,
                  sources: _Sources) -> List[trust.Refusal]:
    """Refusals for restore ops and file tables reading where the loader does not point them,
    following function arguments to every call site."""
    found: List[trust.Refusal] = []
    needs: List[Tuple[str, int, str]] = []
    for body in bodies:
        for node in body.nodes.values():
            if body.function is None and node.name not in reached:
                continue
            kind = "prefix" if node.op in RESTORE_OPS else "file" if node.op in FILE_TABLE_OPS \
                else None
            index = 0 if kind == "prefix" else 1
            if kind is None or len(node.input) <= index:
                continue
            why = sources.check(body, node.input[index], kind, needs)
            if why is not None:
                found.append(trust.Refusal(body.where(node), node.op,
                                           f"reads a file named by {why}"))
    calls: Dict[str, List[Tuple[_Body, object]]] = {}
    for body in bodies:
        for node in body.nodes.values():
            if body.function is None and node.name not in reached:
                continue
            for callee in _callees(node, functions):
                calls.setdefault(callee, []).append((body, node))
    done: Set[Tuple[str, int, str]] = set()
    while needs:
        need = needs.pop()
        if need in done:
            continue
        done.add(need)
        function, index, kind = need
        for body, node in calls.get(function, []):
            data = [i for i in node.input if not i.startswith("^")]
            direct = node.op == function or node.op in CALL_OPS
            if not direct or index >= len(data):
                found.append(trust.Refusal(body.where(node), node.op, f"passes a file name to "
                                           f"function '{function}' through control flow"))
                continue
            why = sources.check(body, data[index], kind, needs)
            if why is not None:
                found.append(trust.Refusal(body.where(node), node.op, f"passes function "
                                           f"'{function}' a file name from {why}"))
    return found


def check_loader(path: str) -> None:
    """Refuse the SavedModel at `path` (exit 3, one line naming the first node, its function
    and op type) when TensorFlow's loader would reach a node it may not run."""
    from tf2ir.parser.saved_model import _saved_model
    found: List[trust.Refusal] = []
    for meta_graph in _saved_model(path).meta_graphs:
        found += loader_refusals(meta_graph, path)
    _refuse(found, path, "TensorFlow's SavedModel loader would run it, so the SavedModel is "
                         "refused before TensorFlow loads it")


def check_read(graph_def, path: str, why: str = "the signature would run it in TensorFlow "
               "(verify), so the SavedModel is refused") -> None:
    """Refuse the GraphDef the native reader made of the SavedModel at `path` (its nodes and
    every function of its library) when it holds a node TensorFlow may not run: `verify`
    runs it with TensorFlow, and the conversion would drop a node whose result is unused
    (a stateful op a function's outputs wait on by a control edge). `verify` checks every
    model it runs in TensorFlow (a frozen .pb too) the same way, with its own `why`."""
    functions = {f.signature.name: f for f in graph_def.library.function}
    nodes = [n for n in graph_def.node if n.op != "Const"]   # a mapped Const has no proto attrs
    found = trust.check_nodes(nodes, "", functions, trust.LOADER_ALLOWED, NOT_LISTED)
    for name, function in functions.items():
        found += trust.check_nodes(function.node_def, f"{name}/", functions,
                                   trust.LOADER_ALLOWED, NOT_LISTED)
    _refuse(found, path, why)


def _refuse(found: List[trust.Refusal], path: str, why: str) -> None:
    from tf2ir.ir.errors import ConversionError, ExitStatus
    if not found:
        return
    first, more = found[0], len(dict.fromkeys(found)) - 1
    raise ConversionError(
        f"{first.reason}; {why}" + (f" ({more} more node{'s' * (more > 1)} refused)" if more
                                    else "")
        + " (docs/reliability.md: Running models you did not make)",
        model=path, node=first.where, op_type=first.op_type, exit_code=ExitStatus.UNSUPPORTED)
