"""The benchmark's generated graphs (tools/bench.py --generate): frozen GraphDefs of a given
size written without TensorFlow: a ladder of small MatMuls and elementwise ops, a constant
chain that folds away, and a wide graph of many outputs."""

from __future__ import annotations

import argparse
from typing import Tuple


def generate_ladder(path: str, nodes: int, width: int = 16, seed: int = 0) -> str:
    """Write a frozen GraphDef of about `nodes` nodes without TensorFlow: an input (None,
    width) through rungs of MatMul(h, W) + b -> Relu/Tanh -> + h (6 nodes with the Consts)."""
    import numpy as np
    from tensorboard.compat.proto import (attr_value_pb2, graph_pb2, tensor_pb2,
                                          tensor_shape_pb2, types_pb2)
    rng = np.random.RandomState(seed)
    dim = tensor_shape_pb2.TensorShapeProto.Dim
    graph = graph_pb2.GraphDef()

    def add(name, op, inputs=(), **attrs):
        node = graph.node.add(name=name, op=op, input=list(inputs))
        node.attr["dtype" if op in ("Const", "Placeholder") else "T"].type = types_pb2.DT_FLOAT
        for key, value in attrs.items():
            node.attr[key].CopyFrom(value)
        return name

    def const(name, array):
        tensor = tensor_pb2.TensorProto(
            dtype=types_pb2.DT_FLOAT, tensor_content=array.tobytes(),
            tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=[dim(size=d) for d in array.shape]))
        return add(name, "Const", value=attr_value_pb2.AttrValue(tensor=tensor))

    shape = tensor_shape_pb2.TensorShapeProto(dim=[dim(size=-1), dim(size=width)])
    h = add("input", "Placeholder", shape=attr_value_pb2.AttrValue(shape=shape))
    for i in range((nodes - 2) // 6):
        w = const(f"rung{i}/w", (rng.randn(width, width) / width).astype(np.float32))
        b = const(f"rung{i}/b", (rng.randn(width) * 0.1).astype(np.float32))
        m = add(f"rung{i}/matmul", "MatMul", [h, w])
        a = add(f"rung{i}/bias", "AddV2", [m, b])
        act = add(f"rung{i}/act", "Relu" if i % 2 else "Tanh", [a])
        h = add(f"rung{i}/residual", "AddV2", [act, h])
    add("Identity", "Identity", [h])
    return _write_graph(path, graph)


def _write_graph(path: str, graph) -> str:
    from tf2ir.ir.atomic import atomic_output
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(graph.SerializeToString())
    return path


def generate_chain(path: str, nodes: int) -> str:
    """A frozen GraphDef of a constant chain: c, AddV2(c, c), AddV2(that, c), ... `nodes`
    deep, added to an input at the end. Every link folds: constant folding must stay linear."""
    from tensorboard.compat.proto import graph_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
    graph = graph_pb2.GraphDef()
    x = graph.node.add(name="input", op="Placeholder")
    x.attr["dtype"].type = types_pb2.DT_FLOAT
    x.attr["shape"].shape.dim.add(size=4)
    c = graph.node.add(name="c", op="Const")
    c.attr["dtype"].type = types_pb2.DT_FLOAT
    c.attr["value"].tensor.CopyFrom(tensor_pb2.TensorProto(
        dtype=types_pb2.DT_FLOAT, float_val=[1, 2, 3, 4],
        tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=4)])))
    previous = "c"
    for i in range(nodes):
        link = graph.node.add(name=f"link{i}", op="AddV2", input=[previous, "c"])
        link.attr["T"].type = types_pb2.DT_FLOAT
        previous = link.name
    out = graph.node.add(name="Identity", op="AddV2", input=["input", previous])
    out.attr["T"].type = types_pb2.DT_FLOAT
    return _write_graph(path, graph)


def generate_wide(path: str, nodes: int) -> str:
    """A frozen GraphDef of `nodes` nodes with `nodes`/2 outputs: an input, then per output
    AddV2(input, input) -> Relu, every Relu a sink. Pruning and output handling must stay
    linear."""
    from tensorboard.compat.proto import graph_pb2, types_pb2
    graph = graph_pb2.GraphDef()
    x = graph.node.add(name="input", op="Placeholder")
    x.attr["dtype"].type = types_pb2.DT_FLOAT
    x.attr["shape"].shape.dim.add(size=-1)
    for i in range(nodes // 2):
        add = graph.node.add(name=f"add{i}", op="AddV2", input=["input", "input"])
        add.attr["T"].type = types_pb2.DT_FLOAT
        relu = graph.node.add(name=f"out{i}", op="Relu", input=[add.name])
        relu.attr["T"].type = types_pb2.DT_FLOAT
    return _write_graph(path, graph)


GENERATORS = {"ladder": generate_ladder, "chain": generate_chain, "wide": generate_wide}


def parse_generate(spec: str) -> Tuple[str, int]:
    """'20000' (a ladder), 'chain:20000', 'wide:200000' → (kind, nodes)."""
    kind, _, nodes = spec.rpartition(":")
    kind = kind or "ladder"
    if kind not in GENERATORS or not nodes.isdigit():
        raise argparse.ArgumentTypeError(f"bad --generate {spec!r}: NODES or KIND:NODES with "
                                         f"KIND one of {', '.join(GENERATORS)}")
    return kind, int(nodes)
