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
arithmetic dies.

Every change goes through the graph's verbs: a constant target is set as the Reshape's input,
a merged Transpose's output is taken over by the Reshape, and a tensordot's last Reshape is
morphed into the MatMul (or the bias Add), so its output keeps its name and place."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple, Union

import numpy as np

from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode

Dim = Union[int, Tuple[str, int], Tuple[str, tuple]]
# a known int; (value name, axis): that dim; ("*", dims): the product of dims


class _ShapeValues:
    """Evaluates 1-D/0-D integer tensors computed from shapes, as lists of Dims."""

    def __init__(self, g: OnnxGraph):
        self.g = g
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
        node = self.g.producer(name)
        if node is None or not node.standard:
            return None
        op = node.op_type
        if op == "Shape":
            rank = self.g.rank(node.input[0])
            if rank is None:
                return None
            start, end = node.attr("start", 0), node.attr("end", rank)
            dims: List[Dim] = [(node.input[0], i) for i in range(rank)]
            return dims[slice(start, end)]
        if op in ("Cast", "Identity", "Squeeze", "Unsqueeze", "Reshape"):
            if op == "Cast" and node.attr("to") not in (6, 7):
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
                else node.attr("axes")
            if inner is None or (axes is not None and list(axes) not in ([0], [-1])):
                return None
            sizes = [d for d in inner if isinstance(d, int)]
            if len(sizes) == len(inner):
                return [int(np.prod(sizes))]
            return [inner[0] if len(inner) == 1 else ("*", tuple(inner))]
        if op == "Gather":
            inner, indices = self.value(node.input[0]), self._ints(node.input[1])
            if inner is None or indices is None or node.attr("axis", 0) != 0:
                return None
            try:
                return [inner[i] for i in indices]
            except IndexError:
                return None
        return None


def _constant_target(g: OnnxGraph, shapes: _ShapeValues, node: OnnxNode) -> bool:
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
    if node.attr("allowzero", 0):
        if literal_zero and copies:
            return False
        if not literal_zero:
            g.set_attr(node, "allowzero", None)
    g.set_input(node, 1, g.add_initializer(np.array(out, np.int64), f"{node.output[0]}/shape"))
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


def _only_user(g: OnnxGraph, name: str, op_types) -> Optional[OnnxNode]:
    user = g.only_user(name)
    if user is None or user.op_type not in op_types or not user.standard:
        return None
    return user


def _tensordot_weights(g: OnnxGraph, matmul: OnnxNode):
    """(W as (K, N), bias or None) of a MatMul/Gemm by a constant 2-D W; None otherwise."""
    w = g.const(matmul.input[1])
    if w is None or w.ndim != 2:
        return None
    if matmul.op_type == "MatMul":
        return w, None
    if matmul.attr("transA", 0) or matmul.attr("alpha", 1.0) != 1.0:
        return None
    w = w.T if matmul.attr("transB", 0) else w
    bias = g.const(matmul.input[2]) if len(matmul.input) > 2 and matmul.input[2] else None
    if len(matmul.input) > 2 and matmul.input[2] and (bias is None or bias.size != w.shape[1]):
        return None
    if bias is not None:
        bias = (bias * np.asarray(matmul.attr("beta", 1.0), bias.dtype)).reshape(-1)
    return w, bias


def _fold_tensordot(g: OnnxGraph, shapes: _ShapeValues, first: OnnxNode) -> bool:
    """Reshape(x, [prod(x dims but the last), K]) -> MatMul/Gemm by W -> Reshape(., x dims
    but the last + [N]) becomes MatMul(x, W) (+ bias Add); see the module doc."""
    x, rank = first.input[0], g.rank(first.input[0])
    matmul = _only_user(g, first.output[0], ("MatMul", "Gemm"))
    if rank is None or rank < 3 or matmul is None or matmul.input[0] != first.output[0]:
        return False
    second = _only_user(g, matmul.output[0], ("Reshape",))
    weights = _tensordot_weights(g, matmul)
    # (allowzero does not matter: the restored target's entries are x's own dims and N)
    if second is None or weights is None or len(second.input) < 2:
        return False
    w, bias = weights
    # Keras transposes x by the identity permutation first and may read either shape.
    names = [x]
    before = g.producer(x)
    if before is not None and before.standard and (before.op_type == "Identity" or (
            before.op_type == "Transpose"
            and list(before.attr("perm", [])) == list(range(rank)))):
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
    weight = g.add_initializer(w, f"{y}/weight")
    if bias is None:            # the last Reshape becomes the MatMul: y keeps its place
        g.set_op(second, "MatMul", [x, weight], attrs={})
    else:
        product = g.add_node("MatMul", [x, weight], before=second).output[0]
        g.ranks[product] = rank
        g.set_op(second, "Add", [product, g.add_initializer(bias, f"{y}/bias")], attrs={})
    g.ranks[y] = rank
    g.remove(matmul)            # read by `second` alone, which reads x now
    g.remove(first)
    return True


def simplify_reshapes(g: OnnxGraph) -> int:
    """Tensordot folds, constant Reshape targets and Reshape+Transpose merges; return how
    many rewrites."""
    reshapes = g.of_type("Reshape")
    if not reshapes:
        return 0
    shapes = _ShapeValues(g)
    count = 0
    for node in reshapes:
        if node.graph is not g or node.op_type != "Reshape" or len(node.input) < 2:
            continue            # a tensordot's Reshape folded already
        if _fold_tensordot(g, shapes, node):
            count += 1
            continue
        if _constant_target(g, shapes, node):
            count += 1
        target = g.const(node.input[1])
        y = node.output[0]
        transpose = _only_user(g, y, ("Transpose",))
        if target is None or transpose is None:
            continue
        moved = _unit_dim_transpose([int(d) for d in target],
                                    list(transpose.attr("perm") or []))
        if moved is None:
            continue
        # the Reshape takes over the Transpose's output (y is read by the Transpose alone)
        t = transpose.output[0]
        g.remove(transpose, keep_uses=True)
        g.rename_output(node, 0, t)
        g.set_input(node, 1, g.add_initializer(np.array(moved, np.int64), f"{y}/shape"))
        count += 1
    return count
