"""Built-in TFLITE mappings of TFLite's slicing and indexing ops: SLICE, STRIDED_SLICE, the
gathers and scatters, ONE_HOT, the reversals, WHERE, UNIQUE and the segment reductions
(SEGMENT_SUM, UNSORTED_SEGMENT_*). Each is the IR op TF's op of the same meaning maps to
(plugins/builtin/slicing.py, indexing.py, segment.py), its TF attributes read from TFLite's
options; where TFLite keeps in an option what TF passes as an input (GATHER's axis), the
mapping adds it as a constant input.
"""

import numpy as np

from tf2ir.plugins import hookimpl
from tf2ir.plugins.tflite import data, inputs_only, tflite_op, tflite_subgraph

MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def strided_slice(src, graph):
    """STRIDED_SLICE: TF's StridedSlice with the five masks; with `offset` set, `end` is
    relative to `begin` (end = begin + end)."""
    x, begin, end, strides = (data(src, graph, i) for i in range(4))
    if src.attr("offset", False):
        end = graph.add_op("Add", [begin, end], name="end").outputs[0]
    attrs = {mask: int(src.attr(mask, 0) or 0) for mask in MASKS}
    y = graph.add_op("StridedSlice", [x, begin, end, strides], attrs, name="slice").outputs[0]
    graph.set_outputs([y])


def gather(src, op):
    """GATHER: GatherV2 along the `axis` option (a constant input) with `batch_dims`."""
    op.inputs = op.inputs[:2]
    op.add_const_input(np.int32(int(src.attr("axis", 0) or 0)), "axis")
    op.set_attr("batch_dims", int(src.attr("batch_dims", 0) or 0))


def embedding_lookup(src, op):
    """EMBEDDING_LOOKUP (ids, table): the table's rows at ids, GatherV2(table, ids, 0). A hybrid
    model's int8 table is dequantized by the view, as every quantized constant is."""
    op.inputs = [op.inputs[1], op.inputs[0]]
    op.add_const_input(np.int32(0), "axis")
    op.set_attr("batch_dims", 0)


def one_hot(src, op):
    op.set_attr("axis", int(src.attr("axis", -1)))


def reverse_sequence(src, op):
    op.set_attr("seq_dim", int(src.attr("seq_dim", 0)))
    op.set_attr("batch_dim", int(src.attr("batch_dim", 0)))


def unique(src, op):
    op.set_attr("out_idx", src.attr("idx_out_type", None) or "int32")
    op.num_outputs = 2


def segment(reduction):
    def parse(src, op):
        op.set_attr("reduction", reduction)
    return parse


MAPPINGS = [
    tflite_op("Slice", "SLICE").parse_params_fn(inputs_only),
    tflite_subgraph("STRIDED_SLICE").parse_op_to_graph_fn(strided_slice),
    tflite_op("GatherV2", "GATHER").parse_params_fn(gather),
    tflite_op("GatherV2", "EMBEDDING_LOOKUP").parse_params_fn(embedding_lookup),
    tflite_op("GatherNd", "GATHER_ND").parse_params_fn(inputs_only),
    tflite_op("ScatterNd", "SCATTER_ND").parse_params_fn(inputs_only),
    tflite_op("OneHot", "ONE_HOT").parse_params_fn(one_hot),
    tflite_op("ReverseV2", "REVERSE_V2").parse_params_fn(inputs_only),
    tflite_op("ReverseSequence", "REVERSE_SEQUENCE").parse_params_fn(reverse_sequence),
    tflite_op("Where", "WHERE").parse_params_fn(inputs_only),
    tflite_op("Unique", "UNIQUE").parse_params_fn(unique),
    tflite_op("SegmentReduce", "SEGMENT_SUM").parse_params_fn(segment("sum")),
] + [tflite_op("UnsortedSegmentReduce", f"UNSORTED_SEGMENT_{name.upper()}")
     .parse_params_fn(segment(name)) for name in ("sum", "max", "min", "prod")]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
