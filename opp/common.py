"""Shared inference and lowering helpers for the op families, and the machinery of the
elementwise families: lowering through a carrier dtype where onnxruntime has no kernel."""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import FLOAT_TYPES, NUMBER_TYPES, Shape, numpy_dtype

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
NHWC_TO_NCHW = [0, 3, 1, 2]
NCHW_TO_NHWC = [0, 2, 3, 1]


def broadcast_shapes(*shapes: Shape) -> Shape:
    """numpy broadcasting over shapes with unknown dims (None) and unknown ranks."""
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ConversionError(f"shapes {[list(s) for s in shapes]} do not broadcast")
        if known:
            out.append(known.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def same_as_input(node, index: int = 0) -> List[TensorDesc]:
    desc = node.inputs[index].desc
    return [desc.copy()]


def normalize_axis(axis: int, rank: Optional[int]) -> int:
    """`axis` in 0..rank-1 (0 for a scalar). With the rank unknown (None) a non-negative axis
    stands as given and a negative one is a ConversionError: it counts from an end no one
    knows (a lowering whose ONNX op counts from the end itself uses `onnx_axis`)."""
    if rank is None:
        if axis < 0:
            raise ConversionError(f"axis {axis} counts from the end, and the input rank is "
                                  f"unknown: it must be known")
        return axis
    if not -rank <= axis < max(rank, 1):
        raise ConversionError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def onnx_axis(axis: int, rank: Optional[int]) -> int:
    """`axis` for an ONNX op that counts a negative axis from the end of its own run-time
    rank (Gather, Concat, Unsqueeze, Squeeze, Split, ...): normalized where `rank` is known,
    as given where it is not."""
    return axis if rank is None else normalize_axis(axis, rank)


def const_ints(node, index: int) -> Optional[List[int]]:
    """The constant integer input `index` as a list, or None if it is not constant."""
    value = node.inputs[index].const_value if index < len(node.inputs) and node.inputs[index] is not None else None
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def int64_input(ctx, index: int) -> str:
    """The node's input `index` as an int64 tensor (folded when constant)."""
    value = ctx.const_input(index)
    if value is not None:
        return ctx.constant(np.asarray(value, dtype=np.int64), "i64")
    if ctx.input_desc(index).dtype == "int64":
        return ctx.input(index)
    return ctx.emit("Cast", [ctx.input(index)], to=7)[0]


def cast_from_int64(ctx, name: str, dtype: str, output: Optional[str] = None) -> str:
    """Cast an int64 ONNX tensor to `dtype` (writing `output` when given)."""
    from tf2ir.ir.onnx.writer import ONNX_DTYPES
    if dtype == "int64":
        if output:
            ctx.emit("Identity", [name], [output])
            return output
        return name
    return ctx.emit("Cast", [name], [output] if output else 1, to=ONNX_DTYPES[dtype])[0]


def spatial_attrs(values: Sequence[int], data_format: str) -> List[int]:
    """The spatial entries of a 4-/5-element TF attribute laid out in `data_format`."""
    return list(values[1:-1]) if data_format.endswith("C") else list(values[2:])


# -- layouts (DESIGN decision 8: the formats a plugin sets decide them) ----------------------------
CHANNELS_LAST = {4: "NHWC", 5: "NDHWC"}
CHANNELS_FIRST = {4: "NCHW", 5: "NCDHW"}
TF_FILTER = {4: "HWCN", 5: "DHWCN"}     # spatial dims, in channels (C), out channels (N)


def check_layout_declared(node, index: int) -> None:
    """Refuse an input without a format (ND) whose node says channels-first in a TF-style
    `data_format` attribute: formats alone decide layouts, and reading such data as
    channels-last would convert it silently wrong."""
    said = node.attrs.get("data_format")
    if isinstance(said, str) and said.startswith("NC"):
        raise ConversionError(f"input {index} has no format (ND) while data_format says {said}: "
                              "layouts are read from formats only; the plugin must declare it "
                              f"(op.set_input_format({index}, {said!r}))")


def data_layout(node, index: int = 0, rank: Optional[int] = None) -> str:
    """The layout of data input `index`, read from its format: NHWC or NCHW (4-D), NDHWC or
    NCDHW (5-D). An undeclared (ND) format is TF's channels-last layout of the input's rank
    (`rank` when the input's is unknown)."""
    desc = node.inputs[index].desc
    rank = desc.rank if desc.rank is not None else rank
    fmt = desc.format
    if fmt == "ND":
        check_layout_declared(node, index)
        if rank not in CHANNELS_LAST:
            raise ConversionError(f"input {index} has no format (ND) and rank {rank}: "
                                  "a layout needs 4-D or 5-D data")
        return CHANNELS_LAST[rank]
    if fmt not in (CHANNELS_LAST.get(len(fmt)), CHANNELS_FIRST.get(len(fmt))):
        raise ConversionError(f"input {index} has format {fmt}: data must be NHWC, NCHW, NDHWC "
                              "or NCDHW")
    if rank is not None and rank != len(fmt):
        raise ConversionError(f"input {index} has format {fmt} but rank {rank}")
    return fmt


def filter_layout(node, index: int, rank: int) -> str:
    """The layout of the rank-`rank` convolution filter at input `index`, read from its format:
    TF's HWCN (DHWCN), or the same letters channels-first or -last (NCHW, NHWC; NCDHW,
    NDHWC), N being the output and C the input channels. Undeclared (ND) is TF's."""
    fmt = node.inputs[index].desc.format
    if fmt == "ND":
        return TF_FILTER[rank]
    if fmt not in (TF_FILTER[rank], CHANNELS_FIRST[rank], CHANNELS_LAST[rank]):
        raise ConversionError(f"the filter (input {index}) has format {fmt}: a {rank}-D filter "
                              f"must be {TF_FILTER[rank]}, {CHANNELS_FIRST[rank]} or "
                              f"{CHANNELS_LAST[rank]}")
    return fmt


def partial_ints(value, count: int) -> List[Optional[int]]:
    """The entries of a 1-D integer tensor that are known at conversion time (None for the
    others): a constant, or a Pack of scalars some of which are constants (what Keras builds
    for a transposed convolution's output shape with an unknown batch size)."""
    if value is None:
        return [None] * count
    if value.const_value is not None:
        return [int(v) for v in np.asarray(value.const_value).reshape(-1)]
    producer = value.producer
    if producer is not None and producer.op_type == "Pack" and producer.attrs.get("axis", 0) == 0 \
            and len(producer.inputs) == count:
        known = [p.const_value for p in producer.inputs]
        return [None if v is None or np.asarray(v).size != 1 else int(np.asarray(v).reshape(-1)[0])
                for v in known]
    return [None] * count


def check_window_attrs(node, rank: int) -> None:
    """A window op's `strides` and `ksize` need one value per data dim and, like
    `dilations`, values of at least 1 (a zero stride would divide by zero)."""
    for name in ("strides", "ksize", "dilations"):
        values = node.attrs.get(name)
        if values is None or (name == "dilations" and not values):
            continue
        if name != "dilations" and len(values) != rank:
            raise ConversionError(f"attribute '{name}' has {len(values)} values; {rank}-D data "
                                  f"needs {rank}")
        if any(v < 1 for v in values):
            raise ConversionError(f"attribute '{name}' is {list(values)}: every value must be "
                                  "at least 1")


def window_output(size: Optional[int], kernel: Optional[int], stride: int, dilation: int,
                  padding: str, pads=(0, 0)) -> Optional[int]:
    """The output size of a window op along one spatial dim; None when it depends on an
    unknown size or kernel (SAME padding needs only the size: ceil(size / stride))."""
    if size is None:
        return None
    if padding == "SAME":
        return -(-size // stride)
    if kernel is None:
        return None
    effective = (kernel - 1) * dilation + 1
    if padding == "VALID":
        return max((size - effective) // stride + 1, 0)
    return (size + pads[0] + pads[1] - effective) // stride + 1


# -- constants and shapes -------------------------------------------------------------------
def scalar_int(array) -> int:
    """The first (only) entry of an integer array, as an int."""
    return int(np.asarray(array).reshape(-1)[0])


def unknown_desc(desc_or_rank, dtype: str) -> TensorDesc:
    """A desc of `dtype` whose dims are all unknown: of the rank of `desc_or_rank` (a desc or
    a rank; None: unknown rank)."""
    rank = desc_or_rank if isinstance(desc_or_rank, int) or desc_or_rank is None else desc_or_rank.rank
    return TensorDesc(dtype, None if rank is None else (None,) * rank)


def infer_from_shape_input(node, index: int, dtype: str) -> List[TensorDesc]:
    """The output desc of an op whose output shape is its input `index` (a 1-D shape tensor)."""
    dims = const_ints(node, index)
    if dims is not None:
        return [TensorDesc(dtype, tuple(dims))]
    shape = node.inputs[index].desc.shape
    return [unknown_desc(shape[0] if shape else None, dtype)]


def int64_constant(ctx, values) -> str:
    """An int64 initializer holding `values`."""
    return ctx.constant(np.asarray(values, np.int64))


def scalar_int64_input(ctx, index: int) -> str:
    """The node's input `index` (a scalar or 1-element tensor) as an int64 scalar."""
    value = ctx.const_input(index)
    if value is not None:
        return ctx.constant(np.array(int(np.asarray(value).reshape(-1)[0]), np.int64))
    name = int64_input(ctx, index)
    if ctx.input_desc(index).rank != 0:
        name = ctx.emit("Reshape", [name, int64_constant(ctx, [])])[0]
    return name


# -- ONNX emission: casts, dims, Where and wider dtypes -------------------------------------
def emit_cast(ctx, name: str, dtype: str, output: Optional[str] = None) -> str:
    """Cast ONNX tensor `name` to `dtype` (writing `output` when given)."""
    return ctx.emit("Cast", [name], [output] if output else 1, to=ONNX_DTYPES[dtype])[0]


def emit_dim(ctx, x: str, axis: int) -> str:
    """Dim `axis` of tensor x as an int64 scalar."""
    shape = ctx.emit("Shape", [x])[0]
    return ctx.emit("Gather", [shape, ctx.constant(np.array(axis, np.int64))], axis=0)[0]


def emit_along(ctx, x: str, axis: int, rank: Optional[int]) -> str:
    """The 1-D int64 shape [1, .., -1 at `axis`, .., 1] of tensor x's rank: a Reshape target
    that lays a vector along `axis` of x. A constant where `rank` is known; with the rank
    unknown (None) it is built at run time, and a negative `axis` counts from the end."""
    if rank is not None:
        axis = normalize_axis(axis, rank)
        return ctx.constant(np.array([-1 if i == axis else 1 for i in range(rank)], np.int64))
    count = ctx.emit("Shape", [ctx.emit("Shape", [x])[0]])[0]
    ones = ctx.emit("Expand", [ctx.constant(np.array([1], np.int64)), count])[0]
    return ctx.emit("ScatterElements", [ones, ctx.constant(np.array([axis], np.int64)),
                                        ctx.constant(np.array([-1], np.int64))], axis=0)[0]


# onnxruntime's Where kernels; emit_where runs other dtypes in a wider one and casts back.
_WHERE_TYPES = ("float16", "float32", "float64", "int8", "uint8", "int32", "int64")
_WIDER = {"bool": "uint8", "bfloat16": "float32", "int16": "int32", "uint16": "int32",
          "uint32": "int64", "uint64": "int64"}


def emit_where(ctx, cond: str, a: str, b: str, dtype: str, output: Optional[str] = None) -> str:
    """ONNX Where, through a wider dtype where onnxruntime has no kernel for `dtype`."""
    if dtype in _WHERE_TYPES:
        return ctx.emit("Where", [cond, a, b], [output] if output else 1)[0]
    wide = _WIDER.get(dtype)
    if wide is None:
        raise ConversionError(f"dtype {dtype} is not supported here")
    picked = ctx.emit("Where", [cond, emit_cast(ctx, a, wide), emit_cast(ctx, b, wide)])[0]
    return emit_cast(ctx, picked, dtype, output)


# onnxruntime's CPU kernels lack some dtypes; an op that meets one computes in a wider dtype
# (exact for integers: results wrap the same way after the cast back) and casts back.
SMALL_INTS_VIA_INT32 = {"int8": "int32", "int16": "int32", "uint8": "int32", "uint16": "int32"}
ARITHMETIC_VIA = {**SMALL_INTS_VIA_INT32, "uint32": "int64"}
MINMAX_VIA = {"int16": "int32", "uint16": "int32"}


def emit_via(ctx, onnx_op, inputs, output, dtype, via, cast_count=None, **attrs):
    """Emit `onnx_op` writing `output`; when `dtype` is a key of `via`, the inputs (the first
    `cast_count` of them, when given) are cast to via[dtype] first and the result cast back."""
    wide = via.get(dtype)
    if wide is None:
        return ctx.emit(onnx_op, inputs, [output], **attrs)[0]
    count = len(inputs) if cast_count is None else cast_count
    cast_inputs = [ctx.emit("Cast", [name], to=ONNX_DTYPES[wide])[0] if name and i < count else name
                   for i, name in enumerate(inputs)]
    result = ctx.emit(onnx_op, cast_inputs, **attrs)[0]
    return ctx.emit("Cast", [result], [output], to=ONNX_DTYPES[dtype])[0]


# -- elementwise ops: onnxruntime kernels and carriers --------------------------------------
# onnxruntime's CPU kernels lack some dtypes (bfloat16 nearly everywhere, float64 for the inverse
# and hyperbolic trig ops, bool/int16/uint16 for Where, Min and Max, signed ints for BitShift):
# the elementwise lowerings cast around the gaps to a carrier dtype that holds every value.
ALL_TYPES = NUMBER_TYPES + ("bool",)
NO_BF16 = tuple(t for t in NUMBER_TYPES if t != "bfloat16")
FLOAT_KERNELS = ("float16", "float32", "float64")
# A dtype's carriers, preferred first: each holds every value of the dtype exactly (uint64 in
# int64 keeps the bits only, which is all that selection needs: Where is the one user).
CARRIERS = {"bfloat16": ("float32",), "float16": ("float32",), "int8": ("int32",),
            "int16": ("int32",), "uint8": ("int32",), "uint16": ("uint32", "int32"),
            "uint32": ("int64",), "uint64": ("int64",), "bool": ("uint8", "int32")}

Body = Callable[["Emitter", List[str], str], str]


class Emitter:
    """Terse ONNX emission for composed lowerings: `o.Add(a, b)` emits one node and returns its
    output name (`out=` names it); `o.c(v)` is a constant of the working dtype."""

    def __init__(self, ctx, dtype: str, out: str = None):
        self.ctx, self.dtype = ctx, dtype
        self.out = out     # the name a body gives its last node (the op's output, or None)

    def c(self, value, dtype=None) -> str:
        return self.ctx.constant(np.array(value, numpy_dtype(dtype or self.dtype)))

    def __getattr__(self, onnx_op: str):
        def emit(*inputs: str, out: str = None, **attrs) -> str:
            return self.ctx.emit(onnx_op, list(inputs), [out] if out else 1, **attrs)[0]
        return emit


def work_dtype(dtype: str, kernels: Sequence[str], what: str = "") -> str:
    """`dtype` when onnxruntime has kernels for it, else its first carrier that has."""
    if dtype in kernels:
        return dtype
    for carrier in CARRIERS.get(dtype, ()):
        if carrier in kernels:
            return carrier
    raise ConversionError(f"{what or 'this op'} has no onnxruntime kernel for {dtype}")


def lowering(body: Body, kernels: Sequence[str], operands: Sequence[int] = (0, 1),
             keeps_dtype: bool = True):
    """A lowering that runs `body(o, input names, dtype) -> output name` in a dtype from
    `kernels`: the `operands` inputs are cast to a carrier where needed, and the result cast
    back when the op's output has the operands' dtype (`keeps_dtype`). The body names its last
    node `o.out` (None when a cast back follows)."""
    def lower(ctx, node):
        dtype = node.inputs[operands[0]].desc.dtype
        work = work_dtype(dtype, kernels, node.op_type)
        names = [ctx.input(i) for i in range(len(node.inputs))]
        if work != dtype:
            for i in operands:
                names[i] = ctx.emit("Cast", [names[i]], to=ONNX_DTYPES[work])[0]
        o = Emitter(ctx, work, ctx.output(0) if work == dtype or not keeps_dtype else None)
        result = body(o, names, work)
        if o.out is None:
            ctx.emit("Cast", [result], [ctx.output(0)], to=ONNX_DTYPES[dtype])
    return lower


def infer_broadcast(node, operands: Sequence[int] = (0, 1), dtype: str = None) -> List[TensorDesc]:
    """Operands of one dtype broadcast numpy-style; the output has `dtype` (default: theirs)
    and the format of an operand of the output's rank."""
    descs = [node.inputs[i].desc for i in operands]
    for desc in descs[1:]:
        if desc.dtype != descs[0].dtype:
            raise ConversionError(f"operand dtypes differ: {descs[0].dtype} and {desc.dtype}")
    shape = broadcast_shapes(*[d.shape for d in descs])
    full = [d for d in descs if shape is not None and d.rank == len(shape)]
    fmt, origin = (full[0].format, full[0].origin_format) if full else ("ND", "ND")
    return [TensorDesc(dtype or descs[0].dtype, shape, fmt, origin)]


def infer_predicate(node) -> List[TensorDesc]:
    """A bool output with input 0's shape and format."""
    desc = node.inputs[0].desc
    return [TensorDesc("bool", desc.shape, desc.format, desc.origin_format)]


def fold_with(fn):
    """A fold fn from a numpy function of the input arrays (float warnings silenced: TF
    gives inf/nan there too)."""
    def fold(node, values):
        with np.errstate(all="ignore"):
            return [fn(*values)]
    return fold


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
                   dtypes=NUMBER_TYPES, predicate: bool = False, fold=None):
    """Declare in `ops` the elementwise op `op_type` of x1 and x2 (numpy broadcasting):
    `body(o, x1, x2, dtype)` run in a dtype of `kernels`, output bool when it is a `predicate`,
    folded by the numpy function `fold`."""
    proto = ops.declare(op_type, doc).input("x1", dtypes).input("x2", dtypes).output("y")
    proto.infer(lambda node: infer_broadcast(node, dtype="bool" if predicate else None))
    proto.lower(lowering(lambda o, xs, dtype: body(o, xs[0], xs[1], dtype), kernels,
                         keeps_dtype=not predicate))
    if fold is not None:
        proto.fold(fold_with(fold))
    return proto
