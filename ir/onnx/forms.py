"""ONNX forms per opset: every lowering writes the canonical form (opset 18's op versions, and
Gelu's of 20), and this module rewrites a node of that form into the form of a target opset
from OLDEST_OPSET to the newest the installed onnx defines (onnxruntime may run fewer).

Two levels, one rule (an opset range says which form serves a target):
- the ONNX op-signature changes, as a table (`FORMS`: op → list of (opset range, converter));
  `adapt` gives one node's form at the target, `expand` also the cheap decompositions of an
  op the target does not have (several nodes); what has no form there is one ConversionError
  naming the op and the opsets that hold it ("needs opset 18 or newer"; exit status FAILED);
- an op's lowering may register forms of its own with `@proto.lower(opsets=(lo, hi))` beside
  its default `@proto.lower`; `choose_lowering(proto, opset)` picks one.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import onnx
from onnx import defs, helper

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.onnx.opset import OPSET

OLDEST_OPSET = 13           # the oldest target opset `compile` takes
CANONICAL_OPSET = OPSET     # the opset whose op versions the lowerings write

Range = Tuple[int, Optional[int]]                     # (first, last) opset, None: open
NodeForm = Tuple[str, str, List[str], List[str], Dict[str, Any]]  # type, domain, in, out, attrs


# -- level 2: a lowering's forms ---------------------------------------------------------------------
def choose_lowering(proto: Any, opset: int) -> Optional[Callable]:
    """The lowering of op prototype `proto` that serves target `opset`: the form registered
    with `@proto.lower(opsets=(lo, hi))` whose range holds `opset`, else the default
    `@proto.lower` (None when the prototype has no lowering)."""
    if proto.lower_forms:
        return proto.lowering_for(opset)
    return proto.lower_fn


# -- the installed libraries' limits: ir/onnx/kernels.py (re-exported here) -------------------------
from tf2ir.ir.onnx.kernels import _kernel_gaps, _runtime_loads, newest_runnable_opset  # noqa: E402,F401


@functools.lru_cache(maxsize=None)
def _schema(op_type: str, opset: int) -> Optional[defs.OpSchema]:
    try:
        return defs.get_schema(op_type, max_inclusive_version=opset, domain="")
    except defs.SchemaError:
        return None


def exists(op_type: str, opset: int) -> bool:
    """Whether default-domain opset `opset` has `op_type` (not a deprecated version)."""
    schema = _schema(op_type, opset)
    return schema is not None and not schema.deprecated


@functools.lru_cache(maxsize=None)
def _canonical_defaults(op_type: str) -> Dict[str, Any]:
    """The attribute defaults of the version the lowerings write."""
    schema = _schema(op_type, CANONICAL_OPSET) or _schema(op_type, defs.onnx_opset_version())
    if schema is None:
        return {}
    return {name: helper.get_attribute_value(a.default_value)
            for name, a in schema.attributes.items() if a.default_value.type}


# -- level 1: one node's form at a target opset -----------------------------------------------------------
def unsupported(op_type: str, target: int, why: str = "") -> ConversionError:
    """The one-line error of an ONNX op (or form) that opset `target` cannot hold (`expand`
    adds the opsets that hold it: `needs`)."""
    because = f": {why}" if why else ""
    return ConversionError(f"ONNX {op_type} has no form at opset {target}{because}",
                           op_type=op_type, exit_code=ExitStatus.FAILED)


def needs(op_type: str, target: int, why: str, holding: List[int]) -> ConversionError:
    """The error of `op_type` at `target` given the opsets that hold it: "ONNX Gelu needs
    opset 20 or newer; asked for opset 17" when every opset from one on holds it, else the
    opsets that do (or none)."""
    newest = defs.onnx_opset_version()
    because = "" if not why or why == NOT_AN_OP else f" ({why})"
    if holding and holding == list(range(holding[0], newest + 1)) and holding[0] > target:
        text = f"ONNX {op_type} needs opset {holding[0]} or newer; asked for opset {target}"
    else:
        runs = ([o for _, o in run] for _, run in   # runs of consecutive opsets
                itertools.groupby(enumerate(holding), lambda pair: pair[1] - pair[0]))
        spans = ", ".join(f"{r[0]}" if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
        text = (f"ONNX {op_type} has no form at opset {target}; "
                + (f"opsets {spans} hold it" if spans else "no opset tf2ir writes holds it"))
    return ConversionError(text + because, op_type=op_type, exit_code=ExitStatus.FAILED)


NOT_AN_OP = "it is not an op of that opset"


class _OneNode(Exception):
    """A converter asked for an extra node where the caller (`adapt`) takes one."""


@dataclass
class Rewrite:
    """The node a converter rewrites in place (`op_type`, `inputs`, `attrs`), its target, and
    verbs for constants and, under `expand`, nodes placed before it."""

    op_type: str
    inputs: List[str]
    outputs: List[str]
    attrs: Dict[str, Any]
    target: int
    const: Callable[[str], Optional[np.ndarray]]
    fresh_const: Callable[[np.ndarray], str]
    fresh_name: Optional[Callable[[str], str]] = None
    before: List[NodeForm] = field(default_factory=list)

    def input(self, index: int) -> str:
        return self.inputs[index] if index < len(self.inputs) else ""

    def const_input(self, index: int) -> Optional[np.ndarray]:
        name = self.input(index)
        return None if not name else self.const(name)

    def emit(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        """A node before this one (a decomposition); its one output's name."""
        if self.fresh_name is None:
            raise _OneNode(op_type)
        out = self.fresh_name(f"{self.outputs[0] if self.outputs else op_type}/{op_type}")
        self.before.append((op_type, "", list(inputs), [out], attrs))
        return out

    def fail(self, why: str = "") -> ConversionError:
        return unsupported(self.op_type, self.target, why)


