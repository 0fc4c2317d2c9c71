"""Loading TF model files into a GraphDef message (TensorFlow only for SavedModel/Keras)."""

from __future__ import annotations

import os
import stat
from typing import List, Optional, Sequence, Tuple

from google.protobuf import message, text_format

from tf2ir.ir.errors import ConversionError
from tf2ir.parser.graph_view import graph_def_class


def open_model_file(path: str) -> int:
    """A file descriptor of model file `path`, opened without blocking and refused unless it
    is a regular file: a FIFO would block the read forever, a device (/dev/zero) never end."""
    if not os.path.exists(path):
        raise ConversionError("file does not exist", model=path)
    if os.path.isdir(path):
        raise ConversionError("is a directory; give a frozen .pb or .pbtxt (SavedModel "
                              "directories go through load_model)", model=path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ConversionError(f"cannot read file: {exc.strerror}", model=path) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConversionError("is not a regular file (a FIFO, socket or device); give a model "
                              "file", model=path)
    return fd


def load_graph_def(path: str):
    """Read a frozen `.pb` (binary) or `.pbtxt` (text) GraphDef."""
    fd = open_model_file(path)
    graph_def = graph_def_class()()
    try:
        with open(fd, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ConversionError(f"cannot read file: {exc.strerror}", model=path) from None
    if path.endswith(".pbtxt"):
        try:
            text_format.Parse(data.decode("utf-8"), graph_def)
        except (text_format.ParseError, UnicodeDecodeError) as exc:
            raise ConversionError(f"not a text GraphDef: {exc}", model=path) from None
    else:
        try:
            graph_def.ParseFromString(data)
        except (message.DecodeError, UnicodeDecodeError) as exc:
            # protobuf 7 reports a string field that is not UTF-8 as UnicodeDecodeError
            raise ConversionError(f"not a GraphDef (truncated or corrupt .pb: {exc})",
                                  model=path) from None
        del data
    if not len(graph_def.node):
        raise ConversionError("GraphDef has no nodes (not a frozen TensorFlow graph?)", model=path)
    return graph_def


def load_model(path: str, signature: Optional[str] = None, tags: Optional[Sequence[str]] = None,
               ) -> Tuple[object, Optional[List[str]]]:
    """Any model tf2ir reads → (GraphDef, output tensor names or None for the graph's sinks).
    A frozen .pb/.pbtxt is parsed without TensorFlow; a SavedModel directory or a Keras
    .keras/.h5 file is frozen by TensorFlow first (parser/frozen.py)."""
    from tf2ir.parser import frozen
    if os.path.isdir(path):
        graph_def, _, outputs = frozen.freeze_saved_model(
            path, signature or frozen.DEFAULT_SIGNATURE,
            frozen.DEFAULT_TAGS if tags is None else tags)
        return graph_def, outputs
    if frozen.is_keras_file(path):
        os.close(open_model_file(path))   # TensorFlow would block on a FIFO
        graph_def, _, outputs = frozen.freeze_keras_file(path)
        return graph_def, outputs
    return load_graph_def(path), None
