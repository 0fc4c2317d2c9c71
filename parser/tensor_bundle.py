"""Reading a TensorFlow tensor-bundle checkpoint (a SavedModel's `variables/`) without
TensorFlow.

`variables.index` is a LevelDB-format table: data blocks of prefix-compressed key/value
entries (with restart points), an index block of BlockHandles (varint offset and size),
and a 48-byte footer (metaindex and index handles, padding, magic number). Each key is a
checkpoint key; its value a BundleEntryProto (dtype, shape, shard, offset, size, crc32c);
the key "" holds the BundleHeaderProto (shard count, endianness). The tensors' bytes lie in
`variables.data-SSSSS-of-NNNNN`, mapped with mmap, so a numeric tensor is a numpy view of
the file and never copied before the converter needs it.
"""

from __future__ import annotations

import mmap
import os
import struct
from typing import Dict, Iterator, List, Tuple

import numpy as np

from tf2ir.ir.errors import ConversionError
from tf2ir.parser.resources import NeedsTensorFlow

TABLE_MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48            # two BlockHandles padded to 40 bytes, then the 8-byte magic
BLOCK_TRAILER_SIZE = 5      # compression type byte + masked crc32
_MESSAGES = None


def bundle_messages():
    """(BundleHeaderProto, BundleEntryProto, SavedModel) message classes, built from a small
    descriptor over TensorBoard's compiled protos (TensorBoard ships no tensor_bundle or
    saved_model module). Enum fields are read as their varint numbers."""
    global _MESSAGES
    if _MESSAGES is not None:
        return _MESSAGES
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from tensorboard.compat.proto import meta_graph_pb2, tensor_shape_pb2  # noqa: F401 registers them
    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="tf2ir/parser/tensor_bundle.proto", package="tf2ir_bundle", syntax="proto3",
        dependency=["tensorboard/compat/proto/tensor_shape.proto",
                    "tensorboard/compat/proto/meta_graph.proto"])

    def message(name, *fields):
        msg = proto.message_type.add(name=name)
        for field_name, number, kind, label, type_name in fields:
            field = msg.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                field.type_name = type_name

    one, many = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    message("BundleHeaderProto", ("num_shards", 1, F.TYPE_INT32, one, ""),
            ("endianness", 2, F.TYPE_INT32, one, ""))
    message("BundleEntryProto", ("dtype", 1, F.TYPE_INT32, one, ""),
            ("shape", 2, F.TYPE_MESSAGE, one, ".tensorboard.TensorShapeProto"),
            ("shard_id", 3, F.TYPE_INT32, one, ""), ("offset", 4, F.TYPE_INT64, one, ""),
            ("size", 5, F.TYPE_INT64, one, ""), ("crc32c", 6, F.TYPE_FIXED32, one, ""),
            ("slices", 7, F.TYPE_BYTES, many, ""))
    message("SavedModel", ("saved_model_schema_version", 1, F.TYPE_INT64, one, ""),
            ("meta_graphs", 2, F.TYPE_MESSAGE, many, ".tensorboard.MetaGraphDef"))
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(proto.name)
    except KeyError:
        pool.Add(proto)
    names = ("BundleHeaderProto", "BundleEntryProto", "SavedModel")
    _MESSAGES = tuple(message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"tf2ir_bundle.{name}")) for name in names)
    return _MESSAGES


class _Unsupported(ValueError):
    """A valid table that tf2ir does not read (TensorFlow does)."""


def _varint(data, pos: int) -> Tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


class _Table:
    """The key/value entries of a LevelDB-format table held in memory."""

    def __init__(self, data: bytes):
        self.data = data
        if len(data) < FOOTER_SIZE:
            raise ValueError("shorter than a table footer")
        footer = data[-FOOTER_SIZE:]
        if struct.unpack("<Q", footer[-8:])[0] != TABLE_MAGIC:
            raise ValueError("bad table magic number")
        _, pos = self._handle(footer, 0)                  # metaindex: nothing TF puts there
        self.index = self._handle(footer, pos)[0]

    @staticmethod
    def _handle(data, pos: int) -> Tuple[Tuple[int, int], int]:
        offset, pos = _varint(data, pos)
        size, pos = _varint(data, pos)
        return (offset, size), pos

    def _block(self, handle: Tuple[int, int]) -> memoryview:
        offset, size = handle
        end = offset + size
        if end + BLOCK_TRAILER_SIZE > len(self.data):
            raise ValueError("block handle past the end of the file")
        kind = self.data[end]
        if kind != 0:
            raise _Unsupported(f"its table block is compressed (type {kind}); tf2ir reads "
                               "uncompressed tables, as TensorFlow writes them")
        return memoryview(self.data)[offset:end]

    @staticmethod
    def _entries(block: memoryview) -> Iterator[Tuple[bytes, memoryview]]:
        if len(block) < 4:
            raise ValueError("block too short")
        restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
        limit = len(block) - 4 - 4 * restarts
        if limit < 0:
            raise ValueError("bad restart count")
        pos, key = 0, b""
        while pos < limit:
            shared, pos = _varint(block, pos)
            unshared, pos = _varint(block, pos)
            size, pos = _varint(block, pos)
            if shared > len(key) or pos + unshared + size > limit:
                raise ValueError("bad block entry")
            key = key[:shared] + bytes(block[pos:pos + unshared])
            pos += unshared
            yield key, block[pos:pos + size]
            pos += size

    def items(self) -> Iterator[Tuple[bytes, memoryview]]:
        for _, handle in self._entries(self._block(self.index)):
            yield from self._entries(self._block(self._handle(handle, 0)[0]))


