"""Inlining the GraphDef's function library into the TF graph view, before op mapping.

A call (`PartitionedCall`, `StatefulPartitionedCall`, or a node whose op type is a library
function's name) is replaced by the function's body: body node `n` becomes `<call>/n`,
function arguments read the call's inputs, and the call's name stays on an Identity
(IdentityN for several outputs) of the returned tensors, so consumers, requested outputs
and control edges keep working. Calls inside bodies are inlined the same way; body nodes
that no returned tensor needs (side effects such as control outputs) are dropped.
"""

from __future__ import annotations

from typing import Dict, List, Set, Tuple

from tf2ir.ir import ConversionError
from tf2ir.parser.attrs import TF_DTYPES
from tf2ir.parser.graph_view import TfGraph, TfNode

CALL_OPS = ("PartitionedCall", "StatefulPartitionedCall")
MAX_DEPTH = 32
Tensor = Tuple[str, int]

# A FunctionDef names a node output "node:out_arg:i"; the flat output index is the offset
# of out_arg among the op's output args plus i. Ops not listed have one output arg; every
# arg listed here is a single tensor.
OUTPUT_ARGS: Dict[str, Tuple[str, ...]] = {
    "TopK": ("values", "indices"), "TopKV2": ("values", "indices"),
    "Unique": ("y", "idx"), "UniqueV2": ("y", "idx"), "UniqueWithCounts": ("y", "idx", "count"),
    "ListDiff": ("out", "idx"), "BroadcastGradientArgs": ("r0", "r1"),
    "FusedBatchNorm": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"),
    "FusedBatchNormV2": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"),
    "FusedBatchNormV3": ("y", "batch_mean", "batch_variance", "reserve_space_1",
                         "reserve_space_2", "reserve_space_3"),
    "_FusedBatchNormEx": ("y", "batch_mean", "batch_variance", "reserve_space_1",
                          "reserve_space_2", "reserve_space_3"),
    "MaxPoolWithArgmax": ("output", "argmax"),
    "Switch": ("output_false", "output_true"), "Merge": ("output", "value_index"),
    "Qr": ("q", "r"), "Svd": ("s", "u", "v"), "SelfAdjointEigV2": ("e", "v"),
    "NonMaxSuppressionV4": ("selected_indices", "valid_outputs"),
    "NonMaxSuppressionV5": ("selected_indices", "selected_scores", "valid_outputs"),
    "QuantizeV2": ("output", "output_min", "output_max"),
    "LSTMBlockCell": ("i", "cs", "f", "o", "ci", "co", "h"),
    "GRUBlockCell": ("r", "u", "c", "h"),
    "CudnnRNN": ("output", "output_h", "output_c", "reserve_space"),
}
_TF_DTYPE_ENUMS = {name: enum for enum, name in TF_DTYPES.items()}


def inline_functions(tf_graph: TfGraph) -> int:
    """Replace every call of a library function in `tf_graph` by the function's body, in
    place; return how many calls were inlined (nested ones included)."""
    library = {f.signature.name: f for f in tf_graph.library.function}
    if not library or not any(_callee(n, library) for n in tf_graph.nodes.values()):
        return 0
    inliner = _Inliner(tf_graph, library)
    for node in list(tf_graph.nodes.values()):
        inliner.emit(node, 0)
    for node in inliner.nodes.values():
        for src, _ in node.inputs:
            if src not in inliner.nodes:
                raise ConversionError(f"input '{src}' does not exist after inlining functions",
                                      model=tf_graph.model, node=node.name, op_type=node.op_type)
    tf_graph.nodes = inliner.nodes
    return inliner.count


def _callee(node: TfNode, library):
    if node.op_type in CALL_OPS:
        return library.get(node.attr("f"))
    return library.get(node.op_type)


