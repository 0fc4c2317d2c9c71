"""Linear algebra: matrix products (MatMul, BatchMatMul), Einstein summation (Einsum), and the
ops that build or mask matrices (MatrixDiag, MatrixBandPart)."""

from __future__ import annotations

import re
from typing import Dict, Optional

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.kernels import via
from tf2ir.ir.tensor import INDEX_TYPES, NUMBER_TYPES, numpy_dtype
from tf2ir.opp.carriers import ARITHMETIC_VIA
from tf2ir.opp.emitting import (
    Emitter, emit_cast, emit_dim, emit_via, emit_where, int64_constant, int64_input,
    scalar_int64_input,
)
from tf2ir.opp.shapes import broadcast_shapes, const_ints, same_as_input

OPS = OpSet("tf2ir.opp.linalg")

# the dtypes MatMul and Einsum compute in where onnxruntime has no kernel (small ints: int32)
MATMUL_VIA = via("MatMul", ARITHMETIC_VIA)
EINSUM_VIA = via("Einsum", ARITHMETIC_VIA)

# -- matrix products -----------------------------------------------------------------------
matmul = (OPS.declare("MatMul", "2-D matrix product with optional transposes.")
          .input("x1", NUMBER_TYPES).input("x2", NUMBER_TYPES).optional_input("bias")
          .output("y").attr("transpose_x1", "bool", False).attr("transpose_x2", "bool", False))


@matmul.infer
def _infer_matmul(node):
    a, b = node.inputs[0].desc, node.inputs[1].desc
    if a.rank not in (None, 2) or b.rank not in (None, 2):
        raise ConversionError("MatMul takes rank-2 operands")
    rows = None if a.shape is None else a.shape[1 if node.attrs["transpose_x1"] else 0]
    cols = None if b.shape is None else b.shape[0 if node.attrs["transpose_x2"] else 1]
    inner_a = None if a.shape is None else a.shape[0 if node.attrs["transpose_x1"] else 1]
    inner_b = None if b.shape is None else b.shape[1 if node.attrs["transpose_x2"] else 0]
    if None not in (inner_a, inner_b) and inner_a != inner_b:
        raise ConversionError(f"the contracted dims differ: {list(a.shape)} @ {list(b.shape)}"
                              f" (transpose_x1={node.attrs['transpose_x1']}, "
                              f"transpose_x2={node.attrs['transpose_x2']})")
    bias = node.inputs[2].desc if len(node.inputs) > 2 and node.inputs[2] is not None else None
    if bias is not None and bias.shape is not None:
        # Gemm's C broadcasts (one way) to the product's (rows, cols)
        fits = len(bias.shape) <= 2 and all(
            d in (1, None) or want is None or d == want
            for d, want in zip(reversed(bias.shape), (cols, rows)))
        if not fits:
            raise ConversionError(f"the bias of shape {list(bias.shape)} does not broadcast to "
                                  f"the product's [{rows}, {cols}]")
    return [TensorDesc(a.dtype, (rows, cols))]


@matmul.lower
def _lower_matmul(ctx, node):
    inputs = [ctx.input(0), ctx.input(1)] + ([ctx.input(2)] if ctx.input(2) else [])
    if node.inputs[0].desc.dtype in ("float32", "float64", "float16", "bfloat16"):
        ctx.op.Gemm(*inputs, out=ctx.output(0), transA=int(node.attrs["transpose_x1"]),
                    transB=int(node.attrs["transpose_x2"]))
        return
    a, b = inputs[:2]
    if node.attrs["transpose_x1"]:
        a = ctx.op.Transpose(a, perm=[1, 0])
    if node.attrs["transpose_x2"]:
        b = ctx.op.Transpose(b, perm=[1, 0])
    dtype = node.inputs[0].desc.dtype
    if len(inputs) == 3:
        product = emit_via(ctx, "MatMul", [a, b], ctx.fresh("product"), dtype, MATMUL_VIA)
        ctx.op.Add(product, inputs[2], out=ctx.output(0))
    else:
        emit_via(ctx, "MatMul", [a, b], ctx.output(0), dtype, MATMUL_VIA)


