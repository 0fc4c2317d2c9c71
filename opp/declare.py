"""Declaring the elementwise families: an op of one or two operands whose body runs in a dtype
onnxruntime has kernels for (`emitting.lowering`), folded by a numpy function."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from tf2ir.ir import OpSet
from tf2ir.ir.onnx.kernels import BEFORE_14, SMALL_INTS_FROM_14
from tf2ir.ir.tensor import FLOAT_TYPES, NUMBER_TYPES
from tf2ir.opp.emitting import Body, lowering
from tf2ir.opp.shapes import infer_broadcast, infer_predicate, same_as_input


def fold_with(fn):
    """A fold fn from a numpy function of the input arrays (float warnings silenced: TF
    gives inf/nan there too)."""
    def fold(node, values):
        with np.errstate(all="ignore"):
            return [fn(*values)]
    return fold


def _before_14(kernels: Sequence[str]) -> Sequence[str]:
    """`kernels` at opset 13: ONNX's arithmetic takes no 8- or 16-bit integers there, so those
    compute in their carriers (ir/onnx/kernels.py SMALL_INTS_FROM_14)."""
    return tuple(k for k in kernels if k not in SMALL_INTS_FROM_14)


def declare_unary(ops: OpSet, op_type: str, doc: str, body: Body, kernels: Sequence[str],
                  dtypes=FLOAT_TYPES, predicate: bool = False, fold=None):
    """Declare in `ops` the elementwise op `op_type` of one input x: `body(o, x, dtype)` run in
    a dtype of `kernels` (see `lowering`), output bool when it is a `predicate`, folded by the
    numpy function `fold`."""
    proto = ops.declare(op_type, doc).input("x", dtypes).output("y")
    proto.infer(infer_predicate if predicate else same_as_input)
    proto.lower(lowering(lambda o, xs, dtype: body(o, xs[0], dtype), kernels, (0,),
                         keeps_dtype=not predicate))
    if fold is not None:
        proto.fold(fold_with(fold))
    return proto


def declare_binary(ops: OpSet, op_type: str, doc: str, body: Body, kernels: Sequence[str],
                   dtypes=NUMBER_TYPES, predicate: bool = False, fold=None,
                   arithmetic: bool = False):
    """Declare in `ops` the elementwise op `op_type` of x1 and x2 (numpy broadcasting):
    `body(o, x1, x2, dtype)` run in a dtype of `kernels`, output bool when it is a `predicate`,
    folded by the numpy function `fold`. An `arithmetic` body (Add/Sub/Mul/Div, whatever the
    width of its dtype) has a form for opset 13 that runs 8- and 16-bit integers in a carrier."""
    proto = ops.declare(op_type, doc).input("x1", dtypes).input("x2", dtypes).output("y")

    @proto.infer
    def infer(node):
        return infer_broadcast(node, dtype="bool" if predicate else None)

    forms = [(None, kernels)] + ([(BEFORE_14, _before_14(kernels))] if arithmetic else [])
    for opsets, work in forms:
        proto.lower(lowering(lambda o, xs, dtype: body(o, xs[0], xs[1], dtype), work,
                             keeps_dtype=not predicate), opsets=opsets)
    if fold is not None:
        proto.fold(fold_with(fold))
    return proto
