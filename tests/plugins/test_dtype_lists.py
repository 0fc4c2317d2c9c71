"""Each mapped TF op's dtype list against TF's op registry (issue 20, class 4): for every
built-in mapping, the types TF allows for the op's first input (its type attr's allowed_values)
are compared with the dtypes the IR prototype declares for its input 0. Quantized types have no
ONNX form and are left out. Where tf2ir is narrower, the gap must be in NARROWER with its
reason; a new gap fails, and so does an entry whose gap has closed (remove it)."""

from __future__ import annotations

import pytest

QUANTIZED = {"qint8", "quint8", "qint16", "quint16", "qint32"}
C = {"complex64", "complex128"}
INTS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}

COMPLEX_PAIRS = ("complex values are (real, imaginary) float pairs inside the ONNX graph and only "
                 "the ops of tf2ir.opp.spectral/complexmath read them; this op has no pair lowering")
REASONS = {
    "complex": COMPLEX_PAIRS,
    "no_int_kernel": "onnxruntime has no integer kernel for it and no exact float carrier is "
                     "declared (int64 does not fit a float64 exactly)",
    "string": "string arithmetic/formatting has no ONNX opset 18 op (not lowered)",
    "variant": "variant tensors have no ONNX form",
    "not_lowered": "a dtype TF allows that the lowering has not been written or checked for",
}
# op → (the types tf2ir lacks, reason key)
NARROWER = {
    **{op: (C, "complex") for op in (
        "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "BatchMatMul", "BatchMatMulV2",
        "BatchMatMulV3", "ClipByValue", "Cosh", "Cumprod", "Cumsum", "DivNoNan", "EuclideanNorm",
        "Expm1", "FloorDiv", "Log1p", "MatMul", "MatrixDeterminant", "MatrixInverse", "Mean",
        "MulNoNan", "OnesLike", "Pow", "Prod", "Round", "Rsqrt", "SegmentMean", "SegmentProd",
        "SegmentSum", "Sigmoid", "Sign", "Sinh", "SquaredDifference", "Sum", "Tan", "Tanh",
        "TruncateDiv", "UnsortedSegmentProd", "UnsortedSegmentSum", "Xdivy", "Xlogy")},
    "Add": ({"string"}, "string"),
    "AsString": (C | {"string", "variant"}, "string"),
    "Conj": ({"variant"}, "variant"),
    "ApproximateEqual": (C | INTS, "not_lowered"),
    "Conv2D": ({"int32"}, "no_int_kernel"),
    "ExtractImagePatches": (C | INTS | {"bfloat16", "bool", "float64"}, "not_lowered"),
    "Inv": ({"int8", "int16", "int32", "int64"}, "not_lowered"),
    "Reciprocal": ({"int8", "int16", "int32", "int64"}, "not_lowered"),
    "MaxPoolWithArgmax": ({"int64", "uint64"}, "no_int_kernel"),
    "Multinomial": (INTS, "not_lowered"),
    "StatelessMultinomial": (INTS, "not_lowered"),
    "OneHot": ({"int8"}, "not_lowered"),
    "RaggedRange": ({"bfloat16"}, "not_lowered"),
    "ResizeArea": ({"bfloat16"}, "not_lowered"),
    "RealDiv": (INTS, "not_lowered"),
    "Relu": ({"int16", "uint8", "uint16", "uint32", "uint64"}, "not_lowered"),
    "Relu6": ({"int16", "uint8", "uint16", "uint32", "uint64"}, "not_lowered"),
    "ScatterNd": ({"int16"}, "not_lowered"),
}


def _gaps():
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry
    from tests.conformance.harness import _manager
    from tf2ir.ir.prototype import get_prototype
    manager = _manager()
    manager.registry                      # the built-in prototypes registered
    gaps, compared = {}, 0
    for reg in manager.registrations:
        if reg.framework != "TENSORFLOW" or not reg.plugin.startswith("builtin_") or reg.fusion:
            continue
        proto = get_prototype(reg.ir_type)
        declared = proto.inputs[0].dtypes if proto.inputs else None
        for origin in reg.origin_types:
            op = op_def_registry.get(origin)
            if op is None or not op.input_arg or not op.input_arg[0].type_attr:
                continue
            attr = next(a for a in op.attr if a.name == op.input_arg[0].type_attr)
            allowed = {tf.as_dtype(t).name for t in attr.allowed_values.list.type}
            if not allowed or declared is None:
                continue
            compared += 1
            gap = allowed - QUANTIZED - set(declared)
            if gap:
                gaps[origin] = gap
    return gaps, compared


def test_dtype_lists_are_tfs_or_the_gap_has_a_reason():
    gaps, compared = _gaps()
    assert compared > 150                 # the comparison ran over the mapped ops
    new = {op: sorted(gap - NARROWER.get(op, (set(), ""))[0]) for op, gap in gaps.items()}
    new = {op: gap for op, gap in new.items() if gap}
    assert not new, f"narrower than TF with no reason in NARROWER: {new}"
    closed = {op: sorted(types - gaps.get(op, set())) for op, (types, _) in NARROWER.items()}
    closed = {op: types for op, types in closed.items() if types}
    assert not closed, f"NARROWER lists types tf2ir now takes (remove them): {closed}"
    assert {reason for _, reason in NARROWER.values()} <= set(REASONS)


@pytest.mark.parametrize("op_type", ["Cos", "Sin", "Exp", "Mul", "Add", "Neg", "Sqrt"])
def test_complex_elementwise_ops_take_complex(op_type):
    from tf2ir.ir.prototype import get_prototype
    from tests.conformance.harness import _manager
    _manager().registry
    assert C <= set(get_prototype(op_type).inputs[0].dtypes)
