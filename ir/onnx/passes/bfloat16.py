"""bfloat16 on onnxruntime's CPU backend: a node that reads or writes bfloat16 tensors and whose
op has no bfloat16 CPU kernel computes in float32 instead, its bfloat16 inputs cast to float32
(initializers converted here) and its bfloat16 outputs cast back, so every result is rounded to
bfloat16 where TensorFlow rounds it. Ops that do have bfloat16 kernels (casts, reshapes,
transposes, gathers, slices, control flow) are left alone. Types come from onnx's type
inference over the lowered graph, filled in with the IR's dtypes. The rewrite goes through
the graph's verbs: a Cast to float32 lands before the first node it serves, the node writes a
new name and a Cast back writes the old one; an If branch or Loop body is rewritten as a graph
of its own (its outer names open) and given back to its owner by set_attr."""

from __future__ import annotations

from typing import Callable, Dict, Iterable, Optional

import numpy as np
import onnx
from onnx import helper

from tf2ir.ir.onnx.graph import GraphInvariantError, OnnxGraph, OnnxNode
from tf2ir.ir.onnx.kernels import OPSET as KERNEL_OPSET, bfloat16_ops
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import dtype_of_numpy

BF16, FLOAT = onnx.TensorProto.BFLOAT16, onnx.TensorProto.FLOAT
OPSET = KERNEL_OPSET    # the opset compile.py writes; the kernel table is for its op versions

# The standard ops whose onnxruntime CPU kernel takes bfloat16 for the op's version at opset 18:
# ir/onnx/kernels.py's table (checked against the installed onnxruntime by
# tests/ir/test_kernel_table.py, and against onnxruntime's kernel registry by
# tests/ir/onnx/test_pass_bfloat16.py).
BFLOAT16_CPU_KERNELS = bfloat16_ops()
# Attributes that make an op's output bfloat16 without a bfloat16 input (EyeLike, RandomNormal).
_DTYPE_ATTRS = ("dtype", "to")


def compute_bfloat16_in_float32(g: OnnxGraph) -> int:
    """Run the bfloat16 nodes that onnxruntime's CPU backend has no kernel for in float32;
    return how many nodes were rewritten (subgraphs' included)."""
    if not _has_bfloat16(g):
        return 0
    types = infer_elem_types(g)
    return _rewrite(g, g, types, {})


def _has_bfloat16(g: OnnxGraph) -> bool:
    return "bfloat16" in g.dtypes.values() \
        or any(_is_bfloat16_array(a) for a in g.initializers.values()) \
        or any(BF16 in _dtype_attrs(n).values() for n in _all_nodes(g) if n.attrs)


def _is_bfloat16_array(array: np.ndarray) -> bool:
    return np.asarray(array).dtype.name == "bfloat16"


def _all_nodes(nodes: Iterable[OnnxNode]) -> Iterable[OnnxNode]:
    """`nodes` and the nodes of their subgraphs (read as OnnxNodes), depth first."""
    for node in nodes:
        yield node
        for sub in node.subgraphs:
            yield from _all_nodes(OnnxNode.from_proto(p) for p in sub.node)


def _dtype_attrs(node: OnnxNode) -> Dict[str, int]:
    """The node's integer dtype attributes (Cast's `to`, EyeLike's `dtype`, ...)."""
    found = {}
    for key in _DTYPE_ATTRS:
        value = node.attr(key)
        if isinstance(value, int) and not isinstance(value, bool):
            found[key] = value
    return found


# -- types ------------------------------------------------------------------------------------
def infer_elem_types(g: OnnxGraph) -> Dict[str, int]:
    """ONNX element type of every tensor name whose type is known: the IR's dtypes, the
    initializers', and what onnx's type inference finds (subgraphs included)."""
    types: Dict[str, int] = {name: int(ONNX_DTYPES[d]) for name, d in g.dtypes.items()
                             if d in ONNX_DTYPES}
    for name, array in g.initializers.items():
        try:
            types[name] = int(ONNX_DTYPES[dtype_of_numpy(np.asarray(array).dtype)])
        except (ValueError, KeyError):
            pass
    if any(name not in types for name in list(g.inputs) + list(g.initializers)):
        return types      # onnx's inference can crash (not raise) on undeclared outer names
    declared = [helper.make_tensor_value_info(name, types[name], None)
                for name in list(g.inputs) + list(g.initializers)]
    outputs = [helper.make_tensor_value_info(name, types[name], None)
               for name in g.outputs if name in types]
    domains = sorted({n.domain for n in _all_nodes(g) if not n.standard})
    model = helper.make_model(     # a read-only copy for onnx's inference
        helper.make_graph(g.to_protos(), "types", declared, outputs),
        opset_imports=[helper.make_opsetid("", OPSET)]
        + [helper.make_opsetid(d, 1) for d in domains])
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception:     # an unknown op or an inconsistent graph: the IR's types alone
        return types
    for info in _value_infos(inferred.graph):
        kind = info.type.WhichOneof("value")
        if kind == "tensor_type" and info.type.tensor_type.elem_type:
            types.setdefault(info.name, info.type.tensor_type.elem_type)
    return types