class _Inliner:
    def __init__(self, tf_graph: TfGraph, library):
        self.model = tf_graph.model
        self.library = library
        self.taken: Set[str] = set(tf_graph.nodes)
        self.nodes: Dict[str, TfNode] = {}
        self.count = 0

    def emit(self, node: TfNode, depth: int) -> None:
        """Add `node`, or for a call the (recursively inlined) body and its forwarding node."""
        fdef = _callee(node, self.library)
        if fdef is None:
            self.nodes[node.name] = node
            return
        if depth >= MAX_DEPTH:
            raise ConversionError(f"function calls nest deeper than {MAX_DEPTH} (recursion?)",
                                  model=self.model, node=node.name, op_type=node.op_type)
        self.count += 1
        for inner in self._body(node, fdef):
            self.emit(inner, depth + 1)

    def _body(self, call: TfNode, fdef) -> List[TfNode]:
        sig = fdef.signature

        def fail(message: str) -> ConversionError:
            return ConversionError(f"function {sig.name}: {message}", model=self.model,
                                   node=call.name, op_type=call.op_type)

        if len(call.inputs) != len(sig.input_arg):
            raise fail(f"takes {len(sig.input_arg)} inputs, the call gives {len(call.inputs)}")
        args = {arg.name: tensor for arg, tensor in zip(sig.input_arg, call.inputs)}
        defs = {nd.name: nd for nd in fdef.node_def}
        returns = {arg.name: fdef.ret.get(arg.name) for arg in sig.output_arg}
        if None in returns.values():
            raise fail("an output has no return value")
        needed = _needed(defs, list(returns.values()))
        names = {name: self._unique(f"{call.name}/{name}") for name in defs if name in needed}

        def tensor(ref: str) -> Tensor:
            parts = ref.split(":")
            if parts[0] in defs and len(parts) == 3 and parts[2].isdigit():
                index = self._output_index(defs[parts[0]].op, parts[1], int(parts[2]), fail)
                return names[parts[0]], index
            if parts[0] in args and (len(parts) == 1 or parts[1:] == ["0"]):
                return args[parts[0]]
            if parts[0] in defs and len(parts) <= 2:   # a plain "node:i" (not TF's own form)
                return names[parts[0]], int(parts[1]) if len(parts) == 2 else 0
            raise fail(f"cannot resolve tensor '{ref}'")

        body = []
        for name, nd in defs.items():
            if name not in needed:
                continue
            node = TfNode(nd)
            node.name = names[name]
            node.inputs = [tensor(ref) for ref in nd.input if not ref.startswith("^")]
            node.control_inputs = [names.get(ref[1:]) or args[ref[1:]][0]
                                   for ref in nd.input if ref.startswith("^")]
            body.append(node)
        outputs = [tensor(returns[arg.name]) for arg in sig.output_arg]
        body.append(_forwarding_node(call, outputs, [a.type for a in sig.output_arg]))
        return body

    def _output_index(self, op_type: str, arg: str, index: int, fail) -> int:
        if op_type in self.library:
            arg_names = tuple(a.name for a in self.library[op_type].signature.output_arg)
        else:
            arg_names = OUTPUT_ARGS.get(op_type)
        if arg_names is None:
            return index
        if arg not in arg_names:
            raise fail(f"op {op_type} has no output arg '{arg}'")
        return arg_names.index(arg) + index

    def _unique(self, base: str) -> str:
        name, i = base, 0
        while name in self.taken:
            i += 1
            name = f"{base}_{i}"
        self.taken.add(name)
        return name


def _needed(defs, returns: List[str]) -> Set[str]:
    """Body node names the returned tensors depend on, through data and control inputs."""
    needed: Set[str] = set()
    stack = [ref.split(":")[0] for ref in returns]
    while stack:
        name = stack.pop()
        if name in needed or name not in defs:
            continue
        needed.add(name)
        stack.extend(ref.lstrip("^").split(":")[0] for ref in defs[name].input)
    return needed


def _forwarding_node(call: TfNode, outputs: List[Tensor], arg_types: List[int]) -> TfNode:
    """A node with the call's name whose outputs are the function's returned tensors."""
    from tensorboard.compat.proto.node_def_pb2 import NodeDef
    op = "NoOp" if not outputs else "Identity" if len(outputs) == 1 else "IdentityN"
    node_def = NodeDef(name=call.name, op=op, device=call.device)
    node_def.input.extend([f"{src}:{port}" for src, port in outputs]
                          + [f"^{name}" for name in call.control_inputs])
    types = [_TF_DTYPE_ENUMS[t] for t in call.attr("Tout", [])] if call.op_type in CALL_OPS else []
    if len(types) != len(outputs):
        types = list(arg_types)
    if op == "Identity" and types and types[0]:
        node_def.attr["T"].type = types[0]
    elif op == "IdentityN":
        node_def.attr["T"].list.type.extend(t or 1 for t in types)
    return TfNode(node_def)
