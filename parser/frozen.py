"""Freezing SavedModel directories and Keras files into a GraphDef (DESIGN decision 3).

This is the one place the parser runs TensorFlow: variables become Consts, Placeholders
take the signature's input names and each signature output gets an Identity node of its
own name, so the converted model's inputs and outputs read like the signature's.
TensorFlow is imported inside the functions only; importing this module costs nothing.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from typing import List, Optional, Sequence, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus

DEFAULT_SIGNATURE = "serving_default"
DEFAULT_TAGS = ("serve",)
KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")

Frozen = Tuple[object, List[str], List[str]]   # (GraphDef, input names, output tensor names)


def is_saved_model(path: str) -> bool:
    return os.path.isdir(path) and any(
        os.path.isfile(os.path.join(path, f)) for f in ("saved_model.pb", "saved_model.pbtxt"))


def is_keras_file(path: str) -> bool:
    return path.lower().endswith(KERAS_SUFFIXES)


def import_tensorflow():
    """`import tensorflow`, quietly. TF's C++ start-up lines (absl's "All log messages
    before absl::InitializeLog()", oneDNN notices) ignore TF_CPP_MIN_LOG_LEVEL, so file
    descriptor 2 is captured while TF loads; they are logged at debug level (`-v`) and
    shown when the import fails, never mixed into the one-line errors."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow as tf
        except BaseException:
            os.dup2(saved, 2)
            captured.seek(0)
            sys.stderr.write(captured.read().decode("utf-8", "replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        noise = captured.read().decode("utf-8", "replace").strip()
    if noise:
        logging.getLogger("tf2ir").debug("tensorflow import: %s", noise)
    return tf


def first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _keras_refusal(exc: Exception) -> str:
    """What Keras' safe_mode refused, without its advice to turn safe_mode off."""
    text = " ".join(str(exc).split())
    return text.split(". ")[0].rstrip(".")


def freeze_saved_model(path: str, signature: str = DEFAULT_SIGNATURE,
                       tags: Sequence[str] = DEFAULT_TAGS) -> Frozen:
    """Load the SavedModel at `path` with `tags` and freeze its `signature`."""
    if not os.path.exists(path):
        raise ConversionError("file does not exist", model=path)
    if not is_saved_model(path):
        raise ConversionError("is a directory but not a SavedModel (no saved_model.pb in it)",
                              model=path)
    from tf2ir.parser.saved_model import check_before_tensorflow
    check_before_tensorflow(path)   # TF would read a path that leaves the directory, or block
    from tf2ir.parser.loader_trust import check_loader
    check_loader(path)   # TF would run every op its restore, init and signature functions hold
    tf = import_tensorflow()
    missing = import_op_libraries(path)
    try:
        loaded = tf.saved_model.load(path, tags=list(tags) or None)
    except Exception as exc:
        hint = (f" (op {missing[0]} is not registered: `pip install tensorflow-text` registers "
                "tensorflow-text's ops)" if missing else "")
        raise ConversionError(f"cannot load SavedModel with tags {','.join(tags) or '(none)'}: "
                              f"{first_line(exc)}{hint}", model=path) from None
    available = sorted(loaded.signatures.keys())
    if signature not in available:
        raise ConversionError(f"no signature '{signature}'; available: "
                              f"{', '.join(available) or 'none'} (choose with --signature)",
                              model=path, exit_code=ExitStatus.USAGE)
    concrete = loaded.signatures[signature]
    return freeze_function(tf, concrete, path)


def import_op_libraries(path: str) -> List[str]:
    """Before TensorFlow's loader reads the SavedModel at `path`: when its graphs name op
    types TensorFlow has not registered, import tensorflow_text (which registers its
    tokenizer ops) if it is installed. Returns the op types still unregistered after that."""
    from tensorflow.python.framework import op_def_registry

    from tf2ir.parser.saved_model import _saved_model
    ops, functions = set(), set()
    for meta_graph in _saved_model(path).meta_graphs:
        ops |= {n.op for n in meta_graph.graph_def.node}
        for function in meta_graph.graph_def.library.function:
            ops |= {n.op for n in function.node_def}
            functions.add(function.signature.name)
    missing = sorted(op for op in ops - functions if op_def_registry.get(op) is None)
    if missing:
        try:
            import tensorflow_text  # noqa: F401  (registers its ops with TensorFlow)
        except ImportError:
            return missing
        logging.getLogger("tf2ir").info("SavedModel: imported tensorflow_text for %s",
                                        ", ".join(missing[:3]))
        missing = [op for op in missing if op_def_registry.get(op) is None]
    return missing


def freeze_function(tf, concrete, model: str) -> Frozen:
    """Freeze a ConcreteFunction (a signature, a traced tf.function): its inputs take the
    TensorSpec names (a signature's keyword arguments their keys, an unnamed spec TF's own
    argument name), its outputs the keys of a returned dict, else `output_<i>`."""
    return _freeze(tf, concrete, input_names(tf, concrete),
                   output_names(tf, concrete.structured_outputs), model)


def input_names(tf, concrete) -> List[str]:
    """One name per tensor argument of `concrete`, in the order of its Placeholders."""
    args, kwargs = concrete.structured_input_signature
    specs = [(getattr(spec, "name", None), spec) for spec in tf.nest.flatten(args)]
    for key in sorted(kwargs):   # keyword arguments are flattened in sorted key order
        leaves = tf.nest.flatten(kwargs[key])
        specs += [(key if len(leaves) == 1 else getattr(spec, "name", None), spec)
                  for spec in leaves]
    specs = [(name, spec) for name, spec in specs if isinstance(spec, tf.TensorSpec)]
    placeholders = [t.name.split(":")[0] for t in concrete.inputs[:len(specs)]]
    return [name or placeholder for (name, _), placeholder in zip(specs, placeholders)]


def output_names(tf, outputs, names: Optional[Sequence[str]] = None) -> List[str]:
    """The graph output names for a function's structured `outputs`: `names` (a Keras
    model's) where they are one distinct name per output, else a dict's sorted keys, else
    `output_<i>`."""
    flat = tf.nest.flatten(outputs)
    for candidate in (list(names or []), sorted(outputs) if isinstance(outputs, dict) else []):
        if len(candidate) == len(flat) and len(set(candidate)) == len(candidate) \
                and all(isinstance(n, str) and n for n in candidate):
            return candidate
    return [f"output_{i}" for i in range(len(flat))]


def freeze_keras_file(path: str) -> Frozen:
    """Load a Keras `.keras` / `.h5` model (not compiled) and freeze its inference call."""
    if not os.path.isfile(path):
        raise ConversionError("file does not exist", model=path)
    import_tensorflow()
    import keras
    try:   # safe_mode: Keras refuses Lambda layers' marshalled Python code, TFSMLayer, file paths
        model = keras.models.load_model(path, compile=False, safe_mode=True)
    except Exception as exc:
        if "safe_mode" in str(exc):
            raise ConversionError(
                "the Keras file holds Python code or a path to load (a Lambda layer's "
                "marshalled bytecode, a TFSMLayer, a vocabulary file), which Keras' "
                "safe_mode refuses; tf2ir loads Keras files with safe_mode on "
                "(docs/reliability.md: Running models you did not make): "
                f"{_keras_refusal(exc)}", model=path,
                exit_code=ExitStatus.UNSUPPORTED) from None
        raise ConversionError(f"not a loadable Keras model file: {first_line(exc)}",
                              model=path) from None
    return freeze_keras_model(model, path, hint="save it as a SavedModel instead",
                              exit_code=ExitStatus.FAILED)


def freeze_keras_model(model, label: str, input_signature: Optional[Sequence] = None,
                       hint: str = "pass input_signature=[tf.TensorSpec(...), ...]",
                       exit_code: int = ExitStatus.USAGE) -> Frozen:
    """Freeze a Keras 3 or tf-keras model's inference call (training=False). Its inputs are
    `input_signature` (one TensorSpec per model input) or what the model knows (a
    Sequential's or functional model's Input layers, the shapes a subclassed model was
    first called with); a model that knows none is refused with `hint` and `exit_code`.
    Inputs take the TensorSpec names, else the Input layers' names; outputs the model's
    output layer names."""
    tf = import_tensorflow()
    known = list(_keras_inputs(model))
    if input_signature is not None:
        args = list(input_signature) if len(input_signature) == 1 else [list(input_signature)]
    else:
        args = _keras_known_signature(model)
        if args is None:
            raise ConversionError(f"the Keras model has no known input shapes (a subclassed "
                                  f"model never built or called); {hint}", model=label,
                                  exit_code=exit_code)
    leaves = tf.nest.flatten(args)
    given = [getattr(spec, "name", None) for spec in leaves] if input_signature else []
    layers = [_keras_name(t) for t in known]
    names = [(given[i] if given and given[i] else None)
             or (layers[i] if len(layers) == len(leaves) else None)
             or (f"input_{i}" if len(leaves) > 1 else "input") for i in range(len(leaves))]
    specs = tf.nest.pack_sequence_as(args, [
        tf.TensorSpec(spec.shape, spec.dtype, name=name) for spec, name in zip(leaves, names)])

    def call(*inputs):
        return model(*inputs, training=False)
    try:
        concrete = tf.function(call).get_concrete_function(*specs)
    except Exception as exc:
        raise ConversionError(f"cannot trace the Keras model: {first_line(exc)}",
                              model=label) from None
    outputs = output_names(tf, concrete.structured_outputs, _keras_output_names(model))
    return _freeze(tf, concrete, names, outputs, label)


def _keras_inputs(model) -> list:
    try:
        return list(model.inputs or [])
    except (AttributeError, ValueError):   # a subclassed model has no symbolic inputs
        return []


def _keras_name(tensor) -> str:
    """The name of the layer that makes `tensor` (an Input layer's name), else its own."""
    history = getattr(tensor, "_keras_history", None)
    name = getattr(history[0], "name", None) if history else None
    return name or tensor.name.split(":")[0]


def _keras_output_names(model) -> List[str]:
    names = getattr(model, "output_names", None)   # Keras 3's functional models and tf-keras
    if names:
        return list(names)
    try:   # a Keras 3 Sequential has outputs but no output_names
        return [_keras_name(t) for t in model.outputs or []]
    except (AttributeError, ValueError):
        return []


def _keras_known_signature(model) -> Optional[list]:
    """The positional arguments (TensorSpec-like structures) a built Keras model is called
    with, or None where the model does not know them."""
    if hasattr(model, "save_spec"):   # tf-keras: its Input layers, else its first call
        inputs = _keras_inputs(model)
        if inputs:
            return inputs if len(inputs) == 1 else [inputs]
        spec = model.save_spec(dynamic_batch=True)
        return list(spec[0]) if spec and spec[0] and not spec[1] else None
    from keras.src.export.export_utils import get_input_signature
    try:   # Keras 3: Input layers (in the model's structure), else a subclassed model's first call
        return list(get_input_signature(model))
    except ValueError:   # never built or called
        return None


def _freeze(tf, concrete, input_names: List[str], output_names: List[str], model: str) -> Frozen:
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    from tf2ir.parser.graph_view import graph_def_class
    from tf2ir.parser.tables import restore_tables
    try:
        frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=False)
    except Exception as exc:
        raise ConversionError(f"cannot freeze the model: {first_line(exc)}", model=model) from None
    graph_def = graph_def_class().FromString(frozen.graph.as_graph_def().SerializeToString())
    try:   # captured lookup tables: their contents back as constants (parser/tables.py)
        restore_tables(concrete, graph_def)
    except Exception as exc:
        raise ConversionError(f"cannot read the model's lookup tables: {first_line(exc)}",
                              model=model) from None
    placeholders = [t.name.split(":")[0] for t in frozen.inputs if t.dtype != tf.resource]
    renames = {}
    if len(placeholders) == len(input_names):
        renames = {old: new for old, new in zip(placeholders, input_names) if old != new}
    taken = {node.name for node in graph_def.node}
    if len(set(renames.values())) != len(renames) or (set(renames.values()) & (taken - set(renames))):
        renames = {}   # a name clash: keep TF's placeholder names
    _rename_nodes(graph_def, renames)
    placeholders = [renames.get(n, n) for n in placeholders]
    taken = {node.name for node in graph_def.node}
    outputs = []
    for tensor, name in zip(frozen.outputs, output_names):
        source = tensor.name.split(":")[0]
        source = renames.get(source, source) + tensor.name[tensor.name.index(":"):]
        if name in taken or not name:
            outputs.append(source)   # the signature name is taken: keep the TF tensor
            continue
        node = graph_def.node.add(name=name, op="Identity", input=[source])
        node.attr["T"].type = tensor.dtype.as_datatype_enum
        taken.add(name)
        outputs.append(f"{name}:0")
    return graph_def, placeholders, outputs


def _rename_nodes(graph_def, renames) -> None:
    if not renames:
        return

    def ref(text: str) -> str:
        control = text.startswith("^")
        name, sep, port = text.lstrip("^").partition(":")
        name = renames.get(name, name)
        return ("^" if control else "") + name + (sep + port if sep else "")
    for node in graph_def.node:
        node.name = renames.get(node.name, node.name)
        node.input[:] = [ref(i) for i in node.input]
