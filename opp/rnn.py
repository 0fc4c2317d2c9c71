"""Recurrent layers as single ops: LSTM, GRU and RNN (a simple RNN), forward over a
time-major sequence, with ONNX's conventions (lowered to ONNX LSTM / GRU / RNN with one
direction). Scope fusion makes them from Keras recurrent-layer loops
(plugins/builtin/rnn.py); anything it does not recognise stays a While over lists.

Shapes: x [T, B, I]; w [G*H, I] and r [G*H, H] with the gates in ONNX order (LSTM i, o, f,
c; GRU z, r, h; RNN one); b [2*G*H] (input biases, then recurrent ones); initial states
[B, H]. Outputs: y [T, B, H] (the hidden state after each step), y_h [B, H] (the last) and,
for LSTM, y_c [B, H]. `steps` >= 0 runs only the first `steps` steps of x.
"""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.tensor import FLOAT_TYPES

OPS = OpSet("tf2ir.opp.rnn")

ACTIVATIONS = ("Sigmoid", "Tanh", "Relu")
# op type → (gates, state outputs, default activations)
CELLS = {"LSTM": (4, 2, ["Sigmoid", "Tanh", "Tanh"]), "GRU": (3, 1, ["Sigmoid", "Tanh"]),
         "RNN": (1, 1, ["Tanh"])}


def _declare(op_type: str, doc: str):
    gates, states, activations = CELLS[op_type]
    proto = (OPS.declare(op_type, doc).input("x", FLOAT_TYPES).input("w", FLOAT_TYPES)
             .input("r", FLOAT_TYPES).optional_input("b", FLOAT_TYPES)
             .optional_input("initial_h", FLOAT_TYPES))
    if states == 2:
        proto.optional_input("initial_c", FLOAT_TYPES)
    proto.output("y").output("y_h")
    if states == 2:
        proto.output("y_c")
    proto.attr("hidden_size", "int").attr("activations", "strs", activations,
                                          doc=f"{len(activations)} of {', '.join(ACTIVATIONS)}")
    proto.attr("steps", "int", -1, doc="run the first `steps` steps of x (-1: all)")
    if op_type == "GRU":
        proto.attr("linear_before_reset", "int", 0,
                   doc="1: the reset gate scales the recurrent product (Keras reset_after)")
    proto.infer(_infer)
    proto.lower(_lower)
    return proto


def _expect(desc: TensorDesc, shape, what: str) -> None:
    if desc.shape is None:
        return
    if len(desc.shape) != len(shape) or any(
            a is not None and b is not None and a != b for a, b in zip(desc.shape, shape)):
        raise ConversionError(f"{what} has shape {list(desc.shape)}, expected {list(shape)}")


def _infer(node):
    gates, states, defaults = CELLS[node.op_type]
    hidden, steps = node.attrs["hidden_size"], node.attrs["steps"]
    activations = node.attrs["activations"]
    if len(activations) != len(defaults) or any(a not in ACTIVATIONS for a in activations):
        raise ConversionError(f"activations {activations}: {node.op_type} takes {len(defaults)} "
                              f"of {', '.join(ACTIVATIONS)}")
    if hidden <= 0:
        raise ConversionError(f"hidden_size must be positive, not {hidden}")
    x = node.inputs[0].desc
    if x.rank not in (None, 3):
        raise ConversionError(f"x must be [steps, batch, input], it has rank {x.rank}")
    time, batch, width = x.shape or (None, None, None)
    _expect(node.inputs[1].desc, (gates * hidden, width), "w")
    _expect(node.inputs[2].desc, (gates * hidden, hidden), "r")
    for index, what, shape in ((3, "b", (2 * gates * hidden,)), (4, "initial_h", (batch, hidden)),
                               (5, "initial_c", (batch, hidden))):
        if index < len(node.inputs) and node.inputs[index] is not None:
            _expect(node.inputs[index].desc, shape, what)
    if steps >= 0:
        time = steps
    return [TensorDesc(x.dtype, (time, batch, hidden))] + \
        [TensorDesc(x.dtype, (batch, hidden)) for _ in range(states)]


def _one_direction(ctx, index: int) -> str:
    """Input `index` with ONNX's num_directions dim (1) in front."""
    value = ctx.const_input(index)
    if value is not None:
        return ctx.constant(np.asarray(value)[None], "weights")
    return ctx.op.Unsqueeze(ctx.input(index), ctx.constant(np.array([0], np.int64), "axis0"))


def _used(node, index: int) -> bool:
    value = node.outputs[index]
    return bool(value.uses) or value in node.graph.outputs


def _lower(ctx, node):
    gates, states, defaults = CELLS[node.op_type]
    x, steps = ctx.input(0), node.attrs["steps"]
    if steps >= 0 and (node.inputs[0].desc.shape or (None,))[0] != steps:
        x = ctx.op.Slice(x, ctx.constant(np.array([0], np.int64), "zero"),
                         ctx.constant(np.array([steps], np.int64), "steps"),
                         ctx.constant(np.array([0], np.int64), "axis0"))
    inputs = [x, _one_direction(ctx, 1), _one_direction(ctx, 2),
              _one_direction(ctx, 3) if ctx.input(3) else "", ""]
    for index in range(4, 4 + states):
        inputs.append(_one_direction(ctx, index) if ctx.input(index) else "")
    while inputs[-1] == "":
        inputs.pop()
    used = [_used(node, i) for i in range(1 + states)]
    used[1] = used[1] or not any(used)      # ONNX wants one output at least
    outputs = [ctx.fresh(hint) if wanted else ""
               for wanted, hint in zip(used, ["Y", "Y_h", "Y_c"])]
    while outputs[-1] == "":
        outputs.pop()
    attrs = {"hidden_size": node.attrs["hidden_size"]}
    if list(node.attrs["activations"]) != defaults:
        attrs["activations"] = list(node.attrs["activations"])
    if node.op_type == "GRU" and node.attrs["linear_before_reset"]:
        attrs["linear_before_reset"] = 1
    getattr(ctx.op, node.op_type)(*inputs, outputs=outputs, **attrs)
    for i, name in enumerate(outputs):
        if name:
            axis = ctx.constant(np.array([1 if i == 0 else 0], np.int64), "axis")
            ctx.op.Squeeze(name, axis, out=ctx.output(i))


_declare("LSTM", "Long short-term memory: c = f*c + i*g, h = o*h_act(c) with i, o, f from "
                 "activations[0] and g from activations[1] of x w_k + h r_k + biases.")
_declare("GRU", "Gated recurrent unit: h = z*h + (1-z)*hh, hh = act(x w_h + (r*h) r_h + b) or, "
                "with linear_before_reset, act(x w_h + r*(h r_h + rb_h) + wb_h).")
_declare("RNN", "Simple RNN: h = act(x w + h r + biases).")
