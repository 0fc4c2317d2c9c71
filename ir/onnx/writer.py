"""Writes an ONNX model whose weights stream from numpy arrays straight into the file.

The graph (without initializers) is serialized by protobuf; each initializer is
appended as a GraphProto field in protobuf wire format with its raw bytes written
directly from the array's buffer, so weights are never copied into protobuf. Above
2 GB the weights go to an ONNX external data file instead.
"""

from __future__ import annotations

import os
from typing import List, Tuple

import numpy as np
import onnx

from tf2ir.ir.tensor import dtype_of_numpy

ONNX_DTYPES = {
    "float32": onnx.TensorProto.FLOAT, "float64": onnx.TensorProto.DOUBLE,
    "float16": onnx.TensorProto.FLOAT16, "bfloat16": onnx.TensorProto.BFLOAT16,
    "int8": onnx.TensorProto.INT8, "int16": onnx.TensorProto.INT16,
    "int32": onnx.TensorProto.INT32, "int64": onnx.TensorProto.INT64,
    "uint8": onnx.TensorProto.UINT8, "uint16": onnx.TensorProto.UINT16,
    "uint32": onnx.TensorProto.UINT32, "uint64": onnx.TensorProto.UINT64,
    "bool": onnx.TensorProto.BOOL, "string": onnx.TensorProto.STRING,
    "complex64": onnx.TensorProto.COMPLEX64, "complex128": onnx.TensorProto.COMPLEX128,
}

PROTOBUF_LIMIT = 2 ** 31 - 1
_GRAPH_FIELD = b"\x3a"        # ModelProto.graph, field 7, length-delimited
_INITIALIZER_FIELD = b"\x2a"  # GraphProto.initializer, field 5
_RAW_DATA_FIELD = b"\x4a"     # TensorProto.raw_data, field 9

Initializer = Tuple[str, np.ndarray]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _tensor_header(name: str, array: np.ndarray) -> onnx.TensorProto:
    tensor = onnx.TensorProto()
    tensor.name = name
    tensor.data_type = ONNX_DTYPES[dtype_of_numpy(array.dtype)]
    tensor.dims.extend(array.shape)
    return tensor


def tensor_proto(name: str, array: np.ndarray) -> onnx.TensorProto:
    """A complete TensorProto (data copied in); for small tensors and strings."""
    if array.dtype == np.object_:
        values = [v if isinstance(v, bytes) else str(v).encode() for v in array.ravel()]
        # onnx's hint for `vals` leaves out the bytes items a STRING tensor takes
        return onnx.helper.make_tensor(name, onnx.TensorProto.STRING, array.shape,
                                       values)  # type: ignore[arg-type]
    tensor = _tensor_header(name, array)
    tensor.raw_data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return tensor


def _raw(array: np.ndarray) -> memoryview:
    array = np.ascontiguousarray(array)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    return array.reshape(-1).view(np.uint8).data


def write_model(model: onnx.ModelProto, initializers: List[Initializer], path: str) -> None:
    """Write `model` plus `initializers` to `path` (via a temp file, renamed when complete)."""
    strings = [(n, a) for n, a in initializers if a.dtype == np.object_]
    blobs = [(n, a) for n, a in initializers if a.dtype != np.object_]
    model.graph.initializer.extend(tensor_proto(n, a) for n, a in strings)
    total = sum(a.nbytes for _, a in blobs)
    tmp_paths = [path + ".tmp"]
    try:
        if total + model.ByteSize() > PROTOBUF_LIMIT - (1 << 20):
            data_name = os.path.basename(path) + ".data"
            tmp_paths.append(os.path.join(os.path.dirname(path) or ".", data_name + ".tmp"))
            _write_external(model, blobs, path, data_name, tmp_paths)
        else:
            _write_inline(model, blobs, tmp_paths[0])
        for tmp in tmp_paths[1:]:
            os.replace(tmp, tmp[:-4])
        os.replace(tmp_paths[0], path)
    finally:
        for tmp in tmp_paths:
            if os.path.exists(tmp):
                os.remove(tmp)


def _write_inline(model: onnx.ModelProto, blobs: List[Initializer], tmp_path: str) -> None:
    pieces = []
    for name, array in blobs:
        header = _tensor_header(name, array).SerializeToString()
        raw = _raw(array)
        tensor_len = len(header) + 1 + len(_varint(raw.nbytes)) + raw.nbytes
        prefix = _INITIALIZER_FIELD + _varint(tensor_len) + header + _RAW_DATA_FIELD + _varint(raw.nbytes)
        pieces.append((prefix, raw))
    graph_bytes = model.graph.SerializeToString()
    graph_len = len(graph_bytes) + sum(len(p) + r.nbytes for p, r in pieces)
    shell = onnx.ModelProto()
    shell.CopyFrom(model)
    shell.ClearField("graph")
    with open(tmp_path, "wb") as f:
        f.write(shell.SerializeToString())
        f.write(_GRAPH_FIELD + _varint(graph_len))
        f.write(graph_bytes)
        for prefix, raw in pieces:
            f.write(prefix)
            f.write(raw)


def _write_external(model, blobs, path, data_name, tmp_paths) -> None:
    offset = 0
    with open(tmp_paths[1], "wb") as data:
        for name, array in blobs:
            tensor = _tensor_header(name, array)
            raw = _raw(array)
            pad = -offset % 4096
            data.write(b"\0" * pad)
            offset += pad
            data.write(raw)
            tensor.data_location = onnx.TensorProto.EXTERNAL
            for key, value in (("location", data_name), ("offset", str(offset)),
                               ("length", str(raw.nbytes))):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            offset += raw.nbytes
            model.graph.initializer.append(tensor)
    with open(tmp_paths[0], "wb") as f:
        f.write(model.SerializeToString())