batch_mat_mul = (OPS.declare("BatchMatMul", "Matrix products over the last two dims, batch dims "
                                             "broadcast; adj_x1/adj_x2 transpose them (real types).")
                 .input("x1", NUMBER_TYPES).input("x2", NUMBER_TYPES).output("y")
                 .attr("adj_x1", "bool", False).attr("adj_x2", "bool", False)
                 .attr("dst_type", "dtype", None, doc="output dtype; None: the inputs' dtype"))


@batch_mat_mul.infer
def _infer_batch_mat_mul(node):
    a, b = node.inputs[0].desc, node.inputs[1].desc
    dtype = node.attrs["dst_type"] or a.dtype
    if node.attrs["dst_type"] is None and a.dtype != b.dtype:
        raise ConversionError(f"operand dtypes differ: {a.dtype} and {b.dtype}")
    for side in (a, b):
        if side.rank is not None and side.rank < 2:
            raise ConversionError(f"BatchMatMul operands need rank >= 2, got rank {side.rank}")
    if a.shape is None or b.shape is None:
        return [TensorDesc(dtype, None)]
    rows = a.shape[-1] if node.attrs["adj_x1"] else a.shape[-2]
    inner_a = a.shape[-2] if node.attrs["adj_x1"] else a.shape[-1]
    inner_b = b.shape[-1] if node.attrs["adj_x2"] else b.shape[-2]
    cols = b.shape[-2] if node.attrs["adj_x2"] else b.shape[-1]
    if None not in (inner_a, inner_b) and inner_a != inner_b:
        raise ConversionError(f"inner dims differ: {list(a.shape)} @ {list(b.shape)}")
    return [TensorDesc(dtype, broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (rows, cols))]


@batch_mat_mul.lower
def _lower_batch_mat_mul(ctx, node):
    dtype = node.outputs[0].desc.dtype
    operands = []
    for index, adjoint in ((0, node.attrs["adj_x1"]), (1, node.attrs["adj_x2"])):
        desc, name = node.inputs[index].desc, ctx.input(index)
        if desc.dtype != dtype:
            name = emit_cast(ctx, name, dtype)
        if adjoint:
            name = swap_last_two(ctx, name, desc.rank)
        operands.append(name)
    emit_via(ctx, "MatMul", operands, ctx.output(0), dtype, MATMUL_VIA)


def swap_last_two(ctx, x: str, rank: Optional[int]) -> str:
    """`x` with its last two dims swapped: a Transpose where the rank is known, else x as
    [batch, m, n] (the batch dims' product), transposed and given back its batch dims."""
    if rank is not None:
        return ctx.op.Transpose(x, perm=list(range(rank - 2)) + [rank - 1, rank - 2])
    o = Emitter(ctx, "int64")
    shape = o.Shape(x)
    batch_dims, rows, cols = (o.Slice(shape, o.c([0]), o.c([-2])), o.Shape(x, start=-2, end=-1),
                              o.Shape(x, start=-1))
    batch = o.ReduceProd(batch_dims, o.c([0]), keepdims=1)
    flat = o.Reshape(x, o.Concat(batch, rows, cols, axis=0), allowzero=1)
    swapped = o.Transpose(flat, perm=[0, 2, 1])
    return o.Reshape(swapped, o.Concat(batch_dims, cols, rows, axis=0), allowzero=1)


# -- einsum -----------------------------------------------------------------------------------
einsum = (OPS.declare("Einsum", "Einstein summation over x0..xN-1 as `equation` says "
                                 "(numpy notation, '...' for broadcast dims).")
          .dynamic_input("x", NUMBER_TYPES, count_attr="N").output("y")
          .attr("N", "int").attr("equation", "str"))
_EQUATION = re.compile(r"^[a-zA-Z.,]*(->[a-zA-Z.]*)?$")


