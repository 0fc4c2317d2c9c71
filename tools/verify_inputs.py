"""Random inputs a model can take, for `tf2ir verify` and `report --verify`.

Random integers overrun what NLP graphs index: BERT's token-type table has 2 rows, so a
token_type_ids of 2 stops TensorFlow ("indices[0,0] = 2 is not in [0, 2)"). `integer_bounds`
reads the TF GraphDef (parser/graph_view.TfGraph; TensorFlow is not run) and gives each
integer input the range its uses allow:

- an input that reaches, through ops that pass values on (Identity, Cast, Reshape,
  ExpandDims, Squeeze, (Strided)Slice, Transpose, Pack, ConcatV2, a Select's values, ...)
  and additions of a constant, the indices of a Gather/GatherV2/ResourceGather/GatherNd,
  OneHot, SparseToDense, ScatterNd, TensorScatter*, UnsortedSegment* or the lengths of
  ReverseSequence, takes values in [0, rows) of the smallest table it reaches (shifted by
  the constants added on the way); a table whose size only shows at run time counts
  FALLBACK_ROWS rows, or the drawn size when it is itself an input;
- an input used as a mask (cast to float and multiplied by a tensor that is not a
  constant, or subtracted from 1 as in BERT's (1 - mask) * -10000) takes 0 or 1; one only compared with 0 or used as a Select
  condition, and not used as an index, also takes 0 or 1;
- any other integer input keeps the default range [0, DEFAULT_HIGH).

`refusal` turns TensorFlow's or onnxruntime's refusal of the inputs (an index out of
range, a failed assertion) into one ConversionError line (exit status 1) that names the
inputs and suggests --inputs-data.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

import numpy as np

from tf2ir.ir.errors import ConversionError, ExitStatus

DEFAULT_HIGH = 4      # integer inputs nothing bounds: [0, 4), small, safe as most indices
FALLBACK_ROWS = 2     # a table whose size is not in the graph
MASK_HIGH = 2

# op type -> the data inputs whose values reach the outputs unchanged
_PASS: Dict[str, Optional[Tuple[int, ...]]] = {
    **{op: (0,) for op in (
        "Identity", "Cast", "Reshape", "ExpandDims", "Squeeze", "StridedSlice", "Slice",
        "Transpose", "Tile", "BroadcastTo", "Unpack", "SplitV", "Reverse", "ReverseV2",
        "StopGradient", "PreventGradient", "Snapshot", "EnsureShape", "CheckNumerics",
        "PlaceholderWithDefault", "Gather", "GatherV2", "ResourceGather", "GatherNd",
        "Bitcast", "Enter", "Exit", "NextIteration", "Switch", "Merge")},
    "Split": (1,), "ConcatV2": None, "Concat": None, "Pack": None, "IdentityN": None,
    "Select": (1, 2), "SelectV2": (1, 2), "Maximum": (0, 1),
}
# op type -> (the indices input, the table input, how the table bounds the indices)
_INDEXING: Dict[str, Tuple[int, int, str]] = {
    "Gather": (1, 0, "rows"), "GatherV2": (1, 0, "axis"), "ResourceGather": (1, 0, "axis"),
    "GatherNd": (1, 0, "all"), "ResourceGatherNd": (1, 0, "all"),
    "OneHot": (0, 1, "value"), "SparseToDense": (0, 1, "value"), "ScatterNd": (0, 2, "value"),
    "TensorScatterUpdate": (1, 0, "all"), "TensorScatterAdd": (1, 0, "all"),
    "TensorScatterSub": (1, 0, "all"), "TensorScatterMax": (1, 0, "all"),
    "TensorScatterMin": (1, 0, "all"),
    "UnsortedSegmentSum": (1, 2, "value"), "UnsortedSegmentMax": (1, 2, "value"),
    "UnsortedSegmentMin": (1, 2, "value"), "UnsortedSegmentProd": (1, 2, "value"),
    "ReverseSequence": (1, 0, "seq_dim"),
}
_FLOATS = ("float", "float16", "bfloat16", "double", "half", "float32", "float64")
_COMPARE = ("Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual")


@dataclass
class Bound:
    """Values [low, high) for one input, and why."""
    low: int
    high: int
    why: str

    def text(self) -> str:
        return f"[{self.low}, {self.high})"


def integer_bounds(graph_def, inputs: Mapping[str, Sequence[int]],
                   model: str = "<graph>") -> Dict[str, Bound]:
    """The range of each integer input in `inputs` (name -> the shape it will be drawn
    with) that the graph bounds; inputs it does not bound are left out."""
    from tf2ir.parser.graph_view import TfGraph
    graph = TfGraph(graph_def, model)
    return _Analysis(graph, inputs).bounds()


class _Analysis:
    def __init__(self, graph, inputs: Mapping[str, Sequence[int]]):
        self.graph = graph
        self.inputs = {name: tuple(shape) for name, shape in inputs.items()}
        self.consumers: Dict[str, List[Tuple[object, int]]] = {}
        for node in graph.nodes.values():
            for index, (src, _) in enumerate(node.inputs):
                self.consumers.setdefault(src, []).append((node, index))

    def bounds(self) -> Dict[str, Bound]:
        result = {}
        for name in self.inputs:
            if name in self.graph.nodes:
                bound = self.bound_of(name)
                if bound is not None:
                    result[name] = bound
        return result

    def bound_of(self, name: str) -> Optional[Bound]:
        """Walk forward from input `name` over the ops that pass its values on, keeping the
        constant added on the way (None: unknown), and collect the uses that bound it."""
        lows, highs, whys = [0], [], []
        mask, weak_mask = False, False
        seen: Set[Tuple[str, Optional[int], bool]] = set()
        stack: List[Tuple[str, Optional[int], bool]] = [(name, 0, False)]   # node, offset, as float
        while stack:
            node_name, offset, as_float = stack.pop()
            if (node_name, offset, as_float) in seen or len(seen) > 10000:
                continue
            seen.add((node_name, offset, as_float))
            for user, index in self.consumers.get(node_name, ()):
                op = user.op_type
                use = _INDEXING.get(op)
                if use is not None and index == use[0] and offset is not None and not as_float:
                    rows = self.table_rows(user, use)
                    if rows is None:
                        rows, note = FALLBACK_ROWS, "size unknown"
                    else:
                        note = f"{rows} rows"
                    lows.append(-offset)
                    highs.append(rows - offset)
                    whys.append(f"indexes {op} '{user.name}' ({note})")
                    continue
                if op == "Cast" and str(user.attr("DstT")) in _FLOATS:
                    stack.append((user.name, offset, True))
                    continue
                if as_float and op in ("Mul", "Sub"):   # m * x with x not a constant, 1 - m
                    other = user.inputs[1 - index]
                    if (self.const_value(other) is None if op == "Mul"
                            else index == 1 and self.const_scalar(other) == 1):
                        mask = True
                    continue
                if op in _COMPARE and self.const_scalar(user.inputs[1 - index]) in (0, 1):
                    weak_mask = True
                    continue
                if op in ("Select", "SelectV2") and index == 0:
                    weak_mask = True
                    continue
                if op in ("Add", "AddV2", "Sub") and offset is not None and not as_float:
                    other = self.const_scalar(user.inputs[1 - index])
                    if op == "Sub" and index == 1:
                        continue   # c - x: the order turns; not followed
                    step = None if other is None else int(other) * (-1 if op == "Sub" else 1)
                    stack.append((user.name, None if step is None else offset + step, as_float))
                    continue
                passes = _PASS.get(op, ())
                if passes is not None and index not in passes:
                    continue
                if op in ("Select", "SelectV2") and offset != 0:
                    continue   # where(x < 0, x + n, x): the shifted branch serves negatives
                if op == "Maximum" and self.const_scalar(user.inputs[1 - index]) is None:
                    continue
                stack.append((user.name, offset, as_float))
        low, high = max(lows), (min(highs) if highs else None)
        if mask or (weak_mask and high is None):
            high = MASK_HIGH if high is None else min(high, MASK_HIGH)
            whys.append("used as a mask")
        if high is None:
            return None
        if high <= low:   # nothing fits every use: the smallest table wins, from 0
            low, high = 0, max(1, min(highs) if highs else MASK_HIGH)
        return Bound(low, high, "; ".join(whys))

    # -- what the graph says of tables -----------------------------------------------------
    def source(self, tensor: Tuple[str, int]) -> Tuple[object, int]:
        """The node a tensor comes from, through Identity-like ops."""
        node, port = self.graph[tensor[0]], tensor[1]
        for _ in range(64):
            if node.op_type in ("Identity", "ReadVariableOp", "StopGradient", "Snapshot",
                                "Enter") and node.inputs:
                node, port = self.graph[node.inputs[0][0]], node.inputs[0][1]
            else:
                break
        return node, port

    def const_value(self, tensor: Tuple[str, int]) -> Optional[np.ndarray]:
        node, _ = self.source(tensor)
        if node.op_type != "Const":
            return None
        try:
            value = node.attr("value")
        except ConversionError:
            return None
        return np.asarray(value) if isinstance(value, np.ndarray) else None

    def const_scalar(self, tensor: Tuple[str, int]) -> Optional[float]:
        value = self.const_value(tensor)
        if value is None or value.size != 1 or value.dtype.kind not in "iuf":
            return None
        return value.reshape(()).item()

    def shape(self, tensor: Tuple[str, int]) -> Optional[Tuple[Optional[int], ...]]:
        """The tensor's shape where the graph gives it: a constant's, a variable's or an
        input's (the drawn shape), else the `_output_shapes` TF recorded."""
        node, port = self.source(tensor)
        if node.op_type == "Const":
            value = self.const_value((node.name, port))
            return None if value is None else tuple(value.shape)
        if node.name in self.inputs:
            return self.inputs[node.name]
        try:
            if node.op_type in ("VarHandleOp", "VariableV2", "Variable", "Placeholder"):
                shape = node.attr("shape")
                return None if shape is None else tuple(shape)
            shapes = node.attr("_output_shapes")
        except ConversionError:
            return None
        if shapes and port < len(shapes) and shapes[port] is not None:
            return tuple(shapes[port])
        return None

    def table_rows(self, user, use: Tuple[int, int, str]) -> Optional[int]:
        _, table, how = use
        if table >= len(user.inputs):
            return None
        if how == "value":   # a depth, a number of segments, a shape: its smallest entry
            value = self.const_value(user.inputs[table])
            if value is None or value.size == 0 or value.dtype.kind not in "iu":
                return None
            return int(value.min())
        shape = self.shape(user.inputs[table])
        if shape is None:
            return None
        if how == "all":
            dims = [d for d in shape if d is not None and d >= 0]
            return min(dims) if dims and len(dims) == len(shape) else None
        if how == "seq_dim":
            axis = user.attr("seq_dim", 0)
            size = _dim(shape, axis)
            return None if size is None else size + 1   # a length may equal the size
        axis = 0
        if how == "axis" and len(user.inputs) > 2:
            value = self.const_scalar(user.inputs[2])
            if value is None:
                return None
            axis = int(value)
        return _dim(shape, axis)


