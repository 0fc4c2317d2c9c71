"""The fuzz harness's mutations (tools/fuzz.py): the pb kind's byte and wire-structure edits,
the pbtxt kind's edits of a parsed GraphDef, the ir kind's edits of IR text and weights, and
the primitives under them (interesting values, varints) that the SavedModel mode
(tools/fuzz_saved_model.py) reuses."""

from __future__ import annotations

import random
import re
import struct
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from tf2ir.tools.fuzz_core import Corpus, _tensor_proto

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


# -- pbtxt: the parsed GraphDef ----------------------------------------------------------------
PORT_SUFFIXES = ("", "", ":0", ":1", ":2", ":9", ":-1", ":", ":x", ":notanumber",
                 ":99999999999999999999", ":1:2")
ATTR_KEYS = ("T", "dtype", "value", "shape", "N", "axis", "strides", "padding", "ksize",
             "data_format", "dilations", "keep_dims", "perm", "Tout", "Tin", "f", "num_split",
             "squeeze_dims", "transpose_a", "epsilon", "_output_shapes", "output_shapes",
             "out_type", "DstT", "then_branch", "body", "cond", "block_size", "explicit_paddings",
             "equation", "num", "batch_dims", "Tidx", "seq_dim", "shrink_axis_mask", "begin_mask")
DTYPE_ENUMS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 17, 18, 19, 20, 21, 22, 23, 24,
               101, 103, 110, 120, 200, -1, 2 ** 31 - 1)
STRINGS = (b"", b"SAME", b"VALID", b"EXPLICIT", b"NHWC", b"NCHW", b"NDHWC", b"NCDHW", b"REFLECT",
           b"SYMMETRIC", b"ij,jk->ik", b"...ij,...jk->...ik", b"ii->i", b"a,b->", b"bad",
           b"\xff\xfe", b"x\ny", b"%s%n", b"a" * 1000, b"RIGHT_LEFT", b"LEFT_RIGHT")


def _random_shape(rng: random.Random, proto) -> None:
    proto.Clear()
    choice = rng.randrange(6)
    if choice == 0:
        proto.unknown_rank = True
        return
    rank = rng.choice((0, 1, 2, 3, 4, 5, 6, 9, 33)) if choice != 1 else rng.randrange(1, 5)
    for _ in range(rank):
        proto.dim.add(size=rng.choice((1, 2, 3, 4, -1, -1, 0, -2, -7, 2 ** 31, 2 ** 40,
                                       2 ** 62, 10 ** 9, 100000)))


def _random_tensor(rng: random.Random, tensor) -> None:
    """Mutate a TensorProto in place: dtype, shape, content that agrees or not."""
    choice = rng.randrange(8)
    if choice == 0:
        tensor.dtype = rng.choice(DTYPE_ENUMS)
    elif choice == 1:
        _random_shape(rng, tensor.tensor_shape)
    elif choice == 2:   # a shape claiming many elements: TF fills from the last value
        tensor.ClearField("tensor_content")
        tensor.tensor_shape.Clear()
        for d in rng.choice(((2 ** 31,), (50000, 50000), (10 ** 9, 2), (4096, 4096, 64),
                             (100000,), (3, -1), (0, 10 ** 12))):
            tensor.tensor_shape.dim.add(size=d)
        tensor.float_val.append(1.0)
        tensor.int_val.append(1)
    elif choice == 3:
        content = tensor.tensor_content
        tensor.tensor_content = content[:rng.randrange(len(content) + 1)] if content else \
            bytes(rng.randrange(256) for _ in range(rng.choice((1, 3, 7, 64))))
    elif choice == 4:
        tensor.ClearField("tensor_content")
        for _ in range(rng.choice((1, 2, 5))):
            tensor.float_val.append(rng.choice(INTERESTING_FLOATS))
            tensor.int_val.append(max(-2 ** 31, min(2 ** 31 - 1, _int(rng))))
            tensor.int64_val.append(max(-2 ** 63, min(2 ** 63 - 1, _int(rng))))
            tensor.bool_val.append(rng.random() < 0.5)
            tensor.half_val.append(rng.randrange(65536))
    elif choice == 5:
        tensor.string_val.append(rng.choice(STRINGS))
    elif choice == 6:
        tensor.tensor_content += tensor.tensor_content or b"\x00" * 4
    else:
        tensor.dtype = rng.choice((1, 3, 7, 9, 10, 19))
        _random_shape(rng, tensor.tensor_shape)


