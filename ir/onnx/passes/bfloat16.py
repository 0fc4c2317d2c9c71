"""bfloat16 on onnxruntime's CPU backend: a node that reads or writes bfloat16 tensors and whose
op has no bfloat16 CPU kernel computes in float32 instead, its bfloat16 inputs cast to float32
(initializers converted here) and its bfloat16 outputs cast back, so every result is rounded to
bfloat16 where TensorFlow rounds it. Ops that do have bfloat16 kernels (casts, reshapes,
transposes, gathers, slices, control flow) are left alone. Types come from onnx's type
inference over the lowered graph, filled in with the IR's dtypes."""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional

import numpy as np
import onnx
from onnx import helper

from tf2ir.ir.onnx.kernels import OPSET as KERNEL_OPSET, bfloat16_ops
from tf2ir.ir.onnx.passes.lowered import LoweredGraph
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


def compute_bfloat16_in_float32(g: LoweredGraph) -> int:
    """Run the bfloat16 nodes that onnxruntime's CPU backend has no kernel for in float32;
    return how many nodes were rewritten."""
    if not _has_bfloat16(g):
        return 0
    types = infer_elem_types(g)
    return _rewrite(g, g.nodes, types, {})


def _has_bfloat16(g: LoweredGraph) -> bool:
    return "bfloat16" in g.dtypes.values() \
        or any(_is_bfloat16_array(a) for a in g.initializers.values()) \
        or any(_dtype_attr(n) == BF16 for n in _all_nodes(g.nodes))


def _is_bfloat16_array(array: np.ndarray) -> bool:
    return np.asarray(array).dtype.name == "bfloat16"


def _all_nodes(nodes: Iterable[onnx.NodeProto]) -> Iterable[onnx.NodeProto]:
    for node in nodes:
        yield node
        for sub in _subgraphs(node):
            yield from _all_nodes(sub.node)


def _subgraphs(node: onnx.NodeProto) -> List[onnx.GraphProto]:
    return [sub for attr in node.attribute
            for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else [])]


def _dtype_attr(node: onnx.NodeProto) -> Optional[int]:
    for attr in node.attribute:
        if attr.name in _DTYPE_ATTRS and attr.type == onnx.AttributeProto.INT:
            return attr.i
    return None


# -- types ------------------------------------------------------------------------------------
def infer_elem_types(g: LoweredGraph) -> Dict[str, int]:
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
    domains = sorted({n.domain for n in _all_nodes(g.nodes) if n.domain not in ("", "ai.onnx")})
    model = helper.make_model(
        helper.make_graph(g.nodes, "types", declared, outputs),
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
        for sub in _subgraphs(node):
            yield from _value_infos(sub)


# -- the rewrite --------------------------------------------------------------------------------
def _rewrite(g: LoweredGraph, nodes, types: Dict[str, int],
             in_float: Dict[str, str]) -> int:
    """Rewrite `nodes` (one graph's node list or repeated field, in place); `in_float` maps a bfloat16 name to its
    float32 copy made in this graph or an enclosing one."""
    rewritten = 0
    out: List[onnx.NodeProto] = []
    for node in nodes:
        for sub in _subgraphs(node):
            rewritten += _rewrite(g, sub.node, types, dict(in_float))
        if not _needs_float32(node, types):
            out.append(node)
            continue
        for i, name in enumerate(node.input):
            if name and types.get(name) == BF16:
                node.input[i] = _float_copy(g, name, in_float, out)
        casts_back = []
        for j, name in enumerate(node.output):
            if name and types.get(name) == BF16:
                wide = g.fresh(f"{name}/float32")
                types[wide] = FLOAT
                node.output[j] = wide
                casts_back.append(g.make_node("Cast", [wide], [name], to=BF16))
        for attr in node.attribute:
            if attr.name in _DTYPE_ATTRS and attr.type == onnx.AttributeProto.INT \
                    and attr.i == BF16:
                attr.i = FLOAT
        out.append(node)
        out.extend(casts_back)
        rewritten += 1
    if isinstance(nodes, list):
        nodes[:] = out
    elif rewritten:       # a subgraph's repeated field: refilled with copies
        copies = [onnx.NodeProto() for _ in out]
        for copy, node in zip(copies, out):
            copy.CopyFrom(node)
        del nodes[:]
        nodes.extend(copies)
    return rewritten


def _needs_float32(node: onnx.NodeProto, types: Dict[str, int]) -> bool:
    if node.domain not in ("", "ai.onnx") or node.op_type in BFLOAT16_CPU_KERNELS:
        return False
    return any(name and types.get(name) == BF16 for name in list(node.input) + list(node.output)) \
        or _dtype_attr(node) == BF16


def _float_copy(g: LoweredGraph, name: str, in_float: Dict[str, str],
                out: List[onnx.NodeProto]) -> str:
    """The float32 copy of bfloat16 tensor `name`: an initializer converted now, or a Cast
    placed before the node being rewritten (made once per graph and shared)."""
    if name not in in_float:
        if name in g.initializers:
            in_float[name] = g.add_initializer(
                np.asarray(g.initializers[name]).astype(np.float32), f"{name}/float32")
        else:
            wide = g.fresh(f"{name}/float32")
            out.append(g.make_node("Cast", [name], [wide], to=FLOAT))
            in_float[name] = wide
    return in_float[name]