def _dim(shape: Sequence[Optional[int]], axis: int) -> Optional[int]:
    if not -len(shape) <= axis < len(shape):
        return None
    size = shape[axis]
    return size if size is not None and size >= 0 else None


def draw(rng, dtype: np.dtype, shape, bound: Optional[Bound]) -> np.ndarray:
    """Random values of `dtype` and `shape`: integers within `bound` (default
    [0, DEFAULT_HIGH)), floats standard normal, booleans 0/1."""
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        low, high = (0, DEFAULT_HIGH) if bound is None else (bound.low, bound.high)
        info = np.iinfo(dtype)
        low, high = max(low, int(info.min)), min(high, int(info.max) + 1)
        return rng.integers(low, max(high, low + 1), shape).astype(dtype)
    raise ConversionError(f"cannot make random inputs of dtype {dtype}; give --inputs-data",
                          exit_code=ExitStatus.USAGE)


def bounds_for(model, tf_graph, given: Sequence[str], batch: Optional[int]) -> Dict[str, Bound]:
    """The bounds of the ONNX `model`'s integer inputs not in `given`, read from the TF
    graph `tf_graph` (a tf.Graph or a GraphDef); {} when there is none to draw."""
    from onnx import helper
    shapes = {}
    for inp in model.graph.input:
        elem = inp.type.tensor_type.elem_type
        if inp.name in given or np.dtype(helper.tensor_dtype_to_np_dtype(elem)).kind not in "iu":
            continue
        shapes[inp.name] = tuple(d.dim_value if d.HasField("dim_value") else (batch or 1)
                                 for d in inp.type.tensor_type.shape.dim)
    if not shapes or tf_graph is None:
        return {}
    graph_def = tf_graph.as_graph_def() if hasattr(tf_graph, "as_graph_def") else tf_graph
    return integer_bounds(graph_def, shapes)