class TensorBundle:
    """A checkpoint's entries by key; `tensor(key)` reads one as a numpy array."""

    def __init__(self, prefix: str, model: str = "<checkpoint>"):
        self.prefix, self.model = prefix, model
        header_class, entry_class, _ = bundle_messages()
        index_path = prefix + ".index"
        try:
            with open(index_path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise ConversionError(f"cannot read the checkpoint index {index_path}: "
                                  f"{exc.strerror}", model=model) from None
        self.entries: Dict[str, object] = {}
        header = None
        try:
            for key, value in _Table(data).items():
                if key == b"":
                    header = header_class.FromString(bytes(value))
                else:
                    # slice entries (partitioned variables) have binary keys
                    name = key.decode("utf-8", "backslashreplace")
                    self.entries[name] = entry_class.FromString(bytes(value))
        except _Unsupported as exc:
            raise NeedsTensorFlow(f"checkpoint index {index_path}: {exc}", model=model) from None
        except Exception as exc:   # ValueError, DecodeError, UnicodeDecodeError
            raise ConversionError(f"{index_path} is not a TensorFlow checkpoint index: {exc}",
                                  model=model) from None
        if header is None:
            raise ConversionError(f"{index_path} has no bundle header", model=model)
        if header.endianness != 0:
            raise NeedsTensorFlow("the checkpoint is big-endian; tf2ir reads little-endian "
                                  "checkpoints", model=model)
        self.num_shards = max(1, header.num_shards)
        self._shards: Dict[int, mmap.mmap] = {}

    def _shard(self, shard: int) -> mmap.mmap:
        if shard not in self._shards:
            path = f"{self.prefix}.data-{shard:05d}-of-{self.num_shards:05d}"
            try:
                with open(path, "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    self._shards[shard] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) \
                        if size else b""
            except OSError as exc:
                raise ConversionError(f"cannot read checkpoint shard {path}: {exc.strerror}",
                                      model=self.model) from None
        return self._shards[shard]

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def tensor(self, key: str) -> Tuple[int, List[int], np.ndarray]:
        """(TF DataType enum, shape, numpy array) of checkpoint entry `key`; a numeric
        array is a read-only view of the mapped shard."""
        from tf2ir.parser.attrs import ir_dtype, numpy_dtype
        entry = self.entries.get(key)
        if entry is None:
            raise ConversionError(f"checkpoint has no entry '{key}'", model=self.model)
        if entry.slices:
            raise NeedsTensorFlow(f"checkpoint entry '{key}' is a partitioned (sliced) "
                                  "variable; tf2ir reads whole tensors only", model=self.model)
        shape = [int(d.size) for d in entry.shape.dim]
        try:
            dtype = ir_dtype(entry.dtype)
        except ConversionError as exc:
            raise ConversionError(f"checkpoint entry '{key}': {exc.message}",
                                  model=self.model) from None
        data = self._shard(entry.shard_id)
        if entry.offset < 0 or entry.offset + entry.size > len(data):
            raise ConversionError(f"checkpoint entry '{key}' lies past the end of its shard",
                                  model=self.model)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        view = memoryview(data)[entry.offset:entry.offset + entry.size]
        if dtype == "string":
            return entry.dtype, shape, _strings(view, count, key, self.model)
        np_dtype = numpy_dtype(dtype)
        if entry.size != count * np_dtype.itemsize:
            raise ConversionError(f"checkpoint entry '{key}' has {entry.size} bytes; shape "
                                  f"{shape} of {dtype} needs {count * np_dtype.itemsize}",
                                  model=self.model)
        return entry.dtype, shape, np.frombuffer(view, np_dtype, count).reshape(shape)


def _strings(view: memoryview, count: int, key: str, model: str) -> np.ndarray:
    """A string tensor's bytes: `count` varint lengths, a 4-byte checksum, then the strings."""
    try:
        lengths, pos = [], 0
        for _ in range(count):
            length, pos = _varint(view, pos)
            lengths.append(length)
        pos += 4
        values = []
        for length in lengths:
            if pos + length > len(view):
                raise ValueError("string past the end of the entry")
            values.append(bytes(view[pos:pos + length]))
            pos += length
    except ValueError as exc:
        raise ConversionError(f"checkpoint string entry '{key}' is malformed: {exc}",
                              model=model) from None
    out = np.empty(count, object)
    out[:] = values
    return out
