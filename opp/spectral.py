"""Fourier transforms and complex numbers: FFT (forward and inverse, over the innermost 1, 2 or
3 dims), RFFT, IRFFT, Complex, Real, Imag, ComplexAbs, Angle and Conj (elementwise math on complex
operands: tf2ir.opp.complexmath).

Complex values. An IR value of dtype complex64 (complex128) keeps TF's dtype and shape; inside
the ONNX graph it is a float32 (float64) tensor of that shape with a trailing dim of 2 holding
(real, imaginary) parts, because onnxruntime's standard kernels have no complex dtype. Only the
ops of this family read and write that form, so:

- a complex model input or output is refused (onnxruntime could neither feed nor return it; the
  model can take the parts as two float inputs and combine them with tf.complex, or return
  tf.math.real / tf.math.imag / tf.abs of its complex results);
- a complex value that reaches an op outside this family (through Identity or not), or that this
  family reads from one, is refused with the op named, rather than converted wrongly;
- complex constants become (real, imaginary) float constants.

The transforms lower to ONNX DFT (opset 17, so within the opset 18 this compiler targets), on
the signal axis one at a time; the inverse transforms run as conj(DFT(conj(x))) / n, since
onnxruntime's inverse DFT loses precision for float64 lengths that are not powers of two. RFFT
pads or crops each transformed dim to fft_length, then takes the onesided DFT of the innermost
one; IRFFT inverts the outer dims first, then rebuilds the innermost spectrum by conjugate
symmetry and keeps the real part (TF's C2R: the imaginary parts of the DC and Nyquist bins do
not count). Axes count from the end, so the input's rank may be unknown; fft_length may be a
run-time value.
"""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.opp.emitting import Emitter, int64_input
from tf2ir.opp.shapes import broadcast_shapes, const_ints, same_as_input

OPS = OpSet("tf2ir.opp.spectral")

COMPLEX = ("complex64", "complex128")
REAL_OF = {"complex64": "float32", "complex128": "float64"}
COMPLEX_OF = {v: k for k, v in REAL_OF.items()}
# elementwise ops that take complex operands on the pairs (tf2ir.opp.complexmath)
ELEMENTWISE = ("Add", "Sub", "Mul", "RealDiv", "Div", "Neg", "Square", "Exp", "Log", "Sqrt",
               "Sin", "Cos", "Reciprocal")
# IR ops whose output is a pair; Reshape (tf2ir.opp.array) reshapes pairs too
PAIR_MAKERS = ("FFT", "RFFT", "Complex", "Conj", "Reshape") + ELEMENTWISE
# IR ops that read pairs; Shape, Size and Rank (tf2ir.opp.array) read the complex shape
PAIR_READERS = ("FFT", "IRFFT", "Real", "Imag", "ComplexAbs", "Angle", "Conj", "Reshape",
                "Shape", "Size", "Rank") + ELEMENTWISE
PASS_THROUGH = ("Identity",)


# -- the pair form's guards -------------------------------------------------------------------------
def pair_input(ctx, node, index: int) -> str:
    """Input `index` (complex) as its ONNX float pair tensor; refuses a model input and a
    value from an op that does not write the pair form."""
    return _pair_of(ctx, node.inputs[index])


def _zero_pad(node) -> bool:
    """Whether IR node `node` is a Pad by constant zeros (what tf.signal's inverse transforms
    insert before a short spectrum)."""
    if node.op_type != "Pad" or node.attrs.get("mode", "CONSTANT") != "CONSTANT":
        return False
    fill = node.inputs[2] if len(node.inputs) > 2 else None
    return fill is None or (fill.const_value is not None and not np.any(fill.const_value))