# -- a refusal of the drawn inputs -----------------------------------------------------------
_TF_NODE = re.compile(r"\{\{node ([^}]+)\}\}")
_ORT_NODE = re.compile(r"running \S+ node\. Name:'([^']*)'")
_ORT_REFUSAL = re.compile(r"INVALID_ARGUMENT|out of (data )?bounds|out of range|indices",
                          re.IGNORECASE)


@contextmanager
def refusal(side: str, feeds: Mapping[str, np.ndarray], graph=None) -> Iterator[None]:
    """Around one run of `side` ("TensorFlow" or "onnxruntime") on `feeds`: its refusal of
    the values (TF's InvalidArgumentError or OutOfRangeError, onnxruntime's
    INVALID_ARGUMENT or an index error) becomes one ConversionError (exit status 1) naming
    the inputs that reach the failing node (`graph`: the tf.Graph or onnx ModelProto that
    ran) and suggesting --inputs-data. Other errors pass unchanged."""
    try:
        yield
    except ConversionError:
        raise
    except Exception as exc:
        if not _is_refusal(side, exc):
            raise
        text = str(getattr(exc, "message", "") or exc)
        node = _failing_node(side, text)
        names = _inputs_reaching(graph, node, list(feeds)) if node else []
        names = names or list(feeds)
        what = ", ".join(f"{n} {list(feeds[n].shape)} {feeds[n].dtype}"
                         + (f" in [{feeds[n].min()}, {feeds[n].max()}]"
                            if feeds[n].size and feeds[n].dtype.kind in "iu" else "")
                         for n in names)
        at = f" at node '{node}'" if node else ""
        raise ConversionError(
            f"{side} refused the input values ({what}){at}: {_reason(text)}; give "
            f"values it accepts with --inputs-data FILE.npz or NAME=FILE.npy",
            exit_code=ExitStatus.FAILED) from None


