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
import os
import re
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.graph import Graph, Node, Value
from tf2ir.ir.printer import BARE_NAME, MAGIC, _WeightsWriter, graph_to_text
from tf2ir.ir.prototype import check_attr_value
from tf2ir.ir.tensor import FORMATS, TensorDesc, numpy_dtype

def weights_path(ir_path: str) -> str:
    return ir_path + ".weights"


def save(graph: Graph, path: str) -> None:
    """Write `path` (text) and `path.weights` (binary), each through a temp file and rename."""
    weights = _WeightsWriter()
    text = graph_to_text(graph, weights)
    wpath = weights_path(path)
    tmp_text, tmp_weights = path + ".tmp", wpath + ".tmp"
    try:
        with open(tmp_text, "w", encoding="utf-8") as f:
            f.write(text)
        weights.write(tmp_weights)
        os.replace(tmp_weights, wpath)
        os.replace(tmp_text, path)
    finally:
        for tmp in (tmp_text, tmp_weights):
            if os.path.exists(tmp):
                os.remove(tmp)


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

    def desc(self) -> TensorDesc:
        dtype = self.word()
        self.expect("[")
        if self.peek("*]"):
            self.pos += 2
            shape = None
        else:
            end = self.text.index("]", self.pos)
            dims = self.text[self.pos:end]
            self.pos = end + 1
            shape = tuple(None if d == "?" else int(d) for d in dims.split(",")) if dims else ()
        fmt = origin = "ND"
        self.ws()
        match = re.compile(r"([A-Z]+)(?: origin=([A-Z]+))?").match(self.text, self.pos)
        if match and match.group(1) in FORMATS:
            fmt = origin = match.group(1)
            origin = match.group(2) or fmt
            self.pos = match.end()
        return TensorDesc(dtype, shape, fmt, origin)

    def at_end(self) -> bool:
        self.ws()
        return self.pos >= len(self.text)


def _load_tensor(payload: Dict[str, Any], weights: Optional[np.ndarray]) -> np.ndarray:
    if payload["dtype"] == "string":
        values = [v.encode("latin-1") for v in payload["values"]]
        return np.array(values, dtype=object).reshape(payload["shape"])
    dtype = numpy_dtype(payload["dtype"])
    count = int(np.prod(payload["shape"], dtype=np.int64))
    if count == 0:
        return np.zeros(payload["shape"], dtype)
    if weights is None:
        raise ConversionError("a tensor attribute needs the weights file, which is missing "
                              "or empty")
    return np.frombuffer(weights, dtype, count, payload["offset"]).reshape(payload["shape"])


def load(path: str) -> Graph:
    """Read a graph saved by `save`; tensor attributes view the memory-mapped weights file."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConversionError(f"cannot read IR file: {exc}", model=path) from None
    if not lines or lines[0] != MAGIC:
        raise ConversionError(f"not a tf2ir IR file (first line must be {MAGIC!r})", model=path)
    wpath = weights_path(path)
    weights = None
    if os.path.exists(wpath) and os.path.getsize(wpath) > 0:
        weights = np.memmap(wpath, dtype=np.uint8, mode="r")
    stack: List[Tuple[Graph, Optional[Node], Optional[str]]] = []
    root: Optional[Graph] = None
    last_node: Dict[int, Node] = {}   # graph id → its last node (a subgraph's owner)
    for number, line in enumerate(lines[1:], start=2):
        cur = _Cursor(line, f"{path}, line {number}")
        if cur.at_end():
            continue
        if cur.peek("}"):
            graph, _, _ = stack.pop()
            continue
        key = None
        if cur.peek("subgraph"):
            cur.expect("subgraph")
            key = cur.json()
        if cur.peek("graph"):
            cur.expect("graph")
            graph = Graph(cur.json())
            cur.expect("{")
            if key is not None:
                owner = last_node.get(id(stack[-1][0])) if stack else None
                if owner is None:
                    raise cur.error("subgraph without a node")
                owner.subgraphs[key] = graph
                stack.append((graph, owner, key))
            else:
                root = graph
                stack.append((graph, None, None))
            continue
        if not stack:
            raise cur.error("statement outside a graph")
        graph = stack[-1][0]
        keyword = cur.word()
        if keyword == "input":
            cur.expect("%")
            name = cur.name()
            cur.expect(":")
            graph.add_input(name, cur.desc())
        elif keyword == "output":
            cur.expect("%")
            graph.outputs.append(_lookup(graph, stack, cur.name(), cur))
        elif keyword == "node":
            last_node[id(graph)] = _parse_node(cur, graph, stack, weights)
        else:
            raise cur.error(f"unknown statement {keyword!r}")
    if root is None or stack:
        raise ConversionError("IR file is incomplete (unbalanced braces)", model=path)
    return root


def _lookup(graph: Graph, stack, name: str, cur: _Cursor) -> Value:
    for g, _, _ in reversed(stack):
        if g.has_value(name):
            return g.value(name)
    raise cur.error(f"unknown value %{name}")


def _parse_node(cur: _Cursor, graph: Graph, stack, weights) -> Node:
    name = cur.json()
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
        cur.expect(":")
        kind = cur.word()
        payload = cur.json()
        if payload is None:
            attrs[key] = None
        elif kind == "tensor":
            attrs[key] = _load_tensor(payload, weights)
        elif kind == "shapes":
            attrs[key] = [None if s is None else tuple(s) for s in payload]
        else:
            try:
                attrs[key] = check_attr_value(kind, payload)
            except TypeError as exc:
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
