"""The one conversion pipeline: load → graph view → inline → fuse → map → IR.

Every command builds a `Pipeline` (convert, check, batch, verify, bench) and the parser
uses the same object, recursively, for the bodies of library functions (If branches, While
bodies): `convert_function` is the declared interface a function library calls back.
`front` stops after fusion, so `tf2ir check` sees exactly the nodes `convert` maps; with
`walks` set (a list), every mapping walk (the model's and each function body's) is kept with
the error it raised, which is how `check` lists every error of a dry run of `convert`.
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.export import ExportOptions
from tf2ir.ir.graph import Graph
from tf2ir.ir.passes.manager import Switches
from tf2ir.ir.tensor import Shape, TensorDesc
from tf2ir.parser.attrs import tensor_limit
from tf2ir.parser.convert import PASSTHROUGH, ConversionReport, Converter, lookup, output_tensors
from tf2ir.parser.fallback import Segment, cut_segments
from tf2ir.parser.functions import inline_functions
from tf2ir.parser.graph_view import TfGraph, split_tensor_name
from tf2ir.parser.scope_fusion import apply_scope_fusion, fusion_manager
from tf2ir.plugins.registry import TENSORFLOW


# While a conversion runs, the cyclic garbage collector starts a young collection after this
# many new container objects instead of 700: a conversion makes several objects a node and
# keeps nearly all of them, so collecting every 700 walked a growing heap again and again
# (a third of the 200k-node chain's mapping). Cycles are still collected, just in batches.
GC_GEN0_THRESHOLD = 100_000


@contextmanager
def few_collections():
    """The garbage collector's young generation widened to GC_GEN0_THRESHOLD for the block
    (nested blocks keep the outer setting); the caller's thresholds come back after it."""
    saved = gc.get_threshold()
    if saved[0] >= GC_GEN0_THRESHOLD:
        yield
        return
    gc.set_threshold(GC_GEN0_THRESHOLD, *saved[1:])
    try:
        yield
    finally:
        gc.set_threshold(*saved)


# What the converter handles itself: never cut into a fallback segment.
CONVERTER_OPS = frozenset(PASSTHROUGH) | {"Placeholder", "Const", "NoOp"}


@dataclass
class Options:
    """What a user may ask of a conversion (the command line's shared options)."""

    input_shapes: Dict[str, Shape] = field(default_factory=dict)
    outputs: Optional[List[str]] = None      # tensor names; None: the model's own or the sinks
    fusion: Switches = None                  # --fusion words
    passes: Switches = None                  # --passes words (IR and ONNX passes)
    signature: Optional[str] = None          # SavedModel signature
    tags: Optional[Sequence[str]] = None     # SavedModel tags
    check_passes: bool = False               # check the graph after every pass
    # the most bytes a constant may expand to when it is decoded (TF "splat" constants: a
    # value repeated to fill its shape); None: DEFAULT_MAX_TENSOR_BYTES (1 GiB)
    max_tensor_bytes: Optional[int] = None
    # "tf": the nodes no plugin maps become TFSubgraph segments TensorFlow runs (the
    # fallback delegate, parser/fallback.py); None: they are unsupported (exit 3)
    fallback: Optional[str] = None
    # what the user asks of the written ONNX model: opset, channels-first and renamed
    # inputs/outputs, half precision, int8 (ir/export.py)
    export: ExportOptions = field(default_factory=ExportOptions)


@dataclass
class Front:
    """The TF graph after the front half (view, inline, fuse): what will be mapped."""

    tf_graph: TfGraph
    outputs: List[Tuple[str, int]]           # the output tensors
    kept: List[str]                          # the nodes the outputs need, in topological order
    tf_nodes: int                            # node count before fusion
    fusions: Dict[str, int]                  # fusion pass → matches fused
    fusion_time: float = 0.0
    segments: List[Segment] = field(default_factory=list)   # --fallback tf: what TF runs


