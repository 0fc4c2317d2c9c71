"""Turning variable handles into constants in a GraphDef and its function library, without
TensorFlow (the native SavedModel reader, parser/saved_model.py).

A variable reaches the ops that read it as a `resource` tensor: from its VarHandleOp in the
outer graph through call inputs into function arguments, through If/Case branches and
While loop variables. `freeze_resources` follows each such handle and rewrites what it
meets as TensorFlow's own freezing does: the handle becomes a Const of the variable's
value, ReadVariableOp an Identity, ResourceGather a GatherV2, ResourceGatherNd a GatherNd,
VariableShape a Shape, and every argument, loop variable and output it passes through
takes the variable's dtype. TF1 control flow (Switch, Merge, Enter, Exit, NextIteration) passes
it on. A function called with other handles is specialised under a new name. A needed
node that does anything else with a variable (assigns it) is refused:
`NeedsTensorFlow`, which the loader answers by freezing with TensorFlow where it can.
"""

from __future__ import annotations

from collections import deque
from typing import Dict, List, Optional, Set, Tuple

import numpy as np

from tf2ir.ir.errors import ConversionError

DT_INT32, DT_RESOURCE = 3, 20
CALL_OPS = ("PartitionedCall", "StatefulPartitionedCall")
IF_OPS = ("If", "StatelessIf")
WHILE_OPS = ("While", "StatelessWhile")
CASE_OPS = ("Case", "StatelessCase")
FUNCTION_OPS = CALL_OPS + IF_OPS + WHILE_OPS + CASE_OPS
Tensor = Tuple[str, int]
MAX_NESTING = 64   # function calls within function calls that a handle is followed through
# TF1 control flow that passes a value on: op → the output ports that carry it.
TF1_FLOW = {"Switch": (0, 1), "Merge": (0,), "Enter": (0,), "Exit": (0,), "NextIteration": (0,)}
# Effects on a variable that an inference graph may carry but that no output needs.
_IGNORED = ("VarIsInitializedOp", "DestroyResourceOp", "NoOp")


