"""A view of a TF GraphDef: nodes by name, data and control inputs, attributes decoded
on demand. Plugins receive a `TfNode` as their `src`."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from tf2ir.ir import ConversionError
from tf2ir.parser.attrs import decode_attr


def graph_def_class():
    """The GraphDef message class: the compiled protos TensorBoard ships (TF's wire format,
    no TensorFlow import)."""
    from tensorboard.compat.proto import graph_pb2
    return graph_pb2.GraphDef


def split_tensor_name(name: str) -> Tuple[str, int]:
    """'node:1' → ('node', 1); 'node' → ('node', 0)."""
    node, sep, port = name.rpartition(":")
    if sep and port.isascii() and port.isdigit():
        return node, int(port)
    return name, 0


# The kinds TF gives the attributes of these names in every op that has them; another kind
# is a malformed node. (An empty list decodes as list_int and fits every list kind.)
_TYPE = ("type",)
ATTR_KINDS: Dict[str, Tuple[str, ...]] = {
    **{name: _TYPE for name in (
        "dtype", "DstT", "SrcT", "Tidx", "Tperm", "Tindices", "Tparams", "Tshape", "Tpaddings",
        "Tmultiples", "Taxis", "Tcond", "Tsplits", "index_type", "output_type", "Tlen")},
    **{name: ("type", "list_type") for name in ("T", "Tout", "Tin", "out_type")},
    "Targs": ("list_type",), "output_types": ("list_type",),
    "shape": ("shape",), "_output_shapes": ("list_shape",), "output_shapes": ("list_shape",),
    **{name: ("func",) for name in ("f", "then_branch", "else_branch", "cond", "body")},
    **{name: ("list_int",) for name in ("strides", "ksize", "dilations", "explicit_paddings")},
    **{name: ("string",) for name in ("padding", "data_format")},
    **{name: ("bool",) for name in ("transpose_a", "transpose_b", "adj_x", "adj_y", "keep_dims")},
    "N": ("int",),
}
OP_ATTR_KINDS: Dict[Tuple[str, str], Tuple[str, ...]] = {
    ("Const", "value"): ("tensor",),
    **{(op, attr): ("list_type",) for op in ("PartitionedCall", "StatefulPartitionedCall", "If",
                                              "StatelessIf", "While", "StatelessWhile")
       for attr in ("Tin", "Tout", "T")},
}
# Attributes without which a node of these op types means nothing.
REQUIRED_ATTRS: Dict[str, Tuple[str, ...]] = {"Const": ("value",), "Placeholder": ("dtype",)}
_KIND_TEXT = {"type": "a dtype", "list_type": "a list of dtypes", "shape": "a shape",
              "func": "a function", "string": "a string", "int": "an int", "float": "a float",
              "bool": "a bool", "tensor": "a tensor", "list_shape": "a list of shapes",
              "list_int": "a list of ints", "placeholder": "a placeholder", "none": "no value"}


def _check_kind(node: "TfNode", key: str, kind: str, value: Any) -> None:
    expected = OP_ATTR_KINDS.get((node.op_type, key)) or ATTR_KINDS.get(key)
    if expected is None or kind in expected:
        return
    if kind.startswith("list_") and value == [] and any(e.startswith("list_") for e in expected):
        return
    wanted = " or ".join(_KIND_TEXT.get(e, e) for e in expected)
    raise ConversionError(f"attribute '{key}' holds {_KIND_TEXT.get(kind, kind)}; it must be "
                          f"{wanted}", node=node.name, op_type=node.op_type)


class TfNode:
    """One NodeDef: name, op type, data inputs (as (node, port)), control inputs, attrs."""

    __slots__ = ("name", "op_type", "inputs", "control_inputs", "device", "_def", "_attrs", "_kinds")
    framework = "TENSORFLOW"    # the plugin manager's key with op_type (a TFLite Flex op's too)

    def __init__(self, node_def):
        self._def = node_def
        self.name: str = node_def.name
        self.op_type: str = node_def.op
        self.device: str = node_def.device
        self.inputs: List[Tuple[str, int]] = []
        self.control_inputs: List[str] = []
        for text in node_def.input:
            if text[:1] == "^":
                self.control_inputs.append(text[1:])
            elif ":" in text:
                self.inputs.append(split_tensor_name(text))
            else:   # the common case, without a call
                self.inputs.append((text, 0))
        self._attrs: Optional[Dict[str, Any]] = None
        self._kinds: Dict[str, str] = {}

    @property
    def attrs(self) -> Dict[str, Any]:
        """All attributes, decoded (TF strings as str, dtypes as IR dtype names). A value
        that does not decode, or whose kind is not the one TF gives an attribute of its name
        (ATTR_KINDS), or a missing REQUIRED_ATTRS one, is a ConversionError naming the node
        and the attribute."""
        if self._attrs is None:
            for key in REQUIRED_ATTRS.get(self.op_type, ()):
                if key not in self._def.attr:
                    raise ConversionError(f"attribute '{key}' is missing", node=self.name,
                                          op_type=self.op_type)
            attrs, kinds, attr_map = {}, self._kinds, self._def.attr
            for key in sorted(attr_map):
                try:
                    kind, value = decode_attr(attr_map[key])
                except ConversionError as exc:
                    raise ConversionError(f"attribute '{key}': {exc.message}", node=self.name,
                                          op_type=self.op_type,
                                          exit_code=exc.exit_code) from None
                if kind not in ATTR_KINDS.get(key, ()) or (self.op_type, key) in OP_ATTR_KINDS:
                    _check_kind(self, key, kind, value)   # not plainly the usual kind
                kinds[key], attrs[key] = kind, value
            self._attrs = attrs
        return self._attrs

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def attr_type(self, name: str) -> Optional[str]:
        """The TF kind of attribute `name`: int, float, bool, string, type, shape, tensor, list_*."""
        self.attrs
        return self._kinds.get(name)

    def has_attr(self, name: str) -> bool:
        return name in self._def.attr

    def attr_bytes(self, name: str) -> Optional[bytes]:
        """String attribute `name` as its bytes (`attrs` decodes strings as text, which loses
        a binary value such as a SentencePiece model); None when it has none."""
        value = self._def.attr[name] if name in self._def.attr else None
        return value.s if value is not None and value.WhichOneof("value") == "s" else None

    def __repr__(self) -> str:
        return f"<TfNode {self.op_type} '{self.name}'>"


SINK_EXCLUDED = ("NoOp", "Assert", "SaveV2", "RestoreV2", "Placeholder")


class TfGraph:
    """Nodes of a GraphDef by name, in file order, plus the function library."""

    framework = "TENSORFLOW"    # the framework of the model (parser/tflite_view.py: TFLITE)

    def __init__(self, graph_def, model: str = "<graph>"):
        self.model = model
        self.nodes: Dict[str, TfNode] = {}
        nodes = self.nodes
        for node_def in graph_def.node:
            node = TfNode(node_def)
            if not node.name or not node.op_type:
                raise ConversionError("not a TensorFlow GraphDef: a node has no name or op type",
                                      model=model)
            if node.name in nodes:
                raise ConversionError("duplicate node name", model=model, node=node.name)
            nodes[node.name] = node
        for node in nodes.values():
            for src, _ in node.inputs:
                if src not in nodes:
                    raise ConversionError(f"input '{src}' does not exist in the graph",
                                          model=model, node=node.name, op_type=node.op_type)
        self.library = graph_def.library

    def __getitem__(self, name: str) -> TfNode:
        return self.nodes[name]

    def bind(self, pipeline) -> None:
        """The pipeline that converts this graph (a TFLite view converts its subgraphs)."""

    def __contains__(self, name: str) -> bool:
        return name in self.nodes

    def consumers_count(self) -> Dict[str, int]:
        counts = {name: 0 for name in self.nodes}
        for node in self.nodes.values():
            for src, _ in node.inputs:
                counts[src] += 1
            for src in node.control_inputs:
                if src in counts:
                    counts[src] += 1
        return counts

    def sinks(self) -> List[str]:
        """Nodes nothing consumes (data or control), except NoOps and Placeholders (lowering
        TF control flow leaves unused ones): the default outputs."""
        counts = self.consumers_count()
        return [name for name, n in counts.items()
                if n == 0 and self.nodes[name].op_type not in SINK_EXCLUDED]

    def upstream(self, roots: List[str]) -> List[str]:
        """Names of the nodes the roots need through data inputs, in a topological order:
        the lexicographic one by file position (the file order where inputs come first)."""
        from tf2ir.ir.toposort import CycleError, find_cycle, lexicographic_order
        nodes = self.nodes
        names = list(nodes)
        order = {name: i for i, name in enumerate(names)}
        # One sweep from the end of the file: where every input of a needed node comes
        # before it (the usual GraphDef), this finds all needed nodes, and the order by file
        # position is the lexicographic topological order itself (linear, no heap).
        needed, in_file_order = set(roots), True
        for index in range(len(names) - 1, -1, -1):
            if names[index] in needed:
                for src, _ in nodes[names[index]].inputs:
                    if order[src] >= index:
                        in_file_order = False
                    needed.add(src)
        if in_file_order:
            return [name for name in names if name in needed]
        needed, stack = set(), list(roots)
        while stack:
            name = stack.pop()
            if name in needed:
                continue
            needed.add(name)
            stack.extend(src for src, _ in nodes[name].inputs)
        edges = [(src, name) for name in needed for src, _ in self.nodes[name].inputs]
        try:
            return lexicographic_order(needed, edges, key=order.__getitem__)
        except CycleError:
            cycle = find_cycle(needed, edges)
            raise ConversionError(
                f"the graph has a cycle through '{cycle[0][0]}' (TF1 control flow loops are "
                "not supported)", model=self.model, node=cycle[0][0],
                op_type=self.nodes[cycle[0][0]].op_type) from None