@dataclass
class Walk:
    """One mapping walk as `Pipeline.walks` keeps it: the converter (its report, unsupported op
    types and failures, one example node each), whether it walked a function body, the walk
    that was running when it began (the body's caller), and the error it raised, if any."""

    converter: Converter
    body: bool
    parent: Optional["Walk"] = None
    error: Optional[ConversionError] = None
    done: bool = False


class Pipeline:
    """One conversion setup: the plugins of a manager and the user's options."""

    def __init__(self, manager=None, options: Optional[Options] = None):
        self._manager = manager
        self.options = options or Options()
        # tools/report.py sets a dict here to receive what the stages saw (the front, the
        # converter, each function body's TF graph with its IR graph); None: nothing kept
        self.trace: Optional[Dict[str, Any]] = None
        # tools/check.py sets a list here to receive every mapping walk (function bodies'
        # too, shared with the bodies' pipelines); None: nothing kept
        self.walks: Optional[List[Walk]] = None
        # Bad --fusion or --passes words fail here, before any work.
        fusion_manager(self.manager, self.options.fusion)
        self.options.export.check()
        if self.options.export.opset is not None:
            from tf2ir.ir.onnx.target import check_opset
            check_opset(self.options.export.opset)
        if self.options.passes is not None:
            from tf2ir.ir.onnx.compile import pass_manager
            pass_manager(self.options.passes)

    @property
    def manager(self):
        if self._manager is None:
            from tf2ir.plugins.manager import PluginManager
            self._manager = PluginManager()
        return self._manager

    @property
    def prototypes(self):
        """The op prototype table of this pipeline's plugin manager: the graphs it makes read
        it (tf2ir.ir.prototype.prototypes_of)."""
        return self.manager.prototype_table

    # -- the stages ------------------------------------------------------------------------
    def load(self, path: str):
        """A model file → (GraphDef, the outputs it names or None)."""
        from tf2ir.parser.load import load_model
        return load_model(path, self.options.signature, self.options.tags)

    def front(self, graph_def, model: str, outputs: Optional[Sequence[str]] = None) -> Front:
        """Graph view, function inlining and scope fusion; the outputs and the nodes kept."""
        outputs = list(outputs or self.options.outputs or [])
        try:
            with tensor_limit(self.options.max_tensor_bytes), few_collections():
                if isinstance(graph_def, TfGraph):   # a view already (a TFLite model's)
                    tf_graph = graph_def
                    tf_graph.bind(self)
                else:
                    tf_graph = TfGraph(graph_def, model)
                    inline_functions(tf_graph, self)
                tf_nodes = len(tf_graph.nodes)
                start = time.perf_counter()
                fusions = apply_scope_fusion(tf_graph, self.manager, self.options.fusion,
                                             outputs, self.options.check_passes)
                fusion_time = time.perf_counter() - start
                tensors = (tf_graph.output_tensors(outputs) if tf_graph.framework != TENSORFLOW
                           else output_tensors(tf_graph, outputs))   # a TFLite view names its own
                self._check_input_names(tf_graph)
                kept = tf_graph.upstream(_in_graph_order(tf_graph, tensors))
                kept, tensors, segments = self._fallback(tf_graph, kept, tensors)
        except ConversionError as exc:
            raise exc.located(model=model)
        return Front(tf_graph, tensors, kept, tf_nodes, fusions, fusion_time, segments)

    def map(self, front: Front, arguments: Optional[Sequence[Tuple[str, TensorDesc]]] = None,
            ) -> Tuple[Graph, ConversionReport]:
        """Each kept TF node → its plugin's IR node; the verified IR graph and the report."""
        converter = Converter(front.tf_graph, self.manager, self.options.input_shapes,
                              arguments=arguments)
        converter.report.tf_nodes = front.tf_nodes
        converter.report.fusions = front.fusions
        converter.report.phases["fusion"] = front.fusion_time
        if self.trace is not None:   # kept even when the walk finds unsupported ops
            self.trace.update(front=front, converter=converter)
        walk = None
        if self.walks is not None:
            running = [w for w in self.walks if not w.done]
            walk = Walk(converter, arguments is not None, running[-1] if running else None)
            self.walks.append(walk)
        try:
            with tensor_limit(self.options.max_tensor_bytes), few_collections():
                graph = converter.run(front.outputs, front.kept)
        except ConversionError as exc:
            if walk is not None:
                walk.error = exc
            raise
        finally:
            if walk is not None:
                walk.done = True
        graph.provenance.update(converter.report.node_plugins)   # errors after mapping name them
        return graph, converter.report

    # -- whole conversions -----------------------------------------------------------------
    def convert_graph_def(self, graph_def, model: str,
                          outputs: Optional[Sequence[str]] = None) -> Tuple[Graph, ConversionReport]:
        start = time.perf_counter()
        graph, report = self.map(self.front(graph_def, model, outputs))
        report.phases["mapping"] = time.perf_counter() - start
        return graph, report

    def convert_file(self, path: str) -> Tuple[Graph, ConversionReport]:
        """A model file (.pb, .pbtxt, SavedModel dir, .keras, .h5) → IR graph and report."""
        start = time.perf_counter()
        with few_collections():
            graph_def, default_outputs = self.load(path)
            load_time = time.perf_counter() - start
            graph, report = self.convert_graph_def(graph_def, path,
                                                   self.options.outputs or default_outputs)
        report.phases = {"load": load_time, **report.phases}
        return graph, report

    def convert_function(self, tf_graph: TfGraph, outputs: Sequence[str],
                         arguments: Sequence[Tuple[str, TensorDesc]]) -> Graph:
        """A function body's graph view → its IR graph, whose inputs are `arguments` (the
        body's argument placeholders, in order) and outputs the `outputs` nodes. The same
        stages as a model, with the plugins of this pipeline; no fusion switches apply."""
        with tensor_limit(self.options.max_tensor_bytes):
            inline_functions(tf_graph, self)
            apply_scope_fusion(tf_graph, self.manager, None, outputs, self.options.check_passes)
            tensors = output_tensors(tf_graph, outputs)
            kept = tf_graph.upstream(_in_graph_order(tf_graph, tensors))
            kept, tensors, segments = self._fallback(tf_graph, kept, tensors)
        front = Front(tf_graph, tensors, kept, len(tf_graph.nodes), {}, 0.0, segments)
        return self._map_body(front, arguments, self.options.fallback)

    def convert_tflite_subgraph(self, view, arguments: Sequence[Tuple[str, TensorDesc]]) -> Graph:
        """A TFLite body subgraph's view (parser/tflite_view.py: a WHILE's cond or body, an
        IF's branch) → its IR graph, whose inputs are `arguments`, through these plugins."""
        with tensor_limit(self.options.max_tensor_bytes):
            tensors = view.output_tensors()
            kept = view.upstream(_in_graph_order(view, tensors))
        return self._map_body(Front(view, tensors, kept, len(view.nodes), {}, 0.0, []),
                              arguments, None)

    def _map_body(self, front: Front, arguments, fallback: Optional[str]) -> Graph:
        """A function body's front half mapped by a pipeline of these plugins and limits
        (no fusion switches); the graph and its TF graph go to the trace."""
        body = Pipeline(self.manager, Options(check_passes=self.options.check_passes,
                                              max_tensor_bytes=self.options.max_tensor_bytes,
                                              fallback=fallback))
        body.walks = self.walks
        graph, _ = body.map(front, arguments)
        if self.trace is not None:
            self.trace.setdefault("bodies", []).append((graph, front.tf_graph))
        return graph

    def compile(self, graph: Graph, path: str, model: Optional[str] = None, manager=None):
        """Lower `graph` to ONNX and write it to `path` (checked, atomic); return the
        ModelProto (without its weights). `manager`: a pass manager to run instead of the
        options' (tools/report.py records what each pass did)."""
        from tf2ir.ir.onnx.compile import compile_to_file
        with few_collections():
            return compile_to_file(graph, path, model_name=model, passes=self.options.passes,
                                   check_passes=self.options.check_passes, manager=manager,
                                   export=self.options.export)

    def _fallback(self, tf_graph: TfGraph, kept: List[str], tensors):
        """With `fallback` "tf", the unmapped nodes of `kept` cut into TFSubgraph segments."""
        if self.options.fallback is None:
            return kept, tensors, []
        if self.options.fallback != "tf":
            raise ConversionError(f"unknown fallback {self.options.fallback!r} (only 'tf')",
                                  exit_code=ExitStatus.USAGE)
        if tf_graph.framework != TENSORFLOW:   # TensorFlow cannot run a TFLite operator
            raise ConversionError("--fallback tf takes TensorFlow models; a TFLite model's "
                                  "operators are not TF ops", exit_code=ExitStatus.USAGE)

        def supported(node) -> bool:
            return node.op_type in CONVERTER_OPS or lookup(self.manager, node) is not None
        return cut_segments(tf_graph, kept, list(tensors), supported)

    # -- checks ----------------------------------------------------------------------------
    def _check_input_names(self, tf_graph: TfGraph) -> None:
        for name in self.options.input_shapes:
            if name not in tf_graph or tf_graph[name].op_type not in ("Placeholder",
                                                                     "PlaceholderWithDefault"):
                raise ConversionError(f"--inputs names '{name}', which is not a Placeholder "
                                      "or PlaceholderWithDefault of the graph", model=tf_graph.model,
                                      exit_code=ExitStatus.USAGE)


