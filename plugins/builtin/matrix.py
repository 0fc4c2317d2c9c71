"""Built-in mappings for TF's square-matrix algebra (MatrixInverse, MatrixDeterminant) and
diagonal bands (MatrixDiagPart and MatrixSetDiag, V1-V3; MatrixDiag V1-V3 and MatrixBandPart
map in linalg)."""

import numpy as np

from tf2ir.opp import matrix as matrix_ops
from tf2ir.plugins import auto_mapping, hookimpl, register_op


def parse_band(src, op):
    """V1 takes the main diagonal (k = 0 added as a constant); V2 packs short diagonals to the
    left; V3 as its `align` says."""
    auto_mapping(src, op)
    if src.op_type in ("MatrixDiagPart", "MatrixSetDiag"):
        op.add_const_input(np.int32(0), "k")
    op.set_attr("align", src.attr("align", "RIGHT_LEFT") if src.op_type.endswith("V3")
                else "LEFT_LEFT")


MAPPINGS = [
    register_op("MatrixInverse").origin_op_type("MatrixInverse"),
    register_op("MatrixDeterminant").origin_op_type("MatrixDeterminant"),
    register_op("MatrixDiagPart").origin_op_type("MatrixDiagPart", "MatrixDiagPartV2",
                                                 "MatrixDiagPartV3").parse_params_fn(parse_band),
    register_op("MatrixSetDiag").origin_op_type("MatrixSetDiag", "MatrixSetDiagV2",
                                                "MatrixSetDiagV3").parse_params_fn(parse_band),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(matrix_ops.OPS)
