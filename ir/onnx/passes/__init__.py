"""The optimisation passes over the lowered ONNX graph: one `PassRecord` each (kind
"onnx"), run by the one pass manager in the order their `after` declarations compute;
`tf2ir convert --passes` switches them (the last word wins)."""

from __future__ import annotations

from typing import Dict, List

from tf2ir.ir.onnx.passes.affine import fold_affine_into_weights
from tf2ir.ir.onnx.passes.bfloat16 import compute_bfloat16_in_float32
from tf2ir.ir.onnx.passes.cse import eliminate_common_subexpressions
from tf2ir.ir.onnx.passes.dce import remove_dead_nodes
from tf2ir.ir.onnx.passes.fold import fold_lowered_constants
from tf2ir.ir.onnx.passes.identity import remove_identities
from tf2ir.ir.onnx.passes.layout import sink_transposes
from tf2ir.ir.onnx.passes.lowered import LoweredGraph
from tf2ir.ir.onnx.passes.pad import fold_pads_into_convs
from tf2ir.ir.onnx.passes.reshape import simplify_reshapes
from tf2ir.ir.passes.manager import PassManager, PassRecord


def _onnx(name, run, description, after=(), repeat=False, before=()) -> PassRecord:
    return PassRecord(name, "onnx", run, description, after=tuple(after), repeat=repeat,
                      before=tuple(before))


ONNX_PASSES: List[PassRecord] = [
    _onnx("fold", fold_lowered_constants,
          "constant folding of ONNX nodes whose inputs are all constants (size-bounded)"),
    _onnx("reshape", simplify_reshapes,
          "run-time Reshape targets made constant; Reshape+unit-dim Transpose merged",
          after=("fold",)),
    _onnx("layout", sink_transposes,
          "NHWC<->NCHW transposes pushed through layout-agnostic ops and cancelled",
          after=("fold", "reshape")),
    _onnx("identity", remove_identities,
          "Identity, identity Transposes, zero Pads, +0 and *1 removed", after=("layout",),
          repeat=True),
    _onnx("affine", fold_affine_into_weights,
          "per-channel Add/Mul (bias, batch norm) folded into Conv/Gemm/MatMul weights",
          after=("fold", "layout", "identity")),
    _onnx("pad", fold_pads_into_convs, "zero Pads of spatial dims folded into Conv pads",
          after=("fold", "layout", "identity")),
    _onnx("cse", eliminate_common_subexpressions,
          "common-subexpression elimination (equal nodes and small constants merged)",
          after=("affine",), repeat=True),
    _onnx("bfloat16", compute_bfloat16_in_float32,
          "bfloat16 ops onnxruntime's CPU backend has no kernel for computed in float32 "
          "between Casts (off: for a runtime with those kernels)",
          after=("fold", "reshape", "layout", "identity", "affine", "pad", "cse"), before=("dce",)),
    _onnx("dce", remove_dead_nodes, "dead-code elimination",
          after=("fold", "reshape", "layout", "identity", "affine", "pad", "cse")),
]


def optimize_lowered(ctx, graph, manager: PassManager) -> Dict[str, int]:
    """Run `manager`'s enabled ONNX passes over a LowerContext's nodes and initializers (in
    place); `graph` is the IR graph it lowered (its inputs, outputs and known ranks). Returns
    the count of rewrites per pass that ran."""
    if not any(r.kind == "onnx" for r in manager.enabled):
        return {}
    ranks = {v.name: v.desc.rank for v in graph.values() if v.desc.rank is not None}
    dtypes = {v.name: v.desc.dtype for v in graph.values()}
    inputs = [v.name for v in graph.inputs] + list(ctx.input_defaults or ())
    lowered = LoweredGraph(ctx.nodes, ctx.initializers, inputs,
                           [v.name for v in graph.outputs], ctx.fresh, ranks, dtypes)
    return manager.run(lowered, kind="onnx")
