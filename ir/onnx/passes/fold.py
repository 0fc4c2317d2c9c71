"""Constant folding on the lowered ONNX graph: a deterministic default-domain node whose inputs
are all initializers becomes initializers (e.g. batch-norm's Sqrt of its variance), computed by
onnx's reference evaluator (`onnx.reference`: the implementation of the node's op at the passes'
opset), so that the values are ONNX's own (integer Div truncates, Gather reads negative indices,
Reshape copies 0 dims). The IR folder (ir/passes/fold.py) folds by prototype fold functions
before lowering; this one folds what the lowerings and the other passes leave.

Refused, as before: nodes owning subgraphs, random ops, results that are strings, results other
than the dtype ONNX declares (a numpy promotion), outputs that are graph outputs or that
subgraphs read. The size rule is ir/fold_limits.py's, shared with the IR folder: a result
larger than FOLD_LIMIT_BYTES and than its inputs together is not folded, and where a result can
be larger than its inputs (a broadcast, Gather, Expand, Tile, Range, MatMul ...) its size is
known first (from the shapes, else from onnx's shape inference of the one node) so that
nothing huge is computed.

`onnx.reference` costs about 0.3 s to import, a quarter of a ResNet50 conversion: it is imported
at the first node only it can fold, and a conversion with nothing to fold never imports it."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from tf2ir.ir.fold_limits import FOLD_LIMIT_BYTES, broadcast_elements, fits, fold_limit
from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode
from tf2ir.ir.onnx.opset import MAX_OPSET, OPSET

__all__ = ["FOLD_LIMIT_BYTES", "fold_lowered_constants", "evaluate"]

# Results that are not a function of the inputs, or not tensors.
_REFUSED = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
            "Multinomial", "Bernoulli", "Dropout", "Constant", "Optional", "OptionalGetElement",
            "OptionalHasElement", "SequenceConstruct", "SequenceEmpty", "SequenceInsert",
            "SequenceErase", "SequenceAt", "SequenceLength", "SplitToSequence",
            "ConcatFromSequence", "If", "Loop", "Scan", "SequenceMap",
            "DequantizeLinear"}   # int8 weights through it: the QDQ form onnxruntime fuses
# Ops whose result has as many elements as an input at most (all of them for Concat/Split),
# and ops whose inputs broadcast: their size bound needs no inference.
_NO_LARGER = {
    "Identity", "Cast", "CastLike", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten",
    "Concat", "Split", "Slice", "Shape", "Size", "Abs", "Neg", "Sqrt", "Reciprocal", "Exp",
    "Log", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
    "Atanh", "Floor", "Ceil", "Round", "Sign", "Erf", "Not", "BitwiseNot", "IsNaN", "IsInf",
    "Relu", "LeakyRelu", "Elu", "Selu", "Celu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
    "Softplus", "Softsign", "Mish", "Softmax", "LogSoftmax", "Hardmax", "Clip", "Trilu",
    "CumSum", "ArgMax", "ArgMin", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
    "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare",
    "DepthToSpace", "SpaceToDepth", "Compress", "GatherElements", "TopK", "ReverseSequence"}
_BROADCASTING = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean",
                 "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor",
                 "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Where", "PRelu"}


# Special case, measured (issue 22): importing onnx.reference (with its op table) takes 0.45-0.5 s
# here, half a ResNet50 conversion's floor, and nearly every CNN leaves this pass batch norm's
# arithmetic on its statistics (Sqrt, Reciprocal, Mul, Sub, Add of eps; ResNet50: 53 Sqrt) and
# the Unsqueeze of a constant (EfficientNetB0: 48), and an Identity costs nothing. For floats of one dtype numpy computes
# exactly what ONNX does for these, so they are folded with numpy and such conversions never
# import onnx.reference; integers (ONNX's Div truncates) and everything else go to it.
def _unsqueeze(x: np.ndarray, axes: np.ndarray) -> np.ndarray:
    rank = x.ndim + axes.size
    out = x
    for axis in sorted(int(a) % rank for a in axes.ravel()):
        out = np.expand_dims(out, axis)
    return out


_FLOAT_OPS: Dict[str, Callable[..., np.ndarray]] = {
    "Sqrt": np.sqrt, "Reciprocal": np.reciprocal, "Neg": np.negative, "Add": np.add,
    "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}


def _by_numpy(node: OnnxNode, arrays: Sequence[Optional[np.ndarray]]) -> Optional[np.ndarray]:
    """The special case's result, or None where the node is not one of it."""
    present = [a for a in arrays if a is not None]
    if len(node.output) != 1 or len(present) != len(arrays):
        return None
    x = present[0]
    if x.dtype.kind in "OSU":
        return None     # strings are not folded (nor by the reference evaluator)
    if node.op_type == "Identity" and len(present) == 1:
        return x
    if node.op_type == "Unsqueeze" and len(present) == 2 and present[1].dtype == np.int64:
        return _unsqueeze(x, present[1])
    fn = _FLOAT_OPS.get(node.op_type)
    if fn is None or not _is_float(x.dtype) or any(a.dtype != x.dtype for a in present) \
            or len(present) != (1 if node.op_type in ("Sqrt", "Reciprocal", "Neg") else 2):
        return None
    result = np.asarray(fn(*present))
    return result if result.dtype == x.dtype else None