def _random_attr(rng: random.Random, value, corpus: Corpus, names: Sequence[str],
                 functions: Sequence[str]) -> None:
    """Replace an AttrValue in place by a value of a random kind (or the same kind changed)."""
    which = value.WhichOneof("value")
    keep_kind = which is not None and rng.random() < 0.5
    kind = which if keep_kind else rng.choice(("s", "i", "f", "b", "type", "shape", "tensor",
                                               "list", "func", "placeholder", None))
    if kind == "tensor" and keep_kind:
        _random_tensor(rng, value.tensor)
        return
    if kind == "shape" and keep_kind:
        _random_shape(rng, value.shape)
        return
    if kind == "list" and keep_kind:
        lst = value.list
        for name in ("i", "f", "s", "type", "b"):
            items = getattr(lst, name)
            if len(items) and rng.random() < 0.5:
                if rng.random() < 0.4:
                    del items[rng.randrange(len(items)):]
                elif name == "i":
                    items[rng.randrange(len(items))] = _int(rng)
                    if rng.random() < 0.3:
                        items.extend([_int(rng)] * rng.choice((1, 2, 5)))
                elif name == "type":
                    items[rng.randrange(len(items))] = rng.choice(DTYPE_ENUMS) % 2 ** 31
                elif name == "f":
                    items.append(rng.choice(INTERESTING_FLOATS))
                return
        kind = "list"
    value.Clear()
    if kind == "s":
        value.s = rng.choice(STRINGS)
    elif kind == "i":
        value.i = _int(rng)
    elif kind == "f":
        value.f = rng.choice(INTERESTING_FLOATS)
    elif kind == "b":
        value.b = rng.random() < 0.5
    elif kind == "type":
        value.type = rng.choice(DTYPE_ENUMS) % 2 ** 31
    elif kind == "shape":
        _random_shape(rng, value.shape)
    elif kind == "tensor":
        _tensor_proto(np.asarray(rng.choice(([1, 2], 3.0, [[1.5]], np.zeros((2, 3), np.float32),
                                             True, ["a", "b"]))), value.tensor)
        if rng.random() < 0.5:
            _random_tensor(rng, value.tensor)
    elif kind == "list":
        lst = value.list
        lst.SetInParent()
        sub = rng.randrange(7)
        n = rng.choice((0, 1, 2, 3, 4, 5, 8))
        if sub == 0:
            lst.i.extend(_int(rng) if rng.random() < 0.4 else 1 for _ in range(n))
        elif sub == 1:
            lst.f.extend(rng.choice(INTERESTING_FLOATS) for _ in range(n))
        elif sub == 2:
            lst.s.extend(rng.choice(STRINGS) for _ in range(n))
        elif sub == 3:
            lst.type.extend(rng.choice(DTYPE_ENUMS) % 2 ** 31 for _ in range(n))
        elif sub == 4:
            for _ in range(n):
                _random_shape(rng, lst.shape.add())
        elif sub == 5:
            for _ in range(n):
                lst.func.add(name=rng.choice(list(functions) or ["nofn"]))
        else:
            lst.b.extend(rng.random() < 0.5 for _ in range(n))
    elif kind == "func":
        value.func.name = rng.choice(list(functions) + ["missing_fn", ""])
    elif kind == "placeholder":
        value.placeholder = rng.choice(("T", "", "dtype"))


def _node_lists(graph_def) -> list:
    """The repeated NodeDef fields: the graph's nodes and each function body's."""
    return [graph_def.node] + [f.node_def for f in graph_def.library.function]


