"""Loading TensorFlow models, the TF graph view, and the driver that maps TF nodes to IR."""

from tf2ir.parser.convert import ConversionReport, convert_file, convert_graph_def

__all__ = ["ConversionReport", "convert_file", "convert_graph_def"]
