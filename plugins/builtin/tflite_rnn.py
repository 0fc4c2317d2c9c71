"""Built-in TFLITE mappings of TFLite's fused recurrent ops: UNIDIRECTIONAL_SEQUENCE_LSTM (what
TF's converter makes of a Keras LSTM, and twice, with REVERSE_V2, of a Bidirectional one) and
UNIDIRECTIONAL_SEQUENCE_RNN.

The LSTM's 24 inputs (schema order): x; input-to-{input, forget, cell, output} weights (1-4,
the input gate's left out in a CIFG LSTM); recurrent-to-* weights (5-8); peephole
cell-to-{input, forget, output} (9-11); gate biases (12-15); projection weights and bias
(16, 17); the output and cell state variables (18, 19, their initial values); layer-norm
coefficients (20-23). Each weight is [H, in] with TFLite's gate order i, f, c, o.

A plain LSTM (every gate, no peephole, projection or layer norm, activation TANH or RELU)
becomes the IR's LSTM (opp/rnn.py: ONNX gate order i, o, f, c) when its `cell_clip` cannot
bite: |c_t| < |c_0| + t with sigmoid gates and a tanh cell input, so a clip no smaller than
max|c_0| + T (T static) is the identity. Any other LSTM with a static T is unrolled step by
step in IR ops, with TFLite's semantics (clip of the cell state, peepholes, CIFG, projection
and its clip); layer normalisation is refused in one line.

A full-integer LSTM (int8 input and output state, int16 cell state: TFLite's 8x8->16 integer
kernel) is unrolled with the kernel's per-step quantization, in float ops: each gate's
pre-activation on the int16 grid of its intermediate scale (2^-12 without layer norm: Q3.12,
saturating at +-8; the kernel saturates the input part before adding the recurrent part,
which is left out); the cell state
rounded to its int16 power-of-two scale and saturated (at the cell clip in quantized units
where that is tighter); the hidden state quantized to int8 at every step (the hidden
intermediate's scale and zero point), which is also what the next step's recurrent product
reads (the output state's scale). Only the gate outputs' Q0.15 rounding (2^-15) is left out.
And one quirk of the kernel is kept: its int16 tanh of the cell state takes 15 + log2(cell
scale) integer bits and, for a cell scale of 2^-16 or finer (the converter picks one when the
calibrated cell state stays under 0.5), returns without writing its output buffer, which
then still holds the input gate: such a model computes h = o * i, not o * tanh(c) (the
LiteRT interpreter's answer, far from the float model's; a CIFG LSTM keeps the tanh).
"""

import logging
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.plugins import hookimpl
from tf2ir.plugins.tflite import activation, data, required, tflite_subgraph

log = logging.getLogger("tf2ir")

ONNX_ORDER = [0, 3, 1, 2]          # TFLite gates i, f, c, o → ONNX i, o, f, c
IR_ACTIVATIONS = {"TANH": "Tanh", "RELU": "Relu"}


def _op(graph, op_type, inputs, attrs=None, name=None):
    return graph.add_op(op_type, inputs, attrs, name=name).outputs[0]


def _i32(graph, value, name):
    return graph.const(np.asarray(value, np.int32), name)


def _const_value(src, graph, position: int) -> Optional[np.ndarray]:
    positions = src.input_positions
    index = positions[position] if position < len(positions) else None
    if index is None:
        return None
    value = graph.call.inputs[index].const_value
    return None if value is None else np.asarray(value)


def _time_major(src, graph, x, inverse=False):
    """x [B, T, ...] ↔ [T, B, ...] unless the op is time-major already."""
    if src.attr("time_major", False):
        return x
    return _op(graph, "Transpose", [x, _i32(graph, [1, 0, 2], "perm")], name="to_batch_major"
               if inverse else "to_time_major")


def _concat(graph, values, name):
    return _op(graph, "ConcatV2", list(values) + [_i32(graph, 0, "axis")], {"N": len(values)},
               name=name)


def _steps(x) -> Optional[int]:
    shape = x.desc.shape
    return shape[0] if shape is not None and len(shape) == 3 else None


def _plain(src, get, cell_clip: float, steps: Optional[int], c0: Optional[np.ndarray]) -> bool:
    if any(get(p) is None for p in (1, 5)) or any(get(p) is not None for p in
                                                 (9, 10, 11, 16, 17, 20, 21, 22, 23)):
        return False
    act = src.attr("fused_activation_function", "TANH")
    if act not in IR_ACTIVATIONS:
        return False
    if cell_clip <= 0:
        return True
    if act != "TANH" or steps is None or c0 is None:
        return False
    return float(np.max(np.abs(c0), initial=0.0)) + steps <= cell_clip


