"""Half precision (ExportOptions.precision / weights / io_precision, ir/export.py): the ONNX
graph after its passes, with weights (and compute) in float16.

`--weights fp16` (storage only, OpenVINO's compress_to_fp16): each float32 initializer of at
least `MIN_STORED_HALF` elements is stored as float16 and read through one Cast to float32
written under its old name, so every node computes in float32 as before. onnxruntime's constant
folding runs the Cast once when the session is made (tests/ir/test_precision.py checks that the
optimized session holds no Cast), so latency is that of the float32 model. Smaller tensors
(scalars such as an epsilon of 1e-12, which float16 flushes to zero) stay float32: they weigh
nothing.

`--precision fp16`: weights and compute in float16 (ir/onnx/precision_convert.py rewrites the
graph), with the ops of `KEEP_FP32` computing in float32 between Casts; their float32 weights
are then stored as float16 as above, so the file is about half the float32 one either way.
Graph inputs and outputs stay float32 unless `--io-precision fp16`; integer tensors are never
touched.

Which ops stay float32 (`KEEP_FP32`), from measurements (`python -m tf2ir.tools.precision`,
onnxruntime 1.32's CPU provider; the table is in the docs' precision page):

- On onnxruntime's CPU provider most float16 ops run in float32 between onnxruntime's own Casts,
  so the list changes the models' errors little: with nothing kept (`--keep none`) vs the list,
  BertBaseLayer2's relative error is 6.6e-4 vs 3.4e-4 (its LayerNormalizations and Softmaxes),
  BertEncoder's 7.9e-4 vs 7.4e-4, the CNNs' 1e-4 to 1e-3 either way, T5Encoder's 2.4e-2 either
  way (the weights' rounding alone gives it 1.9e-2).
- The list is for runtimes whose float16 kernels accumulate in float16 (`--accumulation`): the
  mean of x^2 over 768 elements (a norm's variance at BERT-base width) is then off by 8e-3, over
  3072 by 6e-2, over 50176 (a 224x224 image) by 65%; the mean of x over 3072 by 2e-2. So the
  reductions (ReduceMean, ReduceSum, ReduceSumSquare, ReduceL2, ReduceLogSumExp),
  LayerNormalization, GlobalAveragePool and Softmax/LogSoftmax (exp and a row's sum) stay
  float32.
- Range: float16's largest value is 65504, so x^2 overflows for |x| > 256 (Pow: T5's and GPT's
  norms and GELU square or cube activations) and exp for x > 11.09 (Exp, Log's inverse); they
  stay float32.
- Random draws (RandomNormal(Like), RandomUniform(Like), Multinomial, Bernoulli), Range (no
  float16 kernel), the sequence ops (their element type is the sequence's), every op of a
  custom domain (a plugin kernel is typed as declared), and any standard op whose onnxruntime
  CPU kernel lacks float16 (ir/onnx/kernels.py: IsInf, Range).

Everything else, convolutions, matrix products, elementwise arithmetic and activations, runs in
float16: their errors stay within float16's rounding (2^-11 relative) of each result."""

from __future__ import annotations

from typing import FrozenSet, Optional

import numpy as np

from tf2ir.ir.export import ExportOptions
from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode
from tf2ir.ir.onnx.kernels import has_kernel
from tf2ir.ir.onnx.node import SUBGRAPH_OPS
from tf2ir.ir.onnx.passes.bfloat16 import infer_elem_types
from tf2ir.ir.onnx.passes.dce import remove_dead_nodes
from tf2ir.ir.onnx.precision_convert import F16, F32, HalfRewrite, to_half

MIN_STORED_HALF = 64      # elements: smaller float32 initializers stay float32

KEEP_FP32: FrozenSet[str] = frozenset({
    "Pow", "ReduceMean", "ReduceSum", "ReduceSumSquare", "ReduceL2", "ReduceLogSumExp",
    "LayerNormalization", "Softmax", "LogSoftmax", "Exp", "Log", "GlobalAveragePool",
    "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial",
    "Bernoulli", "Range",
    "SequenceConstruct", "SequenceInsert", "SequenceAt", "SequenceEmpty", "SequenceErase",
    "SequenceLength", "ConcatFromSequence", "SplitToSequence",
})


def keeps_float32(node: OnnxNode, keep: FrozenSet[str] = KEEP_FP32) -> bool:
    """Whether `node` computes in float32 under --precision fp16 (see the module's note)."""
    if not node.standard:
        return True
    if node.op_type in SUBGRAPH_OPS:
        return False
    return node.op_type in keep or not has_kernel(node.op_type, "float16")


def apply_precision(ctx, export: ExportOptions, model: Optional[str] = None,
                    keep: FrozenSet[str] = KEEP_FP32) -> None:
    """Rewrite the lowered ONNX graph of `ctx` (a LowerContext after the passes) in place;
    `keep`: the op types left float32 (the measuring tool tries others)."""
    if export.precision == "fp32" and export.weights == "fp32":
        return
    g: OnnxGraph = ctx.onnx
    if export.precision == "fp16":
        io = F16 if export.io_precision == "fp16" else F32
        fixed = set(ctx.input_defaults or ())
        rewrite = HalfRewrite(g, infer_elem_types(g), lambda n: keeps_float32(n, keep), io,
                              fixed)
        rewrite.run()
        if io == F16:
            _declare_half_io(ctx, fixed)
        remove_dead_nodes(g)
    store_half(g)


def _declare_half_io(ctx, fixed) -> None:
    """The IR graph's float32 inputs and outputs declared float16 (build_model types the
    written graph's interface from them)."""
    for value in list(ctx.graph.inputs) + list(ctx.graph.outputs):
        if value.desc.dtype == "float32" and value.name not in fixed:
            desc = value.desc.copy()
            desc.dtype = "float16"
            value.desc = desc


def store_half(g: OnnxGraph, min_size: int = MIN_STORED_HALF) -> int:
    """Store each read float32 initializer of at least `min_size` elements as float16, read
    through a Cast to float32 under its name; returns how many."""
    read = g.read_names()
    stored = 0
    for name in [n for n, a in g.initializers.items()
                 if n in read and np.asarray(a).dtype == np.float32 and np.size(a) >= min_size]:
        half = g.add_initializer(to_half(g.initializers.pop(name)), f"{name}/fp16")
        g.add_node("Cast", [half], [name], to=F32)
        stored += 1
    return stored


__all__ = ["apply_precision", "keeps_float32", "store_half", "KEEP_FP32", "F16"]
