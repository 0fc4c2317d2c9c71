"""onnxruntime's kernel gaps and the carrier dtypes that cover them, in one place.

onnxruntime's CPU kernels lack some dtypes (bfloat16 nearly everywhere, float64 for the inverse
and hyperbolic trig ops, bool/int16/uint16 for Where, Min and Max, signed ints for BitShift): a
lowering that meets one computes in a wider dtype that holds every value (exact for integers:
results wrap the same way after the cast back) and casts back (`emitting.emit_via`,
`emitting.emit_where`, `emitting.lowering`)."""

from __future__ import annotations

from tf2ir.ir.onnx import kernels
from tf2ir.ir.tensor import FLOAT_TYPES, NUMBER_TYPES

ALL_TYPES = NUMBER_TYPES + ("bool",)
# the kernels of the elementwise arithmetic and comparisons (every number dtype but bfloat16),
# and of the float math (Exp, Log, ...): ir/onnx/kernels.py's table
NO_BF16 = kernels.kernel_types("Add", NUMBER_TYPES)
FLOAT_KERNELS = kernels.kernel_types("Exp", FLOAT_TYPES)

# A dtype's carriers, preferred first: each holds every value of the dtype exactly (uint64 in
# int64 keeps the bits only, which is all that selection needs: Where is the one user).
CARRIERS = kernels.CARRIERS

# `via` tables for emit_via: the dtype an op without a kernel for the key computes in (an
# entry drops out when the kernel table gains the kernel)
SMALL_INTS_VIA_INT32 = kernels.via("Pow", {"int8": "int32", "int16": "int32", "uint8": "int32",
                                           "uint16": "int32"})
ARITHMETIC_VIA = kernels.via("Pow", {**SMALL_INTS_VIA_INT32, "uint32": "int64"})
MINMAX_VIA = kernels.via("Max", {"int16": "int32", "uint16": "int32"})

# onnxruntime's Where kernels; emit_where runs other dtypes in the wider one of WHERE_VIA
WHERE_TYPES = kernels.kernel_types("Where", ALL_TYPES + ("string",))
WHERE_VIA = kernels.via("Where", {"bool": "uint8", "bfloat16": "float32", "int16": "int32",
                                  "uint16": "int32", "uint32": "int64", "uint64": "int64"})