def _is_refusal(side: str, exc: Exception) -> bool:
    if side == "TensorFlow":   # an op's refusal names its node (a bad fetch names none)
        return (type(exc).__name__ in ("InvalidArgumentError", "OutOfRangeError")
                and _TF_NODE.search(str(getattr(exc, "message", "") or exc)) is not None)
    return bool(_ORT_REFUSAL.search(str(exc)))


def _failing_node(side: str, text: str) -> Optional[str]:
    match = (_TF_NODE if side == "TensorFlow" else _ORT_NODE).search(text)
    return match.group(1) if match else None


def _reason(text: str) -> str:
    """The line of TF's or onnxruntime's message that says what was wrong."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if (not line.startswith(("Graph execution error", "Detected at node", "Node:",
                                 "[[", "Original stack", "File ")) and "{{node" not in line):
            return line[:300]
    return (lines[0] if lines else text)[:300]


def _inputs_reaching(graph, node: str, names: List[str]) -> List[str]:
    """The inputs among `names` the node `node` depends on, in a tf.Graph or an ONNX model."""
    if graph is None:
        return []
    producers: Dict[str, List[str]] = {}
    if hasattr(graph, "get_operations"):   # a tf.Graph
        for op in graph.get_operations():
            producers[op.name] = [t.op.name for t in op.inputs]
        start = [node]
    else:   # an onnx ModelProto: tensor names
        by_output = {}
        for onnx_node in graph.graph.node:
            for out in onnx_node.output:
                by_output[out] = list(onnx_node.input)
        start = [o for n in graph.graph.node if n.name == node for o in n.output]
        producers = by_output
    seen, stack = set(), list(start)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        stack.extend(producers.get(name, ()))
    return [n for n in names if n in seen]
