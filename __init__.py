"""tf2ir: converts TensorFlow models into an IR through mapping plugins and compiles it to ONNX."""

__version__ = "0.1.0"


def __getattr__(name: str):
    """`tf2ir.InferenceSession`: onnxruntime for tf2ir models, plugin ops included
    (tools/runtime.py), imported when first used."""
    if name == "InferenceSession":
        from tf2ir.tools.runtime import InferenceSession
        return InferenceSession
    raise AttributeError(f"module 'tf2ir' has no attribute {name!r}")
