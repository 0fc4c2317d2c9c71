"""Reading a library function's body in a scope fusion pass, and matching expression patterns
in it: what a pass needs to recognise, say, a Keras LSTM cell inside a While body (the TF
graph a pass sees holds the While node; its body is a FunctionDef of the graph's library).

`FunctionView(fdef)` resolves each tensor reference of the body to a `Ref`: an argument
(`Ref.arg(k)`) or a node's output port, Identity nodes skipped. A pattern is data:

    P("Mul", "o", P("Tanh", "c"))      # a Mul of whatever `o` binds and a Tanh of `c`
    Port(P("Split", Const(1), "z"), 2) # output 2 of a Split
    P("AddV2|Add", "a", "b")           # Add and Mul patterns match either operand order

Strings are variables (bound on first use, the same tensor after); a "$name" op type binds
the op type too, so two Tanh-or-Relu places must agree. `match(view, ref, pattern)`
returns the bindings or None. Ports of ops with several output arguments are resolved only
for the first argument (Split's `output:k` is port k), which is all the patterns use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

COMMUTATIVE = {"Add", "AddV2", "Mul", "LogicalAnd"}
# TF DataType enum → numpy, for the constants a pattern reads (small ones: axes, 1.0, ...)
_NUMPY = {1: np.float32, 2: np.float64, 3: np.int32, 9: np.int64, 10: np.bool_}
_FIELDS = {1: "float_val", 2: "double_val", 3: "int_val", 9: "int64_val", 10: "bool_val"}


@dataclass(frozen=True)
class Ref:
    """A tensor of a function body: argument `index` (node None) or output `index` of `node`."""

    node: Optional[str]
    index: int

    @staticmethod
    def arg(index: int) -> "Ref":
        return Ref(None, index)

    @property
    def is_arg(self) -> bool:
        return self.node is None


def decode_tensor(proto) -> Optional[np.ndarray]:
    """A small TensorProto of a numeric or bool dtype as numpy, else None."""
    dtype = _NUMPY.get(proto.dtype)
    if dtype is None or proto.tensor_shape.unknown_rank:
        return None
    shape = tuple(int(d.size) for d in proto.tensor_shape.dim)
    count = int(np.prod(shape)) if shape else 1
    values: np.ndarray
    if proto.tensor_content:
        values = np.frombuffer(proto.tensor_content, dtype=dtype)
    else:
        values = np.asarray(getattr(proto, _FIELDS[proto.dtype]), dtype=dtype)
        if 0 < values.size < count:       # TF repeats the last value
            values = np.concatenate([values, np.repeat(values[-1:], count - values.size)])
        elif values.size == 0:
            values = np.zeros(count, dtype)
    return values.reshape(shape) if values.size == count else None


class FunctionView:
    """A FunctionDef's body: nodes by name, argument indices, the returned tensors."""

    def __init__(self, fdef):
        self.fdef = fdef
        self.nodes = {nd.name: nd for nd in fdef.node_def}
        self.args = {arg.name: i for i, arg in enumerate(fdef.signature.input_arg)}
        self.outputs: List[Optional[Ref]] = [
            self.resolve(fdef.ret[arg.name]) if arg.name in fdef.ret else None
            for arg in fdef.signature.output_arg]

    def resolve(self, text: str) -> Optional[Ref]:
        """The tensor a reference ("arg", "node:out_arg:i") names, Identity skipped."""
        parts = text.split(":")
        if parts[0] in self.args and len(parts) == 1:
            return Ref.arg(self.args[parts[0]])
        if parts[0] not in self.nodes:
            return None
        index = int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 0
        return self.source(Ref(parts[0], index))

    def source(self, ref: Ref) -> Optional[Ref]:
        """`ref` with Identity nodes skipped."""
        seen = 0
        while ref.node is not None and self.nodes[ref.node].op == "Identity" and seen < 1000:
            inputs = self.inputs(ref.node)
            if not inputs or inputs[0] is None:
                return None
            ref, seen = inputs[0], seen + 1
        return ref

    def op(self, ref: Ref) -> Optional[str]:
        return None if ref.node is None else self.nodes[ref.node].op

    def inputs(self, node: str) -> List[Optional[Ref]]:
        """The data inputs of body node `node`, resolved."""
        return [self.resolve(text) for text in self.nodes[node].input if not text.startswith("^")]

    def attr(self, node: str, name: str, default: Any = None) -> Any:
        """A scalar attribute of body node `node` (int, float, bool, bytes), or `default`."""
        value = self.nodes[node].attr.get(name)
        if value is None:
            return default
        which = value.WhichOneof("value")
        return default if which in (None, "list", "shape", "tensor", "func") \
            else getattr(value, which)

    def const(self, ref: Optional[Ref]) -> Optional[np.ndarray]:
        """The value of a body Const (through Identity), else None."""
        if ref is None or ref.node is None or self.nodes[ref.node].op != "Const":
            return None
        return decode_tensor(self.nodes[ref.node].attr["value"].tensor)

    def ints(self, node: str, name: str) -> List[int]:
        """A list-of-ints attribute of body node `node` (empty when absent)."""
        value = self.nodes[node].attr.get(name)
        return [] if value is None else [int(i) for i in value.list.i]

    def evaluate(self, ref: Optional[Ref],
                 arg_value: Callable[[int], Optional[np.ndarray]]) -> Optional[np.ndarray]:
        """The value of `ref` when it is computed from constants and arguments whose values
        `arg_value` gives, through Const, Split, Squeeze and simple StridedSlice; else None."""
        if ref is None:
            return None
        if ref.node is None:
            return arg_value(ref.index)
        op = self.nodes[ref.node].op
        if op == "Const":
            return self.const(ref)
        if op not in ("Split", "Squeeze", "StridedSlice"):
            return None
        maybe = [self.evaluate(r, arg_value) for r in self.inputs(ref.node)]
        values = [v for v in maybe if v is not None]
        if len(values) != len(maybe):
            return None
        if op == "Split":
            parts = self.attr(ref.node, "num_split", 0)
            dim, value = values
            if not parts or value.ndim == 0 or value.shape[int(dim)] % parts:
                return None
            return np.split(value, parts, axis=int(dim))[ref.index]
        if op == "Squeeze":
            dims = self.ints(ref.node, "squeeze_dims")
            return np.squeeze(values[0], axis=tuple(dims) if dims else None)
        return self._strided_slice(ref.node, *values)

    def _strided_slice(self, node: str, value, begin, end, strides) -> Optional[np.ndarray]:
        """A StridedSlice without ellipsis, new-axis or shrink masks."""
        if any(self.attr(node, m, 0) for m in ("ellipsis_mask", "new_axis_mask",
                                                "shrink_axis_mask")) or len(begin) > value.ndim:
            return None
        begin_mask, end_mask = self.attr(node, "begin_mask", 0), self.attr(node, "end_mask", 0)
        index = tuple(slice(None if begin_mask >> i & 1 else int(b),
                            None if end_mask >> i & 1 else int(e), int(s))
                      for i, (b, e, s) in enumerate(zip(begin, end, strides)))
        return value[index]

    def users(self, ref: Ref) -> List[str]:
        """Body nodes that read `ref` (directly or through Identity nodes)."""
        return [name for name in self.nodes if self.nodes[name].op != "Identity"
                and ref in self.inputs(name)]


