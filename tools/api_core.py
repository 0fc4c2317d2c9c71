"""The one conversion that `tf2ir.convert(...)` and `tf2ir convert` run: a source (a model path,
a GraphDef object or its bytes, an in-memory TensorFlow object) through a `Pipeline` into an
IR graph, compiled in memory into a `ConversionResult` that holds the ONNX model, its report
and the IR graph, and saves the model (checked, atomic, external data past 2 GB).

The keyword options of the API become the same `parser.pipeline.Options` the command line's
flags become (tools/options.py): one `Pipeline`, no second conversion path."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union,
)

from tf2ir.ir.errors import ConversionError, ExitStatus

if TYPE_CHECKING:
    from tf2ir.ir.graph import Graph
    from tf2ir.ir.tensor import Shape
    from tf2ir.parser.convert import ConversionReport
    from tf2ir.parser.pipeline import Options, Pipeline
    from tf2ir.plugins.manager import PluginManager
    from tf2ir.tools.api_result import ConversionResult

PathLike = Union[str, "os.PathLike[str]"]
# --inputs: {"x": (1, 224, 224, 3)} or the command line's ["x:1,224,224,3"] (None, -1 or "?"
# for an unknown dimension)
InputShapes = Union[Mapping[str, Sequence[Optional[Union[int, str]]]], Sequence[str], str, None]
Plugins = Union["PluginManager", PathLike, Sequence[PathLike], None]


def _usage(message: str) -> ConversionError:
    return ConversionError(message, exit_code=ExitStatus.USAGE)


# -- options -------------------------------------------------------------------------------
def input_shapes(inputs: InputShapes) -> Dict[str, "Shape"]:
    """The `inputs=` option → {placeholder: shape}: a mapping of name → shape, or the command
    line's NAME:D1,D2 strings (one string or several)."""
    from tf2ir.parser.graph_view import split_tensor_name
    from tf2ir.parser.pipeline import parse_input_shapes
    if inputs is None:
        return {}
    if isinstance(inputs, str):
        return parse_input_shapes([inputs])
    if not isinstance(inputs, Mapping):
        if not all(isinstance(item, str) for item in inputs):
            raise _usage("inputs must be a mapping of input name to shape, or NAME:D1,D2,... "
                         "strings")
        return parse_input_shapes(list(inputs))
    shapes: Dict[str, "Shape"] = {}
    for name, shape in inputs.items():
        if not isinstance(name, str) or not name:
            raise _usage(f"inputs: input name {name!r} is not a non-empty string")
        if shape is None or isinstance(shape, (str, bytes)):
            raise _usage(f"inputs: the shape of {name!r} must be a sequence of dimensions, "
                         f"not {shape!r}")
        dims: List[Optional[int]] = []
        for d in shape:
            if d is None or d in ("?", -1):
                dims.append(None)
            elif isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 63:
                dims.append(int(d))
            else:
                raise _usage(f"inputs: bad dimension {d!r} in the shape of {name!r}; each is a "
                             "size from 0 to 2^63-1, or None, -1 or '?' for unknown")
        shapes[split_tensor_name(name)[0]] = tuple(dims)
    return shapes


def _names(value: Union[str, Sequence[str], None], what: str) -> Optional[List[str]]:
    """'a,b' or ['a', 'b'] → ['a', 'b']; None or empty → None."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    if not all(isinstance(item, str) for item in items):
        raise _usage(f"{what} must be a string or a list of strings")
    names = [item.strip() for item in items if item.strip()]
    return names or None


def _renames(value: Union[str, Mapping[str, str], None], option: str) -> Dict[str, str]:
    from tf2ir.ir.export import parse_renames
    if value is None or isinstance(value, str):
        return parse_renames(value, option)
    return dict(value)


def build_options(*, inputs: InputShapes = None, outputs: Union[str, Sequence[str], None] = None,
                  fusion: Any = None, passes: Any = None, fallback: Optional[str] = None,
                  signature: Optional[str] = None, tags: Union[str, Sequence[str], None] = None,
                  opset: Optional[int] = None,
                  inputs_as_nchw: Union[str, Sequence[str], None] = None,
                  outputs_as_nchw: Union[str, Sequence[str], None] = None,
                  rename_inputs: Union[str, Mapping[str, str], None] = None,
                  rename_outputs: Union[str, Mapping[str, str], None] = None,
                  precision: str = "fp32", weights: str = "fp32", io_precision: str = "fp32",
                  quantized: str = "exact", check_passes: bool = False,
                  max_tensor_bytes: Optional[int] = None) -> "Options":
    """The conversion `Options` the API's keyword options ask for: the same object the command
    line's flags make (tools/options.py conversion_options); bad values are usage errors."""
    from tf2ir.ir.export import ExportOptions
    from tf2ir.parser.pipeline import Options
    if max_tensor_bytes is not None and (isinstance(max_tensor_bytes, bool) or not isinstance(
            max_tensor_bytes, int) or max_tensor_bytes <= 0):
        raise _usage(f"max_tensor_bytes {max_tensor_bytes!r} is not a positive byte count")
    export = ExportOptions(
        opset=opset, inputs_as_nchw=tuple(_names(inputs_as_nchw, "inputs_as_nchw") or ()),
        outputs_as_nchw=tuple(_names(outputs_as_nchw, "outputs_as_nchw") or ()),
        rename_inputs=_renames(rename_inputs, "rename_inputs"),
        rename_outputs=_renames(rename_outputs, "rename_outputs"),
        precision=precision, weights=weights, io_precision=io_precision,
        quantized=quantized).check()
    return Options(input_shapes=input_shapes(inputs), outputs=_names(outputs, "outputs"),
                   fusion=fusion or None, passes=passes or None, signature=signature,
                   tags=tuple(_names(tags, "tags") or ()) if tags is not None else None,
                   check_passes=bool(check_passes), max_tensor_bytes=max_tensor_bytes,
                   fallback=fallback, export=export)


