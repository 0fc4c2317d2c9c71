"""Scope fusion passes: the Python form of CANN's ScopeBasePass / ScopePattern / FusionScopesResult.

A pass declares what to match as data (`ScopePattern`: a name scope, counts of op types
inside it, optionally a small `Structure` of op types) and one function that turns a
`ScopeMatch` into a `FusionResult`. One generic matcher (`tf2ir.parser.scope_fusion`) runs
every pass on the TF graph before op mapping and rewrites each accepted match:

* many-to-one: the matched nodes become one fused node of `FusionResult.type`; the op
  mapping registered for that origin type with `.fusion_parse_params_fn(fn)` maps it, and
  `fn(fused_node, op)` fills the IR op (`fused_node.attrs` are the result's attrs,
  `fused_node.inner_nodes` the TF nodes it replaced).
* many-to-many: the result lists `inner_nodes`, IR ops emitted as they are, no mapping needed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Set, Tuple, Union

import numpy as np

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.passes.manager import PassRecord
from tf2ir.plugins.fusion_rank import static_rank
from tf2ir.plugins.tfnode import TfNode

Count = Union[int, Tuple[int, Optional[int]]]
Tensor = Tuple[str, int]                       # a TF tensor: (node name, output port)
LabelOrNode = Union[str, TfNode]               # a Structure label or a matched TF node
WILDCARD = "*"
INNER_NODE_PREFIX = "ir:"   # origin type of a many-to-many result's node: "ir:" + IR op type


def at_least(n: int) -> Count:
    return (n, None)


def at_most(n: int) -> Count:
    return (0, n)


def between(low: int, high: int) -> Count:
    return (low, high)


def count_range(count: Count) -> Tuple[int, Optional[int]]:
    return (count, count) if isinstance(count, int) else (int(count[0]), count[1])


def _edges(spec: Union[str, Sequence[Tuple[str, str]]]) -> List[Tuple[str, str]]:
    """'a -> b -> c, x -> c' (chains separated by ',' ';' or newlines) or a list of pairs."""
    if not isinstance(spec, str):
        return [(a, b) for a, b in spec]
    edges: List[Tuple[str, str]] = []
    for chain in re.split(r"[,;\n]", spec):
        labels = [p.strip() for p in chain.split("->") if p.strip()]
        edges.extend(zip(labels, labels[1:]))
    return edges


@dataclass
class Structure:
    """A small data-flow graph the matched nodes must form: `nodes` maps a label to op
    types ('Mul', 'AddV2|Add', '*' for any node); `edges` say producer -> consumer.
    Wildcard nodes stand for tensors entering the match and are not part of it."""

    nodes: Dict[str, str]
    edges: Union[str, Sequence[Tuple[str, str]]] = ()

    def __post_init__(self):
        self.edges = _edges(self.edges)
        for a, b in self.edges:
            for label in (a, b):
                if label not in self.nodes:
                    raise ValueError(f"structure edge names unknown node {label!r}")

    def op_types(self, label: str) -> Optional[set]:
        """The allowed op types of `label`, or None for a wildcard."""
        text = self.nodes[label]
        return None if text == WILDCARD else set(text.split("|"))


OpTypes = Tuple[str, ...]


@dataclass(frozen=True)
class Needs:
    """What a graph must hold for a pattern to match anywhere (a quick necessary test, not a
    match): at least `least` nodes of some `types` for each of `counts`, and for each of
    `edges` a node of the first types feeding one of the second (the structure's edges
    between non-wildcard labels)."""

    counts: Tuple[Tuple[OpTypes, int], ...] = ()
    edges: Tuple[Tuple[OpTypes, OpTypes], ...] = ()


class GraphSummary(Protocol):
    """The op-type facts of a graph that `Needs` are tested against (the parser's index)."""

    op_counts: Dict[str, int]

    def op_type_edges(self) -> Set[Tuple[str, str]]: ...


def needed_op_types(pattern: "ScopePattern") -> Needs:
    """The `Needs` of `pattern`."""
    counts = [(tuple(types.split("|")), count_range(count)[0])
              for types, count in pattern.op_types.items()]
    edges: List[Tuple[OpTypes, OpTypes]] = []
    structure = pattern.structure
    if structure is not None:
        kinds = {label: structure.op_types(label) for label in structure.nodes}
        counts += [(tuple(sorted(types)), 1) for types in kinds.values() if types is not None]
        for a, b in _edges(structure.edges):
            source, target = kinds[a], kinds[b]
            if source is not None and target is not None:
                edges.append((tuple(sorted(source)), tuple(sorted(target))))
    return Needs(tuple(counts), tuple(edges))


def holds(needs: Needs, graph: GraphSummary) -> bool:
    """Whether the graph has what `needs` asks for (edges are looked at only when the
    counts hold: they cost a walk over the graph's inputs)."""
    counts = graph.op_counts
    if not all(sum(counts.get(t, 0) for t in types) >= least for types, least in needs.counts):
        return False
    if not needs.edges:
        return True
    pairs = graph.op_type_edges()
    return all(any((a, b) in pairs for a in sources for b in targets)
               for sources, targets in needs.edges)


@dataclass
class ScopePattern:
    """What one match looks like (CANN ScopePattern). `scope` is a regular expression
    searched in the name-scope path ('(^|/)Gelu$'); then every name scope that matches is
    a candidate. Without `scope`, each occurrence of `structure` in the graph is one.
    `op_types` counts the candidate's ops: {'Erf|Erfc': 1, 'Mul': at_least(1)}."""

    scope: Optional[str] = None
    op_types: Dict[str, Count] = field(default_factory=dict)
    structure: Optional[Structure] = None
    name: str = ""

    def __post_init__(self):
        if self.scope is None and self.structure is None:
            raise ValueError("a ScopePattern needs a scope, a structure or both")
        self.scope_re = re.compile(self.scope) if self.scope is not None else None

    def counts_match(self, op_types: Sequence[str]) -> bool:
        for types, count in self.op_types.items():
            allowed = set(types.split("|"))
            n = sum(1 for t in op_types if t in allowed)
            low, high = count_range(count)
            if n < low or (high is not None and n > high):
                return False
        return True


class FusionDeclined(Exception):
    """Raised by `ScopeMatch.decline`: the pattern matched but a condition of the fusion does
    not hold, so the nodes are left to their own plugins. The runner logs the reason (seen
    with -v); only a pass the user switched on by name (`--fusion on:NAME`) makes it an error."""


class ScopeMatch:
    """One matched scope or structure, as a pass sees it (CANN's Scope): its nodes, the
    tensors entering and leaving it, the structure's labels, and constant lookups."""

    def __init__(self, pattern: ScopePattern, scope: str, nodes: List[TfNode],
                 labels: Dict[str, TfNode], inputs: List[Tensor], outputs: List[Tensor],
                 graph: Any):
        self.pattern = pattern
        self.scope = scope            # "" for a structure match outside any scope pattern
        self.nodes = nodes            # the TF nodes matched, in graph order
        self.labels = labels          # structure label → TfNode (wildcards included)
        self.inputs = inputs          # tensors produced outside, read inside, in order
        self.outputs = outputs        # tensors produced inside, read outside (or sinks)
        self.graph = graph            # the TfGraph (read-only for a pass)

    def node(self, label: str) -> TfNode:
        return self.labels[label]

    def of_type(self, *op_types: str) -> List[TfNode]:
        return [n for n in self.nodes if n.op_type in op_types]

    def tensor(self, label: str) -> Tensor:
        """The tensor a label stands for: a wildcard's is the one its pattern consumers
        read; another node's is its output 0."""
        node = self.labels[label]
        if self.pattern.structure is not None and self.pattern.structure.op_types(label) is None:
            for n in self.nodes:
                for src in n.inputs:
                    if src[0] == node.name:
                        return src
        return (node.name, 0)

    def operands(self, label_or_node: LabelOrNode) -> List[Tensor]:
        node = self.labels[label_or_node] if isinstance(label_or_node, str) else label_or_node
        return list(node.inputs)

    def const_value(self, tensor: Tensor) -> Optional[np.ndarray]:
        """The value of a tensor computed from constants only (Const, through Identity,
        Sqrt, Neg, Reciprocal), else None."""
        name, port = tensor
        node = self.graph.nodes.get(name)
        if node is None or port != 0:
            return None
        if node.op_type == "Const":
            return np.asarray(node.attr("value"))
        fold = _FOLD.get(node.op_type)
        if fold is None or len(node.inputs) != 1:
            return None
        value = self.const_value(node.inputs[0])
        return None if value is None else fold(value)

    def scalar(self, tensor: Tensor) -> Optional[float]:
        value = self.const_value(tensor)
        return float(value.reshape(-1)[0]) if value is not None and value.size == 1 else None

    def const_operand(self, label_or_node: LabelOrNode) -> Tuple[Optional[float], Optional[Tensor]]:
        """For a binary op with one scalar constant operand: (that scalar, the other operand)."""
        a, b = self.operands(label_or_node)[:2]
        if self.scalar(a) is not None:
            return self.scalar(a), b
        return self.scalar(b), (a if self.scalar(b) is not None else None)

    def decline(self, reason: str) -> None:
        """Leave the matched nodes alone, saying why (raises `FusionDeclined`)."""
        raise FusionDeclined(reason)

    def rank(self, tensor: Tensor) -> Optional[int]:
        """The rank of a TF tensor where the graph alone says it (placeholder shapes,
        constants, reshapes to a constant or packed shape, and ops whose output rank follows
        from their inputs' ranks), else None. Never a guess."""
        return static_rank(self.graph.nodes, tensor, {}, 0)

    def __repr__(self) -> str:
        return f"<ScopeMatch {self.pattern.name or self.scope!r} {len(self.nodes)} nodes>"


_FOLD: Dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Identity": lambda v: v, "Sqrt": np.sqrt, "Neg": np.negative,
    "Reciprocal": np.reciprocal, "Rsqrt": lambda v: 1 / np.sqrt(v)}


