"""Square-matrix algebra and diagonal bands: MatrixInverse, MatrixDeterminant, MatrixDiagPart
(TF's MatrixDiagPart and V2/V3) and MatrixSetDiag (TF's MatrixSetDiag and V2/V3), over the
innermost two dims with any batch dims.

MatrixInverse and MatrixDeterminant run Gauss-Jordan elimination with partial pivoting (the
largest pivot of the column, as TF's LU does) in an ONNX Loop over the columns: onnxruntime has no
Det kernel for float64 and ONNX no inverse. A singular matrix has determinant 0 (TF's too) and an
inverse of inf/NaN entries, where TF raises "not invertible". float16 computes in float32.

The bands take k (one offset or a pair, k[0] <= k[1]) as a constant or at run time (a pair
read at run time gives MatrixDiagPart an output of unknown rank: the num_diags dim is there
only when k[0] < k[1]); `align` (SUPER_SUB: LEFT or
RIGHT each) says on which side a diagonal shorter than the longest is packed, superdiagonals by
its first word and subdiagonals by its second (V2 and V1 pack both left). Rows and columns may
be unknown until run time.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import INDEX_TYPES, numpy_dtype
from tf2ir.opp.emitting import Emitter, emit_cast, emit_where, int64_input
from tf2ir.opp.shapes import const_ints, same_as_input

OPS = OpSet("tf2ir.opp.matrix")

SOLVE_TYPES = ("float16", "float32", "float64")
ALIGNS = ("LEFT_LEFT", "LEFT_RIGHT", "RIGHT_LEFT", "RIGHT_RIGHT")


# -- elimination --------------------------------------------------------------------------------
def _check_square(node) -> TensorDesc:
    desc = node.inputs[0].desc
    if desc.rank is not None and desc.rank < 2:
        raise ConversionError(f"a matrix op needs rank >= 2, not {desc.rank}")
    if desc.shape is not None and None not in desc.shape[-2:] and desc.shape[-1] != desc.shape[-2]:
        raise ConversionError(f"the matrices are {desc.shape[-2]}x{desc.shape[-1]}, not square")
    return desc


def _eliminate(ctx, matrices: str, work: str, inverse: bool) -> Tuple[str, str]:
    """Gauss-Jordan with partial pivoting on [B, N, N] `matrices` (an identity appended when
    `inverse`): returns (the reduced [B, N, W] matrices, the [B] determinants)."""
    from tf2ir.ir.onnx.compile import subgraph_value_info
    o = Emitter(ctx, "int64")
    size = o.Gather(o.Shape(matrices), o.c(2), axis=0)
    rows = o.Range(o.c(0), size, o.c(1))
    if inverse:
        eye = o.Cast(o.Equal(o.Unsqueeze(rows, o.c([1])), rows), to=ONNX_DTYPES[work])
        eye = o.Expand(eye, o.Shape(matrices))
        matrices = o.Concat(matrices, eye, axis=2)
    body = ctx.subcontext()
    k, go, state, det = [body.fresh(h) for h in ("k", "go", "m", "det")]
    b, w = Emitter(body, "int64"), Emitter(body, work)
    column = b.Gather(state, k, axis=2)                                        # [B, N]
    above = b.Less(rows, k)
    candidates = w.Where(above, w.c(-1.0), w.Abs(column))
    pivot_at = b.ArgMax(candidates, axis=1, keepdims=1)                        # [B, 1]
    order = b.Where(b.Equal(rows, k), pivot_at, b.Where(b.Equal(rows, pivot_at), k, rows))
    swapped = b.GatherElements(state, b.Expand(b.Unsqueeze(order, b.c([2])), b.Shape(state)),
                               axis=1)
    pivot_row = b.Gather(swapped, k, axis=1)                                   # [B, W]
    pivot = b.Gather(pivot_row, k, axis=1)                                     # [B]
    flip = w.Where(b.Equal(b.Squeeze(pivot_at, b.c([1])), k), w.c(1.0), w.c(-1.0))
    new_det = w.Mul(det, w.Mul(pivot, flip))
    safe = w.Where(w.Equal(pivot, w.c(0.0)), w.c(1.0), pivot)
    pivot_row = w.Div(pivot_row, w.Unsqueeze(safe, b.c([1])))
    factors = w.Where(b.Equal(rows, k), w.c(0.0), b.Gather(swapped, k, axis=2))  # [B, N]
    reduced = w.Sub(swapped, w.Mul(w.Unsqueeze(factors, b.c([2])), w.Unsqueeze(pivot_row, b.c([1]))))
    reduced = w.Where(b.Unsqueeze(b.Equal(rows, k), b.c([1])), w.Unsqueeze(pivot_row, b.c([1])),
                      reduced)
    graph = body.make_subgraph(
        ctx.fresh("eliminate"),
        [subgraph_value_info(k, TensorDesc("int64", ())),
         subgraph_value_info(go, TensorDesc("bool", ())),
         subgraph_value_info(state, TensorDesc(work, (None, None, None))),
         subgraph_value_info(det, TensorDesc(work, (None,)))],
        [(go, TensorDesc("bool", ())), (reduced, TensorDesc(work, (None, None, None))),
         (new_det, TensorDesc(work, (None,)))])
    ones = o.Expand(ctx.constant(np.ones(1, numpy_dtype(work))),
                    o.Slice(o.Shape(matrices), o.c([0]), o.c([1])))
    reduced, det = ctx.op.Loop(size, "", matrices, ones, outputs=2, body=graph)
    return reduced, det


def _as_batch(ctx, node) -> Tuple[str, str, str]:
    """(the input as [B, N, N] in its compute dtype, that dtype, the input's shape)."""
    dtype = node.inputs[0].desc.dtype
    work = "float32" if dtype == "float16" else dtype
    x = ctx.input(0) if work == dtype else emit_cast(ctx, ctx.input(0), work)
    o = Emitter(ctx, "int64")
    shape = o.Shape(x)
    batch = o.ReduceProd(o.Slice(shape, o.c([0]), o.c([-2])), keepdims=1)   # 1 for none
    flat = o.Reshape(x, o.Concat(batch, o.Slice(shape, o.c([-2]), o.c([2 ** 62])), axis=0))
    return flat, work, shape


def _flat_tail(o: Emitter, x: str, batch: str) -> str:
    """`x` with the dims after its `batch` dims (int64 1-D) flattened into one (no -1, which
    Reshape cannot resolve for an empty tensor)."""
    shape = o.Shape(x)
    rank = o.Shape(batch)
    tail = o.ReduceProd(o.Slice(shape, rank, o.c([2 ** 62])), keepdims=1)
    return o.Reshape(x, o.Concat(batch, tail, axis=0))


def _finish(ctx, node, value: str, work: str) -> None:
    dtype = node.output_desc(0).dtype
    if work == dtype:
        ctx.op.Identity(value, out=ctx.output(0))
    else:
        emit_cast(ctx, value, dtype, ctx.output(0))


inverse = (OPS.declare("MatrixInverse", "The inverse of each innermost square matrix (adjoint: "
                                        "of its transpose).")
           .input("x", SOLVE_TYPES).output("y", SOLVE_TYPES).attr("adjoint", "bool", False))


@inverse.infer
def _infer_inverse(node):
    _check_square(node)
    return same_as_input(node)


@inverse.lower
def _lower_inverse(ctx, node):
    flat, work, shape = _as_batch(ctx, node)
    reduced, _ = _eliminate(ctx, flat, work, inverse=True)
    o = Emitter(ctx, "int64")
    size = o.Gather(o.Shape(flat), o.c([2]), axis=0)
    result = o.Slice(reduced, size, o.c([2 ** 62]), o.c([2]))
    if node.attrs["adjoint"]:
        result = o.Transpose(result, perm=[0, 2, 1])
    _finish(ctx, node, o.Reshape(result, shape), work)


determinant = (OPS.declare("MatrixDeterminant", "The determinant of each innermost square "
                                                "matrix.")
               .input("x", SOLVE_TYPES).output("y", SOLVE_TYPES))


@determinant.infer
def _infer_determinant(node):
    desc = _check_square(node)
    return [TensorDesc(desc.dtype, None if desc.shape is None else desc.shape[:-2])]


@determinant.lower
def _lower_determinant(ctx, node):
    flat, work, shape = _as_batch(ctx, node)
    _, det = _eliminate(ctx, flat, work, inverse=False)
    o = Emitter(ctx, "int64")
    _finish(ctx, node, o.Reshape(det, o.Slice(shape, o.c([0]), o.c([-2]))), work)


# -- diagonal bands -----------------------------------------------------------------------------
def _band(node, index: int) -> Optional[Tuple[int, int]]:
    """(k[0], k[1]) when k is a constant, else None (k known at run time)."""
    k = const_ints(node, index)
    if k is None:
        shape = node.inputs[index].desc.shape
        if shape is not None and (len(shape) > 1 or (shape and shape[0] not in (None, 1, 2))):
            raise ConversionError(f"k must be a scalar or a pair, not of shape {list(shape)}")
        return None
    if not 1 <= len(k) <= 2 or k[0] > k[-1]:
        raise ConversionError(f"k={k} must be one offset or a pair with k[0] <= k[1]")
    return k[0], k[-1]


def _single(node, index: int) -> Optional[bool]:
    """Whether k names one diagonal (no num_diags dim); None when only run time tells."""
    band = _band(node, index)
    if band is not None:
        return band[0] == band[1]
    shape = node.inputs[index].desc.shape
    return True if shape is not None and shape in ((), (1,)) else None


def _band_values(ctx, o: Emitter, node, index: int) -> Tuple[str, str]:
    """k[0] and k[1] as int64 scalars: constants, or read from k at run time."""
    band = _band(node, index)
    if band is not None:
        return o.c(band[0]), o.c(band[1])
    k = o.Reshape(int64_input(ctx, index), o.c([-1]))
    return o.Gather(k, o.c(0), axis=0), o.Gather(k, o.c(-1), axis=0)


def _check_align(node) -> str:
    align = node.attrs["align"]
    if align not in ALIGNS:
        raise ConversionError(f"align {align!r} is not one of {', '.join(ALIGNS)}")
    return align


def _offset(o: Emitter, align: str, d: str, length: str, longest: str) -> str:
    """Where diagonal d's entries start in a row of `longest`: at the right end of it when
    `align` packs d right, else 0."""
    right = o.Or(o.And(o.GreaterOrEqual(d, o.c(0)), o.c(align.startswith("RIGHT"), "bool")),
                 o.And(o.LessOrEqual(d, o.c(0)), o.c(align.endswith("RIGHT"), "bool")))
    return o.Where(right, o.Sub(longest, length), o.c(0))


def _diag_length(o: Emitter, d: str, rows: str, cols: str) -> str:
    return o.Min(o.Add(rows, o.Min(d, o.c(0))), o.Sub(cols, o.Max(d, o.c(0))))


def _matrix_dims(o: Emitter, x: str):
    shape = o.Shape(x)
    return shape, o.Gather(shape, o.c(-2), axis=0), o.Gather(shape, o.c(-1), axis=0)


diag_part = (OPS.declare("MatrixDiagPart", "The diagonals k[0]..k[1] of the innermost matrices "
                                           "([..., max_len], or [..., k[1] - k[0] + 1, max_len] "
                                           "for a band, top diagonal first), padded with "
                                           "padding_value as `align` says.")
             .input("x").input("k", INDEX_TYPES).optional_input("padding_value").output("y")
             .attr("align", "str", "RIGHT_LEFT"))


@diag_part.infer
def _infer_diag_part(node):
    _check_align(node)
    band, single = _band(node, 1), _single(node, 1)
    desc = node.inputs[0].desc
    if desc.shape is not None and len(desc.shape) < 2:
        raise ConversionError(f"MatrixDiagPart needs rank >= 2, not {len(desc.shape)}")
    if desc.shape is None or single is None:
        return [TensorDesc(desc.dtype, None)]
    if band is None:                      # one diagonal, known at run time
        return [TensorDesc(desc.dtype, desc.shape[:-2] + (None,))]
    lo, hi = band
    rows, cols = desc.shape[-2:]
    longest = None if None in (rows, cols) else max(min(rows + min(hi, 0), cols - max(lo, 0)), 0)
    band = () if lo == hi else (hi - lo + 1,)
    return [TensorDesc(desc.dtype, desc.shape[:-2] + band + (longest,))]


@diag_part.lower
def _lower_diag_part(ctx, node):
    align, dtype = node.attrs["align"], node.inputs[0].desc.dtype
    o = Emitter(ctx, "int64")
    lo, hi = _band_values(ctx, o, node, 1)
    shape, rows, cols = _matrix_dims(o, ctx.input(0))
    d = o.Unsqueeze(o.Range(hi, o.Sub(lo, o.c(1)), o.c(-1)), o.c([1]))      # [D, 1]
    longest = o.Max(o.Min(o.Add(rows, o.Min(hi, o.c(0))), o.Sub(cols, o.Max(lo, o.c(0)))), o.c(0))
    j = o.Range(o.c(0), longest, o.c(1))                                    # [L]
    t = o.Sub(j, _offset(o, align, d, _diag_length(o, d, rows, cols), longest))
    valid = o.And(o.GreaterOrEqual(t, o.c(0)), o.Less(t, _diag_length(o, d, rows, cols)))
    row = o.Add(t, o.Max(o.Neg(d), o.c(0)))
    col = o.Add(t, o.Max(d, o.c(0)))
    flat_index = o.Where(valid, o.Add(o.Mul(row, cols), col), o.c(0))       # [D, L]
    batch = o.Slice(shape, o.c([0]), o.c([-2]))
    flat = _flat_tail(o, ctx.input(0), batch)
    picked = o.Gather(flat, flat_index, axis=-1)                             # [..., D, L]
    fill = ctx.input(2) or ctx.constant(np.zeros((), numpy_dtype(dtype)))
    chosen = emit_where(ctx, valid, picked, fill, dtype)
    single = _single(node, 1)
    if single:
        o.Squeeze(chosen, o.c([-2]), out=ctx.output(0))
    elif single is False:
        ctx.op.Identity(chosen, out=ctx.output(0))
    else:                 # the num_diags dim only when k[0] < k[1], known at run time
        count = o.Reshape(o.Add(o.Sub(hi, lo), o.c(1)), o.c([1]))
        band = o.Slice(count, o.c([0]), o.Cast(o.Greater(count, o.c(1)), to=7))
        o.Reshape(chosen, o.Concat(batch, band, o.Reshape(longest, o.c([1])), axis=0),
                  out=ctx.output(0))


set_diag = (OPS.declare("MatrixSetDiag", "The innermost matrices with their diagonals k[0]..k[1] "
                                         "replaced by `diagonal` ([..., max_len], or [..., "
                                         "k[1] - k[0] + 1, max_len]), packed as `align` says.")
            .input("x").input("diagonal").input("k", INDEX_TYPES).output("y")
            .attr("align", "str", "RIGHT_LEFT"))


@set_diag.infer
def _infer_set_diag(node):
    _check_align(node)
    _band(node, 2)
    return same_as_input(node)


@set_diag.lower
def _lower_set_diag(ctx, node):
    align, dtype = node.attrs["align"], node.inputs[0].desc.dtype
    o = Emitter(ctx, "int64")
    lo, hi = _band_values(ctx, o, node, 2)
    shape, rows, cols = _matrix_dims(o, ctx.input(0))
    longest = o.Gather(o.Shape(ctx.input(1)), o.c(-1), axis=0)
    m = o.Unsqueeze(o.Range(o.c(0), rows, o.c(1)), o.c([1]))                # [M, 1]
    n = o.Range(o.c(0), cols, o.c(1))                                        # [N]
    d = o.Sub(n, m)                                                          # [M, N]
    valid = o.And(o.GreaterOrEqual(d, lo), o.LessOrEqual(d, hi))
    t = o.Min(m, n)
    index = o.Add(t, _offset(o, align, d, _diag_length(o, d, rows, cols), longest))
    index = o.Min(o.Max(index, o.c(0)), o.Max(o.Sub(longest, o.c(1)), o.c(0)))
    which = o.Min(o.Max(o.Sub(hi, d), o.c(0)), o.Sub(hi, lo))
    flat_index = o.Where(valid, o.Add(o.Mul(which, longest), index), o.c(0))
    batch = o.Slice(shape, o.c([0]), o.c([-2]))
    values = _flat_tail(o, ctx.input(1), batch)
    # an empty diagonal (no entries to take) takes from a padded copy instead of failing
    values = o.Concat(values, o.Slice(_flat_tail(o, ctx.input(0), batch), o.c([0]), o.c([1]),
                                      o.c([-1])), axis=-1)
    picked = o.Gather(values, flat_index, axis=-1)                            # [..., M, N]
    emit_where(ctx, valid, picked, ctx.input(0), dtype, ctx.output(0))
