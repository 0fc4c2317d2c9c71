"""The TFLite zoo's models and their .tflite files (the TensorFlow side of tools/tflite_zoo.py).

Each model of CATALOGUE is built with fixed seed weights (keras.utils.set_random_seed; the
keras.applications models with weights=None and randomized batch-norm statistics, as
tools/models.py does) and converted by TF's TFLiteConverter from a concrete function in each
flavour:

- float:   no optimization;
- dynamic: Optimize.DEFAULT without data (int8 weights, float activations: hybrid kernels);
- int8:    full integer (Optimize.DEFAULT, TFLITE_BUILTINS_INT8, float inputs and outputs),
           calibrated on CALIBRATION draws from a fixed seed. A model the converter cannot
           quantize fully is retried with float fallback (TFLITE_BUILTINS too), noted;
- float16: float16 weights (Optimize.DEFAULT, supported_types float16), asked for by name.

The LSTM is tf_keras' (Keras 2) LSTM through from_keras_model, which TF's converter fuses
into UNIDIRECTIONAL_SEQUENCE_LSTM (Keras 3's LSTM becomes a WHILE loop, whose full-int8
conversion crashes TF 2.21's converter); Keras 3's where tf_keras is missing.

Run as a child (the parent never imports TensorFlow; when a converter crashes, the parent
builds the flavours still missing one child each):

    python -m tf2ir.tools.tflite_zoo_models MODEL FLAVOUR[,FLAVOUR...] -o DIR [--quick]

writes for each flavour DIR/STEM.FLAVOUR.tflite, DIR/STEM.npz (the test input, one array per input: in0, in1,
...) and DIR/STEM.FLAVOUR.json (the path or the failure line), STEM being MODEL[.quick].
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import traceback
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

FLAVOURS = ("float", "dynamic", "int8", "float16")
DEFAULT_FLAVOURS = ("float", "dynamic", "int8")
SEED = 20261127
CALIBRATION = 16          # representative draws for full int8
BUILD_VERSION = 2         # bump when what a build writes changes (invalidates the cache)


@dataclass(frozen=True)
class ZooModel:
    """A catalogue entry: `kind` keras (keras.applications NAME), transformer
    (tools/bench_models.MODELS[NAME]), lstm or cnn (small models built here); `size` the
    image side (keras) or sequence length; `quick_size` the same under --quick."""
    name: str
    kind: str
    size: int
    quick_size: int


def _keras(name: str, size: int = 96, quick: int = 32) -> ZooModel:
    return ZooModel(name, "keras", size, quick)


CATALOGUE: Dict[str, ZooModel] = {m.name: m for m in (
    _keras("MobileNetV2"), _keras("MobileNetV3Small"), _keras("EfficientNetB0"),
    _keras("ResNet50"), _keras("DenseNet121"), _keras("InceptionV3", 96, 75),
    _keras("NASNetMobile"), _keras("Xception", 96, 71),
    ZooModel("BertEncoder", "transformer", 128, 16), ZooModel("GPTDecoder", "transformer", 128, 16),
    ZooModel("T5Encoder", "transformer", 128, 16), ZooModel("BertBaseLayer2", "transformer", 128, 16),
    ZooModel("LSTM", "lstm", 32, 8), ZooModel("TinyCNN", "cnn", 16, 8),
)}
# --quick's representative subset: a mobile CNN, a BERT-style encoder, the LSTM (small sizes).
QUICK = ("MobileNetV2", "BertEncoder", "LSTM")


def stem(name: str, quick: bool) -> str:
    """The cache file stem of a model: quick builds are smaller models, kept apart."""
    return f"{name}.quick" if quick else name


@dataclass
class Built:
    fn: Callable
    specs: List            # tf.TensorSpec per input (batch 1)
    ranges: List[Tuple[float, float]]   # per input: draw range (ints: [low, high))
    keras_model: object = None          # converted by from_keras_model (tf_keras' LSTM)


def build(entry: ZooModel, quick: bool) -> Built:
    """The model of `entry` as a tf.function over batch-1 specs, seed weights."""
    import keras
    import tensorflow as tf
    keras.utils.set_random_seed(0)
    size = entry.quick_size if quick else entry.size
    if entry.kind == "keras":
        from tf2ir.tools.models import randomize_batch_norms
        kwargs = {"alpha": 0.35} if quick and entry.name.startswith("MobileNet") else {}
        # logits, not probabilities: random weights make a near-uniform softmax whose int8
        # output is one value, which would compare as exact whatever the conversion does
        model = getattr(keras.applications, entry.name)(
            weights=None, input_shape=(size, size, 3), classes=100 if quick else 1000,
            classifier_activation=None, **kwargs)
        randomize_batch_norms(model, 0)
        specs = [tf.TensorSpec((1, size, size, 3), tf.float32, name="input")]
        ranges = [(-1.0, 1.0)]
    elif entry.kind == "transformer":
        from tf2ir.tools.bench_models import MODELS
        from tf2ir.tools.bench_models import build as build_transformer
        spec = dataclasses.replace(MODELS[entry.name], seq=size)
        if quick:
            spec = dataclasses.replace(spec, layers=1, width=32, heads=2, vocab=100)
        model = build_transformer(spec)
        specs = [tf.TensorSpec((1, size), tf.int32, name="input")]
        ranges = [(0, spec.vocab)]
    elif entry.kind == "lstm":
        try:
            import tf_keras as lstm_keras
        except ImportError:
            lstm_keras = keras
        lstm_keras.utils.set_random_seed(0)
        units = 8 if quick else 64
        inputs = lstm_keras.Input((size, 16), batch_size=1)
        x = lstm_keras.layers.LSTM(units, return_sequences=True)(inputs)
        x = lstm_keras.layers.LSTM(units)(x)
        model = lstm_keras.Model(inputs, lstm_keras.layers.Dense(10)(x))
        specs = [tf.TensorSpec((1, size, 16), tf.float32, name="input")]
        ranges = [(-1.0, 1.0)]
        fn = tf.function(lambda x: model(x, training=False))
        return Built(fn, specs, ranges, model if lstm_keras is not keras else None)
    elif entry.kind == "cnn":      # the CI's model: only CONV_2D and MEAN (+ QUANTIZE/DEQUANTIZE)
        inputs = keras.Input((size, size, 3), batch_size=1)
        x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inputs)
        x = keras.layers.Conv2D(4, 3, strides=2, activation="relu6")(x)
        model = keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(x))
        specs = [tf.TensorSpec((1, size, size, 3), tf.float32, name="input")]
        ranges = [(-1.0, 1.0)]
    else:
        raise ValueError(f"unknown model kind {entry.kind!r}")
    fn = tf.function(lambda *args: model(args[0] if len(args) == 1 else list(args), training=False))
    return Built(fn, specs, ranges)


def draw(specs: Sequence, ranges: Sequence[Tuple[float, float]], rng) -> List[np.ndarray]:
    out = []
    for s, (low, high) in zip(specs, ranges):
        shape, dtype = s.shape.as_list(), s.dtype.as_numpy_dtype
        if np.issubdtype(dtype, np.floating):
            out.append(rng.uniform(low, high, shape).astype(dtype))
        else:
            out.append(rng.integers(int(low), int(high), shape).astype(dtype))
    return out


def to_tflite(built: Built, flavour: str, fallback: bool = False) -> bytes:
    """.tflite bytes of `built` in `flavour` (FLAVOURS); `fallback`: full int8 may keep
    float ops where the converter cannot quantize."""
    import tensorflow as tf
    if built.keras_model is not None:
        converter = tf.lite.TFLiteConverter.from_keras_model(built.keras_model)
    else:
        concrete = built.fn.get_concrete_function(*built.specs)
        converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete], built.fn)
    if flavour != "float":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if flavour == "float16":
        converter.target_spec.supported_types = [tf.float16]
    if flavour == "int8":
        def data():
            rng = np.random.default_rng(SEED)
            for _ in range(CALIBRATION):
                yield draw(built.specs, built.ranges, rng)
        converter.representative_dataset = data
        ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.target_spec.supported_ops = ops + ([tf.lite.OpsSet.TFLITE_BUILTINS] if fallback else [])
    return converter.convert()


def write_model(name: str, out_dir: str, flavours: Sequence[str], quick: bool) -> None:
    """Build `name`, write its test input, then each flavour and its JSON sidecar ({"path"}
    or {"error"}, and a "note") into out_dir, one after the other."""
    base = os.path.join(out_dir, stem(name, quick))
    built = build(CATALOGUE[name], quick)
    feeds = draw(built.specs, built.ranges, np.random.default_rng(SEED + 1))
    np.savez(base + ".npz", **{f"in{i}": a for i, a in enumerate(feeds)})
    for flavour in flavours:
        record: dict = {"model": name, "flavour": flavour, "quick": quick, "version": BUILD_VERSION}
        try:
            try:
                data = to_tflite(built, flavour)
            except Exception:
                if flavour != "int8":
                    raise
                data, record["note"] = to_tflite(built, flavour, fallback=True), "float fallback"
            path = f"{base}.{flavour}.tflite"
            with open(path, "wb") as f:
                f.write(data)
            record["path"] = path
        except Exception as exc:   # the row says so
            record["error"] = _one_line(f"TFLiteConverter: {type(exc).__name__}: {exc}")
        with open(f"{base}.{flavour}.json", "w") as f:
            json.dump(record, f, indent=1)


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.tflite_zoo_models",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", choices=sorted(CATALOGUE))
    parser.add_argument("flavours", help="comma-separated, of " + ", ".join(FLAVOURS))
    parser.add_argument("-o", "--out-dir", required=True)
    parser.add_argument("--quick", action="store_true", help="the small variant of the model")
    args = parser.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    try:
        flavours = args.flavours.split(",")
        if any(f not in FLAVOURS for f in flavours):
            parser.error(f"flavours: of {', '.join(FLAVOURS)}")
        write_model(args.model, args.out_dir, flavours, args.quick)
    except Exception as exc:
        traceback.print_exc()
        print(_one_line(f"build failed: {type(exc).__name__}: {exc}"), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
