"""`tf2ir.ConversionResult`: what one conversion made (the ONNX model, its report and the IR
graph), and `save(path)`, which writes the model as `tf2ir convert` does: checked by
onnx.checker, atomically, with external data past 2 GB."""

from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from tf2ir.ir.errors import ConversionError

if TYPE_CHECKING:
    import numpy as np
    import onnx
    from tf2ir.ir.graph import Graph
    from tf2ir.parser.convert import ConversionReport
    from tf2ir.parser.pipeline import Pipeline


@dataclass
class Report:
    """What a conversion did: the counts, op types, fusions and phase times `tf2ir convert -v`
    logs, and the notes and warnings it prints. `details` is the pipeline's own
    ConversionReport (with the TF tensor → IR value map verification uses)."""

    model: str
    tf_nodes: int = 0                                        # TF nodes before fusion
    kept_nodes: int = 0                                      # nodes the outputs need
    ir_nodes: int = 0                                        # IR nodes mapped
    onnx_nodes: int = 0                                      # ONNX nodes compiled
    opset: Optional[int] = None                              # the model's ONNX opset
    op_types: Dict[str, int] = field(default_factory=dict)   # TF op type → nodes converted
    plugins_used: Dict[str, int] = field(default_factory=dict)
    fusions: Dict[str, int] = field(default_factory=dict)    # fusion pass → matches
    phases: Dict[str, float] = field(default_factory=dict)   # phase → seconds
    notes: List[str] = field(default_factory=list)           # plugin overrides in effect
    warnings: List[str] = field(default_factory=list)        # what the lowering warned of
    details: Any = field(default=None, repr=False, compare=False)
    framework: str = "TENSORFLOW"                            # the model's (TFLITE: op types too)

    @property
    def node_kind(self) -> str:
        """What the model's nodes are, in a summary: "TF", or "TFLite"."""
        from tf2ir.parser.convert import FRAMEWORK_NAMES
        return FRAMEWORK_NAMES.get(self.framework, "TF")

    def __str__(self) -> str:
        lines = [f"{self.model}: {self.tf_nodes} {self.node_kind} nodes, {self.kept_nodes} kept, "
                 f"{self.ir_nodes} IR nodes, {self.onnx_nodes} ONNX nodes"
                 + (f" (opset {self.opset})" if self.opset is not None else "")]
        lines += [f"  {name:<8} {seconds:.3f} s" for name, seconds in self.phases.items()]
        lines += [f"  fused    {name}: {count} match{'es' if count > 1 else ''}"
                  for name, count in self.fusions.items()]
        lines += [f"  note: {note}" for note in self.notes]
        lines += [f"  {warning}" for warning in self.warnings]
        return "\n".join(lines)


