"""onnxruntime's CPU kernels, in one table: for each ONNX op (at the version the opset that
compile.py writes gives it) the dtypes onnxruntime's CPU provider runs.

Every dtype workaround reads this table: opp's lowerings that compute in a carrier dtype (a
wider dtype holding every value, then a Cast back: `carrier`, `via`), opp's kernel lists
(`kernel_types`) and the bfloat16 pass (`bfloat16_ops`). A newer onnxruntime that adds a
kernel is one line changed here; tests/ir/test_kernel_table.py checks the table against the
installed onnxruntime by building one-node models (a missing kernel fails with NOT_IMPLEMENTED).

Checked against onnxruntime 1.32.0 (CPUExecutionProvider), opset 18. A dtype counts when a
session of one node of that dtype can be made: float16 counts where onnxruntime runs the node
in float32 between its own Casts. The dtype is that of the op's data operand (T; Where: X and
Y; Cast: its input; control flow and sequences: the tensors they carry). A dtype missing from an entry has no kernel, or the op's schema does not
allow it. An op absent from the table is taken to run every dtype its schema allows."""

from __future__ import annotations

import functools
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

ORT_VERSION = "1.32.0"
OPSET = 18

_FLOATS = "float16 float32 float64"
_INTS = "int8 int16 int32 int64 uint8 uint16 uint32 uint64"
_NUMBERS = f"{_FLOATS} {_INTS}"                       # every number dtype but bfloat16
_ANY = f"bfloat16 {_NUMBERS} bool string"             # type-agnostic kernels (data movement)

_TABLE = {
    # elementwise arithmetic and comparison: everything but bfloat16
    "Add": _NUMBERS, "Sub": _NUMBERS, "Mul": _NUMBERS, "Div": _NUMBERS, "Mod": _NUMBERS,
    "Abs": _NUMBERS, "Less": _NUMBERS, "Greater": _NUMBERS, "LessOrEqual": _NUMBERS,
    "GreaterOrEqual": _NUMBERS, "Equal": f"{_NUMBERS} bool",
    "Pow": "float16 float32 float64 int32 int64",
    "Max": "float16 float32 float64 int8 int32 int64 uint8 uint32 uint64",      # no int16/uint16
    "Min": "float16 float32 float64 int8 int32 int64 uint8 uint32 uint64",
    "Clip": "float16 float32 float64 int8 int32 int64 uint8 uint32 uint64",
    "Neg": "float16 float32 float64 int8 int16 int32 int64",
    "Sign": f"bfloat16 {_NUMBERS}",
    "MatMul": "float16 float32 float64 int32 int64 uint32 uint64",
    "Einsum": "float16 float32 float64 int32 int64",
    "Relu": "float16 float32 float64 int8 int32 int64",
    # float math
    "Floor": _FLOATS, "Ceil": _FLOATS, "Round": _FLOATS, "Sqrt": _FLOATS, "Exp": _FLOATS,
    "Log": _FLOATS, "Reciprocal": _FLOATS, "Sin": _FLOATS, "Cos": _FLOATS, "Tanh": _FLOATS,
    "Sigmoid": _FLOATS, "Softplus": _FLOATS, "Softsign": _FLOATS, "Elu": _FLOATS, "Selu": _FLOATS,
    "LeakyRelu": _FLOATS, "HardSigmoid": _FLOATS, "Softmax": _FLOATS, "LogSoftmax": _FLOATS,
    "IsNaN": _FLOATS, "IsInf": "float32 float64", "Sum": _FLOATS, "DFT": _FLOATS,
    # no float64 kernels: the inverse and hyperbolic trig ops, Erf
    "Tan": "float16 float32", "Asin": "float16 float32", "Acos": "float16 float32",
    "Atan": "float16 float32", "Sinh": "float16 float32", "Cosh": "float16 float32",
    "Asinh": "float16 float32", "Acosh": "float16 float32", "Atanh": "float16 float32",
    "Erf": "float16 float32", "Mean": "float16 float32", "Det": "float16 float32",
    "Conv": "float16 float32", "AveragePool": "float16 float32",
    # reductions, scans, selection
    "ReduceSum": "float16 float32 float64 int32 int64",
    "ReduceMean": "float16 float32 float64 int32 int64",
    "ReduceProd": "float16 float32 float64 int32 int64",
    "ReduceL2": "float16 float32 float64 int32 int64",
    "ReduceSumSquare": "float16 float32 float64 int32 int64",
    "CumSum": "float16 float32 float64 int32 int64",
    "ReduceMax": "float16 float32 float64 int8 int32 int64 uint8",
    "ReduceMin": "float16 float32 float64 int8 int32 int64 uint8",
    "ArgMax": "float16 float32 float64 int8 int32 int64 uint8",
    "ArgMin": "float16 float32 float64 int8 int32 int64 uint8",
    "TopK": "float16 float32 float64 int8 int16 int32 int64 uint8",
    "Where": "float16 float32 float64 int8 int32 int64 uint8 uint32 string",   # no bool/int16/uint16
    "NonZero": "float16 float32 int32 int64 uint8 bool",
    "Unique": "float16 float32 float64 int8 int64 string",
    "Range": "float32 float64 int16 int32 int64",
    "MaxPool": "float16 float32 float64 int8 uint8",
    "Resize": "float16 float32 int8 int32 uint8",
    "DepthToSpace": "float16 float32 float64 int8 uint8",
    "SpaceToDepth": "float16 float32 float64 int8 uint8",
    "Trilu": "float16 float32 float64 int32 int64 bool",
    "Pad": "float16 float32 float64 int8 int32 int64 uint8 uint32 uint64 bool",
    "LayerNormalization": f"bfloat16 {_FLOATS}",
    # bits and logic
    "BitShift": "uint8 uint16 uint32 uint64",        # no signed ints
    "BitwiseAnd": _INTS, "BitwiseOr": _INTS, "BitwiseXor": _INTS, "BitwiseNot": _INTS,
    "And": "bool", "Or": "bool", "Xor": "bool", "Not": "bool",
    # data movement: every dtype (bfloat16 where listed)
    "Expand": f"{_NUMBERS} bool string", "Tile": f"{_NUMBERS} bool string",
    "Size": f"{_NUMBERS} bool string", "ConstantOfShape": f"bfloat16 {_NUMBERS} bool",
    **{op: _ANY for op in (
        "Cast", "Compress", "Concat", "ConcatFromSequence", "Flatten", "Gather",
        "GatherElements", "GatherND", "Identity", "If", "Loop", "Optional", "OptionalGetElement",
        "OptionalHasElement", "Reshape", "ReverseSequence", "Scan", "ScatterElements", "ScatterND",
        "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert",
        "SequenceLength", "Shape", "Slice", "Split", "SplitToSequence", "Squeeze", "Transpose",
        "Unsqueeze")},
    # random draws shaped like a tensor: float outputs (bfloat16 too)
    "RandomNormalLike": f"bfloat16 {_FLOATS}", "RandomUniformLike": f"bfloat16 {_FLOATS}",
    "Shrink": f"bfloat16 {_NUMBERS}",
}

