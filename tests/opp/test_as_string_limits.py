"""AsString's width and precision are bounded (4,096 characters): a crafted model's attribute
must not make every output string gigabytes. Native and Python kernels refuse alike, and the
conversion refuses such a graph."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import tf2ir
from tf2ir.ir.onnx.runtime import KernelError
from tf2ir.opp.strings import MAX_FIELD, as_string_format


def _model(**attrs):
    node = helper.make_node("AsString", ["x"], ["y"], name="fmt", domain="ai.tf2ir.strings",
                            **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.STRING, [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                   helper.make_opsetid("ai.tf2ir.strings", 1)])


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("attrs", [{"width": 2_000_000_000}, {"precision": 1_000_000_000}])
def test_a_huge_field_is_refused_not_allocated(native, attrs):
    session = tf2ir.InferenceSession(_model(**attrs), native=native)
    with pytest.raises(KernelError, match="over tf2ir's limit of 4096 characters"):
        session.run(None, {"x": np.array([1.5, 2.0], np.float32)})


@pytest.mark.parametrize("native", [True, False])
def test_the_limit_itself_formats(native):
    session = tf2ir.InferenceSession(_model(width=MAX_FIELD), native=native)
    (out,) = session.run(None, {"x": np.array([1.5, 2.0], np.float32)})
    assert [len(s) for s in out] == [MAX_FIELD, MAX_FIELD] and out[0].strip() == "1.500000"


def test_the_conversion_check_refuses_it():
    with pytest.raises(ValueError, match="over tf2ir's limit"):
        as_string_format("float32", -1, False, False, MAX_FIELD + 1, "")
