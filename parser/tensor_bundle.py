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

import math
import mmap
import os
import struct
from typing import Dict, Iterator, List, Optional, Tuple

import numpy as np

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.tensor import TENSOR_TYPES, numpy_dtype
from tf2ir.parser.attrs import TF_DTYPE_NAMES, TF_DTYPES
from tf2ir.parser.model_files import open_regular, read_regular
from tf2ir.parser.resources import NeedsTensorFlow

TABLE_MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48            # two BlockHandles padded to 40 bytes, then the 8-byte magic
BLOCK_TRAILER_SIZE = 5      # compression type byte + masked crc32c
MAX_INDEX_BYTES = 1 << 30   # an index of a million variables takes some 100 MB
MAX_RANK = 32
MASK_DELTA = 0xA282EAD8
_MESSAGES = None


def crc32c(data, crc: int = 0) -> int:
    """The crc32c of bytes-like `data` (a mapped shard's bytes too, uncopied), extending `crc`."""
    try:
        import google_crc32c
    except ImportError:
        raise ConversionError("checking checkpoint checksums needs the google-crc32c package "
                              "(pip install google-crc32c)") from None
    return google_crc32c.extend(crc, np.frombuffer(data, np.uint8))


def mask(crc: int) -> int:
    """A crc32c as TensorFlow (and LevelDB) store it: rotated right 15 bits, plus a delta."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + MASK_DELTA) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    rot = (masked - MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def bundle_messages():
    """(BundleHeaderProto, BundleEntryProto, SavedModel) message classes, built from a small
    descriptor over TensorBoard's compiled protos (TensorBoard ships no tensor_bundle or
    saved_model module). Enum fields are read as their varint numbers."""
    return _messages()[:3]


def _messages():
    """bundle_messages() and TensorSliceProto."""
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
    message("TensorSliceExtent", ("start", 1, F.TYPE_INT64, one, ""),
            ("length", 2, F.TYPE_INT64, one, ""))
    proto.message_type[-1].oneof_decl.add(name="has_length")
    proto.message_type[-1].field[1].oneof_index = 0
    message("TensorSliceProto",
            ("extent", 1, F.TYPE_MESSAGE, many, ".tf2ir_bundle.TensorSliceExtent"))
    message("SavedModel", ("saved_model_schema_version", 1, F.TYPE_INT64, one, ""),
            ("meta_graphs", 2, F.TYPE_MESSAGE, many, ".tensorboard.MetaGraphDef"))
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(proto.name)
    except KeyError:
        pool.Add(proto)
    names = ("BundleHeaderProto", "BundleEntryProto", "SavedModel", "TensorSliceProto")
    _MESSAGES = tuple(message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"tf2ir_bundle.{name}")) for name in names)
    return _MESSAGES


class _Unsupported(ValueError):
    """A valid table that tf2ir does not read (TensorFlow does)."""


class _ChecksumError(ValueError):
    """A table block whose crc32c does not match its bytes."""


def _varint(data, pos: int) -> Tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if result >> 64:
                raise ValueError("varint exceeds 64 bits")
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
        stored = struct.unpack_from("<I", self.data, end + 1)[0]
        if mask(crc32c(memoryview(self.data)[offset:end + 1])) != stored:
            raise _ChecksumError(f"checksum does not match in the table block at byte {offset}; "
                                 "the file is corrupt")
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
    """A checkpoint's entries by key; `tensor(key)` reads one as a numpy array, after checking
    every field it uses from the index against the shard and the entry's crc32c."""

    def __init__(self, prefix: str, model: str = "<checkpoint>", root: Optional[str] = None):
        """`root`: the directory the index and shards must resolve inside (the SavedModel's)."""
        self.prefix, self.model, self.root = prefix, model, root
        header_class, entry_class, _ = bundle_messages()
        index_path = prefix + ".index"
        data = read_regular(index_path, "checkpoint index", model, MAX_INDEX_BYTES, root)
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
        except _ChecksumError as exc:
            raise ConversionError(f"checkpoint index {index_path}: {exc}", model=model) from None
        except Exception as exc:   # ValueError, DecodeError, UnicodeDecodeError
            raise ConversionError(f"{index_path} is not a TensorFlow checkpoint index: {exc}",
                                  model=model) from None
        if header is None:
            raise ConversionError(f"{index_path} has no bundle header", model=model)
        if header.endianness != 0:
            raise NeedsTensorFlow("the checkpoint is big-endian; tf2ir reads little-endian "
                                  "checkpoints", model=model)
        if header.num_shards < 0:
            raise ConversionError(f"{index_path} says {header.num_shards} shards", model=model)
        self.num_shards = max(1, header.num_shards)
        self._shards: Dict[int, object] = {}
        self._checked: set = set()

    def shard_path(self, shard: int) -> str:
        return f"{self.prefix}.data-{shard:05d}-of-{self.num_shards:05d}"

    def _shard(self, shard: int):
        if shard not in self._shards:
            path = self.shard_path(shard)
            fd = open_regular(path, "checkpoint shard", self.model, self.root)
            try:
                size = os.fstat(fd).st_size
                self._shards[shard] = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if size else b""
            except OSError as exc:
                raise ConversionError(f"cannot read checkpoint shard {path}: {exc.strerror}",
                                      model=self.model) from None
            finally:
                os.close(fd)
        return self._shards[shard]

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def check_entry(self, key: str):
        """(entry, dtype name, shape, shard data, error maker) of entry `key`, after checking
        every field against the shard without reading the tensor: dtype, shape, shard, offset
        and size (a numeric tensor's size is its shape's), and its slices (a partitioned
        variable's: each a TensorSliceProto that fits the shape). TensorFlow is handed
        nothing these checks refuse (it aborts on malformed slices, allocates what a dim asks)."""
        entry = self.entries.get(key)
        if entry is None:
            raise ConversionError(f"checkpoint has no entry '{key}'", model=self.model)

        def bad(text: str) -> ConversionError:
            return ConversionError(f"checkpoint entry '{key}' {text}", model=self.model)
        dtype = TF_DTYPES.get(entry.dtype)
        if dtype is None or dtype not in TENSOR_TYPES:
            base = TF_DTYPES.get(entry.dtype - 100) if entry.dtype > 100 else None
            name = dtype or (base and base + "_ref") or TF_DTYPE_NAMES.get(
                entry.dtype, f"enum {entry.dtype}")
            raise bad(f"has dtype {name}, which tf2ir does not read from a checkpoint")
        if entry.shape.unknown_rank:
            raise bad("has an unknown rank")
        shape = [int(d.size) for d in entry.shape.dim]
        if any(d < 0 for d in shape):
            raise bad(f"has shape {shape}, with a negative dimension")
        if len(shape) > MAX_RANK or math.prod(d for d in shape if d) >= 1 << 58:
            raise bad(f"has shape {shape}, too large for a tensor")
        if not 0 <= entry.shard_id < self.num_shards:
            raise bad(f"names shard {entry.shard_id}; the checkpoint has {self.num_shards}")
        data = self._shard(entry.shard_id)
        if entry.offset < 0 or entry.size < 0 or entry.offset + entry.size > len(data):
            raise bad(f"(bytes {entry.offset}..{entry.offset + entry.size}) lies outside its "
                      f"shard {self.shard_path(entry.shard_id)} ({len(data)} bytes)")
        if entry.slices:
            _check_slices(entry.slices, shape, bad)
        elif dtype != "string" and entry.size != math.prod(shape) * numpy_dtype(dtype).itemsize:
            raise bad(f"has {entry.size} bytes; shape {shape} of {dtype} needs "
                      f"{math.prod(shape) * numpy_dtype(dtype).itemsize}")
        elif dtype == "string" and math.prod(shape) > entry.size:
            raise bad(f"is malformed: {math.prod(shape)} strings in {entry.size} bytes")
        return entry, dtype, shape, data, bad

    def check_all(self) -> None:
        """check_entry for every entry (before TensorFlow reads the checkpoint)."""
        for key in self.entries:
            self.check_entry(key)

    def tensor(self, key: str) -> Tuple[int, List[int], np.ndarray]:
        """(TF DataType enum, shape, numpy array) of checkpoint entry `key`; a numeric
        array is a read-only view of the mapped shard. A field of the entry that does not
        fit the shard (dtype, dims, shard, offset, size) or a crc32c that does not match its
        bytes is a ConversionError naming the entry."""
        entry, dtype, shape, data, bad = self.check_entry(key)
        if entry.slices:
            raise NeedsTensorFlow(f"checkpoint entry '{key}' is a partitioned (sliced) "
                                  "variable; tf2ir reads whole tensors only", model=self.model)
        count = math.prod(shape)
        view = memoryview(data)[entry.offset:entry.offset + entry.size]
        if dtype == "string":
            value, crc = _strings(view, count, bad)
        else:
            value = np.frombuffer(view, numpy_dtype(dtype), count).reshape(shape)
            crc = None if key in self._checked else crc32c(view)
        if key not in self._checked:
            if mask(crc) != entry.crc32c:
                raise bad(f"in {self.shard_path(entry.shard_id)}: checksum does not match "
                          f"(stored {unmask(entry.crc32c):#010x}, computed {crc:#010x}); "
                          "the file is corrupt")
            self._checked.add(key)
        return entry.dtype, shape, value


