"""Layout: transpose sinking on the lowered ONNX graph (DESIGN decision 8).

Lowerings of format-sensitive ops (Conv, pooling, ...) wrap the channels-first ONNX op in
NHWC->NCHW and NCHW->NHWC Transposes. This pass pushes every Transpose down through
layout-agnostic consumers - elementwise ops (broadcast constants permuted), Concat and
Split (axis remapped), reductions and softmax (axes remapped), Pad (pads permuted), Slice
(axes remapped) - and merges it with the next Transpose, so the NCHW->NHWC after one Conv
cancels the NHWC->NCHW before the next. A node is pushed through only when at least as
many of its inputs carry the Transpose as would need an inverse Transpose inserted, and
the whole pass is undone if it would leave more Transposes than it found.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import onnx

from tf2ir.ir.onnx.passes.identity import remove_identities
from tf2ir.ir.onnx.passes.lowered import LoweredGraph, attr_value, replace_uses, set_attr

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


def _axis_plan(node, perm, attr, default, data=(0,)):
    plan = _Plan(perm, list(data))
    axis = attr_value(node, attr, default) % len(perm)
    plan.edits.append(lambda: set_attr(node, attr, perm[axis]))
    plan.out_perms = [perm] * len(node.output)
    return plan


def _reduced_perm(perm: List[int], axes: List[int]) -> Optional[List[int]]:
    """The Transpose after a keepdims=0 reduction over y-axes `axes` of y = T(x, perm)."""
    kept = [perm[k] for k in range(len(perm)) if k not in axes]
    order = sorted(kept)
    out = [order.index(a) for a in kept]
    return None if is_identity(out) else out


def _plan(g: LoweredGraph, node: onnx.NodeProto, perm: List[int]) -> Optional[_Plan]:
    op, rank = node.op_type, len(perm)
    present = [i for i, name in enumerate(node.input) if name]
    if op in UNARY or op in BROADCASTING:
        plan = _Plan(perm, present)
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
        plan = _axis_plan(node, perm, "axis", 0, present)
        plan.broadcast = False
        return plan
    if op == "Split":
        return _axis_plan(node, perm, "axis", 0)
    if op in ("Softmax", "LogSoftmax", "Hardmax"):
        return _axis_plan(node, perm, "axis", -1)
    if op in ("ArgMax", "ArgMin"):
        axis = attr_value(node, "axis", 0) % rank
        plan = _Plan(perm, [0])
        plan.edits.append(lambda: set_attr(node, "axis", perm[axis]))
        plan.out_perms = [perm if attr_value(node, "keepdims", 1) else _reduced_perm(perm, [axis])]
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
        plan.edits.append(lambda: _set_input(node, 1, g.add_initializer(new, "pads_permuted")))
        plan.out_perms = [perm]
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
                node.input.append("")
            _set_input(node, 3, g.add_initializer(new, "axes_permuted"))
        plan.edits.append(edit)
        plan.out_perms = [perm]
        return plan
    return None


def _reduce_plan(g, node, perm):
    rank = len(perm)
    keepdims = attr_value(node, "keepdims", 1)
    axes_name = node.input[1] if len(node.input) > 1 else ""
    if attr_value(node, "axes") is not None:
        return None                      # pre-opset-18 form: not emitted by tf2ir
    plan = _Plan(perm, [0])
    if not axes_name:
        reduce_all = not attr_value(node, "noop_with_empty_axes", 0)
        plan.out_perms = [None if reduce_all else perm]
        return plan
    axes = g.const(axes_name)
    if axes is None:
        return None
    axes = sorted({int(a) % rank for a in axes.reshape(-1)})
    new = np.array(sorted(perm[a] for a in axes), np.int64)
    plan.edits.append(lambda: _set_input(node, 1, g.add_initializer(new, "axes_permuted")))
    plan.out_perms = [perm if keepdims else _reduced_perm(perm, axes)]
    return plan


def _set_input(node, index, name):
    node.input[index] = name


class _Sinker:
    def __init__(self, g: LoweredGraph):
        self.g = g
        self.producer: Dict[str, onnx.NodeProto] = g.producers()
        self.users: Dict[str, List[onnx.NodeProto]] = defaultdict(list)
        for name, nodes in g.consumers().items():
            self.users[name] = nodes
        self.dead: set = set()
        self.added: List[onnx.NodeProto] = []
        self.changes = 0

    def transpose_of(self, name: str) -> Optional[onnx.NodeProto]:
        node = self.producer.get(name)
        if node is not None and node.op_type == "Transpose" and id(node) not in self.dead \
                and node.domain in ("", "ai.onnx") and attr_value(node, "perm") is not None:
            return node
        return None

    def unuse(self, name: str, node: onnx.NodeProto) -> None:
        users = self.users[name]
        for i, user in enumerate(users):
            if user is node:
                del users[i]
                break
        source = self.producer.get(name)
        if not users and name not in self.g.pinned and source is not None \
                and source.op_type == "Transpose" and id(source) not in self.dead:
            self.dead.add(id(source))
            self.unuse(source.input[0], source)

    def rewire(self, node: onnx.NodeProto, index: int, name: str) -> None:
        old = node.input[index]
        node.input[index] = name
        self.users[name].append(node)
        self.unuse(old, node)

    def new_transpose(self, x: str, perm: List[int], out: Optional[str] = None) -> str:
        out = out or self.g.fresh(f"{x}/transposed")
        node = self.g.make_node("Transpose", [x], [out], perm=list(perm))
        self.added.append(node)
        self.producer[out] = node
        self.users[x].append(node)
        self.g.ranks[out] = len(perm)
        return out

    # -- one node ------------------------------------------------------------------------
    def merge_transposes(self, node: onnx.NodeProto) -> None:
        source = self.transpose_of(node.input[0])
        if source is None:
            return
        inner, outer = attr_value(source, "perm"), attr_value(node, "perm")
        if len(inner) != len(outer):
            return
        perm = [inner[q] for q in outer]
        out = node.output[0]
        if is_identity(perm) and out not in self.g.pinned:
            x = source.input[0]
            users = self.users.pop(out, [])
            replace_uses(users, out, x)
            self.users[x].extend(users)
            self.dead.add(id(node))
            self.unuse(node.input[0], node)
        else:
            set_attr(node, "perm", perm)
            self.rewire(node, 0, source.input[0])
        self.changes += 1

    def push(self, node: onnx.NodeProto) -> None:
        g = self.g
        carried = Counter(tuple(attr_value(t, "perm")) for t in
                          (self.transpose_of(name) for name in node.input if name) if t is not None)
        if not carried:
            return
        perm = list(carried.most_common(1)[0][0])
        plan = _plan(g, node, perm)
        if plan is None:
            return
        rank, inv = len(perm), inverse(perm)
        actions: List[Tuple[int, str, Union[str, np.ndarray]]] = []
        transposed = inserted = 0
        for i in plan.data:
            name = node.input[i]
            source = self.transpose_of(name)
            if source is not None and list(attr_value(source, "perm")) == perm:
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
                self.rewire(node, i, self.new_transpose(what, inv))
        for edit in plan.edits:
            edit()
        for k, (out, out_perm) in enumerate(zip(list(node.output), plan.out_perms)):
            if not out:
                continue
            if out_perm is None:
                continue
            raw = g.fresh(f"{out}/raw")
            node.output[k] = raw
            self.producer[raw] = node
            g.ranks[raw] = len(out_perm)
            self.new_transpose(raw, out_perm, out)
        self.changes += 1

    def sweep(self) -> int:
        self.changes = 0
        order = self.g.nodes
        for node in order:
            if id(node) in self.dead or self.g.has_subgraphs(node):
                continue
            if node.op_type == "Transpose":
                self.merge_transposes(node)
            elif node.domain in ("", "ai.onnx"):
                self.push(node)
            # transposes added after `node` come next, before the rest of the order
        return self.changes

    def commit(self) -> None:
        self.g.nodes[:] = [n for n in self.g.nodes if id(n) not in self.dead] + \
            [n for n in self.added if id(n) not in self.dead]
        self.dead, self.added = set(), []
        self.g.toposort()


def _count(nodes) -> int:
    return sum(1 for n in nodes if n.op_type == "Transpose")


def sink_transposes(g: LoweredGraph) -> int:
    """Push Transposes down and cancel them; return how many Transposes were removed."""
    before = _count(g.nodes)
    if not before:
        return 0
    saved_nodes = [_copy(n) for n in g.nodes]
    saved_ranks = dict(g.ranks)
    saved_inits = dict(g.initializers)
    for _ in range(MAX_SWEEPS):
        sinker = _Sinker(g)
        changed = sinker.sweep()
        sinker.commit()
        if not changed:
            break
    remove_identities(g, only=("Transpose",))     # identity perms left on output names
    after = _count(g.nodes)
    if after > before:
        g.nodes[:] = saved_nodes
        g.ranks = saved_ranks
        g.initializers.clear()
        g.initializers.update(saved_inits)
        return 0
    return before - after


def _copy(node: onnx.NodeProto) -> onnx.NodeProto:
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    return copy
