"""tf2ir's Python API: `convert`, `check` and `verify`, the functions behind `tf2ir convert`,
`tf2ir check` and `tf2ir verify`, taking what the commands take (a model path) and also what
only Python holds: a GraphDef object or its bytes, a .tflite model's bytes, a keras.Model, a
tf.function, a ConcreteFunction or a tf.Module. Keyword options mirror the command line's
flags; errors are `tf2ir.ConversionError` subclasses carrying the command's exit status.

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
    import numpy as np
    from tf2ir.tools.verify import Verification
    from tf2ir.tools.check_report import SupportReport

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

    `source`: a model path (frozen .pb/.pbtxt, SavedModel directory, Keras .keras/.h5,
    TFLite .tflite), a GraphDef (TensorFlow's or tf2ir's message class) or its serialized
    bytes, a .tflite model's bytes, or a keras.Model, tf.function, ConcreteFunction or
    tf.Module (frozen by TensorFlow; `input_signature` gives the input specs an object does
    not know). The options are the command line's: `inputs` {name: shape} (None, -1 or "?"
    for unknown) or "NAME:D1,D2" strings; `outputs` tensor names; `fusion`/`passes`
    "on:NAME,off:NAME" words; `fallback` "tf"; `signature`/`tags` of a SavedModel
    (`signature`: a .tflite's SignatureDef too); `plugins` a PluginManager or plugin files
    or directories; `opset`, `inputs_as_nchw`, `outputs_as_nchw`, `rename_inputs` {old:
    new}, `rename_outputs`, `precision`, `weights`, `io_precision`, `quantized` shape the
    written model (ir/export.py). Plugin override notes and lowering warnings are printed
    unless `quiet`, and kept in `result.report`. Errors raise `tf2ir.ConversionError`
    (subclasses `UsageError`, `UnsupportedOpsError`)."""
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


def check(source: Any, *, inputs: InputShapes = None, outputs: Names = None, fusion: Any = None,
          passes: Any = None, fallback: Optional[str] = None, signature: Optional[str] = None,
          tags: Names = None, input_signature: Any = None, plugins: Plugins = None,
          opset: Optional[int] = None, check_passes: bool = False,
          max_tensor_bytes: Optional[int] = None) -> "SupportReport":
    """A dry run of `convert` (nothing written): `tf2ir check`'s report, the structure
    `tf2ir check --json` prints (`dataclasses.asdict(report)`): every TF op type with its
    count and the plugin that maps it (`op_types`), the `unsupported` ones, the `fusions`,
    the fallback `segments`, every error `convert` would meet (`errors`) and its
    `exit_status` (0 when it converts). A model that
    cannot be read, or bad options, raise as `convert` does."""
    from tf2ir.tools.check import check_source
    pipeline = make_pipeline(plugins, inputs=inputs, outputs=outputs, fusion=fusion,
                             passes=passes, fallback=fallback, signature=signature, tags=tags,
                             opset=opset, check_passes=check_passes,
                             max_tensor_bytes=max_tensor_bytes)
    loaded = resolve_source(source, input_signature=input_signature, signature=signature)
    return check_source(pipeline, loaded)


def verify(source: Any, *, inputs: InputShapes = None, outputs: Names = None,
           fusion: Any = None, passes: Any = None, fallback: Optional[str] = None,
           signature: Optional[str] = None, tags: Names = None, input_signature: Any = None,
           plugins: Plugins = None, opset: Optional[int] = None,
           inputs_data: Union[Mapping[str, "np.ndarray"], str, Sequence[str], None] = None,
           rtol: Optional[float] = None, atol: Optional[float] = None, seed: int = 0,
           batch: Optional[int] = None, onnx: Union[str, "os.PathLike[str]", None] = None,
           raise_on_mismatch: bool = False, quiet: bool = False) -> "Verification":
    """`tf2ir verify`: convert `source` as `convert` does, run TensorFlow and onnxruntime on
    the same inputs and compare every output. `inputs_data`: {input name: array}, an .npz
    path or the command line's NAME=FILE.npy items (inputs not given are random, from
    `seed`, unknown dimensions `batch` or 1); `rtol`/`atol`: tolerances (default 1e-3, 1e-4);
    `onnx`: also write the converted model there. Returns a `Verification` (`passed`,
    `outputs`: each output's max abs/rel error, `inputs`, `first_divergence`, `str()` the
    command's table); a mismatch raises `tf2ir.VerificationMismatch` only with
    `raise_on_mismatch`."""
    from tf2ir.ir.errors import ConversionError, ExitStatus
    from tf2ir.tools.api_verify import verify_source
    from tf2ir.tools.verify import DEFAULT_ATOL, DEFAULT_RTOL, VerifyOptions
    pipeline = make_pipeline(plugins, inputs=inputs, outputs=outputs, fusion=fusion,
                             passes=passes, fallback=fallback, signature=signature, tags=tags,
                             opset=opset)
    if isinstance(inputs_data, (str, os.PathLike)):
        inputs_data = [os.fspath(inputs_data)]
    options = VerifyOptions(inputs_data=inputs_data or (),
                            rtol=DEFAULT_RTOL if rtol is None else rtol,
                            atol=DEFAULT_ATOL if atol is None else atol, seed=seed, batch=batch)
    loaded = resolve_source(source, input_signature=input_signature, signature=signature)
    path = None
    if onnx is not None:
        from tf2ir.ir.atomic import check_output_path
        path = os.fspath(onnx)
        check_output_path(path, [loaded.path] if loaded.path else [])   # before any work
    result = verify_source(pipeline, loaded, options, onnx_path=path, quiet=quiet)
    if raise_on_mismatch and not result.passed:
        raise ConversionError(" ".join(filter(None, [result.summary(), result.first_divergence])),
                              model=loaded.label, exit_code=ExitStatus.MISMATCH)
    return result


__all__ = ["ConversionResult", "Report", "Source", "check", "convert", "verify"]
