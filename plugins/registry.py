"""`register_op`: the Python form of REGISTER_CUSTOM_OP(...).FrameworkType(...).OriginOpType(...)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, List, Optional, cast

from tf2ir.ir.prototype import check_op_type, check_priority
from tf2ir.plugins.tfnode import FusedTfNode, TfNode

if TYPE_CHECKING:
    from tf2ir.plugins.mapping import IrOp
    from tf2ir.plugins.subgraph import SubgraphBuilder

TENSORFLOW = "TENSORFLOW"
TFLITE = "TFLITE"
# The frameworks whose models tf2ir parses: a mapping is keyed by (framework, origin op type).
FRAMEWORKS = (TENSORFLOW, TFLITE)


def mapping_key(framework: str, origin_type: str) -> str:
    """The plugin manager's key of (framework, origin op type): the op type itself for
    TENSORFLOW (so TF keys read as before), "TFLITE:CONV_2D" for another framework (no TF op
    type holds a colon, so the two never meet)."""
    return origin_type if framework == TENSORFLOW else f"{framework}:{origin_type}"


def split_mapping_key(key: str):
    """mapping_key's inverse: "TFLITE:CONV_2D" → ("TFLITE", "CONV_2D")."""
    framework, sep, origin = key.partition(":")
    return (framework, origin) if sep and framework in FRAMEWORKS else (TENSORFLOW, key)


class ImplyType:
    """How the target op is implemented on the device side (kept for reports, as in CANN)."""
    TVM = "TVM"
    AI_CPU = "AI_CPU"
    BUILDIN = "BUILDIN"
    CUSTOM = "CUSTOM"
    ALL = (TVM, AI_CPU, BUILDIN, CUSTOM)


# What a plugin registers; `src` is the TF node as `tf2ir.plugins.tfnode` declares it.
ParseParamsFn = Callable[[TfNode, "IrOp"], None]
FusionParseParamsFn = Callable[[FusedTfNode, "IrOp"], None]
ParseOpToGraphFn = Callable[[TfNode, "SubgraphBuilder"], None]


