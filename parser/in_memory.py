"""In-memory TensorFlow objects frozen into a GraphDef: the Python API's sources that are
not files (tf2ir.convert(model)).

    keras.Model (Keras 3 or tf-keras)   its inference call, inputs from its Input layers,
                                        the shapes it was first called with, or input_signature
    tf.function                         its input_signature, or the one given
    ConcreteFunction                    as traced
    tf.Module / loaded SavedModel       its signature `signature` (default serving_default),
                                        else its __call__ when that is a tf.function

Each is traced and frozen by parser/frozen.py as SavedModels and Keras files are: variables
become constants, control flow stays functional (If/While), lookup tables keep their
contents, Placeholders take the input names and each output an Identity of its name. Anything
else is refused with one usage error that lists what is accepted. TensorFlow is imported only
when the object can be one of its own (it is loaded already).
"""

from __future__ import annotations

import sys
from typing import List, Optional, Sequence, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.parser import frozen

ACCEPTED = ("a model path, a GraphDef or its bytes, a keras.Model (Keras 3 or tf-keras), "
            "a tf.function, a ConcreteFunction, or a tf.Module or loaded SavedModel with "
            "signatures")

InMemory = Tuple[object, Optional[List[str]], str]   # (GraphDef, output tensor names, label)


def freeze_object(source, input_signature: Optional[Sequence] = None,
                  signature: Optional[str] = None) -> InMemory:
    """Freeze an in-memory TF object → (GraphDef, its output tensor names, model label).
    `input_signature`: TensorSpecs for a Keras model (one per model input) or a
    tf.function (one per argument); `signature`: which of a module's signatures."""
    kind = kind_of(source)
    label = describe(source, kind)
    if kind is None:
        raise ConversionError(f"cannot convert an object of type {_type_name(source)}; "
                              f"tf2ir converts {ACCEPTED}", model=label,
                              exit_code=ExitStatus.USAGE)
    tf = frozen.import_tensorflow()
    specs = _input_signature(tf, input_signature, label)
    if signature is not None and kind != "module":
        raise ConversionError("signature= chooses among a tf.Module's or SavedModel's "
                              "signatures; this object has none", model=label,
                              exit_code=ExitStatus.USAGE)
    if kind == "keras":
        graph_def, _, outputs = frozen.freeze_keras_model(source, label, specs)
        return graph_def, outputs, label
    if kind == "module":
        concrete = _module_function(tf, source, specs, signature, label)
    elif kind == "concrete":
        if specs is not None:
            raise _no_input_signature("a ConcreteFunction is traced already", label)
        concrete = source
    else:
        concrete = _trace(source, specs, label)
    graph_def, _, outputs = frozen.freeze_function(tf, concrete, label)
    return graph_def, outputs, label


def kind_of(source) -> Optional[str]:
    """"keras", "function", "concrete", "module" or None (not a TF object tf2ir takes)."""
    for package in ("keras", "tf_keras"):   # Keras 3, tf-keras (tf.keras is one of them)
        module = sys.modules.get(package)
        if module is not None and isinstance(source, getattr(module, "Model", ())):
            return "keras"
    tf = sys.modules.get("tensorflow")
    if tf is None:   # no TF object exists before TensorFlow is imported
        return None
    if isinstance(source, tf.types.experimental.ConcreteFunction):
        return "concrete"
    if isinstance(source, tf.types.experimental.PolymorphicFunction):
        return "function"
    if isinstance(source, (tf.Module, tf.__internal__.tracking.AutoTrackable)):
        return "module"   # tf.saved_model.load gives an AutoTrackable
    return None


def describe(source, kind: Optional[str] = None) -> str:
    """The label errors name the object by, e.g. <keras.Sequential 'sequential'>."""
    kind = kind or kind_of(source)
    cls = type(source)
    if kind == "keras":
        legacy = sys.modules.get("tf_keras")
        package = "tf_keras" if legacy and isinstance(source, legacy.Model) else "keras"
        return f"<{package}.{cls.__name__} '{source.name}'>"
    if kind == "function":
        return f"<tf.function '{getattr(source, 'name', '?')}'>"
    if kind == "concrete":
        return f"<ConcreteFunction '{source.graph.name}'>"
    if kind == "module":
        if getattr(source, "signatures", None) is not None and not isinstance(
                source, sys.modules["tensorflow"].Module):
            return "<loaded SavedModel>"
        name = getattr(source, "_name", None) or cls.__name__
        return f"<tf.Module '{name}'>"
    return f"<{_type_name(source)}>"


def _type_name(source) -> str:
    cls = type(source)
    return cls.__qualname__ if cls.__module__ == "builtins" \
        else f"{cls.__module__.split('.')[0]}.{cls.__qualname__}"


def _input_signature(tf, given, label: str) -> Optional[List]:
    """`given` as a list of TensorSpec structures (one TensorSpec alone is a list of one)."""
    if given is None:
        return None
    if isinstance(given, tf.TensorSpec):
        given = [given]
    if not isinstance(given, (list, tuple)) or not given or not all(
            isinstance(leaf, tf.TensorSpec) for leaf in tf.nest.flatten(list(given))):
        raise ConversionError("input_signature must be a non-empty list of tf.TensorSpec, "
                              f"not {given!r}", model=label, exit_code=ExitStatus.USAGE)
    return list(given)


def _no_input_signature(why: str, label: str) -> ConversionError:
    return ConversionError(f"input_signature does not apply: {why}", model=label,
                           exit_code=ExitStatus.USAGE)


def _trace(function, specs: Optional[List], label: str):
    """A tf.function's concrete function for `specs`, else for its own input_signature."""
    if specs is None and function.input_signature is None:
        raise ConversionError("the tf.function has no input_signature; give one to "
                              "tf.function or pass input_signature=[tf.TensorSpec(...), ...]",
                              model=label, exit_code=ExitStatus.USAGE)
    try:
        return function.get_concrete_function(*(specs or ()))
    except Exception as exc:
        raise ConversionError(f"cannot trace the tf.function: {frozen.first_line(exc)}",
                              model=label) from None


def _module_function(tf, module, specs: Optional[List], signature: Optional[str], label: str):
    """The signature `signature` of a module (serving_default unless named), else its
    __call__ when that is a tf.function."""
    signatures = dict(getattr(module, "signatures", None) or {})
    if signatures or signature is not None:
        name = signature or frozen.DEFAULT_SIGNATURE
        if name not in signatures:
            raise ConversionError(f"no signature '{name}'; available: "
                                  f"{', '.join(sorted(signatures)) or 'none'} (choose with "
                                  "signature=)", model=label, exit_code=ExitStatus.USAGE)
        if specs is not None:
            raise _no_input_signature(f"signature '{name}' has its inputs", label)
        return signatures[name]
    call = getattr(module, "__call__", None)
    if isinstance(call, tf.types.experimental.PolymorphicFunction):
        return _trace(call, specs, label)
    raise ConversionError("the module has no signatures and its __call__ is not a "
                          "tf.function; decorate __call__ with @tf.function(input_signature="
                          "[...]) or convert a tf.function", model=label,
                          exit_code=ExitStatus.USAGE)
