"""Verification behind `tf2ir verify` and `tf2ir.verify(...)`: convert a source as `convert`
does, then compare onnxruntime with TensorFlow on the same inputs (tools/verify.py holds the
inputs, the comparison and the search for the first diverging node)."""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

from tf2ir.ir.prototype import prototypes_of
from tf2ir.tools.verify import (
    DEFAULT_ATOL, DEFAULT_RTOL, EXIT_MISMATCH, EXIT_OK, Comparison, VerifyOptions, _run_onnx,
    _run_tf, _table, _tf_graph, _tf_tensor_name, compare, first_divergence, make_inputs,
    tf_graph_of,
)


@dataclass
class Verification:
    """One verification: each output's comparison with TensorFlow, the inputs both sides ran
    on, and on a mismatch the line naming the first diverging node (when it was looked for)."""
    outputs: List[Comparison]
    inputs: Dict[str, np.ndarray]
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    seed: int = 0
    first_divergence: Optional[str] = None

    @property
    def passed(self) -> bool:
        return all(row.ok for row in self.outputs)

    @property
    def exit_status(self) -> int:
        return EXIT_OK if self.passed else EXIT_MISMATCH

    def summary(self) -> str:
        """The verdict line `tf2ir verify` prints under its table."""
        rows, bad = self.outputs, [r for r in self.outputs if not r.ok]
        inputs = ", ".join(f"{k} {list(v.shape)} {v.dtype}" for k, v in self.inputs.items())
        tolerance = f"rtol={self.rtol:g} atol={self.atol:g} (inputs: {inputs}; seed {self.seed})"
        if not bad:
            return (f"verification passed: {len(rows)} output{'s' if len(rows) != 1 else ''} "
                    f"within {tolerance}")
        return (f"verification FAILED: {len(bad)} of {len(rows)} outputs differ beyond "
                f"{tolerance}")

    def text(self) -> str:
        """What `tf2ir verify` prints: the per-output table, the verdict, the divergence."""
        lines = _table(self.outputs) + [self.summary()]
        if self.first_divergence is not None and not self.passed:
            lines.append(self.first_divergence)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()


def verify_model(model_path: str, model, report=None, options: Optional[VerifyOptions] = None,
                 graph=None, source: Optional[dict] = None, progress=None, prototypes=None,
                 graph_def=None) -> Verification:
    """Compare the ONNX `model` (a ModelProto) with TensorFlow running the model at
    `model_path` (or `graph_def`, a GraphDef already in memory); `report`, the conversion's,
    lets a mismatch name the first diverging node. The rest as `verify_conversion`."""
    from tf2ir.tools.progress import PhaseLine
    if prototypes is None and graph is not None:
        prototypes = prototypes_of(graph)
    options = options or VerifyOptions()
    progress = progress or PhaseLine(False)
    tf_graph = (_tf_graph(model_path, **(source or {})) if graph_def is None
                else tf_graph_of(graph_def, model_path))
    feeds = make_inputs(model, options, tf_graph)   # integers within what the graph takes
    names = [o.name for o in model.graph.output]
    progress.phase("running TensorFlow")
    expected = _run_tf(tf_graph, feeds, [_tf_tensor_name(n) for n in names])
    progress.phase("running onnxruntime")
    actual = _run_onnx(model, feeds, names, prototypes)
    progress.close()
    rows = [compare(n, a, e, options.rtol, options.atol) for n, a, e in zip(names, actual, expected)]
    result = Verification(rows, feeds, options.rtol, options.atol, options.seed)
    if not result.passed and report is not None:
        result.first_divergence = first_divergence(model, tf_graph, feeds, report, options,
                                                   graph, progress)
        progress.close()
    return result


def verify_source(pipeline, source, options: Optional[VerifyOptions] = None,
                  onnx_path: Optional[str] = None, progress=None,
                  quiet: bool = False) -> "Verification":
    """`tf2ir verify` and `tf2ir.verify`: convert `source` (tools/api_core.Source) through
    `pipeline` as `convert` does, write the model to `onnx_path` when given, and compare it
    with TensorFlow on the same inputs. Plugin override notes go to stderr unless `quiet`."""
    from tf2ir.tools.api_core import convert_pipeline
    from tf2ir.ir.onnx.writer import PROTOBUF_LIMIT
    converted = convert_pipeline(pipeline, source, progress=progress, quiet=quiet)
    if not quiet:
        for note in converted.notes:
            print(f"tf2ir: note: {note}", file=sys.stderr)
    if onnx_path:
        converted.save(onnx_path)
    signature = {"signature": pipeline.options.signature, "tags": pipeline.options.tags}
    verify = dict(report=converted.report.details, options=options, graph=converted.ir,
                  source=signature, progress=progress, graph_def=source.graph_def)
    if converted.weight_bytes < PROTOBUF_LIMIT - (64 << 20):
        return verify_model(source.label, converted.model, **verify)
    import onnx   # over 2 GB: written with external data and read back
    with tempfile.TemporaryDirectory(prefix="tf2ir_verify_") as tmp:
        path = onnx_path or converted.save(os.path.join(tmp, "model.onnx"))
        return verify_model(source.label, onnx.load(path), **verify)
