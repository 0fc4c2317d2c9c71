"""Running a .tflite model in the LiteRT interpreter: the reference `verify`, the TFLite
conformance suite and the TFLite zoo compare tf2ir's conversion with. `ai_edge_litert` (PyPI:
ai-edge-litert) is preferred; `tf.lite.Interpreter` serves where only TensorFlow is installed.
Inputs and outputs are keyed by their TFLite tensor names, which the converted model keeps."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from typing import Dict, Optional, Sequence

import numpy as np

from tf2ir.ir.errors import ConversionError


@contextlib.contextmanager
def quiet_stderr():
    """The interpreter's C++ notices ("INFO: Created TensorFlow Lite XNNPACK delegate") go to
    the process's stderr, past Python: silenced (fd 2 on /dev/null) while it allocates, so a
    command's stderr stays its own lines."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):   # no fd 2 (an embedding host)
        yield
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def interpreter_class():
    """The LiteRT Interpreter class, or a ConversionError saying what to install."""
    try:
        from ai_edge_litert.interpreter import Interpreter
        return Interpreter
    except ImportError:
        pass
    try:
        import tensorflow as tf
    except ImportError:
        raise ConversionError("running a TFLite model needs the LiteRT interpreter: pip "
                              "install ai-edge-litert (or tensorflow)") from None
    return tf.lite.Interpreter


def load_interpreter(path: str, num_threads: Optional[int] = None, *,
                     content: Optional[bytes] = None, preserve_all: bool = False):
    """The interpreter of the .tflite at `path` (or of its bytes `content`, `path` then only
    names it); `preserve_all`: every intermediate tensor stays readable after a run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # tf.lite.Interpreter's deprecation notice
        source = {"model_content": bytes(content)} if content is not None else {"model_path": path}
        try:
            return interpreter_class()(**source, num_threads=num_threads,
                                       experimental_preserve_all_tensors=preserve_all)
        except (ValueError, RuntimeError) as exc:
            raise ConversionError(f"the LiteRT interpreter cannot load it: {exc}"[:300],
                                  model=path) from None


def run_tflite(path: str, feeds: Dict[str, np.ndarray],
               outputs: Optional[Sequence[str]] = None, interpreter=None) -> Dict[str, np.ndarray]:
    """Outputs of the .tflite model at `path` (its subgraph 0, which TF's converter makes the
    serving signature's) for `feeds` (input tensor name → array; dynamic dims resized to the
    feed's), keyed by output tensor name (`outputs`: these tensors instead of the model's)."""
    it = interpreter or load_interpreter(path)
    details = {d["name"]: d for d in it.get_input_details()}
    missing = sorted(set(details) - set(feeds))
    if missing:
        raise ConversionError(f"no value given for TFLite input(s) {', '.join(missing)}", model=path)
    for name, value in feeds.items():
        if name not in details:
            raise ConversionError(f"'{name}' is not an input of the TFLite model", model=path)
        if tuple(details[name]["shape"]) != tuple(np.shape(value)):
            it.resize_tensor_input(details[name]["index"], list(np.shape(value)))
    with quiet_stderr():
        it.allocate_tensors()
    for name, value in feeds.items():
        it.set_tensor(details[name]["index"], np.asarray(value, dtype=details[name]["dtype"]))
    it.invoke()
    if outputs is None:
        return {d["name"]: np.array(it.get_tensor(d["index"])) for d in it.get_output_details()}
    by_name = {d["name"]: d["index"] for d in it.get_tensor_details()}
    missing = [name for name in outputs if name not in by_name]
    if missing:
        raise ConversionError(f"'{missing[0]}' is not a tensor of the TFLite model", model=path)
    return {name: np.array(it.get_tensor(by_name[name])) for name in outputs}


def run_signature(path: str, key: str, feeds: Dict[str, np.ndarray], inputs: Dict[str, str],
                  outputs: Dict[str, str], interpreter=None) -> Dict[str, np.ndarray]:
    """Outputs of signature `key` of the .tflite at `path` (a subgraph other than the first):
    `feeds` by tensor name; `inputs`/`outputs` map the signature's names to tensor names."""
    it = interpreter or load_interpreter(path)
    by_tensor = {tensor: name for name, tensor in inputs.items()}
    with quiet_stderr():
        runner = it.get_signature_runner(key)
        results = runner(**{by_tensor.get(name, name): value for name, value in feeds.items()})
    return {outputs.get(name, name): np.array(value) for name, value in results.items()}
