"""The fuzz harness's SavedModel mode (tools/fuzz.py, kind `savedmodel`).

Seeds: a few small SavedModels made with TensorFlow once, in a subprocess, and cached in a
temporary folder keyed by TensorFlow's version and this module's seed script
(`$TMPDIR/tf2ir-fuzz-savedmodels-<key>/`; `TF2IR_FUZZ_SAVEDMODELS=DIR` names another):
a dense layer, a convolution, a module with an int64 and a string variable, a lookup table
initialised from constants, and a lookup table read from a vocabulary file (an asset).
Without TensorFlow (and no cache) the mode has no seeds and says so.

A case is one seed's files, mutated in one or more of these ways:

  pb       saved_model.pb's bytes or wire structure (the `.pb` mutations of tools/fuzz_mutate.py)
  index    variables/variables.index: bit flips, bytes, truncation, the LevelDB table's varints
  shard    variables/variables.data-*: bytes of the tensors (flips, runs, truncation, growth)
  special  a checkpoint file or asset replaced by a FIFO, a symlink to /dev/zero, a symlink
           leaving the SavedModel directory, a directory, or removed; asset file names in
           saved_model.pb set to `../`, absolute or NUL-holding paths; a canary file beside
           the SavedModel is what such a path points at

It runs as `tf2ir convert DIR` does (tf2ir.parser.pipeline: load, convert, compile), by the
native reader only (TF2IR_SAVED_MODEL_READER=native) unless --saved-model-reader auto lets
the TensorFlow route run what the native reader refuses (slow: TensorFlow in each worker).
Its mutations are in tools/fuzz_saved_model_mutate.py, the checkpoint index's table in
tools/fuzz_saved_model_table.py. Beyond tools/fuzz.py's outcomes, two more are defects here:

  corrupt  only checkpoint files were mutated (index or shards, in ways that change bytes
           TensorFlow checksums), the conversion succeeded, and the model written differs
           from the unmutated seed's conversion: TensorFlow would refuse the directory
           ("Checksum does not match"), tf2ir silently converted corrupted weights (native
           route only: where TensorFlow froze the directory, it checked the checksums itself)
  escape   the model written holds the canary file's bytes (a file outside the SavedModel
           directory was read into the model)
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

from tf2ir.tools.fuzz_core import OUTPUT_NAME, Escape, SilentCorruption, _clean, check_model_file
# The mode's mutations and its checkpoint table, importable from here as before the split.
from tf2ir.tools.fuzz_saved_model_mutate import (  # noqa: F401
    ASSET_NAMES, CANARY, CANARY_ABS, CANARY_NAME, INDEX, PREFIX, SPECIALS, STRINGY, materialize,
    mutate_saved_model, mutate_saved_model_structure)
from tf2ir.tools.fuzz_saved_model_table import (  # noqa: F401
    BAD_DIMS, BAD_DTYPES, crc32c, mutate_index_entries, read_table, write_table)

CACHE_ENV = "TF2IR_FUZZ_SAVEDMODELS"

SEED_SCRIPT = r'''
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf
root = sys.argv[1]
tf.random.set_seed(1)

class Dense(tf.Module):
    def __init__(self):
        self.w = tf.Variable(tf.random.normal([4, 3]), name="w")
        self.b = tf.Variable(tf.random.normal([3]), name="b")
    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def __call__(self, x):
        return {"y": tf.nn.relu(tf.matmul(x, self.w) + self.b)}

class Conv(tf.Module):
    def __init__(self):
        self.k = tf.Variable(tf.random.normal([3, 3, 2, 4]), name="k")
        self.s = tf.Variable(tf.random.normal([4]), name="s")
    @tf.function(input_signature=[tf.TensorSpec([1, 8, 8, 2], tf.float32, name="x")])
    def __call__(self, x):
        y = tf.nn.conv2d(x, self.k, 1, "SAME") * self.s
        return {"y": tf.reduce_mean(tf.nn.max_pool2d(y, 2, 2, "VALID"), axis=[1, 2])}

class Mixed(tf.Module):
    def __init__(self):
        self.n = tf.Variable(tf.constant([3, 5, 7], tf.int64), name="n")
        self.words = tf.Variable(tf.constant(["alpha", "beta", "gamma"]), name="words")
        self.scale = tf.Variable(2.5, name="scale")
    @tf.function(input_signature=[tf.TensorSpec([3], tf.int64, name="i")])
    def __call__(self, i):
        return {"sum": i + self.n, "scaled": tf.cast(i, tf.float32) * self.scale,
                "word": tf.strings.join([self.words, tf.strings.as_string(i)], "-")}

class Table(tf.Module):
    def __init__(self):
        init = tf.lookup.KeyValueTensorInitializer(tf.constant(["a", "b", "c"]),
                                                   tf.constant([1, 2, 3], tf.int64))
        self.table = tf.lookup.StaticHashTable(init, -1)
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="k")])
    def __call__(self, k):
        return {"v": self.table.lookup(k)}

class Vocab(tf.Module):
    def __init__(self, path):
        init = tf.lookup.TextFileInitializer(path, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE,
                                             tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER)
        self.table = tf.lookup.StaticHashTable(init, -1)
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="k")])
    def __call__(self, k):
        return {"v": self.table.lookup(k)}

vocab = os.path.join(root, "vocab.txt")
with open(vocab, "w") as f:
    f.write("red\ngreen\nblue\n")
for name, module in (("dense", Dense()), ("conv", Conv()), ("mixed", Mixed()),
                     ("table", Table()), ("vocab", Vocab(vocab))):
    tf.saved_model.save(module, os.path.join(root, name),
                        signatures={"serving_default": module.__call__})
os.remove(vocab)
'''


def _cache_dir() -> str:
    if os.environ.get(CACHE_ENV):
        return os.environ[CACHE_ENV]
    try:
        from importlib.metadata import version
        tf_version = version("tensorflow")
    except Exception:
        tf_version = "none"
    key = hashlib.sha1((tf_version + SEED_SCRIPT).encode()).hexdigest()[:10]
    return os.path.join(tempfile.gettempdir(), f"tf2ir-fuzz-savedmodels-{key}")


def build_seeds(cache: Optional[str] = None, timeout: float = 600) -> str:
    """The folder of seed SavedModels, made with TensorFlow (in a subprocess) on first use."""
    cache = cache or _cache_dir()
    if os.path.exists(os.path.join(cache, "DONE")):
        return cache
    os.makedirs(os.path.dirname(os.path.abspath(cache)), exist_ok=True)
    work = tempfile.mkdtemp(prefix=os.path.basename(cache) + ".tmp-",
                            dir=os.path.dirname(os.path.abspath(cache)))
    proc = subprocess.run([sys.executable, "-c", SEED_SCRIPT, work], capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
        raise RuntimeError("could not build the SavedModel seeds with TensorFlow: "
                           + (proc.stderr.strip().splitlines() or ["?"])[-1])
    with open(os.path.join(work, "DONE"), "w") as f:
        f.write("ok\n")
    try:
        os.rename(work, cache)
    except OSError:   # another process built it first
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    return cache


def load_seeds(cache: Optional[str] = None) -> List[Tuple[str, Dict[str, bytes]]]:
    """[(seed name, {path in the SavedModel: bytes})], every regular file of each seed."""
    try:
        folder = build_seeds(cache)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        print(f"fuzz: no SavedModel seeds ({exc})", file=sys.stderr)
        return []
    seeds = []
    for name in sorted(os.listdir(folder)):
        top = os.path.join(folder, name)
        if not os.path.isdir(top):
            continue
        files = {}
        for dirpath, _, names in sorted(os.walk(top)):
            for n in sorted(names):
                path = os.path.join(dirpath, n)
                with open(path, "rb") as f:
                    files[os.path.relpath(path, top)] = f.read()
        seeds.append((name, files))
    return seeds


# == running a case =========================================================================
def _graph_fingerprint(path: str) -> bytes:
    """The written model, doc strings left out (they may name the input's path)."""
    import onnx
    model = onnx.load(path)
    model.doc_string = ""
    for node in model.graph.node:
        node.doc_string = ""
    model.graph.doc_string = ""
    return model.graph.SerializeToString(deterministic=True)


_BASELINES: Dict[Tuple[str, str, str], Optional[bytes]] = {}


def _convert(ctx, directory: str, out: str) -> None:
    ctx.stage(1)
    graph, _ = ctx.pipeline.convert_file(directory)
    ctx.stage(2)
    ctx.pipeline.compile(graph, out, model=directory)
    ctx.stage(3)
    check_model_file(out)


def baseline(ctx, seed_name: str, files: Dict[str, bytes]) -> Optional[bytes]:
    """The unmutated seed's converted model (fingerprint), converted once per worker at the
    same path a case uses; None when the seed itself does not convert."""
    key = (ctx.workdir, seed_name, ctx.saved_model_reader)
    if key not in _BASELINES:
        from tf2ir.ir.errors import ConversionError
        base = os.path.join(ctx.workdir, "case")
        out = os.path.join(ctx.workdir, "out.onnx")
        try:
            _convert(ctx, materialize(base, files, {}), out)
            _BASELINES[key] = _graph_fingerprint(out)
        except ConversionError:
            _BASELINES[key] = None
        finally:
            _clean(ctx.workdir)
    return _BASELINES[key]


_SEEDS: List[Tuple[str, Dict[str, bytes]]] = []


def _replay_seeds() -> List[Tuple[str, Dict[str, bytes]]]:
    if not _SEEDS:
        _SEEDS.extend(load_seeds())
    return _SEEDS


def execute_saved_model(case, ctx) -> None:
    """`tf2ir convert DIR -o out.onnx` on the case's SavedModel, then the checks above."""
    os.environ["TF2IR_SAVED_MODEL_READER"] = "" if ctx.saved_model_reader == "auto" else "native"
    seeds = dict(ctx.corpus.saved_models if ctx.corpus is not None else _replay_seeds())
    base = os.path.join(ctx.workdir, "case")
    out = os.path.join(ctx.workdir, OUTPUT_NAME)
    files = {k[len(PREFIX):]: v for k, v in case.files.items() if k.startswith(PREFIX)}
    special = {k[len(PREFIX):]: v for k, v in case.special.items()}
    checkpoint_only = bool(case.mutations) and all(
        m.startswith(("index:", "shard:")) for m in case.mutations)
    reference = None
    if checkpoint_only and case.origin in seeds:
        reference = baseline(ctx, case.origin, seeds[case.origin])
    directory = materialize(base, files, special)
    from tf2ir.parser import frozen
    freeze, routes = frozen.freeze_saved_model, []

    def spy(*args, **kwargs):   # TensorFlow's route: it checks the checksums itself
        routes.append("tf")
        return freeze(*args, **kwargs)
    frozen.freeze_saved_model = spy
    try:
        _convert(ctx, directory, out)
    finally:
        frozen.freeze_saved_model = freeze
    with open(out, "rb") as f:
        written = f.read()
    if CANARY in written:
        raise Escape("the model holds the bytes of a file outside the SavedModel directory")
    if reference is not None and not routes and _graph_fingerprint(out) != reference:
        where = "shard" if any(m.startswith("shard:") for m in case.mutations) else "index"
        raise SilentCorruption(f"a mutated checkpoint ({where}) converted to a model that "
                               "differs from the unmutated one; TensorFlow refuses it")
