"""The fuzz harness's mutations (tools/fuzz.py): the pb kind's byte and wire-structure edits,
and the primitives under them (interesting values, varints) that the pbtxt kind's GraphDef
edits (tools/fuzz_mutate_graph.py) and the SavedModel mode (tools/fuzz_saved_model.py) reuse.
The ir kind's edits of IR text and weights are in tools/fuzz_mutate_ir.py."""

from __future__ import annotations

import random
import struct
from typing import Dict, List, Optional, Tuple

from tf2ir.tools.fuzz_core import Corpus

ODD_OPS = ("", "FuzzUnknownOp", "Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond",
           "PartitionedCall", "StatefulPartitionedCall", "If", "While", "IdentityN",
           "GeluFusion", "LayerNormFusion", "SwishFusion", "op\nwith newline", "Neg ", "relu")


INTERESTING_INTS = (0, 1, 2, 3, 4, 7, 8, 16, 64, 127, 128, 255, 256, 1023, 4096, 65535, 65536,
                    2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 40, 2 ** 62, 2 ** 63 - 1,
                    -1, -2, -3, -4, -128, -2 ** 31, -2 ** 63)
INTERESTING_FLOATS = (0.0, -0.0, 1.0, -1.0, 0.5, 1e-45, 1e-30, 1e30, 3.4e38, 1e300, float("inf"),
                      float("-inf"), float("nan"), 2.0 ** 31, -2.0 ** 63)


def _int(rng: random.Random) -> int:
    return rng.choice(INTERESTING_INTS) if rng.random() < 0.8 else rng.randint(-100, 100)


