"""Decoding TF AttrValue and TensorProto messages into Python and numpy values."""

from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, Optional, Tuple

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.ir.errors import ExitStatus
from tf2ir.ir.tensor import TENSOR_TYPES, numpy_dtype

# TF DataType enum → IR dtype name (reference types are these + 100).
TF_DTYPES = {
    1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8",
    7: "string", 8: "complex64", 9: "int64", 10: "bool", 14: "bfloat16",
    17: "uint16", 18: "complex128", 19: "float16", 22: "uint32", 23: "uint64",
    21: "variant",   # TensorList handles: the IR gives them list dtypes (opp/lists.py)
    20: "resource",  # TF1 TensorArray handles: the IR's TensorArray gives a list for them
}
TF_DTYPE_NAMES = {0: "invalid", 11: "qint8", 12: "quint8", 13: "qint32", 15: "qint16",
                  16: "quint16"}


def ir_dtype(tf_type: int) -> str:
    tf_type = tf_type - 100 if tf_type > 100 else tf_type
    try:
        return TF_DTYPES[tf_type]
    except KeyError:
        name = TF_DTYPE_NAMES.get(tf_type, str(tf_type))
        raise ConversionError(f"TF dtype {name} is not supported") from None


def shape_of(proto) -> Optional[Tuple[Optional[int], ...]]:
    """TensorShapeProto → tuple of dims (None for unknown dims), or None for unknown rank.
    -1 is TF's unknown dim; a smaller one is a malformed shape."""
    if proto.unknown_rank:
        return None
    dims = tuple(int(d.size) for d in proto.dim)
    if any(d < -1 for d in dims):
        raise ConversionError(f"shape {list(dims)} has a negative dimension (only -1, "
                              "unknown, may be)")
    return tuple(None if d < 0 else d for d in dims)


# The bound on a tensor the parser materialises beyond the bytes the file holds (TF's
# "splat" constants: a few values repeated to fill the shape); --max-tensor-bytes.
DEFAULT_MAX_TENSOR_BYTES = 1 << 30
_MAX_TENSOR_BYTES: ContextVar[int] = ContextVar("tf2ir_max_tensor_bytes",
                                                default=DEFAULT_MAX_TENSOR_BYTES)


@contextmanager
def tensor_limit(max_bytes: Optional[int]) -> Iterator[None]:
    """Within the block, constants decoded from TensorProtos may expand to at most
    `max_bytes` (None: DEFAULT_MAX_TENSOR_BYTES); a larger one is a ConversionError."""
    token = _MAX_TENSOR_BYTES.set(DEFAULT_MAX_TENSOR_BYTES if max_bytes is None else int(max_bytes))
    try:
        yield
    finally:
        _MAX_TENSOR_BYTES.reset(token)


def max_tensor_bytes() -> int:
    """The bound in force (see `tensor_limit`)."""
    return _MAX_TENSOR_BYTES.get()


def size_text(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes} bytes"


# Where each dtype's values live in a TensorProto when tensor_content is empty.
_VALUE_FIELDS = {
    "float32": "float_val", "float64": "double_val", "int32": "int_val", "uint8": "int_val",
    "int16": "int_val", "int8": "int_val", "int64": "int64_val", "bool": "bool_val",
    "float16": "half_val", "bfloat16": "half_val", "uint16": "int_val",
    "uint32": "uint32_val", "uint64": "uint64_val", "complex64": "scomplex_val",
    "complex128": "dcomplex_val", "string": "string_val",
}


