"""Layout: transpose sinking on the lowered ONNX graph (DESIGN decision 8).

Lowerings of format-sensitive ops (Conv, pooling, ...) wrap the channels-first ONNX op in
NHWC->NCHW and NCHW->NHWC Transposes. This pass pushes every Transpose down through
layout-agnostic consumers - elementwise ops (broadcast constants permuted), Concat and
Split (axis remapped), reductions and softmax (axes remapped), Pad (pads permuted), Slice
(axes remapped) - and merges it with the next Transpose, so the NCHW->NHWC after one Conv
cancels the NHWC->NCHW before the next. A node is pushed through only when at least as
many of its inputs carry the Transpose as would need an inverse Transpose inserted, and
the whole pass is undone (g.snapshot/g.restore) if it would leave more Transposes than it
found. Every change goes through the graph's verbs: a Transpose put after a node produces the
node's old output name (the node writes a fresh one), an inverse Transpose goes just before
the node that reads it, and a Transpose left unread goes at once.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode

MAX_SWEEPS = 4

UNARY = {"Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "BitwiseNot", "Cast", "Ceil",
         "Celu", "Cos", "Cosh", "Elu", "Erf", "Exp", "Floor", "Gelu", "HardSigmoid", "HardSwish",
         "Identity", "IsInf", "IsNaN", "LeakyRelu", "Log", "Mish", "Neg", "Not", "Reciprocal",
         "Relu", "Round", "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus",
         "Softsign", "Sqrt", "Tan", "Tanh", "ThresholdedRelu"}
BROADCASTING = {"Add", "And", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Div", "Equal",
                "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Max", "Mean", "Min", "Mod",
                "Mul", "Or", "Pow", "PRelu", "Sub", "Sum", "Where", "Xor"}
REDUCE = {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
          "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"}


def inverse(perm: Sequence[int]) -> List[int]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def is_identity(perm: Sequence[int]) -> bool:
    return all(i == p for i, p in enumerate(perm))


class _Plan:
    """What pushing Transpose `perm` through one node changes: its data inputs (by index),
    and per output the Transpose to put after it (None: none needed)."""

    def __init__(self, perm: List[int], data: List[int], broadcast: bool = True):
        self.perm, self.data, self.broadcast = perm, data, broadcast
        self.edits: List[Callable[[], None]] = []
        self.out_perms: List[Optional[List[int]]] = []


def _axis_plan(g, node, perm, attr, default, data=(0,)):
    plan = _Plan(perm, list(data))
    axis = node.attr(attr, default) % len(perm)
    plan.edits.append(lambda: g.set_attr(node, attr, perm[axis]))
    plan.out_perms = [perm] * len(node.output)
    return plan


def _reduced_perm(perm: List[int], axes: List[int]) -> Optional[List[int]]:
    """The Transpose after a keepdims=0 reduction over y-axes `axes` of y = T(x, perm)."""
    kept = [perm[k] for k in range(len(perm)) if k not in axes]
    order = sorted(kept)
    out = [order.index(a) for a in kept]
    return None if is_identity(out) else out


def _plan(g: OnnxGraph, node: OnnxNode, perm: List[int]) -> Optional[_Plan]:
    op, rank = node.op_type, len(perm)
    present = [i for i, name in enumerate(node.input) if name]
    if op in UNARY or op in BROADCASTING:
        plan = _Plan(perm, present)
        plan.out_perms = [perm]
        return plan
    if op in ("QuantizeLinear", "DequantizeLinear"):     # elementwise; a per-axis scale's
        plan = _Plan(perm, [0])                            # axis follows (--quantized qdq)
        if g.rank(node.input[1]) == 1:
            axis = node.attr("axis", 1) % rank
            plan.edits.append(lambda: g.set_attr(node, "axis", perm[axis]))
        plan.out_perms = [perm]
        return plan
    if op == "Clip":
        for name in node.input[1:]:
            bound = g.const(name)
            if name and g.rank(name) != 0 and (bound is None or bound.size != 1):
                return None
        plan = _Plan(perm, [0])
        plan.out_perms = [perm]
        return plan
    if op == "Concat":
        plan = _axis_plan(g, node, perm, "axis", 0, present)
        plan.broadcast = False
        return plan
    if op == "Split":
        return _axis_plan(g, node, perm, "axis", 0)
    if op in ("Softmax", "LogSoftmax", "Hardmax"):
        return _axis_plan(g, node, perm, "axis", -1)
    if op in ("ArgMax", "ArgMin"):
        axis = node.attr("axis", 0) % rank
        plan = _Plan(perm, [0])
        plan.edits.append(lambda: g.set_attr(node, "axis", perm[axis]))
        plan.out_perms = [perm if node.attr("keepdims", 1) else _reduced_perm(perm, [axis])]
        return plan
    if op in REDUCE:
        return _reduce_plan(g, node, perm)
    if op == "Pad":
        pads = g.const(node.input[1]) if len(node.input) > 1 else None
        if pads is None or pads.size != 2 * rank or (len(node.input) > 3 and node.input[3]):
            return None
        begins, ends = pads[:rank], pads[rank:]
        new = np.empty_like(pads)
        for k in range(rank):
            new[perm[k]], new[rank + perm[k]] = begins[k], ends[k]
        plan = _Plan(perm, [0])
        plan.edits.append(lambda: g.set_input(node, 1, g.add_initializer(new, "pads_permuted")))
        plan.out_perms = [perm]
        return plan
    if op == "Unsqueeze" and len(node.input) == 2:
        return _unsqueeze_plan(g, node, perm)
    if op == "Squeeze" and len(node.input) == 2:
        axes = g.const(node.input[1])
        if axes is None:
            return None
        squeezed = sorted({int(a) % rank for a in axes.reshape(-1)})
        new = np.array(sorted(perm[a] for a in squeezed), np.int64)
        plan = _Plan(perm, [0])
        plan.edits.append(lambda: g.set_input(node, 1, g.add_initializer(new, "axes_permuted")))
        plan.out_perms = [_reduced_perm(perm, squeezed)]
        return plan
    if op == "Slice" and len(node.input) >= 3:
        starts = g.const(node.input[1])
        axes = g.const(node.input[3]) if len(node.input) > 3 and node.input[3] else None
        if axes is None and (len(node.input) > 3 and node.input[3] or starts is None):
            return None
        if axes is None:
            assert starts is not None     # (checked just above)
            axes = np.arange(starts.size)
        new = np.array([perm[int(a) % rank] for a in axes.reshape(-1)], np.int64)
        plan = _Plan(perm, [0])

        def edit():
            while len(node.input) < 4:
                g.set_input(node, len(node.input), "")
            g.set_input(node, 3, g.add_initializer(new, "axes_permuted"))
        plan.edits.append(edit)
        plan.out_perms = [perm]
        return plan
    return None


def _unsqueeze_plan(g, node, perm):
    """y = Unsqueeze(T(x, perm), axes) as T(Unsqueeze(x, axes'), perm'). The new unit axes
    may sit anywhere in Unsqueeze(x, ...): where y's only reader is a Transpose that the
    order makes cancel (Conv1D's NWC -> N1WC -> NCHW), that order; else each new axis follows
    the dim of x it follows in y."""
    axes = g.const(node.input[1])
    if axes is None:
        return None
    out_rank = len(perm) + axes.size
    new = {int(a) % out_rank for a in axes.reshape(-1)}
    if len(new) != axes.size:
        return None
    dims = iter(perm)
    tokens = [None if i in new else next(dims) for i in range(out_rank)]   # x's dim, or new
    order = None                      # z = Unsqueeze(x, axes'): z's dim k is y's dim order[k]
    readers = g.users(node.output[0])
    if len(readers) == 1 and readers[0].op_type == "Transpose" and readers[0].standard \
            and not g.is_pinned(node.output[0]):
        after = readers[0].attr("perm")
        if after is not None and sorted(after) == list(range(out_rank)):
            kept = [tokens[i] for i in after if tokens[i] is not None]
            order = list(after) if kept == sorted(kept) else None
    if order is None:
        keys, before = {}, -1
        for i, token in enumerate(tokens):
            if token is not None:
                before = token
            keys[i] = (token, 0, i) if token is not None else (before, 1, i)
        order = sorted(range(out_rank), key=lambda i: keys[i])
    axes_z = np.array([k for k, i in enumerate(order) if tokens[i] is None], np.int64)
    out_perm = [order.index(i) for i in range(out_rank)]
    plan = _Plan(perm, [0])
    plan.edits.append(lambda: g.set_input(node, 1, g.add_initializer(axes_z, "axes_permuted")))
    plan.out_perms = [None if is_identity(out_perm) else out_perm]
    return plan


def _reduce_plan(g, node, perm):
    rank = len(perm)
    keepdims = node.attr("keepdims", 1)
    axes_name = node.input[1] if len(node.input) > 1 else ""
    if node.attr("axes") is not None:
        return None                      # pre-opset-18 form: not emitted by tf2ir
    plan = _Plan(perm, [0])
    if not axes_name:
        reduce_all = not node.attr("noop_with_empty_axes", 0)
        plan.out_perms = [None if reduce_all else perm]
        return plan
    axes = g.const(axes_name)
    if axes is None:
        return None
    axes = sorted({int(a) % rank for a in axes.reshape(-1)})
    new = np.array(sorted(perm[a] for a in axes), np.int64)
    plan.edits.append(lambda: g.set_input(node, 1, g.add_initializer(new, "axes_permuted")))
    plan.out_perms = [perm if keepdims else _reduced_perm(perm, axes)]
    return plan


def _carry_facts(g: OnnxGraph, known: str, name: str, perm: Sequence[int]) -> None:
    """`name` holds Transpose(`known`, perm): its known shape follows from `known`'s (the
    identity pass reads shapes: a graph input taken channels-first leaves a normalisation's
    `x - 0` of per-channel zeros that only a known shape lets it remove). No dtype: with one,
    global_pool would turn DenseNet121's final ReduceMean into GlobalAveragePool+Flatten."""
    shape = g.shapes.get(known)
    if shape is not None and len(shape) == len(perm):
        g.shapes.setdefault(name, tuple(shape[p] for p in perm))


class _Sinker:
    def __init__(self, g: OnnxGraph):
        self.g = g
        self.changes = 0

    def transpose_of(self, name: str) -> Optional[OnnxNode]:
        node = self.g.producer(name)
        if node is not None and node.op_type == "Transpose" and node.standard \
                and node.attr("perm") is not None:
            return node
        return None

    def drop_if_unread(self, name: str) -> None:
        """Remove the Transpose producing `name` once nothing reads it, and so on up a chain
        of Transposes."""
        g = self.g
        while name and not g.use_count(name) and not g.is_pinned(name):
            source = self.transpose_of(name)
            if source is None:
                return
            name = source.input[0]
            g.remove(source)

    def rewire(self, node: OnnxNode, index: int, name: str) -> None:
        old = node.input[index]
        self.g.set_input(node, index, name)
        self.drop_if_unread(old)

    def new_transpose(self, x: str, perm: List[int], outputs=1, **place) -> str:
        g = self.g
        out = g.add_node("Transpose", [x], outputs, perm=list(perm), **place).output[0]
        g.ranks[out] = len(perm)
        _carry_facts(g, x, out, perm)
        return out

    # -- one node ------------------------------------------------------------------------
    def merge_transposes(self, node: OnnxNode) -> None:
        g = self.g
        source = self.transpose_of(node.input[0])
        if source is None:
            return
        inner, outer = list(source.attr("perm")), list(node.attr("perm"))
        if len(inner) != len(outer):
            return
        perm = [inner[q] for q in outer]
        x, out = source.input[0], node.output[0]
        if is_identity(perm) and not g.is_pinned(out):
            g.replace_uses(out, x)
            g.remove(node)
            self.drop_if_unread(source.output[0])
        else:
            g.set_attr(node, "perm", perm)
            self.rewire(node, 0, x)
        self.changes += 1

    def push(self, node: OnnxNode) -> None:
        g = self.g
        carried = []
        for name in node.input:
            source = self.transpose_of(name) if name else None
            if source is not None:
                carried.append(tuple(source.attr("perm")))
        if not carried:
            return
        perm = list(Counter(carried).most_common(1)[0][0])
        plan = _plan(g, node, perm)
        if plan is None:
            return
        rank, inv = len(perm), inverse(perm)
        actions: List[Tuple[int, str, Union[str, np.ndarray]]] = []
        transposed = inserted = 0
        for i in plan.data:
            name = node.input[i]
            source = self.transpose_of(name)
            if source is not None and list(source.attr("perm")) == perm:
                actions.append((i, "source", source.input[0]))
                transposed += 1
                continue
            const = g.const(name)
            if const is not None:
                if const.ndim > rank or (not plan.broadcast and const.ndim != rank):
                    return
                if const.size == 1 and plan.broadcast:
                    continue
                full = const.reshape((1,) * (rank - const.ndim) + const.shape)
                actions.append((i, "const", np.ascontiguousarray(full.transpose(inv))))
                continue
            known = g.rank(name)
            if known == 0 and plan.broadcast:
                continue
            if known != rank:
                return
            actions.append((i, "insert", name))
            inserted += 1
        if inserted >= transposed:
            return
        for i, kind, what in actions:
            if isinstance(what, np.ndarray):      # kind "const": the permuted constant
                self.rewire(node, i, g.add_initializer(what, f"{node.input[i]}_permuted"))
            elif kind == "source":
                self.rewire(node, i, what)
            else:
                self.rewire(node, i, self.new_transpose(what, inv, before=node))
        for edit in plan.edits:
            edit()
        for k, (out, out_perm) in enumerate(zip(node.output, plan.out_perms)):
            if not out or out_perm is None:
                continue
            # the node writes a fresh name; a Transpose after it writes `out` for its readers
            raw = g.fresh(f"{out}/raw")
            g.rename_output(node, k, raw)
            g.ranks[raw] = len(out_perm)
            _carry_facts(g, out, raw, inverse(out_perm))
            self.new_transpose(raw, out_perm, [out], after=node)
        self.changes += 1

    def sweep(self) -> int:
        """One walk over the nodes there were at its start (Transposes it adds are visited by
        the next one; nodes it removes are skipped)."""
        self.changes = 0
        g = self.g
        for node in g.nodes:
            if node.graph is not g or not node.standard or node.subgraphs:
                continue
            if node.op_type == "Transpose":
                self.merge_transposes(node)
            else:
                self.push(node)
        return self.changes


def _drop_identity_transposes(g: OnnxGraph) -> None:
    """Remove Transposes of the identity permutation (left on graph-output names, where the
    producer of their input then writes the output name)."""
    for node in g.of_type("Transpose"):
        perm = node.attr("perm")
        if perm is None or not is_identity(perm) or len(node.output) != 1 or not node.input:
            continue
        x, y = node.input[0], node.output[0]
        if not g.is_pinned(y):
            g.replace_uses(y, x)
            g.remove(node)
            continue
        source = g.producer(x)
        if source is None or g.is_pinned(x):
            continue
        g.remove(node, keep_uses=True)
        g.rename_output(source, list(source.output).index(x), y)
        g.replace_uses(x, y)


def _count(g: OnnxGraph) -> int:
    return len(g.of_type("Transpose", domain=None))


def sink_transposes(g: OnnxGraph) -> int:
    """Push Transposes down and cancel them; return how many Transposes were removed."""
    before = _count(g)
    if not before:
        return 0
    saved = g.snapshot()
    for _ in range(MAX_SWEEPS):
        if not _Sinker(g).sweep():
            break
    _drop_identity_transposes(g)
    after = _count(g)
    if after > before:
        g.restore(saved)
        return 0
    return before - after
