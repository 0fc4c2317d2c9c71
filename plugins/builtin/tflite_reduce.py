"""Built-in TFLITE mappings of TFLite's reductions and scans: MEAN, SUM, REDUCE_MAX, REDUCE_MIN,
REDUCE_PROD, REDUCE_ANY, REDUCE_ALL (the axes the second input, `keep_dims` the option),
ARG_MAX/ARG_MIN (`output_type`), CUMSUM (`exclusive`, `reverse`) and TOPK_V2, each the IR op
TF's op of the same meaning maps to."""

from tf2ir.plugins import hookimpl
from tf2ir.plugins.tflite import output_dtype, tflite_op

REDUCTIONS = {"MEAN": "ReduceMean", "SUM": "ReduceSum", "REDUCE_MAX": "ReduceMax",
              "REDUCE_MIN": "ReduceMin", "REDUCE_PROD": "ReduceProd",
              "REDUCE_ANY": "ReduceAny", "REDUCE_ALL": "ReduceAll"}


def reduce(src, op):
    op.set_attr("keep_dims", bool(src.attr("keep_dims", False)))


def arg_reduce(src, op):
    """ArgMaxOptions' output_type, else the output tensor's type (int64 is TF's default)."""
    op.set_attr("output_type", src.attr("output_type") or output_dtype(src, 0))


def cumsum(src, op):
    op.set_attr("exclusive", bool(src.attr("exclusive", False)))
    op.set_attr("reverse", bool(src.attr("reverse", False)))


def top_k(src, op):
    """TOPK_V2: the k largest along the last dim, sorted (TFLite always sorts), indices of the
    output tensor's type (int32; int16 and int64 too in newer schemas)."""
    op.set_attr("dim", -1)
    op.set_attr("largest", True)
    op.set_attr("sorted", True)
    op.set_attr("index_type", output_dtype(src, 1))


MAPPINGS = (
    [tflite_op(ir, origin).parse_params_fn(reduce) for origin, ir in REDUCTIONS.items()]
    + [tflite_op("ArgMax", "ARG_MAX").parse_params_fn(arg_reduce),
       tflite_op("ArgMin", "ARG_MIN").parse_params_fn(arg_reduce),
       tflite_op("Cumsum", "CUMSUM").parse_params_fn(cumsum),
       tflite_op("TopK", "TOPK_V2").parse_params_fn(top_k)]
)


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
