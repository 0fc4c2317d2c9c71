"""The conversion driver: walks the TF graph, runs each node's plugin and emits IR."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple


from tf2ir.ir import ConversionError, Graph, TensorDesc, Value
from tf2ir.ir.verify import verify_node
from tf2ir.parser.functions import inline_functions
from tf2ir.parser.graph_view import TfGraph, TfNode, split_tensor_name
from tf2ir.parser.scope_fusion import apply_scope_fusion
from tf2ir.plugins.mapping import IrOp
from tf2ir.plugins.subgraph import SUBGRAPH_KEY, build_subgraph

# Ops whose outputs are their inputs: dropped, their consumers read the inputs directly.
PASSTHROUGH = {"Identity", "StopGradient", "Snapshot", "PreventGradient",
               "CheckNumerics", "EnsureShape"}
UNSUPPORTED_EXIT = 3


@dataclass
class ConversionReport:
    model: str
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


@dataclass
class _Problem:
    count: int = 0
    example: str = ""
    message: str = ""
    error: Optional[ConversionError] = None


def parse_input_shapes(specs: Sequence[str]) -> Dict[str, Tuple[Optional[int], ...]]:
    """['input:1,224,224,3', 'mask:?,16'] → {'input': (1, 224, 224, 3), 'mask': (None, 16)}."""
    shapes = {}
    for spec in specs:
        for item in spec.split(";") if ";" in spec else [spec]:
            name, sep, dims = item.rpartition(":")
            if not sep or not name:
                raise ConversionError(f"bad --inputs value {item!r}; expected NAME:D1,D2,... "
                                      "(use ? or -1 for an unknown dimension)", exit_code=2)
            try:
                shape = tuple(None if d.strip() in ("?", "-1") else int(d)
                              for d in dims.split(",")) if dims.strip() else ()
            except ValueError:
                raise ConversionError(f"bad --inputs dimensions in {item!r}", exit_code=2) from None
            shapes[split_tensor_name(name)[0]] = shape
    return shapes


class Converter:
    """Converts one TF graph into IR with the plugins of a PluginManager."""

    def __init__(self, tf_graph: TfGraph, manager, input_shapes=None, outputs=None):
        self.tf = tf_graph
        self.model = tf_graph.model
        self.manager = manager
        self.input_shapes = dict(input_shapes or {})
        self.requested_outputs = list(outputs or [])
        self.graph = Graph(_graph_name(self.model))
        self.values: Dict[Tuple[str, int], Value] = {}
        self.unsupported: Dict[str, _Problem] = {}
        self.failures: Dict[str, _Problem] = {}
        self.report = ConversionReport(self.model, tf_nodes=len(tf_graph.nodes))
        self.report.tensors = self.values

    # -- the walk ----------------------------------------------------------------------
    def run(self) -> Graph:
        outputs = self._output_tensors()
        order = self.tf.upstream(sorted({n for n, _ in outputs}, key=list(self.tf.nodes).index))
        self.report.kept_nodes = len(order)
        for name in self.input_shapes:
            if name not in self.tf or self.tf[name].op_type != "Placeholder":
                raise ConversionError(f"--inputs names '{name}', which is not a Placeholder "
                                      "of the graph", model=self.model, exit_code=2)
        for name in order:
            node = self.tf[name]
            self.report.op_types[node.op_type] = self.report.op_types.get(node.op_type, 0) + 1
            if any((src, port) not in self.values for src, port in node.inputs):
                # An input failed to convert (reported already); keep looking for op
                # types no plugin maps, so one report lists them all.
                if node.op_type not in PASSTHROUGH and self.manager.lookup(node.op_type) is None:
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
        if op == "Placeholder":
            self._placeholder(node)
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
                                  f"rank {len(declared)} {list(declared)}", exit_code=2)
        if shape is None:
            # ONNX wants at least the rank of a graph input (onnx.checker rejects none).
            raise ConversionError(f"input '{node.name}' has unknown rank; give its shape with "
                                  f"--inputs {node.name}:D1,D2,... (? for unknown dims)", exit_code=2)
        self.values[(node.name, 0)] = self.graph.add_input(node.name, TensorDesc(dtype, shape))

    def _map_with_plugin(self, node: TfNode) -> None:
        reg = self.manager.lookup(node.op_type)
        if reg is None:
            self._record(self.unsupported, node, "no plugin maps this op type")
            return
        inputs = [self.values[key] for key in node.inputs]
        irop = IrOp(reg.ir_type, node.name, inputs, self.graph)
        try:
            reg.parse_fn(node, irop)
            subgraph = build_subgraph(reg, node, irop)   # one-to-many: PartitionedCall
        except ConversionError as exc:
            raise exc.located(plugin=reg.plugin)
        except Exception as exc:
            raise ConversionError(f"plugin {reg.plugin} failed: {type(exc).__name__}: {exc}",
                                  plugin=reg.plugin) from exc
        proto = irop.prototype
        if proto is None:
            raise ConversionError(f"plugin {reg.plugin} maps to IR op {irop.op_type}, "
                                  "which has no op prototype", plugin=reg.plugin)
        fixed = [p for p in proto.inputs if p.kind != "dynamic"]
        if len(fixed) == len(proto.inputs) and len(irop.inputs) < len(fixed) \
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
            verify_node(ir_node)
        except ConversionError as exc:
            raise exc.located(plugin=reg.plugin)
        for port, value in enumerate(ir_node.outputs):
            self.values[(node.name, port)] = value
        self.report.plugins_used[reg.plugin] = self.report.plugins_used.get(reg.plugin, 0) + 1
        self.report.node_plugins[node.name] = reg.plugin

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
            message = (f"{len(self.unsupported)} unsupported op type"
                       f"{'s' if len(self.unsupported) > 1 else ''}: {', '.join(parts)}")
            if self.failures:
                message += "; also failed: " + self._failure_text()
            raise ConversionError(message, model=self.model, exit_code=UNSUPPORTED_EXIT)
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
    def _output_tensors(self) -> List[Tuple[str, int]]:
        if self.requested_outputs:
            tensors = [split_tensor_name(name) for name in self.requested_outputs]
            for name, _ in tensors:
                if name not in self.tf:
                    raise ConversionError(f"output '{name}' is not a node of the graph",
                                          model=self.model, exit_code=2)
            return tensors
        sinks = self.tf.sinks()
        if not sinks:
            raise ConversionError("the graph has no outputs (no node is a sink)", model=self.model)
        tensors = []
        for name in sinks:
            node = self.tf[name]
            count = len(node.inputs) if node.op_type in PASSTHROUGH else 1
            tensors.extend((name, port) for port in range(max(count, 1)))
        return [t for t in tensors if self.tf[t[0]].op_type not in ("NoOp",)]

    def _set_outputs(self, tensors: List[Tuple[str, int]]) -> None:
        for name, port in tensors:
            key = (name, port)
            if key not in self.values:
                raise ConversionError(f"output '{name}:{port}' does not exist",
                                      model=self.model, node=name, exit_code=2)
            value = self.values[key]
            out_name = name if port == 0 else f"{name}:{port}"
            is_source = value.producer is None or value.producer.op_type == "Const"
            if is_source or value in self.graph.outputs or value.name != out_name \
                    and self.graph.has_value(out_name):
                value = self.graph.add_node("Identity", [value], name=f"{out_name}/output",
                                            output_descs=[TensorDesc(value.desc.dtype)]).outputs[0]
                verify_node(value.producer)
            holder = self.graph.value(out_name) if self.graph.has_value(out_name) else value
            if holder not in self.graph.inputs:   # an input keeps its name; its copy is NAME/output
                if holder is not value:           # a Const output: its copy takes the name
                    self.graph.rename_value(holder, self.graph.unique_name(f"{out_name}/value"))
                self.graph.rename_value(value, out_name)
            self.graph.outputs.append(value)


def _graph_name(model: str) -> str:
    import os
    base = os.path.basename(model.rstrip("/")) or "model"
    return os.path.splitext(base)[0]


def convert_graph_def(graph_def, model: str, manager=None, input_shapes=None, outputs=None,
                      fusion: Optional[Dict[str, bool]] = None) -> Tuple[Graph, ConversionReport]:
    """GraphDef → IR graph (verified), with the report of what was done. `fusion` switches
    scope fusion passes on or off by name ({'gelu': False}; 'all' names every pass)."""
    if manager is None:
        from tf2ir.plugins.manager import PluginManager
        manager = PluginManager()
    start = time.perf_counter()
    tf_graph = TfGraph(graph_def, model)
    inline_functions(tf_graph)   # PartitionedCall nodes of the function library
    fusion_start, tf_nodes = time.perf_counter(), len(tf_graph.nodes)
    fused = apply_scope_fusion(tf_graph, manager, fusion, outputs or ())
    fusion_time = time.perf_counter() - fusion_start
    converter = Converter(tf_graph, manager, input_shapes, outputs)
    converter.report.tf_nodes = tf_nodes   # before fusion replaced any
    converter.report.fusions = fused
    converter.report.phases["fusion"] = fusion_time
    graph = converter.run()
    converter.report.phases["mapping"] = time.perf_counter() - start
    return graph, converter.report


def convert_file(path: str, manager=None, input_shapes=None, outputs=None,
                 fusion: Optional[Dict[str, bool]] = None, signature: Optional[str] = None,
                 tags: Optional[Sequence[str]] = None):
    """A model file (.pb, .pbtxt, SavedModel dir with `signature`/`tags`, .keras, .h5) → IR."""
    from tf2ir.parser.load import load_model
    start = time.perf_counter()
    graph_def, default_outputs = load_model(path, signature, tags)
    outputs = outputs or default_outputs
    load_time = time.perf_counter() - start
    graph, report = convert_graph_def(graph_def, path, manager, input_shapes, outputs, fusion)
    report.phases = {"load": load_time, **report.phases}
    return graph, report
