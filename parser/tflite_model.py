"""Reading a TFLite flatbuffer without TensorFlow: subgraphs, tensors (shape and dynamic
`shape_signature`, quantization), buffers as numpy views of the file's bytes (no copy of the
weights), operator codes (builtin, custom, and the deprecated builtin code field), operator
options decoded to Python, signatures and metadata.

The schema's accessors are the `tflite` package's (generated from TFLite's schema by flatc, on
the `flatbuffers` runtime). A model is untrusted: every index it holds is checked, the file is
read bounded and only when it is a regular file, and anything malformed is one
ConversionError naming the model.
"""

from __future__ import annotations

import functools
import math
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from tf2ir.ir.errors import ConversionError
from tf2ir.parser.model_files import TFLITE_IDENTIFIER as IDENTIFIER
from tf2ir.parser.model_files import is_tflite_file, read_regular  # noqa: F401 (importable here)

# The largest .tflite file read (flatbuffers themselves stop at 2 GB; buffers stored after
# the flatbuffer, by offset, may take a model past it).
MAX_TFLITE_BYTES = 1 << 36

# TFLite's TensorType → IR dtype names (None: a type tf2ir has no tensor of)
DTYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 5: "string",
          6: "bool", 7: "int16", 8: "complex64", 9: "int8", 10: "float64", 11: "complex128",
          12: "uint64", 13: "resource", 14: "variant", 15: "uint32", 16: "uint16", 17: None,
          18: "bfloat16"}
_NUMPY = {"float32": np.float32, "float16": np.float16, "int32": np.int32, "uint8": np.uint8,
          "int64": np.int64, "bool": np.bool_, "int16": np.int16, "complex64": np.complex64,
          "int8": np.int8, "float64": np.float64, "complex128": np.complex128,
          "uint64": np.uint64, "uint32": np.uint32, "uint16": np.uint16}


@dataclass
class Quantization:
    """A quantized tensor's parameters: real = (q - zero_point) * scale, per tensor (one
    value each) or per channel along `axis`."""

    scale: np.ndarray          # float32, 1-D
    zero_point: np.ndarray     # int64, 1-D, as long as scale
    axis: int = 0

    @property
    def per_channel(self) -> bool:
        return self.scale.size > 1


@dataclass
class TensorInfo:
    index: int
    name: str
    dtype: Optional[str]                      # IR dtype name; None for INT4 and unknown types
    shape: Optional[Tuple[Optional[int], ...]]   # None dims: -1 in shape_signature
    data: Optional[np.ndarray] = None         # a constant's value (a view of the file)
    quantization: Optional[Quantization] = None
    is_variable: bool = False
    sparse: bool = False                      # the buffer holds a sparse encoding


@dataclass
class OperatorInfo:
    index: int
    op_type: str                              # builtin name (CONV_2D) or custom code
    version: int
    inputs: List[int]                         # tensor indices; -1: an optional input left out
    outputs: List[int]
    options: Dict[str, Any] = field(default_factory=dict)
    custom_options: Optional[bytes] = None
    intermediates: List[int] = field(default_factory=list)
    builtin: bool = True


@dataclass
class SubgraphInfo:
    index: int
    name: str
    tensors: List[TensorInfo]
    operators: List[OperatorInfo]
    inputs: List[int]
    outputs: List[int]


@dataclass
class SignatureInfo:
    key: str
    subgraph: int
    inputs: Dict[str, int]                    # signature name → tensor index
    outputs: Dict[str, int]


@dataclass
class TfLiteModel:
    path: str
    version: int
    description: str
    subgraphs: List[SubgraphInfo]
    signatures: List[SignatureInfo]
    metadata: Dict[str, bytes]
    data: bytes = field(default=b"", repr=False)   # the file's bytes (the buffers view them)


def read_tflite(path: str) -> TfLiteModel:
    data = read_regular(path, "TFLite model", path, MAX_TFLITE_BYTES)
    return parse_tflite(data, path)


