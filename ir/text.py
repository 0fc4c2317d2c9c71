"""The lossless text form of the IR, with weights in a separate binary file.

    tf2ir-ir 1
    graph "main" {
      input %x: float32[?,4] 
      node "mm" MatMul(a=%x, b=%w) {transpose_a: bool false} -> %mm: float32[?,3]
      output %mm
    }

Save, load and save again gives the same bytes. Tensor attributes are written to the
weights file at 64-byte aligned offsets and referenced as {"offset", "nbytes"}.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from tf2ir.ir.atomic import atomic_outputs
from tf2ir.ir.errors import ConversionError
from tf2ir.ir.graph import Graph, Node, Value
from tf2ir.ir.printer import BARE_NAME, MAGIC, _WeightsWriter, graph_to_text
from tf2ir.ir.prototype import check_attr_value
from tf2ir.ir.tensor import DTYPES, FORMATS, TensorDesc, numpy_dtype

def weights_path(ir_path: str) -> str:
    return ir_path + ".weights"


def save(graph: Graph, path: str) -> None:
    """Write `path` (text) and `path.weights` (binary) together: each to a unique temporary
    file beside it, both renamed only when both are complete (nothing is written on a
    failure)."""
    weights = _WeightsWriter()
    text = graph_to_text(graph, weights)
    with atomic_outputs([weights_path(path), path]) as (tmp_weights, tmp_text):
        weights.write(tmp_weights)
        with open(tmp_text, "w", encoding="utf-8") as f:
            f.write(text)


# -- loading -------------------------------------------------------------------
class _Cursor:
    def __init__(self, text: str, where: str):
        self.text, self.pos, self.where = text, 0, where
        self._json = json.JSONDecoder()

    def error(self, message: str) -> ConversionError:
        return ConversionError(f"{self.where}, column {self.pos + 1}: {message}")

    def ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def peek(self, literal: str) -> bool:
        self.ws()
        return self.text.startswith(literal, self.pos)

    def expect(self, literal: str) -> None:
        if not self.peek(literal):
            raise self.error(f"expected {literal!r}")
        self.pos += len(literal)

    def json(self) -> Any:
        self.ws()
        try:
            value, self.pos = self._json.raw_decode(self.text, self.pos)
        except json.JSONDecodeError as exc:
            raise self.error(f"bad JSON value: {exc.msg}") from None
        return value

    def name(self) -> str:
        self.ws()
        if self.peek('"'):
            return self.json()
        match = BARE_NAME.match(self.text, self.pos)
        if not match:
            raise self.error("expected a name")
        self.pos = match.end()
        return match.group()

    def word(self) -> str:
        self.ws()
        match = re.compile(r"[A-Za-z0-9_]+").match(self.text, self.pos)
        if not match:
            raise self.error("expected a word")
        self.pos = match.end()
        return match.group()

    def string(self, what: str) -> str:
        """A JSON string (a graph, node or subgraph name)."""
        value = self.json()
        if not isinstance(value, str):
            raise self.error(f"{what} must be a JSON string, not {json.dumps(value)[:40]}")
        return value

    def desc(self) -> TensorDesc:
        dtype = self.word()
        if dtype not in DTYPES:
            raise self.error(f"unknown dtype {dtype!r}")
        self.expect("[")
        if self.peek("*]"):
            self.pos += 2
            shape = None
        else:
            end = self.text.find("]", self.pos)
            if end < 0:
                raise self.error("expected ']' closing the shape")
            dims = self.text[self.pos:end]
            if not _DIMS.fullmatch(dims):
                raise self.error(f"bad shape [{dims}]: expected dims (numbers or ?) "
                                 "separated by commas")
            self.pos = end + 1
            shape = tuple(None if d == "?" else int(d) for d in dims.split(",")) if dims else ()
            if any(d is not None and d >= 1 << 63 for d in shape):
                raise self.error(f"bad shape [{dims}]: a dim beyond int64")
        fmt = origin = "ND"
        self.ws()
        match = re.compile(r"([A-Z]+)(?: origin=([A-Z]+))?").match(self.text, self.pos)
        if match and match.group(1) in FORMATS:
            fmt = origin = match.group(1)
            origin = match.group(2) or fmt
            if origin not in FORMATS:
                raise self.error(f"unknown origin format {origin!r}")
            self.pos = match.end()
        return TensorDesc(dtype, shape, fmt, origin)

    def at_end(self) -> bool:
        self.ws()
        return self.pos >= len(self.text)


_DIMS = re.compile(r"(?:(?:\?|[0-9]+)(?:,(?:\?|[0-9]+))*)?")


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _load_tensor(payload: Any, weights: Optional[np.ndarray]) -> np.ndarray:
    """The array a tensor attribute's payload describes; a malformed payload raises
    ValueError (the caller names the line)."""
    if not isinstance(payload, dict):
        raise ValueError("a tensor payload must be a JSON object")
    dtype_name, shape = payload.get("dtype"), payload.get("shape")
    if dtype_name not in DTYPES:
        raise ValueError(f"unknown dtype {dtype_name!r}")
    if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
        raise ValueError(f"bad shape {json.dumps(shape)[:60]}: expected a list of dims >= 0")
    count = math.prod(shape)
    if dtype_name == "string":
        values = payload.get("values")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ValueError("a string tensor needs \"values\", a list of strings")
        if len(values) != count:
            raise ValueError(f"{len(values)} values for shape {shape}")
        try:
            encoded = [v.encode("latin-1") for v in values]
        except UnicodeEncodeError:
            raise ValueError("string values must be latin-1 (bytes as saved)") from None
        array = np.empty(count, dtype=object)
        array[:] = encoded
        return array.reshape(shape)
    dtype = numpy_dtype(dtype_name)
    if count == 0:
        return np.zeros(shape, dtype)
    offset, nbytes = payload.get("offset"), payload.get("nbytes", count * dtype.itemsize)
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise ValueError("a tensor needs \"offset\", a byte offset >= 0 into the weights file")
    if nbytes != count * dtype.itemsize:
        raise ValueError(f"nbytes {nbytes} does not fit shape {shape} of {dtype_name}")
    if weights is None:
        raise ValueError("a tensor attribute needs the weights file, which is missing or empty")
    if offset + nbytes > len(weights):
        raise ValueError(f"the tensor's bytes {offset}..{offset + nbytes} lie beyond the end of "
                         f"the weights file ({len(weights)} bytes)")
    if offset % dtype.alignment:
        raise ValueError(f"offset {offset} is not aligned for {dtype_name}")
    return np.frombuffer(weights, dtype, count, offset).reshape(shape)


def load(path: str) -> Graph:
    """Read a graph saved by `save`; tensor attributes view the memory-mapped weights file."""
    if os.path.exists(path) and not os.path.isfile(path):   # a FIFO would block, /dev/zero never end
        raise ConversionError("not a regular file (a directory, FIFO or device); give an IR "
                              "file", model=path)
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConversionError(f"cannot read IR file: {exc}", model=path) from None
    if not lines or lines[0] != MAGIC:
        raise ConversionError(f"not a tf2ir IR file (first line must be {MAGIC!r})", model=path)
    wpath = weights_path(path)
    weights = None
    if os.path.isfile(wpath) and os.path.getsize(wpath) > 0:   # never a device or FIFO
        try:
            weights = np.memmap(wpath, dtype=np.uint8, mode="r")
        except (OSError, ValueError) as exc:
            raise ConversionError(f"cannot read the weights file {wpath}: {exc}",
                                  model=path) from None
    stack: List[Tuple[Graph, Optional[Node], Optional[str]]] = []
    root: Optional[Graph] = None
    last_node: Dict[int, Node] = {}   # graph id → its last node (a subgraph's owner)
    number = 1
    for number, line in enumerate(lines[1:], start=2):
        cur = _Cursor(line, f"{path}, line {number}")
        if cur.at_end():
            continue
        if root is not None and not stack:
            raise cur.error("text after the end of the graph")
        if cur.peek("}"):
            if not stack:
                raise cur.error("'}' closes no graph")
            stack.pop()
            cur.expect("}")
            if not cur.at_end():
                raise cur.error("unexpected text after '}'")
            continue
        key = None
        if cur.peek("subgraph"):
            cur.expect("subgraph")
            key = cur.string("a subgraph key")
        if cur.peek("graph"):
            cur.expect("graph")
            graph = Graph(cur.string("a graph name"))
            cur.expect("{")
            if key is not None:
                owner = last_node.get(id(stack[-1][0])) if stack else None
                if owner is None:
                    raise cur.error("subgraph without a node")
                if key in owner.subgraphs:
                    raise cur.error(f"node {owner.name!r} has two subgraphs {key!r}")
                owner.subgraphs[key] = graph
                stack.append((graph, owner, key))
            else:
                if stack:
                    raise cur.error("a graph inside a graph must be a node's subgraph")
                root = graph
                stack.append((graph, None, None))
            continue
        if key is not None:
            raise cur.error("expected 'graph' after the subgraph key")
        if not stack:
            raise cur.error("statement outside a graph")
        graph = stack[-1][0]
        keyword = cur.word()
        if keyword == "input":
            cur.expect("%")
            name = cur.name()
            cur.expect(":")
            desc = cur.desc()
            if graph.has_value(name):
                raise cur.error(f"duplicate value name %{name}")
            graph.add_input(name, desc)
        elif keyword == "output":
            cur.expect("%")
            graph.outputs.append(_lookup(graph, stack, cur.name(), cur))
        elif keyword == "node":
            last_node[id(graph)] = _parse_node(cur, graph, stack, weights)
        else:
            raise cur.error(f"unknown statement {keyword!r}")
        if not cur.at_end():
            raise cur.error("unexpected text at the end of the line")
    if root is None:
        raise ConversionError(f"{path}, line {number}: the file ends before any graph")
    if stack:
        raise ConversionError(f"{path}, line {number}: the file ends inside graph "
                              f"{stack[-1][0].name!r}: unbalanced braces (truncated?)")
    return root


def _lookup(graph: Graph, stack, name: str, cur: _Cursor) -> Value:
    for g, _, _ in reversed(stack):
        if g.has_value(name):
            return g.value(name)
    raise cur.error(f"unknown value %{name}")


def _parse_node(cur: _Cursor, graph: Graph, stack, weights) -> Node:
    name = cur.string("a node name")
    if graph.has_node(name):
        raise cur.error(f"duplicate node name {name!r}")
    op_type = cur.word()
    cur.expect("(")
    inputs: List[Optional[Value]] = []
    while not cur.peek(")"):
        cur.name()          # the port name is derived from the prototype again
        cur.expect("=")
        if cur.peek("_"):
            cur.expect("_")
            inputs.append(None)
        else:
            cur.expect("%")
            inputs.append(_lookup(graph, stack, cur.name(), cur))
        if cur.peek(","):
            cur.expect(",")
    cur.expect(")")
    cur.expect("{")
    attrs: Dict[str, Any] = {}
    while not cur.peek("}"):
        key = cur.name()
        if key in attrs:
            raise cur.error(f"duplicate attribute {key}")
        cur.expect(":")
        kind = cur.word()
        payload = cur.json()
        try:
            if payload is None:
                attrs[key] = None
            elif kind == "tensor":
                attrs[key] = _load_tensor(payload, weights)
            else:
                attrs[key] = check_attr_value(kind, payload)
        except (TypeError, ValueError, OverflowError) as exc:
            raise cur.error(f"attribute {key}: {exc}") from None
        if cur.peek(","):
            cur.expect(",")
    cur.expect("}")
    cur.expect("->")
    out_names, descs = [], []
    while not cur.at_end():
        cur.expect("%")
        out_names.append(cur.name())
        cur.expect(":")
        descs.append(cur.desc())
        if cur.peek(","):
            cur.expect(",")
    node = graph.add_node(op_type, inputs, attrs, name, output_names=out_names, output_descs=descs)
    if [v.name for v in node.outputs] != out_names:
        raise cur.error("duplicate value name among outputs")
    return node