def unidirectional_lstm(src, graph) -> None:
    def get(position):
        return data(src, graph, position)
    if any(get(p) is not None for p in (20, 21, 22, 23)):
        raise ConversionError("a layer-normalised LSTM (layer-norm coefficients) is not supported")
    x = _time_major(src, graph, get(0))
    steps = _steps(x)
    cell_clip = float(src.attr("cell_clip", 0.0) or 0.0)
    h0, c0 = get(18), get(19)
    if h0 is None or c0 is None:
        raise ConversionError("the LSTM's state inputs (18, 19) are missing")
    integer = _integer_lstm(src)
    if integer is not None:
        if steps is None:
            raise ConversionError("a full-integer LSTM needs a static number of steps")
        if integer["tanh_skipped"]:
            log.warning("%s '%s': its cell state's scale is 2^%d; LiteRT's integer LSTM "
                        "kernel skips tanh(cell) at scales under 2^-15 and computes output "
                        "gate x input gate instead, so the interpreter's results differ from "
                        "this conversion's, which computes the LSTM", src.op_type, src.name,
                        int(np.round(np.log2(integer["cell"][0]))))
        y = _quantized_lstm(src, graph, x, get, h0, c0, steps, cell_clip, integer)
    elif _plain(src, get, cell_clip, steps, _const_value(src, graph, 19)):
        y = _fused_lstm(src, graph, x, get, h0, c0)
    elif steps is None:
        raise ConversionError("an LSTM with peepholes, projection, CIFG, another activation or a "
                              "cell clip that can bite needs a static number of steps")
    else:
        y = _unrolled_lstm(src, graph, x, get, h0, c0, steps, cell_clip)
    graph.set_outputs([_time_major(src, graph, y, inverse=True)])


def _fused_lstm(src, graph, x, get, h0, c0):
    w = [get(p) for p in (1, 2, 3, 4)]
    r = [get(p) for p in (5, 6, 7, 8)]
    hidden = r[0].desc.shape[-1] if r[0].desc.shape else None
    if hidden is None:
        raise ConversionError("the LSTM's recurrent weights have no static shape")
    zeros = graph.const(np.zeros(hidden, np.float32), "zero_bias")
    b = [get(p) if get(p) is not None else zeros for p in (12, 13, 14, 15)]
    act = IR_ACTIVATIONS[src.attr("fused_activation_function", "TANH")]
    inputs = [x, _concat(graph, [w[g] for g in ONNX_ORDER], "w"),
              _concat(graph, [r[g] for g in ONNX_ORDER], "r"),
              _concat(graph, [b[g] for g in ONNX_ORDER] + [zeros] * 4, "b"), h0, c0]
    node = graph.add_op("LSTM", inputs, {"hidden_size": int(hidden),
                                         "activations": ["Sigmoid", act, act]}, name="lstm")
    return node.outputs[0]


def _unrolled_lstm(src, graph, x, get, h, c, steps: int, cell_clip: float):
    act_name = src.attr("fused_activation_function", "TANH")
    proj_clip = float(src.attr("proj_clip", 0.0) or 0.0)
    xs = graph.add_op("Unpack", [x], {"num": steps, "axis": 0}, name="steps",
                      num_outputs=steps).outputs if steps else []
    outputs: List = []

    def gate(t, k, x_t, h, c, kind):
        z = _op(graph, "MatMul", [x_t, get(1 + k), None], {"transpose_x2": True}, f"x{k}_{t}")
        z = _op(graph, "Add", [z, _op(graph, "MatMul", [h, get(5 + k), None],
                                         {"transpose_x2": True}, f"h{k}_{t}")], name=f"z{k}_{t}")
        peephole = {0: 9, 1: 10, 3: 11}.get(k)
        if peephole is not None and get(peephole) is not None:
            z = _op(graph, "Add", [z, _op(graph, "Mul", [c, get(peephole)], name=f"p{k}_{t}")],
                    name=f"zp{k}_{t}")
        if get(12 + k) is not None:
            z = _op(graph, "Add", [z, get(12 + k)], name=f"zb{k}_{t}")
        if kind == "sigmoid":
            return _op(graph, "Sigmoid", [z], name=f"g{k}_{t}")
        return activation(graph, z, act_name, src)

    one = graph.const(np.float32(1.0), "one")
    for t, x_t in enumerate(xs):
        f = gate(t, 1, x_t, h, c, "sigmoid")
        i = gate(t, 0, x_t, h, c, "sigmoid") if get(1) is not None else \
            _op(graph, "Sub", [one, f], name=f"cifg_{t}")
        g = gate(t, 2, x_t, h, c, "act")
        c = _op(graph, "Add", [_op(graph, "Mul", [f, c], name=f"fc_{t}"),
                                 _op(graph, "Mul", [i, g], name=f"ig_{t}")], name=f"c_{t}")
        if cell_clip > 0:
            c = _clip(graph, c, cell_clip, f"cclip_{t}")
        o = gate(t, 3, x_t, h, c, "sigmoid")
        h = _op(graph, "Mul", [o, activation(graph, c, act_name, src)], name=f"h_{t}")
        if get(16) is not None:
            h = _op(graph, "MatMul", [h, get(16), None], {"transpose_x2": True}, f"proj_{t}")
            if get(17) is not None:
                h = _op(graph, "Add", [h, get(17)], name=f"projb_{t}")
            if proj_clip > 0:
                h = _clip(graph, h, proj_clip, f"pclip_{t}")
        outputs.append(h)
    return _op(graph, "Pack", outputs, {"N": len(outputs), "axis": 0}, name="sequence")