Converter = Callable[[Rewrite], None]
FORMS: Dict[str, List[Tuple[Range, Converter]]] = {}


def form(*op_types: str, opsets: Range):
    """Register a converter for `op_types` at the targets of `opsets` (inclusive, None open)."""
    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            FORMS.setdefault(op_type, []).append((opsets, fn))
        return fn
    return register


def expand(op_type: str, domain: str, inputs: List[str], outputs: List[str],
           attrs: Dict[str, Any], target: int, const: Callable[[str], Optional[np.ndarray]],
           fresh_const: Callable[[np.ndarray], str],
           fresh_name: Optional[Callable[[str], str]] = None) -> List[NodeForm]:
    """The nodes (op type, domain, inputs, outputs, attrs) that compute canonical node
    `op_type(inputs) -> outputs` at opset `target`: the node rewritten, after any nodes of a
    decomposition (whose outputs `fresh_name(hint)` names). A ConversionError when the target
    has no form of it, naming the opsets that have one (exit status FAILED: the model
    converts at those). Nodes of other domains than ONNX's default are left as they are."""
    if domain not in ("", "ai.onnx"):
        return [(op_type, domain, list(inputs), list(outputs), dict(attrs))]
    newest = defs.onnx_opset_version()
    if not OLDEST_OPSET <= target <= newest:
        raise ConversionError(f"opset {target} is not a target: tf2ir writes opsets "
                              f"{OLDEST_OPSET} to {newest}", exit_code=ExitStatus.USAGE)
    try:
        return _expand(op_type, inputs, outputs, attrs, target, const, fresh_const, fresh_name)
    except ConversionError as exc:
        why = exc.message.partition(f"opset {target}: ")[2]
        holding = [o for o in range(OLDEST_OPSET, newest + 1)
                   if _holds(op_type, inputs, outputs, attrs, o, const)]
        raise needs(op_type, target, why, holding) from None


def _holds(op_type: str, inputs: List[str], outputs: List[str], attrs: Dict[str, Any],
           target: int, const: Callable[[str], Optional[np.ndarray]]) -> bool:
    """Whether opset `target` has a form of the node (nothing is kept of the trial)."""
    try:
        _expand(op_type, inputs, outputs, dict(attrs), target, const, lambda a: "probe",
                lambda hint: hint)
    except ConversionError:
        return False
    return True


def _expand(op_type: str, inputs: List[str], outputs: List[str], attrs: Dict[str, Any],
            target: int, const: Callable[[str], Optional[np.ndarray]],
            fresh_const: Callable[[np.ndarray], str],
            fresh_name: Optional[Callable[[str], str]]) -> List[NodeForm]:
    node = Rewrite(op_type, list(inputs), list(outputs), dict(attrs), target, const,
                   fresh_const, fresh_name)
    for (lo, hi), convert in FORMS.get(op_type, ()):
        if lo <= target and (hi is None or target <= hi):
            convert(node)
            if node.op_type != op_type:      # replaced by another op (a decomposition)
                break
    for before in node.before:
        _fit(before[0], before[2], before[4], target)
    _fit(node.op_type, node.inputs, node.attrs, target)
    return node.before + [(node.op_type, "", node.inputs, node.outputs, node.attrs)]