def _is_index(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _set_type(node, attr: str, index: int, dtype: int, model: str) -> None:
    """`node`'s list attr `attr`[index] = dtype; a list too short for the node's inputs or
    outputs is a malformed node (a clean error, not something TensorFlow could resolve)."""
    types = node.attr[attr].list.type
    if not 0 <= index < len(types):
        raise ConversionError(f"attr {attr} lists {len(types)} types, but the node's "
                              f"{'input' if attr != 'Tout' else 'output'} {index} carries a "
                              "variable", model=model, node=node.name, op_type=node.op)
    types[index] = dtype


class NeedsTensorFlow(ConversionError):
    """What the native SavedModel reader cannot resolve; TensorFlow's freezing can."""


class Variable:
    """A variable's value: its TF dtype enum, shape and numpy array."""

    __slots__ = ("dtype", "shape", "value", "mapped")

    def __init__(self, dtype: int, shape: List[int], value: np.ndarray, mapped: bool = False):
        self.dtype, self.shape, self.value = dtype, list(shape), value
        self.mapped = mapped   # the Const keeps no content: MappedGraphDef gives the view

    def key(self) -> Tuple[int, Tuple[int, ...]]:
        return self.dtype, tuple(self.shape)


def set_const(node, dtype: int, shape: List[int], value: np.ndarray, content: bool = True) -> None:
    """Make NodeDef `node` a Const holding `value` (keeps its name and device); without
    `content`, only its dtype and shape (the value is mapped: parser/mapped_graph.py)."""
    node.op = "Const"
    del node.input[:]
    node.ClearField("attr")
    node.attr["dtype"].type = dtype
    tensor = node.attr["value"].tensor
    tensor.dtype = dtype
    for size in shape:
        tensor.tensor_shape.dim.add(size=int(size))
    if not content:
        return
    if value.dtype == object:
        tensor.string_val.extend(v if isinstance(v, bytes) else str(v).encode()
                                 for v in value.ravel())
    else:
        tensor.tensor_content = np.ascontiguousarray(value).tobytes()


class _Body:
    """The nodes of the outer graph or of one function, with refs parsed to (node, port)."""

    def __init__(self, nodes, function=None):
        self.nodes = {n.name: n for n in nodes}
        self.function = function
        self.args = {a.name: i for i, a in enumerate(function.signature.input_arg)} \
            if function is not None else {}
        self.consumers: Dict[Tuple[str, int], List[Tuple[object, int]]] = {}
        self.renames: Dict[str, Tuple[str, str]] = {}   # node → (old, new) output arg name
        for node in nodes:
            position = 0
            for ref in node.input:
                if ref.startswith("^"):
                    continue
                self.consumers.setdefault(self.parse(ref), []).append((node, position))
                position += 1

    def parse(self, ref: str) -> Tuple[str, int]:
        """(node, port) of a ref; a port that is not a plain number leaves the whole ref as a
        name that matches no node (as parser/graph_view.py reads it: the graph view refuses it
        where it is needed)."""
        parts = ref.split(":")
        if len(parts) == 1:
            return ref, 0
        port = parts[1] if self.function is None or len(parts) == 2 else parts[2]
        if len(parts) > (2 if self.function is None else 3) or not _is_index(port):
            return ref, 0
        return parts[0], int(port)

    def ref(self, name: str, port: int, arg: str = "output") -> str:
        if self.function is None:
            return name if port == 0 else f"{name}:{port}"
        return f"{name}:{arg}:{port}"

    def apply_renames(self) -> None:
        """Refs "name:old:i" → "name:new:i" for the nodes in `renames` (an op changed type,
        so its output arg's name too), in one pass over the body."""
        if self.function is None or not self.renames:
            return

        def fix(ref: str) -> str:
            parts = ref.split(":")
            change = self.renames.get(parts[0].lstrip("^")) if len(parts) == 3 else None
            if change is None or parts[1] != change[0]:
                return ref
            return f"{parts[0]}:{change[1]}:{parts[2]}"
        for node in self.nodes.values():
            if any(r.split(":")[0] in self.renames for r in node.input):
                node.input[:] = [fix(r) for r in node.input]
        for key, ref in list(self.function.ret.items()):
            self.function.ret[key] = fix(ref)
        self.renames.clear()

    def needed(self) -> Optional[Set[str]]:
        """For a function, the nodes its returns need (data and control); None: all."""
        if self.function is None:
            return None
        out: Set[str] = set()
        stack = [ref.split(":")[0] for ref in self.function.ret.values()]
        stack += list(self.function.control_ret.values())
        while stack:
            name = stack.pop()
            if name in out or name not in self.nodes:
                continue
            out.add(name)
            stack.extend(r.lstrip("^").split(":")[0] for r in self.nodes[name].input)
        return out


class ResourceFreezer:
    """Rewrites variable handles as constants across a GraphDef and its library."""

    def __init__(self, graph_def, model: str):
        self.graph_def = graph_def
        self.model = model
        self.functions = {f.signature.name: f for f in graph_def.library.function}
        self.done: Dict[tuple, Tuple[str, Dict[int, Variable]]] = {}
        self.used_names: Dict[str, int] = {}
        self.depth = 0   # functions being specialised, nested

    def fail(self, message: str, node=None) -> NeedsTensorFlow:
        return NeedsTensorFlow(message, model=self.model, node=getattr(node, "name", None),
                               op_type=getattr(node, "op", None))

    def freeze_outer(self, variables: Dict[str, Variable]) -> None:
        """Outer-graph nodes named in `variables` (VarHandleOp, VariableV2) become Consts;
        their uses are rewritten."""
        body = _Body(list(self.graph_def.node))
        start = {}
        for name, var in variables.items():
            node = body.nodes[name]
            ref_variable = node.op in ("VariableV2", "Variable")
            set_const(node, var.dtype, var.shape, var.value, content=not var.mapped)
            if not ref_variable:
                start[(name, 0)] = var
        self._propagate(body, start)

    # -- propagation within one body ---------------------------------------------------------
    def _propagate(self, body: _Body, start: Dict[Tensor, Variable]) -> Dict[Tensor, Variable]:
        """Follow the variables from `start` through `body`. Nodes that call functions are
        rewritten once for all the variables that reach them together (one specialisation
        per call, not per variable)."""
        frozen: Dict[Tuple[str, int], Variable] = {}
        queue = deque(start.items())
        needed = body.needed()
        pending: Dict[str, Tuple[object, Dict[int, Variable]]] = {}
        while queue or pending:
            while queue:
                tensor, var = queue.popleft()
                if tensor in frozen:
                    continue
                frozen[tensor] = var
                for node, position in body.consumers.get(tensor, ()):
                    if needed is not None and node.name not in needed:
                        continue
                    if node.op in FUNCTION_OPS:
                        pending.setdefault(node.name, (node, {}))[1][position] = var
                        continue
                    for out, out_var in self._rewrite(body, node, position, var):
                        queue.append(((node.name, out), out_var))
            for node, args in pending.values():
                for out, out_var in self._call(node, args):
                    queue.append(((node.name, out), out_var))
            pending.clear()
        body.apply_renames()
        return frozen

    def _rewrite(self, body: _Body, node, position: int, var: Variable):
        """Rewrite `node`, whose input `position` is now variable `var`'s value; yield the
        (output port, variable) pairs that still carry it."""
        op = node.op
        if op == "ReadVariableOp":
            node.op = "Identity"
            node.ClearField("attr")
            node.attr["T"].type = var.dtype
            body.renames[node.name] = ("value", "output")
        elif op in ("Identity", "IdentityN"):
            if op == "Identity":
                node.attr["T"].type = var.dtype
            else:
                _set_type(node, "T", position, var.dtype, self.model)
            yield position, var
        elif op in TF1_FLOW and (op != "Switch" or position == 0):
            node.attr["T"].type = var.dtype   # TF1 control flow carries the value now
            for port in TF1_FLOW[op]:
                yield port, var
        elif op in ("ResourceGather", "ResourceGatherNd") and position == 0:
            self._gather(body, node, var)
        elif op == "VariableShape":
            node.op = "Shape"
            out_type = node.attr["out_type"].type or DT_INT32
            node.ClearField("attr")
            node.attr["T"].type = var.dtype
            node.attr["out_type"].type = out_type
        elif op in _IGNORED:
            pass
        else:
            raise self.fail(f"a variable is used by {op}, which tf2ir resolves only through "
                            "TensorFlow's freezing", node)

    def _call(self, node, args: Dict[int, Variable]):
        """A call, If, Case or While node whose inputs at `args` are variables' values."""
        op = node.op
        if op in CALL_OPS:
            name, outs = self.function(node.attr["f"].func.name, args, node)
            node.attr["f"].func.name = name
            for position, var in args.items():
                _set_type(node, "Tin", position, var.dtype, self.model)
            for index, out_var in outs.items():
                _set_type(node, "Tout", index, out_var.dtype, self.model)
                yield index, out_var
        elif op in WHILE_OPS:
            yield from self._while(node, args)
        else:
            args = {p - 1: v for p, v in args.items() if p > 0}   # input 0: the predicate/index
            if args:
                yield from self._branches(node, ("then_branch", "else_branch")
                                          if op in IF_OPS else None, args)

    def _gather(self, body: _Body, node, var: Variable) -> None:
        batch_dims = node.attr["batch_dims"].i if "batch_dims" in node.attr else 0
        tindices = node.attr["Tindices"].type
        nd = node.op == "ResourceGatherNd"
        node.ClearField("attr")
        node.attr["Tparams"].type = var.dtype
        node.attr["Tindices"].type = tindices
        if nd:
            node.op = "GatherNd"
            return
        node.op = "GatherV2"
        node.attr["Taxis"].type = DT_INT32
        node.attr["batch_dims"].i = batch_dims
        axis = self._unique(f"{node.name}/tf2ir_axis", body)
        nodes = body.function.node_def if body.function is not None else self.graph_def.node
        const = nodes.add(name=axis)
        set_const(const, DT_INT32, [], np.array(batch_dims, np.int32))
        body.nodes[axis] = const
        data = [r for r in node.input if not r.startswith("^")]
        control = [r for r in node.input if r.startswith("^")]
        del node.input[:]
        node.input.extend(data[:2] + [body.ref(axis, 0)] + control)

    def _branches(self, node, attrs, args: Dict[int, Variable]):
        if attrs is None:
            funcs = node.attr["branches"].list.func
        else:
            funcs = [node.attr[a].func for a in attrs]
        outs: Dict[int, Variable] = {}
        for func in funcs:
            func.name, branch_outs = self.function(func.name, args, node)
            outs.update(branch_outs)
        for index, var in args.items():
            _set_type(node, "Tin", index, var.dtype, self.model)
        for out, out_var in outs.items():
            _set_type(node, "Tout", out, out_var.dtype, self.model)
            yield out, out_var

    def _while(self, node, args: Dict[int, Variable]):
        node.attr["cond"].func.name, _ = self.function(node.attr["cond"].func.name, args, node)
        node.attr["body"].func.name, outs = self.function(node.attr["body"].func.name, args, node)
        if set(outs) != set(args) or any(outs[p].key() != v.key() for p, v in args.items()):
            raise self.fail("a While loop changes a variable handle it carries", node)
        for position, var in args.items():
            _set_type(node, "T", position, var.dtype, self.model)
            shapes = node.attr["output_shapes"].list.shape if "output_shapes" in node.attr else []
            if position < len(shapes):
                shape = shapes[position]
                shape.Clear()
                for size in var.shape:
                    shape.dim.add(size=int(size))
            yield position, var

    # -- functions -----------------------------------------------------------------------------
    def function(self, name: str, args: Dict[int, Variable],
                 call) -> Tuple[str, Dict[int, Variable]]:
        """Specialise function `name` for variable values at argument positions `args`: its
        (possibly new) name and the outputs that now carry a variable's value."""
        fdef = self.functions.get(name)
        if fdef is None:
            raise self.fail(f"function {name} is not in the library", call)
        key = (name, tuple(sorted((i, v.key()) for i, v in args.items())))
        if key in self.done:
            return self.done[key]
        if self.depth >= MAX_NESTING:
            raise self.fail(f"variable handles pass through more than {MAX_NESTING} nested "
                            "function calls", call)
        if any(k[0] == name for k in self.done):   # called with other handles elsewhere
            copy = self.graph_def.library.function.add()
            copy.CopyFrom(fdef)
            copy.signature.name = self._unique_function(name)
            self.functions[copy.signature.name] = copy
            fdef = copy
        new_name = fdef.signature.name
        self.done[key] = (new_name, {})   # a recursive call sees no outputs yet
        self.depth += 1
        try:
            return self._specialise(fdef, name, new_name, key, args, call)
        finally:
            self.depth -= 1

    def _specialise(self, fdef, name: str, new_name: str, key, args: Dict[int, Variable],
                    call) -> Tuple[str, Dict[int, Variable]]:
        body = _Body(list(fdef.node_def), fdef)
        start = {}
        for index, var in args.items():
            if index >= len(fdef.signature.input_arg):
                raise self.fail(f"function {name} has no argument {index}", call)
            arg = fdef.signature.input_arg[index]
            if arg.type != DT_RESOURCE:
                continue   # already specialised (the same handle reached it twice)
            arg.type = var.dtype
            arg.ClearField("handle_data")
            if index in fdef.arg_attr:
                fdef.arg_attr[index].attr.pop("_handle_dtypes", None)
                fdef.arg_attr[index].attr.pop("_handle_shapes", None)
            start[(arg.name, 0)] = var
        frozen = self._propagate(body, start)
        needed = body.needed()
        if needed is not None and len(needed) < len(fdef.node_def):
            # what no return needs may still read a handle (a ReadVariableOp whose Shape
            # TF folded): dropped, so that the function stays valid for TensorFlow
            for index in reversed(range(len(fdef.node_def))):
                if fdef.node_def[index].name not in needed:
                    del fdef.node_def[index]
        outs: Dict[int, Variable] = {}
        for index, out_arg in enumerate(fdef.signature.output_arg):
            ref = fdef.ret.get(out_arg.name)
            var = frozen.get(body.parse(ref)) if ref is not None else None
            if var is not None and out_arg.type == DT_RESOURCE:
                out_arg.type = var.dtype
                out_arg.ClearField("handle_data")
                outs[index] = var
        self.done[key] = (new_name, outs)
        return new_name, outs

    def _unique_function(self, name: str) -> str:
        count = self.used_names.get(name, 0)
        while True:
            count += 1
            candidate = f"{name}_tf2ir_frozen_{count}"
            if candidate not in self.functions:
                self.used_names[name] = count
                return candidate

    @staticmethod
    def _unique(base: str, body: _Body) -> str:
        name, count = base, 0
        while name in body.nodes or name in body.args:
            count += 1
            name = f"{base}_{count}"
        return name


def freeze_resources(graph_def, variables: Dict[str, Variable], model: str) -> None:
    """Rewrite, in place, the outer-graph variable nodes named in `variables` and every
    use of their handles in `graph_def` and its function library (see the module doc)."""
    ResourceFreezer(graph_def, model).freeze_outer(variables)