def plugin_manager(plugins: Plugins) -> "PluginManager":
    """A PluginManager as given, or one that also loads the plugin files or directories."""
    from tf2ir.plugins.manager import PluginManager
    if isinstance(plugins, PluginManager):
        return plugins
    if plugins is None:
        dirs: List[str] = []
    elif isinstance(plugins, (str, os.PathLike)):
        dirs = [os.fspath(plugins)]
    else:
        dirs = [os.fspath(p) for p in plugins]
    return PluginManager(plugin_dirs=dirs)


def make_pipeline(plugins: Plugins = None, **options: Any) -> "Pipeline":
    """The Pipeline of one API call (bad options fail here, before any work)."""
    from tf2ir.parser.pipeline import Pipeline
    return Pipeline(plugin_manager(plugins), build_options(**options))


# -- sources -------------------------------------------------------------------------------
@dataclass
class Source:
    """What a conversion starts from: a model file (`path`) or a GraphDef already in memory
    (with the outputs its maker named, or None for the graph's sinks), and its label."""

    label: str
    path: Optional[str] = None
    graph_def: Any = None
    outputs: Optional[List[str]] = None


def _is_graph_def(obj: Any) -> bool:
    """A GraphDef message: tf2ir's own class (TensorBoard's protos) or TensorFlow's."""
    return type(obj).__name__ == "GraphDef" and hasattr(obj, "SerializeToString") \
        and hasattr(obj, "node")


def resolve_source(source: Any, *, input_signature: Any = None,
                   signature: Optional[str] = None) -> Source:
    """A path (every kind `tf2ir convert` takes), a GraphDef object or its bytes, a .tflite
    model's bytes (its TFL3 identifier tells them apart), or an in-memory TensorFlow object (keras.Model, tf.function, ConcreteFunction, tf.Module),
    frozen by parser/in_memory.py."""
    if isinstance(source, (str, os.PathLike)):
        return Source(label=os.fspath(source), path=os.fspath(source))
    from tf2ir.parser.load import checked_graph_def, parse_graph_def
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if data[4:8] == b"TFL3":   # a .tflite's bytes: the flatbuffer identifier
            from tf2ir.parser.tflite_model import parse_tflite
            from tf2ir.parser.tflite_view import tflite_view_of
            view = tflite_view_of(parse_tflite(data, "<TFLite bytes>"), signature)
            return Source("<TFLite bytes>", graph_def=view)
        return Source("<GraphDef bytes>", graph_def=parse_graph_def(data, "<GraphDef bytes>"))
    if _is_graph_def(source):
        from tf2ir.parser.graph_view import graph_def_class
        if isinstance(source, graph_def_class()):
            graph_def = checked_graph_def(source, "<GraphDef>")
        else:   # TensorFlow's class (another descriptor pool): through its wire format
            graph_def = parse_graph_def(source.SerializeToString(), "<GraphDef>")
        return Source("<GraphDef>", graph_def=graph_def)
    from tf2ir.parser.in_memory import freeze_object
    graph_def, outputs, label = freeze_object(source, input_signature=input_signature,
                                              signature=signature)
    return Source(label, graph_def=graph_def, outputs=list(outputs) if outputs else None)


# -- the conversion ------------------------------------------------------------------------
def convert_source(pipeline: "Pipeline", source: Source,
                   builder: Any = None) -> Tuple["Graph", "ConversionReport"]:
    """The source → verified IR graph and report (a model file through Pipeline.convert_file,
    a GraphDef through Pipeline.convert_graph_def). `builder`: `convert --report`'s
    ReportBuilder, which runs the file's conversion itself to keep what it saw."""
    if builder is not None:
        return builder.convert()
    if source.path is not None:
        return pipeline.convert_file(source.path)
    return pipeline.convert_graph_def(source.graph_def, source.label,
                                      pipeline.options.outputs or source.outputs)


def convert_pipeline(pipeline: "Pipeline", source: Source, *, compile: bool = True,
                     builder: Any = None, progress: Any = None,
                     quiet: bool = False) -> "ConversionResult":
    """The one conversion: `source` through `pipeline` into a ConversionResult (with
    `compile`, the ONNX model built in memory: `result.save(path)` writes it). `progress`: a
    tools.progress.PhaseLine; `builder`: `convert --report`'s (whose error, when the walk
    met unsupported op types, stops here without compiling)."""
    from tf2ir.tools.api_result import ConversionResult, collected_notes
    if progress is not None:
        progress.phase(f"converting {os.path.basename(source.label.rstrip(os.sep))}")
    with collected_notes(quiet) as notes:
        graph, report = convert_source(pipeline, source, builder)
    result = ConversionResult(pipeline, graph, report, source.label, notes)
    overrides = pipeline.manager.overrides_for(report.op_types, report.framework)
    result.notes.extend(str(o) for o in overrides)
    if compile and not (builder is not None and builder.error):
        if progress is not None:
            progress.phase(f"compiling {report.ir_nodes} IR nodes")
        result.compile(manager=builder.pass_manager() if builder is not None else None,
                       quiet=quiet)
    return result
