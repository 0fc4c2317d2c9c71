"""Native kernels against Python kernels and TensorFlow, on one machine in one run.

    python -m tf2ir.tools.native_bench                      # the figures of docs/benchmarks.md
    python -m tf2ir.tools.native_bench --repeats 50 --json native.json
    python -m tf2ir.tools.native_bench --sizes 16 --batches 1 --repeats 3   # a smoke run

Two cases, each converted by tf2ir and run through its runtime entry (`tf2ir.InferenceSession`)
twice, with the plugins' native libraries (`native`) and without them (`native=False`: every
plugin node by its Python kernel, through onnxruntime-extensions), and by TensorFlow
(a warm `tf.function`, numpy in and out as the sessions take them):

- elementwise: TF's Softplus on N float32 values, claimed by a plugin built here, in a
  temporary folder, as a third party writes one: a plugin file (`.with_priority(1)` over the
  built-in mapping; a custom IR op with a numpy kernel, lowered to the plugin's own ONNX domain)
  and a C++ kernel compiled by `tf2ir.plugins.native_build` into the library the plugin
  declares (`tf2ir_native_libraries`);
- text: [batch, 16] string tokens → tf.strings.lower → to_hash_bucket_fast(10,000) → an
  embedding gather → mean over the tokens → a dense layer, with tf2ir's own string kernels
  (opp/native where built, the Python kernels of opp/strings otherwise).

Each row says how many plugin nodes each session ran natively and by Python kernels (an op
with no native kernel runs by its Python one, also in the native session). Times: median of
`--repeats` runs after warm-up runs, in milliseconds; default thread pools (onnxruntime and
TensorFlow both use every core).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

DOMAIN = "ai.tf2ir.native_bench"
LIBRARY = "bench_softplus"
SIZES = (16, 4096, 262144)
BATCHES = (1, 1024)
TOKENS = 16
BUCKETS = 10000

PLUGIN = f'''"""The native bench's plugin: TF's Softplus as {DOMAIN}:BenchSoftplus, numpy and C++."""
import os

import numpy as np

from tf2ir.ir import op_prototype
from tf2ir.opp.shapes import same_as_input
from tf2ir.plugins import hookimpl, native_library, register_op

softplus = (op_prototype("BenchSoftplus", "TF's softplus, elementwise (float32)")
            .input("x", ["float32"]).output("y", ["float32"]))
softplus.infer(same_as_input)
THRESHOLD = np.float32(np.log(np.finfo(np.float32).eps) + 2)   # as TF's (Eigen's) softplus


@softplus.lower
def lower_softplus(ctx, node):
    ctx.op.BenchSoftplus(ctx.input(0), out=ctx.output(0), domain="{DOMAIN}")


@softplus.kernel
def softplus_kernel(x):
    with np.errstate(over="ignore"):
        e = np.exp(x)
        return np.where(x > -THRESHOLD, x, np.where(x < THRESHOLD, e, np.log1p(e))).astype(x.dtype)


@hookimpl
def tf2ir_op_prototypes():
    return [softplus]


@hookimpl
def tf2ir_op_mappings():
    return [register_op("BenchSoftplus").origin_op_type("Softplus").with_priority(1)]


@hookimpl
def tf2ir_native_libraries():
    return [native_library(os.path.dirname(__file__), "{LIBRARY}", "{DOMAIN}", ["BenchSoftplus"])]
'''

KERNEL = """// The native bench's kernel: TF's softplus on float32, as the plugin's numpy kernel, in
// branch-free arithmetic that the compiler vectorizes (-O3 -fno-trapping-math; an AVX2 clone
// picked at load where the CPU has it). Within 3e-7 relative of libm's expf and log1pf.
#include <tf2ir/native.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

[[gnu::always_inline]] inline float as_float(int32_t i) { float f; std::memcpy(&f, &i, 4); return f; }
[[gnu::always_inline]] inline int32_t as_int(float f) { int32_t i; std::memcpy(&i, &f, 4); return i; }

