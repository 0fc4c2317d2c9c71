"""Compile an IR graph into ONNX: each node's prototype lowering emits ONNX nodes."""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import onnx
from onnx import helper

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.export import ExportOptions, record
from tf2ir.ir.io_options import apply_io_options
from tf2ir.ir.graph import Graph, Node
from tf2ir.ir.names import fresh_name
from tf2ir.ir.onnx.opset import (
    MAX_OPSET, OPSET, all_nodes as _all_nodes, changed_by_raising, choose_opset,
    standard_op_types,
)
from tf2ir.ir.onnx.target import to_target
from tf2ir.ir.onnx.writer import ONNX_DTYPES, Initializer, tensor_proto, write_model
from tf2ir.ir.onnx.passes import ONNX_PASSES, optimize_lowered
from tf2ir.ir.onnx.passes.check import check_after_pass
from tf2ir.ir.onnx.precision import apply_precision
from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode
from tf2ir.ir.onnx.node import OpEmitter, read_names
from tf2ir.ir.passes import IR_PASSES, PassManager
from tf2ir.ir.passes.manager import Switches
from tf2ir.ir.prototype import prototypes_of
from tf2ir.ir.tensor import TensorDesc, element_dtype, is_list_dtype

log = logging.getLogger("tf2ir")


def _make_value_info(name: str, dtype: str, shape) -> onnx.ValueInfoProto:
    """A tensor's type, or for a list dtype an ONNX sequence of tensors of its elements'
    type and shape."""
    if is_list_dtype(dtype):
        return helper.make_tensor_sequence_value_info(name, ONNX_DTYPES[element_dtype(dtype)],
                                                      shape)
    return helper.make_tensor_value_info(name, ONNX_DTYPES[dtype], shape)


def _check_onnx_dtype(name: str, desc: TensorDesc) -> None:
    dtype = element_dtype(desc.dtype) if is_list_dtype(desc.dtype) else desc.dtype
    if dtype not in ONNX_DTYPES:
        raise ConversionError(f"dtype {desc.dtype} of {name!r} has no ONNX type")


def value_info(name: str, desc: TensorDesc) -> onnx.ValueInfoProto:
    _check_onnx_dtype(name, desc)
    shape = None
    if desc.shape is not None:
        shape = [d if d is not None else f"{name}_d{i}" for i, d in enumerate(desc.shape)]
    try:
        return _make_value_info(name, desc.dtype, shape)
    except ValueError as exc:        # a dim beyond int64
        raise ConversionError(f"the shape {desc.shape_text()} of {name!r} does not fit ONNX: "
                              f"{exc}") from None


