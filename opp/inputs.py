"""Model inputs that a node declares: PlaceholderWithDefault, an input that takes its default
value when it is not fed.

ONNX expresses such an optional input as a graph input with an initializer of the same name
(IR version 4 and later): the lowering does that when the default is a constant. A default
computed from other values has no ONNX form, so the node is computed from its default and the
conversion says in a warning that the model has no input for it. A user who feeds it names it
with --inputs: the converter then makes it a required graph input (parser/convert.py), and
this op is not used."""

from __future__ import annotations

from tf2ir.ir import OpSet, TensorDesc

OPS = OpSet("tf2ir.opp.inputs")

placeholder_with_default = (
    OPS.declare("PlaceholderWithDefault", "A model input that is `default` when it is not fed; "
                "`shape` is the shape a fed value may have (None: the default's rank).")
    .input("default").output("y").attr("shape", "shape", None))


@placeholder_with_default.infer
def _infer(node):
    default = node.inputs[0].desc
    shape = node.attrs.get("shape")
    if shape is None and default.shape is not None:
        # ONNX needs the rank of a graph input: a fed value must have the default's rank.
        shape = (None,) * len(default.shape)
    return [TensorDesc(default.dtype, shape)]


@placeholder_with_default.lower
def _lower(ctx, node):
    default = ctx.const_input(0)
    name = ctx.output(0)
    if default is not None and ctx.graph_input(name, default):
        ctx.note(f"PlaceholderWithDefault {node.name}: an optional model input '{name}'; its "
                 "default is an initializer of the same name, used when it is not fed")
        return
    ctx.op.Identity(ctx.input(0), out=name)
    why = "default is computed" if default is None else "it is inside a subgraph"
    ctx.note(f"PlaceholderWithDefault {node.name}: {why}, the converted model has no input "
             "for it", warning=True)
