"""Int8 from quantization-aware graphs (`--quantized qdq`): latency and error of the QDQ model
against the float model (the same graph without its FakeQuant ops) and against the default
exact-arithmetic conversion of the same fake-quantized graph, at 1 thread and all threads.

    python -m tf2ir.tools.qdq_bench                    # the built-in fake-quantized models
    python -m tf2ir.tools.qdq_bench qat_cnn --runs 200
    python -m tf2ir.tools.qdq_bench --tfmot            # + tensorflow-model-optimization's
                                                       #   quantize_model of a Keras CNN and
                                                       #   MobileNetV2 (where tfmot imports)
    python -m tf2ir.tools.qdq_bench --tfmot-only       # those two only

The built-in models are written with the FakeQuant ops tf.quantization inserts, as a
quantization-aware-trained graph holds them: weights per output channel, symmetric,
narrow_range (FakeQuantWithMinMaxVarsPerChannel), activations per tensor with ranges
calibrated on sample data (FakeQuantWithMinMaxVars). `build(name, mode)` gives each model as a
tf.function in mode "qat" or "float" (tests/e2e/test_qdq_models.py converts them too).

Each model is converted with the `tf2ir` command line three times (qdq, exact, float), run
in onnxruntime (the median of --runs runs after a warm-up, the three models interleaved), and
compared with TensorFlow: the largest difference in units of the output's quantization step,
and the share of outputs that are TF's to the bit. The kernels onnxruntime chose for the QDQ
model (its optimized graph) are listed: QLinearConv, QGemm, QLinearMatMul, MatMulInteger.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

INT8_KERNELS = ("QLinearConv", "QGemm", "QLinearMatMul", "MatMulInteger", "ConvInteger",
                "QAttention", "DynamicQuantizeMatMul", "QLinearAdd", "QLinearGlobalAveragePool")


# -- fake-quantized models written with tf.quantization's ops -----------------------------------
class FakeQuant:
    """How a model body quantizes: mode "calibrate" records each activation's range (run
    eagerly on sample data), "qat" inserts FakeQuant ops with those ranges and quantizes
    weights per output channel, "float" leaves both alone."""

    def __init__(self, mode: str, ranges: Optional[List[Tuple[float, float]]] = None):
        self.mode, self.ranges, self.count = mode, ranges if ranges is not None else [], 0

    def act(self, t):
        import tensorflow as tf
        index, self.count = self.count, self.count + 1
        if self.mode == "calibrate":
            low, high = float(tf.reduce_min(t)), float(tf.reduce_max(t))
            self.ranges.append((min(low, 0.0), max(high, low + 1e-3, 1e-3)))
            return t
        if self.mode == "qat":
            low, high = self.ranges[index]
            return tf.quantization.fake_quant_with_min_max_vars(t, low, high)
        return t

    def weight(self, w: np.ndarray, per_channel: bool = True):
        import tensorflow as tf
        if self.mode != "qat":
            return tf.constant(w)
        if not per_channel:
            m = float(max(np.abs(w).max(), 1e-6))
            return tf.quantization.fake_quant_with_min_max_vars(tf.constant(w), -m, m,
                                                                narrow_range=True)
        m = np.maximum(np.abs(w).reshape(-1, w.shape[-1]).max(axis=0), 1e-6).astype(np.float32)
        return tf.quantization.fake_quant_with_min_max_vars_per_channel(
            tf.constant(w), -m, m, narrow_range=True)


def _conv(q, x, rng, k, cout, stride=1, relu=True, bn=False):
    import tensorflow as tf
    cin = x.shape[-1]
    w = rng.normal(0, (2.0 / (k * k * cin)) ** 0.5, (k, k, cin, cout)).astype(np.float32)
    y = tf.nn.conv2d(x, q.weight(w), stride, "SAME")
    y = tf.nn.bias_add(y, rng.normal(0, 0.1, cout).astype(np.float32))
    if bn:      # an unfolded batch norm's scale and shift (positive scale)
        y = y * rng.uniform(0.5, 1.5, cout).astype(np.float32) + \
            rng.normal(0, 0.1, cout).astype(np.float32)
    return q.act(tf.nn.relu(y) if relu else y)


def _dense(q, x, rng, cout, relu=False):
    import tensorflow as tf
    cin = x.shape[-1]
    w = rng.normal(0, (1.0 / cin) ** 0.5, (cin, cout)).astype(np.float32)
    y = tf.matmul(x, q.weight(w)) + rng.normal(0, 0.1, cout).astype(np.float32)
    return q.act(tf.nn.relu(y) if relu else y)


def cnn_body(q, x, rng):
    """A small CNN: conv + batch norm, strided conv, depthwise conv, 1x1 conv, pool, dense."""
    import tensorflow as tf
    x = q.act(x)
    x = _conv(q, x, rng, 3, 16, bn=True)
    x = _conv(q, x, rng, 3, 32, stride=2)
    w = rng.normal(0, 0.3, (3, 3, 32, 1)).astype(np.float32)
    x = tf.nn.depthwise_conv2d(x, q.weight(w, per_channel=False), [1, 1, 1, 1], "SAME")
    x = q.act(tf.nn.relu(x + rng.normal(0, 0.1, 32).astype(np.float32)))
    x = _conv(q, x, rng, 1, 64)
    x = q.act(tf.reduce_mean(x, [1, 2]))
    return _dense(q, x, rng, 10)


def resnet_body(q, x, rng, widths=(32, 64, 128), blocks=2):
    """A ResNet-like CNN: a stem, then per width a strided conv and residual blocks."""
    import tensorflow as tf
    x = q.act(x)
    x = _conv(q, x, rng, 3, widths[0], stride=2, bn=True)
    for i, width in enumerate(widths):
        if i:
            x = _conv(q, x, rng, 3, width, stride=2)
        for _ in range(blocks):
            y = _conv(q, x, rng, 3, width, bn=True)
            y = _conv(q, y, rng, 3, width, relu=False)
            x = q.act(tf.nn.relu(x + y))
    x = q.act(tf.reduce_mean(x, [1, 2]))
    return _dense(q, x, rng, 10)


def mlp_body(q, x, rng, heads=4):
    """An attention block and an MLP on [1, tokens, 64]: projections, scores, softmax,
    weighted sum, output projection with a residual, then two dense layers."""
    import tensorflow as tf
    x = q.act(x)
    tokens, width = x.shape[1], x.shape[2]
    split = lambda t: tf.transpose(tf.reshape(t, [1, tokens, heads, width // heads]),  # noqa
                                   [0, 2, 1, 3])
    qh, kh, vh = (split(_dense(q, x, rng, width)) for _ in range(3))
    scores = q.act(tf.matmul(qh, kh, transpose_b=True) / float((width // heads) ** 0.5))
    attn = q.act(tf.nn.softmax(scores))
    mixed = q.act(tf.matmul(attn, vh))
    mixed = tf.reshape(tf.transpose(mixed, [0, 2, 1, 3]), [1, tokens, width])
    x = q.act(x + _dense(q, mixed, rng, width))
    y = _dense(q, x, rng, 4 * width, relu=True)
    return _dense(q, y, rng, width)


MODELS: Dict[str, Tuple[Callable, List[int], float]] = {     # body, input shape, input range
    "qat_cnn": (cnn_body, [1, 32, 32, 3], 1.0),
    "qat_mlp": (mlp_body, [1, 32, 64], 2.0),
    "qat_resnet": (resnet_body, [1, 96, 96, 3], 1.0),
}


def sample_input(name: str, seed: int = 1) -> np.ndarray:
    _, shape, high = MODELS[name]
    return np.random.default_rng(seed).uniform(-high, high, shape).astype(np.float32)


def build(name: str, mode: str, seed: int = 0):
    """Model `name` as (tf.function of one input, its TensorSpec): "qat" with FakeQuant ops
    (activation ranges calibrated on a sample), "float" without them (the same weights)."""
    import tensorflow as tf
    body, shape, _ = MODELS[name]
    ranges: List[Tuple[float, float]] = []
    if mode == "qat":
        body(FakeQuant("calibrate", ranges), tf.constant(sample_input(name, seed + 7)),
             np.random.default_rng(seed))
    spec = tf.TensorSpec(shape, tf.float32, name="x")
    fn = tf.function(lambda x: body(FakeQuant(mode, ranges), x, np.random.default_rng(seed)))
    return fn, spec


# -- tensorflow-model-optimization's quantize_model ---------------------------------------------
def tfmot_models(folder: str, names: Tuple[str, ...] = ("tfmot_cnn", "tfmot_mobilenetv2"),
                 ) -> Dict[str, Tuple[str, str, np.ndarray]]:
    """name -> (qat .pb, float .pb, sample input) for tfmot's quantize_model of a small Keras
    CNN and of MobileNetV2 (weights=None), activation ranges set from a sample; {} where
    tensorflow-model-optimization (with tf-keras) does not import."""
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    try:
        import tensorflow_model_optimization as tfmot
        import tf_keras as keras
    except Exception as exc:       # not installed, or not beside this TensorFlow
        print(f"qdq_bench: tfmot models skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
        return {}
    keras.utils.set_random_seed(0)
    layers = keras.layers
    small = keras.Sequential([
        layers.Input((32, 32, 3)), layers.Conv2D(16, 3, padding="same", activation="relu"),
        layers.Conv2D(32, 3, strides=2, padding="same", activation="relu"),
        layers.DepthwiseConv2D(3, padding="same", activation="relu"),
        layers.Conv2D(64, 1, activation="relu"), layers.GlobalAveragePooling2D(),
        layers.Dense(10)])
    models = {"tfmot_cnn": lambda: small, "tfmot_mobilenetv2": lambda: keras.applications
              .MobileNetV2(weights=None, input_shape=(224, 224, 3), classifier_activation=None)}
    found = {}
    for name in names:
        model = models[name]()
        from tf2ir.tools.models import randomize_batch_norms
        randomize_batch_norms(model)   # (weights=None: else the activations fade to ~0)
        x = np.random.default_rng(1).uniform(-1, 1, (1,) + model.input_shape[1:]) \
            .astype(np.float32)
        qat = tfmot.quantization.keras.quantize_model(model)
        _calibrate_tfmot(qat, x)
        paths = []
        for kind, m in (("qat", qat), ("float", model)):
            path = os.path.join(folder, f"{name}_{kind}.pb")
            _freeze_keras(m, x.shape, path)
            paths.append(path)
        found[name] = (paths[0], paths[1], x)
    return found


def _calibrate_tfmot(qat, x: np.ndarray) -> None:
    """Set each activation quantizer's range from the layer outputs on `x` (twice: the
    second pass sees the first's ranges), the input quantizer's from `x`."""
    import tf_keras as keras
    for layer in qat.layers:
        if type(layer).__name__ != "QuantizeLayer":
            continue
        for w in layer.weights:
            if w.name.endswith("_min:0"):
                w.assign(min(float(x.min()), 0.0))
            elif w.name.endswith("_max:0"):
                w.assign(float(x.max()))
    probe = keras.Model(qat.inputs, [layer.output for layer in qat.layers])
    for _ in range(2):
        for layer, out in zip(qat.layers, probe(x, training=False)):
            out = np.asarray(out)
            for w in layer.weights:
                if w.name.endswith(("output_min:0", "post_activation_min:0")):
                    w.assign(min(float(out.min()) * 1.05, 0.0))
                elif w.name.endswith(("output_max:0", "post_activation_max:0")):
                    w.assign(max(float(out.max()) * 1.05, 1e-3))


def _freeze_keras(model, shape, path: str) -> None:
    import tensorflow as tf
    from tf2ir.tools.models import freeze_function
    freeze_function(lambda x: model(x, training=False), tf.TensorSpec(shape, tf.float32,
                                                                       name="x"), path)


# -- measuring ----------------------------------------------------------------------------------
def convert(pb: str, out: str, *options: str) -> None:
    """`tf2ir convert` as a child process (the command line's own path)."""
    subprocess.run([sys.executable, "-m", "tf2ir.tools.cli", "convert", pb, "-o", out, "-q",
                    *options], check=True)


def ort_kernels(path: str) -> Counter:
    """The op types of onnxruntime's optimized graph of `path` (what it runs)."""
    import onnx
    import onnxruntime as ort
    with tempfile.TemporaryDirectory() as folder:
        options = ort.SessionOptions()
        options.optimized_model_filepath = os.path.join(folder, "optimized.onnx")
        options.log_severity_level = 3
        ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        return Counter(n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node)


def tf_output(pb: str, x: np.ndarray) -> np.ndarray:
    """TensorFlow's output of a frozen graph (input x:0, the last Identity's output)."""
    import tensorflow as tf
    graph_def = tf.compat.v1.GraphDef()
    with open(pb, "rb") as f:
        graph_def.ParseFromString(f.read())
    output = [n.name for n in graph_def.node if n.op == "Identity"][-1]
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session() as session:
            return session.run(f"{output}:0", {"x:0": x})


def latency(models: Dict[str, str], x: np.ndarray, runs: int) -> Dict[str, Dict[str, float]]:
    """Median milliseconds per model at 1 thread and all threads, the models interleaved."""
    import onnxruntime as ort
    result: Dict[str, Dict[str, float]] = {label: {} for label in models}
    outputs = {}
    for threads in (1, 0):
        sessions = {}
        for label, path in models.items():
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.log_severity_level = 3
            sessions[label] = ort.InferenceSession(path, options,
                                                   providers=["CPUExecutionProvider"])
        times: Dict[str, List[float]] = {label: [] for label in sessions}
        for label, s in sessions.items():
            for _ in range(5):
                outputs[label] = s.run(None, {s.get_inputs()[0].name: x})[0]
        for _ in range(runs):
            for label, s in sessions.items():
                start = time.perf_counter()
                s.run(None, {s.get_inputs()[0].name: x})
                times[label].append(time.perf_counter() - start)
        for label in sessions:
            result[label]["1" if threads == 1 else "all"] = 1000 * statistics.median(times[label])
    result["outputs"] = outputs     # type: ignore[assignment]
    return result


def output_step(pb: str) -> Optional[float]:
    """The quantization step of the graph's output when a FakeQuant with constant min/max
    produces it (through Identity), else None."""
    from tensorflow.core.framework import graph_pb2
    from tensorflow.python.framework import tensor_util
    graph_def = graph_pb2.GraphDef()
    with open(pb, "rb") as f:
        graph_def.ParseFromString(f.read())
    nodes = {n.name: n for n in graph_def.node}
    node = nodes[[n.name for n in graph_def.node if n.op == "Identity"][-1]]
    while node.op == "Identity":
        node = nodes[node.input[0].split(":")[0].lstrip("^")]
    if node.op == "FakeQuantWithMinMaxArgs":
        low, high = node.attr["min"].f, node.attr["max"].f
    elif node.op == "FakeQuantWithMinMaxVars":
        values = []
        for name in node.input[1:3]:
            source = nodes[name.split(":")[0]]
            while source.op == "Identity":
                source = nodes[source.input[0].split(":")[0]]
            if source.op != "Const":
                return None
            values.append(float(tensor_util.MakeNdarray(source.attr["value"].tensor)))
        low, high = values
    else:
        return None
    return (high - low) / (2 ** node.attr["num_bits"].i - 1 - int(node.attr["narrow_range"].b))


def measure(name: str, qat_pb: str, float_pb: str, x: np.ndarray, folder: str,
            runs: int) -> Dict[str, object]:
    paths = {label: os.path.join(folder, f"{name}_{label}.onnx")
             for label in ("qdq", "exact", "float")}
    convert(qat_pb, paths["qdq"], "--quantized", "qdq")
    convert(qat_pb, paths["exact"])
    convert(float_pb, paths["float"])
    timed = latency(paths, x, runs)
    outputs = timed.pop("outputs")
    want, want_float = tf_output(qat_pb, x), tf_output(float_pb, x)
    step = output_step(qat_pb)
    row: Dict[str, object] = {"model": name, "latency": timed, "step": step}
    for label in ("qdq", "exact", "float"):
        reference = want_float if label == "float" else want
        got = outputs[label]            # type: ignore[index]
        row[f"{label}_err"] = float(np.abs(got - reference).max())
        row[f"{label}_exact"] = float(np.mean(got == reference))
    row["qdq_vs_float"] = float(np.abs(outputs["qdq"] - want_float).max())  # type: ignore
    row["kernels"] = {k: v for k, v in ort_kernels(paths["qdq"]).items() if k in INT8_KERNELS}
    return row


def table(rows: List[Dict[str, object]]) -> str:
    lines = ["| model | threads | qdq ms | exact ms | float ms | qdq/float | qdq/exact |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        t = r["latency"]
        for threads in ("1", "all"):
            q, e, f = (t[k][threads] for k in ("qdq", "exact", "float"))     # type: ignore
            lines.append(f"| {r['model']} | {threads} | {q:.3f} | {e:.3f} | {f:.3f} | "
                         f"{q / f:.2f} | {q / e:.2f} |")
    lines += ["", "| model | output step | qdq max err vs TF (steps) | qdq bit-exact | "
              "exact max err | float max err | qdq vs TF float | int8 kernels (onnxruntime) |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        step = r["step"]
        steps = f" ({r['qdq_err'] / step:.2f})" if step else ""        # type: ignore
        kernels = ", ".join(f"{k} x{v}" for k, v in sorted(r["kernels"].items()))  # type: ignore
        lines.append(f"| {r['model']} | {step if step is None else f'{step:.4g}'} | "
                     f"{r['qdq_err']:.4g}{steps} | {100 * r['qdq_exact']:.1f}% | "  # type: ignore
                     f"{r['exact_err']:.3g} | {r['float_err']:.3g} | "
                     f"{r['qdq_vs_float']:.3g} | {kernels or 'none'} |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.qdq_bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", help=f"of {', '.join(MODELS)} (default: all)")
    parser.add_argument("--tfmot", action="store_true",
                        help="also tensorflow-model-optimization's quantize_model models")
    parser.add_argument("--tfmot-only", action="store_true",
                        help="only tensorflow-model-optimization's models")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--dir", help="where the models go (default: a temporary folder)")
    args = parser.parse_args(argv)
    from tf2ir.tools.models import freeze_function
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or tmp
        os.makedirs(folder, exist_ok=True)
        for name in [] if args.tfmot_only else args.models or list(MODELS):
            pbs = []
            for mode in ("qat", "float"):
                fn, spec = build(name, mode)
                pbs.append(os.path.join(folder, f"{name}_{mode}.pb"))
                freeze_function(fn, spec, pbs[-1])
            rows.append(measure(name, pbs[0], pbs[1], sample_input(name), folder, args.runs))
        if args.tfmot or args.tfmot_only:
            for name, (qat_pb, float_pb, x) in tfmot_models(folder).items():
                rows.append(measure(name, qat_pb, float_pb, x, folder, args.runs))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
