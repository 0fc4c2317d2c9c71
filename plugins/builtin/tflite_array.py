"""Built-in TFLITE mappings of TFLite's array and shape ops: reshaping, transposing, joining and
splitting, padding, tiling and broadcasting, the shape queries and the tensor creators. Each is
the IR op TF's op of the same meaning maps to (plugins/builtin/array.py, concat.py,
creation.py, broadcast.py, linalg.py, matrix.py), its TF attributes read from TFLite's options.

Where TFLite keeps in an option what TF passes as an input (CONCATENATION's axis, RESHAPE's
`new_shape` when the model has no shape tensor), the mapping adds it as a constant input. Every
mapping has a parse function (`inputs_only` where there is nothing to set), so that TFLite's options
are never appended to the IR op as attributes of their own.

Dimensions may be unknown (a dynamic batch: shape_signature -1): no mapping reads a dim of its
input, so SHAPE → STRIDED_SLICE → PACK → RESHAPE chains compute shapes at run time.
"""

import numpy as np

from tf2ir.ir.errors import ConversionError
from tf2ir.plugins import hookimpl
from tf2ir.plugins.tflite import activation, data, inputs_only, tflite_op, tflite_subgraph


def output_count(src, option: str) -> int:
    """The number of outputs of a splitting op: its output tensors (which the model always
    lists); the option, where given, must agree."""
    count = len(src.output_tensors) if getattr(src, "output_tensors", None) else src.attr(option)
    stated = src.attr(option)
    if not isinstance(count, int) or count < 1 or (stated not in (None, 0) and stated != count):
        raise ConversionError(f"option {option}={stated!r:.20} does not match the "
                              f"{count} output tensors", node=src.name, op_type=src.op_type)
    return count


# -- reshaping ---------------------------------------------------------------------------------

def shape_from_tensor(src, op) -> bool:
    """Whether RESHAPE takes its shape from the second input, as the interpreter does: when the
    model gives it and it is an int32 vector (a [0] vector: a scalar); else (absent, int64, not
    a vector) from `new_shape`."""
    tensors = getattr(src, "input_tensors", None) or []
    if len(op.inputs) < 2:
        return False
    tensor = tensors[1] if len(tensors) > 1 else None
    shape = tensor.shape if tensor is not None else op.input_desc(1).shape
    dtype = tensor.dtype if tensor is not None else op.input_desc(1).dtype
    return dtype == "int32" and (shape is None or len(shape) == 1)   # None: unknown rank


def reshape(src, op):
    """RESHAPE: Reshape(x, shape); the shape tensor, else the `new_shape` option as a constant
    (as the interpreter reads it: absent or the legacy [0], a scalar)."""
    if shape_from_tensor(src, op):
        op.inputs = op.inputs[:2]
        return
    new_shape = [int(d) for d in src.attr("new_shape", None) or []]
    if new_shape == [0]:
        new_shape = []
    op.inputs = op.inputs[:1]
    op.add_const_input(np.array(new_shape, np.int32), "new_shape")


def squeeze(src, op):
    op.set_attr("axis", [int(a) for a in src.attr("squeeze_dims", None) or []])


# -- joining and splitting ----------------------------------------------------------------------

def concatenation(src, graph):
    """CONCATENATION: ConcatV2 along the `axis` option, then its fused activation."""
    values = [data(src, graph, i) for i in range(len(src.inputs))]
    if not values:
        raise ConversionError("CONCATENATION has no inputs", node=src.name, op_type=src.op_type)
    axis = graph.const(np.array(int(src.attr("axis", 0)), np.int32), "axis")
    y = graph.add_op("ConcatV2", values + [axis], {"N": len(values)}, name="concat").outputs[0]
    graph.set_outputs([activation(graph, y, src.attr("fused_activation_function"), src)])


def pack(src, op):
    op.set_attr("N", len(op.inputs))
    op.set_attr("axis", int(src.attr("axis", 0)))


def unpack(src, op):
    op.num_outputs = output_count(src, "num")
    op.set_attr("num", op.num_outputs)
    op.set_attr("axis", int(src.attr("axis", 0)))


def split(src, op):
    """SPLIT (axis, x) and SPLIT_V (x, size_splits, axis): TF's Split and SplitV, whose
    inputs come in the same orders."""
    op.num_outputs = output_count(src, "num_splits")
    op.set_attr("num_split", op.num_outputs)


# -- padding -------------------------------------------------------------------------------------

def pad(src, op):
    """PAD (zeros; in an int8 model the zero point, which is 0.0 in the float view), PADV2 (the
    third input) and MIRROR_PAD (`mode` REFLECT or SYMMETRIC)."""
    if len(op.inputs) == 2:
        op.inputs.append(None)
    mode = "CONSTANT"
    if src.op_type == "MIRROR_PAD":
        mode = src.attr("mode", "REFLECT")
        if mode not in ("REFLECT", "SYMMETRIC"):
            raise ConversionError(f"MIRROR_PAD mode {mode!r:.40} is not supported",
                                  node=src.name, op_type=src.op_type)
    op.set_attr("mode", mode)


# -- shapes and creation -------------------------------------------------------------------------

def shape(src, op):
    op.set_attr("dtype", src.attr("out_type", None) or "int32")


def matrix_set_diag(src, op):
    """MATRIX_SET_DIAG: TF's MatrixSetDiag (v1): the main diagonal, k = 0."""
    op.add_const_input(np.int32(0), "k")
    op.set_attr("align", "LEFT_LEFT")


MAPPINGS = [
    tflite_op("Reshape", "RESHAPE").parse_params_fn(reshape),
    tflite_op("Squeeze", "SQUEEZE").parse_params_fn(squeeze),
    tflite_op("ExpandDims", "EXPAND_DIMS").parse_params_fn(inputs_only),
    tflite_op("Transpose", "TRANSPOSE").parse_params_fn(inputs_only),
    tflite_subgraph("CONCATENATION").parse_op_to_graph_fn(concatenation),
    tflite_op("Pack", "PACK").parse_params_fn(pack),
    tflite_op("Unpack", "UNPACK").parse_params_fn(unpack),
    tflite_op("Split", "SPLIT").parse_params_fn(split),
    tflite_op("SplitV", "SPLIT_V").parse_params_fn(split),
    tflite_op("Pad", "PAD", "PADV2", "MIRROR_PAD").parse_params_fn(pad),
    tflite_op("Tile", "TILE").parse_params_fn(inputs_only),
    tflite_op("BroadcastTo", "BROADCAST_TO").parse_params_fn(inputs_only),
    tflite_op("BroadcastArgs", "BROADCAST_ARGS").parse_params_fn(inputs_only),
    tflite_op("Shape", "SHAPE").parse_params_fn(shape),
    tflite_op("Rank", "RANK").parse_params_fn(inputs_only),
    tflite_op("Fill", "FILL").parse_params_fn(inputs_only),
    tflite_op("Range", "RANGE").parse_params_fn(inputs_only),
    tflite_op("MatrixDiag", "MATRIX_DIAG").parse_params_fn(inputs_only),
    tflite_op("MatrixSetDiag", "MATRIX_SET_DIAG").parse_params_fn(matrix_set_diag),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
