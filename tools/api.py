"""tf2ir's Python API: `convert`, `check` and `verify`, the functions behind `tf2ir convert`,
`tf2ir check` and `tf2ir verify`, taking what the commands take (a model path) and also what
only Python holds: a GraphDef object or its bytes, a keras.Model, a tf.function, a
ConcreteFunction or a tf.Module. Keyword options mirror the command line's flags; errors are
`tf2ir.ConversionError` subclasses carrying the command's exit status.

    import tf2ir
    result = tf2ir.convert("tests/data/sample_cnn.pb", opset=17)
    result.save("cnn.onnx")
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, Union

from tf2ir.tools.api_core import (
    InputShapes, Plugins, Source, convert_pipeline, make_pipeline, resolve_source,
)
from tf2ir.tools.api_result import ConversionResult, Report

if TYPE_CHECKING:
    from tf2ir.tools.check_report import SupportReport
    from tf2ir.tools.verify import Verification

Names = Union[str, Sequence[str], None]
Renames = Union[str, Mapping[str, str], None]


def convert(source: Any, *, inputs: InputShapes = None, outputs: Names = None,
            fusion: Any = None, passes: Any = None, fallback: Optional[str] = None,
            signature: Optional[str] = None, tags: Names = None, input_signature: Any = None,
            plugins: Plugins = None, opset: Optional[int] = None,
            inputs_as_nchw: Names = None, outputs_as_nchw: Names = None,
            rename_inputs: Renames = None, rename_outputs: Renames = None,
            precision: str = "fp32", weights: str = "fp32", io_precision: str = "fp32",
            quantized: str = "exact", check_passes: bool = False,
            max_tensor_bytes: Optional[int] = None, quiet: bool = False) -> ConversionResult:
    """Convert a TensorFlow model to ONNX, in memory; `result.save(path)` writes it.

    `source`: a model path (frozen .pb/.pbtxt, SavedModel directory, Keras .keras/.h5), a
    GraphDef (TensorFlow's or tf2ir's message class) or its serialized bytes, or a
    keras.Model, tf.function, ConcreteFunction or tf.Module (frozen by TensorFlow;
    `input_signature` gives the input specs an object does not know). The options are the
    command line's: `inputs` {name: shape} (None, -1 or "?" for unknown) or "NAME:D1,D2"
    strings; `outputs` tensor names; `fusion`/`passes` "on:NAME,off:NAME" words; `fallback`
    "tf"; `signature`/`tags` of a SavedModel; `plugins` a PluginManager or plugin files or
    directories; `opset`, `inputs_as_nchw`, `outputs_as_nchw`, `rename_inputs` {old: new},
    `rename_outputs`, `precision`, `weights`, `io_precision`, `quantized` shape the written
    model (ir/export.py). Plugin override notes and lowering warnings are printed unless
    `quiet`, and kept in `result.report`. Errors raise `tf2ir.ConversionError` (subclasses
    `UsageError`, `UnsupportedOpsError`)."""
    pipeline = make_pipeline(
        plugins, inputs=inputs, outputs=outputs, fusion=fusion, passes=passes,
        fallback=fallback, signature=signature, tags=tags, opset=opset,
        inputs_as_nchw=inputs_as_nchw, outputs_as_nchw=outputs_as_nchw,
        rename_inputs=rename_inputs, rename_outputs=rename_outputs, precision=precision,
        weights=weights, io_precision=io_precision, quantized=quantized,
        check_passes=check_passes, max_tensor_bytes=max_tensor_bytes)
    loaded = resolve_source(source, input_signature=input_signature, signature=signature)
    result = convert_pipeline(pipeline, loaded, quiet=quiet)
    if not quiet:
        for note in result.notes:
            print(f"tf2ir: note: {note}", file=sys.stderr)   # never silent, unless asked
    return result


__all__ = ["ConversionResult", "Report", "Source", "convert"]
