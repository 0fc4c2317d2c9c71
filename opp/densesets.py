"""Set operations between the last-dim rows of two dense tensors (DenseToDenseSetOperation), as
TF's sparse result: each row's distinct values, ascending, of a-b, b-a, the intersection or
the union (duplicates ignored).

Rows compare every pair of entries (an [rows, n1, n2] table), drop repeats within a row, and
are sorted with TopK in int64 (every integer dtype TF takes fits); the kept entries of each row
come first, the rest are pushed behind them with int64's largest value. Strings are refused:
ONNX has no sort for them.
"""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.errors import ExitStatus
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.opp.emitting import Emitter, emit_cast

OPS = OpSet("tf2ir.opp.densesets")
SET_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16")
OPERATIONS = ("a-b", "b-a", "intersection", "union")
I64 = ONNX_DTYPES["int64"]

dense_sets = OPS.declare("DenseToDenseSetOperation", "A set operation (a-b, b-a, "
                                                     "intersection, union) between the rows "
                                                     "along the last dim of set1 and set2, as "
                                                     "a sparse tensor of sorted rows.") \
    .input("set1").input("set2").output("result_indices", ("int64",)).output("result_values") \
    .output("result_shape", ("int64",)).attr("set_operation", "str") \
    .attr("validate_indices", "bool", True)


@dense_sets.infer
def _infer_dense_sets(node):
    a, b = node.inputs[0].desc, node.inputs[1].desc
    if a.dtype == "string":
        raise ConversionError("DenseToDenseSetOperation of strings is refused: its rows are "
                              "sorted, and ONNX has no sort for strings",
                              exit_code=ExitStatus.UNSUPPORTED)
    if a.dtype not in SET_TYPES or b.dtype != a.dtype:
        raise ConversionError(f"set1 and set2 must share an integer dtype, not {a.dtype} and "
                              f"{b.dtype}")
    if node.attrs["set_operation"] not in OPERATIONS:
        raise ConversionError(f"set_operation {node.attrs['set_operation']!r} is not one of "
                              f"{', '.join(OPERATIONS)}")
    rank = a.rank if a.rank is not None else b.rank
    if rank is None:       # the sparse result's rank is the sets' run-time rank
        return [TensorDesc("int64", (None, None)), TensorDesc(a.dtype, (None,)),
                TensorDesc("int64", (None,))]
    if rank < 2 or b.rank not in (None, rank):
        raise ConversionError(f"set1 and set2 must have one rank of at least 2, not {a.rank} "
                              f"and {b.rank}")
    return [TensorDesc("int64", (None, rank)), TensorDesc(a.dtype, (None,)),
            TensorDesc("int64", (rank,))]


def _rows(o: Emitter, x: str) -> str:
    """x as int64 rows [rows, n]."""
    shape = o.Shape(x)
    rows = o.ReduceProd(o.Slice(shape, o.c([0]), o.c([-1])), o.c([0]), keepdims=1)
    return o.Reshape(o.Cast(x, to=I64), o.Concat(rows, o.Shape(x, start=-1), axis=0), allowzero=1)


def _matches(o: Emitter, x: str, y: str) -> str:
    """[rows, n] bool: whether each entry of row x occurs in the same row of y."""
    equal = o.Equal(o.Unsqueeze(x, o.c([2])), o.Unsqueeze(y, o.c([1])))
    # ReduceSum: an empty row of y gives 0, where ReduceMax gives int64's lowest
    return o.Greater(o.ReduceSum(o.Cast(equal, to=I64), o.c([2]), keepdims=0), o.c(0))


def _first(o: Emitter, x: str) -> str:
    """[rows, n] bool: whether each entry is its value's first in its row."""
    width = o.Gather(o.Shape(x), o.c(1), axis=0)
    places = o.Range(o.c(0), width, o.c(1))
    earlier = o.Less(o.Unsqueeze(places, o.c([0])), o.Unsqueeze(places, o.c([1])))   # [j, i]: j < i
    equal = o.Equal(o.Unsqueeze(x, o.c([2])), o.Unsqueeze(x, o.c([1])))             # [r, i, j]
    earlier = o.Transpose(o.Unsqueeze(earlier, o.c([0])), perm=[0, 2, 1])           # [1, i, j]
    repeated = o.ReduceSum(o.Cast(o.And(equal, earlier), to=I64), o.c([2]), keepdims=0)
    return o.Equal(repeated, o.c(0))


@dense_sets.lower
def _lower_dense_sets(ctx, node):
    o = Emitter(ctx, "int64")
    a, b = _rows(o, ctx.input(0)), _rows(o, ctx.input(1))
    operation = node.attrs["set_operation"]
    if operation == "union":
        values = o.Concat(a, b, axis=1)
        keep = _first(o, values)
    else:
        values, other = (b, a) if operation == "b-a" else (a, b)
        inside = _matches(o, values, other)
        keep = o.And(_first(o, values), inside if operation == "intersection" else o.Not(inside))
    largest = o.c(np.iinfo(np.int64).max)
    width = o.Reshape(o.Gather(o.Shape(values), o.c(1), axis=0), o.c([1]))
    ordered, _ = ctx.op.TopK(o.Where(keep, values, largest), width, outputs=2, axis=1, largest=0,
                             sorted=1)
    counts = o.ReduceSum(o.Cast(keep, to=I64), o.c([1]), keepdims=1)               # [rows, 1]
    places = o.Unsqueeze(o.Range(o.c(0), o.Reshape(width, o.c([])), o.c(1)), o.c([0]))
    taken = o.Less(places, counts)                                                   # [rows, n]
    spots = o.Transpose(o.NonZero(taken), perm=[1, 0])                               # [M, 2]
    emit_cast(ctx, o.GatherND(ordered, spots), node.inputs[0].desc.dtype, ctx.output(1))
    # the indices in set1's leading dims: the same entries, in the same (row-major) order, of
    # the table shaped [*leading, n] (any rank, known or not)
    leading = o.Slice(o.Shape(ctx.input(0)), o.c([0]), o.c([-1]))
    table = o.Reshape(taken, o.Concat(leading, width, axis=0), allowzero=1)
    o.Transpose(o.NonZero(table), perm=[1, 0], out=ctx.output(0))
    longest = o.ReduceMax(o.Concat(o.c([0]), o.Reshape(counts, o.c([-1])), axis=0), o.c([0]),
                          keepdims=1)
    o.Concat(leading, longest, axis=0, out=ctx.output(2))