// e^x for x in [-104, 89] without branches (x = n ln2 + r, |r| <= ln2/2; a degree-6
// polynomial in r; 2^n in two halves, so the results below 2^-126 come out subnormal).
[[gnu::always_inline]] inline float exp_approx(float x) {
  const float t = x * 1.44269504088896341f + 0.5f;
  int32_t n = static_cast<int32_t>(t);
  n -= (t < static_cast<float>(n)) ? 1 : 0;          // floor
  const float fn = static_cast<float>(n);
  float r = x - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  const float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.0f;
  const int32_t half = n >> 1;
  return p * as_float((half + 127) << 23) * as_float((n - half + 127) << 23);
}

// log(u) for a normal u > 0 without branches (u = m 2^e, m in [sqrt(1/2), sqrt(2))).
[[gnu::always_inline]] inline float log_approx(float u) {
  const int32_t bits = as_int(u);
  int32_t e = ((bits >> 23) & 0xff) - 126;
  float m = as_float((bits & 0x807fffff) | 0x3f000000);   // [0.5, 1)
  const bool low = m < 0.707106781186547524f;
  e -= low ? 1 : 0;
  m = (low ? m + m : m) - 1.0f;
  const float fe = static_cast<float>(e);
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  y += -2.12194440e-4f * fe;
  y += -0.5f * z;
  return m + y + 0.693359375f * fe;
}

}  // namespace

// TF's softplus: x above -T, e^x below T, else log1p(e^x) (T = log(float epsilon) + 2).
__attribute__((target_clones("avx2", "default"))) void softplus(const float* in, float* out, int64_t n) {
  const float threshold = -13.9423847f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = in[i];
    const bool nan = v != v;
    const float c = nan ? 0.0f : std::min(std::max(v, -104.0f), -threshold);
    const float e = exp_approx(c);
    const float u = 1.0f + e;
    const float log1p = log_approx(u) * (e / (u - 1.0f));   // exact where 1 + e rounds
    float r = v > -threshold ? v : (v < threshold ? e : log1p);
    r = v < -104.0f ? 0.0f : r;
    out[i] = nan ? v : r;
  }
}

static Ort::Status Softplus(const Ort::Custom::Tensor<float>& x, Ort::Custom::Tensor<float>& y) {
  const int64_t n = x.NumberOfElement();
  float* out = y.Allocate(x.Shape());
  if (n > 0) softplus(x.Data(), out, n);
  return Ort::Status{nullptr};
}

TF2IR_NATIVE_OPS(ops) {
  ops.add("@DOMAIN@", Ort::Custom::CreateLiteCustomOp("BenchSoftplus", "CPUExecutionProvider",
                                                    Softplus));
}
""".replace("@DOMAIN@", DOMAIN)

BUILD = """
import sys
from setuptools import Distribution
from tf2ir.plugins.native_build import build_native, native_extension
folder, source, name = sys.argv[1:4]
dist = Distribution({"name": "tf2ir_native_bench", "script_name": "setup.py",
                     "ext_modules": [native_extension(name, [source], extra_compile_args=[
                         "-O3", "-fno-trapping-math"])]})
command = build_native(dist)
command.build_lib = folder
command.build_temp = folder + "/build"
command.ensure_finalized()
command.run()
"""


def write_plugin(folder: str) -> float:
    """The bench plugin in `folder`: its module, and its library compiled beside it (a
    LIBRARY.NOT_BUILT marker instead where the compiler failed). Returns the build's seconds."""
    with open(os.path.join(folder, "bench_softplus_plugin.py"), "w") as f:
        f.write(PLUGIN)
    source = os.path.join(folder, LIBRARY + ".cc")
    with open(source, "w") as f:
        f.write(KERNEL)
    start = time.perf_counter()
    build = subprocess.run([sys.executable, "-c", BUILD, folder, source, LIBRARY],
                           capture_output=True, text=True)
    if build.returncode != 0:
        raise RuntimeError(f"building the bench's library failed: {build.stderr.strip()[-600:]}")
    return time.perf_counter() - start


