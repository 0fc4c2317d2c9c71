"""Defects the fuzz harness found, each as the smallest graph that shows it: the result is a
one-line ConversionError naming the node, quickly, instead of a hang or a memory blow-up."""

from __future__ import annotations

import time

import pytest
from tensorboard.compat.proto import graph_pb2

from tf2ir.ir import ConversionError
from tf2ir.parser.pipeline import convert_graph_def


def _graph(op, count_attr=None, count=None, batch_dims=None):
    g = graph_pb2.GraphDef()
    x = g.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    for d in (4, 6):
        x.attr["shape"].shape.dim.add().size = d
    axis = g.node.add(name="axis", op="Const")
    axis.attr["dtype"].type = 3
    axis.attr["value"].tensor.dtype = 3
    axis.attr["value"].tensor.int_val.append(1)
    if op == "Split":
        node = g.node.add(name="node", op="Split", input=["axis", "x"])
    elif op == "Unpack":
        node = g.node.add(name="node", op="Unpack", input=["x"])
    else:
        indices = g.node.add(name="indices", op="Const")
        indices.attr["dtype"].type = 3
        indices.attr["value"].tensor.dtype = 3
        indices.attr["value"].tensor.tensor_shape.dim.add().size = 2
        indices.attr["value"].tensor.int_val.extend([0, 1])
        node = g.node.add(name="node", op="GatherV2", input=["x", "indices", "axis"])
        node.attr["Tindices"].type = 3
        node.attr["Taxis"].type = 3
        node.attr["batch_dims"].i = batch_dims
    node.attr["T" if op != "GatherV2" else "Tparams"].type = 1
    if count_attr:
        node.attr[count_attr].i = count
    return g


@pytest.mark.parametrize("op, attr, count", [("Split", "num_split", 2 ** 31),
                                             ("Unpack", "num", 2 ** 63 - 1),
                                             ("Split", "num_split", -3)])
def test_a_huge_output_count_is_refused_at_once(op, attr, count):
    start = time.perf_counter()
    with pytest.raises(ConversionError) as info:
        convert_graph_def(_graph(op, attr, count), "m.pb", outputs=["node"])
    assert time.perf_counter() - start < 5
    assert "node 'node'" in str(info.value) and attr in str(info.value)


@pytest.mark.parametrize("batch_dims", [-2 ** 63, 2 ** 40, 3])
def test_gather_batch_dims_out_of_range_is_refused(batch_dims):
    with pytest.raises(ConversionError) as info:
        convert_graph_def(_graph("GatherV2", batch_dims=batch_dims), "m.pb", outputs=["node"])
    assert "batch_dims" in str(info.value) and "node 'node'" in str(info.value)
