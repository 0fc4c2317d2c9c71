"""Built-in mappings for TF's Fourier transforms (FFT, IFFT, RFFT, IRFFT and their 2D/3D forms)
and complex numbers (Complex, Real, Imag, ComplexAbs, Angle, Conj); complex values are float
(real, imaginary) pairs inside the ONNX graph (see tf2ir.opp.spectral)."""

from tf2ir.opp import spectral as spectral_ops
from tf2ir.plugins import hookimpl, register_op

_RANKS = {"": 1, "2D": 2, "3D": 3}


def transform(rank: int, inverse: bool = False):
    """A parse fn naming the transform's rank (and direction); the dtype attrs stay on the
    tensors."""
    def parse(src, op):
        op.set_attr("fft_rank", rank)
        if op.op_type == "FFT":
            op.set_attr("inverse", inverse)
    return parse


MAPPINGS = (
    [register_op("FFT").origin_op_type(f"FFT{suffix}").parse_params_fn(transform(rank))
     for suffix, rank in _RANKS.items()]
    + [register_op("FFT").origin_op_type(f"IFFT{suffix}").parse_params_fn(transform(rank, True))
       for suffix, rank in _RANKS.items()]
    + [register_op(ir).origin_op_type(f"{ir}{suffix}").parse_params_fn(transform(rank))
       for ir in ("RFFT", "IRFFT") for suffix, rank in _RANKS.items()]
    + [register_op(op).origin_op_type(op) for op in ("Complex", "Real", "Imag", "ComplexAbs",
                                                      "Angle", "Conj")]
)


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(spectral_ops.OPS)