def median_ms(call: Callable[[], object], repeats: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        call()
    times = []
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _row(case: str, size: int, native, python, tf_call, feeds: Dict[str, np.ndarray],
         repeats: int) -> dict:
    """One row: the three engines on `feeds`, their medians, and the nodes each session ran
    natively and by Python kernels; the outputs' largest difference from TensorFlow's."""
    expected = np.asarray(tf_call())
    got = {"native": native.run(None, feeds)[0], "python": python.run(None, feeds)[0]}
    times = {"native": median_ms(lambda: native.run(None, feeds), repeats),
             "python": median_ms(lambda: python.run(None, feeds), repeats),
             "tf": median_ms(tf_call, repeats)}
    diff = max(float(np.max(np.abs(v.astype(np.float64) - expected), initial=0.0))
               for v in got.values())
    return {"case": case, "size": size,
            "native_ms": times["native"], "python_ms": times["python"], "tf_ms": times["tf"],
            "native_vs_tf": times["native"] / times["tf"],
            "python_vs_tf": times["python"] / times["tf"],
            "native_run": {"native_nodes": native.native_ops, "python_nodes": native.python_ops},
            "python_run": {"native_nodes": python.native_ops, "python_nodes": python.python_ops},
            "max_abs_diff_vs_tf": diff}


def elementwise_rows(sizes: Sequence[int], repeats: int, folder: str) -> tuple:
    import tensorflow as tf

    import tf2ir
    from tf2ir.plugins.manager import PluginManager
    build_s = write_plugin(folder)
    manager = PluginManager(plugin_dirs=[folder])
    library = next(lib for lib in manager.native_libraries if lib.domain == DOMAIN)
    fn = tf.function(lambda x: tf.nn.softplus(x),
                     input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    model = tf2ir.convert(fn, plugins=manager).model
    native = tf2ir.InferenceSession(model, manager=manager)
    python = tf2ir.InferenceSession(model, manager=manager, native=False)
    name = native.get_inputs()[0].name
    rng = np.random.RandomState(0)
    rows = []
    for size in sizes:
        x = rng.normal(0, 6, size).astype(np.float32)
        rows.append(_row("softplus", size, native, python, lambda: fn(x).numpy(), {name: x},
                         repeats))
    info = {"library": library.path, "not_built": library.why_not_built or None,
            "build_s": build_s}
    return rows, info


def text_model():
    """The text model as a tf.function: [batch, 16] tokens → lowercase → hash buckets →
    embedding (10,000 × 32) → mean → dense (32 → 8)."""
    import tensorflow as tf
    rng = np.random.RandomState(1)
    table = tf.constant(rng.normal(0, 1, (BUCKETS, 32)).astype(np.float32))
    weights = tf.constant(rng.normal(0, 0.2, (32, 8)).astype(np.float32))
    bias = tf.constant(rng.normal(0, 0.1, 8).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, TOKENS], tf.string, name="tokens")])
    def classify(tokens):
        ids = tf.strings.to_hash_bucket_fast(tf.strings.lower(tokens), BUCKETS)
        pooled = tf.reduce_mean(tf.gather(table, ids), axis=1)
        return tf.identity(tf.matmul(pooled, weights) + bias, name="logits")
    return classify


