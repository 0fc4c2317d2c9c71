"""Op prototypes: the Python analogue of REG_OP(...).INPUT(...).OUTPUT(...).ATTR(...).

A prototype declares an IR op's ports (required, optional, dynamic), typed attributes
with defaults, an inference function (output dtypes and shapes), a fold function and an
ONNX lowering. `opp/` declares which ops exist; this module only knows how a prototype
works. Prototypes reach a table (`PrototypeRegistry`) through the plugin manager that owns it
(every plugin's `tf2ir_op_prototypes` hook, the built-in op families' included), never by
import; a graph reads the table of the pipeline that made it (`prototypes_of`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import re

import numpy as np

from tf2ir.ir.errors import plugin_code
# The tables (one per plugin manager) and the lookups by graph: re-exported here.
from tf2ir.ir.prototype_table import (  # noqa: F401
    PrototypeRegistry, PrototypeSource, default_prototypes, get_prototype, has_prototype,
    prototypes_of, registered_prototypes, set_default_factory,
)
from tf2ir.ir.tensor import DTYPES, TensorDesc

if TYPE_CHECKING:
    from tf2ir.ir.graph import Node

REQUIRED = object()  # marks an attribute without a default

ATTR_TYPES = ("int", "float", "bool", "str", "dtype", "shape", "tensor", "func",
              "ints", "floats", "bools", "strs", "dtypes", "shapes")


# An op type (IR or TF): what TF's op registry allows, plus the separators of domains and
# fusion result types ("ir:Add"); no spaces, no control characters, not empty.
_OP_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_.:>/-]{0,255}\Z")


def check_op_type(value: Any, what: str) -> str:
    """`value` when it is an op type name, else a TypeError or ValueError saying `what`
    (e.g. "origin_op_type(...)") was given a bad value (a plugin's registration)."""
    if not isinstance(value, str):
        raise TypeError(f"{what}: an op type must be a string, not {type(value).__name__} "
                        f"{value!r:.60}")
    if not _OP_TYPE.match(value):
        raise ValueError(f"{what}: {value!r:.80} is not an op type (a letter or '_', then "
                         "letters, digits and _ . : > / -; at most 256 characters)")
    return value


def check_priority(value: Any, what: str) -> int:
    """`value` as an int priority (an int, or a string of one), else a TypeError or ValueError."""
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d{1,18}\s*", value):
        return int(value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise TypeError(f"{what}: a priority must be an int, not {type(value).__name__} "
                    f"{value!r:.60}")


def _check_scalar(kind: str, value: Any) -> Any:
    if kind == "int" and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if kind == "float" and isinstance(value, (int, float, np.floating, np.integer)) \
            and not isinstance(value, bool):
        return float(value)
    if kind == "bool" and isinstance(value, (bool, np.bool_)):
        return bool(value)
    if kind in ("str", "func") and isinstance(value, str):
        return value
    if kind == "dtype" and isinstance(value, str) and value in DTYPES:
        return value
    if kind == "shape" and (value is None or isinstance(value, (list, tuple))):
        if value is None:
            return None
        if all(d is None or (isinstance(d, (int, np.integer)) and not isinstance(d, bool))
               for d in value):
            return tuple(None if d is None else int(d) for d in value)
    if kind == "tensor" and isinstance(value, np.ndarray):
        return value
    raise TypeError(f"expected {kind}, got {type(value).__name__} {value!r:.60}")


def check_attr_value(kind: str, value: Any) -> Any:
    """Return `value` normalised to the attribute type `kind`, or raise TypeError."""
    if kind not in ATTR_TYPES:
        raise TypeError(f"unknown attribute type {kind!r}")
    if kind.endswith("s"):  # the list types
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"expected a list for {kind}, got {type(value).__name__}")
        return [_check_scalar(kind[:-1], v) for v in value]
    return _check_scalar(kind, value)


def infer_attr_type(value: Any) -> str:
    """The attribute type of a plain Python value (for attributes a prototype does not declare)."""
    if value is None:
        return "shape"  # TF decodes an unknown-rank shape to None
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, np.ndarray):
        return "tensor"
    if isinstance(value, (list, tuple)):
        if any(v is None for v in value) and all(
                v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, bool))
                for v in value):
            return "shape"  # dims with unknown (None) entries
        kinds = {infer_attr_type(v) for v in value}
        if len(kinds) == 1 and next(iter(kinds)) in ("int", "float", "bool", "str"):
            return next(iter(kinds)) + "s"
        if not value:
            return "ints"
        if kinds <= {"int", "float"}:
            return "floats"
        if kinds <= {"shape", "ints"}:
            return "shapes"
    raise TypeError(f"cannot store {type(value).__name__} as an attribute")


