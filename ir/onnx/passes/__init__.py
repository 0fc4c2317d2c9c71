"""The optimisation passes over the lowered ONNX graph: one `PassRecord` each (kind
"onnx"), run by the one pass manager in the order their `after` declarations compute;
`tf2ir convert --passes` switches them (the last word wins)."""

from __future__ import annotations

from typing import Dict, List

from tf2ir.ir.onnx.passes.activation import fuse_hard_activations
from tf2ir.ir.onnx.passes.affine import fold_affine_into_weights
from tf2ir.ir.onnx.passes.bfloat16 import compute_bfloat16_in_float32
from tf2ir.ir.onnx.passes.concat import flatten_concats
from tf2ir.ir.onnx.passes.cse import eliminate_common_subexpressions
from tf2ir.ir.onnx.passes.dce import remove_dead_nodes
from tf2ir.ir.onnx.passes.fold import fold_lowered_constants
from tf2ir.ir.onnx.passes.identity import remove_identities
from tf2ir.ir.onnx.passes.layout import sink_transposes
from tf2ir.ir.onnx.graph import OnnxGraph
from tf2ir.ir.onnx.passes.matmul import (einsums_to_matmuls, attention_form,
                                         merge_sibling_matmuls)
from tf2ir.ir.onnx.passes.pool import reduce_means_to_global_pools
from tf2ir.ir.onnx.passes.qdq import fold_into_quantized_weights
from tf2ir.ir.onnx.passes.qdq_hoist import hoist_transposes_above_dequantize
from tf2ir.ir.onnx.passes.qdq_io import pair_int8_graph_io
from tf2ir.ir.onnx.passes.pad import fold_pads_into_convs, fold_pads_into_pools
from tf2ir.ir.onnx.passes.reshape import simplify_reshapes
from tf2ir.ir.onnx.passes.scale import sink_scales_into_weights
from tf2ir.ir.onnx.passes.shapes import fold_static_shapes
from tf2ir.ir.onnx.passes.reshape_chain import merge_reshape_chains
from tf2ir.ir.passes.manager import PassManager, PassRecord


def _onnx(name, run, description, after=(), repeat=False, before=(), default=True) -> PassRecord:
    return PassRecord(name, "onnx", run, description, after=tuple(after), repeat=repeat,
                      before=tuple(before), default=default)


_REWRITES = ("fold", "einsum", "reshape", "layout", "identity", "affine", "pad", "concat",
             "pool_pad", "global_pool", "scale", "activation", "attention_form", "matmul_merge",
             "cse", "qdq", "qdq_hoist", "qdq_io")