def parse_tflite(data: bytes, model: str) -> TfLiteModel:
    """A .tflite file's bytes → TfLiteModel; one ConversionError when they are not one."""
    if len(data) < 8 or data[4:8] != IDENTIFIER:
        raise ConversionError("not a TFLite model (no TFL3 flatbuffer identifier)", model=model)
    import tflite
    try:
        root = tflite.Model.GetRootAs(data, 0)
        return _Reader(root, data, model).model()
    except ConversionError:
        raise
    except (IndexError, struct.error, ValueError, TypeError, UnicodeDecodeError,
            OverflowError) as exc:
        raise ConversionError(f"truncated or corrupt TFLite flatbuffer ({type(exc).__name__}: "
                              f"{str(exc)[:120]})", model=model) from None


class _Reader:
    def __init__(self, root, data: bytes, model: str):
        self.root, self.data, self.model_name = root, data, model
        self.view = memoryview(data)

    def fail(self, message: str):
        raise ConversionError(message, model=self.model_name)

    def model(self) -> TfLiteModel:
        root = self.root
        self.opcodes = [self.opcode(root.OperatorCodes(i)) for i in range(root.OperatorCodesLength())]
        self.buffers = root.BuffersLength()
        subgraphs = [self.subgraph(i, root.Subgraphs(i)) for i in range(root.SubgraphsLength())]
        if not subgraphs:
            self.fail("the TFLite model has no subgraphs")
        signatures = []
        for i in range(root.SignatureDefsLength()):
            sig = root.SignatureDefs(i)
            index = sig.SubgraphIndex()
            if not 0 <= index < len(subgraphs):
                self.fail(f"signature {i} names subgraph {index}, which does not exist")
            count = len(subgraphs[index].tensors)
            signatures.append(SignatureInfo(
                _text(sig.SignatureKey()), index,
                self.tensor_map(sig.Inputs, sig.InputsLength(), count),
                self.tensor_map(sig.Outputs, sig.OutputsLength(), count)))
        metadata = {}
        for i in range(root.MetadataLength()):
            entry = root.Metadata(i)
            data = self.buffer_data(entry.Buffer())
            metadata[_text(entry.Name())] = bytes(data) if data is not None else b""
        return TfLiteModel(self.model_name, root.Version(), _text(root.Description()),
                           subgraphs, signatures, metadata, self.data)

    def tensor_map(self, get, length: int, count: int) -> Dict[str, int]:
        found = {}
        for i in range(length):
            item = get(i)
            index = item.TensorIndex()
            if not 0 <= index < count:
                self.fail(f"a signature names tensor {index}, which does not exist")
            found[_text(item.Name())] = index
        return found

    def opcode(self, code) -> Tuple[str, bool, int]:
        import tflite
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == tflite.BuiltinOperator.CUSTOM:
            return _text(code.CustomCode()) or "CUSTOM", False, code.Version()
        name = _enum_name(tflite.BuiltinOperator, builtin)
        if name is None:
            self.fail(f"unknown TFLite builtin operator code {builtin}")
        return name, True, code.Version()

    def buffer_data(self, index: int) -> Optional[memoryview]:
        if index == 0:
            return None   # buffer 0 is the empty sentinel
        if not 0 <= index < self.buffers:
            self.fail(f"buffer {index} does not exist (the model has {self.buffers})")
        buf = self.root.Buffers(index)
        offset = buf.Offset()
        if offset > 1:   # stored after the flatbuffer (models over 2 GB)
            size = buf.Size()
            if offset + size > len(self.data):
                self.fail(f"buffer {index} lies past the end of the file")
            return self.view[offset:offset + size]
        length = buf.DataLength()
        if not length:
            return None
        start = buf._tab.Vector(buf._tab.Offset(4))
        if start + length > len(self.data):
            self.fail(f"buffer {index} lies past the end of the file")
        return self.view[start:start + length]

    def subgraph(self, index: int, sg) -> SubgraphInfo:
        tensors = [self.tensor(i, sg.Tensors(i)) for i in range(sg.TensorsLength())]
        count = len(tensors)

        def indices(get, length: int, what: str, optional: bool = False) -> List[int]:
            found = [int(get(i)) for i in range(length)]
            for t in found:
                if not (0 <= t < count or (optional and t == -1)):
                    self.fail(f"subgraph {index}: {what} names tensor {t}, which does not exist")
            return found
        operators = []
        for i in range(sg.OperatorsLength()):
            op = sg.Operators(i)
            code = op.OpcodeIndex()
            if not 0 <= code < len(self.opcodes):
                self.fail(f"subgraph {index}: operator {i} has opcode index {code}, which "
                          "does not exist")
            op_type, builtin, version = self.opcodes[code]
            info = OperatorInfo(
                i, op_type, version,
                indices(op.Inputs, op.InputsLength(), f"operator {i} ({op_type})", True),
                indices(op.Outputs, op.OutputsLength(), f"operator {i} ({op_type})", True),
                intermediates=indices(op.Intermediates, op.IntermediatesLength(),
                                      f"operator {i} ({op_type})", True),
                builtin=builtin)
            if builtin:
                info.options = decode_options(op)
            elif not op.CustomOptionsIsNone():
                info.custom_options = op.CustomOptionsAsNumpy().tobytes()
            elif op.LargeCustomOptionsOffset() > 1:
                start, size = op.LargeCustomOptionsOffset(), op.LargeCustomOptionsSize()
                if start + size > len(self.data):
                    self.fail(f"operator {i} ({op_type}): custom options past the file's end")
                info.custom_options = bytes(self.view[start:start + size])
            operators.append(info)
        return SubgraphInfo(index, _text(sg.Name()), tensors, operators,
                            indices(sg.Inputs, sg.InputsLength(), "its inputs"),
                            indices(sg.Outputs, sg.OutputsLength(), "its outputs"))

    def tensor(self, index: int, t) -> TensorInfo:
        dtype = DTYPES.get(t.Type())
        # An empty shape is a scalar, as TFLite's interpreter reads it; -1 in the shape
        # signature is a dynamic dimension.
        shape = tuple(int(d) for d in _ints(t, "Shape"))
        signature = _ints(t, "ShapeSignature")
        if len(signature) == len(shape):
            shape = tuple(None if s < 0 else d for d, s in zip(shape, signature))
        shape = tuple(None if d is not None and d < 0 else d for d in shape)
        info = TensorInfo(index, _text(t.Name()) or f"tensor_{index}", dtype, shape,
                          is_variable=bool(t.IsVariable()), sparse=t.Sparsity() is not None)
        q = t.Quantization()
        if q is not None and not q.ScaleIsNone() and q.ScaleLength():
            scale = np.asarray(q.ScaleAsNumpy(), dtype=np.float32)
            zero = (np.asarray(q.ZeroPointAsNumpy(), dtype=np.int64) if q.ZeroPointLength()
                    else np.zeros(scale.size, np.int64))
            if zero.size != scale.size:
                if zero.size == 1:
                    zero = np.full(scale.size, zero[0], np.int64)
                else:
                    self.fail(f"tensor '{info.name}': {scale.size} scales but {zero.size} "
                              "zero points")
            info.quantization = Quantization(scale, zero, int(q.QuantizedDimension()))
        data = self.buffer_data(t.Buffer())
        if data is not None and not info.sparse:
            info.data = self.array(info, data)
        return info

    def array(self, info: TensorInfo, data: memoryview) -> np.ndarray:
        if info.dtype == "string":
            return _strings(info, data, self)
        if info.dtype not in _NUMPY:
            self.fail(f"tensor '{info.name}': constants of type {info.dtype or 'INT4'} are not "
                      "supported")
        shape = tuple(d if d is not None else -1 for d in info.shape or ())
        array = np.frombuffer(data, dtype=_NUMPY[info.dtype])
        size = math.prod(shape)   # Python ints: no overflow
        if array.size != size or -1 in shape:
            self.fail(f"tensor '{info.name}': its buffer holds {array.size} values, its shape "
                      f"{list(info.shape or ())} needs {size}")
        return array.reshape(shape)