@dataclass
class PortSpec:
    name: str
    kind: str = "required"           # required | optional | dynamic
    dtypes: Optional[Tuple[str, ...]] = None
    count_attr: Optional[str] = None  # dynamic ports: the attribute holding their count


@dataclass
class AttrSpec:
    name: str
    type: str
    default: Any = REQUIRED
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


InferFn = Callable[["Node"], List[TensorDesc]]
LowerFn = Callable[[Any, "Node"], None]
FoldFn = Callable[["Node", List[np.ndarray]], List[np.ndarray]]
KernelFn = Callable[..., Any]   # (*input arrays, **attrs) → an array or a tuple of arrays


@dataclass
class OpPrototype:
    """One IR op's contract. Build it with the chained declaration methods."""

    op_type: str
    inputs: List[PortSpec] = field(default_factory=list)
    outputs: List[PortSpec] = field(default_factory=list)
    attrs: Dict[str, AttrSpec] = field(default_factory=dict)
    infer_fn: Optional[InferFn] = None
    lower_fn: Optional[LowerFn] = None
    fold_fn: Optional[FoldFn] = None
    kernel_fn: Optional[KernelFn] = None
    # ONNX forms per target opset: ((first, last or None), lowering) beside the default
    lower_forms: List[Tuple[Tuple[int, Optional[int]], LowerFn]] = field(default_factory=list)
    lower_default: Optional[LowerFn] = None
    refused: str = ""       # why a TF op mapped to this op cannot convert (refuse())
    doc: str = ""
    priority: int = 0       # higher wins when two plugins declare one op type
    plugin: str = ""        # set by the plugin manager: the declaring plugin's name
    source: str = ""        # set by the plugin manager: its module file or package
    builtin: bool = False   # set by the plugin manager: declared by a tf2ir built-in plugin

    # -- declaration (REG_OP style) ----------------------------------------------
    def input(self, name: str, dtypes: Optional[Sequence[str]] = None) -> "OpPrototype":
        self.inputs.append(PortSpec(name, "required", tuple(dtypes) if dtypes else None))
        return self

    def optional_input(self, name: str, dtypes: Optional[Sequence[str]] = None) -> "OpPrototype":
        self.inputs.append(PortSpec(name, "optional", tuple(dtypes) if dtypes else None))
        return self

    def dynamic_input(self, name: str, dtypes: Optional[Sequence[str]] = None,
                      count_attr: Optional[str] = None) -> "OpPrototype":
        """Ports name0..nameN-1; N comes from attribute `count_attr`, or from the node's
        input count when this is the op's only dynamic input group without one."""
        self._check_dynamic(self.inputs, count_attr)
        self.inputs.append(PortSpec(name, "dynamic", tuple(dtypes) if dtypes else None, count_attr))
        return self

    def output(self, name: str, dtypes: Optional[Sequence[str]] = None) -> "OpPrototype":
        self.outputs.append(PortSpec(name, "required", tuple(dtypes) if dtypes else None))
        return self

    def dynamic_output(self, name: str, dtypes: Optional[Sequence[str]] = None,
                       count_attr: Optional[str] = None) -> "OpPrototype":
        self._check_dynamic(self.outputs, count_attr)
        self.outputs.append(PortSpec(name, "dynamic", tuple(dtypes) if dtypes else None, count_attr))
        return self

    def _check_dynamic(self, specs: List[PortSpec], count_attr: Optional[str]) -> None:
        if count_attr is None and any(p.kind == "dynamic" and p.count_attr is None for p in specs):
            raise ValueError(f"{self.op_type}: a second dynamic port group needs a count_attr")

    def attr(self, name: str, type: str, default: Any = REQUIRED, doc: str = "") -> "OpPrototype":
        if type not in ATTR_TYPES:
            raise ValueError(f"{self.op_type}.{name}: unknown attribute type {type!r}")
        if default is not REQUIRED and default is not None:
            default = check_attr_value(type, default)
        self.attrs[name] = AttrSpec(name, type, default, doc)
        return self

    def infer(self, fn: InferFn) -> InferFn:
        self.infer_fn = self._function(fn, "infer")
        return fn

    def fold(self, fn: FoldFn) -> FoldFn:
        """numpy evaluation for constant inputs, used by constant folding:
        fn(node, input arrays) → output arrays."""
        self.fold_fn = self._function(fn, "fold")
        return fn

    def lower(self, fn: Optional[LowerFn] = None, *,
              opsets: Optional[Tuple[int, Optional[int]]] = None) -> Any:
        """The ONNX lowering: `@proto.lower` the default one; `@proto.lower(opsets=(lo, hi))`
        a form serving target opsets lo..hi (hi None: no end), preferred where it serves.
        With forms, `lower_fn` picks by the context's `opset` (else `max_opset`)."""
        if fn is None:
            return lambda f: self.lower(f, opsets=opsets)
        fn = self._function(fn, "lower")
        if opsets is None:
            self.lower_default = fn
            if not self.lower_forms:
                self.lower_fn = fn
            return fn
        lo, hi = opsets
        if not isinstance(lo, int) or not (hi is None or isinstance(hi, int) and hi >= lo) or any(
                (h is None or lo <= h) and (hi is None or l <= hi)
                for (l, h), _ in self.lower_forms):
            raise ValueError(f"{self.op_type}: lowering opsets {opsets!r} are not a range "
                             "apart from the other forms'")
        self.lower_forms.append(((lo, hi), fn))
        self.lower_fn = self._lower_by_opset
        return fn

    def lowering_for(self, opset: int) -> Optional[LowerFn]:
        """The lowering that serves target `opset`: its form, else the default."""
        for (lo, hi), fn in self.lower_forms:
            if lo <= opset and (hi is None or opset <= hi):
                return fn
        return self.lower_default

    def _lower_by_opset(self, ctx: Any, node: "Node") -> None:
        opset = getattr(ctx, "opset", None) or getattr(ctx, "max_opset", None)
        fn = self.lowering_for(opset) if opset else self.lower_default
        if fn is None:
            from tf2ir.ir.errors import ConversionError, ExitStatus
            raise ConversionError(f"{self.op_type} has no ONNX lowering for opset {opset}",
                                  exit_code=ExitStatus.UNSUPPORTED)
        fn(ctx, node)

    def refuse(self, reason: str) -> "OpPrototype":
        """Declare an op tf2ir knows and cannot convert exactly: mapping a node to it is an
        unsupported-op error (exit 3) giving `reason`, which docs/ops.md lists."""
        from tf2ir.ir.errors import ConversionError, ExitStatus

        def refuse(node):
            raise ConversionError(f"{node.op_type} is refused: {reason}",
                                  exit_code=ExitStatus.UNSUPPORTED)
        self.refused = reason
        self.infer_fn = refuse
        return self

    def kernel(self, fn: KernelFn) -> KernelFn:
        """The op's reference kernel (the compute of an op definition): fn(*input arrays,
        **attrs) → an array, or a tuple of arrays for several outputs. It folds constants
        when the op has no fold function, and runs a node the lowering emits in a custom
        ONNX domain (op type = this op type) in onnxruntime, through tf2ir.InferenceSession."""
        self.kernel_fn = self._function(fn, "kernel")
        if self.fold_fn is None:
            self.fold_fn = _fold_by_kernel(fn)
        return fn

    def _function(self, fn: Any, what: str) -> Any:
        if not callable(fn):
            raise TypeError(f"op_prototype({self.op_type!r}).{what}: expected a function, not "
                            f"{type(fn).__name__} {fn!r:.60}")
        return fn

    def calling(self, what: str, node: Optional["Node"] = None, **where):
        """The context in which this prototype's `what` (its inference, lowering, fold
        function, kernel: plugin code) runs for `node`: whatever it raises is one
        ConversionError naming the declaring plugin, the node and its op (`plugin_code`)."""
        if node is not None:
            where.setdefault("node", node.name)
            where.setdefault("op_type", node.op_type)
        return plugin_code(what, self.plugin, self.builtin, **where)

    # -- port naming -------------------------------------------------------------
    @staticmethod
    def _expand(specs: List[PortSpec], count: int, attrs: Optional[Dict[str, Any]]) -> Optional[List[PortSpec]]:
        """One spec per actual port, or None when `count` ports cannot fit the specs."""
        for spec in specs:
            if spec.kind == "dynamic":
                break
        else:   # no dynamic group (most ops): one port per spec
            return list(specs) if count == len(specs) else None
        attrs = attrs or {}
        counted = {}
        for spec in specs:
            if spec.kind == "dynamic" and spec.count_attr and isinstance(attrs.get(spec.count_attr), int):
                counted[spec.name] = attrs[spec.count_attr]
        fixed = sum(1 for p in specs if p.kind != "dynamic") + sum(counted.values())
        free = [p for p in specs if p.kind == "dynamic" and p.name not in counted]
        if len(free) > 1:       # two groups without counts (a count attribute missing): no fit
            return None
        if free:
            counted[free[0].name] = count - fixed
        if any(n < 0 for n in counted.values()) or fixed + (counted[free[0].name] if free else 0) != count:
            return None
        out: List[PortSpec] = []
        for spec in specs:
            out.extend([spec] * counted[spec.name] if spec.kind == "dynamic" else [spec])
        return out

    @staticmethod
    def _names(expanded: Optional[List[PortSpec]], count: int) -> List[str]:
        if expanded is None:
            return [f"in{i}" for i in range(count)]
        names: List[str] = []
        seen: Dict[str, int] = {}
        for spec in expanded:
            if spec.kind == "dynamic":
                names.append(f"{spec.name}{seen.get(spec.name, 0)}")
                seen[spec.name] = seen.get(spec.name, 0) + 1
            else:
                names.append(spec.name)
        return names

    def input_names(self, count: int, attrs: Optional[Dict[str, Any]] = None) -> List[str]:
        """Port names for a node with `count` inputs: dynamic ports expand to x0..xN-1."""
        return self._names(self._expand(self.inputs, count, attrs), count)

    def output_names(self, count: int, attrs: Optional[Dict[str, Any]] = None) -> List[str]:
        return self._names(self._expand(self.outputs, count, attrs), count)

    def input_spec(self, count: int, attrs: Optional[Dict[str, Any]] = None) -> List[PortSpec]:
        return self._expand(self.inputs, count, attrs) or []

    def accepts_input_count(self, count: int, attrs: Optional[Dict[str, Any]] = None) -> bool:
        return self._expand(self.inputs, count, attrs) is not None

    def accepts_output_count(self, count: int, attrs: Optional[Dict[str, Any]] = None) -> bool:
        return self._expand(self.outputs, count, attrs) is not None

    def default_output_count(self, attrs: Optional[Dict[str, Any]] = None) -> Optional[int]:
        """The output count the attributes imply, or None when a dynamic group has no count."""
        attrs = attrs or {}
        total = 0
        for spec in self.outputs:
            if spec.kind != "dynamic":
                total += 1
            elif spec.count_attr and isinstance(attrs.get(spec.count_attr), int):
                total += attrs[spec.count_attr]
            else:
                return None
        return total

    def with_priority(self, priority: int) -> "OpPrototype":
        """Higher wins when two plugins declare this op type (the override is reported)."""
        self.priority = check_priority(priority, f"op_prototype({self.op_type!r}).with_priority")
        return self


