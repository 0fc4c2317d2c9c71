"""Random ops: uniform floats and integers (RandomUniform, RandomUniformInt, the stateless
full-range integers), standard and truncated normals (RandomStandardNormal, TruncatedNormal),
categorical draws (Multinomial) and shuffling along dim 0 (RandomShuffle).

ONNX cannot reproduce TF's Philox streams: a converted model draws from TF's distribution,
never TF's values. Each draw is exact in distribution, not approximated:

- uniform floats lie on TF's grid, k / 2**m with k uniform in [0, 2**m) and m the mantissa
  bits TF fills (23 for float32, 52 for float64, 10 for float16, 7 for bfloat16);
- uniform integers are 32 random bits (int32, uint32) or 63 (int64) reduced modulo
  maxval - minval, as TF reduces its 32 or 64 bits (TF's modulo bias is kept for 32-bit types);
- the truncated normal (within 2 standard deviations) is the inverse normal CDF of a uniform
  restricted to [Phi(-2), Phi(2)], computed in float64 with Wichura's algorithm AS241
  (relative error about 1e-16): nothing is rejected, so nothing is approximated. ONNX has no
  Erfinv, and onnxruntime's Erf has no float64 kernel for a Newton refinement;
- Multinomial walks the float64 CDF of exp(logits - max) as TF's CPU kernel does (non-finite
  logits have probability 0) and counts the CDF entries at or below u * total (upper_bound);
- RandomShuffle gathers rows (GatherND) in the order of float64 uniform keys sorted by TopK.

Seeds: an op whose seed or seed2 attribute is set gets an ONNX seed derived from them, so its
sequence is the same from session to session, as TF's is (not the same sequence as TF's).

Stateless ops (StatelessRandomUniform/V2, StatelessRandomNormal/V2, StatelessTruncatedNormal/V2,
StatelessRandomUniformInt/V2, StatelessRandomUniformFullInt/V2, StatelessMultinomial) map to
the same IR ops with their seed inputs dropped and `stateless` set; the conversion warns that
TF returns one fixed draw per seed while the converted model draws afresh on every run. The
ops that make their Philox state (StatelessRandomGetKeyCounter, StatelessRandomGetAlg,
StatelessRandomGetKeyCounterAlg) lower to nothing; a graph that reads that state for anything
else is refused, since it cannot be computed.
"""

from __future__ import annotations

import math
import zlib
from typing import List, Optional

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.errors import ExitStatus
from tf2ir.ir.onnx.writer import ONNX_DTYPES, tensor_proto
from tf2ir.ir.tensor import FLOAT_TYPES, INDEX_TYPES, numpy_dtype
from tf2ir.opp.emitting import Emitter, emit_cast, int64_constant, int64_input, scalar_int64_input
from tf2ir.opp.shapes import const_ints, infer_from_shape_input, same_as_input

OPS = OpSet("tf2ir.opp.random")

# the mantissa bits TF fills in a uniform float of each dtype: values k / 2**bits
MANTISSA_BITS = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}
INT_DRAW_TYPES = ("int32", "int64", "uint32")
FULL_INT_TYPES = ("int32", "int64", "uint32", "uint64")
INT64 = ONNX_DTYPES["int64"]
TWO_32 = float(2 ** 32)
PHI_SPAN = math.erf(math.sqrt(2.0))     # Phi(2) - Phi(-2): the mass within 2 standard deviations


def _seed(node) -> Optional[float]:
    """The ONNX seed for the node's TF seed attributes (None: both 0, a fresh seed per run)."""
    seed, seed2 = node.attrs.get("seed", 0), node.attrs.get("seed2", 0)
    if not seed and not seed2:
        return None
    # spread (onnxruntime's generator is an LCG: near seeds give near first draws), and exact
    # in ONNX's float attribute
    return float(zlib.crc32(f"{seed}:{seed2}".encode()) % (1 << 24))


def _note_stateless(ctx, node) -> None:
    if node.attrs.get("stateless"):
        ctx.note(f"{node.name} ({node.op_type}): TF's stateless random ops return one fixed "
                 "draw per seed (Philox); the converted model draws from the same "
                 "distribution, afresh on every run", warning=True)


def draw(ctx, node, onnx_op: str, shape: str, dtype: str, out: Optional[str] = None) -> str:
    """A float32/float64 tensor of run-time `shape` (int64 1-D) drawn by `onnx_op`
    (RandomUniformLike: [0, 1); RandomNormalLike: standard normal)."""
    zeros = ctx.op.ConstantOfShape(shape,
                                   value=tensor_proto("value", np.zeros(1, numpy_dtype(dtype))))
    return getattr(ctx.op, onnx_op)(zeros, out=out, dtype=ONNX_DTYPES[dtype],
                                    seed=_seed(node))


