"""Verification behind `tf2ir verify` and `tf2ir.verify(...)`: convert a source as `convert`
does, then compare onnxruntime with TensorFlow on the same inputs (tools/verify.py holds the
inputs, the comparison and the search for the first diverging node)."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import TYPE_CHECKING, Any, Optional

from tf2ir.tools.verify import Verification, VerifyOptions, verify_model

if TYPE_CHECKING:
    from tf2ir.parser.pipeline import Pipeline
    from tf2ir.tools.api_core import Source


def run(args) -> int:
    """`tf2ir verify MODEL`: the table, the verdict and the divergence; 0, or 4 on a mismatch."""
    from tf2ir.tools.api_core import Source
    from tf2ir.tools.options import pipeline_from_args, refuse_outputs
    from tf2ir.tools.progress import PhaseLine, wanted
    from tf2ir.tools.verify import options_from_args

    if args.onnx:
        refuse_outputs([args.onnx], args)   # never overwrite an input, a device, a directory
    pipeline = pipeline_from_args(args)
    with PhaseLine(wanted(args.quiet or args.verbose)) as progress:
        result = verify_source(pipeline, Source(args.model, path=args.model),
                               options_from_args(args), onnx_path=args.onnx,
                               progress=progress, quiet=args.quiet)
    print(result.text())
    return result.exit_status


def verify_source(pipeline: "Pipeline", source: "Source",
                  options: Optional[VerifyOptions] = None, onnx_path: Optional[str] = None,
                  progress: Any = None, quiet: bool = False) -> Verification:
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