def _input_ref(rng: random.Random, names: Sequence[str]) -> str:
    choice = rng.random()
    if choice < 0.05:
        return rng.choice(("missing", "", "^", "^missing", "x:0:0", "a/b:1"))
    name = rng.choice(names) if names else "missing"
    return ("^" if choice < 0.15 else "") + name + rng.choice(PORT_SUFFIXES)


def _add_function_call(graph_def, rng: random.Random, corpus: Corpus, node) -> str:
    """Give the graph a function (copied from a seed, or a fresh identity/self call) and
    make `node` call it."""
    from tensorboard.compat.proto import graph_pb2
    library = graph_def.library
    choice = rng.randrange(4)
    if choice == 0 or not len(library.function):
        donors = [d for n, d in corpus.graphs if n in ("PartitionedCall", "If", "While")]
        donor = graph_pb2.GraphDef()
        donor.ParseFromString(rng.choice(donors))
        for fdef in donor.library.function:
            if all(f.signature.name != fdef.signature.name for f in library.function):
                library.function.add().CopyFrom(fdef)
    if choice == 1:   # a function that calls itself, or one whose ret names nothing sensible
        fdef = library.function.add()
        fdef.signature.name = f"fuzz_fn_{len(library.function)}"
        fdef.signature.input_arg.add(name="a", type=1)
        fdef.signature.output_arg.add(name="r", type=rng.choice((1, 3, 0, 999)))
        inner = fdef.node_def.add(name="rec", op=rng.choice(("PartitionedCall", fdef.signature.name,
                                                             "Neg")), input=["a"])
        inner.attr["f"].func.name = fdef.signature.name
        inner.attr["Tout"].list.type.append(1)
        inner.attr["T"].type = 1
        fdef.ret["r"] = rng.choice(("rec:output:0", "rec:y:0", "rec:notanumber", "rec", "a",
                                    "missing:y:0", "rec:y:7", "", "rec:y:-1"))
    names = [f.signature.name for f in library.function]
    target = rng.choice(names)
    node.op = rng.choice(("PartitionedCall", "StatefulPartitionedCall", target, "If",
                          "StatelessWhile"))
    node.attr["f"].func.name = target
    for key in ("then_branch", "else_branch", "cond", "body"):
        if rng.random() < 0.3:
            node.attr[key].func.name = rng.choice(names)
    node.attr["Tout"].list.type.extend([1] * rng.choice((0, 1, 1, 2)))
    node.attr["Tin"].list.type.extend([1] * rng.choice((0, 1, 2)))
    return "proto:call"