KERNELS: Dict[str, FrozenSet[str]] = {op: frozenset(types.split()) for op, types in _TABLE.items()}

# ONNX's elementwise arithmetic takes 8- and 16-bit integers from opset 14 on (Add, Sub, Mul, Div
# 14; Relu takes integers at all from 14): the lowerings' forms for opset 13 compute them in a
# carrier (SMALL_INTS_FROM_14 dropped from their kernel lists)
ARITHMETIC_FROM_14 = ("Add", "Sub", "Mul", "Div")
SMALL_INTS_FROM_14 = ("int8", "int16", "uint8", "uint16")
BEFORE_14 = (13, 13)           # the opsets of those forms

# onnxruntime has no float64 kernel for these (nor an int64 one for Relu); it runs their ONNX
# function bodies at opset 18 only (measured with onnxruntime 1.32: 13-17 and 19-28 fail with
# NOT_IMPLEMENTED): the lowerings' forms for the other opsets write their formulas. The
# default lowers for opset 20 (Gelu's), so it writes the formulas too, for these dtypes only.
FLOAT64_BY_FUNCTION_BODY = ("Elu", "LeakyRelu", "Softplus", "Softsign")
WITHOUT_BODIES = ((13, 17), (19, None))

# A dtype's carriers, preferred first: each holds every value of the dtype exactly (uint64 in
# int64 keeps the bits only, which is all that selection needs).
CARRIERS: Dict[str, Tuple[str, ...]] = {
    "bfloat16": ("float32",), "float16": ("float32",), "int8": ("int32",), "int16": ("int32",),
    "uint8": ("int32",), "uint16": ("uint32", "int32"), "uint32": ("int64",),
    "uint64": ("int64",), "bool": ("uint8", "int32")}


def has_kernel(op: str, dtype: str) -> bool:
    """Whether onnxruntime's CPU provider runs ONNX `op` on `dtype` (see the module's note)."""
    types = KERNELS.get(op)
    return types is None or dtype in types


def kernel_types(op: str, among: Iterable[str]) -> Tuple[str, ...]:
    """The dtypes of `among` (in its order) that `op` has kernels for."""
    return tuple(t for t in among if has_kernel(op, t))


