"""Composite and control-flow ops: PartitionedCall, which owns a subgraph `f` (the one-to-many
mapping of the CANN guide), Data, the subgraph's placeholder for one input of the call, and
If / While, whose branches, cond and body are subgraphs with one input per operand (lowered
to ONNX If and Loop)."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet

OPS = OpSet("tf2ir.opp.control")

SUBGRAPH_KEY = "f"

partitioned_call = (
    OPS.declare("PartitionedCall", "Runs subgraph `f`: Data node `index` i reads input i; "
                                    "the subgraph's outputs are the call's outputs.")
    .dynamic_input("args").dynamic_output("output")
    .attr("original_type", "str", doc="the origin op type this call stands for"))

data = (OPS.declare("Data", "Input `index` of the PartitionedCall that owns this subgraph.")
        .output("y").attr("index", "int"))


def _copy(desc: TensorDesc) -> TensorDesc:
    return desc.copy()


@partitioned_call.infer
def _infer_partitioned_call(node):
    from tf2ir.ir.infer import infer_graph
    body = node.subgraphs.get(SUBGRAPH_KEY)
    if body is None:
        raise ConversionError(f"PartitionedCall has no subgraph {SUBGRAPH_KEY!r}")
    for inner in body.nodes:
        if inner.op_type == "Data":
            index = inner.attrs.get("index")
            if not isinstance(index, int) or not 0 <= index < len(node.inputs):
                raise ConversionError(f"Data node '{inner.name}' has index {index!r}; "
                                      f"the call has {len(node.inputs)} inputs")
            inner.outputs[0].desc = _copy(node.inputs[index].desc)
    infer_graph(body)
    return [_copy(value.desc) for value in body.outputs]


@data.infer
def _infer_data(node):
    return [_copy(node.outputs[0].desc)]   # the owning call sets it


def _not_inlined(ctx, node):
    raise ConversionError(f"{node.op_type} must be inlined before lowering "
                          "(tf2ir.ir.passes.inline_subgraphs)")


partitioned_call.lower(_not_inlined)
data.lower(_not_inlined)


# -- functional control flow: If and While own their branches / cond and body ------------
IF_BRANCHES = ("then_branch", "else_branch")
WHILE_GRAPHS = ("cond", "body")
_BOOL = 9    # onnx.TensorProto.BOOL
_INT64 = 7   # onnx.TensorProto.INT64

if_op = (OPS.declare("If", "Runs subgraph `then_branch` or `else_branch` (each with one input "
                            "per `input`) as `cond` is true: a scalar when non-zero, any other "
                            "tensor when non-empty (TF's rule).")
         .input("cond").dynamic_input("input").dynamic_output("output"))

while_op = (OPS.declare("While", "While subgraph `cond` (the loop variables in, one tensor out, "
                                  "true as for If) holds, the variables become subgraph `body`'s "
                                  "outputs; the outputs are their final values.")
            .dynamic_input("input").dynamic_output("output"))


def merge_descs(a: TensorDesc, b: TensorDesc) -> TensorDesc:
    """What holds for a tensor that is either `a` or `b` (dims that differ become unknown)."""
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        shape = None
    else:
        shape = tuple(x if x == y else None for x, y in zip(a.shape, b.shape))
    fmt = (a.format, a.origin_format) if (a.format, a.origin_format) == (b.format, b.origin_format) \
        else ("ND", "ND")
    return TensorDesc(a.dtype, shape, *fmt)


def _subgraph(node, key: str):
    sub = node.subgraphs.get(key)
    if sub is None:
        raise ConversionError(f"{node.op_type} has no subgraph {key!r}")
    return sub


def _verify_subgraph(node, key: str, descs) -> list:
    """Give subgraph `key` of `node` these input descs, verify it; its output descs."""
    from tf2ir.ir.infer import infer_graph
    sub = _subgraph(node, key)
    if len(sub.inputs) != len(descs):
        raise ConversionError(f"subgraph {key!r} takes {len(sub.inputs)} inputs, the node "
                              f"gives {len(descs)}")
    for value, desc in zip(sub.inputs, descs):
        if value.desc.dtype != desc.dtype:
            raise ConversionError(f"subgraph {key!r} input {value.name!r} is "
                                  f"{value.desc.dtype}, the node gives {desc.dtype}")
        value.desc = _copy(desc)
    try:
        infer_graph(sub)
    except ConversionError as exc:   # name the inner place in the message: the node is ours
        raise ConversionError(f"in subgraph {key!r}: {exc}") from None
    return [value.desc for value in sub.outputs]


@if_op.infer
def _infer_if(node):
    args = [value.desc for value in node.inputs[1:]]
    then_out, else_out = (_verify_subgraph(node, key, args) for key in IF_BRANCHES)
    if not len(then_out) == len(else_out) == len(node.outputs):
        raise ConversionError(f"the branches have {len(then_out)} and {len(else_out)} outputs "
                              f"for {len(node.outputs)} outputs of the node")
    for i, (a, b) in enumerate(zip(then_out, else_out)):
        if a.dtype != b.dtype:
            raise ConversionError(f"output {i} is {a.dtype} in then_branch, {b.dtype} in else_branch")
    return [merge_descs(a, b) for a, b in zip(then_out, else_out)]


@while_op.infer
def _infer_while(node):
    """Loop variables whose shape the body changes get unknown dims (or rank), repeated
    until the body's outputs fit its inputs: the subgraphs end verified with those."""
    descs = [_copy(value.desc) for value in node.inputs]
    for _ in range(2 + sum(len(d.shape or ()) + 1 for d in descs)):
        cond_out = _verify_subgraph(node, "cond", descs)
        body_out = _verify_subgraph(node, "body", descs)
        if len(cond_out) != 1:
            raise ConversionError(f"subgraph 'cond' has {len(cond_out)} outputs, expected 1")
        if len(body_out) != len(descs) or len(node.outputs) != len(descs):
            raise ConversionError(f"{len(descs)} loop variables, subgraph 'body' has "
                                  f"{len(body_out)} outputs, the node {len(node.outputs)}")
        for i, (d, o) in enumerate(zip(descs, body_out)):
            if d.dtype != o.dtype:
                raise ConversionError(f"loop variable {i} is {d.dtype}, the body makes it {o.dtype}")
        merged = [merge_descs(d, o) for d, o in zip(descs, body_out)]
        if merged == descs:
            return [_copy(d) for d in descs]
        descs = merged
    raise ConversionError("the loop variables' shapes do not settle")   # not reached