# -- the full-integer kernel ---------------------------------------------------------------------
GATE_SCALE = 2.0 ** -12          # Q3.12: the gate pre-activations without layer norm
INT16 = (-32768, 32767)


def _params(tensor) -> Optional[Tuple[float, int]]:
    q = tensor.quantization if tensor is not None else None
    if q is None or q.scale.size != 1:
        return None
    return float(q.scale[0]), int(q.zero_point.reshape(-1)[0]) if q.zero_point.size else 0


def _integer_lstm(src) -> Optional[Dict[str, Any]]:
    """The quantization of TFLite's integer LSTM kernel (int8 input and output state, int16
    cell state, per-tensor), or None for a float or hybrid LSTM."""
    tensors = list(getattr(src, "input_tensors", []) or [])
    if len(tensors) < 20:
        return None
    x, h, c = tensors[0], tensors[18], tensors[19]
    if any(t is None for t in (x, h, c)) or (x.dtype, h.dtype, c.dtype) != ("int8", "int8", "int16"):
        return None
    hq, cq = _params(h), _params(c)
    if _params(x) is None or hq is None or cq is None:
        return None
    hidden = hq
    view, operator = getattr(src, "view", None), getattr(src, "operator", None)
    middle = list(getattr(operator, "intermediates", []) or [])
    if view is not None and len(middle) == 5 and middle[4] >= 0:
        hidden = _params(view.subgraph.tensors[middle[4]]) or hq
    return {"output": hq, "cell": cq, "hidden": hidden,
            "tanh_skipped": 15 + int(np.round(np.log2(cq[0]))) < 0}


def _grid(graph, value, scale: float, low: float, high: float, name: str):
    """`value` on the integer grid of `scale` (rounded half to even), saturated at [low, high]
    steps: an int16 quantize-dequantize in float ops."""
    steps = _op(graph, "Round", [_op(graph, "Mul", [value, graph.const(np.float32(1.0 / scale),
                                                                         "inv_scale")],
                                      name=f"{name}_scaled")], name=f"{name}_round")
    steps = _op(graph, "ClipByValue", [steps, graph.const(np.float32(low), "low"),
                                       graph.const(np.float32(high), "high")], name=f"{name}_sat")
    return _op(graph, "Mul", [steps, graph.const(np.float32(scale), "scale")], name=name)


def _qdq(graph, value, quantize, dequantize, name: str):
    """`value` quantized to int8 with `quantize` (scale, zero point), read back with
    `dequantize`'s."""
    q = graph.add_op("QuantizeLinear", [value], {
        "scale": np.array([quantize[0]], np.float32), "zero_point": np.array([quantize[1]]),
        "axis": 0, "dtype": "int8"}, name=f"{name}_q").outputs[0]
    return _op(graph, "DequantizeLinear", [q], {
        "scale": np.array([dequantize[0]], np.float32), "zero_point": np.array([dequantize[1]]),
        "axis": 0}, name=name)


