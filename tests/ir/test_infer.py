"""Verification against op prototypes: violations name the node; defaults; inferred shapes."""

from __future__ import annotations

import numpy as np
import pytest

from tf2ir.ir import ConversionError, Graph, TensorDesc, get_prototype
from tf2ir.ir.infer import infer_graph, infer_node


def graph_with(*descs):
    g = Graph()
    return g, [g.add_input(f"in{i}", d) for i, d in enumerate(descs)]


def f32(*shape):
    return TensorDesc("float32", tuple(shape))


def conv_attrs(**extra):
    return {"strides": [1, 1, 1, 1], "padding": "SAME", **extra}


def expect_failure(g, node_name, *fragments, model=None):
    with pytest.raises(ConversionError) as info:
        infer_graph(g, model=model)
    text = str(info.value)
    assert f"node '{node_name}'" in text, text
    for fragment in fragments:
        assert fragment in text, text
    return info.value


# -- violations -------------------------------------------------------------------------------
def test_wrong_input_count():
    g, (x,) = graph_with(f32(2, 2))
    g.add_node("Relu", [x, x], name="too_many")
    error = expect_failure(g, "too_many", "has 2 inputs", "op Relu")
    assert error.node == "too_many" and error.op_type == "Relu"


def test_too_few_inputs_for_a_fixed_prototype():
    g, (x,) = graph_with(f32(1, 4, 4, 1))
    w = g.add_const(np.ones((1, 1, 1, 1), np.float32), "w")
    g.add_node("Conv2D", [x, w], conv_attrs(), name="conv")   # bias slot must be given (None)
    expect_failure(g, "conv", "has 2 inputs", "bias?")


def test_dynamic_input_needs_its_fixed_ports():
    g, (x,) = graph_with(TensorDesc("int32", (2,)))
    g.add_node("ConcatV2", [], name="empty_concat")
    expect_failure(g, "empty_concat", "has 0 inputs", "x*", "concat_dim")


def test_wrong_output_count():
    g, (x,) = graph_with(f32(2))
    g.add_node("Relu", [x], name="two_outs", num_outputs=2)
    expect_failure(g, "two_outs", "has 2 outputs")


def test_missing_required_input():
    g, (x,) = graph_with(f32(2))
    g.add_node("Add", [x, None], name="half_add")
    expect_failure(g, "half_add", "required input 'x2' is missing")


def test_missing_required_attr():
    g, (x,) = graph_with(f32(1, 4, 4, 1))
    w = g.add_const(np.ones((1, 1, 1, 1), np.float32), "w")
    g.add_node("Conv2D", [x, w, None], {"padding": "SAME"}, name="conv")
    expect_failure(g, "conv", "required attribute 'strides'")


@pytest.mark.parametrize("attr, value, fragment", [
    ("padding", 3, "expected str"),
    ("strides", "1111", "expected a list"),
    ("strides", [1, 1.5, 1, 1], "expected int"),
    ("dilations", [True, 1, 1, 1], "expected int"),
])
def test_wrong_attr_type(attr, value, fragment):
    g, (x,) = graph_with(f32(1, 4, 4, 1))
    w = g.add_const(np.ones((1, 1, 1, 1), np.float32), "w")
    g.add_node("Conv2D", [x, w, None], conv_attrs(**{attr: value}), name="conv")
    expect_failure(g, "conv", f"attribute '{attr}'", fragment)


def test_wrong_input_dtype():
    g, (x,) = graph_with(TensorDesc("int32", (1, 4, 4, 1)))
    w = g.add_const(np.ones((1, 1, 1, 1), np.float32), "w")
    g.add_node("Conv2D", [x, w, None], conv_attrs(), name="int_conv")
    expect_failure(g, "int_conv", "input 'x' has dtype int32", "float32")


def test_wrong_dtype_for_an_index_input():
    g, (x,) = graph_with(f32(2, 3))
    shape = g.add_const(np.array([3, 2], np.float32), "shape")
    g.add_node("Reshape", [x, shape], name="bad_reshape")
    expect_failure(g, "bad_reshape", "input 'shape' has dtype float32")