def _strings(info: TensorInfo, data: memoryview, reader: _Reader) -> np.ndarray:
    """TFLite's string buffer: int32 count, count+1 int32 offsets, then the bytes."""
    raw = bytes(data)
    if len(raw) < 4:
        reader.fail(f"tensor '{info.name}': a string buffer shorter than its header")
    count = struct.unpack_from("<i", raw, 0)[0]
    if count < 0 or 4 * (count + 2) > len(raw):
        reader.fail(f"tensor '{info.name}': a string buffer with a bad count {count}")
    offsets = struct.unpack_from(f"<{count + 1}i", raw, 4)
    if offsets[0] < 0 or any(b < a for a, b in zip(offsets, offsets[1:])) \
            or offsets[-1] > len(raw):
        reader.fail(f"tensor '{info.name}': a string buffer with bad offsets")
    values = np.empty(count, dtype=object)
    values[:] = [raw[a:b] for a, b in zip(offsets, offsets[1:])]
    shape = tuple(d or 0 for d in info.shape or ())
    if math.prod(shape) != count:
        reader.fail(f"tensor '{info.name}': {count} strings for shape {list(shape)}")
    return values.reshape(shape)


def _ints(t, field_name: str) -> List[int]:
    if getattr(t, field_name + "IsNone")():
        return []
    return [int(v) for v in getattr(t, field_name + "AsNumpy")()]


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


