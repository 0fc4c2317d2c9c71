"""The ONNX backend: lowering IR graphs to ONNX (compile), the checked atomic writer, the
ONNX-level optimisation passes. The rest of `ir/` never imports onnx."""
