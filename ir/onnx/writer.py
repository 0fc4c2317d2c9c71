"""Writes an ONNX model whose weights stream from numpy arrays straight into the file.

The graph (without initializers) is serialized by protobuf; each initializer is
appended as a GraphProto field in protobuf wire format with its raw bytes written
directly from the array's buffer, so weights are never copied into protobuf. Above
2 GB the weights go to an ONNX external data file instead.

Never lose a file (DESIGN decision 10): the model is written to a unique temporary file
beside the target (with its data file, when there is one), checked by onnx.checker's full
check, and only then renamed over the target; a model that fails the check is an error
and nothing is written.
"""

from __future__ import annotations

import os
import re
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import onnx

from tf2ir.ir.atomic import atomic_output, atomic_outputs, scratch_file
from tf2ir.ir.errors import ConversionError
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
# With external data, tensors smaller than this stay in the model file (as onnx's own
# convert_model_to_external_data does): onnx.checker's shape inference reads small
# constants (axes, shapes) and cannot read them from external data.
EXTERNAL_MIN_BYTES = 1024
_GRAPH_FIELD = b"\x3a"        # ModelProto.graph, field 7, length-delimited
_INITIALIZER_FIELD = b"\x2a"  # GraphProto.initializer, field 5
_RAW_DATA_FIELD = b"\x4a"     # TensorProto.raw_data, field 9

Initializer = Tuple[str, np.ndarray]
# An ONNX name (node, value or initializer) → ConversionError places (node, op_type, plugin).
Locate = Callable[[str], Dict[str, str]]


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
    if _is_string(array):
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


def _is_string(array: np.ndarray) -> bool:
    return array.dtype.kind in "OSU"


def write_model(model: onnx.ModelProto, initializers: List[Initializer], path: str,
                check: bool = True, locate: Optional[Locate] = None) -> None:
    """Write `model` plus `initializers` to `path`: into a unique temporary file beside it
    (and `path.data` beside that above 2 GB), checked by `onnx.checker` (full check, by
    path, so external data and models over 2 GB are checked too), then renamed over the
    target; a model the checker rejects is a ConversionError naming the node (`locate`
    maps an ONNX node, value or initializer name to the place it came from) and nothing
    is written."""
    strings = [(n, a) for n, a in initializers if _is_string(a)]
    blobs = [(n, a) for n, a in initializers if not _is_string(a)]
    model.graph.initializer.extend(tensor_proto(n, a) for n, a in strings)
    total = sum(a.nbytes for _, a in blobs)
    if total + model.ByteSize() <= PROTOBUF_LIMIT - (1 << 20):
        with atomic_output(path) as tmp:
            offsets = _write_inline(model, blobs, tmp)
            if check:
                _check_inline(model, blobs, offsets, tmp, locate)
        return
    data_path = path + ".data"
    with atomic_outputs([data_path, path]) as (tmp_data, tmp):
        # The model names its data file by a relative location: the temporary's while it is
        # checked, the final name once it is (the graph is rewritten, the weights are not).
        _write_external(model, blobs, tmp_data, tmp, os.path.basename(tmp_data))
        if check:
            _check_written(model, tmp, locate, _write_proto)
        _relocate(model, os.path.basename(tmp_data), os.path.basename(data_path))
        _write_proto(model, tmp)


def _write_proto(model: onnx.ModelProto, path: str) -> None:
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def _unknown_outputs(model: onnx.ModelProto) -> List[int]:
    """The graph outputs of unknown rank: onnx.checker wants a shape for every graph output,
    while such an output has none (and onnxruntime runs it)."""
    return [i for i, v in enumerate(model.graph.output)
            if v.type.HasField("tensor_type") and not v.type.tensor_type.HasField("shape")]


def _check_written(model: onnx.ModelProto, path: str, locate: Optional[Locate],
                   write: Callable[[onnx.ModelProto, str], None]) -> None:
    """Check the model written at `path`; one with outputs of unknown rank is checked as a
    variant without those outputs, written beside it only to be checked."""
    unknown = _unknown_outputs(model)
    if not unknown:
        check_file(path, locate)
        return
    variant = onnx.ModelProto()
    variant.CopyFrom(model)
    for index in reversed(unknown):
        del variant.graph.output[index]
    with scratch_file(path) as scratch:
        write(variant, scratch)
        check_file(scratch, locate)


