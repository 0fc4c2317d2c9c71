"""Built-in mappings for TF's segment reductions (Segment*, UnsortedSegment*, SparseSegment* and
their WithNumSegments forms), Bincount/DenseBincount and TensorScatterMax/Min/Sub."""

from tf2ir.opp import segment as segment_ops
from tf2ir.plugins import auto_mapping, hookimpl, register_op


def reduction(name: str):
    """A parse fn that maps the attributes and names the IR op's reduction."""
    def parse(src, op):
        auto_mapping(src, op)
        op.set_attr("reduction", name)
    return parse


def parse_bincount(src, op):
    auto_mapping(src, op)
    op.set_attr("binary_output", bool(src.attr("binary_output", False)))
    # Bincount counts every value of arr whatever its rank; DenseBincount bins 2-D input by row
    op.set_attr("flat", src.op_type == "Bincount")


_FAMILIES = {
    "SegmentReduce": ("Segment{}", ("Sum", "Mean", "Max", "Min", "Prod")),
    "UnsortedSegmentReduce": ("UnsortedSegment{}", ("Sum", "Max", "Min", "Prod")),
    "SparseSegmentReduce": ("SparseSegment{}", ("Sum", "Mean", "SqrtN")),
}

MAPPINGS = (
    [register_op(ir).origin_op_type(pattern.format(name)).parse_params_fn(reduction(name.lower()))
     for ir, (pattern, names) in _FAMILIES.items() for name in names]
    + [register_op("SparseSegmentReduce").origin_op_type(f"SparseSegment{name}WithNumSegments")
       .parse_params_fn(reduction(name.lower())) for name in ("Sum", "Mean", "SqrtN")]
    + [register_op("Bincount").origin_op_type("Bincount", "DenseBincount")
       .parse_params_fn(parse_bincount)]
    + [register_op(op).origin_op_type(op)
       for op in ("TensorScatterMax", "TensorScatterMin", "TensorScatterSub")]
)


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(segment_ops.OPS)