def _pair_of(ctx, value) -> str:
    while value.producer is not None and value.producer.op_type in PASS_THROUGH:
        value = value.producer.inputs[0]
    array = value.const_value
    if array is not None:
        array = np.asarray(array)
        real = REAL_OF.get(array.dtype.name, array.dtype.name)
        return ctx.constant(np.stack([array.real, array.imag], -1).astype(real), "complex")
    if value.producer is None:
        raise ConversionError(f"model input {value.name!r} is {value.desc.dtype}: onnxruntime "
                              "has no complex tensors (feed the real and imaginary parts as two "
                              "float inputs and combine them with tf.complex)")
    producer = value.producer
    if _zero_pad(producer):         # padded here, on the pairs, with the pair dim unpadded
        paddings = producer.inputs[1]
        if paddings.const_value is not None:
            pads = np.asarray(paddings.const_value, np.int64).reshape(-1, 2)
            pads = ctx.constant(np.concatenate([pads, [[0, 0]]]).T.reshape(-1))
        else:
            o = Emitter(ctx, "int64")
            pairs = o.Reshape(o.Cast(paddings.name, to=7), o.c([-1, 2]))
            pads = o.Reshape(o.Transpose(o.Concat(pairs, o.c([[0, 0]]), axis=0), perm=[1, 0]),
                             o.c([-1]))
        return ctx.op.Pad(_pair_of(ctx, producer.inputs[0]), pads)
    if producer.op_type not in PAIR_MAKERS:
        raise ConversionError(f"the complex value {value.name!r} comes from "
                              f"{producer.op_type}, which cannot produce complex values "
                              "(they are float (real, imaginary) pairs inside the ONNX graph)")
    return value.name


def check_pair_outputs(node) -> None:
    """Refuse a complex output that is a model output or reaches an op that cannot read the
    pair form."""
    outputs = node.graph.outputs
    pending = [v for v in node.outputs if v.desc.dtype in COMPLEX]
    while pending:
        value = pending.pop()
        if value in outputs:
            raise ConversionError(f"model output {value.name!r} is {value.desc.dtype}: "
                                  "onnxruntime has no complex tensors (return tf.math.real, "
                                  "tf.math.imag or tf.abs of it instead)")
        for user, _ in value.uses:
            if user.op_type in PASS_THROUGH or _zero_pad(user):
                pending.extend(user.outputs)
            elif user.op_type not in PAIR_READERS:
                raise ConversionError(f"the complex value {value.name!r} feeds {user.op_type} "
                                      f"({user.name}), which cannot read complex values (they "
                                      "are float (real, imaginary) pairs inside the ONNX graph)")


def _complex_desc(node, index: int) -> TensorDesc:
    desc = node.inputs[index].desc
    if desc.dtype not in COMPLEX:
        raise ConversionError(f"input {index} must be complex64 or complex128, not {desc.dtype}")
    return desc


def _check_rank(node, index: int, least: int) -> None:
    """Refuse an input of known rank below `least` (an unknown rank is the run time's)."""
    rank = node.inputs[index].desc.rank
    if rank is not None and rank < least:
        raise ConversionError(f"a {least}-D transform needs an input of rank >= {least}, not "
                              f"{rank}")


def _fft_lengths(node) -> Optional[List[int]]:
    """The constant fft_length (checked), or None where it is known at run time only."""
    lengths = const_ints(node, 1)
    if lengths is None:
        return None
    if len(lengths) != node.attrs["fft_rank"] or any(n < 0 for n in lengths):
        raise ConversionError(f"fft_length {lengths} must hold {node.attrs['fft_rank']} "
                              "non-negative lengths")
    return lengths


class _Lengths:
    """fft_length's entries as ONNX int64 1-element tensors: constants or run-time Gathers."""

    def __init__(self, ctx, o: Emitter, node):
        self.ctx, self.o, self.known = ctx, o, _fft_lengths(node)
        self.value = None if self.known is not None else int64_input(ctx, 1)

    def __getitem__(self, k: int):
        """(entry k as a 1-element tensor, its value or None)."""
        if self.known is not None:
            return self.o.c([self.known[k]], "int64"), self.known[k]
        return self.o.Gather(self.value, self.o.c([k], "int64"), axis=0), None

    def product(self, count: int, dtype: str) -> str:
        """The product of the first `count` entries, a scalar of float `dtype`."""
        if self.known is not None:
            return self.o.c(float(np.prod(self.known[:count])))
        head = self.o.Slice(self.value, self.o.c([0], "int64"), self.o.c([count], "int64"))
        return self.o.Cast(self.o.ReduceProd(head, keepdims=0),
                           to=1 if dtype == "float32" else 11)


