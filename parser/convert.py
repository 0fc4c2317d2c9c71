"""The mapping stage of the pipeline: walks the kept TF nodes, runs each node's plugin and
emits verified IR nodes; every unsupported or failing op type is collected into one report."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple


from tf2ir.ir.errors import ConversionError, ExitStatus, plugin_code
from tf2ir.ir.graph import Graph, Value
from tf2ir.ir.infer import infer_node
from tf2ir.ir.tensor import TensorDesc
from tf2ir.parser.graph_view import TfGraph, TfNode, split_tensor_name
from tf2ir.plugins.mapping import IrOp
from tf2ir.plugins.registry import TENSORFLOW
from tf2ir.plugins.subgraph import SUBGRAPH_KEY, build_subgraph

# Ops whose outputs are their inputs: dropped, their consumers read the inputs directly.
PASSTHROUGH = {"Identity", "StopGradient", "Snapshot", "PreventGradient",
               "CheckNumerics", "EnsureShape"}
UNSUPPORTED_EXIT = 3
FRAMEWORK_NAMES = {"TFLITE": "TFLite"}   # in messages
# IR ops whose output compiles to a graph input or an initializer of its own name
# (PlaceholderWithDefault: an optional input): a graph output they give is copied by an Identity.
SOURCE_OPS = ("Const", "PlaceholderWithDefault")


@dataclass
class ConversionReport:
    model: str
    framework: str = TENSORFLOW   # the model's: its op types are this framework's
    tf_nodes: int = 0
    kept_nodes: int = 0
    ir_nodes: int = 0
    plugins_used: Dict[str, int] = field(default_factory=dict)
    op_types: Dict[str, int] = field(default_factory=dict)   # TF op types converted → count
    fusions: Dict[str, int] = field(default_factory=dict)    # fusion pass → matches fused
    phases: Dict[str, float] = field(default_factory=dict)
    # For verification: TF tensor (node, port) → its IR Value (in walk order, so
    # topological), and TF node → the plugin that mapped it.
    tensors: Dict[Tuple[str, int], Value] = field(default_factory=dict, repr=False)
    node_plugins: Dict[str, str] = field(default_factory=dict, repr=False)
    # TF node → its IR attributes as auto mapping set them (IrOp.auto_attrs), for reports
    attr_origins: Dict[str, Dict[str, tuple]] = field(default_factory=dict, repr=False)

    @property
    def node_kind(self) -> str:
        """What the model's nodes are, in a summary: "TF", or "TFLite"."""
        return FRAMEWORK_NAMES.get(self.framework, "TF")


@dataclass
class _Problem:
    count: int = 0
    example: str = ""
    message: str = ""
    error: Optional[ConversionError] = None