def mutate_graph_def(data: bytes, rng: random.Random, corpus: Corpus,
                     ops: List[str]) -> Dict[str, bytes]:
    """Protobuf-level edits of a parsed GraphDef → {".pbtxt": text} (or {".pb": bytes})."""
    from google.protobuf import text_format
    from tensorboard.compat.proto import graph_pb2
    graph_def = graph_pb2.GraphDef()
    graph_def.ParseFromString(data)
    for _ in range(rng.choice((1, 1, 2, 2, 3, 4))):
        lists = [lst for lst in _node_lists(graph_def) if len(lst)]
        if not lists:
            break
        nodes = lists[0] if len(lists) == 1 or rng.random() < 0.7 else rng.choice(lists)
        names = [n.name for n in nodes]
        node = nodes[rng.randrange(len(nodes))]
        functions = [f.signature.name for f in graph_def.library.function]
        consts = [n for n in nodes if n.op == "Const"]
        choice = rng.randrange(16)
        if choice == 0:
            node.op = rng.choice(corpus.op_types) if rng.random() < 0.85 else rng.choice(ODD_OPS)
            ops.append("proto:op")
        elif choice == 1 and len(node.input):
            node.input[rng.randrange(len(node.input))] = _input_ref(rng, names + [node.name])
            ops.append("proto:rewire")
        elif choice == 2:
            node.input.insert(rng.randrange(len(node.input) + 1), _input_ref(rng, names))
            ops.append("proto:add-input")
        elif choice == 3 and len(node.input):
            del node.input[rng.randrange(len(node.input))]
            ops.append("proto:drop-input")
        elif choice == 4:
            nodes.remove(node)
            ops.append("proto:drop-node")
        elif choice == 5:
            copy = nodes.add()
            copy.CopyFrom(node)
            if rng.random() < 0.8:
                copy.name = node.name + "_dup"
            ops.append("proto:duplicate-node")
        elif choice == 6:
            node.name = rng.choice(names + ["", "a b", "x\ny", "n:0", "^n", "%v", "\u00e9", "/",
                                            "a" * 500, node.name + "/sub"])
            ops.append("proto:rename")
        elif choice == 7 and len(node.attr):
            del node.attr[rng.choice(sorted(node.attr))]
            ops.append("proto:drop-attr")
        elif choice in (8, 9):
            key = rng.choice(sorted(node.attr)) if len(node.attr) and rng.random() < 0.8 \
                else rng.choice(ATTR_KEYS)
            _random_attr(rng, node.attr[key], corpus, names, functions)
            ops.append(f"proto:attr:{key}")
        elif choice == 10 and consts:
            _random_tensor(rng, rng.choice(consts).attr["value"].tensor)
            ops.append("proto:const")
        elif choice == 11:
            target = [n for n in nodes if n.op == "Placeholder"] or [node]
            _random_shape(rng, rng.choice(target).attr["shape"].shape)
            ops.append("proto:shape")
        elif choice == 12:
            ops.append(_add_function_call(graph_def, rng, corpus, node))
        elif choice == 13:   # a node spliced in from another seed, its inputs rewired
            donor = graph_pb2.GraphDef()
            donor.ParseFromString(rng.choice(corpus.graphs)[1])
            if len(donor.node):
                new = nodes.add()
                new.CopyFrom(donor.node[rng.randrange(len(donor.node))])
                for i in range(len(new.input)):
                    new.input[i] = _input_ref(rng, names)
                if rng.random() < 0.5 and len(node.input):
                    node.input[rng.randrange(len(node.input))] = new.name
                ops.append("proto:splice")
        elif choice == 14:
            i, j = rng.randrange(len(nodes)), rng.randrange(len(nodes))
            a, b = nodes[i].SerializeToString(deterministic=True), nodes[j].SerializeToString(deterministic=True)
            nodes[i].ParseFromString(b)
            nodes[j].ParseFromString(a)
            ops.append("proto:swap")
        else:
            node.device = rng.choice(("/cpu:0", "\xff", ""))
            node.attr["_output_shapes"].list.shape.add().unknown_rank = True
            ops.append("proto:noise")
    if rng.random() < 0.3:
        ops.append("as:pb")
        return {".pb": graph_def.SerializeToString(deterministic=True)}
    text = text_format.MessageToString(graph_def)
    if rng.random() < 0.15:
        lines = text.split("\n")
        i = rng.randrange(len(lines))
        edit = rng.randrange(3)
        if edit == 0:
            del lines[i]
        elif edit == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        else:
            pos = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:pos] + rng.choice(("{", "}", '"', ":", "\\", " 1e999", "\x00",
                                                     "\u00e9", " -", "[", "]")) + lines[i][pos:]
        text = "\n".join(lines)
        ops.append("text:edit")
    return {".pbtxt": text.encode("utf-8", "surrogateescape")}


# -- ir: text and weights ---------------------------------------------------------------------
_IR_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|%[^\s,(){}\[\]:=]+|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?'
                       r'|[A-Za-z_][A-Za-z0-9_]*|->|\S')
IR_NUMBERS = ("0", "-1", "1", "2", "3", "-2", "64", "2147483647", "2147483648", "-2147483649",
              "4294967296", "9223372036854775807", "18446744073709551616", "99999999999999999999999",
              "1e308", "1e999", "NaN", "Infinity", "-Infinity", "-0", "0.5", "1e-400", "?", "null",
              "true", "[]", "{}", '""', "[1,2]")
IR_PIECES = ("{", "}", "(", ")", "[", "]", '"', ",", ":", "=", "%", "->", "_", "\\", "\x00",
             "\u00e9", "\ufffd", " ", "\t", "?", "*", "#", "\n", "subgraph ", "graph \"g\" {",
             "node ", "input ", "output ")