def op_prototype(op_type: str, doc: str = "") -> OpPrototype:
    """Start the prototype of IR op `op_type`; a plugin returns it from its
    `tf2ir_op_prototypes` hook (an `OpSet` collects a module's prototypes)."""
    return OpPrototype(check_op_type(op_type, "op_prototype(...)"), doc=doc)


class OpSet:
    """The op prototypes one module declares (an op package, CANN's sense): `ops.declare`
    starts each one; the module's plugin returns `list(ops)` from `tf2ir_op_prototypes`."""

    def __init__(self, name: str):
        self.name = name
        self._prototypes: Dict[str, OpPrototype] = {}

    def declare(self, op_type: str, doc: str = "") -> OpPrototype:
        if op_type in self._prototypes:
            raise ValueError(f"op prototype {op_type} is declared twice in {self.name}")
        proto = self._prototypes[op_type] = op_prototype(op_type, doc)
        return proto

    def __getitem__(self, op_type: str) -> OpPrototype:
        return self._prototypes[op_type]

    def __iter__(self):
        return iter(self._prototypes.values())

    def __len__(self) -> int:
        return len(self._prototypes)


def _fold_by_kernel(fn: KernelFn) -> FoldFn:
    def fold(node, arrays):
        result = fn(*arrays, **node.attrs)
        return list(result) if isinstance(result, tuple) else [result]
    fold.by_kernel = True   # type: ignore[attr-defined]  # (errors name "its kernel")
    return fold