class Converter:
    """Maps the kept nodes of one TF graph into IR with the plugins of a PluginManager.
    `arguments` (a function body's) are the graph's inputs, in order, instead of its
    Placeholders."""

    def __init__(self, tf_graph: TfGraph, manager, input_shapes=None,
                 arguments: Optional[Sequence[Tuple[str, TensorDesc]]] = None):
        self.tf = tf_graph
        self.model = tf_graph.model
        self.manager = manager
        self.input_shapes = dict(input_shapes or {})
        self.graph = Graph(_graph_name(self.model), manager.prototype_table)   # its plugins' ops
        self.values: Dict[Tuple[str, int], Value] = {}
        for name, desc in arguments or ():
            self.values[(name, 0)] = self.graph.add_input(name, desc.copy())
        self.unsupported: Dict[str, _Problem] = {}
        self.failures: Dict[str, _Problem] = {}
        self.report = ConversionReport(self.model, tf_graph.framework, tf_nodes=len(tf_graph.nodes))
        self.report.tensors = self.values

    # -- the walk ----------------------------------------------------------------------
    def run(self, outputs: List[Tuple[str, int]], order: List[str]) -> Graph:
        """Map the nodes of `order` (topological); the graph's outputs are `outputs`."""
        self.report.kept_nodes = len(order)
        nodes, values, op_types = self.tf.nodes, self.values, self.report.op_types
        for name in order:
            node = nodes[name]
            op_types[node.op_type] = op_types.get(node.op_type, 0) + 1
            missing = False
            for key in node.inputs:
                if key not in values:
                    missing = True
                    break
            if missing:
                # An input failed to convert (reported already); keep looking for op
                # types no plugin maps, so one report lists them all.
                if node.op_type not in PASSTHROUGH and lookup(self.manager, node) is None:
                    self._record(self.unsupported, node, "no plugin maps this op type")
                continue
            try:
                self._convert_node(node)
            except ConversionError as exc:
                self._record(self.failures, node, exc.message, exc)
        self._raise_problems()
        self._set_outputs(outputs)
        self.report.ir_nodes = len(self.graph.nodes)
        return self.graph

    def _convert_node(self, node: TfNode) -> None:
        op = node.op_type
        if (node.name, 0) in self.values:
            return    # a function argument: a graph input already
        if op == "Placeholder" or (op == "PlaceholderWithDefault" and node.name in self.input_shapes):
            self._placeholder(node)    # a default named by --inputs: a required input instead
        elif op == "Const":
            value = node.attr("value")
            self.values[(node.name, 0)] = self.graph.add_const(value, node.name)
        elif op in PASSTHROUGH:
            for port, (src, src_port) in enumerate(node.inputs):
                self.values[(node.name, port)] = self.values[(src, src_port)]
        else:
            self._map_with_plugin(node)

    def _placeholder(self, node: TfNode) -> None:
        dtype = node.attr("dtype")
        shape = self.input_shapes.get(node.name, node.attr("shape"))
        declared = node.attr("shape")
        if node.name in self.input_shapes and declared is not None and len(declared) != len(shape):
            raise ConversionError(f"--inputs gives rank {len(shape)}, the graph declares "
                                  f"rank {len(declared)} {list(declared)}", exit_code=ExitStatus.USAGE)
        if shape is None:
            # ONNX wants at least the rank of a graph input (onnx.checker rejects none).
            raise ConversionError(f"input '{node.name}' has unknown rank; give its shape with "
                                  f"--inputs {node.name}:D1,D2,... (? for unknown dims)", exit_code=ExitStatus.USAGE)
        self.values[(node.name, 0)] = self.graph.add_input(node.name, TensorDesc(dtype, shape))

    def _map_with_plugin(self, node: TfNode) -> None:
        reg = lookup(self.manager, node)
        if reg is None:
            self._record(self.unsupported, node, "no plugin maps this op type")
            return
        inputs = [self.values[key] for key in node.inputs]
        irop = IrOp(reg.ir_type, node.name, inputs, self.graph)
        # Plugin code: whatever it raises (sys.exit() included) is its failure, named.
        with plugin_code("its parse function", reg.plugin):
            reg.parse_fn(node, irop)
            subgraph = build_subgraph(reg, node, irop)   # one-to-many: PartitionedCall
        proto = irop.prototype
        if proto is None:
            raise ConversionError(f"plugin {reg.plugin} maps to IR op {irop.op_type}, "
                                  "which has no op prototype", plugin=reg.plugin)
        if len(irop.inputs) < len(proto.inputs):   # missing optional inputs are None
            fixed = [p for p in proto.inputs if p.kind != "dynamic"]
            if len(fixed) == len(proto.inputs) \
                    and all(p.kind == "optional" for p in fixed[len(irop.inputs):]):
                irop.inputs += [None] * (len(fixed) - len(irop.inputs))
        num_outputs = irop.num_outputs
        if num_outputs is None:
            num_outputs = proto.default_output_count(irop.attrs)
        if num_outputs is None:
            raise ConversionError(f"plugin {reg.plugin} does not say how many outputs the "
                                  f"dynamic outputs of {irop.op_type} have (set op.num_outputs "
                                  "or use auto_mapping_dynamic)", plugin=reg.plugin)
        ir_node = self.graph.add_node(irop.op_type, irop.inputs, irop.attrs, node.name,
                                      num_outputs=num_outputs)
        if subgraph is not None:
            ir_node.subgraphs[SUBGRAPH_KEY] = subgraph
        for index, (fmt, origin) in irop.output_formats.items():
            ir_node.outputs[index].desc.set_format(fmt, origin)
        try:
            infer_node(ir_node)
        except ConversionError as exc:
            raise exc.located(plugin=reg.plugin)
        for port, value in enumerate(ir_node.outputs):
            self.values[(node.name, port)] = value
        self.report.plugins_used[reg.plugin] = self.report.plugins_used.get(reg.plugin, 0) + 1
        self.report.node_plugins[node.name] = reg.plugin
        self.report.attr_origins[node.name] = irop.auto_attrs

    # -- problems ------------------------------------------------------------------------
    def _record(self, table: Dict[str, _Problem], node: TfNode, message: str,
                error: Optional[ConversionError] = None) -> None:
        problem = table.setdefault(node.op_type, _Problem(example=node.name, message=message,
                                                          error=error))
        problem.count += 1

    def _raise_problems(self) -> None:
        if self.unsupported:
            parts = [f"{op} ({p.count} node{'s' if p.count > 1 else ''}, e.g. '{p.example}')"
                     for op, p in sorted(self.unsupported.items())]
            framework = self.tf.framework
            kind = "" if framework == TENSORFLOW else f"{FRAMEWORK_NAMES.get(framework, framework)} "
            message = (f"{len(self.unsupported)} unsupported {kind}op type"
                       f"{'s' if len(self.unsupported) > 1 else ''}: {', '.join(parts)}")
            if self.failures:
                message += "; also failed: " + self._failure_text()
            raise ConversionError(message, model=self.model, exit_code=ExitStatus.UNSUPPORTED)
        if self.failures:
            if len(self.failures) == 1:
                op, p = next(iter(self.failures.items()))
                raise p.error.located(model=self.model, node=p.example, op_type=op)
            raise ConversionError(f"{len(self.failures)} op types failed: " + self._failure_text(),
                                  model=self.model)

    def _failure_text(self) -> str:
        return "; ".join(f"{op} ({p.count}x, e.g. '{p.example}'"
                         f"{', plugin ' + p.error.plugin if p.error and p.error.plugin else ''}): {p.message}"
                         for op, p in sorted(self.failures.items()))

    # -- outputs -------------------------------------------------------------------------
    def _set_outputs(self, tensors: List[Tuple[str, int]]) -> None:
        for name, port in tensors:
            key = (name, port)
            if key not in self.values:
                raise ConversionError(f"output '{name}:{port}' does not exist",
                                      model=self.model, node=name, exit_code=ExitStatus.USAGE)
            value = self.values[key]
            out_name = name if port == 0 else f"{name}:{port}"
            is_source = value.producer is None or value.producer.op_type in SOURCE_OPS
            if is_source or value in self.graph.outputs or value.name != out_name \
                    and self.graph.has_value(out_name):
                value = self.graph.add_node("Identity", [value], name=f"{out_name}/output",
                                            output_descs=[TensorDesc(value.desc.dtype)]).outputs[0]
                infer_node(value.producer)
            holder = self.graph.value(out_name) if self.graph.has_value(out_name) else value
            if holder not in self.graph.inputs:   # an input keeps its name; its copy is NAME/output
                if holder is not value:           # a Const output: its copy takes the name
                    self.graph.rename_value(holder, self.graph.unique_name(f"{out_name}/value"))
                self.graph.rename_value(value, out_name)
            self.graph.outputs.append(value)


