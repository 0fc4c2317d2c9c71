"""The SavedModel fuzz mode's checkpoint index (tools/fuzz_saved_model.py): variables.index read
as the LevelDB-style table it is (blocks, restart points, crc32c), its BundleEntryProto
entries (and header) edited, and the table written again with right checksums, so that entry
edits reach the reader's entry code instead of its table checks."""

from __future__ import annotations

import random
import struct
from typing import List, Tuple

from tf2ir.tools.fuzz_mutate import _varint


# -- the checkpoint index as a table: read, edit its entries, write again ------------------------
def crc32c(data: bytes) -> int:
    try:
        import google_crc32c
        return google_crc32c.value(bytes(data))
    except ImportError:
        crc = 0xFFFFFFFF
        for byte in data:
            crc ^= byte
            for _ in range(8):
                crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
        return crc ^ 0xFFFFFFFF


def _masked(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _uvarint(data: bytes, pos: int) -> Tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("bad varint")
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def _block_entries(block: bytes) -> List[Tuple[bytes, bytes]]:
    count = struct.unpack_from("<I", block, len(block) - 4)[0]
    end = len(block) - 4 - 4 * count
    pos, key, out = 0, b"", []
    while pos < end:
        shared, pos = _uvarint(block, pos)
        unshared, pos = _uvarint(block, pos)
        size, pos = _uvarint(block, pos)
        key = key[:shared] + block[pos:pos + unshared]
        pos += unshared
        out.append((key, block[pos:pos + size]))
        pos += size
    return out


def read_table(data: bytes) -> List[Tuple[bytes, bytes]]:
    """A LevelDB table's (key, value) pairs (uncompressed blocks); ValueError if it is not one."""
    try:
        footer = data[-48:]
        _, pos = _uvarint(footer, 0)
        _, pos = _uvarint(footer, pos)
        offset, pos = _uvarint(footer, pos)
        size, pos = _uvarint(footer, pos)
        out = []
        for _, handle in _block_entries(data[offset:offset + size]):
            block_offset, p = _uvarint(handle, 0)
            block_size, _ = _uvarint(handle, p)
            out.extend(_block_entries(data[block_offset:block_offset + block_size]))
        return out
    except (struct.error, IndexError) as exc:
        raise ValueError(str(exc)) from None


def _block(entries: List[Tuple[bytes, bytes]]) -> bytes:
    body, restarts = bytearray(), []
    for key, value in entries:   # every entry a restart point: no shared prefixes
        restarts.append(len(body))
        body += _varint(0) + _varint(len(key)) + _varint(len(value)) + key + value
    restarts = restarts or [0]
    body += b"".join(struct.pack("<I", r) for r in restarts) + struct.pack("<I", len(restarts))
    return bytes(body)


def write_table(entries: List[Tuple[bytes, bytes]]) -> bytes:
    """A LevelDB table (one data block, block checksums right) holding `entries` in order."""
    out = bytearray()

    def put(block: bytes) -> bytes:
        handle = _varint(len(out)) + _varint(len(block))
        out.extend(block + b"\x00" + struct.pack("<I", _masked(crc32c(block + b"\x00"))))
        return handle
    data_handle = put(_block(entries))
    meta_handle = put(_block([]))
    index_handle = put(_block([(entries[-1][0] if entries else b"", data_handle)]))
    footer = meta_handle + index_handle
    out.extend(footer + b"\x00" * (40 - len(footer)) + struct.pack("<Q", 0xDB4775248B80FB57))
    return bytes(out)


BAD_DIMS = (-1, -2, -(2 ** 40), 2 ** 31, 2 ** 40, 2 ** 62, 2 ** 63 - 1, 0, 1, 3)
BAD_DTYPES = (0, 1, 3, 7, 9, 10, 14, 19, 20, 21, 23, 100, 101, 1000, -1)


def _mutate_entry(value: bytes, rng: random.Random, header: bool) -> Tuple[bytes, str]:
    from tf2ir.parser.tensor_bundle import bundle_messages
    header_class, entry_class, _ = bundle_messages()
    message = (header_class if header else entry_class)()
    message.ParseFromString(value)
    if header:
        field = rng.choice(("num_shards", "endianness"))
        setattr(message, field, rng.choice((0, -1, 1, 2, 99999, 2 ** 31 - 1)))
        return message.SerializeToString(deterministic=True), f"header.{field}"
    what = rng.choice(("dim", "dim", "dims", "dtype", "offset", "size", "shard", "crc", "slices"))
    if what == "dim" and message.shape.dim:
        rng.choice(message.shape.dim).size = rng.choice(BAD_DIMS)
    elif what in ("dim", "dims"):
        del message.shape.dim[:]
        for _ in range(rng.choice((0, 1, 2, 5, 40))):
            message.shape.dim.add(size=rng.choice(BAD_DIMS))
        message.shape.unknown_rank = rng.random() < 0.2
    elif what == "dtype":
        message.dtype = rng.choice(BAD_DTYPES)
    elif what in ("offset", "size"):
        setattr(message, what, rng.choice((-1, -(2 ** 62), 0, 1, 2 ** 31, 2 ** 62, 2 ** 63 - 1,
                                           getattr(message, what) + rng.choice((-4, -1, 1, 4)))))
    elif what == "shard":
        message.shard_id = rng.choice((-1, 1, 2, 99999))
    elif what == "crc":
        message.crc32c = rng.randrange(1 << 32)
    else:
        message.slices.append(bytes(rng.randrange(256) for _ in range(rng.randrange(12))))
    return message.SerializeToString(deterministic=True), f"entry.{what}"


def mutate_index_entries(data: bytes, rng: random.Random) -> Tuple[bytes, str]:
    """variables.index with one entry edited (its BundleEntryProto, the header, or its key:
    non-UTF-8, renamed, duplicated, dropped), written as a well-formed table again."""
    try:
        entries = read_table(data)
    except ValueError:
        return data, "entries:unreadable"
    if not entries:
        return data, "entries:none"
    index = rng.randrange(len(entries))
    key, value = entries[index]
    choice = rng.randrange(10)
    try:
        if choice < 6:
            value, what = _mutate_entry(value, rng, key == b"")
            entries[index] = (key, value)
        elif choice == 6:
            entries[index] = (key[:-1] + b"\xff\xfe" if key else b"\xff", value)
            what = "key:non-utf8"
        elif choice == 7:
            entries[index] = (key + rng.choice((b"x", b"/../x", b"\x00")), value)
            what = "key:renamed"
        elif choice == 8:
            del entries[index]
            what = "key:dropped"
        else:
            entries.insert(index, (key, value))
            what = "key:duplicated"
    except Exception:   # a value that does not parse as its message
        return data, "entries:unparsed"
    entries.sort(key=lambda kv: kv[0])
    return write_table(entries), what