def _in_graph_order(tf_graph: TfGraph, tensors: Sequence[Tuple[str, int]]) -> List[str]:
    """The nodes of `tensors`, each once, in the graph's node order (linear in the graph)."""
    names = {name for name, _ in tensors}
    return [name for name in tf_graph.nodes if name in names]


def parse_input_shapes(specs: Sequence[str]) -> Dict[str, Shape]:
    """['input:1,224,224,3', 'mask:?,16'] → {'input': (1, 224, 224, 3), 'mask': (None, 16)}."""
    shapes: Dict[str, Shape] = {}
    for spec in specs:
        for item in spec.split(";") if ";" in spec else [spec]:
            name, sep, dims = item.rpartition(":")
            if not sep or not name:
                raise ConversionError(f"bad --inputs value {item!r}; expected NAME:D1,D2,... "
                                      "(use ? or -1 for an unknown dimension)",
                                      exit_code=ExitStatus.USAGE)
            try:
                shape = tuple(None if d.strip() in ("?", "-1") else int(d)
                              for d in dims.split(",")) if dims.strip() else ()
            except ValueError:
                raise ConversionError(f"bad --inputs dimensions in {item!r}",
                                      exit_code=ExitStatus.USAGE) from None
            if any(d is not None and not 0 <= d < 1 << 63 for d in shape):
                raise ConversionError(f"bad --inputs dimensions in {item!r}; each is a size "
                                      "from 0 to 2^63-1, or ? or -1 for unknown",
                                      exit_code=ExitStatus.USAGE)
            shapes[split_tensor_name(name)[0]] = shape
    return shapes


def convert_graph_def(graph_def, model: str, manager=None, input_shapes=None, outputs=None,
                      fusion: Switches = None, max_tensor_bytes: Optional[int] = None,
                      ) -> Tuple[Graph, ConversionReport]:
    """GraphDef → verified IR graph and report, through a Pipeline with these options."""
    options = Options(input_shapes=dict(input_shapes or {}), outputs=outputs, fusion=fusion,
                      max_tensor_bytes=max_tensor_bytes)
    return Pipeline(manager, options).convert_graph_def(graph_def, model)


def convert_file(path: str, manager=None, input_shapes=None, outputs=None,
                 fusion: Switches = None, signature: Optional[str] = None,
                 tags: Optional[Sequence[str]] = None, max_tensor_bytes: Optional[int] = None,
                 ) -> Tuple[Graph, ConversionReport]:
    """A model file → verified IR graph and report, through a Pipeline with these options."""
    options = Options(input_shapes=dict(input_shapes or {}), outputs=outputs, fusion=fusion,
                      signature=signature, tags=tags, max_tensor_bytes=max_tensor_bytes)
    return Pipeline(manager, options).convert_file(path)
