"""Built-in mappings for TF1's StringSplit (tf.strings.bytes_split) and UnsortedSegmentJoin
(tf.strings.reduce_join of a ragged tensor) (opp/strings_segment.py)."""

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.opp import strings_segment as segment_ops
from tf2ir.plugins import auto_mapping, hookimpl, register_op


def parse_split(src, graph):
    """StringSplit; with a constant empty delimiter (tf.strings.bytes_split) the bytes as
    numbers (StringBytesSplit) made one-byte strings by ByteStrings, so that a byte that is
    not UTF-8 alone never leaves a Python kernel (opp/strings_segment.py)."""
    delimiter = graph.call.inputs[1].const_value if len(graph.call.inputs) > 1 else None
    data = graph.data(0)
    if delimiter is not None and segment_ops.delimiter_bytes(delimiter) == b"":
        indices, codes, shape = graph.add_op("StringBytesSplit", [data], {}, "bytes").outputs
        values = graph.add_op("ByteStrings", [codes], {}, "byte_strings").outputs[0]
        graph.set_outputs([indices, values, shape])
        return
    split = graph.add_op("StringSplit", [data, graph.data(1)],
                         {"skip_empty": bool(src.attr("skip_empty", True))}, "split")
    graph.set_outputs(split.outputs)


def parse_join(src, op):
    """The separator as text: one that is not UTF-8 cannot travel in a string tensor of the
    Python kernel, so it is refused."""
    auto_mapping(src, op)
    raw = getattr(src, "attr_bytes", None)
    data = raw("separator") if raw is not None else None
    if data is None:
        separator = src.attr("separator", "") or ""
    else:
        try:
            separator = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ConversionError(f"UnsortedSegmentJoin's separator {data!r} is not UTF-8",
                                  exit_code=ExitStatus.UNSUPPORTED) from None
    op.set_attr("separator", separator)


MAPPINGS = [
    register_op("PartitionedCall").origin_op_type("StringSplit").parse_op_to_graph_fn(parse_split),
    register_op("UnsortedSegmentJoin").origin_op_type("UnsortedSegmentJoin")
    .parse_params_fn(parse_join),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(segment_ops.OPS)