def _is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype.name == "bfloat16"


def fold_lowered_constants(g: OnnxGraph) -> int:
    """Replace foldable nodes by initializers of their output names, in graph order (so that
    chains fold through); return how many nodes were folded."""
    folded = 0
    pinned = g.pinned           # folding never changes what is pinned
    for node in g:
        arrays = _constant_inputs(g, node, pinned)
        if arrays is None:
            continue
        results = _fold(node, arrays)
        if results is None:
            continue
        g.remove(node, keep_uses=True)          # its readers read the initializers instead
        for name, result in zip(node.output, results):
            if name:
                # (np.ascontiguousarray would make a 0-d result 1-d)
                g.initializers[name] = result if result.flags.c_contiguous \
                    else result.copy(order="C")
                g.ranks[name] = result.ndim
        folded += 1
    return folded


def _constant_inputs(g: OnnxGraph, node: OnnxNode,
                     pinned: Set[str]) -> Optional[List[Optional[np.ndarray]]]:
    """The input arrays of a fold candidate (None for an absent optional input), or None."""
    if not node.standard or node.op_type in _REFUSED or not node.input or node.subgraphs:
        return None
    arrays: List[Optional[np.ndarray]] = []
    for name in node.input:
        if name and name not in g.initializers:
            return None
        arrays.append(g.initializers[name] if name else None)
    if all(a is None for a in arrays) or not any(node.output) \
            or not pinned.isdisjoint(node.output):
        return None
    return arrays


def _fold(node: OnnxNode, arrays: Sequence[Optional[np.ndarray]]) -> Optional[List[np.ndarray]]:
    """The node's results, within the size rule and of the dtypes ONNX declares, or None."""
    given = [a for a in arrays if a is not None]
    if not fits(_result_bytes(node, arrays), given):
        return None
    try:
        with np.errstate(all="ignore"):
            result = _by_numpy(node, arrays)
    except (ValueError, TypeError, IndexError):
        return None
    if result is not None:
        return [result] if _small(result, inputs=given) else None
    results = evaluate(node, arrays)
    if results is None or not _small(*results, inputs=given) \
            or any(r.dtype.kind in "OSU" for r in results):
        return None
    return results


def _small(*results: np.ndarray, inputs: Sequence[np.ndarray]) -> bool:
    return sum(r.nbytes for r in results) <= fold_limit(inputs)