def _check_inline(model: onnx.ModelProto, blobs: List[Initializer], offsets: List[int],
                  path: str, locate: Optional[Locate]) -> None:
    """Check the model just written at `path` without parsing its weights a second time:
    onnx.checker reads the whole file into one ModelProto (about twice the model in
    memory), so it checks a copy of the graph, written beside it, whose large initializers
    are external data pointing at their raw bytes inside `path` (the policy above 2 GB:
    small ones, which shape inference reads, stay inline)."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for index in reversed(_unknown_outputs(probe)):
        del probe.graph.output[index]
    location = os.path.basename(path)
    for (name, array), offset in zip(blobs, offsets):
        if array.nbytes < EXTERNAL_MIN_BYTES:
            probe.graph.initializer.append(tensor_proto(name, array))
        else:
            probe.graph.initializer.append(_external_tensor(name, array, location, offset))
    with scratch_file(path) as scratch:
        _write_proto(probe, scratch)
        check_file(scratch, locate)


def _external_tensor(name: str, array: np.ndarray, location: str, offset: int) -> onnx.TensorProto:
    tensor = _tensor_header(name, array)
    tensor.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)),
                       ("length", str(array.nbytes))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


# Where onnx.checker's messages name a node, a value or a tensor.
_CHECKER_NAMES = (
    re.compile(r"node name: (.+?)\):"),              # shape inference: (op_type:X, node name: N):
    re.compile(r"[Nn]ame: (.+?) OpType: "),          # node checks: Name: N OpType: X
    re.compile(r"tensor name: (.+?)\)"),             # initializer checks
    re.compile(r"(?:input|output) '(.+?)'"),         # graph inputs/outputs, unsorted inputs
)


def checker_name(message: str) -> Optional[str]:
    """The node (or value) an `onnx.checker` message names, if any."""
    for pattern in _CHECKER_NAMES:
        match = pattern.search(message)
        if match:
            return match.group(1)
    return None


def check_file(path: str, locate: Optional[Locate] = None) -> None:
    """`onnx.checker.check_model(path, full_check=True)`; a rejection is a ConversionError
    (one line) naming the ONNX node and, through `locate`, where it came from."""
    try:
        onnx.checker.check_model(path, full_check=True)
    except Exception as exc:   # ValidationError, InferenceError and whatever else it raises
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        message = " ".join(lines) or type(exc).__name__
        if len(message) > 600:
            message = message[:600] + " ..."
        name = checker_name(str(exc))
        where = locate(name) if (locate is not None and name is not None) else {}
        if name is not None and not where:
            where = {"node": name}
        raise ConversionError(f"the ONNX model fails onnx.checker, nothing was written: "
                              f"{message}", node=where.get("node"), op_type=where.get("op_type"),
                              plugin=where.get("plugin")) from None


def _write_inline(model: onnx.ModelProto, blobs: List[Initializer], tmp_path: str) -> List[int]:
    """Write the model with `blobs` as initializers; return where each blob's raw bytes
    start in the file."""
    pieces = []
    for name, array in blobs:
        header = _tensor_header(name, array).SerializeToString()
        nbytes = array.nbytes
        tensor_len = len(header) + 1 + len(_varint(nbytes)) + nbytes
        prefix = _INITIALIZER_FIELD + _varint(tensor_len) + header + _RAW_DATA_FIELD + _varint(nbytes)
        pieces.append((prefix, array))
    graph_bytes = model.graph.SerializeToString()
    graph_len = len(graph_bytes) + sum(len(p) + a.nbytes for p, a in pieces)
    shell = onnx.ModelProto()
    shell.CopyFrom(model)
    shell.ClearField("graph")
    offsets = []
    with open(tmp_path, "wb") as f:
        f.write(shell.SerializeToString())
        f.write(_GRAPH_FIELD + _varint(graph_len))
        f.write(graph_bytes)
        for prefix, array in pieces:
            f.write(prefix)
            offsets.append(f.tell())
            _write_array(f, array)
    return offsets


def _write_array(f, array: np.ndarray) -> None:
    """Write `array`'s bytes in C order, little-endian. A view that is not C-contiguous (a
    filter the lowering transposed without copying the IR weights) is copied out one slice
    of its first axis at a time, so no whole copy of it is ever made."""
    if array.flags.c_contiguous or array.ndim < 2 or array.shape[0] < 2:
        f.write(_raw(array))
        return
    for part in array:
        f.write(_raw(part))


def _write_external(model: onnx.ModelProto, blobs: List[Initializer], data_path: str,
                    model_path: str, location: str) -> None:
    offset = 0
    with open(data_path, "wb") as data:
        for name, array in blobs:
            if array.nbytes < EXTERNAL_MIN_BYTES:
                # small tensors (shapes, axes) stay in the model: shape inference reads them
                model.graph.initializer.append(tensor_proto(name, array))
                continue
            pad = -offset % 4096
            data.write(b"\0" * pad)
            offset += pad
            _write_array(data, array)
            model.graph.initializer.append(_external_tensor(name, array, location, offset))
            offset += array.nbytes
    with open(model_path, "wb") as f:
        f.write(model.SerializeToString())


def _relocate(model: onnx.ModelProto, old: str, new: str) -> None:
    for tensor in model.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location" and entry.value == old:
                entry.value = new