# -- pb: bytes and wire structure --------------------------------------------------------------
def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, pos: int, end: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("bad varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


class Wire:
    """A protobuf message as a tree of fields [number, wire type, value]: an int (varint),
    bytes (fixed, or a length-delimited leaf) or a list of fields (a nested message)."""

    @staticmethod
    def parse(data: bytes, start: int = 0, end: Optional[int] = None, depth: int = 0) -> list:
        end = len(data) if end is None else end
        fields, pos = [], start
        while pos < end:
            key, pos = _read_varint(data, pos, end)
            number, wire_type = key >> 3, key & 7
            if number == 0:
                raise ValueError("field 0")
            if wire_type == 0:
                value, pos = _read_varint(data, pos, end)
            elif wire_type in (1, 5):
                size = 8 if wire_type == 1 else 4
                value, pos = data[pos:pos + size], pos + size
            elif wire_type == 2:
                length, pos = _read_varint(data, pos, end)
                if pos + length > end:
                    raise ValueError("length past the end")
                value = data[pos:pos + length]
                if depth < 10 and length and length < 65536:
                    try:
                        value = Wire.parse(data, pos, pos + length, depth + 1)
                    except ValueError:
                        pass
                pos += length
            else:
                raise ValueError("wire type")
            if pos > end:
                raise ValueError("past the end")
            fields.append([number, wire_type, value])
        return fields

    @staticmethod
    def serialize(fields: list, lengths: Optional[Dict[int, int]] = None) -> bytes:
        out = bytearray()
        for f in fields:
            number, wire_type, value = f
            out += _varint((number << 3) | wire_type)
            if wire_type == 0:
                out += _varint(value if isinstance(value, int) else 0)
            elif wire_type == 2 or isinstance(value, list):
                payload = Wire.serialize(value, lengths) if isinstance(value, list) else bytes(value)
                length = (lengths or {}).get(id(f), len(payload))
                out += _varint(length) + payload
            else:
                out += bytes(value)
        return bytes(out)

    @staticmethod
    def all_fields(fields: list, out: Optional[list] = None, parent: Optional[list] = None) -> list:
        """Every field with the list that holds it: [(field, its parent list)]."""
        out = [] if out is None else out
        for f in fields:
            out.append((f, fields))
            if isinstance(f[2], list):
                Wire.all_fields(f[2], out, f[2])
        return out


def _bytes_leaf(value: bytes, rng: random.Random) -> bytes:
    choice = rng.randrange(6)
    buf = bytearray(value)
    if choice == 0 and buf:
        buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    elif choice == 1:
        buf = buf[:rng.randrange(len(buf) + 1)]
    elif choice == 2:
        buf += bytes(rng.randrange(256) for _ in range(rng.choice((1, 4, 8, 64))))
    elif choice == 3:
        return rng.choice((b"", b"\x00", b"\xff\xfe", b"a" * 300, b"SAME", b"VALID", b"NCHW",
                           b"EXPLICIT", b"x:0", b"^x", b"\xc3\x28", b"%", b"\n"))
    elif choice == 4:
        buf = buf * rng.choice((2, 3))
    else:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
    return bytes(buf)


def mutate_wire(data: bytes, rng: random.Random, corpus: Corpus, ops: List[str]) -> bytes:
    """Edits of the wire structure, re-serialized with consistent lengths (or one broken)."""
    try:
        tree = Wire.parse(data)
    except ValueError:
        return mutate_raw(data, rng, corpus, ops)
    fields = Wire.all_fields(tree)
    if not fields:
        return mutate_raw(data, rng, corpus, ops)
    lengths: Dict[int, int] = {}
    for _ in range(rng.choice((1, 1, 2, 3))):
        f, parent = rng.choice(fields)
        choice = rng.randrange(9)
        if choice == 0 and f[1] == 0:
            f[2] = _int(rng) if rng.random() < 0.9 else rng.randrange(1 << 64)
            ops.append("wire:varint")
        elif choice == 1 and f[1] in (1, 5):
            value = rng.choice(INTERESTING_FLOATS)
            f[2] = struct.pack("<d" if f[1] == 1 else "<f", value) if abs(value) < 3e38 or \
                f[1] == 1 or value != value or abs(value) == float("inf") else b"\xff\xff\x7f\x7f"
            ops.append("wire:fixed")
        elif choice == 2 and f[1] == 2 and not isinstance(f[2], list):
            f[2] = _bytes_leaf(f[2], rng)
            ops.append("wire:bytes")
        elif choice == 3 and _position(parent, f) is not None:
            del parent[_position(parent, f)]
            ops.append("wire:drop")
        elif choice == 4 and _position(parent, f) is not None:
            parent.insert(_position(parent, f) + rng.choice((0, 1)), _copy_field(f))
            ops.append("wire:repeat")
        elif choice == 5:
            _, other = rng.choice(fields)
            other.insert(rng.randrange(len(other) + 1), _copy_field(f))
            ops.append("wire:move")
        elif choice == 6:
            f[0] = max(1, f[0] + rng.choice((-2, -1, 1, 2, 7, 100)))
            ops.append("wire:number")
        elif choice == 7 and f[1] == 2:
            payload = Wire.serialize(f[2]) if isinstance(f[2], list) else f[2]
            lengths[id(f)] = max(0, len(payload) + rng.choice((-3, -1, 1, 2, 1000, 2 ** 31)))
            ops.append("wire:length")
        else:   # a field from another seed graph
            _, other_data = rng.choice(corpus.graphs)
            try:
                other = Wire.all_fields(Wire.parse(other_data))
            except ValueError:
                continue
            if other:
                parent.insert(rng.randrange(len(parent) + 1), _copy_field(rng.choice(other)[0]))
                ops.append("wire:transplant")
    return Wire.serialize(tree, lengths)


def _position(fields: list, f: list) -> Optional[int]:
    return next((i for i, g in enumerate(fields) if g is f), None)


def _copy_field(f: list) -> list:
    number, wire_type, value = f
    return [number, wire_type, [_copy_field(c) for c in value] if isinstance(value, list) else value]


def mutate_raw(data: bytes, rng: random.Random, corpus: Corpus, ops: List[str]) -> bytes:
    """Blind byte edits: flips, interesting bytes, truncation, insertion, deletion, range
    duplication, splicing with another seed."""
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3, 4))):
        n = len(buf)
        choice = rng.randrange(8)
        if choice == 0 and n:
            buf[rng.randrange(n)] ^= 1 << rng.randrange(8)
            ops.append("raw:flip")
        elif choice == 1 and n:
            buf[rng.randrange(n)] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, 0x08, 0x10, 0x12, 0x1A,
                                                0x22, 0x2A))
            ops.append("raw:byte")
        elif choice == 2:
            del buf[rng.randrange(n + 1):]
            ops.append("raw:truncate")
        elif choice == 3:
            pos = rng.randrange(n + 1)
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.choice((1, 2, 4, 8, 32))))
            ops.append("raw:insert")
        elif choice == 4 and n:
            start = rng.randrange(n)
            del buf[start:start + rng.choice((1, 2, 4, 16, 256))]
            ops.append("raw:delete")
        elif choice == 5 and n:
            start = rng.randrange(n)
            chunk = buf[start:start + rng.choice((2, 8, 64, 1024))]
            pos = rng.randrange(n + 1)
            buf[pos:pos] = chunk * rng.choice((1, 1, 2, 16))
            ops.append("raw:duplicate")
        elif choice == 6:
            _, other = rng.choice(corpus.graphs)
            buf = buf[:rng.randrange(n + 1)] + other[rng.randrange(len(other) + 1):]
            ops.append("raw:splice")
        else:
            pos = rng.randrange(n + 1)
            buf[pos:pos] = _varint(rng.choice(INTERESTING_INTS))
            ops.append("raw:varint")
    return bytes(buf)


def mutate_bytes(data: bytes, rng: random.Random, corpus: Corpus, ops: List[str]) -> bytes:
    if rng.random() < 0.7:
        return mutate_wire(data, rng, corpus, ops)
    return mutate_raw(data, rng, corpus, ops)
