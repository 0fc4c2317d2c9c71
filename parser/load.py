"""Loading TF model files into a GraphDef message (TensorFlow only for Keras files and
the SavedModels the native reader, parser/saved_model.py, refuses)."""

from __future__ import annotations

import logging
import os
from typing import List, Optional, Sequence, Tuple

from google.protobuf import message, text_format

from tf2ir.ir.errors import ConversionError
from tf2ir.parser.graph_view import graph_def_class
from tf2ir.parser.model_files import is_tflite_file, open_regular


def open_model_file(path: str) -> int:
    """A file descriptor of model file `path`, opened without blocking and refused unless it
    is a regular file: a FIFO would block the read forever, a device (/dev/zero) never end."""
    if not os.path.exists(path):
        raise ConversionError("file does not exist", model=path)
    if os.path.isdir(path):
        raise ConversionError("is a directory; give a frozen .pb or .pbtxt (SavedModel "
                              "directories go through load_model)", model=path)
    return open_regular(path, "model file", path)


def load_graph_def(path: str):
    """Read a frozen `.pb` (binary) or `.pbtxt` (text) GraphDef."""
    fd = open_model_file(path)
    try:
        with open(fd, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ConversionError(f"cannot read file: {exc.strerror}", model=path) from None
    if path.endswith(".pbtxt"):
        graph_def = graph_def_class()()
        try:
            text_format.Parse(data.decode("utf-8"), graph_def)
        except (text_format.ParseError, UnicodeDecodeError) as exc:
            raise ConversionError(f"not a text GraphDef: {exc}", model=path) from None
        return checked_graph_def(graph_def, path)
    return parse_graph_def(data, path, "truncated or corrupt .pb")


def parse_graph_def(data: bytes, model: str, what: str = "truncated or corrupt bytes"):
    """A serialized GraphDef (a .pb's bytes, or bytes given to tf2ir.convert) → tf2ir's
    GraphDef message; bad bytes or no nodes: one ConversionError naming `model`."""
    graph_def = graph_def_class()()
    try:
        graph_def.ParseFromString(data)
    except (message.DecodeError, UnicodeDecodeError) as exc:
        # protobuf 7 reports a string field that is not UTF-8 as UnicodeDecodeError
        raise ConversionError(f"not a GraphDef ({what}: {exc})", model=model) from None
    return checked_graph_def(graph_def, model)


def checked_graph_def(graph_def, model: str):
    """`graph_def`, refused when it has no nodes."""
    if not len(graph_def.node):
        raise ConversionError("GraphDef has no nodes (not a frozen TensorFlow graph?)", model=model)
    return graph_def


# TF2IR_SAVED_MODEL_READER: "native" (never freeze with TensorFlow), "tf" (always freeze
# with TensorFlow, the route before the native reader) or unset (native, TF where it must).
READER_ENV = "TF2IR_SAVED_MODEL_READER"


def load_model(path: str, signature: Optional[str] = None, tags: Optional[Sequence[str]] = None,
               ) -> Tuple[object, Optional[List[str]]]:
    """Any model tf2ir reads → (GraphDef, output tensor names or None for the graph's sinks);
    a .tflite file → (its graph view, parser/tflite_view.py, None).
    A frozen .pb/.pbtxt is parsed without TensorFlow; a SavedModel directory is read
    natively (parser/saved_model.py) and frozen by TensorFlow only for what the native
    reader refuses; a Keras .keras/.h5 file is frozen by TensorFlow (parser/frozen.py)."""
    from tf2ir.parser import frozen
    if not os.path.isdir(path) and is_tflite_file(path):
        from tf2ir.parser.tflite_view import read_tflite_view
        return read_tflite_view(path, signature), None
    if os.path.isdir(path):
        signature = signature or frozen.DEFAULT_SIGNATURE
        tags = frozen.DEFAULT_TAGS if tags is None else tags
        graph_def, _, outputs = load_saved_model(path, signature, tags)
        return graph_def, outputs
    if frozen.is_keras_file(path):
        os.close(open_model_file(path))   # TensorFlow would block on a FIFO
        graph_def, _, outputs = frozen.freeze_keras_file(path)
        return graph_def, outputs
    return load_graph_def(path), None


def load_saved_model(path: str, signature: str, tags: Sequence[str]):
    """A SavedModel directory frozen into (GraphDef, input names, output tensor names):
    natively, or by TensorFlow where the native reader refuses and TensorFlow imports. The
    route taken is logged (`-v`)."""
    from tf2ir.parser import frozen
    from tf2ir.parser.resources import NeedsTensorFlow
    log = logging.getLogger("tf2ir")
    reader = os.environ.get(READER_ENV, "")
    if reader != "tf":
        if not frozen.is_saved_model(path):
            raise ConversionError("is a directory but not a SavedModel (no saved_model.pb in "
                                  "it)", model=path)
        from tf2ir.parser.saved_model import read_saved_model
        try:
            result = read_saved_model(path, signature, tags)
        except NeedsTensorFlow as exc:
            reason = exc.message + (f" (node '{exc.node}', {exc.op_type})" if exc.node else "")
            if reader == "native":
                raise
            from tf2ir.parser.saved_model import check_before_tensorflow
            check_before_tensorflow(path)   # before the seconds `import tensorflow` takes
            try:
                frozen.import_tensorflow()
            except ImportError:
                raise ConversionError(f"this SavedModel needs TensorFlow to be frozen, which "
                                      f"is not installed: {reason}", model=path,
                                      node=exc.node, op_type=exc.op_type) from None
            log.info("SavedModel: the native reader refuses it (%s); freezing with "
                     "TensorFlow", reason)
        else:
            from tf2ir.parser.loader_trust import check_read
            check_read(result[0], path)   # verify runs it in TensorFlow
            log.info("SavedModel: read natively (no TensorFlow)")
            return result
    else:
        log.info("SavedModel: freezing with TensorFlow (%s=tf)", READER_ENV)
    return frozen.freeze_saved_model(path, signature, tags)
