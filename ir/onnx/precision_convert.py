"""The float16 rewrite of a lowered ONNX graph (`--precision fp16`; ir/onnx/precision.py says
which ops stay float32 and why).

Every tensor that is float32 in the lowered graph becomes float16, except around the nodes that
stay float32 (`keep`): those read float32 and write float32. A name keeps one producer; a node
that needs a tensor in the other precision reads a copy of it, made once per graph scope and
shared by every such reader: an initializer converted here (finite values clipped to float16's
range, so a mask's -1e9 stays a large negative number rather than -inf), a Cast placed before its
first reader, or, where the tensor is itself a Cast of a float32 tensor or of an integer, that
tensor directly or one Cast of it (so Casts never follow Casts). Graph outputs get the type asked
for (`io`) from a Cast written under their name; graph inputs are declared in it. If branches and
Loop/Scan bodies are rewritten as graphs of their own (their outer names open): control flow
carries float16, so a body's float outputs (and a loop's carried inputs) are float16. Only
float32 tensors are touched: float64, bfloat16 and existing float16 tensors stay as they are.
Types come from onnx's type inference over the lowered graph and the IR's dtypes."""

from __future__ import annotations

from typing import Callable, Dict, Iterable, Optional, Tuple

import numpy as np
import onnx
from onnx import numpy_helper

from tf2ir.ir.onnx.graph import GraphInvariantError, OnnxGraph, OnnxNode
from tf2ir.ir.onnx.kernels import has_kernel
from tf2ir.ir.onnx.opset import MAX_OPSET

F32, F16 = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16
FP16_MAX = float(np.finfo(np.float16).max)      # 65504
_F16_TYPE = "tensor(float16)"
_SCHEMAS: Dict[str, Optional[onnx.defs.OpSchema]] = {}


def to_half(array: np.ndarray) -> np.ndarray:
    """float32 -> float16, finite values clipped to float16's range (inf and nan kept)."""
    array = np.asarray(array, dtype=np.float32)
    return np.where(np.isfinite(array), np.clip(array, -FP16_MAX, FP16_MAX),
                    array).astype(np.float16)


def _schema(node: OnnxNode) -> Optional[onnx.defs.OpSchema]:
    if node.op_type not in _SCHEMAS:
        try:
            _SCHEMAS[node.op_type] = onnx.defs.get_schema(node.op_type, MAX_OPSET)
        except onnx.defs.SchemaError:
            _SCHEMAS[node.op_type] = None
    return _SCHEMAS[node.op_type]


def _takes_half(params, index: int) -> bool:
    """Whether formal parameter `index` (the last one when variadic) allows float16."""
    if not params:
        return True
    param = params[min(index, len(params) - 1)]
    if index >= len(params) and param.option != onnx.defs.OpSchema.FormalParameterOption.Variadic:
        return True
    return _F16_TYPE in param.types


class _Scope:
    """One graph being rewritten (the model's or a body), with the scopes enclosing it."""

    def __init__(self, g: OnnxGraph, parent: Optional["_Scope"] = None,
                 outputs: Optional[Dict[str, int]] = None):
        self.g, self.parent = g, parent
        self.kind: Dict[str, int] = {}          # a float32-typed name -> what it holds now
        self.copies: Dict[Tuple[str, int], str] = {}
        self.outputs = outputs or {}            # graph output -> the type it must have

    def kind_of(self, name: str) -> int:
        scope: Optional[_Scope] = self
        while scope is not None:
            if name in scope.kind:
                return scope.kind[name]
            scope = scope.parent
        return F32

    def copy_of(self, name: str, want: int) -> Optional[str]:
        scope: Optional[_Scope] = self
        while scope is not None:
            if (name, want) in scope.copies:
                return scope.copies[(name, want)]
            scope = scope.parent
        return None