class LowerContext:
    """What a lowering function sees: the node, its ONNX input/output names, and verbs
    to emit ONNX nodes and constants. One context per compiled graph."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.initializers: Dict[str, np.ndarray] = {}
        self._taken = {v.name for v in graph.values()}
        # what the lowerings emit: the ONNX graph the passes then rewrite
        self.onnx = OnnxGraph(self.fresh, [v.name for v in graph.inputs],
                              [v.name for v in graph.outputs], self.initializers)
        self._const_cache: Dict[tuple, str] = {}
        self._node_counts: Dict[str, int] = {}
        self.node: Optional[Node] = None
        self.model: Optional[str] = None
        # graph inputs a lowering declares (`graph_input`), each with its default value; None
        # in a subgraph's context, which cannot declare any
        self.input_defaults: Optional[Dict[str, np.ndarray]] = {}
        self.notes: List[Tuple[str, bool]] = []    # (message, is a warning), see `note`
        # the newest opset whose ops a lowering may write (Gelu's lowering asks)
        self.max_opset = MAX_OPSET
        self.opset: Optional[int] = None     # the target opset, when compile was given one
        self.export = ExportOptions()        # the user's options for the written model

    @property
    def nodes(self) -> List[OnnxNode]:
        """The ONNX nodes emitted so far, in order (a new list)."""
        return self.onnx.nodes

    # -- names -----------------------------------------------------------------
    def _node_name(self, op_type: str) -> str:
        """`<IR node>/<op>_node`, counted within the IR node: node names are a namespace of
        their own (values' names are `fresh`), which ir_locator reads by prefix."""
        base = f"{self.node.name}/{op_type}_node" if self.node is not None else f"{op_type}_node"
        count = self._node_counts.get(base, 0)
        self._node_counts[base] = count + 1
        return base if not count else f"{base}_{count}"

    def fresh(self, hint: str) -> str:
        base = f"{self.node.name}/{hint}" if self.node is not None else hint
        name = fresh_name(base, self._taken)
        self._taken.add(name)
        return name

    @property
    def lowered(self) -> Node:
        """The node being lowered (`lower_node` sets it)."""
        if self.node is None:
            raise RuntimeError("no node is being lowered in this context")
        return self.node

    def input(self, index: int) -> str:
        """The ONNX name of the node's input `index` ('' for an absent optional input)."""
        inputs = self.lowered.inputs
        value = inputs[index] if index < len(inputs) else None
        return "" if value is None else value.name

    def output(self, index: int) -> str:
        return self.lowered.outputs[index].name

    def input_desc(self, index: int) -> TensorDesc:
        return self.lowered.input_desc(index)

    def const_input(self, index: int) -> Optional[np.ndarray]:
        """The numpy value of input `index` when a Const produces it, else None."""
        inputs = self.lowered.inputs
        value = inputs[index] if index < len(inputs) else None
        return None if value is None else value.const_value

    def attr(self, name: str, default: Any = None) -> Any:
        return self.lowered.attrs.get(name, default)

    # -- emitting ----------------------------------------------------------------
    def emit(self, op_type: str, inputs: Sequence[str], outputs: Union[int, Sequence[str]] = 1,
             domain: str = "", **attrs) -> List[str]:
        """Append one ONNX node; `outputs` is a count (fresh names) or explicit names."""
        if isinstance(outputs, int):
            outputs = [self.fresh(op_type) for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.onnx.append(OnnxNode(op_type, inputs, outputs, self._node_name(op_type), domain,
                                  attrs))
        return list(outputs)

    @property
    def op(self) -> "OpEmitter":
        """The one way a lowering writes ONNX: `ctx.op.Add(a, b)` emits one node and returns
        its output name; `out=` names the output, `outputs=N` (or a list of names) gives
        several and returns their list, `domain=` a custom domain; other keywords are the
        node's attributes (None ones are left out)."""
        return OpEmitter(self)

    def constant(self, array: Any, hint: str = "const", dtype: Any = None) -> str:
        """An initializer holding `array`; small constants are shared."""
        array = np.asarray(array, dtype=dtype)
        key = None
        if array.size <= 64 and array.dtype != np.object_:
            key = (array.dtype.str, array.shape, array.tobytes())
            if key in self._const_cache:
                return self._const_cache[key]
        name = self.fresh(hint)
        self.initializers[name] = array
        if key is not None:
            self._const_cache[key] = name
        return name

    def initializer(self, name: str, array: np.ndarray) -> str:
        self.initializers[name] = array
        return name

    def graph_input(self, name: str, default: np.ndarray) -> bool:
        """Make `name` (an output of the node being lowered) a graph input whose value, when it
        is not fed, is `default`: ONNX's optional input, an initializer of the input's name (IR
        version 4 and later). False in a subgraph, which has no inputs of its own to give."""
        if self.input_defaults is None:
            return False
        self.input_defaults[name] = np.asarray(default)
        self.onnx.add_graph_input(name)
        return True

    def note(self, message: str, warning: bool = False) -> None:
        """A note on the conversion, logged once the model is built (a warning says that the
        model differs from the TF graph in a way the user must know)."""
        self.notes.append((message, warning))

    # -- lowering ------------------------------------------------------------------
    def lower_node(self, node: Node) -> None:
        """Run `node`'s prototype lowering in this context."""
        self.node = node
        model = self.model
        proto = prototypes_of(node.graph).find(node.op_type)
        if proto is None or proto.lower_fn is None:
            raise ConversionError("IR op has no ONNX lowering", model=model, node=node.name,
                                  op_type=node.op_type)
        # The lowering is the declaring plugin's code: what it raises (sys.exit() included)
        # is one error naming the plugin and the node (onnx's helpers raise
        # NotImplementedError for a dtype: a built-in lowering's node failure too).
        with proto.calling("its ONNX lowering", node, model=model):
            proto.lower_fn(self, node)
        for value in node.outputs:           # what later nodes read must exist now
            if (value.uses or value in node.graph.outputs) \
                    and not self.onnx.available(value.name):
                raise ConversionError(
                    f"its ONNX lowering wrote nothing for output {value.name!r}", model=model,
                    node=node.name, op_type=node.op_type,
                    plugin=node.graph.provenance.get(node.name) or proto.plugin or None)

    # -- subgraphs (If branches, Loop bodies) ------------------------------------------
    def subcontext(self) -> "LowerContext":
        """A context for an ONNX subgraph: its own node list; value names, initializers and
        shared constants are the model's (ONNX subgraphs read outer-scope names)."""
        child = LowerContext.__new__(LowerContext)
        child.graph, child.node, child.model = self.graph, None, self.model
        child.initializers, child._taken = self.initializers, self._taken
        child.onnx = OnnxGraph(child.fresh, initializers=self.initializers, open_scope=True)
        child._const_cache, child._node_counts = self._const_cache, self._node_counts
        child.input_defaults, child.notes = None, self.notes
        child.max_opset, child.opset, child.export = self.max_opset, self.opset, self.export
        return child

    def lower_subgraph(self, graph: Graph, inputs: Optional[Sequence[str]] = None) -> List[str]:
        """Lower the nodes of IR subgraph `graph` into this context and return the ONNX names
        of its outputs. Its inputs read `inputs` (ONNX names, through Identity nodes); with
        None they stay free names the caller declares (a Loop body's inputs). Names of
        `graph` that the model uses already are renamed (ONNX names are model-wide)."""
        for value in list(graph.values()):
            if value.name in self._taken:
                graph.rename_value(value, fresh_name(value.name, self._taken, graph.has_value))
            self._taken.add(value.name)
        saved = self.node
        self.node = None
        if inputs is not None:
            if len(inputs) != len(graph.inputs):
                raise ConversionError(f"subgraph {graph.name!r} has {len(graph.inputs)} inputs, "
                                      f"given {len(inputs)}")
            outputs = {id(v) for v in graph.outputs}
            for value, name in zip(graph.inputs, inputs):
                if value.uses or id(value) in outputs:   # an unused argument costs nothing
                    self.emit("Identity", [name], [value.name])
        for node in graph.nodes:
            self.lower_node(node)
        self.node = saved
        return [v.name for v in graph.outputs]

    def make_subgraph(self, name: str, inputs: Sequence[onnx.ValueInfoProto],
                      outputs: Sequence[Tuple[str, TensorDesc]]) -> onnx.GraphProto:
        """A GraphProto of this context's nodes. An output no node here produces (a
        subgraph input, an outer value, an initializer, a repeat) is copied by an Identity."""
        produced = {o for n in self.nodes for o in n.output}
        names, infos = [], []
        for out, desc in outputs:
            if out not in produced or out in names:
                out = self.emit("Identity", [out], [self.fresh(f"{name}/{out}")])[0]
            names.append(out)
            infos.append(subgraph_value_info(out, desc))
        return helper.make_graph(self.onnx.to_protos(), name, list(inputs), infos)


def lower_graph(graph: Graph, model: Optional[str] = None,
                max_opset: int = MAX_OPSET, opset: Optional[int] = None,
                export: Optional[ExportOptions] = None) -> LowerContext:
    """Lower every node of `graph`; a target `opset` picks the lowerings' forms for it;
    `export` is what lowerings may read of the user's options (`ctx.export.quantized`)."""
    ctx = LowerContext(graph)
    ctx.model, ctx.max_opset, ctx.opset = model, max_opset, opset
    if export is not None:
        ctx.export = export
    for node in graph.nodes:
        ctx.lower_node(node)
    ctx.node = None
    return ctx


def subgraph_value_info(name: str, desc: TensorDesc) -> onnx.ValueInfoProto:
    """A subgraph input/output type: unknown dims stay unnamed (they may change per run of
    the subgraph), unknown rank gives no shape."""
    _check_onnx_dtype(name, desc)
    try:
        return _make_value_info(name, desc.dtype, None if desc.shape is None else list(desc.shape))
    except ValueError as exc:        # a dim beyond int64
        raise ConversionError(f"the shape {desc.shape_text()} of {name!r} does not fit ONNX: "
                              f"{exc}") from None


ALL_PASSES = IR_PASSES + ONNX_PASSES


def pass_manager(passes: Switches = None, check_passes: bool = False) -> PassManager:
    """The pass manager of a compilation: the IR and ONNX passes, switched by `passes`
    (--passes words); with `check_passes` the graph is checked after every pass."""
    check_passes = check_passes or os.environ.get("TF2IR_CHECK_PASSES") == "1"
    return PassManager(ALL_PASSES, passes, "--passes",
                       check=check_after_pass if check_passes else None)


def build_model(graph: Graph, model_name: Optional[str] = None, passes: Switches = None,
                check_passes: bool = False, manager: Optional[PassManager] = None,
                opset: Optional[int] = None, export: Optional[ExportOptions] = None):
    """Return (ModelProto without initializers, list of used initializers). The IR passes
    run on `graph` first (in place: PartitionedCall subgraphs inlined, constants folded),
    then the lowering, then the ONNX passes; `passes` switches them (or `manager` runs
    them: tools/report.py gives one that records what each pass removed). `export`: what
    the user asks of the written model (ir/export.py); its opset is `opset`'s default."""
    export = (export or ExportOptions()).check()   # (a compile without the pipeline too)
    opset = export.opset if opset is None else opset
    manager = manager if manager is not None else pass_manager(passes, check_passes)
    apply_io_options(graph, export, model_name)   # the interface asked for, before the passes
    try:
        manager.run(graph, kind="ir")   # folding runs plugins' kernels: name the model too
    except ConversionError as exc:
        raise exc.located(model=model_name)
    ctx = lower_graph(graph, model=model_name, opset=opset, export=export)
    optimize_lowered(ctx, graph, manager)
    apply_precision(ctx, export, model_name)
    nodes = ctx.onnx.to_protos()
    if opset is not None:           # the target's forms (ir/onnx/forms.py), its opset declared
        try:
            nodes = to_target(nodes, opset, ctx.initializers, ctx.fresh, ir_locator(graph))
        except ConversionError as exc:
            raise exc.located(model=model_name)
    # (rare) lowered again with opset 18's ops only; asked after the passes, when the graph
    # is smallest, since the first question loads onnx's schema registry (about 7 MB)
    elif changed_by_raising(types := standard_op_types(nodes)):
        ctx = lower_graph(graph, model=model_name, max_opset=OPSET, export=export)
        optimize_lowered(ctx, graph, manager)
        apply_precision(ctx, export, model_name)
        nodes = ctx.onnx.to_protos()
        types = standard_op_types(nodes)
    for message, warning in ctx.notes:
        (log.warning if warning else log.info)("note: %s", message)
    # the names nodes read (walked again only when the target's forms rewrote the nodes)
    used = read_names(nodes) if opset is not None else ctx.onnx.read_names()
    outputs = [v.name for v in graph.outputs]
    used.update(outputs)
    defaults = ctx.input_defaults or {}
    inputs = {v.name for v in graph.inputs} | set(defaults)
    # An output that is a graph input or a constant needs a node to produce it under its name.
    for value in graph.outputs:
        if value.name in inputs or value.name in ctx.initializers:
            alias = value.name
            raise ConversionError(f"output {alias!r} is a graph input or constant; "
                                  "the converter must insert an Identity", model=model_name)
    initializers: List[Initializer] = [(n, a) for n, a in ctx.initializers.items() if n in used]
    # Optional inputs: a graph input with an initializer of its name holding the default.
    initializers += list(defaults.items())
    onnx_graph = helper.make_graph(
        nodes, graph.name,
        [value_info(v.name, v.desc) for v in graph.inputs]
        + [value_info(name, graph.value(name).desc) for name in defaults],
        [value_info(v.name, v.desc) for v in graph.outputs])
    _type_custom_outputs(onnx_graph, graph)
    domains = sorted({n.domain for n in _all_nodes(nodes) if n.domain and n.domain != "ai.onnx"})
    model = helper.make_model(onnx_graph, producer_name="tf2ir",
                              opset_imports=[helper.make_opsetid(
                                  "", opset if opset is not None else choose_opset(types))]
                              + [helper.make_opsetid(d, 1) for d in domains])
    model.ir_version = 9   # the export options kept: verify feeds and compares it as converted
    return record(model, export), initializers


def _type_custom_outputs(onnx_graph: onnx.GraphProto, graph: Graph) -> None:
    """value_info for the outputs of nodes in custom domains, which onnx's shape inference
    cannot type: the runtime entry gives their Python kernels these types."""
    descs: Dict[str, TensorDesc] = {}

    def collect(g: Graph) -> None:
        for value in g.values():
            descs.setdefault(value.name, value.desc)
        for node in g.nodes:
            for sub in node.subgraphs.values():
                collect(sub)

    def annotate(g: onnx.GraphProto) -> None:
        for node in g.node:
            if node.domain not in ("", "ai.onnx"):
                given = {v.name for v in g.output}
                g.value_info.extend(value_info(out, descs[out]) for out in node.output
                                    if out in descs and out not in given)
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    annotate(attr.g)
    if any(n.domain not in ("", "ai.onnx") for n in onnx_graph.node) or any(
            a.type == onnx.AttributeProto.GRAPH for n in onnx_graph.node for a in n.attribute):
        collect(graph)
        annotate(onnx_graph)


def compile_to_file(graph: Graph, path: str, model_name: Optional[str] = None,
                    passes: Switches = None, check_passes: bool = False,
                    check: bool = True, manager: Optional[PassManager] = None,
                    opset: Optional[int] = None,
                    export: Optional[ExportOptions] = None) -> onnx.ModelProto:
    """Compile `graph` and write it to `path`: a unique temporary file, checked by
    onnx.checker (unless `check` is False), renamed over `path`; nothing is written when
    anything fails."""
    model, initializers = build_model(graph, model_name, passes, check_passes, manager, opset,
                                      export)
    try:
        write_model(model, initializers, path, check=check,
                    locate=lambda name: ir_locator(graph)(name))   # (only errors ask)
    except ConversionError as exc:
        raise exc.located(model=model_name)
    return model


def ir_locator(graph: Graph) -> Callable[[str], Dict[str, str]]:
    """Maps an ONNX name (node, value or initializer) to the IR node it was lowered from:
    lowering names what it emits `<IR node>/<hint>`, so the longest prefix ending at a
    '/' that names an IR node (or value) is the place. The plugin is the one that mapped the
    node (the graph's provenance) or else the one that declared its op (and lowering)."""
    nodes: Dict[str, Node] = {}
    values: Dict[str, Node] = {}
    plugins: Dict[str, str] = {}

    def collect(g: Graph) -> None:
        plugins.update({k: v for k, v in g.provenance.items() if k not in plugins})
        for node in g.nodes:
            nodes.setdefault(node.name, node)
            for value in node.outputs:
                values.setdefault(value.name, node)
            for sub in node.subgraphs.values():
                collect(sub)

    collect(graph)

    def locate(name: str) -> Dict[str, str]:
        candidate = name
        while candidate:
            node = nodes.get(candidate) or values.get(candidate)
            if node is not None:
                where = {"node": node.name, "op_type": node.op_type}
                proto = prototypes_of(node.graph).find(node.op_type)
                owner = plugins.get(node.name) or (proto.plugin if proto is not None else "")
                if owner:
                    where["plugin"] = owner
                return where
            candidate = candidate.rpartition("/")[0]
        return {}
    return locate


def compile_to_model(graph: Graph, model_name: Optional[str] = None,
                     passes: Switches = None, opset: Optional[int] = None,
                     export: Optional[ExportOptions] = None) -> onnx.ModelProto:
    """The whole model in memory (initializers copied in): for tests and small graphs."""
    model, initializers = build_model(graph, model_name, passes, opset=opset, export=export)
    model.graph.initializer.extend(tensor_proto(n, a) for n, a in initializers)
    return model