@dataclass
class OpRegistration:
    """One mapping of origin TF op types to an IR op type; build it by chaining."""

    ir_type: str
    framework: str = TENSORFLOW
    origin_types: List[str] = field(default_factory=list)
    parse_params_fn_: Optional[ParseParamsFn] = None
    parse_op_to_graph_fn_: Optional[ParseOpToGraphFn] = None
    imply: str = ImplyType.TVM
    priority: int = 0
    plugin: str = ""        # set by the plugin manager: the plugin's name
    source: str = ""        # set by the plugin manager: the module file or package
    fusion: bool = False    # maps a scope fusion result type (see fusion_parse_params_fn)

    # -- the builder, in the seed's words ----------------------------------------
    # Every argument is checked where it is given: a wrong one raises a TypeError or
    # ValueError naming the call and the value, which the plugin manager reports naming the
    # plugin (a plugin that cannot load, exit status 1).
    def framework_type(self, framework: str) -> "OpRegistration":
        if framework not in FRAMEWORKS:
            raise ValueError(f"{self._call('framework_type')}: framework {framework!r:.60} is "
                             f"not supported; use {' or '.join(FRAMEWORKS)}")
        self.framework = framework
        return self

    def origin_op_type(self, *op_types: str) -> "OpRegistration":
        """The origin op types this maps: strings, or lists of them (CANN's vector form): TF
        op types, or for TFLITE builtin operator names (CONV_2D) and custom op names."""
        flat = [t for arg in op_types
                for t in (arg if isinstance(arg, (list, tuple)) else [arg])]
        if not flat:
            raise ValueError(f"{self._call('origin_op_type')}: give at least one op type")
        self.origin_types.extend(check_op_type(t, self._call("origin_op_type")) for t in flat)
        return self

    def parse_params_fn(self, fn: ParseParamsFn) -> "OpRegistration":
        self.parse_params_fn_ = self._function(fn, "parse_params_fn")
        return self

    def fusion_parse_params_fn(self, fn: FusionParseParamsFn) -> "OpRegistration":
        """Map a fused node, whose origin type is a scope fusion pass's result type:
        fn(fused_node, op), where fused_node.inner_nodes are the TF nodes it replaced."""
        # Stored as a ParseParamsFn: the origin type is a fusion result's, so only fused
        # nodes ever reach it.
        self.parse_params_fn_ = cast(ParseParamsFn, self._function(fn, "fusion_parse_params_fn"))
        self.fusion = True
        return self

    def parse_op_to_graph_fn(self, fn: ParseOpToGraphFn) -> "OpRegistration":
        """One-to-many mapping (register_op("PartitionedCall")): fn(src, graph) builds the
        call's subgraph from graph.data(index) nodes and IR ops, then graph.set_outputs(...)."""
        self.parse_op_to_graph_fn_ = self._function(fn, "parse_op_to_graph_fn")
        return self

    def imply_type(self, imply: str) -> "OpRegistration":
        if not isinstance(imply, str) or imply not in ImplyType.ALL:
            raise ValueError(f"{self._call('imply_type')}: imply type {imply!r:.60} is not one "
                             f"of {', '.join(ImplyType.ALL)}")
        self.imply = imply
        return self

    def with_priority(self, priority: int) -> "OpRegistration":
        """Higher wins when two plugins claim one origin op type (the override is reported)."""
        self.priority = check_priority(priority, self._call("with_priority"))
        return self

    def _call(self, method: str) -> str:
        return f"register_op({self.ir_type!r:.60}).{method}(...)"

    def _function(self, fn, method: str):
        if not callable(fn):
            raise TypeError(f"{self._call(method)}: expected a function, not "
                            f"{type(fn).__name__} {fn!r:.60}")
        return fn

    def validate(self) -> None:
        """Check the registration as a whole, its fields set by the builder or directly (the
        plugin manager calls this on every registration a plugin returns)."""
        check_op_type(self.ir_type, "register_op(...)")
        if not self.origin_types:
            raise ValueError(f"{self._call('origin_op_type')} is missing: the registration "
                             "maps no TF op type")
        for origin in self.origin_types:
            check_op_type(origin, self._call("origin_op_type"))
        self.framework_type(self.framework)
        self.imply_type(self.imply)
        self.priority = check_priority(self.priority, self._call("with_priority"))
        for method, fn in (("parse_params_fn", self.parse_params_fn_),
                           ("parse_op_to_graph_fn", self.parse_op_to_graph_fn_)):
            if fn is not None:
                self._function(fn, method)

    # Deprecated shorter spellings: one release with a warning, then gone.
    def origin(self, *op_types: str) -> "OpRegistration":
        _deprecated("origin", "origin_op_type")
        return self.origin_op_type(*op_types)

    def parse_params(self, fn: ParseParamsFn) -> "OpRegistration":
        _deprecated("parse_params", "parse_params_fn")
        return self.parse_params_fn(fn)

    def parse_op_to_graph(self, fn: ParseOpToGraphFn) -> "OpRegistration":
        _deprecated("parse_op_to_graph", "parse_op_to_graph_fn")
        return self.parse_op_to_graph_fn(fn)

    def __call__(self, fn: ParseParamsFn) -> ParseParamsFn:
        """The decorator form of `.parse_params_fn(fn)` (DESIGN decision 1)."""
        self.parse_params_fn_ = self._function(fn, "parse_params_fn")
        return fn

    @property
    def keys(self) -> List[str]:
        """The plugin manager's keys of this mapping: mapping_key(framework, origin) each."""
        return [mapping_key(self.framework, origin) for origin in self.origin_types]

    @property
    def parse_fn(self) -> ParseParamsFn:
        if self.parse_params_fn_ is not None:
            return self.parse_params_fn_
        if self.parse_op_to_graph_fn_ is not None:
            from tf2ir.plugins.subgraph import parse_partitioned_call
            return parse_partitioned_call
        from tf2ir.plugins.mapping import auto_mapping
        return auto_mapping


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"OpRegistration.{old} is deprecated; use .{new}(...) (the seed's name)",
                  DeprecationWarning, stacklevel=3)


def register_op(ir_type: str) -> OpRegistration:
    """Start a mapping to IR op `ir_type`; a plugin returns it from `tf2ir_op_mappings`."""
    return OpRegistration(check_op_type(ir_type, "register_op(...)"))