def parse_equation(equation: str, count: int):
    """(input terms, output term) with '...' as '.'; the implicit output of numpy when
    there is no '->': the ellipsis, then the labels used once, alphabetically."""
    equation = equation.replace(" ", "")
    if not _EQUATION.match(equation):
        raise ConversionError(f"einsum equation {equation!r} is not understood")
    left, arrow, right = equation.partition("->")
    terms = [t.replace("...", ".") for t in left.split(",")]
    stray_dots = (left + right).replace("...", "").count(".")
    if len(terms) != count or stray_dots or any(t.count(".") > 1 for t in terms):
        raise ConversionError(f"einsum equation {equation!r} does not fit {count} inputs")
    if arrow:
        return terms, right.replace("...", ".")
    labels = "".join(terms).replace(".", "")
    once = sorted(c for c in set(labels) if labels.count(c) == 1)
    return terms, ("." if any("." in t for t in terms) else "") + "".join(once)


@einsum.infer
def _infer_einsum(node):
    descs = [v.desc for v in node.inputs]
    terms, output = parse_equation(node.attrs["equation"], len(descs))
    dtype = descs[0].dtype
    if any(d.dtype != dtype for d in descs):
        raise ConversionError(f"einsum operand dtypes differ: {[d.dtype for d in descs]}")
    sizes: Dict[str, list] = {}
    ellipses = []
    for term, desc in zip(terms, descs):
        if desc.shape is None:
            if "." in term or "." in output:
                return [TensorDesc(dtype, None)]
            for label in term:
                sizes.setdefault(label, []).append(None)
            continue
        labels = len(term.replace(".", ""))
        if len(desc.shape) < labels or ("." not in term and len(desc.shape) != labels):
            raise ConversionError(f"einsum term {term!r} does not fit shape {list(desc.shape)}")
        if "." in term:
            start = term.index(".")
            span = len(desc.shape) - labels
            ellipses.append(desc.shape[start:start + span])
            dims = desc.shape[:start] + desc.shape[start + span:]
            term = term.replace(".", "")
        else:
            dims = desc.shape
        for label, dim in zip(term, dims):
            sizes.setdefault(label, []).append(dim)

    def size(label):
        dims = sizes.get(label)
        if dims is None:
            raise ConversionError(f"einsum output label {label!r} is in no input")
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ConversionError(f"einsum label {label!r} has sizes {sorted(known)}")
        return known.pop() if known else (None if None in dims else 1)

    shape = []
    for label in output:
        shape.extend(broadcast_shapes(*ellipses) if label == "." and ellipses else
                     () if label == "." else (size(label),))
    return [TensorDesc(dtype, tuple(shape))]


@einsum.lower
def _lower_einsum(ctx, node):
    dtype = node.inputs[0].desc.dtype
    terms, _ = parse_equation(node.attrs["equation"], len(node.inputs))
    inputs = [ctx.input(i) for i in range(len(node.inputs))]
    # onnxruntime wants '...' to stand for as many dims in every input: pad the shorter
    # ones with leading size-1 dims, as broadcasting would
    spans = {i: node.inputs[i].desc.rank - len(term) + 1 for i, term in enumerate(terms)
             if "." in term and node.inputs[i].desc.rank is not None}
    dotted = [i for i, term in enumerate(terms) if "." in term]
    if len(dotted) > 1 and len(spans) < len(dotted):
        _pad_ellipses_at_run_time(ctx, terms, dotted, inputs)
    elif spans and len(set(spans.values())) > 1:
        widest = max(spans.values())
        for i, span in spans.items():
            if span < widest:
                start = terms[i].index(".")
                axes = ctx.constant(np.arange(start, start + widest - span, dtype=np.int64))
                inputs[i] = ctx.op.Unsqueeze(inputs[i], axes)
    emit_via(ctx, "Einsum", inputs, ctx.output(0), dtype, EINSUM_VIA,
             equation=node.attrs["equation"].replace(" ", ""))


def _pad_ellipses_at_run_time(ctx, terms, dotted, inputs) -> None:
    """The '...' spans of operands of unknown rank padded to the widest at run time: each
    operand reshaped with leading 1s inserted where its '...' starts."""
    o = Emitter(ctx, "int64")
    shapes, spans = {}, {}
    for i in dotted:
        shapes[i] = o.Shape(inputs[i])
        spans[i] = o.Sub(o.Shape(shapes[i]), o.c([len(terms[i]) - 1]))
    widest = o.Max(*spans.values()) if len(spans) > 1 else spans[dotted[0]]
    for i in dotted:
        start = o.c([terms[i].index(".")])
        ones = o.Expand(o.c([1]), o.Sub(widest, spans[i]))
        target = o.Concat(o.Slice(shapes[i], o.c([0]), start), ones,
                          o.Slice(shapes[i], start, o.c([2 ** 62])), axis=0)
        inputs[i] = o.Reshape(inputs[i], target, allowzero=1)