def test_mismatched_operand_dtypes():
    g, (a, b) = graph_with(f32(2), TensorDesc("int32", (2,)))
    g.add_node("Add", [a, b], name="mixed")
    expect_failure(g, "mixed", "operand dtypes differ")


def test_incompatible_broadcast_shapes():
    g, (a, b) = graph_with(f32(2, 3), f32(4, 3))
    g.add_node("Mul", [a, b], name="bad_mul")
    error = expect_failure(g, "bad_mul", "do not broadcast", "op Mul")
    assert error.op_type == "Mul"


def test_failed_inference_names_the_node():
    g, (x,) = graph_with(f32(2, 3))
    shape = g.add_const(np.array([4], np.int32), "shape")
    g.add_node("Reshape", [x, shape], name="bad_reshape")
    expect_failure(g, "bad_reshape", "cannot reshape")


def test_unknown_op_type():
    g, (x,) = graph_with(f32(2))
    g.add_node("NoSuchOp", [x], name="mystery")
    expect_failure(g, "mystery", "has no op prototype")


def test_error_names_the_model():
    g, (x,) = graph_with(f32(2))
    g.add_node("NoSuchOp", [x], name="mystery")
    error = expect_failure(g, "mystery", "model net.pb", model="net.pb")
    assert error.model == "net.pb"


def test_subgraph_nodes_are_verified():
    g, (x,) = graph_with(f32(2))
    outer = g.add_node("Identity", [x], name="outer")
    body = Graph("body")
    y = body.add_input("y", f32(2))
    body.add_node("Relu", [y, y], name="inner_bad")
    outer.subgraphs["body"] = body
    expect_failure(g, "inner_bad", "has 2 inputs")


# -- defaults and normalisation ---------------------------------------------------------------
def test_defaults_are_filled_in():
    g, (x, a) = graph_with(f32(1, 4, 4, 2), f32(3, 5))
    w = g.add_const(np.ones((3, 3, 2, 2), np.float32), "w")
    conv = g.add_node("Conv2D", [x, w, None], conv_attrs(), name="conv")
    soft = g.add_node("Softmax", [a], name="soft")
    mm = g.add_node("MatMul", [a, a, None], {"transpose_x2": True}, name="mm")
    red = g.add_node("ReduceSum", [a, g.add_const(np.array([1], np.int32), "ax")], name="red")
    infer_graph(g)
    assert conv.attrs == {"strides": [1, 1, 1, 1], "padding": "SAME", "explicit_paddings": [],
                          "dilations": [1, 1, 1, 1]}
    assert soft.attrs == {"axis": -1}
    assert mm.attrs == {"transpose_x1": False, "transpose_x2": True}
    assert red.attrs == {"keep_dims": False}


def test_filled_defaults_are_not_shared():
    """Editing one node's default list must not change the prototype or other nodes."""
    g, (x,) = graph_with(f32(1, 4, 4, 2))
    w = g.add_const(np.ones((1, 1, 2, 2), np.float32), "w")
    first = g.add_node("Conv2D", [x, w, None], conv_attrs(), name="c1")
    second = g.add_node("Conv2D", [x, w, None], conv_attrs(), name="c2")
    infer_graph(g)
    default = get_prototype("Conv2D").attrs["dilations"]
    saved = list(default.default)
    try:
        first.attrs["dilations"][1] = 2
        assert second.attrs["dilations"] == [1, 1, 1, 1]
        assert default.default == [1, 1, 1, 1]
    finally:
        default.default = saved     # keep other tests safe if the check fails


def test_attr_values_are_normalised():
    g, (x,) = graph_with(f32(1, 4, 4, 1))
    w = g.add_const(np.ones((1, 1, 1, 1), np.float32), "w")
    conv = g.add_node("Conv2D", [x, w, None], {"strides": (1, np.int64(1), 1, 1), "padding": "VALID"},
                      name="conv")
    act = g.add_node("LeakyRelu", [conv.outputs[0]], {"alpha": 1}, name="act")
    infer_graph(g)
    assert conv.attrs["strides"] == [1, 1, 1, 1] and all(type(v) is int for v in conv.attrs["strides"])
    assert act.attrs["alpha"] == 1.0 and type(act.attrs["alpha"]) is float


