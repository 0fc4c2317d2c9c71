"""Built-in mappings of TF's TensorList ops and of TF1's TensorArrayV3 family onto the list ops
of opp/lists.py (lists lower to ONNX sequences). A TensorArrayV3 op reads and writes its
`flow` tensor, which the IR makes the list itself; the resource handle input is dropped."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.plugins import IrOp, TfNode, hookimpl, register_op
from tf2ir.opp import lists as list_ops


def _element_dtype(src: TfNode, op: IrOp, attr: str = "element_dtype") -> None:
    dtype = src.attr(attr)
    if not isinstance(dtype, str):
        raise ConversionError(f"attribute '{attr}' (the element dtype) is missing")
    op.set_attr("element_dtype", dtype)


def _keep(*indices):
    """A parse fn keeping the TF inputs at `indices` (None: an absent optional input)."""
    def parse(src: TfNode, op: IrOp) -> None:
        inputs = list(op.inputs)
        op.inputs = [None if i is None else inputs[i] for i in indices]
    return parse


def parse_reserve(src: TfNode, op: IrOp) -> None:
    _element_dtype(src, op)


def parse_empty(src: TfNode, op: IrOp) -> None:
    """EmptyTensorList(element_shape, max_num_elements): the bound is not kept (a sequence
    grows as it needs)."""
    _element_dtype(src, op)
    op.inputs = op.inputs[:1]


def parse_set_item(src: TfNode, op: IrOp) -> None:
    op.set_attr("resize", bool(src.attr("resize_if_index_out_of_bounds", False)))


def parse_stack(src: TfNode, op: IrOp) -> None:
    count = src.attr("num_elements", -1)
    op.set_attr("num_elements", int(count) if isinstance(count, int) else -1)


def parse_element_shape(src: TfNode, op: IrOp) -> None:
    op.set_attr("shape_type", src.attr("shape_type", "int32"))


def parse_concat_v2(src: TfNode, op: IrOp) -> None:
    """TensorListConcatV2(handle, element_shape, leading_dims): leading_dims only matters for
    an empty list whose element shape is unknown, which TF refuses too."""
    op.inputs = op.inputs[:2]
    op.num_outputs = 2


def parse_concat(src: TfNode, op: IrOp) -> None:
    _element_shape_input(src, op, "element_shape")
    op.num_outputs = 2


def _element_shape_input(src: TfNode, op: IrOp, attr: str) -> None:
    """A TF shape attribute as the IR op's element_shape input (-1 for unknown dims, a scalar
    -1 for unknown rank)."""
    shape = src.attr(attr)
    value = np.array(-1, np.int64) if shape is None else \
        np.array([-1 if d is None else d for d in shape], np.int64)
    op.inputs = list(op.inputs[:1])
    op.add_const_input(value, "element_shape")


# -- TF1 TensorArrayV3: (handle, ..., flow_in) → the list is the flow ---------------------------
def parse_tensor_array(src: TfNode, op: IrOp) -> None:
    _element_dtype(src, op, "dtype")
    shape = src.attr("element_shape")
    op.set_attr("element_shape", None if shape is None else tuple(shape))
    op.num_outputs = 2


def parse_array_write(src: TfNode, op: IrOp) -> None:
    """TensorArrayWriteV3(handle, index, value, flow_in): a dynamic-size array grows, a fixed
    one is written in range (TF refuses other writes), so growing is exact either way."""
    handle, index, value, flow = op.inputs
    op.inputs = [flow, index, value]
    op.set_attr("resize", True)


def parse_array_gather(src: TfNode, op: IrOp) -> None:
    handle, indices, flow = op.inputs
    op.inputs = [flow]
    _element_shape_input(src, op, "element_shape")
    op.inputs.insert(1, indices)


def parse_array_concat(src: TfNode, op: IrOp) -> None:
    """TensorArrayConcatV3(handle, flow_in) → the concatenation and each element's rows."""
    op.inputs = [op.inputs[1]]
    op.num_outputs = 2


MAPPINGS = [
    register_op("ListReserve").origin_op_type("TensorListReserve").parse_params_fn(parse_reserve),
    register_op("ListEmpty").origin_op_type("EmptyTensorList").parse_params_fn(parse_empty),
    register_op("ListFromTensor").origin_op_type("TensorListFromTensor")
    .parse_params_fn(_keep(0, 1)),
    register_op("ListGetItem").origin_op_type("TensorListGetItem").parse_params_fn(_keep(0, 1, 2)),
    register_op("ListSetItem").origin_op_type("TensorListSetItem").parse_params_fn(parse_set_item),
    register_op("ListStack").origin_op_type("TensorListStack").parse_params_fn(parse_stack),
    register_op("ListLength").origin_op_type("TensorListLength").parse_params_fn(_keep(0)),
    register_op("ListElementShape").origin_op_type("TensorListElementShape")
    .parse_params_fn(parse_element_shape),
    register_op("ListPushBack").origin_op_type("TensorListPushBack").parse_params_fn(_keep(0, 1)),
    register_op("ListPopBack").origin_op_type("TensorListPopBack").parse_params_fn(_keep(0, 1)),
    register_op("ListGather").origin_op_type("TensorListGather").parse_params_fn(_keep(0, 1, 2)),
    register_op("ListConcat").origin_op_type("TensorListConcatV2")
    .parse_params_fn(parse_concat_v2),
    register_op("ListConcat").origin_op_type("TensorListConcat").parse_params_fn(parse_concat),
    register_op("ListSplit").origin_op_type("TensorListSplit").parse_params_fn(_keep(0, 1, 2)),
    register_op("ListScatter").origin_op_type("TensorListScatterV2", "TensorListScatter")
    .parse_params_fn(lambda src, op: None),
    register_op("ListScatterInto").origin_op_type("TensorListScatterIntoExistingList")
    .parse_params_fn(_keep(0, 1, 2)),
    # TF1 TensorArrayV3 family
    register_op("TensorArray").origin_op_type("TensorArrayV3").parse_params_fn(parse_tensor_array),
    register_op("ListGetItem").origin_op_type("TensorArrayReadV3").parse_params_fn(_keep(2, 1)),
    register_op("ListSetItem").origin_op_type("TensorArrayWriteV3")
    .parse_params_fn(parse_array_write),
    register_op("ListGather").origin_op_type("TensorArrayGatherV3")
    .parse_params_fn(parse_array_gather),
    register_op("ListScatterInto").origin_op_type("TensorArrayScatterV3")
    .parse_params_fn(_keep(3, 2, 1)),
    register_op("ListLength").origin_op_type("TensorArraySizeV3").parse_params_fn(_keep(1)),
    register_op("ListConcat").origin_op_type("TensorArrayConcatV3")
    .parse_params_fn(parse_array_concat),
    register_op("ListSplit").origin_op_type("TensorArraySplitV3").parse_params_fn(_keep(1, None, 2)),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(list_ops.OPS)
