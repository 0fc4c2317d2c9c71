"""Tensor descriptions: dtype, shape with unknown dims, format and origin format."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

# IR dtype names, each with its numpy dtype (None where numpy has none).
DTYPES = {
    "float16": np.float16, "float32": np.float32, "float64": np.float64,
    "bfloat16": None,
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "bool": np.bool_, "string": np.object_,
    "complex64": np.complex64, "complex128": np.complex128,
}
TENSOR_TYPES = tuple(DTYPES)

# A TF TensorList / TensorArray value (TF's `variant`): a list of tensors of one element
# dtype. Its IR dtype is "list_<element dtype>" and its desc's shape is what is known of
# every element's shape (the list's length is not part of the desc). "variant" and
# "resource" are TF's opaque handle dtypes, which attributes name (a While's T, a TF1
# Enter's T); no IR op makes a value of them.
LIST_PREFIX = "list_"
LIST_TYPES = tuple(LIST_PREFIX + name for name in TENSOR_TYPES)
DTYPES.update({name: None for name in LIST_TYPES})
DTYPES["variant"] = DTYPES["resource"] = None

FLOAT_TYPES = ("float16", "float32", "float64", "bfloat16")
INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
NUMBER_TYPES = FLOAT_TYPES + INT_TYPES
INDEX_TYPES = ("int32", "int64")

# ND: no format information. HWCN: a TF convolution filter (height, width, in, out).
FORMATS = ("ND", "NHWC", "NCHW", "HWCN", "NDHWC", "NCDHW", "DHWCN")

Dim = Optional[int]            # None: unknown
Shape = Optional[Tuple[Dim, ...]]  # None: unknown rank


def dtype_of_numpy(dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype == np.object_ or dtype.kind in "SU":
        return "string"
    name = dtype.name
    if name == "bool":
        return "bool"
    if name not in DTYPES:
        raise ValueError(f"numpy dtype {dtype} has no IR dtype")
    return name


def numpy_dtype(dtype: str) -> np.dtype:
    np_type = DTYPES.get(dtype)
    if np_type is None:
        if dtype == "bfloat16":
            import ml_dtypes  # shipped with onnx's and tensorflow's dependencies
            return np.dtype(ml_dtypes.bfloat16)
        if dtype in DTYPES:
            raise ValueError(f"IR dtype {dtype!r} is not a tensor dtype (no numpy dtype)")
        raise ValueError(f"unknown IR dtype {dtype!r}")
    return np.dtype(np_type)


def is_list_dtype(dtype: str) -> bool:
    """Whether `dtype` is a list's ("list_float32": a TensorList of float32 tensors)."""
    return dtype in LIST_TYPES


def list_dtype(element: str) -> str:
    """The dtype of a list of `element` tensors."""
    if element not in TENSOR_TYPES:
        raise ValueError(f"a list's elements must be tensors, not {element!r}")
    return LIST_PREFIX + element


def element_dtype(dtype: str) -> str:
    """The element dtype of list dtype `dtype`."""
    if not is_list_dtype(dtype):
        raise ValueError(f"{dtype!r} is not a list dtype")
    return dtype[len(LIST_PREFIX):]


@dataclass
class TensorDesc:
    """What is known about a tensor: dtype, shape (None dims unknown), format, origin format."""

    dtype: str
    shape: Shape = None
    format: str = "ND"
    origin_format: str = "ND"

    def copy(self) -> "TensorDesc":
        """An independent description with the same dtype, shape and formats."""
        return TensorDesc(self.dtype, self.shape, self.format, self.origin_format)

    @property
    def rank(self) -> Optional[int]:
        return None if self.shape is None else len(self.shape)

    def is_fully_known(self) -> bool:
        return self.shape is not None and all(d is not None for d in self.shape)

    def set_format(self, fmt: str, origin: Optional[str] = None) -> None:
        if fmt not in FORMATS or (origin is not None and origin not in FORMATS):
            raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
        self.format = fmt
        self.origin_format = origin or fmt

    def shape_text(self) -> str:
        if self.shape is None:
            return "[*]"
        return "[" + ",".join("?" if d is None else str(d) for d in self.shape) + "]"

    def __str__(self) -> str:
        text = f"{self.dtype}{self.shape_text()}"
        if self.format != "ND" or self.origin_format != "ND":
            text += f" {self.format}"
            if self.origin_format != self.format:
                text += f" origin={self.origin_format}"
        return text
