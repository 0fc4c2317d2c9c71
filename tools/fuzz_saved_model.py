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
Beyond tools/fuzz.py's outcomes, two more are defects here:

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
import struct
import random
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

from tf2ir.tools.fuzz_core import OUTPUT_NAME, Escape, SilentCorruption, _clean, check_model_file
from tf2ir.tools.fuzz_mutate import _int, _varint, mutate_bytes, mutate_graph_def

PREFIX = ".savedmodel/"                 # Case.files keys: "case" + PREFIX + path in the dir
CANARY_NAME = "canary.txt"              # beside the SavedModel directory, in the worker's folder
CANARY = b"tf2ir-fuzz-canary-7f3a9c"   # what a leak of the canary file puts into a model
CANARY_ABS = os.path.join(tempfile.gettempdir(), "tf2ir-fuzz-canary.txt")   # the same in every case
INDEX = "variables/variables.index"
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


# == mutations ==============================================================================
def _shards(files: Dict[str, bytes]) -> List[str]:
    return sorted(p for p in files if p.startswith("variables/variables.data-"))


def _mutate_blob(data: bytes, rng: random.Random) -> Tuple[bytes, str]:
    """A byte-level mutation of a checkpoint file; the name says what it did."""
    data = bytearray(data)
    choice = rng.randrange(8) if data else 6
    if choice <= 2:       # one to a few bit flips
        for _ in range(rng.choice((1, 1, 2, 3))):
            pos = rng.randrange(len(data))
            data[pos] ^= 1 << rng.randrange(8)
        return bytes(data), "flip"
    if choice == 3:       # interesting bytes
        pos = rng.randrange(len(data))
        value = rng.choice((b"\x00", b"\xff", b"\x7f", b"\x80", b"\xff\xff\xff\xff\x0f",
                            b"\xff" * 10, b"\x00" * 4))
        data[pos:pos + len(value)] = value
        return bytes(data), "bytes"
    if choice == 4:       # truncation
        return bytes(data[:rng.randrange(len(data))]), "truncate"
    if choice == 5:       # a run overwritten with one value
        pos = rng.randrange(len(data))
        size = rng.randrange(1, 64)
        data[pos:pos + size] = bytes([rng.randrange(256)]) * min(size, len(data) - pos)
        return bytes(data), "run"
    if choice == 6:       # growth
        pos = rng.randrange(len(data) + 1)
        data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 32)))
        return bytes(data), "insert"
    # a varint rewritten to an interesting value (LevelDB lengths, offsets, proto fields)
    pos = rng.randrange(len(data))
    value = _int(rng) & ((1 << 64) - 1)
    end = pos
    while end < len(data) and data[end] & 0x80 and end - pos < 9:
        end += 1
    data[pos:end + 1] = _varint(value)
    return bytes(data), "varint"


ASSET_NAMES = ("../" + CANARY_NAME, "../../" + CANARY_NAME, "assets/../../" + CANARY_NAME,
               "/" + CANARY_NAME, "vocab\x00.txt", "", ".", "..", "assets", "/dev/zero",
               "../" * 30 + "etc/hostname", "vocab.txt/" , "v" * 5000)


def _mutate_assets(data: bytes, rng: random.Random) -> Tuple[bytes, str]:
    """saved_model.pb with its AssetFileDef file names (and the asset Consts) changed."""
    from tf2ir.parser.tensor_bundle import bundle_messages
    message = bundle_messages()[2]()
    try:
        message.ParseFromString(data)
    except Exception:
        return data, "assets:unparsed"
    name = rng.choice(ASSET_NAMES)
    if name.startswith("/" + CANARY_NAME):
        name = CANARY_ABS
    changed = 0
    for meta in message.meta_graphs:
        for asset in meta.asset_file_def:
            asset.filename = name
            changed += 1
        for node in meta.graph_def.node:   # TF1-style asset paths are Consts too
            if node.op == "Const" and "value" in node.attr and node.attr["value"].tensor.string_val \
                    and any(b"vocab" in s for s in node.attr["value"].tensor.string_val):
                node.attr["value"].tensor.string_val[:] = [name.encode("utf-8", "replace")]
                changed += 1
    try:
        return message.SerializeToString(deterministic=True), f"assets:{name[:40]!r}x{changed}"
    except Exception:
        return data, "assets:unserializable"


