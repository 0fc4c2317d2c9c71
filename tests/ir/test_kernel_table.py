"""ir/onnx/kernels.py, onnxruntime's CPU kernel table, against the installed onnxruntime: for
a representative set of ops, every dtype the op's schema allows is tried in a one-node model;
the table must list exactly the dtypes whose session can be made (a missing kernel fails
with NOT_IMPLEMENTED), so a wrong entry, or an onnxruntime that gained a kernel, fails here."""

from __future__ import annotations

from typing import Optional

import onnx
import onnxruntime as ort
import pytest
from onnx import helper

from tf2ir.ir.onnx.kernels import (
    CARRIERS, KERNELS, OPSET, bfloat16_ops, carrier, has_kernel, kernel_types, lacking, via,
)
from tf2ir.ir.onnx.writer import ONNX_DTYPES

DTYPES = ("bfloat16", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
          "uint8", "uint16", "uint32", "uint64", "bool", "string")

# op -> (its inputs: "T" for the probed dtype, else a fixed dtype or "" for an absent one; attrs;
# output count). The workarounds' ops: bfloat16 everywhere, float64 trig, Where/Min/Max on
# bool and 16-bit ints, BitShift on signed ints, small ints in arithmetic and reductions.
SIGNATURES = {
    "Add": (["T", "T"], {}, 1), "Div": (["T", "T"], {}, 1), "Pow": (["T", "T"], {}, 1),
    "Mod": (["T", "T"], {"fmod": 1}, 1), "Max": (["T", "T"], {}, 1), "Min": (["T", "T"], {}, 1),
    "Equal": (["T", "T"], {}, 1), "Less": (["T", "T"], {}, 1), "MatMul": (["T", "T"], {}, 1),
    "Where": (["bool", "T", "T"], {}, 1), "Clip": (["T", "T", "T"], {}, 1),
    "BitShift": (["T", "T"], {"direction": "LEFT"}, 1), "BitwiseAnd": (["T", "T"], {}, 1),
    "Neg": (["T"], {}, 1), "Abs": (["T"], {}, 1), "Sign": (["T"], {}, 1), "Relu": (["T"], {}, 1),
    "Floor": (["T"], {}, 1), "Round": (["T"], {}, 1), "Sqrt": (["T"], {}, 1),
    "Tan": (["T"], {}, 1), "Asin": (["T"], {}, 1), "Atan": (["T"], {}, 1), "Cosh": (["T"], {}, 1),
    "Atanh": (["T"], {}, 1), "Tanh": (["T"], {}, 1), "Erf": (["T"], {}, 1),
    "IsNaN": (["T"], {}, 1), "IsInf": (["T"], {}, 1), "Softmax": (["T"], {}, 1),
    "ReduceSum": (["T"], {}, 1), "ReduceMax": (["T"], {}, 1), "ReduceProd": (["T"], {}, 1),
    "ArgMax": (["T"], {}, 1), "CumSum": (["T", "int64"], {}, 1), "TopK": (["T", "int64"], {}, 2),
    "NonZero": (["T"], {}, 1), "Unique": (["T"], {}, 1), "Range": (["T", "T", "T"], {}, 1),
    "MaxPool": (["T"], {"kernel_shape": [1, 1]}, 1), "Conv": (["T", "T"], {}, 1),
    "Resize": (["T", "", "float32"], {"mode": "nearest"}, 1), "Pad": (["T", "int64"], {}, 1),
    "Tile": (["T", "int64"], {}, 1), "Size": (["T"], {}, 1),
    "Transpose": (["T"], {}, 1), "Gather": (["T", "int64"], {}, 1),
    "Concat": (["T", "T"], {"axis": 0}, 1), "Cast": (["T"], {"to": onnx.TensorProto.FLOAT}, 1),
}


def session_made(op: str, dtype: str) -> Optional[bool]:
    """Whether onnxruntime's CPU provider makes a session of one `op` node on `dtype`: True,
    False for a missing kernel (NOT_IMPLEMENTED), None when the op's schema refuses the dtype."""
    inputs, attrs, outputs = SIGNATURES[op]
    names = [f"x{i}" if kind else "" for i, kind in enumerate(inputs)]
    infos = [helper.make_tensor_value_info(name, ONNX_DTYPES[dtype if kind == "T" else kind], None)
             for name, kind in zip(names, inputs) if kind]
    outs = [f"y{i}" for i in range(outputs)]
    graph = helper.make_graph([helper.make_node(op, names, outs, **attrs)], "probe", infos,
                              [helper.make_value_info(name, onnx.TypeProto()) for name in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 9
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as error:      # onnxruntime's own exception classes
        if "NOT_IMPLEMENTED" in str(error) or "Could not find an implementation" in str(error):
            return False
        if "Type Error" in str(error):
            return None
        raise
    return True


@pytest.mark.parametrize("op", sorted(SIGNATURES))
def test_the_table_lists_exactly_the_dtypes_onnxruntime_runs(op):
    assert op in KERNELS
    made = {dtype: session_made(op, dtype) for dtype in DTYPES}
    runs = {dtype for dtype, ok in made.items() if ok}
    missing = {dtype for dtype, ok in made.items() if ok is False}
    assert runs, f"{op}: no dtype runs (the probe is wrong)"
    assert {d for d in runs if not has_kernel(op, d)} == set(), f"{op}: kernels the table lacks"
    assert {d for d in missing if has_kernel(op, d)} == set(), f"{op}: kernels the table claims"


def test_the_gaps_the_workarounds_cover():
    # the facts the workarounds were written for, spelled out
    assert not has_kernel("Add", "bfloat16") and has_kernel("Add", "float16")
    assert lacking("Asin", ("float32", "float64")) == ("float64",)
    assert not has_kernel("Where", "bool") and not has_kernel("Where", "int16")
    assert lacking("Max", ("int8", "int16", "uint16")) == ("int16", "uint16")
    assert kernel_types("BitShift", ("int32", "uint32")) == ("uint32",)
    assert lacking("ReduceSum", ("int8", "uint8", "int32", "uint32")) == ("int8", "uint8", "uint32")


def test_carriers_and_via_tables_follow_the_kernels():
    assert carrier("Where", "bool") == "uint8"
    assert carrier("Max", "uint16") == "uint32"       # its first carrier with a kernel
    assert carrier("Where", "uint16") == "uint32"
    assert carrier("ReduceSum", "uint16") == "int32"  # uint32 has no kernel there
    assert carrier("Add", "float32") == "float32"
    assert carrier("BitShift", "int8") is None
    table = {"int16": "int32", "uint16": "int32", "int8": "int32"}
    assert via("Max", table) == {"int16": "int32", "uint16": "int32"}   # int8 has a kernel
    for dtype, wides in CARRIERS.items():
        assert dtype not in wides


def test_the_bfloat16_pass_reads_the_table():
    from tf2ir.ir.onnx.passes.bfloat16 import BFLOAT16_CPU_KERNELS
    assert BFLOAT16_CPU_KERNELS == bfloat16_ops()
    assert {"Cast", "Reshape", "Transpose", "Sign"} <= BFLOAT16_CPU_KERNELS
    assert not {"Add", "MatMul", "Where"} & BFLOAT16_CPU_KERNELS
