"""Reshape simplification on the lowered ONNX graph.

Keras layers reshape with a target computed at run time from the input's own shape
(Shape -> Slice -> Squeeze -> Unsqueeze -> Concat -> Reshape keeps a symbolic batch dim).
When every run-time entry of the target is the input's dim at the same position, the
target becomes a constant with 0 there (ONNX Reshape's "copy this dim"), and the shape
subgraph dies. A Transpose right after a Reshape to a constant shape that only moves size-1
dims (the non-1 dims keep their order) is a Reshape too, and is merged into it.

Keras 3's Dense on a rank-r input (r > 2) freezes as a tensordot: Reshape x to
(prod(x.shape[:-1]), K) with that product computed at run time, MatMul (a Gemm after
lowering) by W (K, N), Reshape back to x.shape[:-1] + (N,). ONNX MatMul broadcasts over
leading dims, so the three become MatMul(x, W) (+ the Gemm's bias) and the shape
arithmetic dies."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple, Union

import numpy as np
import onnx

from tf2ir.ir.onnx.passes.lowered import LoweredGraph, attr_value

Dim = Union[int, Tuple[str, int], Tuple[str, tuple]]
# a known int; (value name, axis): that dim; ("*", dims): the product of dims


class _ShapeValues:
    """Evaluates 1-D/0-D integer tensors computed from shapes, as lists of Dims."""

    def __init__(self, g: LoweredGraph):
        self.g = g
        self.producer = g.producers()
        self.memo: Dict[str, Optional[List[Dim]]] = {}

    def value(self, name: str) -> Optional[List[Dim]]:
        if name not in self.memo:
            self.memo[name] = None            # cycles cannot happen; this guards recursion
            self.memo[name] = self._evaluate(name)
        return self.memo[name]

    def _ints(self, name: str) -> Optional[List[int]]:
        c = self.g.const(name)
        if c is None or c.dtype.kind not in "iu" or c.ndim > 1:
            return None
        return [int(v) for v in c.reshape(-1)]

    def _evaluate(self, name: str) -> Optional[List[Dim]]:
        ints = self._ints(name)
        if ints is not None:
            return list(ints)
        node = self.producer.get(name)
        if node is None or node.domain not in ("", "ai.onnx"):
            return None
        op = node.op_type
        if op == "Shape":
            rank = self.g.rank(node.input[0])
            if rank is None:
                return None
            start, end = attr_value(node, "start", 0), attr_value(node, "end", rank)
            dims: List[Dim] = [(node.input[0], i) for i in range(rank)]
            return dims[slice(start, end)]
        if op in ("Cast", "Identity", "Squeeze", "Unsqueeze", "Reshape"):
            if op == "Cast" and attr_value(node, "to") not in (6, 7):
                return None
            inner = self.value(node.input[0])
            # 1-element tensors only for (Un)Squeeze/Reshape: the list form has no rank.
            if inner is None or (op not in ("Cast", "Identity") and len(inner) != 1):
                return None
            return inner
        if op == "Concat":
            parts = [self.value(i) for i in node.input]
            known = [p for p in parts if p is not None]
            return None if len(known) != len(parts) else [d for p in known for d in p]
        if op == "Slice":
            inner = self.value(node.input[0])
            starts, ends = self._ints(node.input[1]), self._ints(node.input[2])
            axes = self._ints(node.input[3]) if len(node.input) > 3 and node.input[3] else [0]
            steps = self._ints(node.input[4]) if len(node.input) > 4 and node.input[4] else [1]
            if inner is None or starts is None or ends is None or axes not in ([0], [-1]) \
                    or steps is None or len(starts) != 1 or len(ends) != 1 or len(steps) != 1:
                return None
            return inner[slice(starts[0], ends[0], steps[0])]
        if op == "ReduceProd":
            inner = self.value(node.input[0])
            axes = self._ints(node.input[1]) if len(node.input) > 1 and node.input[1] \
                else attr_value(node, "axes")
            if inner is None or (axes is not None and list(axes) not in ([0], [-1])):
                return None
            sizes = [d for d in inner if isinstance(d, int)]
            if len(sizes) == len(inner):
                return [int(np.prod(sizes))]
            return [inner[0] if len(inner) == 1 else ("*", tuple(inner))]
        if op == "Gather":
            inner, indices = self.value(node.input[0]), self._ints(node.input[1])
            if inner is None or indices is None or attr_value(node, "axis", 0) != 0:
                return None
            try:
                return [inner[i] for i in indices]
            except IndexError:
                return None
        return None


def _constant_target(g: LoweredGraph, shapes: _ShapeValues, node: onnx.NodeProto) -> bool:
    """A run-time target whose entries are constants or the input's own dim at the same
    position becomes a constant one (0: copy that dim). A run-time target is lowered with
    allowzero=1 (TF's 0 is a 0); with no literal 0 among the entries the flag means nothing
    and goes, so copies can be written as 0; with a literal 0 and a copy there is no form."""
    if g.const(node.input[1]) is not None:
        return False
    target = shapes.value(node.input[1])
    if target is None:
        return False
    out, copies = [], False
    for position, dim in enumerate(target):
        if isinstance(dim, int):
            out.append(dim)
        elif dim == (node.input[0], position):
            out.append(0)
            copies = True
        else:
            return False
    literal_zero = any(d == 0 for d in target if isinstance(d, int))
    if attr_value(node, "allowzero", 0):
        if literal_zero and copies:
            return False
        if not literal_zero:
            kept = [a for a in node.attribute if a.name != "allowzero"]
            del node.attribute[:]
            node.attribute.extend(kept)
    node.input[1] = g.add_initializer(np.array(out, np.int64), f"{node.output[0]}/shape")
    return True


def _unit_dim_transpose(target: List[int], perm: List[int]) -> Optional[List[int]]:
    """The Reshape target equal to Transpose `perm` of a tensor reshaped to `target`,
    when the Transpose only moves size-1 dims; else None."""
    if len(perm) != len(target) or any(d < 0 for d in target):
        return None
    moved = [target[p] for p in perm]
    order = [p for p in perm if target[p] != 1]
    if order != sorted(order) or any(d == 0 and perm[i] != i for i, d in enumerate(moved)):
        return None
    return moved


def _only_user(g: LoweredGraph, users, name: str, op_types) -> Optional[onnx.NodeProto]:
    after = users.get(name, [])
    if name in g.pinned or len(after) != 1 or after[0].op_type not in op_types \
            or after[0].domain not in ("", "ai.onnx"):
        return None
    return after[0]


def _tensordot_weights(g: LoweredGraph, matmul: onnx.NodeProto):
    """(W as (K, N), bias or None) of a MatMul/Gemm by a constant 2-D W; None otherwise."""
    w = g.const(matmul.input[1])
    if w is None or w.ndim != 2:
        return None
    if matmul.op_type == "MatMul":
        return w, None
    if attr_value(matmul, "transA", 0) or attr_value(matmul, "alpha", 1.0) != 1.0:
        return None
    w = w.T if attr_value(matmul, "transB", 0) else w
    bias = g.const(matmul.input[2]) if len(matmul.input) > 2 and matmul.input[2] else None
    if len(matmul.input) > 2 and matmul.input[2] and (bias is None or bias.size != w.shape[1]):
        return None
    if bias is not None:
        bias = (bias * np.asarray(attr_value(matmul, "beta", 1.0), bias.dtype)).reshape(-1)
    return w, bias


def _fold_tensordot(g: LoweredGraph, shapes: _ShapeValues, users, first: onnx.NodeProto,
                    dead: List[int]) -> bool:
    """Reshape(x, [prod(x dims but the last), K]) -> MatMul/Gemm by W -> Reshape(., x dims
    but the last + [N]) becomes MatMul(x, W) (+ bias Add); see the module doc."""
    x, rank = first.input[0], g.rank(first.input[0])
    matmul = _only_user(g, users, first.output[0], ("MatMul", "Gemm"))
    if rank is None or rank < 3 or matmul is None or matmul.input[0] != first.output[0]:
        return False
    second = _only_user(g, users, matmul.output[0], ("Reshape",))
    weights = _tensordot_weights(g, matmul)
    # (allowzero does not matter: the restored target's entries are x's own dims and N)
    if second is None or weights is None:
        return False
    w, bias = weights
    # Keras transposes x by the identity permutation first and may read either shape.
    names = [x]
    before = shapes.producer.get(x)
    if before is not None and (before.op_type == "Identity" or (
            before.op_type == "Transpose" and list(attr_value(before, "perm", [])) == list(range(rank)))):
        names.append(before.input[0])
    flat, restored = shapes.value(first.input[1]), shapes.value(second.input[1])
    if flat is None or restored is None or len(flat) != 2:
        return False

    def restores(name):
        lead = [(name, i) for i in range(rank - 1)]
        return flat[0] == ("*", tuple(lead)) and flat[1] in (w.shape[0], (name, rank - 1)) \
            and restored == lead + [w.shape[1]]
    if not any(restores(name) for name in names):
        return False
    x = names[-1]
    y = second.output[0]
    product = g.fresh(f"{y}/matmul") if bias is not None else y
    replacement = [g.make_node("MatMul", [x, g.add_initializer(w, f"{y}/weight")], [product])]
    if bias is not None:
        replacement.append(g.make_node("Add", [product, g.add_initializer(bias, f"{y}/bias")], [y]))
    g.ranks[product] = g.ranks[y] = rank
    at = next(i for i, n in enumerate(g.nodes) if n is second)
    g.nodes[at:at + 1] = replacement
    dead += [id(first), id(matmul), id(second)]
    return True


def simplify_reshapes(g: LoweredGraph) -> int:
    """Tensordot folds, constant Reshape targets and Reshape+Transpose merges; return how
    many rewrites."""
    if not any(node.op_type == "Reshape" for node in g.nodes):
        return 0
    shapes = _ShapeValues(g)
    users = g.consumers()
    count = 0
    dead: List[int] = []     # ids of the nodes to remove
    for node in list(g.nodes):
        if node.op_type != "Reshape" or node.domain not in ("", "ai.onnx") or len(node.input) < 2 \
                or id(node) in dead:
            continue
        if _fold_tensordot(g, shapes, users, node, dead):
            count += 1
            continue
        if _constant_target(g, shapes, node):
            count += 1
        target = g.const(node.input[1])
        y = node.output[0]
        after = users.get(y, [])
        if target is None or y in g.pinned or len(after) != 1 or after[0].op_type != "Transpose":
            continue
        transpose = after[0]
        perm = attr_value(transpose, "perm")
        moved = _unit_dim_transpose([int(d) for d in target], list(perm or []))
        if moved is None:
            continue
        node.input[1] = g.add_initializer(np.array(moved, np.int64), f"{y}/shape")
        node.output[0] = transpose.output[0]
        dead.append(id(transpose))
        count += 1
    g.keep_only(dead)
    return count