@dataclass
class InnerNode:
    """One IR node of a many-to-many result (CANN InnerNodeInfo). Inputs are
    `FusionResult.input(i)`, another inner node's `output(port)`, or a numpy constant."""

    name: str
    ir_type: str
    inputs: List[Any] = field(default_factory=list)
    attrs: Dict[str, Any] = field(default_factory=dict)
    num_outputs: Optional[int] = None

    def output(self, port: int = 0) -> Tuple[str, str, int]:
        return ("inner", self.name, port)


@dataclass
class FusionResult:
    """What a match becomes (CANN FusionScopesResult). `inputs`/`outputs` are TF tensors
    (default: the match's boundary); fused input i is `inputs[i]`, fused output j replaces
    `outputs[j]` for every consumer. A many-to-one result names the fused origin `type`;
    a many-to-many one lists `inner_nodes` and says in `output_of` which inner output
    is each fused output."""

    type: str = ""
    name: str = ""
    description: str = ""
    inputs: Optional[List[Tensor]] = None
    outputs: Optional[List[Tensor]] = None
    attrs: Dict[str, Any] = field(default_factory=dict)
    inner_nodes: List[InnerNode] = field(default_factory=list)
    output_of: List[Tuple[str, str, int]] = field(default_factory=list)

    @staticmethod
    def input(index: int) -> Tuple[str, int]:
        return ("input", index)

    def add_inner_node(self, name: str, ir_type: str, inputs: Sequence[Any],
                       num_outputs: Optional[int] = None, **attrs) -> InnerNode:
        node = InnerNode(name, ir_type, list(inputs), attrs, num_outputs)
        self.inner_nodes.append(node)
        return node


