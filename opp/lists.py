"""Lists of tensors: TF's TensorList ops (TF2 TensorArray, tf.map_fn, tf.scan, Keras RNN
loops) and TF1 TensorArrayV3, whose handle/flow pair the plugins reduce to the flow.

Representation (decided for exactness): a list is an IR value of dtype
"list_<element dtype>" whose shape is what is known of every element's shape; it lowers
to an ONNX sequence of tensors, which ONNX Loop carries and If returns. A stacked tensor
would be cheaper but needs each element's shape when the list is made, which Keras RNN
loops do not give (the batch dim is known only at run time). TF's list semantics map onto
sequence ops as follows:

* a reserved list of n elements is n *placeholder* elements (zeros shaped like the
  element shape, its unknown dims 0: uninitialized elements read as zeros in TF when the
  element shape is fully known, and are an error in TF otherwise);
* SetItem replaces at an index (SequenceErase + SequenceInsert); with TF's
  resize_if_index_out_of_bounds the list first grows by placeholders (a Loop);
* Stack is ConcatFromSequence(new_axis=1) inside an If that gives [0, *element shape]
  for an empty list (onnxruntime refuses to concatenate no tensors).
ElementShape lowers to a constant and is refused where the element shape is not fully
known: TF answers from the list's run-time state, which the sequence does not keep.
"""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import (
    INDEX_TYPES, LIST_TYPES, Shape, element_dtype, list_dtype, numpy_dtype,
)
from tf2ir.opp.sequences import as_int64 as _int64
from tf2ir.opp.sequences import reserve, scatter_into, set_item, grow, stack

OPS = OpSet("tf2ir.opp.lists")


# -- shapes ---------------------------------------------------------------------------------
def element_shape_of(node, index: int) -> Shape:
    """The element shape an int `element_shape` input states: None for unknown rank (a
    scalar -1 or a value only known at run time), -1 dims unknown."""
    value = node.inputs[index] if index < len(node.inputs) else None
    if value is None:
        return None
    const = value.const_value
    if const is None:
        shape = value.desc.shape
        return (None,) * shape[0] if shape is not None and len(shape) == 1 \
            and shape[0] is not None else None
    const = np.asarray(const).reshape(-1) if np.ndim(const) else np.asarray(const)
    if const.ndim == 0:
        return None
    return tuple(None if int(d) < 0 else int(d) for d in const)


def refine(a: Shape, b: Shape) -> Shape:
    """The most specific shape both `a` and `b` describe (TF requires them compatible)."""
    if a is None or b is None:
        return b if a is None else a
    if len(a) != len(b):
        raise ConversionError(f"element shapes {list(a)} and {list(b)} differ in rank")
    for x, y in zip(a, b):
        if x is not None and y is not None and x != y:
            raise ConversionError(f"element shapes {list(a)} and {list(b)} disagree")
    return tuple(x if x is not None else y for x, y in zip(a, b))