# -- diagonal matrices ------------------------------------------------------------------------
matrix_diag = (OPS.declare("MatrixDiag", "Square matrices [..., N, N] with `diagonal` [..., N] on "
                                          "the main diagonal and padding_value (default 0) elsewhere.")
               .input("diagonal").optional_input("padding_value").output("y"))


@matrix_diag.infer
def _infer_matrix_diag(node):
    d = node.inputs[0].desc
    if d.rank == 0:
        raise ConversionError("MatrixDiag needs a diagonal of rank >= 1")
    return [TensorDesc(d.dtype, None if d.shape is None else d.shape + d.shape[-1:])]


@matrix_diag.lower
def _lower_matrix_diag(ctx, node):
    _emit_main_diagonal(ctx, node.inputs[0].desc.dtype, ctx.input(1))


def _emit_main_diagonal(ctx, dtype, padding):
    """Square matrices with input 0 on the main diagonal, `padding` (a name, '' for 0) elsewhere."""
    last = ctx.constant(np.array([-1], np.int64))
    size = ctx.op.Gather(ctx.op.Shape(ctx.input(0)), last)      # [N]
    count = ctx.op.Squeeze(size)
    positions = ctx.op.Range(ctx.constant(np.array(0, np.int64)), count,
                             ctx.constant(np.array(1, np.int64)))
    rows = ctx.op.Unsqueeze(positions, last)                                  # [N, 1]
    on_diagonal = ctx.op.Equal(rows, positions)                              # [N, N]
    column = ctx.op.Unsqueeze(ctx.input(0), last)                            # [..., N, 1]
    # entry (i, j) of a row takes diagonal[..., i]: the diagonal as a column broadcasts
    padding = padding or ctx.constant(np.zeros((), numpy_dtype(dtype)))
    ctx.op.Where(on_diagonal, column, padding, out=ctx.output(0))


# -- diagonal bands (MatrixDiagV2/V3) ------------------------------------------------------------
ALIGNS = ("LEFT_LEFT", "LEFT_RIGHT", "RIGHT_LEFT", "RIGHT_RIGHT")
matrix_diag_band = (OPS.declare(
    "MatrixDiagV3", "Matrices [..., num_rows, num_cols] holding the diagonals k[0]..k[1] of "
    "`diagonal` ([..., num_diags, max_len], or [..., max_len] for one diagonal) and "
    "padding_value elsewhere; `align` (SUPER_SUB) says which side short diagonals are packed to.")
    .input("diagonal").input("k", ("int32", "int64")).input("num_rows", ("int32", "int64"))
    .input("num_cols", ("int32", "int64")).input("padding_value").output("y")
    .attr("align", "str", "RIGHT_LEFT"))


def _diag_geometry(lo, hi, length, rows, cols):
    """TF's output size: -1 rows/cols take the smallest that holds the diagonals (square when
    both are -1)."""
    min_rows, min_cols = length - min(hi, 0), length + max(lo, 0)
    if rows == -1 and cols == -1:
        return max(min_rows, min_cols), max(min_rows, min_cols)
    return (min_rows if rows == -1 else rows), (min_cols if cols == -1 else cols)


def _band_known(node):
    """(lo, hi) when k is constant; (None, None) otherwise."""
    k = const_ints(node, 1)
    if k is None:
        return None, None
    if not 1 <= len(k) <= 2 or k[0] > k[-1]:
        raise ConversionError(f"k={k} must be one offset or a pair with k[0] <= k[1]")
    return k[0], k[-1]


def _single_diagonal(node) -> Optional[bool]:
    """Whether `diagonal` holds one diagonal (no num_diags dim); None when k decides at run time."""
    lo, hi = _band_known(node)
    if lo is not None:
        return lo == hi
    shape = node.inputs[1].desc.shape
    return True if shape is not None and (len(shape) == 0 or shape == (1,)) else None