def _result_bytes(node: OnnxNode, arrays: Sequence[Optional[np.ndarray]]) -> Optional[int]:
    """An upper bound of the bytes of the node's results, known before computing them; None
    where it stays unknown (the node is not folded)."""
    given = [a for a in arrays if a is not None]
    itemsize = max(a.itemsize for a in given)
    op = node.op_type
    if op in _NO_LARGER:
        return 0        # no more elements than its inputs: checked on the result
    if op in _BROADCASTING:
        count = broadcast_elements([a.shape for a in given])
        return None if count is None else count * max(itemsize, 1)
    if op == "Gather" and len(given) == 2 and given[0].ndim:
        x, indices = given
        axis = node.attr("axis", 0)
        try:
            return indices.size * (x.size // max(x.shape[axis], 1)) * x.itemsize
        except (IndexError, TypeError):
            return None
    if sum(a.nbytes for a in given) > FOLD_LIMIT_BYTES:
        return None     # inference would copy them all
    return _inferred_bytes(node, arrays)


# -- onnx's reference evaluator and shape inference (imported at the first candidate) ---------
_IMPLEMENTATIONS: Dict[str, Any] = {}       # op type -> (class, version), or None: cannot


def _version(op_type: str) -> Optional[int]:
    """The opset whose version of `op_type` the passes' graph holds: OPSET's, else (an op
    newer than it, Gelu) MAX_OPSET's."""
    from onnx import defs
    for opset in (OPSET, MAX_OPSET):
        try:
            defs.get_schema(op_type, opset)
            return opset
        except defs.SchemaError:
            continue
    return None


def _implementation(op_type: str) -> Optional[Tuple[Any, int]]:
    if op_type not in _IMPLEMENTATIONS:
        found = None
        version = _version(op_type)
        if version is not None:
            from onnx.reference.ops import load_op
            try:
                found = (load_op("", op_type, version), version)
            except Exception:   # a function op (Gelu), or none in this onnx
                found = None
        _IMPLEMENTATIONS[op_type] = found
    return _IMPLEMENTATIONS[op_type]


def evaluate(node: OnnxNode, arrays: Sequence[Optional[np.ndarray]]) -> Optional[List[np.ndarray]]:
    """The node's results by onnx's reference implementation of its op (None for an absent
    input), checked against the op's schema (count, dtype); None where it cannot."""
    found = _implementation(node.op_type)
    if found is None:
        return None
    cls, version = found
    from onnx.reference import ReferenceEvaluator
    params = {"log": lambda *_: None, "opsets": {"": version}, "verbose": 0, "new_ops": None,
              "existing_functions": {}, "evaluator_cls": ReferenceEvaluator}
    try:
        with np.errstate(all="ignore"):
            results = cls(node.to_proto(), params).run(*arrays)
    except Exception:       # what the op refuses (a bad shape or attribute): the node stays
        return None
    results = [np.asarray(r) for r in results]
    if len(results) < len(node.output) or not _declared_dtypes(
            node, version, arrays, results):
        return None
    return results[:len(node.output)]


def _declared_dtypes(node: OnnxNode, version: int, arrays: Sequence[Optional[np.ndarray]],
                     results: Sequence[np.ndarray]) -> bool:
    """Whether each result has a dtype the op's schema allows for its output, the same as
    the inputs sharing its type variable (numpy promoting int32 with int64 is not ONNX)."""
    from onnx import TensorProto, defs, helper
    schema = defs.get_schema(node.op_type, version)
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}

    def type_str(params, index):
        return params[min(index, len(params) - 1)].type_str if params else None

    for index, result in enumerate(results[:len(node.output)]):
        try:
            name = TensorProto.DataType.Name(helper.np_dtype_to_tensor_dtype(result.dtype))
        except (KeyError, ValueError, TypeError):
            return False
        declared = type_str(schema.outputs, index)
        if f"tensor({name.lower()})" not in allowed.get(declared, {declared}):
            return False
        for k, array in enumerate(arrays):
            if array is not None and type_str(schema.inputs, k) == declared \
                    and declared in allowed and array.dtype != result.dtype:
                return False
    return True


def _inferred_bytes(node: OnnxNode, arrays: Sequence[Optional[np.ndarray]]) -> Optional[int]:
    """The bytes of the node's results by onnx's shape inference of a model of the node alone,
    its inputs as initializers; None where a shape or dtype stays unknown."""
    from onnx import helper, numpy_helper, shape_inference
    version = _version(node.op_type)
    if version is None:
        return None
    proto = node.to_proto()
    inits = [numpy_helper.from_array(a, name) for a, name in zip(arrays, proto.input)
             if a is not None]
    model = helper.make_model(helper.make_graph([proto], "fold", [], [], inits),
                              opset_imports=[helper.make_opsetid("", version)])
    model.ir_version = 9
    try:
        inferred = shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:       # onnx's inference refuses the node: it stays
        return None
    types = {v.name: v.type.tensor_type for v in inferred.graph.value_info}
    total = 0
    for name in proto.output:
        if not name:
            continue
        tensor = types.get(name)
        if tensor is None or not tensor.HasField("shape") or not tensor.elem_type \
                or any(not d.HasField("dim_value") for d in tensor.shape.dim):
            return None
        try:
            itemsize = helper.tensor_dtype_to_np_dtype(tensor.elem_type).itemsize
        except (KeyError, TypeError, ValueError):
            return None
        total += math.prod(d.dim_value for d in tensor.shape.dim) * itemsize
    return total