def random_words(ctx, node, shape: str, count: int) -> List[str]:
    """`count` (1 or 2) int64 tensors of `shape` holding 32 random bits each, [0, 2**32):
    floor(u * 2**32) of float64 uniforms, drawn by one node (one seeded stream)."""
    o = Emitter(ctx, "float64")
    if count > 1:
        shape = o.Concat(int64_constant(ctx, [count]), shape, axis=0)
    u = draw(ctx, node, "RandomUniformLike", shape, "float64")
    words = o.Cast(o.Min(o.Floor(o.Mul(u, o.c(TWO_32))), o.c(TWO_32 - 1)), to=INT64)
    if count == 1:
        return [words]
    return [o.Gather(words, ctx.constant(np.array(i, np.int64)), axis=0) for i in range(count)]


def _draw_op(op_type: str, doc: str, dtype_attr: bool = True):
    proto = OPS.declare(op_type, doc).input("shape", INDEX_TYPES)
    if op_type == "RandomUniformInt":
        proto.input("minval", INT_DRAW_TYPES).input("maxval", INT_DRAW_TYPES)
    proto.output("y")
    if dtype_attr:
        proto.attr("dtype", "dtype", doc="the output dtype")
    return proto.attr("seed", "int", 0).attr("seed2", "int", 0) \
        .attr("stateless", "bool", False, "mapped from a Stateless* op (warned: values differ)")


def _infer_draw(dtypes):
    def infer(node):
        dtype = node.attrs["dtype"]
        if dtype not in dtypes:
            raise ConversionError(f"{node.op_type} draws {', '.join(dtypes)}, not {dtype}")
        return infer_from_shape_input(node, 0, dtype)
    return infer


def _emit_result(ctx, value: str, work: str, dtype: str) -> None:
    if work == dtype:
        ctx.op.Identity(value, out=ctx.output(0))
    else:
        emit_cast(ctx, value, dtype, ctx.output(0))


# -- uniform and normal floats -------------------------------------------------------------
uniform = _draw_op("RandomUniform", "Floats uniform in [0, 1) on TF's grid k / 2**mantissa_bits.")
uniform.infer(_infer_draw(FLOAT_TYPES))


@uniform.lower
def _lower_uniform(ctx, node):
    _note_stateless(ctx, node)
    dtype = node.attrs["dtype"]
    work = "float64" if dtype == "float64" else "float32"
    steps = 2.0 ** MANTISSA_BITS[dtype]
    o = Emitter(ctx, work)
    u = draw(ctx, node, "RandomUniformLike", int64_input(ctx, 0), work)
    k = o.Min(o.Floor(o.Mul(u, o.c(steps))), o.c(steps - 1))    # onnxruntime's u may be 1.0
    _emit_result(ctx, o.Mul(k, o.c(1.0 / steps)), work, dtype)


normal = _draw_op("RandomStandardNormal", "Floats drawn from the standard normal distribution.")
normal.infer(_infer_draw(FLOAT_TYPES))


@normal.lower
def _lower_normal(ctx, node):
    _note_stateless(ctx, node)
    dtype = node.attrs["dtype"]
    work = "float64" if dtype == "float64" else "float32"
    _emit_result(ctx, draw(ctx, node, "RandomNormalLike", int64_input(ctx, 0), work), work, dtype)


# -- truncated normal: the inverse normal CDF (AS241) of a restricted uniform -----------------
# Wichura, "Algorithm AS 241: The percentage points of the normal distribution" (1988), PPND16:
# rational functions in r, lowest power first; numerators A, C and denominators B, D.
AS241_A = (3.387132872796366608, 133.14166789178437745, 1971.5909503065514427,
           13731.693765509461125, 45921.953931549871457, 67265.770927008700853,
           33430.575583588128105, 2509.0809287301226727)
AS241_B = (1.0, 42.313330701600911252, 687.1870074920579083, 5394.1960214247511077,
           21213.794301586595867, 39307.89580009271061, 28729.085735721942674,
           5226.495278852545925)
AS241_C = (1.42343711074968357734, 4.6303378461565452959, 5.7694972214606914055,
           3.64784832476320460504, 1.27045825245236838258, 0.24178072517745061177,
           0.0227238449892691845833, 7.7454501427834140764e-4)
AS241_D = (1.0, 2.05319162663775882187, 1.6763848301838038494, 0.68976733498510000455,
           0.14810397642748007459, 0.0151986665636164571966, 5.475938084995344946e-4,
           1.05075007164441684324e-9)