def generalize(a: Shape, b: Shape) -> Shape:
    """What holds for elements of shape `a` and of shape `b` (differing dims unknown)."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def shape_text(shape: Shape) -> str:
    return "of unknown rank" if shape is None else str(list(shape))


def _list_desc(node, index: int = 0) -> TensorDesc:
    return node.inputs[index].desc


def _item_desc(list_desc: TensorDesc, shape: Shape) -> TensorDesc:
    return TensorDesc(element_dtype(list_desc.dtype), shape)


def _check_item(list_desc: TensorDesc, item: TensorDesc) -> None:
    if item.dtype != element_dtype(list_desc.dtype):
        raise ConversionError(f"a {item.dtype} item for a list of {element_dtype(list_desc.dtype)}")


# -- making lists -------------------------------------------------------------------------------
empty = (OPS.declare("ListEmpty", "An empty list of `element_dtype` tensors (TF EmptyTensorList).")
         .optional_input("element_shape", INDEX_TYPES).output("handle")
         .attr("element_dtype", "dtype"))


@empty.infer
def _infer_empty(node):
    return [TensorDesc(list_dtype(node.attrs["element_dtype"]), element_shape_of(node, 0))]


@empty.lower
def _lower_empty(ctx, node):
    ctx.op.SequenceEmpty(out=ctx.output(0), dtype=ONNX_DTYPES[node.attrs["element_dtype"]])


reserve_op = (OPS.declare("ListReserve", "A list of `num_elements` uninitialized elements "
                                         "(TF TensorListReserve).")
              .input("element_shape", INDEX_TYPES).input("num_elements", INDEX_TYPES)
              .output("handle").attr("element_dtype", "dtype"))


@reserve_op.infer
def _infer_reserve(node):
    return [TensorDesc(list_dtype(node.attrs["element_dtype"]), element_shape_of(node, 0))]


@reserve_op.lower
def _lower_reserve(ctx, node):
    count = _int64(ctx, ctx.input(1), ctx.input_desc(1))
    reserve(ctx, count, node.attrs["element_dtype"], node.outputs[0].desc.shape, ctx.output(0))


tensor_array = (OPS.declare("TensorArray", "TF1 TensorArrayV3: `size` uninitialized elements; "
                                           "its handle and flow are the same list.")
                .input("size", ("int32",)).output("handle").output("flow")
                .attr("element_dtype", "dtype").attr("element_shape", "shape", None))


@tensor_array.infer
def _infer_tensor_array(node):
    desc = TensorDesc(list_dtype(node.attrs["element_dtype"]), node.attrs["element_shape"])
    return [desc, desc.copy()]


@tensor_array.lower
def _lower_tensor_array(ctx, node):
    count = _int64(ctx, ctx.input(0), ctx.input_desc(0))
    reserve(ctx, count, node.attrs["element_dtype"], node.outputs[0].desc.shape, ctx.output(0))
    ctx.op.Identity(ctx.output(0), out=ctx.output(1))


from_tensor = (OPS.declare("ListFromTensor", "The list of `tensor`'s slices along dim 0.")
               .input("tensor").optional_input("element_shape", INDEX_TYPES).output("handle"))


@from_tensor.infer
def _infer_from_tensor(node):
    tensor = node.inputs[0].desc
    if tensor.rank == 0:
        raise ConversionError("a list is made from a tensor of rank 1 or more, not a scalar")
    shape = None if tensor.shape is None else tensor.shape[1:]
    return [TensorDesc(list_dtype(tensor.dtype), refine(shape, element_shape_of(node, 1)))]


@from_tensor.lower
def _lower_from_tensor(ctx, node):
    ctx.op.SplitToSequence(ctx.input(0), out=ctx.output(0), axis=0, keepdims=0)


split = (OPS.declare("ListSplit", "The list of `tensor`'s consecutive pieces along dim 0, "
                                  "of `lengths` rows each (TF TensorListSplit).")
         .input("tensor").optional_input("element_shape", INDEX_TYPES)
         .input("lengths", INDEX_TYPES).output("handle"))


@split.infer
def _infer_split(node):
    tensor = node.inputs[0].desc
    shape = None if tensor.shape is None else (None,) + tensor.shape[1:]
    return [TensorDesc(list_dtype(tensor.dtype), refine(shape, element_shape_of(node, 1)))]


@split.lower
def _lower_split(ctx, node):
    lengths = _int64(ctx, ctx.input(2), ctx.input_desc(2))
    ctx.op.SplitToSequence(ctx.input(0), lengths, out=ctx.output(0), axis=0)


scatter = (OPS.declare("ListScatter", "A list of at least `num_elements` (and max(indices) + 1) "
                                      "elements, item j of `tensor` at indices[j], the others "
                                      "uninitialized (TF TensorListScatterV2).")
           .input("tensor").input("indices", ("int32",))
           .optional_input("element_shape", INDEX_TYPES)
           .optional_input("num_elements", ("int32",)).output("handle"))


@scatter.infer
def _infer_scatter(node):
    tensor = node.inputs[0].desc
    shape = None if tensor.shape is None else tensor.shape[1:]
    return [TensorDesc(list_dtype(tensor.dtype), refine(shape, element_shape_of(node, 2)))]


@scatter.lower
def _lower_scatter(ctx, node):
    desc = node.outputs[0].desc
    count = ctx.constant(np.array(0, np.int64), "zero")
    if ctx.input(3):
        count = ctx.op.Max(_int64(ctx, ctx.input(3), ctx.input_desc(3)), count)
    seq = reserve(ctx, count, element_dtype(desc.dtype), desc.shape)
    indices = _int64(ctx, ctx.input(1), ctx.input_desc(1))
    scatter_into(ctx, seq, ctx.input(0), indices, desc, ctx.output(0))


# -- changing lists -------------------------------------------------------------------------------
set_item_op = (OPS.declare("ListSetItem", "The list with element `index` replaced by `item`; "
                                          "with `resize` the list first grows to index + 1.")
               .input("handle", LIST_TYPES).input("index", ("int32",)).input("item")
               .output("output_handle").attr("resize", "bool", False))


@set_item_op.infer
def _infer_set_item(node):
    desc, item = _list_desc(node), node.inputs[2].desc
    _check_item(desc, item)
    return [TensorDesc(desc.dtype, generalize(desc.shape, item.shape))]


@set_item_op.lower
def _lower_set_item(ctx, node):
    seq, desc = ctx.input(0), node.outputs[0].desc
    index = _int64(ctx, ctx.input(1), ctx.input_desc(1))
    if node.attrs["resize"]:
        seq = grow(ctx, seq, ctx.op.Add(index, ctx.constant(np.array(1, np.int64), "one")),
                   desc)
    set_item(ctx, seq, index, ctx.input(2), ctx.output(0))


scatter_into_op = (OPS.declare("ListScatterInto", "The list grown to max(indices) + 1 elements "
                                                  "with item j of `tensor` at indices[j] (TF "
                                                  "TensorListScatterIntoExistingList).")
                   .input("handle", LIST_TYPES).input("tensor").input("indices", ("int32",))
                   .output("output_handle"))


@scatter_into_op.infer
def _infer_scatter_into(node):
    desc, tensor = _list_desc(node), node.inputs[1].desc
    _check_item(desc, TensorDesc(tensor.dtype))
    shape = None if tensor.shape is None else tensor.shape[1:]
    return [TensorDesc(desc.dtype, generalize(desc.shape, shape))]


@scatter_into_op.lower
def _lower_scatter_into(ctx, node):
    indices = _int64(ctx, ctx.input(2), ctx.input_desc(2))
    scatter_into(ctx, ctx.input(0), ctx.input(1), indices, node.outputs[0].desc, ctx.output(0))


push_back = (OPS.declare("ListPushBack", "The list with `item` appended.")
             .input("handle", LIST_TYPES).input("item").output("output_handle"))


@push_back.infer
def _infer_push_back(node):
    desc, item = _list_desc(node), node.inputs[1].desc
    _check_item(desc, item)
    return [TensorDesc(desc.dtype, generalize(desc.shape, item.shape))]


@push_back.lower
def _lower_push_back(ctx, node):
    ctx.op.SequenceInsert(ctx.input(0), ctx.input(1), out=ctx.output(0))


pop_back = (OPS.declare("ListPopBack", "The list without its last element, and that element.")
            .input("handle", LIST_TYPES).optional_input("element_shape", INDEX_TYPES)
            .output("output_handle").output("tensor"))


@pop_back.infer
def _infer_pop_back(node):
    desc = _list_desc(node)
    return [desc.copy(), _item_desc(desc, refine(desc.shape, element_shape_of(node, 1)))]


@pop_back.lower
def _lower_pop_back(ctx, node):
    last = ctx.constant(np.array(-1, np.int64), "last")
    ctx.op.SequenceAt(ctx.input(0), last, out=ctx.output(1))
    ctx.op.SequenceErase(ctx.input(0), last, out=ctx.output(0))


# -- reading lists --------------------------------------------------------------------------------
get_item = (OPS.declare("ListGetItem", "Element `index` of the list.")
            .input("handle", LIST_TYPES).input("index", ("int32",))
            .optional_input("element_shape", INDEX_TYPES).output("item"))


@get_item.infer
def _infer_get_item(node):
    desc = _list_desc(node)
    return [_item_desc(desc, refine(desc.shape, element_shape_of(node, 2)))]


@get_item.lower
def _lower_get_item(ctx, node):
    ctx.op.SequenceAt(ctx.input(0), ctx.input(1), out=ctx.output(0))


length = (OPS.declare("ListLength", "The number of elements of the list (int32).")
          .input("handle", LIST_TYPES).output("length"))


@length.infer
def _infer_length(node):
    return [TensorDesc("int32", ())]


@length.lower
def _lower_length(ctx, node):
    ctx.op.Cast(ctx.op.SequenceLength(ctx.input(0)), out=ctx.output(0), to=6)


element_shape = (OPS.declare("ListElementShape", "The list's element shape (-1 for unknown "
                                                 "rank); lowered only when fully known.")
                 .input("handle", LIST_TYPES).output("shape")
                 .attr("shape_type", "dtype", "int32"))


# the ops that give their input list on (input 0, output 0) and the input where each op that
# makes a list takes the element shape TF stores in it (no update later: SetItem, PushBack ...
# only check an element against it)
_PASS_ON = ("ListSetItem", "ListScatterInto", "ListPushBack", "ListPopBack")
_MAKERS = {"ListEmpty": 0, "ListReserve": 0, "ListFromTensor": 1, "ListSplit": 1,
           "ListScatter": 2}


def stored_element_shape(node):
    """The element shape TF keeps in the list `node` reads (ElementShape answers it, not the
    shape its elements have): a constant array (-1 scalar for unknown rank), or None where the
    list's maker is not in sight (a loop's input, a run-time element_shape)."""
    value = node.inputs[0]
    while value.producer is not None and value.producer.op_type in _PASS_ON:
        value = value.producer.inputs[0]
    maker = value.producer
    if maker is None or maker.op_type not in _MAKERS:
        return None
    index = _MAKERS[maker.op_type]
    given = maker.inputs[index] if index < len(maker.inputs) else None
    if given is None:
        return np.array(-1)
    return None if given.const_value is None else np.asarray(given.const_value)


@element_shape.infer
def _infer_element_shape(node):
    stored = stored_element_shape(node)
    shape = _list_desc(node).shape if stored is None else (
        None if stored.ndim == 0 else tuple(stored.reshape(-1)))
    return [TensorDesc(node.attrs["shape_type"], () if shape is None else (len(shape),))]


@element_shape.lower
def _lower_element_shape(ctx, node):
    shape, dtype = _list_desc(node).shape, numpy_dtype(node.attrs["shape_type"])
    stored = stored_element_shape(node)
    if stored is not None:      # TF's answer: the shape the list was made with, as given
        ctx.op.Identity(ctx.constant(stored.astype(dtype), "element_shape"),
                        out=ctx.output(0))
        return
    if shape is None or None in shape:
        raise ConversionError(f"the element shape {shape_text(shape)} is only known at run time, "
                              "where TF reads it from the list's state, which the ONNX "
                              "sequence does not keep")
    value = np.array(list(shape), dtype)
    ctx.op.Identity(ctx.constant(value, "element_shape"), out=ctx.output(0))


stack_op = (OPS.declare("ListStack", "The elements stacked along a new dim 0 (an empty list "
                                     "gives [0, *element_shape]).")
            .input("handle", LIST_TYPES).optional_input("element_shape", INDEX_TYPES)
            .output("tensor").attr("num_elements", "int", -1))


@stack_op.infer
def _infer_stack(node):
    desc, count = _list_desc(node), node.attrs["num_elements"]
    shape = refine(desc.shape, element_shape_of(node, 1))
    return [_item_desc(desc, None if shape is None else (count if count >= 0 else None,) + shape)]


@stack_op.lower
def _lower_stack(ctx, node):
    desc = _list_desc(node)
    stack(ctx, ctx.input(0), TensorDesc(desc.dtype, node.outputs[0].desc.shape and
                                        node.outputs[0].desc.shape[1:]), ctx.output(0))


gather = (OPS.declare("ListGather", "Elements `indices` of the list, stacked.")
          .input("handle", LIST_TYPES).input("indices", ("int32",))
          .optional_input("element_shape", INDEX_TYPES).output("values"))


@gather.infer
def _infer_gather(node):
    desc, indices = _list_desc(node), node.inputs[1].desc
    shape = refine(desc.shape, element_shape_of(node, 2))
    if shape is None or indices.shape is None:
        return [_item_desc(desc, None)]
    return [_item_desc(desc, indices.shape + shape)]


@gather.lower
def _lower_gather(ctx, node):
    desc, values = _list_desc(node), node.outputs[0].desc
    rank = len(node.inputs[1].desc.shape or (0,))
    stacked = stack(ctx, ctx.input(0), TensorDesc(desc.dtype, values.shape and values.shape[rank:]),
                    ctx.fresh("stacked"))
    ctx.op.Gather(stacked, ctx.input(1), out=ctx.output(0), axis=0)


concat = (OPS.declare("ListConcat", "The elements concatenated along dim 0, and each "
                                    "element's dim 0 (int64).")
          .input("handle", LIST_TYPES).optional_input("element_shape", INDEX_TYPES)
          .output("tensor").output("lengths"))


@concat.infer
def _infer_concat(node):
    desc = _list_desc(node)
    shape = refine(desc.shape, element_shape_of(node, 1))
    if shape is not None and not shape:
        raise ConversionError("concatenating a list of scalars")
    tensor = None if shape is None else (None,) + shape[1:]
    return [_item_desc(desc, tensor), TensorDesc("int64", (None,))]


@concat.lower
def _lower_concat(ctx, node):
    from tf2ir.ir.onnx.compile import subgraph_value_info
    desc = _list_desc(node)
    stack(ctx, ctx.input(0), TensorDesc(desc.dtype, node.outputs[0].desc.shape), ctx.output(0),
          new_axis=0)
    body = ctx.subcontext()
    names = [body.fresh(hint) for hint in ("lengths/i", "lengths/cond", "lengths/acc")]
    item = body.op.SequenceAt(ctx.input(0), names[0])
    rows = body.op.Shape(item, start=0, end=1)
    out = body.op.Concat(names[2], rows, axis=0)
    vector = TensorDesc("int64", (None,))
    graph = body.make_subgraph(
        ctx.fresh("lengths"), [subgraph_value_info(names[0], TensorDesc("int64", ())),
                               subgraph_value_info(names[1], TensorDesc("bool", ())),
                               subgraph_value_info(names[2], vector)],
        [(names[1], TensorDesc("bool", ())), (out, vector)])
    count = ctx.op.SequenceLength(ctx.input(0))
    none = ctx.constant(np.zeros(0, np.int64), "no_lengths")
    ctx.op.Loop(count, "", none, out=ctx.output(1), body=graph)
