"""Built-in mappings for TF's linear algebra: MatMul, BatchMatMul (V1-V3), Einsum, MatrixDiag
(V1-V3) and MatrixBandPart."""

from tf2ir.ir import ConversionError
from tf2ir.opp import linalg as linalg_ops
from tf2ir.plugins import DynamicInputOutputInfo, auto_mapping_dynamic, hookimpl, register_op


def parse_matmul(src, op):
    """TF names the transposes transpose_a/transpose_b; the IR op says x1/x2. A TF MatMul
    has two inputs (the IR op's optional bias is for fusions)."""
    if len(src.inputs) != 2:
        raise ConversionError(f"MatMul takes 2 inputs, the node has {len(src.inputs)}")
    op.set_attr("transpose_x1", bool(src.attr("transpose_a", False)))
    op.set_attr("transpose_x2", bool(src.attr("transpose_b", False)))


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


def parse_matrix_diag_v3(src, op):
    """MatrixDiagV2/V3: k, num_rows, num_cols and padding_value may be constants or run-time
    tensors; V2 packs short diagonals to the left (align LEFT_LEFT), V3 as `align` says."""
    if len(op.inputs) != 5:
        raise ConversionError(f"{src.op_type} takes 5 inputs, the node has {len(op.inputs)}")
    op.set_attr("align", src.attr("align", "RIGHT_LEFT") if src.op_type == "MatrixDiagV3"
                else "LEFT_LEFT")


MAPPINGS = [
    register_op("MatMul").origin_op_type("MatMul").parse_params_fn(parse_matmul),
    register_op("BatchMatMul").origin_op_type("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
    .parse_params_fn(parse_batch_mat_mul),
    register_op("Einsum").origin_op_type("Einsum").parse_params_fn(parse_einsum),
    register_op("MatrixDiag").origin_op_type("MatrixDiag"),
    register_op("MatrixDiagV3").origin_op_type("MatrixDiagV2", "MatrixDiagV3")
    .parse_params_fn(parse_matrix_diag_v3),
    register_op("MatrixBandPart").origin_op_type("MatrixBandPart"),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(linalg_ops.OPS)
