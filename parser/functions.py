"""Inlining the GraphDef's function library into the TF graph view, before op mapping.

A call (`PartitionedCall`, `StatefulPartitionedCall`, or a node whose op type is a library
function's name) is replaced by the function's body: body node `n` becomes `<call>/n`,
function arguments read the call's inputs, and the call's name stays on an Identity
(IdentityN for several outputs) of the returned tensors, so consumers, requested outputs
and control edges keep working. Calls inside bodies are inlined the same way; body nodes
that no returned tensor needs (side effects such as control outputs) are dropped.

Functional control flow (If/StatelessIf, While/StatelessWhile) names its branches, cond and
body by function attributes: those nodes become `FunctionalNode`s whose
`convert_function(attr, input_descs)` converts the named function, through the same
plugins, into an IR graph that the plugin makes the IR op's subgraph. TF1 control flow
(Enter/Exit/NextIteration/LoopCond frames, Switch/Merge conds) is raised into If/While nodes
first (parser/control_flow.py).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Dict, List, Optional, Protocol, Sequence, Set, Tuple

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.graph import Graph
from tf2ir.ir.names import fresh_name
from tf2ir.ir.tensor import TensorDesc
from tf2ir.parser.attrs import TF_DTYPES
from tf2ir.parser.graph_view import TfGraph, TfNode

CALL_OPS = ("PartitionedCall", "StatefulPartitionedCall")
FUNCTIONAL_OPS = ("If", "StatelessIf", "While", "StatelessWhile")
MAX_DEPTH = 32
Tensor = Tuple[str, int]

# A FunctionDef names a node output "node:out_arg:i"; the flat output index is the size of the
# op's output args before out_arg plus i: a library function's signature says them, else the
# table generated from TF's op registry (parser/op_outputs.py, tools/gen_op_outputs.py).
_SINGLE_OUTPUT: Dict[str, str] = {}   # op type → its one output arg, from op_outputs.SINGLE
_TF_DTYPE_ENUMS = {name: enum for enum, name in TF_DTYPES.items()}


def inline_functions(tf_graph: TfGraph, converter: Optional["BodyConverter"] = None,
                     refuse_tf1_loops: bool = True) -> int:
    """Replace every call of a library function in `tf_graph` by the function's body, in
    place; return how many calls were inlined (nested ones included). TF1 control flow
    (Switch/Merge conds, Enter/Exit while frames) is first raised into If/While nodes with
    functions of their own (parser/control_flow.py); If/While nodes become
    `FunctionalNode`s whose functions `converter` (the pipeline) converts on demand. TF1
    control flow that does not raise is one ConversionError, unless `refuse_tf1_loops` is
    False (a support report that lists op types without converting)."""
    from tf2ir.parser.control_flow import raise_control_flow
    try:
        raise_control_flow(tf_graph)
    except ConversionError as exc:
        if refuse_tf1_loops:
            raise exc.located(model=tf_graph.model)
    library = {f.signature.name: f for f in tf_graph.library.function}
    count = _inline_calls(tf_graph, library) if library else 0
    from tf2ir.parser.tables import resolve_tables
    resolve_tables(tf_graph, library)   # tables passed into If/While bodies; run-time tables
    if library:
        functions = FunctionLibrary(tf_graph, library, converter)
        for name, node in list(tf_graph.nodes.items()):
            if node.op_type in FUNCTIONAL_OPS:
                tf_graph.nodes[name] = FunctionalNode.of(node, functions)
    return count


def _inline_calls(tf_graph: TfGraph, library) -> int:
    if not any(_callee(n, library) for n in tf_graph.nodes.values()):
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
            return _resolve(ref, defs, names, args, self.library, fail)

        body = []
        for name, nd in defs.items():
            if name not in needed:
                continue
            node = TfNode(nd)
            node.name = names[name]
            node.inputs = [tensor(ref) for ref in nd.input if not ref.startswith("^")]
            node.control_inputs = [_control_input(ref[1:], names, args, fail)
                                   for ref in nd.input if ref.startswith("^")]
            body.append(node)
        outputs = [tensor(returns[arg.name]) for arg in sig.output_arg]
        body.append(_forwarding_node(call, outputs, [a.type for a in sig.output_arg]))
        return body

    def _unique(self, base: str) -> str:
        name = fresh_name(base, self.taken)
        self.taken.add(name)
        return name


def _resolve(ref: str, defs, names: Dict[str, str], args: Dict[str, Tensor], library,
             fail) -> Tensor:
    """The graph tensor a FunctionDef tensor reference ("node:out_arg:i", "arg") stands for."""
    parts = ref.split(":")
    if parts[0] in defs and len(parts) == 3 and _is_index(parts[2]):
        index = _output_index(defs[parts[0]].op, parts[1], int(parts[2]), library, fail,
                              defs[parts[0]])
        return names[parts[0]], index
    if parts[0] in args and (len(parts) == 1 or parts[1:] == ["0"]):
        return args[parts[0]]
    if parts[0] in defs and (len(parts) == 1 or len(parts) == 2 and _is_index(parts[1])):
        return names[parts[0]], int(parts[1]) if len(parts) == 2 else 0   # "node:i", not TF's form
    raise fail(f"cannot resolve tensor '{ref}'")


def _control_input(name: str, names: Dict[str, str], args: Dict[str, Tensor], fail) -> str:
    """The graph node a function body's control input "^name" stands for."""
    if name in names:
        return names[name]
    if name in args:
        return args[name][0]
    raise fail(f"control input '^{name}' names no node or argument of the function")