# -- ONNX pieces: axes count from the end (pairs: the signal's axis -k is the pair's -k-1) ------
def _dft(o: Emitter, x: str, axis: int, onesided: bool = False) -> str:
    """The forward DFT of `x` ([..., 1] real or [..., 2] pairs) along its `axis` (< 0): DFT
    wants a leading batch dim, so one is added and removed."""
    zero = o.c([0], "int64")
    spectrum = o.DFT(o.Unsqueeze(x, zero), axis=axis, onesided=int(onesided))
    return o.Squeeze(spectrum, zero)


def _conj(o: Emitter, pair: str) -> str:
    return o.Mul(pair, o.c([1.0, -1.0]))


def _static_dim(desc, axis: int):
    """Dim `axis` (< 0) of `desc`'s shape where known."""
    shape = desc.shape
    return shape[axis] if shape is not None and len(shape) >= -axis else None


def _resize(o: Emitter, x: str, axis: int, length, known) -> str:
    """`x` cropped or zero-padded to `length` (a 1-element tensor and its value, or None)
    along `axis` (< 0), as TF's fft_length does."""
    end, value = length
    if value is not None and known == value:
        return x
    axes = o.c([axis], "int64")
    x = o.Slice(x, o.c([0], "int64"), end, axes)
    if value is not None and known is not None and known >= value:
        return x
    size = o.Gather(o.Shape(x), axes, axis=0)
    missing = o.Max(o.Sub(end, size), o.c([0], "int64"))
    return o.Pad(x, o.Concat(o.c([0], "int64"), missing, axis=0), o.c(0.0), axes)


def _inverse(o: Emitter, pair: str, axes, count: str) -> str:
    """The inverse DFT over `axes`: conj(DFT(conj(x))) / count."""
    z = _conj(o, pair)
    for axis in axes:
        z = _dft(o, z, axis)
    return o.Div(_conj(o, z), count)


def _dims_product(o: Emitter, x: str, axes, dtype: str) -> str:
    shape = o.Shape(x)
    sizes = o.Gather(shape, o.c(list(axes), "int64"), axis=0)
    return o.Cast(o.ReduceProd(sizes, keepdims=0), to=1 if dtype == "float32" else 11)


# -- FFT, IFFT --------------------------------------------------------------------------------------
fft = (OPS.declare("FFT", "The complex DFT (inverse: the inverse DFT) over the innermost "
                          "fft_rank dims.")
       .input("x", COMPLEX).output("y", COMPLEX)
       .attr("fft_rank", "int", 1).attr("inverse", "bool", False))


@fft.infer
def _infer_fft(node):
    _complex_desc(node, 0)
    return same_as_input(node)


@fft.lower
def _lower_fft(ctx, node):
    check_pair_outputs(node)
    count = node.attrs["fft_rank"]
    _check_rank(node, 0, count)
    real = REAL_OF[node.inputs[0].desc.dtype]
    o = Emitter(ctx, real)
    x, axes = pair_input(ctx, node, 0), range(-count - 1, -1)
    if node.attrs["inverse"]:
        y = _inverse(o, x, axes, _dims_product(o, x, axes, real))
    else:
        y = x
        for axis in axes:
            y = _dft(o, y, axis)
    ctx.op.Identity(y, out=ctx.output(0))


# -- RFFT, IRFFT --------------------------------------------------------------------------------------
rfft = (OPS.declare("RFFT", "The DFT of real input over the innermost fft_rank dims, each padded "
                            "or cropped to fft_length; the innermost keeps fft_length // 2 + 1 "
                            "bins.")
        .input("x", tuple(COMPLEX_OF)).input("fft_length", ("int32", "int64"))
        .output("y", COMPLEX).attr("fft_rank", "int", 1))