class ConversionResult:
    """One conversion's result. `model`: the onnx.ModelProto with its weights (above
    protobuf's 2 GB limit, only the initializers under 1 KB are in it: the others are in
    `initializers`, and `save` writes them as external data); `report`: a `Report`; `ir`:
    the IR graph (after the IR passes the compile ran on it); `save(path)` writes the model."""

    def __init__(self, pipeline: "Pipeline", graph: "Graph", report: "ConversionReport",
                 label: str, warnings: Optional[List[str]] = None):
        self.pipeline = pipeline
        self.ir = graph
        self.label = label
        self.report = Report(label, report.tf_nodes, report.kept_nodes, report.ir_nodes,
                             op_types=dict(report.op_types),
                             plugins_used=dict(report.plugins_used),
                             fusions=dict(report.fusions), phases=report.phases,
                             warnings=list(warnings or ()), details=report,
                             framework=report.framework)
        self.notes = self.report.notes
        self._skeleton: Optional["onnx.ModelProto"] = None   # the model without initializers
        self._initializers: List[Tuple[str, "np.ndarray"]] = []
        self._model: Optional["onnx.ModelProto"] = None

    # -- compiling ----------------------------------------------------------------------
    def compile(self, manager: Any = None, quiet: bool = False) -> "onnx.ModelProto":
        """Lower the IR graph to ONNX in memory (the IR and ONNX passes, the export options);
        return the model without its initializers. `manager`: a pass manager to run instead
        of the options' (tools/report.py's records what each pass did)."""
        from tf2ir.ir.onnx.compile import build_model
        from tf2ir.parser.pipeline import few_collections
        options = self.pipeline.options
        start = time.perf_counter()
        with few_collections(), collected_notes(quiet) as warnings:
            model, initializers = build_model(self.ir, self.label, passes=options.passes,
                                              check_passes=options.check_passes,
                                              manager=manager, export=options.export)
        self.report.phases["compile"] = time.perf_counter() - start
        self.report.warnings.extend(warnings)
        self._skeleton, self._initializers, self._model = model, initializers, None
        self.report.onnx_nodes = len(model.graph.node)
        self.report.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                                 None)
        return model

    @property
    def compiled(self) -> bool:
        return self._skeleton is not None

    @property
    def skeleton(self) -> "onnx.ModelProto":
        """The ONNX model without its initializers (cheap: the weights stay numpy arrays)."""
        if self._skeleton is None:
            raise ConversionError("the conversion was not compiled to ONNX", model=self.label)
        return self._skeleton

    @property
    def initializers(self) -> List[Tuple[str, "np.ndarray"]]:
        """The model's initializers as (name, numpy array) pairs, kept out of the proto."""
        self.skeleton
        return list(self._initializers)

    @property
    def weight_bytes(self) -> int:
        return sum(int(a.nbytes) for _, a in self._initializers)

    @property
    def model(self) -> "onnx.ModelProto":
        """The onnx.ModelProto with its weights (made once, on first use)."""
        if self._model is None:
            from tf2ir.ir.onnx.writer import EXTERNAL_MIN_BYTES, PROTOBUF_LIMIT, tensor_proto
            skeleton = self.skeleton
            model = type(skeleton)()
            model.CopyFrom(skeleton)
            whole = self.weight_bytes + skeleton.ByteSize() <= PROTOBUF_LIMIT - (1 << 20)
            model.graph.initializer.extend(
                tensor_proto(n, a) for n, a in self._initializers
                if whole or a.nbytes < EXTERNAL_MIN_BYTES or a.dtype.kind in "OSU")
            self._model = model
        return self._model

    # -- writing ------------------------------------------------------------------------
    def save(self, path: "str | os.PathLike[str]", check: bool = True) -> str:
        """Write the model to `path` as `tf2ir convert` does: a temporary file beside it,
        checked by onnx.checker (unless `check` is False), renamed over `path` (with
        `path.data` beside it above 2 GB); on any failure nothing is written and an existing
        file is left as it was. Return the path."""
        from tf2ir.ir.atomic import check_output_path
        from tf2ir.ir.onnx.compile import ir_locator
        from tf2ir.ir.onnx.writer import write_model
        path = os.fspath(path)
        source = self.label if os.path.exists(self.label) else None
        inputs = [source] if source else []
        if source and os.path.isdir(source):
            inputs += [os.path.join(d, n) for d, _, names in os.walk(source) for n in names]
        check_output_path(path, inputs)
        if not os.path.exists(path + ".data") or os.path.isfile(path + ".data"):
            check_output_path(path + ".data", inputs, what="output data file")
        model, graph = self.skeleton, self.ir
        kept = len(model.graph.initializer)
        try:
            write_model(model, self._initializers, path, check=check,
                        locate=lambda name: ir_locator(graph)(name))   # (only errors ask)
        except ConversionError as exc:
            raise exc.located(model=self.label)
        finally:   # the writer adds initializers to the model it is given: not to ours
            del model.graph.initializer[kept:]
        return path

    # -- running ------------------------------------------------------------------------
    def session(self, providers: Optional[Sequence[str]] = None) -> Any:
        """A `tf2ir.InferenceSession` of the model (plugin ops run by the conversion's
        plugins' kernels)."""
        from tf2ir.ir.prototype import prototypes_of
        from tf2ir.tools.runtime import InferenceSession
        return InferenceSession(self.model, providers=providers, prototypes=prototypes_of(self.ir))

    def run(self, inputs: Mapping[str, Any],
            outputs: Optional[Sequence[str]] = None) -> Dict[str, "np.ndarray"]:
        """Run the model in onnxruntime on `inputs` (name → array); {output name: array}."""
        import numpy as np
        session = self.session()
        names = list(outputs) if outputs else [o.name for o in self.skeleton.graph.output]
        values = session.run(names, {k: np.asarray(v) for k, v in inputs.items()})
        return dict(zip(names, values))

    def __repr__(self) -> str:
        r = self.report
        if not self.compiled:
            return f"<ConversionResult {r.model!r}: {r.ir_nodes} IR nodes, not compiled>"
        io = ", ".join(v.name for v in self.skeleton.graph.input) or "-"
        out = ", ".join(v.name for v in self.skeleton.graph.output) or "-"
        return (f"<ConversionResult {r.model!r}: {r.tf_nodes} {r.node_kind} nodes -> {r.ir_nodes} IR "
                f"nodes -> {r.onnx_nodes} ONNX nodes, opset {r.opset}, "
                f"{_size(self.weight_bytes)} of weights; inputs {io}; outputs {out}>")


class _Notes(logging.Handler):
    """Collects what the conversion logs at warning level or above (lowering notes) while
    it runs; with `echo`, prints them too, where nothing else would (no handler configured:
    logging's last resort, which this handler would otherwise silence)."""

    def __init__(self, echo: bool):
        super().__init__(logging.WARNING)
        self.echo = echo
        self.messages: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.messages.append(message[len("note: "):] if message.startswith("note: ") else message)
        if self.echo:
            print(f"tf2ir: {message}", file=sys.stderr)


@contextmanager
def collected_notes(quiet: bool = False) -> Iterator[List[str]]:
    """The warnings the `tf2ir` logger emits in the block, as a list; printed unless `quiet`
    or the application configured logging (its handlers print them as before)."""
    logger = logging.getLogger("tf2ir")
    configured = bool(logger.handlers or logging.getLogger().handlers)
    handler = _Notes(echo=not quiet and not configured)
    propagate = logger.propagate
    logger.addHandler(handler)
    if quiet:
        logger.propagate = False
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def _size(nbytes: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if nbytes < 1024 or unit == "GB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024   # type: ignore[assignment]
    return f"{nbytes} B"
