"""Built-in mappings: reductions and linear algebra beyond the basics: arg-max/min, boolean reductions, cumulative sums and products, batched matrix products, einsum."""

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.plugins import DynamicInputOutputInfo, auto_mapping_dynamic, hookimpl, register_op
from tf2ir.opp import reduce as reduce_ops


def parse_batch_mat_mul(src, op):
    """TF says adj_x/adj_y, the IR op adj_x1/adj_x2; BatchMatMulV3 may widen to Tout
    (e.g. int8 operands, int32 product)."""
    op.set_attr("adj_x1", bool(src.attr("adj_x", False)))
    op.set_attr("adj_x2", bool(src.attr("adj_y", False)))
    tout = src.attr("Tout", None)
    if tout is not None:
        op.set_attr("dst_type", tout)


def parse_einsum(src, op):
    auto_mapping_dynamic(src, op, [DynamicInputOutputInfo("input", "x", "N")])


def _const(op, index, what):
    value = op.inputs[index].const_value if op.inputs[index] is not None else None
    if value is None:
        raise ConversionError(f"MatrixDiagV3 needs a constant {what}")
    return [int(v) for v in np.asarray(value).reshape(-1)]


def parse_matrix_diag_v3(src, op):
    """Only the main diagonal of square matrices (tf.linalg.diag's default: k=0,
    num_rows=num_cols=-1) maps to MatrixDiag; other diagonals raise."""
    diagonal, k, num_rows, num_cols, padding = op.inputs
    offsets = _const(op, 1, "k")
    if any(o != 0 for o in offsets):
        raise ConversionError(f"MatrixDiagV3 with k={offsets} is not supported; only the main "
                              "diagonal (k=0)")
    size = None if diagonal.desc.shape is None else diagonal.desc.shape[-1]
    for what, index in (("num_rows", 2), ("num_cols", 3)):
        value = _const(op, index, what)[0]
        if value != -1 and value != size:
            raise ConversionError(f"MatrixDiagV3 with {what}={value} (diagonal length {size}) "
                                  "is not supported; only square matrices")
    op.inputs = [diagonal, padding]


MAPPINGS = [
    register_op("ArgMax").origin_op_type("ArgMax"),
    register_op("ArgMin").origin_op_type("ArgMin"),
    register_op("ReduceAll").origin_op_type("All"),
    register_op("ReduceAny").origin_op_type("Any"),
    register_op("EuclideanNorm").origin_op_type("EuclideanNorm"),
    register_op("L2Loss").origin_op_type("L2Loss"),
    register_op("Cumsum").origin_op_type("Cumsum"),
    register_op("Cumprod").origin_op_type("Cumprod"),
    register_op("BatchMatMul").origin_op_type("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
    .parse_params_fn(parse_batch_mat_mul),
    register_op("Einsum").origin_op_type("Einsum").parse_params_fn(parse_einsum),
    register_op("MatrixDiag").origin_op_type("MatrixDiag"),
    register_op("MatrixDiag").origin_op_type("MatrixDiagV3").parse_params_fn(parse_matrix_diag_v3),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(reduce_ops.OPS)
