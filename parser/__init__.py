"""Loading TensorFlow models, the TF graph view, and the one conversion pipeline
(load → graph view → inline → fuse → map → IR) that every command uses."""

from tf2ir.parser.convert import ConversionReport
from tf2ir.parser.pipeline import Options, Pipeline, convert_file, convert_graph_def

__all__ = ["ConversionReport", "Options", "Pipeline", "convert_file", "convert_graph_def"]