ResultFn = Callable[[ScopeMatch], Optional[FusionResult]]


@dataclass
class ScopeFusionPass:
    """A named scope fusion pass (CANN ScopeBasePass): patterns tried in order, and the
    function making each accepted match's `FusionResult` (None declines the match).
    Build with `scope_fusion_pass(name).pattern(...).generate_result_fn(fn)`."""

    name: str
    patterns: List[ScopePattern] = field(default_factory=list)
    generate_result_fn_: Optional[ResultFn] = None
    after: List[str] = field(default_factory=list)
    before: List[str] = field(default_factory=list)
    enabled: bool = True
    description: str = ""
    plugin: str = ""        # set by the plugin manager
    source: str = ""

    def pattern(self, *patterns: ScopePattern) -> "ScopeFusionPass":
        self.patterns.extend(patterns)
        return self

    def run_after(self, *names: str) -> "ScopeFusionPass":
        self.after.extend(names)
        return self

    def run_before(self, *names: str) -> "ScopeFusionPass":
        self.before.extend(names)
        return self

    def disabled_by_default(self) -> "ScopeFusionPass":
        """Off unless a conversion asks for it (`--fusion on:NAME`)."""
        self.enabled = False
        return self

    def generate_result_fn(self, fn: ResultFn) -> "ScopeFusionPass":
        self.generate_result_fn_ = fn
        return self

    def __call__(self, fn: ResultFn) -> ResultFn:
        """Use the pass as a decorator on its result function."""
        self.generate_result_fn_ = fn
        return fn

    def record(self, run: Optional[Callable[[Any], int]] = None) -> PassRecord:
        """This pass as the pass manager's record (kind "fusion"); `run` runs it on a
        fusion target (the parser's matcher provides it)."""
        return PassRecord(self.name, "fusion", run or (lambda target: 0), self.description,
                          tuple(self.after), tuple(self.before), default=self.enabled,
                          plugin=self.plugin)

    def generate_result(self, match: ScopeMatch) -> Optional[FusionResult]:
        if self.generate_result_fn_ is None:
            raise ConversionError(f"fusion pass {self.name} has no generate_result function")
        return self.generate_result_fn_(match)


