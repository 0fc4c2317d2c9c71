"""The command line's shared options, the exit-status epilog, and the one way every command
turns its arguments into a conversion `Pipeline`."""

from __future__ import annotations

import argparse
import os
from typing import List, Optional, Sequence

from tf2ir.ir.errors import EXIT_STATUS_TEXT, ExitStatus

DEFAULT_RTOL = 1e-3   # verify's tolerances (tools/verify.py), given by --rtol and --atol
DEFAULT_ATOL = 1e-4
EPILOG = "exit status:\n" + "\n".join(f"  {int(code):<3} {text}"
                                      for code, text in EXIT_STATUS_TEXT.items()) + "\n"
MODEL_HELP = ("frozen GraphDef (.pb, .pbtxt), SavedModel directory, Keras .keras/.h5 file, "
              "or TFLite .tflite model")


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show phases with their times, and tracebacks on errors")
    parser.add_argument("--plugin-dir", action="append", default=[], metavar="DIR",
                        help="load plugins from this file or directory (repeatable; "
                             "also TF2IR_PLUGIN_PATH)")


def add_model_source(parser: argparse.ArgumentParser) -> None:
    """Options for SavedModel inputs, and --quiet (commands that read a model)."""
    parser.add_argument("--signature", default=None, metavar="NAME",
                        help="SavedModel or .tflite signature to convert (default: "
                        "serving_default; a .tflite without signatures: its subgraph 0)")
    parser.add_argument("--tag", default="serve", metavar="TAG[,TAG]",
                        help="SavedModel meta-graph tags, comma-separated (default: serve)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print nothing but errors on stderr")


def add_shape_options(parser: argparse.ArgumentParser) -> None:
    """--inputs and --outputs: which tensors a conversion starts from and ends at."""
    parser.add_argument("--inputs", action="append", default=[], metavar="NAME:D1,D2,...",
                        help="fix an input's shape, e.g. input:1,224,224,3 (? or -1 = unknown); "
                             "repeatable")
    parser.add_argument("--outputs", default=None, metavar="T1,T2",
                        help="output tensors, comma-separated (default: the graph's sinks)")
    parser.add_argument("--max-tensor-bytes", type=_byte_count, default=None, metavar="N",
                        help="the most bytes a constant may expand to when the model stores it "
                             "compactly (a splat or zero fill); default 1 GiB; suffixes K, M, G")


def _byte_count(text: str) -> int:
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit() or int(digits) == 0:
        raise argparse.ArgumentTypeError(f"expected a positive byte count (e.g. 512M), got {text!r}")
    return int(digits) * scale


def add_fusion_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fusion", action="append", default=[], metavar="on:NAME,off:NAME",
                        help="switch scope fusion passes on or off by name (NAME 'all' is every "
                             "pass; the last word wins); repeatable")


def add_pass_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--passes", action="append", default=[], metavar="on:NAME,off:NAME",
                        help="switch IR and ONNX optimisation passes (listed below) on or off by "
                             "name, e.g. off:layout,off:cse (NAME 'all' is every pass; the last "
                             "word wins); repeatable")
    parser.add_argument("--check-passes", action="store_true",
                        help="check the graph after every pass and name the pass that broke "
                             "it (for plugin authors; slower)")


def add_export_options(parser: argparse.ArgumentParser) -> None:
    """What the written ONNX model should be, beyond what it computes (ir/export.py)."""
    group = parser.add_argument_group("the written model")
    add_opset_option(group)
    group.add_argument("--inputs-as-nchw", default=None, metavar="NAME,...",
                       help="these inputs are given channels-first (NCHW) instead of NHWC")
    group.add_argument("--outputs-as-nchw", default=None, metavar="NAME,...",
                       help="these outputs are given channels-first (NCHW) instead of NHWC")
    group.add_argument("--rename-inputs", default=None, metavar="OLD:NEW,...",
                       help="rename graph inputs")
    group.add_argument("--rename-outputs", default=None, metavar="OLD:NEW,...",
                       help="rename graph outputs")
    group.add_argument("--precision", choices=("fp32", "fp16"), default="fp32",
                       help="fp16: weights and compute in float16, the ops float16 hurts kept "
                            "in float32 (default fp32)")
    group.add_argument("--weights", choices=("fp32", "fp16"), default="fp32",
                       help="fp16: store float weights in float16, compute in float32")
    group.add_argument("--io-precision", choices=("fp32", "fp16"), default="fp32",
                       help="with --precision fp16: float graph inputs and outputs in "
                            "float16 too (default: they stay float32)")
    group.add_argument("--quantized", choices=("exact", "qdq"), default="exact",
                       help="qdq: fake-quantization ops become QuantizeLinear/DequantizeLinear "
                            "pairs that onnxruntime runs as int8, and a dynamic-range .tflite's "
                            "hybrid ops onnxruntime's fastest forms (default exact: TF's float "
                            "arithmetic bit for bit; TFLite's hybrid kernels' int8 arithmetic)")


def add_opset_option(parser) -> None:
    """--opset (convert, compile, batch; check, whose dry run then lowers for that opset)."""
    parser.add_argument("--opset", type=int, default=None, metavar="N",
                        help="target ONNX opset, 13 to the newest the installed onnx defines "
                             "(default: the lowest opset >= 18 that holds every op)")


