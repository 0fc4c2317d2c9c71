"""Keras recurrent layers → LSTM / GRU / RNN ops (opp/rnn.py), by scope fusion.

A Keras LSTM, GRU or SimpleRNN layer runs as TensorListFromTensor(x) → While → TensorListStack,
the While writing each step's output into a TensorListReserve list. The `keras_rnn` pass
matches that frame, reads the While's cond and body functions and fuses the four nodes when
the loop is exactly a Keras cell over every step:

* the cond is `counter < bound and time < bound`, both counters from 0 by 1, every bound the
  input's step count (or one constant);
* the body reads element `time` of the input list, computes one of the cells below from it,
  the previous state(s) and loop-invariant constant weights, writes the new state at `time`
  (return_sequences) or at 0 into a one-element list (the last step only), and passes every
  other loop variable through;
* activations are sigmoid, tanh or relu, MatMuls untransposed, the weights constants.

Cells (Keras 3, implementation 2): LSTM z = x W + h R (+ b), split in i, f, g, o;
GRU with reset_after (ONNX linear_before_reset=1) or without; SimpleRNN. Anything else
(masking, dropout masks, other activations, a constant initial state, a body that reads
more) is declined and converts as the generic While over lists (opp/lists.py).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple, Union

import numpy as np

from tf2ir.plugins import (
    FusionResult, ScopePattern, Structure, hookimpl, scope_fusion_pass,
)
from tf2ir.plugins.function_match import (
    Bind, Bindings, Const, FunctionView, P, Pattern, Port, Ref, match as match_pattern,
)
from tf2ir.opp import rnn as rnn_ops

ACTIVATIONS = {"Sigmoid", "Tanh", "Relu"}
ADD = "AddV2|Add"
BIAS = "BiasAdd|AddV2|Add"
KERAS_TO_ONNX_LSTM = [0, 3, 1, 2]    # Keras gates i, f, c, o → ONNX i, o, f, c

Bound = Union[str, int, None]   # a loop bound: "steps" (x's dim 0), a constant, or unknown

RNN_LOOP = Structure(
    nodes={"reserve": "TensorListReserve", "unstack": "TensorListFromTensor",
           "loop": "While|StatelessWhile", "stack": "TensorListStack"},
    edges="reserve -> loop, unstack -> loop, loop -> stack")

keras_rnn = scope_fusion_pass(
    "keras_rnn", "Keras LSTM/GRU/SimpleRNN loops (While over TensorLists) → LSTM/GRU/RNN"
).pattern(ScopePattern(structure=RNN_LOOP, name="keras_rnn"))


# -- cell patterns (x: the step's input, h and c: the previous states) -------------------------
def _with_bias(core: Pattern, bias: str) -> List[Pattern]:
    return [P(BIAS, core, bias), core]


def _lstm_patterns() -> List[Pattern]:
    found: List[Pattern] = []
    for z in _with_bias(P(ADD, P("MatMul", "x", "kernel"), P("MatMul", "h", "recurrent")), "bias"):
        def gate(k: int) -> Port:
            return Port(P("Split", "split_dim", z), k)
        cell = Bind("c_new", P(ADD, P("Mul", P("$ra", gate(1)), "c"),
                               P("Mul", P("$ra", gate(0)), P("$act", gate(2)))))
        found.append(P("Mul", P("$ra", gate(3)), P("$act", cell)))
    return found


def _gru_patterns(reset_after: bool) -> List[Pattern]:
    found: List[Pattern] = []
    for x_part in _with_bias(P("MatMul", "x", "kernel"), "bias"):
        def x_gate(k: int) -> Port:
            return Port(P("Split", "split_dim", x_part), k)
        inner_options = _with_bias(P("MatMul", "h", "recurrent"), "recurrent_bias") \
            if reset_after else [P("MatMul", "h", "recurrent")]
        for inner in inner_options:
            def h_gate(k: int) -> Bind:
                return Bind(f"block{k}", P("StridedSlice", inner, f"b{k}", f"e{k}", f"s{k}"))
            z = P("$ra", P(ADD, x_gate(0), h_gate(0)))
            r = P("$ra", P(ADD, x_gate(1), h_gate(1)))
            if reset_after:
                candidate = P("$act", P(ADD, x_gate(2), P("Mul", r, h_gate(2))))
            else:
                candidate = P("$act", P(ADD, x_gate(2), P("MatMul", P("Mul", r, "h"),
                                                             "recurrent_h")))
            found.append(P(ADD, P("Mul", z, "h"), P("Mul", P("Sub", Const(1.0), z), candidate)))
    return found


def _simple_patterns() -> List[Pattern]:
    return [P("$act", P(ADD, x_part, P("MatMul", "h", "recurrent")))
            for x_part in _with_bias(P("MatMul", "x", "kernel"), "bias")]


CELLS: List[Tuple[str, List[Pattern]]] = [
    ("LSTM", _lstm_patterns()), ("GRU", _gru_patterns(True)), ("GRU0", _gru_patterns(False)),
    ("RNN", _simple_patterns())]


# -- reading the loop -------------------------------------------------------------------------
class _Loop:
    """The While of a match with its body and cond functions and outer values."""

    def __init__(self, match, functions):
        self.match = match
        self.node = match.node("loop")
        self.body = FunctionView(functions[self.node.attr("body")])
        self.cond = FunctionView(functions[self.node.attr("cond")])
        self.outer = list(self.node.inputs)

    def outer_value(self, index: int) -> Optional[np.ndarray]:
        return self.match.const_value(self.outer[index])

    def invariant(self, index: int) -> bool:
        return self.body.outputs[index] == Ref.arg(index)

    def is_counter(self, index: int) -> bool:
        """Variable `index` starts at 0 and the body adds 1."""
        start = self.outer_value(index)
        return start is not None and start.size == 1 and int(start) == 0 and match_pattern(
            self.body, self.body.outputs[index], P(ADD, "v", Const(1))) == {"v": Ref.arg(index)}

    def step_count(self, ref: Optional[Ref], x_source) -> Bound:
        """A loop bound: "steps" (x's dim 0, from its shape), an int, or None."""
        if ref is not None and not ref.is_arg:
            value = self.cond.const(ref)
            return int(value) if value is not None and value.size == 1 else None
        if ref is None or not self.invariant(ref.index):
            return None
        return _outer_steps(self.match, self.outer[ref.index], x_source)


def _outer_steps(match, tensor, x_source) -> Bound:
    graph = match.graph.nodes
    value = match.const_value(tensor)
    if value is not None:
        return int(value) if value.size == 1 else None
    node = graph.get(tensor[0])
    if node is None:
        return None
    if node.op_type == "Max" and len(node.inputs) == 2:   # max(static steps, range(rank 0))
        value = match.const_value(node.inputs[0])
        axes = graph.get(node.inputs[1][0])
        if value is not None and value.ndim == 0 and axes is not None and axes.op_type == "Range":
            return int(value)
        return None
    if node.op_type != "StridedSlice" or node.attr("shrink_axis_mask") != 1 or any(
            node.attr(m, 0) for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask")):
        return None
    bounds = [match.const_value(t) for t in node.inputs[1:]]
    shape = graph.get(node.inputs[0][0])
    if any(b is None for b in bounds) or [int(b.reshape(-1)[0]) for b in bounds] != [0, 1, 1] \
            or shape is None or shape.op_type != "Shape":
        return None
    return "steps" if shape.inputs[0] in x_source else None


def _x_sources(match, tensor) -> List:
    """`tensor` and, through shape-preserving ops, what it is computed from."""
    sources = [tensor]
    node = match.graph.nodes.get(tensor[0])
    while node is not None and node.op_type == "ReverseV2":
        sources.append(node.inputs[0])
        node = match.graph.nodes.get(node.inputs[0][0])
    return sources


def _zero_fill(match, tensor) -> bool:
    node = match.graph.nodes.get(tensor[0])
    if node is None or node.op_type != "Fill" or tensor[1] != 0:
        return False
    value = match.const_value(node.inputs[1])
    return value is not None and value.size == 1 and float(value) == 0.0


# -- the result ---------------------------------------------------------------------------------
@keras_rnn
def keras_rnn_result(scope) -> Optional[FusionResult]:
    functions = {f.signature.name: f for f in scope.graph.library.function}
    loop_node, stack = scope.node("loop"), scope.node("stack")
    if loop_node.attr("body") not in functions or loop_node.attr("cond") not in functions:
        return None
    loop = _Loop(scope, functions)
    body, outer = loop.body, loop.outer
    if len(body.outputs) != len(outer) or outer.count((scope.node("reserve").name, 0)) != 1 \
            or outer.count((scope.node("unstack").name, 0)) != 1:
        return None
    out_list = outer.index((scope.node("reserve").name, 0))
    x_list = outer.index((scope.node("unstack").name, 0))
    if not loop.invariant(x_list) or stack.inputs[0] != (loop_node.name, out_list):
        return None
    # the step's input: x_list[time]; the step's output: written into out_list
    readers = body.users(Ref.arg(x_list))
    if len(readers) != 1 or body.nodes[readers[0]].op != "TensorListGetItem":
        return None
    x_t = Ref(readers[0], 0)
    read = body.inputs(readers[0])
    write = match_write(body, body.outputs[out_list], out_list)
    if write is None or read[0] != Ref.arg(x_list) or read[1] is None or not read[1].is_arg:
        return None
    time, (index, item) = read[1].index, write
    if not loop.is_counter(time):
        return None
    every_step = index == Ref.arg(time)
    reserved = scope.const_value(scope.node("reserve").inputs[1])
    at = body.const(index)
    if not every_step and not (at is not None and at.size == 1 and int(at) == 0
                               and reserved is not None and int(reserved) == 1):
        return None
    # the cond: counter < bound and time < bound
    x_tm = scope.node("unstack").inputs[0]
    sources = _x_sources(scope, x_tm)
    cond = match_pattern(loop.cond, loop.cond.outputs[0],
                         P("LogicalAnd", P("Less", "a", "bound_a"), P("Less", "b", "bound_b")))
    if cond is None or not {cond["a"], cond["b"]} >= {Ref.arg(time)} or cond["a"] == cond["b"] \
            or not all(r.is_arg and loop.is_counter(r.index) for r in (cond["a"], cond["b"])):
        return None
    bounds = {loop.step_count(cond[k], sources) for k in ("bound_a", "bound_b")}
    if every_step:
        bounds.add(_outer_steps(scope, scope.node("reserve").inputs[1], sources))
    if None in bounds or len(bounds) != 1 or bounds == {0}:
        return None
    bound = bounds.pop()
    steps = int(bound) if isinstance(bound, int) else -1
    # the cell
    for cell, patterns in CELLS:
        for pattern in patterns:
            found = match_pattern(body, item, pattern, {"x": x_t})
            if found is not None:
                result = _fuse(loop, cell, found, item, steps, every_step, x_tm, stack, out_list)
                if result is not None:
                    return result
    return None


def match_write(body: FunctionView, ref: Optional[Ref], out_list: int):
    """(index, item) when `ref` is TensorListSetItem(arg out_list, index, item)."""
    found = match_pattern(body, ref, P("TensorListSetItem", "list", "index", "item"))
    if found is None or found["list"] != Ref.arg(out_list):
        return None
    return found["index"], found["item"]


def _fuse(loop: _Loop, cell: str, found: Bindings, item: Ref, steps: int, every_step: bool,
          x_tm, stack, out_list: int) -> Optional[FusionResult]:
    body = loop.body
    states = [found["h"]] + ([found["c_new"]] if cell == "LSTM" else [])
    h_var = found["h"].index if found["h"].is_arg else -1
    c_var = found["c"].index if cell == "LSTM" and found["c"].is_arg else -1
    if h_var < 0 or body.outputs[h_var] != item or (cell == "LSTM" and (
            c_var < 0 or body.outputs[c_var] != states[1])):
        return None
    activations = {"LSTM": [found.get("$ra"), found["$act"], found["$act"]],
                   "RNN": [found["$act"]]}.get(cell, [found.get("$ra"), found["$act"]])
    if any(a not in ACTIVATIONS for a in activations):
        return None
    if any(n.op == "MatMul" and (body.attr(n.name, "transpose_a") or body.attr(n.name, "transpose_b"))
           for n in body.nodes.values()):
        return None
    used = {out_list, h_var, c_var}
    for k in range(len(loop.outer)):   # everything else passes through or counts steps
        if k not in used and not loop.invariant(k) and not loop.is_counter(k):
            return None
    weights = _weights(body, loop, cell, found)
    if weights is None:
        return None
    w, r, b, attrs = weights
    op_type = "GRU" if cell == "GRU0" else cell
    initial = [loop.outer[h_var]] + ([loop.outer[c_var]] if cell == "LSTM" else [])
    keep = [t for t in initial if not _zero_fill(loop.match, t)]
    inputs: List = [x_tm] + (initial if keep else [])
    layer = loop.node.name.rpartition("/")[0] or loop.node.name   # the Keras layer's scope
    result = FusionResult(name=layer, inputs=inputs,
                          outputs=[(stack.name, 0), (loop.node.name, h_var)]
                          + ([(loop.node.name, c_var)] if cell == "LSTM" else []),
                          description=f"Keras {op_type} layer")
    operands = [FusionResult.input(0), w, r, b] + \
        [FusionResult.input(i + 1) for i in range(len(inputs) - 1)]
    main = result.add_inner_node(op_type.lower(), op_type, operands, num_outputs=len(initial) + 1,
                                 hidden_size=int(r.shape[1]), activations=activations,
                                 steps=steps, **attrs)
    sequence = main.output(0)
    if not every_step:
        sequence = result.add_inner_node("last", "ExpandDims",
                                         [main.output(1), np.array(0, np.int32)]).output(0)
    result.output_of = [sequence] + [main.output(i + 1) for i in range(len(initial))]
    return result


def _weights(body: FunctionView, loop: _Loop, cell: str, found: Bindings):
    """(w, r, b, extra attrs) in the IR op's layout, or None when they are not constants of
    the expected shapes."""
    def value(name: str) -> Optional[np.ndarray]:
        return body.evaluate(found.get(name), loop.outer_value) if name in found else None

    kernel, recurrent = value("kernel"), value("recurrent")
    if kernel is None or recurrent is None or kernel.ndim != 2 or recurrent.ndim != 2 \
            or kernel.dtype != np.float32:
        return None
    gates = {"LSTM": 4, "GRU": 3, "GRU0": 3, "RNN": 1}[cell]
    if cell == "GRU0":
        recurrent_h = value("recurrent_h")
        if recurrent_h is None or recurrent_h.ndim != 2:
            return None
        recurrent = np.concatenate([recurrent, recurrent_h], axis=1)
    hidden = recurrent.shape[0]
    if kernel.shape[1] != gates * hidden or recurrent.shape[1] != gates * hidden:
        return None
    if cell in ("GRU", "GRU0") and not _gru_blocks(body, found, hidden, cell == "GRU"):
        return None
    split_dim = body.const(found["split_dim"]) if "split_dim" in found else np.array(1)
    if split_dim is None or split_dim.size != 1 or int(split_dim) not in (1, -1):
        return None
    bias = value("bias") if "bias" in found else np.zeros(gates * hidden, np.float32)
    recurrent_bias = value("recurrent_bias") if "recurrent_bias" in found \
        else np.zeros(gates * hidden, np.float32)
    if bias is None or recurrent_bias is None or bias.shape != (gates * hidden,) \
            or recurrent_bias.shape != (gates * hidden,):
        return None
    order = KERAS_TO_ONNX_LSTM if cell == "LSTM" else list(range(gates))

    def reorder(matrix: np.ndarray) -> np.ndarray:   # [in, G*H] Keras → [G*H, in] ONNX
        blocks = np.split(matrix, gates, axis=-1)
        return np.ascontiguousarray(np.concatenate([blocks[g] for g in order], axis=-1).T)

    b = np.concatenate([reorder(bias[None])[:, 0], reorder(recurrent_bias[None])[:, 0]])
    attrs: Dict[str, int] = {"linear_before_reset": 1} if cell == "GRU" else {}
    return reorder(kernel), reorder(recurrent), b.astype(np.float32), attrs


def _gru_blocks(body: FunctionView, found: Bindings, hidden: int, reset_after: bool) -> bool:
    """The recurrent product's column slices are the gates' blocks, in order."""
    for k in range(3 if reset_after else 2):
        ref = found.get(f"block{k}")
        if ref is None:
            return False
        begin, end, strides = (body.const(found[f"{n}{k}"]) for n in "bes")
        if begin is None or end is None or strides is None or begin.shape != (2,) \
                or list(strides) != [1, 1]:
            return False
        node = ref.node
        begin_mask, end_mask = body.attr(node, "begin_mask", 0), body.attr(node, "end_mask", 0)
        if any(body.attr(node, m, 0) for m in ("ellipsis_mask", "new_axis_mask",
                                               "shrink_axis_mask")) \
                or not (begin_mask & 1 or begin[0] == 0) or not end_mask & 1:
            return False
        start = 0 if begin_mask & 2 else int(begin[1])
        stop = None if end_mask & 2 else int(end[1])
        last = k == (2 if reset_after else 1)
        if start != k * hidden or stop not in ((k + 1) * hidden,) + ((None,) if last else ()):
            return False
    return True


MAPPINGS: List = []


@hookimpl
def tf2ir_fusion_passes():
    return [keras_rnn]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(rnn_ops.OPS)