DTYPE_WORDS = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
               "uint8", "uint16", "uint32", "uint64", "bool", "string", "complex64", "complex128",
               "float", "int", "str", "ints", "floats", "tensor", "shapes", "dtype", "bool8", "")


def _mutate_ir_line(line: str, rng: random.Random, corpus: Corpus, ops: List[str]) -> str:
    tokens = list(_IR_TOKEN.finditer(line))
    choice = rng.randrange(6)
    if tokens and choice < 4:
        match = rng.choice(tokens)
        start, end = match.span()
        token = match.group()
        if choice == 0 and re.fullmatch(r"-?\d.*", token):
            new = rng.choice(IR_NUMBERS)
            ops.append("ir:number")
        elif choice == 1:
            new = rng.choice(corpus.ir_tokens)
            ops.append("ir:token")
        elif choice == 2:
            new = rng.choice(corpus.op_types) if rng.random() < 0.3 else \
                rng.choice(DTYPE_WORDS + IR_NUMBERS)
            ops.append("ir:word")
        else:
            new = rng.choice(("", token + token, token[:-1], token[1:]))
            ops.append("ir:token-edit")
        return line[:start] + new + line[end:]
    if choice == 4:   # dims of a desc
        spans = list(re.finditer(r"\[[^\]]*\]", line))
        if spans:
            m = rng.choice(spans)
            new = rng.choice(("[]", "[*]", "[?]", "[?,?]", "[-1]", "[0]", "[0,3]", "[1000000000,1000000000]",
                              "[2147483648]", "[1,2,3,4,5,6,7,8,9,10]", "[3,", "[a]", "[,]",
                              "[99999999999999999999]"))
            ops.append("ir:dims")
            return line[:m.start()] + new + line[m.end():]
    pos = rng.randrange(len(line) + 1)
    ops.append("ir:char")
    if line and rng.random() < 0.4:
        return line[:pos] + line[pos + 1:]
    return line[:pos] + rng.choice(IR_PIECES) + line[pos:]


def mutate_ir(text: str, weights: bytes, rng: random.Random, corpus: Corpus,
              ops: List[str]) -> Dict[str, bytes]:
    lines = text.split("\n")
    for _ in range(rng.choice((1, 1, 2, 2, 3, 4))):
        choice = rng.randrange(10)
        # mostly inside the graph: a broken header or graph line ends the parse at once
        inner = len(lines) > 4 and rng.random() < 0.9
        i = rng.randrange(2, len(lines) - 2) if inner else rng.randrange(len(lines)) if lines else 0
        if choice < 4 and lines:
            lines[i] = _mutate_ir_line(lines[i], rng, corpus, ops)
        elif choice == 4 and lines:
            del lines[i]
            ops.append("ir:drop-line")
        elif choice == 5 and lines:
            lines.insert(rng.randrange(len(lines) + 1), lines[i])
            ops.append("ir:repeat-line")
        elif choice == 6 and lines:
            j = rng.randrange(2, len(lines) - 2) if inner else rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            ops.append("ir:swap-lines")
        elif choice == 7:
            lines.insert(rng.randrange(2, len(lines) - 1) if inner else rng.randrange(len(lines) + 1),
                         rng.choice(corpus.ir_lines))
            ops.append("ir:foreign-line")
        else:
            edit = rng.randrange(6)
            weights = weights or b""
            if edit == 0:
                weights = weights[:rng.randrange(len(weights) + 1)]
            elif edit == 1:
                weights = b""
            elif edit == 2 and weights:
                buf = bytearray(weights)
                for _ in range(rng.choice((1, 4, 16))):
                    buf[rng.randrange(len(buf))] = rng.randrange(256)
                weights = bytes(buf)
            elif edit == 3:
                weights = weights + bytes(rng.choice((1, 3, 64, 4096)))
            elif edit == 4:
                weights = rng.choice(corpus.irs)[2]
            else:
                weights = None
            ops.append(f"ir:weights{edit}")
    files = {".ir": "\n".join(lines).encode("utf-8", "surrogateescape")}
    if weights is not None:
        files[".ir.weights"] = weights
    return files
