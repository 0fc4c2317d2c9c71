"""Built-in TFLITE mappings of TFLite's reductions: the IR's TF reductions, whose axes are the
second input and `keep_dims` the option."""

from tf2ir.plugins import hookimpl
from tf2ir.plugins.tflite import tflite_op


def reduce(src, op):
    op.set_attr("keep_dims", bool(src.attr("keep_dims", False)))
    op.set_attr("Tidx", op.input_desc(1).dtype)


MAPPINGS = [
    tflite_op("ReduceMean", "MEAN").parse_params_fn(reduce),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