def adapt(op_type: str, domain: str, inputs: List[str], attrs: Dict[str, Any], target: int,
          const: Callable[[str], Optional[np.ndarray]],
          fresh_const: Callable[[np.ndarray], str]) -> Tuple[str, List[str], Dict[str, Any]]:
    """Canonical node `op_type(inputs)` with python-valued `attrs` in the form of opset
    `target`: (op type, inputs, attrs), its outputs unchanged. A ConversionError when the
    target has no one-node form of it (`expand` also gives the decompositions)."""
    try:
        nodes = expand(op_type, domain, inputs, ["out"], attrs, target, const, fresh_const)
    except _OneNode:
        raise unsupported(op_type, target, "it takes several nodes there") from None
    (new_type, _, new_inputs, _, new_attrs), = nodes
    return new_type, new_inputs, new_attrs


def _fit(op_type: str, inputs: List[str], attrs: Dict[str, Any], target: int) -> None:
    """Check (and trim) a node against the target's schema: the op must exist there; an
    attribute the target lacks is dropped when it holds the canonical default, an input the
    target lacks when it is absent ('')."""
    schema = _schema(op_type, target)
    if schema is None or schema.deprecated:
        raise unsupported(op_type, target, NOT_AN_OP)
    defaults = _canonical_defaults(op_type)
    for name in [a for a in attrs if a not in schema.attributes]:
        if name not in defaults or not _same(attrs[name], defaults[name]):
            value = attrs[name].decode() if isinstance(attrs[name], bytes) else attrs[name]
            raise unsupported(op_type, target, f"attribute {name}={value!r} is newer")
        del attrs[name]
    limit = len(schema.inputs) if schema.inputs and schema.inputs[-1].option != \
        defs.OpSchema.FormalParameterOption.Variadic else len(inputs)
    while len(inputs) > limit and not inputs[-1]:
        inputs.pop()
    if len(inputs) > limit:
        raise unsupported(op_type, target, f"input {schema_input_name(op_type, limit)} is newer")


def schema_input_name(op_type: str, index: int) -> str:
    schema = _schema(op_type, CANONICAL_OPSET) or _schema(op_type, defs.onnx_opset_version())
    return schema.inputs[index].name if schema and index < len(schema.inputs) else str(index)


def _same(value: Any, default: Any) -> bool:
    if isinstance(default, bytes):
        default = default.decode()
    if isinstance(value, bytes):
        value = value.decode()
    return value == default