def _is_index(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _output_index(op_type: str, arg: str, index: int, library, fail, node_def) -> int:
    """The flat output index of body node `node_def`'s output "arg:index"."""
    from tf2ir.parser import op_outputs   # a table of every TF op: only where functions are
    if op_type in library:
        arg_names = tuple(a.name for a in library[op_type].signature.output_arg)
        if arg not in arg_names:
            raise fail(f"node '{node_def.name}' (op {op_type}) has no output arg '{arg}'")
        return arg_names.index(arg) + index
    args = op_outputs.OUTPUTS.get(op_type)
    if args is None:
        if not _SINGLE_OUTPUT:
            _SINGLE_OUTPUT.update((op, name) for name, ops in op_outputs.SINGLE.items()
                                  for op in ops.split())
        if op_type not in _SINGLE_OUTPUT:
            raise fail(f"node '{node_def.name}': op {op_type} is in neither the function library"
                       f" nor TensorFlow's op registry (parser/op_outputs.py), so its output "
                       f"arg '{arg}' cannot be placed")
        args = ((_SINGLE_OUTPUT[op_type], None),)
    offset = 0
    for name, count_attr in args:
        size = 1 if count_attr is None else _list_size(op_type, count_attr, node_def, fail)
        if name == arg:
            if index >= size:
                raise fail(f"node '{node_def.name}' (op {op_type}): output arg '{arg}' has "
                           f"{size} tensor(s), there is no '{arg}:{index}'")
            return offset + index
        offset += size
    raise fail(f"node '{node_def.name}' (op {op_type}) has no output arg '{arg}'")


def _list_size(op_type: str, attr: str, node_def, fail) -> int:
    """How many tensors an output list holds: the node's int attr, or its type-list attr's
    length (the OpDef's default where the node leaves the attr out)."""
    from tf2ir.parser import op_outputs
    if attr not in node_def.attr:
        size = op_outputs.COUNT_DEFAULTS.get(op_type, {}).get(attr)
        if size is None:
            raise fail(f"node '{node_def.name}' (op {op_type}) lacks attr '{attr}', which sizes "
                       f"an output list")
        return size
    value = node_def.attr[attr]
    kind = value.WhichOneof("value")
    if kind == "i":
        return value.i
    if kind == "list":
        return len(value.list.type)
    raise fail(f"node '{node_def.name}' (op {op_type}): attr '{attr}', which sizes an output "
               f"list, is no count or type list ({kind})")


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
    tout = call.attr("Tout", []) if call.op_type in CALL_OPS else []
    types = [_TF_DTYPE_ENUMS[t] for t in tout] if isinstance(tout, list) else []
    if len(types) != len(outputs):
        types = list(arg_types)
    if op == "Identity" and types and types[0]:
        node_def.attr["T"].type = types[0]
    elif op == "IdentityN":
        node_def.attr["T"].list.type.extend(t or 1 for t in types)
    return TfNode(node_def)


# -- functional control flow ---------------------------------------------------------------
class FunctionalNode(TfNode):
    """A TF node whose function attributes (If's branches, While's cond and body) name
    library functions; its plugin gets them as IR graphs from `convert_function`."""

    __slots__ = ("_functions",)

    @classmethod
    def of(cls, node: TfNode, functions: "FunctionLibrary") -> "FunctionalNode":
        new = cls.__new__(cls)
        for slot in TfNode.__slots__:
            setattr(new, slot, getattr(node, slot))
        new._functions = functions
        return new

    def convert_function(self, attr: str, input_descs: Sequence[TensorDesc]) -> Graph:
        """The IR graph of the function attribute `attr` names: one input per desc, its
        outputs the function's outputs."""
        name = self.attr(attr)
        if not isinstance(name, str):
            raise ConversionError(f"attribute '{attr}' does not name a function")
        try:
            return self._functions.convert(name, input_descs)
        except ConversionError as exc:
            inner = f"node '{exc.node}' ({exc.op_type}): " if exc.node else ""
            raise ConversionError(f"in function {name} ('{attr}'): {inner}{exc.message}",
                                  exit_code=exc.exit_code) from None


class BodyConverter(Protocol):
    """What converts a function body: the pipeline (`tf2ir.parser.pipeline.Pipeline`)."""

    def convert_function(self, tf_graph: TfGraph, outputs: Sequence[str],
                         arguments: Sequence[Tuple[str, TensorDesc]]) -> Graph: ...


class FunctionLibrary:
    """The GraphDef's functions, converted on demand by the pipeline that owns the graph."""

    def __init__(self, tf_graph: TfGraph, functions, converter: Optional[BodyConverter] = None):
        self.model = tf_graph.model
        self.proto = tf_graph.library
        self.functions = functions
        self._converter = converter

    @property
    def converter(self) -> BodyConverter:
        if self._converter is None:
            raise ConversionError("function bodies are converted by a pipeline: call "
                                  "inline_functions(tf_graph, pipeline)", model=self.model)
        return self._converter

    def convert(self, name: str, input_descs: Sequence[TensorDesc]) -> Graph:
        fdef = self.functions.get(name)
        if fdef is None:
            raise ConversionError(f"function {name} is not in the GraphDef's library")
        view, outputs = self.graph_view(fdef)
        args = [arg.name for arg in fdef.signature.input_arg]
        if len(args) != len(input_descs):
            raise ConversionError(f"function {name} takes {len(args)} inputs, the node "
                                  f"gives {len(input_descs)}")
        graph = self.converter.convert_function(view, outputs, list(zip(args, input_descs)))
        graph.name = name
        return graph

    def graph_view(self, fdef) -> Tuple[TfGraph, List[str]]:
        """A TF graph view of a function body: a Placeholder per argument (named as it),
        the body's nodes with graph-style inputs; and the returned tensors' names."""
        from tensorboard.compat.proto.node_def_pb2 import NodeDef
        sig = fdef.signature

        def fail(message: str) -> ConversionError:
            return ConversionError(f"function {sig.name}: {message}", model=self.model)

        view = TfGraph(SimpleNamespace(node=[], library=self.proto), self.model)
        defs = {nd.name: nd for nd in fdef.node_def}
        args = {arg.name: (arg.name, 0) for arg in sig.input_arg}
        clash = set(defs) & set(args)
        if clash:
            raise fail(f"node and argument share the name {sorted(clash)[0]!r}")
        names = {name: name for name in defs}
        nodes: Dict[str, TfNode] = {}
        for arg in sig.input_arg:
            placeholder = NodeDef(name=arg.name, op="Placeholder")
            placeholder.attr["dtype"].type = arg.type
            nodes[arg.name] = TfNode(placeholder)
        for name, nd in defs.items():
            node = TfNode(nd)
            node.inputs = [_resolve(ref, defs, names, args, self.functions, fail)
                           for ref in nd.input if not ref.startswith("^")]
            node.control_inputs = [ref[1:] for ref in nd.input if ref.startswith("^")]
            nodes[name] = node
        outputs = []
        for arg in sig.output_arg:   # an Identity per output, named as the output arg
            if arg.name not in fdef.ret:
                raise fail(f"output {arg.name} has no return value")
            node, port = _resolve(fdef.ret[arg.name], defs, names, args, self.functions, fail)
            name = fresh_name(arg.name, nodes)
            nodes[name] = TfNode(NodeDef(name=name, op="Identity", input=[f"{node}:{port}"]))
            outputs.append(name)
        view.nodes = nodes
        return view, outputs