ONNX_PASSES: List[PassRecord] = [
    _onnx("fold", fold_lowered_constants,
          "constant folding of ONNX nodes whose inputs are all constants (size-bounded; "
          "by onnx's reference evaluator)"),
    _onnx("reshape", simplify_reshapes,
          "run-time Reshape targets made constant; Reshape+unit-dim Transpose merged",
          after=("fold",)),
    _onnx("einsum", einsums_to_matmuls,
          "two-operand Einsums that are batched matrix products as Transpose/MatMul",
          after=("fold",)),
    _onnx("layout", sink_transposes,
          "NHWC<->NCHW transposes pushed through layout-agnostic ops and cancelled",
          after=("fold", "reshape", "einsum")),
    _onnx("identity", remove_identities,
          "Identity, identity Transposes, zero Pads, +0 and *1 removed", after=("layout",),
          repeat=True),
    _onnx("qdq", fold_into_quantized_weights,
          "int8 weights read through DequantizeLinear (--quantized qdq): their Transposes and "
          "Reshapes applied to the initializer, a Conv's per-channel bias Add and positive "
          "scale Mul folded into its bias and the weight's scale, so that onnxruntime fuses "
          "QLinearConv/QGemm", after=("fold", "reshape", "layout", "identity", "reshape_chain"),
          before=("affine", "scale", "cse")),
    _onnx("qdq_hoist", hoist_transposes_above_dequantize,
          "a Transpose that alone reads a DequantizeLinear of a run-time tensor moved above it "
          "(onto the integer tensor, a per-axis scale's axis following), so that the op after "
          "reads the DequantizeLinear and onnxruntime fuses QLinearConv and its kin",
          after=("fold", "layout", "identity"), before=("cse",)),
    _onnx("qdq_io", pair_int8_graph_io,
          "an int8 graph input read by DequantizeLinear, and an int8 graph output written by "
          "QuantizeLinear, given the Q -> DQ pair onnxruntime's x86 int8 kernels need",
          after=("qdq_hoist", "identity"), before=("cse",)),
    _onnx("affine", fold_affine_into_weights,
          "per-channel Add/Mul (bias, batch norm) folded into Conv/Gemm/MatMul weights",
          after=("fold", "layout", "identity")),
    _onnx("pad", fold_pads_into_convs, "zero Pads of spatial dims folded into Conv pads",
          after=("fold", "layout", "identity")),
    _onnx("concat", flatten_concats,
          "a Concat read only by a Concat of the same axis spliced into it",
          after=("fold", "layout", "identity")),
    _onnx("pool_pad", fold_pads_into_pools,
          "zero Pads of non-negative tensors (after Relu) folded into MaxPool pads",
          after=("fold", "layout", "identity", "pad")),
    _onnx("global_pool", reduce_means_to_global_pools,
          "ReduceMean/ReduceMax over every spatial axis as GlobalAveragePool/GlobalMaxPool",
          after=("fold", "layout", "identity")),
    _onnx("scale", sink_scales_into_weights,
          "per-channel Muls no producer absorbs moved forward (through Add, positive-scale "
          "Relu/MaxPool, pools, zero Pads) into the weights of the Conv/Gemm/MatMul reading them; "
          "per-channel Adds into unpadded Conv/Gemm biases, else (of a Conv, Concat or pool "
          "output) as BatchNormalization, which onnxruntime runs in its blocked layout",
          after=("affine", "pad", "pool_pad", "global_pool")),
    _onnx("activation", fuse_hard_activations,
          "x * HardSigmoid(x) as HardSwish; Clip(z, 0, 6) / 6 as HardSigmoid",
          after=("fold", "layout", "identity", "affine")),
    _onnx("attention_form", attention_form,
          "a bias Add after a Reshape that splits the last axis (attention heads) moved "
          "before it as one vector", after=("fold", "reshape", "einsum", "identity")),
    _onnx("matmul_merge", merge_sibling_matmuls,
          "MatMuls sharing an input (attention's query/key/value), with their bias Adds, as "
          "one MatMul and a Split (off by default: onnxruntime's transformer optimizer fuses "
          "attention only from separate projections, and plain onnxruntime runs both alike)",
          after=("affine", "identity", "scale", "attention_form"), default=False),
    _onnx("cse", eliminate_common_subexpressions,
          "common-subexpression elimination (equal nodes and small constants merged)",
          after=("affine", "scale"), repeat=True),
    _onnx("bfloat16", compute_bfloat16_in_float32,
          "bfloat16 ops onnxruntime's CPU backend has no kernel for computed in float32 "
          "between Casts (off: for a runtime with those kernels)",
          after=_REWRITES, before=("dce",)),
    _onnx("dce", remove_dead_nodes, "dead-code elimination", after=_REWRITES),
    _onnx("static_shape", fold_static_shapes,
          "Shape/Size of statically known shapes and integer reductions of constants made "
          "constant, and what they feed folded (exporters' shape arithmetic)",
          before=("fold", "reshape")),
    _onnx("reshape_chain", merge_reshape_chains,
          "Reshape/Squeeze/Unsqueeze/Flatten of one of them, of a statically known result "
          "shape, as one Reshape", after=("fold", "reshape", "static_shape"),
          before=("layout", "dce")),
]


def optimize_lowered(ctx, graph, manager: PassManager) -> Dict[str, int]:
    """Run `manager`'s enabled ONNX passes over a LowerContext's ONNX graph (in place);
    `graph` is the IR graph it lowered (its known ranks, dtypes and shapes). Returns the count
    of rewrites per pass that ran."""
    if not any(r.kind == "onnx" for r in manager.enabled):
        return {}
    lowered: OnnxGraph = ctx.onnx
    for v in graph.values():
        if v.desc.rank is not None:
            lowered.ranks.setdefault(v.name, v.desc.rank)
        lowered.dtypes.setdefault(v.name, v.desc.dtype)
        if v.desc.shape is not None:
            lowered.shapes.setdefault(v.name, tuple(v.desc.shape))
    return manager.run(lowered, kind="onnx")
