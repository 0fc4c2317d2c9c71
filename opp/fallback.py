"""TFSubgraph: a segment of TF nodes no plugin maps, which TensorFlow runs (the fallback
delegate, `--fallback tf`). The node holds the segment's GraphDef (base64 text), the
Placeholders that take its inputs and the tensors it gives; its output descs are what TF's
shape inference said when the segment was cut. It lowers to one node of the custom domain
`ai.tf2ir.tf`, which tf2ir's runtime entry runs with TensorFlow."""

from __future__ import annotations

from tf2ir.ir import ConversionError, OpSet, TensorDesc

OPS = OpSet("tf2ir.opp.fallback")
DOMAIN = "ai.tf2ir.tf"

tf_subgraph = (
    OPS.declare("TFSubgraph", "Runs GraphDef `graph_def` (base64) with TensorFlow: input i "
                "feeds Placeholder `input_names[i]`, output j is tensor `output_names[j]`.")
    .dynamic_input("args").dynamic_output("outputs")
    .attr("graph_def", "str").attr("input_names", "strs").attr("output_names", "strs")
    .attr("output_dtypes", "dtypes").attr("output_shapes", "shapes")
    .attr("op_types", "strs", [], doc="the TF op types the segment holds"))


@tf_subgraph.infer
def _infer(node):
    dtypes, shapes = node.attrs["output_dtypes"], node.attrs["output_shapes"]
    if not len(dtypes) == len(shapes) == len(node.outputs):
        raise ConversionError(f"{len(node.outputs)} outputs, {len(dtypes)} output dtypes and "
                              f"{len(shapes)} output shapes")
    return [TensorDesc(d, None if s is None else tuple(s)) for d, s in zip(dtypes, shapes)]


@tf_subgraph.lower
def _lower(ctx, node):
    ctx.op.TFSubgraph(*[ctx.input(i) for i in range(len(node.inputs))],
                      outputs=[ctx.output(i) for i in range(len(node.outputs))], domain=DOMAIN,
                      graph_def=node.attrs["graph_def"], input_names=list(node.attrs["input_names"]),
                      output_names=list(node.attrs["output_names"]))
