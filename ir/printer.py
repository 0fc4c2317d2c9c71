"""The writer of the IR's text form (what `print(graph)` shows and `tf2ir.ir.text.save`
writes); the format is described in `tf2ir.ir.text`. It reads graphs and never builds
them, so the graph module can use it without an import circle."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import numpy as np

from tf2ir.ir.prototype import OpPrototype, check_attr_value, infer_attr_type, prototypes_of
from tf2ir.ir.tensor import TensorDesc, dtype_of_numpy

if TYPE_CHECKING:
    from tf2ir.ir.graph import Graph, Node

MAGIC = "tf2ir-ir 1"
ALIGN = 64
BARE_NAME = re.compile(r"[A-Za-z0-9_./\-]+")


def _name(text: str) -> str:
    return text if BARE_NAME.fullmatch(text) else json.dumps(text)


def _desc_text(desc: TensorDesc) -> str:
    return str(desc)   # TensorDesc's own text form is the saved one


class _WeightsWriter:
    """Collects tensors in order; `write` puts them into one aligned binary file."""

    def __init__(self):
        self.chunks: List[Tuple[int, np.ndarray]] = []   # (offset, array)
        self.size = 0

    def add(self, array: np.ndarray) -> Dict[str, Any]:
        if array.dtype == np.object_:
            values = [v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in array.ravel()]
            return {"dtype": "string", "shape": list(array.shape), "values": values}
        offset = -(-self.size // ALIGN) * ALIGN
        self.chunks.append((offset, array))
        self.size = offset + array.nbytes
        return {"dtype": dtype_of_numpy(array.dtype), "shape": list(array.shape),
                "offset": offset, "nbytes": int(array.nbytes)}

    def write(self, path: str) -> None:
        with open(path, "wb") as f:
            pos = 0
            for offset, array in self.chunks:
                f.write(b"\0" * (offset - pos))
                f.write(np.ascontiguousarray(array).data)
                pos = offset + array.nbytes


def _attr_text(node: Node, name: str, value: Any, weights: _WeightsWriter,
               proto: Optional[OpPrototype]) -> str:
    spec = proto.attrs.get(name) if proto is not None else None
    kind = spec.type if spec is not None else infer_attr_type(value)
    if value is not None and kind != "tensor":
        try:  # write the plain Python value that loading gives back (1 → 1.0 for floats)
            value = check_attr_value(kind, value)
        except TypeError:
            pass
    if value is None:
        payload = "null"
    elif kind == "tensor":
        payload = json.dumps(weights.add(np.asarray(value)))
    elif kind in ("shape", "shapes"):
        payload = json.dumps(value if kind == "shape" else [None if s is None else list(s) for s in value])
    else:
        payload = json.dumps(list(value) if isinstance(value, tuple) else value)
    return f"{_name(name)}: {kind} {payload}"


def _graph_lines(graph: Graph, indent: str, weights: _WeightsWriter, head: str) -> List[str]:
    lines = [f"{indent}{head}graph {json.dumps(graph.name)} {{"]
    inner = indent + "  "
    table = prototypes_of(graph)
    for value in graph.inputs:
        lines.append(f"{inner}input %{_name(value.name)}: {_desc_text(value.desc)}")
    for node in graph.nodes:
        proto = table.find(node.op_type)
        ports = proto.input_names(len(node.inputs), node.attrs) if proto else []
        if len(ports) != len(node.inputs):
            ports = [f"in{i}" for i in range(len(node.inputs))]
        args = ", ".join(f"{p}={'_' if v is None else '%' + _name(v.name)}"
                         for p, v in zip(ports, node.inputs))
        attrs = ", ".join(_attr_text(node, k, v, weights, proto) for k, v in node.attrs.items())
        outs = ", ".join(f"%{_name(v.name)}: {_desc_text(v.desc)}" for v in node.outputs)
        lines.append(f"{inner}node {json.dumps(node.name)} {node.op_type}({args}) {{{attrs}}} -> {outs}")
        for key, sub in node.subgraphs.items():
            lines.extend(_graph_lines(sub, inner + "  ", weights, f"subgraph {json.dumps(key)} "))
    for value in graph.outputs:
        lines.append(f"{inner}output %{_name(value.name)}")
    lines.append(f"{indent}}}")
    return lines


def graph_to_text(graph: Graph, weights: Optional[_WeightsWriter] = None) -> str:
    """The text form of `graph` (tensor data only referenced, never printed)."""
    weights = weights or _WeightsWriter()
    return "\n".join([MAGIC] + _graph_lines(graph, "", weights, "")) + "\n"