def export_options(args):
    """The ExportOptions a command's arguments ask for (absent options: defaults)."""
    from tf2ir.ir.export import ExportOptions, parse_renames
    return ExportOptions(
        opset=getattr(args, "opset", None),
        inputs_as_nchw=tuple(split_list(getattr(args, "inputs_as_nchw", None)) or ()),
        outputs_as_nchw=tuple(split_list(getattr(args, "outputs_as_nchw", None)) or ()),
        rename_inputs=parse_renames(getattr(args, "rename_inputs", None), "--rename-inputs"),
        rename_outputs=parse_renames(getattr(args, "rename_outputs", None), "--rename-outputs"),
        precision=getattr(args, "precision", None) or "fp32",
        weights=getattr(args, "weights", None) or "fp32",
        io_precision=getattr(args, "io_precision", None) or "fp32",
        quantized=getattr(args, "quantized", None) or "exact").check()


def passes_epilog() -> str:
    from tf2ir.ir.onnx.compile import ALL_PASSES
    from tf2ir.ir.passes.manager import describe_passes
    return f"passes (--passes; default state):\n{describe_passes(ALL_PASSES)}\n\n"


def model_tags(args) -> tuple:
    return tuple(t.strip() for t in (getattr(args, "tag", None) or "").split(",") if t.strip())


def split_list(text: Optional[str]) -> Optional[List[str]]:
    """'a, b,c' → ['a', 'b', 'c']; None or '' → None."""
    items = [item.strip() for item in (text or "").split(",") if item.strip()]
    return items or None


def plugin_manager(args):
    from tf2ir.plugins.manager import PluginManager
    return PluginManager(plugin_dirs=getattr(args, "plugin_dir", []))


def conversion_options(args):
    """The conversion `Options` a command's arguments ask for (absent options: defaults)."""
    from tf2ir.parser.pipeline import Options, parse_input_shapes
    return Options(input_shapes=parse_input_shapes(getattr(args, "inputs", None) or []),
                   outputs=split_list(getattr(args, "outputs", None)),
                   fusion=getattr(args, "fusion", None) or None,
                   passes=getattr(args, "passes", None) or None,
                   signature=getattr(args, "signature", None),
                   tags=model_tags(args) if hasattr(args, "tag") else None,
                   check_passes=bool(getattr(args, "check_passes", False)),
                   max_tensor_bytes=getattr(args, "max_tensor_bytes", None),
                   fallback=getattr(args, "fallback", None),
                   export=export_options(args))


def refuse_verify_options_without_verify(args) -> None:
    """`convert` and `report` take verify's input and tolerance options (tools/verify.py
    add_options) for their --verify: given without it, they are a usage error (exit 2)."""
    if getattr(args, "verify", False):
        return
    given = [flag for flag, value, default in (
        ("--inputs-data", bool(getattr(args, "inputs_data", None)), False),
        ("--rtol", getattr(args, "rtol", DEFAULT_RTOL), DEFAULT_RTOL),
        ("--atol", getattr(args, "atol", DEFAULT_ATOL), DEFAULT_ATOL),
        ("--seed", getattr(args, "seed", 0), 0),
        ("--batch", getattr(args, "batch", None), None)) if value != default]
    if given:
        from tf2ir.ir.errors import ConversionError
        raise ConversionError(f"{given[0]} needs --verify (it sets up the comparison with "
                              "TensorFlow)", exit_code=ExitStatus.USAGE)


def add_fallback_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fallback", choices=("tf",), default=None,
                        help="tf: the nodes no plugin maps become TFSubgraph segments that "
                             "TensorFlow runs (the model then needs TensorFlow and tf2ir's "
                             "runtime entry: tf2ir run, tf2ir.InferenceSession)")


def input_files(args) -> List[str]:
    """Every file a command reads: the model (and each file of a SavedModel directory), the
    IR and its weights file, --inputs-data files."""
    files: List[str] = []
    for path in (getattr(args, "model", None), getattr(args, "ir", None)):
        if not path:
            continue
        files.append(path)
        if os.path.isdir(path):
            files += [os.path.join(folder, name) for folder, _, names in os.walk(path)
                      for name in names]
    if getattr(args, "ir", None):
        from tf2ir.ir.text import weights_path
        files.append(weights_path(args.ir))
    for item in getattr(args, "inputs_data", None) or ():   # FILE.npz or NAME=FILE.npy
        files.append(item.split("=", 1)[1] if "=" in item and not os.path.exists(item) else item)
    return files


def refuse_outputs(outputs: Sequence[str], args) -> None:
    """Refuse, before any work, an output that is one of the command's input files, or
    that exists and is not a regular file (a device such as /dev/full, a directory):
    exit status 2. A model's external data file (`OUT.data`, above 2 GB) must not be an
    input either."""
    from tf2ir.ir.atomic import check_output_path
    inputs = input_files(args)
    for output in outputs:
        check_output_path(output, inputs)
        data = output + ".data"
        if not os.path.exists(data) or os.path.isfile(data):
            check_output_path(data, inputs, what="output data file")


def pipeline_from_args(args, manager=None):
    """The Pipeline a command runs: its plugins and its options (bad options fail here,
    before any work, with exit status 2)."""
    from tf2ir.parser.pipeline import Pipeline
    options = conversion_options(args)
    return Pipeline(manager if manager is not None else plugin_manager(args), options)


__all__ = ["EPILOG", "ExitStatus", "add_common", "add_export_options", "add_model_source",
           "add_opset_option",
           "add_shape_options", "export_options",
           "add_fusion_option", "add_pass_options", "conversion_options", "input_files",
           "model_tags", "pipeline_from_args", "plugin_manager", "refuse_outputs", "split_list"]
