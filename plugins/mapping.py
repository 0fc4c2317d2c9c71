"""What a parse-params function works on (`IrOp`) and `auto_mapping`.

Auto mapping rule for TF attributes: names starting with `_` (`_output_shapes`,
`_class`, ...) are TF-internal and dropped; dtype-valued attributes (`T`, `Tidx`,
`out_type`, ...) are dropped unless the IR op declares them, since dtypes live on the
tensors; attributes the IR op declares are converted to the declared type; every other
TF attribute is appended unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from tf2ir.ir import ConversionError, Graph, TensorDesc, Value
from tf2ir.ir.prototype import OpPrototype, check_attr_value, prototypes_of
from tf2ir.plugins.tfnode import TfNode


# The most ports a dynamic group may expand to (Split's num_split, Unpack's num, ...): a
# corrupt count must not make millions of IR values.
MAX_DYNAMIC_PORTS = 1 << 16


class IrOp:
    """The IR node a plugin fills in: attributes, inputs (editable), formats, output count."""

    def __init__(self, op_type: str, name: str, inputs: List[Optional[Value]], graph: Graph):
        self.op_type = op_type
        self.name = name
        self.inputs: List[Optional[Value]] = list(inputs)
        self.attrs: Dict[str, Any] = {}
        self.num_outputs: Optional[int] = None
        self.output_formats: Dict[int, tuple] = {}
        self.graph = graph
        # attribute → ("mapped" | "appended", value) as auto mapping set it; an attribute
        # not here, or whose value changed since, the parse function computed (for reports)
        self.auto_attrs: Dict[str, tuple] = {}

    @property
    def prototype(self) -> Optional[OpPrototype]:
        """The prototype of this op in the table of the graph it is mapped into."""
        return prototypes_of(self.graph).find(self.op_type)

    def set_attr(self, name: str, value: Any) -> None:
        self.attrs[name] = value

    def get_attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def input_desc(self, index: int) -> TensorDesc:
        """The desc of input `index`, which must be present (not None)."""
        value = self.inputs[index]
        if value is None:
            raise ConversionError(f"input {index} of {self.op_type} is absent")
        return value.desc

    def set_input_format(self, index: int, fmt: str, origin: Optional[str] = None) -> None:
        """Declare the layout of input `index` (a tensor has one format, shared by its users)."""
        self.input_desc(index).set_format(fmt, origin)

    def set_output_format(self, index: int, fmt: str, origin: Optional[str] = None) -> None:
        self.output_formats[index] = (fmt, origin or fmt)

    def add_const_input(self, array: Any, hint: str = "const") -> Value:
        value = self.graph.add_const(np.asarray(array), f"{self.name}/{hint}")
        self.inputs.append(value)
        return value


def auto_mapping(src: TfNode, op: IrOp) -> None:
    """Map the TF node's attributes onto `op` by name, with type conversion; append the
    attributes the IR op does not declare (see the module docstring for the rule)."""
    proto = op.prototype
    declared = proto.attrs if proto is not None else {}
    for name, value in src.attrs.items():
        if name.startswith("_"):
            continue
        spec = declared.get(name)
        if spec is None:
            if src.attr_type(name) in ("type", "list_type"):
                continue
            op.attrs[name] = value
            op.auto_attrs[name] = ("appended", value)
            continue
        try:
            op.attrs[name] = check_attr_value(spec.type, value)
        except TypeError as exc:
            raise ConversionError(f"attribute '{name}' cannot map to {spec.type}: {exc}") from None
        op.auto_attrs[name] = ("mapped", op.attrs[name])


@dataclass
class DynamicInputOutputInfo:
    """A dynamic port group whose count a TF attribute holds: the analogue of CANN's
    DynamicInputOutputInfo. `port_type` is "input" or "output"; the IR ports are named
    `port_name`0 .. `port_name`N-1 with N = the TF attribute `attr_name`."""

    port_type: str
    port_name: str
    attr_name: str
    ir_attr_name: Optional[str] = None   # the IR count attribute, if named differently

    def __post_init__(self):
        if self.port_type not in ("input", "output"):
            raise ValueError(f"port_type must be 'input' or 'output', not {self.port_type!r}")


def auto_mapping_dynamic(src: TfNode, op: IrOp, infos: Sequence[DynamicInputOutputInfo]) -> None:
    """`auto_mapping`, then each dynamic group's count copied from its TF attribute into the
    IR count attribute, checked against the node's inputs; outputs are expanded to match."""
    auto_mapping(src, op)
    proto = op.prototype
    for info in infos:
        count = src.attr(info.attr_name)
        if isinstance(count, list):          # e.g. IdentityN's T: one dtype per port
            count = len(count)
        if not isinstance(count, int):
            raise ConversionError(f"dynamic {info.port_type} '{info.port_name}' needs integer "
                                  f"attribute '{info.attr_name}', got {count!r}")
        if not 0 <= count <= MAX_DYNAMIC_PORTS:
            raise ConversionError(f"attribute '{info.attr_name}' = {count}: a dynamic "
                                  f"{info.port_type} group takes 0 to {MAX_DYNAMIC_PORTS} ports")
        ports = [] if proto is None else proto.inputs if info.port_type == "input" else proto.outputs
        spec = next((p for p in ports if p.name == info.port_name and p.kind == "dynamic"), None)
        if spec is None:
            raise ConversionError(f"IR op {op.op_type} has no dynamic {info.port_type} "
                                  f"'{info.port_name}'")
        op.attrs[info.ir_attr_name or spec.count_attr or info.attr_name] = count
    if proto is not None and not proto.accepts_input_count(len(op.inputs), op.attrs):
        raise ConversionError(f"{len(op.inputs)} inputs do not fit the dynamic counts "
                              f"{ {i.attr_name: src.attr(i.attr_name) for i in infos} }")
    if proto is not None and op.num_outputs is None:
        op.num_outputs = proto.default_output_count(op.attrs)