def truth_value(ctx, name: str, desc: TensorDesc) -> str:
    """TF's truth of a condition tensor as an ONNX bool scalar: a scalar is true when
    non-zero, a tensor of any other rank when it is not empty."""
    if desc.dtype == "string":
        raise ConversionError("a string condition is not supported")
    if desc.shape == ():
        return name if desc.dtype == "bool" else ctx.op.Cast(name, to=_BOOL)
    zero = ctx.constant(np.array(0, np.int64), "zero")
    if desc.shape is not None:
        if 0 in desc.shape:
            return ctx.constant(np.array(False), "false")
        if all(d is not None for d in desc.shape):
            return ctx.constant(np.array(True), "true")
        return ctx.op.Greater(ctx.op.Size(name), zero)
    # unknown rank: non-empty and (rank > 0 or the one value is non-zero)
    non_empty = ctx.op.Greater(ctx.op.Size(name), zero)
    is_tensor = ctx.op.Greater(ctx.op.Size(ctx.op.Shape(name)), zero)
    flat = ctx.op.Reshape(name, ctx.constant(np.array([-1], np.int64), "flat"))
    as_int = ctx.op.Cast(ctx.op.Cast(flat, to=_BOOL), to=_INT64)
    total = ctx.op.ReduceSum(as_int, keepdims=0)
    non_zero = ctx.op.Greater(total, zero)
    return ctx.op.And(non_empty, ctx.op.Or(is_tensor, non_zero))


@if_op.lower
def _lower_if(ctx, node):
    cond = truth_value(ctx, ctx.input(0), ctx.input_desc(0))
    args = [ctx.input(i) for i in range(1, len(node.inputs))]
    branches = {}
    for key in IF_BRANCHES:
        sub = _subgraph(node, key)
        child = ctx.subcontext()
        outputs = child.lower_subgraph(sub, args)
        branches[key] = child.make_subgraph(
            f"{node.name}/{key}", [], [(n, v.desc) for n, v in zip(outputs, sub.outputs)])
    ctx.op.If(cond, outputs=[ctx.output(i) for i in range(len(node.outputs))], **branches)


@while_op.lower
def _lower_while(ctx, node):
    """ONNX Loop without a trip count: cond runs on the initial variables before the loop
    and on the body's outputs at the end of each iteration (a copy of the cond subgraph
    each time, as ONNX names are model-wide)."""
    from tf2ir.ir.onnx.compile import subgraph_value_info
    from tf2ir.ir.graph import clone_graph
    cond, body = _subgraph(node, "cond"), _subgraph(node, "body")
    args = [ctx.input(i) for i in range(len(node.inputs))]
    first = clone_graph(cond)
    keep_going = truth_value(ctx, ctx.lower_subgraph(first, args)[0], first.outputs[0].desc)
    child = ctx.subcontext()
    iteration = child.fresh(f"{node.name}/iteration")
    cond_in = child.fresh(f"{node.name}/cond_in")
    results = child.lower_subgraph(body)
    again = child.lower_subgraph(cond, results)[0]
    again = truth_value(child, again, cond.outputs[0].desc)
    carried = [value.desc for value in body.inputs]   # the relaxed loop-variable descs
    graph = child.make_subgraph(
        f"{node.name}/body",
        [subgraph_value_info(iteration, TensorDesc("int64", ())),
         subgraph_value_info(cond_in, TensorDesc("bool", ()))]
        + [subgraph_value_info(v.name, v.desc) for v in body.inputs],
        [(again, TensorDesc("bool", ()))] + list(zip(results, carried)))
    ctx.op.Loop(*["", keep_going] + args, outputs=[ctx.output(i) for i in range(len(node.outputs))],
                body=graph)
