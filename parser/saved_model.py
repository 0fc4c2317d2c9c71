"""Reading a SavedModel directory without TensorFlow (DESIGN decision 3).

`saved_model.pb` holds MetaGraphDefs (chosen by tags), each with signatures and a GraphDef
whose function library holds the signature functions. A TF2 signature is a
StatefulPartitionedCall in the outer graph taking the signature's Placeholders and the
variables' VarHandleOps; a TF1 signature names tensors of a graph with VariableV2 (or
VarHandleOp) nodes. Which checkpoint entry holds each variable is read from the restore
op the saver names (RestoreV2's tensor_names, and the Assign/AssignVariableOp each restored
tensor feeds, followed through function calls), so Keras models, tf.Modules and TF1
Savers resolve the same way; the handles a TF2 function captures are bound through the
object graph as TensorFlow's loader binds them (parser/checkpoint_keys.py). The values
come from the tensor bundle (parser/tensor_bundle.py), the handles become constants
(parser/resources.py; large ones stay views of the mapped shard, parser/mapped_graph.py),
and the result is the GraphDef TensorFlow's freezing gives (parser/frozen.py):
Placeholders named as the signature's inputs, an Identity named as each signature output,
control flow and calls kept functional for the pipeline to inline.

Lookup tables: a table initialised from constants (KeyValueTensorInitializer) or restored
from the checkpoint (MutableHashTable) is written as a TF1 table initialised from
constants, as parser/tables.py does. What only TensorFlow can resolve (a table read from a
vocabulary file, an op that assigns a variable, a partitioned variable, sparse or composite
signature tensors) raises `NeedsTensorFlow` naming the node; the loader then freezes with
TensorFlow where it is installed.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.parser import mapped_graph
from tf2ir.parser.checkpoint_keys import FILE_INIT_OPS, INIT_SIGNATURE, Sources, captured_keys
from tf2ir.parser.mapped_graph import MappedConst, MappedGraphDef
from tf2ir.parser.model_files import open_regular, read_regular, within
from tf2ir.parser.resources import NeedsTensorFlow, Variable, freeze_resources
from tf2ir.parser.tensor_bundle import check_saved_model_checkpoint

VARIABLE_OPS = ("VarHandleOp", "VariableV2", "Variable")
TABLE_OPS = ("HashTableV2", "HashTable", "MutableHashTableV2", "MutableHashTable")

Frozen = Tuple[object, List[str], List[str]]   # (GraphDef, input names, output tensor names)
MAX_PROTO_BYTES = (2 << 30) - 1   # protobuf parses no larger message


def read_saved_model(path: str, signature: str, tags: Sequence[str]) -> Frozen:
    """The SavedModel at `path` (MetaGraph with `tags`), its `signature` frozen."""
    meta_graph = _meta_graph(path, tags)
    sig = _signature(meta_graph, signature, path)
    source = meta_graph.graph_def
    nodes = {node.name: node for node in source.node}
    inputs = {key: _tensor_name(sig.inputs[key], f"input '{key}'", path)
              for key in sorted(sig.inputs)}
    outputs = {key: _tensor_name(sig.outputs[key], f"output '{key}'", path)
               for key in sorted(sig.outputs)}
    for key, tensor in inputs.items():
        node = nodes.get(tensor.split(":")[0])
        if node is None or node.op != "Placeholder" or not tensor.endswith(":0"):
            raise NeedsTensorFlow(f"signature input '{key}' is {tensor}, not a Placeholder",
                                  model=path, node=node.name if node else None,
                                  op_type=node.op if node else None)
    for key, tensor in outputs.items():
        if tensor.split(":")[0] not in nodes:
            raise ConversionError(f"signature output '{key}' names {tensor}, which is not in "
                                  "the graph", model=path)
    kept = _upstream(nodes, [t.split(":")[0] for t in outputs.values()])
    kept |= {t.split(":")[0] for t in inputs.values()}   # TF's freezing keeps unused inputs too
    sources = Sources(meta_graph, nodes, path)

    from tf2ir.parser.graph_view import graph_def_class
    graph_def = graph_def_class()()
    graph_def.versions.CopyFrom(source.versions)
    graph_def.library.CopyFrom(source.library)
    for node in source.node:
        if node.name in kept:
            new = graph_def.node.add()
            new.CopyFrom(node)
            new.input[:] = [r for r in node.input
                            if not r.startswith("^") or r[1:] in kept]

    needed_vars = [n for n in graph_def.node if n.op in VARIABLE_OPS]
    needed_tables = [n for n in graph_def.node if n.op in TABLE_OPS]
    bundle = _bundle(path) if needed_vars or any(
        sources.tables.get(t.name, (None,))[0] == "checkpoint" for t in needed_tables) else None
    if bundle is not None:
        sources.variables.update(captured_keys(meta_graph, graph_def, bundle))
    variables: Dict[str, Variable] = {}
    for node in needed_vars:
        key = sources.variables.get(node.name)
        if key is None:
            raise NeedsTensorFlow("the variable's checkpoint entry is not found from the "
                                  "SavedModel's restore op", model=path, node=node.name,
                                  op_type=node.op)
        try:
            dtype, shape, value = bundle.tensor(key)
        except ConversionError as exc:
            raise exc.located(node=node.name, op_type=node.op)
        declared = node.attr["dtype"].type
        if declared % 100 != dtype:
            raise ConversionError(f"checkpoint entry '{key}' has dtype {dtype}, the variable "
                                  f"{declared}", model=path, node=node.name, op_type=node.op)
        _check_declared_shape(node, key, shape, path)
        mapped = value.dtype != object and value.nbytes >= mapped_graph.MAPPED_MIN_BYTES > 0
        variables[node.name] = Variable(dtype, shape, value, mapped)
    for node in needed_tables:
        _write_table(graph_def, node, sources, bundle, path, meta_graph)
    freeze_resources(graph_def, variables, path)
    _prune_library(graph_def)
    input_names = _rename_inputs(graph_def, inputs)
    output_names = _add_outputs(graph_def, sig, outputs, input_names, inputs)
    mapped = {name: MappedConst(name, var.dtype, var.shape,
                                memoryview(var.value.reshape(-1).view(np.uint8)))
              for name, var in variables.items() if var.mapped}
    if mapped:
        graph_def = MappedGraphDef(graph_def, mapped)
    return graph_def, input_names, output_names


def _check_declared_shape(node, key: str, shape, path: str) -> None:
    """The checkpoint entry's shape must be the variable's declared one where that is known
    (TensorFlow's restore refuses a checkpoint whose shape the variable cannot take)."""
    declared = node.attr["shape"].shape if "shape" in node.attr else None
    if declared is None or declared.unknown_rank:
        return
    dims = [d.size for d in declared.dim]
    if len(dims) != len(shape) or any(d >= 0 and d != s for d, s in zip(dims, shape)):
        raise ConversionError(f"checkpoint entry '{key}' has shape {list(shape)}; the variable "
                              f"is declared {['?' if d < 0 else d for d in dims]}",
                              model=path, node=node.name, op_type=node.op)


def _prune_library(graph_def) -> None:
    """Keep the library functions the graph calls (through any function attribute or an op
    named as a function), transitively: the others (the saver's, other signatures') may
    still pass variable handles to functions that now take values."""
    functions = {f.signature.name: f for f in graph_def.library.function}
    used: Set[str] = set()

    def visit(nodes) -> None:
        for node in nodes:
            names = [node.op] if node.op in functions else []
            for value in node.attr.values():
                which = value.WhichOneof("value")
                if which == "func":
                    names.append(value.func.name)
                elif which == "list":
                    names += [f.name for f in value.list.func]
            for name in names:
                if name in functions and name not in used:
                    used.add(name)
                    visit(functions[name].node_def)
    visit(graph_def.node)
    if len(used) == len(functions):
        return
    kept = [f for f in graph_def.library.function if f.signature.name in used]
    gradients = [g for g in graph_def.library.gradient if g.function_name in used]
    from tensorboard.compat.proto.function_pb2 import FunctionDefLibrary
    library = FunctionDefLibrary()
    library.function.extend(kept)
    library.gradient.extend(gradients)
    graph_def.library.CopyFrom(library)


# -- the SavedModel file -----------------------------------------------------------------------
def _meta_graph(path: str, tags: Sequence[str]):
    saved_model = _saved_model(path)
    wanted = set(tags)
    if not wanted and len(saved_model.meta_graphs) == 1:
        return saved_model.meta_graphs[0]   # no tags asked: the only MetaGraph, as TF loads
    available = []
    for meta_graph in saved_model.meta_graphs:
        have = set(meta_graph.meta_info_def.tags)
        if have == wanted:
            return meta_graph
        available.append(",".join(sorted(have)) or "(none)")
    raise ConversionError(f"cannot load SavedModel with tags {','.join(tags) or '(none)'}: no "
                          f"MetaGraph has them (available: {'; '.join(available) or 'none'})",
                          model=path)


def check_before_tensorflow(path: str) -> None:
    """Refuse, before TensorFlow loads the SavedModel at `path` (and reads its checkpoint
    and assets, a vocabulary file into a table), what would make it read a file outside the
    directory or block: a checkpoint file or fingerprint that leaves the directory or is
    not a regular file, an AssetFileDef filename that does not resolve inside `assets/`
    (`../x`, an absolute path, a symlink out), an asset that is not a regular file, or a
    file-initialised table whose file name is a constant (not an asset) outside the directory."""
    variables = os.path.join(path, "variables")
    names = sorted(os.listdir(variables)) if os.path.isdir(variables) else []
    for name in [os.path.join("variables", n) for n in names] + ["fingerprint.pb"]:
        if os.path.lexists(os.path.join(path, name)):
            os.close(open_regular(os.path.join(path, name), name, path, path))
    check_saved_model_checkpoint(path)   # TF aborts on bad slices, allocates what dims ask
    assets = os.path.join(path, "assets")
    for meta_graph in _saved_model(path).meta_graphs:
        fed = set()
        for asset in meta_graph.asset_file_def:
            target = os.path.join(assets, asset.filename)
            if not (asset.filename and within(target, assets) and within(assets, path)):
                raise ConversionError(f"asset file name {asset.filename!r} leaves the "
                                      "SavedModel's assets directory; refused", model=path)
            if os.path.lexists(target):
                os.close(open_regular(target, "asset", path, path))
            fed.add(asset.tensor_info.name.split(":")[0])
        bodies = [(meta_graph.graph_def.node, fed)]
        bodies += [(f.node_def, ()) for f in meta_graph.graph_def.library.function]
        for body, assets_fed in bodies:
            nodes = {n.name: n for n in body}
            for node in body:
                if node.op in FILE_INIT_OPS and len(node.input) > 1:
                    name = _constant_string(nodes, node.input[1], assets_fed)
                    if name is not None and not within(name, path):
                        raise ConversionError(
                            f"the lookup table initializer reads file {name!r}, outside the "
                            "SavedModel directory; refused", model=path, node=node.name,
                            op_type=node.op)


def _constant_string(nodes, ref: str, fed) -> Optional[str]:
    """The string a Const (through Identity nodes) gives `ref`, unless an asset feeds it."""
    for _ in range(64):
        node = nodes.get(ref.split(":")[0])
        if node is None or node.name in fed:
            return None
        if node.op == "Const":
            values = node.attr["value"].tensor.string_val
            return values[0].decode("utf-8", "replace") if len(values) == 1 else None
        if node.op != "Identity" or not node.input:
            return None
        ref = node.input[0]
    return None


def _saved_model(path: str):
    from google.protobuf import message, text_format

    from tf2ir.parser.tensor_bundle import bundle_messages
    saved_model = bundle_messages()[2]()
    binary = os.path.join(path, "saved_model.pb")
    text = os.path.join(path, "saved_model.pbtxt")
    try:
        if os.path.lexists(binary):
            saved_model.ParseFromString(read_regular(binary, "saved_model.pb", path,
                                                     MAX_PROTO_BYTES, path))
        else:
            text_format.Parse(read_regular(text, "saved_model.pbtxt", path, MAX_PROTO_BYTES,
                                           path).decode("utf-8"), saved_model)
    except (message.DecodeError, text_format.ParseError, UnicodeDecodeError) as exc:
        raise ConversionError(f"saved_model.pb is not a SavedModel: {exc}", model=path) from None
    return saved_model


def _signature(meta_graph, name: str, path: str):
    available = sorted(k for k in meta_graph.signature_def if k != INIT_SIGNATURE)
    if name not in available:
        raise ConversionError(f"no signature '{name}'; available: "
                              f"{', '.join(available) or 'none'} (choose with --signature)",
                              model=path, exit_code=ExitStatus.USAGE)
    return meta_graph.signature_def[name]


def _tensor_name(info, what: str, path: str) -> str:
    if info.WhichOneof("encoding") != "name":
        raise NeedsTensorFlow(f"signature {what} is a {info.WhichOneof('encoding')} tensor",
                              model=path)
    name = info.name
    return name if ":" in name else name + ":0"


def _bundle(path: str):
    from tf2ir.parser.tensor_bundle import TensorBundle
    return TensorBundle(os.path.join(path, "variables", "variables"), model=path, root=path)


def _upstream(nodes, roots: List[str]) -> Set[str]:
    """Outer-graph nodes the roots need through data inputs."""
    kept: Set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in kept or name not in nodes:
            continue
        kept.add(name)
        stack.extend(r.split(":")[0] for r in nodes[name].input if not r.startswith("^"))
    return kept


# -- tables, inputs and outputs -----------------------------------------------------------------
def _write_table(graph_def, node, sources: Sources, bundle, model: str, meta_graph) -> None:
    """Table `node` as a HashTableV2 initialised from constants (see parser/tables.py)."""
    from tf2ir.parser.resources import set_const
    from tf2ir.parser.tables import write_const_table
    source = sources.tables.get(node.name)
    if source is None:
        problem = sources.table_problems.get(node.name)
        if problem is not None and problem.op in FILE_INIT_OPS:
            source = _file_table(node, problem, meta_graph, model)
    if source is None:
        if problem is not None:
            raise NeedsTensorFlow(f"lookup table {node.name} is initialised by {problem.op} "
                                  f"(node '{problem.name}')", model=model, node=node.name,
                                  op_type=node.op)
        raise NeedsTensorFlow("the lookup table's contents are not found (no constant "
                              "initializer and no checkpoint entry)", model=model,
                              node=node.name, op_type=node.op)
    kind, keys, values = source

    def fill(const, value):
        if kind == "array":   # read from a vocabulary file
            dtype = node.attr["key_dtype" if value is keys else "value_dtype"].type
            set_const(const, dtype, [value.size], value)
        elif kind == "const":   # the initializer's own Const node, under the table's name
            name = const.name
            const.CopyFrom(value)
            const.name = name
            del const.input[:]
        else:
            try:
                set_const(const, *bundle.tensor(value))
            except ConversionError as exc:
                raise exc.located(node=node.name, op_type=node.op)
    write_const_table(graph_def, node, node.attr["key_dtype"].type,
                      node.attr["value_dtype"].type, (keys, values), fill)


def _rename_inputs(graph_def, inputs: Dict[str, str]) -> List[str]:
    """Signature input Placeholders take the signature's input names (as frozen.py does,
    keeping the graph's names when that would clash); the Placeholder names in order."""
    placeholders = [t.split(":")[0] for t in inputs.values()]
    renames = {old: new for old, new in zip(placeholders, inputs) if old != new}
    taken = {node.name for node in graph_def.node}
    clash = set(renames.values()) & (taken - set(renames))
    if len(set(renames.values())) != len(renames) or clash:
        renames = {}
    if renames:
        def ref(text: str) -> str:
            control = text.startswith("^")
            name, sep, port = text.lstrip("^").partition(":")
            return ("^" if control else "") + renames.get(name, name) + (sep + port if sep else "")
        for node in graph_def.node:
            node.name = renames.get(node.name, node.name)
            node.input[:] = [ref(i) for i in node.input]
    return [renames.get(p, p) for p in placeholders]


def _add_outputs(graph_def, sig, outputs: Dict[str, str], input_names: List[str],
                 inputs: Dict[str, str]) -> List[str]:
    renamed = dict(zip([t.split(":")[0] for t in inputs.values()], input_names))
    taken = {node.name for node in graph_def.node}
    result = []
    for key, tensor in outputs.items():
        source, _, port = tensor.partition(":")
        source = f"{renamed.get(source, source)}:{port}"
        if key in taken or not key:
            result.append(source)
            continue
        node = graph_def.node.add(name=key, op="Identity", input=[source])
        node.attr["T"].type = sig.outputs[key].dtype
        taken.add(key)
        result.append(f"{key}:0")
    return result


# -- tables initialised from a vocabulary file (an asset) -------------------------------------
MAX_VOCABULARY_BYTES = 256 << 20


def _file_table(table, init, meta_graph, model: str):
    """("const", keys, values) NodeDef-free contents of a table that `init`
    (InitializeTableFromTextFileV2) fills from the SavedModel's one asset, read as TensorFlow
    reads it: lines without their '\n' and '\r', the key and value each the whole line (-2),
    the line number (-1, plus `offset`) or a column split at `delimiter`; `vocab_size` lines
    when it is not -1. None (TensorFlow decides) where the file is not plainly the one
    asset, or where TensorFlow would fail (an empty line, a missing column, a duplicate key
    with another value, a number that does not parse)."""
    assets = list(meta_graph.asset_file_def)
    if len(assets) != 1 or not assets[0].filename:
        return None
    path = os.path.join(model, "assets", assets[0].filename)
    if not within(path, os.path.join(model, "assets")):
        return None
    data = read_regular(path, "asset", model, MAX_VOCABULARY_BYTES, model)
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    lines = [line.replace(b"\r", b"") for line in lines]
    size = init.attr["vocab_size"].i if "vocab_size" in init.attr else -1
    if size >= 0:
        if size > len(lines):
            return None
        lines = lines[:size]
    delimiter = init.attr["delimiter"].s or b"\t"
    offset = init.attr["offset"].i if "offset" in init.attr else 0
    key_type, value_type = table.attr["key_dtype"].type, table.attr["value_dtype"].type

    def column(line: bytes, number: int, index: int, dtype: int):
        if index == -1:
            item = number + offset
        else:
            if index == -2:
                item = line
            else:
                parts = line.split(delimiter)
                if index >= len(parts):
                    raise ValueError("no column")
                item = parts[index]
            if dtype in (3, 9):   # int32, int64
                item = int(item)
            elif dtype in (1, 2):
                item = float(item)
            elif dtype != 7:
                raise ValueError("dtype")
        return item
    keys, values = [], []
    try:
        for number, line in enumerate(lines):
            if not line:
                return None
            keys.append(column(line, number, init.attr["key_index"].i, key_type))
            values.append(column(line, number, init.attr["value_index"].i, value_type))
    except ValueError:
        return None
    seen: Dict[object, object] = {}
    for key, value in zip(keys, values):
        if seen.setdefault(key, value) != value:
            return None   # TensorFlow refuses a key with two values
    return ("array", _array(list(seen), key_type), _array(list(seen.values()), value_type))


def _array(items: list, dtype: int) -> np.ndarray:
    kinds = {7: object, 9: np.int64, 3: np.int32, 1: np.float32, 2: np.float64}
    return np.array(items, dtype=kinds.get(dtype, object)).reshape(-1)