def test_undeclared_attrs_are_kept():
    g, (x,) = graph_with(f32(2))
    node = g.add_node("Relu", [x], {"use_cudnn_on_gpu": True}, name="r")
    infer_graph(g)
    assert node.attrs == {"use_cudnn_on_gpu": True}


def test_infer_false_leaves_descs():
    g, (x,) = graph_with(f32(2, 3))
    node = g.add_node("Relu", [x], name="r")
    infer_graph(g, infer=False)
    assert node.outputs[0].desc == TensorDesc("float32")   # add_node's placeholder desc


def test_unsorted_graph_is_sorted_before_verification():
    g, (x,) = graph_with(f32(2, 3))
    late = g.add_node("Neg", [x], name="late")
    early = g.add_node("Relu", [x], name="early")
    g.set_input(late, 0, early.outputs[0])
    infer_graph(g)
    assert [n.name for n in g.nodes] == ["early", "late"]
    assert late.outputs[0].desc.shape == (2, 3)


def test_verify_node_directly():
    g, (x,) = graph_with(f32(2, 3))
    node = g.add_node("Exp", [x], name="e")
    infer_node(node)
    assert node.outputs[0].desc == f32(2, 3)


# -- shape inference ----------------------------------------------------------------------------
def infer_one(op_type, input_descs, attrs=None, const_inputs=(), num_outputs=1):
    """Verify a graph holding one `op_type` node; return its output descs."""
    g, inputs = graph_with(*input_descs)
    values = list(inputs)
    for position, array in const_inputs:
        values.insert(position, None if array is None
                      else g.add_const(np.asarray(array), f"k{position}"))
    node = g.add_node(op_type, values, attrs or {}, name="n", num_outputs=num_outputs)
    infer_graph(g)
    return [v.desc for v in node.outputs]


