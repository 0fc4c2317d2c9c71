"""What a parse-params function works on (`IrOp`) and `auto_mapping`.

Auto mapping rule for TF attributes: names starting with `_` (`_output_shapes`,
`_class`, ...) are TF-internal and dropped; dtype-valued attributes (`T`, `Tidx`,
`out_type`, ...) are dropped unless the IR op declares them, since dtypes live on the
tensors; attributes the IR op declares are converted to the declared type; every other
TF attribute is appended unchanged.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from tf2ir.ir import ConversionError, Graph, Value
from tf2ir.ir.prototype import OpPrototype, check_attr_value, get_prototype, has_prototype


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

    @property
    def prototype(self) -> Optional[OpPrototype]:
        return get_prototype(self.op_type) if has_prototype(self.op_type) else None

    def set_attr(self, name: str, value: Any) -> None:
        self.attrs[name] = value

    def get_attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def set_input_format(self, index: int, fmt: str, origin: Optional[str] = None) -> None:
        """Declare the layout of input `index` (a tensor has one format, shared by its users)."""
        self.inputs[index].desc.set_format(fmt, origin)

    def set_output_format(self, index: int, fmt: str, origin: Optional[str] = None) -> None:
        self.output_formats[index] = (fmt, origin or fmt)

    def add_const_input(self, array: Any, hint: str = "const") -> Value:
        value = self.graph.add_const(np.asarray(array), f"{self.name}/{hint}")
        self.inputs.append(value)
        return value


def auto_mapping(src, op: IrOp) -> None:
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
            continue
        try:
            op.attrs[name] = check_attr_value(spec.type, value)
        except TypeError as exc:
            raise ConversionError(f"attribute '{name}' cannot map to {spec.type}: {exc}") from None
