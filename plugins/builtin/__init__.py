"""The built-in TensorFlow plugins, one module per op family, written as a third-party package would."""