@pytest.mark.parametrize("op_type, descs, attrs, const_inputs, expected", [
    ("Conv2D", [f32(None, 9, 9, 3)], {"strides": [1, 2, 2, 1], "padding": "SAME"},
     [(1, np.zeros((3, 3, 3, 8), np.float32)), (2, None)],
     TensorDesc("float32", (None, 5, 5, 8), "NHWC", "NHWC")),
    ("Conv2D", [TensorDesc("float32", (2, 3, 9, 9), "NCHW")],     # the layout is the format's
     {"strides": [1, 1, 2, 2], "padding": "VALID"},
     [(1, np.zeros((3, 3, 3, 8), np.float32)), (2, None)],
     TensorDesc("float32", (2, 8, 4, 4), "NCHW", "NCHW")),
    ("Conv2D", [f32(1, 7, 7, 3)], {"strides": [1, 1, 1, 1], "padding": "VALID",
                                   "dilations": [1, 2, 2, 1]},
     [(1, np.zeros((3, 3, 3, 4), np.float32)), (2, None)],
     TensorDesc("float32", (1, 3, 3, 4), "NHWC", "NHWC")),
    ("Conv2D", [f32(1, 5, 5, 3)], {"strides": [1, 1, 1, 1], "padding": "EXPLICIT",
                                   "explicit_paddings": [0, 0, 1, 2, 0, 1, 0, 0]},
     [(1, np.zeros((3, 3, 3, 4), np.float32)), (2, None)],
     TensorDesc("float32", (1, 6, 4, 4), "NHWC", "NHWC")),
    ("DepthwiseConv2D", [f32(1, 8, 8, 3)], {"strides": [1, 1, 1, 1], "padding": "SAME"},
     [(1, np.zeros((3, 3, 3, 2), np.float32)), (2, None)],
     TensorDesc("float32", (1, 8, 8, 6), "NHWC", "NHWC")),
    ("MaxPool", [f32(1, 7, 7, 4)], {"ksize": [1, 3, 3, 1], "strides": [1, 2, 2, 1],
                                    "padding": "VALID"}, [],
     TensorDesc("float32", (1, 3, 3, 4), "NHWC", "NHWC")),
    ("MatMul", [f32(4, 3), f32(5, 4)], {"transpose_x1": True, "transpose_x2": True}, [(2, None)],
     f32(3, 5)),
    ("Add", [f32(None, 1, 3), f32(4, 1)], {}, [], f32(None, 4, 3)),
    ("Add", [TensorDesc("float32", None), f32(4, 1)], {}, [], TensorDesc("float32", None)),
    ("ReduceMean", [f32(2, 3, 4)], {"keep_dims": True}, [(1, np.array([-1, 1], np.int32))],
     f32(2, 1, 1)),
    ("ReduceMax", [f32(2, 3, 4)], {}, [(1, np.array([0], np.int64))], f32(3, 4)),
    ("Reshape", [f32(2, 3, 4)], {}, [(1, np.array([-1, 4], np.int32))], f32(6, 4)),
    ("Reshape", [f32(None, 3, 4)], {}, [(1, np.array([-1, 12], np.int32))], f32(None, 12)),
    ("Squeeze", [f32(1, 3, 1)], {}, [], f32(3)),
    ("Squeeze", [f32(1, 3, 1)], {"axis": [-1]}, [], f32(1, 3)),
    ("ExpandDims", [f32(2, 3)], {}, [(1, np.array(-1, np.int32))], f32(2, 3, 1)),
    ("Shape", [f32(None, 3, 4)], {}, [], TensorDesc("int32", (3,))),
    ("Transpose", [f32(2, 3, 4)], {}, [(1, np.array([2, 0, 1], np.int32))], f32(4, 2, 3)),
    ("Pad", [f32(2, 3)], {}, [(1, np.array([[1, 0], [2, 3]], np.int32)), (2, None)], f32(3, 8)),
    ("Pack", [f32(2, 3), f32(2, 3), f32(2, 3)], {"axis": -1, "N": 3}, [], f32(2, 3, 3)),
    ("ConcatV2", [f32(2, None), f32(2, 5)], {"N": 2}, [(2, np.array(1, np.int32))], f32(2, None)),
    ("ConcatV2", [f32(2, 4), f32(3, 4)], {"N": 2}, [(2, np.array(0, np.int32))], f32(5, 4)),
    ("StridedSlice", [f32(5, 6, 7)], {"shrink_axis_mask": 1, "new_axis_mask": 4},
     [(1, np.array([1, 0, 0], np.int32)), (2, np.array([2, 4, 0], np.int32)),
      (3, np.array([1, 2, 1], np.int32))], f32(2, 1, 7)),
    ("StridedSlice", [f32(5, 6, 7)], {"ellipsis_mask": 1, "end_mask": 2},
     [(1, np.array([0, 5], np.int32)), (2, np.array([0, 0], np.int32)),
      (3, np.array([1, -2], np.int32))], f32(5, 6, 3)),
    ("Cast", [f32(2, None)], {"dst_type": "int64"}, [], TensorDesc("int64", (2, None))),
], ids=lambda v: v if isinstance(v, str) else None)
def test_inferred_shapes(op_type, descs, attrs, const_inputs, expected):
    assert infer_one(op_type, descs, attrs, const_inputs) == [expected]


def test_strided_slice_rank_is_known_without_constant_bounds():
    """Fed begin/end: the rank still follows from the strides and masks; sliced dims are
    unknown, dims an ellipsis or a full mask keeps stay known."""
    index = TensorDesc("int32", (4,))
    shape = infer_one("StridedSlice", [f32(5, 6, 7, 8), index, index],
                      {"shrink_axis_mask": 0b0001, "new_axis_mask": 0b0100, "ellipsis_mask": 0b1000},
                      [(3, np.array([1, 1, 1, 1], np.int32))])[0].shape
    assert shape == (None, 1, 7, 8)


def test_const_inference_keeps_the_format():
    g = Graph()
    w = g.add_const(np.zeros((3, 3, 2, 4), np.float32), "w", fmt="HWCN")
    infer_graph(g)
    assert w.desc == TensorDesc("float32", (3, 3, 2, 4), "HWCN", "HWCN")


def test_binary_output_takes_the_higher_rank_format():
    g, (x, b) = graph_with(TensorDesc("float32", (1, 4, 4, 3), "NHWC", "NHWC"), f32(3))
    node = g.add_node("Add", [b, x], name="add")
    infer_graph(g)
    assert node.outputs[0].desc == TensorDesc("float32", (1, 4, 4, 3), "NHWC", "NHWC")
