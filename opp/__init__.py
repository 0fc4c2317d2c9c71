"""The operator package: the built-in IR op prototypes, one module per op family, each op with
its inference, ONNX lowering and (where it has one) fold function. They reach the registry
through the built-in plugins' `tf2ir_op_prototypes` hook, never by importing this package."""