def _check_slices(slices, shape: List[int], bad) -> None:
    slice_class = _messages()[3]
    for index, raw in enumerate(slices):
        try:
            extents = slice_class.FromString(raw).extent
        except Exception:   # DecodeError
            raise bad(f"has a malformed slice {index} (not a TensorSliceProto)") from None
        if len(extents) != len(shape):
            raise bad(f"has slice {index} of rank {len(extents)} for shape {shape}")
        for dim, extent in zip(shape, extents):
            length = extent.length if extent.HasField("length") else dim - extent.start
            if extent.start < 0 or length < 0 or extent.start + length > dim:
                raise bad(f"has slice {index} ({extent.start}, {length}) outside shape {shape}")


def _strings(view: memoryview, count: int, bad) -> Tuple[np.ndarray, int]:
    """A string tensor's bytes: `count` varint lengths, the masked crc32c of the lengths, then
    the strings; → (array, crc32c as TensorFlow computes it: the lengths as little-endian
    uint32 (uint64 past 4 GiB), the 4 checksum bytes, the strings' bytes)."""
    if count > len(view):    # each length takes a byte at least
        raise bad(f"is malformed: {count} strings in {len(view)} bytes")
    try:
        lengths, pos = [], 0
        for _ in range(count):
            length, pos = _varint(view, pos)
            lengths.append(length)
    except ValueError as exc:
        raise bad(f"is malformed: {exc}") from None
    crc = crc32c(b"".join(struct.pack("<I" if n <= 0xFFFFFFFF else "<Q", n) for n in lengths))
    if pos + 4 > len(view):
        raise bad("is malformed: string past the end of the entry")
    if struct.unpack_from("<I", view, pos)[0] != mask(crc):
        raise bad("checksum does not match (the string lengths'); the file is corrupt")
    crc = crc32c(view[pos:pos + 4], crc)
    pos += 4
    if pos + sum(lengths) > len(view):
        raise bad("is malformed: string past the end of the entry")
    crc = crc32c(view[pos:pos + sum(lengths)], crc)
    values = []
    for length in lengths:
        values.append(bytes(view[pos:pos + length]))
        pos += length
    out = np.empty(count, object)
    out[:] = values
    return out, crc


def check_saved_model_checkpoint(path: str) -> None:
    """Before TensorFlow reads the SavedModel at `path`: every entry of its checkpoint
    checked as `TensorBundle.check_entry` does (what tf2ir cannot read, a compressed or
    big-endian index, is left to TensorFlow)."""
    prefix = os.path.join(path, "variables", "variables")
    if not os.path.lexists(prefix + ".index"):
        return
    try:
        bundle = TensorBundle(prefix, model=path, root=path)
    except NeedsTensorFlow:
        return
    bundle.check_all()