@matrix_diag_band.infer
def _infer_matrix_diag_band(node):
    d = node.inputs[0].desc
    if node.attrs["align"] not in ALIGNS:
        raise ConversionError(f"align {node.attrs['align']!r} is not one of {', '.join(ALIGNS)}")
    single = _single_diagonal(node)
    if d.rank is not None and d.rank < (1 if single else 2):
        raise ConversionError(f"a diagonal of rank {d.rank} is too small")
    if d.shape is None or single is None:
        return [TensorDesc(d.dtype, None)]
    batch = d.shape[:-1] if single else d.shape[:-2]
    (lo, hi), rows, cols = _band_known(node), const_ints(node, 2), const_ints(node, 3)
    if lo is None or rows is None or cols is None or d.shape[-1] is None:
        return [TensorDesc(d.dtype, batch + (None, None))]
    if not single and d.shape[-2] not in (None, hi - lo + 1):
        raise ConversionError(f"the diagonal holds {d.shape[-2]} diagonals, k={lo},{hi} needs "
                              f"{hi - lo + 1}")
    return [TensorDesc(d.dtype, batch + _diag_geometry(lo, hi, d.shape[-1], rows[0], cols[0]))]


@matrix_diag_band.lower
def _lower_matrix_diag_band(ctx, node):
    dtype, rank = node.inputs[0].desc.dtype, node.inputs[0].desc.rank
    lo, hi = _band_known(node)
    rows, cols = const_ints(node, 2), const_ints(node, 3)
    if lo == hi == 0 and rows == [-1] and cols == [-1]:     # tf.linalg.diag's main diagonal
        _emit_main_diagonal(ctx, dtype, ctx.input(4))
        return
    if rank is None:
        raise ConversionError("the diagonal's rank must be known")
    o = Emitter(ctx, "int64")
    k = o.Reshape(int64_input(ctx, 1), o.c([-1]))
    lo, hi = o.Gather(k, o.c(0), axis=0), o.Gather(k, o.c(-1), axis=0)
    length = emit_dim(ctx, ctx.input(0), rank - 1)
    count = o.Add(o.Sub(hi, lo), o.c(1))                                   # num_diags
    min_rows, min_cols = o.Sub(length, o.Min(hi, o.c(0))), o.Add(length, o.Max(lo, o.c(0)))
    rows_in, cols_in = scalar_int64_input(ctx, 2), scalar_int64_input(ctx, 3)
    free_rows, free_cols = o.Equal(rows_in, o.c(-1)), o.Equal(cols_in, o.c(-1))
    square, both = o.Max(min_rows, min_cols), o.And(free_rows, free_cols)
    rows = o.Where(both, square, o.Where(free_rows, min_rows, rows_in))
    cols = o.Where(both, square, o.Where(free_cols, min_cols, cols_in))
    i = o.Unsqueeze(o.Range(o.c(0), rows, o.c(1)), o.c([1]))                # [M, 1]
    j = o.Range(o.c(0), cols, o.c(1))                                      # [N]
    d = o.Sub(j, i)                                                        # n - m
    valid = o.And(o.GreaterOrEqual(d, lo), o.LessOrEqual(d, hi))
    row = o.Min(o.Max(o.Sub(hi, d), o.c(0)), o.Sub(count, o.c(1)))         # k[1] - d
    after = o.Max(d, o.c(0))
    # Short diagonals packed to the right start late: offset = max_len - diag_len(d).
    super_right, sub_right = node.attrs["align"].startswith("RIGHT"), node.attrs["align"].endswith("RIGHT")
    index = o.Sub(j, after)
    if super_right or sub_right:
        diag_len = o.Min(o.Sub(cols, after), o.Add(rows, o.Min(d, o.c(0))))
        offset = o.Sub(length, diag_len)
        if not (super_right and sub_right):
            side = o.GreaterOrEqual(d, o.c(0)) if super_right else o.LessOrEqual(d, o.c(0))
            offset = o.Where(side, offset, o.c(0))
        index = o.Add(index, offset)
    index = o.Min(o.Max(index, o.c(0)), o.Sub(length, o.c(1)))
    flat = o.Add(o.Mul(row, length), index)                                 # [M, N]
    # The batch dims: all but the last (one diagonal) or the last two (a band).
    single = _single_diagonal(node)
    if single is None:
        end = o.Sub(o.c([rank - 1]), o.Cast(o.Greater(o.Reshape(count, o.c([1])), o.c(1)), to=7))
    else:
        end = o.c([rank - 1 if single else rank - 2])
    batch = o.Slice(o.Shape(ctx.input(0)), o.c([0]), end)
    values = o.Reshape(ctx.input(0), o.Concat(o.c([-1]), o.Reshape(o.Mul(count, length), o.c([1])),
                                              axis=0))
    picked = o.Gather(values, flat, axis=1)                                 # [B, M, N]
    padding = ctx.input(4) or ctx.constant(np.zeros((), numpy_dtype(dtype)))
    chosen = emit_where(ctx, valid, picked, padding, dtype)
    shape = o.Concat(batch, o.Reshape(rows, o.c([1])), o.Reshape(cols, o.c([1])), axis=0)
    ctx.op.Reshape(chosen, shape, out=ctx.output(0))


