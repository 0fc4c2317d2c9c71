"""The FunctionDefs and nodes that raising TF1 control flow writes (parser/control_flow.py).

A raised cond branch, loop cond or loop body is a backward slice of the graph: from the
tensors it returns back to the structure's own inputs (a Switch side, a loop variable's
Merge or Switch, an Enter), which become the function's arguments. Nodes without any input
(constants) are copied in wherever they are read, whatever control edges tied them to the
branch; a node of another context read without a Switch or Enter is not a well-formed TF
graph and is refused.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.names import fresh_name
from tf2ir.parser.attrs import TF_DTYPES
from tf2ir.parser.graph_view import TfGraph, TfNode

Tensor = Tuple[str, int]
_ENUMS = {name: enum for enum, name in TF_DTYPES.items()}


def _enum(dtype: str) -> int:
    if dtype not in _ENUMS:
        raise ConversionError(f"TF1 control flow: dtype {dtype} cannot be a function argument",
                              exit_code=ExitStatus.UNSUPPORTED)
    return _ENUMS[dtype]


def _ref(tensor: Tensor) -> str:
    return tensor[0] if tensor[1] == 0 else f"{tensor[0]}:{tensor[1]}"


def _copy(source, target) -> None:
    """Copy a protobuf message into one of the same type from maybe another set of compiled
    classes (TensorFlow's own or TensorBoard's)."""
    target.ParseFromString(source.SerializeToString())


def identity(name: str, tensor: Tensor, old: TfNode) -> TfNode:
    """An Identity named `name` of `tensor`, typed as `old` (the Merge or Exit it replaces)."""
    from tensorboard.compat.proto.node_def_pb2 import NodeDef
    node_def = NodeDef(name=name, op="Identity", input=[_ref(tensor)], device=old.device)
    if old.has_attr("T"):
        _copy(old._def.attr["T"], node_def.attr["T"])
    return TfNode(node_def)


class FunctionWriter:
    """Writes raised functions into `tf_graph`'s library and builds the functional nodes."""

    def __init__(self, tf_graph: TfGraph):
        self.graph = tf_graph
        self.taken: Set[str] = {f.signature.name for f in tf_graph.library.function}

    def node(self, name: str, op: str, inputs: Sequence[Tensor], attrs) -> TfNode:
        """A node of op type `op`; attrs maps a name to (kind, value), kind one of type,
        types, func, i."""
        from tensorboard.compat.proto.node_def_pb2 import NodeDef
        node_def = NodeDef(name=name, op=op, input=[_ref(t) for t in inputs])
        for key, (kind, value) in attrs.items():
            attr = node_def.attr[key]
            if kind == "type":
                attr.type = _enum(value)
            elif kind == "types":
                attr.list.type.extend(_enum(v) for v in value)
                if not value:
                    attr.list.SetInParent()
            elif kind == "func":
                attr.func.name = value
            else:
                attr.i = value
        return TfNode(node_def)

    def write(self, base: str, arg_dtypes: Sequence[str], args: Dict[Tensor, int],
              results: Sequence[Optional[Tensor]], out_dtypes: Sequence[str], context,
              contexts, stops: Set[str]) -> str:
        """Add a function whose arguments are `args` (a tensor of the graph → its argument
        index) and whose outputs are `results` (None: argument i passed through), the
        nodes between them being those of `context`; return its name."""
        from tensorboard.compat.proto.function_pb2 import FunctionDef
        from tensorboard.compat.proto.node_def_pb2 import NodeDef
        nodes = self.graph.nodes
        needed = self._slice([t for t in results if t is not None], args, context, contexts,
                             stops)
        fdef = FunctionDef()
        name = fresh_name(base.replace("/", "_"), self.taken)
        self.taken.add(name)
        fdef.signature.name = name
        taken: Set[str] = set(needed)
        arg_names = []
        for dtype in arg_dtypes:
            arg = fresh_name("arg", taken)
            taken.add(arg)
            arg_names.append(arg)
            fdef.signature.input_arg.add(name=arg, type=_enum(dtype))

        def ref(tensor: Tensor) -> str:
            return arg_names[args[tensor]] if tensor in args else _ref(tensor)

        for node_name in (n for n in nodes if n in needed):   # graph order
            node = nodes[node_name]
            body = NodeDef(name=node.name, op=node.op_type, device=node.device)
            for key in node._def.attr:
                _copy(node._def.attr[key], body.attr[key])
            body.input.extend(ref(t) for t in node.inputs)
            fdef.node_def.append(body)
        for i, (result, dtype) in enumerate(zip(results, out_dtypes)):
            out = fresh_name(f"out{i}", taken)
            taken.add(out)
            fdef.signature.output_arg.add(name=out, type=_enum(dtype))
            fdef.ret[out] = arg_names[i] if result is None else ref(result)
        _copy(fdef, self.graph.library.function.add())
        return name

    def used(self, results: Sequence[Optional[Tensor]], args: Dict[Tensor, int], context,
             contexts, stops: Set[str]) -> Set[int]:
        """The argument indices that a function of these results would read."""
        found = {args[t] for t in results if t in args}
        for name in self._slice([t for t in results if t is not None and t not in args], args,
                                context, contexts, stops):
            found.update(args[t] for t in self.graph.nodes[name].inputs if t in args)
        return found

    def _slice(self, results: List[Tensor], args: Dict[Tensor, int], context, contexts,
               stops: Set[str]) -> Set[str]:
        """The nodes the results need through data inputs, down to the arguments. Control
        edges are left behind: in a function body they only order what the data already
        orders, or side effects tf2ir does not convert."""
        nodes = self.graph.nodes
        needed: Set[str] = set()
        stack: List[Tuple[str, str]] = [(t[0], "") for t in results if t not in args]
        while stack:
            name, reader = stack.pop()
            if name in needed:
                continue
            node = nodes[name]
            free = not node.inputs and not node.control_inputs and node.op_type != "Placeholder"
            ctx = contexts.get((name, -1), ())
            if name in stops or (ctx != context and not free):
                raise ConversionError(
                    f"TF1 control flow: reads '{name}' ({node.op_type}), which is outside its "
                    "cond branch or loop and not passed in by a Switch or Enter",
                    node=reader or name, op_type=nodes[reader].op_type if reader else None,
                    exit_code=ExitStatus.UNSUPPORTED)
            needed.add(name)
            stack.extend((src, name) for src, port in node.inputs if (src, port) not in args)
        return needed