class HalfRewrite:
    """The rewrite of one model's graph `top` (see the module's note); `keep(node)` says
    whether a node stays float32; `types` are the elem types of names before the rewrite."""

    def __init__(self, top: OnnxGraph, types: Dict[str, int], keep: Callable[[OnnxNode], bool],
                 io: int = F32, fixed_inputs: Iterable[str] = ()):
        self.top, self.types, self.keep, self.io = top, types, keep, io
        self.fixed = set(fixed_inputs)          # inputs that keep float32 whatever `io` is
        self.kept: Dict[str, int] = {}          # op type -> nodes left float32
        self.casts = 0

    def run(self) -> None:
        outputs = {o: self.io for o in self.top.outputs if self.types.get(o) == F32}
        scope = _Scope(self.top, outputs=outputs)
        for name in self.top.inputs:
            if self.types.get(name) == F32 and name not in self.fixed:
                scope.kind[name] = self.io
        self._graph(scope)

    # -- one graph ---------------------------------------------------------------------------
    def _graph(self, scope: _Scope) -> None:
        for node in list(scope.g):
            self._node(scope, node)

    def _is_f32(self, name: str) -> bool:
        return bool(name) and self.types.get(name) == F32

    def _node(self, scope: _Scope, node: OnnxNode) -> None:
        g = scope.g
        f_in = [i for i, name in enumerate(node.input) if self._is_f32(name)]
        f_out = [j for j, name in enumerate(node.output) if self._is_f32(name)]
        makes_float = _float_attrs(node)
        if not (f_in or f_out or makes_float or node.subgraphs):
            return
        keep = self.keep(node)
        if keep:
            self.kept[node.op_type] = self.kept.get(node.op_type, 0) + 1
        want = F32 if keep else F16
        schema = None if keep or not node.standard else _schema(node)
        inputs = list(node.input)
        if not keep and not f_out and not makes_float and not node.subgraphs:
            # a node writing no float (Shape, a Cast to int, a comparison): it reads what its
            # inputs hold when they agree and it has a kernel for that
            kinds = {scope.kind_of(node.input[i]) for i in f_in}
            if len(kinds) == 1 and has_kernel(node.op_type, "float16" if F16 in kinds
                                              else "float32"):
                return
        for i in f_in:
            target = want if schema is None or _takes_half(schema.inputs, i) else F32
            if scope.kind_of(inputs[i]) != target:
                inputs[i] = self._copy(scope, inputs[i], target, node)
        if inputs != list(node.input):
            g.set_inputs(node, inputs)
        if not keep:
            self._retype_attrs(scope, node)
        if node.subgraphs:
            self._bodies(scope, node)
        for j in f_out:
            out = node.output[j]
            kind = want if schema is None or _takes_half(schema.outputs, j) else F32
            scope.kind[out] = kind
            if node.op_type == "Cast" and not keep and f_in and kind == F16:
                scope.copies[(out, F32)] = node.input[0]   # a float32 Cast to float32: the same
            asked = scope.outputs.get(out)
            if asked is not None and asked != kind:
                self._retype_output(scope, node, j, asked)

    def _retype_attrs(self, scope: _Scope, node: OnnxNode) -> None:
        g = scope.g
        for key in ("to", "dtype"):
            if node.attr(key) == F32 and node.op_type in ("Cast", "EyeLike"):
                g.set_attr(node, key, F16)
        for key in ("value",):
            value = node.attr(key)
            if isinstance(value, onnx.TensorProto) and value.data_type == F32 \
                    and node.op_type in ("Constant", "ConstantOfShape"):
                half = numpy_helper.from_array(to_half(numpy_helper.to_array(value)), value.name)
                g.set_attr(node, key, half)
        if node.op_type == "Constant":
            for key in ("value_float", "value_floats"):
                value = node.attr(key)
                if value is not None:
                    g.set_attr(node, key, None)
                    g.set_attr(node, "value", numpy_helper.from_array(
                        to_half(np.asarray(value, dtype=np.float32)), ""))

    def _copy(self, scope: _Scope, name: str, want: int, reader: OnnxNode) -> str:
        """`name` holding `want` (its copy, made once per scope and shared)."""
        found = scope.copy_of(name, want)
        if found is not None:
            return found
        g, copy = scope.g, None
        if name in self.top.initializers and scope.kind_of(name) == F32 and want == F16:
            copy = self.top.add_initializer(to_half(self.top.initializers[name]), f"{name}/fp16")
        else:
            source = g.producer(name)
            if source is not None and source.op_type == "Cast" and source.input \
                    and self.types.get(source.input[0]) not in (None, F16, F32):
                copy = g.add_node("Cast", [source.input[0]],
                                  [g.fresh(f"{name}/{_word(want)}")], after=source,
                                  to=want).output[0]
            else:
                copy = g.add_node("Cast", [name], [g.fresh(f"{name}/{_word(want)}")],
                                  before=reader if source is None else None,
                                  after=source, to=want).output[0]
            self.casts += 1
        scope.copies[(name, want)] = copy
        scope.copies[(copy, scope.kind_of(name))] = name
        scope.kind[copy] = want
        return copy

    def _retype_output(self, scope: _Scope, node: OnnxNode, index: int, asked: int) -> None:
        """Graph output `node.output[index]` written in the type asked: `node` writes a new
        name, a Cast writes the output; later readers of the old meaning read the new name."""
        g = scope.g
        out = node.output[index]
        had = scope.kind[out]
        inner = g.fresh(f"{out}/{_word(had)}")
        users = g.uses(out)
        g.rename_output(node, index, inner)
        g.add_node("Cast", [inner], [out], after=node, to=asked)
        self.casts += 1
        for user, position in users:
            g.set_input(user, position, inner)
        scope.kind[out], scope.kind[inner] = asked, had
        scope.copies[(out, had)] = inner

    # -- subgraphs ---------------------------------------------------------------------------
    def _bodies(self, scope: _Scope, node: OnnxNode) -> None:
        for key in sorted(node.attrs):
            body = node.attr(key)
            single = isinstance(body, onnx.GraphProto)
            bodies = [body] if single else list(body) if isinstance(body, (list, tuple)) \
                and body and all(isinstance(b, onnx.GraphProto) for b in body) else []
            if not bodies:
                continue
            new = [self._body(scope, sub) for sub in bodies]
            scope.g.set_attr(node, key, new[0] if single else new)

    def _body(self, scope: _Scope, body: onnx.GraphProto) -> onnx.GraphProto:
        try:
            graph = OnnxGraph.from_protos(body.node, self.top.fresh,
                                          inputs=[v.name for v in body.input],
                                          outputs=[v.name for v in body.output],
                                          initializers=self.top.initializers, open_scope=True)
        except GraphInvariantError:
            return body
        floats = {v.name for v in list(body.input) + list(body.output) if _is_float32_info(v)}
        for v in body.input:
            if v.name in floats:
                self.types[v.name] = F32
        inner = _Scope(graph, scope, outputs={n: F16 for n in graph.outputs if n in floats})
        for name in graph.inputs:
            if name in floats:
                inner.kind[name] = F16
        self._graph(inner)
        new = onnx.GraphProto()
        new.CopyFrom(body)
        new.ClearField("node")
        new.node.extend(graph.to_protos())
        for info in list(new.input) + list(new.output):
            if info.name in floats:
                info.type.tensor_type.elem_type = F16
        for info in new.value_info:
            if _is_float32_info(info) and inner.kind.get(info.name) == F16:
                info.type.tensor_type.elem_type = F16
        return new


def _is_float32_info(info: onnx.ValueInfoProto) -> bool:
    return info.type.WhichOneof("value") == "tensor_type" \
        and info.type.tensor_type.elem_type == F32


def _float_attrs(node: OnnxNode) -> bool:
    """Whether an attribute makes the node write float32 (Cast to float, a float Constant)."""
    if not node.attrs:
        return False
    if node.op_type in ("Cast", "EyeLike"):
        return node.attr("to") == F32 or node.attr("dtype") == F32
    if node.op_type in ("Constant", "ConstantOfShape"):
        value = node.attr("value")
        return (isinstance(value, onnx.TensorProto) and value.data_type == F32) \
            or node.attr("value_float") is not None or node.attr("value_floats") is not None
    return False


def _word(kind: int) -> str:
    return "fp16" if kind == F16 else "float32"
