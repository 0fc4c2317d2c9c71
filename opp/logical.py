"""Boolean logic, elementwise: LogicalAnd and LogicalOr (numpy broadcasting), LogicalNot."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import OpSet
from tf2ir.opp.declare import declare_binary, declare_unary

OPS = OpSet("tf2ir.opp.logical")

for _op_type, (_onnx_op, _np_fn) in {"LogicalAnd": ("And", np.logical_and),
                                     "LogicalOr": ("Or", np.logical_or)}.items():
    declare_binary(OPS, _op_type, f"x1 {_onnx_op.lower()} x2, broadcast",
                   lambda o, x, y, dtype, _op=_onnx_op: getattr(o, _op)(x, y, out=o.out),
                   ("bool",), ("bool",), fold=_np_fn)
declare_unary(OPS, "LogicalNot", "not x", lambda o, x, dtype: o.Not(x, out=o.out), ("bool",), ("bool",),
              fold=np.logical_not)