def tokens(batch: int, rng: np.random.RandomState) -> np.ndarray:
    """[batch, 16] words of mixed case (a vocabulary of 2,000, 3 to 12 letters)."""
    letters = np.array(list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    vocabulary = ["".join(rng.choice(letters, rng.randint(3, 13))) for _ in range(2000)]
    return np.array(rng.choice(vocabulary, (batch, TOKENS)), dtype=object)


def text_rows(batches: Sequence[int], repeats: int) -> list:
    import tf2ir
    fn = text_model()
    model = tf2ir.convert(fn).model
    native = tf2ir.InferenceSession(model)
    python = tf2ir.InferenceSession(model, native=False)
    name = native.get_inputs()[0].name
    rng = np.random.RandomState(2)
    rows = []
    for batch in batches:
        words = tokens(batch, rng)
        tf_words = words.astype(bytes)
        rows.append(_row("text", batch, native, python, lambda: fn(tf_words).numpy(),
                         {name: words}, repeats))
    return rows


def _nodes(counts: dict) -> str:
    return f"{counts['native_nodes']}/{counts['python_nodes']}"


def markdown(rows: List[dict]) -> str:
    lines = ["| case | size | native ms | Python kernels ms | TF ms | native/TF | Python/TF "
             "| native run: nodes native/Python | Python run: nodes native/Python "
             "| max abs diff vs TF |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        size = f"{r['size']:,}" + (" values" if r["case"] == "softplus" else " batch")
        lines.append(f"| {r['case']} | {size} | {r['native_ms']:.3f} | {r['python_ms']:.3f} "
                     f"| {r['tf_ms']:.3f} | {r['native_vs_tf']:.2f}x | {r['python_vs_tf']:.2f}x "
                     f"| {_nodes(r['native_run'])} | {_nodes(r['python_run'])} "
                     f"| {r['max_abs_diff_vs_tf']:.1e} |")
    return "\n".join(lines)


def environment() -> dict:
    import onnxruntime
    import tensorflow as tf
    return {"python": platform.python_version(), "onnxruntime": onnxruntime.__version__,
            "tensorflow": tf.__version__, "cpus": os.cpu_count(), "machine": platform.machine(),
            "date": time.strftime("%Y-%m-%d")}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tf2ir.tools.native_bench",
        description="Native kernels vs Python kernels vs TensorFlow: an elementwise plugin op "
                    "(Softplus, built here) and a text model (lowercase, hash buckets, "
                    "embedding, mean, dense).")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES), metavar="N",
                        help="float32 values for the elementwise op (default: 16 4096 262144; "
                             "none: skip it)")
    parser.add_argument("--batches", type=int, nargs="*", default=list(BATCHES), metavar="B",
                        help="batches of the text model (default: 1 1024; none: skip it)")
    parser.add_argument("--repeats", type=int, default=30,
                        help="timed runs per cell, after 3 warm-up runs (median; default 30)")
    parser.add_argument("--json", metavar="FILE",
                        help="also write the rows and the machine to this JSON file ('-': stdout)")
    args = parser.parse_args(argv)
    if args.repeats < 1 or any(n < 0 for n in args.sizes) or any(b < 1 for b in args.batches):
        parser.error("--repeats and --batches must be positive, --sizes not negative")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    rows: List[dict] = []
    info: dict = {}
    with tempfile.TemporaryDirectory(prefix="tf2ir-native-bench-") as folder:
        if args.sizes:
            elementwise, info = elementwise_rows(args.sizes, args.repeats, folder)
            rows += elementwise
        if args.batches:
            rows += text_rows(args.batches, args.repeats)
    env = environment()
    print(f"Measured {env['date']} on {env['cpus']} CPUs ({env['machine']}): python "
          f"{env['python']}, onnxruntime {env['onnxruntime']}, tensorflow {env['tensorflow']}; "
          f"median of {args.repeats} runs")
    if info:
        built = (f"built in {info['build_s']:.1f} s" if info["library"]
                 else f"not built: {info['not_built']}")
        print(f"the elementwise plugin's native library: {built}")
    print()
    print(markdown(rows))
    if args.json:
        text = json.dumps({"environment": env, "elementwise_library": info, "rows": rows,
                           "repeats": args.repeats}, indent=2)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as f:
                f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
