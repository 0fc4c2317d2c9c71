"""Builds and freezes keras.applications models (weights=None: nothing is downloaded).

Used by the tests and the benchmark: `python -m tf2ir.tools.models ResNet50 -o DIR` writes
DIR/ResNet50.pb. Batch-norm statistics are randomized (seeded) so that the frozen model's
output is not uniform and a wrong conversion shows in the numbers.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import List, Optional

import numpy as np


@dataclass
class FrozenModel:
    name: str
    path: str
    input_name: str           # Placeholder node name
    output_names: List[str]   # TF tensor names, e.g. "Identity:0"
    input_shape: tuple        # without the batch dim


def randomize_batch_norms(model, seed: int = 0) -> None:
    """Batch norms with random statistics (Keras 3 or tf-keras layers, matched by class
    name): with weights=None a deep model's activations otherwise fade to about zero."""
    rng = np.random.RandomState(seed)
    for layer in model.layers:
        if type(layer).__name__ == "BatchNormalization":
            c = layer.moving_mean.shape[0]
            if layer.gamma is not None:
                layer.gamma.assign(rng.uniform(0.5, 1.5, c).astype("float32"))
            if layer.beta is not None:
                layer.beta.assign(rng.normal(0, 0.2, c).astype("float32"))
            layer.moving_mean.assign(rng.normal(0, 0.2, c).astype("float32"))
            layer.moving_variance.assign(rng.uniform(0.5, 1.5, c).astype("float32"))


def freeze_function(fn, input_spec, path: str, lower_control_flow: bool = False) -> List[str]:
    """Freeze a tf.function for `input_spec` (one TensorSpec or a list, one per argument)
    into a GraphDef at `path`; return the output tensor names. Control flow stays functional
    (If/While with library functions) unless `lower_control_flow` asks for TF's default
    freezing, which lowers it to TF1 Switch/Merge and Enter/Exit frames. Captured lookup
    tables are written as TF1 tables initialised from constants (parser/tables.py)."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    specs = input_spec if isinstance(input_spec, (list, tuple)) else [input_spec]
    concrete = tf.function(fn).get_concrete_function(*specs)
    frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=lower_control_flow)
    graph_def = frozen.graph.as_graph_def()
    from tf2ir.parser.tables import restore_tables
    restore_tables(concrete, graph_def)   # captured lookup tables keep their contents
    from tf2ir.ir.atomic import atomic_output
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(graph_def.SerializeToString())
    return [t.name for t in frozen.outputs]


def freeze_keras_application(name: str, out_dir: str, seed: int = 0) -> FrozenModel:
    """Build keras.applications.<name>(weights=None), randomize BN stats, freeze to .pb."""
    import keras
    import tensorflow as tf
    path = os.path.join(out_dir, f"{name}.pb")
    model = getattr(keras.applications, name)(weights=None)
    randomize_batch_norms(model, seed)
    shape = tuple(model.input_shape[1:])
    spec = tf.TensorSpec((None,) + shape, tf.float32, name="input")
    outputs = freeze_function(lambda x: model(x, training=False), spec, path)
    return FrozenModel(name, path, "input", outputs, shape)


def build_sample_cnn(path: str, seed: int = 0) -> FrozenModel:
    """The small CNN shipped as tests/data/sample_cnn.pb (conv, batch norm, depthwise conv,
    pooling, dense, softmax; 32x32x3 input), so the README's first command needs no TF."""
    import keras
    import tensorflow as tf
    keras.utils.set_random_seed(seed)
    layers = keras.layers
    inputs = keras.Input((32, 32, 3))
    x = layers.Conv2D(16, 3, strides=2, padding="same")(inputs)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU(6.0)(x)
    x = layers.DepthwiseConv2D(3, padding="same")(x)
    x = layers.Conv2D(24, 1, activation="relu")(x)
    x = layers.MaxPooling2D()(x)
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(10, activation="softmax")(x)
    model = keras.Model(inputs, outputs)
    randomize_batch_norms(model, seed)
    spec = tf.TensorSpec((None, 32, 32, 3), tf.float32, name="input")
    names = freeze_function(lambda t: model(t, training=False), spec, path)
    return FrozenModel("sample_cnn", path, "input", names, (32, 32, 3))


def run_frozen_graph(path: str, feeds: dict, outputs: List[str]) -> List[np.ndarray]:
    """Run a frozen GraphDef in TensorFlow (the reference)."""
    import tensorflow as tf
    graph_def = tf.compat.v1.GraphDef()
    with open(path, "rb") as f:
        graph_def.ParseFromString(f.read())
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=graph) as session:
        names = {k if ":" in k else k + ":0": v for k, v in feeds.items()}
        return session.run(outputs, names)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.models",
                                     description="Freeze keras.applications models (weights=None) to .pb")
    parser.add_argument("names", nargs="+",
                        help="keras.applications names, e.g. ResNet50, or 'sample_cnn'")
    parser.add_argument("-o", "--out-dir", default=".", help="where to write NAME.pb")
    args = parser.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.names:
        if name == "sample_cnn":
            frozen = build_sample_cnn(os.path.join(args.out_dir, "sample_cnn.pb"))
        else:
            frozen = freeze_keras_application(name, args.out_dir)
        print(f"{frozen.path}  input={frozen.input_name}  outputs={','.join(frozen.output_names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