@dataclass
class DeferredFusionPass:
    """A built-in fusion pass known from the built-in index until a graph may need it: the
    plugin manager imports its module only when the graph holds what one of its patterns
    needs (`patterns`: each pattern's `needed_op_types`), so a graph it cannot match never
    pays for the module nor for the matcher's networkx."""

    name: str
    load: Callable[[], ScopeFusionPass]
    patterns: List[Needs] = field(default_factory=list)     # per pattern
    after: List[str] = field(default_factory=list)
    before: List[str] = field(default_factory=list)
    enabled: bool = True
    description: str = ""
    plugin: str = ""
    source: str = ""

    def record(self, run: Optional[Callable[[Any], int]] = None) -> PassRecord:
        return PassRecord(self.name, "fusion", run or (lambda target: 0), self.description,
                          tuple(self.after), tuple(self.before), default=self.enabled,
                          plugin=self.plugin)

    def resolve(self, graph: GraphSummary) -> Optional[ScopeFusionPass]:
        """The pass itself (its module imported) when one of its patterns may match the
        graph, else None: then it would fuse nothing."""
        if any(holds(needs, graph) for needs in self.patterns):
            return self.load()
        return None


def scope_fusion_pass(name: str, description: str = "") -> ScopeFusionPass:
    """Start a scope fusion pass; a plugin returns it from `tf2ir_fusion_passes`."""
    return ScopeFusionPass(name, description=description)


def inner_node_registration(origin_type: str):
    """The op mapping for a many-to-many result's node (origin 'ir:<IR type>'): its
    attributes are the IR op's attributes, as the pass set them."""
    from tf2ir.plugins.registry import OpRegistration

    def parse(src, op):
        op.attrs.update(src.attrs)
        if getattr(src, "num_outputs", None):
            op.num_outputs = src.num_outputs
    ir_type = origin_type[len(INNER_NODE_PREFIX):]
    return OpRegistration(ir_type, origin_types=[origin_type], parse_params_fn_=parse,
                          plugin="scope-fusion", source=__file__)