def lacking(op: str, among: Iterable[str]) -> Tuple[str, ...]:
    """The dtypes of `among` that `op` has no kernel for."""
    return tuple(t for t in among if not has_kernel(op, t))


def carrier(op: str, dtype: str, carriers: Optional[Mapping[str, Sequence[str]]] = None) -> Optional[str]:
    """The dtype `op` computes `dtype` in: `dtype` itself when it has a kernel, else its first
    carrier (CARRIERS, or the `carriers` given) that has one; None when there is none."""
    if has_kernel(op, dtype):
        return dtype
    for wide in (CARRIERS if carriers is None else carriers).get(dtype, ()):
        if has_kernel(op, wide):
            return wide
    return None


def via(op: str, table: Mapping[str, str]) -> Dict[str, str]:
    """A `via` table (dtype -> the carrier it computes in) for `op`: the entries of `table`
    whose dtype `op` has no kernel for (a kernel that appears makes its entry drop out)."""
    return {dtype: wide for dtype, wide in table.items() if not has_kernel(op, dtype)}


def bfloat16_ops() -> FrozenSet[str]:
    """The ops with a bfloat16 CPU kernel (the bfloat16 pass leaves them alone)."""
    return frozenset(op for op, types in KERNELS.items() if "bfloat16" in types)


# -- the target opsets onnxruntime runs -------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def newest_runnable_opset() -> int:
    """The newest default-domain opset the installed onnx defines that the installed
    onnxruntime loads and has a CPU kernel for every op version of (deprecated ops aside)."""
    from onnx import defs
    for opset in range(defs.onnx_opset_version(), OPSET, -1):
        if _runtime_loads(opset) and not _kernel_gaps(opset):
            return opset
    return OPSET


def newest_loadable_opset() -> int:
    """The newest default-domain opset the installed onnx defines that the installed
    onnxruntime loads (it may lack kernels for some op versions there: newest_runnable_opset)."""
    from onnx import defs
    return next((o for o in range(defs.onnx_opset_version(), OPSET, -1) if _runtime_loads(o)),
                OPSET)


def _runtime_loads(opset: int) -> bool:
    import onnx
    from onnx import helper
    info = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "probe", [info],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])])
    return not _session_fails(graph, opset)   # it refuses an opset newer than it knows


def _session_fails(graph, opset: int) -> bool:
    """Whether onnxruntime refuses to build a CPU session of `graph` at `opset`."""
    import onnxruntime as ort
    from onnx import helper
    ids = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=ids,
                              ir_version=helper.find_min_ir_version_for(ids))
    try:
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception:
        return True
    return False


# ops whose kernels onnxruntime lists for every version but does not find for a newer one:
# each is probed with a one-node session (onnxruntime 1.32: the random ops' version 22)
PROBED = ("RandomUniformLike", "RandomNormalLike", "RandomUniform", "RandomNormal")


def _probe_fails(op_type: str, opset: int) -> bool:
    """Whether onnxruntime refuses a float32 one-node model of `op_type` at `opset`."""
    import onnx
    from onnx import helper
    like = op_type.endswith("Like")
    info = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])
    attrs: Dict[str, Any] = {} if like else {"shape": [2]}
    node = helper.make_node(op_type, ["x"] if like else [], ["y"], **attrs)
    graph = helper.make_graph([node], "probe", [info] if like else [],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
    return _session_fails(graph, opset)   # NOT_IMPLEMENTED: no kernel for that version


def _kernel_gaps(opset: int) -> List[str]:
    """Ops onnxruntime has CPU kernels for, but not for their version at `opset` (its kernel
    listing, and the PROBED ops tried)."""
    try:
        from onnxruntime.capi import _pybind_state as ort_c
        kernels = ort_c.get_all_opkernel_def()
    except Exception:            # an onnxruntime without the listing: trust its opset check
        return []
    ranges: Dict[str, List[Tuple[int, int]]] = {}
    for k in kernels:
        if k.provider == "CPUExecutionProvider" and k.domain in ("", "ai.onnx"):
            ranges.setdefault(k.op_name, []).append(tuple(k.version_range))
    gaps = []
    for op_type, spans in ranges.items():
        schema = _schema_at(op_type, opset)
        if schema is not None and not schema.deprecated and not any(
                lo <= schema.since_version <= hi for lo, hi in spans):
            gaps.append(f"{op_type}-{schema.since_version}")
    return gaps + [f"{op}-{_schema_at(op, opset).since_version}" for op in PROBED
                   if _schema_at(op, opset) is not None and _probe_fails(op, opset)]


def _schema_at(op_type: str, opset: int) -> Any:
    from onnx import defs
    try:
        return defs.get_schema(op_type, max_inclusive_version=opset, domain="")
    except defs.SchemaError:
        return None