# -- the checkpoint index as a table: read, edit its entries, write again ------------------------
def crc32c(data: bytes) -> int:
    try:
        import google_crc32c
        return google_crc32c.value(bytes(data))
    except ImportError:
        crc = 0xFFFFFFFF
        for byte in data:
            crc ^= byte
            for _ in range(8):
                crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
        return crc ^ 0xFFFFFFFF


def _masked(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _uvarint(data: bytes, pos: int) -> Tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("bad varint")
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def _block_entries(block: bytes) -> List[Tuple[bytes, bytes]]:
    count = struct.unpack_from("<I", block, len(block) - 4)[0]
    end = len(block) - 4 - 4 * count
    pos, key, out = 0, b"", []
    while pos < end:
        shared, pos = _uvarint(block, pos)
        unshared, pos = _uvarint(block, pos)
        size, pos = _uvarint(block, pos)
        key = key[:shared] + block[pos:pos + unshared]
        pos += unshared
        out.append((key, block[pos:pos + size]))
        pos += size
    return out


def read_table(data: bytes) -> List[Tuple[bytes, bytes]]:
    """A LevelDB table's (key, value) pairs (uncompressed blocks); ValueError if it is not one."""
    try:
        footer = data[-48:]
        _, pos = _uvarint(footer, 0)
        _, pos = _uvarint(footer, pos)
        offset, pos = _uvarint(footer, pos)
        size, pos = _uvarint(footer, pos)
        out = []
        for _, handle in _block_entries(data[offset:offset + size]):
            block_offset, p = _uvarint(handle, 0)
            block_size, _ = _uvarint(handle, p)
            out.extend(_block_entries(data[block_offset:block_offset + block_size]))
        return out
    except (struct.error, IndexError) as exc:
        raise ValueError(str(exc)) from None


def _block(entries: List[Tuple[bytes, bytes]]) -> bytes:
    body, restarts = bytearray(), []
    for key, value in entries:   # every entry a restart point: no shared prefixes
        restarts.append(len(body))
        body += _varint(0) + _varint(len(key)) + _varint(len(value)) + key + value
    restarts = restarts or [0]
    body += b"".join(struct.pack("<I", r) for r in restarts) + struct.pack("<I", len(restarts))
    return bytes(body)


def write_table(entries: List[Tuple[bytes, bytes]]) -> bytes:
    """A LevelDB table (one data block, block checksums right) holding `entries` in order."""
    out = bytearray()

    def put(block: bytes) -> bytes:
        handle = _varint(len(out)) + _varint(len(block))
        out.extend(block + b"\x00" + struct.pack("<I", _masked(crc32c(block + b"\x00"))))
        return handle
    data_handle = put(_block(entries))
    meta_handle = put(_block([]))
    index_handle = put(_block([(entries[-1][0] if entries else b"", data_handle)]))
    footer = meta_handle + index_handle
    out.extend(footer + b"\x00" * (40 - len(footer)) + struct.pack("<Q", 0xDB4775248B80FB57))
    return bytes(out)


BAD_DIMS = (-1, -2, -(2 ** 40), 2 ** 31, 2 ** 40, 2 ** 62, 2 ** 63 - 1, 0, 1, 3)
BAD_DTYPES = (0, 1, 3, 7, 9, 10, 14, 19, 20, 21, 23, 100, 101, 1000, -1)


def _mutate_entry(value: bytes, rng: random.Random, header: bool) -> Tuple[bytes, str]:
    from tf2ir.parser.tensor_bundle import bundle_messages
    header_class, entry_class, _ = bundle_messages()
    message = (header_class if header else entry_class)()
    message.ParseFromString(value)
    if header:
        field = rng.choice(("num_shards", "endianness"))
        setattr(message, field, rng.choice((0, -1, 1, 2, 99999, 2 ** 31 - 1)))
        return message.SerializeToString(deterministic=True), f"header.{field}"
    what = rng.choice(("dim", "dim", "dims", "dtype", "offset", "size", "shard", "crc", "slices"))
    if what == "dim" and message.shape.dim:
        rng.choice(message.shape.dim).size = rng.choice(BAD_DIMS)
    elif what in ("dim", "dims"):
        del message.shape.dim[:]
        for _ in range(rng.choice((0, 1, 2, 5, 40))):
            message.shape.dim.add(size=rng.choice(BAD_DIMS))
        message.shape.unknown_rank = rng.random() < 0.2
    elif what == "dtype":
        message.dtype = rng.choice(BAD_DTYPES)
    elif what in ("offset", "size"):
        setattr(message, what, rng.choice((-1, -(2 ** 62), 0, 1, 2 ** 31, 2 ** 62, 2 ** 63 - 1,
                                           getattr(message, what) + rng.choice((-4, -1, 1, 4)))))
    elif what == "shard":
        message.shard_id = rng.choice((-1, 1, 2, 99999))
    elif what == "crc":
        message.crc32c = rng.randrange(1 << 32)
    else:
        message.slices.append(bytes(rng.randrange(256) for _ in range(rng.randrange(12))))
    return message.SerializeToString(deterministic=True), f"entry.{what}"


def mutate_index_entries(data: bytes, rng: random.Random) -> Tuple[bytes, str]:
    """variables.index with one entry edited (its BundleEntryProto, the header, or its key:
    non-UTF-8, renamed, duplicated, dropped), written as a well-formed table again."""
    try:
        entries = read_table(data)
    except ValueError:
        return data, "entries:unreadable"
    if not entries:
        return data, "entries:none"
    index = rng.randrange(len(entries))
    key, value = entries[index]
    choice = rng.randrange(10)
    try:
        if choice < 6:
            value, what = _mutate_entry(value, rng, key == b"")
            entries[index] = (key, value)
        elif choice == 6:
            entries[index] = (key[:-1] + b"\xff\xfe" if key else b"\xff", value)
            what = "key:non-utf8"
        elif choice == 7:
            entries[index] = (key + rng.choice((b"x", b"/../x", b"\x00")), value)
            what = "key:renamed"
        elif choice == 8:
            del entries[index]
            what = "key:dropped"
        else:
            entries.insert(index, (key, value))
            what = "key:duplicated"
    except Exception:   # a value that does not parse as its message
        return data, "entries:unparsed"
    entries.sort(key=lambda kv: kv[0])
    return write_table(entries), what


STRINGY = (b"\xff\xfe\xfd", b"", b"../x", b"\x00", b"a" * 10000, b"\xc3", "\u00fc".encode())


def mutate_saved_model_structure(data: bytes, rng: random.Random, corpus, ops: List[str]) -> bytes:
    """saved_model.pb edited as a message: its GraphDef by tools/fuzz_mutate.py's graph
    mutations, or string constants (RestoreV2's tensor names and slices, file names) made
    non-UTF-8, empty, long or path-like, or a signature's tensor names changed."""
    from google.protobuf import text_format
    from tf2ir.parser.tensor_bundle import bundle_messages
    message = bundle_messages()[2]()
    try:
        message.ParseFromString(data)
        meta = message.meta_graphs[0]
    except Exception:
        ops.append("struct:unparsed")
        return data
    choice = rng.randrange(3)
    if choice == 0:
        sub: List[str] = []
        out = mutate_graph_def(meta.graph_def.SerializeToString(deterministic=True), rng, corpus, sub)
        try:
            if ".pb" in out:
                meta.graph_def.ParseFromString(out[".pb"])
            else:
                meta.graph_def.Clear()
                text_format.Parse(out[".pbtxt"].decode("utf-8"), meta.graph_def)
        except Exception:
            ops.append("struct:graph-unparsed")
            return data
        ops.append("struct:graph:" + ",".join(sub))
    elif choice == 1:
        consts = [n for f in [meta.graph_def.node] + [fn.node_def for fn in meta.graph_def.library.function]
                  for n in f if n.op == "Const" and n.attr["value"].tensor.string_val]
        if not consts:
            ops.append("struct:no-string-const")
            return data
        node = rng.choice(consts)
        values = node.attr["value"].tensor.string_val
        i = rng.randrange(len(values))
        values[i] = rng.choice(STRINGY) if rng.random() < 0.8 else values[i] + rng.choice(STRINGY)
        if rng.random() < 0.2:
            values.append(rng.choice(STRINGY))
        ops.append(f"struct:string-const:{node.name[:30]}")
    else:
        sigs = [s for k, s in meta.signature_def.items() if k != "__saved_model_init_op"]
        if not sigs:
            return data
        sig = rng.choice(sigs)
        infos = list(sig.inputs.values()) + list(sig.outputs.values())
        info = rng.choice(infos)
        info.name = rng.choice(("", "x", "x:1", "x:-1", ":0", "nonexistent:0", "\x00",
                                info.name.split(":")[0] + ":99", info.name + ":0"))
        ops.append("struct:signature")
    try:
        return message.SerializeToString(deterministic=True)
    except Exception:
        ops.append("struct:unserializable")
        return data


SPECIALS = ("fifo", "devzero", "outside", "dir", "missing", "canary")


def mutate_saved_model(files: Dict[str, bytes], rng: random.Random, corpus, ops: List[str]) -> Tuple[Dict[str, bytes], Dict[str, str]]:
    """A mutated copy of one seed's files, and its special entries (path → what)."""
    files = dict(files)
    special: Dict[str, str] = {}
    for _ in range(rng.choice((1, 1, 1, 2))):
        shards = _shards(files)
        target = rng.choice(("pb", "struct", "struct", "index", "entries", "entries", "shard",
                             "shard", "special", "assets"))
        if target == "shard" and not shards or target == "assets" and \
                not any(p.startswith("assets/") for p in files):
            target = "index"
        if target == "pb":
            sub: List[str] = []
            files["saved_model.pb"] = mutate_bytes(files["saved_model.pb"], rng, corpus, sub)
            ops.append("pb:" + ",".join(sub))
        elif target == "index":
            if INDEX not in files:
                continue
            files[INDEX], what = _mutate_blob(files[INDEX], rng)
            ops.append("index:" + what)
        elif target == "struct":
            files["saved_model.pb"] = mutate_saved_model_structure(files["saved_model.pb"], rng,
                                                                   corpus, ops)
        elif target == "entries":
            if INDEX not in files:
                continue
            files[INDEX], what = mutate_index_entries(files[INDEX], rng)
            ops.append("index:" + what)
        elif target == "shard":
            shard = rng.choice(shards)
            files[shard], what = _mutate_blob(files[shard], rng)
            ops.append(f"shard:{what}")
        elif target == "assets":
            if rng.random() < 0.5:
                files["saved_model.pb"], what = _mutate_assets(files["saved_model.pb"], rng)
                ops.append(what)
            else:
                asset = rng.choice(sorted(p for p in files if p.startswith("assets/")))
                special[asset] = rng.choice(("outside", "canary", "fifo", "devzero"))
                files.pop(asset)
                ops.append(f"special:{asset}={special[asset]}")
        else:
            candidates = [p for p in files if p.startswith("variables/")] or sorted(files)
            path = rng.choice(sorted(candidates))
            special[path] = rng.choice(SPECIALS)
            files.pop(path)
            ops.append(f"special:{path}={special[path]}")
    return files, special


def materialize(base: str, files: Dict[str, bytes], special: Dict[str, str]) -> str:
    """Write a case's SavedModel under `base` + PREFIX; returns the directory. The canary
    file is written beside it (in `base`'s folder)."""
    root = base + PREFIX.rstrip("/")
    canary = os.path.join(os.path.dirname(base), CANARY_NAME)
    for path in (canary, CANARY_ABS):
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(CANARY + b"\n" + CANARY + b"\n")
    os.makedirs(root, exist_ok=True)
    for path, data in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)
    for path, what in special.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if what == "fifo":
            os.mkfifo(full)
        elif what == "devzero":
            os.symlink("/dev/zero", full)
        elif what in ("outside", "canary"):
            os.symlink(os.path.relpath(canary, os.path.dirname(full)) if what == "outside"
                       else CANARY_ABS, full)
        elif what == "dir":
            os.makedirs(full, exist_ok=True)
        # "missing": nothing there
    return root


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
