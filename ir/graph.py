"""Graph, Node and Value: use-def links are kept both ways by the graph's verbs."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import numpy as np

from tf2ir.ir.names import fresh_name
from tf2ir.ir.tensor import TensorDesc, dtype_of_numpy


class Value:
    """A tensor flowing in a graph: produced by one node output (or a graph input)."""

    __slots__ = ("name", "desc", "producer", "index", "uses")

    def __init__(self, name: str, desc: TensorDesc, producer: Optional["Node"] = None,
                 index: int = 0):
        self.name = name
        self.desc = desc
        self.producer = producer
        self.index = index
        self.uses: List[Tuple["Node", int]] = []   # (consumer, input position)

    @property
    def const_value(self) -> Optional[np.ndarray]:
        """The numpy value when a Const node produces this value, else None."""
        if self.producer is not None and self.producer.op_type == "Const":
            return self.producer.attrs["value"]
        return None

    def __repr__(self) -> str:
        return f"%{self.name}: {self.desc}"


class Node:
    """One IR operation: op type, ordered inputs (None for an absent optional input),
    outputs, typed attributes (a dict), and named subgraphs it owns."""

    __slots__ = ("name", "op_type", "inputs", "outputs", "attrs", "subgraphs", "graph")

    def __init__(self, graph: "Graph", name: str, op_type: str):
        self.graph = graph
        self.name = name
        self.op_type = op_type
        self.inputs: List[Optional[Value]] = []
        self.outputs: List[Value] = []
        self.attrs: Dict[str, Any] = {}
        self.subgraphs: Dict[str, "Graph"] = {}

    def input_desc(self, index: int) -> TensorDesc:
        """The desc of input `index`, which must be present (not an absent optional input)."""
        value = self.inputs[index]
        if value is None:
            raise ValueError(f"{self!r} has no input {index} (an absent optional input)")
        return value.desc

    def output_desc(self, index: int) -> TensorDesc:
        return self.outputs[index].desc

    def __repr__(self) -> str:
        return f"<Node {self.op_type} '{self.name}'>"


class ValueList(list):
    """A list (of graph outputs) that answers `value in it` by identity in constant time, so
    that graphs with very many outputs stay linear to convert. Appending keeps the index;
    other changes rebuild it when it is next asked."""

    def __init__(self, values: Iterable[Any] = ()):
        super().__init__(values)
        self._ids: Optional[Dict[int, int]] = None

    def _index(self) -> Dict[int, int]:
        if self._ids is None:
            ids: Dict[int, int] = {}
            for value in self:
                ids[id(value)] = ids.get(id(value), 0) + 1
            self._ids = ids
        return self._ids

    def __contains__(self, value: object) -> bool:
        return id(value) in self._index()

    def append(self, value: Any) -> None:
        super().append(value)
        if self._ids is not None:
            self._ids[id(value)] = self._ids.get(id(value), 0) + 1

    def extend(self, values: Iterable[Any]) -> None:
        super().extend(values)
        self._ids = None

    def __iadd__(self, values):  # type: ignore[misc]
        self.extend(values)
        return self

    def insert(self, *args) -> None:
        self._ids = None
        super().insert(*args)

    def remove(self, value: Any) -> None:
        self._ids = None
        super().remove(value)

    def pop(self, *args) -> Any:
        self._ids = None
        return super().pop(*args)

    def clear(self) -> None:
        self._ids = None
        super().clear()

    def __setitem__(self, index, value) -> None:
        self._ids = None
        super().__setitem__(index, value)

    def __delitem__(self, index) -> None:
        self._ids = None
        super().__delitem__(index)

    def __imul__(self, count):  # type: ignore[misc]
        self._ids = None
        return super().__imul__(count)


class Graph:
    """An ordered list of nodes with graph inputs and outputs; names are unique per graph."""

    def __init__(self, name: str = "main", prototypes: Any = None):
        self.name = name
        # The op prototype table this graph belongs to (a tf2ir.ir.prototype.PrototypeRegistry:
        # its pipeline's plugin manager's); None: the default table (`prototypes_of`).
        # Subgraphs without one take their owner's when they are attached.
        self.prototypes = prototypes
        self.nodes: List[Node] = []
        self.inputs: List[Value] = []
        self._outputs: ValueList = ValueList()
        self._names: Dict[str, Value] = {}
        self._node_names: set = set()
        self._insert_before: Optional[Node] = None   # where add_node puts nodes (None: the end)
        self._insert_hint = 0
        # node name → the plugin that mapped it (set by the conversion pipeline; empty for a
        # graph built by hand or loaded from text): errors found later name the plugin
        self.provenance: Dict[str, str] = {}

    @property
    def outputs(self) -> List[Value]:
        """The graph's outputs (a list; `value in graph.outputs` takes constant time)."""
        return self._outputs

    @outputs.setter
    def outputs(self, values: Iterable[Value]) -> None:
        self._outputs = ValueList(values)

    # -- creation --------------------------------------------------------------
    def unique_name(self, base: str, taken=None) -> str:
        """`base`, or `base_N` when a value (or a name of `taken`) has it."""
        return fresh_name(base, self._names if taken is None else taken)

    def _new_value(self, name: str, desc: TensorDesc, producer=None, index=0) -> Value:
        if name in self._names:
            name = self.unique_name(name)
        value = Value(name, desc, producer, index)
        self._names[name] = value
        return value

    def add_input(self, name: str, desc: TensorDesc) -> Value:
        value = self._new_value(name, desc)
        self.inputs.append(value)
        return value

    def add_node(self, op_type: str, inputs: Iterable[Optional[Value]] = (),
                 attrs: Optional[Dict[str, Any]] = None, name: Optional[str] = None,
                 num_outputs: int = 1, output_names: Optional[List[str]] = None,
                 output_descs: Optional[List[TensorDesc]] = None) -> Node:
        name = name or op_type
        if name in self._node_names:
            name = self.unique_name(name, self._node_names)
        node = Node(self, name, op_type)
        self._node_names.add(name)
        node.attrs = dict(attrs or {})
        # A plugin hands subgraphs over as Graph-valued attributes (IrOp.set_attr): the node
        # owns them as subgraphs, under the attribute's name.
        for key in [k for k, v in node.attrs.items() if isinstance(v, Graph)]:
            node.subgraphs[key] = self.adopt(node.attrs.pop(key))
        for value in inputs:
            self._append_input(node, value)
        if output_descs is not None:
            num_outputs = len(output_descs)
        for i in range(num_outputs):
            out_name = output_names[i] if output_names else (name if i == 0 else f"{name}:{i}")
            desc = output_descs[i] if output_descs else TensorDesc("float32")
            node.outputs.append(self._new_value(out_name, desc, node, i))
        self._place(node)
        return node

    def add_const(self, array: np.ndarray, name: str = "Const", fmt: str = "ND") -> Value:
        array = np.asarray(array)
        desc = TensorDesc(dtype_of_numpy(array.dtype), tuple(array.shape), fmt, fmt)
        return self.add_node("Const", (), {"value": array}, name, output_descs=[desc]).outputs[0]

    def _append_input(self, node: Node, value: Optional[Value]) -> None:
        if value is not None:
            value.uses.append((node, len(node.inputs)))
        node.inputs.append(value)

    def adopt(self, sub: "Graph") -> "Graph":
        """`sub` (a subgraph of one of this graph's nodes), given this graph's prototype
        table where it (or a graph nested in it) has none of its own; returns `sub`."""
        if self.prototypes is not None:
            sub.use_prototypes(self.prototypes, keep=True)
        return sub

    def use_prototypes(self, table: Any, keep: bool = False) -> None:
        """Make `table` this graph's prototype table and its subgraphs' (nested ones too);
        with `keep`, a graph that has a table keeps it (and gives it to its own subgraphs)."""
        if not (keep and self.prototypes is not None):
            self.prototypes = table
        for node in self.nodes:
            for sub in node.subgraphs.values():
                sub.use_prototypes(self.prototypes, keep)

    # -- insertion points ---------------------------------------------------------
    @contextmanager
    def inserting_before(self, node: Optional[Node]) -> Iterator[None]:
        """Within the block, add_node puts new nodes before `node` (in the order they are
        added); with None, at the end."""
        saved = self._insert_before
        self._insert_before = node
        try:
            yield
        finally:
            self._insert_before = saved

    def inserting_after(self, node: Node):
        """Within the block, add_node puts new nodes after `node` (in the order they are
        added)."""
        index = self.nodes.index(node)
        return self.inserting_before(self.nodes[index + 1] if index + 1 < len(self.nodes) else None)

    def _place(self, node: Node) -> None:
        anchor = self._insert_before
        if anchor is None:
            self.nodes.append(node)
            return
        # The anchor moves one step per insertion: remember where it was.
        i = self._insert_hint
        if not (i < len(self.nodes) and self.nodes[i] is anchor):
            i = self.nodes.index(anchor)
        self.nodes.insert(i, node)
        self._insert_hint = i + 1

    # -- mutation verbs --------------------------------------------------------
    def set_input(self, node: Node, index: int, value: Optional[Value]) -> None:
        old = node.inputs[index]
        if old is not None:
            old.uses.remove((node, index))
        if value is not None:
            value.uses.append((node, index))
        node.inputs[index] = value

    def replace_all_uses_with(self, old: Value, new: Value) -> None:
        if old is new:  # moving uses onto the same list would clear it
            return
        for node, index in list(old.uses):
            node.inputs[index] = new
            new.uses.append((node, index))
        old.uses.clear()
        if old in self.outputs:
            self.outputs = [new if v is old else v for v in self.outputs]

    def erase_node(self, node: Node) -> None:
        for out in node.outputs:
            if out.uses or out in self.outputs:
                raise ValueError(f"cannot erase node '{node.name}': its output {out.name} is used")
        for index, value in enumerate(node.inputs):
            if value is not None:
                value.uses.remove((node, index))
        for out in node.outputs:
            del self._names[out.name]
        self._node_names.discard(node.name)
        self.nodes.remove(node)

    def erase_nodes(self, nodes: Iterable[Node],
                    placed: Optional[Dict[int, List[Node]]] = None) -> None:
        """Erase `nodes` as `erase_node` would, in one pass over the graph (linear in its
        size, where erasing one by one is quadratic). `placed` maps the id of an erased node
        to nodes of this graph that take its place in the node order (moved there)."""
        dead = {id(node): node for node in nodes}
        if not dead:
            return
        for node in dead.values():
            for out in node.outputs:
                if any(id(user) not in dead for user, _ in out.uses) or out in self.outputs:
                    raise ValueError(f"cannot erase node '{node.name}': its output {out.name} "
                                     "is used")
        touched: Dict[int, Value] = {}
        for node in dead.values():
            for value in node.inputs:
                if value is not None:
                    touched[id(value)] = value
        for value in touched.values():
            value.uses = [use for use in value.uses if id(use[0]) not in dead]
        for node in dead.values():
            for out in node.outputs:
                if self._names.get(out.name) is out:
                    del self._names[out.name]
            self._node_names.discard(node.name)
        placed = placed or {}
        moved = {id(n) for group in placed.values() for n in group}
        order: List[Node] = []
        for node in self.nodes:
            if id(node) in dead:
                order.extend(placed.get(id(node), ()))
            elif id(node) not in moved:
                order.append(node)
        self.nodes = order

    def rename_value(self, value: Value, name: str) -> None:
        if self._names.get(name) is value:
            return
        if name in self._names:
            raise ValueError(f"value name {name!r} is taken")
        del self._names[value.name]
        value.name = name
        self._names[name] = value

    # -- queries ---------------------------------------------------------------
    def value(self, name: str) -> Value:
        return self._names[name]

    def has_value(self, name: str) -> bool:
        return name in self._names

    def has_node(self, name: str) -> bool:
        """Whether a node of this graph is named `name`."""
        return name in self._node_names

    def values(self) -> Iterator[Value]:
        return iter(self._names.values())

    def toposort(self) -> None:
        """Order nodes so every producer precedes its consumers (stable for sorted input)."""
        from tf2ir.ir.toposort import CycleError, lexicographic_order
        order = {id(n): i for i, n in enumerate(self.nodes)}
        # A subgraph may read values of an enclosing graph: no edge within this one.
        edges = [(order[id(value.producer)], i) for i, node in enumerate(self.nodes)
                 for value in node.inputs if value is not None and id(value.producer) in order]
        try:
            ranks = lexicographic_order(range(len(self.nodes)), edges)
        except CycleError:
            raise ValueError(f"graph {self.name!r} has a cycle") from None
        self.nodes = [self.nodes[i] for i in ranks]

    def is_topologically_sorted(self) -> bool:
        seen = set()
        for node in self.nodes:
            for value in node.inputs:
                if value is not None and value.producer is not None \
                        and value.producer.graph is self and id(value.producer) not in seen:
                    return False
            seen.add(id(node))
        return True

    def __str__(self) -> str:
        from tf2ir.ir.printer import graph_to_text
        return graph_to_text(self)


def clone_graph(graph: Graph, mapped: Optional[Dict[int, Value]] = None) -> Graph:
    """A deep copy of `graph` (nested subgraphs too) with the same names and descs; values
    of enclosing graphs that it reads stay shared. Attribute values are shared (read-only)."""
    mapped = {} if mapped is None else mapped
    copy = Graph(graph.name, graph.prototypes)

    for value in graph.inputs:
        mapped[id(value)] = copy.add_input(value.name, value.desc.copy())
    for node in graph.nodes:
        inputs = [None if v is None else mapped.get(id(v), v) for v in node.inputs]
        new = copy.add_node(node.op_type, inputs, dict(node.attrs), node.name,
                            output_names=[v.name for v in node.outputs],
                            output_descs=[v.desc.copy() for v in node.outputs])
        for old, value in zip(node.outputs, new.outputs):
            mapped[id(old)] = value
        new.subgraphs = {key: clone_graph(sub, mapped) for key, sub in node.subgraphs.items()}
    copy.outputs = [mapped.get(id(v), v) for v in graph.outputs]
    return copy