def _quantized_lstm(src, graph, x, get, h, c, steps: int, cell_clip: float, q):
    act_name = src.attr("fused_activation_function", "TANH")
    proj_clip = float(src.attr("proj_clip", 0.0) or 0.0)
    gates = [k for k in range(4) if get(1 + k) is not None]          # CIFG: no input gate
    w = _concat(graph, [get(1 + k) for k in gates], "w")
    r = _concat(graph, [get(5 + k) for k in gates], "r")
    hidden = get(5 + gates[0]).desc.shape[0] if get(5 + gates[0]).desc.shape else None
    if hidden is None:
        raise ConversionError("the LSTM's recurrent weights have no static shape")
    zeros = graph.const(np.zeros(hidden, np.float32), "zero_bias")
    b = _concat(graph, [get(12 + k) if get(12 + k) is not None else zeros for k in gates], "b")
    cell_scale = q["cell"][0]
    low, high = INT16
    if cell_clip > 0:
        bound = int(min(max(cell_clip / cell_scale, low), high))    # TFLite truncates
        low, high = max(low, -bound), min(high, bound)
    xs = graph.add_op("Unpack", [x], {"num": steps, "axis": 0}, name="steps",
                      num_outputs=steps).outputs if steps else []
    outputs: List = []
    one = graph.const(np.float32(1.0), "one")
    split_dim = _i32(graph, 1, "split_dim")
    for t, x_t in enumerate(xs):
        zx = _op(graph, "Add", [_op(graph, "MatMul", [x_t, w, None], {"transpose_x2": True},
                                    f"x_{t}"), b], name=f"xb_{t}")
        zh = _op(graph, "MatMul", [h, r, None], {"transpose_x2": True}, f"h_{t}")
        z = _op(graph, "Add", [zx, zh], name=f"z_{t}")
        peep = any(get(p) is not None for p in (9, 10, 11))
        if not peep:
            z = _grid(graph, z, GATE_SCALE, *INT16, f"zq_{t}")
        parts = graph.add_op("Split", [split_dim, z], {"num_split": len(gates)},
                             name=f"gates_{t}", num_outputs=len(gates)).outputs
        pre = dict(zip(gates, parts))

        def gate(k, cell):
            value = pre[k]
            peephole = {0: 9, 1: 10, 3: 11}.get(k)
            if peep:
                if peephole is not None and get(peephole) is not None:
                    value = _op(graph, "Add", [value, _op(graph, "Mul", [cell, get(peephole)],
                                                          name=f"p{k}_{t}")], name=f"zp{k}_{t}")
                value = _grid(graph, value, GATE_SCALE, *INT16, f"zq{k}_{t}")
            if k == 2:
                return activation(graph, value, act_name, src)
            return _op(graph, "Sigmoid", [value], name=f"g{k}_{t}")

        f = gate(1, c)
        i = gate(0, c) if 0 in pre else _op(graph, "Sub", [one, f], name=f"cifg_{t}")
        g = gate(2, c)
        c = _op(graph, "Add", [_op(graph, "Mul", [f, c], name=f"fc_{t}"),
                                 _op(graph, "Mul", [i, g], name=f"ig_{t}")], name=f"cf_{t}")
        c = _grid(graph, c, cell_scale, low, high, f"c_{t}")
        o = gate(3, c)
        h = _op(graph, "Mul", [o, activation(graph, c, act_name, src)], name=f"hf_{t}")
        if get(16) is None:
            h = _qdq(graph, h, q["hidden"], q["output"], f"h_{t}")
        else:
            h = _qdq(graph, h, q["hidden"], q["hidden"], f"hidden_{t}")
            h = _op(graph, "MatMul", [h, get(16), None], {"transpose_x2": True}, f"proj_{t}")
            if get(17) is not None:
                h = _op(graph, "Add", [h, get(17)], name=f"projb_{t}")
            if proj_clip > 0:
                h = _clip(graph, h, proj_clip, f"pclip_{t}")
            h = _qdq(graph, h, q["output"], q["output"], f"h_{t}")
        outputs.append(h)
    return _op(graph, "Pack", outputs, {"N": len(outputs), "axis": 0}, name="sequence")


def _clip(graph, value, bound: float, name: str):
    low, high = graph.const(np.float32(-bound), "low"), graph.const(np.float32(bound), "high")
    return _op(graph, "ClipByValue", [value, low, high], name=name)


def unidirectional_rnn(src, graph) -> None:
    """x, weights [H, I], recurrent weights [H, H], bias [H], the hidden state variable."""
    x = _time_major(src, graph, required(src, graph, 0))
    w, r, b = (required(src, graph, p) for p in (1, 2, 3))
    h0 = data(src, graph, 4)
    act = src.attr("fused_activation_function", "TANH")
    if act not in IR_ACTIVATIONS:
        raise ConversionError(f"a sequence RNN with activation {act!r:.20} is not supported "
                              "(TANH or RELU)")
    hidden = r.desc.shape[-1] if r.desc.shape else None
    if hidden is None or h0 is None:
        raise ConversionError("the RNN's recurrent weights have no static shape or its state "
                              "is missing")
    zeros = graph.const(np.zeros(hidden, np.float32), "zero_bias")
    bias = _concat(graph, [b if b is not None else zeros, zeros], "b")
    node = graph.add_op("RNN", [x, w, r, bias, h0], {"hidden_size": int(hidden),
                                                     "activations": [IR_ACTIVATIONS[act]]},
                        name="rnn")
    graph.set_outputs([_time_major(src, graph, node.outputs[0], inverse=True)])


MAPPINGS = [
    tflite_subgraph("UNIDIRECTIONAL_SEQUENCE_LSTM").parse_op_to_graph_fn(unidirectional_lstm),
    tflite_subgraph("UNIDIRECTIONAL_SEQUENCE_RNN").parse_op_to_graph_fn(unidirectional_rnn),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
