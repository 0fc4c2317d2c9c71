"""The fuzz harness's pbtxt mutations (tools/fuzz.py): edits of a parsed GraphDef (op types,
inputs, nodes, attributes, dtypes, shapes, Const contents, functions and calls), written
as .pbtxt text (sometimes edited as text) or as a binary .pb."""

from __future__ import annotations

import random
from typing import Dict, List, Sequence

import numpy as np

from tf2ir.tools.fuzz_core import Corpus, _tensor_proto
from tf2ir.tools.fuzz_mutate import INTERESTING_FLOATS, ODD_OPS, _int


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