@rfft.infer
def _infer_rfft(node):
    desc = node.inputs[0].desc
    lengths = const_ints(node, 1)
    rank = node.attrs["fft_rank"]
    if desc.shape is None:
        return [TensorDesc(COMPLEX_OF[desc.dtype], None)]
    if len(desc.shape) < rank:
        raise ConversionError(f"RFFT over {rank} dims needs rank >= {rank}, not {len(desc.shape)}")
    if lengths is None:
        return [TensorDesc(COMPLEX_OF[desc.dtype], desc.shape[:-rank] + (None,) * rank)]
    dims = tuple(lengths[:-1]) + (lengths[-1] // 2 + 1,)
    return [TensorDesc(COMPLEX_OF[desc.dtype], desc.shape[:-rank] + dims)]


@rfft.lower
def _lower_rfft(ctx, node):
    check_pair_outputs(node)
    count = node.attrs["fft_rank"]
    _check_rank(node, 0, count)
    o = Emitter(ctx, node.inputs[0].desc.dtype)
    lengths, x = _Lengths(ctx, o, node), ctx.input(0)
    for k, axis in enumerate(range(-count, 0)):
        x = _resize(o, x, axis, lengths[k], _static_dim(node.inputs[0].desc, axis))
    y = _dft(o, o.Unsqueeze(x, o.c([-1], "int64")), -2, onesided=True)
    for axis in range(-count - 1, -2):
        y = _dft(o, y, axis)
    ctx.op.Identity(y, out=ctx.output(0))


irfft = (OPS.declare("IRFFT", "The real inverse DFT over the innermost fft_rank dims of a "
                              "half spectrum (innermost dim fft_length // 2 + 1), padded or "
                              "cropped as fft_length says.")
         .input("x", COMPLEX).input("fft_length", ("int32", "int64"))
         .output("y", tuple(COMPLEX_OF)).attr("fft_rank", "int", 1))


@irfft.infer
def _infer_irfft(node):
    desc, rank = _complex_desc(node, 0), node.attrs["fft_rank"]
    lengths = const_ints(node, 1)
    if desc.shape is None:
        return [TensorDesc(REAL_OF[desc.dtype], None)]
    if len(desc.shape) < rank:
        raise ConversionError(f"IRFFT over {rank} dims needs rank >= {rank}, not "
                              f"{len(desc.shape)}")
    dims = (None,) * rank if lengths is None else tuple(lengths)
    return [TensorDesc(REAL_OF[desc.dtype], desc.shape[:-rank] + dims)]


@irfft.lower
def _lower_irfft(ctx, node):
    count = node.attrs["fft_rank"]
    _check_rank(node, 0, count)
    desc = node.inputs[0].desc
    real = REAL_OF[desc.dtype]
    o = Emitter(ctx, real)
    lengths, z = _Lengths(ctx, o, node), pair_input(ctx, node, 0)
    outer = list(range(-count - 1, -2))        # the pair axes of the outer signal dims
    for k, axis in enumerate(outer):
        z = _resize(o, z, axis, lengths[k], _static_dim(desc, axis + 1))
    if outer:
        z = _inverse(o, z, outer, lengths.product(count - 1, real))
    n, value = lengths[count - 1]
    half = (o.Add(o.Div(n, o.c([2], "int64")), o.c([1], "int64")), None) if value is None \
        else (o.c([value // 2 + 1], "int64"), value // 2 + 1)
    z = _resize(o, z, -2, half, _static_dim(desc, -1))
    if value is not None:
        mirror = o.c(np.arange((value - 1) // 2, 0, -1), "int64")
    else:   # (n - 1) // 2 down to 1; none for n <= 2 (Div truncates -1 // 2 to 0)
        top = o.Squeeze(o.Div(o.Sub(n, o.c([1], "int64")), o.c([2], "int64")), o.c([0], "int64"))
        mirror = o.Range(top, o.c(0, "int64"), o.c(-1, "int64"))
    full = o.Concat(z, _conj(o, o.Gather(z, mirror, axis=-2)), axis=-2)
    spectrum = _dft(o, _conj(o, full), -2)
    real_part = o.Gather(spectrum, o.c(0, "int64"), axis=-1)
    size = o.c(float(max(value, 1))) if value is not None else o.Cast(
        o.Max(o.Squeeze(n, o.c([0], "int64")), o.c(1, "int64")), to=1 if real == "float32" else 11)
    o.Div(real_part, size, out=ctx.output(0))


# -- complex numbers ----------------------------------------------------------------------------------
complex_op = (OPS.declare("Complex", "real + i imag (broadcast).")
              .input("real", tuple(COMPLEX_OF)).input("imag", tuple(COMPLEX_OF))
              .output("y", COMPLEX))


@complex_op.infer
def _infer_complex(node):
    real, imag = node.inputs[0].desc, node.inputs[1].desc
    if real.dtype != imag.dtype:
        raise ConversionError(f"real ({real.dtype}) and imag ({imag.dtype}) differ")
    return [TensorDesc(COMPLEX_OF[real.dtype], broadcast_shapes(real.shape, imag.shape))]


@complex_op.lower
def _lower_complex(ctx, node):
    check_pair_outputs(node)
    o = Emitter(ctx, node.inputs[0].desc.dtype)
    real, imag = ctx.input(0), ctx.input(1)
    last = o.c([-1], "int64")
    parts = [o.Unsqueeze(o.Expand(a, o.Shape(b)), last) for a, b in ((real, imag), (imag, real))]
    o.Concat(*parts, axis=-1, out=ctx.output(0))


def _part_op(op_type: str, doc: str):
    proto = OPS.declare(op_type, doc).input("x", COMPLEX).output("y", tuple(COMPLEX_OF))

    @proto.infer
    def _infer(node):
        desc = _complex_desc(node, 0)
        return [TensorDesc(REAL_OF[desc.dtype], desc.shape, desc.format, desc.origin_format)]
    return proto


@_part_op("Real", "the real part").lower
def _lower_real(ctx, node):
    ctx.op.Gather(pair_input(ctx, node, 0), ctx.constant(np.array(0, np.int64)),
                  out=ctx.output(0), axis=-1)


@_part_op("Imag", "the imaginary part").lower
def _lower_imag(ctx, node):
    ctx.op.Gather(pair_input(ctx, node, 0), ctx.constant(np.array(1, np.int64)),
                  out=ctx.output(0), axis=-1)


@_part_op("ComplexAbs", "|x|, as hypot(real, imag): no overflow past the parts' range").lower
def _lower_complex_abs(ctx, node):
    real = REAL_OF[node.inputs[0].desc.dtype]
    o = Emitter(ctx, real)
    parts = o.Abs(pair_input(ctx, node, 0))
    big = o.ReduceMax(parts, o.c([-1], "int64"), keepdims=0)
    small = o.ReduceMin(parts, o.c([-1], "int64"), keepdims=0)
    ratio = o.Div(small, o.Where(o.Equal(big, o.c(0.0)), o.c(1.0), big))
    value = o.Mul(big, o.Sqrt(o.Add(o.c(1.0), o.Mul(ratio, ratio))))
    # NaN unless a part is infinite (C's hypot): ReduceMax/Min would skip a NaN
    value = o.Where(o.IsNaN(o.ReduceSum(parts, o.c([-1], "int64"), keepdims=0)), o.c(np.nan), value)
    o.Where(o.IsInf(big), o.c(np.inf), value, out=ctx.output(0))


@_part_op("Angle", "the argument, atan2(imag, real)").lower
def _lower_angle(ctx, node):
    from tf2ir.opp.angles import atan2 as _atan2
    real = REAL_OF[node.inputs[0].desc.dtype]
    o = Emitter(ctx, real, ctx.output(0))
    pair = pair_input(ctx, node, 0)
    re, im = [o.Gather(pair, o.c(i, "int64"), axis=-1) for i in (0, 1)]
    _atan2(o, im, re, real)


conj = OPS.declare("Conj", "The complex conjugate.").input("x", COMPLEX).output("y", COMPLEX)


@conj.infer
def _infer_conj(node):
    _complex_desc(node, 0)
    return same_as_input(node)


@conj.lower
def _lower_conj(ctx, node):
    check_pair_outputs(node)
    o = Emitter(ctx, REAL_OF[node.inputs[0].desc.dtype])
    ctx.op.Identity(_conj(o, pair_input(ctx, node, 0)), out=ctx.output(0))