def _value_infos(graph: onnx.GraphProto) -> Iterable[onnx.ValueInfoProto]:
    yield from graph.input
    yield from graph.output
    yield from graph.value_info
    for node in graph.node:
        for sub in OnnxNode.from_proto(node).subgraphs:
            yield from _value_infos(sub)


# -- the rewrite --------------------------------------------------------------------------------
def _rewrite(top: OnnxGraph, g: OnnxGraph, types: Dict[str, int],
             in_float: Dict[str, str]) -> int:
    """Rewrite the nodes of `g` (`top` itself or a subgraph body read as a graph: `top` holds
    the initializers); `in_float` maps a bfloat16 name to its float32 copy made in this graph
    or an enclosing one."""
    rewritten = 0
    for node in g.nodes:
        rewritten += _rewrite_bodies(top, g, node, types, in_float)
        if not _needs_float32(node, types):
            continue
        inputs = [_float_copy(top, g, name, in_float, node)
                  if name and types.get(name) == BF16 else name for name in node.input]
        g.set_inputs(node, inputs)
        last = node
        for j, name in enumerate(node.output):
            if name and types.get(name) == BF16:
                wide = g.fresh(f"{name}/float32")
                types[wide] = FLOAT
                g.rename_output(node, j, wide)
                last = g.add_node("Cast", [wide], [name], after=last, to=BF16)
        for key, value in _dtype_attrs(node).items():
            if value == BF16:
                g.set_attr(node, key, FLOAT)
        rewritten += 1
    return rewritten


def _rewrite_bodies(top: OnnxGraph, g: OnnxGraph, node: OnnxNode, types: Dict[str, int],
                    in_float: Dict[str, str]) -> int:
    """Rewrite the bodies of `node`'s graph attributes, each as a graph of its own (names it
    does not produce are outer ones), and give `node` the rewritten bodies."""
    rewritten = 0
    for key in sorted(node.attrs) if node.subgraphs else ():
        body = node.attr(key)
        bodies = [body] if isinstance(body, onnx.GraphProto) else list(body) \
            if isinstance(body, (list, tuple)) and body \
            and all(isinstance(b, onnx.GraphProto) for b in body) else []
        changed, new_bodies = 0, []
        for sub in bodies:
            graph = _body_graph(sub, g.fresh)
            count = _rewrite(top, graph, types, dict(in_float)) if graph is not None else 0
            new_bodies.append(_with_nodes(sub, graph.to_protos()) if count and graph is not None
                              else sub)
            changed += count
        if changed:
            g.set_attr(node, key, new_bodies[0] if isinstance(body, onnx.GraphProto)
                       else new_bodies)
            rewritten += changed
    return rewritten


def _body_graph(body: onnx.GraphProto, fresh: Callable[[str], str]) -> Optional[OnnxGraph]:
    try:
        return OnnxGraph.from_protos(body.node, fresh, inputs=[v.name for v in body.input],
                                     outputs=[v.name for v in body.output], open_scope=True)
    except GraphInvariantError:     # nodes out of order: left as they are
        return None


def _with_nodes(body: onnx.GraphProto, nodes: list) -> onnx.GraphProto:
    new = onnx.GraphProto()
    new.CopyFrom(body)
    new.ClearField("node")
    new.node.extend(nodes)
    return new


def _needs_float32(node: OnnxNode, types: Dict[str, int]) -> bool:
    if not node.standard or node.op_type in BFLOAT16_CPU_KERNELS:
        return False
    return any(name and types.get(name) == BF16 for name in node.input + node.output) \
        or BF16 in _dtype_attrs(node).values()


def _float_copy(top: OnnxGraph, g: OnnxGraph, name: str, in_float: Dict[str, str],
                reader: OnnxNode) -> str:
    """The float32 copy of bfloat16 tensor `name`: an initializer converted now, or a Cast
    placed before `reader`, the node being rewritten (made once per graph and shared)."""
    if name not in in_float:
        if name in top.initializers:
            in_float[name] = top.add_initializer(
                np.asarray(top.initializers[name]).astype(np.float32), f"{name}/float32")
        else:
            in_float[name] = g.add_node("Cast", [name], [g.fresh(f"{name}/float32")],
                                        before=reader, to=FLOAT).output[0]
    return in_float[name]