_ENUM_NAMES: Dict[type, Dict[int, str]] = {}


def _enum_name(enum_class, value: int) -> Optional[str]:
    names = _ENUM_NAMES.get(enum_class)
    if names is None:
        names = {v: k for k, v in vars(enum_class).items()
                 if not k.startswith("_") and isinstance(v, int)}
        _ENUM_NAMES[enum_class] = names
    return names.get(value)


# Option fields whose value is an enum: the field → the schema's enum
@functools.lru_cache(maxsize=None)
def _field_enums():
    import tflite
    return {
        "Padding": tflite.Padding, "FusedActivationFunction": tflite.ActivationFunctionType,
        "KernelType": tflite.LSTMKernelType, "Mode": tflite.MirrorPadMode,
        "Type": tflite.LSHProjectionType, "Combiner": tflite.CombinerType,
        "ReduceOp": getattr(tflite, "ReduceWindowFunction", None),
    }


_DTYPE_FIELDS = ("OutType", "OutputType", "InDataType", "OutDataType", "IdxOutType",
                 "QuantizedBiasType", "IndexOutType")
_SKIP = re.compile(r"^(GetRootAs.*|Init|.*BufferHasIdentifier|.*AsNumpy|.*Length|.*IsNone)$")
_OPTION_FIELDS: Dict[type, List[Tuple[str, str, str]]] = {}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def decode_options(op) -> Dict[str, Any]:
    """An operator's builtin options (and options 2) as {snake_case field: value}: enums by
    their schema names ("SAME", "RELU6"), tensor types as IR dtype names, vectors as lists,
    subgraph indices as ints."""
    import tflite
    attrs: Dict[str, Any] = {}
    for kind_get, table_get, union in ((op.BuiltinOptionsType, op.BuiltinOptions,
                                        tflite.BuiltinOptions),
                                       (op.BuiltinOptions2Type, op.BuiltinOptions2,
                                        getattr(tflite, "BuiltinOptions2", None))):
        if union is None:
            continue
        kind = kind_get()
        if not kind:
            continue
        class_name = _enum_name(union, kind)
        cls = getattr(tflite, class_name or "", None)
        table = table_get()
        if cls is None or table is None:
            continue
        options = cls()
        options.Init(table.Bytes, table.Pos)
        attrs.update(_decode_table(options, cls))
    return attrs


def _decode_table(options, cls) -> Dict[str, Any]:
    fields = _OPTION_FIELDS.get(cls)
    if fields is None:
        fields = []
        members = set(dir(cls))
        for name in sorted(members):
            if name.startswith("_") or _SKIP.match(name):
                continue
            kind = "vector" if name + "Length" in members else "scalar"
            fields.append((name, _snake(name), kind))
        _OPTION_FIELDS[cls] = fields
    enums = _field_enums()
    attrs: Dict[str, Any] = {}
    for name, key, kind in fields:
        if kind == "vector":
            if getattr(options, name + "IsNone")():
                attrs[key] = []
                continue
            attrs[key] = [v.item() if hasattr(v, "item") else v
                          for v in getattr(options, name + "AsNumpy")()]
            continue
        value = getattr(options, name)()
        if not isinstance(value, (int, float, bool, bytes, str)) and value is not None:
            continue   # a nested table (StableHLO options): not decoded
        if isinstance(value, bytes):
            value = _text(value)
        elif name in _DTYPE_FIELDS:
            value = DTYPES.get(value)
        elif name in enums and enums[name] is not None and not isinstance(value, bool):
            value = _enum_name(enums[name], value) or value
        attrs[key] = value
    return attrs