def output_tensors(tf_graph: TfGraph, requested: Sequence[str] = ()) -> List[Tuple[str, int]]:
    """The tensors a conversion outputs: the requested ones, else every sink's."""
    if requested:
        tensors = [split_tensor_name(name) for name in requested]
        for name, _ in tensors:
            if name not in tf_graph:
                raise ConversionError(f"output '{name}' is not a node of the graph",
                                      model=tf_graph.model, exit_code=ExitStatus.USAGE)
        return tensors
    sinks = tf_graph.sinks()
    if not sinks:
        raise ConversionError("the graph has no outputs (no node is a sink)", model=tf_graph.model)
    tensors = []
    for name in sinks:
        node = tf_graph[name]
        count = len(node.inputs) if node.op_type in PASSTHROUGH else 1
        tensors.extend((name, port) for port in range(max(count, 1)))
    return [t for t in tensors if tf_graph[t[0]].op_type not in ("NoOp",)]


def lookup(manager, node):
    """The registration mapping `node`: keyed by its op type and its framework (a TFLite
    model's nodes are TFLITE's, but for its Flex ops, which are TF NodeDefs)."""
    return manager.lookup(node.op_type, getattr(node, "framework", TENSORFLOW))


def _graph_name(model: str) -> str:
    base = os.path.basename(model.rstrip("/")) or "model"
    return os.path.splitext(base)[0]
