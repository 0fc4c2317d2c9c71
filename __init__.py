"""tf2ir: converts TensorFlow models into an IR through mapping plugins and compiles it to ONNX.

The Python API (docs/python-api.md): `tf2ir.convert(source, ...)` returns a
`ConversionResult` (`.model`, `.save(path)`, `.report`, `.ir`); `tf2ir.check(source, ...)` and
`tf2ir.verify(source, ...)` are `tf2ir check` and `tf2ir verify`. Errors are
`tf2ir.ConversionError` and its subclasses, each with the command line's exit status.
`tf2ir.get_include()` is the folder of the C++ headers native kernel libraries compile against. The
names are imported when first used: `import tf2ir` loads neither onnx nor TensorFlow."""

from typing import Any, Dict, Tuple

__version__ = "0.1.0"

__all__ = [
    "convert", "check", "verify", "ConversionResult", "Report", "Verification",
    "SupportReport", "ConversionError", "UsageError", "UnsupportedOpsError",
    "VerificationMismatch", "ExitStatus", "ExportOptions", "InferenceSession", "get_include", "__version__",
]

# public name → (module, attribute), imported on first use
_LAZY: Dict[str, Tuple[str, str]] = {
    "convert": ("tf2ir.tools.api", "convert"),
    "check": ("tf2ir.tools.api", "check"),
    "verify": ("tf2ir.tools.api", "verify"),
    "ConversionResult": ("tf2ir.tools.api_result", "ConversionResult"),
    "Report": ("tf2ir.tools.api_result", "Report"),
    "Verification": ("tf2ir.tools.verify", "Verification"),
    "SupportReport": ("tf2ir.tools.check_report", "SupportReport"),
    "ConversionError": ("tf2ir.ir.errors", "ConversionError"),
    "UsageError": ("tf2ir.ir.errors", "UsageError"),
    "UnsupportedOpsError": ("tf2ir.ir.errors", "UnsupportedOpsError"),
    "VerificationMismatch": ("tf2ir.ir.errors", "VerificationMismatch"),
    "ExitStatus": ("tf2ir.ir.errors", "ExitStatus"),
    "ExportOptions": ("tf2ir.ir.export", "ExportOptions"),
    # onnxruntime for tf2ir models, plugin ops included (tools/runtime.py)
    "InferenceSession": ("tf2ir.tools.runtime", "InferenceSession"),
    # the C++ headers native kernel libraries compile against (plugins/native_build.py)
    "get_include": ("tf2ir.plugins.native_build", "get_include"),
}


def __getattr__(name: str) -> Any:
    """The public names of `__all__`, imported when first used."""
    if name in _LAZY:
        import importlib
        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tf2ir' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
