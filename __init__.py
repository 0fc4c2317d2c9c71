"""tf2ir: converts TensorFlow models into an IR through mapping plugins and compiles it to ONNX."""

__version__ = "0.1.0"