# -- the table --------------------------------------------------------------------------------------------
REDUCE_AXES_18 = ("ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                  "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")


def _axes_to_attr(node: Rewrite) -> None:
    """Axes as an input (18; ReduceSum 13) → the `axes` attribute (a constant input only)."""
    noop = node.attrs.pop("noop_with_empty_axes", 0)
    axes = node.input(1)
    value = node.const_input(1) if axes else np.zeros(0, np.int64)
    if value is None:
        raise node.fail("its axes are computed at run time")
    del node.inputs[1:]
    if value.size:
        node.attrs["axes"] = [int(a) for a in np.ravel(value)]
    elif noop:               # no axes, nothing reduced: the data as it is
        node.op_type, node.attrs = "Identity", {}


form(*REDUCE_AXES_18, opsets=(OLDEST_OPSET, 17))(_axes_to_attr)


@form("Split", opsets=(OLDEST_OPSET, 17))
def _split_without_count(node: Rewrite) -> None:
    """`num_outputs` (18) → equal parts by the output count (Split 13 splits evenly when no
    `split` input is given; TF's equal splits are even)."""
    node.attrs.pop("num_outputs", None)


@form("Pad", opsets=(OLDEST_OPSET, 17))
def _pad_without_axes(node: Rewrite) -> None:
    """Pad's `axes` input (18) only when absent: the pads of the other axes need the rank."""
    if node.input(3):
        raise node.fail("its pads name axes (input 'axes'), which needs the rank")


@form("Resize", opsets=(OLDEST_OPSET, 17))
def _resize_before_18(node: Rewrite) -> None:
    """antialias and keep_aspect_ratio_policy (18) only at their defaults; `axes` (18), when
    they are ascending and contiguous, become sizes/scales of every dim: the other dims keep
    theirs (x's own dims, or scale 1)."""
    if "axes" not in node.attrs:
        return
    axes = [int(a) for a in node.attrs.pop("axes")]
    if any(a < 0 for a in axes) or axes != list(range(axes[0], axes[0] + len(axes))):
        raise node.fail("attribute axes is newer (and not a contiguous run of dims here)")
    first, last = axes[0], axes[-1] + 1
    sizes, scales = node.input(3), node.input(2)
    if sizes:
        dims = node.emit("Shape", node.input(0))
        head = node.emit("Slice", dims, node.fresh_const(np.array([0], np.int64)),
                         node.fresh_const(np.array([first], np.int64)))
        tail = node.emit("Slice", dims, node.fresh_const(np.array([last], np.int64)),
                         node.fresh_const(np.array([np.iinfo(np.int64).max], np.int64)))
        full = node.emit("Concat", head, node.emit("Cast", sizes, to=onnx.TensorProto.INT64),
                         tail, axis=0)
        node.inputs = node.inputs[:3] + [full]
    elif scales:
        rank = node.emit("Size", node.emit("Shape", node.input(0)))
        ones = node.emit("Expand", node.fresh_const(np.array([1.0], np.float32)),
                         node.emit("Reshape", node.emit(
                             "Sub", rank, node.fresh_const(np.array(last, np.int64))),
                             node.fresh_const(np.array([1], np.int64))))
        full = node.emit("Concat", node.fresh_const(np.ones(first, np.float32)), scales, ones,
                         axis=0)
        node.inputs = node.inputs[:2] + [full] + node.inputs[3:]


@form("ScatterElements", "ScatterND", opsets=(OLDEST_OPSET, 17))
def _scatter_reduction(node: Rewrite) -> None:
    """reduction 'none' (the default) anywhere; 'add'/'mul' from 16; 'min'/'max' from 18."""
    reduction = node.attrs.get("reduction", "none")
    if isinstance(reduction, bytes):
        reduction = reduction.decode()
    if reduction == "none":
        node.attrs.pop("reduction", None)
    elif reduction in ("min", "max"):       # ('add'/'mul' before 16: _fit's attribute check)
        raise node.fail(f"reduction {reduction!r} is newer")


@form("Reshape", opsets=(OLDEST_OPSET, 13))
def _reshape_allowzero(node: Rewrite) -> None:
    """allowzero (14): 1 means the same as 0 when no target entry is a 0."""
    if node.attrs.get("allowzero", 0):
        shape = node.const_input(1)
        if shape is None or (np.asarray(shape) == 0).any():
            raise node.fail("allowzero=1 with a target that may hold a 0")
        del node.attrs["allowzero"]


@form("Shape", opsets=(OLDEST_OPSET, 14))
def _shape_slice(node: Rewrite) -> None:
    """Shape's start/end (15) → Shape, then Slice."""
    start, end = node.attrs.pop("start", 0), node.attrs.pop("end", None)
    if start == 0 and end is None:
        return
    dims = node.emit("Shape", node.input(0))
    ends = np.array([np.iinfo(np.int64).max if end is None else end], np.int64)
    node.op_type = "Slice"
    node.inputs = [dims, node.fresh_const(np.array([start], np.int64)), node.fresh_const(ends)]


@form("CastLike", opsets=(OLDEST_OPSET, 14))
def _cast_like(node: Rewrite) -> None:
    """CastLike (15) → Cast, when the target type's tensor is a constant."""
    like = node.const_input(1)
    if like is None:
        raise node.fail(NOT_AN_OP)
    node.op_type, node.inputs = "Cast", node.inputs[:1]
    node.attrs = {"to": helper.np_dtype_to_tensor_dtype(like.dtype)}


@form("HardSwish", opsets=(OLDEST_OPSET, 13))
def _hard_swish(node: Rewrite) -> None:
    """x * HardSigmoid(x; 1/6, 1/2)."""
    x = node.input(0)
    node.op_type, node.inputs = "Mul", [x, node.emit("HardSigmoid", x, alpha=1 / 6, beta=0.5)]


@form("Mish", opsets=(OLDEST_OPSET, 17))
def _mish(node: Rewrite) -> None:
    """x * tanh(softplus(x))."""
    x = node.input(0)
    node.op_type, node.inputs = "Mul", [x, node.emit("Tanh", node.emit("Softplus", x))]


def _typed(node: Rewrite, value: float, like: str, known: Optional[np.ndarray]) -> str:
    """A constant `value` of the type of tensor `like`: that of a constant input (`known`)
    of that type, else a CastLike (15: _fit refuses it before)."""
    if known is not None:
        return node.fresh_const(np.array(value, known.dtype))
    return node.emit("CastLike", node.fresh_const(np.array(value, np.float32)), like)


@form("Gelu", opsets=(OLDEST_OPSET, 19))
def _gelu(node: Rewrite) -> None:
    """x/2 * (1 + erf(x/sqrt 2)), or with approximate 'tanh' x/2 * (1 + tanh(sqrt(2/pi) *
    (x + 0.044715 x^3)))."""
    x, approximate = node.input(0), node.attrs.pop("approximate", "none")
    if isinstance(approximate, bytes):
        approximate = approximate.decode()
    if approximate == "tanh":
        cubic = node.emit("Mul", node.emit("Mul", x, x), x)
        inner = node.emit("Add", x, node.emit("Mul", cubic, _typed(node, 0.044715, x, None)))
        phi = node.emit("Tanh", node.emit("Mul", inner,
                                          _typed(node, np.sqrt(2 / np.pi), x, None)))
    else:
        phi = node.emit("Erf", node.emit("Mul", x, _typed(node, np.sqrt(0.5), x, None)))
    half = node.emit("Mul", x, _typed(node, 0.5, x, None))
    node.op_type = "Mul"
    node.inputs = [half, node.emit("Add", phi, _typed(node, 1.0, x, None))]


@form("LayerNormalization", opsets=(OLDEST_OPSET, 16))
def _layer_norm(node: Rewrite) -> None:
    """(x - mean) / sqrt(var + epsilon) * scale (+ bias) over the axes from `axis` (< 0) to
    the last, at x's precision (stash_type 1 differs only for 16-bit floats)."""
    axis = node.attrs.get("axis", -1)
    if axis >= 0:
        raise node.fail(f"axis {axis} counts from the front (the rank is unknown here)")
    if any(node.outputs[1:]):
        raise node.fail("its Mean and InvStdDev outputs are used")
    x, scale, bias = node.input(0), node.input(1), node.input(2)
    known = node.const_input(1) if node.const_input(1) is not None else node.const_input(2)
    axes = list(range(axis, 0))
    mean = node.emit("ReduceMean", x, axes=axes, keepdims=1)
    centred = node.emit("Sub", x, mean)
    var = node.emit("ReduceMean", node.emit("Mul", centred, centred), axes=axes, keepdims=1)
    eps = _typed(node, node.attrs.get("epsilon", 1e-5), x, known)
    normal = node.emit("Div", centred, node.emit("Sqrt", node.emit("Add", var, eps)))
    node.outputs = node.outputs[:1]
    node.attrs = {}
    if bias:
        node.op_type, node.inputs = "Add", [node.emit("Mul", normal, scale), bias]
    else:
        node.op_type, node.inputs = "Mul", [normal, scale]


@form("DFT", opsets=(20, None))
def _dft_axis_input(node: Rewrite) -> None:
    """DFT's axis attribute (17) → its third input (20; default -2 there, 1 before)."""
    axis = node.attrs.pop("axis", 1)
    node.inputs = [node.input(0), node.input(1), node.fresh_const(np.array(axis, np.int64))]


@form("GridSample", opsets=(20, None))
def _grid_sample_modes(node: Rewrite) -> None:
    """GridSample's modes renamed at 20: bilinear → linear, bicubic → cubic."""
    mode = node.attrs.get("mode", "bilinear")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    node.attrs["mode"] = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)


@form("GroupNormalization", opsets=(21, None))
def _group_norm_21(node: Rewrite) -> None:
    """Scale and bias per group (18) become per channel (21): the channel count is unknown."""
    raise node.fail("its scale and bias are per channel there, per group in opset 18")