def _polynomial(o: Emitter, coefficients, r: str) -> str:
    acc = o.c(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = o.Add(o.Mul(acc, r), o.c(c))
    return acc


def inverse_normal_cdf(o: Emitter, q: str) -> str:
    """Phi^-1(0.5 + q) for float64 q in (-0.5, 0.5) with 0.5 - |q| >= exp(-25): AS241's
    central region (|q| <= 0.425) and its first tail region."""
    r = o.Sub(o.c(0.180625), o.Mul(q, q))
    central = o.Div(o.Mul(q, _polynomial(o, AS241_A, r)), _polynomial(o, AS241_B, r))
    t = o.Sub(o.Sqrt(o.Neg(o.Log(o.Sub(o.c(0.5), o.Abs(q))))), o.c(1.6))
    tail = o.Mul(o.Sign(q), o.Div(_polynomial(o, AS241_C, t), _polynomial(o, AS241_D, t)))
    return o.Where(o.LessOrEqual(o.Abs(q), o.c(0.425)), central, tail)


truncated = _draw_op("TruncatedNormal", "Standard normal floats within 2 standard deviations "
                                        "(inverse CDF of a restricted uniform).")
truncated.infer(_infer_draw(FLOAT_TYPES))


@truncated.lower
def _lower_truncated(ctx, node):
    _note_stateless(ctx, node)
    o = Emitter(ctx, "float64")
    u = draw(ctx, node, "RandomUniformLike", int64_input(ctx, 0), "float64")
    x = inverse_normal_cdf(o, o.Mul(o.Sub(u, o.c(0.5)), o.c(PHI_SPAN)))
    _emit_result(ctx, o.Clip(x, o.c(-2.0), o.c(2.0)), "float64", node.attrs["dtype"])


# -- integers --------------------------------------------------------------------------------
uniform_int = _draw_op("RandomUniformInt", "Integers uniform in [minval, maxval) (scalars).",
                       dtype_attr=False)


@uniform_int.infer
def _infer_uniform_int(node):
    dtype = node.inputs[1].desc.dtype
    if node.inputs[2].desc.dtype != dtype:
        raise ConversionError(f"minval is {dtype}, maxval {node.inputs[2].desc.dtype}")
    return infer_from_shape_input(node, 0, dtype)


@uniform_int.lower
def _lower_uniform_int(ctx, node):
    _note_stateless(ctx, node)
    dtype = node.inputs[1].desc.dtype
    o = Emitter(ctx, "int64")
    if dtype == "int64":        # 63 random bits: the high word halved, then the low word
        high, low = random_words(ctx, node, int64_input(ctx, 0), 2)
        bits = o.Add(o.Mul(o.Div(high, o.c(2)), o.c(2 ** 32)), low)
    else:
        bits = random_words(ctx, node, int64_input(ctx, 0), 1)[0]
    low_value, high_value = int64_input(ctx, 1), int64_input(ctx, 2)
    span = o.Max(o.Sub(high_value, low_value), o.c(1))      # TF refuses maxval <= minval
    result = o.Add(low_value, o.Mod(bits, span))
    _emit_result(ctx, result, "int64", dtype)


full_int = _draw_op("RandomUniformFullInt", "Integers uniform over their dtype's whole range "
                                            "(the stateless ops' full-range draw).")
full_int.infer(_infer_draw(FULL_INT_TYPES))


@full_int.lower
def _lower_full_int(ctx, node):
    _note_stateless(ctx, node)
    dtype = node.attrs["dtype"]
    o = Emitter(ctx, "int64")
    wide = dtype in ("int64", "uint64")
    words = random_words(ctx, node, int64_input(ctx, 0), 2 if wide else 1)
    if dtype == "uint32":
        _emit_result(ctx, words[0], "int64", dtype)
        return
    signed = o.Sub(words[0], o.c(2 ** 31))                  # [-2**31, 2**31)
    value = o.Add(o.Mul(signed, o.c(2 ** 32)), words[1]) if wide else signed
    _emit_result(ctx, value, "int64", dtype)                # uint64: the same 64 bits


# -- categorical draws and shuffling ------------------------------------------------------------
multinomial = OPS.declare("Multinomial", "num_samples class indices per row of logits "
                                         "[batch, classes], drawn with probabilities "
                                         "softmax(logits).") \
    .input("logits", FLOAT_TYPES).input("num_samples", INDEX_TYPES).output("y", INDEX_TYPES) \
    .attr("output_dtype", "dtype", "int64").attr("seed", "int", 0).attr("seed2", "int", 0) \
    .attr("stateless", "bool", False, "mapped from StatelessMultinomial (warned: values differ)")


@multinomial.infer
def _infer_multinomial(node):
    logits, samples = node.inputs[0].desc, const_ints(node, 1)
    if logits.rank not in (None, 2):
        raise ConversionError(f"logits must be 2-D [batch, classes], not rank {logits.rank}")
    dtype = node.attrs["output_dtype"]
    if dtype not in INDEX_TYPES:
        raise ConversionError(f"output_dtype must be int32 or int64, not {dtype}")
    batch = logits.shape[0] if logits.shape is not None else None
    return [TensorDesc(dtype, (batch, None if samples is None else samples[0]))]


@multinomial.lower
def _lower_multinomial(ctx, node):
    _note_stateless(ctx, node)
    o = Emitter(ctx, "float64")
    logits = ctx.input(0)
    if node.inputs[0].desc.dtype != "float64":
        logits = emit_cast(ctx, logits, "float64")
    finite = o.Not(o.Or(o.IsNaN(logits), o.IsInf(logits)))
    top = o.ReduceMax(o.Where(finite, logits, o.c(-np.inf)), int64_constant(ctx, [1]),
                      keepdims=1)
    weights = o.Where(finite, o.Exp(o.Sub(logits, top)), o.c(0.0))
    cdf = o.CumSum(weights, ctx.constant(np.array(1, np.int64)))
    total = o.Gather(cdf, int64_constant(ctx, [-1]), axis=1)                     # [batch, 1]
    shape = o.Shape(logits)
    batch = o.Slice(shape, int64_constant(ctx, [0]), int64_constant(ctx, [1]))
    classes = o.Slice(shape, int64_constant(ctx, [1]), int64_constant(ctx, [2]))
    samples = o.Reshape(scalar_int64_input(ctx, 1), int64_constant(ctx, [1]))
    u = draw(ctx, node, "RandomUniformLike", o.Concat(batch, samples, axis=0), "float64")
    target = o.Unsqueeze(o.Mul(u, total), int64_constant(ctx, [2]))         # [batch, n, 1]
    below = o.LessOrEqual(o.Unsqueeze(cdf, int64_constant(ctx, [1])), target)  # [batch, n, c]
    count = o.ReduceSum(o.Cast(below, to=INT64), int64_constant(ctx, [2]), keepdims=0)
    index = o.Min(count, o.Sub(classes, int64_constant(ctx, [1])))   # u * total rounded up
    _emit_result(ctx, index, "int64", node.attrs["output_dtype"])


shuffle = OPS.declare("RandomShuffle", "value with its slices along dim 0 in a uniformly random "
                                       "order.") \
    .input("value").output("y").attr("seed", "int", 0).attr("seed2", "int", 0)
shuffle.infer(same_as_input)


@shuffle.lower
def _lower_shuffle(ctx, node):
    rank = node.inputs[0].desc.rank
    if rank is None:
        raise ConversionError("RandomShuffle needs the rank of its input")
    if rank == 0:
        ctx.op.Identity(ctx.input(0), out=ctx.output(0))
        return
    o = Emitter(ctx, "float64")
    length = o.Slice(o.Shape(ctx.input(0)), int64_constant(ctx, [0]), int64_constant(ctx, [1]))
    keys = draw(ctx, node, "RandomUniformLike", length, "float64")
    order = ctx.op.TopK(keys, length, outputs=2, axis=0, largest=1, sorted=1)[1]
    # GatherND: onnxruntime's Gather copies only the first string of each string slice
    rows = o.Unsqueeze(order, int64_constant(ctx, [1]))
    ctx.op.GatherND(ctx.input(0), rows, out=ctx.output(0))


# -- the Philox state of the stateless ops ------------------------------------------------------
def _philox_state(op_type: str, doc: str, outputs):
    proto = OPS.declare(op_type, doc)
    if op_type != "StatelessRandomGetAlg":
        proto.input("seed", INDEX_TYPES)
    for name, dtype, shape in outputs:
        proto.output(name, (dtype,))

    @proto.infer
    def infer(node):
        return [TensorDesc(dtype, shape) for _, dtype, shape in outputs]
    proto.lower(_lower_philox_state)
    return proto


def _lower_philox_state(ctx, node):
    """Nothing: the stateless random ops ignore their Philox state (their plugins drop it)."""
    graph_outputs = node.graph.outputs
    if any(value.uses or value in graph_outputs for value in node.outputs):
        raise ConversionError(f"{node.op_type}'s outputs are TF's Philox key, counter and "
                              "algorithm, which ONNX cannot compute; only the stateless random "
                              "ops (which draw without them) may read them",
                              exit_code=ExitStatus.UNSUPPORTED)


KEY, COUNTER, ALG = ("key", "uint64", (1,)), ("counter", "uint64", (2,)), ("alg", "int32", ())
_philox_state("StatelessRandomGetKeyCounter", "TF's Philox key and counter for a seed.",
              [KEY, COUNTER])
_philox_state("StatelessRandomGetAlg", "TF's default counter-based RNG algorithm.", [ALG])
_philox_state("StatelessRandomGetKeyCounterAlg", "TF's Philox key, counter and algorithm for a "
              "seed.", [KEY, COUNTER, ALG])