def tensor_to_numpy(proto) -> np.ndarray:
    """A numpy array for a TensorProto; tensor_content is viewed, not copied again. A
    content size that does not fit the dtype and shape, a negative or unknown shape, values
    that do not fit the dtype, or a repeated-value ("splat") tensor larger than the bound
    in force (`tensor_limit`) is a ConversionError."""
    dtype = ir_dtype(proto.dtype)
    if dtype not in TENSOR_TYPES:   # variant, resource: handles, which no constant holds
        raise ConversionError(f"a constant tensor of dtype {dtype} is not supported (TF "
                              "handle dtypes have no value tf2ir can hold)",
                              exit_code=ExitStatus.UNSUPPORTED)
    if proto.tensor_shape.unknown_rank:
        raise ConversionError("a tensor's shape must be known (it says unknown rank)")
    shape = tuple(int(d.size) for d in proto.tensor_shape.dim)
    if any(d < 0 for d in shape):
        raise ConversionError(f"tensor shape {list(shape)} has a negative dimension")
    count = math.prod(shape)
    np_dtype = numpy_dtype(dtype)
    if proto.tensor_content and dtype != "string":
        needed = count * np_dtype.itemsize
        if len(proto.tensor_content) != needed:
            raise ConversionError(f"tensor content has {len(proto.tensor_content)} bytes; "
                                  f"shape {list(shape)} of {dtype} needs {needed}")
        return np.frombuffer(proto.tensor_content, dtype=np_dtype).reshape(shape)
    values = getattr(proto, _VALUE_FIELDS[dtype])
    given = len(values) // 2 if dtype.startswith("complex") else len(values)  # (real, imag)
    if given > count:
        raise ConversionError(f"tensor has {given} values for shape {list(shape)}")
    nbytes = count * np_dtype.itemsize
    if nbytes > max_tensor_bytes():
        raise ConversionError(
            f"constant of shape {list(shape)} ({dtype}, {given} value"
            f"{'s' if given != 1 else ''} given) would take {size_text(nbytes)}: more "
            f"than the limit on materialised tensors, {size_text(max_tensor_bytes())} "
            "(--max-tensor-bytes)")
    if math.prod(d for d in shape if d) >= 1 << 62:    # numpy cannot shape even an empty one
        raise ConversionError(f"tensor shape {list(shape)} is too large")
    if dtype == "string":
        array = np.empty(count, dtype=object)
        if len(values):
            array[:len(values)] = list(values)
            array[len(values):] = values[-1]
        return array.reshape(shape)
    try:
        if dtype in ("float16", "bfloat16"):
            raw = np.array(values, dtype=np.uint16).view(np_dtype)
        elif dtype.startswith("complex"):
            if len(values) % 2:
                raise ConversionError(f"{dtype} tensor has an odd number of real values")
            raw = np.array(values, dtype=np.float64).view(np.complex128).astype(np_dtype)
        else:
            raw = np.array(values, dtype=np_dtype)
    except OverflowError as exc:
        raise ConversionError(f"tensor values do not fit {dtype}: {exc}") from None
    if raw.size == count:
        return raw.reshape(shape)
    if raw.size == 0:
        return np.zeros(shape, dtype=np_dtype)
    # TF repeats the last value to fill the shape.
    return np.concatenate([raw, np.full(count - raw.size, raw[-1], dtype=np_dtype)]).reshape(shape)


def _decode_list(lst) -> Tuple[str, list]:
    for name, kind in (("s", "list_string"), ("i", "list_int"), ("f", "list_float"),
                       ("b", "list_bool"), ("type", "list_type"), ("shape", "list_shape"),
                       ("tensor", "list_tensor"), ("func", "list_func")):
        values = getattr(lst, name)
        if len(values):
            if name == "s":
                return kind, [v.decode("utf-8", "replace") for v in values]
            if name == "type":
                return kind, [ir_dtype(v) for v in values]
            if name == "shape":
                return kind, [shape_of(v) for v in values]
            if name == "tensor":
                return kind, [tensor_to_numpy(v) for v in values]
            if name == "func":
                return kind, [v.name for v in values]
            return kind, list(values)
    return "list_int", []


def decode_attr(value) -> Tuple[str, Any]:
    """(kind, python value) for an AttrValue; kinds follow TF: int, float, type, list_int, ..."""
    which = value.WhichOneof("value")
    if which == "s":
        return "string", value.s.decode("utf-8", "replace")
    if which == "i":
        return "int", int(value.i)
    if which == "f":
        return "float", float(value.f)
    if which == "b":
        return "bool", bool(value.b)
    if which == "type":
        return "type", ir_dtype(value.type)
    if which == "shape":
        return "shape", shape_of(value.shape)
    if which == "tensor":
        return "tensor", tensor_to_numpy(value.tensor)
    if which == "list":
        return _decode_list(value.list)
    if which == "func":
        return "func", value.func.name
    if which == "placeholder":
        return "placeholder", value.placeholder
    return "none", None
