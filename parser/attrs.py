"""Decoding TF AttrValue and TensorProto messages into Python and numpy values."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.ir.tensor import numpy_dtype

# TF DataType enum → IR dtype name (reference types are these + 100).
TF_DTYPES = {
    1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8",
    7: "string", 8: "complex64", 9: "int64", 10: "bool", 14: "bfloat16",
    17: "uint16", 18: "complex128", 19: "float16", 22: "uint32", 23: "uint64",
}
TF_DTYPE_NAMES = {0: "invalid", 11: "qint8", 12: "quint8", 13: "qint32", 15: "qint16",
                  16: "quint16", 20: "resource", 21: "variant"}


def ir_dtype(tf_type: int) -> str:
    tf_type = tf_type - 100 if tf_type > 100 else tf_type
    try:
        return TF_DTYPES[tf_type]
    except KeyError:
        name = TF_DTYPE_NAMES.get(tf_type, str(tf_type))
        raise ConversionError(f"TF dtype {name} is not supported") from None


def shape_of(proto) -> Optional[Tuple[Optional[int], ...]]:
    """TensorShapeProto → tuple of dims (None for unknown dims), or None for unknown rank."""
    if proto.unknown_rank:
        return None
    return tuple(None if d.size < 0 else int(d.size) for d in proto.dim)


# Where each dtype's values live in a TensorProto when tensor_content is empty.
_VALUE_FIELDS = {
    "float32": "float_val", "float64": "double_val", "int32": "int_val", "uint8": "int_val",
    "int16": "int_val", "int8": "int_val", "int64": "int64_val", "bool": "bool_val",
    "float16": "half_val", "bfloat16": "half_val", "uint16": "int_val",
    "uint32": "uint32_val", "uint64": "uint64_val", "complex64": "scomplex_val",
    "complex128": "dcomplex_val", "string": "string_val",
}


def tensor_to_numpy(proto) -> np.ndarray:
    """A numpy array for a TensorProto; tensor_content is viewed, not copied again."""
    dtype = ir_dtype(proto.dtype)
    shape = shape_of(proto.tensor_shape) or ()
    count = int(np.prod(shape, dtype=np.int64))
    if dtype == "string":
        values = list(proto.string_val)
        array = np.empty(count, dtype=object)
        if values:
            array[:len(values)] = values
            array[len(values):] = values[-1]
        return array.reshape(shape)
    np_dtype = numpy_dtype(dtype)
    if proto.tensor_content:
        array = np.frombuffer(proto.tensor_content, dtype=np_dtype)
        if array.size != count:
            raise ConversionError(f"tensor content has {array.size} values for shape {list(shape)}")
        return array.reshape(shape)
    values = getattr(proto, _VALUE_FIELDS[dtype])
    if dtype in ("float16", "bfloat16"):
        raw = np.array(values, dtype=np.uint16).view(np_dtype)
    elif dtype.startswith("complex"):
        raw = np.array(values, dtype=np.float64).view(np.complex128).astype(np_dtype)
    else:
        raw = np.array(values, dtype=np_dtype)
    if raw.size == count:
        return raw.reshape(shape)
    if raw.size == 0:
        return np.zeros(shape, dtype=np_dtype)
    if raw.size > count:
        raise ConversionError(f"tensor has {raw.size} values for shape {list(shape)}")
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