# -- patterns ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class P:
    """A node pattern: op types ("A|B", or "$var" to bind the op type) and input patterns."""

    op: str
    args: Tuple["Pattern", ...]

    def __init__(self, op: str, *args: "Pattern"):
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "args", args)


@dataclass(frozen=True)
class Port:
    """Output `index` of the node `pattern` matches (the others match port 0)."""

    pattern: P
    index: int


@dataclass(frozen=True)
class Const:
    """A constant close to `value` (scalars compare with every element)."""

    value: float


@dataclass(frozen=True)
class Bind:
    """Match `pattern` and bind the tensor to `name`."""

    name: str
    pattern: "Pattern"


Pattern = Union[str, P, Port, Const, Bind]
Bindings = Dict[str, Any]


def match(view: FunctionView, ref: Optional[Ref], pattern: Pattern,
          bindings: Optional[Bindings] = None) -> Optional[Bindings]:
    """The bindings under which tensor `ref` of `view` matches `pattern`, or None."""
    bindings = dict(bindings or {})
    if ref is None:
        return None
    if isinstance(pattern, str):
        if pattern in bindings:
            return bindings if bindings[pattern] == ref else None
        bindings[pattern] = ref
        return bindings
    if isinstance(pattern, Bind):
        found = match(view, ref, pattern.pattern, bindings)
        return None if found is None else match(view, ref, pattern.name, found)
    if isinstance(pattern, Const):
        value = view.const(ref)
        return bindings if value is not None and value.size and np.allclose(
            value, pattern.value, rtol=1e-6, atol=1e-7) else None
    node_pattern, port = (pattern.pattern, pattern.index) if isinstance(pattern, Port) \
        else (pattern, 0)
    if ref.node is None or ref.index != port:
        return None
    op = view.nodes[ref.node].op
    if node_pattern.op.startswith("$"):
        key = node_pattern.op
        if bindings.get(key, op) != op:
            return None
        bindings[key] = op
    elif op not in node_pattern.op.split("|"):
        return None
    inputs = view.inputs(ref.node)
    if len(inputs) != len(node_pattern.args):
        return None
    orders = [inputs]
    if op in COMMUTATIVE and len(inputs) == 2:
        orders.append(inputs[::-1])
    for order in orders:
        result: Optional[Bindings] = bindings
        for child, sub in zip(order, node_pattern.args):
            result = match(view, child, sub, result) if result is not None else None
        if result is not None:
            return result
    return None
