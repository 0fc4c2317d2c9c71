"""The `src` a plugin's functions receive: the TF node, as protocols that say exactly what a
plugin may read. The parser's node classes implement them (tests/plugins/test_tfnode.py
checks), and plugins depend on these names, never on `tf2ir.parser`."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Protocol, Sequence, Tuple, runtime_checkable

from tf2ir.ir.graph import Graph
from tf2ir.ir.tensor import TensorDesc


@runtime_checkable
class TfNode(Protocol):
    """One TF node (a NodeDef), read-only: what a parse-params fn gets as `src`."""

    @property
    def name(self) -> str:
        """The node's name in the GraphDef, e.g. "model/dense/MatMul"."""

    @property
    def op_type(self) -> str:
        """The TF op type (the NodeDef's `op`), e.g. "MatMul", or a fusion result's type."""

    @property
    def framework(self) -> str:
        """The framework whose op `op_type` is: "TENSORFLOW", or "TFLITE" for a TFLite
        model's operators (a TFLite Flex op is a TF node, "TENSORFLOW")."""

    @property
    def inputs(self) -> Sequence[Tuple[str, int]]:
        """The data inputs in order, as (producer node name, output port)."""

    @property
    def control_inputs(self) -> Sequence[str]:
        """The names of the nodes this one depends on by control edges ("^name")."""

    @property
    def attrs(self) -> Mapping[str, Any]:
        """Every attribute, decoded to Python: int, float, bool, str (TF strings), IR dtype
        names ("float32"), shapes (tuples, None for unknown dims or rank), numpy arrays
        (tensors), function names, and lists of those."""

    def attr(self, name: str, default: Any = None) -> Any:
        """Attribute `name`, decoded as in `attrs`, or `default` when the node has none."""

    def attr_type(self, name: str) -> Optional[str]:
        """The TF kind of attribute `name`: "int", "float", "bool", "string", "type",
        "shape", "tensor", "func" or "list_<kind>" ("list_int", ...); None when the node has
        no such attribute, or for a fused node's attributes, which have no TF kind."""

    def has_attr(self, name: str) -> bool:
        """Whether the node has attribute `name`."""


@runtime_checkable
class FusedTfNode(TfNode, Protocol):
    """The node a many-to-one scope fusion pass made: the `src` of a parse fn registered
    with `.fusion_parse_params_fn(fn)`. Its `attrs` are the `FusionResult`'s attrs, its
    inputs the tensors entering the matched scope."""

    @property
    def inner_nodes(self) -> Sequence[TfNode]:
        """The TF nodes the fused node replaced, in graph order."""

    @property
    def pass_name(self) -> str:
        """The name of the scope fusion pass that made the node."""


@runtime_checkable
class FunctionalTfNode(TfNode, Protocol):
    """A TF node whose function attributes name library functions (If's `then_branch` and
    `else_branch`, While's `cond` and `body`); the parser hands such nodes over once it has
    the GraphDef's function library."""

    def convert_function(self, attr: str, input_descs: Sequence[TensorDesc]) -> Graph:
        """The IR graph of the function that attribute `attr` names, converted through the
        same plugins: one graph input per desc of `input_descs`, its outputs the function's
        outputs. Raises ConversionError naming the function when it cannot convert."""