@matrix_diag_band.fold
def _fold_matrix_diag_band(node, values):
    diagonal, k, rows, cols, padding = values
    k = [int(v) for v in np.asarray(k).reshape(-1)]
    lo, hi = k[0], k[-1]
    bands = diagonal[..., np.newaxis, :] if lo == hi else diagonal
    length = diagonal.shape[-1]
    rows, cols = _diag_geometry(lo, hi, length, int(np.asarray(rows).reshape(-1)[0]),
                                int(np.asarray(cols).reshape(-1)[0]))
    m, n = np.arange(rows)[:, np.newaxis], np.arange(cols)[np.newaxis, :]
    d = n - m
    after = np.maximum(d, 0)
    diag_len = np.minimum(cols - after, rows + np.minimum(d, 0))
    align = node.attrs["align"]
    right = ((d >= 0) & align.startswith("RIGHT")) | ((d <= 0) & align.endswith("RIGHT"))
    index = np.clip(n - after + np.where(right, length - diag_len, 0), 0, max(length - 1, 0))
    row = np.clip(hi - d, 0, hi - lo)
    fill = np.asarray(padding, diagonal.dtype).reshape(-1)[0]
    if length == 0:
        return [np.full(bands.shape[:-2] + (rows, cols), fill, diagonal.dtype)]
    return [np.where((d >= lo) & (d <= hi), bands[..., row, index], fill).astype(diagonal.dtype)]


# -- band part -----------------------------------------------------------------------------
band_part = OPS.declare("MatrixBandPart", "Keeps the band of num_lower sub- and num_upper "
                                           "super-diagonals of the innermost matrices (-1: all).") \
    .input("x").input("num_lower", INDEX_TYPES).input("num_upper", INDEX_TYPES).output("y")
band_part.infer(same_as_input)


@band_part.lower
def _lower_band_part(ctx, node):
    rank = node.inputs[0].desc.rank
    if rank is not None and rank < 2:
        raise ConversionError("MatrixBandPart needs a rank >= 2 input")
    zero, one = ctx.constant(np.array(0, np.int64)), ctx.constant(np.array(1, np.int64))
    rows = ctx.op.Range(zero, emit_dim(ctx, ctx.input(0), -2), one)
    cols = ctx.op.Range(zero, emit_dim(ctx, ctx.input(0), -1), one)
    below = ctx.op.Sub(ctx.op.Unsqueeze(rows, int64_constant(ctx, [1])), cols)  # i - j
    above = ctx.op.Neg(below)

    def within(distance, index):
        limit = scalar_int64_input(ctx, index)
        everything = ctx.op.Less(limit, zero)
        return ctx.op.Or(everything, ctx.op.LessOrEqual(distance, limit))

    keep = ctx.op.And(within(below, 1), within(above, 2))
    dtype = node.inputs[0].desc.dtype
    zeros = ctx.constant(np.zeros((), numpy_dtype(dtype)))
    emit_where(ctx, keep, ctx.input(0), zeros, dtype, ctx.output(0))
